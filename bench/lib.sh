# shellcheck shell=bash
# lib.sh — what the benchmark scripts in bench/ (fusebench.sh, ninepbench.sh,
# vm9pbench.sh) have in common. Sourced, never run:
#
#   . "$here/lib.sh" NAME
#
# NAME (the script's name without .sh) prefixes the log lines and names the
# work directory. Sourcing sets LC_ALL=C, repo (the checkout holding bench/)
# and the state every script fills in:
#
#   work      the work directory (make_workdir), removed at exit (on_exit)
#   VALS      "metric|target" -> the runs' figures, space separated (record)
#   ERRS      "metric|target" -> 1 when a run failed
#   PROBLEMS  things that look wrong, listed at the end of the report
#
# The sections below: logging and checks; the work directory and exit;
# figures (medians, ratios, number formats); the report (machine and load
# lines, the aligned and the markdown table); for fusebench.sh and
# userbench.sh, FUSE mounts made and undone (fuse_state and after); and,
# for ninepbench.sh and vm9pbench.sh, diod and gsvfs serve side by side
# (ninep_state and after).
# Some functions call back into the script or read its arrays; each says
# which.

bench=$1
export LC_ALL=C
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

work=
declare -A VALS ERRS
PROBLEMS=()

# ---------------------------------------------------------------- logging, checks

log() { printf '%s: %s\n' "$bench" "$*" >&2; }

# need_counts VAR...: exit 2 unless every variable named is a positive integer.
need_counts() {
	local v
	for v; do
		if ! [[ ${!v} =~ ^[1-9][0-9]*$ ]]; then
			log "$v must be a positive integer, not '${!v}'"
			exit 2
		fi
	done
}

# count_label N: "Nk" when N is a whole number of thousands, else N.
count_label() {
	if (($1 >= 1000 && $1 % 1000 == 0)); then echo "$(($1 / 1000))k"; else echo "$1"; fi
}

# ensure_tool NAME [PACKAGE]: true when command NAME is there, or when
# root could apt-get install the Debian package PACKAGE (default NAME).
ensure_tool() {
	local pkg=${2:-$1}
	command -v "$1" >/dev/null && return 0
	if [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null; then return 1; fi
	log "installing $pkg"
	apt-get install -y -qq "$pkg" >/dev/null 2>&1 ||
		{ apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq "$pkg" >/dev/null 2>&1; }
	command -v "$1" >/dev/null
}

# make_tree DIR FILES DIRS: FILES small Go files spread over DIRS
# directories, as a source tree an agent works in.
make_tree() {
	local per_dir=$(($2 / $3)) d i
	for ((d = 0; d < $3; d++)); do
		mkdir -p "$1/dir$d"
		for ((i = 0; i < per_dir; i++)); do
			printf 'package dir%d\n\n// File %d of directory %d.\nconst F%d = "%d-%d"\n' \
				"$d" "$i" "$d" "$i" "$d" "$i" >"$1/dir$d/f$i.go"
		done
	done
}

# wait_gone PID SECONDS: wait for a process to exit; false if it did not.
wait_gone() {
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.1
	done
	return 1
}

# wait_up PID COMMAND...: wait up to 10 s for COMMAND to succeed; false if
# it did not, or if process PID exited first.
wait_up() {
	local pid=$1 i
	shift
	for ((i = 0; i < 100; i++)); do
		"$@" && return 0
		kill -0 "$pid" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# Lines of a daemon's log that report an error, a warning or a panic.
alarm_re='level=(error|warn)|panic|fatal'

# ---------------------------------------------------------------- work directory, exit

# make_workdir: make the work directory under BENCH_TMP (default /tmp),
# on a disk of its own where it can (loop_disk). Sets work, base, fstype
# and disk_desc (of the work directory) and load_start (the load average
# before anything ran).
make_workdir() {
	load_start=$(cut -d' ' -f1-3 /proc/loadavg)
	base=${BENCH_TMP:-/tmp}
	work=$(mktemp -d "$base/$bench.XXXXXX")
	loop_disk
	fstype=$(findmnt -n -o FSTYPE -T "$work" 2>/dev/null || stat -f -c %T "$work")
	disk_desc="$fstype ($base)"
	[[ -n $loop_img ]] && disk_desc="ext4 with a journal, a sparse image in $base loop-mounted (BENCH_FS=host: $base itself)"
	log "work directory $work ($disk_desc)"
}

# loop_disk: unless BENCH_FS=host, mount a fresh ext4 made with mkfs.ext4's
# defaults (so with a journal) at the work directory, from a sparse image
# beside it (root only; BENCH_DISK_GB, default 24, its size).
#
# Why: this machine's root file system is ext4 without a journal, and
# such an ext4 does not reuse an inode freed in the last 60 s (360 s while
# its inode table block is dirty): each create scans past every recently
# freed inode. A benchmark that deletes a tree between timed steps then
# times that scan, seconds added to every target alike (tar x of Go's
# source tree natively: 1.1 s on a quiet disk, 8.3 s right after the rm
# -rf of another copy), which makes the ratios look better than they are.
loop_img=
loop_disk() {
	[[ ${BENCH_FS:-loop} == host ]] && return 0
	if [[ $(id -u) != 0 ]] || ! command -v mkfs.ext4 >/dev/null; then
		log "warning: not root or no mkfs.ext4: measuring on $base as it is"
		return 0
	fi
	local img=$work.img
	if truncate -s "${BENCH_DISK_GB:-24}G" "$img" && mkfs.ext4 -q -F "$img" &&
		mount -o loop "$img" "$work"; then
		loop_img=$img
	else
		log "warning: could not make the loop disk; measuring on $base as it is"
		rm -f "$img"
	fi
}

# on_disk: whether the work directory is on a disk file system.
on_disk() {
	case $fstype in
	ext4 | ext2/ext3 | xfs | btrfs) return 0 ;;
	esac
	return 1
}

# on_exit UNDO: at exit, SIGINT (130) and SIGTERM (143), call UNDO, the
# script's function that stops what it started, then remove the work
# directory (kept with BENCH_KEEP=1, or when UNDO returns false) and exit
# with the script's status.
on_exit() {
	bench_undo=$1
	trap bench_exit EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
}

bench_exit() {
	local rc=$? leave=0
	set +e
	trap - EXIT INT TERM
	"$bench_undo" || leave=1
	if [[ -n $work && -d $work ]]; then
		if [[ ${BENCH_KEEP:-0} == 1 ]]; then
			log "kept $work${loop_img:+ (the loop disk stays mounted there; umount it and remove $loop_img)}"
		elif ((!leave)); then
			if [[ -n $loop_img ]]; then
				# A daemon that just exited may still hold it a moment.
				local i
				for ((i = 0; i < 50; i++)); do
					umount "$work" 2>/dev/null && break
					sleep 0.2
				done
				umount "$work" 2>/dev/null
				if findmnt "$work" >/dev/null; then
					log "$work is still busy; left mounted (umount it and remove $loop_img)"
				else
					rm -f "$loop_img" && rmdir "$work"
				fi
			else
				rm -rf "$work"
			fi
		fi
	fi
	exit "$rc"
}

# ---------------------------------------------------------------- figures

record() { VALS["$1|$2"]+="$3 "; }

# median of the space-separated numbers in $1.
median() {
	tr ' ' '\n' <<<"$1" | grep -v '^$' | sort -g |
		awk '{ a[NR] = $1 } END { if (NR == 0) exit 1; if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}

# cell_value METRIC TARGET: the median, "err" when a run failed, or "-"
# when it was not measured.
cell_value() {
	local k="$1|$2"
	if [[ -n ${ERRS[$k]-} ]]; then
		echo err
	elif [[ -n ${VALS[$k]-} ]]; then
		median "${VALS[$k]}"
	else
		echo -
	fi
}

isnum() { [[ $1 =~ ^[0-9.]*[0-9][0-9.]*(e[+-]?[0-9]+)?$ ]]; }

# fmt_num PLACES VALUE: VALUE with PLACES decimals; "err" and "-" as they are.
fmt_num() {
	case $2 in
	err | -) echo "$2" ;;
	*) printf '%.*f\n' "$1" "$2" ;;
	esac
}

# mbps BYTES SECONDS: the throughput in MB/s, one decimal.
mbps() { awk -v b="$1" -v s="$2" 'BEGIN { printf "%.1f", b / s / 1e6 }'; }

# ratio METRIC TARGET BASE [FORMAT]: TARGET's median over BASE's, printed
# by awk's printf with FORMAT (default %.4f), or "-" when either has no
# figure or BASE's is not above 0.
ratio() {
	local b v
	b=$(cell_value "$1" "$3")
	v=$(cell_value "$1" "$2")
	if isnum "$b" && isnum "$v" && awk -v b="$b" 'BEGIN { exit !(b > 0) }'; then
		awk -v a="$v" -v b="$b" -v f="${4:-%.4f}" 'BEGIN { printf f, a / b }'
	else
		echo -
	fi
}

# ---------------------------------------------------------------- report

now_utc() { date -u '+%Y-%m-%d %H:%M UTC'; }

# machine_desc: "Linux RELEASE, N CPUs".
machine_desc() { echo "Linux $(uname -r), $(nproc) CPUs"; }

# load_desc: the load average at the start (make_workdir) and now.
load_desc() { echo "load average (1/5/15 min) $load_start at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end"; }

repo_version() { git -C "$repo" describe --tags --always --dirty 2>/dev/null || echo dev; }

# print_table TSV [LEFT]: the tab-separated table aligned in columns, a rule
# under its first line; the columns numbered in LEFT (default "1 2") flush
# left, the others flush right.
print_table() {
	awk -F'\t' -v left="${2:-1 2}" '
		BEGIN { k = split(left, l, " "); for (i = 1; i <= k; i++) isleft[l[i]] = 1 }
		{ for (i = 1; i <= NF; i++) { c[NR, i] = $i; if (length($i) > w[i]) w[i] = length($i) } n = NF }
		END {
			for (r = 1; r <= NR; r++) {
				line = ""
				for (i = 1; i <= n; i++) {
					pad = sprintf("%" (i in isleft ? "-" : "") w[i] "s", c[r, i])
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
		}' "$1"
}

# markdown_table TSV [LEFT]: the same table in markdown; a first cell
# indented by two spaces is indented with &emsp;.
markdown_table() {
	awk -F'\t' -v left="${2:-1 2}" '
		BEGIN { k = split(left, l, " "); for (i = 1; i <= k; i++) isleft[l[i]] = 1 }
		{ if (sub(/^  /, "", $1)) $1 = "&emsp;" $1
		  line = "|"; for (i = 1; i <= NF; i++) line = line " " $i " |"; print line
		  if (NR == 1) { line = "|"; for (i = 1; i <= NF; i++) line = line (i in isleft ? " --- |" : " ---: |"); print line } }' "$1"
}

# report_text TSV [LEFT]: the script's header lines (its array header) and
# the table, each followed by a blank line.
# shellcheck disable=SC2154
report_text() {
	echo
	printf '%s\n' "${header[@]}"
	echo
	print_table "$@"
	echo
}

# report_markdown TITLE TSV [LEFT]: the same in markdown, under a heading.
report_markdown() {
	echo "# $1"
	echo
	printf -- '- %s\n' "${header[@]}"
	echo
	markdown_table "${@:2}"
}

# print_list TITLE ITEM...: TITLE and the items as a list; nothing when
# there are no items.
print_list() {
	(($# > 1)) || return 0
	echo "$1"
	shift
	printf '  - %s\n' "$@"
}

# markdown_list TITLE ITEM...: a blank line, TITLE and the items as a
# markdown list; nothing when there are no items.
markdown_list() {
	(($# > 1)) || return 0
	printf '\n%s\n\n' "$1"
	shift
	printf -- '- %s\n' "$@"
}

# write_out COMMAND...: with BENCH_OUT set, write COMMAND's output there.
write_out() {
	[[ -n ${BENCH_OUT:-} ]] || return 0
	"$@" >"$BENCH_OUT"
	log "wrote $BENCH_OUT"
}

# ---------------------------------------------------------------- FUSE mounts
# For fusebench.sh and userbench.sh: the mounts the script made, undone at
# exit in reverse order, and the logs of the daemons scanned for errors.

# fuse_state: MOUNTED (mount points, in the order made), DAEMON (mount
# point -> pid serving it), GSVFS_MNT (mount point -> 1 for gsvfs's), MNT
# (target -> mount point), STATELOG (target -> daemon log to scan) and
# DIR (target -> directory the workloads run in). Log lines name targets
# by the script's TLABEL.
fuse_state() {
	MOUNTED=()
	declare -gA DAEMON GSVFS_MNT MNT STATELOG DIR
}

is_mounted() { awk -v m="$1" '$5 == m { f = 1 } END { exit !f }' /proc/self/mountinfo; }

# gsvfs_mount TARGET MNT LOG COMMAND...: run COMMAND, a `gsvfs mount` that
# leaves its daemon in the background and says "(pid N)", and note the
# mount as TARGET's, its daemon logging to LOG.
gsvfs_mount() {
	local t=$1 mnt=$2 logf=$3 out
	shift 3
	STATELOG[$t]=$logf
	if ! out=$("$@"); then
		log "$* failed; its log:"
		cat "$logf" >&2 || true
		return 1
	fi
	log "$out"
	MOUNTED+=("$mnt")
	GSVFS_MNT[$mnt]=1
	DAEMON[$mnt]=$(sed -n 's/.*(pid \([0-9]*\).*/\1/p' <<<"$out")
	MNT[$t]=$mnt
}

# start_loopback TARGET MNT ORIG [RUNNER...]: go-fuse's example/loopback
# ($work/loopback) serving ORIG at MNT until the mounts are undone, run
# through RUNNER when given (a function that runs its arguments as
# another user); DIR[TARGET] is MNT/bench once it is up.
start_loopback() {
	local t=$1 mnt=$2 orig=$3 pid
	shift 3
	STATELOG[$t]=$work/loopback.log
	"$@" "$work/loopback" -q "$mnt" "$orig" >"$work/loopback.log" 2>&1 &
	pid=$!
	MOUNTED+=("$mnt")
	DAEMON[$mnt]=$pid
	MNT[$t]=$mnt
	wait_up "$pid" is_mounted "$mnt" || true
	if is_mounted "$mnt" && "$@" mkdir "$mnt/bench"; then
		DIR[$t]=$mnt/bench
		log "loopback serving $orig at $mnt (pid $pid)"
	else
		cat "$work/loopback.log" >&2
		PROBLEMS+=("the loopback mount did not come up: no loopback column")
	fi
}

# unmount_one MNT: unmount it (gsvfs umount for gsvfs's, else fusermount
# or umount, lazily as a last resort) and wait for the process serving it
# to exit, killing it after 10 s.
unmount_one() {
	local m=$1 pid=${DAEMON[$1]-}
	if is_mounted "$m"; then
		if [[ -n ${GSVFS_MNT[$m]-} ]]; then
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
	# Reap it when this shell started it.
	[[ -z $pid ]] || wait "$pid" 2>/dev/null || true
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

# undo_mounts: on_exit's UNDO for the FUSE scripts; false (leave the work
# directory) while something in it is still mounted.
undo_mounts() {
	local i
	for ((i = ${#MOUNTED[@]} - 1; i >= 0; i--)); do
		unmount_one "${MOUNTED[i]}"
	done
	[[ -n $work && -d $work ]] || return 0
	scan_logs
	for i in "${MOUNTED[@]}"; do
		if is_mounted "$i"; then
			[[ ${BENCH_KEEP:-0} == 1 ]] || log "still mounted: $i; leaving $work"
			return 1
		fi
	done
}

# ---------------------------------------------------------------- 9P servers
# For ninepbench.sh and vm9pbench.sh: diod and gsvfs serve on unix sockets
# in the work directory, measured as three targets (gsvfs twice, at two
# msizes).

# ninep_state: PID and SOCK (server name -> pid, socket), MSIZE (target ->
# msize negotiated), TLABEL (target -> column label), ACTIVE (the targets
# that are up) and SKIPPED (what was left out, and why).
ninep_state() {
	declare -gA PID SOCK MSIZE
	declare -gA TLABEL=([diod]=diod [gsvfs]=gsvfs [gsvfs64]="gsvfs 64K")
	ACTIVE=()
	SKIPPED=()
}

up() { [[ -n ${PID[$1]-} ]]; }

stop_server() {
	local pid=${PID[$1]-}
	[[ -n $pid ]] || return 0
	kill "$pid" 2>/dev/null || true
	if ! wait_gone "$pid" 10; then
		log "$1 (pid $pid) did not exit on SIGTERM; killing it"
		kill -9 "$pid" 2>/dev/null || true
	fi
	wait "$pid" 2>/dev/null || true
	unset "PID[$1]"
}

# stop_servers: on_exit's UNDO for the 9P scripts.
stop_servers() {
	local s
	for s in "${!PID[@]}"; do stop_server "$s"; done
}

# start_server NAME LOG COMMAND...: start it in the background and wait
# until its socket SOCK[NAME] accepts connections.
start_server() {
	local name=$1 logf=$2
	shift 2
	"$@" >"$logf" 2>&1 &
	PID[$name]=$!
	wait_up "${PID[$name]}" test -S "${SOCK[$name]}" && return 0
	log "$name did not come up on ${SOCK[$name]}; its output:"
	cat "$logf" >&2
	stop_server "$name"
	return 1
}

# start_diod NO-DIOD: serve $work/diod.export with diod, when it is
# installed, and set diod_version. NO-DIOD says in SKIPPED what the report
# lacks without it. See "up diod" for whether it runs.
start_diod() {
	diod_version=-
	if ! command -v diod >/dev/null; then
		SKIPPED+=("diod is not installed (Debian package diod): $1")
		return 0
	fi
	diod_version=$(dpkg-query -W -f='${Version}' diod 2>/dev/null || echo "?")
	mkdir "$work/diod.export"
	SOCK[diod]=$work/diod.sock
	if start_server diod "$work/diod.out" \
		diod -f -n -e "$work/diod.export" -l "${SOCK[diod]}" -c /dev/null -L "$work/diod.log"; then
		log "diod $diod_version serving $work/diod.export (pid ${PID[diod]})"
	else
		PROBLEMS+=("diod did not start")
	fi
}

# start_gsvfs: gsvfs serve (bin/gsvfs, from make build) with its state in
# $work/gs.state; sets gsvfs_version. See "up gsvfs" for whether it runs.
start_gsvfs() {
	gsvfs_version=$(repo_version)
	mkdir -p "$work/gs.state"
	SOCK[gsvfs]=$work/gs.sock
	if start_server gsvfs "$work/gs.log" \
		"$repo/bin/gsvfs" serve --root "$work/gs.state" --listen "unix:${SOCK[gsvfs]}"; then
		log "gsvfs $gsvfs_version serving $work/gs.state (pid ${PID[gsvfs]})"
	else
		PROBLEMS+=("gsvfs serve did not start")
	fi
}

# rotate_runs FUNC: call FUNC TARGET RUN for each of RUNS runs over the
# ACTIVE targets, the order rotated by one each run so that no target
# always goes first.
rotate_runs() {
	local r i n=${#ACTIVE[@]}
	for ((r = 1; r <= RUNS; r++)); do
		for ((i = 0; i < n; i++)); do "$1" "${ACTIVE[(i + r - 1) % n]}" "$r"; done
	done
}

# check_servers SHOW: note in PROBLEMS a server that exited during the
# runs, and the errors and warnings in the gsvfs log, the first SHOW of
# which go to stderr too.
check_servers() {
	local s n
	for s in "${!PID[@]}"; do
		kill -0 "${PID[$s]}" 2>/dev/null || PROBLEMS+=("$s exited during the runs")
	done
	[[ -f $work/gs.log ]] || return 0
	n=$(grep -ciE "$alarm_re" "$work/gs.log" || true)
	[[ $n != 0 ]] || return 0
	PROBLEMS+=("$n error/warning lines in the gsvfs log, the first: $(grep -m1 -iE "$alarm_re" "$work/gs.log" | cut -c1-200)")
	(($1)) || return 0
	grep -iE "$alarm_re" "$work/gs.log" | head -n "$1" >&2 || true
}

# msize_label TARGET: its label, with the msize it negotiated when known.
msize_label() {
	local m=${MSIZE[$1]-}
	if [[ -z $m ]]; then echo "${TLABEL[$1]}"; return; fi
	if ((m % 1048576 == 0)); then m="$((m / 1048576))M"; elif ((m % 1024 == 0)); then m="$((m / 1024))K"; fi
	echo "${TLABEL[$1]} (msize $m)"
}

# vs_diod METRIC TARGET: TARGET over diod as "1.23x", with the metric's
# kind after it ("1.23x cost") when less is better.
vs_diod() {
	local f='%.2fx'
	[[ ${MKIND[$1]} == thr ]] || f+=" ${MKIND[$1]}"
	ratio "$1" "$2" diod "$f"
}

# ninep_table: the 9P table into $table (which it sets): a row for each of
# METRICS, labelled from MLABEL and MUNIT, with diod, gsvfs and gsvfs 64K
# (through the script's fmt_value METRIC VALUE) and their ratios to diod.
# shellcheck disable=SC2153
ninep_table() {
	local m
	table=$work/table.tsv
	{
		printf 'workload\tunit\t%s\t%s\tgsvfs/diod\t%s\t64K/diod\n' \
			"$(msize_label diod)" "$(msize_label gsvfs)" "$(msize_label gsvfs64)"
		for m in "${METRICS[@]}"; do
			printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "${MLABEL[$m]}" "${MUNIT[$m]}" \
				"$(fmt_value "$m" "$(cell_value "$m" diod)")" \
				"$(fmt_value "$m" "$(cell_value "$m" gsvfs)")" "$(vs_diod "$m" gsvfs)" \
				"$(fmt_value "$m" "$(cell_value "$m" gsvfs64)")" "$(vs_diod "$m" gsvfs64)"
		done
	} >"$table"
}

# ninep_report TITLE: header, table, what was skipped and the problems; the
# same in markdown, under the heading TITLE, to BENCH_OUT when it is set.
ninep_report() {
	report_text "$table"
	print_list "Skipped:" "${SKIPPED[@]}"
	print_list "Problems seen:" "${PROBLEMS[@]}"
	write_out ninep_markdown "$1"
}

ninep_markdown() {
	report_markdown "$1" "$table"
	if ((${#SKIPPED[@]})); then
		echo
		printf -- '- skipped: %s\n' "${SKIPPED[@]}"
	fi
	if ((${#PROBLEMS[@]})); then
		echo
		printf -- '- problem: %s\n' "${PROBLEMS[@]}"
	fi
}
