#!/usr/bin/env python3
"""Merge collector plan CSVs (FORMAT.md, "plan") into one, for a single re-measurement lease.

    tools/collector/merge_plans.py OUT.csv FIRST.csv[.gz] MORE.csv[.gz]...

Every row of FIRST is kept in its order; a row of a later plan is added after the rows of its
shape unless FIRST (or an earlier later plan) already has the same point, (dtype, M, N, K,
configuration, heuristic rank), whose `why` then gains the later tag. A later plan's tags are
prefixed with "earlier: " so the measured rows say which plan asked for them. Shapes only a later
plan has are appended at the end. Used in session 8 to measure a new model's candidates together
with the previous lease's (data/<gpu>/tuner_picks_plan.csv.gz) in one lease, so that the
best of each shape is taken over both.
"""
import csv
import gzip
import sys


def read(path):
    opener = gzip.open if open(path, "rb").read(2) == b"\x1f\x8b" else open
    with opener(path, "rt", newline="") as f:
        rows = list(csv.reader(f))
    if not rows:
        sys.exit(f"{path}: empty file")
    return rows[0], rows[1:]


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    out, first, more = sys.argv[1], sys.argv[2], sys.argv[3:]
    header, rows = read(first)
    ix = {name: i for i, name in enumerate(header)}
    for col in ("dtype", "M", "N", "K", "config", "why", "heuristic_rank"):
        if col not in ix:
            sys.exit(f"{first}: no column '{col}'")
    shape = lambda r: (r[ix["dtype"]], r[ix["M"]], r[ix["N"]], r[ix["K"]])
    point = lambda r: shape(r) + (r[ix["config"]], r[ix["heuristic_rank"]])
    by_shape, order, where = {}, [], {}
    for r in rows:
        s = shape(r)
        if s not in by_shape:
            by_shape[s] = []
            order.append(s)
        where[point(r)] = r
        by_shape[s].append(r)
    added = 0
    for path in more:
        h, rs = read(path)
        if h != header:
            sys.exit(f"{path}: header differs from {first}'s")
        for r in rs:
            p = point(r)
            tag = "; ".join("earlier: " + t for t in r[ix["why"]].split("; "))
            if p in where:
                where[p][ix["why"]] += "; " + tag
                continue
            r = list(r)
            r[ix["why"]] = tag
            s = shape(r)
            if s not in by_shape:
                by_shape[s] = []
                order.append(s)
            by_shape[s].append(r)
            where[p] = r
            added += 1
    with open(out, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        for s in order:
            w.writerows(by_shape[s])
    print(f"{out}: {sum(len(v) for v in by_shape.values())} points over {len(order)} shapes ({added} from the later plans)")


if __name__ == "__main__":
    main()
