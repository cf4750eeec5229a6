#!/usr/bin/env bash
# One device call for the edge-tile A/B (README.md, "Odd sizes"): times the sources of
# bench/kernel_ab/edges (edge_sources.sh) beside cublasSgemm, one process per source, while the
# bench targets and backends_edge_tiles_gpu build in build-device; then runs that test.
#   OUT=dir bash bench/kernel_ab/edge_device.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/device-out}
mkdir -p "$OUT"
t0=$(date +%s)
stamp() { echo "[edge_device $(($(date +%s) - t0))s] $*"; }
# PREBUILT=dir: binaries built on the dev machine and carried with the call (dir/tests/backends/
# backends_edge_tiles_gpu), instead of building here
if [ -n "${PREBUILT:-}" ]; then
  true &
else
  (cmake -S . -B build-device -DCMAKE_BUILD_TYPE=Release -DMDH_BUILD_TESTS=ON >"$OUT/cmake.log" 2>&1 &&
    cmake --build build-device --target mdh_doctest_main >"$OUT/build.log" 2>&1 &&
    for t in tune_cases mdh_bench backends_edge_tiles_gpu; do
      nice -n 19 cmake --build build-device --target "$t" >"$OUT/build_$t.log" 2>&1 &
    done && wait) &
fi
nvcc -O2 -arch=sm_90 bench/kernel_ab/time_sources.cu -o /tmp/time_sources -lcublas -lnvrtc -lcuda ||
  exit 1
stamp "timing ${AB_DIR:-bench/kernel_ab/edges}"
for f in "${AB_DIR:-bench/kernel_ab/edges}"/*.cu; do
  timeout 60 /tmp/time_sources "$f" 2>&1 | tail -3
done | tee "$OUT/ab.txt"
stamp "waiting for the build"
wait $build
bdir=${PREBUILT:-build-device}
stamp "built: $(ls $bdir/bench/tune_cases $bdir/bench/mdh_bench 2>&1 | tr '\n' ' ')"
bin=$(find "$bdir" -name backends_edge_tiles_gpu -type f | head -1)
[ -n "$bin" ] && timeout 200 "$bin" >"$OUT/edge_tiles_gpu.log" 2>&1
echo "backends_edge_tiles_gpu rc=$? $(tail -3 "$OUT/edge_tiles_gpu.log" | tr '\n' ' ')"
stamp done
