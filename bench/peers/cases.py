# SPDX-License-Identifier: MIT
"""Reads bench/cases.json, the one list of benchmark cases (ours and the peers').

  python3 bench/peers/cases.py --vendor-lines   # the vendor cases, one a line, for vendor.cu
  python3 bench/peers/cases.py --list           # name, op, sizes, bytes, flops, floor at the reference rates
  python3 bench/peers/cases.py --names --suite any_shape   # the suite's case names, comma-separated
                                                          # (for TUNE_CASES / BENCH_CASES)
  python3 bench/peers/cases.py --types --suite bf16,tf32   # the types among them: bf16,tf32
                                                          # (f32, bf16, tf32, tf32x3)
--suite a,b, --cases x,y and --targets t,u restrict every mode to those suites / cases / cases
with one of those targets (together: the cases that pass each).
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
# The compute ceilings of the bf16/tf32 variants (issue 18): cuBLAS TF32 measured on the H200
# (356 TFLOP/s); bf16 the nominal dense peak (about 990 TFLOP/s), until a run measures its own.
REF_TF32_FLOPS_PER_S = 356e12
REF_BF16_FLOPS_PER_S = 990e12
# type -> (vendor.json ceilings key, reference rate); float32 cases have no "type". tf32x3 (fp32
# storage and accuracy, ours three TF32 tensor-core products per product) is in the near-fp32 accuracy
# class: its floor uses the fp32 SGEMM rate, the ceiling of that class (ours can run under it).
COMPUTE_CEILING = {"f32": ("sgemm_flops_per_s", REF_SGEMM_FLOPS_PER_S),
                   "tf32": ("tf32_gemm_flops_per_s", REF_TF32_FLOPS_PER_S),
                   "bf16": ("bf16_gemm_flops_per_s", REF_BF16_FLOPS_PER_S),
                   "tf32x3": ("sgemm_flops_per_s", REF_SGEMM_FLOPS_PER_S)}
TYPES = ("f32", "bf16", "tf32", "tf32x3")  # the order of the report's tables
# The type the peers run a case of type t as: tf32x3 is our side's precision only; its peers are
# exactly the float32 case's (TF32 off, fp32 error limits). Every other type is itself.
PEER_TYPE = {"tf32x3": "f32"}


def type_of(case):
    """f32, bf16, tf32 or tf32x3: what the case's buffers hold and how its products read them."""
    return case.get("type", "f32")


def peer_type(case_or_type):
    """The type the peers run a case (or a type) as: f32 for tf32x3, else the type itself."""
    t = case_or_type if isinstance(case_or_type, str) else type_of(case_or_type)
    return PEER_TYPE.get(t, t)


def load(path=CASES_JSON):
    with open(path) as f:
        doc = json.load(f)
    names = [c["name"] for c in doc["cases"]]
    if len(set(names)) != len(names):
        raise ValueError("bench/cases.json: duplicate case names")
    return doc


def split(v):
    return [x for x in (v or "").split(",") if x]


def select(doc, names=(), suites=(), targets=()):
    """The cases of doc named in `names`, of a suite in `suites` and with a target in `targets`
    (an empty list: all); an unknown name, suite or target is an error that lists the known ones."""
    cases = doc["cases"]
    known_suites = sorted({c.get("suite") for c in cases if c.get("suite")})
    bad = [s for s in suites if s not in known_suites]
    if bad:
        raise SystemExit(f"unknown suites {bad}; known: {known_suites}")
    bad = [t for t in targets if t not in doc["targets"]]
    if bad:
        raise SystemExit(f"unknown targets {bad}; known: {sorted(doc['targets'])}")
    if targets:
        cases = [c for c in cases if set(c.get("targets", [])) & set(targets)]
    known = {c["name"] for c in cases}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(f"unknown cases {unknown}; known: {sorted(known)}")
    return [c for c in cases if (not names or c["name"] in names) and (not suites or c.get("suite") in suites)]


def floor_us(case, copy_bytes_per_s, flops_per_s):
    """max(bytes / copy rate, flops / the compute rate of the case's type)."""
    return max(case["bytes"] / copy_bytes_per_s, case["flops"] / flops_per_s) * 1e6


def compute_rate(case, ceilings):
    """(flops/s, measured?) for the case's type: the run's own ceiling, else the reference."""
    key, ref = COMPUTE_CEILING[type_of(case)]
    v = (ceilings or {}).get(key)
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0
    return (v, True) if ok else (ref, False)


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
    ap.add_argument("--suite", default="", help="comma-separated suites (bert, sc21, toplas, any_shape, bert_epilogue, bf16, tf32, tf32x3)")
    ap.add_argument("--types", action="store_true", help="the selected cases' types (f32, bf16, tf32, tf32x3), comma-separated")
    ap.add_argument("--cases", default="", help="comma-separated case names")
    ap.add_argument("--targets", default="", help="comma-separated targets: the cases that have one of them "
                    "(e.g. --suite bf16 --targets lp_memory: the bf16 memory-bound cases)")
    a = ap.parse_args()
    doc = load(a.cases_json)
    sel = select(doc, split(a.cases), split(a.suite), split(a.targets))
    if a.names:
        print(",".join(c["name"] for c in sel))
        return 0
    if a.types:
        print(",".join(t for t in TYPES if any(type_of(c) == t for c in sel)))
        return 0
    if a.vendor_lines:
        print("\n".join(vendor_lines(doc, sel)))
    if a.list or not a.vendor_lines:
        for c in sel:
            fl = floor_us(c, REF_COPY_BYTES_PER_S, compute_rate(c, None)[0])
            print(f"{c['name']:28s} {type_of(c):6s} {c['op']:15s} {str(c['sizes']):32s} bytes {c['bytes']:>11d} "
                  f"flops {c['flops']:>12d} floor {fl:7.1f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
