#!/usr/bin/env bash
# fusebench.sh — how close a gsvfs FUSE mount comes to the native disk.
#
# Builds gsvfs, go-fuse's loopback example and bench/metaops, then measures
# the same workloads on four targets, all backed by one work directory on
# the disk that holds /tmp:
#
#   native       a plain directory
#   gsvfs        `gsvfs mount --root STATE MNT`, the workload in MNT/workspaces/
#   gsvfs kernel-binds  the same with --kernel-binds: the kernel serves
#                /workspaces itself (metadata workloads only; root only)
#   gsvfs no-pt  the same with --no-passthrough (data workloads only)
#   loopback     go-fuse's example/loopback on a plain directory, the
#                reference (it hands files to kernel passthrough by itself
#                when it runs as root and the kernel offers it)
#
# Workloads, each run BENCH_RUNS times, the median reported: sequential write
# and cold sequential read of one file (dd, 1 MiB blocks), 4 KiB O_DIRECT
# random reads (fio), create+stat+unlink of many files in one directory
# (bench/metaops), tar x of Go's source tree and rm -rf of it, git
# init/add/commit/status on a generated tree of small files, and ls -lR
# and git status of a warm tree (read before, as an agent rereads its
# repository). For tar x it also reports the daemons' CPU time per entry
# and, from one more untimed run under strace -c, their system calls per
# entry and per FUSE request (a reply is one writev), so regressions show.
#
# The work directory is a loop-mounted ext4 of its own (lib.sh,
# loop_disk, says why); BENCH_FS=host measures on BENCH_TMP as it is.
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
#                         src/net only, 3 s of fio, a warm tree of 2,000
#                         files (explicit settings win)
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
	WARM_FILES=2000
	WARM_DIRS=20
else
	RUNS=${BENCH_RUNS:-3}
	SIZE_MB=${BENCH_SIZE_MB:-1024}
	NFILES=${BENCH_FILES:-10000}
	GIT_FILES=5000
	GIT_DIRS=50
	TAR_WHAT=src
	FIO_RUNTIME=${BENCH_FIO_RUNTIME:-10}
	WARM_FILES=10000
	WARM_DIRS=100
fi
need_counts RUNS SIZE_MB NFILES FIO_RUNTIME

is_root=0
[[ $(id -u) == 0 ]] && is_root=1
if [[ $is_root == 0 ]]; then
	log "warning: not root: no FUSE passthrough, no drop_caches (reads are warm), no fio install"
fi

# ---------------------------------------------------------------- state
# and, from lib.sh, work, VALS, ERRS ("workload|target") and PROBLEMS

fuse_state

TARGETS=(native gsvfs kb nopt loopback)
declare -A TLABEL=([native]=native [gsvfs]=gsvfs [kb]="gsvfs kernel-binds" [nopt]="gsvfs no-pt" [loopback]=loopback)

# Workloads in table order: label, unit, kind (thr: more is better; time:
# less is better), target ratio (empty: none) and whether it moves data (1:
# gsvfs no-pt runs it, gsvfs kernel-binds does not). The goals of issue 11
# also ask gsvfs to take at most half loopback's time (LB_GOAL).
WORKLOADS=(seqwrite smallwrite seqread randread meta meta_create meta_stat meta_unlink tarx tarcpu sysent sysreq rmrf git lsr gitstatus)
LB_GOAL=2
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
defwl meta "create+stat+unlink $files_label files" "s" time 3 0
defwl meta_create "  create+close" "s" time "" 0
defwl meta_stat "  lstat" "s" time "" 0
defwl meta_unlink "  unlink" "s" time "" 0
defwl tarx "tar x go/$TAR_WHAT" "s" time 4 0
defwl tarcpu "  daemon CPU per entry" "us" time "" 0
defwl sysent "  daemon syscalls per entry" "calls" time "" 0
defwl sysreq "  daemon syscalls per FUSE request" "calls" time "" 0
defwl rmrf "rm -rf go/$TAR_WHAT" "s" time 2 0
defwl git "git init+add+commit+status ${git_label}" "s" time 3 0
warm_label=$(count_label "$WARM_FILES")
defwl lsr "ls -lR, warm, $warm_label files" "s" time 1.5 0
defwl gitstatus "git status, warm, $warm_label files" "s" time 1.5 0

# ---------------------------------------------------------------- helpers

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

# daemon_cpu TARGET: the CPU time, in clock ticks, of the process serving
# TARGET so far; nothing for native.
daemon_cpu() {
	[[ -n ${MNT[$1]-} ]] || return 0
	local pid=${DAEMON[${MNT[$1]}]-}
	[[ -n $pid && -r /proc/$pid/stat ]] || return 0
	awk '{ print $14 + $15 }' "/proc/$pid/stat"
}

run_tar() {
	local d=${DIR[$1]}/tar.$2 t0 t1 c0 c1
	rm -rf "$d" && mkdir "$d" || return 1
	sync
	c0=$(daemon_cpu "$1")
	t0=$EPOCHREALTIME
	tar -xf "$work/src.tar" -C "$d" || return 1
	t1=$EPOCHREALTIME
	c1=$(daemon_cpu "$1")
	record tarx "$1" "$(sub "$t0" "$t1")"
	if [[ -n $c0 && -n $c1 ]]; then
		record tarcpu "$1" "$(awk -v a="$c0" -v b="$c1" -v hz="$(getconf CLK_TCK)" -v n="$tar_entries" \
			'BEGIN { printf "%.1f", (b - a) / hz * 1e6 / n }')"
	fi
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

# warm_tree TARGET: the warm tree of TARGET, made (a copy of warmsrc
# committed to git) and read once on first use.
warm_tree() {
	local d=${DIR[$1]}/warm
	if [[ ! -d $d/.git ]]; then
		rm -rf "$d" && cp -r "$work/warmsrc" "$d" &&
			(cd "$d" && git -c init.defaultBranch=main init -q && git add -A &&
				git -c user.name=b -c user.email=b@b commit -qm x) || return 1
		ls -lR "$d" >/dev/null && git -C "$d" status --porcelain >/dev/null || return 1
	fi
	echo "$d"
}

run_lsr() {
	local d t0 t1
	d=$(warm_tree "$1") || return 1
	t0=$EPOCHREALTIME
	ls -lR "$d" >/dev/null || return 1
	t1=$EPOCHREALTIME
	record lsr "$1" "$(sub "$t0" "$t1")"
}

run_gitstatus() {
	local d t0 t1 status
	d=$(warm_tree "$1") || return 1
	t0=$EPOCHREALTIME
	status=$(git -C "$d" status --porcelain) || return 1
	t1=$EPOCHREALTIME
	[[ -z $status ]] || PROBLEMS+=("git status of the warm tree is not clean on ${TLABEL[$1]}")
	record gitstatus "$1" "$(sub "$t0" "$t1")"
}

# count_syscalls TARGET: one more tar x, untimed, with strace -c on the
# process serving TARGET: its system calls per entry and per FUSE request
# (each request but FORGET gets one writev reply).
count_syscalls() {
	local t=$1 pid d=${DIR[$1]}/tar.strace out=$work/strace.$1 sp total replies
	[[ -n ${MNT[$1]-} ]] || return 0
	pid=${DAEMON[${MNT[$1]}]-}
	[[ -n $pid ]] || return 0
	rm -rf "$d" && mkdir "$d" || return 1
	strace -c -f -p "$pid" -o "$out" 2>/dev/null &
	sp=$!
	sleep 1 # strace attaches to every thread
	tar -xf "$work/src.tar" -C "$d"
	kill -INT "$sp"
	wait "$sp"
	rm -rf "$d"
	total=$(awk '$NF == "total" { print $4 }' "$out")
	replies=$(awk '$NF == "writev" { print $4 }' "$out")
	[[ -n $total && -n $replies && $replies != 0 ]] || { log "strace -c of ${TLABEL[$t]} said:"; cat "$out" >&2; return 1; }
	record sysent "$t" "$(awk -v a="$total" -v n="$tar_entries" 'BEGIN { printf "%.1f", a / n }')"
	record sysreq "$t" "$(awk -v a="$total" -v n="$replies" 'BEGIN { printf "%.2f", a / n }')"
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
tar_entries=$(tar -tf "$work/src.tar" | wc -l)

make_tree "$work/gitsrc" "$GIT_FILES" "$GIT_DIRS"
log "making the warm tree of $WARM_FILES files"
make_tree "$work/warmsrc" "$WARM_FILES" "$WARM_DIRS"

# Mount the FUSE targets side by side, so runs interleave across targets
# and drift on the machine falls on all of them alike.
mkdir -p "$work/native/bench"
DIR[native]=$work/native/bench

mount_gsvfs() { # TARGET STATE MNT [FLAGS...]
	local t=$1 state=$2 mnt=$3
	shift 3
	mkdir -p "$state" "$mnt"
	gsvfs_mount "$t" "$mnt" "$state/gsvfs.log" "$work/gsvfs" mount --root "$state" "$@" "$mnt" || return 1
	mkdir "$mnt/workspaces/bench"
	DIR[$t]=$mnt/workspaces/bench
}
mount_gsvfs gsvfs "$work/gs.state" "$work/gs.mnt"
if [[ $is_root == 1 ]]; then
	mount_gsvfs kb "$work/gskb.state" "$work/gskb.mnt" --kernel-binds
else
	log "not root: no gsvfs kernel-binds column"
fi
mount_gsvfs nopt "$work/gsnp.state" "$work/gsnp.mnt" --no-passthrough

if [[ -x $work/loopback ]]; then
	mkdir -p "$work/lb.orig" "$work/lb.mnt"
	start_loopback loopback "$work/lb.mnt" "$work/lb.orig"
fi

# targets_for WORKLOAD RUN: the mounted targets that run the workload, in
# an order rotated by the run number so no target always goes first.
targets_for() {
	local t list=() i
	for t in "${TARGETS[@]}"; do
		[[ -n ${DIR[$t]-} ]] || continue
		[[ $t == nopt && ${WDATA[$1]} != 1 ]] && continue
		[[ $t == kb && ${WDATA[$1]} == 1 ]] && continue
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
# rounds WORKLOAD:FUNC...: RUNS rounds; in each, every target of the first
# workload runs each pair in turn.
rounds() {
	local r t p
	for ((r = 1; r <= RUNS; r++)); do
		for t in $(targets_for "${1%%:*}" "$r"); do
			for p; do measure "${p%%:*}" "$t" "$r" "${p#*:}"; done
		done
	done
}
rounds seqwrite:run_seqwrite seqread:run_seqread
rounds smallwrite:run_smallwrite
if [[ $have_fio == 1 ]]; then rounds randread:run_randread; fi
for t in $(targets_for seqwrite 1); do rm -f "${DIR[$t]}/seq.dat"; done
rounds meta:run_meta
rounds tarx:run_tar
rounds git:run_git
rounds lsr:run_lsr gitstatus:run_gitstatus
if [[ $is_root == 1 ]] && ensure_tool strace; then
	for t in gsvfs loopback; do
		[[ -n ${DIR[$t]-} ]] || continue
		log "counting the system calls of ${TLABEL[$t]} during tar x (untimed)"
		count_syscalls "$t" || PROBLEMS+=("strace -c of ${TLABEL[$t]} gave no counts")
	done
else
	log "warning: not root or no strace: no system call counts"
fi

# ---------------------------------------------------------------- report

fmt_value() { # WORKLOAD VALUE
	case ${WUNIT[$1]} in
	s) fmt_num 3 "$2" ;;
	calls | us) fmt_num 1 "$2" ;;
	*) fmt_num 0 "$2" ;;
	esac
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

# judge WORKLOAD: sets result to PASS or MISS against the goal of native time and, for a
# time goal, against LB_GOAL times loopback's speed; a miss is described
# in shortfalls.
judge() {
	local w=$1 gr lr lg
	gr=$(ratio "$w" gsvfs native)
	if [[ $gr == - ]]; then
		shortfalls+=("${WLABEL[$w]}: gsvfs gave no figure ($(cell_value "$w" gsvfs))")
		result=MISS
		return
	fi
	lr=$(ratio "$w" loopback native)
	lg=$(ratio "$w" loopback gsvfs)
	local miss=0
	if ! meets "$w" "$gr"; then
		miss=1
		if [[ ${WKIND[$w]} == thr ]]; then
			shortfalls+=("$(awk -v l="${WLABEL[$w]}" -v r="$gr" -v g="${WGOAL[$w]}" \
				'BEGIN { printf "%s: gsvfs reaches %.2fx of native, target %.2fx: short by %.2fx (%.0f%% of the target)", l, r, g, g - r, 100 * r / g }')${lr:+; loopback: $(fmt_ratio "$w" "$lr")}")
		else
			shortfalls+=("$(awk -v l="${WLABEL[$w]}" -v r="$gr" -v g="${WGOAL[$w]}" \
				'BEGIN { printf "%s: gsvfs takes %.2fx native time, target <= %gx: over by %.2fx (%.0f%% over the target)", l, r, g, r - g, 100 * (r / g - 1) }')")
		fi
	fi
	if [[ ${WKIND[$w]} == time && $lg != - ]] && ! awk -v r="$lg" -v g="$LB_GOAL" 'BEGIN { exit !(r >= g) }'; then
		miss=1
		shortfalls+=("$(awk -v l="${WLABEL[$w]}" -v r="$lg" -v g="$LB_GOAL" \
			'BEGIN { printf "%s: loopback takes %.2fx gsvfs time, target >= %gx", l, r, g }')")
	fi
	result=PASS
	if ((miss)); then result=MISS; fi
}

{
	printf 'workload\tunit\tnative\tgsvfs\tgsvfs/native\ttarget\tresult\tloopback/gsvfs\tgsvfs kernel-binds\tkernel-binds/native\tgsvfs no-pt\tno-pt/native\tloopback\tloopback/native\n'
	for w in "${WORKLOADS[@]}"; do
		[[ $w == randread && $have_fio == 0 ]] && continue
		gr=$(ratio "$w" gsvfs native)
		result=-
		[[ -n ${WGOAL[$w]} ]] && judge "$w"
		row="${WLABEL[$w]}\t${WUNIT[$w]}"
		row+="\t$(fmt_value "$w" "$(cell_value "$w" native)")"
		row+="\t$(fmt_value "$w" "$(cell_value "$w" gsvfs)")\t$(fmt_ratio "$w" "$gr")"
		row+="\t$(goal_text "$w")\t$result"
		lg=$(ratio "$w" loopback gsvfs)
		[[ ${WKIND[$w]} == time && $lg != - ]] && lg=$(printf '%.2fx' "$lg") || lg=-
		row+="\t$lg"
		row+="\t$(fmt_value "$w" "$(cell_value "$w" kb)")\t$(fmt_ratio "$w" "$(ratio "$w" kb native)")"
		row+="\t$(fmt_value "$w" "$(cell_value "$w" nopt)")\t$(fmt_ratio "$w" "$(ratio "$w" nopt native)")"
		row+="\t$(fmt_value "$w" "$(cell_value "$w" loopback)")\t$(fmt_ratio "$w" "$(ratio "$w" loopback native)")"
		printf '%b\n' "$row"
	done
} >"$table"

gsvfs_version=$(repo_version)
header=(
	"gsvfs $gsvfs_version vs native disk; go-fuse $gofuse_version example/loopback as reference"
	"$(now_utc), $(machine_desc), $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), $(go env GOVERSION)"
	"work dir on $disk_desc; median of $RUNS run(s); file $size_label; $NFILES files; fio ${FIO_RUNTIME}s psync QD1; git tree $GIT_FILES files in $GIT_DIRS dirs"
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
	markdown_list "Problems seen:" "${PROBLEMS[@]}"
}
write_out markdown_report
