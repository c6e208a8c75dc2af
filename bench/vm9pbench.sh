#!/usr/bin/env bash
# vm9pbench.sh — gsvfs's 9P2000.L server against diod, through the real
# Linux v9fs client: each run boots a throwaway qemu guest with
# ../shared/tools/vm9p/run, which mounts the server's unix socket
# (trans=fd over virtio-serial, cache mode none) and runs a script there:
#
#   dd of 256 MiB (bs=1M conv=fsync) into a new file, then drop the guest's
#   caches and dd it back; drop caches again and `ls -l` a directory of
#   1,000 small files (made on the host, in the server's own directory,
#   before the runs).
#
# Targets: diod (diod -f -n -e EXPORT, mount aname=EXPORT; diod caps msize
# at 64 KiB), gsvfs (gsvfs serve --root STATE --listen unix:SOCK, working in
# /workspaces, msize 1 MiB offered) and gsvfs 64K (msize 64 KiB offered,
# like for like with diod). BENCH_RUNS VMs per target in rotating order;
# prints medians and gsvfs/diod ratios, and markdown to $BENCH_OUT.
#
# There is no KVM here, so the guest runs under qemu's TCG: the figures are
# bound by emulation and by the relay in the guest, and mean something only
# side by side. The first run may apt-install qemu and a kernel (about 35 s).
#
# Environment:
#   BENCH_RUNS=3        VM runs per target (median reported)
#   BENCH_SIZE_MB=256   size of the dd file in MiB
#   BENCH_FILES=1000    files in the ls -l directory
#   BENCH_QUICK=1       smoke run: 64 MiB, 1 run (explicit settings win)
#   BENCH_OUT=FILE      also write the table as markdown to FILE
#   BENCH_TMP=/tmp      where the work directory is made
#   BENCH_KEEP=1        keep the work directory
#   VM9P_RUN=PATH       the vm9p run script (default ../shared/tools/vm9p/run)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=SCRIPTDIR/lib.sh
. "$here/lib.sh" vm9pbench
vm9p=${VM9P_RUN:-$repo/../shared/tools/vm9p/run}

if [[ ${BENCH_QUICK:-0} == 1 ]]; then
	RUNS=${BENCH_RUNS:-1}
	SIZE_MB=${BENCH_SIZE_MB:-64}
else
	RUNS=${BENCH_RUNS:-3}
	SIZE_MB=${BENCH_SIZE_MB:-256}
fi
NFILES=${BENCH_FILES:-1000}
need_counts RUNS SIZE_MB NFILES

[[ -x $vm9p ]] || { log "no vm9p run script at $vm9p (set VM9P_RUN)"; exit 1; }

# ---------------------------------------------------------------- state
# and, from lib.sh, work, VALS, ERRS, PROBLEMS and ninep_state's (MSIZE:
# the msize the guest's mount shows)

ninep_state
on_exit stop_servers
declare -A OPTS   # target -> vm9p run arguments
declare -A SUBDIR # target -> directory under the mount to work in

METRICS=(write_MBps read_MBps ls_s)
declare -A MLABEL MUNIT MKIND
size_label="${SIZE_MB} MiB"
MLABEL=([write_MBps]="dd write $size_label conv=fsync" [read_MBps]="dd read $size_label, caches dropped"
	[ls_s]="ls -l of $NFILES files, caches dropped")
MUNIT=([write_MBps]=MB/s [read_MBps]=MB/s [ls_s]=s)
MKIND=([write_MBps]=thr [read_MBps]=thr [ls_s]=time)

make_files() { # DIR: the ls -l directory, made on the host
	local i
	mkdir -p "$1/ls"
	for ((i = 0; i < NFILES; i++)); do printf '%d\n' "$i" >"$1/ls/f$i"; done
}

# The guest script for one target: busybox sh, cwd the mount root. It
# prints key=value lines; timings use the shell's EPOCHREALTIME.
guest_script() { # SUBDIR
	cat <<EOF
#!/bin/sh
cd '$1' || { echo "error=no directory $1 on the mount"; exit 3; }
sed -n 's/.* 9p .*msize=\([0-9]*\).*/msize=\1/p' /proc/mounts
secs() { awk -v a="\$1" -v b="\$2" 'BEGIN { printf "%.3f", b - a }'; }
drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }
# pid numbers repeat from boot to boot: a name from mktemp, so a failed
# run's leftovers never get in the way
d=\$(mktemp -d -p . vm9pbench.XXXXXX) || { echo "error=mktemp -d failed"; exit 3; }
t0=\$EPOCHREALTIME
dd if=/dev/zero of=\$d/big bs=1M count=$SIZE_MB conv=fsync 2>/dev/null || { echo "error=dd write failed"; exit 4; }
t1=\$EPOCHREALTIME
echo "write_s=\$(secs \$t0 \$t1)"
[ "\$(stat -c %s \$d/big)" = $((SIZE_MB * 1048576)) ] || { echo "error=big has \$(stat -c %s \$d/big) bytes"; exit 4; }
drop
t0=\$EPOCHREALTIME
dd if=\$d/big of=/dev/null bs=1M 2>/dev/null || { echo "error=dd read failed"; exit 4; }
t1=\$EPOCHREALTIME
echo "read_s=\$(secs \$t0 \$t1)"
rm \$d/big && rmdir \$d || echo "error=cleanup failed"
drop
t0=\$EPOCHREALTIME
n=\$(ls -l ls | grep -c '^-')
t1=\$EPOCHREALTIME
echo "ls_s=\$(secs \$t0 \$t1)"
[ "\$n" = $NFILES ] || echo "error=ls -l listed \$n files, want $NFILES"
EOF
}

run_one() { # TARGET RUN
	local t=$1 r=$2 out v w rd
	log "${TLABEL[$t]}, VM run $r/$RUNS"
	# shellcheck disable=SC2086
	if ! out=$("$vm9p" ${OPTS[$t]} --timeout 900 "$work/guest.$t.sh" 2>"$work/vm.err"); then
		tail -20 "$work/vm.err" >&2
		log "FAILED: ${TLABEL[$t]}, run $r"
		PROBLEMS+=("the VM run failed on ${TLABEL[$t]} (run $r): $(grep -m1 '^error=' <<<"$out" || tail -1 "$work/vm.err")")
		for v in "${METRICS[@]}"; do ERRS["$v|$t"]=1; done
		return 0
	fi
	if grep -q '^error=' <<<"$out"; then
		PROBLEMS+=("${TLABEL[$t]} (run $r): $(grep '^error=' <<<"$out" | tr '\n' ' ')")
	fi
	MSIZE[$t]=$(sed -n 's/^msize=//p' <<<"$out")
	w=$(sed -n 's/^write_s=//p' <<<"$out")
	rd=$(sed -n 's/^read_s=//p' <<<"$out")
	v=$(sed -n 's/^ls_s=//p' <<<"$out")
	[[ -n $w ]] && record write_MBps "$t" "$(mbps $((SIZE_MB * 1048576)) "$w")"
	[[ -n $rd ]] && record read_MBps "$t" "$(mbps $((SIZE_MB * 1048576)) "$rd")"
	[[ -n $v ]] && record ls_s "$t" "$v"
	log "  -> msize ${MSIZE[$t]}, write ${w:-?} s, read ${rd:-?} s, ls -l ${v:-?} s"
}

# ---------------------------------------------------------------- setup

make_workdir
uname=$(id -un)

cd "$repo"
log "building bin/gsvfs"
make -s build

start_diod "no diod column, no ratios"
if up diod; then
	make_files "$work/diod.export"
	OPTS[diod]="--socket ${SOCK[diod]} --opts aname=$work/diod.export,uname=$uname"
	SUBDIR[diod]=.
	ACTIVE+=(diod)
fi
start_gsvfs
if up gsvfs; then
	make_files "$work/gs.state/workspaces"
	OPTS[gsvfs]="--socket ${SOCK[gsvfs]} --msize 1048576 --opts uname=$uname"
	OPTS[gsvfs64]="--socket ${SOCK[gsvfs]} --msize 65536 --opts uname=$uname"
	SUBDIR[gsvfs]=workspaces SUBDIR[gsvfs64]=workspaces
	ACTIVE+=(gsvfs gsvfs64)
fi
((${#ACTIVE[@]})) || { log "no server to measure"; exit 1; }
for t in "${ACTIVE[@]}"; do guest_script "${SUBDIR[$t]}" >"$work/guest.$t.sh"; done

# ---------------------------------------------------------------- runs

rotate_runs run_one
check_servers 0

# ---------------------------------------------------------------- report

fmt_value() { # METRIC VALUE
	if [[ ${MUNIT[$1]} == s ]]; then fmt_num 2 "$2"; else fmt_num 1 "$2"; fi
}

ninep_table
header=(
	"gsvfs $gsvfs_version serve vs diod $diod_version through the Linux v9fs client in a qemu guest (vm9p, trans=fd, cache=none)"
	"$(now_utc), host $(machine_desc); servers' work dir on $disk_desc"
	"median of $RUNS VM run(s) per target; msize offered 1M to diod and gsvfs, 64K to gsvfs 64K"
	"$(load_desc)"
	"ratios are gsvfs/diod: throughput higher is better, time lower is better"
)
ninep_report "gsvfs 9P benchmark (Linux v9fs client in a qemu guest)"
