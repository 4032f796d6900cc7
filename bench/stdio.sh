#!/usr/bin/env bash
# stdio.sh: the STDIO figure: an fwrite loop bare, under bpftrace's uprobe + uretprobe pair
# on fwrite, and under datacrumbs' STDIO layer (session uprobes where the kernel has them;
# DATACRUMBS_NO_UPROBE_SESSION=1 for the pair), alternating in the same invocation. Prints
# per round and the medians: us per call and the overhead ratio datacrumbs / bpftrace.
#   N=20000 ROUNDS=5 OUT=/tmp/datacrumbs-bench-stdio DATACRUMBS=build/datacrumbs
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
N=${N:-20000}
ROUNDS=${ROUNDS:-5}
OUT=${OUT:-/tmp/datacrumbs-bench-stdio}
DC=${DATACRUMBS:-$root/build/datacrumbs}
die() { echo "stdio.sh: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root"
others=$(bpftool link list | grep -cE "type 12|uprobe_multi|perf_event" || true)
[ "$others" = 0 ] || echo "stdio.sh: WARNING: $others uprobe links of other tracers are attached: figures are off" >&2
echo "stdio.sh: $(date -u +%FT%TZ), load average $(cut -d' ' -f1-3 /proc/loadavg) (other busy processes on 2 cores distort every figure)"
rm -rf "$OUT"; mkdir -p "$OUT"
cc -O2 -Wall -o "$OUT/fwrite" "$here/fwrite.c"
LIBC=$(ldd "$OUT/fwrite" | awk '$1 == "libc.so.6" { print $3 }')
BT="uprobe:$LIBC:fwrite /pid == cpid/ { @s[tid] = nsecs }
uretprobe:$LIBC:fwrite /pid == cpid && @s[tid]/ { @t = hist(nsecs - @s[tid]); delete(@s[tid]); }"
ns() { grep -m1 -o 'elapsed_ns=[0-9]*' "$1" | cut -d= -f2; }
: >"$OUT/res"
for r in $(seq "$ROUNDS"); do
	"$OUT/fwrite" "$N" >"$OUT/bare.out"
	bpftrace -e "$BT" -c "$OUT/fwrite $N" >"$OUT/bt.out" 2>&1 || die "bpftrace: $(cat "$OUT/bt.out")"
	DATACRUMBS_SCRIPT_PATH=$here "$DC" run fwrite.lua --force -o "$OUT/t.pfw.gz" -- "$OUT/fwrite" "$N" \
		>"$OUT/dc.out" 2>"$OUT/dc.err" || die "datacrumbs: $(cat "$OUT/dc.err")"
	ev=$(grep -o '[0-9]* events written' "$OUT/dc.err" | cut -d' ' -f1)
	echo "$r $(ns "$OUT/bare.out") $(ns "$OUT/bt.out") $(ns "$OUT/dc.out") $ev" >>"$OUT/res"
done
echo "stdio.sh: load average at the end $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$OUT/res" "$N" <<'PY'
import statistics, sys
rows = [list(map(int, l.split())) for l in open(sys.argv[1])]
n = int(sys.argv[2])
print("round  bare us/call  bpftrace us/call  datacrumbs us/call  dc events  overhead ratio dc/bt")
ratios = []
for r, bare, bt, dc, ev in rows:
    ob, od = (bt - bare) / n / 1000, (dc - bare) / n / 1000
    ratios.append(od / ob if ob > 0 else float("nan"))
    print("%5d  %12.3f  %16.3f  %18.3f  %9d  %6.2f" % (r, bare / n / 1000, bt / n / 1000,
          dc / n / 1000, ev, ratios[-1]))
med = lambda i: statistics.median(x[i] for x in rows) / n / 1000
print("median %11.3f  %16.3f  %18.3f  %9s  %6.2f (elapsed ratio dc/bt %.2f)" % (
      med(1), med(2), med(3), "", statistics.median(ratios), med(3) / med(2)))
PY
