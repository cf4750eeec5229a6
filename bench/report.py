#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Merges one device run's results into bench/RESULTS.md (and bench/RESULTS.json beside it).

  python3 bench/report.py [--ours ours.json] [--vendor vendor.json] [--frameworks frameworks.json]
                          [--out bench/RESULTS.md] [--json PATH] [--commit SHA] [--no-git]
                          [--cases a,b] [--suite any_shape]
--ours / --vendor / --frameworks take several files each (one device call per suite, say): their
cases are merged, and a note says so.

Inputs (any may be missing or partial; what is absent shows as "–"):
  ours        the lead's C++ bench: {"device", "cases": {name: {"per_call_us", "graph_us", "config",
              "ok", "error"}}}
  vendor      bench/peers/vendor.cu: cuBLAS / cuBLASLt / cuDNN and the measured ceilings
  frameworks  bench/peers/frameworks.py: PyTorch eager, torch.compile, JAX
The cases, their bytes and flops (for the floors) and the targets come from bench/cases.json.
The floor of a case is max(bytes / copy rate, flops / GEMM rate of the case's type: fp32 SGEMM,
bf16 or TF32 GEMM at 8192^3; tf32x3: fp32 SGEMM, the ceiling of its accuracy class) with the rates
measured in the same run (vendor.json), else the H200 reference rates (said so in the output).
Each type (float32, bf16, tf32, tf32x3: the cases' "type") gets its own tables. tf32x3 cases
(fp32 storage and accuracy; ours: three TF32 tensor-core products per product, the user's
choice) are compared with the fp32 peers, TF32 off; where a run has no peer entry of a tf32x3
case itself, its float32 case's entry (the same fp32 call) stands in, and a note says so.
Ratios are best peer / ours: above 1 means ours is faster. Only the standard library is used.
"""
import argparse
import datetime
import json
import math
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "peers"))
import cases as cases_mod  # noqa: E402

DASH = "–"
MODES = ("per_call", "graph")
MODE_TITLE = {"per_call": "Per call (what a caller waits for: host dispatch + kernels)",
              "graph": "CUDA-graph replay (kernel time only)"}
VENDOR_LIBS = ("cublas", "cublaslt", "cudnn")
FW_PEERS = ("eager", "compile", "jax")
PEER_LABEL = {"cublas": "cuBLAS", "cublaslt": "cuBLASLt", "cudnn": "cuDNN", "eager": "eager",
              "compile": "compile", "jax": "JAX"}
TYPE_TITLE = {"f32": "float32 (TF32 off on all sides)",
              "bf16": "bf16 (bf16 inputs and outputs, fp32 accumulation on all sides)",
              "tf32": "tf32 (fp32 storage, inputs read as TF32 on all sides)",
              "tf32x3": ("tf32x3 (fp32 storage and accuracy; ours: three TF32 tensor-core products per product; "
                         "peers in fp32, TF32 off)")}
GEMM_LABEL = {"f32": "fp32 SGEMM", "bf16": "bf16 GEMM", "tf32": "TF32 GEMM", "tf32x3": "fp32 SGEMM"}
# The words above a type's tables, where the comparison needs them.
TYPE_NOTE = {"tf32x3": (
    "A comparison in the fp32 accuracy class: our side computes each product as three TF32 "
    "tensor-core products of split operands (hi·hi + hi·lo + lo·hi; `with_precision(tf32x3)`, the "
    "user's explicit choice), fp32 storage, output checked at the fp32 bound; the peers are exactly "
    "the float32 case's (cuBLAS/cuBLASLt CUBLAS_COMPUTE_32F, fp32 cuDNN, PyTorch and torch.compile with "
    "TF32 off, JAX precision 'highest'), held to the fp32 error limit. The floor uses the fp32 SGEMM "
    "rate, the ceiling of the accuracy class: ours, on the tensor cores, can run under it (ours at "
    "floor above 100%). The product targets compare with the fp32 cuBLAS/cuBLASLt times.")}


def load_json(path):
    if not path or not os.path.exists(path):
        return None, f"{path or '(none given)'}: not found"
    try:
        with open(path) as f:
            return json.load(f), None
    except Exception as e:  # a run cut off mid-write, say
        return None, f"{path}: {type(e).__name__}: {e}"


def load_merged(paths):
    """One or more result files of the same kind (runs of different suites, e.g. one device call
    for bf16 and one for tf32) as one: their cases together (a later file's case replaces an
    earlier one's), the other top-level fields from the first file that has them, the ceilings
    merged the same way. (None, why) when none can be read; paths that cannot, in the notes."""
    paths = paths if isinstance(paths, list) else [paths]
    merged, why = None, []
    for p in paths:
        d, e = load_json(p)
        if d is None:
            why.append(e)
            continue
        if merged is None:
            merged = dict(d, cases=dict(d.get("cases") or {}), ceilings=dict(d.get("ceilings") or {}))
            continue
        merged["cases"].update(d.get("cases") or {})
        for k, v in (d.get("ceilings") or {}).items():
            merged["ceilings"].setdefault(k, v)
        for k, v in d.items():
            merged.setdefault(k, v)
    if merged is not None and len(paths) > 1:
        merged["merged_from"] = paths
    return merged, "; ".join(why) if why else None


def num(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x > 0


def fmt_us(x):
    if not num(x):
        return DASH
    return f"{x:.1f}" if x >= 1 else f"{x:.2f}"


def fmt_ratio(x):
    return f"{x:.2f}×" if num(x) else DASH


def geomean(v):
    v = [x for x in v if num(x)]
    return math.exp(sum(math.log(x) for x in v) / len(v)) if v else None


def git(*args):
    try:
        return subprocess.run(["git", "-C", HERE, *args], capture_output=True, text=True, timeout=10,
                              check=True).stdout.strip()
    except Exception:
        return None


def peer_time(entry, mode):
    """(time in µs or None, note or None) of one peer entry in one mode."""
    if not isinstance(entry, dict):
        return None, None
    if mode == "per_call":
        t = entry.get("per_call_us")
    else:
        t = entry.get("graph_us")
        if t is None and num(entry.get("pipelined_us")):  # JAX: no graph; dispatch-overlapped loop
            t = entry.get("pipelined_us")
    if entry.get("ok") is False:
        return None, entry.get("error") or "failed"
    if mode == "graph" and not num(t) and entry.get("graph_error"):
        return None, "graph: " + str(entry["graph_error"])
    return (t if num(t) else None), None


def evaluate_targets(case, row, copy_Bps):
    """{target: (verdict, reason)} for one case in one mode; verdict True/False/None (no data)."""
    out = {}
    o = row["ours"]
    p = row["peers"]
    vend_blas = [p[k] for k in ("cublas", "cublaslt") if num(p.get(k))]
    # tf32x3: the fp32 cuBLAS/cuBLASLt (its accuracy class; ours on tensor cores by the user's choice)
    blas = "fp32 cuBLAS, TF32 off, ours tf32x3 on tensor cores" if case.get("type") == "tf32x3" else "cuBLAS"
    for t in case.get("targets", []):
        if not num(o):
            out[t] = (None, "no time of ours")
            continue
        if t == "memory_bound":
            b = row["best_peer"]
            out[t] = (None, "no peer time") if not num(b) else (b / o >= 1.0, f"{b / o:.2f}× best peer (need ≥ 1.0×)")
        elif t == "attn_mask":
            e, c = p.get("eager"), p.get("compile")
            if not (num(e) and num(c)):
                out[t] = (None, "no eager or compile time")
            else:
                out[t] = (e / o >= 3.0 and o < c, f"{e / o:.2f}× eager (need ≥ 3×), {c / o:.2f}× compile (need > 1×)")
        elif t in ("product_large", "product_small", "lp_product_large", "lp_product_small"):
            need = 0.9 if t in ("product_large", "lp_product_large") else 1.0
            if not vend_blas:
                out[t] = (None, "no cuBLAS time")
            else:
                r = min(vend_blas) / o
                out[t] = (r >= need, f"{r:.2f}× {blas} (need ≥ {need}×)")
        elif t == "dot_matvec":
            bw = case["bytes"] / (o * 1e-6) / copy_Bps
            if not vend_blas:
                out[t] = (None, f"{bw:.0%} of copy bandwidth; no cuBLAS time")
            else:
                r = min(vend_blas) / o
                out[t] = (r >= 1.0 and bw >= 0.8, f"{r:.2f}× cuBLAS (need ≥ 1×), {bw:.0%} of copy bandwidth (need ≥ 80%)")
        elif t == "stencil":
            bw = case["bytes"] / (o * 1e-6) / copy_Bps
            out[t] = (bw >= 0.8, f"{bw:.0%} of copy bandwidth (need ≥ 80%)")
        elif t == "odd_product":
            if not vend_blas:
                out[t] = (None, "no cuBLAS time")
            else:
                r = min(vend_blas) / o
                out[t] = (r >= 0.9, f"{r:.2f}× {blas} (need ≥ 0.9×)")
        elif t == "tccg":
            c, j = p.get("compile"), p.get("jax")
            if not (num(c) and num(j)):
                out[t] = (None, "no torch.compile or JAX time")
            else:
                out[t] = (c / o >= 1.0 and j / o >= 1.0, f"{c / o:.2f}× compile, {j / o:.2f}× JAX (need ≥ 1× each)")
        elif t == "memory_floor":
            b = row["best_peer"]
            bw = case["bytes"] / (o * 1e-6) / copy_Bps
            if not num(b):
                out[t] = (None, f"{bw:.0%} of copy bandwidth; no peer time")
            else:
                out[t] = (b / o >= 1.0 and bw >= 0.85,
                          f"{b / o:.2f}× best peer (need ≥ 1×), {bw:.0%} of copy bandwidth (need ≥ 85%)")
        elif t == "epilogue":
            pl = row.get("plain_us")
            out[t] = ((None, "no time of ours for the plain product " + str(case.get("plain_case")))
                      if not num(pl) else
                      (o <= 1.05 * pl, f"{o / pl:.3f}× our plain {case.get('plain_case')} (need ≤ 1.05×)"))
        elif t == "lp_memory":
            b = row["best_peer"]
            out[t] = (None, "no peer time") if not num(b) else (b / o >= 1.0, f"{b / o:.2f}× best peer (need ≥ 1.0×)")
        elif t == "conv":
            d = p.get("cudnn")
            out[t] = (None, "no cuDNN time") if not num(d) else (d / o >= 1.0, f"{d / o:.2f}× cuDNN (need ≥ 1×)")
        else:
            out[t] = (None, f"unknown target {t}")
    return out


def verdict_mark(targets):
    if not targets:
        return DASH
    vals = [t["met"] for t in targets.values()]
    if any(v is False for v in vals):
        return "✗"
    if all(v is True for v in vals):
        return "✓"
    return "?" if any(v is True for v in vals) else DASH


def build(args):
    doc = cases_mod.load(args.cases_json)
    # --cases / --suite: a report of those cases only (a run that measured only them)
    doc = dict(doc, cases=cases_mod.select(doc, cases_mod.split(args.cases), cases_mod.split(args.suite)))
    notes = []
    ours, e1 = load_merged(args.ours)
    vendor, e2 = load_merged(args.vendor)
    fw, e3 = load_merged(args.frameworks)
    for d, e, what in ((ours, e1, "ours"), (vendor, e2, "vendor"), (fw, e3, "frameworks")):
        if d is None:
            notes.append(f"No {what} results ({e}).")
        elif e:
            notes.append(f"Some {what} results could not be read ({e}).")
        if d is not None and d.get("merged_from"):
            notes.append(f"{what}: {len(d['merged_from'])} runs merged ({', '.join(d['merged_from'])}).")
    ours_cases = (ours or {}).get("cases", {}) or {}
    vend_cases = (vendor or {}).get("cases", {}) or {}
    fw_cases = (fw or {}).get("cases", {}) or {}

    ce = (vendor or {}).get("ceilings", {}) or {}
    copy_Bps, sgemm = ce.get("copy_bytes_per_s"), ce.get("sgemm_flops_per_s")
    ceil_src = "measured in this run by bench/peers/vendor.cu"
    if not num(copy_Bps) or not num(sgemm):
        ceil_src = "NOT measured in this run; benchmarks.md's H200 reference rates"
        copy_Bps = copy_Bps if num(copy_Bps) else cases_mod.REF_COPY_BYTES_PER_S
        sgemm = sgemm if num(sgemm) else cases_mod.REF_SGEMM_FLOPS_PER_S
    types = [t for t in cases_mod.TYPES if any(cases_mod.type_of(c) == t for c in doc["cases"])]
    # the GEMM rate of each type present: measured in this run, else the reference
    gemm_rates = {}
    for t in types:
        key, ref = cases_mod.COMPUTE_CEILING[t]
        v = sgemm if key == "sgemm_flops_per_s" else ce.get(key)  # f32 and tf32x3: the SGEMM rate
        gemm_rates[t] = {"flops_per_s": v if num(v) else ref, "measured": num(v) and ceil_src.startswith("measured"),
                         "error": ce.get(key.replace("_flops_per_s", "_error"))}

    device = next((d.get("device") for d in (ours, vendor, fw) if d and d.get("device")), None)
    commit = args.commit or (None if args.no_git else git("rev-parse", "--short=12", "HEAD"))
    if commit and not args.commit and not args.no_git and git("status", "--porcelain", "--untracked-files=no"):
        commit += " (with uncommitted changes)"
    date = args.date or datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")

    res = {"device": device, "date": date, "commit": commit,
           "ceilings": {"copy_bytes_per_s": copy_Bps, "sgemm_flops_per_s": sgemm, "source": ceil_src,
                        "gemm_by_type": gemm_rates},
           "types": types,
           "inputs": {"ours": args.ours, "vendor": args.vendor, "frameworks": args.frameworks},
           "versions": {"vendor": {k: (vendor or {}).get(k) for k in ("cuda_runtime", "cuda_driver", "cublas_version",
                                                                    "cudnn_version")},
                        "frameworks": (fw or {}).get("versions")},
           "notes": notes, "cases": {}, "summary": {}}
    cal = dict((fw or {}).get("calibration") or {})
    if isinstance(ce.get("one_element_kernel"), dict):
        cal["vendor_one_element_kernel"] = ce["one_element_kernel"]
    if isinstance((ours or {}).get("calibration"), dict):
        cal.update({"ours_" + k: v for k, v in ours["calibration"].items()})
    res["calibration"] = cal
    errors = []  # (case, who, message)
    stand_ins = {}  # tf32x3 case -> [(source, float32 case)]: peers of the float32 case stand in
    for c in doc["cases"]:
        name = c["name"]
        # A tf32x3 case's peers are its float32 case's calls (cases.peer_type): without an entry of
        # its own in a source, that source's entry of the float32 case stands in (said in a note).
        vend_src = fw_src = name  # the names whose peer entries this case shows
        if cases_mod.peer_type(c) != cases_mod.type_of(c) and c.get("base"):
            if name not in vend_cases and c["base"] in vend_cases and c["peers"].get("vendor"):
                vend_src = c["base"]
                stand_ins.setdefault(name, []).append(("vendor", c["base"]))
            if name not in fw_cases and c["base"] in fw_cases:
                fw_src = c["base"]
                stand_ins.setdefault(name, []).append(("frameworks", c["base"]))
        floor = cases_mod.floor_us(c, copy_Bps, gemm_rates[cases_mod.type_of(c)]["flops_per_s"])
        oc = ours_cases.get(name)
        rc = {"suite": c.get("suite"), "type": cases_mod.type_of(c), "op": c["op"], "sizes": c["sizes"],
              "floor_us": floor,
              "targets": c.get("targets", []), "config": (oc or {}).get("config")}
        if isinstance(oc, dict) and oc.get("ok") is False:
            errors.append((name, "ours", oc.get("error") or "failed"))
        for mode in MODES:
            o = None
            if isinstance(oc, dict) and oc.get("ok") is not False:
                o = oc.get(f"{mode}_us")
                o = o if num(o) else None
            peers = {}
            for lib in VENDOR_LIBS:
                ent = vend_cases.get(vend_src, {}).get(lib)
                t, err = peer_time(ent, mode)
                if err and (mode == "per_call" or err.startswith("graph: ")):
                    errors.append((name, PEER_LABEL[lib], err))
                if mode == "per_call" and isinstance(ent, dict) and str(ent.get("precision_used", "")).startswith("fp32"):
                    errors.append((name, PEER_LABEL[lib], "note: " + ent["precision_used"]))
                if t is not None:
                    peers[lib] = t
            for p in FW_PEERS:
                ent = fw_cases.get(fw_src, {}).get(p)
                t, err = peer_time(ent, mode)
                if err and (mode == "per_call" or err.startswith("graph: ")):
                    errors.append((name, PEER_LABEL[p], err))
                if mode == "per_call" and isinstance(ent, dict) and ent.get("warning"):
                    errors.append((name, PEER_LABEL[p], "warning: " + str(ent["warning"])))
                if mode == "per_call" and isinstance(ent, dict) and str(ent.get("precision_used", "")).startswith("fp32"):
                    errors.append((name, PEER_LABEL[p], "note: " + ent["precision_used"]))
                if t is not None:
                    peers[p] = t
            best_name = min(peers, key=peers.get) if peers else None
            best = peers.get(best_name) if best_name else None
            vend = {k: v for k, v in peers.items() if k in VENDOR_LIBS}
            vend_name = min(vend, key=vend.get) if vend else None
            # the epilogue target: our time of the plain product this case fuses an epilogue into
            plain = ours_cases.get(c.get("plain_case", ""))
            plain_us = plain.get(f"{mode}_us") if isinstance(plain, dict) and plain.get("ok") is not False else None
            row = {"ours": o, "peers": peers, "plain_us": plain_us if num(plain_us) else None, "vendor_best": vend.get(vend_name) if vend_name else None,
                   "vendor_best_name": vend_name, "best_peer": best, "best_peer_name": best_name,
                   "speedup": (best / o) if (num(best) and num(o)) else None,
                   "floor_over_ours": (floor / o) if num(o) else None}
            row["targets"] = {t: {"met": v, "why": why}
                              for t, (v, why) in evaluate_targets(c, row, copy_Bps).items()}
            rc[mode] = row
        if name in stand_ins:
            rc["peers_from"] = {src: base for src, base in stand_ins[name]}
        res["cases"][name] = rc
    if stand_ins:
        by = {}
        for name, pairs in stand_ins.items():
            by.setdefault(" and ".join(sorted(src for src, _ in pairs)), []).append(f"{name} ← {pairs[0][1]}")
        for srcs, items in by.items():
            notes.append(f"tf32x3 cases with no {srcs} peer entries of their own show their float32 case's (the "
                         f"same fp32 peer calls, from the same result files): {'; '.join(items)}.")

    # class-level: the memory-bound geomean (of the fp32 class), and the targets, over all cases
    # ("summary") and per type ("summary_by_type")
    def summarize(names, mode):
        rows = [res["cases"][n] for n in names]
        sp = [r[mode]["speedup"] for n, r in zip(names, rows) if "memory_bound" in r["targets"]]
        g = geomean(sp)
        complete = all(num(x) for x in sp)
        met = [t["met"] for r in rows for t in r[mode]["targets"].values()]
        return {"memory_bound_geomean": g, "memory_bound_cases_timed": sum(num(x) for x in sp),
                "memory_bound_cases": len(sp),
                "memory_bound_geomean_met": (g >= 1.5) if (g is not None and complete) else None,
                "targets_met": sum(1 for v in met if v is True),
                "targets_missed": sum(1 for v in met if v is False),
                "targets_unknown": sum(1 for v in met if v is None)}
    res["summary_by_type"] = {}
    for mode in MODES:
        res["summary"][mode] = summarize([c["name"] for c in doc["cases"]], mode)
        for t in types:
            res["summary_by_type"].setdefault(t, {})[mode] = summarize(
                [c["name"] for c in doc["cases"] if cases_mod.type_of(c) == t], mode)
    res["errors"] = [{"case": a, "who": b, "error": e} for a, b, e in errors]
    return doc, res


def mode_table(res, cases, mode, summary, h):
    """The lines of one mode's table (per call or graph) over `cases`, with its summary."""
    L = []
    L.append(f"{h} {MODE_TITLE[mode]}")
    L.append("")
    L.append("| case | floor | ours | cuBLAS/cuDNN | eager | compile | JAX | best peer | best peer / ours | "
             "ours at floor | target |")
    L.append("|---|---:|---:|---:|---:|---:|---:|---|---:|---:|:-:|")
    for c in cases:
        r = res["cases"][c["name"]]
        row = r[mode]
        p = row["peers"]
        vn = row["vendor_best_name"]
        vcell = DASH if not vn else f"{fmt_us(row['vendor_best'])} ({PEER_LABEL[vn]})"
        bcell = DASH if not row["best_peer_name"] else PEER_LABEL[row["best_peer_name"]]
        star = "*" if c.get("floor_note") else ""
        L.append(f"| {c['name']} | {fmt_us(r['floor_us'])}{star} | {fmt_us(row['ours'])} | {vcell} | "
                 f"{fmt_us(p.get('eager'))} | {fmt_us(p.get('compile'))} | {fmt_us(p.get('jax'))} | {bcell} | "
                 f"{fmt_ratio(row['speedup'])} | "
                 f"{(format(row['floor_over_ours'], '.0%') if num(row['floor_over_ours']) else DASH)} | "
                 f"{verdict_mark(row['targets'])} |")
    s = summary
    g = s["memory_bound_geomean"]
    L.append("")
    for c in cases:
        if c.get("floor_note"):
            L.append(f"\\* {c['name']}: {c['floor_note']}.")
            L.append("")
    geo = ("" if not s["memory_bound_cases"] else
           f"Memory-bound and fused cases: geomean best peer / ours = {fmt_ratio(g)} over "
           f"{s['memory_bound_cases_timed']} of {s['memory_bound_cases']} cases (target ≥ 1.5×"
           + ("" if s["memory_bound_geomean_met"] is None else
              (": met" if s["memory_bound_geomean_met"] else ": missed")) + "). ")
    L.append(geo + f"Targets met {s['targets_met']}, missed {s['targets_missed']}, without data "
             f"{s['targets_unknown']}.")
    if mode == "graph":
        L.append("")
        L.append("JAX has no graph replay here: its column in this table is the dispatch-overlapped time "
                 "(a host-clock loop of flush + call minus a loop of flushes, per iteration).")
    L.append("")
    return L


def markdown(doc, res):
    L = []
    ce = res["ceilings"]
    L.append("# Benchmark results")
    L.append("")
    L.append("Written by `bench/report.py`; the cases are `bench/cases.json`; how to run: `bench/README.md`.")
    L.append("")
    L.append(f"- device: {res['device'] or DASH}")
    L.append(f"- date: {res['date']}")
    L.append(f"- commit: {res['commit'] or DASH}")
    vv = res["versions"]
    fwv = vv.get("frameworks") or {}
    vend = vv.get("vendor") or {}
    parts = []
    if vend.get("cuda_driver"):
        parts.append(f"CUDA runtime {vend.get('cuda_runtime')}, driver {vend.get('cuda_driver')}")
    if vend.get("cublas_version"):
        parts.append(f"cuBLAS {vend['cublas_version']}")
    if vend.get("cudnn_version"):
        parts.append(f"cuDNN {vend['cudnn_version']}")
    for k in ("torch", "jax"):
        if fwv.get(k):
            parts.append(f"{k} {fwv[k]}")
    if parts:
        L.append(f"- software: {', '.join(parts)}")
    L.append(f"- ceilings ({ce['source']}): device copy {ce['copy_bytes_per_s'] / 1e12:.2f} TB/s (bytes read + "
             f"written), fp32 SGEMM {ce['sgemm_flops_per_s'] / 1e12:.1f} TFLOP/s (8192³, no TF32)")
    types = res.get("types") or ["f32"]
    for t in types:
        if t == "f32":
            continue
        g = ce["gemm_by_type"][t]
        if t == "tf32x3":
            L.append(f"- tf32x3 floors: the fp32 SGEMM rate ({g['flops_per_s'] / 1e12:.1f} TFLOP/s), the ceiling "
                     "of their accuracy class; ours runs on the tensor cores and can run under it")
            continue
        how = ("measured in this run (cublasGemmEx 8192³)" if g["measured"] else
               "NOT measured in this run: the reference rate" + (f" ({g['error']})" if g.get("error") else ""))
        L.append(f"- {GEMM_LABEL[t]} ceiling: {g['flops_per_s'] / 1e12:.0f} TFLOP/s, {how}")
    if types == ["f32"]:
        L.append("- floor = max(bytes moved once / copy rate, flops / SGEMM rate); everything float32, TF32 off "
                 "on all sides; times are medians in µs with the L2 flushed before every repetition")
    else:
        L.append("- floor = max(bytes moved once / copy rate, flops / the GEMM rate of the case's type); bf16 "
                 "cases move 2-byte elements; each type has its own tables, every side in the same precision"
                 + (" (tf32x3: the same accuracy class, fp32)" if "tf32x3" in types else "") + "; "
                 "times are medians in µs with the L2 flushed before every repetition")
    cal = res.get("calibration") or {}
    cparts = []
    for key, label in (("vendor_one_element_kernel", "a CUDA kernel launch"),
                       ("torch_eager_one_element", "PyTorch eager"), ("jax_one_element", "JAX")):
        e = cal.get(key) or {}
        if num(e.get("per_call_us")):
            g = f", graph {fmt_us(e['graph_us'])}" if num(e.get("graph_us")) else ""
            cparts.append(f"{label} {fmt_us(e['per_call_us'])}{g}")
    if cparts:
        L.append("- a one-element op by the same method (the per-call floor, µs): " + "; ".join(cparts))
    for n in res["notes"]:
        L.append(f"- note: {n}")
    L.append("")
    for ty in types:
        tcases = [c for c in doc["cases"] if cases_mod.type_of(c) == ty]
        h = "##"
        if len(types) > 1:
            L.append(f"## {TYPE_TITLE[ty]}")
            L.append("")
            h = "###"
        if ty in TYPE_NOTE:
            L.append(TYPE_NOTE[ty])
            L.append("")
        for mode in MODES:
            L += mode_table(res, tcases, mode, res["summary_by_type"][ty][mode], h)
    L.append("## Targets")
    L.append("")
    used = {t for c in doc["cases"] for t in c.get("targets", [])}
    for k, v in doc.get("targets", {}).items():
        if k in used:  # the targets of the cases reported
            L.append(f"- `{k}`: {v}")
    L.append("")
    L.append("| case | target | per call | graph |")
    L.append("|---|---|---|---|")
    mark = {True: "✓", False: "✗", None: DASH}
    for c in doc["cases"]:
        r = res["cases"][c["name"]]
        for t in c.get("targets", []):
            a, b = r["per_call"]["targets"][t], r["graph"]["targets"][t]
            L.append(f"| {c['name']} | {t} | {mark[a['met']]} {a['why']} | {mark[b['met']]} {b['why']} |")
    L.append("")
    if res["errors"]:
        L.append("## Errors")
        L.append("")
        for e in res["errors"]:
            msg = str(e["error"]).replace("|", "\\|").replace("\n", " ")
            L.append(f"- {e['case']} / {e['who']}: {msg[:300]}")
        L.append("")
    L.append("## Method")
    L.append("")
    L.append("- per call: write 256 MB (flushes the L2), synchronize, CUDA event, the call, CUDA event; "
             "the GPU is idle at the first event, so host-side dispatch counts. JAX exposes no stream, so "
             "its per-call time is the host clock around the call and `block_until_ready`.")
    L.append("- graph: the call captured once in a CUDA graph; flush, event, replay, event with no "
             "synchronization, so the launch hides behind the flush: kernel time.")
    L.append("- cuBLAS: `cublasSgemm`/`cublasSgemmStridedBatched`/`cublasSdot`/`cublasSgemv` with "
             "CUBLAS_DEFAULT_MATH; cuBLASLt: `CUBLAS_COMPUTE_32F`, fastest of the heuristic's candidates; "
             "cuDNN: fastest fp32 (FMA) algorithm of `cudnnFindConvolutionForwardAlgorithm`; "
             "`NVIDIA_TF32_OVERRIDE=0` set for the peers' processes. PyTorch: TF32 off, "
             "`cudnn.benchmark` on; torch.compile default mode, warmed up; JAX: `jax.jit`, precision "
             "'highest'. Each peer's output is checked against float64 (fp32 error ~1e-7; a peer above "
             "1e-4 is reported as an error, not timed).")
    if "bf16" in types:
        L.append("- bf16 cases: inputs and outputs bfloat16, sums in fp32 everywhere. cuBLAS: `cublasGemmEx` / "
                 "`cublasGemmStridedBatchedEx` with CUDA_R_16BF and CUBLAS_COMPUTE_32F "
                 "(CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION), `cublasDotEx` (fp32 execution), matvec as "
                 "`cublasGemmEx` with n = 1; cuBLASLt: the same types, split-K reductions in fp32 only; cuDNN: bf16 "
                 "tensors, fp32 compute, the fastest algorithm of any math type; PyTorch: bf16 tensors, "
                 "`allow_bf16_reduced_precision_reduction` off; JAX: bf16 arrays, "
                 "`default_matmul_precision('default')`. A peer above 1.5e-2 relative error is an error.")
    if "tf32" in types:
        L.append("- tf32 cases: fp32 storage, inputs read as TF32. cuBLAS/cuBLASLt: CUBLAS_COMPUTE_32F_FAST_TF32; "
                 "cuDNN: CUDNN_TENSOR_OP_MATH, the fastest algorithm of any math type; PyTorch: "
                 "`allow_tf32` on (matmul and cuDNN), float32 matmul precision 'high', for these cases only; JAX: "
                 "`default_matmul_precision('tensorfloat32')`; `NVIDIA_TF32_OVERRIDE` unset for such a run. A peer "
                 "above 5e-3 relative error is an error; one whose error is fp32's is timed and named under Errors "
                 "(\"TF32 was not used\").")
    if "tf32x3" in types:
        L.append("- tf32x3 cases (fp32 accuracy class): ours is the float32 computation "
                 "`.with_precision(tf32x3)`, fp32 storage, each product three TF32 tensor-core products of "
                 "split operands (hi = tf32(x), lo = tf32(x − hi): hi·hi + hi·lo + lo·hi), by the user's explicit "
                 "choice, checked against the IEEE fp32 reference at the fp32 bound. The peers are exactly the "
                 "float32 case's, as above (TF32 off, `NVIDIA_TF32_OVERRIDE=0`, JAX 'highest'), held to the fp32 "
                 "limit (1e-4); the floor uses the fp32 SGEMM rate.")
    L.append("")
    return "\n".join(L)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ours", default=None, nargs="+", help="the lead's C++ bench JSON (several: merged)")
    ap.add_argument("--vendor", default=[os.path.join(HERE, "peers", "last_run", "vendor.json")], nargs="+",
                    help="vendor.json (several: merged, the ceilings from the first that has each)")
    ap.add_argument("--frameworks", default=[os.path.join(HERE, "peers", "last_run", "frameworks.json")],
                    nargs="+", help="frameworks.json (several: merged)")
    ap.add_argument("--cases-json", default=cases_mod.CASES_JSON)
    ap.add_argument("--out", default=os.path.join(HERE, "RESULTS.md"))
    ap.add_argument("--json", default=None, help="default: --out with .json")
    ap.add_argument("--commit", default=None)
    ap.add_argument("--date", default=None)
    ap.add_argument("--no-git", action="store_true")
    ap.add_argument("--cases", default="", help="comma-separated case names: report only those")
    ap.add_argument("--suite", default="", help="comma-separated suites (e.g. any_shape): report only those")
    args = ap.parse_args(argv)
    doc, res = build(args)
    md = markdown(doc, res)
    with open(args.out, "w") as f:
        f.write(md)
    jpath = args.json or os.path.splitext(args.out)[0] + ".json"
    with open(jpath, "w") as f:
        json.dump(res, f, indent=1)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
