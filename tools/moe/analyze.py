# SPDX-License-Identifier: GPL-3.0-or-later
"""What the fused-MoE sweep says (tools/moe/README.md): per shape and dtype, the engine's default
configuration against the best timed one, the best against the roofline, and the other steps.

python3 tools/moe/analyze.py [data/moe-h200] [--out FILE.md]

Needs only the standard library. Where two files hold the same point, the later file (by name
order) wins; the shape's own run is always the later one in data/moe-h200.
"""
import argparse
import collections
import csv
import glob
import gzip
import io
import os
import statistics

PEAK_FLOPS = {"bf16": 989e12, "fp8": 1979e12, "fp8_block": 1979e12}  # H200 dense, datasheet
DRAM_BW = 4.8e12  # H200 HBM3e, datasheet
ELEM = {"bf16": 2, "fp8": 1, "fp8_block": 1}
CFG = ["BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "GROUP_SIZE_M", "num_warps", "num_stages"]


def read_rows(folder):
    rows = {}
    for path in sorted(glob.glob(os.path.join(folder, "*.csv.gz")) + glob.glob(os.path.join(folder, "*.csv"))):
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt") as f:
            text = "".join(line for line in f if not line.startswith("#"))
        for r in csv.DictReader(io.StringIO(text)):
            key = (r["model"], r["tokens"], r["dtype"], r["kernel"]) + tuple(r[c] for c in CFG)
            rows[key] = r
    return list(rows.values())


def roofline_us(r):
    """The floor of one expert GEMM: each active expert's weight read once, the activations read
    and the output written once, against the FLOPs of the real (unpadded) rows."""
    mode = r["dtype"]
    n = int(r["tokens"]) * int(r["topk"])
    N, K, act = int(r["N"]), int(r["K"]), int(r["active_experts"])
    rows_in = int(r["tokens"]) if r["kernel"] == "gate_up" else n
    byts = act * N * K * ELEM[mode] + rows_in * K * ELEM[mode] + n * N * 2
    flops = 2.0 * n * N * K
    return max(byts / DRAM_BW, flops / PEAK_FLOPS[mode]) * 1e6, byts / DRAM_BW >= flops / PEAK_FLOPS[mode]


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p * (len(xs) - 1))))]


def analyze(rows):
    groups = collections.defaultdict(list)
    other = collections.defaultdict(list)
    for r in rows:
        if r["kernel"] in ("gate_up", "down"):
            if r["status"] in ("ok", "capped") and r["time_us"]:
                groups[(r["model"], r["dtype"], r["kernel"], int(r["tokens"]))].append(r)
        elif r["status"] == "ok":
            other[(r["model"], r["kernel"], int(r["tokens"]))].append(float(r["time_us"]))
    per_shape = collections.defaultdict(lambda: {"speedup": [], "roof": [], "pts": []})
    for (model, mode, kernel, T), rs in groups.items():
        best = min(rs, key=lambda r: float(r["time_us"]))
        dflt = [r for r in rs if r["engine_default"] == "1"]
        if not dflt:
            continue
        d = float(dflt[0]["time_us"])
        b = float(best["time_us"])
        roof, mem = roofline_us(best)
        s = per_shape[(model, mode)]
        s["speedup"].append(d / b)
        s["roof"].append(b / roof)
        s["pts"].append((T, kernel, d, b, roof, mem, best))
    return per_shape, other


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("folder", nargs="?", default="data/moe-h200")
    ap.add_argument("--out")
    args = ap.parse_args()
    rows = read_rows(args.folder)
    per_shape, other = analyze(rows)
    lines = ["| shape | dtype | points | default/best median | p90 | max | best within 3% of default | "
             "best/roofline median | at T<=64 | at T>=4096 |", "|---|---|---|---|---|---|---|---|---|---|"]
    allsp = collections.defaultdict(list)
    for (model, mode), s in sorted(per_shape.items()):
        sp = s["speedup"]
        allsp[mode] += sp
        small = [p[3] / p[4] for p in s["pts"] if p[0] <= 64]
        large = [p[3] / p[4] for p in s["pts"] if p[0] >= 4096]
        lines.append(f"| {model} | {mode} | {len(sp)} | {statistics.median(sp):.2f} | {pct(sp, 0.9):.2f} | "
                     f"{max(sp):.2f} | {sum(x <= 1.03 for x in sp) / len(sp):.0%} | "
                     f"{statistics.median(s['roof']):.2f} | {statistics.median(small) if small else float('nan'):.2f} | "
                     f"{statistics.median(large) if large else float('nan'):.2f} |")
    lines.append("")
    for mode, sp in sorted(allsp.items()):
        lines.append(f"all shapes, {mode}: {len(sp)} points, default/best median {statistics.median(sp):.2f}, "
                     f"p90 {pct(sp, 0.9):.2f}, max {max(sp):.2f}")
    lines.append("")
    lines.append("| step | tokens | median over shapes (us) | min | max |")
    lines.append("|---|---|---|---|---|")
    steps = collections.defaultdict(list)
    for (model, kernel, T), ts in other.items():
        steps[(kernel, T)].append(statistics.median(ts))
    for (kernel, T), ts in sorted(steps.items()):
        if T in (1, 64, 1024, 16384):
            lines.append(f"| {kernel} | {T} | {statistics.median(ts):.1f} | {min(ts):.1f} | {max(ts):.1f} |")
    text = "\n".join(lines) + "\n"
    if args.out:
        open(args.out, "w").write(text)
    print(text)


if __name__ == "__main__":
    main()
