"""Keep the GEMMs of side-by-side plans whose two tables' first choices differ.

    python3 bench/results/candidate_check/first_differs.py OUT_plan.csv PLAN.csv [PLAN.csv ...]

A side-by-side plan (perfloom-tuner-eval --tables-check-plan) lists, per GEMM, each table's first three ("old K",
"refit K"). Where two tables differ little (session 44: the same table with and without its acceptance model, whose
first choices differ at ~1.5% of GEMMs), timing every GEMM spends the GPU on identical answers; this writes one plan of
only the GEMMs whose first choices differ (all of their rows, in order), from any number of plans (seeds), to time
and score with score.py as before. Prints how many GEMMs each plan had and kept.
"""
import collections, csv, gzip, sys


def open_text(path):
    return gzip.open(path, 'rt') if path.endswith('.gz') else open(path, newline='')


def main(out, plans):
    header, kept_rows = None, []
    for path in plans:
        with open_text(path) as f:
            reader = csv.DictReader(f)
            header = header or reader.fieldnames
            if reader.fieldnames != header:
                sys.exit('%s: its columns differ from the first plan\'s' % path)
            rows = list(reader)
        first = collections.defaultdict(dict)  # GEMM -> label -> its first choice
        for r in rows:
            for tag in r['why'].split(';'):
                parts = tag.split()
                if len(parts) == 2 and parts[1] == '1':
                    first[(r['dtype'], r['M'], r['N'], r['K'])][parts[0]] = r['config'] + '/' + r['cublaslt_custom']
        differ = {g for g, f in first.items() if len(set(f.values())) > 1}
        kept_rows += [r for r in rows if (r['dtype'], r['M'], r['N'], r['K']) in differ]
        print('%s: %d GEMMs, %d with different first choices' % (path, len(first), len(differ)))
    with open(out, 'w', newline='') as f:
        w = csv.DictWriter(f, fieldnames=header, quoting=csv.QUOTE_MINIMAL)
        w.writeheader()
        w.writerows(kept_rows)
    print('%s: %d rows' % (out, len(kept_rows)))


if __name__ == '__main__':
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2:])
