# SPDX-License-Identifier: GPL-3.0-or-later
"""`perfloom tune --moe` against the fused-MoE sweep (tools/moe/README.md), held out one model at a time.

python3 tools/moe/tune_check.py [data/moe-h200] [--bin build/bin] [--out FILE.md]

For every shape and dtype of the sweep: the moe family's three fitted fractions (tensor 16-bit,
tensor fp8, DRAM; model/families/moe/moe_model.h) are refitted on the other models' layers
(model_check.py's fit: the held-out model and its TP splits left out), then
`perfloom tune --moe E,N,H,topk --dtype D --gpu h200 --tokens <the sweep's> --moe-efficiency ... --json`
ranks the whole engines' space per token count. The sweep timed 43 configurations of that space, so
the choice is the first of the ranking that the sweep timed (both GEMMs): the ranking restricted to
the timed pool. Its measured layer time (gate-up + down) is compared with the engine's default
configuration (`engine_default=1`) and with the fastest configuration timed. Reports per dtype and
token band: default / chosen (median, p10, p90, max), chosen / best, and how often the choice is
within 3% of the best; and the same with the shipped (all-data) fractions.
"""
import argparse
import collections
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import analyze  # noqa: E402
import model_check  # noqa: E402

CFG = analyze.CFG
TUNE_DTYPE = {"bf16": "bf16", "fp8": "fp8", "fp8_block": "fp8-block"}


def measured(rows):
    """(model, dtype) -> {tokens: {config: layer us}}, defaults {tokens: config}, shapes {model: (E, topk, H, I)}."""
    per = collections.defaultdict(lambda: collections.defaultdict(lambda: collections.defaultdict(dict)))
    default = collections.defaultdict(dict)
    shape = {}
    for r in rows:
        if r["kernel"] not in ("gate_up", "down") or r["status"] not in ("ok", "capped") or not r["time_us"]:
            continue
        cfg = tuple(int(r[c]) for c in CFG)
        T = int(r["tokens"])
        per[(r["model"], r["dtype"])][T][cfg][r["kernel"]] = float(r["time_us"])
        if r["engine_default"] == "1":
            default[(r["model"], r["dtype"])][T] = cfg
        shape[r["model"]] = (int(r["E"]), int(r["topk"]), int(r["H"]), int(r["I"]))
    layers = {}
    for key, by_t in per.items():
        layers[key] = {T: {c: k["gate_up"] + k["down"] for c, k in cfgs.items() if len(k) == 2}
                       for T, cfgs in by_t.items()}
    return layers, default, shape


def tune(binary, shape, dtype, tokens, eff):
    E, topk, H, I = shape
    cmd = [os.path.join(binary, "perfloom"), "tune", "--moe", f"{E},{I},{H},{topk}", "--dtype", TUNE_DTYPE[dtype],
           "--gpu", "h200", "--tokens", ",".join(str(t) for t in tokens), "--top", "100000", "--json"]
    if eff:
        cmd += ["--moe-efficiency", ",".join(f"{x:.4f}" for x in eff)]
    res = subprocess.run(cmd, capture_output=True, text=True, check=True)
    out = {}
    for t in json.loads(res.stdout)["tokens"]:
        out[t["tokens"]] = [(tuple(c[k] for k in CFG), c["pred_us"]) for c in t["configs"]]
    return out


def band(T):
    return "T<=16" if T <= 16 else ("T 32-512" if T <= 512 else "T>=1024")


def table(points, title):
    lines = [f"### {title}", "",
             "| dtype | band | n | default/chosen median | p10 | p90 | max | chosen/best median | p90 | within 3% of best |"
             " default/best median |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    groups = collections.defaultdict(list)
    for p in points:
        for g in ((p["dtype"], band(p["T"])), (p["dtype"], "all")):
            groups[g].append(p)
    for (dt, b), ps in sorted(groups.items(), key=lambda x: (x[0][0], ["T<=16", "T 32-512", "T>=1024", "all"].index(x[0][1]))):
        sp = sorted(p["default"] / p["chosen"] for p in ps)
        cb = sorted(p["chosen"] / p["best"] for p in ps)
        db = [p["default"] / p["best"] for p in ps]
        within = sum(x <= 1.03 for x in cb) / len(cb)
        lines.append(f"| {dt} | {b} | {len(ps)} | {statistics.median(sp):.2f} | {analyze.pct(sp, 0.1):.2f} | "
                     f"{analyze.pct(sp, 0.9):.2f} | {max(sp):.2f} | {statistics.median(cb):.3f} | "
                     f"{analyze.pct(cb, 0.9):.2f} | {within:.0%} | {statistics.median(db):.2f} |")
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("folder", nargs="?", default="data/moe-h200")
    ap.add_argument("--bin", default="build/bin")
    ap.add_argument("--out")
    args = ap.parse_args()
    rows = analyze.read_rows(args.folder)
    layers, default, shape = measured(rows)

    # The fractions refitted without each model (model_check.py's fit on `perfloom predict` pipe times).
    pts = model_check.measured_layers(rows)
    model_check.predict(pts, args.bin)
    base = lambda m: m.split("/")[0]  # noqa: E731
    held_eff = {held: model_check.fit([(k, p) for k, p in pts.items() if base(k[0]) != held])
                for held in sorted({base(k[0]) for k in pts})}

    results = {"held out": [], "shipped": []}
    skipped = 0
    for (model, dtype), by_t in sorted(layers.items()):
        tokens = sorted(T for T in by_t if T in default[(model, dtype)])
        for label, eff in (("held out", held_eff[base(model)]), ("shipped", None)):
            ranked = tune(args.bin, shape[model], dtype, tokens, eff)
            for T in tokens:
                timed = by_t[T]
                d = default[(model, dtype)][T]
                if d not in timed:
                    skipped += 1
                    continue
                chosen = next((c for c, _ in ranked[T] if c in timed), None)
                if chosen is None:
                    skipped += 1
                    continue
                results[label].append(dict(model=model, dtype=dtype, T=T, chosen=timed[chosen],
                                           default=timed[d], best=min(timed.values()), config=chosen))
    lines = [f"`perfloom tune --moe` on the H200 sweep ({args.folder}): {len(results['held out'])} points "
             "(shape x dtype x tokens); the choice is the first configuration of the ranking that the sweep timed.",
             "Layer time = gate-up + down at one configuration, as the engines run it.", ""]
    lines += table(results["held out"], "Held out: the fitted fractions refitted without the shape's model")
    lines += [""] + table(results["shipped"], "Shipped fractions (fitted on all models)") + [""]
    for held, e in held_eff.items():
        lines.append(f"- without {held}: tensor 16-bit, tensor fp8, DRAM = {e}")
    if skipped:
        lines.append(f"- {skipped} points skipped (the default or no ranked configuration timed)")
    top = sorted(results["held out"], key=lambda p: -p["default"] / p["chosen"])[:5]
    lines.append("")
    lines.append("Largest held-out gains over the default: " + "; ".join(
        f"{p['model']} {p['dtype']} T={p['T']} {p['default'] / p['chosen']:.2f}x" for p in top))
    text = "\n".join(lines) + "\n"
    if args.out:
        open(args.out, "w").write(text)
    print(text)


if __name__ == "__main__":
    main()
