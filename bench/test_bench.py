#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The benchmark's Python side without a GPU (CTest: bench_python): bench/cases.json is what
bench/peers/make_cases.py writes; the bf16/tf32 variants (issue 18) are derived correctly; the
peers' scripts accept every case (frameworks.py --dry-run, the precision checks); report.py
writes one table per type from synthetic results, with the type's floors, targets and notes;
convergence_report.py judges synthetic tuning logs (within 5 % by 60 s, not within, empty, no
valid evaluation, a crash); the layer benchmark's tf32x3 cases are fp32 to the peers
(peers/layer.py) and labelled in layer_report.py. Standard library only (the curves, where matplotlib is installed). Prints 'N passed, N failed'; exits 1 on a failure."""
import contextlib
import io
import json
import math
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "peers"))
sys.path.insert(0, HERE)
import cases as cases_mod  # noqa: E402
import convergence_report  # noqa: E402
import frameworks  # noqa: E402
import layer as layer_peers  # noqa: E402
import layer_report  # noqa: E402
import report  # noqa: E402
import untuned_cases  # noqa: E402

TESTS = []


def test(f):
    TESTS.append(f)
    return f


def run_quiet(main, argv):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = main(argv)
    return rc, out.getvalue()


@test
def cases_json_is_make_cases_output():
    r = subprocess.run([sys.executable, os.path.join(HERE, "peers", "make_cases.py"), "--check"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


@test
def variants_derive_from_the_fp32_cases():
    doc = cases_mod.load()
    by_name = {c["name"]: c for c in doc["cases"]}
    # the bert_epilogue cases (issue 20) are float32 only: they derive no variants
    fp32 = [c for c in doc["cases"] if "type" not in c and c["suite"] != "bert_epilogue"]
    bf16 = [c for c in doc["cases"] if c.get("type") == "bf16"]
    tf32 = [c for c in doc["cases"] if c.get("type") == "tf32"]
    # every fp32 case but PRL has a bf16 twin; the GEMM-like products (not dot, matvec) a tf32 one
    assert {c["base"] for c in bf16} == {c["name"] for c in fp32 if c["op"] != "prl"}
    products = {c["name"] for c in fp32 if c["op"] in ("matmul", "batch_matmul", "bmatmul", "mcc", "mcc_nchw")
                or c["op"].startswith("tccg_")}
    assert {c["base"] for c in tf32} == products, sorted(products ^ {c["base"] for c in tf32})
    for c in bf16 + tf32:
        base = by_name[c["base"]]
        assert c["name"] == f'{base["name"]}_{c["type"]}' and c["suite"] == c["type"]
        assert c["op"] == base["op"] and c["sizes"] == base["sizes"] and c["flops"] == base["flops"]
        assert c["bytes"] == (base["bytes"] // 2 if c["type"] == "bf16" else base["bytes"]), c["name"]
        dtypes = {v["dtype"] for v in c["inputs"].values()}
        assert dtypes == ({"bfloat16"} if c["type"] == "bf16" else {"float32"}), (c["name"], dtypes)
        assert "precision='highest'" not in c["peers"]["jax"], c["name"]
        assert c["targets"] and all(t in doc["targets"] for t in c["targets"]), c["name"]
        if c["peers"].get("vendor"):
            assert c["peers"]["vendor"]["type"] == c["type"]
    # the vendor lines carry the type; the fp32 ones do not (vendor.cu's default)
    lines = cases_mod.vendor_lines(doc)
    assert any(ln.startswith("matmul_1024_tf32 gemm") and "type=tf32" in ln for ln in lines)
    assert any(ln.startswith("dot_bf16 dot") and "type=bf16" in ln for ln in lines)
    assert all("type=" not in ln for ln in lines if ln.split()[0] in by_name and "type" not in by_name[ln.split()[0]])
    # suites select the variants
    assert {c["name"] for c in cases_mod.select(doc, suites=["bf16"])} == {c["name"] for c in bf16}


@test
def frameworks_dry_run_parses_every_expression():
    rc, out = run_quiet(frameworks.main, ["--dry-run", "--suite", "bf16,tf32"])
    assert rc == 0, out
    assert "matmul_1024_tf32" in out and "'tensorfloat32'" in out and "mul_bf16" in out


@test
def frameworks_judges_by_the_cases_type():
    def judged(ty, err):
        e = {"rel_err": err}
        frameworks.judge(e, ty)
        return e
    assert judged("f32", 1e-7)["ok"] and not judged("f32", 3e-4)["ok"]  # TF32 in an fp32 case: an error
    assert judged("tf32", 4e-4)["ok"] and judged("tf32", 4e-4)["precision_used"] == "tf32"
    e = judged("tf32", 1e-7)  # fp32 where TF32 was asked: timed, but said
    assert e["ok"] and e["precision_used"].startswith("fp32")
    assert not judged("tf32", 2e-2)["ok"]
    assert judged("bf16", 2e-3)["ok"] and not judged("bf16", 5e-2)["ok"]
    assert "bf16 limit" in judged("bf16", 5e-2)["error"]


def synthetic_run(tmp, names):
    """ours / vendor / frameworks JSON for `names`: ours 10 us everywhere; cuBLAS 9.5 (ours
    slower, within 0.9x), cuBLASLt 12; eager 8 (faster than ours); JAX's tf32 peer ran fp32."""
    ours = {"device": "synthetic", "cases": {n: {"ok": True, "per_call_us": 10.0, "graph_us": 10.0,
                                                 "config": {}, "tuned": True} for n in names}}
    vendor = {"device": "synthetic", "ceilings": {
        "copy_bytes_per_s": 4e12, "sgemm_flops_per_s": 50e12, "bf16_gemm_flops_per_s": 800e12,
        "tf32_gemm_flops_per_s": 400e12}, "cases": {}}
    fw = {"device": "synthetic", "cases": {}}
    for n in names:
        vendor["cases"][n] = {
            "cublas": {"ok": True, "per_call_us": 9.5, "graph_us": 9.5, "rel_err": 1e-3, "type": "x"},
            "cublaslt": {"ok": True, "per_call_us": 12.0, "graph_us": 12.0, "rel_err": 1e-3}}
        fw["cases"][n] = {
            "eager": {"ok": True, "per_call_us": 8.0, "graph_us": 8.0, "rel_err": 1e-3},
            "jax": {"ok": True, "per_call_us": 20.0, "pipelined_us": 20.0, "rel_err": 1e-7,
                    "precision_used": "fp32 (the error is fp32's: TF32 was not used)"},
            "compile": {"ok": False, "error": "relative error 5.00e-02 against float64"}}
    paths = {}
    for k, v in (("ours", ours), ("vendor", vendor), ("frameworks", fw)):
        paths[k] = os.path.join(tmp, k + ".json")
        with open(paths[k], "w") as f:
            json.dump(v, f)
    return paths


def synthetic_report(names):
    """bench/report.py on synthetic_run's files for `names`: (RESULTS.md text, RESULTS.json)."""
    with tempfile.TemporaryDirectory() as tmp:
        p = synthetic_run(tmp, names)
        out = os.path.join(tmp, "R.md")
        rc, _ = run_quiet(report.main, ["--ours", p["ours"], "--vendor", p["vendor"], "--frameworks",
                                        p["frameworks"], "--out", out, "--cases", ",".join(names),
                                        "--commit", "test", "--date", "today"])
        assert rc == 0
        return open(out).read(), json.load(open(os.path.join(tmp, "R.json")))


@test
def report_has_one_table_per_type():
    names = ["matmul_1024", "matmul_1024_bf16", "matmul_1024_tf32", "mul_bf16", "bmm_qk_tf32"]
    md, res = synthetic_report(names)
    sections = [ln for ln in md.splitlines() if ln.startswith("## ")]
    assert sections[:3] == ["## " + report.TYPE_TITLE[t] for t in ("f32", "bf16", "tf32")], sections
    assert md.count("### CUDA-graph replay") == 3
    # each table holds its type's cases only
    bf16_part = md.split("## " + report.TYPE_TITLE["bf16"])[1].split("## " + report.TYPE_TITLE["tf32"])[0]
    assert "| matmul_1024_bf16 |" in bf16_part and "| mul_bf16 |" in bf16_part and "matmul_1024_tf32" not in bf16_part
    # floors from the type's measured GEMM rate (and half the bytes for bf16)
    c = res["cases"]
    assert math.isclose(c["matmul_1024_bf16"]["floor_us"], max(6291456 / 4e12, 2 * 1024**3 / 800e12) * 1e6)
    assert math.isclose(c["matmul_1024_tf32"]["floor_us"], max(12582912 / 4e12, 2 * 1024**3 / 400e12) * 1e6)
    assert math.isclose(c["matmul_1024"]["floor_us"], max(12582912 / 4e12, 2 * 1024**3 / 50e12) * 1e6)
    assert "bf16 GEMM ceiling: 800 TFLOP/s, measured in this run" in md
    # targets: 9.5 / 10 = 0.95x cuBLAS: large products met (0.9x), batched ones missed (1.0x);
    # bf16 memory-bound: eager 8 us beats ours
    g = lambda n, t: c[n]["graph"]["targets"][t]["met"]
    assert g("matmul_1024_bf16", "lp_product_large") is True
    assert g("bmm_qk_tf32", "lp_product_small") is False
    assert g("mul_bf16", "lp_memory") is False
    assert res["summary_by_type"]["bf16"]["graph"]["targets_missed"] == 1
    # a peer that ran fp32 where TF32 was asked is named; a failed peer is an error, not a time
    assert "matmul_1024_tf32 / JAX: note: fp32 (the error is fp32's: TF32 was not used)" in md
    assert "mul_bf16 / compile: relative error" in md
    assert c["mul_bf16"]["graph"]["peers"].get("compile") is None
    assert "CUBLAS_COMPUTE_32F_FAST_TF32" in md and "CUDA_R_16BF" in md  # the method names the calls


@test
def report_of_fp32_cases_keeps_its_form():
    names = ["matmul_1024", "mul"]
    with tempfile.TemporaryDirectory() as tmp:
        p = synthetic_run(tmp, names)
        out = os.path.join(tmp, "R.md")
        run_quiet(report.main, ["--ours", p["ours"], "--vendor", p["vendor"], "--frameworks", p["frameworks"],
                                "--out", out, "--cases", ",".join(names), "--commit", "t", "--date", "d"])
        md = open(out).read()
    assert "## Per call (what a caller waits for: host dispatch + kernels)" in md
    assert "###" not in md and "bf16" not in md and "lp_" not in md
    assert "everything float32, TF32 off on all sides" in md


@test
def report_merges_the_runs_of_several_calls():
    with tempfile.TemporaryDirectory() as tmp:
        runs = []
        for k, names in enumerate((["mul_bf16"], ["matmul_1024_tf32"])):
            d = os.path.join(tmp, str(k))
            os.mkdir(d)
            runs.append(synthetic_run(d, names))
        json_path = os.path.join(tmp, "R.json")
        argv = ["--out", os.path.join(tmp, "R.md"), "--cases", "mul_bf16,matmul_1024_tf32", "--commit", "t"]
        for kind in ("ours", "vendor", "frameworks"):
            argv += ["--" + kind] + [r[kind] for r in runs]
        rc, _ = run_quiet(report.main, argv)
        assert rc == 0
        res = json.load(open(json_path))
    assert res["cases"]["mul_bf16"]["graph"]["ours"] == 10.0
    assert res["cases"]["matmul_1024_tf32"]["graph"]["peers"]["cublas"] == 9.5
    assert any("2 runs merged" in n for n in res["notes"]), res["notes"]


def write_run(root, case, evals, rc=0, default_us=None, chosen="tuned", sub=""):
    """A case's folder as device.sh convergence leaves it: params[/SUB]/logs/<w>.json.log.jsonl
    (an atf log: header, then one record per (seconds, cost, valid) of `evals`; None: an empty
    file), the parameter file beside the log when default_us is given, rc, tune.txt."""
    d = os.path.join(root, case)
    logs = os.path.join(d, "params", sub, "logs")
    os.makedirs(logs)
    log = os.path.join(logs, f"{case}_0123abcd_64.json.log.jsonl")
    with open(log, "w") as f:
        if evals is not None:
            f.write(json.dumps({"atf_log": 2, "created": "2026-01-01T00:00:00.000Z", "parameters": ["x"]}) + "\n")
            for k, (t, cost, valid) in enumerate(evals):
                ms = int(round((t + 0.25) * 1000))  # the search starts 0.25 s after the header
                stamp = f"2026-01-01T00:{ms // 60000:02d}:{ms // 1000 % 60:02d}.{ms % 1000:03d}Z"
                f.write(json.dumps({"configuration": {"x": k}, "cost": cost if valid else None,
                                    "elapsed_s": t, "timestamp": stamp, "valid": valid}) + "\n")
    if default_us is not None:
        with open(os.path.join(d, "params", sub, f"{case}_0123abcd_64.json"), "w") as f:
            json.dump({"tuning": {"default_cost": default_us, "chosen": chosen}}, f)
    with open(os.path.join(d, "rc"), "w") as f:
        f.write(f"{rc}\n")
    with open(os.path.join(d, "tune.txt"), "w") as f:
        f.write("case evals ...\n")
    return d


def convergence_rows(root, cases, *extra):
    rc, out = run_quiet(convergence_report.main, [root, "--cases", ",".join(cases), "--seconds", "540",
                                                  *extra])
    assert rc == 0, out
    res = json.load(open(os.path.join(root, "convergence.json")))
    md = open(os.path.join(root, "CONVERGENCE.md")).read()
    return {r["case"]: r for r in res["cases"]}, md


@test
def convergence_report_judges_60_s_against_the_end():
    with tempfile.TemporaryDirectory() as tmp:
        # within: 50 us by 30 s, 49 at 300 s (50 / 49 = 1.020); the bf16 case's log under bf16/
        write_run(tmp, "fast", [(1, 100.0, True), (30, 50.0, True), (45, 70.0, False), (300, 49.0, True),
                                (530, 60.0, True)], default_us=200.0, sub="bf16")
        # not within: 80 us by 60 s, 60 at 200 s (1.333), within 5 % from 200 s on
        write_run(tmp, "slow", [(1, 100.0, True), (50, 80.0, True), (61, 79.0, True), (200, 60.0, True),
                                (539, 61.0, True)])
        # nothing beat the default (40 us): within from second 0
        write_run(tmp, "kept", [(2, 90.0, True), (400, 45.0, True)], default_us=40.0, chosen="default")
        rows, md = convergence_rows(tmp, ["fast", "slow", "kept"], "--no-plots")
    f, s, k = rows["fast"], rows["slow"], rows["kept"]
    assert f["status"] == "ok" and f["evaluations"] == 5 and f["within"] is True, f
    assert (f["best_at_us"], f["best_end_us"], f["to_within_s"]) == (50.0, 49.0, 30.0), f
    assert math.isclose(f["ratio"], 50 / 49) and math.isclose(f["seconds"], 530, abs_tol=0.01)
    assert s["within"] is False and math.isclose(s["ratio"], 80 / 60) and s["to_within_s"] == 200.0, s
    assert k["within"] is True and k["best_at_us"] == 40.0 and k["to_within_s"] == 0.0, k
    assert "the default configuration was never beaten" in md
    assert "**2 of 3 cases within 5 % of their final best after 60 s**." in md, md
    assert "| fast | ok | 5 | 530 | 200.00 | 50.00 | 49.00 | 1.020 | **yes** | 30 |" in md, md
    assert "| slow | ok | 5 | 539 | – | 80.00 | 60.00 | 1.333 | no | 200 |" in md, md


@test
def convergence_report_says_what_went_wrong():
    with tempfile.TemporaryDirectory() as tmp:
        write_run(tmp, "empty", None)                              # a zero-byte log
        write_run(tmp, "header_only", [])                          # the header, no evaluation
        write_run(tmp, "invalid", [(1, 5.0, False), (2, 6.0, False)])
        write_run(tmp, "crashed", [(1, 100.0, True), (20, 90.0, True)], rc=139)
        write_run(tmp, "killed", [(1, 100.0, True), (569, 90.0, True)], rc=124)
        os.makedirs(os.path.join(tmp, "nolog"))
        with open(os.path.join(tmp, "nolog", "rc"), "w") as f:
            f.write("134\n")
        with open(os.path.join(tmp, "garbage.log.jsonl"), "w") as f:
            f.write("not json\n")
        os.makedirs(os.path.join(tmp, "garbage", "params", "logs"))
        os.rename(os.path.join(tmp, "garbage.log.jsonl"), os.path.join(tmp, "garbage", "params", "logs", "g.log.jsonl"))
        cases = ["empty", "header_only", "invalid", "crashed", "killed", "nolog", "garbage", "never_ran"]
        rows, md = convergence_rows(tmp, cases, "--no-plots")
    assert rows["empty"]["status"] == "empty log" and rows["empty"]["evaluations"] == 0
    assert rows["header_only"]["status"] == "no evaluation", rows["header_only"]
    assert "no valid evaluation" in rows["invalid"]["status"] and rows["invalid"]["evaluations"] == 2
    c = rows["crashed"]
    assert c["status"] == "crashed (rc 139)" and c["best_end_us"] == 90.0 and c["within"] is None, c
    assert any("shorter than 60 s" in n for n in c["notes"])  # no verdict: it ended at 20 s
    assert rows["killed"]["status"].startswith("timed out (rc 124)")
    assert rows["nolog"]["status"] == "crashed (rc 134)"
    assert "not JSON" in rows["garbage"]["status"], rows["garbage"]
    assert rows["never_ran"]["status"] == "not run (no folder)"
    assert "| invalid | log: no valid evaluation | 2 |" in md and "| garbage | log:1: not JSON" in md, md
    assert rows["killed"]["within"] is False  # 100 us by 60 s, 90 at 569 s
    assert all(rows[c]["within"] is None for c in cases if c != "killed")
    assert "**0 of 8 cases within 5 %" in md and "(7 without a verdict)" in md, md


@test
def convergence_report_draws_or_says_why_not():
    with tempfile.TemporaryDirectory() as tmp:
        write_run(tmp, "a", [(1, 100.0, True), (30, 50.0, True), (300, 49.0, True)], default_us=120.0)
        write_run(tmp, "b", [(1, 10.0, True), (100, 8.0, True)])
        write_run(tmp, "empty", None)
        orig = convergence_report.have_matplotlib
        convergence_report.have_matplotlib = lambda: False
        try:
            rows, md = convergence_rows(tmp, ["a", "b", "empty"])
        finally:
            convergence_report.have_matplotlib = orig
        assert "no curves: matplotlib is missing" in md and not os.path.exists(os.path.join(tmp, "plots"))
        assert rows["a"]["within"] is True  # the table is written all the same
        if not orig():
            return  # the pictures themselves need matplotlib
        rows, md = convergence_rows(tmp, ["a", "b", "empty"])
        for png in ("plots/a.png", "plots/b.png", "convergence_all.png"):
            p = os.path.join(tmp, png)
            assert os.path.exists(p) and os.path.getsize(p) > 10000, png
        assert not os.path.exists(os.path.join(tmp, "plots", "empty.png"))
        assert "`plots/a.png`" in md and "`convergence_all.png`" in md, md


@test
def untuned_cases_names_the_default_configured_ones():
    doc = {"cases": {"softmax_bf16": {"ok": True, "tuned": False, "graph_us": 40.0},
                     "dot_bf16": {"ok": True, "tuned": True, "graph_us": 28.6},
                     "broken": {"ok": False, "error": "NVRTC ..."},
                     "layernorm_bf16": {"ok": True, "tuned": False}}}
    assert untuned_cases.untuned(doc["cases"]) == ["softmax_bf16", "layernorm_bf16"]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "ours.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        rc, out = run_quiet(untuned_cases.main, ["untuned_cases.py", path])
        assert rc == 0 and out == "softmax_bf16,layernorm_bf16\n", out
        doc["cases"] = {"dot_bf16": {"ok": True, "tuned": True}}
        with open(path, "w") as f:
            json.dump(doc, f)
        rc, out = run_quiet(untuned_cases.main, ["untuned_cases.py", path])
        assert rc == 0 and out == "\n", out


@test
def layer_tf32x3_is_an_fp32_case_to_the_peers():
    shape = {"batch": 16, "seq": 128, "hidden": 768, "heads": 12, "ffn": 3072}
    assert layer_peers.peer_type("tf32x3") == "f32" and layer_peers.peer_type("bf16") == "bf16"
    assert layer_peers.bound("tf32x3", shape) == layer_peers.bound("f32", shape)
    assert layer_peers.bound("bf16", shape) > 100 * layer_peers.bound("f32", shape)
    # the report: the tf32x3 case's rows against the fp32 peers, ours labelled
    ours = {"device": "H200", "cases": {
        "bert_b16_s128_f32": {"ok": True, "type": "f32", "per_call_us": 400.0, "graph_us": 380.0},
        "bert_b16_s128_tf32x3": {"ok": True, "type": "tf32x3", "per_call_us": 250.0,
                                 "graph_us": 200.0}}}
    compiled = {"ok": True, "per_call_us": 500.0, "graph_us": 300.0, "rel_err": 1e-6}
    peers = {"cases": {
        "bert_b16_s128_f32": {"type": "f32", "peer_type": "f32", "ours_rel_err": 1e-6,
                              "bound": 1e-4, "ours_ok": True, "peers": {"compile": compiled}},
        "bert_b16_s128_tf32x3": {"type": "tf32x3", "peer_type": "f32", "ours_rel_err": 2e-6,
                                 "bound": 1e-4, "ours_ok": True, "peers": {"compile": compiled}}}}
    md = layer_report.report(ours, peers, "t")
    f32_part = md.split("## bert_b16_s128_f32")[1].split("## bert_b16_s128_tf32x3")[0]
    tf_part = md.split("## bert_b16_s128_tf32x3")[1]
    assert "| ours (mdh) | 400.0 | 380.0 |" in f32_part and "TF32" not in f32_part, f32_part
    assert "| ours (mdh, three-TF32 products) | 250.0 | 200.0 |" in tf_part, tf_part
    assert "three TF32 products each" in tf_part and "the peers: fp32, TF32 off" in tf_part
    assert "| torch.compile (default) | 500.0 | 300.0 | 2.00x | 1.50x |" in tf_part, tf_part
    assert "| bert_b16_s128_tf32x3 (ours: three-TF32 products) | 200.0 | 300.0 | 1.50x | met |" in md
    assert "| bert_b16_s128_f32 | 380.0 | 300.0 | 0.79x | missed |" in md



@test
def tf32x3_variants_are_the_fp32_products_with_the_fp32_peers():
    doc = cases_mod.load()
    by_name = {c["name"]: c for c in doc["cases"]}
    x3 = [c for c in doc["cases"] if c.get("type") == "tf32x3"]
    tf32_bases = {c["base"] for c in doc["cases"] if c.get("type") == "tf32"}
    # one per float32 product (the cases with a tf32 variant), suite tf32x3, after every other case
    assert len(x3) == 20 and {c["base"] for c in x3} == tf32_bases, sorted(tf32_bases ^ {c["base"] for c in x3})
    assert [c["name"] for c in doc["cases"][-len(x3):]] == [c["name"] for c in x3]
    assert {c["name"] for c in cases_mod.select(doc, suites=["tf32x3"])} == {c["name"] for c in x3}
    keep = {"product_large": "lp_product_large", "product_small": "lp_product_small",
            "odd_product": "lp_product_small", "conv": "conv", "tccg": "tccg"}
    for c in x3:
        base = by_name[c["base"]]
        assert "type" not in base and c["name"] == base["name"] + "_tf32x3" and c["suite"] == "tf32x3"
        assert c["description"] == base["description"] + " [tf32x3]"
        # fp32 storage: the float32 case's inputs and bytes, ops, sizes and flops
        for k in ("op", "sizes", "flops", "bytes", "inputs"):
            assert c[k] == base[k], (c["name"], k)
        assert c.get("floor_note") == base.get("floor_note")
        # the peers are exactly the float32 case's: no type on the vendor line, JAX 'highest'
        assert c["peers"] == base["peers"], c["name"]
        assert cases_mod.type_of(c) == "tf32x3" and cases_mod.peer_type(c) == "f32"
        # issue 18's product targets (batched: 1.0x), and issue 19's odd_product where the base has it
        want = []
        for t in base["targets"]:
            if keep[t] not in want:
                want.append(keep[t])
        if base["op"] in ("batch_matmul", "bmatmul") and "lp_product_large" in want:
            want = ["lp_product_small"]
        if "odd_product" in base["targets"]:
            want.append("odd_product")
        assert c["targets"] == want, (c["name"], c["targets"], want)
        assert all(t in doc["targets"] for t in c["targets"])
    assert by_name["matmul_997x1009x769_tf32x3"]["targets"] == ["lp_product_small", "odd_product"]
    assert by_name["bmm_qk_tf32x3"]["targets"] == ["lp_product_small"]
    assert by_name["matmul_1024_tf32x3"]["targets"] == ["lp_product_large"]
    assert "tf32x3" in doc["about"] and "tf32x3" in doc["targets"]["lp_product_large"]
    # the vendor lines are the float32 case's, word for word after the name
    lines = {ln.split()[0]: ln.split(None, 1)[1] for ln in cases_mod.vendor_lines(doc)}
    for c in x3:
        if c["peers"].get("vendor"):
            assert lines[c["name"]] == lines[c["base"]] and "type=" not in lines[c["name"]], c["name"]
    # the floor: the fp32 SGEMM rate (the run's, else the reference), not a TF32 one
    c = by_name["matmul_1024_tf32x3"]
    assert cases_mod.compute_rate(c, {"sgemm_flops_per_s": 40e12, "tf32_gemm_flops_per_s": 400e12}) == (40e12, True)
    assert cases_mod.compute_rate(c, None) == (cases_mod.REF_SGEMM_FLOPS_PER_S, False)
    assert cases_mod.TYPES[-1] == "tf32x3"
    r = subprocess.run([sys.executable, os.path.join(HERE, "peers", "cases.py"), "--types", "--suite", "tf32,tf32x3"],
                       capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip() == "tf32,tf32x3", r.stdout + r.stderr


class _FakeTorch:
    """Just the precision switches frameworks.torch_precision reads and sets."""

    def __init__(self):
        ns = lambda **kw: type("ns", (), kw)()
        self.backends = ns(cuda=ns(matmul=ns(allow_tf32=False, allow_bf16_reduced_precision_reduction=False)),
                           cudnn=ns(allow_tf32=False))
        self.prec = "highest"

    def get_float32_matmul_precision(self):
        return self.prec

    def set_float32_matmul_precision(self, p):
        self.prec = p


@test
def frameworks_run_tf32x3_cases_as_their_float32_peers():
    # settings: TF32 stays off in torch (recorded with the peer type), JAX 'highest'
    t = _FakeTorch()
    with frameworks.torch_precision(t, "tf32x3") as used:
        assert not t.backends.cuda.matmul.allow_tf32 and not t.backends.cudnn.allow_tf32 and t.prec == "highest"
    assert used["type"] == "tf32x3" and used["peer_type"] == "f32"
    assert used["torch.backends.cuda.matmul.allow_tf32"] is False
    with frameworks.torch_precision(t, "tf32") as used:  # the tf32 case still turns it on
        assert t.backends.cuda.matmul.allow_tf32 and t.prec == "high" and "peer_type" not in used
    assert not t.backends.cuda.matmul.allow_tf32 and t.prec == "highest"  # restored
    assert frameworks.jax_precision_name("tf32x3") == "highest" == frameworks.jax_precision_name("f32")
    # the fp32 error limit: a TF32-sized error is an error, fp32's is no note
    e = {"rel_err": 3e-4}
    frameworks.judge(e, "tf32x3")
    assert not e["ok"] and "tf32x3 (fp32 peers) limit is 1e-04" in e["error"], e
    e = {"rel_err": 1e-7}
    frameworks.judge(e, "tf32x3")
    assert e["ok"] and "precision_used" not in e
    rc, out = run_quiet(frameworks.main, ["--dry-run", "--suite", "tf32x3"])
    assert rc == 0 and "matmul_1024_tf32x3" in out and "'tensorfloat32'" not in out, out
    assert out.count("(JAX precision 'highest')") == 20, out


@test
def report_gives_tf32x3_its_fp32_class_table():
    names = ["matmul_1024", "matmul_1024_tf32x3", "matmul_997x1009x769_tf32x3", "bmm_qk_tf32x3",
             "matmul_1024_tf32"]
    md, res = synthetic_report(names)
    title = report.TYPE_TITLE["tf32x3"]
    assert "fp32 storage and accuracy" in title and "three TF32" in title and "peers in fp32, TF32 off" in title
    sections = [ln for ln in md.splitlines() if ln.startswith("## ")]
    assert sections[:3] == ["## " + report.TYPE_TITLE[t] for t in ("f32", "tf32", "tf32x3")], sections
    part = md.split("## " + title)[1].split("## Targets")[0]
    assert "| matmul_1024_tf32x3 |" in part and "| bmm_qk_tf32x3 |" in part and "| matmul_1024 |" not in part
    assert "matmul_1024_tf32 |" not in part
    assert "fp32 accuracy class" in part and "fp32 SGEMM rate" in part and "user's explicit choice" in part
    c = res["cases"]
    # the floor from the SGEMM rate (50 TFLOP/s here), as the float32 case's; not the TF32 rate
    assert c["matmul_1024_tf32x3"]["floor_us"] == c["matmul_1024"]["floor_us"]
    assert math.isclose(c["matmul_1024_tf32x3"]["floor_us"], max(12582912 / 4e12, 2 * 1024**3 / 50e12) * 1e6)
    assert "tf32x3 floors: the fp32 SGEMM rate (50.0 TFLOP/s)" in md
    assert res["ceilings"]["gemm_by_type"]["tf32x3"]["flops_per_s"] == 50e12
    # targets against the fp32 cuBLAS (9.5 us, ours 10): 0.95x
    g = lambda n, t: c[n]["graph"]["targets"][t]
    assert g("matmul_1024_tf32x3", "lp_product_large")["met"] is True
    assert "fp32 cuBLAS, TF32 off, ours tf32x3 on tensor cores" in g("matmul_1024_tf32x3", "lp_product_large")["why"]
    assert g("matmul_997x1009x769_tf32x3", "lp_product_small")["met"] is False
    assert g("matmul_997x1009x769_tf32x3", "odd_product")["met"] is True
    assert g("bmm_qk_tf32x3", "lp_product_small")["met"] is False
    assert "cuBLAS (need" in g("matmul_1024", "product_large")["why"]
    assert "fp32" not in g("matmul_1024", "product_large")["why"]
    assert res["summary_by_type"]["tf32x3"]["graph"]["targets_met"] == 2
    assert "- tf32x3 cases (fp32 accuracy class)" in md and "`.with_precision(tf32x3)`" in md


@test
def report_tf32x3_peers_fall_back_to_the_float32_case():
    names = ["matmul_1024", "matmul_1024_tf32x3", "bmm_qk", "bmm_qk_tf32x3"]
    with tempfile.TemporaryDirectory() as tmp:
        p = synthetic_run(tmp, names)
        for kind in ("vendor", "frameworks"):  # matmul_1024_tf32x3: no peer entries of its own
            d = json.load(open(p[kind]))
            del d["cases"]["matmul_1024_tf32x3"]
            if kind == "vendor":  # bmm_qk_tf32x3's own entry differs from its float32 case's
                d["cases"]["bmm_qk_tf32x3"]["cublas"]["graph_us"] = 7.0
                d["cases"]["matmul_1024"]["cublas"]["graph_us"] = 6.0
            json.dump(d, open(p[kind], "w"))
        out = os.path.join(tmp, "R.md")
        rc, _ = run_quiet(report.main, ["--ours", p["ours"], "--vendor", p["vendor"], "--frameworks",
                                        p["frameworks"], "--out", out, "--cases", ",".join(names),
                                        "--commit", "t", "--date", "d"])
        assert rc == 0
        md = open(out).read()
        res = json.load(open(os.path.join(tmp, "R.json")))
    c = res["cases"]
    m = c["matmul_1024_tf32x3"]
    assert m["peers_from"] == {"vendor": "matmul_1024", "frameworks": "matmul_1024"}
    assert m["graph"]["peers"] == c["matmul_1024"]["graph"]["peers"] and m["graph"]["peers"]["cublas"] == 6.0
    assert m["graph"]["peers"]["eager"] == 8.0
    b = c["bmm_qk_tf32x3"]  # its own entries win
    assert "peers_from" not in b and b["graph"]["peers"]["cublas"] == 7.0 and c["bmm_qk"]["graph"]["peers"]["cublas"] == 9.5
    assert any("matmul_1024_tf32x3 ← matmul_1024" in n and "bmm_qk_tf32x3" not in n for n in res["notes"]), res["notes"]
    assert "- note: tf32x3 cases with no frameworks and vendor peer entries of their own" in md
    # float32 and other cases never borrow: a float32 case without entries shows none
    with tempfile.TemporaryDirectory() as tmp:
        p = synthetic_run(tmp, ["matmul_1024_tf32"])
        out = os.path.join(tmp, "R.md")
        run_quiet(report.main, ["--ours", p["ours"], "--vendor", p["vendor"], "--frameworks", p["frameworks"],
                                "--out", out, "--cases", "matmul_1024_tf32,matmul_1024", "--commit", "t"])
        res = json.load(open(os.path.join(tmp, "R.json")))
    assert res["cases"]["matmul_1024"]["graph"]["peers"] == {}
    assert not any("tf32x3" in n for n in res["notes"])

def main():
    passed = failed = 0
    for t in TESTS:
        try:
            t()
            passed += 1
            print(f"ok   {t.__name__}")
        except Exception as e:  # an assertion or an error: the test failed
            failed += 1
            print(f"FAIL {t.__name__}: {type(e).__name__}: {e}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
