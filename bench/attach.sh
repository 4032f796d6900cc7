#!/usr/bin/env bash
# attach.sh: attach and detach time of session uprobes on 1k, 10k and 35k functions of one
# library (libLLVM from Debian has ~35k: `datacrumbs list --functions` lists them), and
# the start-up of io_all.lua (89 functions). attach: from starting datacrumbs to the
# traced command's first instruction (script, resolution, BPF load, attach); detach: from
# the command's end to datacrumbs' exit (drain, end record, links closed). Median of
# ROUNDS runs each. Run as root. With BASE=another/datacrumbs (e.g. a build of main), each
# round runs that build and this one in alternation: the two columns side by side.
#
# Knobs: LIB=/usr/lib/x86_64-linux-gnu/libLLVM-14.so.1  COUNTS="1000 10000 35000"
#        ROUNDS=3  RETURNS=auto (dc.uprobe's returns: auto, hijack, none)
#        OUT=/tmp/datacrumbs-attach  DATACRUMBS=build/datacrumbs  BASE=(none)
#        MAXNAME=(none): of the first N names, only those of at most MAXNAME bytes
#        (MAXNAME=63: the ones a build before issue 12 kept, for the same work on both)
#        PLAN_CACHE=(none): DATACRUMBS_PLAN_CACHE for the runs: "off" plans every
#        function every run (a file's first run); unset, the default cache, which the
#        untimed first run of each script fills (core/plancache.h; a build before it has
#        none, so BASE plans every run either way). Unset, BASE keeps its plans in a
#        cache of its own (/var/cache/datacrumbs-bench-base): the cache names the build
#        that planned, so two builds sharing one would each plan again at every run
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
DC=${DATACRUMBS:-$root/build/datacrumbs}
BASE=${BASE:-}
LIB=${LIB:-/usr/lib/x86_64-linux-gnu/libLLVM-14.so.1}
COUNTS=${COUNTS:-"1000 10000 35000"}
ROUNDS=${ROUNDS:-3}
RETURNS=${RETURNS:-auto}
MAXNAME=${MAXNAME:-}
PLAN_CACHE=${PLAN_CACHE:-}
[ -z "$PLAN_CACHE" ] || export DATACRUMBS_PLAN_CACHE="$PLAN_CACHE"
OUT=${OUT:-/tmp/datacrumbs-attach}
die() { echo "attach.sh: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "needs root"
[ -x "$DC" ] || die "no $DC: build first"
[ -z "$BASE" ] || [ -x "$BASE" ] || die "BASE=$BASE is not an executable"
[ -f "$LIB" ] || die "no $LIB (Debian package libllvm14), or set LIB"
rm -rf "$OUT"
mkdir -m 0755 -p "$OUT"
cc -O2 -Wall -o "$OUT/loop" "$here/loop.c"
head -c 4096 /dev/urandom >"$OUT/small"
"$DC" list --functions "$LIB" | awk '!/^#/ { print $1 }' >"$OUT/funcs"
total=$(wc -l <"$OUT/funcs")
export DATACRUMBS_SCRIPT_PATH=${DATACRUMBS_SCRIPT_PATH:-$root/scripts}

# one run of SCRIPT by DATACRUMBS: "attach_ms detach_ms"
one() {
	rm -rf "$OUT/t"
	mkdir "$OUT/t"
	local cache=${DATACRUMBS_PLAN_CACHE:-}
	[ -n "$PLAN_CACHE" ] || [ "$2" != "$BASE" ] || cache=/var/cache/datacrumbs-bench-base
	DATACRUMBS_PLAN_CACHE=$cache python3 - "$2" run "$1" -q -o "$OUT/t" -- "$OUT/loop" 0 "$OUT/small" <<'PY'
import subprocess, sys, time
t0 = time.clock_gettime_ns(time.CLOCK_REALTIME)
p = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, text=True)
t1 = time.clock_gettime_ns(time.CLOCK_REALTIME)
kv = dict(x.split("=", 1) for x in p.stdout.split())
if p.returncode:
    sys.exit("datacrumbs failed: %d" % p.returncode)
print("%.1f %.1f" % ((int(kv["start_ns"]) - t0) / 1e6, (t1 - int(kv["end_ns"])) / 1e6))
PY
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
report() { # NAME SCRIPT
	local a="" d="" ba="" bd=""
	# untimed: the page cache warm for both builds, the plan cache filled for this one
	one "$2" "$DC" >/dev/null
	[ -z "$BASE" ] || one "$2" "$BASE" >/dev/null
	for _ in $(seq "$ROUNDS"); do
		if [ -n "$BASE" ]; then
			r=$(one "$2" "$BASE")
			ba+="${r% *}"$'\n'
			bd+="${r#* }"$'\n'
		fi
		r=$(one "$2" "$DC")
		a+="${r% *}"$'\n'
		d+="${r#* }"$'\n'
	done
	if [ -n "$BASE" ]; then
		echo "$1: attach $(printf %s "$ba" | median) -> $(printf %s "$a" | median) ms, detach $(printf %s "$bd" | median) -> $(printf %s "$d" | median) ms (BASE -> this build, median of $ROUNDS alternating)"
	else
		echo "$1: attach $(printf %s "$a" | median) ms, detach $(printf %s "$d" | median) ms (median of $ROUNDS)"
	fi
}
echo "attach.sh: $DC${BASE:+ (BASE $BASE)}, $LIB ($total functions), returns = $RETURNS${MAXNAME:+, names of at most $MAXNAME bytes}${PLAN_CACHE:+, plan cache $PLAN_CACHE}"
report "io_all.lua (89 functions)" io_all.lua
for n in $COUNTS; do
	[ "$n" -le "$total" ] || n=$total
	{
		echo 'local dc = require "datacrumbs"'
		echo "dc.uprobe { file = \"$LIB\", returns = \"$RETURNS\", functions = {"
		head -n "$n" "$OUT/funcs" | awk -v m="$MAXNAME" 'm == "" || length($0) <= m + 0' |
			sed 's/.*/  "&",/'
		echo '} }'
	} >"$OUT/attach_$n.lua"
	report "$n functions" "$OUT/attach_$n.lua"
done
