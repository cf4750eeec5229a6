#!/usr/bin/env bash
# One call on the GPU machine: build, then one or more of
#   tests  - the gpu-labelled tests (GPU_TESTS="backends_attention_gpu ...": only those, with
#            their parts; with PREBUILT: every carried backends_*_gpu binary, filtered by
#            GPU_TEST_FILTER when set; GPU_TEST_TIMEOUT=S: each test stopped after S s, its output
#            kept; GPU_TEST_FILTER without PREBUILT: the GPU_TESTS binaries one after another,
#            only the doctest test cases it names). Side by side (ctest -j), the long binaries in
#            parts: on an H200 (2026-11-28)
#            build 112-126 s, then the longest parts backends_mma_gpu_wgmma 359 s,
#            backends_mma_gpu_random 333 s, backends_cuda_gpu 325 s (before its split)
#   sanitize - compute-sanitizer memcheck (GPU sweep, fused pairs) and racecheck (IR-sample sweep),
#            both over the tensor-core (MMA) configurations of backends_mma_gpu
#   tune   - tune the benchmark cases (TUNE_SECONDS each, default 20, over all sessions of a
#            case's log; or TUNE_MORE seconds more each; resumes from $TUNE_PARAMS/logs, default
#            $PARAMS)
#   scaling - evaluations per second on one GPU, then on every visible GPU: SCALING_CASES tuned
#            SCALING_SECONDS each (defaults conv3x3_resnet,dot and 20) from fresh logs and a fresh
#            kernel cache, summarised by bench/tuning_rate.py
#   convergence - issue 19 item 4, "tuning that converges in a minute": CONV_CASES (default ten
#            cases of every family, below) tuned CONV_SECONDS each (default 540), one case per GPU,
#            all at once, each from a fresh log and kernel cache, pinned to its share of the cores
#            (nproc / GPUs, or CONV_THREADS) with as many compile threads; then
#            bench/convergence_report.py: the best by 60 s against the best at the end of the same
#            run, within 5 % or not, and the curves. Into $OUT/convergence/: CONVERGENCE.md,
#            convergence_all.png, the curves of the first CONV_PLOTS cases (default 5) and
#            convergence.tgz (logs, parameter files, output, every curve). More cases than GPUs
#            run in rounds; refused (exit 2, before building) when rounds x CONV_SECONDS passes
#            CONV_LIMIT (default 570 s, counted from device.sh's start: a call is 600 s).
#            CONV_DRY_RUN=1 prints the plan and the commands and exits (no GPU, nothing built;
#            CONV_GPUS=n plans for n GPUs). CONV_TECHNIQUE=surrogate: that search technique
#            (tune_cases --technique; default auc_bandit).
#   ours   - only our kernels (BENCH_CASES=a,b to filter)
#   profile - ncu of our kernels (PROFILE_CASES) and cuBLAS's (PROFILE_VENDOR_CASES, with a
#            carried VENDOR_BIN), then our memory-bound cases (FLUSH_CASES) timed after a memset
#            flush and after a read-only flush, twice alternating (bench/l2_flush.hpp). Cases with
#            no parameter file under $PARAMS (bf16/tf32 ones: $PARAMS/bf16, /tf32) profile the
#            default configuration: the summary names them (bench/untuned_cases.py)
#   bench  - our kernels (parameter files in $PARAMS) and the peers in the same run, then
#            bench/RESULTS.md and a short table (BENCH_CASES=a,b: only those, on every side)
#   layer  - the BERT encoder layer (issue 20) at LAYER_SHAPES (default "16x128 8x512") in
#            LAYER_TYPES (default "f32 bf16"; also tf32x3: fp32 with the four weight products as
#            three TF32 products each, near-fp32 accuracy, its peers fp32 with TF32 off):
#            mdh-tune tune-layer, LAYER_TUNE_SECONDS (default 3) per computation into
#            $PARAMS/bert_layer/<type>, each starting from the nearest tuned shape under
#            LAYER_START_FROM (default $PARAMS; LAYER_TUNE=0: use the files as they are),
#            then our layer (bench/layer_bench: stages and whole, per call and graph
#            replay) and the peers on the same data (bench/peers/layer.py, LAYER_PEERS, within
#            LAYER_PEERS_BUDGET_S, default 150), then $OUT/LAYER.md (bench/layer_report.py).
#            LAYER_STAGES=attention,...: tune only those stages (mdh-tune tune-layer --stages);
#            LAYER_RUN=0: tune only (no example, no layer run, no peers)
#            The tuned files also come back in $OUT/params_bert_layer.tgz: the next call copies
#            the tree afresh over them, so unpack and commit them before measuring them again
#            (LAYER_TUNE=0)
#   layer_profile - ncu --set full of our layer kernels matching LAYER_NCU_KERNELS (default the
#            one-kernel attention) at LAYER_SHAPES (or LAYER_PROFILE_SHAPES) in LAYER_TYPES
#            (files in $PARAMS/bert_layer),
#            and of PyTorch's scaled_dot_product_attention on the same shapes
#            (bench/peers/attention_alone.py): $OUT/ncu_layer.txt, one text report;
#            LAYER_NCU_SOURCE=1 adds our kernel's stall reasons and its SASS with the sampled
#            stalls per instruction ($OUT/ncu_sass_<shape>_<type>.csv)
#   layer_kernels - every kernel of our layer at LAYER_SHAPES in LAYER_TYPES, one ncu pass with
#            a few metrics (duration, DRAM bytes, throughputs, launch shape) and the caches left as
#            the layer leaves them (--cache-control none): where the layer's time goes, kernel by
#            kernel ($OUT/layer_kernels.txt, bench/ncu_layer_kernels.py)
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
# The device tool returns only the first few files of $OUT (by name): on every exit, also when a
# timeout stops the call, everything written there goes into $OUT/0_bundle.tgz, which sorts first.
bundle() {
  (cd "$OUT" && find . -type f ! -name 0_bundle.tgz -print0 | tar czf 0_bundle.tgz --null -T -) \
    2>/dev/null || true
}
trap bundle EXIT
trap 'exit 143' TERM INT
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

# convergence: the plan, checked before anything is built (a call is 600 s: a plan that cannot
# end inside CONV_LIMIT is refused now, not after the build)
if [[ " ${modes[*]} " == *" convergence "* ]]; then
  # BERT GEMM fp32, bf16 GEMM, a conv, a TCCG contraction, softmax (the five drawn), then a
  # batched matmul, layernorm, dot, an odd matvec and an odd-shape product (checked as numbers)
  conv_cases=${CONV_CASES:-matmul_768x3072,matmul_768x768_bf16,conv3x3_resnet,tccg_abc_adec_ebd,softmax,bmm_qk,layernorm,dot,matvec_12289x3001,matmul_997x1009x769}
  IFS=, read -r -a conv_given <<<"$conv_cases"
  conv_list=()
  for c in "${conv_given[@]}"; do [ -n "$c" ] && conv_list+=("$c"); done
  conv_cases=$(IFS=,; echo "${conv_list[*]}")
  conv_s=${CONV_SECONDS:-540}
  conv_limit=${CONV_LIMIT:-570}
  conv_gpus=${CONV_GPUS:-$(nvidia-smi -L 2>/dev/null | grep -c GPU)}
  for v in CONV_SECONDS=$conv_s CONV_LIMIT=$conv_limit CONV_GPUS=$conv_gpus; do
    [[ ${v#*=} =~ ^[0-9]+$ ]] || { echo "convergence: $v is not a whole number"; exit 2; }
  done
  [ ${#conv_list[@]} -gt 0 ] || { echo "convergence: CONV_CASES is empty"; exit 2; }
  bad=$(python3 bench/peers/cases.py --names --cases "$conv_cases" 2>&1 >/dev/null) ||
    { echo "convergence: CONV_CASES: ${bad%%; known*} (bench/peers/cases.py --names lists them)"; exit 2; }
  [ "$conv_gpus" -gt 0 ] ||
    { echo "convergence: no GPU (nvidia-smi -L; CONV_GPUS=n plans a dry run for n GPUs)"; exit 2; }
  conv_rounds=$(( (${#conv_list[@]} + conv_gpus - 1) / conv_gpus ))
  conv_threads=${CONV_THREADS:-$(( jobs / conv_gpus > 0 ? jobs / conv_gpus : 1 ))}
  echo "convergence: ${#conv_list[@]} cases on $conv_gpus GPU(s): $conv_rounds round(s) x $conv_s s =" \
    "$((conv_rounds * conv_s)) s of tuning (CONV_LIMIT $conv_limit s from device.sh's start);" \
    "$conv_threads CPU threads per case ($jobs here)"
  if [ $((conv_rounds * conv_s)) -gt "$conv_limit" ]; then
    echo "convergence: refused: $conv_rounds rounds x $conv_s s = $((conv_rounds * conv_s)) s > CONV_LIMIT=$conv_limit s."
    echo "  One case per GPU: at most $conv_gpus cases per call at CONV_SECONDS=$conv_s; split over calls:"
    for ((k = 0; k < ${#conv_list[@]}; k += conv_gpus)); do
      echo "    CONV_CASES=$(IFS=,; echo "${conv_list[*]:k:conv_gpus}")"
    done
    echo "  or CONV_SECONDS=$((conv_limit / conv_rounds)) (the end is then that, not the issue's 600 s)."
    exit 2
  fi
  [ "$conv_rounds" -gt 1 ] &&
    echo "convergence: warning: more cases than GPUs: $conv_rounds rounds of $conv_s s, one after another"
  [ -z "${PREBUILT:-}" ] && [ "${CONV_DRY_RUN:-0}" = 0 ] &&
    echo "convergence: warning: no PREBUILT: the build counts against CONV_LIMIT (from device.sh's start)"
  [ "${#modes[@]}" -gt 1 ] &&
    echo "convergence: warning: other modes in the same call (${modes[*]}): their time counts against" \
      "CONV_LIMIT, and \$OUT brings back at most 8 files (convergence leaves $(( ${CONV_PLOTS:-5} + 3 )))"
fi
# the cores of GPU slot $1 (of $2 each), as a taskset list; empty when this machine has too few
conv_cpus() {
  python3 -c 'import os, sys
c = sorted(os.sched_getaffinity(0)); i, n = int(sys.argv[1]), int(sys.argv[2])
print(",".join(map(str, c[i * n:(i + 1) * n])) if len(c) >= (i + 1) * n else "")' "$1" "$2"
}
# the command that tunes case $1 on GPU $2 into folder $3 with kernel cache $4 for at most $5 s
conv_command() {
  conv_cmd=(env CUDA_VISIBLE_DEVICES="$2" MDH_CACHE_DIR="$4" timeout -k 5 "$5")
  local cpus
  cpus=$(conv_cpus "$2" "$conv_threads")
  [ -n "$cpus" ] && [ "${CONV_PIN:-1}" != 0 ] && command -v taskset >/dev/null && conv_cmd+=(taskset -c "$cpus")
  conv_cmd+=("$BIN"/bench/tune_cases --seconds "$conv_s" --params "$3/params" --cases "$1")
  [ "${conv_threads_flag:-1}" = 1 ] && conv_cmd+=(--threads "$conv_threads")
  [ -n "${CONV_TECHNIQUE:-}" ] && conv_cmd+=(--technique "$CONV_TECHNIQUE")
}
if [ "${CONV_DRY_RUN:-0}" != 0 ] && [[ " ${modes[*]} " == *" convergence "* ]]; then
  [ -x "$BIN"/bench/tune_cases ] && { "$BIN"/bench/tune_cases --threads 1 --list --cases dot >/dev/null 2>&1 ||
    conv_threads_flag=0; }
  for ((k = 0; k < ${#conv_list[@]}; k++)); do
    g=$((k % conv_gpus))
    conv_command "${conv_list[k]}" "$g" "$OUT/convergence/${conv_list[k]}" /tmp/tmp.FRESH/cache \
      "$(( conv_limit / conv_rounds ))"
    echo "round $((k / conv_gpus + 1)), GPU $g: $(printf '%q ' "${conv_cmd[@]}")>$OUT/convergence/${conv_list[k]}/tune.txt"
  done
  echo "(/tmp/tmp.FRESH: a new mktemp -d per case, removed after its round; the timeout is what is" \
    "left of CONV_LIMIT when the tuning starts, over the rounds)"
  echo "then: python3 bench/convergence_report.py $OUT/convergence --cases $conv_cases --seconds $conv_s," \
    "and $OUT/convergence/convergence.tgz"
  echo "convergence: dry run (CONV_DRY_RUN=1): nothing built or run"
  exit 0
fi
stamp "configure + build"
if [ -n "${PREBUILT:-}" ]; then
  stamp "using prebuilt binaries in $PREBUILT"
else
cmake -S . -B build-device -DCMAKE_BUILD_TYPE=Release -DMDH_BUILD_TESTS=ON \
  -DMDH_TEST_TIMEOUT_CAP="${GPU_TEST_TIMEOUT:-0}" >"$OUT/cmake.log" 2>&1 || {
  tail -30 "$OUT/cmake.log"; exit 1; }
# what the modes run (mdh-tune itself is not: tune_cases tunes)
targets=()
for m in "${modes[@]}"; do
  case "$m" in tests | layer | layer_profile | layer_kernels | sanitize) ;; *) targets=(mdh_bench tune_cases) ;; esac
done
for m in "${modes[@]}"; do [ "$m" = layer ] && targets+=(layer_bench mdh-tune-layer 08_bert_layer); done
for m in "${modes[@]}"; do [ "$m" = layer_profile ] || [ "$m" = layer_kernels ] && targets+=(layer_bench); done
# GPU_TESTS: which GPU test binaries the tests mode builds and runs (default: all of them)
gpu_tests=(${GPU_TESTS:-backends_cuda_gpu backends_mma_gpu backends_types_gpu backends_epilogue_gpu backends_attention_gpu backends_edge_tiles_gpu backends_overlap_gpu})
for m in "${modes[@]}"; do [ "$m" = sanitize ] && targets+=(backends_cuda_gpu backends_mma_gpu); done
for m in "${modes[@]}"; do [ "$m" = tests ] && targets+=("${gpu_tests[@]}"); done
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
    if [ -n "${PREBUILT:-}" ]; then
      # carried binaries come without CTest's files: every carried GPU test binary in turn
      # (GPU_TEST_FILTER: a doctest --test-case filter for all of them), rc the first failure's
      rc_all=0
      : >"$OUT/gpu_tests.log"
      while IFS= read -r t; do
        echo "== $t" >>"$OUT/gpu_tests.log"
        "$t" ${GPU_TEST_FILTER:+"--test-case=$GPU_TEST_FILTER"} >>"$OUT/gpu_tests.log" 2>&1
        r=$?
        [ "$r" = 0 ] || [ "$rc_all" != 0 ] || rc_all=$r
      done < <(find "$BIN" -name 'backends_*_gpu' -type f -perm -u+x | sort)
      (exit "$rc_all")
    elif [ -n "${GPU_TEST_FILTER:-}" ]; then
      # GPU_TEST_FILTER without PREBUILT: the built GPU_TESTS binaries in turn, only the test
      # cases the doctest filter names (e.g. "CUDA wgmma: matmuls at odd*"), rc the first failure's
      rc_all=0
      : >"$OUT/gpu_tests.log"
      for t in "${gpu_tests[@]}"; do
        bin=$(find "$BIN" -name "$t" -type f -perm -u+x | head -1)
        echo "== $t ($GPU_TEST_FILTER)" >>"$OUT/gpu_tests.log"
        "$bin" "--test-case=$GPU_TEST_FILTER" >>"$OUT/gpu_tests.log" 2>&1
        r=$?
        [ "$r" = 0 ] || [ "$rc_all" != 0 ] || rc_all=$r
      done
      (exit "$rc_all")
    else
      # The tests side by side (-j): each compiles its kernels with NVRTC one after another on
      # one core, so the suite takes its longest test, not their sum; the long ones are
      # registered in parts (NAME_part, mdh_add_test PARTS), which the pattern takes along.
      # GPU_TEST_TIMEOUT=S (configured above as MDH_TEST_TIMEOUT_CAP: ctest --timeout would not
      # override the tests' own TIMEOUT): ctest stops each test after S s and still writes what
      # it printed (a call cut off by the run limit returns nothing of a test still running).
      ctest --test-dir "$BIN" -L gpu -R "^($(IFS='|'; echo "${gpu_tests[*]}"))(_[a-z_]+)?\$" -j "$jobs" \
        --output-on-failure >"$OUT/gpu_tests.log" 2>&1
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
  convergence)
    cdir=$OUT/convergence
    mkdir -p "$cdir"
    [ -x "$BIN"/bench/tune_cases ] || echo "convergence: warning: no $BIN/bench/tune_cases"
    "$BIN"/bench/tune_cases --threads 1 --list --cases dot >/dev/null 2>&1 || {
      conv_threads_flag=0
      echo "convergence: warning: $BIN/bench/tune_cases takes no --threads (older than branch conv):" \
        "each case compiles on every core, however many cases share them"; }
    left=$(( conv_limit - ($(date +%s) - t0) ))
    if [ $((conv_rounds * conv_s)) -gt "$left" ]; then
      echo "convergence: refused: $left s left of CONV_LIMIT=$conv_limit s, $conv_rounds x $conv_s s needed"
      summary+=("convergence: refused ($left s left of CONV_LIMIT, $((conv_rounds * conv_s)) s needed)")
      continue
    fi
    slot=$(( left / conv_rounds ))  # each round's time, its grace for start-up and the last compiles
    for ((r = 0; r < conv_rounds; r++)); do
      pids=() caches=()
      stamp "convergence: round $((r + 1)) of $conv_rounds, $conv_s s (each killed after $slot s)"
      for ((g = 0; g < conv_gpus; g++)); do
        k=$((r * conv_gpus + g))
        [ "$k" -lt ${#conv_list[@]} ] || break
        c=${conv_list[k]}
        rm -rf "${cdir:?}/$c"  # a fresh log: nothing resumed
        mkdir -p "$cdir/$c"
        caches+=("$(mktemp -d)")
        conv_command "$c" "$g" "$cdir/$c" "${caches[-1]}/cache" "$slot"
        printf '%q ' "${conv_cmd[@]}" >"$cdir/$c/command"
        ("${conv_cmd[@]}" >"$cdir/$c/tune.txt" 2>"$cdir/$c/tune.err"; echo $? >"$cdir/$c/rc") &
        pids+=($!)
      done
      for p in "${pids[@]}"; do wait "$p"; done
      rm -rf "${caches[@]}"
    done
    # the report by CONV_LIMIT + 25 s (595 s: inside the call's 600), without curves if that is close
    left=$(( conv_limit + 25 - ($(date +%s) - t0) ))
    no_plots=()
    [ "$left" -lt 20 ] && no_plots=(--no-plots)
    stamp "convergence: report (${left} s left${no_plots[*]:+, no curves})"
    gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
    timeout $(( left > 10 ? left : 10 )) python3 bench/convergence_report.py "$cdir" \
      --cases "$conv_cases" --seconds "$conv_s" ${no_plots[@]+"${no_plots[@]}"} \
      --device "${gpu_name:-GPU} (one of $conv_gpus), $conv_threads of $jobs CPU threads per case, technique ${CONV_TECHNIQUE:-auc_bandit}" \
      --commit "${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}" >"$cdir/report.log" 2>&1 ||
      tail -20 "$cdir/report.log"
    sed -n '/^\*\*/,/^$/p;/^| case/,/^$/p' "$cdir/CONVERGENCE.md" 2>/dev/null
    # the call returns at most 8 files, 2 folders down: the curves of the first CONV_PLOTS cases
    # stay beside CONVERGENCE.md and convergence_all.png, everything else goes into one archive
    for c in "${conv_list[@]:0:${CONV_PLOTS:-5}}"; do
      [ -f "$cdir/plots/$c.png" ] && cp "$cdir/plots/$c.png" "$cdir/$c.png"
    done
    packed=()
    for f in "${conv_list[@]}" plots convergence.json report.log; do [ -e "$cdir/$f" ] && packed+=("$f"); done
    tar czf "$cdir/convergence.tgz" -C "$cdir" --remove-files "${packed[@]}"
    summary+=("convergence: \$OUT/convergence/CONVERGENCE.md, convergence_all.png, the first ${CONV_PLOTS:-5} cases' curves; logs, parameter files and all curves in convergence.tgz")
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
    # a case without a parameter file in $PARAMS (for its type) profiles the default
    # configuration, which says nothing about the tuned kernel: say which, where it shows
    untuned=$(python3 bench/untuned_cases.py "$OUT/ncu_ours.json" 2>/dev/null)
    [ -z "$untuned" ] || summary+=("ncu ours: UNTUNED (no parameter file under $PARAMS, the default configuration profiled): $untuned")
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
            --time "${LAYER_TUNE_SECONDS:-3}" ${start_from[@]+"${start_from[@]}"} \
            ${LAYER_STAGES:+--stages "$LAYER_STAGES"} --out "$lp/$ty" >>"$OUT/layer_tune.txt" 2>>"$OUT/layer_tune.err" ||
            echo "tune-layer $sh $ty: rc=$?" | tee -a "$OUT/layer_tune.txt"
        done
      done
      tail -4 "$OUT/layer_tune.txt"
      tar czf "$OUT/params_bert_layer.tgz" "$lp"
      summary+=("layer: parameter files in \$OUT/params_bert_layer.tgz (unpack here: tar xzf)")
    fi
    if [ "${LAYER_RUN:-1}" = 0 ]; then
      summary+=("layer: tuned only (LAYER_RUN=0)")
      continue
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
    data=$(mktemp -d)/layer_data  # outside $OUT: a call cut short still returns the few files there
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
  layer_profile)
    lp=$PARAMS/bert_layer
    : >"$OUT/ncu_layer.txt"
    for sh in ${LAYER_PROFILE_SHAPES:-${LAYER_SHAPES:-16x128 8x512}}; do
      for ty in ${LAYER_TYPES:-bf16}; do
        stamp "layer_profile: ncu of ours, $sh $ty"
        echo "=== ours: $sh $ty (${LAYER_NCU_KERNELS:-^mdh_attention_[0-9a-f]+\$})" >>"$OUT/ncu_layer.txt"
        timeout 200 ncu --set full -k "regex:${LAYER_NCU_KERNELS:-^mdh_attention_[0-9a-f]+\$}" -c 1 \
          "$BIN"/bench/layer_bench --params "$lp" --out /tmp/layer_profile.json --shapes "$sh" \
          --types "$ty" --reps 1 >>"$OUT/ncu_layer.txt" 2>&1
        echo "rc=$?" >>"$OUT/ncu_layer.txt"
        if [ "${LAYER_NCU_SOURCE:-0}" != 0 ]; then
          # where the warps stall, per SASS instruction (sampled), and the stall reasons
          stamp "layer_profile: ncu source page (SASS) of ours, $sh $ty"
          timeout 200 ncu --section SourceCounters --section WarpStateStats \
            -k "regex:${LAYER_NCU_KERNELS:-^mdh_attention_[0-9a-f]+\$}" -c 1 --page source \
            --print-source sass --csv "$BIN"/bench/layer_bench --params "$lp" \
            --out /tmp/layer_profile.json --shapes "$sh" --types "$ty" --reps 1 \
            >"$OUT/ncu_sass_${sh}_$ty.csv" 2>&1
          timeout 200 ncu --metrics "regex:smsp__pcsamp_warps_issue_stalled_.*" \
            -k "regex:${LAYER_NCU_KERNELS:-^mdh_attention_[0-9a-f]+\$}" -c 1 --page raw \
            "$BIN"/bench/layer_bench --params "$lp" --out /tmp/layer_profile.json --shapes "$sh" \
            --types "$ty" --reps 1 >>"$OUT/ncu_layer.txt" 2>&1
        fi
        stamp "layer_profile: ncu of scaled_dot_product_attention, $sh $ty"
        echo "=== PyTorch scaled_dot_product_attention: $sh $ty" >>"$OUT/ncu_layer.txt"
        timeout 120 ncu --set full -k "regex:(?i)fmha|attention|flash|attn" -c 1 --launch-skip 2 \
          python3 bench/peers/attention_alone.py --batch "${sh%x*}" --seq "${sh#*x}" --type "$ty" \
          >>"$OUT/ncu_layer.txt" 2>&1
        echo "rc=$?" >>"$OUT/ncu_layer.txt"
      done
    done
    summary+=("layer_profile: \$OUT/ncu_layer.txt")
    ;;
  layer_kernels)
    lp=$PARAMS/bert_layer
    : >"$OUT/layer_kernels.txt"
    metrics=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum
    metrics+=,sm__throughput.avg.pct_of_peak_sustained_elapsed
    metrics+=,gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed
    metrics+=,launch__grid_size,launch__block_size,launch__registers_per_thread
    for sh in ${LAYER_SHAPES:-16x128 8x512}; do
      for ty in ${LAYER_TYPES:-bf16}; do
        stamp "layer_kernels: ncu of every kernel of our layer, $sh $ty"
        # --reps 1: each stage once, then the layer once (layer_bench's order)
        timeout 200 ncu --clock-control none --cache-control none -k 'regex:^mdh_' \
          --metrics "$metrics" --csv "$BIN"/bench/layer_bench --params "$lp" \
          --out /tmp/layer_kernels.json --shapes "$sh" --types "$ty" --reps 1 \
          >/tmp/layer_kernels_${sh}_${ty}.csv 2>&1
        echo "ncu rc=$?"
        python3 bench/ncu_layer_kernels.py --title "$sh $ty" /tmp/layer_kernels_${sh}_${ty}.csv \
          >>"$OUT/layer_kernels.txt" 2>&1
      done
    done
    cat "$OUT/layer_kernels.txt"
    summary+=("layer_kernels: \$OUT/layer_kernels.txt")
    ;;
  *) echo "unknown mode $m"; exit 2 ;;
  esac
done
stamp "done"
printf '%s\n' "${summary[@]}"
[ -f "$OUT/RESULTS.md" ] && sed -n '/^| case/,/^$/p' "$OUT/RESULTS.md" | head -40
exit 0
