"""Offline experiments on the tuner's chooser (issue #8, session 36): train it as perfloom-tuner-fit does, or
otherwise, and score its first choice on timed query lists the tables never saw.

    D=/tmp/rk; mkdir -p $D
    OMP_WAIT_POLICY=passive build/bin/perfloom-tuner-fit --out $D/tables --dump-ranker $D GPU   # ~10 min per GPU
    build/bin/perfloom-tuner-eval --dump-lists GPU bench/data/GPU/lists_held/lists_s3737.csv.gz \\
        $D/tables/GPU.json.gz $D/GPU_s3737.csv
    python3 bench/tuner_ranking/chooser.py GPU $D/GPU_ranker_groups.csv $D/GPU_s3737.csv EXPERIMENT...

The training groups are the fit's (every shape with >= 18 configurations measured, its inputs out-of-sample by
the fold tables); the test groups are `perfloom tune`'s whole list at each GEMM of the held-out file, ranked by
the same table's latency model. Only the chooser changes between experiments, so differences are the chooser's.
A test GEMM counts where the first choice was timed; a hit is within 3% of the fastest of everything timed there
(the list and cuBLASLt's first 8): perfloom-tuner-eval --score-tables's "perfloom tune's first choice" column.
Experiments: 'shipped' (the table's own chooser: the dump's order), or comma-separated name=value: obj, grade
('1/3/5%', '1/3/5/10%', 'fine'), rounds, depth, eta, top (each training group cut to its N best by the model's
score), only (lists / sweep), wlist (the weight of the timed query lists' groups), seeds (that many choosers,
scores summed), xgb.NAME (any other XGBoost parameter), cv=FOLDS (instead of the test file, the fit's fold
cross-validation over the training groups, as it chooses the objective); session 39: grade=bin3 (within 3% or not),
ctx=NAME+NAME... (every row also gets those inputs of the model's best row and its difference from them),
frac=F (a learning curve: that share of the training groups, by a hash of the GEMM). Each experiment also prints its
first choice by M. The first experiment is the paired comparisons' reference.
"""
import csv, gzip, math, os, sys, zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from xgb import DM, Booster  # noqa: E402
import neighbours  # noqa: E402

RANK_CAP = 10


def load(path):
    """-> list of groups: dict(key, fold, cfg, ratio, lp, ls, f)."""
    groups, cur = [], None
    with open(path) as fh:
        r = csv.reader(fh)
        hdr = next(r)
        f0 = hdr.index('log_score') + 1
        global NAMES
        NAMES = hdr[f0:]
        for t in r:
            key = (t[0], int(t[1]), int(t[2]), int(t[3]))
            if cur is None or cur['key'] != key:
                cur = dict(key=key, fold=int(t[4]), cfg=[], ratio=[], lp=[], ls=[], f=[])
                groups.append(cur)
            cur['cfg'].append(t[5])
            cur['ratio'].append(float(t[6]))
            cur['lp'].append(float(t[7]))
            cur['ls'].append(float(t[8]))
            cur['f'].append([float(v) for v in t[f0:]])
    return groups


def lists_shapes(gpu, sub='lists'):
    d = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'data', gpu, sub)
    out = set()
    for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        if '.csv' not in name or name.endswith('_plan.csv.gz'):
            continue
        op = gzip.open if name.endswith('.gz') else open
        with op(os.path.join(d, name), 'rt') as fh:
            r = csv.DictReader(l for l in fh if not l.startswith('#'))
            for t in r:
                out.add((t['dtype'], int(t['M']), int(t['N']), int(t['K'])))
    return out


CTX = None  # None, or the names of the inputs whose value at the model's best (lowest score) row every row also gets
NAMES = None  # the dump's input names (load sets it)


def context(g, idx, order):
    """Inputs that tell a row what the alternatives are: the model's best row's CTX inputs, this row's difference from
    them, and how many rows the model scores within 1% and 3% of its best."""
    best = order[0]
    cols = [NAMES.index(n) for n in CTX]
    mls = g['ls'][best]
    near1 = float(sum(1 for i in idx if g['ls'][i] - mls <= math.log(1.01)))
    near3 = float(sum(1 for i in idx if g['ls'][i] - mls <= math.log(1.03)))
    second = g['ls'][order[1]] - mls if len(order) > 1 else 0.0
    out = {}
    for i in idx:
        out[i] = [g['f'][best][c] for c in cols] + [g['f'][i][c] - g['f'][best][c] for c in cols] + [near1, near3, second]
    return out


def ranker_x(g, idx, nb=None):
    """The chooser's rows (tuner_table.h ranker_rows) for the configurations idx of group g; nb: the name of the
    neighbour features (neighbours.py) to append, None: none."""
    mlp = min(g['lp'][i] for i in idx)
    mls = min(g['ls'][i] for i in idx)
    order = sorted(idx, key=lambda i: g['ls'][i])  # stable, as std::stable_sort by score
    pos = {i: r for r, i in enumerate(order)}
    ctx = context(g, idx, order) if CTX else None
    out = []
    for i in idx:
        out.append(g['f'][i] + [g['lp'][i] - mlp, g['ls'][i] - mls, float(min(pos[i], RANK_CAP))] + (g[nb][i] if nb else [])
                   + (ctx[i] if ctx else []))
    return out


def grade(grading, ratio):
    if grading == '1/3/5%':
        return 3 if ratio <= 1.01 else 2 if ratio <= 1.03 else 1 if ratio <= 1.05 else 0
    if grading == '1/3/5/10%':
        return 4 if ratio <= 1.01 else 3 if ratio <= 1.03 else 2 if ratio <= 1.05 else 1 if ratio <= 1.10 else 0
    if grading == 'bin3':  # within 3% or not (the metric itself)
        return 1 if ratio <= 1.03 else 0
    if grading == 'fine':  # 1% steps to 10%
        return max(0, 10 - int(math.floor((ratio - 1) * 100 + 1e-9)))
    raise ValueError(grading)


def train(groups, objective, grading, rounds=200, depth=4, eta=0.1, top=None, weight=None, seed=0, extra=None, nb=None):
    """The fit's chooser (tuner_fit.cpp train_ranker); top: each group cut to its `top` best by the model's score
    (query-like); weight(g): the group's weight."""
    rows, y, sizes, w = [], [], [], []
    for g in groups:
        idx = list(range(len(g['cfg'])))
        if top:
            idx = sorted(idx, key=lambda i: g['ls'][i])[:top]
            best = min(g['ratio'][i] for i in idx)
        else:
            best = 1.0
        rows += ranker_x(g, idx, nb)
        y += [grade(grading, g['ratio'][i] / best) for i in idx]
        sizes.append(len(idx))
        w.append(weight(g) if weight else 1.0)
    params = {'objective': objective, 'max_depth': depth, 'eta': eta, 'subsample': 0.8, 'lambda': 3,
              'min_child_weight': 1, 'tree_method': 'hist', 'seed': seed, 'nthread': 1}
    params.update(extra or {})
    return Booster(DM(rows, len(rows[0]), y, sizes, w if weight else None), params, rounds)


def first_choices(boosters, groups, nb=None):
    """Per group, the index of the first choice (the boosters' scores summed)."""
    rows, sizes = [], []
    for g in groups:
        rows += ranker_x(g, list(range(len(g['cfg']))), nb)
        sizes.append(len(g['cfg']))
    dm = DM(rows, len(rows[0]))
    total = None
    for b in boosters:
        p = b.predict(dm)
        total = p if total is None else [a + c for a, c in zip(total, p)]
    out, at = [], 0
    for n in sizes:
        seg = total[at:at + n]
        out.append(max(range(n), key=lambda i: seg[i]))  # first maximum, as std::max_element
        at += n
    return out


def score(groups, choice):
    """(hits, timed first choices, per-group hit or None)."""
    per = []
    for g, i in zip(groups, choice):
        r = g['ratio'][i]
        per.append(None if math.isnan(r) else r <= 1.03)
    t = [p for p in per if p is not None]
    return sum(t), len(t), per


def paired(a, b):
    won = sum(1 for x, y in zip(a, b) if x is not None and y is not None and y and not x)
    lost = sum(1 for x, y in zip(a, b) if x is not None and y is not None and x and not y)
    return won, lost


def cv_hits(groups, objective, grading, folds=5, **kw):
    """The fit's own protocol (tuner_fit.cpp fit_ranker's choice of objective): each fold's training groups ranked by a
    chooser trained on the other folds. -> (hits, groups, hits among the timed lists, timed lists), a hit within 3%."""
    hits = n = lhits = ln = 0
    for f in range(folds):
        tr = [g for g in groups if g['fold'] != f]
        te = [g for g in groups if g['fold'] == f]
        if not tr or not te:
            continue
        for g, i in zip(te, first_choices([train(tr, objective, grading, **kw)], te, kw.get('nb'))):
            hit = g['ratio'][i] <= 1.03
            hits, n = hits + hit, n + 1
            if g.get('list'):
                lhits, ln = lhits + hit, ln + 1
    return hits, n, lhits, ln


if __name__ == '__main__':
    gpu, train_file, test_file = sys.argv[1:4]
    exps = sys.argv[4:]
    tr = load(train_file)
    te = load(test_file)
    lists = lists_shapes(gpu)
    for g in tr:
        g['list'] = g['key'] in lists
    print('%s: %d training groups (%d timed query lists), %d test GEMMs' % (gpu, len(tr), sum(g['list'] for g in tr), len(te)),
          flush=True)
    base = None
    for e in exps:
        if e == 'shipped':  # the table's own chooser: the dump lists each GEMM in `perfloom tune`'s order
            h, n, per = score(te, [0] * len(te))
            base = base or per
            print('%-60s %4d / %4d = %5.1f%%' % (e, h, n, 100.0 * h / n), flush=True)
            continue
        kv = dict(p.split('=', 1) for p in e.split(','))
        CTX = kv['ctx'].split('+') if 'ctx' in kv else None
        obj = kv.get('obj', 'rank:ndcg')
        grading = kv.get('grade', '1/3/5/10%')
        kw = dict(rounds=int(kv.get('rounds', 200)), depth=int(kv.get('depth', 4)), eta=float(kv.get('eta', 0.1)))
        if 'top' in kv:
            kw['top'] = int(kv['top'])
        groups = tr
        if kv.get('only') == 'lists':
            groups = [g for g in tr if g['list']]
        elif kv.get('only') == 'sweep':
            groups = [g for g in tr if not g['list']]
        if 'frac' in kv:  # a learning curve: that share of the training groups, drawn by a hash of the GEMM
            fr = float(kv['frac'])
            groups = [g for g in groups if (zlib.crc32(repr(g['key']).encode()) % 1000) < fr * 1000]
        if 'wlist' in kv:
            wl = float(kv['wlist'])
            kw['weight'] = lambda g, wl=wl: wl if g['list'] else 1.0
        if 'nb' in kv:  # neighbour evidence (neighbours.py) from the K nearest training shapes, ratios capped
            count, cap = int(kv['nb']), float(kv.get('cap', 1.25))
            kw['nb'] = 'nb_%d_%g' % (count, cap)
            if kw['nb'] not in tr[0]:
                neighbours.add(tr, te, count, cap)
                for g in tr + te:
                    g[kw['nb']] = g.pop('nb')
        extra = {k[4:]: v for k, v in kv.items() if k.startswith('xgb.')}  # any other XGBoost parameter
        if extra:
            kw['extra'] = extra
        if 'cv' in kv:  # the fit's fold cross-validation over the training groups instead of the test file
            h, n, lh, ln = cv_hits(groups, obj, grading, folds=int(kv['cv']), **kw)
            print('%-60s cross-validated %4d / %4d = %5.1f%%, the timed lists %d / %d = %.1f%%'
                  % (e, h, n, 100.0 * h / n, lh, ln, 100.0 * lh / max(1, ln)), flush=True)
            continue
        seeds = int(kv.get('seeds', 1))
        bs = [train(groups, obj, grading, seed=s, **kw) for s in range(seeds)]
        h, n, per = score(te, first_choices(bs, te, kw.get('nb')))
        if base is None:
            base = per
        w, l = paired(base, per)
        print('%-60s %4d / %4d = %5.1f%%   vs first: won %d lost %d' % (e, h, n, 100.0 * h / n, w, l), flush=True)
        by_m = []
        for lo, hi in ((1, 96), (97, 1000), (1001, 1 << 30)):
            sel = [p for g, p in zip(te, per) if lo <= g['key'][1] <= hi and p is not None]
            by_m.append('M %d-%s %.1f%% of %d' % (lo, hi if hi < 1 << 30 else '', 100.0 * sum(sel) / max(1, len(sel)), len(sel)))
        print('    by M: ' + ', '.join(by_m), flush=True)
