#!/usr/bin/env python3
"""How often the shipped tuner table's first choice is within 3% of the fastest configuration timed.

    python3 tools/tuner_check_score.py LABEL CHECK.csv.gz [MORE.csv.gz ...]

Each CHECK file is a collector plan run (tools/collector/run_plan_on_gpu.sh) of a plan written by
`perfloom-tuner-eval --tables-check-plan`: per GEMM the first three configurations of two tables,
labelled in the `source` column ("plan:CONFIG LABEL RANK ..."), beside cuBLASLt's first 8 heuristic
results, each timed several times (the median counts). LABEL names the table to score (the shipped
one). The reference is the fastest of everything timed at the GEMM (both tables' first three and
cuBLASLt's 8). A first choice cuBLASLt refused counts as a miss. Prints a Markdown table, one row per M band.
"""
import collections, csv, gzip, math, re, statistics, sys

if len(sys.argv) < 3:
    sys.exit(__doc__)
label, paths = sys.argv[1], sys.argv[2:]
lat = collections.defaultdict(list)
for fi, path in enumerate(paths):
    for r in csv.DictReader(l for l in gzip.open(path, 'rt') if not l.startswith('#')):
        shape = (r['dtype'], int(r['M']), int(r['N']), int(r['K']), fi)
        m = re.search(r'^plan:\S+ (\w+) (\d)', r['source'])
        key = (m.group(1), int(m.group(2))) if m else ('heuristic', int(r['heuristic_rank']))
        lat[(shape, key)].append(float(r['latency_us']))
med = collections.defaultdict(dict)
for (shape, key), v in lat.items():
    med[shape][key] = statistics.median(v)

bands = collections.OrderedDict([('M <= 96', lambda M: M <= 96), ('M 97-1,000', lambda M: 96 < M <= 1000),
                                 ('M > 1,000', lambda M: M > 1000), ('all', lambda M: True)])
print('| GEMMs (%s) | timed | first choice within 3%% | fastest of its first 3 within 3%% | '
      "cuBLASLt's default within 3%% | first choice's speedup over the default (geomean) |" % label)
print('|---|---|---|---|---|---|')
for band, inside in bands.items():
    n = first = top3 = default = 0
    logs = []
    for shape, m in med.items():
        if ('heuristic', 1) not in m or not inside(shape[1]):
            continue  # cuBLASLt's default is the reference every GEMM needs
        best = min(m.values())
        n += 1
        mine = [m[(label, i)] for i in (1, 2, 3) if (label, i) in m]
        first += (label, 1) in m and m[(label, 1)] <= 1.03 * best
        top3 += bool(mine) and min(mine) <= 1.03 * best
        default += m[('heuristic', 1)] <= 1.03 * best
        if (label, 1) in m:
            logs.append(math.log(m[('heuristic', 1)] / m[(label, 1)]))
    if n:
        print('| %s | %d | %.1f%% | %.1f%% | %.1f%% | %.3f |' % (band, n, 100 * first / n, 100 * top3 / n,
                                                               100 * default / n, math.exp(sum(logs) / len(logs))))
