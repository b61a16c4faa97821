# SPDX-License-Identifier: GPL-3.0-or-later
"""The `moe` family's prediction against the fused-MoE sweep (tools/moe/README.md).

python3 tools/moe/model_check.py [data/moe-h200] [--bin build/bin] [--out FILE.md]

For every shape, token count and dtype of the sweep: the measured time of the layer's two GEMMs
(gate-up + down) at the best configuration timed and at the engine's default, against
`perfloom predict --kernels` on the H200 (op `moe`). Reports the absolute percentage error (MAPE:
median and mean) per dtype and token band, the spread of measured / predicted (from which the
family's roofline efficiency in model/predictor.cpp is set), and the error when that scale is
fitted on the other models only (leave one model out).

The held-out fit refits the model's three efficiencies (model/families/moe/moe_model.h: tensor
16-bit, tensor fp8, DRAM) on the other models' layers of 32 tokens and more and scores the held-out
model's layers. It works on the layer's pipe times as `--json` reports them (the two GEMMs' busiest-SM
cycles summed per pipe), so its estimate is the C++ one up to taking the slowest pipe of the sum
rather than of each GEMM; the in-sample line beside it shows that approximation's own error.

Then the learned model (the moe family's XGBoost booster, trained by `perfloom train` on these
layers), leaving one model out the same way: for each model, `perfloom train` on a copy of the
sweeps without that model's rows, and `perfloom predict --kernels` of the held-out layers with those
boosters (PERFLOOM_RESOURCES pointing at a copy of the resources with the new models). The
learned model predicts the best configuration (the time it is trained on); fp8_block layers, which
it does not train on, are left out of its rows.
"""
import argparse
import gzip
import collections
import csv
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import analyze  # noqa: E402

DTYPE = {"bf16": "bf16", "fp8": "fp8e4m3", "fp8_block": "fp8e4m3"}


def measured_layers(rows):
    pts = collections.defaultdict(lambda: {"gate_up": [], "down": []})
    meta = {}
    for r in rows:
        if r["kernel"] in ("gate_up", "down") and r["status"] in ("ok", "capped") and r["time_us"]:
            key = (r["model"], int(r["tokens"]), r["dtype"])
            pts[key][r["kernel"]].append(r)
            meta[key] = (int(r["E"]), int(r["topk"]), int(r["H"]), int(r["I"]))
    out = {}
    for key, k in pts.items():
        if not k["gate_up"] or not k["down"]:
            continue
        best = sum(min(float(r["time_us"]) for r in k[g]) for g in ("gate_up", "down"))
        dflt = [next((float(r["time_us"]) for r in k[g] if r["engine_default"] == "1"), None) for g in ("gate_up", "down")]
        out[key] = dict(best=best, default=None if None in dflt else sum(dflt), shape=meta[key])
    return out


def predict(points, binary, env=None):
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "moe.csv")
        keys = sorted(points)
        with open(src, "w") as f:
            f.write("op,dtype,T,E,topk,H,I,key\n")
            for i, (model, T, mode) in enumerate(keys):
                E, topk, H, I = points[(model, T, mode)]["shape"]
                f.write(f"moe,{DTYPE[mode]},{T},{E},{topk},{H},{I},{i}\n")
        res = subprocess.run([os.path.join(binary, "perfloom"), "predict", "--kernels", src, "--gpu", "h200", "--json"],
                             capture_output=True, text=True, check=True, env=env)
        preds = json.loads(res.stdout)["predictions"]
    for p in preds:
        points[keys[int(p["key"])]].update(pred=float(p["pred_us"]), ceiling=float(p["ceiling_us"]),
                                           pipes={x["name"]: x["busy_us"] for x in p["pipes"]}, method=p["method"])


# The layer's fixed cost in the estimate: two GEMMs' fill and epilogue (kGemmFixedCycles at the
# H200's 1.98 GHz boost) and two launches (the H200's 1 us launch floor).
FIXED_US = 2 * 5000 / 1.98e9 * 1e6 + 2 * 1.0
GRID = [x / 100 for x in range(20, 101, 2)]


def approx_estimate(p, eff16, eff8, effd, mode):
    q = p["pipes"]
    et = eff16 if mode == "bf16" else eff8
    return max(q["tensor"] / et, q["dram"] / effd, q["l2"], q["smem"]) + FIXED_US


def fit(points):
    """The efficiencies with the least median error over these points of 32 tokens and more."""
    def med(pts, f):
        return statistics.median(ape(f(p), p["best"]) for p in pts)
    p16 = [p for (m, T, mode), p in points if T >= 32 and mode == "bf16"]
    p8 = [p for (m, T, mode), p in points if T >= 32 and mode != "bf16"]
    _, e16, ed = min((med(p16, lambda p: approx_estimate(p, a, a, d, "bf16")), a, d) for a in GRID for d in GRID)
    _, e8 = min((med(p8, lambda p: approx_estimate(p, e16, a, ed, "fp8")), a) for a in GRID)
    return e16, e8, ed


def ape(pred, meas):
    return abs(pred - meas) / meas


def band(T):
    return "T<=16" if T <= 16 else ("T 32-512" if T <= 512 else "T>=1024")


def without_model(folder, held, out_folder):
    """Copies of the sweeps of `folder` without the rows of model `held` (and its TP splits)."""
    os.makedirs(out_folder)
    for name in sorted(os.listdir(folder)):
        if not name.endswith((".csv", ".csv.gz")):
            continue
        opener = gzip.open if name.endswith(".gz") else open
        with opener(os.path.join(folder, name), "rt") as f, open(os.path.join(out_folder, name.removesuffix(".gz")),
                                                                 "w") as out:
            for line in f:
                if line.startswith("#") or line.split(",", 1)[0].split("/")[0] != held:
                    out.write(line)


def learned_leave_one_model_out(folder, binary, pts, models):
    """The moe booster's error on each model's layers when trained without that model."""
    held_err = collections.defaultdict(list)
    src_res = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "resources"))
    env = dict(os.environ, OMP_WAIT_POLICY="passive")
    for held in models:
        with tempfile.TemporaryDirectory() as d:
            without_model(folder, held, os.path.join(d, "data", "moe"))
            res = os.path.join(d, "resources")
            os.makedirs(res)
            for name in os.listdir(src_res):
                if name != "models":
                    os.symlink(os.path.join(src_res, name), os.path.join(res, name))
            subprocess.run([os.path.join(binary, "perfloom"), "train", "--data", os.path.join(d, "data"), "--out",
                            os.path.join(res, "models")], capture_output=True, text=True, check=True, env=env)
            sub = {k: dict(shape=p["shape"], best=p["best"]) for k, p in pts.items()
                   if k[0].split("/")[0] == held and k[2] != "fp8_block"}
            predict(sub, binary, dict(env, PERFLOOM_RESOURCES=res))
            for (m, T, mode), p in sub.items():
                if not p["method"].startswith("xgboost"):
                    raise SystemExit(f"held out {held}: predicted by {p['method']}, not the learned model")
                for g in ((mode, band(T)), (mode, "all"), ("all", band(T)), ("all", "all"), ("held out " + held, "all")):
                    held_err[g].append((ape(p["pred"], p["best"]), p["best"] / p["pred"]))
    return held_err


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("folder", nargs="?", default="data/moe-h200")
    ap.add_argument("--bin", default="build/bin")
    ap.add_argument("--out")
    ap.add_argument("--no-learned", action="store_true", help="skip the learned model's leave-one-model-out")
    args = ap.parse_args()
    pts = measured_layers(analyze.read_rows(args.folder))
    predict(pts, args.bin)
    lines = [f"{len(pts)} measured layers (shape x tokens x dtype), H200, `perfloom predict --kernels` op moe", ""]
    lines.append("| target | dtype | band | n | MAPE median | MAPE mean | measured/pred p10 | p50 | p90 | under ceiling |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|")
    for target in ("best", "default"):
        groups = collections.defaultdict(list)
        for (model, T, mode), p in pts.items():
            if p[target] is None:
                continue
            for g in ((mode, band(T)), (mode, "all"), ("all", "all")):
                groups[g].append((p["pred"], p[target], p["ceiling"]))
        for (mode, b), v in sorted(groups.items()):
            errs = [ape(pr, m) for pr, m, _ in v]
            ratio = sorted(m / pr for pr, m, _ in v)
            under = sum(m < c for _, m, c in v)
            lines.append(f"| {target} | {mode} | {b} | {len(v)} | {statistics.median(errs):.1%} | "
                         f"{statistics.mean(errs):.1%} | {analyze.pct(ratio, 0.1):.2f} | {statistics.median(ratio):.2f} | "
                         f"{analyze.pct(ratio, 0.9):.2f} | {under} |")
    # Leave one model out: the efficiencies refitted on the other models (their TP splits with them).
    base = lambda m: m.split("/")[0]  # noqa: E731
    models = sorted({base(k[0]) for k in pts})
    held_err = collections.defaultdict(list)
    in_err = collections.defaultdict(list)
    e_all = fit(list(pts.items()))
    for held in models:
        e = fit([(k, p) for k, p in pts.items() if base(k[0]) != held])
        for (m, T, mode), p in pts.items():
            if base(m) != held:
                continue
            for b in (band(T), "all"):
                held_err[b].append(ape(approx_estimate(p, *e, mode), p["best"]))
                in_err[b].append(ape(approx_estimate(p, *e_all, mode), p["best"]))
        lines.append(f"- held out {held}: efficiencies refitted on the others (tensor 16-bit, tensor fp8, DRAM) = {e}")
    lines.append("")
    lines.append(f"Leave one model out ({len(models)} models), best configuration, efficiencies fitted on all: {e_all}")
    lines.append("")
    lines.append("| band | n | held-out MAPE median | mean | in-sample (same approximation) median | mean |")
    lines.append("|---|---|---|---|---|---|")
    for b in ("T<=16", "T 32-512", "T>=1024", "all"):
        h, i = held_err[b], in_err[b]
        lines.append(f"| {b} | {len(h)} | {statistics.median(h):.1%} | {statistics.mean(h):.1%} | "
                     f"{statistics.median(i):.1%} | {statistics.mean(i):.1%} |")
    if not args.no_learned:
        held = learned_leave_one_model_out(args.folder, args.bin, pts, models)
        lines.append("")
        lines.append(f"The learned model (moe booster), leave one model out ({len(models)} models: trained without the "
                     "model's layers), best configuration, bf16 and per-tensor fp8:")
        lines.append("")
        lines.append("| dtype | band | n | held-out MAPE median | mean | measured/pred p10 | p50 | p90 |")
        lines.append("|---|---|---|---|---|---|---|---|")
        for (mode, b), v in sorted(held.items()):
            errs = [e for e, _ in v]
            ratio = sorted(r for _, r in v)
            lines.append(f"| {mode} | {b} | {len(v)} | {statistics.median(errs):.1%} | {statistics.mean(errs):.1%} | "
                         f"{analyze.pct(ratio, 0.1):.2f} | {statistics.median(ratio):.2f} | {analyze.pct(ratio, 0.9):.2f} |")
    text = "\n".join(lines) + "\n"
    if args.out:
        open(args.out, "w").write(text)
    print(text)


if __name__ == "__main__":
    main()
