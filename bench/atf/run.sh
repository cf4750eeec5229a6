#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Search-space construction: atf (on one thread and on two) versus python-constraint2, Kernel Tuner
# and pyATF on the five published spaces (tests/atf/spaces), timed in the same run, every tool the
# same number of times (REPEATS, default 5): best and median of those runs. Then tuning quality
# (AUC bandit versus random).
# Usage: [REPEATS=N] bench/atf/run.sh [build-dir]   (default build-atf; a Python venv is made inside it)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
build="${1:-$repo/build-atf}"
spaces="$repo/tests/atf/spaces"
repeats="${REPEATS:-5}"
mkdir -p "$build/bench-atf"

# Our side: built with the same flags as a Release build.
"${CXX:-g++}" -std=c++20 -O2 -DNDEBUG -DMDH_SPACES_DIR="\"$spaces\"" -I"$repo" "$here/space_construction.cpp" -o "$build/bench-atf/space_construction" -pthread
"${CXX:-g++}" -std=c++20 -O2 -DNDEBUG -I"$repo" "$here/tuning_quality.cpp" -o "$build/bench-atf/tuning_quality" -pthread

# Peers from PyPI.
venv="$build/venv"
if [ ! -x "$venv/bin/python" ]; then python3 -m venv "$venv"; fi
installed=()
for pkg in python-constraint2 kernel_tuner pyatf; do
  if "$venv/bin/pip" install -q "$pkg" >"$build/bench-atf/pip-$pkg.log" 2>&1; then installed+=("$pkg")
  else echo "note: pip install $pkg failed (see $build/bench-atf/pip-$pkg.log)"; fi
done
tools="$(IFS=,; echo "${installed[*]:-}" | sed 's/python-constraint2/python-constraint2/')"

ours="$build/bench-atf/ours.jsonl"
peers="$build/bench-atf/peers.jsonl"
"$build/bench-atf/space_construction" "$spaces" --repeats "$repeats" --json >"$ours"
: >"$peers"
if [ -n "$tools" ]; then
  "$venv/bin/python" -W ignore "$here/construction_peers.py" "$spaces" "$tools" "$repeats" >"$peers" 2>"$build/bench-atf/peers.err" || true
fi
"$venv/bin/python" - "$ours" "$peers" <<'PY'
import json, sys
ours = {r["space"]: r for r in map(json.loads, open(sys.argv[1]))}
peers = {}
for line in open(sys.argv[2]):
    r = json.loads(line)
    peers.setdefault(r["space"], {})[r["tool"]] = r
tools = ["python-constraint2", "kernel_tuner", "pyatf"]
runs = {o["runs"] for o in ours.values()} | {r["runs"] for d in peers.values() for r in d.values() if "runs" in r}
if len(runs) != 1:
    sys.exit("unequal repetitions: %s" % sorted(runs))
def cell(r, expect):
    if r is None: return "not run"
    if "error" in r: return "error"
    s = "%.2f ms" % (r["seconds"] * 1e3)
    return s if r["count"] == expect else s + " (count %d!)" % r["count"]
print("Search-space construction: best of %d runs for every tool (same machine, same run);" % runs.pop())
print("atf on 1 thread and on 2 threads, the peers on 1 (Python); ratio = fastest peer / atf")
print("%-13s %8s %11s %11s | %-18s %-18s %-18s | %7s %7s" % ("space", "valid", "atf 1 thr", "atf 2 thr", *tools, "/ 1 thr", "/ 2 thr"))
for space, o in ours.items():
    p = peers.get(space, {})
    times = [p[t]["seconds"] for t in tools if t in p and "error" not in p[t] and p[t]["count"] == o["count"]]
    ratio = lambda atf: "%.0fx" % (min(times) / atf) if times else "n/a"
    print("%-13s %8d %8.3f ms %8.3f ms | %-18s %-18s %-18s | %7s %7s" % (space, o["count"], o["seconds_1thread"] * 1e3,
          o["seconds_2threads"] * 1e3, *(cell(p.get(t), o["count"]) for t in tools),
          ratio(o["seconds_1thread"]), ratio(o["seconds_2threads"])))
print("medians (ms): " + "; ".join("%s atf %.3f/%.3f %s" % (s, o["median_1thread"] * 1e3, o["median_2threads"] * 1e3,
      " ".join("%s %.2f" % (t, peers[s][t]["median"] * 1e3) for t in tools if t in peers.get(s, {}) and "median" in peers[s][t]))
      for s, o in ours.items()))
errs = [(s, t, r["error"]) for s, d in peers.items() for t, r in d.items() if "error" in r]
for s, t, e in errs: print("  %s on %s failed: %s" % (t, s, e))
PY
echo
echo "Tuning quality (synthetic landscape, mean best cost over seeds; lower is better)"
"$build/bench-atf/tuning_quality" 20
