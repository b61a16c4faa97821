import os
# usage: exp.py GPU what...   (what: model, nested, rank)
import sys, math, time, json, itertools
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *

gpu = sys.argv[1]; what = sys.argv[2:]
D = os.environ.get("TUNER_RANKING_DATA", "/tmp/tuner_ranking")
sweep, plan = load_feats(f"{D}/{gpu}_features.csv")
S = shapes_of(sweep); P = shapes_of(plan)
FOLDS = 5
fold_shapes = collections.defaultdict(list)
for k, idxs in S.items(): fold_shapes[sweep[idxs[0]]["fold"]].append(k)
SIZES = [(200, 4), (400, 4), (200, 6), (400, 6)]
dumps = {}
for sz in SIZES:
    try:
        d = load_dump(f"{D}/{gpu}_{sz[0]}_{sz[1]}.csv", sweep)[0]
        if len(d) == 15: dumps[sz] = d
    except Exception: pass
res = {}

def hits_model(preds, folds):
    h = n = 0
    for f in folds:
        for k in fold_shapes[f]:
            idxs = S[k]; h += within3(sweep, idxs, model_pick(idxs, preds)); n += 1
    return h, n

if "model" in what:
    for sz, d in dumps.items():
        h = sum(hits_model(d[excl_name(f)], [f])[0] for f in range(FOLDS))
        print(f"{gpu} model {sz}: within3 {h}/250 = {h/2.5:.1f}%", flush=True)

if "nested" in what:
    tot = 0; chosen = []
    for f in range(FOLDS):
        inner = {}
        for sz, d in dumps.items():
            inner[sz] = sum(hits_model(d[excl_name(f, g)], [g])[0] for g in range(FOLDS) if g != f)
        best = max(dumps, key=lambda sz: (inner[sz], -SIZES.index(sz)))
        h, n = hits_model(dumps[best][excl_name(f)], [f])
        tot += h; chosen.append((best, inner))
        print(f"{gpu} nested fold {f}: inner {dict((f'{a}/{b}', v) for (a, b), v in inner.items())} -> {best}, outer {h}/{n}", flush=True)
    print(f"{gpu} NESTED size: within3 {tot}/250 = {tot/2.5:.1f}%", flush=True)

# ---------------- ranker ----------------
def sweep_group(k, preds=None):
    idxs = S[k]
    xs = [list(sweep[i]["x"]) for i in idxs]
    if preds is not None:
        for x, m in zip(xs, model_feats(idxs, preds)): x.extend(m)
    return xs, [sweep[i]["meas"] / sweep[i]["best"] for i in idxs]

def plan_group(k, nmodel):
    idxs = P[k]
    xs = [list(plan[i]["x"]) + [float("nan")] * nmodel for i in idxs]
    return xs, [plan[i]["meas"] / plan[i]["best"] for i in idxs]

def choose(k, scores, preds, topk):
    idxs = S[k]
    cand = list(range(len(idxs)))
    if topk and preds is not None:
        cand = sorted(cand, key=lambda j: preds[idxs[j]][1])[:topk]
    j = max(cand, key=lambda j: scores[j])
    return within3(sweep, idxs, idxs[j])

def fit_rank(train_keys, pred_for_fold, obj, grading, use_plan, use_model, rounds, depth, eta=0.1):
    groups = []
    nm = 3 if use_model else 0
    for k in train_keys:
        p = pred_for_fold(sweep[S[k][0]]["fold"]) if use_model else None
        groups.append(sweep_group(k, p))
    if use_plan:
        for k in P: groups.append(plan_group(k, nm))
    dm = build(groups, GRADINGS[grading])
    params = {"objective": obj, "eta": eta, "max_depth": depth, "subsample": 0.8, "lambda": 3, "seed": 0, "nthread": 1,
              "min_child_weight": 1, "tree_method": "hist"}
    return Booster(dm, params, rounds)

def score_keys(b, keys, preds, use_model, topks):
    h = {t: 0 for t in topks}
    for k in keys:
        xs, _ = sweep_group(k, preds if use_model else None)
        sc = b.predict(DM(xs, len(xs[0])))
        for t in topks: h[t] += choose(k, sc, preds, t)
    return h

BASE = (200, 4)
for w in what:
    if w.startswith("base="): BASE = tuple(int(v) for v in w[5:].split("/"))
def ranker_experiment(use_plan, use_model, grid, topk_sets, rounds=200, depth=4, tag=""):
    base = dumps[BASE]; tag = tag + f" base{BASE}"
    topks = sorted({t for ts in topk_sets for t in ts}, key=lambda t: -1 if t is None else t)
    nested_tot = [0] * len(topk_sets); res = {}
    t0 = time.time()
    for f in range(FOLDS):
        train_folds = [g for g in range(FOLDS) if g != f]
        inner = collections.Counter()
        for g in train_folds:
            tk = [k for h in train_folds if h != g for k in fold_shapes[h]]
            for obj, gr in grid:
                b = fit_rank(tk, lambda h: base[excl_name(f, h)], obj, gr, use_plan, use_model, rounds, depth)
                hh = score_keys(b, fold_shapes[g], base[excl_name(f, g)], use_model, topks)
                for t in topks: inner[(obj, gr, t)] += hh[t]
        tk = [k for h in train_folds for k in fold_shapes[h]]
        outer = {}
        for obj, gr in grid:
            b = fit_rank(tk, lambda h: base[excl_name(f, h)], obj, gr, use_plan, use_model, rounds, depth)
            hh = score_keys(b, fold_shapes[f], base[excl_name(f)], use_model, topks)
            for t in topks: outer[(obj, gr, t)] = hh[t]
        mh, _ = hits_model(base[excl_name(f)], [f])
        minner = sum(hits_model(base[excl_name(f, g)], [g])[0] for g in train_folds)
        for si, ts in enumerate(topk_sets):
            cands = [c for c in inner if c[2] in ts]
            sel = max(cands, key=lambda c: inner[c])
            nested_tot[si] += outer[sel]
            print(f"{gpu} {tag} topk{ts} fold {f}: selected {sel} (inner {inner[sel]} vs model inner {minner}), outer {outer[sel]} vs model {mh} of {len(fold_shapes[f])}  [{time.time()-t0:.0f}s]", flush=True)
        for c, v in outer.items(): res[c] = res.get(c, 0) + v
    for si, ts in enumerate(topk_sets):
        print(f"{gpu} {tag} topk{ts} NESTED: within3 {nested_tot[si]}/250 = {nested_tot[si]/2.5:.1f}%", flush=True)
    print(f"{gpu} {tag} per-config (NOT nested, reference only): " + "; ".join(f"{c}: {v/2.5:.1f}%" for c, v in res.items()), flush=True)

GRID = [("rank:pairwise", "A(1/3/5%)"), ("rank:pairwise", "B(1/3/5/10%)"), ("rank:ndcg", "A(1/3/5%)"), ("rank:ndcg", "B(1/3/5/10%)")]
if "rank1" in what:   # pure ranker on learned features, sweep train + plan shapes; alone and within the model's top-k (R3)
    ranker_experiment(True, False, GRID, [[None], [2, 3]], tag="R1 ranker(plan+sweep, features only)")
if "rank2" in what:   # ranker with the model's (out-of-sample) prediction gaps as features, sweep train shapes only
    ranker_experiment(False, True, GRID, [[None], [2, 3]], tag="R2 ranker(sweep, +model feats)")
if "rank4" in what:   # model features + plan shapes (model feats missing there)
    ranker_experiment(True, True, GRID, [[None], [2, 3]], tag="R4 ranker(plan+sweep, +model feats)")
