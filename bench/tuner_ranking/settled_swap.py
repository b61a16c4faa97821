"""Training groups with the large GEMMs' labels swapped for settled ones (issue #8, session 40): are a few groups timed
settled (`perfloom-collect --settle-ms`, bench/collector/README.md *Settling*) worth as much as many timed before it?

    D=/tmp/rk   # the fit's groups: perfloom-tuner-fit --out $D/tables --dump-ranker $D h200 (chooser.py's docstring)
    for s in 4747 4848; do
      build/bin/perfloom-tuner-eval --dump-lists h200 bench/data/h200/lists_settled/lists_s$s.csv.gz \\
          resources/tuner/h200.json.gz $D/settled_s$s.csv
    done
    python3 bench/tuner_ranking/settled_swap.py $D/h200_groups.csv $D/settled_s4848.csv 1000 $D/swap.csv
    python3 bench/tuner_ranking/chooser.py h200 $D/swap.csv $D/settled_s4747.csv shipped \\
        obj=rank:pairwise,grade=1/3/5%,rounds=800,depth=8

Writes OUT: GROUPS without its groups above M = ABOVE, plus the settled dump's timed rows above ABOVE (each GEMM given
a fold by a hash of its shape, as chooser.py's frac= draws). ABOVE = 96 also drops the mid-sized groups; a negative
ABOVE keeps every group of GROUPS and adds every settled group (none dropped).
"""
import csv
import math
import sys
import zlib


def read(path):
    with open(path) as fh:
        r = csv.reader(fh)
        return next(r), list(r)


def main(groups_path, settled_path, above, out_path):
    above = int(above)
    header, groups = read(groups_path)
    settled_header, settled = read(settled_path)
    if settled_header != header:
        sys.exit('%s: its columns differ from %s (dump both with the same build)' % (settled_path, groups_path))
    kept = groups if above < 0 else [t for t in groups if int(t[1]) <= above]
    added = [t for t in settled if not math.isnan(float(t[6])) and int(t[1]) > max(above, 0)]
    for t in added:
        t[4] = str(zlib.crc32(','.join(t[:4]).encode()) % 5)
    with open(out_path, 'w', newline='') as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(kept + added)
    gemms = lambda rows: len({tuple(t[:4]) for t in rows})  # noqa: E731
    print('%s: %d of %d groups kept, %d settled groups added (%d rows)'
          % (out_path, gemms(kept), gemms(groups), gemms(added), len(added)))


if __name__ == '__main__':
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    main(*sys.argv[1:5])
