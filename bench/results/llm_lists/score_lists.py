"""Score a timed lists file (`perfloom-tuner-eval --lists-plan` / `--llm-lists-plan`, timed by `run_plan_on_gpu.sh --plan
NAME --repeat 2 --heuristic-n 8`): per GEMM, `perfloom tune`'s first choice (the plan's ` table 1` row), the fastest of its
first 3, the fastest of the whole list, cuBLASLt's default (heuristic rank 1) and the fastest of cuBLASLt's first 8, each within 3% of the fastest of
everything timed there (a configuration's latency: the median of its repetitions), overall, by dtype and by M.

    python3 bench/results/llm_lists/score_lists.py bench/data/h100-sxm/lists_held/llm_lists_s3838.csv.gz

The list's order is the one the plan was written with (the shipped tables when it was written).
"""
import collections
import csv
import gzip
import re
import statistics
import sys


def load(path):
    times = collections.defaultdict(lambda: collections.defaultdict(list))
    rank = {}
    opener = gzip.open if path.endswith('.gz') else open
    with opener(path, 'rt') as fh:
        for t in csv.DictReader(line for line in fh if not line.startswith('#')):
            base = re.sub(r' ?rep=\d+', '', t['source'])
            key = (t['dtype'], int(t['M']), int(t['N']), int(t['K']))
            if ' table ' in base:
                cfg = base
                m = re.search(r' table (\d+)', base)
                rank[(key, cfg)] = int(m.group(1))
            else:
                cfg = 'heuristic %s' % t['heuristic_rank']
            times[key][cfg].append(float(t['latency_us']))
    return {k: {c: statistics.median(v) for c, v in cf.items()} for k, cf in times.items()}, rank


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
        dflt = cf.get('heuristic 1')
        heur = [us for c, us in cf.items() if c.startswith('heuristic ')]
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
