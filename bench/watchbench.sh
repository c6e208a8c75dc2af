#!/usr/bin/env bash
# watchbench.sh — what watching the state directory buys the FUSE mount,
# and what it costs.
#
# Three targets side by side on one work directory on the disk that holds
# /tmp:
#
#   native      a plain directory
#   gsvfs       `gsvfs mount`: the state directory watched, the kernel
#               trusting what it caches of stored files for a minute,
#               misses included
#   no-watch    `gsvfs mount --no-watch`: one second, misses not cached
#               (gsvfs before the watch)
#
# Workloads, each run BENCH_RUNS times, the median reported:
#   git status  on a committed repository of BENCH_GIT_FILES small files,
#               warm; each run starts 1.5 s after the last, an agent's pace
#               (the one-second cache of no-watch has lapsed by then)
#   ls -lR      of the same repository, warm, at the same pace
#   tar x       of go/src/net and rm -rf of it: the mount's own creations
#               come back from the watch, which must not cost much
#   outside     a file grown in the state directory by another program,
#               until stat through the mount shows its size, in
#               milliseconds (native: the write itself is the change)
#
# Environment:
#   BENCH_RUNS=5            runs per workload and target
#   BENCH_GIT_FILES=20000   files in the repository (200 directories)
#   BENCH_QUICK=1           smoke run: 2 runs, 2,000 files
#   BENCH_OUT=FILE          also write the table as markdown to FILE
#   BENCH_TMP=/tmp          where the work directory is made
#   BENCH_KEEP=1            keep the work directory
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=SCRIPTDIR/lib.sh
. "$here/lib.sh" watchbench

if [[ ${BENCH_QUICK:-0} == 1 ]]; then
	RUNS=${BENCH_RUNS:-2}
	GIT_FILES=${BENCH_GIT_FILES:-2000}
else
	RUNS=${BENCH_RUNS:-5}
	GIT_FILES=${BENCH_GIT_FILES:-20000}
fi
need_counts RUNS GIT_FILES
GIT_DIRS=200
PACE=1.5

TARGETS=(native gsvfs nowatch)
declare -A TLABEL=([native]=native [gsvfs]=gsvfs [nowatch]=no-watch)
declare -A DIR MNT
MOUNTED=()

undo() {
	local m
	for m in "${MOUNTED[@]}"; do
		"$work/gsvfs" umount "$m" >/dev/null 2>&1 || umount -l "$m" 2>/dev/null || true
	done
	return 0
}
on_exit undo

sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.6f", b - a }'; }

# timed WORKLOAD TARGET COMMAND...: one run of COMMAND, in seconds.
timed() {
	local w=$1 t=$2 t0 t1
	shift 2
	t0=$EPOCHREALTIME
	"$@" >/dev/null || { ERRS["$w|$t"]=1; PROBLEMS+=("$w failed on ${TLABEL[$t]}"); return 0; }
	t1=$EPOCHREALTIME
	record "$w" "$t" "$(sub "$t0" "$t1")"
}

make_workdir
on_disk || log "warning: $work is on $fstype, not a disk file system: native figures will flatter it"
cd "$repo"
go build -o "$work/gsvfs" ./cmd/gsvfs

mkdir -p "$work/native"
DIR[native]=$work/native
for t in gsvfs nowatch; do
	flags=()
	[[ $t == nowatch ]] && flags=(--no-watch)
	mkdir -p "$work/$t.state" "$work/$t.mnt"
	"$work/gsvfs" mount --root "$work/$t.state" "${flags[@]}" "$work/$t.mnt" >&2
	MOUNTED+=("$work/$t.mnt")
	MNT[$t]=$work/$t.mnt
	DIR[$t]=$work/$t.mnt/workspaces
done

log "making a repository of $GIT_FILES files on each target"
per_dir=$((GIT_FILES / GIT_DIRS))
for t in "${TARGETS[@]}"; do
	r=${DIR[$t]}/repo
	for ((d = 0; d < GIT_DIRS; d++)); do
		mkdir -p "$r/dir$d"
		for ((i = 0; i < per_dir; i++)); do
			printf 'package dir%d\nconst F%d = %d\n' "$d" "$i" "$i" >"$r/dir$d/f$i.go"
		done
	done
	(cd "$r" && git -c init.defaultBranch=main init -q && git add -A &&
		git -c user.name=b -c user.email=b@b commit -qm x)
done

goroot=$(go env GOROOT)
tar -C "$goroot" -cf "$work/src.tar" src/net

status() { git -C "$1" status --porcelain; }
lsr() { ls -lR "$1"; }
tarx() { mkdir -p "$1" && tar -xf "$work/src.tar" -C "$1" && rm -rf "$1"; }

# outside TARGET: grow a file behind the mount's back and wait until
# stat through the mount shows its new size (a fresh stat each time, as
# a person or an agent would run it). The old size was just read, so the
# kernel caches it.
outside() {
	local t=$1 f=${DIR[$1]}/probe host t0 t1 size
	host=$f
	[[ $t != native ]] && host=$work/$t.state/workspaces/probe
	echo old >"$host"
	stat -c %s "$f" >/dev/null
	size=$((RANDOM % 1000 + 100))
	t0=$EPOCHREALTIME
	head -c "$size" /dev/zero >"$host"
	for ((i = 0; i < 5000; i++)); do
		[[ $(stat -c %s "$f") == "$size" ]] && break
	done
	t1=$EPOCHREALTIME
	[[ $(stat -c %s "$f") == "$size" ]] || { ERRS["outside|$t"]=1; return 0; }
	record outside "$t" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", (b - a) * 1000 }')"
}

for t in "${TARGETS[@]}"; do status "${DIR[$t]}/repo" >/dev/null; lsr "${DIR[$t]}/repo" >/dev/null; done
for ((r = 1; r <= RUNS; r++)); do
	for t in "${TARGETS[@]}"; do
		log "run $r/$RUNS on ${TLABEL[$t]}"
		sleep "$PACE"
		timed gitstatus "$t" status "${DIR[$t]}/repo"
		sleep "$PACE"
		timed lsr "$t" lsr "${DIR[$t]}/repo"
		timed tarx "$t" tarx "${DIR[$t]}/tar.$r"
		outside "$t"
	done
done

header=("watchbench $(repo_version), $(now_utc), $(machine_desc), $disk_desc"
	"$RUNS runs each, median; repository of $GIT_FILES files; runs ${PACE} s apart"
	"$(load_desc)")
table=$work/table.tsv
{
	printf 'workload\tunit\tnative\tgsvfs\tgsvfs/native\tno-watch\tno-watch/native\n'
	for w in gitstatus lsr tarx outside; do
		case $w in
		gitstatus) label="git status, $(count_label "$GIT_FILES") files" unit=s ;;
		lsr) label="ls -lR, $(count_label "$GIT_FILES") files" unit=s ;;
		tarx) label="tar x + rm -rf go/src/net" unit=s ;;
		outside) label="outside write shown by stat" unit=ms ;;
		esac
		row="$label\t$unit"
		for t in "${TARGETS[@]}"; do
			v=$(cell_value "$w" "$t")
			[[ $unit == s ]] && v=$(fmt_num 3 "$v")
			row+="\t$v"
			[[ $t != native ]] && row+="\t$(ratio "$w" "$t" native %.2fx)"
		done
		printf "$row\n"
	done
} >"$table"
report_text "$table"
print_list "Problems:" "${PROBLEMS[@]}"
write_out report_markdown "watchbench" "$table"
