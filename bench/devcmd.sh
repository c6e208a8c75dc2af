#!/bin/sh
# devcmd.sh SESSION COMMAND: run COMMAND once on a device through its /proc
# tree, as a program without a client would (gsvfs-proc(7)): mkdir the
# session directory SESSION (such as /mnt/ID/proc/x), write "exec COMMAND"
# to its ctl, read its wait until the session has finished, rmdir it.
# Prints the last status line read; exits 0 when COMMAND exited 0.
# remotebench.sh times it against `ssh host COMMAND`.
set -eu
s=$1
mkdir "$s"
printf 'exec %s\n' "$2" >"$s/ctl"
st=$(cat "$s/wait")
# wait returns at the yield time while the command still runs.
while :; do
	case $st in
	*'"status":"running"'* | *'"status":"waiting"'*) st=$(cat "$s/wait") ;;
	*) break ;;
	esac
done
rmdir "$s"
printf '%s\n' "$st"
case $st in *'"exitCode":0,'* | *'"exitCode":0}'*) exit 0 ;; esac
exit 1
