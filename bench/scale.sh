#!/usr/bin/env bash
# scale.sh: the user side's capacity (bench/run.sh --scale runs it): what the writers alone
# offer, the tracer's CPU per event without and with a Lua callback (nocb.lua, cb.lua; the
# difference is the callback's cost), the highest loss-free rate of PROCS paced writers
# with the default buffer, and the time from the command's end to the tracer's exit.
# Run as root; compare two builds with DATACRUMBS=/path/to/datacrumbs.
#
# Knobs (environment):
#   PROCS=2        writer processes (bench/loop.c, write + pread per iteration)
#   SECS=2         seconds each paced run lasts
#   RATES="50000 100000 150000 200000 250000 300000 400000 500000 600000 800000"
#                  offered events/s (all writers together), tried in this order until
#                  two in a row lose events
#   CPU_RATE=100000  events/s of the CPU-per-event runs (loss-free on this VM)
#   CPU_RUNS=1     0: skip the CPU-per-event runs
#   OPTS=""        more datacrumbs options (--shards 1, --drain-threads 0, ...)
#   SCRIPTS="nocb cbnil cb"   bench/NAME.lua scripts measured (cbnil: an empty callback)
#   OUT=/tmp/datacrumbs-scale   DATACRUMBS=build/datacrumbs
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
DC=${DATACRUMBS:-$root/build/datacrumbs}
PROCS=${PROCS:-2}
SECS=${SECS:-2}
RATES=${RATES:-"50000 100000 150000 200000 250000 300000 400000 500000 600000 800000"}
CPU_RATE=${CPU_RATE:-100000}
CPU_RUNS=${CPU_RUNS:-1}
OPTS=${OPTS:-}
SCRIPTS=${SCRIPTS:-"nocb cbnil cb"}
OUT=${OUT:-/tmp/datacrumbs-scale}
die() { echo "scale.sh: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "needs root"
[ -x "$DC" ] || die "no $DC: build first"
rm -rf "$OUT"
mkdir -p "$OUT"
cc -O2 -Wall -o "$OUT/loop" "$here/loop.c"
head -c 4096 /dev/urandom >"$OUT/small"
export DATACRUMBS_SCRIPT_PATH=${DATACRUMBS_SCRIPT_PATH:-$root/scripts}

# one traced run: SCRIPT RATE(0: unpaced) ITERS -> "events= lost= cpu_ns= loop_ns= tail_ns="
# (cpu_ns: the tracer's user + system time, whole run; tail_ns: the command's end to the
# tracer's exit: draining, the end record, detaching)
run() {
	local script=$1 rate=$2 iters=$3 per=0
	[ "$rate" = 0 ] || per=$((rate / PROCS))
	rm -rf "$OUT/t"
	mkdir -p "$OUT/t"
	# shellcheck disable=SC2086
	/usr/bin/env python3 - "$DC" run $OPTS "$script" -q -o "$OUT/t" -- "$OUT/loop" -r "$per" \
		"$iters" "$OUT/small" "$PROCS" >"$OUT/run.txt" <<'EOF'
import resource, subprocess, sys, time
p = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, text=True)
t = time.clock_gettime_ns(time.CLOCK_REALTIME)
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
line = p.stdout.strip().splitlines()[-1]
kv = dict(x.split("=", 1) for x in line.split())
# the loop is our grandchild: its own CPU is in ru too; take it off
cpu = int((ru.ru_utime + ru.ru_stime) * 1e9) - int(kv["cpu_ns"])
print("rc=%d cpu_ns=%d loop_ns=%s calls=%s tail_ns=%d" %
      (p.returncode, cpu, kv["elapsed_ns"], kv["calls"], t - int(kv["end_ns"])))
EOF
	local endrec
	endrec=$(python3 - "$OUT"/t/*.pfw* <<'EOF'
import gzip, json, sys
f = sys.argv[1]
op = gzip.open if f.endswith(".gz") else open
a = {}
with op(f, "rt") as fh:
    for line in fh:
        line = line.strip().rstrip(",")
        if '"name":"end"' in line:
            a = json.loads(line)["args"]
print("events=%d lost=%d" % (a.get("num_events", -1), a.get("lost", -1)))
EOF
)
	echo "$(cat "$OUT/run.txt") $endrec"
}
val() { sed -n "s/.*\<$1=\([-0-9]*\).*/\1/p" <<<"$2"; }

echo "scale.sh: $DC $OPTS, $PROCS writers, $SECS s per paced run"
it=$((CPU_RATE * SECS / PROCS / 2))
bare=$("$OUT/loop" $((it * 4)) "$OUT/small" "$PROCS")
echo "writers alone: $(awk -v c="$(val calls "$bare")" -v e="$(val elapsed_ns "$bare")" \
	'BEGIN { printf "%.0f events/s", c / e * 1e9 }') (unpaced, untraced)"
for s in $SCRIPTS; do
	[ "$CPU_RUNS" = 1 ] || break
	small=$(run "$here/$s.lua" "$CPU_RATE" 500)
	big=$(run "$here/$s.lua" "$CPU_RATE" "$it")
	awk -v s="$s" -v c0="$(val cpu_ns "$small")" -v c1="$(val cpu_ns "$big")" \
		-v e0="$(val events "$small")" -v e1="$(val events "$big")" \
		-v l="$(val lost "$big")" -v t="$(val tail_ns "$big")" \
		'BEGIN { printf "cpu per event %-5s %.2f us (%d events at '"$CPU_RATE"'/s, %d lost, tail %.0f ms)\n",
			 s, (c1 - c0) / (e1 - e0) / 1000, e1, l, t / 1e6 }'
done
for s in $SCRIPTS; do
	best=0 fails=0
	for r in $RATES; do
		res=$(run "$here/$s.lua" "$r" $((r * SECS / PROCS / 2)))
		got=$(awk -v c="$(val calls "$res")" -v e="$(val loop_ns "$res")" 'BEGIN { printf "%.0f", c / e * 1e9 }')
		echo "rate $s offered=$r achieved=$got $(echo "$res" | sed 's/rc=[0-9]* //')"
		if [ "$(val lost "$res")" = 0 ]; then
			best=$got
			fails=0
		else
			fails=$((fails + 1))
			[ $fails -lt 2 ] || break
		fi
	done
	echo "loss-free $s: $best events/s"
done
