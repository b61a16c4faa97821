#!/usr/bin/env python3
"""Puts a sustained-power probe's levels into a calibration file (model/power.h).

Usage: merge_into_calibration.py CALIBRATION.json SUSTAINED_POWER.json [POWER_RESPONSE.json]
                                 [--power-limit-w W]

The files must come from the same kind of GPU (same driver name and SM count). The calibration
gains (or has replaced) its "sustained_power" block: power_probe.py's method, date, power limit and
levels, and with power_response.py's file the rise and fall times of the power limit (fitted by
response_fit.py from its raw ramp and recovery data); everything else in it is kept as it was.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from response_fit import fit_fall, fit_rise  # noqa: E402


def main():
    args = sys.argv[1:]
    limit = None
    if "--power-limit-w" in args:
        i = args.index("--power-limit-w")
        limit = float(args[i + 1])
        del args[i:i + 2]
    if len(args) not in (2, 3):
        sys.exit(__doc__)
    cal_path, power_path = args[0], args[1]
    with open(cal_path) as f:
        cal = json.load(f)

    def load(path, schema):
        with open(path) as f:
            doc = json.load(f)
        if doc.get("schema") != schema:
            sys.exit(f"{path}: schema must be {schema} (got {doc.get('schema')!r})")
        for key in ("gpu_name", "sm_count"):
            if cal.get(key) != doc.get(key):
                sys.exit(f"{path}: {key} is {doc.get(key)!r}, but {cal_path} has {cal.get(key)!r}: another GPU")
        return doc

    power = load(power_path, "perfloom-sustained-power/1")
    limit = limit if limit is not None else power.get("power_limit_w")
    block = {"probe": power["probe"], "date": power["date"], "method": power["method"]}
    if limit:
        block["power_limit_w"] = limit
    keep = ("label", "M", "duty", "tensor_tflops", "dram_gb_s", "gemm_factor", "memory_factor", "sm_clock_mhz", "power_w")
    block["levels"] = [{k: lv[k] for k in keep if k in lv and lv[k] is not None} for lv in power["levels"]]
    if len(args) == 3:
        resp = load(args[2], "perfloom-power-response/1")
        block["rise_ms"] = fit_rise(resp["ramp"], resp["burst_us"], resp["sustained_us"])
        block["fall_ms"] = fit_fall(resp["recovery"], resp["burst_us"], resp["sustained_us"])
        block["response_probe"] = f"{resp['probe']}, {resp['date']}"
    cal["sustained_power"] = block
    with open(cal_path, "w") as f:
        json.dump(cal, f, indent=2)
        f.write("\n")
    print(f"{cal_path}: sustained_power with {len(block['levels'])} levels from {power_path}")


if __name__ == "__main__":
    main()
