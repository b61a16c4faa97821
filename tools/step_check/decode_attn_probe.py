#!/usr/bin/env python3
"""Why does SDPA decode attention run at different speeds in the collector and in the step bench?

Times F.scaled_dot_product_attention (flash, enable_gqa) for one decode shape with K/V laid out
(a) as the collector makes them (contiguous [B, L, Hkv, D] per input set, rotated over sets),
(b) as the step bench does (a slice [:B, :L] of a preallocated [Bmax, Cmax, Hkv, D] cache),
(c) like (b) but with the query length 1 view made contiguous,
each eager and from a CUDA graph, with the kernel names torch.profiler sees.
Usage: decode_attn_probe.py OUT_DIR
"""
import os
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.profiler import ProfilerActivity, profile

OUT = sys.argv[1] if len(sys.argv) > 1 else "."
dev, dt = torch.device("cuda"), torch.bfloat16
FAST = [SDPBackend.FLASH_ATTENTION, SDPBackend.CUDNN_ATTENTION, SDPBackend.EFFICIENT_ATTENTION]


def attn(q, k, v):
    with sdpa_kernel(FAST):
        return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)


def timed(fn, reps=30):
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record()
        ts.append((a, b))
    torch.cuda.synchronize()
    t = sorted(x.elapsed_time(y) * 1000 for x, y in ts)
    return t[len(t) // 2]


def graph_timed(fn):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return timed(g.replay)


def names(fn):
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        fn(); torch.cuda.synchronize()
    return "; ".join(sorted({e.name[:110] for e in p.events() if e.device_type.name == "CUDA"}))


rows = []
for (B, L, Hq, Hkv, D) in [(64, 8192, 32, 8, 128), (32, 8192, 32, 8, 128), (32, 2048, 32, 8, 128),
                          (128, 2048, 32, 8, 128), (8, 8192, 32, 8, 128)]:
    kv_bytes = 2 * B * L * Hkv * D * 2
    sets = max(1, int(4 * 60e6 // kv_bytes) + 1)
    coll = [(torch.randn(B, 1, Hq, D, device=dev, dtype=dt).transpose(1, 2),
             torch.randn(B, L, Hkv, D, device=dev, dtype=dt).transpose(1, 2),
             torch.randn(B, L, Hkv, D, device=dev, dtype=dt).transpose(1, 2)) for _ in range(sets)]
    i = [0]

    def run_coll():
        q, k, v = coll[i[0] % sets]; i[0] += 1
        return attn(q, k, v)

    Bmax, Cmax = max(B, 128), 8192 + 64
    cache = torch.randn(2, Bmax, Cmax, Hkv, D, device=dev, dtype=dt)
    qs = torch.randn(B, 1, Hq * D, device=dev, dtype=dt)

    def run_step():
        q = qs.view(B, 1, Hq, D).transpose(1, 2)
        k = cache[0, :B, :L].transpose(1, 2)
        v = cache[1, :B, :L].transpose(1, 2)
        return attn(q, k, v)

    for name, fn in (("collector", run_coll), ("step-slice", run_step)):
        e = timed(fn)
        g = graph_timed(fn) if name == "step-slice" else float("nan")
        gbs = kv_bytes / (e * 1e-6) / 1e9
        rows.append(f"{B},{L},{Hq},{Hkv},{D},{name},{e:.1f},{g:.1f},{gbs:.0f},\"{names(fn)}\"")
        print(rows[-1], flush=True)
    del coll, cache
    torch.cuda.empty_cache()

with open(os.path.join(OUT, "decode_attn_probe.csv"), "w") as f:
    f.write("B,L,Hq,Hkv,D,layout,eager_us,graph_us,kv_GB_s,kernels\n" + "\n".join(rows) + "\n")
