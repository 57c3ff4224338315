"""The compiled path of sparse and selected pair tables, and the pair tables a two-layer store holds once.

- AODE's, TAN's and SPODE's candidate scores on selected tables (a budget passed on a small wide stream, with missing values
  and values new mid-stream) are checked, event by event, against the textbook formulas evaluated in numpy
  on the counts read back from the tables (the counts themselves are recounted by brute force in
  ``test_candidates.py``; sparse tables without a selection against dense ones in ``test_sparse_pairs.py``);
- a two-layer store (``numeric=MDL()``, the default) on categorical events keeps one copy of its pair tables,
  and learns, predicts, merges, unlearns and writes snapshots exactly as one whose layers each keep their own;
  a float feature later gives the fine layer its own copy, and the two still agree.
"""

from __future__ import annotations

import numpy as np
import pytest

from stream_nb import AODE, SPODE, TAN, SuperParent, SuperParents, Tree
from stream_nb.stats.budget import _budget


@pytest.fixture
def small_floor(monkeypatch):
    monkeypatch.setattr(_budget, "SPARSE_FLOOR", 0)  # the floor that spares small examples, off


def _wide(n, seed=0, features=16, values=8, new_from=None):
    """A small wide stream: a class-driven chain, holes, and (from event ``new_from``) values never seen."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        y = int(rng.integers(3))
        x = {"f0": int((y + rng.integers(2)) % values)}
        for f in range(1, features):
            prev = x[f"f{f - 1}"]
            x[f"f{f}"] = int(prev if rng.random() < 0.7 else rng.integers(values))
        if i % 6 == 2:
            del x[f"f{1 + i % (features - 1)}"]
        if new_from is not None and i >= new_from and i % 5 == 0:
            x["f3"] = 100 + i
        out.append((x, y))
    return out


def _observed(s, x):
    """The columns and features of the observed values of ``x`` (a value never seen: column 0)."""
    pairs = [(s.values[s.feature_index[k]].get(v, 0), s.feature_index[k]) for k, v in x.items() if k in s.feature_index]
    return np.array([u for u, _ in pairs], dtype=np.int64), np.array([f for _, f in pairs], dtype=np.int64)


def _spode_textbook(model, x) -> np.ndarray:
    """(C, k): log P̂(c, x_i) + Σ_{j≠i} log P̂(x_j | c, x_i) rooted at each observed x_i, the counts gathered from
    the tables."""
    s, a = model._stats, model.alpha
    C = s.n_classes
    cols, feats = _observed(s, x)
    nv = s.n_values[feats] + (cols == 0)
    pc = np.asarray(s.pair_count[(slice(0, C), cols[:, None], cols[None, :])])  # (C, parent, child)
    pf = np.asarray(s.pair_feat[(slice(0, C), cols[:, None], feats[None, :])])
    ratio = (pc + a) / (pf + a * nv[None, None, :])
    ratio[:, np.arange(len(cols)), np.arange(len(cols))] = 1.0
    joint = np.log(s.value_count[:C, cols] + a) - np.log(s.feat_count[:C, feats].sum(0) + a * nv)
    return joint + np.log(ratio).sum(2)


def _aode_textbook(model, x) -> np.ndarray:
    """log Σ over the kept parents of P̂(c, x_i) Π_{j≠i} P̂(x_j | c, x_i), the counts gathered from the tables."""
    s = model._stats
    C = s.n_classes
    cols, feats = _observed(s, x)
    terms = _spode_textbook(model, x)
    parents = (s.value_count[:C, cols].sum(0) >= model.m) & s.parent_ok(feats)
    if not parents.any():
        return model._naive_jll(s.encode(x))
    t = terms[:, parents]
    top = t.max(1, keepdims=True)
    return (top + np.log(np.exp(t - top).sum(1, keepdims=True)))[:, 0]


def _tan_textbook(model, x) -> np.ndarray:
    """log P̂(c) + Σ_i log P̂(x_i | c, x_pa(i)) along the model's tree, the counts gathered from the tables."""
    s, a = model._stats, model.alpha
    C = s.n_classes
    cols, feats = _observed(s, x)
    col = dict(zip(feats.tolist(), cols.tolist()))
    parent = model._parents() if model._root >= 0 else np.full(len(s.features), -1)
    pa = np.array([col.get(int(parent[f]), -1) if parent[f] >= 0 else -1 for f in feats.tolist()])
    an = a * np.maximum(s.n_values[feats] + (cols == 0), 1)
    root = np.log(s.value_count[:C, cols] + a) - np.log(s.feat_count[:C, feats] + an)
    pc = np.asarray(s.pair_count[(slice(0, C), np.maximum(pa, 0), cols)])
    pf = np.asarray(s.pair_feat[(slice(0, C), np.maximum(pa, 0), feats)])
    child = np.log(pc + a) - np.log(pf + an)
    return model._log_prior() + np.where(pa >= 0, child, root).sum(1)


def _posterior(jll) -> np.ndarray:
    return np.exp(jll - jll.max()) / np.exp(jll - jll.max()).sum()


@pytest.mark.parametrize("name", ["aode", "tan"])
def test_scores_on_selected_tables_are_the_textbook_ones_event_by_event(small_floor, name):
    """Past a small budget the tables keep candidate pairs; every prediction on the way (before and after each
    pruning, with holes and new values) is the formula's over the counts the tables hold."""
    if name == "aode":
        model, formula = AODE(memory_budget=300_000), _aode_textbook
    else:
        model, formula = TAN(search=Tree(rebuild_every=40), memory_budget=300_000), _tan_textbook
    complete = 0
    for i, (x, y) in enumerate(_wide(300, new_from=200)):
        if i >= 10 and (name == "aode" or all(k in x for k in model._stats.features)):  # TAN: no parent missing
            got = model.predict_proba_one(x)
            want = _posterior(formula(model, x))
            np.testing.assert_allclose([got[c] for c in model._stats.classes], want, rtol=1e-9, atol=1e-15)
            complete += 1
        model.learn_one(x, y)
    s = model._stats
    assert s.pairs_sparse and s.pairs_selected and complete > 150


def test_aodes_chosen_children_on_selected_tables_are_the_textbook_ones_event_by_event(small_floor):
    """With ``SuperParents(children=...)`` past a small budget the tables keep the candidate edges' pairs, every
    attribute stays a super-parent, and each SPODE reads a child given it only where the pair is chosen and
    counted, else given the class: every prediction on the way is that formula's over the counts held."""
    model = AODE(search=SuperParents(children=0.01, rebuild_every=40), memory_budget=300_000)
    checked = 0
    for i, (x, y) in enumerate(_wide(300, new_from=200)):
        s = model._stats
        if i >= 10 and s.pairs_selected and model.children is not None:
            C = s.n_classes
            cols, feats = _observed(s, x)
            names = [s.features[f] for f in feats.tolist()]
            chosen = np.array([[b in model.children.get(a, []) or a not in model.children or b not in model.children
                                for b in names] for a in names])
            read = chosen & s.pair_mask(feats)  # a pair the tables do not count is read given the class
            nv = s.n_values[feats] + (cols == 0)
            alone = (s.value_count[:C, cols] + model.alpha) / (s.feat_count[:C, feats] + model.alpha * nv)
            terms = np.log(s.value_count[:C, cols] + model.alpha) - np.log(s.feat_count[:C, feats].sum(0)
                                                                            + model.alpha * nv)
            pc = np.asarray(s.pair_count[(slice(0, C), cols[:, None], cols[None, :])])
            pf = np.asarray(s.pair_feat[(slice(0, C), cols[:, None], feats[None, :])])
            ratio = np.where(read[None], (pc + model.alpha) / (pf + model.alpha * nv[None, None, :]), alone[:, None, :])
            ratio[:, np.arange(len(cols)), np.arange(len(cols))] = 1.0
            t = (terms + np.log(ratio).sum(2))[:, s.value_count[:C, cols].sum(0) >= model.m]
            want = _posterior(np.log(np.exp(t - t.max()).sum(1)))
            got = model.predict_proba_one(x)
            np.testing.assert_allclose([got[c] for c in s.classes], want, rtol=1e-9, atol=1e-15)
            checked += 1
        model.learn_one(x, y)
    assert model._stats.pair_rule == "edges" and checked > 100


def test_spodes_candidate_scores_on_selected_tables_are_the_textbook_ones_event_by_event(small_floor):
    """SPODE's running scores rank every candidate super-parent whose pairs the tables count, each event scored
    in compiled code before it is learned: the terms equal the formula's over the counts the tables hold."""
    model = SPODE(search=SuperParent(rebuild_every=40), memory_budget=800_000)
    checked = partial = 0
    for i, (x, y) in enumerate(_wide(300, new_from=200)):
        s = model._stats
        if i >= 10 and s.pairs_sparse:
            cols, feats = _observed(s, x)
            ok = s.parent_ok(feats)
            got = model._sparse_terms(cols, feats)
            np.testing.assert_allclose(got[:, ok], _spode_textbook(model, x)[:, ok], rtol=1e-12)
            assert not got[:, ~ok].any()
            checked += s.pairs_selected and ok.any()
            partial += s.pairs_selected and 0 < ok.sum() < len(ok)
        model.learn_one(x, y)
    assert model._stats.pairs_selected and checked > 100 and partial > 10 and model.scores


def test_a_class_new_after_the_tables_turned_selected_gets_room_in_them(small_floor):
    """Dense pair tables made without spare room, then selected (sparse) past the budget: a class (or value)
    that comes later must grow them, in both layers, before its cells are counted; a float feature every
    seventh event makes the fine layer hold its own tables, and its drops remap them."""
    rng = np.random.default_rng(0)
    model = AODE(memory_budget=300_000)
    for i in range(700):
        y = int(rng.integers(2 if i < 30 else 3))
        x = {"f0": int((2 * y + rng.integers(2)) % 8), "f1": int(y if rng.random() < 0.7 else rng.integers(8))}
        for f in range(2, 16):
            x[f"f{f}"] = int(x[f"f{f - 1}"] if rng.random() < 0.8 else rng.integers(8))
        if i % 7 == 3:
            x["num"] = float(rng.normal() + y)
        model.learn_one(x, y)
    s = model._stats
    assert s.pairs_selected and s.n_classes == 3
    for layer in (s, s.fine):
        for p in layer._sets():
            for name in ("pair_count", "pair_feat"):
                table = layer.__dict__.get(p + name)
                if table is None:  # the fine layer's pairs are the coarse layer's
                    continue
                keys, vals = table.arrays()
                held = keys[keys >= 0]
                assert held.max() < np.prod(table.shape)  # every cell within the table's shape
                assert table.cells()[1].sum() == vals[keys >= 0].sum() and (table.cells()[0][0] == 2).any()
    proba = model.predict_proba_one({"f0": 4, "f1": 2})
    assert set(proba) == {0, 1, 2} and abs(sum(proba.values()) - 1.0) < 1e-12


def _owning(model):
    """The same model whose two layers each keep their own pair tables (as before they were shared)."""
    s = model._stats
    s.own_pairs(for_good=True)  # (never shared again)
    return model


@pytest.mark.parametrize("make", [lambda: AODE(), lambda: TAN(search=Tree(rebuild_every=30))], ids=["aode", "tan"])
def test_a_two_layer_store_on_categorical_events_holds_its_pairs_once_and_learns_as_two(make):
    stream = _wide(120, seed=1)
    shared, owning = make(), _owning(make())
    for m in (shared, owning):
        for x, y in stream[:60]:
            m.learn_one(x, y)
        xs, ys = zip(*stream[60:])
        m.prequential_many(list(xs), list(ys))
    s = shared._stats
    assert s.shared_pairs and not s.fine.pairs and not hasattr(s.fine, "pair_count")
    assert owning._stats.fine.pairs
    probe = [x for x, _ in _wide(30, seed=9)]
    assert [shared.predict_proba_one(x) for x in probe] == [owning.predict_proba_one(x) for x in probe]
    # a snapshot's state is the one both layers own would write
    (ga, gm), (wa, wm) = s.state(), owning._stats.state()
    assert gm == wm and sorted(ga) == sorted(wa)
    for k in ga:
        np.testing.assert_array_equal(ga[k], wa[k], err_msg=k)
    # merged with another, and an event taken back: still the same, and the pairs shared again
    other = make()
    for x, y in _wide(40, seed=2):
        other.learn_one(x, y)
    for m in (shared, owning):
        m._stats.merge(other._stats)
    x, y = stream[5]
    for m in (shared, owning):
        m.unlearn_one(x, y)
    assert [shared.predict_proba_one(x) for x in probe] == [owning.predict_proba_one(x) for x in probe]
    assert shared._stats.shared_pairs
    # a float feature: the fine layer takes its own copy first, and the two go on alike
    rng = np.random.default_rng(4)
    for i, (x, y) in enumerate(_wide(150, seed=3)):
        x = {**x, "temp": float(rng.normal(y, 1.0))}
        for m in (shared, owning):
            m.learn_one(x, y)
    assert not shared._stats.shared_pairs and shared._stats.fine.pairs
    probe = [{**x, "temp": 0.5 * i} for i, x in enumerate(probe)]
    assert [shared.predict_proba_one(x) for x in probe] == [owning.predict_proba_one(x) for x in probe]


@pytest.mark.parametrize("k", [1, 2, 3])
def test_kdb_reads_its_sparse_tables_in_compiled_code_as_numpy_reads_them(k, monkeypatch):
    """KDB's terms over sparse tables (a memory budget's), read in the compiled loop, against the same terms
    read in numpy (``learners/kdb.py: _terms`` with the tables taken for dense ones): every feature with its
    parents (pair tables for k = 1, t-way tables past), features missing or with a missing parent left out,
    values never seen (column 0), the attributes a selection dropped with and without them."""
    from stream_nb import KDB, Parents
    from stream_nb.learners import kdb as kdb_module

    stream = _wide(400, seed=k, features=10, values=5, new_from=300)
    model = KDB(k=k, memory_budget=0, search=Parents(rebuild_every=60))
    for x, y in stream[:300]:
        model.learn_one(x, y)
    s = model._stats
    names = ("tuple_count", "tuple_feat") if s.tuples else ("pair_count", "pair_feat")
    assert all(isinstance(getattr(s, n), kdb_module.SparseTable) for n in names)
    assert any(len(p) == k for p in model._parents.values())  # parents as many as k, and fewer
    D = np.stack([model._dense(s.encode(x)) for x, _ in stream[250:]])
    assert (D == -1).any() and (D == 0).any()  # missing values, and values never seen
    for drop in (True, False):
        got = model._terms(D, drop=drop)
        with monkeypatch.context() as m:
            m.setattr(kdb_module, "SparseTable", type("NotThisTable", (), {}))  # numpy's gathers
            want = model._terms(D, drop=drop)
        np.testing.assert_array_equal(got, want)  # the same sums, to the last digit


def test_a_row_of_cells_gathered_reads_what_one_lookup_at_a_time_reads():
    """:func:`~stream_nb.kernels._hashed.hashed_gather` (the cells of a row read together, AODE's and SPODE's
    sparse scores) against a dict of the counts added: cells found at their probe's first slot, further on
    (collisions, a table half full), and never counted; and against ``hashed_get`` one cell at a time."""
    from stream_nb.kernels import compiled

    k = compiled()
    rng = np.random.default_rng(3)
    keys, vals = np.full(256, -1, dtype=np.int64), np.zeros(256)
    shift = k.hashed_shift(keys)
    counted = {}
    for key in rng.choice(4096, size=128, replace=False).tolist():  # half the slots
        w = float(rng.integers(1, 9))
        k.hashed_add(keys, vals, key, w, shift)
        counted[key] = counted.get(key, 0.0) + w
    held = np.flatnonzero(keys != -1)
    moved = {int(keys[s]) for s in held.tolist() if k.hashed_start(keys[s], shift) != s}
    read_moved = 0
    for base in (0, 1024, 2048):
        cols = rng.permutation(2048)[:200].astype(np.int64)
        n = 150
        got = np.full(200, np.nan)
        k.hashed_gather(keys, vals, base, cols, n, shift, np.empty(200, dtype=np.int64), np.empty(200, dtype=np.int64),
                        got)
        want = [counted.get(base + c, 0.0) for c in cols[:n].tolist()]
        assert got[:n].tolist() == want
        assert got[:n].tolist() == [k.hashed_get(keys, vals, base + c, shift) for c in cols[:n].tolist()]
        assert np.isnan(got[n:]).all()  # only the first n
        assert 0 < sum(v > 0 for v in want) < n  # cells found and cells absent
        read_moved += sum(base + c in moved for c in cols[:n].tolist())
    assert read_moved  # some cells read past their first slot: the probe went on


def test_the_kept_edges_listed_for_adding_pairs_are_each_features_partners_in_order():
    """``_hashed.pair_partners`` (the lists ``pair_rows`` walks for a feature not kept whole) against a brute-force
    listing: each feature first, then the features it has an edge to, in order, its own diagonal left out;
    rows with no edge, rows with their diagonal set, and an empty matrix."""
    from stream_nb.kernels import _hashed, compiled

    compiled()  # (the module's functions replaced by their compiled versions)
    rng = np.random.default_rng(5)
    for F, density in ((0, 0.0), (1, 1.0), (7, 0.3), (40, 0.05)):
        edges = rng.random((F, F)) < density
        edges[: F // 2, : F // 2] |= np.eye(F // 2, dtype=bool)  # some diagonals set
        edges[F // 3 :: 4] = False  # some rows with no edge
        start, idx = _hashed.pair_partners(edges, F)
        want = [[a] + [b for b in range(F) if b != a and edges[a, b]] for a in range(F)]
        assert start.tolist() == np.cumsum([0] + [len(w) for w in want]).tolist()
        assert [idx[start[a] : start[a + 1]].tolist() for a in range(F)] == want


def test_the_kept_edges_lists_are_made_again_whenever_the_edges_change():
    """``_sparse._partners`` keeps the last lists made: it must give :func:`pair_partners`' lists of the edges as
    they are now, after the same matrix is changed in place, for another matrix equal to it, and for another
    count of features."""
    from stream_nb.kernels import compiled
    from stream_nb.stats.tables import _sparse

    rng = np.random.default_rng(11)
    edges = rng.random((12, 12)) < 0.2
    seen = []
    for step in range(6):
        F = 12 if step != 4 else 7
        start, idx = _sparse._partners(edges, F)
        want = compiled().pair_partners(edges, F)
        assert start.tolist() == want[0].tolist() and idx.tolist() == want[1].tolist()
        seen.append(idx.tolist())
        if step == 2:
            edges = edges.copy()  # an equal matrix, another object
        else:
            edges[rng.integers(12), rng.integers(12)] ^= True  # changed in place
    assert len({tuple(s) for s in seen}) > 2  # the lists did change with the edges
