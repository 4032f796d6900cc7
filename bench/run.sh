#!/usr/bin/env bash
# run.sh: datacrumbs' cost measured side by side with bpftrace and with no tracer, in one
# invocation, as ratios; then the user side's event throughput and loss, and peak memory.
# What each number means: README.md. Run as root: bench/run.sh (about 2-3 minutes on an idle machine).
#
# Knobs (environment):
#   N=20000        loop iterations per overhead run (2 traced calls each)
#   ROUNDS=7       rounds of {bare, bpftrace, datacrumbs nocb.lua, datacrumbs io_posix.lua}
#   TP_N=50000     loop iterations per process in the throughput runs
#   TP_CONFIGS="1:16M 2:16M 4:16M 2:1M 2:256K 2:64K"   PROCS:BUFFER per throughput run
#   OUT=/tmp/datacrumbs-bench   work directory (traces, raw results)
#   DATACRUMBS=build/datacrumbs  the tracer
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
DC=${DATACRUMBS:-$root/build/datacrumbs}
N=${N:-20000}
ROUNDS=${ROUNDS:-7}
TP_N=${TP_N:-50000}
TP_CONFIGS=${TP_CONFIGS:-"1:16M 2:16M 4:16M 2:1M 2:256K 2:64K"}
OUT=${OUT:-/tmp/datacrumbs-bench}

die() { echo "run.sh: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "needs root (uprobes)"
[ -x "$DC" ] || die "no $DC: build first (cmake --build build)"
command -v cc >/dev/null || die "no C compiler (cc)"
command -v bpftrace >/dev/null || die "no bpftrace (Debian package bpftrace)"
command -v python3 >/dev/null || die "no python3"
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing ||
	die "cannot mount tracefs (bpftrace needs it)"

rm -rf "$OUT"
mkdir -p "$OUT"
RES=$OUT/results.txt
: >"$RES"
cc -O2 -Wall -o "$OUT/loop" "$here/loop.c"
head -c 4096 /dev/urandom >"$OUT/small"
LIBC=$(ldd "$OUT/loop" | awk '$1 == "libc.so.6" { print $3 }')
[ -f "$LIBC" ] || die "cannot find the loop's libc.so.6"
export DATACRUMBS_SCRIPT_PATH=${DATACRUMBS_SCRIPT_PATH:-$root/scripts}

# bpftrace's peer of datacrumbs' entry+return probes: a timestamp at entry, a histogram
# of the duration at return, on the same two libc functions, only for the loop (cpid).
BT_PROG=""
for f in write pread; do
	BT_PROG+="uprobe:$LIBC:$f /pid == cpid/ { @s[tid] = nsecs }
uretprobe:$LIBC:$f /pid == cpid && @s[tid]/ { @t = hist(nsecs - @s[tid]); delete(@s[tid]); }
"
done

now() { date +%s%N; }

# Runs "$@" and prints the peak RSS (KiB) of it and its reaped children to $OUT/rss.
peak() {
	if [ -x /usr/bin/time ]; then
		/usr/bin/time -f "%M" -o "$OUT/rss" "$@"
	else
		python3 -c 'import resource, subprocess, sys
r = subprocess.run(sys.argv[2:])
open(sys.argv[1], "w").write("%d\n" % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.exit(r.returncode)' "$OUT/rss" "$@"
	fi
}

# the loop's result line (key=value ...) from a file of mixed output
loopline() { grep -m1 '^calls=' "$1" || die "no result line in $1: $(cat "$1")"; }

# the trace's end record: num_events lost dropped
endrec() {
	zcat "$1" | tail -n 2 | python3 -c 'import json, sys
a = json.loads(sys.stdin.readline())["args"]
print("events=%d lost=%d dropped=%d" % (a["num_events"], a["lost"], a.get("dropped", 0)))'
}

# bare N PROCS
bare() {
	"$OUT/loop" "$1" "$OUT/small" "$2" >"$OUT/bare.out"
	echo "variant=bare round=$R procs=$2 $(loopline "$OUT/bare.out")" >>"$RES"
}

# bt N
bt() {
	local t0 t1
	t0=$(now)
	peak bpftrace -e "$BT_PROG" -c "$OUT/loop $1 $OUT/small" >"$OUT/bt.out" 2>"$OUT/bt.err" ||
		die "bpftrace failed: $(cat "$OUT/bt.err")"
	t1=$(now)
	echo "variant=bpftrace round=$R procs=1 $(loopline "$OUT/bt.out") t0=$t0 t1=$t1" \
		"maxrss_kb=$(cat "$OUT/rss")" >>"$RES"
}

# dc VARIANT SCRIPT N PROCS BUFFER
dc() {
	local t0 t1 tr=$OUT/$1-$R.pfw.gz
	t0=$(now)
	peak "$DC" run -q --buffer-size "$5" "$2" -o "$tr" -- "$OUT/loop" "$3" "$OUT/small" "$4" \
		>"$OUT/dc.out" 2>"$OUT/dc.err" || die "datacrumbs failed: $(cat "$OUT/dc.err")"
	t1=$(now)
	echo "variant=$1 round=$R procs=$4 buffer=$5 $(loopline "$OUT/dc.out") t0=$t0 t1=$t1" \
		"maxrss_kb=$(cat "$OUT/rss") $(endrec "$tr")" >>"$RES"
	rm -f "$tr"
}

others=$(bpftool link list 2>/dev/null | grep -cE '^[0-9]+: (perf_event|uprobe_multi)' || true)
echo "run.sh: $(date -u +%FT%TZ), $(nproc) CPUs, kernel $(uname -r), $(bpftrace --version)"
echo "run.sh: uprobe links attached by others before the start: $others (their uprobes on libc slow every process)"
echo "run.sh: overhead: $ROUNDS rounds of N=$N"
for R in $(seq 1 "$ROUNDS"); do
	bare "$N" 1
	bt "$N"
	dc dc_nocb "$here/nocb.lua" "$N" 1 16M
	dc dc_io_posix io_posix.lua "$N" 1 16M
	bare "$N" 1
	echo "run.sh: round $R done"
done
echo "run.sh: throughput: $TP_CONFIGS (PROCS:BUFFER), TP_N=$TP_N"
R=tp
for c in $TP_CONFIGS; do
	dc dc_cb_tp "$here/cb.lua" "$TP_N" "${c%%:*}" "${c##*:}"
done
echo "run.sh: raw results: $RES"
python3 "$here/summarize.py" "$RES"
