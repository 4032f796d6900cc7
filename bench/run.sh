#!/usr/bin/env bash
# run.sh: datacrumbs' cost measured side by side with bpftrace and with no tracer, in one
# invocation, as ratios: the POSIX layer (uprobes) against bpftrace's uprobes, the SYSCALL
# layer (raw_syscalls tp_btf) against bpftrace's syscall tracepoints and against the POSIX
# layer; profile mode against trace mode on both; then the user side's event throughput and loss, and peak memory.
# What each number means: README.md. Run as root: bench/run.sh (about 1.5 minutes here).
#
# Knobs (environment):
#   N=20000        loop iterations per uprobe run (2 traced calls each)
#   SYS_N=50000    loop iterations per syscall-tracepoint run (a traced call is ~10x cheaper;
#                  2 x SYS_N records of 136 bytes must fit the 16 MiB ring buffer)
#   ROUNDS=7       rounds of {bare, bpftrace, datacrumbs nocb.lua, datacrumbs io_posix.lua,
#                  nocb.lua in profile mode, bare; bare, bpftrace tracepoints, datacrumbs
#                  sys.lua, sys.lua in profile mode, bare}
#   TP_N=50000     loop iterations per process in the throughput runs
#   TP_CONFIGS="1:16M 2:16M 4:16M 2:1M 2:256K 2:64K"   PROCS:BUFFER per throughput run
#   OUT=/tmp/datacrumbs-bench   work directory (traces, raw results)
#   DATACRUMBS=build/datacrumbs  the tracer
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
DC=${DATACRUMBS:-$root/build/datacrumbs}
N=${N:-20000}
SYS_N=${SYS_N:-50000}
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
[ -d /sys/kernel/tracing/events/syscalls ] || die "no syscalls tracepoints (CONFIG_FTRACE_SYSCALLS)"

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
# and of the SYSCALL layer: the same on the syscall tracepoints of write(2) and pread64(2)
BT_TP_PROG=""
for f in write pread64; do
	BT_TP_PROG+="tracepoint:syscalls:sys_enter_$f /pid == cpid/ { @s[tid] = nsecs }
tracepoint:syscalls:sys_exit_$f /@s[tid]/ { @t = hist(nsecs - @s[tid]); delete(@s[tid]); }
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

# bt VARIANT PROG N
bt() {
	local t0 t1
	t0=$(now)
	peak bpftrace -e "$2" -c "$OUT/loop $3 $OUT/small" >"$OUT/bt.out" 2>"$OUT/bt.err" ||
		die "bpftrace failed: $(cat "$OUT/bt.err")"
	t1=$(now)
	echo "variant=$1 round=$R procs=1 $(loopline "$OUT/bt.out") t0=$t0 t1=$t1" \
		"maxrss_kb=$(cat "$OUT/rss")" >>"$RES"
}

# dc VARIANT SCRIPT N PROCS BUFFER [RUN-OPTIONS...]
dc() {
	local t0 t1 tr=$OUT/$1-$R.pfw.gz
	t0=$(now)
	peak "$DC" run -q --force --buffer-size "$5" "${@:6}" "$2" -o "$tr" -- "$OUT/loop" "$3" "$OUT/small" "$4" \
		>"$OUT/dc.out" 2>"$OUT/dc.err" || die "datacrumbs failed: $(cat "$OUT/dc.err")"
	t1=$(now)
	echo "variant=$1 round=$R procs=$4 buffer=$5 $(loopline "$OUT/dc.out") t0=$t0 t1=$t1" \
		"maxrss_kb=$(cat "$OUT/rss") $(endrec "$tr")" >>"$RES"
	rm -f "$tr"
}

# What else runs meanwhile. Other tracers' attachments slow the loop even untraced:
# uprobes (perf events, and uprobe_multi links, which Debian's bpftool 7.1 prints as
# "type 12") and programs on the syscall tracepoints (raw sys_enter/sys_exit, or
# syscalls:sys_enter_*/sys_exit_*). others prints "U S" (their counts); it is called between
# runs, when ours are detached. watch keeps the largest counts seen in the round.
others() {
	local links perf
	links=$(bpftool link list 2>/dev/null || true)
	perf=$(bpftool perf list 2>/dev/null || true)
	echo "$(($(grep -cE '^[0-9]+: (uprobe_multi|type 12) ' <<<"$links") +
		$(grep -cE ' (uprobe|uretprobe) ' <<<"$perf"))) $(grep -cE '(raw_tracepoint|tracepoint) +sys_(enter|exit)' <<<"$perf")"
}
watch() {
	local u s
	read -r u s < <(others)
	((u > OTH_U)) && OTH_U=$u
	((s > OTH_S)) && OTH_S=$s
	return 0
}
# cpusnap FILE: CPU ticks used so far by every process but this script, to see other work
# competing for the 2 cores during a round: "pid starttime ppid own-ticks reaped-children-ticks".
cpusnap() {
	python3 -c 'import os, sys
me = sys.argv[2]
with open(sys.argv[1], "w") as out:
    for p in os.listdir("/proc"):
        if not p.isdigit() or p == me:
            continue
        try:
            f = open("/proc/%s/stat" % p).read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out.write("%s %s %s %d %d\n" % (p, f[19], f[1], int(f[11]) + int(f[12]),
                                         int(f[13]) + int(f[14])))' "$1" $$
}
# cpudelta A B: seconds of CPU that other processes used between the two snapshots: what
# each process present in both used, plus what the children it reaped meanwhile used,
# less what those children had already used at A (counted in A, not in between)
cpudelta() {
	python3 -c 'import os, sys
def load(f):
    return {tuple(w[:2]): (w[2], int(w[3]), int(w[4])) for w in map(str.split, open(f))}
a, b = load(sys.argv[1]), load(sys.argv[2])
pids = {k[0]: k for k in a if k in b}
ended = {k[0]: v[0] for k, v in a.items() if k not in b}  # pid -> ppid
gone = {}
for k, (ppid, own, kids) in a.items():
    while ppid in ended:  # reaped up a chain of ended processes, to one still here
        ppid = ended[ppid]
    if k not in b and ppid in pids:
        gone[ppid] = gone.get(ppid, 0) + own + kids
t = 0
for k in pids.values():
    t += b[k][1] - a[k][1] + max(b[k][2] - a[k][2] - gone.get(k[0], 0), 0)
print("%.2f" % (t / os.sysconf("SC_CLK_TCK")))' "$1" "$2"
}

echo "run.sh: $(date -u +%FT%TZ), $(nproc) CPUs, kernel $(uname -r), $(bpftrace --version)"
read -r u s < <(others)
echo "run.sh: attached by others before the start: uprobes=$u syscall_tps=$s (uprobes: their" \
	"traps on libc slow every process; syscall_tps: their programs run on every system call);" \
	"load average $(cut -d' ' -f1-3 /proc/loadavg)"
[ "$u$s" = 00 ] || echo "run.sh: WARNING: another tracer is attached: figures will be off"
echo "run.sh: overhead: $ROUNDS rounds of N=$N (uprobes), SYS_N=$SYS_N (syscall tracepoints)"
for R in $(seq 1 "$ROUNDS"); do
	OTH_U=0 OTH_S=0
	cpusnap "$OUT/cpu0"
	t0=$(now)
	watch; bare "$N" 1
	watch; bt bpftrace "$BT_PROG" "$N"
	watch; dc dc_nocb "$here/nocb.lua" "$N" 1 16M
	watch; dc dc_io_posix io_posix.lua "$N" 1 16M
	watch; dc dc_prof "$here/nocb.lua" "$N" 1 16M --mode profile --interval 1s
	watch; bare "$N" 1
	watch; bare "$SYS_N" 1
	watch; bt bpftrace_tp "$BT_TP_PROG" "$SYS_N"
	watch; dc dc_sys "$here/sys.lua" "$SYS_N" 1 16M
	watch; dc dc_prof_sys "$here/sys.lua" "$SYS_N" 1 16M --mode profile --interval 1s
	watch; bare "$SYS_N" 1
	watch
	t1=$(now)
	cpusnap "$OUT/cpu1"
	o="uprobes=$OTH_U syscall_tps=$OTH_S other_cpu_s=$(cpudelta "$OUT/cpu0" "$OUT/cpu1")"
	echo "variant=others round=$R $o round_ms=$(((t1 - t0) / 1000000))" >>"$RES"
	echo "run.sh: round $R done in $(((t1 - t0) / 1000000)) ms; others: $o"
done
echo "run.sh: throughput: $TP_CONFIGS (PROCS:BUFFER), TP_N=$TP_N"
R=tp
for c in $TP_CONFIGS; do
	dc dc_cb_tp "$here/cb.lua" "$TP_N" "${c%%:*}" "${c##*:}"
done
echo "run.sh: raw results: $RES"
python3 "$here/summarize.py" "$RES"
