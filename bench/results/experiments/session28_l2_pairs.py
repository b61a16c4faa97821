#!/usr/bin/env python3
"""H200 / H100 time of the same nvjet configuration, by the model's L2 share and the kernel's length.

Session 28 (bench/results/eval_holdout.md): reads the re-measurement leases both GPUs ran (`confirm.csv.gz`,
`picks/*.csv.gz`), keeps tensor-bound points (tensor time at 800 / 780 / 1,400 TFLOP/s >= half the H100's time,
compulsory DRAM time <= half the tensor time) and prints the median ratio per (log2 L2 share, H100 time) bucket.
Run from the repository root: python3 bench/results/experiments/session28_l2_pairs.py
"""
import collections, csv, glob, gzip, math, os, statistics

DATA = "bench/data"
PEAK = {"bf16": 800e12, "fp16": 780e12, "fp8e4m3": 1400e12}
BYTES = {"bf16": 2, "fp16": 2, "fp8e4m3": 1}
L2_BULK_H100 = 8449e9   # bytes/s, bench/data/h100-sxm/calibration.json l2_bulk_gb_s
DRAM_H100 = 3112e9


def load(path):
    times = collections.defaultdict(list)
    with gzip.open(path, "rt") as fh:
        for r in csv.DictReader(line for line in fh if not line.startswith("#")):
            if r["op"] != "gemm" or not r["kernel_name"].startswith("nvjet"):
                continue
            key = (r["dtype"], int(r["M"]), int(r["N"]), int(r["K"]), r["kernel_name"], r["tile"], r["stages"],
                   r["splitk"], r["cluster"])
            times[key].append(float(r["latency_us"]))
    return {k: statistics.median(v) for k, v in times.items()}


files = ["confirm.csv.gz"] + sorted(os.path.relpath(p, f"{DATA}/h200") for p in glob.glob(f"{DATA}/h200/picks/*.csv.gz"))
h100, h200 = {}, {}
for f in files:
    h100.update(load(f"{DATA}/h100-sxm/{f}"))
    h200.update(load(f"{DATA}/h200/{f}"))
buckets = collections.defaultdict(list)
for key in h100.keys() & h200.keys():
    dt, M, N, K, _, tile, _, _, cluster = key
    if dt not in PEAK:
        continue
    tm, tn = map(int, tile.split("x"))
    cm, cn = map(int, cluster.split("x")[:2])
    t = h100[key]
    tensor_us = 2 * M * N * K / PEAK[dt] * 1e6
    dram_us = (M * K + N * K) * BYTES[dt] / DRAM_H100 * 1e6
    if tensor_us < 0.5 * t or dram_us > 0.5 * tensor_us:
        continue
    l2_bytes = math.ceil(M / tm) * math.ceil(N / tn) * (tm / cn + tn / cm) * K * BYTES[dt]
    share = math.log2(l2_bytes / L2_BULK_H100 * 1e6 / tensor_us)
    length = "<20" if t < 20 else "20-50" if t < 50 else "50-200" if t < 200 else ">200"
    buckets[(round(share * 2) / 2, length)].append(h200[key] / t)
lengths = ["<20", "20-50", "50-200", ">200"]
print("log2 L2 share", *lengths, sep="\t")
for s in sorted({b[0] for b in buckets}):
    cells = [buckets[(s, l)] for l in lengths]
    print(s, *[f"{statistics.median(c):.3f} ({len(c)})" if len(c) > 30 else "-" for c in cells], sep="\t")
