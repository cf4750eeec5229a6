#!/usr/bin/env bash
# One call on the GPU machine: build, then one or more of
#   tests  - the gpu-labelled tests
#   sanitize - compute-sanitizer memcheck (GPU sweep) and racecheck (IR-sample sweep)
#   tune   - tune the benchmark cases (TUNE_SECONDS each, default 20; resumes from params/h200/logs)
#   ours   - only our kernels (BENCH_CASES=a,b to filter)
#   bench  - our kernels (parameter files in params/h200) and the peers in the same run, then
#            bench/RESULTS.md and a short table
# usage: OUT=dir bash bench/device.sh tests tune bench      (OUT defaults to ./device-out)
# COMMIT=hash names the commit in RESULTS.md (the device copy's .git may be older than the tree)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/device-out}
mkdir -p "$OUT"
jobs=$(nproc)
modes=("$@")
[ ${#modes[@]} -gt 0 ] || modes=(tests bench)
t0=$(date +%s)
stamp() { echo "[device.sh $(($(date +%s) - t0))s] $*"; }

# PREBUILT=dir: binaries built on the dev machine (carried with the call) instead of building here.
BIN=${PREBUILT:-build-device}
stamp "configure + build"
if [ -n "${PREBUILT:-}" ]; then
  stamp "using prebuilt binaries in $PREBUILT"
else
cmake -S . -B build-device -DCMAKE_BUILD_TYPE=Release -DMDH_BUILD_TESTS=ON >"$OUT/cmake.log" 2>&1 || {
  tail -30 "$OUT/cmake.log"; exit 1; }
targets=(mdh_bench tune_cases mdh-tune)
for m in "${modes[@]}"; do [ "$m" = tests ] || [ "$m" = sanitize ] && targets+=(backends_cuda_gpu); done
cmake --build build-device -j "$jobs" --target "${targets[@]}" >"$OUT/build.log" 2>&1 || {
  grep -E "error" "$OUT/build.log" | head -30; exit 1; }
fi
summary=()

for m in "${modes[@]}"; do
  case "$m" in
  tests)
    stamp "gpu tests"
    if [ -n "${PREBUILT:-}" ]; then  # carried binaries come without CTest's files
      "$(find "$BIN" -name backends_cuda_gpu -type f | head -1)" >"$OUT/gpu_tests.log" 2>&1
    else
      ctest --test-dir "$BIN" -L gpu --output-on-failure >"$OUT/gpu_tests.log" 2>&1
    fi
    rc=$?
    tail -15 "$OUT/gpu_tests.log"
    summary+=("gpu tests: rc=$rc ($(grep -E 'tests passed|test cases:' "$OUT/gpu_tests.log" | tail -1))")
    ;;
  sanitize)
    bin=$(find "$BIN" -name backends_cuda_gpu -type f | head -1)
    # memcheck on the whole GPU sweep; racecheck (much slower) on the IR-sample sweep
    for tool in memcheck racecheck; do
      filter='--test-case=CUDA sweep*'
      [ "$tool" = racecheck ] && filter='--test-case=CUDA sweep over the IR samples*'
      stamp "compute-sanitizer $tool"
      compute-sanitizer --tool "$tool" --error-exitcode 9 "$bin" "$filter" >"$OUT/sanitizer_$tool.log" 2>&1
      rc=$?
      tail -4 "$OUT/sanitizer_$tool.log"
      summary+=("compute-sanitizer $tool: rc=$rc ($(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitizer_$tool.log" | tail -1))")
    done
    ;;
  tune)
    stamp "tuning (${TUNE_SECONDS:-20} s per case)"
    "$BIN"/bench/tune_cases --seconds "${TUNE_SECONDS:-20}" --params params/h200 \
      ${TUNE_CASES:+--cases "$TUNE_CASES"} 2>"$OUT/tune.err" | tee "$OUT/tune.txt"
    tar czf "$OUT/params_h200.tgz" params/h200  # one file: the call returns a limited count
    summary+=("tuned: $(($(grep -c . "$OUT/tune.txt") - 1)) cases, parameter files in \$OUT/params_h200.tgz")
    ;;
  ours)
    stamp "our kernels only"
    "$BIN"/bench/mdh_bench --params params/h200 --out "$OUT/ours.json" \
      ${BENCH_CASES:+--cases "$BENCH_CASES"} 2>"$OUT/ours.err" | tee "$OUT/ours.txt"
    tail -5 "$OUT/ours.err"
    ;;
  bench)
    stamp "our kernels"
    "$BIN"/bench/mdh_bench --params params/h200 --out "$OUT/ours.json" 2>"$OUT/ours.err" |
      tee "$OUT/ours.txt"
    stamp "peers"
    bash bench/peers/run_peers.sh "$OUT" >"$OUT/peers.log" 2>&1 || tail -20 "$OUT/peers.log"
    stamp "report"
    python3 bench/report.py --ours "$OUT/ours.json" --vendor "$OUT/vendor.json" \
      --frameworks "$OUT/frameworks.json" --out "$OUT/RESULTS.md" \
      --commit "${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}" >"$OUT/report.log" 2>&1 ||
      tail -20 "$OUT/report.log"
    # the call returns a limited number of files: the raw outputs travel as one archive
    (cd "$OUT" && tar czf raw.tgz --remove-files $(ls ours.* vendor* frameworks* peers.log report.log 2>/dev/null))
    summary+=("bench: \$OUT/RESULTS.md, raw outputs in \$OUT/raw.tgz")
    ;;
  *) echo "unknown mode $m"; exit 2 ;;
  esac
done
stamp "done"
printf '%s\n' "${summary[@]}"
[ -f "$OUT/RESULTS.md" ] && sed -n '/^| case/,/^$/p' "$OUT/RESULTS.md" | head -40
exit 0
