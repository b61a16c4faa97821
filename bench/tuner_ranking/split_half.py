"""How often can any chooser be within 3% of the fastest, when "the fastest" is itself a timing (issue #8, session 41)?
In a timed lists round (`perfloom-tuner-eval --lists-plan`, `run_plan_on_gpu.sh --plan lists_sSEED --repeat 2
--heuristic-n 8`) every configuration is timed in two rounds on the same lease (the second in a shuffled order). A
chooser that knew round 1's latencies exactly picks round 1's fastest; scored on round 2 (and the other way round)
against round 2's fastest, it is a perfect chooser measured with the noise of one timing against another:

    python3 bench/tuner_ranking/split_half.py bench/data/h200/lists/lists_s5050.csv.gz [MORE.csv.gz ...]

The rounds are the rows' `rep=1` / `rep=2` (a configuration is the plan row's source without `rep=N`, or for
cuBLASLt's heuristic results its kernel and rank, as cross_lease.py names them). Also printed: how often `perfloom
tune`'s first choice is within 3% of the fastest on round 2 alone, and on the median of both rounds (score_lists.py's
metric), so the three can be compared GEMM for GEMM. Only GEMMs with both rounds of at least 2 configurations count.
"""
import collections
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cross_lease  # noqa: E402


def main(paths):
    rows = collections.defaultdict(lambda: [0, 0.0, 0, 0])  # GEMMs, split-half hits (mean of both ways), first r2, first median
    for path in paths:
        times, first = cross_lease.load_rounds(path)
        for key, timed in times.items():
            cf = {c: dict(v) for c, v in timed.items()}  # configuration -> {round: latency}
            both = {c: r for c, r in cf.items() if 1 in r and 2 in r}
            if len(both) < 2 or key not in first or first[key] not in both:
                continue
            r1 = {c: r[1] for c, r in both.items()}
            r2 = {c: r[2] for c, r in both.items()}
            med = {c: statistics.median(us for _, us in v) for c, v in timed.items()}  # every row, as cross_lease.load
            best1, best2 = min(r1, key=r1.get), min(r2, key=r2.get)
            split = 0.5 * ((r2[best1] <= 1.03 * r2[best2]) + (r1[best2] <= 1.03 * r1[best1]))
            f = first[key]
            for g in ('all', cross_lease.band(key[1])):
                r = rows[g]
                r[0] += 1
                r[1] += split
                r[2] += r2[f] <= 1.03 * r2[best2]
                r[3] += med[f] <= 1.03 * min(med.values())
    print('%s: within 3%% of the fastest' % ', '.join(paths))
    print('| GEMMs | n | round 1\'s fastest on round 2 (both ways) | first choice on round 2 | first choice on the medians |')
    print('|---|---|---|---|---|')
    for g in ['all', 'M <= 16', 'M 17-96', 'M 97-1000', 'M > 1000']:
        if g in rows:
            n, s, f2, fm = rows[g]
            print('| %s | %d | %.1f%% | %.1f%% | %.1f%% |' % (g, n, 100.0 * s / n, 100.0 * f2 / n, 100.0 * fm / n))


if __name__ == '__main__':
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
