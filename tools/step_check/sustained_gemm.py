#!/usr/bin/env python3
"""How much slower a GEMM runs when the GPU is kept busy.

The same bf16 GEMMs as one Llama-3-8B layer at 4096 tokens (qkv, o, gate_up, down), timed
(a) as a burst: 10 repetitions each after 2 s idle, the way the collector times one GEMM, and
(b) sustained: the four GEMMs back to back for SECONDS, timed per 0.25 s window with CUDA events,
while nvidia-smi logs the SM clock and power. Writes sustained_gemm_<gpu>.csv to OUT_DIR.

Usage: sustained_gemm.py OUT_DIR [SECONDS]
"""
import csv
import os
import subprocess
import sys
import time

import torch

OUT = sys.argv[1] if len(sys.argv) > 1 else "."
SECONDS = float(sys.argv[2]) if len(sys.argv) > 2 else 20.0
dev = torch.device("cuda")
M = 4096
SHAPES = {"qkv_proj": (6144, 4096), "o_proj": (4096, 4096), "gate_up_proj": (28672, 4096), "down_proj": (4096, 14336)}


def main():
    name = torch.cuda.get_device_name()
    gpu = "h200" if "H200" in name else ("h100" if "H100" in name else name.replace(" ", "_"))
    # operands: a few copies each so that weights come from DRAM as in a step (no L2 reuse)
    ops = {k: ([torch.randn(M, kk, device=dev, dtype=torch.bfloat16) for _ in range(2)],
               [torch.randn(n, kk, device=dev, dtype=torch.bfloat16) for _ in range(2)]) for k, (n, kk) in SHAPES.items()}
    outs = {k: torch.empty(M, n, device=dev, dtype=torch.bfloat16) for k, (n, _) in SHAPES.items()}

    def run(k, i):
        a, w = ops[k]
        torch.mm(a[i % 2], w[i % 2].t(), out=outs[k])

    for k in SHAPES:  # warm-up: cuBLAS picks its kernels
        for i in range(3):
            run(k, i)
    torch.cuda.synchronize()
    rows = []
    # (a) bursts
    for k in SHAPES:
        time.sleep(2.0)
        st = [torch.cuda.Event(enable_timing=True) for _ in range(10)]
        en = [torch.cuda.Event(enable_timing=True) for _ in range(10)]
        for i in range(10):
            st[i].record()
            run(k, i)
            en[i].record()
        torch.cuda.synchronize()
        ts = sorted(s.elapsed_time(e) * 1000 for s, e in zip(st, en))
        rows.append(["burst", k, 0.0, 10, round(ts[5], 1)])
        print(f"burst {k}: median {ts[5]:.1f} us", flush=True)
    time.sleep(2.0)
    # (b) sustained: layer after layer, per-GEMM time averaged over 0.25 s windows
    smi = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu",
                            "--format=csv", "-lms", "250"], stdout=open(os.path.join(OUT, f"sustained_smi_{gpu}.csv"), "w"))
    t0 = time.time()
    i = 0
    while time.time() - t0 < SECONDS:
        evs = {k: [] for k in SHAPES}
        tw = time.time()
        while time.time() - tw < 0.25:
            for k in SHAPES:
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                run(k, i)
                e.record()
                evs[k].append((s, e))
            i += 1
        torch.cuda.synchronize()
        for k, lst in evs.items():
            us = sorted(s.elapsed_time(e) * 1000 for s, e in lst)
            rows.append(["sustained", k, round(time.time() - t0, 2), len(us), round(us[len(us) // 2], 1)])
    smi.terminate()
    with open(os.path.join(OUT, f"sustained_gemm_{gpu}.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["mode", "gemm", "t_s", "reps", "median_us"])
        w.writerows(rows)
    last = [r for r in rows if r[0] == "sustained" and r[2] > SECONDS - 5]
    for k in SHAPES:
        b = next(r[4] for r in rows if r[0] == "burst" and r[1] == k)
        s = sorted(r[4] for r in last if r[1] == k)
        print(f"{k}: burst {b:.1f} us, sustained (last 5 s) {s[len(s) // 2]:.1f} us, x{s[len(s) // 2] / b:.3f}", flush=True)


if __name__ == "__main__":
    main()
