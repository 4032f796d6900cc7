#!/usr/bin/env bash
# cbcost.sh: the tracer's CPU per event for SCRIPTS (bench/NAME.lua), builds side by side:
# each round runs every (build, script) pair twice, with 500 and ITERS iterations of
# bench/loop.c (PROCS writers paced to RATE events/s in all), and takes the difference of
# the tracer's CPU time (user + system) over the difference of the events written, so
# that start-up and detach cancel out. Medians of ROUNDS rounds; the callback's cost is a
# script's figure minus nocb's of the same build. Run as root.
#
# Knobs: BASE=(none: this build only) DATACRUMBS=build/datacrumbs ROUNDS=3 ITERS=50000
#        PROCS=2 RATE=100000 SCRIPTS="nocb cbnil cbnil_reuse cb" OUT=/tmp/datacrumbs-cbcost
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
DC=${DATACRUMBS:-$root/build/datacrumbs}
BASE=${BASE:-}
ROUNDS=${ROUNDS:-3}
ITERS=${ITERS:-50000}
PROCS=${PROCS:-2}
RATE=${RATE:-100000}
SCRIPTS=${SCRIPTS:-"nocb cbnil cbnil_reuse cb"}
OUT=${OUT:-/tmp/datacrumbs-cbcost}
die() { echo "cbcost.sh: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "needs root"
[ -x "$DC" ] || die "no $DC: build first"
[ -z "$BASE" ] || [ -x "$BASE" ] || die "BASE=$BASE is not an executable"
rm -rf "$OUT"
mkdir -p "$OUT"
cc -O2 -Wall -o "$OUT/loop" "$here/loop.c"
head -c 4096 /dev/urandom >"$OUT/small"
export DATACRUMBS_SCRIPT_PATH=${DATACRUMBS_SCRIPT_PATH:-$root/scripts}

# one run: BUILD SCRIPT ITERS -> "cpu_ns events"
run() {
	rm -rf "$OUT/t"
	mkdir -p "$OUT/t"
	python3 - "$1" run "$here/$2.lua" -q -o "$OUT/t" -- "$OUT/loop" -r $((RATE / PROCS)) \
		"$3" "$OUT/small" "$PROCS" "$OUT/t" <<'PY'
import glob, gzip, json, resource, subprocess, sys
out = sys.argv.pop()
p = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, text=True)
if p.returncode:
    sys.exit("datacrumbs failed: %d" % p.returncode)
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
kv = dict(x.split("=", 1) for x in p.stdout.strip().splitlines()[-1].split())
cpu = int((ru.ru_utime + ru.ru_stime) * 1e9) - int(kv["cpu_ns"])  # minus the loop's own
ev = -1
for f in glob.glob(out + "/*.pfw*"):
    op = gzip.open if f.endswith(".gz") else open
    with op(f, "rt") as fh:
        for line in fh:
            line = line.strip().rstrip(",")
            if '"name":"end"' in line:
                a = json.loads(line)["args"]
                ev = a["num_events"]
                if a.get("lost", 0):
                    sys.exit("events lost: lower RATE")
print(cpu, ev)
PY
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
builds="$DC"
[ -z "$BASE" ] || builds="$BASE $DC"
declare -A acc
for _ in $(seq "$ROUNDS"); do
	for b in $builds; do
		for s in $SCRIPTS; do
			read -r c0 e0 < <(run "$b" "$s" 500)
			read -r c1 e1 < <(run "$b" "$s" "$ITERS")
			acc["$b $s"]+="$(awk -v c0="$c0" -v c1="$c1" -v e0="$e0" -v e1="$e1" \
				'BEGIN { printf "%.3f", (c1 - c0) / (e1 - e0) / 1000 }')"$'\n'
		done
	done
done
echo "cbcost.sh: tracer CPU per event (us), median of $ROUNDS, $PROCS writers at $RATE events/s"
printf '%-14s' script
for b in $builds; do printf ' %14s' "$([ "$b" = "$BASE" ] && echo BASE || echo this)"; done
echo
for s in $SCRIPTS; do
	printf '%-14s' "$s"
	for b in $builds; do printf ' %14s' "$(printf %s "${acc["$b $s"]}" | median)"; done
	echo
done
