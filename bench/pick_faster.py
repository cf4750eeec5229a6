#!/usr/bin/env python3
"""Keeps, per case, the faster of two parameter sets timed in the same run by mdh_bench.

  python3 bench/pick_faster.py OLD.json NEW.json NEW_PARAMS_DIR PARAMS_DIR

OLD.json and NEW.json are mdh_bench outputs (--out) over the same cases, one with PARAMS_DIR and
one with NEW_PARAMS_DIR; where the new set's graph-replay time is lower, its parameter file
(found by the configuration it ran) is copied into PARAMS_DIR. Prints one line per case.
"""
import json
import os
import shutil
import sys


def main():
    if len(sys.argv) != 5:
        raise SystemExit(__doc__)
    old, new = (json.load(open(p))["cases"] for p in sys.argv[1:3])
    new_dir, dst = sys.argv[3], sys.argv[4]
    files = {}
    for f in os.listdir(new_dir):
        if f.endswith(".json"):
            files[json.dumps(json.load(open(os.path.join(new_dir, f)))["configuration"],
                             sort_keys=True)] = f
    for case, n in new.items():
        o = old.get(case)
        if not (o and o.get("ok") and n.get("ok")):
            print(f"{case}: not compared (missing or failed)")
            continue
        better = n["graph_us"] < o["graph_us"]
        print(f"{case}: committed {o['graph_us']:.2f} us, new {n['graph_us']:.2f} us -> "
              f"{'new' if better else 'committed'}")
        if better:
            f = files.get(json.dumps(n["config"], sort_keys=True))
            if f is None:
                print(f"  {case}: no file in {new_dir} holds the configuration it ran; kept")
            else:
                shutil.copy(os.path.join(new_dir, f), os.path.join(dst, f))


if __name__ == "__main__":
    sys.exit(main())
