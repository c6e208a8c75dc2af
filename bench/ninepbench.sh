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
export LC_ALL=C

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)

if [[ ${BENCH_QUICK:-0} == 1 ]]; then
	RUNS=${BENCH_RUNS:-1}
	SIZE_MB=${BENCH_SIZE_MB:-64}
	NFILES=${BENCH_FILES:-1000}
else
	RUNS=${BENCH_RUNS:-3}
	SIZE_MB=${BENCH_SIZE_MB:-512}
	NFILES=${BENCH_FILES:-10000}
fi
for v in RUNS SIZE_MB NFILES; do
	if ! [[ ${!v} =~ ^[1-9][0-9]*$ ]]; then
		echo "ninepbench: $v must be a positive integer, not '${!v}'" >&2
		exit 2
	fi
done

log() { printf 'ninepbench: %s\n' "$*" >&2; }

# ---------------------------------------------------------------- state

work=
declare -A PID      # server name -> pid
declare -A SOCK     # server name -> socket
declare -A ARGS     # target -> ninepbench arguments
declare -A MSIZE    # target -> msize negotiated
declare -A UNLINKBY # target -> how ninepbench unlinked (Tunlinkat, or Twalk+Tremove)
declare -A VALS     # "metric|target" -> values of the runs, space separated
declare -A ERRS     # "metric|target" -> 1 when a run failed
PROBLEMS=()
SKIPPED=()

declare -A TLABEL=([diod]=diod [gsvfs]=gsvfs [gsvfs64]="gsvfs 64K")
declare -A TMSIZE=([diod]=1048576 [gsvfs]=1048576 [gsvfs64]=65536)
ACTIVE=()

# Metrics in table order: JSON key, label, unit, kind (thr: more is better;
# cost: less is better).
METRICS=(write_MBps read_MBps create_ops stat_ops unlink_ops
	write_cpu_s_per_GB read_cpu_s_per_GB create_cpu_us_per_file stat_cpu_us_per_file)
declare -A MLABEL MUNIT MKIND
defm() { MLABEL[$1]=$2 MUNIT[$1]=$3 MKIND[$1]=$4; }
size_label="${SIZE_MB} MiB"
files_label=$NFILES
[[ $NFILES -ge 1000 && $((NFILES % 1000)) == 0 ]] && files_label="$((NFILES / 1000))k"
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

# wait_gone PID SECONDS: wait for a process to exit; false if it did not.
wait_gone() {
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.1
	done
	return 1
}

stop_server() {
	local pid=${PID[$1]-}
	[[ -n $pid ]] || return 0
	kill "$pid" 2>/dev/null || true
	if ! wait_gone "$pid" 10; then
		log "${1} (pid $pid) did not exit on SIGTERM; killing it"
		kill -9 "$pid" 2>/dev/null || true
	fi
	wait "$pid" 2>/dev/null || true
	unset "PID[$1]"
}

cleanup() {
	local rc=$? s
	set +e
	trap - EXIT INT TERM
	for s in "${!PID[@]}"; do stop_server "$s"; done
	if [[ -n $work && -d $work ]]; then
		if [[ ${BENCH_KEEP:-0} == 1 ]]; then log "kept $work"; else rm -rf "$work"; fi
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# start_server NAME LOG COMMAND...: start it in the background and wait
# until its socket SOCK[NAME] accepts connections.
start_server() {
	local name=$1 logf=$2 i
	shift 2
	"$@" >"$logf" 2>&1 &
	PID[$name]=$!
	for ((i = 0; i < 100; i++)); do
		[[ -S ${SOCK[$name]} ]] && return 0
		kill -0 "${PID[$name]}" 2>/dev/null || break
		sleep 0.1
	done
	log "$name did not come up on ${SOCK[$name]}; its output:"
	cat "$logf" >&2
	stop_server "$name"
	return 1
}

# json_field KEY: the value of a number or string field of the one-line
# JSON object on stdin.
json_field() { sed -n "s/.*\"$1\":\"\{0,1\}\([^,\"}]*\).*/\1/p"; }

record() { VALS["$1|$2"]+="$3 "; }

# median of the space-separated numbers in $1.
median() {
	tr ' ' '\n' <<<"$1" | grep -v '^$' | sort -g |
		awk '{ a[NR] = $1 } END { if (NR == 0) exit 1; if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}

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

load_start=$(cut -d' ' -f1-3 /proc/loadavg)
base=${BENCH_TMP:-/tmp}
work=$(mktemp -d "$base/ninepbench.XXXXXX")
fstype=$(findmnt -n -o FSTYPE -T "$work" 2>/dev/null || stat -f -c %T "$work")
log "work directory $work ($fstype)"
case $fstype in
ext4 | ext2/ext3 | xfs | btrfs) ;;
*) log "warning: $work is on $fstype, not a disk file system" ;;
esac

cd "$repo"
log "building bin/gsvfs and bench/ninepbench"
make -s build
go build -o "$work/ninepbench" ./bench/ninepbench

uname=$(id -un)
uid=$(id -u)

if ! command -v diod >/dev/null; then
	if [[ $uid == 0 ]] && command -v apt-get >/dev/null; then
		log "installing diod"
		apt-get install -y -qq diod >/dev/null 2>&1 ||
			{ apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq diod >/dev/null 2>&1; } || true
	fi
fi
diod_version=-
if command -v diod >/dev/null; then
	diod_version=$(dpkg-query -W -f='${Version}' diod 2>/dev/null || echo "?")
	mkdir "$work/diod.export"
	SOCK[diod]=$work/diod.sock
	if start_server diod "$work/diod.out" \
		diod -f -n -e "$work/diod.export" -l "${SOCK[diod]}" -c /dev/null -L "$work/diod.log"; then
		ARGS[diod]="-socket ${SOCK[diod]} -aname $work/diod.export -uname $uname -uid $uid -msize ${TMSIZE[diod]} -pid ${PID[diod]}"
		ACTIVE+=(diod)
		log "diod $diod_version serving $work/diod.export (pid ${PID[diod]})"
	else
		PROBLEMS+=("diod did not start")
	fi
else
	SKIPPED+=("diod is not installed (Debian package diod): the diod column is empty and there are no ratios")
fi

gsvfs_version=$(git -C "$repo" describe --tags --always --dirty 2>/dev/null || echo dev)
mkdir -p "$work/gs.state"
SOCK[gsvfs]=$work/gs.sock
if start_server gsvfs "$work/gs.log" \
	"$repo/bin/gsvfs" serve --root "$work/gs.state" --listen "unix:${SOCK[gsvfs]}"; then
	for t in gsvfs gsvfs64; do
		ARGS[$t]="-socket ${SOCK[gsvfs]} -walk workspaces -uname $uname -uid $uid -msize ${TMSIZE[$t]} -pid ${PID[gsvfs]}"
		ACTIVE+=("$t")
	done
	log "gsvfs $gsvfs_version serving $work/gs.state (pid ${PID[gsvfs]})"
else
	PROBLEMS+=("gsvfs serve did not start")
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
for ((r = 1; r <= RUNS; r++)); do
	n=${#ACTIVE[@]}
	for ((i = 0; i < n; i++)); do
		bench_one "${ACTIVE[(i + r - 1) % n]}" "$r"
	done
done
for s in "${!PID[@]}"; do
	if ! kill -0 "${PID[$s]}" 2>/dev/null; then PROBLEMS+=("$s exited during the runs"); fi
done
if [[ -f $work/gs.log ]]; then
	n=$(grep -ciE 'level=(error|warn)|panic|fatal' "$work/gs.log" || true)
	if [[ $n != 0 ]]; then
		PROBLEMS+=("$n error/warning lines in the gsvfs log, the first: $(grep -m1 -iE 'level=(error|warn)|panic|fatal' "$work/gs.log" | cut -c1-200)")
		grep -iE 'level=(error|warn)|panic|fatal' "$work/gs.log" | head -20 >&2
	fi
fi

# ---------------------------------------------------------------- report

cell_value() {
	local k="$1|$2"
	if [[ -n ${ERRS[$k]-} ]]; then echo err
	elif [[ -n ${VALS[$k]-} ]]; then median "${VALS[$k]}"
	else echo -; fi
}

fmt_value() { # METRIC VALUE
	case $2 in err | -) echo "$2" ;;
	*) if [[ ${MUNIT[$1]} == s/GB ]]; then printf '%.2f\n' "$2"; else printf '%.0f\n' "$2"; fi ;;
	esac
}

isnum() { [[ $1 =~ ^[0-9.]*[0-9][0-9.]*(e[+-]?[0-9]+)?$ ]]; }

# ratio METRIC TARGET: target / diod, formatted, or "-".
ratio() {
	local d v
	d=$(cell_value "$1" diod)
	v=$(cell_value "$1" "$2")
	if isnum "$d" && isnum "$v" && awk -v d="$d" 'BEGIN { exit !(d > 0) }'; then
		if [[ ${MKIND[$1]} == thr ]]; then
			awk -v a="$v" -v b="$d" 'BEGIN { printf "%.2fx\n", a / b }'
		else
			awk -v a="$v" -v b="$d" 'BEGIN { printf "%.2fx cost\n", a / b }'
		fi
	else
		echo -
	fi
}

msize_label() { # TARGET
	local m=${MSIZE[$1]-}
	if [[ -z $m ]]; then echo "${TLABEL[$1]}"; return; fi
	if ((m % 1048576 == 0)); then m="$((m / 1048576))M"; elif ((m % 1024 == 0)); then m="$((m / 1024))K"; fi
	echo "${TLABEL[$1]} (msize $m)"
}

table=$work/table.tsv
{
	printf 'workload\tunit\t%s\t%s\tgsvfs/diod\t%s\t64K/diod\n' \
		"$(msize_label diod)" "$(msize_label gsvfs)" "$(msize_label gsvfs64)"
	for m in "${METRICS[@]}"; do
		printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "${MLABEL[$m]}" "${MUNIT[$m]}" \
			"$(fmt_value "$m" "$(cell_value "$m" diod)")" \
			"$(fmt_value "$m" "$(cell_value "$m" gsvfs)")" "$(ratio "$m" gsvfs)" \
			"$(fmt_value "$m" "$(cell_value "$m" gsvfs64)")" "$(ratio "$m" gsvfs64)"
	done
} >"$table"

header=(
	"gsvfs $gsvfs_version serve vs diod $diod_version, both over a unix socket, client github.com/hugelgupf/p9 $(go list -m -f '{{.Version}}' github.com/hugelgupf/p9 2>/dev/null || echo '?') (bench/ninepbench)"
	"$(date -u '+%Y-%m-%d %H:%M UTC'), Linux $(uname -r), $(nproc) CPUs, $(go env GOVERSION); work dir on $fstype ($base)"
	"median of $RUNS run(s); msize offered 1M to diod and gsvfs, 64K to gsvfs 64K; one Twrite/Tread per msize; $files_label files"
	"load average (1/5/15 min) $load_start at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end"
	"ratios are gsvfs/diod: throughput higher is better, CPU cost lower is better"
)
unlink_note=
for t in "${ACTIVE[@]}"; do
	[[ -n ${UNLINKBY[$t]-} ]] && unlink_note+="${unlink_note:+, }${TLABEL[$t]} ${UNLINKBY[$t]}"
done
[[ -n $unlink_note ]] && header+=("unlink by $unlink_note (diod refuses Tunlinkat; the Linux client falls back to Twalk+Tremove too)")

echo
printf '%s\n' "${header[@]}"
echo
awk -F'\t' '
	{ for (i = 1; i <= NF; i++) { c[NR, i] = $i; if (length($i) > w[i]) w[i] = length($i) } n = NF }
	END {
		for (r = 1; r <= NR; r++) {
			line = ""
			for (i = 1; i <= n; i++) {
				s = c[r, i]
				pad = (i <= 2) ? sprintf("%-" w[i] "s", s) : sprintf("%" w[i] "s", s)
				line = line (i > 1 ? " | " : "") pad
			}
			sub(/ +$/, "", line)
			print line
			if (r == 1) {
				line = ""
				for (i = 1; i <= n; i++) { d = sprintf("%" w[i] "s", ""); gsub(/ /, "-", d); line = line (i > 1 ? "-+-" : "") d }
				print line
			}
		}
	}' "$table"
echo
if ((${#SKIPPED[@]})); then
	echo "Skipped:"
	printf '  - %s\n' "${SKIPPED[@]}"
fi
if ((${#PROBLEMS[@]})); then
	echo "Problems seen:"
	printf '  - %s\n' "${PROBLEMS[@]}"
fi

if [[ -n ${BENCH_OUT:-} ]]; then
	{
		echo "# gsvfs 9P benchmark (hugelgupf/p9 client)"
		echo
		printf -- '- %s\n' "${header[@]}"
		echo
		awk -F'\t' '
			{ line = "|"; for (i = 1; i <= NF; i++) line = line " " $i " |"; print line
			  if (NR == 1) { line = "|"; for (i = 1; i <= NF; i++) line = line (i <= 2 ? " --- |" : " ---: |"); print line } }' "$table"
		if ((${#SKIPPED[@]})); then
			echo
			printf -- '- skipped: %s\n' "${SKIPPED[@]}"
		fi
		if ((${#PROBLEMS[@]})); then
			echo
			printf -- '- problem: %s\n' "${PROBLEMS[@]}"
		fi
	} >"$BENCH_OUT"
	log "wrote $BENCH_OUT"
fi
