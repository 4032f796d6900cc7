#!/usr/bin/env bash
# ior.sh: IOR (2 ranks, POSIX, file per process) bare and under datacrumbs (io_posix.lua in
# trace and profile mode, io_all.lua), bpftrace (a syscall-tracepoint pair on read/write),
# Darshan and Darshan DXT, side by side in one invocation, as ratios of IOR's own time to
# the bare run's, round after round. Builds IOR and Darshan from source into $WORK (outside
# git). What each number means: README.md ("IOR against Darshan").
# Run as root: bench/ior.sh [--build-only] [IOR_SRC DARSHAN_SRC]
#
# Knobs (environment):
#   IOR_SRC, DARSHAN_SRC  source trees of IOR and Darshan (default $WORK/src/ior and
#                  $WORK/src/darshan); nothing of either is committed; when absent the
#                  script says how to get them
#   WORK=bench/work       builds, data files, traces, logs (gitignored)
#   ROUNDS=5       rounds of every variant, in alternation
#   XFERS="4k 1m"  IOR transfer sizes (-t); BLOCK_4k=128m BLOCK_1m=64m: -b per rank
#   NP=2           MPI ranks
#   VARIANTS="bare dc_posix dc_prof dc_all bpftrace darshan dxt" (also: dc_live, dc_posix
#                  decoding while IOR runs (--no-spool), as before the spool; dc_floor, datacrumbs
#                  tracing one syscall IOR never makes, bench/floor.lua: the cost of our
#                  tracepoint pair alone; floor, bpftrace's raw_syscalls pair that returns at once;
#                  dc_defer, dc_posix with DATACRUMBS_DEFER=64: docs/install.md)
#   DATACRUMBS=build/datacrumbs
#   DATACRUMBS_ALT=PATH  another datacrumbs (e.g. an earlier commit's build): the variants
#                  dc_posix_alt, dc_prof_alt, dc_all_alt run it, in the same rounds
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
WORK=${WORK:-$here/work}
IOR_SRC=${IOR_SRC:-$WORK/src/ior}
DARSHAN_SRC=${DARSHAN_SRC:-$WORK/src/darshan}
DC=${DATACRUMBS:-$root/build/datacrumbs}
ROUNDS=${ROUNDS:-5}
XFERS=${XFERS:-"4k 1m"}
BLOCK_4k=${BLOCK_4k:-128m}
BLOCK_1m=${BLOCK_1m:-64m}
NP=${NP:-2}
VARIANTS=${VARIANTS:-"bare dc_posix dc_prof dc_all bpftrace darshan dxt"}
BUILD_ONLY=0
srcs=()
for a in "$@"; do
	case $a in
	--build-only) BUILD_ONLY=1 ;;
	-*) echo "usage: ior.sh [--build-only] [IOR_SRC DARSHAN_SRC] (knobs: see the top of this file)" >&2; exit 2 ;;
	*) srcs+=("$a") ;;
	esac
done
case ${#srcs[@]} in
0) ;;
2) IOR_SRC=${srcs[0]} DARSHAN_SRC=${srcs[1]} ;;
*) echo "ior.sh: give both source trees, IOR's and Darshan's, or neither" >&2; exit 2 ;;
esac

die() { echo "ior.sh: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "needs root (BPF)"

# bench-only Debian packages (bench/README.md): MPI and the autotools for IOR and Darshan
need=()
for p in openmpi-bin libopenmpi-dev autoconf automake libtool make zlib1g-dev bpftrace \
	bpftool time; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
	echo "ior.sh: installing ${need[*]}"
	apt-get install -y --no-install-recommends "${need[@]}" >/dev/null ||
		die "cannot install ${need[*]}"
fi

howto() {
	cat >&2 <<EOF
ior.sh: no $1 source in $2. Get it (nothing of it is committed), e.g.
  git clone https://github.com/$3 $2
or from a bare git directory of it:
  mkdir -p $2 && git --git-dir=DIR archive HEAD | tar -x -C $2
then run again (or set $4=DIR).
EOF
	exit 1
}
[ -f "$IOR_SRC/configure.ac" ] || howto IOR "$IOR_SRC" hpc/ior IOR_SRC
[ -f "$DARSHAN_SRC/darshan-runtime/configure.ac" ] ||
	howto Darshan "$DARSHAN_SRC" darshan-hpc/darshan DARSHAN_SRC

mkdir -p "$WORK"
IOR=$WORK/ior/bin/ior
LIBDARSHAN=$WORK/darshan/lib/libdarshan.so
if [ ! -x "$IOR" ]; then
	echo "ior.sh: building IOR from $IOR_SRC into $WORK/ior"
	rm -rf "$WORK/build-ior" && cp -a "$IOR_SRC" "$WORK/build-ior"
	(cd "$WORK/build-ior" && ./bootstrap && ./configure --prefix="$WORK/ior" MPICC=mpicc &&
		make -j2 && make install) >"$WORK/build-ior.log" 2>&1 ||
		die "IOR build failed: $WORK/build-ior.log"
fi
if [ ! -f "$LIBDARSHAN" ]; then
	echo "ior.sh: building Darshan (runtime) from $DARSHAN_SRC into $WORK/darshan"
	rm -rf "$WORK/build-darshan" && cp -a "$DARSHAN_SRC" "$WORK/build-darshan"
	(cd "$WORK/build-darshan" && ./prepare.sh && ./configure --prefix="$WORK/darshan" \
		--disable-darshan-util --with-log-path-by-env=DARSHAN_LOG_DIR_PATH \
		--with-jobid-env=NONE CC=mpicc RUNTIME_CC=mpicc && make -j2 && make install) \
		>"$WORK/build-darshan.log" 2>&1 || die "Darshan build failed: $WORK/build-darshan.log"
fi
[ "$BUILD_ONLY" = 1 ] && { echo "ior.sh: built $IOR and $LIBDARSHAN"; exit 0; }

[ -x "$DC" ] || die "no $DC: build first (cmake --build build)"
command -v bpftrace >/dev/null || die "no bpftrace"
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing ||
	die "cannot mount tracefs (bpftrace needs it)"
export DATACRUMBS_SCRIPT_PATH=${DATACRUMBS_SCRIPT_PATH:-$root/scripts}
OUT=$WORK/out
rm -rf "$OUT" "$WORK/data"
mkdir -p "$OUT" "$WORK/data"
RES=$OUT/results.txt
: >"$RES"
MPIRUN=("$(readlink -f "$(command -v mpirun)")" --allow-run-as-root --oversubscribe --bind-to none -np "$NP")
# bpftrace's peer: the minimal timing tracer on the syscall tracepoints of read and write
# (entry timestamp by tid, a histogram of the duration at exit), for IOR's ranks only
BT_PROG='tracepoint:syscalls:sys_enter_write,tracepoint:syscalls:sys_enter_read
/comm == "ior"/ { @s[tid] = nsecs }
tracepoint:syscalls:sys_exit_write,tracepoint:syscalls:sys_exit_read
/@s[tid]/ { @t = hist(nsecs - @s[tid]); delete(@s[tid]); }'
# The floor of any tracer on the syscall tracepoints: a program on raw_syscalls sys_enter
# and sys_exit (every system call of every process, as datacrumbs' SYSCALL and POSIX
# layers) that returns at once (a pid no process has)
FLOOR_PROG='tracepoint:raw_syscalls:sys_enter /pid == 0/ { @e = count() }
tracepoint:raw_syscalls:sys_exit /pid == 0/ { @x = count() }'

# What else is attached: BPF links and perf-event programs of anyone, other tracers'
# processes. Printed before every run (others work on this machine).
others() {
	local links tps procs
	links=$(bpftool link list 2>/dev/null | grep -c '^[0-9]*:' || true)
	tps=$(bpftool perf list 2>/dev/null | grep -c . || true)
	procs=$(for p in datacrumbs bpftrace perf strace; do pgrep -x "$p"; done | paste -sd, -)
	echo "links=$links perf=$tps tracers=${procs:-none}"
}

# IOR's own time of a run's output: the sum of the write and read rows' total(s) column
iortime() {
	awk '/^Results:/ { r = 1 } r && ($1 == "write" || $1 == "read") && NF >= 10 { t += $10; n++ }
	     /^Summary of all tests/ { r = 0 }
	     END { if (n < 2) exit 1; printf "%.6f\n", t }' "$1"
}

# run VARIANT XFER ROUND: one IOR run under VARIANT; one result line into $RES
run() {
	local v=$1 x=$2 rd=$3 blk dir log t trace="" ev="-" lost="-" other t0 wall
	blk=BLOCK_$x
	blk=${!blk}
	dir=$WORK/data/$v-$x-$rd
	mkdir -p "$dir"
	log=$OUT/$v-$x-$rd.log
	local ior=("$IOR" -a POSIX -F -t "$x" -b "$blk" -w -r -o "$dir/ior.dat")
	other=$(others)
	t0=$(date +%s.%N) # the whole wall time: the launcher's start to the trace (or log) closed
	case $v in
	bare) /usr/bin/time -f "%M" -o "$OUT/rss" "${MPIRUN[@]}" "${ior[@]}" >"$log" 2>&1 ;;
	dc_posix | dc_live | dc_prof | dc_all | dc_floor | dc_defer | dc_posix_alt | dc_prof_alt | \
		dc_all_alt)
		local script=io_posix.lua mode=() dc=$DC defer=${DATACRUMBS_DEFER:-0}
		case $v in *_alt) dc=${DATACRUMBS_ALT:?"$v needs DATACRUMBS_ALT"} ;; esac
		case $v in dc_all*) script=io_all.lua ;; esac
		case $v in dc_floor) script=$here/floor.lua ;; dc_defer) defer=64 ;; esac
		case $v in dc_prof*) mode=(--mode profile) ;; dc_live | dc_defer) mode=(--no-spool) ;; esac
		trace=$OUT/$v-$x-$rd.pfw.gz
		DATACRUMBS_DEFER=$defer /usr/bin/time -f "%M" -o "$OUT/rss" "$dc" run "$script" \
			"${mode[@]}" --no-status \
			-o "$trace" -- "${MPIRUN[@]}" "${ior[@]}" >"$log" 2>&1 ;;
	bpftrace | floor)
		local prog=$BT_PROG
		[ "$v" = floor ] && prog=$FLOOR_PROG
		/usr/bin/time -f "%M" -o "$OUT/rss" bpftrace -e "$prog" \
			-c "${MPIRUN[*]} ${ior[*]}" >"$log" 2>&1 ;;
	darshan | dxt)
		local dxt=()
		[ "$v" = dxt ] && dxt=(-x DXT_ENABLE_IO_TRACE=1)
		mkdir -p "$OUT/darshan-$v-$x-$rd"
		/usr/bin/time -f "%M" -o "$OUT/rss" "${MPIRUN[@]}" -x LD_PRELOAD="$LIBDARSHAN" \
			-x DARSHAN_LOG_DIR_PATH="$OUT/darshan-$v-$x-$rd" "${dxt[@]}" "${ior[@]}" \
			>"$log" 2>&1 ;;
	*) die "unknown variant $v" ;;
	esac
	wall=$(echo "$(date +%s.%N) - $t0" | bc)
	t=$(iortime "$log") || die "$v: no IOR result in $log: $(tail -5 "$log")"
	if [ -n "$trace" ]; then
		read -r ev lost < <(zcat "$trace" | tail -n 2 | python3 -c 'import json, sys
a = json.loads(sys.stdin.readline())["args"]
print(a["num_events"], a["lost"])')
	fi
	echo "variant=$v xfer=$x round=$rd ior_s=$t wall_s=$wall events=$ev lost=$lost maxrss_kb=$(tail -1 "$OUT/rss") $other" |
		tee -a "$RES"
	rm -rf "$dir"
}

echo "ior.sh: $ROUNDS rounds of: $VARIANTS; IOR -a POSIX -F -w -r, $NP ranks; before each run: $(others)"
bpftool link list 2>/dev/null | sed 's/^/  attached: /' | grep -E '^  attached: [0-9]+:' || true
for x in $XFERS; do
	for rd in $(seq 1 "$ROUNDS"); do
		for v in $VARIANTS; do
			run "$v" "$x" "$rd"
		done
	done
done
python3 "$here/ior_summary.py" "$RES"
