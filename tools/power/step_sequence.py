#!/usr/bin/env python3
"""Prefill steps in a row, after idle and with idle gaps between them: the power limit's
dynamics in a serving-like sequence, to check `perfloom simulate --clocks sustained` against.

The fused Llama-3-8B step of tools/step_check/step_bench.py (random bf16 weights, Inductor-fused
elementwise ops, cuDNN attention), one sequence of 4096 new tokens per step. For each gap G in
GAPS_MS: 3 s idle, then STEPS steps, each timed with CUDA events; with G > 0 the host waits for the
step and sleeps G ms before the next (G = 0: queued back to back).

Usage: step_sequence.py OUT_DIR [--quick]
Writes OUT_DIR/step_sequence_<gpu>.csv: gap_ms, step, start_ms (from the first step's start),
duration_us.
"""
import csv
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = sys.argv[1] if len(sys.argv) > 1 else "."
QUICK = "--quick" in sys.argv
sys.argv = [sys.argv[0], OUT, "600", "fused"]  # step_bench reads its variant from the command line
sys.path.insert(0, os.path.join(HERE, "..", "step_check"))
import step_bench as sb  # noqa: E402
import torch  # noqa: E402

TOKENS = 4096
STEPS = 3 if QUICK else 12
GAPS_MS = [0, 10] if QUICK else [0, 10, 30, 100, 300]
IDLE_S = 0.2 if QUICK else 3.0


def main():
    os.makedirs(OUT, exist_ok=True)
    name = torch.cuda.get_device_name()
    gpu = "h200" if "H200" in name else ("h100" if "H100" in name else name.replace(" ", "_").lower())
    sb.probe_sdpa()
    with open(os.path.join(sb.CFG_DIR, "llama-3-8b.json")) as f:
        m = sb.Model("llama-3-8b", json.load(f))
    tokens = torch.randint(0, m.V, (TOKENS,), device=sb.dev)
    rows = []
    with torch.inference_mode():
        step = lambda: m.forward(tokens, 1, TOKENS, 0, False)
        for _ in range(5):  # compile and warm up
            step()
        torch.cuda.synchronize()
        for gap in GAPS_MS:
            time.sleep(IDLE_S)
            ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(STEPS)]
            for s, e in ev:
                s.record()
                step()
                e.record()
                if gap > 0:
                    e.synchronize()
                    time.sleep(gap / 1e3)
            torch.cuda.synchronize()
            first = ev[0][0]
            for i, (s, e) in enumerate(ev):
                rows.append([gap, i, round(first.elapsed_time(s), 3), round(s.elapsed_time(e) * 1e3, 1)])
            durs = [r[3] for r in rows[-STEPS:]]
            sb.log(f"gap {gap} ms: " + " ".join(f"{d / 1e3:.1f}" for d in durs) + " ms")
    path = os.path.join(OUT, f"step_sequence_{gpu}.csv")
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["gap_ms", "step", "start_ms", "duration_us"])
        w.writerows(rows)
    sb.log("wrote", path)


if __name__ == "__main__":
    main()
