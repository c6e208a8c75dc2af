#!/usr/bin/env bash
# userbench.sh — gsvfs mounted by an ordinary user (`gsvfs mount ~/gsv`,
# the card's own usage) against that user's own directory on the same
# disk, with root's mount beside it for reference: issue 20's table.
#
# Run as root. It makes a throwaway user (removed at exit), gives it a
# home on a fresh ext4 with a journal (lib.sh, loop_disk), and measures,
# interleaved, each run in a rotated order:
#
#   native      ~/native, a plain directory of the user's
#   user mount  `gsvfs mount ~/gsv` run by the user (no passthrough and no
#               allow_other: the kernel allows neither to a user), the
#               workloads as the user in ~/gsv/workspaces/bench
#   root mount  `gsvfs mount --root STATE MNT` run by root on the same
#               disk (passthrough where the kernel offers it), the
#               workloads as root
#   loopback    go-fuse's example/loopback run by the user over a directory
#               of its home: the cost of FUSE itself on this machine, a
#               round trip per call with nothing else done, the floor
#               under any FUSE file system without passthrough
#
# Workloads, each BENCH_RUNS times, the median reported: 4 KiB buffered
# writes (dd bs=4k, 128 MiB), throughput; 256 MiB written and fsync'd (dd
# bs=1M conv=fsync), throughput; reading back that file just written (dd
# bs=1M, its pages as the write left them), throughput; tar x of Go's
# source tree (go env GOROOT), time; 1,000 SQLite inserts, each its own
# transaction (sqlite3), time. Each row is judged against issue 20's goal
# for the user's mount: met or MISSED.
#
# Prints an aligned table and, with BENCH_OUT set, writes it as markdown
# there. /dev/fuse is opened to all users for the run when it is not
# (Debian's mode), and put back.
#
# Environment:
#   BENCH_RUNS=3     runs per workload and target (median reported)
#   BENCH_QUICK=1    smoke run: 1 run, tar of src/net only
#   BENCH_OUT=FILE   also write the table as markdown to FILE
#   BENCH_TMP=/tmp   where the work directory (and its disk image) is made
#   BENCH_KEEP=1     keep the work directory (mounts and the user are undone)
set -euo pipefail

# ---------------------------------------------------------------- one workload
# `userbench.sh --work WORKLOAD DIR TAG`: run one workload in DIR as whoever
# runs it and print the seconds it took; what it leaves is removed after
# the clock stops. SIZE_MB, SMALL_MB, SRC_TAR and SQL come from the
# environment.
if [[ ${1-} == --work ]]; then
	w=$2 d=$3 tag=$4
	cd "$d"
	case $w in
	smallwrite) pre=(:) cmd=(dd if=/dev/zero of="small.$tag" bs=4k count=$((SMALL_MB * 256)) status=none) post=(rm -f "small.$tag") ;;
	seqwrite) pre=(rm -f "seq.$tag") cmd=(dd if=/dev/zero of="seq.$tag" bs=1M count="$SIZE_MB" conv=fsync status=none) post=(:) ;;
	readback) pre=(:) cmd=(dd if="seq.$tag" of=/dev/null bs=1M status=none) post=(rm -f "seq.$tag") ;;
	tarx) pre=(mkdir "tar.$tag") cmd=(tar -xf "$SRC_TAR" -C "tar.$tag") post=(rm -rf "tar.$tag") ;;
	sqlite) pre=(sqlite3 "db.$tag" 'create table t (id integer primary key, name text, size integer);') cmd=(sqlite3 "db.$tag") post=(rm -f "db.$tag") ;;
	*) echo "no workload $w" >&2; exit 2 ;;
	esac
	"${pre[@]}"
	sync
	t0=$EPOCHREALTIME
	if [[ $w == sqlite ]]; then "${cmd[@]}" <"$SQL"; else "${cmd[@]}"; fi
	t1=$EPOCHREALTIME
	"${post[@]}"
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f\n", b - a }'
	exit 0
fi

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=SCRIPTDIR/lib.sh
. "$here/lib.sh" userbench

if [[ $(id -u) != 0 ]]; then
	log "needs root: it makes the user, its disk and root's mount"
	exit 2
fi
quick=${BENCH_QUICK:-0}
RUNS=${BENCH_RUNS:-3}
TAR_WHAT=src
if [[ $quick == 1 ]]; then
	RUNS=${BENCH_RUNS:-1}
	TAR_WHAT=src/net
fi
need_counts RUNS
export SIZE_MB=256 SMALL_MB=128

# ---------------------------------------------------------------- state
# and, from lib.sh, work, VALS, ERRS ("workload|target"), PROBLEMS and the
# FUSE mounts' (fuse_state)

fuse_state
TARGETS=(native user root loopback)
declare -A TLABEL=([native]=native [user]="user mount" [root]="root mount" [loopback]=loopback)
declare -A RUNAS # target -> "user" or "root"

# Workloads in table order: label, unit, kind (thr: more is better; time:
# less is better) and issue 20's goal for the user's mount against native.
WORKLOADS=(smallwrite seqwrite readback tarx sqlite)
declare -A WLABEL WUNIT WKIND WGOAL
defwl() { WLABEL[$1]=$2 WUNIT[$1]=$3 WKIND[$1]=$4 WGOAL[$1]=$5; }
defwl smallwrite "4 KiB buffered writes, $SMALL_MB MiB (dd bs=4k)" MB/s thr 0.8
defwl seqwrite "$SIZE_MB MiB write + fsync (dd bs=1M conv=fsync)" MB/s thr 0.8
defwl readback "read back the $SIZE_MB MiB just written (dd bs=1M)" MB/s thr 0.8
defwl tarx "tar x go/$TAR_WHAT" s time 6
defwl sqlite "1,000 SQLite autocommit inserts" s time 2
declare -A WBYTES=([smallwrite]=$((SMALL_MB * 1048576)) [seqwrite]=$((SIZE_MB * 1048576)) [readback]=$((SIZE_MB * 1048576)))

user=
fuse_mode=
undo_all() {
	local ok=0
	undo_mounts || ok=1
	if [[ -n $user ]] && id "$user" >/dev/null 2>&1; then
		userdel "$user" 2>/dev/null || log "could not remove the user $user"
	fi
	[[ -z $fuse_mode ]] || chmod "$fuse_mode" /dev/fuse
	return "$ok"
}
on_exit undo_all

# as TARGET COMMAND...: run COMMAND as the target's user, in a clean
# environment either way.
as() {
	local env=(env -i PATH=/usr/local/bin:/usr/bin:/bin LC_ALL=C SIZE_MB="$SIZE_MB" SMALL_MB="$SMALL_MB"
		SRC_TAR="$work/src.tar" SQL="$work/inserts.sql")
	if [[ ${RUNAS[$1]} == user ]]; then
		setpriv --reuid="$user" --regid="$user" --init-groups "${env[@]}" HOME="$home" "${@:2}"
	else
		"${env[@]}" HOME=/root "${@:2}"
	fi
}

# measure WORKLOAD TARGET RUN: one run, recording the figure or a failure.
measure() {
	local w=$1 t=$2 r=$3 s v
	log "${WLABEL[$w]} — ${TLABEL[$t]}, run $r/$RUNS"
	if ! s=$(as "$t" bash "$work/userbench.sh" --work "$w" "${DIR[$t]}" "$r"); then
		ERRS["$w|$t"]=1
		PROBLEMS+=("${WLABEL[$w]} failed on ${TLABEL[$t]} (run $r)")
		return 0
	fi
	v=$s
	[[ ${WKIND[$w]} == thr ]] && v=$(mbps "${WBYTES[$w]}" "$s")
	record "$w" "$t" "$v"
	log "  -> $v ${WUNIT[$w]}"
}

# rounds WORKLOAD...: RUNS rounds; in each, every target in a rotated
# order runs the workloads in turn.
rounds() {
	local r i w n=${#TARGETS[@]} t
	for ((r = 1; r <= RUNS; r++)); do
		for ((i = 0; i < n; i++)); do
			t=${TARGETS[(i + r - 1) % n]}
			[[ -n ${DIR[$t]-} ]] || continue
			for w; do measure "$w" "$t" "$r"; done
		done
	done
}

# ---------------------------------------------------------------- setup

ensure_tool fusermount3 fuse3 || { log "fusermount3 is missing (Debian package fuse3)"; exit 2; }
ensure_tool sqlite3 || { log "sqlite3 is missing (Debian package sqlite3)"; exit 2; }
ensure_tool useradd passwd || { log "useradd is missing (Debian package passwd)"; exit 2; }
make_workdir
chmod 755 "$work"

cd "$repo"
log "building gsvfs and go-fuse's example/loopback"
go build -o "$work/gsvfs" ./cmd/gsvfs
if ! go build -o "$work/loopback" github.com/hanwen/go-fuse/v2/example/loopback 2>"$work/loopback-build.err"; then
	cat "$work/loopback-build.err" >&2
	PROBLEMS+=("go-fuse's example/loopback did not build: no loopback column")
fi
cp "$here/userbench.sh" "$work/userbench.sh"
goroot=$(go env GOROOT)
log "making the tarball of $goroot/$TAR_WHAT and the SQL of 1,000 inserts"
tar -C "$goroot" -cf "$work/src.tar" "$TAR_WHAT"
tar_entries=$(tar -tf "$work/src.tar" | wc -l)
for ((i = 1; i <= 1000; i++)); do
	printf "insert into t (name, size) values ('file%d.go', %d);\n" "$i" $((i * 37))
done >"$work/inserts.sql"
chmod 644 "$work/src.tar" "$work/inserts.sql" "$work/userbench.sh"

user=gsvb$$
home=$work/home
useradd -M -U -d "$home" -s /bin/sh "$user"
mkdir -m 700 "$home"
chown "$user:$user" "$home"
log "user $user (uid $(id -u "$user")), home $home"
fuse_mode=$(stat -c %a /dev/fuse)
if [[ $fuse_mode == 666 ]]; then fuse_mode=; else chmod 666 /dev/fuse; fi

RUNAS=([native]=user [user]=user [root]=root [loopback]=user)
as native mkdir "$home/native" "$home/gsv"
DIR[native]=$home/native
if gsvfs_mount user "$home/gsv" "$home/.local/share/gsvfs/gsvfs.log" as user "$work/gsvfs" mount "$home/gsv" &&
	as user mkdir "$home/gsv/workspaces/bench"; then
	DIR[user]=$home/gsv/workspaces/bench
else
	PROBLEMS+=("the user's mount did not come up")
fi
mkdir "$work/root.state" "$work/root.mnt"
if gsvfs_mount root "$work/root.mnt" "$work/root.state/gsvfs.log" "$work/gsvfs" mount --root "$work/root.state" "$work/root.mnt" &&
	mkdir "$work/root.mnt/workspaces/bench"; then
	DIR[root]=$work/root.mnt/workspaces/bench
else
	PROBLEMS+=("root's mount did not come up")
fi

if [[ -x $work/loopback ]]; then
	as loopback mkdir "$home/lb.orig" "$home/lb"
	start_loopback loopback "$home/lb" "$home/lb.orig" as loopback
fi

# ---------------------------------------------------------------- runs

# An untimed first write on each target, so none pays alone for the
# disk's first block allocations.
for t in "${TARGETS[@]}"; do
	[[ -n ${DIR[$t]-} ]] || continue
	as "$t" bash "$work/userbench.sh" --work smallwrite "${DIR[$t]}" warmup >/dev/null ||
		log "warm-up write failed on ${TLABEL[$t]}"
done
rounds smallwrite
rounds seqwrite readback
rounds tarx
rounds sqlite

# ---------------------------------------------------------------- report

fmt_value() { # WORKLOAD VALUE
	if [[ ${WUNIT[$1]} == s ]]; then fmt_num 3 "$2"; else fmt_num 0 "$2"; fi
}

fmt_ratio() { # WORKLOAD RATIO
	[[ $2 == - ]] && { echo -; return; }
	if [[ ${WKIND[$1]} == thr ]]; then printf '%.2fx\n' "$2"; else printf '%.2fx time\n' "$2"; fi
}

goal_text() { # WORKLOAD
	if [[ ${WKIND[$1]} == thr ]]; then
		printf '>= %.1fx\n' "${WGOAL[$1]}"
	elif [[ $1 == tarx ]]; then
		printf "<= %gx time, under root's\n" "${WGOAL[$1]}"
	else
		printf '<= %gx time\n' "${WGOAL[$1]}"
	fi
}

# verdict WORKLOAD: met or MISSED for the user's mount against the goal
# (and, for tar x, against root's mount, which the issue asks to beat).
verdict() {
	local w=$1 r rr
	r=$(ratio "$w" user native)
	[[ $r == - ]] && { echo MISSED; return; }
	if [[ ${WKIND[$w]} == thr ]]; then
		awk -v r="$r" -v g="${WGOAL[$w]}" 'BEGIN { exit !(r >= g) }' || { echo MISSED; return; }
	else
		awk -v r="$r" -v g="${WGOAL[$w]}" 'BEGIN { exit !(r <= g) }' || { echo MISSED; return; }
	fi
	if [[ $w == tarx ]]; then
		rr=$(ratio "$w" user root)
		[[ $rr != - ]] && awk -v r="$rr" 'BEGIN { exit !(r < 1) }' || { echo MISSED; return; }
	fi
	echo met
}

table=$work/table.tsv
{
	printf 'workload\tunit\tnative\tuser mount\tuser/native\tgoal\tresult\troot mount\troot/native\tloopback\tloopback/native\n'
	for w in "${WORKLOADS[@]}"; do
		printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "${WLABEL[$w]}" "${WUNIT[$w]}" \
			"$(fmt_value "$w" "$(cell_value "$w" native)")" \
			"$(fmt_value "$w" "$(cell_value "$w" user)")" "$(fmt_ratio "$w" "$(ratio "$w" user native)")" \
			"$(goal_text "$w")" "$(verdict "$w")" \
			"$(fmt_value "$w" "$(cell_value "$w" root)")" "$(fmt_ratio "$w" "$(ratio "$w" root native)")" \
			"$(fmt_value "$w" "$(cell_value "$w" loopback)")" "$(fmt_ratio "$w" "$(ratio "$w" loopback native)")"
	done
} >"$table"

header=(
	"gsvfs $(repo_version): \`gsvfs mount ~/gsv\` by an ordinary user (uid $(id -u "$user")) against the user's own directory, root's mount and go-fuse's loopback beside"
	"$(now_utc), $(machine_desc), $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), $(go env GOVERSION)"
	"all on one $disk_desc; median of $RUNS run(s), interleaved; tar of $tar_entries entries"
	"$(load_desc): other work on the machine adds noise"
	"throughput ratios are target/native (higher is better); time ratios are multiples of native time (lower is better)"
)
report_text "$table" "1 2 6 7"
print_list "Problems seen:" "${PROBLEMS[@]}"

markdown_report() {
	report_markdown "gsvfs as an ordinary user (userbench)" "$table" "1 2 6 7"
	markdown_list "Problems seen:" "${PROBLEMS[@]}"
}
write_out markdown_report
