#!/usr/bin/env bash
# ninepbench.sh — gsvfs's 9P2000.L server against diod, through one neutral
# client (github.com/hugelgupf/p9's, driven by bench/ninepbench).
#
# Builds bin/gsvfs (make build) and bench/ninepbench, then serves one work
# directory on the disk that holds /tmp with
#
#   diod         diod -f -n -e EXPORT -l SOCK -c /dev/null (attach aname=EXPORT);
#                diod caps msize at 64 KiB, whatever the client offers
#   gsvfs        gsvfs serve --root STATE --listen unix:SOCK, the work in
#                STATE/workspaces (attach aname "", walk to workspaces),
#                msize 1 MiB offered
#   gsvfs 64K    the same server, msize 64 KiB offered: like for like with diod
#
# and runs bench/ninepbench against each, BENCH_RUNS times in rotating
# order: sequential write of one file (one Twrite per msize, then Tfsync),
# sequential read of it back (the server's page cache is not dropped),
# create of many small files, a stat storm over them (Twalk from the
# directory, Tgetattr, Tclunk per file) and their unlink. It also reads the
# servers' CPU time from /proc. Prints medians and the ratios gsvfs/diod
# (throughput: higher is better; CPU cost: lower is better), and the same
# table as markdown to $BENCH_OUT when that is set.
#
# Environment:
#   BENCH_RUNS=3          runs per target (median reported)
#   BENCH_SIZE_MB=512     size of the written and read file in MiB
#   BENCH_FILES=10000     small files to create, stat and unlink
#   BENCH_QUICK=1         smoke run: 64 MiB, 1,000 files, 1 run
#                         (explicit settings win)
#   BENCH_OUT=FILE        also write the table as markdown to FILE
#   BENCH_TMP=/tmp        where the work directory is made
#   BENCH_KEEP=1          keep the work directory
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=SCRIPTDIR/lib.sh
. "$here/lib.sh" ninepbench

if [[ ${BENCH_QUICK:-0} == 1 ]]; then
	RUNS=${BENCH_RUNS:-1}
	SIZE_MB=${BENCH_SIZE_MB:-64}
	NFILES=${BENCH_FILES:-1000}
else
	RUNS=${BENCH_RUNS:-3}
	SIZE_MB=${BENCH_SIZE_MB:-512}
	NFILES=${BENCH_FILES:-10000}
fi
need_counts RUNS SIZE_MB NFILES

# ---------------------------------------------------------------- state
# and, from lib.sh, work, VALS, ERRS, PROBLEMS and ninep_state's

ninep_state
on_exit stop_servers
declare -A ARGS     # target -> ninepbench arguments
declare -A UNLINKBY # target -> how ninepbench unlinked (Tunlinkat, or Twalk+Tremove)
declare -A TMSIZE=([diod]=1048576 [gsvfs]=1048576 [gsvfs64]=65536)

# Metrics in table order: JSON key, label, unit, kind (thr: more is better;
# cost: less is better).
METRICS=(write_MBps read_MBps create_ops stat_ops unlink_ops
	write_cpu_s_per_GB read_cpu_s_per_GB create_cpu_us_per_file stat_cpu_us_per_file)
declare -A MLABEL MUNIT MKIND
defm() { MLABEL[$1]=$2 MUNIT[$1]=$3 MKIND[$1]=$4; }
size_label="${SIZE_MB} MiB"
files_label=$(count_label "$NFILES")
defm write_MBps "seq write $size_label + Tfsync" MB/s thr
defm read_MBps "seq read $size_label (warm)" MB/s thr
defm create_ops "create $files_label small files" ops/s thr
defm stat_ops "walk+getattr+clunk $files_label" ops/s thr
defm unlink_ops "unlink $files_label" ops/s thr
defm write_cpu_s_per_GB "server CPU, write" s/GB cost
defm read_cpu_s_per_GB "server CPU, read" s/GB cost
defm create_cpu_us_per_file "server CPU, create" us/file cost
defm stat_cpu_us_per_file "server CPU, stat" us/file cost

# ---------------------------------------------------------------- helpers

# json_field KEY: the value of a number or string field of the one-line
# JSON object on stdin.
json_field() { sed -n "s/.*\"$1\":\"\{0,1\}\([^,\"}]*\).*/\1/p"; }

# bench_one TARGET RUN: one ninepbench run, its figures recorded.
bench_one() {
	local t=$1 r=$2 out m v shown=()
	log "${TLABEL[$t]}, run $r/$RUNS"
	# shellcheck disable=SC2086
	if ! out=$("$work/ninepbench" ${ARGS[$t]} -size "${SIZE_MB}M" -files "$NFILES" -json 2>"$work/err.$t"); then
		cat "$work/err.$t" >&2
		log "FAILED: ${TLABEL[$t]}, run $r"
		PROBLEMS+=("ninepbench failed on ${TLABEL[$t]} (run $r): $(head -c 300 "$work/err.$t")")
		for m in "${METRICS[@]}"; do ERRS["$m|$t"]=1; done
		return 0
	fi
	MSIZE[$t]=$(json_field msize_negotiated <<<"$out")
	UNLINKBY[$t]=$(json_field unlink_by <<<"$out")
	for m in "${METRICS[@]}"; do
		v=$(json_field "$m" <<<"$out")
		[[ -n $v ]] || continue
		record "$m" "$t" "$v"
		[[ ${MKIND[$m]} == thr ]] && shown+=("$(printf '%s %.0f' "${m%_*}" "$v")")
	done
	log "  -> msize $(json_field msize_negotiated <<<"$out"), ${shown[*]}"
}

# ---------------------------------------------------------------- setup

make_workdir
on_disk || log "warning: $work is on $fstype, not a disk file system"

cd "$repo"
log "building bin/gsvfs and bench/ninepbench"
make -s build
go build -o "$work/ninepbench" ./bench/ninepbench

uname=$(id -un)
uid=$(id -u)

ensure_tool diod || true
start_diod "the diod column is empty and there are no ratios"
if up diod; then
	ARGS[diod]="-socket ${SOCK[diod]} -aname $work/diod.export -uname $uname -uid $uid -msize ${TMSIZE[diod]} -pid ${PID[diod]}"
	ACTIVE+=(diod)
fi
start_gsvfs
if up gsvfs; then
	for t in gsvfs gsvfs64; do
		ARGS[$t]="-socket ${SOCK[gsvfs]} -walk workspaces -uname $uname -uid $uid -msize ${TMSIZE[$t]} -pid ${PID[gsvfs]}"
		ACTIVE+=("$t")
	done
fi
((${#ACTIVE[@]})) || { log "no server to measure"; exit 1; }

# ---------------------------------------------------------------- runs

# An untimed small run on each target first, so no target pays alone for
# whatever a first write costs on this disk.
for t in "${ACTIVE[@]}"; do
	# shellcheck disable=SC2086
	"$work/ninepbench" ${ARGS[$t]} -size 64M -files 100 >/dev/null 2>&1 ||
		log "warm-up run failed on ${TLABEL[$t]}"
done
rotate_runs bench_one
check_servers 20

# ---------------------------------------------------------------- report

fmt_value() { # METRIC VALUE
	if [[ ${MUNIT[$1]} == s/GB ]]; then fmt_num 2 "$2"; else fmt_num 0 "$2"; fi
}

ninep_table
header=(
	"gsvfs $gsvfs_version serve vs diod $diod_version, both over a unix socket, client github.com/hugelgupf/p9 $(go list -m -f '{{.Version}}' github.com/hugelgupf/p9 2>/dev/null || echo '?') (bench/ninepbench)"
	"$(now_utc), $(machine_desc), $(go env GOVERSION); work dir on $disk_desc"
	"median of $RUNS run(s); msize offered 1M to diod and gsvfs, 64K to gsvfs 64K; one Twrite/Tread per msize; $files_label files"
	"$(load_desc)"
	"ratios are gsvfs/diod: throughput higher is better, CPU cost lower is better"
)
unlink_note=
for t in "${ACTIVE[@]}"; do
	[[ -n ${UNLINKBY[$t]-} ]] && unlink_note+="${unlink_note:+, }${TLABEL[$t]} ${UNLINKBY[$t]}"
done
[[ -n $unlink_note ]] && header+=("unlink by $unlink_note (diod refuses Tunlinkat; the Linux client falls back to Twalk+Tremove too)")

ninep_report "gsvfs 9P benchmark (hugelgupf/p9 client)"
