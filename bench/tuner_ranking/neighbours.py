"""Neighbour evidence for the chooser (issue #8, session 38): how each configuration fared where it was measured
at the nearest measured shapes (the chooser's training groups: exhaustive sweeps and timed query lists).

A configuration's measured ratio (latency / the shape's fastest) at a neighbour is capped at CAP; one the
neighbour did not measure counts as CAP (for a sweep, it was slower than CAP; for a timed list, unknown, most
likely not among the fastest). Distance: the sum of |log2| ratios of M, N and K, as tuner.h nearest_winners.
Per configuration, from the K nearest shapes of the dtype group (a training group's own M, N, K left out):
  nb_near    log of the capped ratio at the nearest shape
  nb_mean    the mean of the log capped ratios, weighted by 1 / (0.25 + distance)
  nb_hit     the same weighted share of neighbours where it came within 3% of their fastest
  nb_rel     nb_mean minus the least nb_mean of the query's configurations
  nb_dist    the nearest shape's distance
"""
import math
import re

NB_NAMES = ['nb_near', 'nb_mean', 'nb_hit', 'nb_rel', 'nb_dist']


def cfg_key(text):
    return re.sub(r'/st\d+$', '', text)


def dtype_group(dt):
    return '16bit' if dt in ('fp16', 'bf16') else 'fp8' if dt.startswith('fp8') else dt


class Index:
    def __init__(self, groups, cap):
        self.cap = cap
        self.by_group = {}
        for g in groups:
            ratios = {}
            for c, r in zip(g['cfg'], g['ratio']):
                if math.isnan(r):
                    continue
                k = cfg_key(c)
                ratios[k] = min(ratios.get(k, math.inf), r)
            best = min(ratios.values()) if ratios else 1.0
            ratios = {k: min(cap, r / best) for k, r in ratios.items() if r / best < cap}
            dt, m, n, k = g['key']
            self.by_group.setdefault(dtype_group(dt), []).append(
                (math.log2(m), math.log2(n), math.log2(k), g['key'], ratios))

    def nearest(self, key, count):
        dt, m, n, k = key
        lm, ln, lk = math.log2(m), math.log2(n), math.log2(k)
        cand = []
        for e in self.by_group.get(dtype_group(dt), []):
            if e[3][1:] == key[1:]:  # the same M, N, K (tuner_table.h neighbour_evidence's skip_same_shape)
                continue
            cand.append((abs(e[0] - lm) + abs(e[1] - ln) + abs(e[2] - lk), e))
        cand.sort(key=lambda t: t[0])
        return cand[:count]

    def features(self, g, count):
        """Per configuration of group g, the NB_NAMES values."""
        nb = self.nearest(g['key'], count)
        lcap = math.log(self.cap)
        out = []
        for c in g['cfg']:
            k = cfg_key(c)
            if not nb:
                out.append([lcap, lcap, 0.0, 0.0, 99.0])
                continue
            near = math.log(nb[0][1][4].get(k, self.cap))
            sw = sm = sh = 0.0
            for d, e in nb:
                w = 1.0 / (0.25 + d)
                r = e[4].get(k, self.cap)
                sw += w
                sm += w * math.log(r)
                sh += w * (r <= 1.03)
            out.append([near, sm / sw, sh / sw, 0.0, nb[0][0]])
        low = min(v[1] for v in out)
        for v in out:
            v[3] = v[1] - low
        return out


def add(train_groups, test_groups, count=8, cap=1.25):
    """Sets g['nb'] on every group: the training groups' from the other training groups, the test groups' from all."""
    index = Index(train_groups, cap)
    for g in train_groups:
        g['nb'] = index.features(g, count)
    for g in test_groups:
        g['nb'] = index.features(g, count)
