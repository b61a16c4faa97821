#!/usr/bin/env python3
"""Fits perfloom's NCCL model to measured collectives and writes the measured table it ships.

    python3 tools/comm_check/fit_nccl.py [data/nccl-h200]

Input: nccl.csv from tools/collector/nccl_torch.py (all_reduce / all_gather, bf16, 1 KiB..1 GiB,
2 and 4 ranks). The GPU-side time of a collective is the CUDA-graph replay (sizes up to 64 MiB,
no host issue cost) and the eager time above that (where the host cost is hidden).

Model (model/families/communication/nccl_model.cpp), per op:
    t = base_us + steps * hop_us + link_bytes / (link_bytes_per_s * eff(m)),
    eff(m) = eff_max * m / (m + m_half),  m = bytes per rank
base_us and hop_us come from the smallest messages (2 and 4 ranks give two equations);
eff_max and m_half by least squares on log time over every size. Pure Python on purpose (CI and
this machine have no numpy). Prints the constants and writes resources/comm/<gpu>.csv.
"""
import csv
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
data_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "data", "nccl-h200")
GPU_ID = "h200"
LINK_GB_S = 900.0  # gpus/h200.json nvlink_bandwidth_gb_s (both directions)
LINK = LINK_GB_S * 1e9 / 2

rows = list(csv.DictReader(open(os.path.join(data_dir, "nccl.csv"))))
data = []
for r in rows:
    b, n, t = int(r["bytes"]), int(r["ranks"]), float(r["median_us"])
    if r["mode"] == "graph" or b > (64 << 20):
        data.append((r["op"], b, n, t))


def steps_and_link(op, b, n):
    if op == "allreduce":
        return min(2 * (n - 1), 2 * math.ceil(math.log2(n)) + 1), 2 * (n - 1) / n * b
    return n - 1, (n - 1) / n * b


# base and hop from the smallest message of each op and rank count.
small = {(op, n): t for op, b, n, t in data if b == 1024}
eqs = [(steps_and_link(op, 1024, n)[0], t) for (op, n), t in small.items()]
# least squares for t = base + steps * hop over the four points
sx = sum(s for s, _ in eqs); sy = sum(t for _, t in eqs)
sxx = sum(s * s for s, _ in eqs); sxy = sum(s * t for s, t in eqs); k = len(eqs)
hop = (k * sxy - sx * sy) / (k * sxx - sx * sx)
base = (sy - hop * sx) / k
print(f"base_us = {base:.3f}, hop_us = {hop:.3f}")


def model(op, b, n, eff_max, m_half):
    steps, link = steps_and_link(op, b, n)
    m = b / n
    return base + steps * hop + link / (LINK * eff_max * m / (m + m_half)) * 1e6


for op in ("allreduce", "allgather"):
    sub = [d for d in data if d[0] == op]
    p = [0.7, 2e5]
    step = [0.05, 1e5]

    def loss(q):
        return sum(math.log(model(o, b, n, *q) / t) ** 2 for o, b, n, t in sub)

    for _ in range(2000):
        improved = False
        for i in range(2):
            for s in (1, -1):
                q = list(p)
                q[i] += s * step[i]
                if q[i] <= 0 or q[0] > 1:
                    continue
                if loss(q) < loss(p):
                    p, improved = q, True
        if not improved:
            step = [x / 2 for x in step]
            if step[0] < 1e-6:
                break
    errs = [abs(model(o, b, n, *p) / t - 1) for o, b, n, t in sub]
    print(f"{op}: eff_max = {p[0]:.4f}, m_half_bytes = {p[1]:.0f}  "
          f"(fit MAPE {100 * sum(errs) / len(errs):.1f}%, worst {100 * max(errs):.1f}%)")

out = os.path.join(ROOT, "resources", "comm", f"{GPU_ID}.csv")
with open(out, "w") as f:
    f.write("# perfloom-collectives/1: GPU-side time of NCCL collectives measured on one host\n")
    f.write(f"# gpu={GPU_ID}\n# link_gb_s={LINK_GB_S:g}\n")
    f.write("# source=data/nccl-h200/nccl.csv (tools/collector/nccl_torch.py, NCCL 2.28.9, "
            "4x H200 NVLink full mesh, NVLS off); CUDA-graph replay up to 64 MiB, eager above\n")
    f.write("op,ranks,bytes,median_us\n")
    for op, b, n, t in sorted(data, key=lambda d: (d[0], d[2], d[1])):
        f.write(f"{op},{n},{b},{t:.3f}\n")
print("wrote", out)
