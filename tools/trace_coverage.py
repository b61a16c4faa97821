#!/usr/bin/env python3
"""How much of a real trace the what-if understands: for each trace, the share of its kernel time
whose kernels have a whole shape (so the model predicts them) and, per target GPU, the what-if's
methods, total and interval.

    python3 tools/trace_coverage.py [--bin build/bin] [--gpu h100-sxm,b200] [TRACE...]

Without traces: the ones in tests/data/traces. Runs `perfloom predict --trace` on a scratch
database; prints Markdown.
"""
import argparse
import csv
import glob
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    ap.add_argument("--gpu", default="h100-sxm,b200")
    ap.add_argument("traces", nargs="*")
    a = ap.parse_args()
    traces = a.traces or sorted(glob.glob(os.path.join(ROOT, "tests", "data", "traces", "*.json.gz")))
    if not traces:
        raise SystemExit("no traces")
    t0 = time.time()
    out = ["# Real traces: what the what-if understands", "",
           "Each trace of `tests/data/traces` (torch.profiler with `record_shapes=True`, Hugging Face models with random "
           "weights on one H200; `tests/data/README.md` says how each was recorded) through `perfloom predict --trace "
           f"FILE --gpu {a.gpu}`. *Shaped*: the share of the trace's kernel time whose kernels have a whole shape from "
           "their launching op, so the model predicts them (`scaled`); the rest is scaled by datasheet ratios "
           "(`scaled-spec`) with the wide interval of docs/prediction.md. Kernels replayed from CUDA graphs have no "
           "launching op in a torch.profiler trace.", "",
           "| trace | kernels | kernel time (ms) | shaped | target | predicted (ms) | interval (ms) | methods |",
           "|---|---:|---:|---:|---|---:|---:|---|"]
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "coverage.db")
        for path in traces:
            csv_path = os.path.join(tmp, "out.csv")
            r = subprocess.run([os.path.join(a.bin, "perfloom"), "predict", "--trace", path, "--gpu", a.gpu, "--db", db,
                                "--out", csv_path], capture_output=True, text=True,
                               env=dict(os.environ, OMP_WAIT_POLICY="passive"))
            if r.returncode not in (0, 2):
                raise SystemExit(f"{path}: perfloom predict failed ({r.returncode}): {r.stderr[-2000:]}")
            rows = list(csv.DictReader(open(csv_path)))
            kernels = [row for row in rows if row["row_type"] == "kernel"]
            first_gpu = kernels[0]["gpu"]
            own = [k for k in kernels if k["gpu"] == first_gpu]
            total = sum(float(k["measured_us"] or 0) for k in own)
            shaped = sum(float(k["measured_us"] or 0) for k in own if k["method"] in ("scaled", "model", "measured"))
            name = os.path.basename(path).replace(".json.gz", "")
            for i, tot in enumerate(row for row in rows if row["row_type"] == "total"):
                lead = (f"| {name} | {len(own)} | {total / 1000:.2f} | {100 * shaped / total:.1f}% " if i == 0
                        else "| | | | ")
                out.append(lead + f"| {tot['gpu']} | {float(tot['pred_us']) / 1000:.2f} | "
                           f"{float(tot['lo_us']) / 1000:.2f}-{float(tot['hi_us']) / 1000:.2f} | "
                           f"{tot['method'].replace(';', ', ')} |")
    print("\n".join(out))
    print(f"trace_coverage: {time.time() - t0:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
