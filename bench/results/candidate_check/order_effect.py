"""Does the order the collector times a GEMM's configurations in move their latencies? (issue #8, session 39)

The same plan timed twice on one lease, once in the order of a lists round (cuBLASLt's first 8, then `perfloom tune`'s
list from its first choice down) and once with each GEMM's list reversed (bench/data/h200/order_{fwd,rev}_plan.csv.gz:
28 GEMMs with M > 1,000 of the H200's lists_s4343 / lists_s4545 where only a cuBLASLt heuristic result was within 3%):

    python3 bench/results/candidate_check/order_effect.py bench/results/candidate_check/h200_order_fwd.csv.gz \\
        bench/results/candidate_check/h200_order_rev.csv.gz

(`*_lease2.csv.gz`: the same two plans on a second lease, reversed timed first; two files of one order on the two
leases compare the leases instead.)

Prints, by the quarter of the forward list a configuration sat in (and for cuBLASLt's heuristic results, timed first
in both), its latency reversed over forward; how many GEMMs have only a heuristic result within 3% of the fastest in
each order; and how often the forward order's fastest is within 3% of the reversed order's. A configuration's latency
is the median of its repeats.
"""
import collections
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'tuner_ranking'))
import cross_lease  # noqa: E402


def is_heuristic(cfg):
    """cross_lease.load names a cuBLASLt heuristic result 'plan:heuristic|KERNEL|RANK', a listed one by its tag."""
    return cfg.startswith('plan:heuristic')


def only_heuristic_within_3(lat):
    best = min(lat.values())
    return min(v for c, v in lat.items() if not is_heuristic(c)) > 1.03 * best


def main(fwd_path, rev_path):
    fwd, _ = cross_lease.load(fwd_path)  # each GEMM's configurations in the order they were timed
    rev, _ = cross_lease.load(rev_path)
    ratios = collections.defaultdict(list)
    n = heur_fwd = heur_rev = agree = 0
    for key in sorted(set(fwd) & set(rev)):
        listed = [c for c in fwd[key] if not is_heuristic(c)]
        for i, c in enumerate(listed):
            if c in rev[key]:
                ratios['list quarter %d' % (1 + min(3, 4 * i // len(listed)))].append(rev[key][c] / fwd[key][c])
        for c in fwd[key]:
            if is_heuristic(c) and c in rev[key]:
                ratios['cuBLASLt heuristic (first in both)'].append(rev[key][c] / fwd[key][c])
        n += 1
        heur_fwd += only_heuristic_within_3(fwd[key])
        heur_rev += only_heuristic_within_3(rev[key])
        common = set(fwd[key]) & set(rev[key])
        best_fwd = min(common, key=lambda c: fwd[key][c])
        best_rev = min(common, key=lambda c: rev[key][c])
        agree += rev[key][best_fwd] <= 1.03 * rev[key][best_rev]
    print('| timed (forward order) | n | reversed / forward: median | p10 | p90 |')
    print('|---|---|---|---|---|')
    for name in sorted(ratios):
        v = sorted(ratios[name])
        print('| %s | %d | %.3f | %.3f | %.3f |' % (name, len(v), v[len(v) // 2], v[len(v) // 10], v[9 * len(v) // 10]))
    print('%d GEMMs; only a cuBLASLt heuristic result within 3%% of the fastest: %d forward, %d reversed; the forward '
          "order's fastest within 3%% of the reversed order's fastest at %d" % (n, heur_fwd, heur_rev, agree))


if __name__ == '__main__':
    main(*sys.argv[1:3])
