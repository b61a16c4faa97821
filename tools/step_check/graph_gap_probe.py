#!/usr/bin/env python3
"""How much time a CUDA graph spends between its kernels.

A decode step replayed from a CUDA graph takes longer than the sum of its kernels' durations: each
kernel boundary costs the drain of one kernel and the start of the next. perfloom's step model
(model/sim/step_cost.h, Overheads::graph_kernel_gap_us) charges a gap per kernel; this probe measures
it apart from the step benchmark it is checked against.

For a few kernels (an in-place add over 1 to 16M bf16 elements, and a decode-sized GEMV), it captures
graphs of N1 and N2 copies of the kernel in a chain, times their replays with CUDA events (median of
REPS), and takes the time per kernel in the graph as (T(N2) - T(N1)) / (N2 - N1). The kernel's own
duration comes from torch.profiler (CUPTI) over an eager run, as the step benchmark attributes its
kernels. gap = time per kernel in the graph - duration.

Usage: graph_gap_probe.py OUT.json
"""
import json
import statistics
import sys
import time

import torch

N1, N2, REPS = 50, 400, 30


def graph_time_us(fn, n):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(n):
            fn()
    for _ in range(5):
        g.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(REPS):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1000.0)
    return statistics.median(times)


def kernel_duration_us(fn, n=200):
    from torch.profiler import ProfilerActivity, profile
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(n):
            fn()
        torch.cuda.synchronize()
    durs = {}
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA and e.device_time > 0:
            durs.setdefault(e.name, []).append(e.device_time)
    if not durs:
        return float("nan"), ""
    name, d = max(durs.items(), key=lambda kv: len(kv[1]))
    return statistics.median(d), name


def main():
    out = sys.argv[1]
    dev = torch.device("cuda")
    bf = torch.bfloat16
    cases = []
    for n_el in (1, 16384, 1 << 20, 1 << 24):
        x = torch.zeros(n_el, device=dev, dtype=bf)
        cases.append((f"add_ {n_el} bf16", lambda x=x: x.add_(1.0)))
    w = torch.randn(4096, 4096, device=dev, dtype=bf)
    v = torch.randn(1, 4096, device=dev, dtype=bf)
    o = torch.empty(1, 4096, device=dev, dtype=bf)
    cases.append(("mm 1x4096x4096 bf16", lambda: torch.mm(v, w, out=o)))
    rows = []
    for label, fn in cases:
        t1, t2 = graph_time_us(fn, N1), graph_time_us(fn, N2)
        per = (t2 - t1) / (N2 - N1)
        dur, kname = kernel_duration_us(fn)
        rows.append({"case": label, "kernel": kname[:80], "graph_us_per_kernel": round(per, 3),
                     "kernel_us": round(dur, 3), "gap_us": round(per - dur, 3),
                     f"graph_{N1}_us": round(t1, 1), f"graph_{N2}_us": round(t2, 1)})
        print(rows[-1], flush=True)
    res = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "cuda": torch.version.cuda,
           "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "n1": N1, "n2": N2, "reps": REPS,
           "method": __doc__.strip().splitlines()[0], "cases": rows,
           "gap_us_median": round(statistics.median(r["gap_us"] for r in rows), 3)}
    with open(out, "w") as f:
        json.dump(res, f, indent=1)
    print("median gap per kernel:", res["gap_us_median"], "us")


if __name__ == "__main__":
    main()
