#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The framework peers of bench/ (issues #5, #18): PyTorch eager, torch.compile and JAX/XLA for
every case of bench/cases.json, each in the case's type: float32 with TF32 off (no "type"), bf16
tensors ("type": "bf16": inputs and outputs bfloat16, products accumulated in fp32, no
reduced-precision reduction), or float32 with TF32 on ("type": "tf32": allow_tf32 for matmul and
cuDNN, matmul precision 'high'; JAX under jax.default_matmul_precision('tensorfloat32')). A tf32x3
case ("type": "tf32x3": fp32 storage and accuracy, ours three TF32 tensor-core products per
product) is in the fp32 accuracy class: its peers are exactly the float32 case's (TF32 off, JAX
'highest', the fp32 error limit; cases.peer_type). What each entry ran with is in its "precision"
(with "peer_type" where it differs from "type"); a tf32 entry whose error is fp32's says
"precision_used".

  python3 bench/peers/frameworks.py --out frameworks.json [--cases a,b] [--suite any_shape]
                                    [--peers eager,jax,compile]
                                    [--skip-compile] [--budget-s 230] [--max-reps 100] [--dry-run]
                                    [--check-types]

--check-types (no GPU: CPU torch and/or JAX, whichever is installed) traces every selected
expression on abstract inputs of the case's shapes and dtypes (torch: the meta device; JAX:
jax.eval_shape under the case's precision) and checks that every floating-point output has the
case's storage type (bf16 cases: bfloat16; others, tf32x3 included: float32).

Each case names its inputs (shape, dtype, init) and, per peer, one expression over them
(bench/cases.json "peers": "torch" serves eager and torch.compile, "jax" serves jax.jit).

Method (the same as bench/peers/vendor.cu and the lead's C++ bench):
  per call : flush the L2 by writing 256 MB, synchronize, record a CUDA event, call, record a
             CUDA event: includes the framework's host-side dispatch (what a caller waits for).
  graph    : the call captured once into a CUDA graph (torch.cuda.graph), each repetition
             flushes, records, replays, records, with no synchronization: kernel time only.
  JAX      : per call by the host clock around f(*args) and block_until_ready, after a
             synchronized flush (JAX exposes no stream for CUDA events); instead of a graph,
             'pipelined': a host-clock loop of (flush, f) dispatches minus a loop of flushes
             alone, per iteration: dispatch overlapped with the device, L2 cold.
  median over the repetitions (adapted to the call's duration, 10 to --max-reps).
Each peer's output is checked once against a float64 evaluation of the torch expression on the
same inputs (||out - ref|| / ||ref||; float32 lands near 1e-7, TF32 near 1e-4 to 1e-3, bf16
outputs near 1e-3): the limits are 1e-4 (f32 and tf32x3), 5e-3 (tf32) and 1.5e-2 (bf16).

The phases run cheapest first (eager, then JAX, then torch.compile) under one time budget; what
the budget cuts off is recorded as skipped. A failing case or peer records its error and the run
goes on; the JSON file is rewritten after every measurement.
"""
import argparse
import json
import math
import os
import statistics
import sys
import time
import traceback
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cases as cases_mod  # noqa: E402

FLUSH_BYTES = 256 << 20
PEERS = ("eager", "jax", "compile")  # the order the phases run in
# The largest relative error against float64 a peer may show in each type (bench/peers/vendor.cu
# uses 1e-5 for f32: its samples are single entries, not whole outputs). Keyed by the peers' type
# (cases.peer_type): a tf32x3 case is held to f32's.
ERROR_LIMIT = {"f32": 1e-4, "tf32": 5e-3, "bf16": 1.5e-2}
STORAGE = {"f32": "float32", "tf32": "float32", "bf16": "bfloat16"}


def judge(entry, ty):
    """Sets ok / error / precision_used of an entry from its rel_err and the case's type (tf32x3:
    f32's limit, its peers being fp32)."""
    err = entry["rel_err"]
    limit = ERROR_LIMIT[cases_mod.peer_type(ty)]
    entry["ok"] = err < limit
    if not entry["ok"]:
        who = ty if cases_mod.peer_type(ty) == ty else f"{ty} (fp32 peers)"
        entry["error"] = f"relative error {err:.2e} against float64 (the {who} limit is {limit:.0e})"
    if ty == "tf32":
        entry["precision_used"] = "fp32 (the error is fp32's: TF32 was not used)" if err < 1e-5 else "tf32"


class torch_precision:
    """The torch settings of a case's type, for the duration of a peer's compile and timing;
    __enter__ returns what is in effect (recorded in the entry). A tf32x3 case gets the float32
    settings (the run's: TF32 off)."""

    def __init__(self, torch, ty):
        self.torch, self.ty = torch, ty

    def __enter__(self):
        t = self.torch
        self.saved = (t.backends.cuda.matmul.allow_tf32, t.backends.cudnn.allow_tf32, t.get_float32_matmul_precision())
        if cases_mod.peer_type(self.ty) == "tf32":
            t.backends.cuda.matmul.allow_tf32 = True
            t.backends.cudnn.allow_tf32 = True
            t.set_float32_matmul_precision("high")
        m = t.backends.cuda.matmul
        used = {"type": self.ty, "torch.backends.cuda.matmul.allow_tf32": m.allow_tf32,
                "torch.backends.cudnn.allow_tf32": t.backends.cudnn.allow_tf32,
                "torch.get_float32_matmul_precision": t.get_float32_matmul_precision(),
                "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction":
                    getattr(m, "allow_bf16_reduced_precision_reduction", None)}
        if cases_mod.peer_type(self.ty) != self.ty:
            used["peer_type"] = cases_mod.peer_type(self.ty)
        return used

    def __exit__(self, *exc):
        t = self.torch
        t.backends.cuda.matmul.allow_tf32, t.backends.cudnn.allow_tf32 = self.saved[:2]
        t.set_float32_matmul_precision(self.saved[2])
        return False


def jax_precision_name(ty):
    """jax.default_matmul_precision of a case's type: 'tensorfloat32' for tf32, 'highest' for
    float32 and tf32x3 (the run's default), 'default' for bf16 inputs (bf16 products, fp32
    accumulation)."""
    return {"tf32": "tensorfloat32", "bf16": "default"}.get(cases_mod.peer_type(ty), "highest")


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="frameworks.json", help="JSON file to write")
    ap.add_argument("--cases-json", default=cases_mod.CASES_JSON)
    ap.add_argument("--cases", default="", help="comma-separated case names (default: all)")
    ap.add_argument("--suite", default="", help="comma-separated suites (e.g. any_shape; default: all)")
    ap.add_argument("--peers", default=",".join(PEERS), help="comma-separated subset of eager,jax,compile")
    ap.add_argument("--skip-compile", action="store_true", help="leave torch.compile out")
    ap.add_argument("--budget-s", type=float, default=230.0, help="wall-clock budget for the whole run")
    ap.add_argument("--max-reps", type=int, default=100)
    ap.add_argument("--min-reps", type=int, default=10)
    ap.add_argument("--target-s", type=float, default=0.15, help="timed seconds per measurement, roughly")
    ap.add_argument("--dry-run", action="store_true", help="build the plan and parse the expressions; no GPU")
    ap.add_argument("--check-types", action="store_true",
                    help="trace the expressions on abstract inputs (CPU torch / JAX) and check the output dtypes")
    a = ap.parse_args(argv)
    a.peer_list = [p for p in a.peers.split(",") if p]
    bad = [p for p in a.peer_list if p not in PEERS]
    if bad:
        ap.error(f"unknown peers {bad}; choose from {PEERS}")
    if a.skip_compile and "compile" in a.peer_list:
        a.peer_list.remove("compile")
    a.case_list = cases_mod.split(a.cases)
    a.suite_list = cases_mod.split(a.suite)
    return a


def host_array(t):
    """A CPU torch tensor as a numpy array of the same dtype (bfloat16: ml_dtypes', which JAX
    takes; numpy has no bfloat16 of its own and torch's .numpy() refuses it)."""
    import torch
    if t.dtype == torch.bfloat16:
        import ml_dtypes
        return t.contiguous().float().numpy().astype(ml_dtypes.bfloat16)  # exact: the values are bf16
    return t.contiguous().numpy()


def make_fn(expr, arg_names, namespace):
    """The peer's expression as a function of the case's inputs, in their listed order."""
    src = f"lambda {', '.join(arg_names)}: {expr}"
    return eval(compile(src, "<bench/cases.json>", "eval"), dict(namespace))


def short_error(e):
    s = f"{type(e).__name__}: {e}"
    return s if len(s) <= 600 else s[:600] + " ..."


def median_stats(v):
    if not v:
        return {"median_us": None, "min_us": None, "reps": 0}
    return {"median_us": statistics.median(v), "min_us": min(v), "reps": len(v)}


class Run:
    def __init__(self, args):
        self.args = args
        self.t0 = time.monotonic()
        self.deadline = self.t0 + args.budget_s
        self.doc = cases_mod.load(args.cases_json)
        self.cases = cases_mod.select(self.doc, args.case_list, args.suite_list)
        self.result = {"tool": "bench/peers/frameworks.py",
                       "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                       "method": ("per_call: 256 MB L2 flush, synchronize, event, call, event (host dispatch "
                                  "included); graph: torch.cuda.graph replay after the flush, no "
                                  "synchronization (kernel time); JAX: host clock per call after a "
                                  "synchronized flush, and 'pipelined' = loop of (flush, f) minus loop of "
                                  "flushes, per iteration; medians"),
                       "settings": {}, "versions": {}, "cases": {c["name"]: {} for c in self.cases}}
        self.cpu_inputs = {}
        self.refs = {}
        self.torch_ns = None

    # ------------------------------------------------------------------ bookkeeping
    def left(self):
        return self.deadline - time.monotonic()

    def save(self):
        self.result["elapsed_s"] = round(time.monotonic() - self.t0, 1)
        tmp = self.args.out + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.result, f, indent=1, default=str)
        os.replace(tmp, self.args.out)

    def record(self, case, peer, entry):
        self.result["cases"][case["name"]][peer] = entry
        self.save()
        pc, gr = entry.get("per_call_us"), entry.get("graph_us", entry.get("pipelined_us"))
        fmt = lambda x: "     -" if x is None else f"{x:8.1f}"
        status = "ok" if entry.get("ok") else "FAIL " + str(entry.get("error", ""))[:160]
        print(f"[{time.monotonic() - self.t0:6.1f}s] {peer:8s} {case['name']:22s} per-call {fmt(pc)} us  "
              f"graph {fmt(gr)} us  err {entry.get('rel_err', float('nan')):.1e}  {status}", flush=True)

    def reps_for(self, est_us):
        r = int(self.args.target_s * 1e6 / (est_us + 200.0))
        return max(self.args.min_reps, min(self.args.max_reps, r))

    # ------------------------------------------------------------------ inputs and reference
    def cpu_input_set(self, case):
        import torch
        name = case["name"]
        if name in self.cpu_inputs:
            return self.cpu_inputs[name]
        g = torch.Generator().manual_seed(zlib.crc32(name.encode()))  # stable across runs
        out = {}
        for k, spec in case["inputs"].items():
            shape = tuple(spec["shape"])
            if spec.get("init") == "arange":
                t = torch.arange(math.prod(shape), dtype=getattr(torch, spec["dtype"])).reshape(shape)
            elif spec["dtype"].startswith("int"):
                t = torch.randint(spec.get("low", 0), spec.get("high", 16), shape, generator=g,
                                  dtype=getattr(torch, spec["dtype"]))
            else:  # random, non-zero: +-[0.05, 1)
                mag = torch.rand(shape, generator=g) * 0.95 + 0.05
                sign = torch.randint(0, 2, shape, generator=g).float() * 2 - 1
                t = (mag * sign).to(getattr(torch, spec["dtype"]))
            out[k] = t
        self.cpu_inputs[name] = out
        return out

    def gpu_inputs(self, case, dtype64=False):
        import torch
        res = []
        for k, t in self.cpu_input_set(case).items():
            spec = case["inputs"][k]
            d = t.cuda()
            if dtype64 and d.is_floating_point():
                d = d.double()
            if spec.get("memory_format") == "channels_last":
                d = d.contiguous(memory_format=torch.channels_last)
            res.append(d)
        return res

    def reference(self, case, torch_ns):
        """float64 evaluation of the torch expression, flattened, on the CPU (kept for every peer)."""
        import torch
        name = case["name"]
        if name not in self.refs:
            fn = make_fn(case["peers"]["torch"], list(case["inputs"]), torch_ns)
            with torch.no_grad():
                out = fn(*self.gpu_inputs(case, dtype64=True))
            outs = out if isinstance(out, (tuple, list)) else (out,)
            self.refs[name] = [o.detach().double().flatten().cpu() for o in outs]
            torch.cuda.synchronize()
        return self.refs[name]

    def rel_err_torch(self, case, out, torch_ns):
        import torch
        ref = self.reference(case, torch_ns)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        num = den = 0.0
        for o, r in zip(outs, ref):
            o = o.detach().double().flatten().cpu()
            if o.numel() != r.numel():
                raise ValueError(f"output has {o.numel()} elements, reference {r.numel()}")
            if not torch.isfinite(o).all():
                return float("inf")
            num += float(((o - r) ** 2).sum())
            den += float((r ** 2).sum())
        return math.sqrt(num / max(den, 1e-300))

    # ------------------------------------------------------------------ torch timing
    def torch_setup(self):
        import torch
        s = self.result["settings"]
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.set_float32_matmul_precision("highest")
        # bf16 cases: split-K partial sums in fp32, as ours and the vendor peers keep them
        torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
        s["torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction"] = False
        torch.backends.cudnn.benchmark = True  # cuDNN picks its fastest (fp32) algorithm, as a user would
        s["torch.backends.cuda.matmul.allow_tf32"] = torch.backends.cuda.matmul.allow_tf32
        s["torch.backends.cudnn.allow_tf32"] = torch.backends.cudnn.allow_tf32
        s["torch.get_float32_matmul_precision"] = torch.get_float32_matmul_precision()
        s["torch.backends.cudnn.benchmark"] = True
        s["tf32 cases"] = ("allow_tf32 (matmul and cuDNN) on and float32 matmul precision 'high' for the "
                           "case only: each entry's 'precision'")
        s["tf32x3 cases"] = ("the float32 settings above (TF32 off), the fp32 error limit: the peers of a "
                             "tf32x3 case are its float32 case's (only ours uses three TF32 products)")
        s["NVIDIA_TF32_OVERRIDE"] = os.environ.get("NVIDIA_TF32_OVERRIDE")
        v = self.result["versions"]
        v["torch"] = torch.__version__
        v["torch_cuda"] = torch.version.cuda
        v["cudnn"] = torch.backends.cudnn.version()
        self.result["device"] = torch.cuda.get_device_name()
        try:
            import torch._dynamo
            torch._dynamo.config.recompile_limit = 64
            torch._dynamo.config.cache_size_limit = 64
        except Exception:
            pass
        self.flush_buf = torch.empty(FLUSH_BYTES // 4, dtype=torch.float32, device="cuda")
        self.torch_ns = {"torch": torch, "F": torch.nn.functional, "math": math}
        # What one call of a one-element op costs by this method: the per-call floor.
        try:
            x = torch.ones(1, device="cuda")
            pc, gr, _ = self.torch_time(lambda t: t + 1, (x,))
            self.result.setdefault("calibration", {})["torch_eager_one_element"] = {
                "per_call_us": pc["median_us"], "graph_us": gr["median_us"] if gr else None}
        except Exception as e:
            self.result.setdefault("calibration", {})["torch_eager_one_element"] = {"error": short_error(e)}

    def torch_time(self, fn, args):
        """(per-call stats, graph stats or error) for fn(*args)."""
        import torch
        cur = torch.cuda.current_stream()
        # warm-up and estimate
        for _ in range(3):
            fn(*args)
        torch.cuda.synchronize()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(5):
            fn(*args)
        e1.record()
        torch.cuda.synchronize()
        reps = self.reps_for(e0.elapsed_time(e1) * 1e3 / 5)
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        for r in range(reps):
            self.flush_buf.zero_()
            torch.cuda.synchronize()
            starts[r].record(cur)
            fn(*args)
            ends[r].record(cur)
        torch.cuda.synchronize()
        per_call = median_stats([s.elapsed_time(e) * 1e3 for s, e in zip(starts, ends)])

        graph, gerr = None, None
        try:
            side = torch.cuda.Stream()
            side.wait_stream(cur)
            with torch.cuda.stream(side):
                for _ in range(3):
                    fn(*args)
            cur.wait_stream(side)
            torch.cuda.synchronize()
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                fn(*args)
            for _ in range(3):
                g.replay()
            torch.cuda.synchronize()
            for r in range(reps):
                self.flush_buf.zero_()
                starts[r].record(cur)
                g.replay()
                ends[r].record(cur)
            torch.cuda.synchronize()
            graph = median_stats([s.elapsed_time(e) * 1e3 for s, e in zip(starts, ends)])
            del g
        except Exception as e:  # capture can fail (e.g. host synchronization inside the call)
            gerr = short_error(e)
            try:
                torch.cuda.synchronize()
            except Exception:
                pass
        return per_call, graph, gerr

    def torch_peer(self, case, peer):
        import torch
        entry = {"ok": False}
        t_start = time.monotonic()
        ty = cases_mod.type_of(case)
        try:
            with torch_precision(torch, ty) as prec:
                entry["precision"] = prec
                self.torch_peer_body(case, peer, entry)
            judge(entry, ty)
        except Exception as e:
            entry["ok"] = False
            entry["error"] = short_error(e)
            entry["traceback"] = traceback.format_exc()[-2000:]
        finally:
            entry["wall_s"] = round(time.monotonic() - t_start, 2)
            try:
                torch.cuda.synchronize()
                torch.cuda.empty_cache()
            except Exception:
                pass
        return entry

    def torch_peer_body(self, case, peer, entry):
        """Compiles (torch.compile), checks and times one peer; fills entry, raises on failure."""
        import torch
        base = make_fn(case["peers"]["torch"], list(case["inputs"]), self.torch_ns)
        args = self.gpu_inputs(case)
        if peer == "compile":
            # A fresh Dynamo per case: the compiled lambdas share one wrapper frame, and its
            # recompile limit (8) would otherwise send the later cases silently to eager.
            import torch._dynamo
            torch._dynamo.reset()
            counters = None
            try:
                from torch._dynamo.utils import counters
                g0 = counters["stats"]["unique_graphs"]
            except Exception:
                counters = None
            fn = torch.compile(base, dynamic=False)
            tc = time.monotonic()
            out = fn(*args)  # no torch.no_grad(): grad mode is a guard, the timed calls run without it
            torch.cuda.synchronize()
            entry["compile_s"] = round(time.monotonic() - tc, 2)
            if counters is not None:
                entry["dynamo_graphs"] = counters["stats"]["unique_graphs"] - g0
                if entry["dynamo_graphs"] < 1:  # a warning only: the counter is Dynamo-internal
                    entry["warning"] = "Dynamo counted no compiled graph: the call may have run eager"
        else:
            fn = base
        out = fn(*args)  # the inputs need no grad, so no autograd graph is built
        torch.cuda.synchronize()
        entry["rel_err"] = self.rel_err_torch(case, out, self.torch_ns)
        del out
        per_call, graph, gerr = self.torch_time(fn, args)
        entry.update(per_call_us=per_call["median_us"], per_call=per_call,
                     graph_us=graph["median_us"] if graph else None, graph=graph)
        if gerr:
            entry["graph_error"] = gerr

    # ------------------------------------------------------------------ JAX
    def jax_setup(self):
        os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # share the GPU with torch
        import jax
        import jax.numpy as jnp
        jax.config.update("jax_default_matmul_precision", "highest")
        self.result["settings"]["jax_default_matmul_precision"] = "highest"
        self.result["settings"]["jax bf16 / tf32 cases"] = ("jax.default_matmul_precision('default') / "
                                                            "('tensorfloat32') for the case: each entry's 'precision'")
        self.result["settings"]["XLA_PYTHON_CLIENT_PREALLOCATE"] = os.environ.get("XLA_PYTHON_CLIENT_PREALLOCATE")
        self.result["versions"]["jax"] = jax.__version__
        self.result["versions"]["jax_devices"] = [str(d) for d in jax.devices()]
        self.jax_ns = {"jax": jax, "jnp": jnp, "lax": jax.lax, "math": math}
        self.jax_flush = jax.jit(lambda b: jnp.zeros_like(b), donate_argnums=0)
        self.jax_buf = jnp.ones((FLUSH_BYTES // 4,), jnp.float32)
        # The per-call floor of this method: a one-element jitted op, host clock, after a flush.
        try:
            f1 = jax.jit(lambda t: t + 1)
            x = jnp.ones((1,), jnp.float32)
            for _ in range(5):
                jax.block_until_ready(f1(x))
            v = []
            for _ in range(50):
                self.jax_buf = self.jax_flush(self.jax_buf)
                self.jax_buf.block_until_ready()
                t = time.perf_counter()
                jax.block_until_ready(f1(x))
                v.append((time.perf_counter() - t) * 1e6)
            self.result.setdefault("calibration", {})["jax_one_element"] = {"per_call_us": statistics.median(v)}
        except Exception as e:
            self.result.setdefault("calibration", {})["jax_one_element"] = {"error": short_error(e)}

    def jax_peer(self, case):
        import jax
        entry = {"ok": False}
        t_start = time.monotonic()
        ty = cases_mod.type_of(case)
        try:
            prec = jax_precision_name(ty)
            entry["precision"] = {"type": ty, "jax.default_matmul_precision": prec}
            if cases_mod.peer_type(ty) != ty:
                entry["precision"]["peer_type"] = cases_mod.peer_type(ty)
            with jax.default_matmul_precision(prec):  # traced, compiled and called under it
                self.jax_peer_body(case, entry)
            judge(entry, ty)
        except Exception as e:
            entry["ok"] = False
            entry["error"] = short_error(e)
            entry["traceback"] = traceback.format_exc()[-2000:]
        finally:
            entry["wall_s"] = round(time.monotonic() - t_start, 2)
        return entry

    def jax_peer_body(self, case, entry):
        """Compiles, checks and times the JAX peer of one case; fills entry, raises on failure."""
        import jax
        import numpy as np
        expr = case["peers"].get("jax")
        if not expr:
            raise NotImplementedError("no JAX expression for this case")
        prep = case["peers"].get("jax_prep", {})
        args = []
        for k, t in self.cpu_input_set(case).items():
            a = host_array(t)
            if k in prep:
                a = np.ascontiguousarray(np.transpose(a, prep[k]))
            args.append(jax.device_put(a))
        f = jax.jit(make_fn(expr, list(case["inputs"]), self.jax_ns))
        tc = time.monotonic()
        out = jax.block_until_ready(f(*args))
        entry["compile_s"] = round(time.monotonic() - tc, 2)
        # check
        import torch
        outs = out if isinstance(out, (tuple, list)) else (out,)
        if self.torch_ns is None:
            raise RuntimeError("no float64 reference: torch did not start: "
                               + str(self.result.get("torch_error")))
        ref = self.reference(case, self.torch_ns)
        num = den = 0.0
        for o, r in zip(outs, ref):
            o = np.asarray(o).astype(np.float64)  # bf16 (ml_dtypes) converts exactly
            if "jax_out_axes" in case["peers"]:
                o = np.transpose(o, case["peers"]["jax_out_axes"])
            o = torch.from_numpy(np.ascontiguousarray(o)).double().flatten()
            if o.numel() != r.numel():
                raise ValueError(f"output has {o.numel()} elements, reference {r.numel()}")
            num += float(((o - r) ** 2).sum())
            den += float((r ** 2).sum())
        entry["rel_err"] = math.sqrt(num / max(den, 1e-300)) if math.isfinite(num) else float("inf")
        del out, outs
        # warm-up and estimate
        for _ in range(3):
            jax.block_until_ready(f(*args))
        t = time.perf_counter()
        for _ in range(5):
            jax.block_until_ready(f(*args))
        reps = self.reps_for((time.perf_counter() - t) / 5 * 1e6)
        # per call: synchronized flush, then host clock around call + block
        v = []
        for _ in range(reps):
            self.jax_buf = self.jax_flush(self.jax_buf)
            self.jax_buf.block_until_ready()
            t = time.perf_counter()
            jax.block_until_ready(f(*args))
            v.append((time.perf_counter() - t) * 1e6)
        per_call = median_stats(v)
        # pipelined: loop of (flush, f) minus loop of flushes
        n = max(10, min(50, reps))

        def loop(with_f):
            jax.block_until_ready(self.jax_buf)
            o = None
            t = time.perf_counter()
            for _ in range(n):
                self.jax_buf = self.jax_flush(self.jax_buf)
                if with_f:
                    o = f(*args)
            jax.block_until_ready((self.jax_buf, o))
            return (time.perf_counter() - t) * 1e6 / n

        both, alone = [], []
        for _ in range(5):
            both.append(loop(True))
            alone.append(loop(False))
        pip = statistics.median(both) - statistics.median(alone)
        entry.update(per_call_us=per_call["median_us"], per_call=per_call, graph_us=None,
                     pipelined_us=max(pip, 0.0),
                     pipelined={"loop_with_f_us": statistics.median(both),
                                "loop_flush_only_us": statistics.median(alone), "n": n, "trials": 5})

    # ------------------------------------------------------------------ driver
    def run(self):
        torch_ok = True
        try:
            self.torch_setup()
        except Exception as e:
            torch_ok = False
            self.result["torch_error"] = short_error(e)
        self.save()
        for peer in self.args.peer_list:
            if peer in ("eager", "compile") and not torch_ok:
                for c in self.cases:
                    self.record(c, peer, {"ok": False, "error": "torch unavailable: " + self.result["torch_error"]})
                continue
            if peer == "jax":
                try:
                    import torch
                    torch.cuda.empty_cache()
                    self.jax_setup()
                except Exception as e:
                    for c in self.cases:
                        self.record(c, peer, {"ok": False, "error": "JAX unavailable: " + short_error(e)})
                    continue
            for c in self.cases:
                if self.left() <= 0:
                    self.record(c, peer, {"ok": False, "error": "skipped: time budget spent"})
                    continue
                if peer == "jax":
                    entry = self.jax_peer(c)
                else:
                    entry = self.torch_peer(c, peer)
                self.record(c, peer, entry)
        self.result["elapsed_s"] = round(time.monotonic() - self.t0, 1)
        self.save()
        return 0


def dry_run(args):
    doc = cases_mod.load(args.cases_json)
    cases = cases_mod.select(doc, args.case_list, args.suite_list)
    stub = {"torch": None, "F": None, "jax": None, "jnp": None, "lax": None, "math": math}
    problems = 0
    for c in cases:
        for key in ("torch", "jax"):
            expr = c["peers"].get(key)
            if expr is None:
                continue
            try:
                make_fn(expr, list(c["inputs"]), stub)  # parses; names resolve only at call time
            except SyntaxError as e:
                problems += 1
                print(f"{c['name']}: {key} expression does not parse: {e}")
        shapes = ", ".join(f"{k}{tuple(v['shape'])}" for k, v in c["inputs"].items())
        ty = cases_mod.type_of(c)
        print(f"{c['name']:28s} {ty:6s} peers {','.join(args.peer_list):20s} inputs {shapes} "
              f"(JAX precision '{jax_precision_name(ty)}')")
    print(f"{len(cases)} cases, peers {args.peer_list}, budget {args.budget_s} s, out {args.out}")
    return 1 if problems else 0


def check_types(args):
    """--check-types: every selected expression traced on abstract inputs of the case's shapes and
    dtypes, under the case's precision settings, by whichever of torch and JAX is installed (no
    GPU, nothing computed); every floating-point output must have the case's storage type."""
    doc = cases_mod.load(args.cases_json)
    cases = cases_mod.select(doc, args.case_list, args.suite_list)
    fws = {}
    try:
        import torch
        fws["torch"] = torch
    except ImportError:
        print("torch not installed: its expressions are not checked")
    try:
        import jax
        fws["jax"] = jax
    except ImportError:
        print("jax not installed: its expressions are not checked")
    if not fws:
        print("neither torch nor jax is installed: nothing checked")
        return 1
    problems = 0
    for c in cases:
        ty = cases_mod.type_of(c)
        want = STORAGE[cases_mod.peer_type(ty)]
        seen = []
        for fw, mod in fws.items():
            try:
                if fw == "torch":
                    outs = torch_meta_outputs(mod, c, ty)
                else:
                    outs = jax_abstract_outputs(mod, c, ty)
                got = [str(o.dtype).replace("torch.", "") for o in outs]
                floats = [g for g in got if g.startswith(("float", "bfloat"))]
                bad = [g for g in floats if g != want]
                seen.append(f"{fw} {','.join(got)}")
                if bad or not floats:
                    problems += 1
                    print(f"{c['name']}: {fw} outputs {got}, expected {want}")
            except Exception as e:
                problems += 1
                print(f"{c['name']}: {fw}: {short_error(e)}")
        print(f"{c['name']:28s} {ty:6s} {'; '.join(seen)}")
    print(f"{len(cases)} cases, {problems} problems ({', '.join(fws)})")
    return 1 if problems else 0


def torch_meta_outputs(torch, case, ty):
    ins = []
    for spec in case["inputs"].values():
        t = torch.empty(spec["shape"], dtype=getattr(torch, spec["dtype"]), device="meta")
        if spec.get("memory_format") == "channels_last":
            t = t.contiguous(memory_format=torch.channels_last)
        ins.append(t)
    ns = {"torch": torch, "F": torch.nn.functional, "math": math}
    with torch_precision(torch, ty):
        out = make_fn(case["peers"]["torch"], list(case["inputs"]), ns)(*ins)
    return out if isinstance(out, (tuple, list)) else (out,)


def jax_abstract_outputs(jax, case, ty):
    import jax.numpy as jnp
    prep = case["peers"].get("jax_prep", {})
    ins = []
    for k, spec in case["inputs"].items():
        shape = spec["shape"]
        if k in prep:
            shape = [shape[a] for a in prep[k]]
        ins.append(jax.ShapeDtypeStruct(tuple(shape), jnp.dtype(spec["dtype"])))
    ns = {"jax": jax, "jnp": jnp, "lax": jax.lax, "math": math}
    with jax.default_matmul_precision(jax_precision_name(ty)):
        out = jax.eval_shape(make_fn(case["peers"]["jax"], list(case["inputs"]), ns), *ins)
    return out if isinstance(out, (tuple, list)) else (out,)


def main(argv=None):
    args = parse_args(argv)
    if args.dry_run:
        return dry_run(args)
    if args.check_types:
        return check_types(args)
    return Run(args).run()


if __name__ == "__main__":
    sys.exit(main())
