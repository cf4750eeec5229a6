#!/usr/bin/env python3
"""PyTorch's scaled_dot_product_attention alone, as the BERT layer's peers call it
(bench/peers/layer.py: Q, K, V as views of the QKV projection [batch, seq, 3, heads, d], the
padding mask additive), run --reps times: the program `bench/device.sh layer_profile` hands
to ncu beside ours. --type tf32x3 (the layer type whose weight products are three TF32 products
each; its attention is fp32) runs as f32.

  python3 bench/peers/attention_alone.py --batch 8 --seq 512 [--heads 12] [--hidden 768]
                                         [--type bf16|f32|tf32x3] [--reps 5]
"""
import argparse
import math

import torch
import torch.nn.functional as F


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--seq", type=int, required=True)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--hidden", type=int, default=768)
    ap.add_argument("--type", choices=["bf16", "f32", "tf32x3"], default="bf16")
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    if a.hidden % a.heads:
        ap.error(f"--hidden {a.hidden} is not a multiple of --heads {a.heads}")
    B, S, H, D = a.batch, a.seq, a.heads, a.hidden // a.heads
    dt = torch.bfloat16 if a.type == "bf16" else torch.float32
    g = torch.Generator(device="cuda").manual_seed(1)
    qkv = torch.randn(B, S, 3, H, D, device="cuda", dtype=dt, generator=g)
    mask = (torch.rand(B, S, device="cuda", generator=g) > 0.1).to(dt)
    q, k, v = (qkv[:, :, s].permute(0, 2, 1, 3) for s in range(3))
    add = ((1.0 - mask) * -10000.0).view(B, 1, 1, S).to(dt)
    for _ in range(a.reps):
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=add)
    torch.cuda.synchronize()
    ref = torch.softmax((q.float() @ k.float().transpose(-1, -2)) / math.sqrt(D) + add.float(), -1) @ v.float()
    err = ((o.float() - ref).norm() / ref.norm()).item()
    ran = "f32" if a.type == "tf32x3" else a.type  # the tf32x3 layer's attention is fp32
    print(f"sdpa {B}x{S} {ran}{' (for the tf32x3 layer)' if ran != a.type else ''}: "
          f"relative L2 error {err:.2e} against float32")


if __name__ == "__main__":
    main()
