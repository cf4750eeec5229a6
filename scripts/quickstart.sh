#!/usr/bin/env bash
# Set up, build and run the quick-start example: MatMul as an MDH expression, tuned on this
# machine's device (the GPU, or the CPU through OpenCL/PoCL without one), saved as a parameter
# file under build/examples/params, loaded back and checked against the CPU reference.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
jobs=$(nproc 2>/dev/null || echo 2)
# -O1 as scripts/test.sh (one build folder for both): the kernels are compiled by NVRTC or the
# OpenCL driver, and -O1 halves the host build (mdh-tune is one large translation unit)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" >/dev/null
cmake --build build -j "$jobs" --target 01_quickstart mdh-tune  # mdh-tune: the README's next step
cd build/examples && ./01_quickstart "${1:-20}" params
