#!/usr/bin/env python3
"""`perfloom simulate --clocks sustained` against prefill steps measured in a row (step_sequence.py).
Usage: python3 tools/power/compare_sequence.py [--out REPORT.md]: the Markdown report to REPORT.md (default:
stdout), one MAPE line per GPU to stderr. Run from the repo root after building build/bin/perfloom ($PERFLOOM
names another binary).

Each measured sequence (one Llama-3-8B prefill of 4096 tokens per step, after 3 s idle, back to back
or with idle gaps) is replayed as a trace: one request per step, arriving when the measured step
started, at most one sequence and 4096 tokens per step, so the simulator runs the same steps with the
same gaps. Predicted GPU-side step time = the step's duration minus perfloom's host time per step.
Columns: burst clocks; sustained without history (each step at its steady state: `perfloom step
--clocks sustained`, the gap as its host time); sustained in the simulation (the load lagged across
steps and gaps, model/power.h)."""
import argparse, csv, json, os, statistics, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_ap = argparse.ArgumentParser(description="perfloom simulate --clocks sustained against measured step sequences")
_ap.add_argument("--out", help="where the Markdown report goes (default: stdout)")
ARGS = _ap.parse_args()
BIN = os.environ.get("PERFLOOM", os.path.join(ROOT, "build/bin/perfloom"))
TOKENS = 4096


def run(args):
    r = subprocess.run([BIN] + args, cwd=ROOT, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"perfloom {' '.join(args)}: {r.stderr}")
    return r.stdout


def simulate(gpu, starts_ms, clocks, tmp):
    trace = os.path.join(tmp, "trace.csv")
    with open(trace, "w") as f:
        f.write("arrival_s,input_tokens,output_tokens\n")
        for s in starts_ms:
            f.write(f"{s / 1e3:.6f},{TOKENS},1\n")
    out = os.path.join(tmp, "sim.json")
    run(["simulate", "--model", "llama-3-8b", "--gpu", gpu, "--workload", f"trace:{trace}", "--max-num-seqs", "1",
         "--max-num-batched-tokens", str(TOKENS), "--attention-impl", "cudnn", "--no-prefix-caching",
         "--clocks", clocks, "--out", out, "--db", os.path.join(tmp, "db.sqlite")])
    steps = json.load(open(out))["timeline"]
    return [s["duration_ms"] * 1e3 for s in steps]


def host_us(gpu):
    j = json.loads(run(["step", "--model", "llama-3-8b", "--gpu", gpu, "--phase", "prefill", "--batch", "1",
                        "--tokens", str(TOKENS), "--attention-impl", "cudnn", "--json"]))
    return j["host_overhead_us"]


def steady(gpu, gap_ms):
    j = json.loads(run(["step", "--model", "llama-3-8b", "--gpu", gpu, "--phase", "prefill", "--batch", "1",
                        "--tokens", str(TOKENS), "--attention-impl", "cudnn", "--clocks", "sustained",
                        "--host-us", str(gap_ms * 1e3), "--json"]))
    return j["latency_us"] - j["breakdown_us"]["host"]


def pct(m, p):
    return 100.0 * (p - m) / m


out = ["# Power limit across steps: `perfloom simulate --clocks sustained` against measured step sequences", "",
       __doc__.split("\n\n", 1)[1].replace("\n", " "), "",
       "Measured: `tools/power/step_sequence.py` on one H100 SXM and one H200 (2026-11-22), "
       "`data/power/step_sequence_<gpu>.csv`. The limit's rise and fall times come from another probe "
       "(`power_response.py`: rise 110 ms on the H100, 48 ms on the H200; fall 31 and 28 ms).", ""]
summary = []
with tempfile.TemporaryDirectory() as tmp:
    for gpu, gid in (("h100", "h100-sxm"), ("h200", "h200")):
        path = os.path.join(ROOT, f"data/power/step_sequence_{gpu}.csv")
        if not os.path.exists(path):
            continue
        rows = list(csv.DictReader(open(path)))
        host = host_us(gid)
        out += [f"## {gpu.upper()}", "",
                "| idle gap ms | measured ms, steps 1-12 | first step | mean of steps 2-12 | burst | err % (first / rest) | sustained, steady | err % | sustained, simulated | err % |",
                "|---|---|---|---|---|---|---|---|---|---|"]
        for gap in sorted({int(r["gap_ms"]) for r in rows}):
            seq = [r for r in rows if int(r["gap_ms"]) == gap]
            meas = [float(r["duration_us"]) for r in seq]
            starts = [float(r["start_ms"]) for r in seq]
            if gap == 0:
                starts = [0.0] * len(seq)  # all waiting: the simulator runs them back to back
            burst = [d - host for d in simulate(gid, starts, "burst", tmp)]
            lagged = [d - host for d in simulate(gid, starts, "sustained", tmp)]
            st = steady(gid, gap)
            rest_m = statistics.mean(meas[1:])
            rest_l = statistics.mean(lagged[1:])
            e_b = (pct(meas[0], burst[0]), pct(rest_m, statistics.mean(burst[1:])))
            e_s = (pct(meas[0], st), pct(rest_m, st))
            e_l = (pct(meas[0], lagged[0]), pct(rest_m, rest_l))
            out.append(f"| {gap} | " + " ".join(f"{m / 1e3:.1f}" for m in meas) + f" | {meas[0] / 1e3:.1f} | {rest_m / 1e3:.1f} | "
                       f"{burst[0] / 1e3:.1f} | {e_b[0]:+.1f} / {e_b[1]:+.1f} | {st / 1e3:.1f} | {e_s[0]:+.1f} / {e_s[1]:+.1f} | "
                       f"{lagged[0] / 1e3:.1f}, then {rest_l / 1e3:.1f} | {e_l[0]:+.1f} / {e_l[1]:+.1f} |")
            summary.append((gpu, gap, [abs(pct(m, p)) for m, p in zip(meas, burst)],
                            [abs(pct(m, st)) for m in meas], [abs(pct(m, p)) for m, p in zip(meas, lagged)]))
        out.append("")
out += ["## MAPE over every step", "", "| GPU | burst | sustained, steady | sustained, simulated |", "|---|---|---|---|"]
for gpu in ("h100", "h200"):
    s = [x for x in summary if x[0] == gpu]
    if s:
        cols = [statistics.mean(v for x in s for v in x[i]) for i in (2, 3, 4)]
        out.append(f"| {gpu.upper()} | " + " | ".join(f"{c:.1f}%" for c in cols) + " |")
        print(gpu, "MAPE burst %.1f steady %.1f simulated %.1f" % tuple(cols), file=sys.stderr)
out += ["", "Reading. Both ways of using the sustained-power curve beat burst clocks on every GPU, and the "
        "lagged load of `simulate` is not better than taking each step at its own steady state with its gap as "
        "idle time. What neither captures: a lone 4096-token prefill after 100-300 ms of idle (longer than the "
        "limit's fall time) measured 93-95 ms on both GPUs, 7-9% (H100) and 15-17% (H200) above the burst "
        "estimate, close to the fully sustained slowdown; the limit takes hold within 25-75 ms, inside the "
        "step, and the first-order lag (rise 110 ms on the H100, fitted to an oscillating ramp; 48 ms on the "
        "H200) lets the step run near burst. Since feature set v7 (2026-11-22) the burst estimate of these "
        "steps is 3-6% lower (the GEMM model now matches the collector's isolated GEMM timings, which ran "
        "faster than this lease's), so every column here moved down by as much; the step check "
        "(tools/step_check/compare.py), measured back to back on the lease of its own benchmark, is the accuracy "
        "reference. These sequences were measured after the lag was built and are not fitted.", ""]
report = "\n".join(out) + "\n"
if ARGS.out:
    with open(ARGS.out, "w") as f:
        f.write(report)
else:
    sys.stdout.write(report)
