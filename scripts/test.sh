#!/usr/bin/env bash
# Set up, build and run every test that this machine can run (GPU tests report themselves skipped
# when there is no GPU). Usage: bash scripts/test.sh [--full] [extra ctest args]
#   default  the correctness sweeps run the subset of their configurations that covers every value
#            class of the full list (tests/backends/sweep_sample.hpp)
#   --full   every configuration drawn (the same as MDH_TEST_FULL=1 in the environment)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--full" ]; then
  export MDH_TEST_FULL=1
  shift
fi
start=$SECONDS
bash scripts/setup.sh
jobs=$(nproc 2>/dev/null || echo 2)
# -O1: the tests' time is in NVRTC, PoCL and the GPU, not in host code, and -O1 halves the
# build (01_quickstart.cpp: 170 s at -O3, 84 s at -O1 on a 2-core machine)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" \
  -DMDH_WERROR=ON >/dev/null
cmake --build build -j "$jobs"
built=$SECONDS
sweep="default sweeps"
[ "${MDH_TEST_FULL:-0}" != 0 ] && [ -n "${MDH_TEST_FULL:-}" ] && sweep="full sweeps (MDH_TEST_FULL)"
rc=0
ctest --test-dir build --output-on-failure -j "$jobs" "$@" || rc=$?
echo "test.sh: set-up and build $((built - start)) s, tests $((SECONDS - built)) s ($sweep)"
exit $rc
