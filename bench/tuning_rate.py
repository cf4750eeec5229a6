#!/usr/bin/env python3
"""Evaluation rate of tuning runs, read from the tuner's own logs (atf JSONL).

For each log: evaluations, tuning time (the tuner's clock, over every session of the log), evaluations per second,
how busy each measuring worker (GPU) was (sum of its measure_s over the wall time) and how busy
the compile pool was (sum of prepare_s over wall time and CPU count). A run whose GPUs are busy
far below 100 % is compile-bound: more GPUs cannot raise its rate, more CPU cores can.

  python3 bench/tuning_rate.py [--cpus N] [--label NAME] LOG_OR_DIR...
"""
import argparse
import datetime
import json
import os
import sys


def parse_time(s):
    return datetime.datetime.strptime(s.rstrip("Z"), "%Y-%m-%dT%H:%M:%S.%f")


def summarize(path, cpus):
    entries = []
    with open(path) as f:
        for k, line in enumerate(f):
            line = line.strip()
            if not line:
                continue
            try:
                j = json.loads(line)
            except json.JSONDecodeError as e:
                raise SystemExit(f"{path}:{k + 1}: not JSON ({e})")
            if "configuration" in j and "timestamp" in j:
                entries.append(j)
    if not entries:
        return None
    # elapsed_s is the tuner's own clock, summed over the sessions of a resumed log (the gaps
    # between sessions do not count); older logs without it fall back to the timestamps.
    if all("elapsed_s" in e for e in entries):
        wall = entries[-1]["elapsed_s"]
    else:
        wall = (parse_time(entries[-1]["timestamp"]) -
                parse_time(entries[0]["timestamp"])).total_seconds()
    busy = {}
    for e in entries:
        w = e.get("worker", 0)
        busy[w] = busy.get(w, 0.0) + e.get("measure_s", 0.0)
    prepare = sum(e.get("prepare_s", 0.0) for e in entries)
    valid = sum(1 for e in entries if e.get("valid"))
    costs = [e["cost"] for e in entries if e.get("valid") and e.get("cost") is not None]
    return {
        "evaluations": len(entries),
        "valid": valid,
        "wall_s": wall,
        "evals_per_s": len(entries) / wall if wall > 0 else 0.0,
        "workers": len(busy),
        "gpu_busy": {w: b / wall for w, b in sorted(busy.items())} if wall > 0 else {},
        "cpu_busy": prepare / (wall * cpus) if wall > 0 else 0.0,
        "compile_s_mean": prepare / len(entries),
        "best_us": min(costs) if costs else None,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--cpus", type=int, default=os.cpu_count() or 1,
                    help="CPU threads of the compile pool (default: this machine's)")
    ap.add_argument("--label", default="", help="a name for this set of runs (first column)")
    ap.add_argument("--json", help="also write the rows here")
    a = ap.parse_args()
    files = []
    for p in a.paths:
        if os.path.isdir(p):
            files += sorted(os.path.join(p, f) for f in os.listdir(p) if f.endswith(".jsonl"))
        elif os.path.isfile(p):
            files.append(p)
        else:
            raise SystemExit(f"tuning_rate: no such log or folder: {p}")
    rows = []
    print(f"{'run':<10} {'log':<44} {'evals':>6} {'wall s':>7} {'evals/s':>8} "
          f"{'GPU busy per worker':<22} {'CPU busy':>8} {'compile s':>9} {'best us':>9}")
    for f in files:
        s = summarize(f, a.cpus)
        if s is None:
            continue
        name = os.path.basename(f).replace(".json.log.jsonl", "")
        gpu = " ".join(f"{100 * v:.0f}%" for v in s["gpu_busy"].values())
        best = f"{s['best_us']:.2f}" if s["best_us"] is not None else "-"
        print(f"{a.label:<10} {name[:44]:<44} {s['evaluations']:>6} {s['wall_s']:>7.1f} "
              f"{s['evals_per_s']:>8.1f} {gpu:<22} {100 * s['cpu_busy']:>7.0f}% "
              f"{s['compile_s_mean']:>9.2f} {best:>9}")
        rows.append({"label": a.label, "log": name, **s})
    if a.json:
        with open(a.json, "w") as out:
            json.dump(rows, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
