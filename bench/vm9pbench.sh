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
export LC_ALL=C

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
vm9p=${VM9P_RUN:-$repo/../shared/tools/vm9p/run}

if [[ ${BENCH_QUICK:-0} == 1 ]]; then
	RUNS=${BENCH_RUNS:-1}
	SIZE_MB=${BENCH_SIZE_MB:-64}
else
	RUNS=${BENCH_RUNS:-3}
	SIZE_MB=${BENCH_SIZE_MB:-256}
fi
NFILES=${BENCH_FILES:-1000}
for v in RUNS SIZE_MB NFILES; do
	if ! [[ ${!v} =~ ^[1-9][0-9]*$ ]]; then
		echo "vm9pbench: $v must be a positive integer, not '${!v}'" >&2
		exit 2
	fi
done

log() { printf 'vm9pbench: %s\n' "$*" >&2; }

[[ -x $vm9p ]] || { log "no vm9p run script at $vm9p (set VM9P_RUN)"; exit 1; }

# ---------------------------------------------------------------- state

work=
declare -A PID SOCK  # server name -> pid, socket
declare -A OPTS      # target -> vm9p run arguments
declare -A SUBDIR    # target -> directory under the mount to work in
declare -A MSIZE     # target -> msize the guest's mount shows
declare -A VALS ERRS # "metric|target" -> run values / failure
PROBLEMS=()
SKIPPED=()
ACTIVE=()
declare -A TLABEL=([diod]=diod [gsvfs]=gsvfs [gsvfs64]="gsvfs 64K")

METRICS=(write_MBps read_MBps ls_s)
declare -A MLABEL MUNIT MKIND
size_label="${SIZE_MB} MiB"
MLABEL=([write_MBps]="dd write $size_label conv=fsync" [read_MBps]="dd read $size_label, caches dropped"
	[ls_s]="ls -l of $NFILES files, caches dropped")
MUNIT=([write_MBps]=MB/s [read_MBps]=MB/s [ls_s]=s)
MKIND=([write_MBps]=thr [read_MBps]=thr [ls_s]=time)

wait_gone() {
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.1
	done
	return 1
}

stop_server() {
	local pid=${PID[$1]-}
	[[ -n $pid ]] || return 0
	kill "$pid" 2>/dev/null || true
	wait_gone "$pid" 10 || { log "$1 (pid $pid) ignored SIGTERM; killing it"; kill -9 "$pid" 2>/dev/null || true; }
	wait "$pid" 2>/dev/null || true
	unset "PID[$1]"
}

cleanup() {
	local rc=$? s
	set +e
	trap - EXIT INT TERM
	for s in "${!PID[@]}"; do stop_server "$s"; done
	if [[ -n $work && -d $work ]]; then
		if [[ ${BENCH_KEEP:-0} == 1 ]]; then log "kept $work"; else rm -rf "$work"; fi
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

start_server() { # NAME LOG COMMAND...
	local name=$1 logf=$2 i
	shift 2
	"$@" >"$logf" 2>&1 &
	PID[$name]=$!
	for ((i = 0; i < 100; i++)); do
		[[ -S ${SOCK[$name]} ]] && return 0
		kill -0 "${PID[$name]}" 2>/dev/null || break
		sleep 0.1
	done
	log "$name did not come up on ${SOCK[$name]}; its output:"
	cat "$logf" >&2
	stop_server "$name"
	return 1
}

make_files() { # DIR: the ls -l directory, made on the host
	local i
	mkdir -p "$1/ls"
	for ((i = 0; i < NFILES; i++)); do printf '%d\n' "$i" >"$1/ls/f$i"; done
}

median() {
	tr ' ' '\n' <<<"$1" | grep -v '^$' | sort -g |
		awk '{ a[NR] = $1 } END { if (NR == 0) exit 1; if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
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
	[[ -n $w ]] && VALS["write_MBps|$t"]+="$(awk -v s="$w" -v b="$((SIZE_MB * 1048576))" 'BEGIN { printf "%.1f", b / s / 1e6 }') "
	[[ -n $rd ]] && VALS["read_MBps|$t"]+="$(awk -v s="$rd" -v b="$((SIZE_MB * 1048576))" 'BEGIN { printf "%.1f", b / s / 1e6 }') "
	[[ -n $v ]] && VALS["ls_s|$t"]+="$v "
	log "  -> msize ${MSIZE[$t]}, write ${w:-?} s, read ${rd:-?} s, ls -l ${v:-?} s"
}

# ---------------------------------------------------------------- setup

load_start=$(cut -d' ' -f1-3 /proc/loadavg)
base=${BENCH_TMP:-/tmp}
work=$(mktemp -d "$base/vm9pbench.XXXXXX")
fstype=$(findmnt -n -o FSTYPE -T "$work" 2>/dev/null || stat -f -c %T "$work")
log "work directory $work ($fstype)"
uname=$(id -un)

cd "$repo"
log "building bin/gsvfs"
make -s build

diod_version=-
if command -v diod >/dev/null; then
	diod_version=$(dpkg-query -W -f='${Version}' diod 2>/dev/null || echo "?")
	mkdir "$work/diod.export"
	make_files "$work/diod.export"
	SOCK[diod]=$work/diod.sock
	if start_server diod "$work/diod.out" \
		diod -f -n -e "$work/diod.export" -l "${SOCK[diod]}" -c /dev/null -L "$work/diod.log"; then
		OPTS[diod]="--socket ${SOCK[diod]} --opts aname=$work/diod.export,uname=$uname"
		SUBDIR[diod]=.
		ACTIVE+=(diod)
		log "diod $diod_version serving $work/diod.export (pid ${PID[diod]})"
	else
		PROBLEMS+=("diod did not start")
	fi
else
	SKIPPED+=("diod is not installed (Debian package diod): no diod column, no ratios")
fi

gsvfs_version=$(git -C "$repo" describe --tags --always --dirty 2>/dev/null || echo dev)
mkdir -p "$work/gs.state"
SOCK[gsvfs]=$work/gs.sock
if start_server gsvfs "$work/gs.log" \
	"$repo/bin/gsvfs" serve --root "$work/gs.state" --listen "unix:${SOCK[gsvfs]}"; then
	make_files "$work/gs.state/workspaces"
	OPTS[gsvfs]="--socket ${SOCK[gsvfs]} --msize 1048576 --opts uname=$uname"
	OPTS[gsvfs64]="--socket ${SOCK[gsvfs]} --msize 65536 --opts uname=$uname"
	SUBDIR[gsvfs]=workspaces SUBDIR[gsvfs64]=workspaces
	ACTIVE+=(gsvfs gsvfs64)
	log "gsvfs $gsvfs_version serving $work/gs.state (pid ${PID[gsvfs]})"
else
	PROBLEMS+=("gsvfs serve did not start")
fi
((${#ACTIVE[@]})) || { log "no server to measure"; exit 1; }
for t in "${ACTIVE[@]}"; do guest_script "${SUBDIR[$t]}" >"$work/guest.$t.sh"; done

# ---------------------------------------------------------------- runs

for ((r = 1; r <= RUNS; r++)); do
	n=${#ACTIVE[@]}
	for ((i = 0; i < n; i++)); do run_one "${ACTIVE[(i + r - 1) % n]}" "$r"; done
done
for s in "${!PID[@]}"; do
	kill -0 "${PID[$s]}" 2>/dev/null || PROBLEMS+=("$s exited during the runs")
done
if [[ -f $work/gs.log ]]; then
	n=$(grep -ciE 'level=(error|warn)|panic|fatal' "$work/gs.log" || true)
	if [[ $n != 0 ]]; then
		PROBLEMS+=("$n error/warning lines in the gsvfs log, the first: $(grep -m1 -iE 'level=(error|warn)|panic|fatal' "$work/gs.log" | cut -c1-200)")
	fi
fi

# ---------------------------------------------------------------- report

cell_value() {
	if [[ -n ${ERRS["$1|$2"]-} ]]; then echo err
	elif [[ -n ${VALS["$1|$2"]-} ]]; then median "${VALS["$1|$2"]}"
	else echo -; fi
}
fmt_value() {
	case $2 in err | -) echo "$2" ;;
	*) if [[ ${MUNIT[$1]} == s ]]; then printf '%.2f\n' "$2"; else printf '%.1f\n' "$2"; fi ;;
	esac
}
isnum() { [[ $1 =~ ^[0-9.]*[0-9][0-9.]*(e[+-]?[0-9]+)?$ ]]; }
ratio() { # METRIC TARGET: target / diod
	local d v
	d=$(cell_value "$1" diod)
	v=$(cell_value "$1" "$2")
	if isnum "$d" && isnum "$v" && awk -v d="$d" 'BEGIN { exit !(d > 0) }'; then
		if [[ ${MKIND[$1]} == thr ]]; then awk -v a="$v" -v b="$d" 'BEGIN { printf "%.2fx\n", a / b }'
		else awk -v a="$v" -v b="$d" 'BEGIN { printf "%.2fx time\n", a / b }'; fi
	else
		echo -
	fi
}
msize_label() {
	local m=${MSIZE[$1]-}
	if [[ -z $m ]]; then echo "${TLABEL[$1]}"; return; fi
	if ((m % 1048576 == 0)); then m="$((m / 1048576))M"; elif ((m % 1024 == 0)); then m="$((m / 1024))K"; fi
	echo "${TLABEL[$1]} (msize $m)"
}

table=$work/table.tsv
{
	printf 'workload\tunit\t%s\t%s\tgsvfs/diod\t%s\t64K/diod\n' "$(msize_label diod)" "$(msize_label gsvfs)" "$(msize_label gsvfs64)"
	for m in "${METRICS[@]}"; do
		printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "${MLABEL[$m]}" "${MUNIT[$m]}" \
			"$(fmt_value "$m" "$(cell_value "$m" diod)")" \
			"$(fmt_value "$m" "$(cell_value "$m" gsvfs)")" "$(ratio "$m" gsvfs)" \
			"$(fmt_value "$m" "$(cell_value "$m" gsvfs64)")" "$(ratio "$m" gsvfs64)"
	done
} >"$table"

header=(
	"gsvfs $gsvfs_version serve vs diod $diod_version through the Linux v9fs client in a qemu guest (vm9p, trans=fd, cache=none)"
	"$(date -u '+%Y-%m-%d %H:%M UTC'), host Linux $(uname -r), $(nproc) CPUs; servers' work dir on $fstype ($base)"
	"median of $RUNS VM run(s) per target; msize offered 1M to diod and gsvfs, 64K to gsvfs 64K"
	"load average (1/5/15 min) $load_start at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end"
	"ratios are gsvfs/diod: throughput higher is better, time lower is better"
)
echo
printf '%s\n' "${header[@]}"
echo
awk -F'\t' '
	{ for (i = 1; i <= NF; i++) { c[NR, i] = $i; if (length($i) > w[i]) w[i] = length($i) } n = NF }
	END {
		for (r = 1; r <= NR; r++) {
			line = ""
			for (i = 1; i <= n; i++) {
				pad = (i <= 2) ? sprintf("%-" w[i] "s", c[r, i]) : sprintf("%" w[i] "s", c[r, i])
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
	}' "$table"
echo
if ((${#SKIPPED[@]})); then echo "Skipped:"; printf '  - %s\n' "${SKIPPED[@]}"; fi
if ((${#PROBLEMS[@]})); then echo "Problems seen:"; printf '  - %s\n' "${PROBLEMS[@]}"; fi

if [[ -n ${BENCH_OUT:-} ]]; then
	{
		echo "# gsvfs 9P benchmark (Linux v9fs client in a qemu guest)"
		echo
		printf -- '- %s\n' "${header[@]}"
		echo
		awk -F'\t' '
			{ line = "|"; for (i = 1; i <= NF; i++) line = line " " $i " |"; print line
			  if (NR == 1) { line = "|"; for (i = 1; i <= NF; i++) line = line (i <= 2 ? " --- |" : " ---: |"); print line } }' "$table"
		if ((${#SKIPPED[@]})); then echo; printf -- '- skipped: %s\n' "${SKIPPED[@]}"; fi
		if ((${#PROBLEMS[@]})); then echo; printf -- '- problem: %s\n' "${PROBLEMS[@]}"; fi
	} >"$BENCH_OUT"
	log "wrote $BENCH_OUT"
fi
