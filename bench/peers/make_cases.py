#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes bench/cases.json: the cases, their inputs, the peers' expressions, and the bytes and flops
of each (the formulas are here). Edit this and re-run it rather than editing cases.json by hand:

  python3 bench/peers/make_cases.py        # rewrites bench/cases.json, prints the floors at the
                                          # reference H200 rates
  python3 bench/peers/make_cases.py --check   # exit 1 if bench/cases.json differs from its output
"""
import json
import math
import os
import sys
F = 4
def nb(*shapes):
    return sum(math.prod(s) for s in shapes) * F
cases = []
def add(**kw): cases.append(kw)

def fin(shape, **extra):
    d = {"shape": list(shape), "dtype": "float32"}; d.update(extra); return d

# ---- products ----
def matmul(name, M, N, K, desc, targets, suite):
    add(name=name, suite=suite, description=desc, op="matmul", sizes=[M, N, K],
        bytes=nb((M, K), (K, N), (M, N)), flops=2*M*N*K, targets=targets,
        inputs={"A": fin((M, K)), "B": fin((K, N))},
        peers={"vendor": {"kind": "gemm", "batch": 1, "m": M, "n": N, "k": K, "trans_b": 0},
               "torch": "A @ B", "jax": "jnp.matmul(A, B, precision='highest')"})

def bmm(name, B1, B2, I, J, K, adj_b, desc, targets, suite):
    bshape = (B1, B2, J, K) if adj_b else (B1, B2, K, J)
    add(name=name, suite=suite, description=desc, op="batch_matmul",
        op_args={"adj_a": False, "adj_b": adj_b}, sizes=[B1, B2, I, J, K],
        bytes=nb((B1, B2, I, K), bshape, (B1, B2, I, J)), flops=2*B1*B2*I*J*K, targets=targets,
        inputs={"A": fin((B1, B2, I, K)), "B": fin(bshape)},
        peers={"vendor": {"kind": "gemm", "batch": B1*B2, "m": I, "n": J, "k": K, "trans_b": int(adj_b)},
               "torch": "A @ B.transpose(-1, -2)" if adj_b else "A @ B",
               "jax": ("jnp.matmul(A, jnp.swapaxes(B, -1, -2), precision='highest')" if adj_b
                       else "jnp.matmul(A, B, precision='highest')")})

matmul("matmul_768x3072", 2048, 3072, 768, "BERT FFN up: (2048x768)*(768x3072)", ["product_large"], "bert")
matmul("matmul_768x768", 2048, 768, 768, "BERT projection: (2048x768)*(768x768)", ["product_large"], "bert")
bmm("bmm_qk", 16, 12, 128, 128, 64, True, "BERT scores Q*K^T: 192 x (128x64)*(64x128)", ["product_large"], "bert")
bmm("bmm_pv", 16, 12, 128, 64, 128, False, "BERT context P*V: 192 x (128x128)*(128x64)", ["product_large"], "bert")

def bag(name, R, C, suite):
    add(name=name, suite=suite, description=f"BiasAddGrad: column sums of {R}x{C}", op="bias_add_grad",
        sizes=[R, C], bytes=nb((R, C), (C,)), flops=R*C, targets=["memory_bound"],
        inputs={"X": fin((R, C))},
        peers={"vendor": None, "torch": "X.sum(0)", "jax": "jnp.sum(X, axis=0)"})
bag("bias_add_grad_768", 2048, 768, "bert")
bag("bias_add_grad_3072", 2048, 3072, "bert")

for nm, opn, sym in (("mul", "multiply", "*"), ("sub", "subtract", "-")):
    add(name=nm, suite="bert", description=f"elementwise 2048x3072 X {sym} Y", op=opn, sizes=[2048, 3072],
        bytes=nb((2048, 3072), (2048, 3072), (2048, 3072)), flops=2048*3072, targets=["memory_bound"],
        inputs={"X": fin((2048, 3072)), "Y": fin((2048, 3072))},
        peers={"vendor": None, "torch": f"X {sym} Y", "jax": f"X {sym} Y"})

add(name="attn_mask_subgraph", suite="bert",
    description="scores[16,12,128,128] + (1 - mask[16,1,1,128]) * -10000", op="attn_mask_add",
    sizes=[16, 12, 128, 128], bytes=nb((16, 12, 128, 128), (16, 12, 128, 128), (16, 128)),
    flops=3*16*12*128*128, targets=["attn_mask", "memory_bound"],
    inputs={"S": fin((16, 12, 128, 128)), "M": fin((16, 1, 1, 128))},
    peers={"vendor": None, "torch": "S + (1.0 - M) * -10000.0", "jax": "S + (1.0 - M) * -10000.0"})

add(name="softmax", suite="bert", description="softmax over the last dim of [16,12,128,128] (rows 24576, cols 128)",
    op="softmax", sizes=[24576, 128], bytes=nb((24576, 128), (24576, 128)), flops=5*24576*128,
    targets=["memory_bound"], inputs={"X": fin((16, 12, 128, 128))},
    peers={"vendor": None, "torch": "torch.softmax(X, -1)", "jax": "jax.nn.softmax(X, axis=-1)"})

add(name="bias_gelu", suite="bert", description="gelu(X + b), exact erf, X 2048x3072, b 3072", op="bias_gelu",
    sizes=[2048, 3072], bytes=nb((2048, 3072), (3072,), (2048, 3072)), flops=10*2048*3072,
    targets=["memory_bound"], inputs={"X": fin((2048, 3072)), "b": fin((3072,))},
    peers={"vendor": None, "torch": "F.gelu(X + b)", "jax": "jax.nn.gelu(X + b, approximate=False)"})

add(name="layernorm", suite="bert", description="LayerNorm over rows of 2048x768 (eps 1e-12, gamma, beta)",
    op="layernorm", sizes=[2048, 768], bytes=nb((2048, 768), (768,), (768,), (2048, 768)), flops=8*2048*768,
    targets=["memory_bound"], inputs={"X": fin((2048, 768)), "g": fin((768,)), "b": fin((768,))},
    peers={"vendor": None, "torch": "F.layer_norm(X, (768,), g, b, 1e-12)",
           "jax": "(X - X.mean(-1, keepdims=True)) * jax.lax.rsqrt(X.var(-1, keepdims=True) + 1e-12) * g + b"})

N, C, H, K, R = 32, 256, 16, 256, 3
P = H - R + 1
add(name="conv3x3_resnet", suite="bert",
    description="NCHW conv N32 C256 16x16 -> K256 14x14, 3x3, VALID", op="mcc_nchw",
    op_args={"stride": [1, 1]}, sizes=[N, K, P, P, C, R, R],
    bytes=nb((N, C, H, H), (K, C, R, R), (N, K, P, P)), flops=2*N*K*P*P*C*R*R, targets=["conv"],
    floor_note="flops of the direct convolution; Winograd (cuDNN's pick here) does fewer and can run under this floor",
    inputs={"I": fin((N, C, H, H)), "W": fin((K, C, R, R))},
    peers={"vendor": {"kind": "conv", "layout": "nchw", "n": N, "c": C, "h": H, "w": H, "k": K, "r": R, "s": R,
                      "stride": 1},
           "torch": "F.conv2d(I, W)",
           "jax": "jax.lax.conv_general_dilated(I, W, (1, 1), 'VALID', dimension_numbers=('NCHW', 'OIHW', 'NCHW'), precision='highest')"})

add(name="mask_sc21", suite="sc21",
    description="[16,1,384,384] = (1 - m1[16,384,1] * m2[16,1,384]) * -10000 (Mul, ExpandDims, Sub, Mul)",
    op="bert_mask", sizes=[16, 1, 384, 384], bytes=nb((16, 384), (16, 384), (16, 384, 384)),
    flops=3*16*384*384, targets=["attn_mask", "memory_bound"],
    inputs={"m1": fin((16, 384, 1)), "m2": fin((16, 1, 384))},
    peers={"vendor": None, "torch": "(1.0 - (m1 * m2).unsqueeze(1)) * -10000.0",
           "jax": "(1.0 - jnp.expand_dims(m1 * m2, 1)) * -10000.0"})
bag("bias_add_grad_s384", 6144, 768, "sc21")
bmm("bmm_qk_s384", 16, 12, 384, 384, 64, True, "BERT-384 scores Q*K^T: 192 x (384x64)*(64x384)", ["product_large"], "sc21")

def dot(name, n, desc, targets, suite):
    add(name=name, suite=suite, description=desc, op="dot", sizes=[n],
        bytes=nb((n,), (n,), ()), flops=2*n, targets=targets,
        inputs={"a": fin((n,)), "b": fin((n,))},
        peers={"vendor": {"kind": "dot", "n": n}, "torch": "torch.dot(a, b)",
               "jax": "jnp.dot(a, b, precision='highest')"})
def matvec(name, m, k, desc, targets, suite):
    add(name=name, suite=suite, description=desc, op="matvec", sizes=[m, k],
        bytes=nb((m, k), (k,), (m,)), flops=2*m*k, targets=targets,
        inputs={"Mx": fin((m, k)), "v": fin((k,))},
        peers={"vendor": {"kind": "gemv", "m": m, "k": k}, "torch": "torch.mv(Mx, v)",
               "jax": "jnp.matmul(Mx, v, precision='highest')"})
dot("dot", 1 << 24, "dot product of two 2^24 vectors", ["dot_matvec"], "toplas")
matvec("matvec", 4096, 4096, "matrix-vector 4096x4096 * 4096", ["dot_matvec"], "toplas")
matmul("matmul_1024", 1024, 1024, 1024, "square 1024^3", ["product_large"], "toplas")
matmul("matmul_16x1000x2048", 16, 1000, 2048, "M=16, N=1000, K=2048", ["product_small"], "toplas")
matmul("matmul_10x500x64", 10, 500, 64, "M=10, N=500, K=64", ["product_small"], "toplas")
def bmatmul(name, Bb, I, J, Kk, desc, targets, suite):
    add(name=name, suite=suite, description=desc, op="bmatmul",
        sizes=[Bb, I, J, Kk], bytes=nb((Bb, I, Kk), (Bb, Kk, J), (Bb, I, J)), flops=2*Bb*I*J*Kk,
        targets=targets, inputs={"A": fin((Bb, I, Kk)), "B": fin((Bb, Kk, J))},
        peers={"vendor": {"kind": "gemm", "batch": Bb, "m": I, "n": J, "k": Kk, "trans_b": 0},
               "torch": "A @ B", "jax": "jnp.matmul(A, B, precision='highest')"})
bmatmul("bmm_16x10x500x64", 16, 10, 500, 64, "16 x (10x64)*(64x500)", ["product_small"], "toplas")
g = 256; gi = g - 2
jac = ("(1.0 / 7.0) * (x[1:-1, 1:-1, 1:-1] + x[:-2, 1:-1, 1:-1] + x[2:, 1:-1, 1:-1] + x[1:-1, :-2, 1:-1]"
       " + x[1:-1, 2:, 1:-1] + x[1:-1, 1:-1, :-2] + x[1:-1, 1:-1, 2:])")
add(name="jacobi3d_256", suite="toplas", description="7-point Jacobi on a 256^3 grid (254^3 interior written)",
    op="jacobi3d", sizes=[gi, gi, gi], bytes=nb((g, g, g), (gi, gi, gi)), flops=8*gi**3, targets=["stencil"],
    inputs={"x": fin((g, g, g))}, peers={"vendor": None, "torch": jac, "jax": jac})
Nn, Hh, Cc, Kc, Rr, Ss = 16, 230, 3, 64, 7, 2
Pp = (Hh - Rr) // Ss + 1
add(name="mcc_resnet50_l1", suite="toplas",
    description="ResNet-50 layer 1: N16, NHWC 230x230x3 -> 112x112x64, 7x7 stride 2, VALID (KRSC filter)",
    op="mcc", op_args={"stride": [2, 2]}, sizes=[Nn, Pp, Pp, Kc, Rr, Rr, Cc],
    bytes=nb((Nn, Hh, Hh, Cc), (Kc, Rr, Rr, Cc), (Nn, Pp, Pp, Kc)), flops=2*Nn*Pp*Pp*Kc*Rr*Rr*Cc,
    targets=["conv"],
    inputs={"I": fin((Nn, Cc, Hh, Hh), memory_format="channels_last"),
            "W": fin((Kc, Cc, Rr, Rr), memory_format="channels_last")},
    peers={"vendor": {"kind": "conv", "layout": "nhwc", "n": Nn, "c": Cc, "h": Hh, "w": Hh, "k": Kc, "r": Rr,
                      "s": Rr, "stride": Ss},
           "torch": "F.conv2d(I, W, stride=2)",
           "jax": "jax.lax.conv_general_dilated(I, W, (2, 2), 'VALID', dimension_numbers=('NHWC', 'HWIO', 'NHWC'), precision='highest')",
           "jax_prep": {"I": [0, 2, 3, 1], "W": [2, 3, 1, 0]}, "jax_out_axes": [0, 3, 1, 2]})
ni = 1 << 15
a0, d0 = math.log2(0.95 / 0.01), math.log2(0.05 / 0.99)
a1, d1 = math.log2(0.9 / 0.1), math.log2(0.1 / 0.9)
a0, d0, a1, d1 = (float(f"{v:.9g}") for v in (a0, d0, a1, d1))
prl_t = (f"(lambda m: (m.values, E_id[m.indices]))(("
         f"torch.where(N0[:, None] == E0[None, :], {a0}, {d0}) + torch.where(N1[:, None] == E1[None, :], {a1}, {d1})).max(1))")
prl_j = (f"(lambda w: (jnp.max(w, 1), E_id[jnp.argmax(w, 1)]))("
         f"jnp.where(N0[:, None] == E0[None, :], jnp.float32({a0}), jnp.float32({d0})) + "
         f"jnp.where(N1[:, None] == E1[None, :], jnp.float32({a1}), jnp.float32({d1})))")
iin = lambda n_: {"shape": [n_], "dtype": "int32", "low": 0, "high": 16}
add(name="prl_2p15", suite="toplas",
    description="probabilistic record linkage, 2^15 new x 2^15 existing records, 2 int32 fields, best match (weight, id); tie -> smaller id",
    op="prl", sizes=[ni, ni], bytes=(4*ni*2 + 4*ni*3 + 8*ni), flops=4*ni*ni, targets=[],
    flops_note="estimate: 2 compares, 1 add, 1 max per (i, j) pair",
    inputs={"N0": iin(ni), "N1": iin(ni), "E0": iin(ni), "E1": iin(ni),
            "E_id": {"shape": [ni], "dtype": "int32", "init": "arange"}},
    peers={"vendor": None, "torch": prl_t, "jax": prl_j,
           "note": "no library has PRL; these are the obvious tensor formulations (E_id = arange, so argmax's first index = smallest id)"})

# ---- issue 19, "any shape": the development cases (extents no tile divides) and TCCG contractions
S = "any_shape"
for M_, N_, K_ in ((997, 1009, 769), (1023, 1025, 1027), (4095, 4097, 33)):
    matmul(f"matmul_{M_}x{N_}x{K_}", M_, N_, K_, f"odd extents: ({M_}x{K_})*({K_}x{N_})", ["odd_product"], S)
bmatmul("bmm_12x333x333x77", 12, 333, 333, 77, "batched 12 x (333x77)*(77x333)", ["odd_product"], S)
matvec("matvec_12289x3001", 12289, 3001, "matrix-vector 12289x3001 * 3001", ["memory_floor"], S)
dot("dot_8388613", (1 << 23) + 5, "dot product of two 2^23+5 vectors", ["memory_floor"], S)
R_, C_ = 3001, 4093
add(name=f"row_sum_{R_}x{C_}", suite=S, description=f"row sums of {R_}x{C_}", op="row_sum", sizes=[R_, C_],
    bytes=nb((R_, C_), (R_,)), flops=R_*C_, targets=["memory_floor"], inputs={"X": fin((R_, C_))},
    peers={"vendor": None, "torch": "X.sum(1)", "jax": "jnp.sum(X, axis=1)"})
add(name=f"col_sum_{R_}x{C_}", suite=S, description=f"column sums of {R_}x{C_} (BiasAddGrad)",
    op="bias_add_grad", sizes=[R_, C_], bytes=nb((R_, C_), (C_,)), flops=R_*C_, targets=["memory_floor"],
    inputs={"X": fin((R_, C_))}, peers={"vendor": None, "torch": "X.sum(0)", "jax": "jnp.sum(X, axis=0)"})

def tccg(spec, extents, origin):
    """A TCCG contraction 'out-a-b' (row-major: the last index is contiguous); the operator's
    dimensions are the letters in alphabetical order (the output's first), so are its sizes."""
    out, ia, ib = spec.split("-")
    letters = sorted(set(out + ia + ib))
    size = dict(zip(letters, extents))
    shape = lambda idx: tuple(size[x] for x in idx)
    eq = f"{ia},{ib}->{out}"
    name = "tccg_" + spec.replace("-", "_")
    add(name=name, suite=S,
        description=f"TCCG {spec} (TCCG's {origin}), " + ", ".join(f"{x}={size[x]}" for x in letters),
        op=name, sizes=list(extents), bytes=nb(shape(ia), shape(ib), shape(out)),
        flops=2*math.prod(extents), targets=["tccg"],
        inputs={"A": fin(shape(ia)), "B": fin(shape(ib))},
        peers={"vendor": None, "torch": f"torch.einsum('{eq}', A, B)",
               "jax": f"jnp.einsum('{eq}', A, B, precision='highest')"})
tccg("abcd-aebf-dfce", (48, 48, 48, 48, 48, 48), "ijkl-imjn-lnkm")
tccg("abcd-eafd-fbec", (48, 48, 48, 48, 48, 48), "ijkl-minl-njmk")
tccg("abc-adec-ebd", (72, 72, 72, 48, 48), "ijk-ilmk-mjl")
tccg("abcdef-dega-gfbc", (24, 16, 16, 24, 16, 16, 24), "abcijk-ijma-mkbc")
tccg("abcdef-dfgb-geac", (24, 16, 16, 24, 16, 16, 24), "abcijk-ikmb-mjac")

# ---- issue 20: BERT's GEMMs with their epilogue as one kernel (mdh::with_epilogue), each next to
# the plain GEMM of its shape (target 'epilogue': <= 1.05x our plain_case); float32 only for now.
EPILOGUE_CASES = [{'name': 'matmul_3072x768',
  'suite': 'bert_epilogue',
  'description': 'BERT FFN down: (2048x3072)*(3072x768), the plain twin of matmul_bias_residual_3072x768',
  'op': 'matmul',
  'sizes': [2048, 768, 3072],
  'bytes': 40894464,
  'flops': 9663676416,
  'targets': ['product_large'],
  'inputs': {'A': {'shape': [2048, 3072], 'dtype': 'float32'},
             'B': {'shape': [3072, 768], 'dtype': 'float32'}},
  'peers': {'vendor': {'kind': 'gemm', 'batch': 1, 'm': 2048, 'n': 768, 'k': 3072, 'trans_b': 0},
            'torch': 'A @ B',
            'jax': "jnp.matmul(A, B, precision='highest')"}},
 {'name': 'matmul_bias_gelu_768x3072',
  'suite': 'bert_epilogue',
  'description': 'BERT FFN up + bias + GELU (exact erf) as one kernel: gelu((2048x768)*(768x3072) + b)',
  'op': 'matmul_bias_gelu',
  'sizes': [2048, 3072, 768],
  'plain_case': 'matmul_768x3072',
  'bytes': 40906752,
  'flops': 9714008064,
  'targets': ['epilogue'],
  'inputs': {'A': {'shape': [2048, 768], 'dtype': 'float32'},
             'B': {'shape': [768, 3072], 'dtype': 'float32'},
             'b': {'shape': [3072], 'dtype': 'float32'}},
  'peers': {'vendor': None,
            'torch': 'F.gelu(A @ B + b)',
            'jax': "jax.nn.gelu(jnp.matmul(A, B, precision='highest') + b, approximate=False)"}},
 {'name': 'matmul_bias_residual_3072x768',
  'suite': 'bert_epilogue',
  'description': 'BERT FFN down + bias + residual as one kernel: (2048x3072)*(3072x768) + b + R',
  'op': 'matmul_bias_residual',
  'sizes': [2048, 768, 3072],
  'plain_case': 'matmul_3072x768',
  'bytes': 47188992,
  'flops': 9666822144,
  'targets': ['epilogue'],
  'inputs': {'A': {'shape': [2048, 3072], 'dtype': 'float32'},
             'B': {'shape': [3072, 768], 'dtype': 'float32'},
             'b': {'shape': [768], 'dtype': 'float32'},
             'R': {'shape': [2048, 768], 'dtype': 'float32'}},
  'peers': {'vendor': None,
            'torch': 'A @ B + b + R',
            'jax': "jnp.matmul(A, B, precision='highest') + b + R"}},
 {'name': 'matmul_bias_768x768',
  'suite': 'bert_epilogue',
  'description': 'BERT projection + bias as one kernel: (2048x768)*(768x768) + b',
  'op': 'matmul_bias',
  'sizes': [2048, 768, 768],
  'plain_case': 'matmul_768x768',
  'bytes': 14945280,
  'flops': 2417491968,
  'targets': ['epilogue'],
  'inputs': {'A': {'shape': [2048, 768], 'dtype': 'float32'},
             'B': {'shape': [768, 768], 'dtype': 'float32'},
             'b': {'shape': [768], 'dtype': 'float32'}},
  'peers': {'vendor': None, 'torch': 'A @ B + b', 'jax': "jnp.matmul(A, B, precision='highest') + b"}},
 {'name': 'matmul_bias_residual_768x768',
  'suite': 'bert_epilogue',
  'description': 'BERT attention output + bias + residual as one kernel: (2048x768)*(768x768) + b + R',
  'op': 'matmul_bias_residual',
  'sizes': [2048, 768, 768],
  'plain_case': 'matmul_768x768',
  'bytes': 21236736,
  'flops': 2419064832,
  'targets': ['epilogue'],
  'inputs': {'A': {'shape': [2048, 768], 'dtype': 'float32'},
             'B': {'shape': [768, 768], 'dtype': 'float32'},
             'b': {'shape': [768], 'dtype': 'float32'},
             'R': {'shape': [2048, 768], 'dtype': 'float32'}},
  'peers': {'vendor': None,
            'torch': 'A @ B + b + R',
            'jax': "jnp.matmul(A, B, precision='highest') + b + R"}}]

# ---- issue 18: bf16, tf32 and tf32x3 variants, derived from the fp32 cases above (not written twice).
# bf16: every case but PRL (integers): inputs and outputs bfloat16 (2 B a element: half the bytes),
# products accumulated in fp32 on every side. tf32: the GEMM-like products (an output matrix: two
# or more independent output dimensions, and a reduction; dot and matvec are memory-bound and
# stay out), fp32 storage with the inputs read at TF32 precision (allow_tf32 / CUBLAS_COMPUTE_32F_FAST_TF32
# / jax.default_matmul_precision('tensorfloat32')). tf32x3: the same products as tf32, fp32 storage
# and near-fp32 accuracy; ours: each product three TF32 tensor-core products of split operands
# (computation::with_precision(tf32x3), the user's explicit choice); it is in the near-fp32 accuracy
# class, so its peers are exactly the float32 case's (no type on the vendor line: the fp32 call;
# TF32 off in PyTorch, JAX precision 'highest'; NVIDIA_TF32_OVERRIDE=0), its peers' outputs are
# held to the fp32 bound and its floor uses the fp32 SGEMM rate. The variants' targets are issue 18's:
VARIANT_TARGETS = {
    "product_large": "lp_product_large", "product_small": "lp_product_small",
    "odd_product": "lp_product_small", "conv": "conv", "tccg": "tccg",
    "memory_bound": "lp_memory", "attn_mask": "lp_memory", "dot_matvec": "lp_memory",
    "stencil": "lp_memory", "memory_floor": "lp_memory"}
PRODUCT_OPS = {"matmul", "batch_matmul", "bmatmul", "mcc", "mcc_nchw"}
ELEMENT_BYTES = {"bf16": 2, "tf32": 4, "tf32x3": 4}
# tf32x3 keeps these targets of its float32 case as well (issue 19's, against the fp32 cuBLAS)
TF32X3_KEEPS = ("odd_product",)


def is_product(c):
    return c["op"] in PRODUCT_OPS or c["op"].startswith("tccg_")


def variant(c, ty):
    """The case c (fp32) in type ty: name and suite `ty`, the bytes of ty's elements, the peers
    asked for ty's precision (the vendor line gets type=ty; frameworks.py sets the torch/JAX
    precision from the case's "type"). tf32x3: the peers are c's, unchanged (fp32, TF32 off), and
    c's floor note holds for it too (the same peers, the same SGEMM-rate floor)."""
    v = json.loads(json.dumps(c))
    v["name"] = f'{c["name"]}_{ty}'
    v["suite"] = ty
    v["type"] = ty
    v["base"] = c["name"]
    v["description"] = f'{c["description"]} [{ty}]'
    v["bytes"] = c["bytes"] // F * ELEMENT_BYTES[ty]
    targets = []
    for t in c["targets"]:
        if VARIANT_TARGETS[t] not in targets:
            targets.append(VARIANT_TARGETS[t])
    # batched products are held to 1.0x (issue 18), whatever their size
    if "lp_product_large" in targets and c["op"] in ("batch_matmul", "bmatmul"):
        targets = ["lp_product_small"]
    if ty == "tf32x3":
        targets += [t for t in c["targets"] if t in TF32X3_KEEPS and t not in targets]
    v["targets"] = targets
    if ty == "tf32x3":  # fp32 storage and accuracy: the float32 case's inputs and peers, unchanged
        return v
    if ty == "bf16":
        for spec in v["inputs"].values():
            spec["dtype"] = "bfloat16"
    if v["peers"].get("vendor"):
        v["peers"]["vendor"]["type"] = ty
    # JAX: precision='highest' would keep tf32 cases in fp32 and means nothing for bf16 inputs;
    # the precision comes from frameworks.py's context (jax.default_matmul_precision).
    v["peers"]["jax"] = v["peers"]["jax"].replace(", precision='highest'", "")
    v.pop("floor_note", None)
    return v


fp32_cases = list(cases)
cases += EPILOGUE_CASES
cases += [variant(c, "bf16") for c in fp32_cases if c["op"] != "prl"]
cases += [variant(c, "tf32") for c in fp32_cases if is_product(c)]
cases += [variant(c, "tf32x3") for c in fp32_cases if is_product(c)]

doc = {
  "about": ("The benchmark cases of bench/ (issues #5 and #19): one list for our side (op, sizes: the md_hom sizes "
            "in the operator's dimension order) and the peers (vendor: cuBLAS/cuBLASLt/cuDNN via "
            "bench/peers/vendor.cu; torch/jax: expressions evaluated by bench/peers/frameworks.py over "
            "the named inputs). bytes: each input read once + each output written once (float32 = 4 B, "
            "bfloat16 = 2 B); type: bf16 or tf32 for the variants of issue 18, tf32x3 for the products in fp32 "
            "storage and accuracy with ours on the tensor cores (three TF32 products per product, the user's "
            "choice; peers: exactly the float32 case's, TF32 off) (absent: float32), base: the "
            "float32 case it derives from; flops: arithmetic operations (2 per multiply-add). floor = max(bytes / copy rate, "
            "flops / the GEMM rate of the case's type: fp32 SGEMM for float32 and tf32x3, bf16 or TF32 GEMM)."),
  "targets": {
    "memory_bound": "memory-bound ops and fused subgraphs: >= 1.0x best peer; geomean over the class >= 1.5x",
    "attn_mask": "attention mask: >= 3x PyTorch eager and faster than torch.compile",
    "product_large": "fp32 products at BERT sizes (and 1024^3): >= 0.9x cuBLAS (best of cuBLAS, cuBLASLt)",
    "product_small": "small/odd fp32 products: >= 1.0x cuBLAS (best of cuBLAS, cuBLASLt)",
    "dot_matvec": "dot and matvec: >= cuBLAS and >= 80% of the measured copy bandwidth",
    "stencil": "jacobi3d: >= 80% of the measured copy bandwidth",
    "conv": "convolutions (MCC, conv3x3): >= cuDNN",
    "odd_product": ("products with odd or prime extents (issue 19): >= 0.9x cuBLAS (best of cuBLAS, cuBLASLt; "
                    "for the tf32x3 variants the fp32 ones, TF32 off)"),
    "tccg": "TCCG tensor contractions (issue 19): >= 1.0x torch.compile and >= 1.0x JAX einsum",
    "memory_floor": "reductions, dot, matvec of issue 19: >= 1.0x best peer and >= 85% of the measured copy bandwidth",
    "lp_product_large": ("bf16/tf32 products at BERT sizes and 1024^3 (issue 18): >= 0.9x the best of cuBLAS and "
                         "cuBLASLt in the same precision; tf32x3: in its fp32 accuracy class, against fp32 "
                         "cuBLAS/cuBLASLt (TF32 off), ours on the tensor cores by the user's choice"),
    "lp_product_small": ("bf16/tf32 batched, small and odd products (issue 18): >= 1.0x the best of cuBLAS and "
                         "cuBLASLt in the same precision; tf32x3: in its fp32 accuracy class, against fp32 "
                         "cuBLAS/cuBLASLt (TF32 off), ours on the tensor cores by the user's choice"),
    "lp_memory": "bf16 memory-bound cases and fused pairs (issue 18): >= 1.0x the best peer, each",
    "epilogue": "GEMM + epilogue as one kernel (issue 20): <= 1.05x our plain GEMM of the same shape (plain_case)"},
  "cases": cases}
def dump_obj(o, ind, deep):
    pad = " " * (ind + 2)
    items = []
    for k, v in o.items():
        if isinstance(v, dict) and v and k in deep:
            items.append(f"{pad}{json.dumps(k)}: " + dump_obj(v, ind + 2, deep))
        else:
            items.append(f"{pad}{json.dumps(k)}: {json.dumps(v)}")
    return "{\n" + ",\n".join(items) + "\n" + " " * ind + "}"
txt = "{\n"
txt += f'  "about": {json.dumps(doc["about"])},\n'
txt += '  "targets": ' + dump_obj(doc["targets"], 2, ()) + ",\n"
txt += '  "cases": [\n' + ",\n".join("    " + dump_obj(c, 4, ("inputs", "peers")) for c in cases) + "\n  ]\n}\n"
json.loads(txt)
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cases.json")
if "--check" in sys.argv[1:]:  # is cases.json what this script writes? (bench/test_bench.py)
    with open(path) as f:
        same = f.read() == txt
    print("bench/cases.json is " + ("up to date" if same else "NOT what make_cases.py writes: re-run it"))
    sys.exit(0 if same else 1)
open(path, "w").write(txt)
RATE = {None: 51.3e12, "tf32": 356e12, "bf16": 990e12,  # fp32, TF32 measured; bf16 nominal dense
        "tf32x3": 51.3e12}  # tf32x3: the fp32 SGEMM rate, the ceiling of its accuracy class
for c in cases:
    fl = max(c["bytes"] / 4.25e12, c["flops"] / RATE[c.get("type")]) * 1e6
    print(f'{c["name"]:22s} bytes {c["bytes"]:>12d} flops {c["flops"]:>14d} floor {fl:8.1f}')
