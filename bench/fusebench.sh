#!/usr/bin/env bash
# fusebench.sh — how close a gsvfs FUSE mount comes to the native disk.
#
# Builds gsvfs, go-fuse's loopback example and bench/metaops, then measures
# the same workloads on four targets, all backed by one work directory on
# the disk that holds /tmp:
#
#   native       a plain directory
#   gsvfs        `gsvfs mount --root STATE MNT`, the workload in MNT/workspaces/
#   gsvfs no-pt  the same with --no-passthrough (data workloads only)
#   loopback     go-fuse's example/loopback on a plain directory, the
#                reference (it hands files to kernel passthrough by itself
#                when it runs as root and the kernel offers it)
#
# Workloads, each run BENCH_RUNS times, the median reported: sequential write
# and cold sequential read of one file (dd, 1 MiB blocks), 4 KiB O_DIRECT
# random reads (fio), create+stat+unlink of many files in one directory
# (bench/metaops), tar x of Go's source tree and rm -rf of it, and git
# init/add/commit/status on a generated tree of small files.
#
# Prints an aligned table with ratios to native and the targets gsvfs must
# hit, PASS or MISS, and writes the same table as markdown to $BENCH_OUT
# when that is set. Needs root for passthrough, drop_caches and the
# loopback mount; it says so and carries on without where it can.
#
# Environment:
#   BENCH_RUNS=3          runs per workload and target (median reported)
#   BENCH_SIZE_MB=1024    size of the dd/fio file in MiB
#   BENCH_QUICK=1         smoke run: 256 MiB, 2,000 files, 1 run, tar of
#                         src/net only, 3 s of fio (explicit settings win)
#   BENCH_FILES=10000     files for create/stat/unlink
#   BENCH_FIO_RUNTIME=10  seconds of each fio run
#   BENCH_OUT=FILE        also write the table as markdown to FILE
#   BENCH_TMP=/tmp        where the work directory is made
#   BENCH_KEEP=1          keep the work directory (mounts are undone anyway)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=SCRIPTDIR/lib.sh
. "$here/lib.sh" fusebench

quick=${BENCH_QUICK:-0}
if [[ $quick == 1 ]]; then
	RUNS=${BENCH_RUNS:-1}
	SIZE_MB=${BENCH_SIZE_MB:-256}
	NFILES=${BENCH_FILES:-2000}
	GIT_FILES=2000
	GIT_DIRS=20
	TAR_WHAT=src/net
	FIO_RUNTIME=${BENCH_FIO_RUNTIME:-3}
else
	RUNS=${BENCH_RUNS:-3}
	SIZE_MB=${BENCH_SIZE_MB:-1024}
	NFILES=${BENCH_FILES:-10000}
	GIT_FILES=5000
	GIT_DIRS=50
	TAR_WHAT=src
	FIO_RUNTIME=${BENCH_FIO_RUNTIME:-10}
fi
need_counts RUNS SIZE_MB NFILES FIO_RUNTIME

is_root=0
[[ $(id -u) == 0 ]] && is_root=1
if [[ $is_root == 0 ]]; then
	log "warning: not root: no FUSE passthrough, no drop_caches (reads are warm), no fio install"
fi

# ---------------------------------------------------------------- state
# and, from lib.sh, work, VALS, ERRS ("workload|target") and PROBLEMS

lb_pid=
MOUNTED=()           # mount points this script mounted, in order
declare -A DAEMON    # mount point -> pid of the process serving it
declare -A DIR       # target -> directory the workloads run in
declare -A STATELOG  # target -> daemon log to scan for errors

TARGETS=(native gsvfs nopt loopback)
declare -A TLABEL=([native]=native [gsvfs]=gsvfs [nopt]="gsvfs no-pt" [loopback]=loopback)

# Workloads in table order: label, unit, kind (thr: more is better; time:
# less is better), target ratio (empty: none) and whether gsvfs no-pt runs it.
WORKLOADS=(seqwrite smallwrite seqread randread meta meta_create meta_stat meta_unlink tarx rmrf git)
declare -A WLABEL WUNIT WKIND WGOAL WDATA
defwl() { WLABEL[$1]=$2 WUNIT[$1]=$3 WKIND[$1]=$4 WGOAL[$1]=$5 WDATA[$1]=$6; }
files_label=$(count_label "$NFILES")
git_label="$((GIT_FILES / 1000))k"
size_label="${SIZE_MB} MiB"
[[ $((SIZE_MB % 1024)) == 0 ]] && size_label="$((SIZE_MB / 1024)) GiB"
defwl seqwrite "seq write $size_label (dd fsync)" "MB/s" thr 0.90 1
defwl smallwrite "4 KiB writes, 256 MiB (dd bs=4k)" "MB/s" thr "" 1
defwl seqread "cold seq read $size_label (dd)" "MB/s" thr 0.95 1
defwl randread "4 KiB O_DIRECT rand read (fio)" "IOPS" thr 0.90 1
defwl meta "create+stat+unlink $files_label files" "s" time 5 0
defwl meta_create "  create+close" "s" time "" 0
defwl meta_stat "  lstat" "s" time "" 0
defwl meta_unlink "  unlink" "s" time "" 0
defwl tarx "tar x go/$TAR_WHAT" "s" time 6 0
defwl rmrf "rm -rf go/$TAR_WHAT" "s" time "" 0
defwl git "git init+add+commit+status ${git_label}" "s" time 3 0

# ---------------------------------------------------------------- helpers

is_mounted() { awk -v m="$1" '$5 == m { f = 1 } END { exit !f }' /proc/self/mountinfo; }

unmount_one() {
	local m=$1 pid=${DAEMON[$1]-}
	if is_mounted "$m"; then
		if [[ $m == */gs*.mnt ]]; then
			"$work/gsvfs" umount "$m" >/dev/null 2>&1 || true
		fi
		is_mounted "$m" && { fusermount3 -u "$m" 2>/dev/null || fusermount -u "$m" 2>/dev/null || umount "$m" 2>/dev/null || true; }
		is_mounted "$m" && { log "unmounting $m lazily"; umount -l "$m" 2>/dev/null || fusermount -uz "$m" 2>/dev/null || true; }
	fi
	if [[ -n $pid ]] && ! wait_gone "$pid" 10; then
		log "process $pid serving $m did not exit; killing it"
		PROBLEMS+=("the daemon serving ${m##*/} did not exit within 10 s of its unmount")
		kill "$pid" 2>/dev/null || true
		wait_gone "$pid" 5 || kill -9 "$pid" 2>/dev/null || true
	fi
}

# scan_logs reports errors, warnings and panics in the daemons' logs.
scan_logs() {
	local t f n
	for t in "${!STATELOG[@]}"; do
		f=${STATELOG[$t]}
		[[ -f $f ]] || continue
		n=$(grep -ciE "$alarm_re" "$f" || true)
		if [[ $n != 0 ]]; then
			log "$n error/warning lines in the ${TLABEL[$t]} log $f (first 20):"
			grep -iE "$alarm_re" "$f" | head -20 >&2
		fi
	done
}

# undo_mounts: on_exit's UNDO; false (leave the work directory) while
# something in it is still mounted.
undo_mounts() {
	local i
	for ((i = ${#MOUNTED[@]} - 1; i >= 0; i--)); do
		unmount_one "${MOUNTED[i]}"
	done
	if [[ -n $lb_pid ]]; then
		wait_gone "$lb_pid" 5 || kill "$lb_pid" 2>/dev/null
		wait "$lb_pid" 2>/dev/null
	fi
	[[ -n $work && -d $work ]] || return 0
	scan_logs
	for i in "${MOUNTED[@]}"; do
		if is_mounted "$i"; then
			[[ ${BENCH_KEEP:-0} == 1 ]] || log "still mounted: $i; leaving $work"
			return 1
		fi
	done
}
on_exit undo_mounts

sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.6f", b - a }'; }

drop_caches() {
	sync
	if [[ $is_root == 1 ]]; then
		echo 3 >/proc/sys/vm/drop_caches
	fi
}

# measure WORKLOAD TARGET RUN FUNC: one run, recording a failure.
measure() {
	local w=$1 t=$2 r=$3 fn=$4 before
	before=${VALS["$w|$t"]-}
	log "${WLABEL[$w]# } — ${TLABEL[$t]}, run $r/$RUNS"
	if ! "$fn" "$t" "$r"; then
		log "FAILED: ${WLABEL[$w]# } on ${TLABEL[$t]}, run $r"
		ERRS["$w|$t"]=1
		PROBLEMS+=("${WLABEL[$w]# } failed on ${TLABEL[$t]} (run $r)")
		return 0
	fi
	local now=${VALS["$w|$t"]-}
	log "  -> ${now#"$before"}${WUNIT[$w]}"
}

# ---------------------------------------------------------------- workloads
# Each takes TARGET RUN, records its figures and returns non-zero on failure.
# They run where errexit is off, so every step checks its own status.

run_seqwrite() {
	local f=${DIR[$1]}/seq.dat t0 t1
	rm -f "$f" || return 1
	sync
	t0=$EPOCHREALTIME
	dd if=/dev/zero of="$f" bs=1M count="$SIZE_MB" conv=fsync status=none || return 1
	t1=$EPOCHREALTIME
	record seqwrite "$1" "$(mbps $((SIZE_MB * 1048576)) "$(sub "$t0" "$t1")")"
}

# Small writes: each write(2) is a round trip to the daemon unless the
# kernel can serve it alone (passthrough, and no security.capability
# check per write).
run_smallwrite() {
	local f=${DIR[$1]}/small.dat t0 t1
	rm -f "$f" || return 1
	t0=$EPOCHREALTIME
	dd if=/dev/zero of="$f" bs=4k count=65536 status=none || return 1
	t1=$EPOCHREALTIME
	rm -f "$f"
	record smallwrite "$1" "$(mbps $((65536 * 4096)) "$(sub "$t0" "$t1")")"
}

run_seqread() {
	local f=${DIR[$1]}/seq.dat t0 t1 size
	size=$(stat -c %s "$f") || return 1
	[[ $size == $((SIZE_MB * 1048576)) ]] || { log "$f has $size bytes"; return 1; }
	drop_caches
	t0=$EPOCHREALTIME
	dd if="$f" of=/dev/null bs=1M status=none || return 1
	t1=$EPOCHREALTIME
	record seqread "$1" "$(mbps "$size" "$(sub "$t0" "$t1")")"
}

run_randread() {
	local f=${DIR[$1]}/seq.dat out iops
	[[ -f $f ]] || return 1
	sync
	out=$(fio --name=randread --filename="$f" --rw=randread --bs=4k --direct=1 \
		--ioengine=psync --size="${SIZE_MB}M" --runtime="$FIO_RUNTIME" --time_based \
		--output-format=terse --terse-version=3 2>"$work/fio.err") || { cat "$work/fio.err" >&2; return 1; }
	iops=$(awk -F';' '$1 == 3 { v = $8 } END { print v }' <<<"$out")
	[[ $iops =~ ^[0-9.]+$ && $iops != 0 ]] || { log "fio said: $out"; cat "$work/fio.err" >&2; return 1; }
	record randread "$1" "$iops"
}

run_meta() {
	local d=${DIR[$1]}/meta.$2 out p v
	rm -rf "$d" && mkdir "$d" || return 1
	sync
	out=$("$work/metaops" "$d" "$NFILES") || return 1
	rmdir "$d" || return 1
	for p in total create stat unlink; do
		v=$(awk -v p="$p" '$1 == p { print $2 }' <<<"$out")
		[[ -n $v ]] || return 1
		if [[ $p == total ]]; then record meta "$1" "$v"; else record "meta_$p" "$1" "$v"; fi
	done
}

run_tar() {
	local d=${DIR[$1]}/tar.$2 t0 t1
	rm -rf "$d" && mkdir "$d" || return 1
	sync
	t0=$EPOCHREALTIME
	tar -xf "$work/src.tar" -C "$d" || return 1
	t1=$EPOCHREALTIME
	record tarx "$1" "$(sub "$t0" "$t1")"
	sync
	t0=$EPOCHREALTIME
	if ! rm -rf "$d"; then
		ERRS["rmrf|$1"]=1
		PROBLEMS+=("rm -rf failed on ${TLABEL[$1]} (run $2)")
		return 0
	fi
	t1=$EPOCHREALTIME
	record rmrf "$1" "$(sub "$t0" "$t1")"
}

run_git() {
	local d=${DIR[$1]}/git.$2 t0 t1 status
	rm -rf "$d" || return 1
	cp -r "$work/gitsrc" "$d" || return 1
	sync
	t0=$EPOCHREALTIME
	status=$(cd "$d" && git -c init.defaultBranch=main init -q && git add -A &&
		git -c user.name=b -c user.email=b@b commit -qm x && git status --porcelain) || return 1
	t1=$EPOCHREALTIME
	if [[ -n $status ]]; then
		log "git status is not clean on ${TLABEL[$1]}:"
		head -5 <<<"$status" >&2
		PROBLEMS+=("git status --porcelain right after commit is not clean on ${TLABEL[$1]}")
	fi
	record git "$1" "$(sub "$t0" "$t1")"
	rm -rf "$d" || return 1
}

# ---------------------------------------------------------------- setup

make_workdir
on_disk || log "warning: $work is on $fstype, not a disk file system: native figures will flatter it"

cd "$repo"
log "building gsvfs, loopback and metaops"
go build -o "$work/gsvfs" ./cmd/gsvfs
go build -o "$work/metaops" ./bench/metaops
gofuse_version=$(go list -m -f '{{.Version}}' github.com/hanwen/go-fuse/v2)
if ! go build -o "$work/loopback" github.com/hanwen/go-fuse/v2/example/loopback 2>"$work/loopback-build.err"; then
	cat "$work/loopback-build.err" >&2
	log "go-fuse's example/loopback did not build; the loopback column is left out"
fi

have_fio=0
ensure_tool fio && have_fio=1
[[ $have_fio == 1 ]] || log "warning: no fio; the random-read row is left out"

goroot=$(go env GOROOT)
log "making the tarball of $goroot/$TAR_WHAT and the git tree of $GIT_FILES files"
tar -C "$goroot" -cf "$work/src.tar" "$TAR_WHAT"
per_dir=$((GIT_FILES / GIT_DIRS))
for ((d = 0; d < GIT_DIRS; d++)); do
	mkdir -p "$work/gitsrc/dir$d"
	for ((i = 0; i < per_dir; i++)); do
		printf 'package dir%d\n\n// File %d of directory %d.\nconst F%d = "%d-%d"\n' \
			"$d" "$i" "$d" "$i" "$d" "$i" >"$work/gitsrc/dir$d/f$i.go"
	done
done

# Mount the FUSE targets side by side, so runs interleave across targets
# and drift on the machine falls on all of them alike.
mkdir -p "$work/native/bench"
DIR[native]=$work/native/bench

mount_gsvfs() { # TARGET STATE MNT [FLAGS...]
	local t=$1 state=$2 mnt=$3 out
	shift 3
	mkdir -p "$state" "$mnt"
	STATELOG[$t]=$state/gsvfs.log
	if ! out=$("$work/gsvfs" mount --root "$state" "$@" "$mnt"); then
		log "gsvfs mount $* failed; its log:"
		cat "$state/gsvfs.log" >&2 || true
		return 1
	fi
	log "$out"
	MOUNTED+=("$mnt")
	DAEMON[$mnt]=$(sed -n 's/.*(pid \([0-9]*\).*/\1/p' <<<"$out")
	mkdir "$mnt/workspaces/bench"
	DIR[$t]=$mnt/workspaces/bench
}
mount_gsvfs gsvfs "$work/gs.state" "$work/gs.mnt"
mount_gsvfs nopt "$work/gsnp.state" "$work/gsnp.mnt" --no-passthrough

if [[ -x $work/loopback ]]; then
	mkdir -p "$work/lb.orig" "$work/lb.mnt"
	STATELOG[loopback]=$work/loopback.log
	"$work/loopback" -q "$work/lb.mnt" "$work/lb.orig" >"$work/loopback.log" 2>&1 &
	lb_pid=$!
	MOUNTED+=("$work/lb.mnt")
	DAEMON[$work/lb.mnt]=$lb_pid
	wait_up "$lb_pid" is_mounted "$work/lb.mnt" || true
	if is_mounted "$work/lb.mnt"; then
		mkdir "$work/lb.mnt/bench"
		DIR[loopback]=$work/lb.mnt/bench
		log "loopback serving $work/lb.orig at $work/lb.mnt (pid $lb_pid)"
	else
		cat "$work/loopback.log" >&2
		log "the loopback mount did not come up; the loopback column is left out"
	fi
fi

# targets_for WORKLOAD RUN: the mounted targets that run the workload, in
# an order rotated by the run number so no target always goes first.
targets_for() {
	local t list=() i
	for t in "${TARGETS[@]}"; do
		[[ -n ${DIR[$t]-} ]] || continue
		[[ $t == nopt && ${WDATA[$1]} != 1 ]] && continue
		list+=("$t")
	done
	for ((i = 0; i < ${#list[@]}; i++)); do
		echo "${list[(i + $2 - 1) % ${#list[@]}]}"
	done
}

# ---------------------------------------------------------------- runs

# An untimed first write on each target, so no target pays alone for
# whatever a first write costs on this disk (block allocation, a thin
# virtual disk).
for t in $(targets_for seqwrite 1); do
	log "warm-up write on ${TLABEL[$t]}"
	dd if=/dev/zero of="${DIR[$t]}/seq.dat" bs=1M count="$SIZE_MB" conv=fsync status=none ||
		log "warm-up write failed on ${TLABEL[$t]}"
done
for ((r = 1; r <= RUNS; r++)); do
	for t in $(targets_for seqwrite "$r"); do
		measure seqwrite "$t" "$r" run_seqwrite
		measure seqread "$t" "$r" run_seqread
	done
done
for ((r = 1; r <= RUNS; r++)); do
	for t in $(targets_for smallwrite "$r"); do
		measure smallwrite "$t" "$r" run_smallwrite
	done
done
if [[ $have_fio == 1 ]]; then
	for ((r = 1; r <= RUNS; r++)); do
		for t in $(targets_for randread "$r"); do
			measure randread "$t" "$r" run_randread
		done
	done
fi
for t in $(targets_for seqwrite 1); do rm -f "${DIR[$t]}/seq.dat"; done
for ((r = 1; r <= RUNS; r++)); do
	for t in $(targets_for meta "$r"); do measure meta "$t" "$r" run_meta; done
done
for ((r = 1; r <= RUNS; r++)); do
	for t in $(targets_for tarx "$r"); do measure tarx "$t" "$r" run_tar; done
done
for ((r = 1; r <= RUNS; r++)); do
	for t in $(targets_for git "$r"); do measure git "$t" "$r" run_git; done
done

# ---------------------------------------------------------------- report

fmt_value() { # WORKLOAD VALUE
	if [[ ${WUNIT[$1]} == s ]]; then fmt_num 3 "$2"; else fmt_num 0 "$2"; fi
}

fmt_ratio() { # WORKLOAD RATIO
	[[ $2 == - ]] && { echo -; return; }
	if [[ ${WKIND[$1]} == thr ]]; then printf '%.2fx\n' "$2"; else printf '%.2fx time\n' "$2"; fi
}

meets() { # WORKLOAD RATIO -> exit 0 when the goal is met
	if [[ ${WKIND[$1]} == thr ]]; then
		awk -v r="$2" -v g="${WGOAL[$1]}" 'BEGIN { exit !(r >= g) }'
	else
		awk -v r="$2" -v g="${WGOAL[$1]}" 'BEGIN { exit !(r <= g) }'
	fi
}

goal_text() {
	local g=${WGOAL[$1]}
	[[ -z $g ]] && { echo -; return; }
	if [[ ${WKIND[$1]} == thr ]]; then printf '>= %.2fx\n' "$g"; else printf '<= %gx time\n' "$g"; fi
}

table=$work/table.tsv
shortfalls=()
{
	printf 'workload\tunit\tnative\tgsvfs\tgsvfs/native\ttarget\tresult\tgsvfs no-pt\tno-pt/native\tloopback\tloopback/native\n'
	for w in "${WORKLOADS[@]}"; do
		[[ $w == randread && $have_fio == 0 ]] && continue
		gr=$(ratio "$w" gsvfs native)
		result=-
		if [[ -n ${WGOAL[$w]} ]]; then
			if [[ $gr == - ]]; then
				result=MISS
				shortfalls+=("${WLABEL[$w]}: gsvfs gave no figure ($(cell_value "$w" gsvfs))")
			elif meets "$w" "$gr"; then
				result=PASS
			else
				result=MISS
				lr=$(ratio "$w" loopback native)
				lbnote=
				[[ $lr != - ]] && lbnote="; loopback reference: $(fmt_ratio "$w" "$lr")"
				if [[ ${WKIND[$w]} == thr ]]; then
					shortfalls+=("$(awk -v l="${WLABEL[$w]}" -v r="$gr" -v g="${WGOAL[$w]}" \
						'BEGIN { printf "%s: gsvfs reaches %.2fx of native, target %.2fx: short by %.2fx (%.0f%% of the target)", l, r, g, g - r, 100 * r / g }')$lbnote")
				else
					shortfalls+=("$(awk -v l="${WLABEL[$w]}" -v r="$gr" -v g="${WGOAL[$w]}" \
						'BEGIN { printf "%s: gsvfs takes %.2fx native time, target <= %gx: over by %.2fx (%.0f%% over the target)", l, r, g, r - g, 100 * (r / g - 1) }')$lbnote")
				fi
			fi
		fi
		row="${WLABEL[$w]}\t${WUNIT[$w]}"
		row+="\t$(fmt_value "$w" "$(cell_value "$w" native)")"
		row+="\t$(fmt_value "$w" "$(cell_value "$w" gsvfs)")\t$(fmt_ratio "$w" "$gr")"
		row+="\t$(goal_text "$w")\t$result"
		row+="\t$(fmt_value "$w" "$(cell_value "$w" nopt)")\t$(fmt_ratio "$w" "$(ratio "$w" nopt native)")"
		row+="\t$(fmt_value "$w" "$(cell_value "$w" loopback)")\t$(fmt_ratio "$w" "$(ratio "$w" loopback native)")"
		printf '%b\n' "$row"
	done
} >"$table"

gsvfs_version=$(repo_version)
header=(
	"gsvfs $gsvfs_version vs native disk; go-fuse $gofuse_version example/loopback as reference"
	"$(now_utc), $(machine_desc), $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), $(go env GOVERSION)"
	"work dir on $fstype ($base); median of $RUNS run(s); file $size_label; $NFILES files; fio ${FIO_RUNTIME}s psync QD1; git tree $GIT_FILES files in $GIT_DIRS dirs"
	"$(load_desc): other work on the machine adds noise"
	"throughput ratios are target/native (higher is better); time ratios are multiples of native time (lower is better)"
)
[[ $is_root == 1 ]] || header+=("not run as root: no passthrough, caches not dropped")

report_text "$table" "1 2 7"
if ((${#shortfalls[@]})); then
	print_list "Targets missed:" "${shortfalls[@]}"
else
	echo "All targets met."
fi
print_list "Problems seen:" "${PROBLEMS[@]}"

markdown_report() {
	report_markdown "gsvfs FUSE benchmark" "$table" "1 2 7"
	echo
	if ((${#shortfalls[@]})); then
		echo "Targets missed:"
		echo
		printf -- '- %s\n' "${shortfalls[@]}"
	else
		echo "All targets met."
	fi
	if ((${#PROBLEMS[@]})); then
		echo
		echo "Problems seen:"
		echo
		printf -- '- %s\n' "${PROBLEMS[@]}"
	fi
}
write_out markdown_report
