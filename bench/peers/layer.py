#!/usr/bin/env python3
"""The peers of the BERT-layer benchmark (issue 20) on the data bench/layer_bench wrote.

For each case folder (DUMP/<case>/manifest.json: the inputs, the weights and our output Y) it
computes the layer in float64 with PyTorch (the reference), checks our output against it, and
times the same layer with the same weights and inputs by:
  eager          PyTorch eager, the reference BERT op sequence (addmm, view/permute, matmul,
                 scale, mask add, softmax, matmul, permute/reshape, addmm + residual, layer_norm,
                 addmm + GELU, addmm + residual, layer_norm); also per stage
  eager_sdpa     the same with F.scaled_dot_product_attention (additive mask)
  compile        torch.compile(eager), mode "default"
  compile_max    torch.compile(eager), mode "max-autotune-no-cudagraphs"
  jax            jax.jit of the same op sequence (XLA)
per call (256 MB flush, CUDA events around the call) and by CUDA-graph replay ("graph": eager's
graph column is the CUDA-graph replay of eager); JAX: host clock and a pipelined loop, as
frameworks.py. Each peer's output is checked against the float64 reference under the bound our
layer is held to (9 x mdh::tuning::tolerance(type, longest reduction)); one that fails is an
error entry, not a time. One failing peer does not stop the others; --budget-s cuts the rest
off (recorded as skipped). Writes --out (JSON) after every peer.

A case of type tf32x3 (ours: fp32 tensors, the four weight products as three TF32 products each
on the tensor cores, near-fp32 accuracy) is run by the peers as f32 - float32 tensors, TF32 off
everywhere - and bound as f32: it is the fp32-accuracy class (peer_type).

  layer.py --dump DIR [--cases a,b] [--peers eager,eager_sdpa,compile,compile_max,jax]
           [--budget-s 300] --out peers_layer.json
  layer.py --self-test      (no GPU: the op sequence in float64 on the CPU against a NumPy
                            version of the reference, on a small random layer)
"""
import argparse
import json
import math
import os
import statistics
import sys
import time
import traceback

FLUSH_BYTES = 256 << 20
PEERS = ["eager", "eager_sdpa", "jax", "compile", "compile_max"]  # the slowest to start last
STAGES = ["qkv", "scores", "softmax", "context", "attn_out", "ln1", "ffn_up", "ffn_down", "ln2"]


def peer_type(ty):
    """The type the peers run a case of our type `ty` as: tf32x3 (three TF32 products per fp32
    product, near-fp32 accuracy) is f32 to them; f32 and bf16 are themselves."""
    return "f32" if ty == "tf32x3" else ty


def bound(ty, shape):
    """9 x mdh::tuning::tolerance(type, longest reduction): what the C++ side holds ours to
    (tf32x3: f32's)."""
    eps32 = 2.0 ** -23
    k = max(shape["hidden"], shape["ffn"], shape["seq"])
    f32 = 84 * eps32 + 8.4 * eps32 * math.sqrt(k)
    return 9 * ((2 * 2.0 ** -7 + f32) if peer_type(ty) == "bf16" else f32)


def short_error(e):
    s = f"{type(e).__name__}: {e}"
    return s if len(s) < 600 else s[:600] + "..."


# ---------------------------------------------------------------- the layer, as PyTorch code
def torch_stages(torch, F, shape, W, sdpa=False):
    """The layer as a list of (stage, fn(state) -> None) on a dict of tensors; state["X"] in,
    state["Y"] out. The same code runs in float64 (the reference), fp32 and bf16."""
    B, S, N, H, Fd = shape["batch"], shape["seq"], shape["hidden"], shape["heads"], shape["ffn"]
    D = N // H
    T = B * S
    eps = shape.get("layernorm_eps", 1e-12)
    neg = shape.get("mask_value", -10000.0)

    def qkv(st):
        st["QKV"] = torch.addmm(W["bqkv"], st["X"], W["Wqkv"]).view(B, S, 3, H, D)

    def scores(st):
        q = st["QKV"][:, :, 0].permute(0, 2, 1, 3)
        k = st["QKV"][:, :, 1].permute(0, 2, 3, 1)
        add = ((1.0 - W["mask"]) * neg).view(B, 1, 1, S)
        st["scores"] = torch.matmul(q, k) * (1.0 / math.sqrt(D)) + add

    def softmax(st):
        st["P"] = torch.softmax(st["scores"], dim=-1)

    def context(st):
        v = st["QKV"][:, :, 2].permute(0, 2, 1, 3)
        st["ctx"] = torch.matmul(st["P"], v).permute(0, 2, 1, 3).reshape(T, N)

    def attention_sdpa(st):
        q = st["QKV"][:, :, 0].permute(0, 2, 1, 3)
        k = st["QKV"][:, :, 1].permute(0, 2, 1, 3)
        v = st["QKV"][:, :, 2].permute(0, 2, 1, 3)
        add = ((1.0 - W["mask"]) * neg).view(B, 1, 1, S).to(q.dtype)
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=add)
        st["ctx"] = o.permute(0, 2, 1, 3).reshape(T, N)

    def attn_out(st):
        st["attn"] = torch.addmm(W["bo"], st["ctx"], W["Wo"]) + st["X"]

    def ln1(st):
        st["H1"] = F.layer_norm(st["attn"], (N,), W["gamma1"], W["beta1"], eps)

    def ffn_up(st):
        st["F1"] = F.gelu(torch.addmm(W["b1"], st["H1"], W["W1"]))

    def ffn_down(st):
        st["F2"] = torch.addmm(W["b2"], st["F1"], W["W2"]) + st["H1"]

    def ln2(st):
        st["Y"] = F.layer_norm(st["F2"], (N,), W["gamma2"], W["beta2"], eps)

    if sdpa:
        return [("qkv", qkv), ("attention", attention_sdpa), ("attn_out", attn_out), ("ln1", ln1),
                ("ffn_up", ffn_up), ("ffn_down", ffn_down), ("ln2", ln2)]
    return [("qkv", qkv), ("scores", scores), ("softmax", softmax), ("context", context),
            ("attn_out", attn_out), ("ln1", ln1), ("ffn_up", ffn_up), ("ffn_down", ffn_down),
            ("ln2", ln2)]


def torch_layer_fn(torch, F, shape, W, sdpa=False):
    stages = torch_stages(torch, F, shape, W, sdpa)

    def layer(x):
        st = {"X": x}
        for _, fn in stages:
            fn(st)
        return st["Y"]
    return layer


def jax_layer_fn(jnp, jax, shape):
    B, S, N, H, Fd = shape["batch"], shape["seq"], shape["hidden"], shape["heads"], shape["ffn"]
    D = N // H
    T = B * S
    eps = shape.get("layernorm_eps", 1e-12)
    neg = shape.get("mask_value", -10000.0)

    def ln(x, g, b):
        m = jnp.mean(x.astype(jnp.float32), axis=-1, keepdims=True)
        v = jnp.mean(jnp.square(x.astype(jnp.float32) - m), axis=-1, keepdims=True)
        return ((x.astype(jnp.float32) - m) * jax.lax.rsqrt(v + eps) * g + b).astype(x.dtype)

    def layer(x, W):
        qkv = (x @ W["Wqkv"] + W["bqkv"]).reshape(B, S, 3, H, D)
        q = qkv[:, :, 0].transpose(0, 2, 1, 3)
        k = qkv[:, :, 1].transpose(0, 2, 3, 1)
        v = qkv[:, :, 2].transpose(0, 2, 1, 3)
        s = (q @ k) * (1.0 / math.sqrt(D)) + ((1.0 - W["mask"]) * neg).reshape(B, 1, 1, S).astype(x.dtype)
        p = jax.nn.softmax(s.astype(jnp.float32), axis=-1).astype(x.dtype)
        ctx = (p @ v).transpose(0, 2, 1, 3).reshape(T, N)
        h1 = ln(ctx @ W["Wo"] + W["bo"] + x, W["gamma1"], W["beta1"])
        f1 = jax.nn.gelu(h1 @ W["W1"] + W["b1"], approximate=False)
        return ln(f1 @ W["W2"] + W["b2"] + h1, W["gamma2"], W["beta2"])
    return layer


# ---------------------------------------------------------------- data
def load_case(torch, folder, device):
    man = json.load(open(os.path.join(folder, "manifest.json")))
    dt = {"f32": torch.float32, "bf16": torch.bfloat16, "f64": torch.float64}
    out = {}
    for name, t in man["tensors"].items():
        raw = bytearray(open(os.path.join(folder, t["file"]), "rb").read())
        x = torch.frombuffer(raw, dtype=dt[t["dtype"]]).reshape(t["shape"]).clone()
        out[name] = x.to(device)
    return man, out


def rel_err(torch, got, want):
    g, w = got.double().flatten(), want.double().flatten()
    if not bool(torch.isfinite(g).all()):
        return float("inf")
    return float(torch.linalg.vector_norm(g - w) / max(float(torch.linalg.vector_norm(w)), 1e-300))


def reference(torch, F, man, data):
    W = {k: v.double() for k, v in data.items()}
    return torch_layer_fn(torch, F, man["shape"], W)(W["X"])


# ---------------------------------------------------------------- timing (frameworks.py's method)
class Timer:
    def __init__(self, torch, reps):
        self.torch = torch
        self.reps = reps
        self.flush = torch.empty(FLUSH_BYTES // 4, dtype=torch.float32, device="cuda")

    def per_call(self, fn):
        torch = self.torch
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        cur = torch.cuda.current_stream()
        s = [torch.cuda.Event(enable_timing=True) for _ in range(self.reps)]
        e = [torch.cuda.Event(enable_timing=True) for _ in range(self.reps)]
        for r in range(self.reps):
            self.flush.zero_()
            torch.cuda.synchronize()
            s[r].record(cur)
            fn()
            e[r].record(cur)
        torch.cuda.synchronize()
        return statistics.median(a.elapsed_time(b) * 1e3 for a, b in zip(s, e))

    def graph(self, fn):
        torch = self.torch
        cur = torch.cuda.current_stream()
        side = torch.cuda.Stream()
        side.wait_stream(cur)
        with torch.cuda.stream(side):
            for _ in range(3):
                fn()
        cur.wait_stream(side)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            fn()
        for _ in range(3):
            g.replay()
        torch.cuda.synchronize()
        s = [torch.cuda.Event(enable_timing=True) for _ in range(self.reps)]
        e = [torch.cuda.Event(enable_timing=True) for _ in range(self.reps)]
        for r in range(self.reps):
            self.flush.zero_()
            s[r].record(cur)
            g.replay()
            e[r].record(cur)
        torch.cuda.synchronize()
        del g
        return statistics.median(a.elapsed_time(b) * 1e3 for a, b in zip(s, e))


# ---------------------------------------------------------------- peers
def torch_setup(torch, result):
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    result["settings"] = {
        "torch.backends.cuda.matmul.allow_tf32": False,
        "torch.backends.cudnn.allow_tf32": False,
        "torch.get_float32_matmul_precision": torch.get_float32_matmul_precision(),
        "allow_bf16_reduced_precision_reduction": False,
        "NVIDIA_TF32_OVERRIDE": os.environ.get("NVIDIA_TF32_OVERRIDE"),
    }
    result["versions"]["torch"] = torch.__version__
    result["versions"]["torch_cuda"] = torch.version.cuda
    result["device"] = torch.cuda.get_device_name()
    try:
        import torch._dynamo
        torch._dynamo.config.cache_size_limit = 64
    except Exception:
        pass


def torch_peer(torch, F, peer, man, data, ref, timer, entry):
    shape, ty = man["shape"], man["type"]
    W = {k: v for k, v in data.items() if k not in ("X", "ours_Y")}
    x = data["X"]
    fn = torch_layer_fn(torch, F, shape, W, sdpa=(peer == "eager_sdpa"))
    if peer.startswith("compile"):
        import torch._dynamo
        torch._dynamo.reset()
        mode = "default" if peer == "compile" else "max-autotune-no-cudagraphs"
        entry["mode"] = mode
        fn = torch.compile(fn, mode=mode)
    t0 = time.monotonic()
    with torch.no_grad():
        y = fn(x)
        torch.cuda.synchronize()
        entry["first_call_s"] = round(time.monotonic() - t0, 2)
        entry["rel_err"] = rel_err(torch, y, ref)
        entry["bound"] = bound(ty, shape)
        if not entry["rel_err"] <= entry["bound"]:
            raise ValueError(f"output differs from the float64 reference: relative L2 error "
                             f"{entry['rel_err']:.3g} > {entry['bound']:.3g}")
        entry["per_call_us"] = timer.per_call(lambda: fn(x))
        try:
            entry["graph_us"] = timer.graph(lambda: fn(x))
        except Exception as e:
            entry["graph_us"] = None
            entry["graph_error"] = short_error(e)
            torch.cuda.synchronize()
        # per stage, each on the state the previous stages left; eager_sdpa's "attention" stage
        # is scaled_dot_product_attention alone (with the views of QKV and the context's
        # reshape), to compare with our one-kernel attention stage
        if peer in ("eager", "eager_sdpa"):
            st = {"X": x}
            stages = {}
            for name, sfn in torch_stages(torch, F, shape, W, sdpa=(peer == "eager_sdpa")):
                snapshot = dict(st)
                call = (lambda f=sfn, s=snapshot: f(dict(s)))
                e = {"per_call_us": timer.per_call(call)}
                try:
                    e["graph_us"] = timer.graph(call)
                except Exception as ex:
                    e["graph_us"], e["graph_error"] = None, short_error(ex)
                stages[name] = e
                sfn(st)
            entry["stages"] = stages
            if "attention" in stages:
                entry["attention_alone"] = stages["attention"]
    entry["ok"] = True


def jax_peer(man, data, ref, torch, reps, entry):
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    import jax
    import jax.numpy as jnp
    import numpy as np
    shape, ty = man["shape"], man["type"]
    entry["versions"] = {"jax": jax.__version__}
    dtype = jnp.bfloat16 if peer_type(ty) == "bf16" else jnp.float32
    prec = "default" if peer_type(ty) == "bf16" else "highest"
    entry["precision"] = prec

    def arr(t):
        return jax.device_put(jnp.asarray(t.float().cpu().numpy(), dtype=dtype))
    W = {k: arr(v) for k, v in data.items() if k not in ("X", "ours_Y")}
    x = arr(data["X"])
    with jax.default_matmul_precision(prec):
        f = jax.jit(jax_layer_fn(jnp, jax, shape))
        t0 = time.monotonic()
        y = jax.block_until_ready(f(x, W))
        entry["first_call_s"] = round(time.monotonic() - t0, 2)
        got = torch.from_numpy(np.asarray(y).astype(np.float64)).to(ref.device)
        entry["rel_err"] = rel_err(torch, got, ref)
        entry["bound"] = bound(ty, shape)
        if not entry["rel_err"] <= entry["bound"]:
            raise ValueError(f"output differs from the float64 reference: relative L2 error "
                             f"{entry['rel_err']:.3g} > {entry['bound']:.3g}")
        flush = jax.jit(lambda b: jnp.zeros_like(b), donate_argnums=0)
        buf = jnp.ones((FLUSH_BYTES // 4,), jnp.float32)
        for _ in range(3):
            jax.block_until_ready(f(x, W))
        v = []
        for _ in range(reps):
            buf = flush(buf)
            buf.block_until_ready()
            t = time.perf_counter()
            jax.block_until_ready(f(x, W))
            v.append((time.perf_counter() - t) * 1e6)
        entry["per_call_us"] = statistics.median(v)

        def loop(with_f, n=20):
            nonlocal buf
            jax.block_until_ready(buf)
            o = None
            t = time.perf_counter()
            for _ in range(n):
                buf = flush(buf)
                if with_f:
                    o = f(x, W)
            jax.block_until_ready((buf, o))
            return (time.perf_counter() - t) * 1e6 / n
        both = statistics.median(loop(True) for _ in range(5))
        alone = statistics.median(loop(False) for _ in range(5))
        entry["graph_us"] = None
        entry["pipelined_us"] = max(both - alone, 0.0)
    entry["ok"] = True


def run(args):
    result = {"versions": {"python": sys.version.split()[0]}, "cases": {}, "skipped": []}
    start = time.monotonic()

    def save():
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)

    try:
        import torch
        import torch.nn.functional as F
        torch_setup(torch, result)
    except Exception as e:
        result["torch_error"] = short_error(e)
        save()
        print("torch did not start:", result["torch_error"])
        return 1
    if not os.path.isdir(args.dump):
        result["error"] = f"no data folder {args.dump} (did layer_bench run?)"
        save()
        print(result["error"])
        return 1
    cases = sorted(d for d in os.listdir(args.dump)
                   if os.path.isfile(os.path.join(args.dump, d, "manifest.json")))
    if args.cases:
        want = set(args.cases.split(","))
        cases = [c for c in cases if c in want]
    peers = args.peers.split(",") if args.peers else PEERS
    timer = Timer(torch, args.reps)
    loaded = {}

    def case_data(c):
        if c not in loaded:
            man, data = load_case(torch, os.path.join(args.dump, c), "cuda")
            with torch.no_grad():
                ref = reference(torch, F, man, data)
            r = result["cases"].setdefault(c, {"shape": man["shape"], "type": man["type"], "peers": {}})
            r["peer_type"] = peer_type(man["type"])  # what the peers ran it as
            r["ours_rel_err"] = rel_err(torch, data["ours_Y"], ref)
            r["bound"] = bound(man["type"], man["shape"])
            r["ours_ok"] = r["ours_rel_err"] <= r["bound"]
            loaded.clear()  # one case's tensors on the GPU at a time
            loaded[c] = (man, data, ref)
        return loaded[c]

    # peer by peer over all cases: the cheap peers cover every case before the compilers start
    for peer in peers:
        for c in cases:
            if time.monotonic() - start > args.budget_s:
                result["skipped"].append(f"{c}/{peer}: the {args.budget_s:.0f} s budget was spent")
                continue
            entry = {"ok": False}
            t0 = time.monotonic()
            try:
                man, data, ref = case_data(c)
                if peer == "jax":
                    jax_peer(man, data, ref, torch, args.reps, entry)
                else:
                    torch_peer(torch, F, peer, man, data, ref, timer, entry)
            except Exception as e:
                entry["ok"] = False
                entry["error"] = short_error(e)
                entry["traceback"] = traceback.format_exc()[-2000:]
                try:
                    torch.cuda.synchronize()
                except Exception:
                    pass
            entry["wall_s"] = round(time.monotonic() - t0, 2)
            result["cases"].setdefault(c, {"peers": {}})["peers"][peer] = entry
            print(f"{c:22s} {peer:12s} " + (f"per call {entry.get('per_call_us', float('nan')):10.1f} us, "
                  f"graph {entry.get('graph_us') or float('nan'):10.1f} us, err {entry.get('rel_err', float('nan')):.2e}"
                  if entry["ok"] else "error: " + entry.get("error", "")[:200]), flush=True)
            save()
    save()
    return 0


def self_test():
    """No GPU needed: the PyTorch op sequence in float64 against NumPy loops on a small layer."""
    import numpy as np
    rng = np.random.default_rng(1)
    shape = {"batch": 2, "seq": 5, "hidden": 8, "heads": 2, "ffn": 12}
    B, S, N, H, Fd = 2, 5, 8, 2, 12
    D, T = N // H, B * S
    W = {"X": rng.uniform(-1, 1, (T, N)), "Wqkv": rng.uniform(-.5, .5, (N, 3 * N)),
         "bqkv": rng.uniform(-.1, .1, 3 * N), "Wo": rng.uniform(-.5, .5, (N, N)), "bo": rng.uniform(-.1, .1, N),
         "gamma1": rng.uniform(.5, 1.5, N), "beta1": rng.uniform(-.5, .5, N), "W1": rng.uniform(-.5, .5, (N, Fd)),
         "b1": rng.uniform(-.1, .1, Fd), "W2": rng.uniform(-.3, .3, (Fd, N)), "b2": rng.uniform(-.1, .1, N),
         "gamma2": rng.uniform(.5, 1.5, N), "beta2": rng.uniform(-.5, .5, N),
         "mask": np.array([[1.0] * S, [1.0] * (S - 2) + [0.0] * 2])}
    # NumPy, loop by loop over heads
    qkv = W["X"] @ W["Wqkv"] + W["bqkv"]
    ctx = np.zeros((T, N))
    for b in range(B):
        for h in range(H):
            q = qkv[b * S:(b + 1) * S, h * D:(h + 1) * D]
            k = qkv[b * S:(b + 1) * S, N + h * D:N + (h + 1) * D]
            v = qkv[b * S:(b + 1) * S, 2 * N + h * D:2 * N + (h + 1) * D]
            s = q @ k.T / math.sqrt(D) + (1 - W["mask"][b])[None, :] * -10000.0
            p = np.exp(s - s.max(axis=1, keepdims=True))
            p /= p.sum(axis=1, keepdims=True)
            ctx[b * S:(b + 1) * S, h * D:(h + 1) * D] = p @ v

    def ln(x, g, be):
        m = x.mean(axis=1, keepdims=True)
        return (x - m) / np.sqrt(((x - m) ** 2).mean(axis=1, keepdims=True) + 1e-12) * g + be
    h1 = ln(ctx @ W["Wo"] + W["bo"] + W["X"], W["gamma1"], W["beta1"])
    u = h1 @ W["W1"] + W["b1"]
    erf = np.vectorize(math.erf)
    f1 = 0.5 * u * (1 + erf(u / math.sqrt(2)))
    want = ln(f1 @ W["W2"] + W["b2"] + h1, W["gamma2"], W["beta2"])
    print("numpy reference computed; shape", want.shape)
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        print("torch is not installed: the PyTorch op sequence was not checked (syntax only)")
        return 0
    Wt = {k: torch.tensor(v, dtype=torch.float64) for k, v in W.items()}
    for sdpa in (False, True):
        got = torch_layer_fn(torch, F, shape, Wt, sdpa)(Wt["X"]).numpy()
        err = np.abs(got - want).max()
        print(f"torch op sequence (sdpa={sdpa}) vs numpy: max abs error {err:.2e}")
        if not err < 1e-9:
            return 1
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dump", help="the folder layer_bench --dump wrote")
    p.add_argument("--cases", default="", help="case folders to run (default: all)")
    p.add_argument("--peers", default="", help=",".join(PEERS))
    p.add_argument("--budget-s", type=float, default=300.0)
    p.add_argument("--reps", type=int, default=30)
    p.add_argument("--out", default="peers_layer.json")
    p.add_argument("--self-test", action="store_true")
    args = p.parse_args(argv)
    if args.self_test:
        return self_test()
    if not args.dump:
        p.error("--dump is required (or --self-test)")
    for peer in (args.peers.split(",") if args.peers else []):
        if peer not in PEERS:
            p.error(f"unknown peer '{peer}' ({', '.join(PEERS)})")
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
