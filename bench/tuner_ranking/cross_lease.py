"""How far a chooser that never sees the GPU it answers for can get (issue #8, session 37): one timed lists
round (`perfloom-tuner-eval --lists-plan`, `run_plan_on_gpu.sh --plan lists_sSEED --repeat 2 --heuristic-n 8`)
timed again, unchanged, on a second lease; the first lease's fastest configuration at each GEMM scored on the
second lease (and the other way round) is what a perfect static chooser, one that knew every latency of another
GPU of the kind, would reach; the same configuration's latency on both leases says how much two leases differ.

    python3 bench/tuner_ranking/cross_lease.py bench/data/h100-sxm/lists_held/lists_s4040.csv.gz \\
        bench/data/h100-sxm/lists_held/lease2/lists_s4040.csv.gz

A configuration is a plan row's source without its ` rep=N` (the tables' configurations), or, for cuBLASLt's
heuristic results, its kernel and heuristic rank; its latency on a lease is the median over the repeats. A hit is
within 3% of the fastest configuration timed on both leases at that GEMM. `perfloom tune`'s first choice (the plan's
` table 1` row) is also scored on each lease against the fastest of everything timed there.
"""
import collections
import csv
import gzip
import re
import statistics
import sys


def load_rounds(path):
    """-> ({(dtype, M, N, K): {configuration: [(round, latency), ...]}}, {(dtype, M, N, K): perfloom tune's first choice});
    a row's round is its source's `rep=N` (0 where it has none)."""
    times = collections.defaultdict(lambda: collections.defaultdict(list))
    first = {}
    opener = gzip.open if path.endswith('.gz') else open
    with opener(path, 'rt') as fh:
        for t in csv.DictReader(line for line in fh if not line.startswith('#')):
            rep = re.search(r'rep=(\d+)', t['source'])
            base = re.sub(r' ?rep=\d+', '', t['source'])
            key = (t['dtype'], int(t['M']), int(t['N']), int(t['K']))
            cfg = base if ' table ' in base else '%s|%s|%s' % (base, t['kernel_name'], t['heuristic_rank'])
            times[key][cfg].append((int(rep.group(1)) if rep else 0, float(t['latency_us'])))
            if re.search(r' table 1( |$)', base):
                first[key] = cfg
    return times, first


def load(path):
    """-> ({(dtype, M, N, K): {configuration: median latency}}, {(dtype, M, N, K): perfloom tune's first choice})."""
    times, first = load_rounds(path)
    return {k: {c: statistics.median(us for _, us in v) for c, v in cf.items()} for k, cf in times.items()}, first


def band(m):
    return 'M <= 16' if m <= 16 else 'M 17-96' if m <= 96 else 'M 97-1000' if m <= 1000 else 'M > 1000'


def main(path_a, path_b):
    a, first = load(path_a)
    b, _ = load(path_b)
    n = a_on_b = b_on_a = 0
    by_band = collections.defaultdict(lambda: [0, 0])
    tune = [0, 0, 0]
    ratios = []
    for key in sorted(set(a) & set(b)):
        common = set(a[key]) & set(b[key])
        if len(common) < 2:
            continue
        ratios += [b[key][c] / a[key][c] for c in common]
        best_a = min(common, key=lambda c: a[key][c])
        best_b = min(common, key=lambda c: b[key][c])
        hit = b[key][best_a] <= 1.03 * b[key][best_b]
        n += 1
        a_on_b += hit
        b_on_a += a[key][best_b] <= 1.03 * a[key][best_a]
        by_band[band(key[1])][0] += hit
        by_band[band(key[1])][1] += 1
        f = first.get(key)
        if f in a[key] and f in b[key]:
            tune[0] += a[key][f] <= 1.03 * min(a[key].values())
            tune[1] += b[key][f] <= 1.03 * min(b[key].values())
            tune[2] += 1
    if n == 0:
        sys.exit('%s and %s share no GEMM with two configurations timed on both' % (path_a, path_b))
    ratios.sort()
    q = lambda p: ratios[min(len(ratios) - 1, int(p * len(ratios)))]
    print('GEMMs timed on both leases: %d' % n)
    print("first lease's fastest within 3%% of the second's: %d / %d = %.1f%%; the other way round %.1f%%"
          % (a_on_b, n, 100.0 * a_on_b / n, 100.0 * b_on_a / n))
    print('  by M: ' + ', '.join('%s %.1f%% of %d' % (k, 100.0 * v[0] / v[1], v[1]) for k, v in sorted(by_band.items())))
    if tune[2]:
        print("perfloom tune's first choice within 3%% of the fastest timed: first lease %.1f%%, second %.1f%% (%d GEMMs)"
              % (100.0 * tune[0] / tune[2], 100.0 * tune[1] / tune[2], tune[2]))
    print('same configuration, second lease / first: median %.3f, 5%% %.3f, 25%% %.3f, 75%% %.3f, 95%% %.3f (%d configurations)'
          % (q(0.5), q(0.05), q(0.25), q(0.75), q(0.95), len(ratios)))


if __name__ == '__main__':
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
