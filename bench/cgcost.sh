#!/usr/bin/env bash
# cgcost.sh: the tracer's instructions per event, counted by valgrind's callgrind (the same
# from run to run, blind to other processes' load, unlike CPU time): bench/loop.c under
# SCRIPT (bench/NAME.lua, default nocb) with 500 and ITERS iterations of 2 writers paced
# to RATE events/s, the difference of the instructions over the difference of the events
# (start-up and detach cancel out), in all and per function (the TOP largest). The kernel's
# part (system calls, wake-ups) is not counted: bench/cbcost.sh measures CPU time. Run as
# root. A uprobe another tracer put on a library the tracer maps makes valgrind stop with
# SIGTRAP (it reads the breakpoint as an instruction): run it when no other tracer runs.
#
# Knobs: SCRIPT=nocb ITERS=20000 RATE=40000 TOP=25 DATACRUMBS=build/datacrumbs
#        OUT=/tmp/datacrumbs-cgcost
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
DC=${DATACRUMBS:-$root/build/datacrumbs}
SCRIPT=${SCRIPT:-nocb}
ITERS=${ITERS:-20000}
RATE=${RATE:-40000}
TOP=${TOP:-25}
OUT=${OUT:-/tmp/datacrumbs-cgcost}
die() { echo "cgcost.sh: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "needs root"
[ -x "$DC" ] || die "no $DC: build first"
command -v valgrind >/dev/null || die "no valgrind (Debian package valgrind)"
rm -rf "$OUT"
mkdir -p "$OUT"
cc -O2 -Wall -o "$OUT/loop" "$here/loop.c"
head -c 4096 /dev/urandom >"$OUT/small"
export DATACRUMBS_SCRIPT_PATH=${DATACRUMBS_SCRIPT_PATH:-$root/scripts}

# one run: ITERS -> callgrind's file $OUT/cg.ITERS and the trace in $OUT/t.ITERS
for n in 500 "$ITERS"; do
	mkdir -p "$OUT/t.$n"
	valgrind --tool=callgrind --callgrind-out-file="$OUT/cg.$n" "$DC" run \
		"$here/$SCRIPT.lua" -q -o "$OUT/t.$n" -- "$OUT/loop" -r $((RATE / 2)) "$n" \
		"$OUT/small" 2 >"$OUT/log.$n" 2>&1 || die "run of $n failed: $OUT/log.$n"
done
python3 - "$OUT" "$ITERS" "$TOP" <<'PY'
import collections, glob, gzip, json, re, subprocess, sys
out, iters, top = sys.argv[1], sys.argv[2], int(sys.argv[3])

def events(n):
    for f in glob.glob("%s/t.%s/*.pfw*" % (out, n)):
        op = gzip.open if f.endswith(".gz") else open
        with op(f, "rt") as fh:
            for line in fh:
                if '"name":"end"' in line:
                    a = json.loads(line.strip().rstrip(","))["args"]
                    if a.get("lost", 0):
                        sys.exit("cgcost.sh: events lost: lower RATE")
                    return a["num_events"]
    sys.exit("cgcost.sh: no end record in %s/t.%s" % (out, n))

def self_cost(n):
    text = subprocess.run(["callgrind_annotate", "--threshold=100", "--auto=no",
                           "--tree=none", "%s/cg.%s" % (out, n)],
                          capture_output=True, text=True, check=True).stdout
    d = collections.Counter()
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+) \([ \d.]+%\)\s+(.*)", line)
        if m and "PROGRAM TOTALS" not in m.group(2):
            name = re.sub(r" \[.*\]$", "", m.group(2))
            lib = re.search(r"\[([^\]]*)\]$", m.group(2))
            name = name.split(":")[-1] if not name.startswith("???") else \
                "%s (%s)" % (name, lib.group(1).split("/")[-1] if lib else "?")
            d[name] += int(m.group(1).replace(",", ""))
    return d

e0, e1 = events(500), events(iters)
a, b = self_cost(500), self_cost(iters)
per = {k: (b[k] - a.get(k, 0)) / (e1 - e0) for k in b}
print("cgcost.sh: %.0f instructions per event (%d - %d events), by function:"
      % (sum(per.values()), e1, e0))
for k, v in sorted(per.items(), key=lambda x: -x[1])[:top]:
    print("%9.1f  %s" % (v, k))
PY
