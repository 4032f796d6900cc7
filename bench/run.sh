#!/usr/bin/env bash
# run.sh: datacrumbs' cost measured side by side with bpftrace and with no tracer, in one
# invocation, as ratios: the POSIX layer (its system-call wrappers served by the raw_syscalls
# tracepoints) and the SYSCALL layer against bpftrace's syscall-tracepoint pair on the same
# calls; the POSIX layer with mechanism = "uprobe" against bpftrace's uprobe + uretprobe
# pair; the STDIO layer (session uprobes on fwrite) against bpftrace's pair on fwrite;
# profile mode against trace mode; then the user side's event throughput and loss, and peak
# memory. With BPF_STATS=1 (or --bpf-stats), also the kernel's run-time statistics of every
# BPF program of each tracer (runs, ns per run). What each number means: README.md.
# Run as root: bench/run.sh [--bpf-stats] (about 2.5 minutes here). bench/run.sh --scale
# runs bench/scale.sh instead: loss-free rate, CPU per event, the callback's cost.
#
# Knobs (environment):
#   N=20000        loop iterations per uprobe run (bpftrace's uprobes, nocb_uprobe.lua;
#                  2 traced calls each)
#   SYS_N=50000    loop iterations per syscall-tracepoint run (bpftrace_tp, nocb.lua,
#                  io_posix.lua, sys.lua: a traced call is ~10x cheaper; 2 x SYS_N records
#                  of 136 bytes must fit the 16 MiB ring buffer)
#   FW_N=50000     fwrite calls per STDIO run (bpftrace's pair on fwrite, fwrite.lua)
#   ROUNDS=7       rounds of {bare, bpftrace, nocb_uprobe.lua, bare; bare, bpftrace_tp,
#                  nocb.lua, io_posix.lua, nocb.lua in profile mode, sys.lua, sys.lua in
#                  profile mode, bare; bare fwrite, bpftrace fwrite, fwrite.lua, bare fwrite}
#   TP_N=50000     loop iterations per process in the throughput runs
#   TP_CONFIGS="1:16M 2:16M 4:16M 2:1M 2:256K 2:64K"   PROCS:BUFFER per throughput run
#   BPF_STATS=0    1: sysctl kernel.bpf_stats_enabled=1 for the run (restored at the end);
#                  every tracer run holds its loop just before and just after the timed
#                  part while bpftool reads run_cnt and run_time_ns of the tracer's
#                  programs (same as --bpf-stats)
#   OUT=/tmp/datacrumbs-bench   work directory (traces, raw results)
#   DATACRUMBS=build/datacrumbs  the tracer
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
DC=${DATACRUMBS:-$root/build/datacrumbs}
N=${N:-20000}
SYS_N=${SYS_N:-50000}
FW_N=${FW_N:-50000}
ROUNDS=${ROUNDS:-7}
TP_N=${TP_N:-50000}
TP_CONFIGS=${TP_CONFIGS:-"1:16M 2:16M 4:16M 2:1M 2:256K 2:64K"}
OUT=${OUT:-/tmp/datacrumbs-bench}
BPF_STATS=${BPF_STATS:-0}
for a in "$@"; do
	case $a in
	--bpf-stats) BPF_STATS=1 ;;
	--scale) exec "$here/scale.sh" ;; # the user side's capacity alone (bench/scale.sh)
	*) echo "usage: run.sh [--bpf-stats | --scale] (knobs: see the top of this file and of scale.sh)" >&2; exit 2 ;;
	esac
done

die() { echo "run.sh: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "needs root (uprobes)"
[ -x "$DC" ] || die "no $DC: build first (cmake --build build)"
command -v cc >/dev/null || die "no C compiler (cc)"
command -v bpftrace >/dev/null || die "no bpftrace (Debian package bpftrace)"
command -v python3 >/dev/null || die "no python3"
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing ||
	die "cannot mount tracefs (bpftrace needs it)"
[ -d /sys/kernel/tracing/events/syscalls ] || die "no syscalls tracepoints (CONFIG_FTRACE_SYSCALLS)"
if [ "$BPF_STATS" = 1 ]; then
	command -v bpftool >/dev/null || die "BPF_STATS=1 needs bpftool"
	STATS_WAS=$(sysctl -n kernel.bpf_stats_enabled) || die "no kernel.bpf_stats_enabled"
	trap 'sysctl -q kernel.bpf_stats_enabled="$STATS_WAS"' EXIT
	sysctl -q kernel.bpf_stats_enabled=1 || die "cannot set kernel.bpf_stats_enabled"
fi

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
# of the duration at return, on the same two libc functions, only for the loop (cpid):
# the peer of nocb_uprobe.lua (and a reference row: what a uprobe pair costs)
BT_PROG=""
for f in write pread; do
	BT_PROG+="uprobe:$LIBC:$f /pid == cpid/ { @s[tid] = nsecs }
uretprobe:$LIBC:$f /pid == cpid && @s[tid]/ { @t = hist(nsecs - @s[tid]); delete(@s[tid]); }
"
done
# the same on fwrite: the peer of fwrite.lua (STDIO layer, session uprobes)
BT_FW_PROG="uprobe:$LIBC:fwrite /pid == cpid/ { @s[tid] = nsecs }
uretprobe:$LIBC:fwrite /pid == cpid && @s[tid]/ { @t = hist(nsecs - @s[tid]); delete(@s[tid]); }"
# and the same on the syscall tracepoints of write(2) and pread64(2): the peer of the POSIX
# layer (whose write and pread are served by the raw_syscalls tracepoints) and of the
# SYSCALL layer
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

# launch OUTFILE ERRFILE VARIANT CMD...: runs the tracer command CMD with its stdout in
# OUTFILE, stderr in ERRFILE. With BPF_STATS=1 its loop (given $HOLD = -H) says "ready
# ppid=PID" (PID: the tracer) before its timed part and waits for a line on stdin, and
# "hold ppid=PID" after it and waits for EOF: progsnap reads the tracer's programs' run
# statistics at both points, while they are loaded, then the loop is let go (a newline), and
# released (its stdin closed). PAUSE (ns) is how long the loop waited to start (taken off
# the attach time), REL the time of the release (the detach time is measured from it); both
# 0 without BPF_STATS.
launch() {
	local out=$1 err=$2 v=$3 line pid w r t
	shift 3
	REL=0 PAUSE=0
	if [ "$BPF_STATS" != 1 ]; then
		"$@" >"$out" 2>"$err" </dev/null
		return
	fi
	rm -f "$OUT/hold.in" "$OUT/hold.out" "$OUT/snap0" "$OUT/snap1"
	mkfifo "$OUT/hold.in" "$OUT/hold.out"
	"$@" <"$OUT/hold.in" >"$OUT/hold.out" 2>"$err" &
	pid=$!
	exec {w}>"$OUT/hold.in" {r}<"$OUT/hold.out"
	: >"$out"
	while IFS= read -r line <&"$r"; do
		case $line in
		"ready ppid="*)
			t=$(now)
			progsnap "${line#ready ppid=}" "$OUT/snap0"
			echo >&"$w"
			PAUSE=$(($(now) - t))
			;;
		"hold ppid="*)
			progsnap "${line#hold ppid=}" "$OUT/snap1"
			break
			;;
		*) echo "$line" >>"$out" ;;
		esac
	done
	exec {w}>&-
	REL=$(now)
	cat <&"$r" >>"$out"
	exec {r}<&-
	wait "$pid" || return
	if [ -s "$OUT/snap0" ] && [ -s "$OUT/snap1" ]; then
		bpfstats "$v" "$(loopline "$out" | grep -o 'calls=[0-9]*')"
	else
		echo "run.sh: $v: no BPF statistics (the loop did not hold)" >&2
	fi
}

# progsnap PID FILE: the BPF programs the tracer PID holds (a prog_id in the fdinfo of one
# of its fds: its programs and its links), with the kernel's run count and run time since
# each was loaded (bpftool -j prog show; kernel.bpf_stats_enabled), as JSON in FILE.
# Names: datacrumbs' are dc_*; bpftrace's are labelled with their attach point from bpftool
# perf list (uprobe:write, tracepoint:sys_enter_write, ...).
progsnap() {
	python3 - "$1" "$2" "$LIBC" <<'PY' || echo "run.sh: progsnap failed for $1" >&2
import json, os, subprocess, sys
pid, out, libc = sys.argv[1:4]
ids = set()
for fd in os.listdir("/proc/%s/fdinfo" % pid):
    try:
        for l in open("/proc/%s/fdinfo/%s" % (pid, fd)):
            if l.startswith("prog_id:"):
                ids.add(int(l.split()[1]))
    except OSError:
        pass
progs = json.loads(subprocess.check_output(["bpftool", "-j", "prog", "show"]))
perf = {}
try:
    for e in json.loads(subprocess.check_output(["bpftool", "-j", "perf", "list"])):
        perf[e["prog_id"]] = e
except (subprocess.CalledProcessError, ValueError):
    pass
syms = {}  # libc offset -> names, for bpftrace's uprobes
try:
    for l in subprocess.check_output(["nm", "-D", "--defined-only", libc], text=True).splitlines():
        w = l.split()
        if len(w) == 3 and w[1] in "TtWi":
            syms.setdefault(int(w[0], 16), []).append(w[2].split("@")[0])
except (OSError, subprocess.CalledProcessError):
    pass
snap = {}
for p in progs:
    if p["id"] not in ids:
        continue
    name = p.get("name") or "prog"
    e = perf.get(p["id"])
    if e and not name.startswith("dc_"):  # bpftrace: where it is attached
        kind = e.get("fd_type", "perf")
        if "tracepoint" in e:
            name = "%s:%s" % (kind, e["tracepoint"])
        elif "offset" in e:
            ns = syms.get(e["offset"], [])
            f = next((n for n in ns if n in ("write", "pread", "fwrite")),
                     ns[0] if ns else hex(e["offset"]))
            name = "%s:%s" % (kind, f)
    snap[p["id"]] = [name.replace(" ", "_"), p.get("run_cnt", 0), p.get("run_time_ns", 0)]
json.dump(snap, open(out, "w"))
PY
}

# bpfstats VARIANT calls=C: from $OUT/snap0 and snap1 (before and after the loop's timed
# part), one result line per program: runs and run time during the timed part, and since
# the program was loaded up to its end
bpfstats() {
	python3 - "$1" "$2" "$R" "$OUT/snap0" "$OUT/snap1" >>"$RES" <<'PY' || echo "run.sh: bpfstats failed for $1" >&2
import json, sys
v, calls, rnd, f0, f1 = sys.argv[1:6]
a, b = json.load(open(f0)), json.load(open(f1))
for i, (name, runs, ns) in sorted(b.items(), key=lambda kv: kv[1][0]):
    r0, n0 = a.get(i, [name, 0, 0])[1:]
    print("variant=bpfstat round=%s tracer=%s prog=%s id=%s runs=%d run_ns=%d total_runs=%d "
          "total_ns=%d loop_%s" % (rnd, v, name, i, runs - r0, ns - n0, runs, ns, calls))
PY
}

# bare N PROCS [LOOPOPT]
bare() {
	"$OUT/loop" ${3:-} "$1" "$OUT/small" "$2" >"$OUT/bare.out"
	echo "variant=bare round=$R procs=$2 $(loopline "$OUT/bare.out")" >>"$RES"
}

# bt VARIANT PROG N [LOOPOPT]
bt() {
	local t0 t1 cmd
	# bpftrace -c splits at each space: no empty words
	cmd=$(echo "$OUT/loop" $HOLD ${4:-} "$3" "$OUT/small")
	t0=$(now)
	launch "$OUT/bt.out" "$OUT/bt.err" "$1" peak bpftrace -e "$2" -c "$cmd" ||
		die "bpftrace failed: $(cat "$OUT/bt.err")"
	t1=$(now)
	echo "variant=$1 round=$R procs=1 $(loopline "$OUT/bt.out") t0=$t0 t1=$t1 rel=$REL" \
		"pause=$PAUSE" \
		"maxrss_kb=$(cat "$OUT/rss")" >>"$RES"
}

# dc VARIANT SCRIPT N PROCS BUFFER [RUN-OPTIONS...]; LOOPOPT=-f for the fwrite loop
dc() {
	local t0 t1 tr=$OUT/$1-$R.pfw.gz hold=$HOLD BPF_STATS=$BPF_STATS
	if [ "$R" = tp ]; then # the throughput runs: no statistics (several loops)
		hold="" BPF_STATS=0
	fi
	t0=$(now)
	launch "$OUT/dc.out" "$OUT/dc.err" "$1" \
		peak "$DC" run -q --force --buffer-size "$5" "${@:6}" "$2" -o "$tr" -- \
		"$OUT/loop" $hold ${LOOPOPT:-} "$3" "$OUT/small" "$4" ||
		die "datacrumbs failed: $(cat "$OUT/dc.err")"
	t1=$(now)
	echo "variant=$1 round=$R procs=$4 buffer=$5 $(loopline "$OUT/dc.out") t0=$t0 t1=$t1" \
		"rel=$REL pause=$PAUSE maxrss_kb=$(cat "$OUT/rss") $(endrec "$tr")" >>"$RES"
	rm -f "$tr"
}
HOLD=""
[ "$BPF_STATS" = 1 ] && HOLD=-H

# What else runs meanwhile. Other tracers' attachments slow the loop even untraced:
# uprobes (perf events, and uprobe_multi links, session ones included, which Debian's
# bpftool 7.1 prints as "type 12") and programs on the syscall tracepoints (another
# datacrumbs' tp_btf programs on raw_syscalls sys_enter/sys_exit, which run on every system
# call of the machine and which bpftool perf list shows as "raw_tracepoint sys_enter"; or
# bpftrace's perf events on syscalls:sys_enter_*/sys_exit_*). others prints "U S" (their
# counts); it is called between runs, when ours are detached. watch keeps the largest counts
# seen in the round.
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
echo "run.sh: overhead: $ROUNDS rounds of N=$N (uprobes), SYS_N=$SYS_N (syscall tracepoints)," \
	"FW_N=$FW_N (fwrite)"
[ "$BPF_STATS" = 1 ] && echo "run.sh: kernel.bpf_stats_enabled=1 (was $STATS_WAS): every BPF" \
	"program run on the machine also pays its timing, both tracers alike"
for R in $(seq 1 "$ROUNDS"); do
	OTH_U=0 OTH_S=0
	cpusnap "$OUT/cpu0"
	t0=$(now)
	watch; bare "$N" 1
	watch; bt bpftrace "$BT_PROG" "$N"
	watch; dc dc_nocb_uprobe "$here/nocb_uprobe.lua" "$N" 1 16M
	watch; bare "$N" 1
	watch; bare "$SYS_N" 1
	watch; bt bpftrace_tp "$BT_TP_PROG" "$SYS_N"
	watch; dc dc_nocb "$here/nocb.lua" "$SYS_N" 1 16M
	watch; dc dc_io_posix io_posix.lua "$SYS_N" 1 16M
	watch; dc dc_prof "$here/nocb.lua" "$SYS_N" 1 16M --mode profile --interval 1s
	watch; dc dc_sys "$here/sys.lua" "$SYS_N" 1 16M
	watch; dc dc_prof_sys "$here/sys.lua" "$SYS_N" 1 16M --mode profile --interval 1s
	watch; bare "$SYS_N" 1
	watch; bare "$FW_N" 1 -f
	watch; bt bpftrace_fw "$BT_FW_PROG" "$FW_N" -f
	watch; LOOPOPT=-f dc dc_stdio "$here/fwrite.lua" "$FW_N" 1 16M
	watch; bare "$FW_N" 1 -f
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
