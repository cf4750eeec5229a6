# SPDX-License-Identifier: MIT
"""Reads bench/cases.json, the one list of benchmark cases (ours and the peers').

  python3 bench/peers/cases.py --vendor-lines   # the vendor cases, one a line, for vendor.cu
  python3 bench/peers/cases.py --list           # name, op, sizes, bytes, flops, floor at the reference rates
  python3 bench/peers/cases.py --names --suite any_shape   # the suite's case names, comma-separated
                                                          # (for TUNE_CASES / BENCH_CASES)
--suite a,b and --cases x,y restrict every mode to those suites / cases (both: cases of those
suites among those named).
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CASES_JSON = os.path.join(HERE, "..", "cases.json")

# Ceilings measured on an H200 (benchmarks.md), used only when a run has not measured its own.
REF_COPY_BYTES_PER_S = 4.25e12
REF_SGEMM_FLOPS_PER_S = 51.3e12


def load(path=CASES_JSON):
    with open(path) as f:
        doc = json.load(f)
    names = [c["name"] for c in doc["cases"]]
    if len(set(names)) != len(names):
        raise ValueError("bench/cases.json: duplicate case names")
    return doc


def split(v):
    return [x for x in (v or "").split(",") if x]


def select(doc, names=(), suites=()):
    """The cases of doc named in `names` and of a suite in `suites` (an empty list: all); an
    unknown name or suite is an error that lists the known ones."""
    cases = doc["cases"]
    known_suites = sorted({c.get("suite") for c in cases if c.get("suite")})
    bad = [s for s in suites if s not in known_suites]
    if bad:
        raise SystemExit(f"unknown suites {bad}; known: {known_suites}")
    known = {c["name"] for c in cases}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(f"unknown cases {unknown}; known: {sorted(known)}")
    return [c for c in cases if (not names or c["name"] in names) and (not suites or c.get("suite") in suites)]


def floor_us(case, copy_bytes_per_s, sgemm_flops_per_s):
    return max(case["bytes"] / copy_bytes_per_s, case["flops"] / sgemm_flops_per_s) * 1e6


def vendor_lines(doc, cases=None):
    """`name kind key=value ...` for each case (of `cases`, default all) that a vendor library covers."""
    out = []
    for c in doc["cases"] if cases is None else cases:
        v = c["peers"].get("vendor")
        if not v:
            continue
        kv = " ".join(f"{k}={v[k]}" for k in sorted(v) if k != "kind")
        out.append(f"{c['name']} {v['kind']} {kv}")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases-json", default=CASES_JSON)
    ap.add_argument("--vendor-lines", action="store_true")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--names", action="store_true", help="the selected case names, comma-separated")
    ap.add_argument("--suite", default="", help="comma-separated suites (bert, sc21, toplas, any_shape)")
    ap.add_argument("--cases", default="", help="comma-separated case names")
    a = ap.parse_args()
    doc = load(a.cases_json)
    sel = select(doc, split(a.cases), split(a.suite))
    if a.names:
        print(",".join(c["name"] for c in sel))
        return 0
    if a.vendor_lines:
        print("\n".join(vendor_lines(doc, sel)))
    if a.list or not a.vendor_lines:
        for c in sel:
            fl = floor_us(c, REF_COPY_BYTES_PER_S, REF_SGEMM_FLOPS_PER_S)
            print(f"{c['name']:22s} {c['op']:15s} {str(c['sizes']):32s} bytes {c['bytes']:>11d} "
                  f"flops {c['flops']:>12d} floor {fl:7.1f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
