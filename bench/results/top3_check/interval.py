"""How often the measured latency of `perfloom tune`'s first three falls inside the 80% range it states.

    python3 bench/results/top3_check/interval.py GPU [TIMED.csv.gz]   (from the source tree, after building perfloom)

For every GEMM of TIMED.csv.gz (default bench/results/top3_check/GPU.csv.gz; its `tune K` rows): `perfloom tune --gemm M,N,K --top 3 --json` with the
bundled table, each of its three configurations matched by rank to the timed `tune K` rows (median of the
repetitions), counted inside [lo_us, hi_us], below or above; apart for the shapes in the table's training
data (its measured shapes: the table's "winners") and the others.
"""
import collections, csv, gzip, json, re, statistics, subprocess, sys

gpu = sys.argv[1]
timed = sys.argv[2] if len(sys.argv) > 2 else 'bench/results/top3_check/%s.csv.gz' % gpu
lat = collections.defaultdict(list)
for r in csv.DictReader(l for l in gzip.open(timed, 'rt') if not l.startswith('#')):
    m = re.search(r'plan:(\S+) tune (\d)', r['source'])
    if m:
        lat[(r['dtype'], int(r['M']), int(r['N']), int(r['K']), int(m.group(2)))].append((m.group(1), float(r['latency_us'])))
table = json.loads(gzip.open('resources/tuner/%s.json.gz' % gpu, 'rt').read())
trained = {(g, w[0], w[1], w[2]) for g, gt in table['groups'].items() for w in gt.get('winners', [])}
count = collections.defaultdict(lambda: [0, 0, 0])  # inside, below, above
shapes = sorted({k[:4] for k in lat})
for dt, M, N, K in shapes:
    out = subprocess.run(['build/bin/perfloom', 'tune', '--gemm', '%d,%d,%d' % (M, N, K), '--dtype', dt, '--gpu', gpu,
                          '--top', '3', '--json', '--db', '/tmp/perfloom-interval.db'], capture_output=True, text=True, check=True)
    doc = json.loads(out.stdout)
    group = '16bit' if dt in ('bf16', 'fp16') else 'fp8'
    where = 'trained' if (group, M, N, K) in trained else 'new'
    for c in doc['configs']:
        runs = lat.get((dt, M, N, K, c['rank']))
        if not runs:
            continue
        if runs[0][0] != c['config'].rsplit('/st', 1)[0] and runs[0][0] != c['config']:
            print('config differs', dt, M, N, K, c['rank'], runs[0][0], c['config'], file=sys.stderr)
            continue
        t = statistics.median(x for _, x in runs)
        i = 0 if c['lo_us'] <= t <= c['hi_us'] else 1 if t < c['lo_us'] else 2
        for key in (where, 'all'):
            count[key][i] += 1
for key in ('trained', 'new', 'all'):
    inside, below, above = count[key]
    n = inside + below + above
    if n:
        print('%s %-8s %3d configurations: inside the 80%% range %5.1f%%, below %4.1f%%, above %4.1f%%' %
              (gpu, key, n, 100 * inside / n, 100 * below / n, 100 * above / n))
