"""The compiled TAN and KDB kernels against the textbook formulas, computed in plain Python from the events.

A model learns a first part of a stream and builds its structure; then it scores and learns the rest
through ``prequential_many`` (runs the compiled kernel takes) and ``predict_proba_one``. Each posterior
must equal P(c | x) ∝ P̂(c) Π_i P̂(x_i | c, x_pa(i)) with the Lidstone estimates counted here from the events
before it, under the structure the model reports.
"""

from __future__ import annotations

import copy
import itertools
import math
import random

import numpy as np
import pandas as pd
import pytest

from stream_nb import EM, KDB, TAN, Decay, EqualFrequency, Parents, Tree
from stream_nb.kernels import compiled
from stream_nb.learners import _kdb_kernel

ALPHA = 0.5


def _stream(n: int, seed: int) -> list:
    """Complete categorical events with dependences between attributes; a value may first appear late."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        y = rng.choice("abc")
        f0 = rng.choice("pq" if y == "a" else "pqr")
        f1 = f0 if rng.random() < 0.6 else rng.choice("pqrs")
        f2 = rng.choice("uv") + (f1 if rng.random() < 0.5 else y)
        f3 = str(rng.randint(0, 3 if i < 250 else 4))  # a fifth value from event 250 on
        f4 = rng.choice(["x", "y"]) if y != "c" else "z"
        out.append(({"f0": f0, "f1": f1, "f2": f2, "f3": f3, "f4": f4}, y))
    return out


def _binary_stream(n: int, seed: int) -> list:
    """Twelve attributes of two values each, some copying the class or each other (LED-like: many values
    shared by long runs, where the kernel counts only the non-decreasing cells of the t-way tables)."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        y = rng.choice("ab")
        x = {f"b{i}": str(rng.randint(0, 1)) for i in range(12)}
        x["b0"] = y if rng.random() < 0.8 else "a"
        x["b1"] = x["b0"] if rng.random() < 0.7 else x["b1"]
        out.append((x, y))
    return out


def _brute_tuples(model, events) -> tuple:
    """The t-way tables counted from ``events`` in plain Python: every ordered t-tuple of an event's
    values, and every (t-1)-tuple with each of its features, in the model's columns."""
    s = model._stats
    t = s.tuples
    tc, tf = np.zeros_like(s.tuple_count), np.zeros_like(s.tuple_feat)
    for x, y in events:
        c = s.class_index[y]
        cols = [s.values[s.feature_index[f]][v] for f, v in x.items()]
        for cells in itertools.product(cols, repeat=t):
            tc[(c, *cells)] += 1
        for cells in itertools.product(cols, repeat=t - 1):
            for f in x:
                tf[(c, *cells, s.feature_index[f])] += 1
    return tc, tf


def _brute_posterior(past: list, x: dict, parents: dict, classes: list) -> dict:
    """P(c | x) by the textbook formula from the events ``past``, each attribute's estimate
    (|D_c, x_pa, x_i| + a) / (|D_c, x_pa| + a N_i), N_i the values of i met so far (x_i included)."""
    joint = {}
    for c in classes:
        of_c = [e for e, y in past if y == c]
        logp = math.log((len(of_c) + ALPHA) / (len(past) + ALPHA * len(classes)))
        for f, v in x.items():
            n_values = len({e[f] for e, _ in past} | {v})
            given = [e for e in of_c if all(e[p] == x[p] for p in parents[f])]
            hits = sum(1 for e in given if e[f] == v)
            logp += math.log((hits + ALPHA) / (len(given) + ALPHA * n_values))
        joint[c] = logp
    top = max(joint.values())
    z = sum(math.exp(v - top) for v in joint.values())
    return {c: math.exp(v - top) / z for c, v in joint.items()}


def _tan_parents(model) -> dict:
    parents = {f: () for f in model._stats.features}
    parents.update({child: (par,) for par, child, _ in model.tree})
    return parents


def _kdb_parents(model) -> dict:
    return {f: tuple(pa) for f, pa in model.structure.items()}


CASES = {
    "tan": (lambda: TAN(alpha=ALPHA, numeric=EqualFrequency(), search=Tree(rebuild_every=0)), _tan_parents, _stream),
    "tan-binary": (lambda: TAN(alpha=ALPHA, search=Tree(rebuild_every=0)), _tan_parents, _binary_stream),  # two layers
    "kdb1": (lambda: KDB(k=1, alpha=ALPHA, search=Parents(0)), _kdb_parents, _stream),
    "kdb2": (lambda: KDB(k=2, alpha=ALPHA, search=Parents(0)), _kdb_parents, _stream),
    "kdb2-binary": (lambda: KDB(k=2, alpha=ALPHA, search=Parents(0)), _kdb_parents, _binary_stream),
    "kdb3": (lambda: KDB(k=3, alpha=ALPHA, search=Parents(0)), _kdb_parents, _stream),
}


@pytest.mark.parametrize("name", list(CASES))
def test_the_kernel_scores_and_counts_as_the_textbook_formula(name, monkeypatch):
    make, parents_of, events = CASES[name]
    stream = events(400, seed=5)
    model = make()
    for x, y in stream[:100]:
        model.learn_one(x, y)
    model.rebuild()
    parents = parents_of(model)
    assert any(parents.values()), "a structure with attribute parents"
    s = model._stats
    assert not s.pairs_sparse and not s.tuples_sparse  # the kernel's store (one layer, or two)
    taken = []
    run = model._kernel_run

    def spying(xs, start, stop, *args):
        taken.append(stop - start)
        return run(xs, start, stop, *args)

    monkeypatch.setattr(model, "_kernel_run", spying)
    xs, ys = [x for x, _ in stream[100:]], [y for _, y in stream[100:]]
    results = model.prequential_many(xs, ys)
    assert sum(taken) >= 0.9 * len(xs)  # scored and learned in the kernel, but where a new value ends a run
    classes = sorted({y for _, y in stream[:100]})
    for i, (x, (_, proba)) in enumerate(zip(xs, results)):
        want = _brute_posterior(stream[: 100 + i], x, parents, classes)
        assert proba.keys() == want.keys()
        for c, p in want.items():
            assert proba[c] == pytest.approx(p, rel=1e-9, abs=1e-300)
    if s.tuples:  # the whole t-way tables, as a rebuild and the numpy paths read them
        tc, tf = _brute_tuples(model, stream)
        np.testing.assert_array_equal(s.tuple_count, tc)
        np.testing.assert_array_equal(s.tuple_feat, tf)
    first = next(iter(xs[0]))
    for x in xs[:50] + [{**xs[0], first: "never seen"}]:  # the one-event path, over every event learned
        want = _brute_posterior(stream, x, parents, classes)
        got = model.predict_proba_one(x)
        for c, p in want.items():
            assert got[c] == pytest.approx(p, rel=1e-9)


def _brute_backoff_posterior(past: list, x: dict, parents: dict, classes: list, m: float, to: str) -> dict:
    """P(c | x) with the back-off estimate, by hand from the events ``past``: a root's estimate as above;
    a child's (|D_c,u,v| + m P̂_0) / (|D_c,u| + m), P̂_0 = (|D_c,v| + a) / (|D_c| + a N_i) (``to="class"``)
    or (|D_u,v| + a) / (|D_u| + a N_i) over every class (``to="parent"``)."""
    joint = {}
    for c in classes:
        of_c = [e for e, y in past if y == c]
        logp = math.log((len(of_c) + ALPHA) / (len(past) + ALPHA * len(classes)))
        for f, v in x.items():
            n_values = len({e[f] for e, _ in past} | {v})
            own = (sum(1 for e in of_c if e[f] == v) + ALPHA) / (len(of_c) + ALPHA * n_values)
            if not parents[f]:
                logp += math.log(own)
                continue
            if to == "parent":
                any_c = [e for e, _ in past if all(e[p] == x[p] for p in parents[f])]
                own = (sum(1 for e in any_c if e[f] == v) + ALPHA) / (len(any_c) + ALPHA * n_values)
            given = [e for e in of_c if all(e[p] == x[p] for p in parents[f])]
            logp += math.log((sum(1 for e in given if e[f] == v) + m * own) / (len(given) + m))
        joint[c] = logp
    top = max(joint.values())
    z = sum(math.exp(v - top) for v in joint.values())
    return {c: math.exp(v - top) / z for c, v in joint.items()}


@pytest.mark.parametrize("to", ["parent", "class"])
@pytest.mark.parametrize("budget", [None, 0], ids=["kernel", "sparse"])
def test_tan_backoff_scores_as_the_m_estimate_by_hand_in_the_kernel_the_one_event_and_the_sparse_paths(budget, to):
    m = 3.0
    stream = _stream(300, seed=7)
    search = Tree(rebuild_every=0, backoff=m, backoff_to=to)
    model = TAN(alpha=ALPHA, numeric=EqualFrequency(), search=search, memory_budget=budget)
    for x, y in stream[:100]:
        model.learn_one(x, y)
    model.rebuild()
    parents = _tan_parents(model)
    assert any(parents.values()) and model._stats.pairs_sparse == (budget == 0)
    xs, ys = [x for x, _ in stream[100:]], [y for _, y in stream[100:]]
    results = model.prequential_many(xs, ys)  # the kernel's runs (dense) or numpy's (sparse)
    classes = sorted({y for _, y in stream[:100]})
    for i, (x, (_, proba)) in enumerate(zip(xs, results)):
        want = _brute_backoff_posterior(stream[: 100 + i], x, parents, classes, m, to)
        for c, p in want.items():
            assert proba[c] == pytest.approx(p, rel=1e-9, abs=1e-300)
    laplace = TAN(alpha=ALPHA, numeric=EqualFrequency(), search=Tree(rebuild_every=0), memory_budget=budget)
    for x, y in stream:
        laplace.learn_one(x, y)
    laplace.rebuild()
    for x in xs[:30]:  # the one-event path
        want = _brute_backoff_posterior(stream, x, parents, classes, m, to)
        got = model.predict_proba_one(x)
        assert all(got[c] == pytest.approx(p, rel=1e-9) for c, p in want.items())
        assert got != laplace.predict_proba_one(x)  # the option changes the estimate
    # a missing root: summed out along the tree (its children's estimates in the sum), as by hand
    root = model.root
    x = {f: v for f, v in xs[0].items() if f != root}
    joint = {c: 0.0 for c in classes}
    for value in sorted({e[root] for e, _ in stream}):
        p = _brute_backoff_posterior(stream, {**x, root: value}, parents, classes, m, to)
        w = _brute_joint_scale(stream, {**x, root: value}, parents, classes, m, to)
        for c in classes:
            joint[c] += p[c] * w
    z = sum(joint.values())
    got = model.predict_proba_one(x)
    assert all(got[c] == pytest.approx(joint[c] / z, rel=1e-9) for c in classes)


def _brute_joint_scale(past, x, parents, classes, m, to) -> float:
    """Σ_c P(c, x) under the back-off estimates (the normaliser of :func:`_brute_backoff_posterior`)."""
    total = 0.0
    for c in classes:
        of_c = [e for e, y in past if y == c]
        p = (len(of_c) + ALPHA) / (len(past) + ALPHA * len(classes))
        for f, v in x.items():
            n_values = len({e[f] for e, _ in past} | {v})
            own = (sum(1 for e in of_c if e[f] == v) + ALPHA) / (len(of_c) + ALPHA * n_values)
            if parents[f]:
                if to == "parent":
                    any_c = [e for e, _ in past if all(e[q] == x[q] for q in parents[f])]
                    own = (sum(1 for e in any_c if e[f] == v) + ALPHA) / (len(any_c) + ALPHA * n_values)
                given = [e for e in of_c if all(e[q] == x[q] for q in parents[f])]
                own = (sum(1 for e in given if e[f] == v) + m * own) / (len(given) + m)
            p *= own
        total += p
    return total


_COUNTS = ("class_count", "value_count", "feat_count", "pair_count", "pair_feat", "tuple_count", "tuple_feat")


@pytest.mark.parametrize("options", [{}, {"forgetting": Decay(half_life=40)}, {"drift_detector": "ddm"},
                                     {"missing": EM()}], ids=["plain", "decay", "ddm", "em-twin"])
def test_kdb_long_runs_count_and_score_as_one_event_at_a_time(options, monkeypatch):
    """A run long enough to be counted in packed cells and written to the symmetric tables at its end
    (``prequential_many``) leaves every table as the one-event loop leaves it, and scores each event as it does.
    With missing values (``em-twin``) the incomplete events are learned by EM (fractional counts), and the
    complete ones after them fill the observed-only twin tables in the kernel too."""
    stream = _binary_stream(400, seed=11)
    if "missing" in options:  # some early events miss an attribute: the store keeps observed-only twins
        stream = [({f: v for f, v in x.items() if not (i < 80 and i % 7 == 3 and f == "b5")}, y)
                  for i, (x, y) in enumerate(stream)]
    models = [KDB(k=2, alpha=ALPHA, search=Parents(0), **options) for _ in range(2)]
    for model in models:
        for x, y in stream[:80]:
            model.learn_one(x, y)
        model.rebuild()
    long, loop = models
    taken = []
    run = long._kernel_run

    def spying(xs, start, stop, *args):
        taken.append(stop - start)
        return run(xs, start, stop, *args)

    monkeypatch.setattr(long, "_kernel_run", spying)
    xs, ys = [x for x, _ in stream[80:]], [y for _, y in stream[80:]]
    got = long.prequential_many(xs, ys)
    want = [loop.prequential_one(x, y) for x, y in zip(xs, ys)]
    assert max(taken) >= 100  # runs past the packed counting's threshold (some 60 events on this stream)
    for (prediction, proba), step in zip(got, want):
        assert prediction == step.prediction
        assert proba == pytest.approx(step.proba, rel=1e-12)
    a, b = long._stats, loop._stats
    assert a.keeps_observed == ("missing" in options)
    for name in _COUNTS + (tuple("obs_" + n for n in _COUNTS[1:]) if a.keeps_observed else ()):
        # EM's expected counts are fractions: a complete event's pairs, added once a run, may round differently
        np.testing.assert_allclose(getattr(a, name), getattr(b, name), rtol=1e-12 if "missing" in options else 0,
                                   err_msg=name)


def test_the_end_of_a_packed_run_writes_every_cell_as_its_sorted_packed_cell_over_the_values_met():
    """The end of a long run, against the tables by hand: every cell (a, b, l) over the run's values (not
    consecutive columns) of a class it learned takes its non-decreasing packed cell, and each of its pairs
    (a, b) its packed pair, added once to the pair table and, for each of the block's features (not
    consecutive either), to the t-way table of features; cells outside those values and classes stay."""
    from stream_nb.kernels import compiled

    k = compiled()
    rng = np.random.default_rng(5)
    C, V, Ft = 3, 9, 7
    U = np.array([1, 2, 4, 5, 8], dtype=np.int64)
    nU = len(U)
    learned = np.array([True, False, True])
    dfeats = np.array([0, 2, 3, 6], dtype=np.int64)
    off, P = np.empty(nU, dtype=np.int64), np.empty(nU, dtype=np.int64)
    k.triangle_offsets(nU, off, P)
    T3, T2 = nU * (nU + 1) * (nU + 2) // 6, nU * (nU + 1) // 2
    L3 = rng.integers(0, 50, C * T3).astype(float)
    P2 = rng.integers(0, 3, C * T2).astype(float)
    tc = rng.integers(0, 50, C * V**3).astype(float)
    tf = rng.integers(0, 50, C * V * V * Ft).astype(float)
    pc, pf = rng.integers(0, 50, (C, V, V)).astype(float), rng.integers(0, 50, (C, V, Ft)).astype(float)
    tc0, tf0, pc0, pf0 = tc.copy(), tf.copy(), pc.copy(), pf.copy()
    packed3, packed2 = {}, {}  # the packed cells by their value ranks (i <= j <= l), counted as the kernel lays them
    for c in range(C):
        n3 = n2 = 0
        for i in range(nU):
            for j in range(i, nU):
                packed2[c, i, j] = P2[c * T2 + n2]
                n2 += 1
                for l in range(j, nU):
                    packed3[c, i, j, l] = L3[c * T3 + n3]
                    n3 += 1
    k.scatter_triples(U, nU, learned, V, off, P, T3, L3, tc)
    k.flush_pairs(U, nU, learned, dfeats, P, T2, P2, V, Ft, tf, pc, pf)
    want_tc, want_tf, want_pc, want_pf = (tc0.reshape(C, V, V, V).copy(), tf0.reshape(C, V, V, Ft).copy(),
                                          pc0.copy(), pf0.copy())
    for c in np.flatnonzero(learned):
        for i, j in itertools.product(range(nU), repeat=2):
            x = packed2[(c, *sorted((i, j)))]
            want_pc[c, U[i], U[j]] += x
            want_tf[c, U[i], U[j], dfeats] += x
            if i == j:
                want_pf[c, U[i], dfeats] += x
            for l in range(nU):
                want_tc[c, U[i], U[j], U[l]] = packed3[(c, *sorted((i, j, l)))]
    np.testing.assert_array_equal(tc.reshape(C, V, V, V), want_tc)
    np.testing.assert_array_equal(tf.reshape(C, V, V, Ft), want_tf)
    np.testing.assert_array_equal(pc, want_pc)
    np.testing.assert_array_equal(pf, want_pf)

# KDB's long runs (t = 3) take the packed cells the store's last run left when nothing has written to its
# t-way table since (stream_nb.learners._kdb_kernel._KEPT): interleaved with every other writer of the counts
# (one event learned or unlearned, a merge, decay, a copy, a rebuild) they count and score exactly as a model
# that copies the cells from the table before every run.


class _NeverKept(dict):
    """A store of kept cells that keeps none: every run copies its cells from the table."""

    def __setitem__(self, key, value) -> None:
        pass


@pytest.mark.parametrize("options", [{}, {"forgetting": Decay(half_life=60)}], ids=["plain", "decay"])
def test_runs_that_take_the_kept_cells_count_and_score_as_runs_that_copy_them(options, monkeypatch):
    stream = _binary_stream(1400, seed=3)
    other = KDB(k=2, alpha=0.5, search=Parents(0), **options)
    for x, y in _binary_stream(150, seed=4):
        other.learn_one(x, y)
    kept, fresh = (KDB(k=2, alpha=0.5, search=Parents(0), **options) for _ in range(2))
    for model in (kept, fresh):
        for x, y in stream[:80]:
            model.learn_one(x, y)
        model.rebuild()
    taken = []  # per kernel call: whether it was given kept cells
    kernel = compiled().kdb_block

    def spying(*args):
        taken.append(len(args[-1]) > 0)
        return kernel(*args)

    monkeypatch.setattr(compiled(), "kdb_block", spying)
    pos, reused = 80, []

    def run(models, n=120):
        """The next ``n`` events through ``prequential_many`` of each of ``models`` (the second without kept
        cells): the same predictions and probabilities, bit for bit."""
        nonlocal pos
        xs, ys = [x for x, _ in stream[pos:pos + n]], [y for _, y in stream[pos:pos + n]]
        pos += n
        (a, b), calls = models, len(taken)
        got_a = a.prequential_many(xs, ys)
        reused.append(any(taken[calls:]))
        calls = len(taken)
        with monkeypatch.context() as m:
            m.setattr(_kdb_kernel, "_KEPT", _NeverKept())
            got_b = b.prequential_many(xs, ys)
        assert not any(taken[calls:])
        assert [p for p, _ in got_a] == [p for p, _ in got_b]
        assert [proba for _, proba in got_a] == [proba for _, proba in got_b]

    def same(a, b):
        for name in _COUNTS:
            np.testing.assert_array_equal(getattr(a._stats, name), getattr(b._stats, name), err_msg=name)

    pair = (kept, fresh)
    run(pair)
    run(pair)
    assert reused == [False, True]  # the second run took the first's cells
    rows = stream[1300:1320]
    frame = pd.DataFrame([x for x, _ in rows])
    writes = [
        lambda model: model.learn_one(*stream[1320]),  # an event counted one at a time, between two runs
        lambda model: model.learn_many(frame, pd.Series([y for _, y in rows])),  # a block counted
        lambda model: model.merge(copy.deepcopy(other)),
        lambda model: model.rebuild(),
        lambda model: model.state(),  # a reader: the cells stay kept
    ]
    if not options:
        writes.append(lambda model: model.unlearn_one(*stream[10]))
    for write in writes:
        for model in pair:
            write(model)
        same(kept, fresh)
        run(pair)
        run(pair)
        same(kept, fresh)
    assert sum(reused) >= len(writes)  # (the run after each write's next one at least)
    # a copy (or a pickle) does not take the kept cells with it, and both go on as the model without them
    twin = copy.deepcopy(kept)
    before = pos
    run((twin, copy.deepcopy(fresh)))
    assert not reused[-1]
    pos = before
    run(pair)
    same(kept, fresh)
    same(twin, fresh)
