#!/usr/bin/env python3
"""Sustained-power probe: how much slower kernels run once the GPU sits at its power limit.

perfloom's kernel models learn from short measurements (10+ repetitions after a warm-up), which
run at the boost clock. A serving step that keeps the tensor cores busy for hundreds of
milliseconds drives the GPU to its power limit, and the SM clock falls (an H100 SXM at 700 W:
1980 -> about 1400 MHz). This probe measures that at several load levels, so that perfloom can
predict a step in its steady state (`perfloom step --clocks sustained`).

A load level repeats one iteration: r bf16 GEMMs M x N x K (N=28672, K=4096: Llama-3-8B's
gate-up projection, weights streamed from DRAM) and one memory-bound copy (64 MiB read + 64 MiB
written); with a duty below 1 the host then sleeps so that the GPU is busy only that fraction of
the wall time. For each level:
  burst      after 2 s idle, the median of the first 10 iterations' GEMM and copy times
  sustained  after 3 s of running, the median over the next 2 s, with the SM clock and power
             sampled every 100 ms (nvidia-smi) and the tensor work averaged over the wall time
gemm_factor = sustained / burst GEMM time, memory_factor = the same for the copy.

Usage: power_probe.py OUT_DIR [--quick]
Writes OUT_DIR/sustained_power_<gpu>.json (schema perfloom-sustained-power/1) and the raw
samples OUT_DIR/power_samples_<gpu>.csv.
"""
import datetime
import json
import os
import subprocess
import sys
import threading
import time

import torch

N, K = 28672, 4096
COPY_BYTES = 64 << 20
GEMM_MS_PER_ITER = 2.0  # r GEMMs per iteration take about this long at burst speed
# (label, M, duty): GEMMs from compute-bound to weight-streaming, then less duty, then no GEMM.
LEVELS = [
    ("m8192", 8192, 1.0), ("m4096", 4096, 1.0), ("m2048", 2048, 1.0), ("m1024", 1024, 1.0),
    ("m512", 512, 1.0), ("m256", 256, 1.0), ("m64", 64, 1.0),
    ("m4096_duty75", 4096, 0.75), ("m4096_duty50", 4096, 0.5), ("m4096_duty25", 4096, 0.25),
    ("m1024_duty50", 1024, 0.5), ("copy_only", 0, 1.0),
]
IDLE_S, SETTLE_S, WINDOW_S = 2.0, 3.0, 2.0


class Sampler:
    """nvidia-smi's SM clock and power every 100 ms, stamped with this process's clock."""

    def __init__(self, path):
        self.samples = []  # (t, clock_mhz, power_w)
        self.out = open(path, "w")
        self.out.write("t_s,sm_clock_mhz,power_w\n")
        field = "power.draw.instant"
        probe = subprocess.run(["nvidia-smi", f"--query-gpu={field}", "--format=csv,noheader,nounits"],
                               capture_output=True, text=True)
        if probe.returncode != 0 or "N/A" in probe.stdout or "not" in probe.stdout.lower():
            field = "power.draw"
        self.field = field
        self.proc = subprocess.Popen(["nvidia-smi", f"--query-gpu=clocks.sm,{field}", "--format=csv,noheader,nounits",
                                      "-lms", "100"], stdout=subprocess.PIPE, text=True, bufsize=1)
        self.t0 = time.time()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            parts = [p.strip() for p in line.split(",")]
            try:
                clock, power = float(parts[0]), float(parts[1])
            except (ValueError, IndexError):
                continue
            t = time.time() - self.t0
            self.samples.append((t, clock, power))
            self.out.write(f"{t:.3f},{clock:.0f},{power:.1f}\n")

    def mean_between(self, a, b):
        s = [x for x in self.samples if a - self.t0 <= x[0] <= b - self.t0]
        if not s:
            return float("nan"), float("nan")
        return sum(x[1] for x in s) / len(s), sum(x[2] for x in s) / len(s)

    def stop(self):
        self.proc.terminate()
        self.out.close()


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if xs else float("nan")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    quick = "--quick" in sys.argv
    global IDLE_S, SETTLE_S, WINDOW_S
    if quick:  # a syntax and plumbing check, not a measurement
        IDLE_S, SETTLE_S, WINDOW_S = 0.2, 0.3, 0.3
    os.makedirs(out, exist_ok=True)
    dev = torch.device("cuda")
    props = torch.cuda.get_device_properties(dev)
    name = props.name
    gpu = "h200" if "H200" in name else ("h100" if "H100" in name else name.replace(" ", "_").lower())
    sampler = Sampler(os.path.join(out, f"power_samples_{gpu}.csv"))

    w = [torch.randn(N, K, device=dev, dtype=torch.bfloat16) for _ in range(2)]  # 2 x 235 MB: no L2 reuse
    src = torch.empty(COPY_BYTES // 2, device=dev, dtype=torch.bfloat16).normal_()
    dst = torch.empty_like(src)
    levels = []
    for label, m, duty in LEVELS:
        a = torch.randn(max(m, 1), K, device=dev, dtype=torch.bfloat16)
        c = torch.empty(max(m, 1), N, device=dev, dtype=torch.bfloat16)
        # GEMMs per iteration: about GEMM_MS_PER_ITER at burst speed
        reps = 0
        if m > 0:
            for i in range(3):
                torch.mm(a, w[i % 2].t(), out=c)
            torch.cuda.synchronize()
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            for i in range(5):
                torch.mm(a, w[i % 2].t(), out=c)
            e.record()
            torch.cuda.synchronize()
            reps = max(1, round(GEMM_MS_PER_ITER / (s.elapsed_time(e) / 5)))

        def iteration(i):
            """Queues one iteration; returns the (start, end) events of its first GEMM and of its copy."""
            ev = []
            if reps:
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                torch.mm(a, w[i % 2].t(), out=c)  # the timed GEMM
                e.record()
                ev.append((s, e))
                for j in range(1, reps):
                    torch.mm(a, w[(i + j) % 2].t(), out=c)
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            dst.copy_(src)
            e.record()
            ev.append((s, e))
            return ev

        def run_for(seconds, first_n=None):
            """Iterations for `seconds` (or `first_n` of them); per iteration (gemm_us, copy_us) and the wall span."""
            times, pending = [], []
            t_start = time.time()
            i = 0
            while (first_n is None and time.time() - t_start < seconds) or (first_n is not None and i < first_n):
                t_it = time.time()
                pending.append(iteration(i))
                i += 1
                if duty < 1.0:
                    torch.cuda.synchronize()
                    busy = time.time() - t_it
                    time.sleep(busy * (1.0 / duty - 1.0))
                if len(pending) >= 64:
                    torch.cuda.synchronize()
                    times += [[s.elapsed_time(e) * 1000 for s, e in ev] for ev in pending]
                    pending = []
            torch.cuda.synchronize()
            times += [[s.elapsed_time(e) * 1000 for s, e in ev] for ev in pending]
            return times, i, t_start, time.time()

        for i in range(3):  # warm-up: cuBLAS picks its kernel
            iteration(i)
        torch.cuda.synchronize()
        time.sleep(IDLE_S)
        burst, _, _, _ = run_for(0, first_n=10)
        run_for(SETTLE_S)
        sus, iters, ta, tb = run_for(WINDOW_S)
        clock, power = sampler.mean_between(ta, tb)
        gemm_flops = 2.0 * m * N * K * reps * iters
        copy_bytes = 2.0 * COPY_BYTES * iters + (2.0 * (m * K + N * K + m * N) * reps * iters if m else 0.0)
        gb = median([t[0] for t in burst]) if reps else float("nan")
        gs = median([t[0] for t in sus]) if reps else float("nan")
        cb, cs = median([t[-1] for t in burst]), median([t[-1] for t in sus])
        lv = {
            "label": label, "M": m, "N": N if m else 0, "K": K if m else 0, "gemms_per_iteration": reps, "duty": duty,
            "tensor_tflops": round(gemm_flops / (tb - ta) / 1e12, 2),
            "dram_gb_s": round(copy_bytes / (tb - ta) / 1e9, 1),
            "gemm_burst_us": round(gb, 1) if reps else None, "gemm_sustained_us": round(gs, 1) if reps else None,
            "gemm_factor": round(gs / gb, 4) if reps else None,
            "copy_burst_us": round(cb, 1), "copy_sustained_us": round(cs, 1), "memory_factor": round(cs / cb, 4),
            "sm_clock_mhz": round(clock), "power_w": round(power, 1),
        }
        levels.append(lv)
        print(json.dumps(lv), flush=True)
        del a, c
    sampler.stop()
    doc = {
        "schema": "perfloom-sustained-power/1",
        "gpu_name": name, "sm_count": props.multi_processor_count,
        "driver": subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                 capture_output=True, text=True).stdout.strip(),
        "power_field": sampler.field,
        "power_limit_w": float(subprocess.run(["nvidia-smi", "--query-gpu=power.limit", "--format=csv,noheader,nounits"],
                                              capture_output=True, text=True).stdout.strip() or "0"),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "probe": "tools/power/power_probe.py" + (" --quick" if quick else ""),
        "method": f"bf16 GEMM M x {N} x {K} ({GEMM_MS_PER_ITER} ms per iteration at burst speed) + a "
                  f"{COPY_BYTES >> 20} MiB copy per iteration; burst: median of the first 10 iterations after "
                  f"{IDLE_S} s idle; sustained: median over {WINDOW_S} s after {SETTLE_S} s of running",
        "levels": levels,
    }
    path = os.path.join(out, f"sustained_power_{gpu}.json")
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    print("wrote", path)


if __name__ == "__main__":
    main()
