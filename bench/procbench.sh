#!/usr/bin/env bash
# procbench.sh — /proc sessions through a gsvfs FUSE mount, against the
# issue's targets.
#
# Mounts a fresh state directory and runs bench/procbench on it:
#
#   round trip   `echo rN` written to a live bash's stdin until the answer
#                can be read: once waiting on stream, once polling stdout
#                (p50 under 2 ms, p99 under 10 ms)
#   one-shots    mkdir, exec true, wait, rmdir, in a loop, by one client
#                and by four at once (200/s or more)
#   idle cost    N interactive shells at their prompt at once; the daemon's
#                resident memory per session (under 256 KiB; the shells
#                themselves are processes of their own and not counted)
#
# The sessions run bash with an empty home directory and a plain PATH, so
# the figures are gsvfs's and not those of the operator's shell start-up
# files (a login bash reading a heavy ~/.profile costs far more than
# gsvfs does).
#
# Environment:
#   BENCH_ROUNDS=2000     round trips per mode
#   BENCH_ONESHOTS=1000   one-shot sessions
#   BENCH_IDLE=1000       idle sessions held at once
#   BENCH_QUICK=1         smoke run: 200 rounds, 100 one-shots, 100 idle
#   BENCH_OUT=FILE        also write the table as markdown to FILE
#   BENCH_TMP=/tmp        where the work directory is made
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=SCRIPTDIR/lib.sh
. "$here/lib.sh" procbench

quick=${BENCH_QUICK:-0}
rounds=${BENCH_ROUNDS:-$( ((quick)) && echo 200 || echo 2000)}
oneshots=${BENCH_ONESHOTS:-$( ((quick)) && echo 100 || echo 1000)}
idle=${BENCH_IDLE:-$( ((quick)) && echo 100 || echo 1000)}
need_counts rounds oneshots idle

mnt=
undo() {
	if [[ -n $mnt ]] && mountpoint -q "$mnt"; then
		"$work/gsvfs" umount "$mnt" >/dev/null 2>&1 || umount -l "$mnt"
	fi
	return 0
}

make_workdir
on_exit undo
log "building gsvfs and procbench"
(cd "$repo" && go build -o "$work/gsvfs" ./cmd/gsvfs && go build -o "$work/procbench" ./bench/procbench)

mnt=$work/mnt
mkdir -p "$mnt" "$work/home"
out=$(env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$work/home" SHELL=/bin/bash LANG=C.UTF-8 \
	"$work/gsvfs" mount --root "$work/state" --max-sessions $((idle + 16)) "$mnt")
pid=$(sed -n 's/.*(pid \([0-9]*\).*/\1/p' <<<"$out")
[[ -n $pid ]] || { log "no daemon pid in: $out"; exit 1; }
log "daemon $pid; $rounds round trips, $oneshots one-shots, $idle idle sessions"

# A generous descriptor limit: each live session holds its terminal.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
figures=$(env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$work/home" SHELL=/bin/bash LANG=C.UTF-8 \
	"$work/procbench" -mount "$mnt" -pid "$pid" -rounds "$rounds" -oneshots "$oneshots" -idle "$idle")

# value NAME: a figure procbench printed.
value() { awk -v n="$1" '$1 == n { print $2 }' <<<"$figures"; }

# row LABEL VALUE UNIT OP TARGET: a table row with PASS or MISS; with an
# empty OP, a reference figure.
rows=()
row() {
	local verdict
	if [[ -z $4 ]]; then # a reference, not a target
		rows+=("$1|$2 $3|-|")
		return
	fi
	verdict=$(awk -v v="$2" -v op="$4" -v t="$5" 'BEGIN {
		ok = (op == "<") ? (v < t) : (v >= t); print ok ? "PASS" : "MISS" }')
	rows+=("$1|$2 $3|$4 $5 $3|$verdict")
}
row "round trip via stream, p50" "$(value rtt_stream_p50)" ms "<" 2
row "round trip via stream, p99" "$(value rtt_stream_p99)" ms "<" 10
row "round trip polling stdout, p50" "$(value rtt_stdout_p50)" ms "<" 2
row "round trip polling stdout, p99" "$(value rtt_stdout_p99)" ms "<" 10
row "bash -lc true alone, no gsvfs (reference)" "$(value shell_alone_rate)" "/s" "" ""
row "one-shot sessions, one client" "$(value oneshot_rate_1)" "/s" ">=" 200
row "one-shot sessions, four clients" "$(value oneshot_rate_4)" "/s" ">=" 200
row "daemon memory per idle session ($(value idle_sessions) at once)" "$(value idle_rss_per_session)" KiB "<" 256

title="gsvfs /proc benchmark, $(now_utc), $(machine_desc), gsvfs $(repo_version)"
{
	echo "$title"
	printf '%-58s %-14s %-14s %s\n' "figure" "value" "target" ""
	for r in "${rows[@]}"; do
		IFS='|' read -r a b c d <<<"$r"
		printf '%-58s %-14s %-14s %s\n' "$a" "$b" "$c" "$d"
	done
	load_desc
}
if [[ -n ${BENCH_OUT:-} ]]; then
	{
		echo "$title"
		echo
		echo "| figure | value | target | |"
		echo "|---|---|---|---|"
		for r in "${rows[@]}"; do echo "| ${r//|/ | } |"; done
	} >"$BENCH_OUT"
fi
