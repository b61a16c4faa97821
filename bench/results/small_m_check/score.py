"""Score the small-M check: tables fitted without and with the decode-shape sweeps, timed side by side.

    python3 bench/results/small_m_check/score.py bench/results/small_m_check/GPU.csv.gz

The timed plan holds, per GEMM, `perfloom tune`'s first three with the tables before the small-M sweeps
(`old K`) and with them (`tune K`), each with its named custom option, and cuBLASLt's first 8
heuristic results, each timed 3 times (median). Within 3% of the fastest of everything timed at the shape.
"""
import collections, csv, gzip, math, re, statistics, sys

rows = csv.DictReader(l for l in gzip.open(sys.argv[1], 'rt') if not l.startswith('#'))
lat = collections.defaultdict(list)
for r in rows:
    shape = (r['dtype'], int(r['M']), int(r['N']), int(r['K']))
    m = re.search(r' (old|tune) (\d)', r['source'])
    key = '%s%s' % (m.group(1), m.group(2)) if m else 'h%s' % r['heuristic_rank']
    lat[(shape, key)].append(float(r['latency_us']))
med = {k: statistics.median(v) for k, v in lat.items()}
by = collections.defaultdict(list)
for s in sorted({k[0] for k in med}):
    g = lambda k: med.get((s, k))
    old = [g('old%d' % i) for i in (1, 2, 3) if g('old%d' % i)]
    new = [g('tune%d' % i) for i in (1, 2, 3) if g('tune%d' % i)]
    heur = [g('h%d' % i) for i in range(1, 9) if g('h%d' % i)]
    if not old or not new or not g('h1'):
        continue
    best = min(old + new + heur)
    x = (old[0], min(old), new[0], min(new), g('h1'), min(heur), best)
    by[s[0]].append(x)
    by['all'].append(x)
names = ['first choice, tables before', 'fastest of its 3, before', 'first choice, with the small-M sweeps',
         'fastest of its 3, with', "cuBLASLt's default", "fastest of cuBLASLt's 8"]
print('| within 3% of the fastest timed | ' + ' | '.join('%s (%d)' % (k, len(v)) for k, v in by.items()) + ' |')
print('|---' * (len(by) + 1) + '|')
for i, n in enumerate(names):
    print('| %s | ' % n + ' | '.join('%d (%.1f%%)' % (sum(x[i] <= 1.03 * x[6] for x in v), 100 * sum(x[i] <= 1.03 * x[6] for x in v) / len(v))
                                     for v in by.values()) + ' |')
v = by['all']
gm = lambda i: math.exp(sum(math.log(x[4] / x[i]) for x in v) / len(v))
print('speedup over the default (geomean): first choice before %.3f, with %.3f; fastest of 3 before %.3f, with %.3f'
      % (gm(0), gm(2), gm(1), gm(3)))
