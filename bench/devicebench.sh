#!/usr/bin/env bash
# devicebench.sh — a device's files read and written through a gateway's
# /mnt/ID, against the same client reading the device's export directly,
# with delay added on the network between them.
#
# Builds bin/gsvfs and bench/delayproxy, then runs on this machine:
#
#   device    gsvfs serve --root DEV --device dev --listen tcp:127.0.0.1:PD
#             --insecure-tcp, joined to the gateway through a delay proxy
#   gateway   gsvfs serve --root GW --listen tls:127.0.0.1:PG
#   direct    gsvfs mount --server tcp:PROXY1 MNT_D: FUSE over 9P to the
#             device, through its own delay proxy
#   gateway   gsvfs mount --root GW MNT_G: FUSE over the gateway's socket,
#             reading MNT_G/mnt/dev, the gateway relaying over TLS through
#             the other proxy
#
# Both paths cross one delaying proxy (DELAY each way) and are FUSE mounts
# backed by gsvfs's 9P client, so the difference is the gateway's relay.
# For each delay it drops the caches, then times dd of BENCH_SIZE_MB MiB
# read (bs=1M) and written (conv=fsync) on each path, BENCH_RUNS times,
# and reports medians, the ratio gateway/direct, and the gateway's peak
# memory (VmHWM) over those runs: streaming must not hold the file. Then
# it joins BENCH_DEVICES devices to the gateway and reports what they
# cost it (bench/devscale).
#
# Environment:
#   BENCH_RUNS=3           runs per figure (median reported)
#   BENCH_SIZE_MB=1024     file size in MiB
#   BENCH_DELAYS="0 1 20"  added delays each way, in ms ("" for none)
#   BENCH_DEVICES=100      devices joined at once for the scale figures
#                          (bench/devscale, in-process devices; 0 skips)
#   BENCH_QUICK=1          smoke run: 64 MiB, delays 0 and 1, 1 run
#   BENCH_OUT=FILE         also write the table as markdown to FILE
#   BENCH_TMP=/var/tmp     where the state directories are made
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
export LC_ALL=C
log() { printf 'devicebench: %s\n' "$*" >&2; }

if [[ ${BENCH_QUICK:-0} == 1 ]]; then
	RUNS=${BENCH_RUNS:-1} SIZE_MB=${BENCH_SIZE_MB:-64} DELAYS=${BENCH_DELAYS-"0 1"} DEVICES=${BENCH_DEVICES:-20}
else
	RUNS=${BENCH_RUNS:-3} SIZE_MB=${BENCH_SIZE_MB:-1024} DELAYS=${BENCH_DELAYS-"0 1 20"} DEVICES=${BENCH_DEVICES:-100}
fi
if [[ $(id -u) != 0 ]]; then
	log "needs root (drop_caches, FUSE allow_other)"
	exit 2
fi

make -C "$repo" -s build
go build -C "$repo" -o "$repo/bin/delayproxy" ./bench/delayproxy
go build -C "$repo" -o "$repo/bin/devscale" ./bench/devscale
gsvfs=$repo/bin/gsvfs proxy=$repo/bin/delayproxy

work=$(mktemp -d "${BENCH_TMP:-/var/tmp}/devicebench.XXXXXX")
pids=()
cleanup() {
	for m in "$work"/mnt_*; do umount -l "$m" 2>/dev/null || true; done
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

# start CMD...: run CMD in the background, its first line of output in
# $line once it is up.
start() {
	local out=$work/out.$RANDOM
	"$@" >"$out" 2>>"$work/log" &
	pids+=($!)
	local i
	for ((i = 0; i < 100; i++)); do
		[[ -s $out ]] && break
		sleep 0.1
	done
	line=$(head -1 "$out")
	[[ -n $line ]] || { log "no output from $*"; cat "$work/log" >&2; exit 1; }
}
port_of() { sed -E 's/.*:([0-9]+)[^0-9]*$/\1/' <<<"$1"; }

mkdir -p "$work"/{gw,dev/workspaces,mnt_d,mnt_g}
head -c $((SIZE_MB << 20)) /dev/urandom >"$work/dev/workspaces/big"

start "$gsvfs" serve --root "$work/gw" --listen tls:127.0.0.1:0
gwpid=${pids[-1]}
pg=$(grep -o 'tls:127.0.0.1:[0-9]*' <<<"$line" | cut -d: -f3)
dp=$(shuf -i 20000-40000 -n 1)

declare -A FIG
hwm() { awk '/VmHWM/ {print $2}' "/proc/$gwpid/status"; }
median() { tr ' ' '\n' <<<"$*" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
mbps() { awk -v b=$((SIZE_MB << 20)) -v s="$1" 'BEGIN {printf "%.0f", b / s / 1048576}'; }
timed() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null 2>&1; t1=$(date +%s.%N); awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}'; }

for delay in $DELAYS; do
	log "delay ${delay}ms each way"
	start "$proxy" -listen 127.0.0.1:0 -to 127.0.0.1:$pg -delay "${delay}ms"
	p2=$(port_of "$line") proxy2=${pids[-1]}
	tok=$("$gsvfs" device token --root "$work/gw" --device dev --addr 127.0.0.1:$p2)
	"$gsvfs" device rm --root "$work/gw" dev 2>/dev/null || true
	tok=$("$gsvfs" device token --root "$work/gw" --device dev --addr 127.0.0.1:$p2)
	start "$gsvfs" serve --root "$work/dev" --device dev --listen tcp:127.0.0.1:$dp --insecure-tcp --join "$tok"
	devpid=${pids[-1]}
	start "$proxy" -listen 127.0.0.1:0 -to 127.0.0.1:$dp -delay "${delay}ms"
	p1=$(port_of "$line") proxy1=${pids[-1]}
	"$gsvfs" mount --server tcp:127.0.0.1:$p1 "$work/mnt_d" >/dev/null
	"$gsvfs" mount --root "$work/gw" "$work/mnt_g" >/dev/null
	for ((i = 0; i < 100; i++)); do
		grep -q '"online":true' "$work/mnt_g/sys/devices/dev" 2>/dev/null && break
		sleep 0.1
	done
	declare -A T=()
	for ((r = 0; r < RUNS; r++)); do
		for path in direct gateway; do
			dir=$work/mnt_d/workspaces
			[[ $path == gateway ]] && dir=$work/mnt_g/mnt/dev/workspaces
			sync; echo 3 >/proc/sys/vm/drop_caches
			T[read_$path]+=" $(timed dd if="$dir/big" of=/dev/null bs=1M)"
			T[write_$path]+=" $(timed dd if=/dev/zero of="$dir/w" bs=1M count="$SIZE_MB" conv=fsync)"
			rm -f "$dir/w"
		done
	done
	for op in read write; do
		for path in direct gateway; do
			FIG[$op,$path,$delay]=$(mbps "$(median ${T[${op}_$path]})")
		done
	done
	umount "$work/mnt_d" "$work/mnt_g"
	kill "$devpid" "$proxy1" "$proxy2"
	wait "$devpid" "$proxy1" "$proxy2" 2>/dev/null || true
done

peak=$(hwm)
scale=
if ((DEVICES > 0)); then
	log "$DEVICES devices joined to one gateway"
	"$gsvfs" mount --root "$work/gw" "$work/mnt_g" >/dev/null
	scale=$("$repo/bin/devscale" -root "$work/gw" -mnt "$work/mnt_g" -pid "$gwpid" -n "$DEVICES")
	umount "$work/mnt_g"
fi
{
	if [[ -n $DELAYS ]]; then
		echo "| ${SIZE_MB} MiB, MiB/s (median of $RUNS) | delay each way | direct 9P | through gateway | gateway/direct |"
		echo "|---|---|---|---|---|"
		for op in read write; do
			for delay in $DELAYS; do
				d=${FIG[$op,direct,$delay]} g=${FIG[$op,gateway,$delay]}
				echo "| sequential $op | ${delay} ms | $d | $g | $(awk -v a="$g" -v b="$d" 'BEGIN {printf "%.2f", a / b}') |"
			done
		done
		echo
		echo "Gateway peak resident memory over those runs: $((peak / 1024)) MiB."
		echo
	fi
	if [[ -n $scale ]]; then
		echo "| $DEVICES devices, one gateway | |"
		echo "|---|---|"
		echo "$scale"
	fi
} | tee "${BENCH_OUT:-/dev/null}"
