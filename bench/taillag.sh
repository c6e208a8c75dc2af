#!/usr/bin/env bash
# taillag.sh READ WRITE LINES CAP: how late `tail -f READ` shows a line
# appended to WRITE (the same file, written where it lives: on the
# device, say, while READ is its path through a mount). Starts tail,
# then LINES times appends a line to WRITE and waits for tail to print
# it, at most CAP seconds. Prints the worst delay in seconds and how many
# lines came ("0.512 5/5"); the delay is CAP when a line did not come
# (and the lines after it are not tried).
set -euo pipefail
rd=$1 wr=$2 n=$3 cap=$4
: >>"$wr"
# A file new on the device shows through a mount once its notice came
# (or its negative entry expired): tail -f of a missing file gives up.
for ((w = 0; w < cap * 10; w++)); do
	[[ -e $rd ]] && break
	sleep 0.1
done
exec 3< <(exec tail -n0 -f "$rd" 2>/dev/null)
pid=$!
trap 'kill "$pid" 2>/dev/null || true' EXIT
# Let tail open the file and reach its end before the first line.
sleep 1
worst=0 seen=0
for ((i = 1; i <= n; i++)); do
	t0=$EPOCHREALTIME
	printf 'line %d\n' "$i" >>"$wr"
	if ! read -r -t "$cap" -u 3 line || [[ $line != "line $i" ]]; then
		worst=$cap
		break
	fi
	t1=$EPOCHREALTIME
	worst=$(awk -v a="$t0" -v b="$t1" -v w="$worst" 'BEGIN { d = b - a; printf "%.6f", (d > w ? d : w) }')
	seen=$i
	sleep 0.3
done
echo "$worst $seen/$n"
