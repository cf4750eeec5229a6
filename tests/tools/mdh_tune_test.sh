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

expect "list shows the operators" 0 "^matmul +i,j,k" -- "$tool" list
expect "unknown operator" 2 "unknown operator 'nope'" -- "$tool" tune nope --sizes 4
expect "malformed sizes" 2 "malformed --sizes '4,x'" -- "$tool" tune matmul --sizes 4,x
expect "wrong number of sizes" 2 "'matmul' has 3 dimensions" -- "$tool" tune matmul --sizes 4,4
expect "missing sizes" 2 "needs --sizes with 3 values" -- "$tool" tune matmul
expect "unknown option" 2 "unknown option '--fast'" -- "$tool" tune matmul --sizes 4,4,4 --fast
expect "unknown technique" 1 "unknown search technique 'magic'" -- \
  "$tool" tune matmul --sizes 8,8,8 --technique magic --evaluations 1 --out "$work/p0"

expect "tune writes a parameter file" 0 "written to .*matmul_[0-9a-f]{8}_24_20_17.json" -- \
  "$tool" tune matmul --sizes 24,20,17 --evaluations 4 --seed 3 --out "$work/p"
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
expect "--more tunes more" 0 "6 resumed from the log" -- \
  "$tool" tune matmul --sizes 24,20,17 --more 5 --seed 3 --out "$work/p"
if [ "$(wc -l <"$log")" -gt "$n2" ]; then pass "... and the log grew"
else fail "... and the log grew"; fi
expect "run uses the tuned parameters" 0 "configuration from .*: matches the CPU reference" -- \
  "$tool" run matmul --sizes 24,20,17 --params "$work/p"
expect "run without parameters warns and uses the default" 0 \
  "no parameter file for matmul \[5,6,7\].*mdh-tune tune matmul --sizes 5,6,7" -- \
  "$tool" run matmul --sizes 5,6,7 --params "$work/p"

# Ctrl-C: the run stops, keeps its log, writes the best so far; the next run resumes.
"$tool" tune bias_add_grad --sizes 33,20 --time 120 --out "$work/q" >"$work/int.out" 2>&1 &
pid=$!
for _ in $(seq 1 600); do
  l=$(ls "$work"/q/*.log.jsonl 2>/dev/null | head -1)
  if [ -n "$l" ] && [ "$(wc -l <"$l")" -ge 4 ]; then break; fi
  sleep 0.1
done
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
echo '{"not": "a record"}' >"$work/bad.jsonl"
expect "convergence plot rejects a foreign log" 1 "not an atf evaluation record" -- \
  python3 "$plot" "$work/bad.jsonl" -o "$work/bad.png"

echo "mdh-tune: $passes passed, $fails failed"
exit $((fails > 0))
