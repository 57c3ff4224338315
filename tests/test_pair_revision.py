"""A pair selection revised as evidence accumulates (stats/selection/_revision.py), and merged by sums.

Checked against things computed apart from the store: the chi-square tail against its closed forms,
the G statistic against a sum over a stream's events, and every pair's counts against a recount of
the events learned while the store counted that pair (read after each batch, as the batch was counted
under the selection in force at its start). ``SPARSE_FLOOR`` is lowered so that a small stream passes
a small budget.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pandas as pd
import pytest

import stream_nb
from stream_nb import TAN
from stream_nb.stats.budget import _budget
from stream_nb.stats.selection import _candidates, _revision
from stream_nb.stats.selection import chi2_logsf, chi2_sf
from stream_nb.stats.tables import cells_of

BUDGET = 400_000
STEP = _revision.REVISE_EVERY  # batches aligned with the revisions: one selection per batch


@pytest.fixture(autouse=True)
def _selected_sparse_pairs(monkeypatch):
    """These tests check the selections of sparse pairs: TAN keeps them, not the pair blocks that would fit."""
    from stream_nb.stats.budget import Layout

    monkeypatch.setattr(Layout, "blocks_allowed", lambda self, s: False)


@pytest.fixture
def small_floor(monkeypatch):
    monkeypatch.setattr(_budget, "SPARSE_FLOOR", 0)  # the floor that spares small examples, off


def _stream(n, seed=0, features=24, values=4, late=300):
    """f0 carries the class; f2 copies f1 90% of the time; f6 copies f5 90% of the time from event
    ``late`` on (before it, independent: a pair that looks like noise when first tried)."""
    rng = np.random.default_rng(seed)
    X = rng.integers(values, size=(n, features))
    y = rng.integers(2, size=n)
    X[:, 0] = (y + rng.integers(2, size=n)) % values
    copy_ = rng.random(n) < 0.9
    X[copy_, 2] = X[copy_, 1]
    copy_ &= np.arange(n) >= late
    X[copy_, 6] = X[copy_, 5]
    words = np.array([f"v{v}" for v in range(values)], dtype=object)  # categories from the first event
    return pd.DataFrame(words[X], columns=[f"f{i}" for i in range(features)]), pd.Series(y)


def _kept_by_name(s):
    """{(row name, column name)} of the ordered pairs ``s`` counts now (None: all of them): both orders of
    a kept edge, a kept parent's row."""
    k = s.edge_ok()
    if k is None:
        return None
    i, j = np.nonzero(k & ~np.eye(len(k), dtype=bool))
    return {(s.features[a], s.features[b]) for a, b in zip(i.tolist(), j.tolist())}


def _learn(model, X, y, log=None):
    """Batches of STEP events; ``log`` gets, per batch, the pairs counted for it."""
    for lo in range(0, len(X), STEP):
        model.learn_many(X[lo : lo + STEP], y[lo : lo + STEP])
        if log is not None:
            log.append((lo, _kept_by_name(model._stats)))


def _recount(X, y, log):
    """{(class, a, value a, b, value b): count} over the events of the batches since {a, b} was last
    admitted: the run of batches, up to the last, whose selection counted it (a pair dropped loses its
    counts; one admitted again starts from none)."""
    out = {}
    names = list(X.columns)
    last = log[-1][1]
    for a in names:
        for b in names:
            pair = (a, b)
            if a == b or (last is not None and pair not in last):
                continue
            since = len(log)
            while since and (log[since - 1][1] is None or pair in log[since - 1][1]):
                since -= 1
            lo = log[since][0]
            for va, vb, c in zip(X[a][lo:].tolist(), X[b][lo:].tolist(), y[lo:].tolist()):
                out[c, a, va, b, vb] = out.get((c, a, va, b, vb), 0) + 1
    return out


def _cells(s):
    """The store's off-diagonal pair cells by names: {(class, a, value a, b, value b): count}."""
    (c, v, w), n = cells_of(s.pair_count, s.pair_count.shape)  # sparse, or dense without a budget
    out = {}
    for ci, vi, wi, ni in zip(c.tolist(), v.tolist(), w.tolist(), n.tolist()):
        fa, fb = int(s.value_feature[vi]), int(s.value_feature[wi])
        if ni and fa != fb:
            key = (s.classes[ci], s.features[fa], s.value_keys[vi], s.features[fb], s.value_keys[wi])
            out[key] = out.get(key, 0) + ni
    return out


# ---------------------------------------------------------------------------------------- the test


@pytest.mark.parametrize("df", [2, 4, 10, 36, 100])
def test_the_chi_square_tail_is_the_closed_form_of_even_degrees_of_freedom(df):
    # P(chi2_2k > x) = exp(-x/2) sum_{i<k} (x/2)^i / i!  (a Poisson tail), summed here in logs
    for x in (0.3, 2.0, df - 1.0, df + 3.0, 3.0 * df, 40.0 * df + 500):
        h = x / 2
        terms = [-h + i * math.log(h) - math.lgamma(i + 1) for i in range(df // 2)]
        top = max(terms)
        want = top + math.log(sum(math.exp(t - top) for t in terms))
        assert chi2_logsf(x, df) == pytest.approx(want, rel=1e-10, abs=1e-12), (df, x)


def test_the_chi_square_tail_of_odd_degrees_of_freedom_is_erfc_s():
    for x in (0.01, 0.5, 3.841, 10.0, 60.0):
        assert chi2_sf(x, 1) == pytest.approx(math.erfc(math.sqrt(x / 2)), rel=1e-10)
        three = math.erfc(math.sqrt(x / 2)) + math.sqrt(2 * x / math.pi) * math.exp(-x / 2)
        assert chi2_sf(x, 3) == pytest.approx(three, rel=1e-10)
    with pytest.raises(ValueError, match="df > 0"):
        chi2_logsf(1.0, 0)


def test_a_pairs_g_statistic_and_p_value_are_those_summed_over_the_events():
    rng = np.random.default_rng(5)
    events = []
    for _ in range(60):
        c = int(rng.integers(2))
        a = int(rng.integers(3))
        b = a if rng.random() < 0.6 else int(rng.integers(3))
        events.append(({"a": a, "b": b, "z": int(rng.integers(3))}, c))
    model = TAN(memory_budget=None)
    for x, c in events:
        model.learn_one(x, c)
    s = model._stats
    g, df, n = _candidates.pair_evidence(s)
    i, j = s.feature_index["a"], s.feature_index["b"]
    # G = 2 sum n(c,a,b) log(n(c,a,b) n(c) / (n(c,a) n(c,b))), from the events themselves
    count = {}
    for x, c in events:
        for key in ((c, x["a"], x["b"]), (c, None, None), (c, x["a"], "*"), (c, "*", x["b"])):
            count[key] = count.get(key, 0) + 1
    want = 2 * sum(m * math.log(m * count[c, None, None] / (count[c, va, "*"] * count[c, "*", vb]))
                   for (c, va, vb), m in count.items() if va not in (None, "*") and vb not in (None, "*"))
    assert g[i, j] == pytest.approx(want, rel=1e-12) and g[j, i] == pytest.approx(want, rel=1e-12)
    assert df[i, j] == 2 * 2 * 2 and n[i, j] == len(events)  # C (|a| - 1)(|b| - 1) = 8, even
    h = want / 2  # the closed form of 8 degrees of freedom
    p = math.exp(-h) * sum(h**k / math.factorial(k) for k in range(4))
    assert math.exp(_candidates.edge_scores(s)[i, j]) == pytest.approx(p, rel=1e-9)


# ---------------------------------------------------------------------------------------- revisions


def test_a_pair_dropped_early_comes_back_with_fresh_counts_and_is_kept_once_they_support_it(small_floor):
    X, y = _stream(3000, late=600)
    model = TAN(memory_budget=BUDGET)
    log = []
    _learn(model, X, y, log)
    counted = [kept is None or ("f5", "f6") in kept for _, kept in log]
    # tried under the selection while independent (from before event 300), dropped, then tried again and kept
    tried = [k for k, (lo, kept) in enumerate(log) if kept is not None and lo < 300 and counted[k]]
    out = counted.index(False, tried[0])
    back = counted.index(True, out)
    assert tried and log[back][0] > 300 and all(counted[back:]), counted
    s = model._stats
    fi = s.feature_index
    assert s.edge_supported()[fi["f5"], fi["f6"]] and s.edge_supported()[fi["f1"], fi["f2"]]
    # its counts start fresh: only the events since it came back (every pair's, by a recount)
    want = _recount(X, y, log)
    assert _cells(s) == want
    _, _, n = _candidates.pair_evidence(s)
    assert n[fi["f5"], fi["f6"]] == len(X) - log[back][0]
    model.rebuild()  # and the tree, over the supported pairs, has both planted edges
    parent = {s.features[c]: s.features[p] for c, p in enumerate(model._parents().tolist()) if p >= 0}
    assert {frozenset(e) for e in parent.items()} >= {frozenset(("f5", "f6")), frozenset(("f1", "f2"))}, parent


def test_a_super_parent_that_comes_to_inform_the_class_comes_back_with_fresh_counts(small_floor):
    """AODE keeps the rows of one super-parent here: f0 (the class half the time) at first; f7 says the
    class from event 400 on, and once its test over every event ranks it first, its rows are counted
    again, from no counts, in f0's place."""
    rng = np.random.default_rng(1)
    n = 1500
    X = rng.integers(4, size=(n, 24))
    y = rng.integers(2, size=n)
    X[:, 0] = np.where(rng.random(n) < 0.5, y, X[:, 0])
    X[400:, 7] = np.where(rng.random(n - 400) < 0.95, 2 * y[400:] + rng.integers(2, size=n - 400), X[400:, 7])
    words = np.array([f"v{v}" for v in range(4)], dtype=object)
    X, y = pd.DataFrame(words[X], columns=[f"f{i}" for i in range(24)]), pd.Series(y)
    model = stream_nb.AODE(memory_budget=BUDGET // 2)  # room for one super-parent's rows
    log = []
    _learn(model, X, y, log)
    assert model.memory_used()["pairs_selected"]["parents"] == ["f7"]
    since = next(lo for lo, kept in log if kept is not None and ("f7", "f1") in kept)
    assert 400 < since < n and all(("f0", "f1") not in kept for lo, kept in log if lo >= since)
    assert _cells(model._stats) == _recount(X, y, log)  # f7's rows hold the events since it came back


def test_the_revisions_are_deterministic(small_floor):
    X, y = _stream(600, seed=2)
    runs = [TAN(memory_budget=BUDGET) for _ in range(2)]
    for m in runs:
        _learn(m, X, y)
    a, b = (m._stats for m in runs)
    assert a.pairs_selected and a.pair_revised == b.pair_revised == 500.0
    assert (a.pair_cursor, a.selection_summary()) == (b.pair_cursor, b.selection_summary())
    assert _cells(a) == _cells(b)


def test_a_snapshot_keeps_the_rotation_and_learns_on_as_the_original(small_floor, tmp_path):
    X, y = _stream(900, seed=3)
    model = TAN(memory_budget=BUDGET)
    _learn(model, X[:500], y[:500])
    stream_nb.save(model, tmp_path / "m.snb")
    back = stream_nb.load(tmp_path / "m.snb")
    for a, b in ((model._stats, back._stats), (model._stats.fine, back._stats.fine)):
        assert (a.pair_cursor, a.pair_revised, a.selection_summary()) == (b.pair_cursor, b.pair_revised,
                                                                           b.selection_summary())
    for m in (model, back):
        _learn(m, X[500:], y[500:])  # four more revisions, the same on both
    assert back._stats.pair_cursor == model._stats.pair_cursor and _cells(back._stats) == _cells(model._stats)
    for x in X[:20].to_dict("records"):
        assert back.predict_proba_one(x) == model.predict_proba_one(x)


# ---------------------------------------------------------------------------------------- merges


def _three():
    parts = []
    for seed, n in ((11, 400), (12, 300), (13, 500)):
        X, y = _stream(n, seed=seed)
        m = TAN(memory_budget=BUDGET)
        _learn(m, X, y)
        assert m._stats.pairs_selected
        parts.append(m)
    return parts


def _merged(models, order):
    out = copy.deepcopy(models[order[0]])
    for k in order[1:]:
        out.merge(copy.deepcopy(models[k]))
    return out


def _summary(m):
    s = m._stats
    sel = s.selection_summary()
    return {frozenset(e) for e in sel["edges"]} if sel else None, s.pair_cursor, s.pair_revised


def test_stores_with_revised_selections_merge_to_the_sums_of_their_counts_in_any_order(small_floor):
    models = _three()
    cells = [_cells(m._stats) for m in models]
    total = {}
    for part in cells:
        for k, v in part.items():
            total[k] = total.get(k, 0) + v
    kept = set().union(*(_summary(m)[0] for m in models))
    a = _merged(models, (0, 1, 2))
    assert _cells(a._stats) == total  # each cell the sum of the three stores' (a pair none kept: none)
    assert _summary(a) == (kept, max(m._stats.pair_cursor for m in models), max(m._stats.pair_revised for m in models))
    a._stats.own_pairs()  # the fine layer's pair counts, its own copy (while shared they are the coarse ones)
    assert _cells(a._stats.fine) == total
    for order in ((2, 1, 0), (1, 0, 2)):  # commutative
        b = _merged(models, order)
        assert _cells(b._stats) == total and _summary(b) == _summary(a)
    bc = _merged(models, (1, 2))  # associative: a + (b + c)
    grouped = copy.deepcopy(models[0])
    grouped.merge(bc)
    assert _cells(grouped._stats) == total and _summary(grouped) == _summary(a)
    x = _stream(1, seed=9)[0].iloc[0].to_dict()
    assert a.predict_proba_one(x) == pytest.approx(grouped.predict_proba_one(x), rel=1e-12)


def test_a_store_without_a_selection_merged_with_one_counts_every_pair_again(small_floor):
    X, y = _stream(300, seed=4)
    free = TAN(memory_budget=None)
    free.learn_many(X, y)
    selected = _three()[0]
    want = _cells(free._stats)
    for k, v in _cells(selected._stats).items():
        want[k] = want.get(k, 0) + v
    for a, b in ((free, selected), (selected, free)):
        m = copy.deepcopy(a)
        m.merge(copy.deepcopy(b))
        assert not m._stats.pairs_selected and _cells(m._stats) == want


# ---------------------------------------------------------------------------------------- unlearning


def test_unlearning_is_exact_until_a_pair_comes_back_and_refused_from_then_on(small_floor, tmp_path):
    X, y = _stream(3000)
    rows = X.to_dict("records")
    model = TAN(memory_budget=BUDGET)
    log = []
    for lo in range(0, len(X), STEP):
        before = copy.deepcopy(model)
        model.learn_many(X[lo : lo + STEP], y[lo : lo + STEP])
        log.append((lo, _kept_by_name(model._stats)))
        if model._stats.pairs_partial:
            break
        twin = copy.deepcopy(model)  # while every kept pair holds every event: the last event taken back
        twin.unlearn_one(rows[lo + STEP - 1], int(y[lo + STEP - 1]))
        assert _cells(twin._stats) == _cells(_learned(before, X[lo : lo + STEP - 1], y[lo : lo + STEP - 1])._stats)
    else:
        pytest.fail("no pair came back in 3,000 events")
    x, c = rows[0], int(y[0])  # learned before the pair came back: its fresh counts never held it
    cells = _cells(model._stats)
    with pytest.raises(stream_nb.exceptions.UnlearnError, match="came back") as caught:
        model.unlearn_one(x, c)
    assert caught.value.reason == "partial_pairs" and _cells(model._stats) == cells  # nothing changed
    stream_nb.save(model, tmp_path / "m.snb")  # kept in the snapshot
    back = stream_nb.load(tmp_path / "m.snb")
    assert back._stats.pairs_partial and back._stats.fine.pairs_partial
    with pytest.raises(stream_nb.exceptions.UnlearnError, match="came back"):
        back.unlearn_one(x, c)


def _learned(model, X, y):
    out = copy.deepcopy(model)
    if len(X):
        out.learn_many(X, y)
    return out


def test_a_merge_of_stores_that_kept_different_pairs_refuses_to_unlearn(small_floor):
    free = TAN(memory_budget=None)
    X, y = _stream(300, seed=4)
    free.learn_many(X, y)
    selected = TAN(memory_budget=BUDGET)  # a selection made, no pair back yet
    Xs, ys = _stream(300, seed=11)
    lo = 0
    while not selected._stats.pairs_selected:
        selected.learn_many(Xs[lo : lo + 10], ys[lo : lo + 10])
        lo += 10
    assert not free._stats.pairs_partial and not selected._stats.pairs_partial
    same = copy.deepcopy(selected)
    same.merge(copy.deepcopy(selected))  # the same pairs on both sides: whole
    assert not same._stats.pairs_partial
    m = copy.deepcopy(free)
    m.merge(copy.deepcopy(selected))  # free's pairs the other dropped hold free's events only
    assert m._stats.pairs_partial
    with pytest.raises(stream_nb.exceptions.UnlearnError, match="came back"):
        m.unlearn_one(X.iloc[0].to_dict(), int(y[0]))
