#!/bin/sh
# guest.sh - the vm9p guest's side of TestIntegrityFsxKernel9P (cmd/gsvfs):
# runs the model checker fsx (internal/fsmodel/fsx, built static) on a file
# of the kernel's 9P mount, plain, then with the second actor on the host
# (the test answers fsx's requests in workspaces/fsx/ask, changing the file
# on the served disk). $VM9P_FILES/guestfsx/ holds fsx and fsx.env, which
# sets FSX_SEED, FSX_OPS, FSX_ACTOR_OPS and FSX_REPLAY. Prints fsx's summaries or
# failure, then "guestfsx: PASS" or "guestfsx: FAIL"; exit status 0 means
# PASS.
files=${VM9P_FILES:-/vm9p/files}/guestfsx
mnt=${VM9P_MNT:-/mnt/9p}
. "$files/fsx.env"
dir=$mnt/workspaces/fsx
if ! mkdir -p "$dir"; then
	echo "guestfsx: FAIL: cannot make $dir"
	exit 1
fi
if "$files/fsx" -file "$dir/f" -seed "$FSX_SEED" -ops "$FSX_OPS" -replay "$FSX_REPLAY" &&
	"$files/fsx" -file "$dir/g" -ask "$dir/ask" -seed "$FSX_SEED" -ops "$FSX_ACTOR_OPS" -replay "$FSX_REPLAY"; then
	echo "guestfsx: PASS"
	exit 0
fi
echo "guestfsx: FAIL"
exit 1
