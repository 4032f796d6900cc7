#!/usr/bin/env bash
# demo.sh: installs what is missing, builds, traces a real program (dd) with io_posix.lua
# and prints where the trace is and a summary of it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/setup.sh
out=${DEMO_OUT:-/tmp/datacrumbs-demo}
rm -rf "$out" && mkdir -p "$out"
echo
echo "\$ datacrumbs run io_posix.lua -o $out -- dd if=/dev/zero of=$out/dd.out bs=64k count=100"
build/datacrumbs run io_posix.lua -o "$out" -- dd if=/dev/zero of="$out/dd.out" bs=64k count=100
trace=$(ls "$out"/*.pfw.gz)
echo
echo "trace: $trace"
python3 scripts/pfw_summary.py "$trace"
