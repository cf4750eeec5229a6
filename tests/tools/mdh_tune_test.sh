#!/usr/bin/env bash
# mdh-tune end to end on whatever backend this machine has (PoCL in CI): usage errors, list,
# tune, resume from the log, Ctrl-C leaves a resumable log, run from the parameter file.
set -u
tool="$1"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0
passes=0
pass() { echo "ok   $1"; passes=$((passes + 1)); }
fail() { echo "FAIL $1"; fails=$((fails + 1)); }
expect() {  # expect NAME EXPECTED_RC REGEX -- command...
  local name="$1" want_rc="$2" regex="$3"; shift 4
  local out rc
  out=$("$@" 2>&1); rc=$?
  if [ "$rc" = "$want_rc" ] && grep -Eq -- "$regex" <<<"$out"; then pass "$name"
  else fail "$name (rc $rc, want $want_rc, output:)"; echo "$out" | tail -20; fi
}
expect_each() {  # expect_each NAME EXPECTED_RC REGEX... -- command...: every REGEX matches a line
  local name="$1" want_rc="$2" out rc ok=1 r; shift 2
  local regexes=()
  while [ "$1" != "--" ]; do regexes+=("$1"); shift; done
  shift
  out=$("$@" 2>&1); rc=$?
  [ "$rc" = "$want_rc" ] || ok=0
  for r in "${regexes[@]}"; do grep -Eq -- "$r" <<<"$out" || ok=0; done
  if [ "$ok" = 1 ]; then pass "$name"
  else fail "$name (rc $rc, want $want_rc, output:)"; echo "$out" | tail -20; fi
}

expect "list shows the operators" 0 "^matmul +i,j,k" -- "$tool" list
expect "unknown operator" 2 "unknown operator 'nope'" -- "$tool" tune nope --sizes 4
expect "malformed sizes" 2 "--sizes 'x' is not a whole number >= 1 \(in '4,x'\)" -- "$tool" tune matmul --sizes 4,x
expect "wrong number of sizes" 2 "'matmul' has 3 dimensions" -- "$tool" tune matmul --sizes 4,4
expect "missing sizes" 2 "needs --sizes with 3 values" -- "$tool" tune matmul
expect "unknown option" 2 "unknown option '--fast'" -- "$tool" tune matmul --sizes 4,4,4 --fast
expect "--start-from needs a folder" 2 "--start-from '$work/none' is not a folder" -- "$tool" tune matmul --sizes 4,4,4 --start-from "$work/none"
# What each option accepts: whole numbers that fit, seconds > 0; the rest is rejected at once
# (a size past INT64_MAX used to saturate and hang in the search space at 100 % CPU).
expect "an overflowing size is an error" 2 "--sizes '99999999999999999999' is too large \(at most 9223372036854775807\)" -- \
  timeout -k 5 20 "$tool" tune matmul --sizes 99999999999999999999,64,64 --evaluations 1 --out "$work/p0"
expect "--time 0 is rejected" 2 "--time '0' is not a number of seconds > 0" -- \
  timeout -k 5 30 "$tool" tune matmul --sizes 8,8,8 --time 0 --out "$work/p0"
expect "--time nan is rejected" 2 "--time 'nan' is not a number of seconds > 0" -- \
  timeout -k 5 30 "$tool" tune matmul --sizes 8,8,8 --time nan --out "$work/p0"
expect "--evaluations nan is rejected" 2 "--evaluations 'nan' is not a whole number >= 1" -- \
  timeout -k 5 30 "$tool" tune matmul --sizes 8,8,8 --evaluations nan --out "$work/p0"
expect "--evaluations 2.7 is rejected" 2 "--evaluations '2.7' is not a whole number >= 1" -- \
  timeout -k 5 30 "$tool" tune matmul --sizes 8,8,8 --evaluations 2.7 --out "$work/p0"
expect "run rejects tune's options" 2 "--evaluations is not an option of 'run' \(it is one of 'tune'\)" -- \
  timeout -k 5 30 "$tool" run matmul --sizes 8,8,8 --evaluations 3
expect "tune rejects run's options" 2 "--params is not an option of 'tune'" -- \
  timeout -k 5 30 "$tool" tune matmul --sizes 8,8,8 --params x
expect "--edge-split takes auto, on or off" 2 "--edge-split 'maybe' is not auto, on or off" -- \
  timeout -k 5 30 "$tool" tune matmul --sizes 8,8,8 --edge-split maybe --out "$work/p0"
# --warm-inputs: input names, checked against the operator; recorded in the parameter file
expect "--warm-inputs names an input" 2 "--warm-inputs: 'Z' is not an input of 'matmul' \(its inputs: A, B\)" -- \
  timeout -k 5 30 "$tool" tune matmul --sizes 8,8,8 --warm-inputs A,Z --out "$work/pw0"
expect "--warm-inputs is not an option of run" 2 "--warm-inputs is not an option of 'run'" -- \
  "$tool" run matmul --sizes 8,8,8 --warm-inputs A
expect "tune --warm-inputs B" 0 "kept configuration of matmul" -- \
  timeout -k 5 120 "$tool" tune matmul --sizes 8,8,8 --evaluations 1 --warm-inputs B --out "$work/pw"
if grep -A3 '"warm_inputs"' "$work"/pw/matmul_*.json 2>/dev/null | grep -Eq '^ +1$'; then
  pass "the parameter file records warm input 1 (B)"
else fail "no warm_inputs [1] in $work/pw"; fi
# edge_split is a coordinate of the space at odd sizes (auto), not with --edge-split off
space_of() { timeout -k 5 300 "$tool" tune matmul --sizes 33,35,37 --evaluations 2 "$@" 2>&1 |
  grep -Eo 'search space of [0-9]+'; }
s_auto=$(space_of --out "$work/pe1")
s_off=$(space_of --edge-split off --out "$work/pe2")
if [ -n "$s_auto" ] && [ -n "$s_off" ] && [ "$s_auto" != "$s_off" ]; then pass "--edge-split off: a smaller space ($s_off, auto: $s_auto)"
else fail "--edge-split off: a smaller space (auto '$s_auto', off '$s_off')"; fi
expect "tune --help" 0 "usage: mdh-tune tune OPERATOR" -- "$tool" tune matmul --help
expect "run --help" 0 "Exit codes: 0 ran and matched" -- "$tool" run --help
expect "list --help" 0 "usage: mdh-tune list" -- "$tool" list --help
# Sizes whose buffers cannot fit fail before anything is allocated, naming buffers and bytes.
expect "sizes too large for memory (tune)" 1 "input 'A' f32\[1000000000000,64\] 232.8 TiB.*choose smaller sizes" -- \
  timeout -k 5 20 "$tool" tune matmul --sizes 1000000000000,64,64 --evaluations 1 --out "$work/p0"
expect "sizes too large for memory (run)" 1 "input 'A' f32\[1000000000000,64\] 232.8 TiB.*choose smaller sizes" -- \
  timeout -k 5 20 "$tool" run matmul --sizes 1000000000000,64,64 --params "$work"
expect "sizes past 64-bit bytes" 1 "more than 64-bit sizes can address" -- \
  timeout -k 5 20 "$tool" tune matmul --sizes 9223372036854775807,1,1 --evaluations 1 --out "$work/p0"
# Ctrl-C before the search (here: the CPU reference of a large product) exits at once.
"$tool" tune matmul --sizes 2500,2500,2500 --evaluations 1 --out "$work/big" >"$work/big.out" 2>&1 &
pid=$!
sleep 1.5
kill -INT "$pid"
for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
if kill -0 "$pid" 2>/dev/null; then
  fail "Ctrl-C during the set-up exits at once (still running after 5 s)"; kill -KILL "$pid"; wait "$pid"
else
  wait "$pid"; rc=$?
  if [ "$rc" = 130 ] && grep -q "mdh-tune: interrupted" "$work/big.out"; then
    pass "Ctrl-C during the set-up exits at once"
  else fail "Ctrl-C during the set-up exits at once (rc $rc)"; tail -5 "$work/big.out"; fi
fi
expect "unknown technique" 1 "unknown search technique 'magic'" -- \
  "$tool" tune matmul --sizes 8,8,8 --technique magic --evaluations 1 --out "$work/p0"

first=$("$tool" tune matmul --sizes 24,20,17 --evaluations 4 --seed 3 --out "$work/p" 2>&1); rc=$?
if [ "$rc" = 0 ] && grep -Eq "written to .*matmul_[0-9a-f]{8}_24_20_17.json" <<<"$first"; then
  pass "tune writes a parameter file"
else fail "tune writes a parameter file (rc $rc)"; echo "$first" | tail -20; fi
# Without a terminal: plain progress lines, "best" with its unit, the same number as the summary.
best=$(grep -Eo '^\[atf\] evaluations 4 \(valid [0-9]+\)  best [0-9.]+ us' <<<"$first" | tail -1 | grep -Eo '[0-9.]+ us$')
if [ -n "$best" ] && grep -Eq "kept .*(best evaluated configuration \(|the best evaluated: )$best" <<<"$first"; then
  pass "a plain progress line whose best ($best) is the summary's"
else fail "a plain progress line whose best is the summary's (best '$best')"; echo "$first" | tail -12; fi
if grep -q $'\r' <<<"$first"; then fail "no carriage returns without a terminal"
else pass "no carriage returns without a terminal"; fi
log=$(ls "$work"/p/*.log.jsonl)
n1=$(wc -l <"$log")
expect "a second run resumes from the log" 0 "6 evaluations, [0-9]+ valid, 4 resumed" -- \
  "$tool" tune matmul --sizes 24,20,17 --evaluations 6 --seed 3 --out "$work/p"
# --time counts the log's earlier sessions: a spent budget tunes nothing and says so; --more S
# tunes S seconds more whatever the log holds.
n2=$(wc -l <"$log")
expect "a spent --time tunes nothing and says so" 0 "nothing tuned: .* already holds .*--more S" -- \
  "$tool" tune matmul --sizes 24,20,17 --time 0.01 --seed 3 --out "$work/p"
if [ "$(wc -l <"$log")" = "$n2" ]; then pass "... and measures nothing"
else fail "... and measures nothing"; fi
out=$("$tool" tune matmul --sizes 24,20,17 --more 7 --seed 3 --out "$work/p" 2>&1); rc=$?
if [ "$rc" = 0 ] && grep -q "6 resumed from the log" <<<"$out"; then pass "--more tunes more"
else fail "--more tunes more (rc $rc)"; echo "$out" | tail -20; fi
# a plain line every few seconds (atf::plain_interval: 5 s), and the last one
if [ "$(grep -c '^\[atf\] evaluations' <<<"$out")" -ge 2 ]; then pass "... with a progress line every few seconds"
else fail "... with a progress line every few seconds"; echo "$out" | tail -12; fi
if [ "$(wc -l <"$log")" -gt "$n2" ]; then pass "... and the log grew"
else fail "... and the log grew"; fi
expect "run uses the tuned parameters" 0 "configuration from .*: matches the CPU reference" -- \
  "$tool" run matmul --sizes 24,20,17 --params "$work/p"
expect "run without parameters warns and uses the default" 0 \
  "no parameter file for matmul \[5,6,7\].*mdh-tune tune matmul --sizes 5,6,7" -- \
  "$tool" run matmul --sizes 5,6,7 --params "$work/p"
# A parameter file named for the workload but corrupt: a warning naming it and why, the default
# configuration, and exit code 3 (docs/parameter-files.md).
mkdir -p "$work/pc" && pfile=$(ls "$work"/p/matmul_*_24_20_17.json)
head -c 100 "$pfile" >"$work/pc/$(basename "$pfile")"
expect_each "a corrupt parameter file in the folder is named, exit 3" 3 \
  "parameter file '.*pc/matmul_[0-9a-f]{8}_24_20_17.json': not valid JSON" \
  "no usable parameter file for matmul \[24,20,17\]" "matches the CPU reference" "exit code 3" -- \
  "$tool" run matmul --sizes 24,20,17 --params "$work/pc"
expect "--params FILE that is corrupt is an error" 1 "parameter file '.*': not valid JSON" -- \
  "$tool" run matmul --sizes 24,20,17 --params "$work/pc/$(basename "$pfile")"
expect "--params FILE that does not exist is an error" 1 "--params '.*mistyped.json': no such file or folder" -- \
  "$tool" run matmul --sizes 24,20,17 --params "$work/p/mistyped.json"
expect "--params DIR that does not exist is an error" 1 "--params '.*nowhere': no such file or folder" -- \
  "$tool" run matmul --sizes 24,20,17 --params "$work/nowhere"

# Ctrl-C: the run stops, keeps its log, writes the best so far; the next run resumes.
"$tool" tune bias_add_grad --sizes 33,20 --time 120 --out "$work/q" >"$work/int.out" 2>&1 &
pid=$!
for _ in $(seq 1 600); do
  l=$(ls "$work"/q/*.log.jsonl 2>/dev/null | head -1)
  if [ -n "$l" ] && [ "$(wc -l <"$l")" -ge 4 ]; then break; fi
  sleep 0.1
done
# One tuner per log: a second one on the same log fails at once, naming the log and the holder.
expect "a second tuner on the same log fails at once" 1 \
  "tuning log .*bias_add_grad_.*log.jsonl is in use by another tuner \(pid $pid," -- \
  timeout -k 5 60 "$tool" tune bias_add_grad --sizes 33,20 --evaluations 50 --out "$work/q"
kill -INT "$pid"
wait "$pid"; rc=$?
if [ "$rc" = 0 ] && grep -q "interrupted: run the same command to resume" "$work/int.out"; then
  pass "Ctrl-C ends the run cleanly"
else
  fail "Ctrl-C ends the run cleanly (rc $rc)"; tail -5 "$work/int.out"
fi
done_before=$(grep -c '"configuration"' "$(ls "$work"/q/*.log.jsonl)")
expect "the interrupted run resumes" 0 "resumed from the log" -- \
  "$tool" tune bias_add_grad --sizes 33,20 --evaluations $((done_before + 1)) --out "$work/q"
python3 - "$(ls "$work"/q/*.log.jsonl)" <<'PY' && pass "log lines are all valid JSON" || fail "log lines are all valid JSON"
import json, sys
for line in open(sys.argv[1]):
    json.loads(line)
PY

# The convergence picture of that log, with a peer line; a malformed log is an error.
plot="$(dirname "$0")/../../tools/plot_convergence.py"
expect "convergence plot" 0 "wrote .*conv.png" -- \
  python3 "$plot" "$(ls "$work"/q/*.log.jsonl)" -o "$work/conv.png" --peer "peer=5"
if [ -s "$work/conv.png" ] && [ "$(stat -c %s "$work/conv.png")" -gt 10000 ]; then pass "plot is a picture"
else fail "plot is a picture"; fi
# The default configuration the parameter file kept is drawn, and said.
qfile=$(ls "$work"/q/bias_add_grad_*.json)
python3 -c '
import json, sys
p = json.load(open(sys.argv[1])); p["tuning"]["chosen"] = "default"; p["tuning"]["default_cost"] = 12.5
json.dump(p, open(sys.argv[1], "w"))' "$qfile"
expect "convergence plot shows the kept default" 0 "default configuration 12.50 µs: kept" -- \
  python3 "$plot" "$(ls "$work"/q/*.log.jsonl)" -o "$work/conv2.png"
echo '{"not": "a record"}' >"$work/bad.jsonl"
expect "convergence plot rejects a foreign log" 1 "not an atf evaluation record" -- \
  python3 "$plot" "$work/bad.jsonl" -o "$work/bad.png"

# A build that fails for a reason not the configuration's (here PoCL's kernel cache is a file; a
# race on the cache looks the same) is retried, reported as such and never logged as an invalid
# configuration. PoCL only: CUDA does not read POCL_CACHE_DIR.
if grep -q "(opencl)" <<<"$first"; then
  touch "$work/not_a_dir"
  out=$(POCL_CACHE_DIR="$work/not_a_dir" "$tool" tune matmul --sizes 8,8,8 --evaluations 3 \
        --out "$work/infra" 2>&1); rc=$?
  if [ "$rc" = 1 ] && grep -q "not the configuration's failure: not logged" <<<"$out" &&
     grep -q "not the program's" <<<"$out" && ! grep -q '"valid":false' "$work"/infra/*.log.jsonl; then
    pass "an infrastructure failure is not an invalid configuration"
  else fail "an infrastructure failure is not an invalid configuration (rc $rc)"; echo "$out" | tail -8; fi
fi

# --type: the bf16/f16 variants of the library, TF32 for contractions only, one record per type.
expect "list --type bf16 has no histogram" 0 "^matmul +i,j,k" -- "$tool" list --type bf16
if "$tool" list --type bf16 | grep -q "^histogram"; then fail "bf16 list leaves out histogram"
else pass "bf16 list leaves out histogram"; fi
expect "unknown --type" 2 "--type must be f32, bf16, f16, tf32 or tf32x3, not 'fp8'" -- \
  "$tool" tune matmul --sizes 4,4,4 --type fp8
expect "tf32 refuses a map" 1 "precision tf32 applies to fp32 contractions" -- \
  "$tool" tune mul --sizes 8,8 --type tf32 --evaluations 1 --out "$work/t"
expect "tf32 refuses a fused pair" 1 "tf32 applies to contractions; 'softmax' is a fused pair" -- \
  "$tool" tune softmax --sizes 8,8 --type tf32 --evaluations 1 --out "$work/t"
expect "tf32x3 refuses a map" 1 "precision tf32x3 applies to fp32 contractions" -- \
  "$tool" tune mul --sizes 8,8 --type tf32x3 --evaluations 1 --out "$work/t3"
expect "tf32x3 refuses a fused pair" 1 "tf32x3 applies to contractions; 'softmax' is a fused pair" -- \
  "$tool" tune softmax --sizes 8,8 --type tf32x3 --evaluations 1 --out "$work/t3"
# the surrogate technique past its warm-up (max(16, 2 x dimensions) valid points), so its model
# ranks some asks; the log names it
expect "tune with --technique surrogate" 0 "written to .*matmul_[0-9a-f]{8}_24_20_17.json" -- \
  "$tool" tune matmul --sizes 24,20,17 --technique surrogate --evaluations 80 --out "$work/sg"
if grep -q '"technique":"surrogate(knn,auc_bandit(' "$work"/sg/logs/*.jsonl "$work"/sg/*.jsonl 2>/dev/null; then
  pass "the log names the surrogate technique"
else fail "the log names the surrogate technique"; ls -R "$work/sg"; fi
expect "tune bf16 matmul" 0 "written to .*matmul_[0-9a-f]{8}_24_20_17.json" -- \
  "$tool" tune matmul --type bf16 --sizes 24,20,17 --evaluations 3 --out "$work/b"
if python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["workload"]["types"] == ["bf16"]*3' \
     "$(ls "$work"/b/matmul_*.json)"; then pass "the bf16 record's workload types are bf16"
else fail "the bf16 record's workload types are bf16"; fi
expect "run bf16 from its record" 0 "configuration from .*: matches the CPU reference" -- \
  "$tool" run matmul --type bf16 --sizes 24,20,17 --params "$work/b"
expect "the f32 matmul does not take the bf16 record" 0 "no parameter file for matmul" -- \
  "$tool" run matmul --sizes 24,20,17 --params "$work/b"
expect "tune f16 softmax (fused)" 0 "written to .*softmax_" -- \
  "$tool" tune softmax --type f16 --sizes 9,40 --evaluations 2 --out "$work/h"
# A contraction at a precision of its own (tf32; tf32x3: three TF32 products, near-fp32
# accuracy) round trip: its record says the precision, run reads it back, and the matmul of the
# other precision (--type OTHER; f32 without --type) does not take it.
precision_record() {  # precision_record PRECISION DIR OTHER
  local p=$1 dir=$2 other=$3 other_type=()
  [ "$other" != f32 ] && other_type=(--type "$other")
  expect "tune $p matmul" 0 "written to .*matmul_[0-9a-f]{8}_24_20_17.json" -- \
    "$tool" tune matmul --type "$p" --sizes 24,20,17 --evaluations 3 --out "$dir"
  if python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["workload"]["precision"] == sys.argv[2]' \
       "$(ls "$dir"/matmul_*.json)" "$p"; then pass "the $p record says precision $p"
  else fail "the $p record says precision $p"; fi
  expect "run $p from its record" 0 "configuration from .*: matches the CPU reference" -- \
    "$tool" run matmul --type "$p" --sizes 24,20,17 --params "$dir"
  expect "the $other matmul does not take the $p record" 0 "no parameter file for matmul" -- \
    "$tool" run matmul "${other_type[@]}" --sizes 24,20,17 --params "$dir"
}
precision_record tf32 "$work/t" f32
precision_record tf32x3 "$work/t3" tf32

# tune-layer: every computation of a BERT layer in one command (tools/tune_layer.hpp)
expect "tune-layer --help" 0 "usage: mdh-tune tune-layer bert --batch N --seq N" -- "$tool" tune-layer --help
expect "help names tune-layer" 0 "mdh-tune tune-layer bert" -- "$tool" --help
expect "tune-layer needs a layer" 2 "'tune-layer' needs a LAYER \(bert\)" -- "$tool" tune-layer
expect "tune-layer: unknown layer" 2 "unknown layer 'gpt' \(bert\)" -- "$tool" tune-layer gpt --batch 1 --seq 4
expect "tune-layer needs --batch and --seq" 2 "needs --batch and --seq" -- "$tool" tune-layer bert --batch 2
expect "tune-layer: heads must divide hidden" 2 "--hidden 10 is not a multiple of --heads 4" -- \
  "$tool" tune-layer bert --batch 1 --seq 4 --hidden 10 --heads 4
expect "tune-layer: --sizes is not its option" 2 "unknown option '--sizes' \(tune-layer derives" -- \
  "$tool" tune-layer bert --sizes 1,2
expect "tune-layer: tf32 is not a layer type" 2 "--type must be f32, bf16, f16 or tf32x3 for a layer" -- \
  "$tool" tune-layer bert --batch 1 --seq 4 --type tf32
expect "tune-layer: bad --seq" 2 "--seq '0' is not a whole number >= 1" -- "$tool" tune-layer bert --batch 1 --seq 0
expect "unknown command names tune-layer" 2 "\(list, tune, tune-layer or run\)" -- "$tool" tunelayer
expect_each "tune-layer tunes 9 computations (both attention forms) once each and writes their files" 0 \
  "9 computations" "^qkv +matmul_bias" "^attention +attention" "^ln1,ln2 +layernorm" \
  "^ffn_down +matmul_bias_residual" "^scores +attention_scores" "^softmax +softmax" \
  "^context +attention_context" "^the attention: (one kernel|three kernels) \\(tuned: one kernel" \
  "parameter files in" -- \
  timeout -k 5 600 "$tool" tune-layer bert --batch 1 --seq 5 --hidden 8 --heads 2 --ffn 12 \
  --evaluations 2 --out "$work/layer"
n=$(ls "$work/layer"/*.json 2>/dev/null | wc -l)
if [ "$n" = 9 ]; then pass "tune-layer wrote 9 parameter files"; else fail "tune-layer wrote $n parameter files, not 9"; fi
# each stage timed as the layer runs it: what earlier stages wrote or read is in L2 (every
# computation but the QKV projection, which reads only X and weights, records warm inputs)
n=$(grep -l '"warm_inputs"' "$work/layer"/*.json 2>/dev/null | wc -l)
q=$(grep -l '"warm_inputs"' "$work/layer"/matmul_bias_[0-9a-f]*_*.json 2>/dev/null | wc -l)
if [ "$n" = 8 ] && [ "$q" = 0 ]; then pass "tune-layer records the warm inputs of 8 of 9 files, not qkv's"
else fail "tune-layer: $n files record warm inputs ($q of them qkv's), not 8 (and 0)"; fi
expect "tune-layer: bad --stage-timing" 2 "--stage-timing must be layer or alone, not 'cold'" -- \
  "$tool" tune-layer bert --batch 1 --seq 5 --stage-timing cold
# timed alone now: the layer-timed log is set aside whole, not resumed with other costs
expect "tune-layer --stage-timing alone sets the layer-timed log aside" 0 \
  "was timed with inputs 0 in L2 \(this run: every input flushed from L2\)" -- \
  timeout -k 5 600 "$tool" tune-layer bert --batch 1 --seq 5 --hidden 8 --heads 2 --ffn 12 \
  --evaluations 1 --out "$work/layer" --stages ln1 --stage-timing alone
n=$(ls "$work/layer"/logs/layernorm_*.warm-0 2>/dev/null | wc -l)
if [ "$n" = 1 ]; then pass "the layer-timed layernorm log kept as .warm-0"; else fail "$n .warm-0 logs"; fi
expect "tune-layer: unknown stage" 2 "--stages: unknown stage 'qk' \(the stages: qkv, attention" -- \
  "$tool" tune-layer bert --batch 1 --seq 5 --stages attention,qk
# --stages: only the named stages (a fresh folder: their two files and no others)
out=$(timeout -k 5 600 "$tool" tune-layer bert --batch 1 --seq 5 --hidden 8 --heads 2 --ffn 12 \
  --evaluations 1 --out "$work/stages" --stages attention,qkv 2>&1)
rc=$?
n=$(ls "$work/stages"/*.json 2>/dev/null | wc -l)
if [ "$rc" = 0 ] && [ "$n" = 2 ] && grep -Eq "2 computations" <<<"$out" &&
  grep -Eq "^attention +attention" <<<"$out" && grep -Eq "^qkv +matmul_bias" <<<"$out" &&
  ! grep -q "the layer's kernels" <<<"$out"; then
  pass "tune-layer --stages tunes only those stages (2 files, no layer total)"
else
  fail "tune-layer --stages (rc $rc, $n files, output:)"; echo "$out" | tail -20
fi

# --type tf32x3: the weight products' files say precision tf32x3 (qkv: a product; ln1: not)
out=$(timeout -k 5 600 "$tool" tune-layer bert --batch 1 --seq 5 --hidden 8 --heads 2 --ffn 12 \
  --type tf32x3 --evaluations 1 --out "$work/layer_tf32x3" --stages qkv,ln1 2>&1)
rc=$?
if [ "$rc" = 0 ] && grep -q "run the layer with: 08_bert_layer .*--type tf32x3" <<<"$out" &&
  python3 -c 'import json,sys; assert [json.load(open(f))["workload"].get("precision", "ieee") for f in sys.argv[1:]] == ["tf32x3", "ieee"]' \
    "$work"/layer_tf32x3/matmul_bias_[0-9a-f]*_*.json "$work"/layer_tf32x3/layernorm_*.json; then
  pass "tune-layer --type tf32x3: the qkv record says precision tf32x3, layernorm's ieee"
else
  fail "tune-layer --type tf32x3 (rc $rc, output:)"; echo "$out" | tail -20; ls "$work/layer_tf32x3"
fi

echo "mdh-tune: $passes passed, $fails failed"
exit $((fails > 0))
