#!/usr/bin/env python3
"""The kernel-variant experiment's plan (bench/results/tuner_eval.md, section *Session 31*).

From a GPU's re-measurement plan and its lease (data/<gpu>/confirm_plan.csv.gz and
confirm.csv.gz), pick SHAPES held-out shapes at random (seeded) and write, per shape, the plan rows
of the table path's first choice (`table 1`: what `perfloom tune` answers), the exhaustive
search's answer (`measured 1`: the sweep's fastest configuration) and the lease's fastest
configuration, each once. `perfloom-collect --sweep plan --variants` then times each of them with
every custom option and CTA swizzle cuBLASLt accepts.

    variants_plan.py GPU_DIR SHAPES SEED OUT.csv [EXCLUDE_PLAN.csv.gz] [--top3] [--also PLAN.csv TAG]

EXCLUDE_PLAN: the shapes of an earlier plan are left out (a test set for a model fitted on them).
--top3: the table path's second and third choices too (`table 2`, `table 3`: `perfloom tune --top 3`).
--also PLAN.csv TAG: at the same shapes, the table path's choices (`table 1`, with --top3 also 2 and 3)
of another re-measurement plan (`perfloom-tuner-eval --confirm-plan` of another fit), tagged `TAG 1`
to `TAG 3` (joined to the row of the same configuration where there is one): two fits' answers timed
side by side on one lease (session 32: `--also .../confirm_plan.csv joint`).
"""
import csv, gzip, random, statistics, sys
from collections import defaultdict


def lines(path):
    with gzip.open(path, "rt") as f:
        for line in f:
            if not line.startswith("#"):
                yield line


def main():
    argv = sys.argv[1:]
    also, also_tag = None, None
    if "--also" in argv:
        i = argv.index("--also")
        also, also_tag = argv[i + 1], argv[i + 2]
        del argv[i:i + 3]
    args = [a for a in argv if a != "--top3"]
    wanted = ["table 1", "table 2", "table 3"] if "--top3" in argv else ["table 1"]
    gpu_dir, n_shapes, seed, out = args[0], int(args[1]), int(args[2]), args[3]
    exclude = set()
    if len(args) > 4:
        exclude = {(r["dtype"], r["M"], r["N"], r["K"]) for r in csv.DictReader(lines(args[4]))}
    plan = list(csv.DictReader(lines(f"{gpu_dir}/confirm_plan.csv.gz")))
    fields = list(plan[0].keys())
    by_shape = defaultdict(list)
    for r in plan:
        by_shape[(r["dtype"], r["M"], r["N"], r["K"])].append(r)
    # The lease: median per (shape, config) over its repetitions; its fastest plan configuration.
    times = defaultdict(list)
    for r in csv.DictReader(lines(f"{gpu_dir}/confirm.csv.gz")):
        src = r["source"]
        if not src.startswith("plan:") or src.startswith("plan:heuristic"):
            continue
        cfg = src[len("plan:"):].split(" ", 1)[0]
        times[(r["dtype"], r["M"], r["N"], r["K"], cfg)].append(float(r["latency_us"]))
    also_rows = defaultdict(list)  # shape -> the other plan's rows, their table tags renamed
    if also:
        opener = gzip.open if also.endswith(".gz") else open
        with opener(also, "rt") as f:
            for r in csv.DictReader(l for l in f if not l.startswith("#")):
                tags = [t.strip() for t in r["why"].split(";")]
                mine = [also_tag + t[len("table"):] for t in tags if t in wanted]
                if mine:
                    r["why"] = "; ".join(mine)
                    also_rows[(r["dtype"], r["M"], r["N"], r["K"])].append(r)
    fastest = {}
    for (dt, m, n, k, cfg), t in times.items():
        med = statistics.median(t)
        key = (dt, m, n, k)
        if key not in fastest or med < fastest[key][0]:
            fastest[key] = (med, cfg)
    shapes = sorted(k for k, rows in by_shape.items()
                    if k not in exclude and any(t.strip() == "table 1" for r in rows for t in r["why"].split(";")))
    random.Random(seed).shuffle(shapes)
    picked = 0
    with open(out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for key in shapes:
            if picked == n_shapes:
                break
            rows = by_shape[key]
            want = []
            for r in rows:
                tags = [t.strip() for t in r["why"].split(";")]
                if any(t in tags for t in wanted) or "measured 1" in tags or (key in fastest and r["config"] == fastest[key][1]):
                    want.append(r)
            out_rows = {}
            for r in want:
                out_rows.setdefault(r["config"], dict(r))
            for r in also_rows.get(key, []):
                if r["config"] in out_rows:
                    out_rows[r["config"]]["why"] += "; " + r["why"]
                else:
                    out_rows[r["config"]] = {k: r.get(k, "") for k in fields}
            for r in out_rows.values():
                w.writerow(r)
            picked += 1
    print(f"{out}: {picked} shapes")


if __name__ == "__main__":
    main()
