import gzip, csv, re, sys, statistics, collections, math
f = sys.argv[1]
rows = csv.DictReader(l for l in gzip.open(f, 'rt') if not l.startswith('#'))
lat = collections.defaultdict(list)
custom_ok = [0, 0]
for r in rows:
    shape = (r['dtype'], int(r['M']), int(r['N']), int(r['K']))
    src = r['source']
    m = re.search(r'tune (\d)', src)
    if m:
        key = 'tune%s' % m.group(1)
        c = re.search(r' custom=(\d+)', src)
        if c:
            k = next((p.strip() for p in r['kernel_name'].split(';') if p.strip().startswith('nvjet')), '')  # not the split-K reduction after it
            b = (1 if k.endswith('TNT') else 0) | (2 if '_h_' in k else 0) | (4 if 'coop' in k else 0)
            custom_ok[0] += b == int(c.group(1)); custom_ok[1] += 1
    else:
        key = 'h%s' % r['heuristic_rank']
    lat[(shape, key)].append(float(r['latency_us']))
med = {k: statistics.median(v) for k, v in lat.items()}
shapes = sorted({k[0] for k in med})
stats = collections.defaultdict(list)
for s in shapes:
    g = lambda k: med.get((s, k))
    t = [g('tune%d' % i) for i in (1, 2, 3) if g('tune%d' % i)]
    h = [g('h%d' % i) for i in range(1, 9) if g('h%d' % i)]
    d = g('h1')
    best = min(t + h)
    stats[s[0]].append((t[0], min(t), d, min(h), best))
print('custom option shown by the kernel name:', custom_ok)
for dt, v in stats.items():
    n = len(v)
    w = lambda i: sum(x[i] <= 1.03 * x[4] for x in v)
    gm = lambda i, j: math.exp(sum(math.log(x[j] / x[i]) for x in v) / n)
    print(dt, n, 'within 3%% of the best timed: tune 1 %d, best of tune 1-3 %d, cuBLASLt default %d, best of its 8 heuristics %d' % (w(0), w(1), w(2), w(3)))
    print('   speedup over the default (geomean): tune 1 %.3f, best of tune 1-3 %.3f, best of 8 heuristics %.3f; top3 vs best-of-8: %.3f; worst tune1/default %.2f' % (gm(0, 2), gm(1, 2), gm(3, 2), gm(1, 3), max(x[0] / x[2] for x in v)))
