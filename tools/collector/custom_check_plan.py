#!/usr/bin/env python3
"""The custom-option check's plan (bench/results/custom_check/, session 31): the table path's first
choice at the first N shapes of data/GPU/variants_test_plan.csv.gz, once per custom option the
--variants run timed it with, each with that option in the plan's cublaslt_custom column. Measured by
`run_plan_on_gpu.sh --plan custom_check` (the plan copied to data/GPU/custom_check_plan.csv.gz),
compared with the --variants run by bench/results/custom_check/check.py.

    custom_check_plan.py GPU N OUT.csv
"""
import csv, gzip, re, sys
from collections import defaultdict
gpu = sys.argv[1]; n = int(sys.argv[2]); out_path = sys.argv[3]
def lines(p):
    with gzip.open(p, 'rt') as f:
        for l in f:
            if not l.startswith('#'): yield l
opts = defaultdict(set)
for r in csv.DictReader(lines(f'data/{gpu}/variants_test.csv.gz')):
    m = re.match(r'plan:(\S+) .* variant=c(\d+)/s\d+', r['source'])
    if m: opts[(r['dtype'], r['M'], r['N'], r['K'], m.group(1))].add(int(m.group(2)))
plan = list(csv.DictReader(lines(f'data/{gpu}/variants_test_plan.csv.gz')))
fields = list(plan[0].keys()) + ['cublaslt_custom']
out = csv.DictWriter(open(out_path, 'w', newline=''), fieldnames=fields)
out.writeheader(); shapes = []; rows = 0
for r in plan:
    if not any(t.strip() == 'table 1' for t in r['why'].split(';')): continue
    key = (r['dtype'], r['M'], r['N'], r['K'], r['config'])
    if key not in opts or int(r['heuristic_rank'] or 0) > 0: continue
    if len(shapes) >= n and key[:4] not in shapes: continue
    if key[:4] not in shapes: shapes.append(key[:4])
    for c in sorted(opts[key]):
        w = dict(r); w['cublaslt_custom'] = c; w['why'] = f'table 1 custom {c}'; out.writerow(w); rows += 1
print(len(shapes), 'shapes', rows, 'rows')
