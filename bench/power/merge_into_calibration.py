#!/usr/bin/env python3
"""Puts a sustained-power probe's levels into a calibration file (model/power.h).

Usage: merge_into_calibration.py CALIBRATION.json SUSTAINED_POWER.json [--power-limit-w W]

Both files must come from the same kind of GPU (same driver name and SM count). The calibration
gains (or has replaced) its "sustained_power" block: the probe's method, date, power limit and
levels; everything else in it is kept as it was.
"""
import json
import sys


def main():
    args = sys.argv[1:]
    limit = None
    if "--power-limit-w" in args:
        i = args.index("--power-limit-w")
        limit = float(args[i + 1])
        del args[i:i + 2]
    if len(args) != 2:
        sys.exit(__doc__)
    cal_path, power_path = args
    with open(cal_path) as f:
        cal = json.load(f)
    with open(power_path) as f:
        power = json.load(f)
    if power.get("schema") != "perfloom-sustained-power/1":
        sys.exit(f"{power_path}: schema must be perfloom-sustained-power/1 (got {power.get('schema')!r})")
    for key in ("gpu_name", "sm_count"):
        if cal.get(key) != power.get(key):
            sys.exit(f"{power_path}: {key} is {power.get(key)!r}, but {cal_path} has {cal.get(key)!r}: another GPU")
    limit = limit if limit is not None else power.get("power_limit_w")
    block = {"probe": power["probe"], "date": power["date"], "method": power["method"]}
    if limit:
        block["power_limit_w"] = limit
    keep = ("label", "M", "duty", "tensor_tflops", "dram_gb_s", "gemm_factor", "memory_factor", "sm_clock_mhz", "power_w")
    block["levels"] = [{k: lv[k] for k in keep if k in lv and lv[k] is not None} for lv in power["levels"]]
    cal["sustained_power"] = block
    with open(cal_path, "w") as f:
        json.dump(cal, f, indent=2)
        f.write("\n")
    print(f"{cal_path}: sustained_power with {len(block['levels'])} levels from {power_path}")


if __name__ == "__main__":
    main()
