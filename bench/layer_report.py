#!/usr/bin/env python3
"""bench/LAYER.md from the layer benchmark: our layer (layer_bench's JSON) and the peers
(bench/peers/layer.py's JSON), one table per case (shape and type): the whole layer per call and
by CUDA-graph replay with each peer's time and its ratio to ours (peer / ours: above 1, ours is
faster), then the stages (ours and PyTorch eager, per stage), and the issue-20 target (the whole
layer at least 1.25x faster than torch.compile's best mode, graph replay). Missing inputs or
entries print as "-". A tf32x3 case (ours: fp32, the weight products as three TF32 products
each) is compared with the peers in fp32, TF32 off, and labelled so.

  layer_report.py --ours ours_layer.json --peers peers_layer.json [--commit HASH] [--out LAYER.md]
"""
import argparse
import datetime
import json
import subprocess
import sys

PEER_NAMES = {
    "eager": "PyTorch eager",
    "eager_sdpa": "PyTorch eager + SDPA",
    "compile": "torch.compile (default)",
    "compile_max": "torch.compile (max-autotune-no-cudagraphs)",
    "jax": "JAX jit (graph: pipelined)",
}

# Our case types whose tensors are fp32 but whose products are not plain fp32: the label of our
# rows, and what the case's section says (the peers run them as fp32: bench/peers/layer.py).
OURS_PRODUCTS = {
    "tf32x3": ("three-TF32 products",
               "ours: fp32 tensors, the four weight products (qkv, attn_out, ffn_up, ffn_down) as "
               "three TF32 products each on the tensor cores (near-fp32 accuracy, held to fp32's bound), "
               "the other stages fp32; the peers: fp32, TF32 off."),
}


def load(path):
    if not path:
        return {}
    try:
        return json.load(open(path))
    except Exception as e:  # a missing or cut-off file: the report says so
        print(f"layer_report: {path}: {e}", file=sys.stderr)
        return {}


def us(v):
    return "-" if v is None else f"{v:.1f}"


def ratio(peer, ours):
    return "-" if not peer or not ours else f"{peer / ours:.2f}x"


def report(ours, peers, commit):
    lines = ["# The BERT encoder layer (issue 20)", ""]
    dev = ours.get("device") or peers.get("device") or "?"
    lines += [f"Device {dev}; commit {commit}; {datetime.date.today().isoformat()}. Times in us, "
              "medians; per call: 256 MB flush, then events around the call; graph: CUDA-graph "
              "replay (JAX: a pipelined host loop). Ratio = peer / ours (above 1: ours is faster). "
              "Every output is checked against the layer in float64 (PyTorch) on the same "
              "inputs and weights, bound 9 x mdh::tuning::tolerance(type, longest reduction).", ""]
    if peers.get("versions"):
        lines += ["Versions: " + ", ".join(f"{k} {v}" for k, v in peers["versions"].items()), ""]
    for what, d in (("peers", peers), ("ours", ours)):
        if not d:
            lines += [f"No results from {what} (see its log)", ""]
        for key in ("torch_error", "error"):
            if d.get(key):
                lines += [f"{what}: {d[key]}", ""]
    names = sorted(set(ours.get("cases", {})) | set(peers.get("cases", {})))
    summary = []
    for name in names:
        o = ours.get("cases", {}).get(name, {})
        p = peers.get("cases", {}).get(name, {})
        lines += [f"## {name}", ""]
        label, said = OURS_PRODUCTS.get(o.get("type") or p.get("type"), ("", ""))
        if said:
            lines += [said, ""]
        if not o.get("ok", False):
            lines += [f"ours: error: {o.get('error', 'no result')}", ""]
        err = p.get("ours_rel_err")
        if err is not None:
            lines += [f"ours vs float64: relative L2 error {err:.3g} (bound {p.get('bound', 0):.3g}): "
                      + ("matches" if p.get("ours_ok") else "**DIFFERS**"), ""]
        if o.get("attention_form"):
            lines += [f"attention: {o['attention_form']} ({o.get('attention_form_why', '')})", ""]
        lines += ["| layer | per call | graph | per call ratio | graph ratio | error |",
                  "|---|---|---|---|---|---|"]
        opc, ogr = o.get("per_call_us"), o.get("graph_us")
        tuned = "" if o.get("tuned", True) else " (some stages default)"
        ours_title = f"ours (mdh, {label})" if label else "ours (mdh)"
        lines.append(f"| {ours_title}{tuned} | {us(opc)} | {us(ogr)} | 1.00x | 1.00x | {us(None) if err is None else f'{err:.2g}'} |")
        # the same layer with programmatic dependent launch between its stages (sm_90 on)
        opc_o, ogr_o = o.get("per_call_overlap_us"), o.get("graph_overlap_us")
        if ogr_o:
            lines.append(f"| ours, programmatic dependent launch | {us(opc_o)} | {us(ogr_o)} | "
                         f"{ratio(opc_o, opc)} | {ratio(ogr_o, ogr)} | (same kernels) |")
        best_compile = None
        for peer, title in PEER_NAMES.items():
            e = p.get("peers", {}).get(peer)
            if e is None:
                continue
            if not e.get("ok"):
                lines.append(f"| {title} | - | - | - | - | error: {e.get('error', '?')[:120]} |")
                continue
            g = e.get("graph_us") if peer != "jax" else e.get("pipelined_us")
            lines.append(f"| {title} | {us(e.get('per_call_us'))} | {us(g)} | "
                         f"{ratio(e.get('per_call_us'), opc)} | {ratio(g, ogr)} | {e.get('rel_err', 0):.2g} |")
            if peer.startswith("compile") and e.get("graph_us"):
                best_compile = min(best_compile or 1e30, e["graph_us"])
        lines.append("")
        eager_stages = p.get("peers", {}).get("eager", {}).get("stages", {})
        sdpa_stages = p.get("peers", {}).get("eager_sdpa", {}).get("stages", {})
        if o.get("stages"):
            lines += ["| stage | ours per call | ours graph | eager per call | eager graph | configuration |",
                      "|---|---|---|---|---|---|"]
            for st in o.get("stage_order", list(o["stages"])):
                s = o["stages"][st]
                # the one-kernel attention against scaled_dot_product_attention alone
                e = eager_stages.get(st) or sdpa_stages.get(st, {})
                origin = "tuned" if s.get("origin") != "default configuration" else "default"
                lines.append(f"| {st} | {us(s.get('per_call_us'))} | {us(s.get('graph_us'))} | "
                             f"{us(e.get('per_call_us'))} | {us(e.get('graph_us'))} | {origin} |")
            lines.append("")
            ours_a, sdpa_a = o.get("attention_alone"), sdpa_stages.get("attention")
            three = [o["stages"].get(k) for k in ("scores", "softmax", "context")]
            if not ours_a and all(three):  # the three-kernel form: its stages added up
                ours_a = {k: sum(t[k] for t in three) for k in ("per_call_us", "graph_us")
                          if all(t.get(k) is not None for t in three)}
            if ours_a and sdpa_a:
                form = "one kernel" if o.get("attention_alone") else "three kernels, added up"
                lines.append(f"Attention alone ({form}) against eager scaled_dot_product_attention: "
                             f"per call {us(ours_a.get('per_call_us'))} vs {us(sdpa_a.get('per_call_us'))} "
                             f"({ratio(sdpa_a.get('per_call_us'), ours_a.get('per_call_us'))}), graph "
                             f"{us(ours_a.get('graph_us'))} vs {us(sdpa_a.get('graph_us'))} "
                             f"({ratio(sdpa_a.get('graph_us'), ours_a.get('graph_us'))}).")
                lines.append("")
        # ours: the faster of the plain and the overlapped graph, said which
        best, how = ogr, ""
        if ogr_o and (not ogr or ogr_o < ogr):
            best, how = ogr_o, " (dependent launch)"
        case = f"{name} (ours: {label})" if label else name
        if best_compile and best:
            r = best_compile / best
            summary.append(f"| {case} | {us(best)}{how} | {us(best_compile)} | {r:.2f}x | "
                           f"{'met' if r >= 1.25 else 'missed'} |")
        else:
            summary.append(f"| {case} | {us(best)}{how} | - | - | no comparison |")
    if peers.get("skipped"):
        lines += ["Skipped (budget): " + "; ".join(peers["skipped"]), ""]
    head = ["## Target: the whole layer >= 1.25x faster than torch.compile's best mode (graph replay)", "",
            "| case | ours graph | best torch.compile graph | ratio | target |", "|---|---|---|---|---|"]
    return "\n".join(lines[:4] + head + summary + [""] + lines[4:]) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ours", default="")
    p.add_argument("--peers", default="")
    p.add_argument("--commit", default="")
    p.add_argument("--out", default="bench/LAYER.md")
    a = p.parse_args(argv)
    commit = a.commit
    if not commit:
        try:
            commit = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True,
                                    text=True).stdout.strip() or "unknown"
        except Exception:
            commit = "unknown"
    text = report(load(a.ours), load(a.peers), commit)
    with open(a.out, "w") as f:
        f.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
