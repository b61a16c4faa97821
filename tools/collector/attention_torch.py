#!/usr/bin/env python3
"""Time PyTorch's attention kernels (scaled_dot_product_attention) with torch.profiler.

Writes the perfloom collector CSV (FORMAT.md) with op attn_prefill (B,S,Hq,Hkv,D; causal) and
attn_decode (B,L,Hq,Hkv,D; one query token over L cached keys), and one small chrome trace of a
tiny Llama-like block for the trace importer's tests.

Kernel durations come from the profiler's CUDA activity records (CUPTI underneath), never from
host timers. Between repetitions a marker kernel (torch.cuda._sleep -> spin_kernel) is launched;
the kernels between two markers are one repetition, and its latency is the sum of their durations.

Usage: attention_torch.py --out attention.csv --trace trace.json.gz [--quick] [--budget-s S]
"""
import argparse
import datetime
import gzip
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

COLUMNS = ("op,dtype,M,N,K,Bt,B,S,L,Hq,Hkv,D,T,H,I,V,latency_us,min_us,p10_us,p90_us,reps,method,"
           "kernel_name,algo_id,tile,stages,splitk,reduction,swizzle,cluster,heuristic_rank,sweep,"
           "workspace_bytes,waves,grid,block,regs,smem_bytes,kernels,source").split(",")

WARMUP = 3


def quantile(v, q):
    v = sorted(v)
    pos = q * (len(v) - 1)
    lo, hi = math.floor(pos), math.ceil(pos)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def csv_field(s):
    s = str(s)
    if any(c in s for c in ',"\n\r'):
        return '"' + s.replace('"', '""').replace("\n", " ").replace("\r", " ") + '"'
    return s


def nvidia_smi(query):
    try:
        r = subprocess.run(["nvidia-smi", "--query-gpu=" + query, "--format=csv,noheader,nounits", "-i", "0"],
                           capture_output=True, text=True, timeout=20)
        return r.stdout.strip()
    except Exception:
        return ""


def env_lines(tag):
    p = torch.cuda.get_device_properties(0)
    drv = nvidia_smi("driver_version")
    clk = nvidia_smi("clocks.sm")
    mem = nvidia_smi("clocks.mem")
    return [
        "format=perfloom-collector/1",
        "collector_version=1",
        "sweep=attention" + tag,
        "gpu_name=" + p.name,
        f"compute_capability={p.major}.{p.minor}",
        f"sm_count={p.multi_processor_count}",
        f"l2_bytes={getattr(p, 'L2_cache_size', 0)}",
        f"memory_bytes={p.total_memory}",
        "driver=" + drv,
        "cuda_runtime=" + str(torch.version.cuda),
        "torch_version=" + torch.__version__,
        "cudnn_version=" + str(torch.backends.cudnn.version()),
        "sm_clock_mhz_before=" + clk,
        "mem_clock_mhz=" + mem,
        "date=" + datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "timing=torch.profiler CUDA activity (kernel, memset, memcpy events); per repetition the sum of the "
        "device durations of the kernels between two marker kernels; latency_us = median",
        "layout=q (B,Hq,S,D), k/v (B,Hkv,S,D) as transposed views of (B,S,H,D) tensors; bf16",
    ]


def kernels_from_trace(path):
    with open(path) as f:
        data = json.load(f)
    ev = data["traceEvents"] if isinstance(data, dict) else data
    out = []
    for e in ev:
        if e.get("ph") != "X":
            continue
        cat = e.get("cat", "")
        if cat in ("kernel", "gpu_memset", "gpu_memcpy", "Kernel", "Memset", "Memcpy"):
            args = e.get("args", {})
            out.append((float(e["ts"]), float(e.get("dur", 0.0)), e.get("name", ""), args))
    out.sort(key=lambda x: x[0])
    return out


def groups_between_markers(kern):
    groups, cur, opened = [], [], False
    for k in kern:
        if "spin_kernel" in k[2]:
            if opened:
                groups.append(cur)
            cur, opened = [], True
        elif opened:
            cur.append(k)
    return groups


def marker():
    torch.cuda._sleep(1)


class Sdpa:
    """Finds, per shape, how SDPA runs: the flash backend with native GQA if it accepts the
    shape, else whatever backend SDPA picks, else K/V repeated to Hq heads before the call."""

    def __init__(self, backend="flash"):
        from torch.nn.attention import SDPBackend, sdpa_kernel
        self.SDPBackend, self.sdpa_kernel = SDPBackend, sdpa_kernel
        self.backend = backend

    def pick(self, q, k, v, causal):
        gqa = q.shape[1] != k.shape[1]
        if self.backend == "cudnn":
            # cuDNN's fused attention only: a shape it refuses is skipped, not measured on another
            # backend under this file's name.
            cudnn = [self.SDPBackend.CUDNN_ATTENTION]
            tries = [("cudnn", cudnn, gqa, False), ("cudnn+repeat_kv", cudnn, False, True)]
        else:
            tries = [("flash", [self.SDPBackend.FLASH_ATTENTION], gqa, False),
                     ("default", None, gqa, False),
                     ("flash+repeat_kv", [self.SDPBackend.FLASH_ATTENTION], False, True),
                     ("default+repeat_kv", None, False, True)]
        for name, backends, use_gqa, repeat in tries:
            fn = self.make(backends, use_gqa, repeat, causal, q.shape[1] // k.shape[1])
            try:
                fn(q, k, v)
                torch.cuda.synchronize()
                return name, fn
            except Exception:
                continue
        return None, None

    def make(self, backends, use_gqa, repeat, causal, rep):
        sdpa_kernel = self.sdpa_kernel

        def run(q, k, v):
            if repeat and rep > 1:
                k = k.repeat_interleave(rep, dim=1)
                v = v.repeat_interleave(rep, dim=1)
            kw = {"enable_gqa": True} if use_gqa else {}
            if backends is None:
                return F.scaled_dot_product_attention(q, k, v, is_causal=causal, **kw)
            with sdpa_kernel(backends):
                return F.scaled_dot_product_attention(q, k, v, is_causal=causal, **kw)
        return run


def prefill_points(quick):
    heads = [(32, 8, 128), (64, 8, 128), (32, 32, 128), (8, 1, 128), (16, 4, 128), (8, 8, 128),
             (28, 4, 128), (40, 8, 128), (16, 16, 64), (32, 8, 64)]
    Bs = [1, 2, 4, 8, 16, 32]
    Ss = [128, 256, 512, 1024, 2048, 4096, 8192, 16384]
    if quick:
        heads, Bs, Ss = [(32, 8, 128), (32, 32, 128)], [1, 4], [512, 2048]
    pts = []
    for hq, hkv, d in heads:
        for b in Bs:
            for s in Ss:
                flops = 4.0 * b * hq * s * s * d / 2
                if b * s > 65536 or flops > 3e12:
                    continue
                pts.append(dict(B=b, S=s, Hq=hq, Hkv=hkv, D=d))
    return pts


def decode_points(quick):
    heads = [(32, 8, 128), (64, 8, 128), (32, 32, 128), (8, 1, 128), (28, 4, 128), (16, 16, 64), (32, 4, 128)]
    Bs = [1, 2, 4, 8, 16, 32, 64, 128, 256]
    Ls = [128, 512, 1024, 2048, 4096, 8192, 16384, 32768]
    if quick:
        heads, Bs, Ls = [(32, 8, 128), (32, 32, 128)], [1, 16], [1024, 8192]
    pts = []
    for hq, hkv, d in heads:
        for b in Bs:
            for L in Ls:
                kv_bytes = 2 * b * L * hkv * d * 2
                if kv_bytes > 6e9:
                    continue
                pts.append(dict(B=b, L=L, Hq=hq, Hkv=hkv, D=d))
    return pts


def make_inputs(op, p, sets, dev):
    dt = torch.bfloat16
    out = []
    for _ in range(sets):
        if op == "attn_prefill":
            B, S = p["B"], p["S"]
            q = torch.randn(B, S, p["Hq"], p["D"], device=dev, dtype=dt).transpose(1, 2)
            k = torch.randn(B, S, p["Hkv"], p["D"], device=dev, dtype=dt).transpose(1, 2)
            v = torch.randn(B, S, p["Hkv"], p["D"], device=dev, dtype=dt).transpose(1, 2)
        else:
            B, L = p["B"], p["L"]
            q = torch.randn(B, 1, p["Hq"], p["D"], device=dev, dtype=dt).transpose(1, 2)
            k = torch.randn(B, L, p["Hkv"], p["D"], device=dev, dtype=dt).transpose(1, 2)
            v = torch.randn(B, L, p["Hkv"], p["D"], device=dev, dtype=dt).transpose(1, 2)
        out.append((q, k, v))
    return out


def op_bytes(op, p):
    if op == "attn_prefill":
        return 2 * p["B"] * p["S"] * (2 * p["Hq"] + 2 * p["Hkv"]) * p["D"]
    return 2 * p["B"] * (2 * p["Hq"] + 2 * p["L"] * p["Hkv"]) * p["D"]


def sets_for(op, p, l2_bytes):
    """Input sets to rotate through so that together they cover 4x the L2 (at least 256 MB)."""
    cycle = max(4 * l2_bytes, 256 << 20)
    return max(1, min(16, math.ceil(cycle / max(op_bytes(op, p), 1))))


def run_batch(op, batch, sdpa, l2_bytes, reps, writer, deadline):
    """Profiles a batch of shapes in one profiler session and writes their rows."""
    dev = torch.device("cuda")
    plan = []  # (point, backend, fn, inputs)
    for p in batch:
        if time.time() > deadline:
            break
        sets = sets_for(op, p, l2_bytes)
        try:
            inputs = make_inputs(op, p, sets, dev)
        except torch.OutOfMemoryError:
            torch.cuda.empty_cache()
            continue
        q, k, v = inputs[0]
        name, fn = sdpa.pick(q, k, v, causal=(op == "attn_prefill"))
        if fn is None:
            print(f"{op} {p}: no SDPA backend ran", file=sys.stderr)
            continue
        plan.append((p, name, fn, inputs))
    if not plan:
        return 0
    torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as td:
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for p, name, fn, inputs in plan:
                marker()
                for i in range(WARMUP + reps):
                    q, k, v = inputs[i % len(inputs)]
                    fn(q, k, v)
                    marker()
                torch.cuda.synchronize()
        path = os.path.join(td, "t.json")
        prof.export_chrome_trace(path)
        kern = kernels_from_trace(path)
    groups = groups_between_markers(kern)
    # per shape: WARMUP + reps groups of its own, then one group of whatever ran between its
    # last marker and the next shape's first marker (nothing, as inputs were made beforehand)
    per = WARMUP + reps + 1
    if len(groups) < per * len(plan) - 1:
        print(f"{op}: expected {per * len(plan) - 1} marker groups, got {len(groups)}; batch dropped",
              file=sys.stderr)
        return 0
    n = 0
    for j, (p, name, fn, inputs) in enumerate(plan):
        g = groups[j * per: j * per + WARMUP + reps][WARMUP:]
        times = [sum(x[1] for x in grp) for grp in g]
        if not times or min(len(grp) for grp in g) == 0:
            continue
        first = g[0]
        names = []
        for x in first:
            if x[2] not in names:
                names.append(x[2])
        main = max(first, key=lambda x: x[1])
        a = main[3]
        grid = "x".join(str(v) for v in a.get("grid", [])) if "grid" in a else ""
        block = "x".join(str(v) for v in a.get("block", [])) if "block" in a else ""
        row = dict(op=op, dtype="bf16", latency_us=f"{quantile(times, .5):.3f}", min_us=f"{min(times):.3f}",
                   p10_us=f"{quantile(times, .1):.3f}", p90_us=f"{quantile(times, .9):.3f}", reps=len(times),
                   method="torch.profiler", kernel_name=" ; ".join(names)[:600], sweep="default",
                   grid=grid, block=block, regs=a.get("registers per thread", ""),
                   smem_bytes=a.get("shared memory", ""), kernels=len(first), source="torch.sdpa:" + name)
        row.update({k: v for k, v in p.items()})
        writer(row)
        n += 1
    return n


def tiny_llama_trace(path, quick):
    """A few prefill and decode steps of a 2-layer Llama-like block, profiled with CPU+CUDA
    activities and shapes recorded; written gzipped."""
    dev, dt = torch.device("cuda"), torch.bfloat16
    H, NQ, NKV, D, I, LAYERS = 2048, 16, 4, 128, 5632, 2
    torch.manual_seed(0)
    W = []
    for _ in range(LAYERS):
        W.append(dict(
            ln1=torch.ones(H, device=dev, dtype=dt), ln2=torch.ones(H, device=dev, dtype=dt),
            qkv=torch.randn((NQ + 2 * NKV) * D, H, device=dev, dtype=dt) * 0.02,
            o=torch.randn(H, NQ * D, device=dev, dtype=dt) * 0.02,
            gate_up=torch.randn(2 * I, H, device=dev, dtype=dt) * 0.02,
            down=torch.randn(H, I, device=dev, dtype=dt) * 0.02))

    def rmsnorm(x, w):
        if hasattr(F, "rms_norm"):
            return F.rms_norm(x, (x.shape[-1],), w, 1e-6)
        return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6).to(x.dtype) * w

    def layer(x, w, cache):
        B, S, _ = x.shape
        h = rmsnorm(x, w["ln1"])
        qkv = F.linear(h, w["qkv"])
        q, k, v = qkv.split([NQ * D, NKV * D, NKV * D], dim=-1)
        q = q.view(B, S, NQ, D).transpose(1, 2)
        k = k.view(B, S, NKV, D).transpose(1, 2)
        v = v.view(B, S, NKV, D).transpose(1, 2)
        if cache:
            k = torch.cat([cache[0], k], dim=2)
            v = torch.cat([cache[1], v], dim=2)
        kr = k.repeat_interleave(NQ // NKV, dim=1)
        vr = v.repeat_interleave(NQ // NKV, dim=1)
        a = F.scaled_dot_product_attention(q, kr, vr, is_causal=(S > 1))
        x = x + F.linear(a.transpose(1, 2).reshape(B, S, NQ * D), w["o"])
        h = rmsnorm(x, w["ln2"])
        gu = F.linear(h, w["gate_up"])
        g, u = gu.chunk(2, dim=-1)
        x = x + F.linear(F.silu(g) * u, w["down"])
        return x, (k, v)

    B, S, steps = 2, 256, 4
    x0 = torch.randn(B, S, H, device=dev, dtype=dt)
    with torch.no_grad():
        for _ in range(2):  # warm-up outside the trace
            x, caches = x0, []
            for w in W:
                x, c = layer(x, w, None)
                caches.append(c)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
            x, caches = x0, []
            for w in W:
                x, c = layer(x, w, None)
                caches.append(c)
            tok = x[:, -1:, :]
            for _ in range(steps):
                nc = []
                for w, c in zip(W, caches):
                    tok, c2 = layer(tok, w, c)
                    nc.append(c2)
                caches = nc
            torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as td:
        raw = os.path.join(td, "trace.json")
        prof.export_chrome_trace(raw)
        with open(raw, "rb") as f, gzip.open(path, "wb", compresslevel=9) as g:
            g.write(f.read())
    return os.path.getsize(path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="attention.csv")
    ap.add_argument("--trace", default="")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--budget-s", type=float, default=90)
    ap.add_argument("--seed", type=int, default=20251121)
    ap.add_argument("--backend", choices=["flash", "cudnn"], default="flash",
                    help="SDPA backend: flash (FlashAttention-2, falling back to SDPA's choice) or cudnn only")
    args = ap.parse_args()
    t0 = time.time()
    random.seed(args.seed)
    torch.manual_seed(args.seed)
    props = torch.cuda.get_device_properties(0)
    l2 = getattr(props, "L2_cache_size", 50 << 20) or (50 << 20)
    sdpa = Sdpa(args.backend)
    # warm the GPU (clocks) and the profiler once
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    end = time.time() + (0.3 if args.quick else 1.0)
    while time.time() < end:
        for _ in range(10):
            a @ a
        torch.cuda.synchronize()
    del a
    with profile(activities=[ProfilerActivity.CUDA]):
        marker()
        torch.cuda.synchronize()

    tag = " (quick)" if args.quick else ""
    env = env_lines(tag)
    rows = []

    def writer(r):
        rows.append(r)

    counts = {}
    reps = 10 if args.quick else 15
    for op, pts, share in (("attn_prefill", prefill_points(args.quick), 0.5),
                           ("attn_decode", decode_points(args.quick), 0.5)):
        random.shuffle(pts)
        deadline = time.time() + args.budget_s * share
        n, i = 0, 0
        mem_cap = 0.25 * props.total_memory
        while i < len(pts) and time.time() < deadline:
            batch, mem = [], 0
            while i < len(pts) and len(batch) < 24:
                b = op_bytes(op, pts[i]) * sets_for(op, pts[i], l2)
                if batch and mem + b > mem_cap:
                    break
                batch.append(pts[i])
                mem += b
                i += 1
            n += run_batch(op, batch, sdpa, l2, reps, writer, deadline)
            torch.cuda.empty_cache()
        counts[op] = (n, len(pts))
        print(f"{op}: {n} of {len(pts)} shapes measured", flush=True)

    env.append("sm_clock_mhz_after=" + nvidia_smi("clocks.sm"))
    env.append(f"elapsed_s={time.time() - t0:.1f}")
    with open(args.out, "w") as f:
        for e in env:
            f.write("# " + e + "\n")
        f.write(",".join(COLUMNS) + "\n")
        for r in rows:
            f.write(",".join(csv_field(r.get(c, "")) for c in COLUMNS) + "\n")
    print(f"wrote {len(rows)} rows to {args.out}")
    if args.trace:
        size = tiny_llama_trace(args.trace, args.quick)
        print(f"wrote trace {args.trace} ({size / 1e6:.2f} MB gzipped)")


if __name__ == "__main__":
    main()
