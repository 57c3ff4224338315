"""The structure scores and the selection's copy of sparse pair tables, in compiled code
(``kernels/_sparse_structure.py``, ``kernels/_hashed.py: kept_cells``), against numpy.

The reference is numpy's formula over the cells in key order (:func:`_numpy_cmi_sums`, what
``stats/selection/_candidates.py`` computed before the kernels): on random sparse tables with empty
cells, fractional weights, cells of column 0 and of no feature, and classes and values past those
seen, of capacities that are powers of two (whose keys the kernels split with shifts) and of others
(with divisions); then TAN with revised pairs learns the same selections, counts and predictions
either way. The cells a pruning charges each parent or edge (``kernels/_hashed.py: unit_cells``) and
the slots a selection keeps are checked against numpy's index arrays of every cell the same way.
"""

from __future__ import annotations

import types

import numpy as np
import pandas as pd
import pytest

from stream_nb import TAN
from stream_nb.kernels import compiled
from stream_nb.stats.budget import _budget
from stream_nb.stats.selection import _candidates, _revision
from stream_nb.stats.tables import SparseTable, cells_of


def _sums(keys, n):
    uniq, inv = np.unique(keys, return_inverse=True)
    return np.bincount(inv.ravel(), weights=n, minlength=len(uniq))[inv.ravel()]


def _numpy_cmi_sums(stats, least=None):
    """The sums of n log(n n(c, i, j) / (n(c, v, j) n(c, i, w))) per pair and the pair's counts, in numpy (every
    pair scored, whatever ``least``)."""
    C, V, F = stats.n_classes, len(stats.value_keys), len(stats.features)
    (c, v, w), n = cells_of(stats.pair_count, stats.pair_count.shape)
    fv = stats.value_feature
    ok = (c < C) & (v < V) & (w < V) & (n > 0)
    c, v, w, n = c[ok], v[ok], w[ok], n[ok]
    live = (fv[v] >= 0) & (fv[w] >= 0) & (v > 0) & (w > 0)
    c, v, w, n = c[live], v[live], w[live], n[live]
    fi, fj = fv[v], fv[w]
    row = _sums((c * V + v) * F + fj, n)
    col = _sums((c * F + fi) * V + w, n)
    blk = _sums((c * F + fi) * F + fj, n)
    term = n * np.log(n * blk / (row * col))
    mi = np.bincount(fi * F + fj, weights=term, minlength=F * F).reshape(F, F)
    n_pair = np.bincount(fi * F + fj, weights=n, minlength=F * F).reshape(F, F)
    mi, n_pair = mi + mi.T, n_pair + n_pair.T
    np.fill_diagonal(mi, 0.0)
    np.fill_diagonal(n_pair, 0.0)
    return mi, n_pair, None


def _random_store(seed, whole=False, pow2=False):
    """A store-like object over a random sparse pair table: F features of 2 to 5 value columns each (column 0
    and a detached column of no feature among them), cells of classes and columns past those seen, counts
    whole and fractional, and held cells whose count went back to zero; with ``pow2``, a capacity of powers of
    two (as the store's, which double), else of the classes and columns seen and two more."""
    rng = np.random.default_rng(seed)
    F = int(rng.integers(2, 9))
    sizes = rng.integers(2, 6, size=F)
    vf = np.concatenate([[-1], np.repeat(np.arange(F), sizes)])
    rng.shuffle(vf[1:])  # a feature's columns are not contiguous
    vf[rng.integers(1, len(vf))] = -1  # a column a promotion detached
    V, C = len(vf), int(rng.integers(1, 5))
    room = V + 2 if pow2 or (V + 2) & (V + 1) else V + 3  # room past the classes and values seen
    cap = (C + 1, room, room)
    if pow2:
        cap = tuple(1 << (d - 1).bit_length() for d in cap)
    table = SparseTable(cap, slots=16)
    m = int(rng.integers(1, 400))
    idx = (rng.integers(0, C + 1, m), rng.integers(0, V + 2, m), rng.integers(0, V + 2, m))
    w = np.where(rng.random(m) < 0.5, rng.integers(1, 4, m).astype(float), rng.random(m) * 3)
    if whole:
        w = rng.integers(1, 4, m).astype(float)
    table.add(idx, w)
    held, _ = table.cells()
    gone = rng.random(len(held[0])) < 0.1
    table.add(tuple(a[gone] for a in held), -table[(held[0][gone][:, None], held[1][gone], held[2][gone])].diagonal()
              if gone.any() else np.zeros(0))
    vfull = np.concatenate([vf, [-1, -1]])  # the store's map has room past its columns too
    return types.SimpleNamespace(n_classes=C, value_keys=[None] * V, features=[f"f{i}" for i in range(F)],
                                 pair_count=table, value_feature=vfull, n_values=sizes, class_count=np.ones(C))


@pytest.mark.parametrize("pow2", [False, True])
@pytest.mark.parametrize("seed", range(40))
def test_the_compiled_cmi_sums_equal_numpy_on_random_sparse_tables(seed, pow2):
    s = _random_store(seed, pow2=pow2)
    assert all((d & (d - 1) == 0) == pow2 for d in s.pair_count.shape[1:])
    mi, n, scored = _candidates._cmi_sums(s)
    want_mi, want_n, _ = _numpy_cmi_sums(s)
    assert scored is None  # every pair, without a least count
    np.testing.assert_array_equal(n, want_n)  # sums of the same counts in the same order
    np.testing.assert_allclose(mi, want_mi, rtol=1e-12, atol=1e-12)
    assert (np.diag(mi) == 0).all() and (mi == mi.T).all()


@pytest.mark.parametrize("seed", range(40))
def test_pairs_below_their_least_count_are_left_unscored_with_their_count_exact(seed):
    """Whole counts: a pair whose pooled count (half both blocks' sum) is below ``least`` is not scored and keeps
    its exact count, every other pair is scored as numpy scores it; a fractional count anywhere: every pair
    is scored (its sums in slot order would not be exact)."""
    rng = np.random.default_rng(seed)
    for whole, pow2 in ((True, False), (False, False), (True, True), (False, True)):
        s = _random_store(seed, whole, pow2)
        want_mi, want_n, _ = _numpy_cmi_sums(s)
        F = len(s.features)
        least = rng.integers(0, 12, size=(F, F)).astype(float)
        least = np.minimum(least, least.T)
        mi, n, scored = _candidates._cmi_sums(s, least)
        np.testing.assert_array_equal(n, want_n)  # scored or not, every pair's count
        off = ~np.eye(F, dtype=bool)
        below = (want_n / 2.0 < least) & off
        (c, v, w), x = s.pair_count.cells()
        V, fv = len(s.value_keys), s.value_feature
        counted = (c < s.n_classes) & (v > 0) & (w > 0) & (v < V) & (w < V) & (x > 0)
        counted[counted] &= (fv[v[counted]] >= 0) & (fv[w[counted]] >= 0)
        if (x[counted] % 1 != 0).any() or not below.any():  # a fractional count: every pair scored
            assert scored is None or scored[off].all()
            np.testing.assert_allclose(mi, want_mi, rtol=1e-12, atol=1e-12)
            continue
        assert scored is not None and (scored[off] == ~below[off]).all()
        assert (mi[below] == 0).all()
        np.testing.assert_allclose(mi[~below], want_mi[~below], rtol=1e-12, atol=1e-12)
        g, _, n_ev = _candidates.pair_evidence(s, least)
        assert np.isnan(g[below]).all() and not np.isnan(g[~below & off]).any()
        np.testing.assert_array_equal(n_ev, want_n / 2.0)
        scores = _candidates.edge_scores(s, (g, np.ones_like(g), n_ev))
        assert np.isnan(scores[below]).all() and not np.isnan(scores[~below & off]).any()


def test_held_cells_without_a_count_and_cells_past_the_seen_ones_add_nothing():
    s = _random_store(3)
    t = s.pair_count
    (c, v, w), x = t.cells()
    V = len(s.value_keys)
    mi, n, _ = _candidates._cmi_sums(s)
    keep = (c < s.n_classes) & (v < V) & (w < V) & (x > 0) & (v > 0) & (w > 0)
    keep &= (s.value_feature[v] >= 0) & (s.value_feature[w] >= 0)
    off = s.value_feature[v] != s.value_feature[w]
    assert n.sum() == pytest.approx(2 * x[keep & off].sum(), rel=1e-12)


def _numpy_unit_cells(s, rule):
    """The cells per unit and of the diagonal, from numpy's index arrays of every cell held (what
    ``_candidates._unit_cells`` summed before the kernel)."""
    V, F = len(s.value_keys), len(s.features)
    per = np.zeros(F if rule == "parents" else F * F)
    fixed = 0
    for name, by_feature in (("pair_count", False), ("pair_feat", True)):
        (_, u, v), x = getattr(s, name).cells()
        u, v = u[x != 0], v[x != 0]
        fa = s.value_feature[np.minimum(u, V - 1)]
        fb = v if by_feature else s.value_feature[np.minimum(v, V - 1)]
        diag = fa == fb
        fixed += int(diag.sum())
        keep = ~diag & (fa >= 0) & (fb >= 0)
        unit = fa[keep] if rule == "parents" else np.minimum(fa[keep], fb[keep]) * F + np.maximum(fa[keep], fb[keep])
        per += np.bincount(unit, minlength=len(per))
    return per, fixed


def _with_feat_table(s, seed, pow2):
    """``s`` with a random sparse ``pair_feat`` beside its pairs (cells (c, u, feature)) and one count set."""
    rng = np.random.default_rng(seed + 1000)
    C, V, F = s.pair_count.shape[0], len(s.value_keys), len(s.features)
    cap = (C, s.pair_count.shape[1], 1 << (F - 1).bit_length() if pow2 else F + 1)
    feat = SparseTable(cap, slots=16)
    m = int(rng.integers(1, 300))
    feat.add((rng.integers(0, C, m), rng.integers(0, cap[1], m), rng.integers(0, F, m)),
             np.where(rng.random(m) < 0.1, 0.0, rng.random(m) * 4))  # some held cells without a count
    s.pair_feat = feat
    s._sets = lambda: ("",)
    return s


@pytest.mark.parametrize("pow2", [False, True])
@pytest.mark.parametrize("seed", range(30))
def test_the_cells_a_pruning_charges_each_unit_are_numpys(seed, pow2):
    s = _with_feat_table(_random_store(seed, pow2=pow2), seed, pow2)
    for rule in ("parents", "edges"):
        per, fixed = _candidates._unit_cells(s, rule)
        want_per, want_fixed = _numpy_unit_cells(s, rule)
        np.testing.assert_array_equal(per, want_per)
        assert fixed == want_fixed


@pytest.mark.parametrize("pow2", [False, True])
@pytest.mark.parametrize("seed", range(30))
def test_the_slots_a_selection_keeps_are_the_kept_cells_of_numpys_index_arrays(seed, pow2):
    s = _with_feat_table(_random_store(seed, pow2=pow2), seed, pow2)
    rng = np.random.default_rng(seed)
    F, V = len(s.features), len(s.value_keys)
    allowed, edges = rng.random(F) < 0.3, rng.random((F, F)) < 0.3
    vf = np.ascontiguousarray(s.value_feature, dtype=np.int64)
    for table, by_feature in ((s.pair_count, False), (s.pair_feat, True)):
        keys, vals = table.arrays()
        dims = np.array([table.shape[0], V, table.shape[2] if by_feature else V], dtype=np.int64)
        slots = compiled().kept_cells(keys, vals, np.array(table.shape, dtype=np.int64), dims, vf, allowed, edges,
                                      by_feature)
        held = np.flatnonzero((keys != -1) & (vals != 0))
        c, u, v = np.unravel_index(keys[held], table.shape)
        fa = np.where(u < len(vf), vf[np.minimum(u, len(vf) - 1)], -1)
        fb = v if by_feature else np.where(v < len(vf), vf[np.minimum(v, len(vf) - 1)], -1)
        inside = (c < dims[0]) & (u < dims[1]) & (v < dims[2])
        np.testing.assert_array_equal(slots, held[inside & _candidates.pair_kept(allowed, edges, fa, fb)])


@pytest.fixture
def small_floor(monkeypatch):
    monkeypatch.setattr(_budget, "SPARSE_FLOOR", 0)


def _stream(n, seed=0, features=24, values=4):
    rng = np.random.default_rng(seed)
    X = rng.integers(values, size=(n, features))
    y = rng.integers(3, size=n)
    X[:, 0] = (y + rng.integers(2, size=n)) % values
    for a, b in ((1, 2), (5, 6), (9, 3)):
        copy_ = rng.random(n) < 0.8
        X[copy_, b] = X[copy_, a]
    return pd.DataFrame(X, columns=[f"f{i}" for i in range(features)]), pd.Series(y)


def test_a_selection_copies_the_cells_numpy_keeps(small_floor):
    X, y = _stream(400)
    model = TAN(memory_budget=None)  # every pair, sparse: then a random selection of them
    model._stats.budget = _budget.Budget(300_000)  # the store's alone: the model keeps no pair rule
    model._stats.pair_blocks_ok = False  # sparse tables, not the pair blocks that would fit
    model.learn_many(X, y)
    s = model._stats
    assert s.pairs_sparse
    before = {name: cells_of(getattr(s, name), getattr(s, name).shape) for name in ("pair_count", "pair_feat")}
    rng = np.random.default_rng(0)
    F = len(s.features)
    allowed = rng.random(F) < 0.2
    edges = rng.random((F, F)) < 0.3
    edges |= edges.T
    _candidates.apply_selection(s, allowed, edges)
    for name, by_feature in (("pair_count", False), ("pair_feat", True)):
        (c, u, v), x = before[name]
        fa = s.value_feature[u]
        fb = v if by_feature else s.value_feature[v]
        ok = _candidates.pair_kept(s.pair_allowed, s.pair_edges, fa, fb)
        want = {(int(a), int(b), int(d)): w for a, b, d, w in zip(c[ok], u[ok], v[ok], x[ok])}
        table = getattr(s, name)
        assert isinstance(table, _candidates.SelectedTable) and len(table) == len(want)
        (c2, u2, v2), x2 = table.cells()
        assert {(int(a), int(b), int(d)): w for a, b, d, w in zip(c2, u2, v2, x2)} == want
        assert table.by_feature is by_feature and table.allowed is s.pair_allowed


def test_tan_with_revised_pairs_learns_and_predicts_as_with_numpys_scores(small_floor, monkeypatch):
    X, y = _stream(1500, seed=4)
    runs = []
    for reference in (False, True):
        if reference:
            monkeypatch.setattr(_candidates, "_cmi_sums", _numpy_cmi_sums)
        model = TAN(memory_budget=400_000)
        model._stats.pair_blocks_ok = False  # a selection of sparse pairs, not the pair blocks that would fit
        probas = []
        for lo in range(0, len(X), 150):
            if lo:  # the holdout of each batch, under the counts and tree learned before it
                probas.append(model.predict_proba_many(X[lo : lo + 150]).to_numpy())
            model.learn_many(X[lo : lo + 150], y[lo : lo + 150])
        s = model._stats
        assert s.pairs_selected and s.pair_revised >= 1000.0  # revised ten times or more
        runs.append((s.selection_summary(), s.pair_cursor, model._parents().tolist(),
                     cells_of(s.pair_count, s.pair_count.shape), np.concatenate(probas)))
    (sel, cur, par, cells, p), (sel2, cur2, par2, cells2, p2) = runs
    assert (sel, cur, par) == (sel2, cur2, par2)
    for a, b in zip(cells[0] + (cells[1],), cells2[0] + (cells2[1],)):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(p, p2, rtol=1e-12, atol=0)
    assert _revision.REVISE_EVERY < len(X)


def test_a_revision_due_now_leaves_a_batch_the_events_up_to_the_next_one(small_floor):
    """The revision due when a part of a batch starts is made before its first event is counted, so the part
    runs to the next revision (before, a one-event part came first, and every column was encoded twice), and
    learn_many keeps the selections and counts of the same events learned one at a time."""
    X, y = _stream(1000, seed=6)
    model, by_one = TAN(memory_budget=400_000), TAN(memory_budget=400_000)
    model._stats.pair_blocks_ok = by_one._stats.pair_blocks_ok = False  # selected sparse pairs, not pair blocks
    model.learn_many(X[:400], y[:400])
    s = model._stats
    assert s.pairs_selected and _revision.events_learned(s) >= _revision._next_revision(s)  # due now
    assert _revision.revision_due(s) == _revision.REVISE_EVERY
    model.learn_many(X[400:], y[400:])
    for x, c in zip(X.to_dict("records"), y.tolist()):
        by_one.learn_one(x, c)
    assert s.selection_summary() == by_one._stats.selection_summary() and s.pair_revised == 900.0
    assert s.pair_cursor == by_one._stats.pair_cursor
    assert _candidates.cmi_from_cells(s).tolist() == _candidates.cmi_from_cells(by_one._stats).tolist()
