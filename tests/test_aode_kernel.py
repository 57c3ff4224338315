"""AODE and SPODE against the textbook formulas, computed in plain Python from counts kept here.

The models score through their compiled kernels (runs of ``prequential_many``, and single events); the
reference below counts the stream itself (``missing="ignore"``: each count over the events that observed
the attributes involved) and evaluates Zhou's eq. 7.23-7.25 (AODE, with Lidstone's alpha and the
frequency limit m, naive Bayes when no value qualifies) or the one super-parent's estimator, summed over
its values when it is missing. A value never seen counts nothing and one more value of its attribute.
"""

from __future__ import annotations

import math
import random
from collections import Counter

import numpy as np
import pytest

from stream_nb import AODE, SPODE, EqualFrequency, Ignore, SuperParent, SuperParents
from stream_nb.kernels import NO_DETECTOR, compiled
from stream_nb.kernels._spodes import chunk


class Counts:
    """The counts of the labelled events learned so far, as the textbook names them."""

    def __init__(self):
        self.n = 0
        self.cls = Counter()  # |D_c|
        self.feat = Counter()  # |D_i|: events observing attribute i
        self.feat_c = Counter()  # |D_c; i|
        self.val = Counter()  # |D_xi| per (i, v); |D_c,xi| per (c, i, v)
        self.val_c = Counter()
        self.pair = Counter()  # |D_c,xi,xj| per (c, i, v, j, w)
        self.pair_f = Counter()  # |D_c,xi; j| per (c, i, v, j): class-c events with x_i that observed j
        self.values = {}  # attribute -> the values seen, in order
        self.classes = []

    def learn(self, x, y):
        if y not in self.classes:
            self.classes.append(y)
        self.n += 1
        self.cls[y] += 1
        for i, v in x.items():
            self.values.setdefault(i, [])
            if v not in self.values[i]:
                self.values[i].append(v)
            self.feat[i] += 1
            self.feat_c[y, i] += 1
            self.val[i, v] += 1
            self.val_c[y, i, v] += 1
            for j, w in x.items():
                self.pair[y, i, v, j, w] += 1
                self.pair_f[y, i, v, j] += 1

    def n_values(self, i, v):
        """N_i: the values of attribute i seen, and one more for a value never seen."""
        seen = self.values.get(i, [])
        return len(seen) + (v not in seen)


def spode(counts, a, x, c, i):
    """P̂(c, x_i) Π_{j≠i} P̂(x_j | c, x_i)."""
    v = x[i]
    p = (counts.val_c[c, i, v] + a) / (counts.feat[i] + a * counts.n_values(i, v))
    for j, w in x.items():
        if j != i:
            p *= (counts.pair[c, i, v, j, w] + a) / (counts.pair_f[c, i, v, j] + a * counts.n_values(j, w))
    return p


def naive(counts, a, x, c):
    """P̂(c) Π_i P̂(x_i | c)."""
    p = (counts.cls[c] + a) / (counts.n + a * len(counts.classes))
    for i, v in x.items():
        p *= (counts.val_c[c, i, v] + a) / (counts.feat_c[c, i] + a * counts.n_values(i, v))
    return p


def normalised(joint: dict) -> dict:
    z = sum(joint.values())
    return {c: p / z for c, p in joint.items()}


def aode_proba(counts, a, m, x):
    parents = [i for i, v in x.items() if counts.val[i, v] >= m]
    if not parents:
        return normalised({c: naive(counts, a, x, c) for c in counts.classes})
    return normalised({c: sum(spode(counts, a, x, c, i) for i in parents) for c in counts.classes})


def spode_proba(counts, a, parent, x):
    if parent in x:
        return normalised({c: spode(counts, a, x, c, parent) for c in counts.classes})
    return normalised({c: sum(spode(counts, a, {**x, parent: t}, c, parent) for t in counts.values[parent])
                       for c in counts.classes})


def stream(n, seed):
    """Events of 6 categorical attributes (one of them noise) with holes; some unlabelled, some of those
    with a value no label has taught."""
    rng = random.Random(seed)
    out = []
    for k in range(n):
        base = rng.randrange(3)
        x = {"a": f"a{base}", "b": f"b{(base + rng.randrange(2)) % 3}", "c": f"c{rng.randrange(4)}",
             "d": f"d{(base * 2 + rng.randrange(2)) % 5}", "e": f"e{rng.randrange(2)}", "noise": f"n{rng.randrange(6)}"}
        y = "yes" if (base + int(x["c"][1])) % 3 else "no"
        if k % 9 == 4:
            del x[rng.choice(list(x))]  # a missing value
        if k % 13 == 6:
            y = None  # unlabelled: predicted only
            if k % 2:
                x["c"] = f"c-new{k}"  # a value never learned
        out.append((x, y))
    return out


def check(got: dict, want: dict) -> None:
    assert got.keys() == want.keys()
    for c in want:
        assert got[c] == pytest.approx(want[c], rel=1e-9, abs=1e-15)


MODELS = [
    ("aode", lambda: AODE(alpha=0.5, missing=Ignore()), lambda k, x: aode_proba(k, 0.5, 1, x)),
    ("aode-m", lambda: AODE(numeric=EqualFrequency(), missing=Ignore(), search=SuperParents(m=12)),
     lambda k, x: aode_proba(k, 1.0, 12, x)),
    ("spode", lambda: SPODE(alpha=2.0, missing=Ignore(), search=SuperParent(parent="d")), lambda k, x: spode_proba(k, 2.0, "d", x)),
]


@pytest.mark.parametrize("make, reference", [(m, r) for _, m, r in MODELS], ids=[n for n, _, _ in MODELS])
@pytest.mark.parametrize("batch", [1, 50])
def test_the_kernels_give_the_textbook_estimators(make, reference, batch):
    """prequential_many (runs through the kernel; one event at a time with batch 1) and predict_proba_one
    of probe events (missing and unseen values) equal the textbook formula over the counts of the events
    learned before each."""
    events = stream(400, seed=1)
    probes = [x for x, _ in stream(30, seed=2)]
    model, counts = make(), Counts()
    xs, ys = [x for x, _ in events], [y for _, y in events]
    for lo in range(0, len(events), batch):
        results = model.prequential_many(xs[lo : lo + batch], ys[lo : lo + batch])
        for (x, y), (_, proba) in zip(events[lo : lo + batch], results):
            if counts.classes:
                check(proba, reference(counts, x))
            if y is not None:
                counts.learn(x, y)
        for x in probes[:3]:
            check(model.predict_proba_one(x), reference(counts, x))


def test_the_running_scores_of_spode_are_the_log_loss_of_each_candidate():
    """SPODE(parent=None): each candidate super-parent's running score is its mean log loss on the true
    class of each labelled event before learning it, computed here from the textbook SPODE."""
    events = [(x, y) for x, y in stream(300, seed=3) if y is not None and len(x) == 6]
    model, counts = SPODE(missing=Ignore(), search=SuperParent(rebuild_every=0)), Counts()
    loss, seen = Counter(), Counter()
    xs, ys = [x for x, _ in events], [y for _, y in events]
    for lo in range(0, len(events), 40):
        model.prequential_many(xs[lo : lo + 40], ys[lo : lo + 40])
        for x, y in events[lo : lo + 40]:
            if y in counts.classes:  # a class never seen has probability 0 under every candidate: no score
                for i in x:
                    joint = {c: spode(counts, 1.0, x, c, i) for c in counts.classes}
                    loss[i] -= math.log(joint[y] / sum(joint.values()))
                    seen[i] += 1
            counts.learn(x, y)
    want = {i: loss[i] / seen[i] for i in seen}
    assert model.scores.keys() == want.keys()
    for i in want:
        assert model.scores[i] == pytest.approx(want[i], rel=1e-9)


def test_products_past_the_range_of_a_double_are_logged_on_the_way():
    """With counts so large that a few factors would leave the range of a double, the kernel logs its
    products every :func:`chunk` factors: the same posterior as the one-event formula in logs."""
    k = compiled()
    C, F, V = 2, 12, 25
    rng = np.random.default_rng(0)
    big = 1e60
    cc = np.array([big, big])
    vc = np.zeros((C, V))
    fc = np.full((C, F), big)
    pc, pf = np.zeros((C, V, V)), np.zeros((C, V, F))
    vf = np.r_[-1, np.repeat(np.arange(F), 2)]
    for c in range(C):
        for f in range(F):
            share = rng.uniform(0.2, 0.8)
            vc[c, 1 + 2 * f], vc[c, 2 + 2 * f] = share * big, (1 - share) * big
    for c in range(C):
        for u in range(1, V):
            pf[c, u, :] = vc[c, u]
            for w in range(1, V):
                pc[c, u, w] = vc[c, u] * vc[c, w] / big if vf[u] != vf[w] else (vc[c, u] if u == w else 0.0)
    n_values = np.full(F, 2)
    assert chunk(cc.sum(), 1.0, 3.0) < F  # the products must be logged on the way
    D = np.array([[1 + 2 * f + (f % 2) for f in range(F)]])
    cols = D[0]
    chosen = np.triu(rng.random((F, F)) < 0.3, 1)
    # every attribute a child of each super-parent, and each SPODE's children chosen (the others given the class)
    for children in (np.zeros((0, 0), dtype=np.int8), (chosen | chosen.T).astype(np.int8)):
        out = np.empty((1, C))
        k.aode_block(D, np.arange(F), np.zeros((0, 0), dtype=np.int64), np.array([-1]), np.zeros(0), np.zeros(0),
                     False, C, 1.0, 1.0, np.zeros(0, dtype=np.int8), children, cc, vc, fc, n_values, pc, pf, vf,
                     np.zeros((0, 0)), False, True, out, np.zeros((0, 0)), *NO_DETECTOR)
        want = []
        for c in range(C):
            terms = []
            for i, u in enumerate(cols):
                t = math.log(vc[c, u] + 1.0) - math.log(fc[:, i].sum() + 2.0)
                t += sum(math.log((pc[c, u, w] + 1.0) / (pf[c, u, j] + 2.0)) if not len(children) or children[i, j]
                         else math.log((vc[c, w] + 1.0) / (fc[c, j] + 2.0)) for j, w in enumerate(cols) if j != i)
                terms.append(t)
            top = max(terms)
            want.append(top + math.log(sum(math.exp(t - top) for t in terms)))
        np.testing.assert_allclose(out[0], want, rtol=1e-12)
