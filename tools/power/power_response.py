#!/usr/bin/env python3
"""How fast a GPU reaches and leaves its power-limited state: the time constant of the
sustained-power model (model/power.h) in a serving simulation, where steps come with idle gaps.

ramp:     after IDLE s idle, bf16 GEMMs (M x 28672 x 4096, M = 4096: about 1.2 ms each at burst
          speed) back to back for RAMP s, each timed with CUDA events: how the GEMM's time grows
          from its burst value to its sustained value.
recovery: after SETTLE s of GEMMs back to back, the GPU idles GAP ms, then the next 3 GEMMs are
          timed: how much of the slowdown is left after a gap.
First-order lags fitted to both (response_fit.py) give the rise and fall times that
merge_into_calibration.py puts into the calibration file.

Usage: power_response.py OUT_DIR [--quick]
Writes OUT_DIR/power_response_<gpu>.json (schema perfloom-power-response/1).
"""
import datetime
import json
import os
import sys
import time

import torch

from response_fit import fit_fall, fit_rise

M, N, K = 4096, 28672, 4096
IDLE, RAMP, SETTLE = 3.0, 1.5, 2.0
GAPS_MS = [2, 5, 10, 20, 50, 100, 200, 500, 1000]


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    quick = "--quick" in sys.argv
    global IDLE, RAMP, SETTLE, GAPS_MS
    if quick:
        IDLE, RAMP, SETTLE, GAPS_MS = 0.2, 0.2, 0.2, [5, 50]
    os.makedirs(out, exist_ok=True)
    dev = torch.device("cuda")
    props = torch.cuda.get_device_properties(dev)
    name = props.name
    gpu = "h200" if "H200" in name else ("h100" if "H100" in name else name.replace(" ", "_").lower())
    a = torch.randn(M, K, device=dev, dtype=torch.bfloat16)
    w = [torch.randn(N, K, device=dev, dtype=torch.bfloat16) for _ in range(2)]
    c = torch.empty(M, N, device=dev, dtype=torch.bfloat16)
    for i in range(5):
        torch.mm(a, w[i % 2].t(), out=c)
    torch.cuda.synchronize()

    def timed(n, start_index=0):
        ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
        for i, (s, e) in enumerate(ev):
            s.record()
            torch.mm(a, w[(start_index + i) % 2].t(), out=c)
            e.record()
        torch.cuda.synchronize()
        first = ev[0][0]
        return [(first.elapsed_time(s) * 1e3, s.elapsed_time(e) * 1e3) for s, e in ev]  # (start us, duration us)

    time.sleep(IDLE)
    n_ramp = max(20, int(RAMP / 1.2e-3))
    ramp = timed(n_ramp)
    burst = sorted(d for _, d in ramp[:5])[2]
    sustained = sorted(d for _, d in ramp[-max(5, n_ramp // 10):])[max(5, n_ramp // 10) // 2]
    f_s = sustained / burst
    recovery = []
    for gap in GAPS_MS:
        t_end = time.time() + SETTLE
        i = 0
        while time.time() < t_end:
            for _ in range(50):
                torch.mm(a, w[i % 2].t(), out=c)
                i += 1
            torch.cuda.synchronize()
        time.sleep(gap / 1e3)
        after = timed(3, i)
        recovery.append({"gap_ms": gap, "gemm_us": [round(d, 1) for _, d in after],
                         "factor_first": round(after[0][1] / burst, 4)})
        print(json.dumps(recovery[-1]), flush=True)
    doc = {
        "schema": "perfloom-power-response/1", "gpu_name": name, "sm_count": props.multi_processor_count,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "probe": "tools/power/power_response.py" + (" --quick" if quick else ""),
        "gemm": {"M": M, "N": N, "K": K, "dtype": "bf16"},
        "burst_us": round(burst, 1), "sustained_us": round(sustained, 1), "sustained_factor": round(f_s, 4),
        "rise_ms": fit_rise(ramp, burst, sustained),
        "fall_ms": fit_fall(recovery, burst, sustained),
        "ramp": [[round(t, 1), round(d, 1)] for t, d in ramp],
        "recovery": recovery,
    }
    path = os.path.join(out, f"power_response_{gpu}.json")
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"burst {burst:.1f} us, sustained {sustained:.1f} us (x{f_s:.3f}), rise {doc['rise_ms']} ms, "
          f"fall {doc['fall_ms']} ms")
    print("wrote", path)


if __name__ == "__main__":
    main()
