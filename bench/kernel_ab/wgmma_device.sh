#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# One call on an H100/H200 for the wgmma path (mma = 2, docs/lowering.md 7.1): first the A/B
# timing of bench/kernel_ab/wgmma/*.cu beside cuBLAS (time_sources), then the GPU tests of
# backends_mma_gpu for wgmma (and the fused-starts test, which now holds wgmma starts too).
# Output under $OUT (default ./device-out): timing.txt, gpu_tests.txt, build logs.
#   bash bench/kernel_ab/wgmma_device.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/device-out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
# one process per source: a kernel that faults or hangs costs its own line only
nvcc -O2 -arch=sm_90 bench/kernel_ab/time_sources.cu -o /tmp/time_sources -lcublas -lnvrtc -lcuda &&
  for f in bench/kernel_ab/wgmma/*.cu; do
    timeout 60 /tmp/time_sources "$f" 2>&1 || echo "$f: FAILED (rc $?)"
  done | tee "$OUT/timing.txt"
cmake -S . -B build-wgmma -DCMAKE_BUILD_TYPE=Release -DMDH_BUILD_TESTS=ON >"$OUT/cmake.log" 2>&1 &&
  cmake --build build-wgmma --target mdh_doctest_main >"$OUT/build.log" 2>&1 &&
  cmake --build build-wgmma --target backends_mma_gpu -j"$(nproc)" >>"$OUT/build.log" 2>&1 || {
  tail -30 "$OUT/cmake.log" "$OUT/build.log"; exit 1; }
timeout 420 ./build-wgmma/tests/backends/backends_mma_gpu -tc='CUDA wgmma*,CUDA: the fused*' 2>&1 |
  tee "$OUT/gpu_tests.txt" | tail -40
