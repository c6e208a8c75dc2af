#!/bin/sh
# guest.sh - the vm9p guest's side of TestIntegrityFsxKernel9P (cmd/gsvfs):
# runs the model checker fsx (internal/fsmodel/fsx, built static) on a file
# of the kernel's 9P mount, plain, then with the second actor on the host
# (the test answers fsx's requests in workspaces/fsx/ask, changing the file
# on the served disk). $VM9P_FILES/guestfsx/ holds fsx and fsx.env, which
# sets FSX_SEED, FSX_OPS, FSX_ACTOR_OPS and FSX_REPLAY. Prints fsx's summaries or
# failure, then "guestfsx: PASS" or "guestfsx: FAIL"; exit status 0 means
# PASS.
#
# The actor's run leaves mappings out: with cache=mmap the guest's kernel
# keeps the pages of a mapping it made, and reads through them, after the
# file changed on the server; no server's answer can make them true (the
# same seeds fail the same way on diod). Without a cache v9fs refuses
# shared mappings of a file open for writing, so the plain run's mappings
# need cache=mmap, and the mount is one for both runs.
files=${VM9P_FILES:-/vm9p/files}/guestfsx
mnt=${VM9P_MNT:-/mnt/9p}
. "$files/fsx.env"
dir=$mnt/workspaces/fsx
if ! mkdir -p "$dir"; then
	echo "guestfsx: FAIL: cannot make $dir"
	exit 1
fi
if "$files/fsx" -file "$dir/f" -seed "$FSX_SEED" -ops "$FSX_OPS" -replay "$FSX_REPLAY" &&
	"$files/fsx" -file "$dir/g" -ask "$dir/ask" -seed "$FSX_SEED" -ops "$FSX_ACTOR_OPS" -replay "$FSX_REPLAY" \
		-without mapread,mapwrite -why "v9fs's cache=mmap keeps a mapping's pages across another's change to the file (diod's mount shows the same)"; then
	echo "guestfsx: PASS"
	exit 0
fi
echo "guestfsx: FAIL"
exit 1
