import os
import csv, math, sys, collections, time, json
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from xgb import DM, Booster

def load_feats(path):
    sweep, plan = [], []
    with open(path) as f:
        r = csv.reader(f); hdr = next(r)
        fi = [i for i, h in enumerate(hdr) if h.startswith("f_")]
        for t in r:
            d = dict(src=t[0], fold=int(t[1]), key=(t[2], int(t[3]), int(t[4]), int(t[5])), config=t[6], rank=int(t[7]),
                     meas=float(t[8]), best=float(t[9]), x=[float(t[i]) for i in fi])
            (sweep if d["src"] == "sweep" else plan).append(d)
    return sweep, plan

def load_dump(path, sweep):
    """-> {excl: [(pred, score) per sweep row index or None]}"""
    by = collections.defaultdict(list)
    fit_s = {}
    with open(path) as f:
        r = csv.DictReader(f)
        for t in r:
            by[t["excl"]].append(t); fit_s[t["excl"]] = float(t["fit_s"])
    out = {}
    for excl, rows in by.items():
        ex = set(int(v) for v in excl.split("_"))
        idx = [i for i, s in enumerate(sweep) if s["fold"] in ex]
        assert len(idx) == len(rows), (excl, len(idx), len(rows))
        v = [None] * len(sweep)
        for i, t in zip(idx, rows):
            s = sweep[i]
            assert s["config"] == t["config"] and s["key"][1] == int(t["M"]) and abs(s["meas"] - float(t["meas"])) < 1e-3 * s["meas"]
            v[i] = (float(t["pred"]), float(t["score"]))
        out[excl] = v
    return out, fit_s

def shapes_of(rows):
    d = collections.OrderedDict()
    for i, s in enumerate(rows):
        d.setdefault(s["key"], []).append(i)
    return d

def excl_name(*fs):
    return "_".join(str(f) for f in sorted(fs))

def within3(sweep, idxs, pick):
    return sweep[pick]["meas"] <= 1.03 * sweep[idxs[0]]["best"]

def model_pick(idxs, preds):
    return min(idxs, key=lambda i: preds[i][1])

GRADINGS = {
    "A(1/3/5%)": lambda r: 3 if r <= 1.01 else 2 if r <= 1.03 else 1 if r <= 1.05 else 0,
    "B(1/3/5/10%)": lambda r: 4 if r <= 1.01 else 3 if r <= 1.03 else 2 if r <= 1.05 else 1 if r <= 1.10 else 0,
    "C(3% binary)": lambda r: 1 if r <= 1.03 else 0,
}

def model_feats(idxs, preds):
    lp = [math.log(preds[i][0]) for i in idxs]; ls = [math.log(preds[i][1]) for i in idxs]
    mp, ms = min(lp), min(ls)
    order = sorted(range(len(idxs)), key=lambda j: ls[j])
    pos = [0] * len(idxs)
    for r, j in enumerate(order): pos[j] = r
    return [[lp[j] - mp, ls[j] - ms, float(min(pos[j], 10))] for j in range(len(idxs))]

def build(groups, grading):
    """groups: list of (rows_x, ratios) -> DM"""
    X, y, g = [], [], []
    for xs, ratios in groups:
        X.extend(xs); y.extend(grading(r) for r in ratios); g.append(len(xs))
    return DM(X, len(X[0]), y, g)
