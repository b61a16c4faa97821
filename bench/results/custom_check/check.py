#!/usr/bin/env python3
"""Compares the custom-option check (a plan whose cublaslt_custom options the collector set,
GemmProblem::with_custom) with the --variants run of the same configurations and options.

    check.py VARIANTS_TEST.csv.gz CUSTOM_CHECK.csv.gz
"""
import csv, gzip, re, statistics, sys
from collections import defaultdict
def lines(p):
    with gzip.open(p, 'rt') as f:
        for l in f:
            if not l.startswith('#'): yield l
def label(k):
    k = k.split(' ; ')[0]
    r = 'h' if '_h_' in k else 'v' if '_v_' in k else '?'
    c = 'coop' if ('coopA' in k or 'coopB' in k) else '-'
    return r + c + k[-3:]
def timed(path, option):
    """Per (shape, configuration, option) its latencies and its kernel's variant; `option`: the
    source's pattern that names the option."""
    times, names = defaultdict(list), {}
    for r in csv.DictReader(lines(path)):
        m = re.match(r'plan:(\S+) .* ' + option, r['source'])
        if not m: continue
        k = (r['dtype'], r['M'], r['N'], r['K'], m.group(1), int(m.group(2)))
        times[k].append(float(r['latency_us'])); names[k] = label(r['kernel_name'])
    return times, names
ref, refname = timed(sys.argv[1], r'variant=c(\d+)/s\d+')
got, gotname = timed(sys.argv[2], r'custom=(\d+)')
same = sum(gotname[k] == refname.get(k) for k in got)
ratios = sorted(statistics.median(got[k]) / statistics.median(ref[k]) for k in got if k in ref)
print('points', len(got), 'kernel variant as in the --variants run:', same, 'of', len(got))
n = len(ratios); print('latency custom_check / variants_test (median per point): p10 %.3f median %.3f p90 %.3f' % (ratios[n//10], ratios[n//2], ratios[9*n//10]))
# per option: does the kernel name follow the bits?
bits_ok = 0
for k, name in gotname.items():
    c = k[5]
    exp_r = 'h' if c & 2 else 'v'; exp_o = 'TNT' if c & 1 else 'TNN'; exp_c = 'coop' if c & 4 else '-'
    bits_ok += name == exp_r + exp_c + exp_o
print('kernel name follows the option bits (raster bit 1, coop bit 2, TNT bit 0):', bits_ok, 'of', len(gotname))
