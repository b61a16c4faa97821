"""Score the candidate-set check: `perfloom tune`'s first three from three candidate sets, timed side by side.

    python3 bench/results/candidate_check/score.py bench/results/candidate_check/GPU.csv.gz [MORE.csv.gz ...]

The timed plan (perfloom-tuner-eval --candidate-plan) holds, per GEMM, the first three of each candidate set,
labelled "tune K" (what `perfloom tune` answered before session 34), "near12 K" and "wide K" (or, for the refit
check, "old K" and "refit K": `perfloom tune --plan` with two tables), each with its named custom option,
and cuBLASLt's first 8 heuristic results, each timed 3 times (median). A configuration cuBLASLt refused is
missing; a shape counts where every set's first choice ran. Within 3% of the fastest of everything timed at
the shape. Several files (checks of the same two tables at other GEMMs, say on two GPUs at once) are scored together.

Where two sets list the same configuration (the same plan label and custom option: the same kernel), each label's
repeats are timed and scored apart (the table above); the lines "same configuration pooled" score every label with
the median of all that configuration's repeats at the GEMM instead (6 instead of 3 where both tables chose it), against
the fastest of those pooled medians and cuBLASLt's: one configuration, one latency.
"""
import collections, csv, gzip, math, re, statistics, sys

lat = collections.defaultdict(list)
pooled = collections.defaultdict(list)  # (shape, configuration) -> every repeat, whichever set listed it
config_of = {}                          # (shape, key) -> configuration, for plan rows
for fi, path in enumerate(sys.argv[1:]):
    for r in csv.DictReader(l for l in gzip.open(path, 'rt') if not l.startswith('#')):
        shape = (r['dtype'], int(r['M']), int(r['N']), int(r['K']), fi)
        m = re.search(r'^plan:\S+ (\w+) (\d)', r['source'])
        key = (m.group(1), int(m.group(2))) if m else ('heuristic', int(r['heuristic_rank']))
        lat[(shape, key)].append(float(r['latency_us']))
        config = m.group(0).split()[0] + ' ' + ' '.join(re.findall(r'custom=\d+', r['source'])) if m else key
        config_of[(shape, key)] = config
        pooled[(shape, config)].append(float(r['latency_us']))
med = collections.defaultdict(dict)
for (shape, key), v in lat.items():
    med[shape][key] = statistics.median(v)
order = ['tune', 'near12', 'wide', 'old', 'refit']  # other labels after them
sets = sorted({k[0] for m in med.values() for k in m if k[0] != 'heuristic'},
              key=lambda x: order.index(x) if x in order else len(order))
by = collections.defaultdict(list)
refused = collections.Counter()
for shape, m in sorted(med.items()):
    for s in sets:
        refused[s] += (s, 1) not in m
    if any((s, 1) not in m for s in sets) or ('heuristic', 1) not in m:
        continue
    best = min(m.values())
    x = {s: m[(s, 1)] for s in sets}
    x.update({s + '3': min(v for (k, i), v in m.items() if k == s) for s in sets})
    x['default'] = m[('heuristic', 1)]
    x['heur8'] = min(v for (k, i), v in m.items() if k == 'heuristic')
    x['best'] = best
    pm = {config_of[(shape, k)]: statistics.median(pooled[(shape, config_of[(shape, k)])]) for k in m}
    x['pooled_best'] = min(pm.values())
    x.update({s + '_pooled': pm[config_of[(shape, (s, 1))]] for s in sets})
    by[shape[0]].append(x)
    by['all'].append(x)
    by['M<=96' if shape[1] <= 96 else 'M>96'].append(x)
    if 96 < shape[1] <= 1000:
        by['M97-1000'].append(x)
    if shape[1] > 1000:
        by['M>1000'].append(x)
what = {'tune': "`perfloom tune` before session 34 (4 nearest shapes)", 'near12': '12 nearest shapes',
        'wide': "+ the model's 10 best of the whole table", 'old': 'the tables before the refit (shipped before)',
        'refit': 'the refitted tables'}
names = [(s, 'first choice: ' + what.get(s, s)) for s in sets] + [(s + '3', 'fastest of the first 3: ' + s) for s in sets] + \
        [('default', "cuBLASLt's default"), ('heur8', "fastest of cuBLASLt's 8")]
rows = [(key, name, 'best') for key, name in names] + \
       [(s + '_pooled', 'first choice, same configuration pooled: ' + s, 'pooled_best') for s in sets]
cols = [k for k in ('bf16', 'fp8e4m3', 'M<=96', 'M>96', 'M97-1000', 'M>1000', 'all') if k in by]
print('| within 3% of the fastest timed | ' + ' | '.join('%s (%d)' % (k, len(by[k])) for k in cols) + ' |')
print('|---' * (len(cols) + 1) + '|')
for key, name, ref in rows:
    print('| %s | ' % name + ' | '.join('%d (%.1f%%)' % (sum(x[key] <= 1.03 * x[ref] for x in by[k]),
                                                         100 * sum(x[key] <= 1.03 * x[ref] for x in by[k]) / len(by[k]))
                                      for k in cols) + ' |')
# Every GEMM where cuBLASLt's default ran, the refused first choices kept in: counted as misses, or replaced by the next
# configuration of the set's list that ran (what a user running the list does).
timed = [m for m in med.values() if ('heuristic', 1) in m]
for s in sets:
    hits = sum((s, 1) in m and m[(s, 1)] <= 1.03 * min(m.values()) for m in timed)
    ran = [[m[(s, i)] for i in (1, 2, 3) if (s, i) in m] for m in timed]
    nxt = sum(bool(r) and r[0] <= 1.03 * min(m.values()) for r, m in zip(ran, timed))
    print('first choice %s over all %d GEMMs timed: refused ones as misses %.1f%%, the next of its list that ran %.1f%%'
          % (s, len(timed), 100 * hits / len(timed), 100 * nxt / len(timed)))
v = by['all']
gm = lambda key: math.exp(sum(math.log(x['default'] / x[key]) for x in v) / len(v))
print('speedup over the default (geomean): ' + ', '.join('%s %.3f' % (k, gm(k)) for k in sets + [s + '3' for s in sets]))
print('first choices refused by cuBLASLt (shapes left out): ' + ', '.join('%s %d' % (s, refused[s]) for s in sets))
# Paired, each later set against the first: GEMMs where one first choice is within 3% and the other is not,
# with the two-sided sign test's p (binomial, 1/2) over those.
for s in sets[1:]:
    won = sum(x[s] <= 1.03 * x['best'] < x[sets[0]] for x in v)
    lost = sum(x[sets[0]] <= 1.03 * x['best'] < x[s] for x in v)
    n = won + lost
    p = min(1.0, 2 * sum(math.comb(n, i) for i in range(min(won, lost) + 1)) / 2 ** n) if n else 1.0
    print('paired first choice, %s against %s: within 3%% where the other is not on %d GEMMs, the other on %d '
          '(sign test p = %.2g)' % (s, sets[0], won, lost, p))
