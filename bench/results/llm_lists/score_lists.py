"""Score a timed lists file (`perfloom-tuner-eval --lists-plan` / `--llm-lists-plan`, timed by `run_plan_on_gpu.sh --plan
NAME --repeat 2 --heuristic-n 8`): per GEMM, `perfloom tune`'s first choice (the plan's ` table 1` row), the fastest of its
first 3, the fastest of the whole list, cuBLASLt's default (heuristic rank 1) and the fastest of cuBLASLt's first 8, each within 3% of the fastest of
everything timed there (a configuration's latency: the median of its repetitions), overall, by dtype and by M.

    python3 bench/results/llm_lists/score_lists.py bench/data/h100-sxm/lists_held/llm_lists_s3838.csv.gz

The list's order is the one the plan was written with (the shipped tables when it was written).
"""
import collections
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'tuner_ranking'))
import cross_lease  # noqa: E402


def load(path):
    """-> ({GEMM: {configuration: median latency}}, {(GEMM, configuration): its rank in the list}); cuBLASLt's heuristic
    results as cross_lease.load names them ('plan:heuristic|KERNEL|RANK')."""
    times, _ = cross_lease.load(path)
    rank = {}
    for key, cf in times.items():
        for cfg in cf:
            m = re.search(r' table (\d+)', cfg)
            if m:
                rank[(key, cfg)] = int(m.group(1))
    return times, rank


def band(m):
    return 'M <= 16' if m <= 16 else 'M 17-96' if m <= 96 else 'M 97-1000' if m <= 1000 else 'M > 1000'


def main(path):
    times, rank = load(path)
    rows = collections.defaultdict(lambda: [0, 0, 0, 0, 0, 0])  # GEMMs, first, first 3, whole list, default, best of 8
    gains = []
    for key, cf in times.items():
        best = min(cf.values())
        listed = sorted((rank[(key, c)], us) for c, us in cf.items() if (key, c) in rank)
        if not listed or listed[0][0] != 1:
            continue  # the first choice was not timed (cuBLASLt refused it)
        first = listed[0][1]
        three = min(us for r, us in listed if r <= 3)
        heur = {c: us for c, us in cf.items() if (key, c) not in rank}
        dflt = next((us for c, us in heur.items() if c.endswith('|1')), None)
        heur = list(heur.values())
        for group in ('all', key[0], band(key[1])):
            r = rows[group]
            r[0] += 1
            r[1] += first <= 1.03 * best
            r[2] += three <= 1.03 * best
            r[3] += min(us for r_, us in listed) <= 1.03 * best
            r[4] += dflt is not None and dflt <= 1.03 * best
            r[5] += bool(heur) and min(heur) <= 1.03 * best
        if dflt:
            gains.append(dflt / first)
    print('%s: within 3%% of the fastest timed (the list and cuBLASLt\'s first 8, medians)' % path)
    print('| GEMMs | n | first choice | fastest of first 3 | fastest of the list | cuBLASLt default | fastest of cuBLASLt 8 |')
    print('|---|---|---|---|---|---|---|')
    for g in ['all', 'bf16', 'fp8e4m3', 'M <= 16', 'M 17-96', 'M 97-1000', 'M > 1000']:
        if g in rows:
            n = rows[g][0]
            print('| %s | %d | ' % (g, n) + ' | '.join('%.1f%%' % (100.0 * v / n) for v in rows[g][1:]) + ' |')
    if gains:
        print('geomean speedup of the first choice over cuBLASLt\'s default: %.3f' % statistics.geometric_mean(gains))


if __name__ == '__main__':
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
