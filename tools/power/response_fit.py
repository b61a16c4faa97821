"""Time constants of a GPU's power-limit response (power_response.py's data; model/power.h).

rise: a first-order lag fitted by least squares to the ramp, slowdown(t) = F - (F - 1) exp(-t / tau),
      t the busy time since the GPU left idle, F the sustained / burst time of the ramp's last tenth.
fall: the same lag on the way back, excess(g) = (F - 1) exp(-g / tau), fitted to the slowdown of the
      second and third GEMM after an idle gap of g ms (the first GEMM after any gap of 2 ms or more
      is 15-50% slower on both GPUs, whatever the gap: the clocks waking up, not the power limit).
Both by a grid search over 0.5 ms to 1 s.
"""
import math

GRID = [x * 0.5 for x in range(1, 2001)]


def fit_rise(ramp, burst_us, sustained_us):
    f_s = sustained_us / burst_us
    pts = [(t / 1e3, d / burst_us) for t, d in ramp]
    return min(GRID, key=lambda tau: sum((f - (f_s - (f_s - 1) * math.exp(-t / tau))) ** 2 for t, f in pts))


def fit_fall(recovery, burst_us, sustained_us):
    e0 = sustained_us / burst_us - 1
    pts = [(r["gap_ms"], sum(r["gemm_us"][1:]) / len(r["gemm_us"][1:]) / burst_us - 1) for r in recovery]
    return min(GRID, key=lambda tau: sum((e - e0 * math.exp(-g / tau)) ** 2 for g, e in pts))
