#!/usr/bin/env python3
"""The sustained-clock curves of GPUs nobody here measured, set beside public kernel timings.

    python3 tools/power/sustained_check.py [--bin build/bin] [--out FILE.md]

For every GPU with public bf16 GEMM timings (aiconfigurator's tables in data/public) and the GPUs
measured here, it prints: the GPU's dense 16-bit tensor peak per watt of TDP against the measured
reference's, the slowdown its sustained-power curve (`perfloom gpus --json`) gives a large GEMM held
at the power limit (at the load the reference's largest probe GEMM drove: 0.79 of the H100's peak at
burst speed), the fraction of the datasheet peak that leaves, and what the public tables' largest
GEMMs (the median of the 20 fastest in TFLOP/s) achieved. Public GEMM tables time short loops, so
they come out at burst speed where a GPU has power to spare (the H100's reach 0.85 of its peak, its
measured sustained figure is 0.68), and a GPU whose short loops already fall well short of the
H100's (public / H100's public well below 1) is held back by its power limit even there.
"""
import argparse, csv, gzip, json, os, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
AIC = "data/public/aiconfigurator/aic-core/src/aiconfigurator_core/systems/data"
# perfloom GPU id -> aiconfigurator system folder.
PUBLIC = {"a100-sxm-80gb": "a100_sxm", "h100-sxm": "h100_sxm", "b200": "b200_sxm", "l40s": "l40s",
          "rtx-pro-6000-server": "rtx_pro_6000_server"}
BURST_LOAD = None  # the reference's largest GEMM level at burst speed, read from its curve


def at(points, u):
    pts = [(p["tensor_utilization"], p["compute"]) for p in points]
    if u <= pts[0][0]:
        return pts[0][1]
    if u >= pts[-1][0]:
        return pts[-1][1]
    for (a, fa), (b, fb) in zip(pts, pts[1:]):
        if a <= u <= b:
            return fa + (fb - fa) * (u - a) / (b - a) if b > a else fb


def public_fraction(gpu, peak):
    path = os.path.join(ROOT, AIC, PUBLIC[gpu], "gemm/sglang/0.5.10/gemm_perf.csv.gz")
    rates = []
    with gzip.open(path, "rt") as f:
        for r in csv.DictReader(f):
            if r["gemm_dtype"] == "bfloat16":
                m, n, k = int(r["m"]), int(r["n"]), int(r["k"])
                rates.append(2.0 * m * n * k / (float(r["latency"]) * 1e-3))
    rates.sort(reverse=True)
    top = sorted(rates[:20])
    return top[len(top) // 2] / peak, len(rates), os.path.relpath(path, ROOT)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "build/bin"))
    ap.add_argument("--out", default="-")
    args = ap.parse_args()
    r = subprocess.run([os.path.join(args.bin, "perfloom"), "gpus", "--json"], capture_output=True, text=True, check=True)
    gpus = {g["id"]: g for g in json.loads(r.stdout)["gpus"]}
    ref = gpus["h100-sxm"]
    ref_pts = ref["sustained_power"]["slowdown_by_tensor_utilization"]
    load = max(p["tensor_utilization"] for p in ref_pts)  # the reference's largest GEMM at burst speed
    rows = []
    for gid in ["h100-sxm", "h200", "a100-sxm-80gb", "l40s", "rtx-pro-6000-server", "b200", "h20", "l4", "rtx-4090"]:
        g = gpus[gid]
        peak = g["dense_peak_tflops"].get("bf16", g["dense_peak_tflops"].get("fp16")) * 1e12
        sp = g.get("sustained_power")
        slow = at(sp["slowdown_by_tensor_utilization"], load)
        origin = sp["origin"]
        ratio = origin[origin.rfind("(x") + 2:-1] if origin.startswith("datasheet") else "measured"
        sustained = load / slow
        pub = public_fraction(gid, peak) if gid in PUBLIC else None
        rows.append((gid, g.get("tdp_w"), peak / 1e12, ratio, slow, sustained, pub))
    out = ["| GPU | TDP W | dense 16-bit peak TFLOP/s | peak per watt vs the reference | slowdown of a large GEMM held at the limit | "
           "sustained fraction of peak | public largest GEMMs, fraction of peak | public / sustained | public / H100's public |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    h100_pub = next(r[6][0] for r in rows if r[0] == "h100-sxm")
    for gid, tdp, peak, ratio, slow, sus, pub in rows:
        p = f"{pub[0]:.2f}" if pub else "-"
        rel = f"{pub[0] / sus:.2f}" if pub else "-"
        rel_h = f"{pub[0] / h100_pub:.2f}" if pub else "-"
        out.append(f"| {gid} | {tdp:.0f} | {peak:.0f} | {ratio} | {slow:.3f} | {sus:.2f} | {p} | {rel} | {rel_h} |")
    # The reading: do the GPUs the curves leave with power to spare reach more of their peak in the
    # public short loops (relative to the H100's) than those the curves hold back?
    public = [r for r in rows if r[6] and r[0] != "h100-sxm"]
    spare = [r for r in public if r[4] <= 1.05]
    held = [r for r in public if r[4] > 1.05]
    def names(rs):
        return ", ".join(f"{r[0]} ({r[4]:.2f}x slower at the limit: {r[6][0] / h100_pub:.2f}x the H100's fraction)" for r in rs)
    out.append("")
    if spare and held:
        agree = min(r[6][0] for r in spare) > max(r[6][0] for r in held)
        out.append(f"Curves with power to spare (at most 1.05x slower at the limit): {names(spare)}. Curves held back: "
                   f"{names(held)}. " + ("The public tables order them alike: every GPU with power to spare reaches more "
                                          "of its peak than every GPU held back." if agree else
                                          "The public tables do not order them alike."))
    out.append("")
    out.append(f"The load: {load:.2f} of the peak at burst speed (the H100's largest probe GEMM, "
               "data/power/sustained_power_h100.json). Public: the median of the 20 fastest bf16 GEMMs "
               "(in TFLOP/s) of aiconfigurator's SGLang 0.5.10 tables, each over 35,000 shapes.")
    text = "\n".join(out) + "\n"
    if args.out == "-":
        sys.stdout.write(text)
    else:
        open(args.out, "w").write(text)


if __name__ == "__main__":
    main()
