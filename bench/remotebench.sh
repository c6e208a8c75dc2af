#!/usr/bin/env bash
# remotebench.sh — a device's tree through a gateway's /mnt/ID against
# sshfs, over the same loopback link with the same added delay (issue 18).
#
# Builds gsvfs and bench/delayproxy, then sets up on this machine, all on
# a loop-mounted ext4 of its own (lib.sh, loop_disk):
#
#   DIR       the exported directory: the trees the workloads run in
#   gateway   gsvfs serve --root GW --listen tls:127.0.0.1:PORT
#   device    gsvfs serve --device dev --join-file F --bind DIR:/workspaces/src,
#             joined to the gateway through a delay proxy
#   gsvfs     gsvfs mount --root GW (FUSE): MNT/mnt/dev/workspaces/src is DIR
#   sshd      Debian's OpenSSH with a throwaway host key and authorized key,
#             on 127.0.0.1, its sftp-server as Debian configures it
#   sshfs     sshfs with its default options (plus what running without
#             questions needs) mounting DIR through a delay proxy of its own
#   native    the same commands on DIR itself, for reference
#
# Each target has its own copy of every tree (git's index records inode
# numbers, which differ between the mounts). For each delay (added each
# way by bench/delayproxy) and each workload it reports the median time on
# each target, gsvfs/sshfs, the requests the gateway sent the device for
# the workload (its /sys/stats "device dev" line, before and after), and
# the goal of issue 18, met or MISSED. Workloads:
#
#   ls -lR, first run   fresh mounts of both (the device rejoins, so the
#                       gateway keeps nothing), page cache dropped
#   ls -lR, find -newer REF, git status, warm: after one untimed run;
#                       on the small tree (1k files) and the large (10k)
#   tar x               Go's src/net into a new directory of the tree
#   seq read            a new file of BENCH_SIZE_MB MiB, page cache
#                       dropped, dd bs=1M
#   seq write           dd bs=1M conv=fsync
#   coherence           a file's size changed directly on DIR, after a
#                       stat through the mount: the time until the mount
#                       shows the new size (polled; capped at 30 s)
#
# A command that runs past BENCH_CAP seconds is stopped and shown as
# ">CAP"; the target's later runs of that workload are skipped.
#
# Environment:
#   BENCH_RUNS=3            runs per figure (median reported)
#   BENCH_DELAYS="0 1 10"   added delays each way, in ms
#   BENCH_LARGE_DELAYS      the delays at which the 10k-file workloads run
#                           (default: all of BENCH_DELAYS)
#   BENCH_SMALL=1000        files of the small tree (in 20 directories)
#   BENCH_LARGE=10000       files of the large tree (in 100 directories)
#   BENCH_SIZE_MB=64        size of the read and the write
#   BENCH_CAP=300           seconds one command may take
#   BENCH_QUICK=1           smoke run: delays 0 and 1, 1 run, trees of 200
#                           and 1,000 files, cap 60 s (explicit settings win)
#   BENCH_ONLY="cold warm data"  the groups of workloads to run: the first
#                           ls -lR (cold), the warm walks (warm), tar x,
#                           read, write and coherence (data)
#   BENCH_OUT=FILE          also write the table as markdown to FILE
#   BENCH_TMP=/tmp          where the work directory is made
#   BENCH_KEEP=1            keep the work directory (mounts are undone anyway)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=SCRIPTDIR/lib.sh
. "$here/lib.sh" remotebench

if [[ ${BENCH_QUICK:-0} == 1 ]]; then
	RUNS=${BENCH_RUNS:-1} DELAYS=${BENCH_DELAYS-"0 1"} SMALL=${BENCH_SMALL:-200} LARGE=${BENCH_LARGE:-1000} CAP=${BENCH_CAP:-60}
else
	RUNS=${BENCH_RUNS:-3} DELAYS=${BENCH_DELAYS-"0 1 10"} SMALL=${BENCH_SMALL:-1000} LARGE=${BENCH_LARGE:-10000} CAP=${BENCH_CAP:-300}
fi
LARGE_DELAYS=${BENCH_LARGE_DELAYS-$DELAYS}
SIZE_MB=${BENCH_SIZE_MB:-64}
COH_CAP=30
need_counts RUNS SMALL LARGE CAP SIZE_MB
if [[ $(id -u) != 0 ]]; then
	log "needs root: sshd logs in as root, drop_caches, a loop disk"
	exit 2
fi
for tool in sshd:openssh-server sshfs:sshfs git:git; do
	ensure_tool "${tool%%:*}" "${tool#*:}" || { log "no ${tool%%:*} (Debian package ${tool#*:})"; exit 2; }
done

# ---------------------------------------------------------------- state
# and, from lib.sh, work, VALS, ERRS ("workload|target") and PROBLEMS

declare -A PID      # daemon name -> pid
declare -A CAPPED   # "workload|target" -> 1 once a run went past CAP
TARGETS=(gsvfs sshfs native)
declare -A DIR      # target -> the directory its copies of the trees are in
sshd_port= gw_port= gproxy_port= sproxy_port=

stop_pid() { # NAME
	local pid=${PID[$1]-}
	[[ -n $pid ]] || return 0
	kill "$pid" 2>/dev/null || true
	wait_gone "$pid" 10 || kill -9 "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	unset "PID[$1]"
}

is_mounted() { awk -v m="$1" '$5 == m { f = 1 } END { exit !f }' /proc/self/mountinfo; }

unmount() { # MOUNTPOINT
	is_mounted "$1" || return 0
	fusermount3 -u "$1" 2>/dev/null || umount "$1" 2>/dev/null || true
	is_mounted "$1" && { log "unmounting $1 lazily"; umount -l "$1" 2>/dev/null || true; }
	return 0
}

# undo: on_exit's UNDO. The mounts first (the gsvfs mount's process exits
# with it, sshfs too), then the daemons; false while something is mounted.
undo() {
	[[ -n $work ]] || return 0
	unmount "$work/gs.mnt"
	unmount "$work/ss.mnt"
	stop_pid sshfs
	local p
	for p in "${!PID[@]}"; do stop_pid "$p"; done
	if [[ -f $work/gw/gsvfs.log ]] && grep -qiE "$alarm_re" "$work/gw/gsvfs.log"; then
		log "errors and warnings in the gateway's mount log (first 5):"
		grep -iE "$alarm_re" "$work/gw/gsvfs.log" | head -5 >&2
	fi
	! is_mounted "$work/gs.mnt" && ! is_mounted "$work/ss.mnt"
}
on_exit undo

# start NAME LOG COMMAND...: run it in the background; its first line of
# output, once there, in $line.
start() {
	local name=$1 logf=$2 out=$work/$1.out i
	shift 2
	rm -f "$out"
	"$@" >"$out" 2>>"$logf" &
	PID[$name]=$!
	for ((i = 0; i < 100; i++)); do
		[[ -s $out ]] && break
		kill -0 "${PID[$name]}" 2>/dev/null || break
		sleep 0.1
	done
	line=$(head -1 "$out")
	[[ -n $line ]] && return 0
	log "$name did not start; its log:"
	tail -20 "$logf" >&2
	exit 1
}

port_of() { sed -E 's/.*:([0-9]+)[^0-9]*$/\1/' <<<"$1"; }

# free_port: a loopback TCP port nothing listens on.
free_port() {
	local p
	while :; do
		p=$(shuf -i 20000-60000 -n 1)
		[[ -z $(ss -Htln "sport = :$p") ]] && { echo "$p"; return; }
	done
}

drop_caches() { sync; echo 3 >/proc/sys/vm/drop_caches; }

# ---------------------------------------------------------------- set-up

make_workdir
cd "$repo"
log "building gsvfs and delayproxy"
go build -o "$work/gsvfs" ./cmd/gsvfs
go build -o "$work/delayproxy" ./bench/delayproxy
gsvfs=$work/gsvfs
data=$work/data
mkdir -p "$data" "$work/gw" "$work/dev" "$work/gs.mnt" "$work/ss.mnt" "$work/ssh"

goroot=/usr/local/go
[[ -d $goroot/src/net ]] || goroot=$(go env GOROOT)
tar -C "$goroot/src" -cf "$work/net.tar" net
tar_entries=$(tar -tf "$work/net.tar" | wc -l)

small_label=$(count_label "$SMALL") large_label=$(count_label "$LARGE")
# git_tree DIR FILES DIRS: a committed tree, with REF, the file find's
# -newer compares with, older than a tenth of the files.
git_tree() {
	make_tree "$1" "$2" "$3"
	touch -d '-1 hour' "$1"/dir*/f*.go
	touch -d '-30 min' "$1/REF"
	find "$1" -name f1.go -exec touch {} +
	git -C "$1" -c init.defaultBranch=main init -q
	# No background gc: it would pack the objects while they are copied.
	git -C "$1" config gc.auto 0
	git -C "$1" add -A
	git -C "$1" -c user.name=b -c user.email=b@b commit -qm tree
}
log "making the trees: $small_label and $large_label files, a copy for each target"
git_tree "$work/small.src" "$SMALL" 20
git_tree "$work/large.src" "$LARGE" 100
for t in "${TARGETS[@]}"; do
	mkdir "$data/$t"
	cp -a "$work/small.src" "$data/$t/small"
	cp -a "$work/large.src" "$data/$t/large"
done
head -c $((SIZE_MB << 20)) /dev/urandom >"$work/random"

# The gateway and sshd run throughout; each delay gets its own proxies
# (on the same ports), device and mounts.
start gateway "$work/gateway.log" "$gsvfs" serve --root "$work/gw" --listen tls:127.0.0.1:0
gw_port=$(grep -o 'tls:127.0.0.1:[0-9]*' <<<"$line" | cut -d: -f3)
gsvfs_version=$(repo_version)

ssh-keygen -q -t ed25519 -N '' -f "$work/ssh/host_key"
ssh-keygen -q -t ed25519 -N '' -f "$work/ssh/client_key"
cp "$work/ssh/client_key.pub" "$work/ssh/authorized_keys"
sshd_port=$(free_port)
cat >"$work/ssh/sshd_config" <<EOF
ListenAddress 127.0.0.1
Port $sshd_port
HostKey $work/ssh/host_key
PidFile none
AuthorizedKeysFile $work/ssh/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
Subsystem sftp /usr/lib/openssh/sftp-server
EOF
mkdir -p /run/sshd # its privilege separation directory, made by its service elsewhere
sshd=$(command -v sshd)
"$sshd" -D -f "$work/ssh/sshd_config" -E "$work/sshd.log" &
PID[sshd]=$!
listening() { [[ -n $(ss -Htln "sport = :$1") ]]; }
wait_up "${PID[sshd]}" listening "$sshd_port" ||
	{ log "sshd did not start:"; cat "$work/sshd.log" >&2; exit 1; }
sshd_version=$("$sshd" -V 2>&1 | awk -F, 'NR == 1 { print $1 }' || true)
sshfs_version=$(sshfs --version 2>&1 | awk '/^SSHFS version/ { print $3 }' || true)

# start_proxies DELAY: the two delay proxies, on the ports of the first.
start_proxies() {
	start gproxy "$work/proxy.log" "$work/delayproxy" -listen "127.0.0.1:${gproxy_port:-0}" -to "127.0.0.1:$gw_port" -delay "${1}ms"
	gproxy_port=$(port_of "$line")
	start sproxy "$work/proxy.log" "$work/delayproxy" -listen "127.0.0.1:${sproxy_port:-0}" -to "127.0.0.1:$sshd_port" -delay "${1}ms"
	sproxy_port=$(port_of "$line")
}

# start_device: the device, joined through the proxy.
start_device() {
	if [[ ! -f $work/join ]]; then
		(umask 077 && "$gsvfs" device token --root "$work/gw" --device dev --addr "127.0.0.1:$gproxy_port" >"$work/join")
	fi
	start device "$work/device.log" "$gsvfs" serve --root "$work/dev" --device dev \
		--join-file "$work/join" --bind "$data:/workspaces/src"
}

# joined: the gateway's descriptor of the device, online, and when its
# link came up.
joined() {
	grep -q '"online":true' "$work/gs.mnt/sys/devices/dev" 2>/dev/null &&
		grep -o '"connectedAt":"[^"]*"' "$work/gs.mnt/sys/devices/dev"
}

# rejoined: online on a link newer than the one of $last_join.
rejoined() {
	local j
	j=$(joined) && [[ $j != "$last_join" ]]
}

# mount_gsvfs: the gateway's tree at gs.mnt, once the device is online on
# a new link.
last_join=
mount_gsvfs() {
	"$gsvfs" mount --root "$work/gw" "$work/gs.mnt" >/dev/null
	wait_up "${PID[device]}" rejoined || { log "the device did not come online:"; tail "$work/device.log" >&2; exit 1; }
	last_join=$(joined)
	DIR[gsvfs]=$work/gs.mnt/mnt/dev/workspaces/src/gsvfs
	[[ -d ${DIR[gsvfs]}/small ]] || { log "no ${DIR[gsvfs]}/small through the gateway"; exit 1; }
}

mount_sshfs() {
	sshfs -f -p "$sproxy_port" -o IdentityFile="$work/ssh/client_key" \
		-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes \
		"root@127.0.0.1:$data" "$work/ss.mnt" 2>>"$work/sshfs.log" &
	PID[sshfs]=$!
	wait_up "${PID[sshfs]}" is_mounted "$work/ss.mnt" || { log "sshfs did not mount:"; cat "$work/sshfs.log" >&2; exit 1; }
	DIR[sshfs]=$work/ss.mnt/sshfs
}

unmount_gsvfs() { "$gsvfs" umount "$work/gs.mnt" >/dev/null 2>&1 || unmount "$work/gs.mnt"; }
unmount_sshfs() { unmount "$work/ss.mnt"; stop_pid sshfs; }

DIR[native]=$data/native

# ---------------------------------------------------------------- measuring

# round_trips: the requests the gateway has sent the device, or nothing
# when /sys/stats does not count them.
round_trips() {
	awk '$1 == "device" && $2 == "dev" && $3 == "online" { print $NF }' "$work/gs.mnt/sys/stats" 2>/dev/null || true
}

sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.6f", b - a }'; }

# timed WORKLOAD TARGET COMMAND...: run COMMAND (in the target's
# directory) under the cap and record its time, and for gsvfs the round
# trips it cost.
timed() {
	local w=$1 t=$2 t0 t1 rc r0 r1
	shift 2
	[[ -z ${CAPPED["$w|$t"]-} ]] || return 0
	[[ $t == gsvfs ]] && r0=$(round_trips)
	t0=$EPOCHREALTIME
	(cd "${DIR[$t]}" && timeout "$CAP" "$@" >/dev/null 2>"$work/cmd.err") && rc=0 || rc=$?
	t1=$EPOCHREALTIME
	if ((rc == 124)); then
		CAPPED["$w|$t"]=$CAP
		log "  $t: stopped after ${CAP} s"
		return 0
	elif ((rc != 0)); then
		ERRS["$w|$t"]=1
		PROBLEMS+=("${WLABEL[${w%@*}]} at ${w#*@} ms failed on $t (exit $rc): $(head -c 200 "$work/cmd.err")")
		return 0
	fi
	record "$w" "$t" "$(sub "$t0" "$t1")"
	if [[ $t == gsvfs && -n $r0 ]]; then
		r1=$(round_trips)
		record "rt_$w" gsvfs $((r1 - r0))
	fi
	log "  $t: $(sub "$t0" "$t1") s${r0:+, $((r1 - r0)) round trips}"
}

# Workloads in table order: label, goal of issue 18 (the most gsvfs/sshfs
# may be) and whether the large tree makes one.
WORKLOADS=(lsr_cold lsr_small find_small git_small lsr_large find_large git_large tarx read write coherence)
declare -A WLABEL WGOAL
WLABEL=([lsr_cold]="ls -lR, first run after mounting, $small_label files"
	[lsr_small]="ls -lR, warm, $small_label files" [find_small]="find -newer, warm, $small_label files"
	[git_small]="git status, warm, $small_label files" [lsr_large]="ls -lR, warm, $large_label files"
	[find_large]="find -newer, warm, $large_label files" [git_large]="git status, warm, $large_label files"
	[tarx]="tar x go/src/net ($tar_entries entries)" [read]="seq read $SIZE_MB MiB, cold (dd bs=1M)"
	[write]="seq write $SIZE_MB MiB (dd conv=fsync)" [coherence]="change on DIR visible (poll stat)")
WGOAL=([lsr_cold]=1.5 [lsr_small]=1 [find_small]=1 [git_small]=1 [lsr_large]=1 [find_large]=1
	[git_large]=1 [tarx]=1 [read]=1 [write]=1)
RT_GOAL=50           # round trips of a warm ls -lR of the small tree
MIN_MBPS=30          # read and write, at MIN_MBPS_DELAY ms
MIN_MBPS_DELAY=10
COH_GOAL=1           # seconds

# order RUN: the targets, rotated by the run so none always goes first.
order() {
	local i n=${#TARGETS[@]}
	for ((i = 0; i < n; i++)); do echo "${TARGETS[(i + $1 - 1) % n]}"; done
}

# fresh TARGET: a mount as new as a user's first: for gsvfs the device
# rejoins as well, so the gateway holds nothing of it.
fresh() {
	case $1 in
	gsvfs)
		unmount_gsvfs
		stop_pid device
		start_device
		drop_caches
		mount_gsvfs
		;;
	sshfs)
		unmount_sshfs
		drop_caches
		mount_sshfs
		;;
	native) drop_caches ;;
	esac
}

# warm WORKLOAD TARGET COMMAND...: one untimed run, then the timed one.
warm() {
	(cd "${DIR[$2]}" && timeout "$CAP" "${@:3}" >/dev/null 2>&1) || true
	timed "$@"
}

# coherence TARGET RUN DELAY: the seconds until a size changed on DIR shows
# through the target's mount, polled; COH_CAP+ when it never did.
coherence() {
	local t=$1 f=coh.$2 on=$data/$1 t0 t1 size
	[[ $t == native ]] && return 0
	printf 'x\n' >"$on/$f"
	stat -c %s "${DIR[$t]}/$f" >/dev/null || { ERRS["coherence@$3|$t"]=1; return 0; }
	printf 'more\n' >>"$on/$f"
	t0=$EPOCHREALTIME
	while :; do
		size=$(stat -c %s "${DIR[$t]}/$f" 2>/dev/null) || size=
		[[ $size == 7 ]] && break
		if awk -v a="$t0" -v b="$EPOCHREALTIME" -v c="$COH_CAP" 'BEGIN { exit !(b - a > c) }'; then
			CAPPED["coherence@$3|$t"]=$COH_CAP
			log "  $t: not visible after $COH_CAP s"
			rm -f "$on/$f"
			return 0
		fi
		sleep 0.02
	done
	t1=$EPOCHREALTIME
	record "coherence@$3" "$t" "$(sub "$t0" "$t1")"
	log "  $t: visible after $(sub "$t0" "$t1") s"
	rm -f "$on/$f"
}

ONLY=${BENCH_ONLY:-cold warm data}
for g in $ONLY; do
	[[ $g == cold || $g == warm || $g == data ]] || { log "BENCH_ONLY: '$g' is not cold, warm or data"; exit 2; }
done

# wanted GROUP: whether BENCH_ONLY runs the group.
wanted() { [[ " $ONLY " == *" $1 "* ]]; }

# group_of WORKLOAD: the BENCH_ONLY group a workload belongs to.
group_of() {
	case $1 in
	lsr_cold) echo cold ;;
	lsr_* | find_* | git_*) echo warm ;;
	*) echo data ;;
	esac
}

# one_delay DELAY: every workload at one added delay.
one_delay() {
	local d=$1 r t large=0 w
	[[ " $LARGE_DELAYS " == *" $d "* ]] && large=1
	log "delay $d ms each way (load $(cut -d' ' -f1-3 /proc/loadavg))"
	start_proxies "$d"
	start_device
	mount_gsvfs
	mount_sshfs
	for ((r = 1; r <= RUNS; r++)); do
		log "run $r/$RUNS at $d ms"
		for t in $(order "$r"); do
			wanted cold || break
			log "${WLABEL[lsr_cold]} — $t"
			fresh "$t"
			timed "lsr_cold@$d" "$t" ls -lR small
		done
		for w in small large; do
			wanted warm || break
			[[ $w == large && $large == 0 ]] && continue
			for t in $(order "$r"); do
				log "warm $w tree — $t"
				warm "lsr_$w@$d" "$t" ls -lR "$w"
				warm "find_$w@$d" "$t" find "$w" -newer "$w/REF"
				warm "git_$w@$d" "$t" git -C "$w" status --porcelain
			done
		done
		for t in $(order "$r"); do
			wanted data || break
			log "tar x, read, write, coherence — $t"
			timed "tarx@$d" "$t" bash -c "mkdir tar.$r && tar -xf '$work/net.tar' -C tar.$r"
			rm -rf "$data/$t/tar.$r"
			cp "$work/random" "$data/$t/read.$r"
			drop_caches
			timed "read@$d" "$t" dd if="read.$r" of=/dev/null bs=1M status=none
			rm -f "$data/$t/read.$r"
			timed "write@$d" "$t" dd if=/dev/zero of="write.$r" bs=1M count="$SIZE_MB" conv=fsync status=none
			rm -f "$data/$t/write.$r"
			coherence "$t" "$r" "$d"
		done
	done
	unmount_gsvfs
	unmount_sshfs
	stop_pid device
	stop_pid gproxy
	stop_pid sproxy
}

# ---------------------------------------------------------------- runs

for d in $DELAYS; do
	[[ $d =~ ^[0-9]+$ ]] || { log "BENCH_DELAYS: '$d' is not a number of ms"; exit 2; }
	one_delay "$d"
done

# ---------------------------------------------------------------- report

# cell WORKLOAD@DELAY TARGET: the median in seconds, ">CAP" when a run was
# stopped, "err" or "-".
cell() {
	local c=${CAPPED["$1|$2"]-}
	if [[ -n $c ]]; then echo ">$c"; else fmt_num 3 "$(cell_value "$1" "$2")"; fi
}

# secs WORKLOAD@DELAY TARGET: the figure to compare: the median, or the
# cap when a run was stopped (a bound, marked by cell).
secs() {
	local c=${CAPPED["$1|$2"]-}
	if [[ -n $c ]]; then echo "$c"; else cell_value "$1" "$2"; fi
}

with_mbps() { # CELL SECONDS
	if isnum "$2"; then echo "$1 ($(awk -v s="$2" -v m="$SIZE_MB" 'BEGIN { printf "%.0f", m / s }') MiB/s)"; else echo "$1"; fi
}

goal_text() { # WORKLOAD DELAY
	local w=$1 g
	case $w in
	coherence) echo "gsvfs <= ${COH_GOAL} s"; return ;;
	esac
	g="<= $(printf '%.1f' "${WGOAL[$w]}")x"
	[[ $w == lsr_small ]] && g+=", <= $RT_GOAL round trips"
	[[ ($w == read || $w == write) && $2 == "$MIN_MBPS_DELAY" ]] && g+=", >= $MIN_MBPS MiB/s"
	echo "$g"
}

# judge WORKLOAD DELAY: sets result to met or MISSED, a miss said in
# shortfalls (so it runs in this shell, never in $(...)).
judge() {
	local w=$1 d=$2 k="$1@$2" g s r rt
	g=$(secs "$k" gsvfs)
	if [[ $w == coherence ]]; then
		if isnum "$g" && [[ -z ${CAPPED["$k|gsvfs"]-} ]] && awk -v a="$g" -v b="$COH_GOAL" 'BEGIN { exit !(a <= b) }'; then
			result=met
		else
			shortfalls+=("$d ms, ${WLABEL[$w]}: gsvfs $(cell "$k" gsvfs) s, goal <= $COH_GOAL s")
			result=MISSED
		fi
		return
	fi
	s=$(secs "$k" sshfs)
	if ! isnum "$g" || ! isnum "$s"; then
		shortfalls+=("$d ms, ${WLABEL[$w]}: no figure (gsvfs $g, sshfs $s)")
		result=MISSED
		return
	fi
	local miss=0
	r=$(awk -v a="$g" -v b="$s" 'BEGIN { printf "%.4f", a / b }')
	if ! awk -v r="$r" -v x="${WGOAL[$w]}" 'BEGIN { exit !(r <= x) }' || [[ -n ${CAPPED["$k|gsvfs"]-} ]]; then
		miss=1
		shortfalls+=("$d ms, ${WLABEL[$w]}: gsvfs takes $(printf '%.2f' "$r")x sshfs's time, goal <= ${WGOAL[$w]}x")
	fi
	if [[ $w == lsr_small ]]; then
		rt=$(cell_value "rt_$k" gsvfs)
		if ! isnum "$rt" || ((${rt%.*} > RT_GOAL)); then
			miss=1
			shortfalls+=("$d ms, ${WLABEL[$w]}: $rt round trips, goal <= $RT_GOAL")
		fi
	fi
	if [[ ($w == read || $w == write) && $d == "$MIN_MBPS_DELAY" ]] &&
		! awk -v s="$g" -v m="$SIZE_MB" -v x="$MIN_MBPS" 'BEGIN { exit !(m / s >= x) }'; then
		miss=1
		shortfalls+=("$d ms, ${WLABEL[$w]}: gsvfs $(awk -v s="$g" -v m="$SIZE_MB" 'BEGIN { printf "%.1f", m / s }') MiB/s, goal >= $MIN_MBPS MiB/s")
	fi
	result=met
	if ((miss)); then result=MISSED; fi
}

table=$work/table.tsv
shortfalls=()
{
	printf 'delay\twork\tnative s\tgsvfs s\tsshfs s\tgsvfs/sshfs\tgsvfs round trips\tgoal\tresult\n'
	for d in $DELAYS; do
		for w in "${WORKLOADS[@]}"; do
			k="$w@$d"
			[[ $w == *_large && " $LARGE_DELAYS " != *" $d "* ]] && continue
			wanted "$(group_of "$w")" || continue
			n=$(cell "$k" native) g=$(cell "$k" gsvfs) s=$(cell "$k" sshfs)
			if [[ $w == read || $w == write ]]; then
				n=$(with_mbps "$n" "$(secs "$k" native)")
				g=$(with_mbps "$g" "$(secs "$k" gsvfs)")
				s=$(with_mbps "$s" "$(secs "$k" sshfs)")
			fi
			[[ $w == coherence ]] && n=-
			rx=$(secs "$k" gsvfs) sx=$(secs "$k" sshfs) ratio=-
			if isnum "$rx" && isnum "$sx" && awk -v b="$sx" 'BEGIN { exit !(b > 0) }'; then
				ratio=$(awk -v a="$rx" -v b="$sx" 'BEGIN { printf "%.2fx", a / b }')
				[[ -n ${CAPPED["$k|gsvfs"]-} ]] && ratio=">$ratio"
				[[ -n ${CAPPED["$k|sshfs"]-} ]] && ratio="<$ratio"
			fi
			rt=$(cell_value "rt_$k" gsvfs)
			[[ $rt == - || $rt == err ]] || rt=$(printf '%.0f' "$rt")
			judge "$w" "$d"
			printf '%s ms\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$d" "${WLABEL[$w]}" "$n" "$g" "$s" "$ratio" \
				"$rt" "$(goal_text "$w" "$d")" "$result"
		done
	done
} >"$table"

header=(
	"gsvfs $gsvfs_version /mnt/dev (a device's --bind directory through a gateway, FUSE) against sshfs $sshfs_version (default options; sshd $sshd_version, Debian's sftp-server), same loopback link, bench/delayproxy adding the delay each way in front of both"
	"$(now_utc), $(machine_desc), $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), $(go env GOVERSION)"
	"DIR on $disk_desc; median of $RUNS run(s); trees of $SMALL files in 20 directories and $LARGE in 100 ($large_label rows at delays: ${LARGE_DELAYS:-none} ms); a command is stopped after $CAP s"
	"$(load_desc): other work on the machine adds noise"
	"times in seconds; gsvfs/sshfs is the ratio of times (lower is better); round trips: the requests the gateway sent the device during the command (/sys/stats); sshfs's SFTP requests are not counted"
	"first run: both mounts new, the device rejoined (the gateway keeps nothing of it), page cache dropped; warm: after one untimed run; coherence: a size changed on DIR after a stat through the mount, polled every 20 ms, capped at $COH_CAP s"
)

report_text "$table" "1 2 8 9"
print_list "Goals missed:" "${shortfalls[@]}"
print_list "Problems seen:" "${PROBLEMS[@]}"

markdown_report() {
	report_markdown "Remote trees (issue 18): gsvfs /mnt/ID against sshfs" "$table" "1 2 8 9"
	markdown_list "Goals missed:" "${shortfalls[@]}"
	markdown_list "Problems seen:" "${PROBLEMS[@]}"
}
write_out markdown_report
