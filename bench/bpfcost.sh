#!/usr/bin/env bash
# bpfcost.sh: the kernel side's cost per call: IOR (2 ranks, POSIX, file per process, 4 KiB
# transfers) under datacrumbs with kernel.bpf_stats_enabled=1, and per BPF program of the
# tracer its runs and ns per run during IOR (bpftool's run_cnt/run_time_ns, read just
# before and just after IOR while the programs are loaded), in trace and profile mode;
# with BASE=other/datacrumbs the same for another build, in alternation. What each number
# means: README.md ("The kernel side's cost per call").
# Run as root: bench/bpfcost.sh
#
# Knobs (environment):
#   DATACRUMBS=build/datacrumbs   the tracer
#   BASE=PATH      another datacrumbs (e.g. main's build): its rows beside these, same rounds
#   SCRIPT=io_posix.lua            the script
#   MODES="trace profile"          trace: no mode option; profile: --mode profile
#   ROUNDS=3       rounds; the figure printed is the median ns per run over them
#   WORK=bench/work                IOR's build (bench/ior.sh builds it: $WORK/ior/bin/ior)
#   XFER=4k BLOCK=128m NP=2        IOR's -t, -b per rank, ranks
#   OUT=/tmp/datacrumbs-bpfcost    data files, traces, logs, snapshots
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
DC=${DATACRUMBS:-$root/build/datacrumbs}
BASE=${BASE:-}
SCRIPT=${SCRIPT:-io_posix.lua}
MODES=${MODES:-"trace profile"}
ROUNDS=${ROUNDS:-3}
WORK=${WORK:-$here/work}
XFER=${XFER:-4k}
BLOCK=${BLOCK:-128m}
NP=${NP:-2}
OUT=${OUT:-/tmp/datacrumbs-bpfcost}
die() { echo "bpfcost.sh: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "needs root (BPF)"
[ -x "$DC" ] || die "no $DC: build first (cmake --build build)"
[ -z "$BASE" ] || [ -x "$BASE" ] || die "no $BASE (BASE)"
IOR=$WORK/ior/bin/ior
[ -x "$IOR" ] || die "no $IOR: build it with bench/ior.sh --build-only (or set WORK)"
command -v bpftool >/dev/null || die "needs bpftool"
command -v mpirun >/dev/null || die "needs mpirun (openmpi-bin)"
export DATACRUMBS_SCRIPT_PATH=${DATACRUMBS_SCRIPT_PATH:-$root/scripts}
STATS_WAS=$(sysctl -n kernel.bpf_stats_enabled) || die "no kernel.bpf_stats_enabled"
trap 'sysctl -q kernel.bpf_stats_enabled="$STATS_WAS"' EXIT
sysctl -q kernel.bpf_stats_enabled=1 || die "cannot set kernel.bpf_stats_enabled"
rm -rf "$OUT"
mkdir -p "$OUT"
MPI="$(readlink -f "$(command -v mpirun)") --allow-run-as-root --oversubscribe --bind-to none -np $NP"

# snap PID FILE: the programs the tracer PID holds (a prog_id in one of its fds' fdinfo:
# its programs and links, not another tracer's) with run_cnt and run_time_ns, one a line
SNAP='for f in /proc/$1/fdinfo/*; do sed -n "s/^prog_id:[[:space:]]*//p" "$f" 2>/dev/null; done |
	sort -un | while read -r id; do bpftool -j prog show id "$id"; echo; done >"$2"'

# one TAG DC MODE ROUND: one IOR run; its programs' figures appended to $OUT/rows
one() {
	local tag=$1 dc=$2 mode=$3 rd=$4 d=$OUT/$1-$3-$4 opt=()
	mkdir -p "$d/data"
	[ "$mode" = profile ] && opt=(--mode profile)
	# the command is the tracer's child: $PPID in it is the tracer
	"$dc" run "$SCRIPT" "${opt[@]}" --no-status -o "$d/t.pfw.gz" -- bash -c "
		snap() { $SNAP; }
		snap \$PPID $d/before
		$MPI $IOR -a POSIX -F -t $XFER -b $BLOCK -w -r -o $d/data/ior.dat >$d/ior.log
		snap \$PPID $d/after" >"$d/dc.log" 2>&1 || die "$tag $mode: $(tail -3 "$d/dc.log")"
	python3 - "$tag" "$mode" "$rd" "$d/before" "$d/after" >>"$OUT/rows" <<'PY'
import json, sys
tag, mode, rd, bf, af = sys.argv[1:6]
def rd_(f):
    d = {}
    for l in open(f):
        if l.strip():
            p = json.loads(l)
            if "id" not in p: # freed between the fdinfo listing and bpftool's show
                continue      # (the session check's programs, closed by its settle thread)
            d[p["id"]] = (p.get("name", "?"), p.get("run_time_ns", 0), p.get("run_cnt", 0))
    return d
b, a = rd_(bf), rd_(af)
for i, (name, t, c) in a.items():
    _, t0, c0 = b.get(i, (name, 0, 0))
    if c - c0:
        print(tag, mode, rd, name, c - c0, t - t0)
PY
	rm -rf "$d/data"
}

tags="new"
[ -n "$BASE" ] && tags="new base"
for rd in $(seq 1 "$ROUNDS"); do
	for mode in $MODES; do
		for tag in $tags; do
			dc=$DC
			[ "$tag" = base ] && dc=$BASE
			one "$tag" "$dc" "$mode" "$rd"
		done
	done
done
echo "bpfcost.sh: $SCRIPT, IOR -t $XFER -b $BLOCK, $NP ranks, $ROUNDS rounds; new=$DC${BASE:+ base=$BASE}"
python3 - "$OUT/rows" <<'PY'
import collections, statistics, sys
rows = collections.defaultdict(list)
for l in open(sys.argv[1]):
    tag, mode, rd, name, c, t = l.split()
    rows[(mode, tag, name)].append((int(c), int(t)))
print("  %-8s %-5s %-22s %10s %9s %10s" % ("mode", "build", "program", "runs", "ns/run", "ms total"))
for mode in sorted({k[0] for k in rows}, key=lambda m: m != "trace"):
    for tag in ("base", "new"):
        tot = []
        for (m, tg, name), v in sorted(rows.items()):
            if m != mode or tg != tag:
                continue
            ns = statistics.median(t / c for c, t in v)
            print("  %-8s %-5s %-22s %10d %9.0f %10.1f" % (mode, tag, name,
                  statistics.median(c for c, _ in v), ns,
                  statistics.median(t for _, t in v) / 1e6))
        per = [sum(t for (m, tg, _), v in rows.items() if m == mode and tg == tag
                   for c, t in v[i:i + 1]) for i in range(100)]
        per = [p for p in per if p]
        if per:
            print("  %-8s %-5s %-22s %10s %9s %10.1f" % (mode, tag, "(all programs)", "", "",
                  statistics.median(per) / 1e6))
PY
