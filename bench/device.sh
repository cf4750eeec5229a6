#!/usr/bin/env bash
# One call on the GPU machine: build, then one or more of
#   tests  - the gpu-labelled tests
#   sanitize - compute-sanitizer memcheck (GPU sweep, fused pairs) and racecheck (IR-sample sweep),
#            both over the tensor-core (MMA) configurations of backends_mma_gpu
#   tune   - tune the benchmark cases (TUNE_SECONDS each, default 20, over all sessions of a
#            case's log; or TUNE_MORE seconds more each; resumes from $TUNE_PARAMS/logs, default
#            $PARAMS)
#   scaling - evaluations per second on one GPU, then on every visible GPU: SCALING_CASES tuned
#            SCALING_SECONDS each (defaults conv3x3_resnet,dot and 20) from fresh logs and a fresh
#            kernel cache, summarised by bench/tuning_rate.py
#   ours   - only our kernels (BENCH_CASES=a,b to filter)
#   profile - ncu of our kernels (PROFILE_CASES) and cuBLAS's (PROFILE_VENDOR_CASES, with a
#            carried VENDOR_BIN), then our memory-bound cases (FLUSH_CASES) timed after a memset
#            flush and after a read-only flush, twice alternating (bench/l2_flush.hpp)
#   bench  - our kernels (parameter files in $PARAMS) and the peers in the same run, then
#            bench/RESULTS.md and a short table (BENCH_CASES=a,b: only those, on every side)
#   layer  - the BERT encoder layer (issue 20) at LAYER_SHAPES (default "16x128 8x512") in
#            LAYER_TYPES (default "f32 bf16"): mdh-tune tune-layer, LAYER_TUNE_SECONDS (default 3)
#            per computation into $PARAMS/bert_layer/<type>, each starting from the nearest
#            tuned shape under LAYER_START_FROM (default $PARAMS; LAYER_TUNE=0: use the files as
#            they are), then our layer (bench/layer_bench: stages and whole, per call and graph
#            replay) and the peers on the same data (bench/peers/layer.py, LAYER_PEERS, within
#            LAYER_PEERS_BUDGET_S, default 150), then $OUT/LAYER.md (bench/layer_report.py)
# TUNE_SUITE / BENCH_SUITE=any_shape (suites of bench/cases.json: bert, sc21, toplas, any_shape,
# bf16, tf32; comma-separated) add that suite's cases to TUNE_CASES / BENCH_CASES; TUNE_TARGETS /
# BENCH_TARGETS=lp_memory,... keep only the suite's cases with one of those targets (to split a
# suite over calls). The bf16 and tf32 cases (issue 18) tune into $TUNE_PARAMS/bf16 and /tf32.
# usage: OUT=dir bash bench/device.sh tests tune bench      (OUT defaults to ./device-out)
# COMMIT=hash names the commit in RESULTS.md (the device copy's .git may be older than the tree)
# PARAMS=dir: the parameter files (default: params/h100 on an H100, params/h200 otherwise;
# parameter files are per device, and one tuned on another GPU model is never used)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/device-out}
mkdir -p "$OUT"
jobs=$(nproc)
modes=("$@")
[ ${#modes[@]} -gt 0 ] || modes=(tests bench)
t0=$(date +%s)
if [ -z "${PARAMS:-}" ]; then
  PARAMS=params/h200
  nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | grep -q H100 && PARAMS=params/h100
fi
stamp() { echo "[device.sh $(($(date +%s) - t0))s] $*"; }
# TUNE_SUITE / BENCH_SUITE as case names (bench/peers/cases.py --names); a failure stops here,
# since an empty list would select every case.
if [ -n "${TUNE_SUITE:-}" ]; then
  names=$(python3 bench/peers/cases.py --names --suite "$TUNE_SUITE" --targets "${TUNE_TARGETS:-}") &&
    [ -n "$names" ] ||
    { echo "TUNE_SUITE=$TUNE_SUITE: no cases"; exit 2; }
  TUNE_CASES=${TUNE_CASES:+$TUNE_CASES,}$names
fi
if [ -n "${BENCH_SUITE:-}" ]; then
  names=$(python3 bench/peers/cases.py --names --suite "$BENCH_SUITE" --targets "${BENCH_TARGETS:-}") &&
    [ -n "$names" ] ||
    { echo "BENCH_SUITE=$BENCH_SUITE: no cases"; exit 2; }
  BENCH_CASES=${BENCH_CASES:+$BENCH_CASES,}$names
fi

# PREBUILT=dir: binaries built on the dev machine (carried with the call) instead of building here.
BIN=${PREBUILT:-build-device}
stamp "configure + build"
if [ -n "${PREBUILT:-}" ]; then
  stamp "using prebuilt binaries in $PREBUILT"
else
cmake -S . -B build-device -DCMAKE_BUILD_TYPE=Release -DMDH_BUILD_TESTS=ON >"$OUT/cmake.log" 2>&1 || {
  tail -30 "$OUT/cmake.log"; exit 1; }
# what the modes run (mdh-tune itself is not: tune_cases tunes)
targets=(mdh_bench tune_cases)
[ "${modes[*]}" = layer ] && targets=()
for m in "${modes[@]}"; do [ "$m" = layer ] && targets+=(layer_bench mdh-tune-layer 08_bert_layer); done
for m in "${modes[@]}"; do [ "$m" = tests ] || [ "$m" = sanitize ] && targets+=(backends_cuda_gpu backends_mma_gpu backends_epilogue_gpu backends_attention_gpu backends_edge_tiles_gpu); done
# Each target is one translation unit, and `cmake --build --target a b c` builds them one after
# another on one core (7+ minutes for mdh-tune alone): build them side by side instead, after
# the tests' shared doctest object.
if [[ " ${targets[*]} " == *" backends_"* ]]; then
  cmake --build build-device --target mdh_doctest_main >"$OUT/build.log" 2>&1 || {
    grep -E "error" "$OUT/build.log" | head -30; exit 1; }
fi
pids=()
for t in "${targets[@]}"; do
  cmake --build build-device --target "$t" >"$OUT/build_$t.log" 2>&1 &
  pids+=($!)
done
failed=0
for p in "${pids[@]}"; do wait "$p" || failed=1; done
cat "$OUT"/build_*.log >>"$OUT/build.log" 2>/dev/null
rm -f "$OUT"/build_*.log
[ "$failed" = 0 ] || { grep -E "error" "$OUT/build.log" | head -30; exit 1; }
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
    # memcheck on the whole GPU sweep and the fused pairs (about a minute on the H200);
    # racecheck (much slower) on the IR-sample sweep
    for tool in memcheck racecheck; do
      filter='--test-case=CUDA sweep*,fused*'
      [ "$tool" = racecheck ] && filter='--test-case=CUDA sweep over the IR samples*'
      stamp "compute-sanitizer $tool"
      compute-sanitizer --tool "$tool" --error-exitcode 9 "$bin" "$filter" >"$OUT/sanitizer_$tool.log" 2>&1
      rc=$?
      tail -4 "$OUT/sanitizer_$tool.log"
      summary+=("compute-sanitizer $tool: rc=$rc ($(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitizer_$tool.log" | tail -1))")
    done
    # the tensor-core kernels (cp.async, ldmatrix, mma.sync): random configurations per case
    mma_bin=$(find "$BIN" -name backends_mma_gpu -type f | head -1)
    for tool in memcheck racecheck; do
      stamp "compute-sanitizer $tool (MMA)"
      compute-sanitizer --tool "$tool" --error-exitcode 9 "$mma_bin" '--test-case=CUDA: random MMA*' \
        >"$OUT/sanitizer_mma_$tool.log" 2>&1
      rc=$?
      tail -4 "$OUT/sanitizer_mma_$tool.log"
      summary+=("compute-sanitizer $tool (MMA): rc=$rc ($(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitizer_mma_$tool.log" | tail -1))")
    done
    ;;
  tune)
    stamp "tuning (${TUNE_MORE:-${TUNE_SECONDS:-20}} s per case)"
    tp=${TUNE_PARAMS:-$PARAMS}
    # TUNE_MORE=S: S seconds more per case whatever its log holds (tune_cases --more)
    budget=(--seconds "${TUNE_SECONDS:-20}")
    [ -n "${TUNE_MORE:-}" ] && budget=(--more "$TUNE_MORE")
    # every committed device folder starts searches: the nearest shape of this device, else
    # of another of the same architecture (an H200's on an H100)
    "$BIN"/bench/tune_cases "${budget[@]}" --params "$tp" --start-from params \
      ${TUNE_CASES:+--cases "$TUNE_CASES"} 2>"$OUT/tune.err" | tee "$OUT/tune.txt"
    tar czf "$OUT/params.tgz" "$tp"  # one file: the call returns a limited count
    summary+=("tuned: $(($(grep -c . "$OUT/tune.txt") - 1)) cases, parameter files in \$OUT/params.tgz")
    ;;
  scaling)
    ngpu=$(nvidia-smi -L 2>/dev/null | grep -c GPU)
    all=$(seq -s, 0 $((ngpu - 1)))
    : >"$OUT/scaling.txt"
    for vis in 0 "$all"; do
      n=$(($(tr -cd , <<<"$vis" | wc -c) + 1))
      stamp "scaling: $n GPU(s) (CUDA_VISIBLE_DEVICES=$vis)"
      d=$(mktemp -d)
      CUDA_VISIBLE_DEVICES=$vis MDH_CACHE_DIR=$d/cache "$BIN"/bench/tune_cases \
        --seconds "${SCALING_SECONDS:-20}" --params "$d/params" \
        --cases "${SCALING_CASES:-conv3x3_resnet,dot}" >"$OUT/scaling_$n.txt" 2>&1
      python3 bench/tuning_rate.py --cpus "$jobs" --label "${n}gpu" "$d/params/logs" |
        tee -a "$OUT/scaling.txt"
      tar czf "$OUT/scaling_logs_$n.tgz" -C "$d/params" logs
      rm -rf "$d"
    done
    summary+=("scaling ($ngpu GPUs, $jobs CPU threads): see \$OUT/scaling.txt")
    ;;
  ours)
    stamp "our kernels only"
    "$BIN"/bench/mdh_bench --params "$PARAMS" --out "$OUT/ours.json" \
      ${BENCH_CASES:+--cases "$BENCH_CASES"} 2>"$OUT/ours.err" | tee "$OUT/ours.txt"
    tail -5 "$OUT/ours.err"
    ;;
  profile)
    pc=${PROFILE_CASES:-dot,matvec,jacobi3d_256,mul,matmul_768x3072,matmul_16x1000x2048,mcc_resnet50_l1}
    sections=(--section SpeedOfLight --section LaunchStats --section Occupancy
      --section WarpStateStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis)
    stamp "ncu: our kernels ($pc)"
    timeout 240 ncu --clock-control none --cache-control all -k 'regex:^mdh_' -c "${PROFILE_COUNT:-80}" \
      "${sections[@]}" --csv --page details "$BIN"/bench/mdh_bench --params "$PARAMS" \
      --cases "$pc" --reps 1 --out "$OUT/ncu_ours.json" >"$OUT/ncu_ours.csv" 2>"$OUT/ncu_ours.err"
    summary+=("ncu ours: rc=$? ($(grep -c '"gpu__time_duration.sum"\|Duration' "$OUT/ncu_ours.csv") duration rows)")
    vc=${PROFILE_VENDOR_CASES:-matmul_768x3072,matmul_16x1000x2048,dot,matvec}
    vbin=${VENDOR_BIN:-}  # built here: nvcc ... bench/peers/vendor.cu (bench/README.md), carried
    site=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' 2>/dev/null)
    vld=$(for l in libcudnn.so.9 libcublas.so.13 libcublasLt.so.13; do
      find /usr/local/cuda/ /usr/lib/x86_64-linux-gnu/ /opt/ ${site:+"$site/nvidia/"} -maxdepth 6 \
        -name "$l" -print -quit 2>/dev/null | xargs -r dirname; done | sort -u | paste -sd:)
    if [ -n "$vbin" ]; then
      stamp "ncu: cuBLAS ($vc)"
      python3 bench/peers/cases.py --vendor-lines >"$OUT/vendor_cases.txt" 2>/dev/null
      LD_LIBRARY_PATH="$vld:${LD_LIBRARY_PATH:-}" NVIDIA_TF32_OVERRIDE=0 timeout 200 ncu --clock-control none --cache-control all -c "${PROFILE_COUNT:-80}" \
        --section SpeedOfLight --section LaunchStats --section Occupancy --csv --page details \
        "$vbin" --cases "$OUT/vendor_cases.txt" --out "$OUT/ncu_vendor.json" --only "$vc" --reps 3 \
        --no-ceilings >"$OUT/ncu_vendor.csv" 2>"$OUT/ncu_vendor.err"
      summary+=("ncu vendor: rc=$?")
    fi
    fc=${FLUSH_CASES:-dot,matvec,jacobi3d_256,mul,sub,bias_gelu,softmax,attn_mask_subgraph}
    for round in 1 2; do
      for fl in memset read; do
        stamp "flush $fl, round $round"
        "$BIN"/bench/mdh_bench --params "$PARAMS" --cases "$fc" --flush "$fl" \
          --out "$OUT/flush_${fl}_$round.json" >"$OUT/flush_${fl}_$round.txt" 2>&1
      done
    done
    python3 - "$OUT" <<'PY' | tee "$OUT/flush.txt"
import json, sys
d = sys.argv[1]
runs = {(f, r): json.load(open(f"{d}/flush_{f}_{r}.json"))["cases"] for f in ("memset", "read") for r in (1, 2)}
print(f"{'case':22s} {'graph memset':>13s} {'graph read':>11s} {'read/memset':>12s}")
for c in runs[("memset", 1)]:
    m = [runs[("memset", r)][c].get("graph_us") for r in (1, 2)]
    x = [runs[("read", r)][c].get("graph_us") for r in (1, 2)]
    if None in m + x: continue
    print(f"{c:22s} {min(m):13.2f} {min(x):11.2f} {min(x) / min(m):12.2f}")
PY
    for f in ncu_ours ncu_vendor; do
      [ -s "$OUT/$f.csv" ] && python3 bench/ncu_summary.py "$OUT/$f.csv" >"$OUT/$f.txt"
    done
    (cd "$OUT" && tar czf profile.tgz --remove-files ncu_*.csv ncu_*.err ncu_*.json vendor_* flush_* 2>/dev/null)
    summary+=("profile: \$OUT/ncu_ours.txt, ncu_vendor.txt (bench/ncu_summary.py), flush.txt; raw in profile.tgz")
    ;;
  bench)
    stamp "our kernels"
    "$BIN"/bench/mdh_bench --params "$PARAMS" --out "$OUT/ours.json" \
      ${BENCH_CASES:+--cases "$BENCH_CASES"} 2>"$OUT/ours.err" | tee "$OUT/ours.txt"
    stamp "peers"
    PEER_CASES=${BENCH_CASES:-} bash bench/peers/run_peers.sh "$OUT" >"$OUT/peers.log" 2>&1 ||
      tail -20 "$OUT/peers.log"
    stamp "report"
    python3 bench/report.py --ours "$OUT/ours.json" --vendor "$OUT/vendor.json" \
      --frameworks "$OUT/frameworks.json" --out "$OUT/RESULTS.md" \
      ${BENCH_CASES:+--cases "$BENCH_CASES"} \
      --commit "${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}" >"$OUT/report.log" 2>&1 ||
      tail -20 "$OUT/report.log"
    # the call returns a limited number of files: the raw outputs travel as one archive
    (cd "$OUT" && tar czf raw.tgz --remove-files $(ls ours.* vendor* frameworks* peers.log report.log 2>/dev/null))
    summary+=("bench: \$OUT/RESULTS.md, raw outputs in \$OUT/raw.tgz")
    ;;
  layer)
    lp=$PARAMS/bert_layer
    shapes=(${LAYER_SHAPES:-16x128 8x512})
    types=(${LAYER_TYPES:-f32 bf16})
    if [ "${LAYER_TUNE:-1}" != 0 ]; then
      : >"$OUT/layer_tune.txt"
      start_from=()  # where the stages' starts come from, when that folder exists
      [ -d "${LAYER_START_FROM:-$PARAMS}" ] && start_from=(--start-from "${LAYER_START_FROM:-$PARAMS}")
      for sh in "${shapes[@]}"; do
        for ty in "${types[@]}"; do
          stamp "layer: tune-layer bert ${sh} ${ty} (${LAYER_TUNE_SECONDS:-3} s per computation)"
          "$BIN"/tools/mdh-tune-layer bert --batch "${sh%x*}" --seq "${sh#*x}" --type "$ty" \
            --time "${LAYER_TUNE_SECONDS:-3}" ${start_from[@]+"${start_from[@]}"} --out "$lp/$ty" >>"$OUT/layer_tune.txt" 2>>"$OUT/layer_tune.err" ||
            echo "tune-layer $sh $ty: rc=$?" | tee -a "$OUT/layer_tune.txt"
        done
      done
      tail -4 "$OUT/layer_tune.txt"
      tar czf "$OUT/params_bert_layer.tgz" "$lp"
      summary+=("layer: parameter files in \$OUT/params_bert_layer.tgz (unpack here: tar xzf)")
    fi
    # the whole layer on the GPU against the double-precision CPU reference, with these files
    for ty in "${types[@]}"; do
      ex=$(find "$BIN" -name 08_bert_layer -type f | head -1)
      [ -n "$ex" ] || break
      stamp "layer: examples/08_bert_layer --type $ty (checked against the CPU reference)"
      sh=${shapes[0]}
      timeout 120 "$ex" --type "$ty" --params "$lp/$ty" --batch "${sh%x*}" --seq "${sh#*x}" \
        >"$OUT/layer_example_$ty.txt" 2>&1
      rc=$?
      tail -3 "$OUT/layer_example_$ty.txt"
      summary+=("layer: 08_bert_layer $ty $sh: rc=$rc")
    done
    stamp "layer: ours"
    shape_list=$(IFS=,; echo "${shapes[*]}")
    type_list=$(IFS=,; echo "${types[*]}")
    data="$OUT/layer_data"
    "$BIN"/bench/layer_bench --params "$lp" --out "$OUT/ours_layer.json" --dump "$data" \
      --shapes "$shape_list" --types "$type_list" 2>"$OUT/layer_bench.err" | tee "$OUT/layer_bench.txt"
    stamp "layer: peers (budget ${LAYER_PEERS_BUDGET_S:-150} s)"
    XLA_PYTHON_CLIENT_PREALLOCATE=false NVIDIA_TF32_OVERRIDE=0 \
      timeout -k 10 $((${LAYER_PEERS_BUDGET_S:-150} + 60)) python3 bench/peers/layer.py --dump "$data" \
      --budget-s "${LAYER_PEERS_BUDGET_S:-150}" ${LAYER_PEERS:+--peers "$LAYER_PEERS"} \
      --out "$OUT/peers_layer.json" >"$OUT/peers_layer.log" 2>&1
    echo "peers rc=$?"; tail -25 "$OUT/peers_layer.log"
    rm -rf "$data"  # inputs, weights and our outputs: hundreds of MB
    python3 bench/layer_report.py --ours "$OUT/ours_layer.json" --peers "$OUT/peers_layer.json" \
      --out "$OUT/LAYER.md" --commit "${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}" \
      >"$OUT/layer_report.log" 2>&1 || tail -20 "$OUT/layer_report.log"
    sed -n '/^## Target/,/^Versions/p' "$OUT/LAYER.md"
    # the call returns at most 8 files: everything but LAYER.md and the parameter files in one
    (cd "$OUT" && tar czf layer_raw.tgz --remove-files $(ls ours_layer.json peers_layer.* \
      layer_bench.* layer_tune.* layer_example_* layer_report.log 2>/dev/null))
    summary+=("layer: \$OUT/LAYER.md (copy to bench/LAYER.md); ours_layer.json, peers_layer.json, logs in \$OUT/layer_raw.tgz")
    ;;
  *) echo "unknown mode $m"; exit 2 ;;
  esac
done
stamp "done"
printf '%s\n' "${summary[@]}"
[ -f "$OUT/RESULTS.md" ] && sed -n '/^| case/,/^$/p' "$OUT/RESULTS.md" | head -40
exit 0
