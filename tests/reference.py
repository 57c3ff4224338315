"""Brute-force references: the seeds' formulas computed with plain loops over the raw events.

Nothing here touches stream_nb's counts; every probability is recounted from
the list of (x, y) events, so agreement with the models is independent
evidence.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter


def _observed(x, f):
    v = x.get(f)
    return v is not None and not (isinstance(v, float) and math.isnan(v))


def values_of(events, f):
    """Distinct values of feature f, in order of appearance."""
    return list(dict.fromkeys(x[f] for x, _ in events if _observed(x, f)))


def class_prior(events, alpha):
    classes = list(dict.fromkeys(y for _, y in events))
    n = Counter(y for _, y in events)
    return {c: (n[c] + alpha) / (len(events) + alpha * len(classes)) for c in classes}


def p_value_given_class(events, f, v, c, alpha):
    """(|D_c,v| + α) / (|D_c| + α N_f), D_c over the class-c events where f was observed."""
    n_f = len(values_of(events, f)) + (v not in values_of(events, f))
    d_c = [x for x, y in events if y == c and _observed(x, f)]
    return (sum(1 for x in d_c if x[f] == v) + alpha) / (len(d_c) + alpha * n_f)


def naive_bayes_posterior(events, x, alpha):
    prior = class_prior(events, alpha)
    known = {f for z, _ in events for f in z if _observed(z, f)}
    score = {}
    for c, p in prior.items():
        for f, v in x.items():
            if f in known and _observed(x, f):
                p *= p_value_given_class(events, f, v, c, alpha)
        score[c] = p
    z = sum(score.values())
    return {c: s / z for c, s in score.items()}


def aode_posterior(events, x, alpha, m):
    """The seeds' AODE with |D| and |D_c,xi| over events where the attributes were observed."""
    classes = list(dict.fromkeys(y for _, y in events))
    feats = [f for f in x if _observed(x, f) and values_of(events, f)]
    n_vals = {f: len(values_of(events, f)) + (x[f] not in values_of(events, f)) for f in feats}
    score = {c: 0.0 for c in classes}
    parents = [i for i in feats if sum(1 for z, _ in events if z.get(i) == x[i]) >= m]
    if not parents:
        return naive_bayes_posterior(events, x, alpha)
    for c in classes:
        for i in parents:
            d_i = sum(1 for z, _ in events if _observed(z, i))
            d_cxi = [z for z, y in events if y == c and z.get(i) == x[i]]
            p = (len(d_cxi) + alpha) / (d_i + alpha * n_vals[i])
            for j in feats:
                if j == i:
                    continue
                d_cxi_j = [z for z in d_cxi if _observed(z, j)]
                p *= (sum(1 for z in d_cxi_j if z[j] == x[j]) + alpha) / (len(d_cxi_j) + alpha * n_vals[j])
            score[c] += p
    z = sum(score.values())
    return {c: s / z for c, s in score.items()}


def cmi(events, i, j):
    """I(x_i; x_j | y) by the definition, over events where both were observed."""
    both = [(x[i], x[j], y) for x, y in events if _observed(x, i) and _observed(x, j)]
    n = len(both)
    if not n:
        return 0.0
    nij = Counter(both)
    nic = Counter((a, c) for a, _, c in both)
    njc = Counter((b, c) for _, b, c in both)
    nc = Counter(c for _, _, c in both)
    total = 0.0
    for (a, b, c), k in nij.items():
        total += k / n * math.log((k / nc[c]) / ((nic[a, c] / nc[c]) * (njc[b, c] / nc[c])))
    return total


def best_spanning_tree_weight(weights, nodes):
    """The maximum total weight over every spanning tree, by enumeration (small graphs only)."""
    nodes = list(nodes)
    edges = list(itertools.combinations(nodes, 2))
    best = -math.inf
    for subset in itertools.combinations(edges, len(nodes) - 1):
        parent = {n: n for n in nodes}

        def find(a):
            while parent[a] != a:
                a = parent[a]
            return a

        ok = True
        for a, b in subset:
            ra, rb = find(a), find(b)
            if ra == rb:
                ok = False
                break
            parent[ra] = rb
        if ok:
            best = max(best, sum(weights[a][b] for a, b in subset))
    return best


def tan_joint(events, x, c, tree, alpha):
    """P(c) Π P(x_i | c, x_pa(i)) for a complete assignment x, given tree {child: parent}."""
    prior = class_prior(events, alpha)[c]
    p = prior
    for f, v in x.items():
        vals = values_of(events, f)
        n_f = len(vals) + (v not in vals)
        pa = tree.get(f)
        if pa is None:
            p *= p_value_given_class(events, f, v, c, alpha)
        else:
            ctx = [z for z, y in events if y == c and z.get(pa) == x[pa] and _observed(z, f)]
            p *= (sum(1 for z in ctx if z[f] == v) + alpha) / (len(ctx) + alpha * n_f)
    return p


def tan_posterior(events, x, tree, alpha, features):
    """Posterior with missing features of ``features`` summed out by brute-force enumeration."""
    classes = list(dict.fromkeys(y for _, y in events))
    missing = [f for f in features if not _observed(x, f)]
    observed = {f: v for f, v in x.items() if f in features and _observed(x, f)}
    score = {}
    for c in classes:
        total = 0.0
        for combo in itertools.product(*[values_of(events, f) for f in missing]):
            full = dict(observed)
            full.update(zip(missing, combo))
            total += tan_joint(events, full, c, tree, alpha)
        score[c] = total
    z = sum(score.values())
    return {c: s / z for c, s in score.items()}


def spode_posterior(events, x, parent, alpha):
    """The seeds' SPODE with super-parent ``parent``; a missing parent is summed out."""
    classes = list(dict.fromkeys(y for _, y in events))
    feats = [f for f in x if f != parent and _observed(x, f) and values_of(events, f)]
    n_vals = {f: len(values_of(events, f)) + (x[f] not in values_of(events, f)) for f in feats}
    pvals = [x[parent]] if _observed(x, parent) else values_of(events, parent)
    n_p = len(values_of(events, parent)) + (_observed(x, parent) and x[parent] not in values_of(events, parent))
    d_p = sum(1 for z, _ in events if _observed(z, parent))
    score = {}
    for c in classes:
        total = 0.0
        for t in pvals:
            d_ct = [z for z, y in events if y == c and z.get(parent) == t]
            p = (len(d_ct) + alpha) / (d_p + alpha * n_p)
            for j in feats:
                d_ctj = [z for z in d_ct if _observed(z, j)]
                p *= (sum(1 for z in d_ctj if z[j] == x[j]) + alpha) / (len(d_ctj) + alpha * n_vals[j])
            total += p
        score[c] = total
    z = sum(score.values())
    return {c: s / z for c, s in score.items()}


def mi_class(events, f):
    """I(x_f; y) by the definition, over the events where f was observed."""
    obs = [(x[f], y) for x, y in events if _observed(x, f)]
    n = len(obs)
    if not n:
        return 0.0
    nvy, nv, ny = Counter(obs), Counter(v for v, _ in obs), Counter(y for _, y in obs)
    return sum(k / n * math.log(k * n / (nv[v] * ny[y])) for (v, y), k in nvy.items())


def kdb_structure(events, features, k):
    """Sahami's rule: order by I(x; y), parents = the k earlier attributes of highest I(x_i; x_j | y)."""
    order = sorted(features, key=lambda f: (-mi_class(events, f), str(f)))
    parents = {}
    for pos, f in enumerate(order):
        earlier = sorted(order[:pos], key=lambda g: (-cmi(events, f, g), str(g)))
        parents[f] = earlier[:k]
    return order, parents


def kdb_posterior(events, x, parents, alpha, features):
    """P(c | x_obs) for a KDB with the given parents, missing attributes summed out by enumeration."""
    classes = list(dict.fromkeys(y for _, y in events))
    prior = class_prior(events, alpha)
    missing = [f for f in features if not _observed(x, f)]
    observed = {f: v for f, v in x.items() if f in features and _observed(x, f)}

    def cond(full, f, c):
        vals = values_of(events, f)
        n_f = len(vals) + (full[f] not in vals)
        ctx = [z for z, y in events if y == c and all(z.get(p) == full[p] for p in parents[f]) and _observed(z, f)]
        return (sum(1 for z in ctx if z[f] == full[f]) + alpha) / (len(ctx) + alpha * n_f)

    score = {}
    for c in classes:
        total = 0.0
        for combo in itertools.product(*[values_of(events, f) for f in missing]):
            full = dict(observed)
            full.update(zip(missing, combo))
            p = prior[c]
            for f in features:
                p *= cond(full, f, c)
            total += p
        score[c] = total
    z = sum(score.values())
    return {c: s / z for c, s in score.items()}


# ---------------------------------------------------------------- EM's E-step by enumeration


class RawCounts:
    """Counts recomputed from the raw events, each over the events in which the features involved were observed."""

    def __init__(self, events):
        self.events = list(events)
        self._memo = {}

    def n(self, c, fixed, observed=()):
        """Events of class ``c`` (None: any class) whose features ``fixed`` took those values
        and whose features ``observed`` were observed."""
        key = (c, tuple(sorted(fixed.items(), key=repr)), tuple(sorted(observed)))
        if key not in self._memo:
            self._memo[key] = sum(
                1 for z, y in self.events
                if (c is None or y == c)
                and all(_observed(z, f) and z[f] == v for f, v in fixed.items())
                and all(_observed(z, f) for f in observed)
            )
        return self._memo[key]

    def n_values(self, f):
        return len(values_of(self.events, f))

    def cond(self, c, f, v, given, alpha):
        """P̂(x_f = v | c, given) = (|D_c,given,v| + α) / (|D_c,given| over f observed + α N_f)."""
        return (self.n(c, {**given, f: v}) + alpha) / (self.n(c, given, [f]) + alpha * self.n_values(f))

    def prior(self, c, alpha):
        classes = list(dict.fromkeys(y for _, y in self.events))
        return (self.n(c, {}) + alpha) / (len(self.events) + alpha * len(classes))


def naive_bayes_joint(rc, z, c, alpha):
    """P̂(c) Π_f P̂(z_f | c) for a complete assignment z."""
    p = rc.prior(c, alpha)
    for f, v in z.items():
        p *= rc.cond(c, f, v, {}, alpha)
    return p


def spode_joint(rc, z, c, parent, alpha):
    """P̂(c, z_p) Π_{j≠p} P̂(z_j | c, z_p): the SPODE whose super-parent is ``parent``."""
    t = z[parent]
    p = (rc.n(c, {parent: t}) + alpha) / (rc.n(None, {}, [parent]) + alpha * rc.n_values(parent))
    for j, v in z.items():
        if j != parent:
            p *= rc.cond(c, j, v, {parent: t}, alpha)
    return p


def kdb_joint(rc, z, c, parents, alpha):
    """P̂(c) Π_f P̂(z_f | c, z_pa(f)) for a KDB with the given ``{feature: [parents]}``."""
    p = rc.prior(c, alpha)
    for f, v in z.items():
        p *= rc.cond(c, f, v, {q: z[q] for q in parents.get(f, [])}, alpha)
    return p


def completions(events, x, features):
    """Every completion of x's missing features (values as seen in the events)."""
    missing = [f for f in features if not _observed(x, f)]
    observed = {f: x[f] for f in features if _observed(x, f)}
    for combo in itertools.product(*[values_of(events, f) for f in missing]):
        z = dict(observed)
        z.update(zip(missing, combo))
        yield z


def expected_counts(events, x, c, features, row_joint, order=2):
    """The expected counts EM adds for the incomplete event (x, c), by enumeration of its completions.

    ``row_joint(rc, z, c, f)``: the joint whose posterior weighs the completions
    for the counts in which feature f comes first (its value counts, its rows
    of the pair and tuple counts). Returns ``{(f, v, g, w, ...): weight}``
    over every ordered ``order``-tuple of features (repeats included; order 1:
    the value counts).
    """
    rc = RawCounts(events)
    zs = list(completions(events, x, features))
    out = Counter()
    for f in features:
        w = [row_joint(rc, z, c, f) for z in zs]
        total = sum(w)
        for z, wz in zip(zs, w):
            for rest in itertools.product(features, repeat=order - 1):
                key = (f, z[f]) + tuple(item for g in rest for item in (g, z[g]))
                out[key] += wz / total
    return out


def loop_and_run(make, stream: list, rel: float = 1e-9) -> tuple:
    """Two models of ``make()``: one through river's loop (``predict_proba_one``, then ``learn_one``), one
    through ``prequential_many``, checked to give the same probabilities at every event (to ``rel``)."""
    loop, run = make(), make()
    seen = []
    for x, y in stream:
        seen.append(loop.predict_proba_one(x))
        loop.learn_one(x, y)
    out = run.prequential_many([x for x, _ in stream], [y for _, y in stream])
    for want, (_, proba) in zip(seen, out):
        assert set(proba) == set(want) and all(math.isclose(proba[c], want[c], rel_tol=rel) for c in want)
    return loop, run


def merged_and_one(make, events: list, cut: int) -> tuple:
    """``(merged, one)``: a model of ``make()`` that learned ``events[:cut]`` merged with one that learned the
    rest, and one that learned them all, rebuilt from its counts (as a merge rebuilds)."""
    one, a, b = make(), make(), make()
    for model, part in ((one, events), (a, events[:cut]), (b, events[cut:])):
        for x, y in part:
            model.learn_one(x, y)
    a.merge(b)
    one.rebuild()
    return a, one
