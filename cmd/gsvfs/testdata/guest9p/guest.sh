#!/bin/sh
# guest.sh [SUBDIR] - the vm9p guest's side of TestKernel9P (cmd/gsvfs).
#
# Runs in the vm9p guest (busybox sh, the server mounted at /mnt/9p):
#   run --socket SOCK [--opts ...] guest.sh -- DIR
# where DIR holds guest9p.test (built from this directory with
# CGO_ENABLED=0 go test -c) and optionally guest.env, which may set
# GSVFS_GUEST_SUBDIR and GSVFS_GUEST_SERVER (diod|gsvfs: the server under
# test, for the tests' known-bug skips), and for a server with shell
# sessions GSVFS_GUEST_PROC (its /proc, relative to the mount) with the
# session settings the /proc tests expect: GSVFS_GUEST_PROC_OUTPUT,
# GSVFS_GUEST_PROC_RETENTION and GSVFS_GUEST_PROC_SECRET (see proc_test.go).
#
# SUBDIR is the test directory under /mnt/9p: the first argument, else
# $GSVFS_GUEST_SUBDIR, else guest.env's, else workspaces/guest9p. It gets
#   go/            the Go tests' directory ($GSVFS_GUEST_DIR)
#   sh/            the busybox checks' files, left for the host to verify:
#                  moved ("hello 9p\nmore\n"), big (64 MiB) and big.md5
#   guest9p.log    the Go tests' full -test.v output
#   proc.pids      with GSVFS_GUEST_PROC: the host pids of the sessions the
#                  /proc tests removed, for the host to check that none of
#                  their processes is left ($GSVFS_GUEST_PROC_PIDS)
# The serial console is slow, so this prints the skips and a summary, and
# on failure the failing tests' output. Exit status 0 means PASS.

arg_sub=${1:-${GSVFS_GUEST_SUBDIR:-}}
files=${VM9P_FILES:-/vm9p/files}
mnt=${VM9P_MNT:-/mnt/9p}

bin=''
for b in "$files/guest9p.test" "$files"/*/guest9p.test; do
	if [ -x "$b" ]; then bin=$b; break; fi
done
if [ -z "$bin" ]; then
	echo "guest9p: FAIL: no guest9p.test in $files"
	exit 1
fi
env=${bin%/*}/guest.env
if [ -f "$env" ]; then . "$env"; fi
sub=${arg_sub:-${GSVFS_GUEST_SUBDIR:-workspaces/guest9p}}
base=$mnt/$sub
if ! mkdir -p "$base/go" "$base/sh"; then
	echo "guest9p: FAIL: cannot make $base/go and $base/sh"
	exit 1
fi

now() { read -r up _ </proc/uptime; echo "$up"; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1fs", b - a }'; }

# --- busybox checks ---------------------------------------------------------
# They run alongside the Go tests: those mostly wait for round trips,
# these mostly compute (dd, md5sum), and the guest has one CPU.
shchecks() {
	t1=$(now)
	shpass=0 shfail=0
	check() { # check NAME COMMAND...: COMMAND must succeed
		name=$1
		shift
		if out=$("$@" 2>&1); then
			shpass=$((shpass + 1))
		else
			shfail=$((shfail + 1))
			echo "FAIL sh: $name: $(echo "$out" | head -n 5)"
		fi
	}
	same() { # same GOT WANT
		[ "$1" = "$2" ] || { echo "got '$1', want '$2'"; return 1; }
	}
	cd "$base/sh" || return
	check 'echo >' sh -c 'echo hello 9p >hello'
	check 'cat' same "$(cat hello)" 'hello 9p'
	check 'echo >>' sh -c 'echo more >>hello'
	check 'cat after >>' same "$(cat hello)" "$(printf 'hello 9p\nmore')"
	check 'ls -ln' same "$(ls -ln hello | awk '{ print $1, $2, $3, $4, $5, $NF }')" \
		'-rw-r--r-- 1 0 0 14 hello'
	check 'mv' mv hello moved
	check 'mv left no source' same "$(ls)" moved
	check 'mkdir -p' mkdir -p tree/a/b/c
	check 'ln -s' ln -s ../../../../moved tree/a/b/c/link
	check 'cat through a link' same "$(cat tree/a/b/c/link)" "$(cat moved)"
	check 'rm -r' rm -r tree
	check 'rm -r left nothing' same "$(ls)" moved
	# 64 MiB that differ from MiB to MiB: one random MiB, each copy headed
	# by its number (urandom alone is slow under emulation).
	check 'dd 1 MiB of random' dd if=/dev/urandom of=/tmp/r bs=1M count=1
	i=0
	while [ $i -lt 64 ]; do printf 'block %02d\n' $i; cat /tmp/r; i=$((i + 1)); done >/tmp/big
	rm -f /tmp/r
	check 'dd 64 MiB to the mount' dd if=/tmp/big of=big bs=1M conv=fsync
	sum=$(md5sum </tmp/big | cut -d' ' -f1)
	rm -f /tmp/big
	# Through dd: with cache=none every read(2) is one Tread, and md5sum
	# reads 4 KiB at a time (16,384 round trips, seven times slower).
	check 'md5sum of the copy' same "$(dd if=big bs=1M 2>/dev/null | md5sum | cut -d' ' -f1)" "$sum"
	echo "$sum" >big.md5
	echo "$shpass $shfail $(since "$t1")" >/tmp/sh.result
}
shchecks >/tmp/sh.out 2>&1 &
shpid=$!

# --- the Go tests -----------------------------------------------------------
# posixtest's FdLeak counts descriptors in /dev/fd, which the guest lacks.
[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd
t0=$(now)
log=/tmp/guest9p.log
if [ -n "${GSVFS_GUEST_PROC:-}" ]; then
	export GSVFS_GUEST_PROC=$mnt/$GSVFS_GUEST_PROC GSVFS_GUEST_PROC_PIDS=$base/proc.pids \
		GSVFS_GUEST_PROC_OUTPUT GSVFS_GUEST_PROC_RETENTION GSVFS_GUEST_PROC_SECRET
fi
GSVFS_GUEST_DIR=$base/go GSVFS_GUEST_SERVER=${GSVFS_GUEST_SERVER:-} \
	"$bin" -test.v -test.parallel 16 -test.timeout 5m >"$log" 2>&1
gorc=$?
gotime=$(since "$t0")
cp "$log" "$base/guest9p.log" 2>/dev/null
npass=$(grep -c -e '--- PASS' "$log")
nfail=$(grep -c -e '--- FAIL' "$log")
nskip=$(grep -c -e '--- SKIP' "$log")
# The -test.v log, by test: "--- RESULT: name" lines give the results and
# "=== RUN|CONT|NAME name" headers say whose output follows. Printed: each
# skip with its reason, and every failed test's output.
awk -v failed="$gorc" '
/^=== (RUN|CONT|NAME|PAUSE) / { cur = $3; next }
$1 == "---" && ($2 == "PASS:" || $2 == "FAIL:" || $2 == "SKIP:") {
	res[$3] = substr($2, 1, 4); order[++n] = $3; next
}
cur != "" { out[cur] = out[cur] $0 "\n"; next }
{ loose = loose $0 "\n" }
END {
	for (i = 1; i <= n; i++) {
		name = order[i]
		if (res[name] != "SKIP") continue
		why = out[name]; sub(/\n.*/, "", why)
		sub(/^[ \t]+[^ ]+\.go:[0-9]+: /, "", why); sub(/^SKIPPED: /, "", why)
		printf "  skip %s: %s\n", name, substr(why, 1, 160)
	}
	if (failed == 0) exit
	print "--- Go test failures ---"
	for (i = 1; i <= n; i++) {
		name = order[i]
		if (res[name] == "FAIL") printf "--- FAIL: %s\n%s", name, out[name]
	}
	printf "%s", loose
}' "$log" | grep -v -e '^PASS$' -e '^FAIL$' | head -n 200 | cut -c1-300
if [ "$gorc" != 0 ]; then echo "(full log: $base/guest9p.log)"; fi

wait "$shpid"
cat /tmp/sh.out
read -r shpass shfail shtime </tmp/sh.result 2>/dev/null

# --- summary ----------------------------------------------------------------
status=PASS
if [ "$gorc" != 0 ] || [ "$nfail" != 0 ] || [ "$npass" = 0 ] ||
	[ "${shfail:-1}" != 0 ] || [ "${shpass:-0}" = 0 ]; then
	status=FAIL
fi
echo "guest9p: go tests: $npass passed, $nfail failed, $nskip skipped (exit $gorc, $gotime)"
echo "guest9p: busybox checks: ${shpass:-?} passed, ${shfail:-?} failed (${shtime:-did not finish})"
echo "guest9p: $status"
[ "$status" = PASS ]
