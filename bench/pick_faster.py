#!/usr/bin/env python3
"""Keeps, per case, the faster of two parameter sets timed in the same run by mdh_bench.

  python3 bench/pick_faster.py OLD.json NEW.json NEW_PARAMS_DIR PARAMS_DIR

OLD.json and NEW.json are mdh_bench outputs (--out) over the same cases, one with PARAMS_DIR and
one with NEW_PARAMS_DIR; where the new set's graph-replay time is lower, its parameter file
(found by the configuration it ran) is copied into PARAMS_DIR. Prints one line per case.
A case of a type other than float32 (bench/cases.json "type": bf16, tf32, tf32x3) has its files
in that type's folder (bench::params_folder): NEW_PARAMS_DIR/<type> is searched and the file goes
to PARAMS_DIR/<type>, so a tf32x3 file is never taken for its float32 twin's (the same
configuration can be in both).
"""
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "peers"))
import cases as cases_mod  # noqa: E402


def type_folders():
    """case name -> the folder of its parameter files under a params root ("" for float32)."""
    out = {}
    for c in cases_mod.load()["cases"]:
        t = cases_mod.type_of(c)
        out[c["name"]] = "" if t == "f32" else t
    return out


def config_files(folder):
    """configuration (as sorted JSON) -> parameter file name, for the .json files of folder."""
    files = {}
    if os.path.isdir(folder):
        for f in os.listdir(folder):
            if f.endswith(".json"):
                files[json.dumps(json.load(open(os.path.join(folder, f)))["configuration"],
                                 sort_keys=True)] = f
    return files


def main():
    if len(sys.argv) != 5:
        raise SystemExit(__doc__)
    old, new = (json.load(open(p))["cases"] for p in sys.argv[1:3])
    new_dir, dst = sys.argv[3], sys.argv[4]
    folder_of = type_folders()
    files = {}  # type folder -> its configuration index
    for case, n in new.items():
        o = old.get(case)
        if not (o and o.get("ok") and n.get("ok")):
            print(f"{case}: not compared (missing or failed)")
            continue
        better = n["graph_us"] < o["graph_us"]
        print(f"{case}: committed {o['graph_us']:.2f} us, new {n['graph_us']:.2f} us -> "
              f"{'new' if better else 'committed'}")
        if better:
            sub = folder_of.get(case, "")
            if sub not in files:
                files[sub] = config_files(os.path.join(new_dir, sub))
            f = files[sub].get(json.dumps(n["config"], sort_keys=True))
            src = os.path.join(new_dir, sub) if sub else new_dir
            if f is None:
                print(f"  {case}: no file in {src} holds the configuration it ran; kept")
            else:
                os.makedirs(os.path.join(dst, sub), exist_ok=True)
                shutil.copy(os.path.join(src, f), os.path.join(dst, sub, f))


if __name__ == "__main__":
    sys.exit(main())
