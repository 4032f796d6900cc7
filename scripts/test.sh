#!/usr/bin/env bash
# test.sh: installs what is missing, builds, and runs every test (ctest). The tests that
# need BPF run for real as root and say SKIP loudly otherwise.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/setup.sh
cd build
ctest --output-on-failure "$@"
