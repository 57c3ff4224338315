"""Pair counts moved between layouts in compiled loops, and read off them: dense tables into pair blocks
(``PairBlocks.add_dense``), pair blocks into sparse tables (``PairBlocks.sparse_cells``,
``SparseTable.from_cells``), KDB's pair tests off a sparse table (``pair_test_terms``), and a selection
that keeps every cell of a sparse table (``apply_selection`` keeps the table).

Each is checked against numpy's reading of the same counts, which it must equal to the bit (the cells,
their counts, the hash table's capacity, the test statistics), on fractional weights whose sums depend on
the order they are added in; and the counts against a brute-force recount of the events. A store read from
a snapshot's state, or unpickled, holds exactly its cells (no buffer of room) and runs none of these passes
until it learns; it then learns as the store never saved, to the bit.
"""

from __future__ import annotations

import math
import types

import numpy as np
import pandas as pd
import pytest

from stream_nb import TAN
from stream_nb.stats.budget import _budget
from stream_nb.stats.selection import _candidates
from stream_nb.stats.selection._pair_selection import pair_kept
from stream_nb.stats.selection._pair_tests import pair_tests, pair_tests_of_cells
from stream_nb.stats.selection._significance import chi2_logsf
from stream_nb.stats.tables import CountTables, PairBlocks, SparseTable, cells_of

WEIGHTS = np.array([0.1, 0.5, 1.0, 1.25, 3.0, 0.3])  # (fractional: a sum's order shows in its last bits)


def _rows(seed, n=120, F=6, values=4, classes=3, missing=0.2):
    """``(D, vf, y, w)``: ``n`` rows of ``F`` attributes as value columns (-1 missing; each attribute's values
    on columns spread over 1..F*values in a shuffled order, column 0 of no feature), their features, classes
    and weights."""
    rng = np.random.default_rng(seed)
    cols = 1 + rng.permutation(F * values).reshape(F, values)
    vf = np.full(1 + F * values, -1, dtype=np.int64)
    for f in range(F):
        vf[cols[f]] = f
    X = rng.integers(0, values, size=(n, F))
    X[:, 1] = np.where(rng.random(n) < 0.7, X[:, 0], X[:, 1])  # a dependence for the tests to find
    X[rng.random((n, F)) < missing] = -1
    D = np.where(X >= 0, cols[np.arange(F), np.maximum(X, 0)], -1).astype(np.int64)
    return D, vf, rng.integers(0, classes, size=n).astype(np.int64), rng.choice(WEIGHTS, size=n)


def _brute(D, vf, y, w, C, V, F):
    """The dense pair_count (C, V, V) and pair_feat (C, V, F) of the rows, one cell at a time in row order."""
    pc, pf = np.zeros((C, V, V)), np.zeros((C, V, F))
    for row, c, x in zip(D, y, w):
        for u in row[row >= 0]:
            for v in row[row >= 0]:
                pc[c, u, v] += x
                pf[c, u, vf[v]] += x
    return pc, pf


def _same_table(a: SparseTable, b: SparseTable) -> None:
    """The same cells (keys in order) and counts to the bit, the same number held and the same capacity."""
    (ia, na), (ib, nb) = a.cells(), b.cells()
    for x, y in zip(ia, ib):
        np.testing.assert_array_equal(x, y)
    assert na.tobytes() == nb.tobytes()
    assert len(a) == len(b) and a.nbytes == b.nbytes and a.shape == b.shape


def test_dense_pair_tables_grown_keep_the_counts_of_their_region_and_nothing_beyond():
    D, vf, y, w = _rows(4)
    C, V, F = 3, len(vf), 6
    pc, pf = _brute(D, vf, y, w, C, V, F)
    tables = CountTables()
    tables.grow_dense(("pair_count", "pair_feat"), ((C + 1, V + 2, V + 2), (C + 1, V + 2, F + 1)),
                      ((0, 0, 0), (0, 0, 0)))
    tables.get("pair_count")[:C, :V, :V] = pc
    tables.get("pair_feat")[:C, :V, :F] = pf
    tables.get("pair_count")[C, V + 1, 2] = tables.get("pair_feat")[0, V, F] = 5.0  # outside the region in use
    old = {k: tables.get(k).copy() for k in ("pair_count", "pair_feat")}
    tables.grow_dense(("pair_count", "pair_feat"), ((C + 3, 2 * V, 2 * V), (C + 3, 2 * V, 2 * F)), ((C, V, V), (C, V, F)))
    for k, dims, shape in (("pair_count", (C, V, V), (C + 3, 2 * V, 2 * V)), ("pair_feat", (C, V, F), (C + 3, 2 * V, 2 * F))):
        want = np.zeros(shape)  # numpy's copy of the region
        part = tuple(slice(0, d) for d in dims)
        want[part] = old[k][part]
        assert tables.get(k).shape == shape and tables.get(k).tobytes() == want.tobytes()
    np.testing.assert_array_equal(tables.get("pair_count")[:C, :V, :V], pc)


def test_dense_pair_tables_grown_in_their_room_move_their_counts_in_place_as_a_copy_would():
    import copy
    import pickle

    D, vf, y, w = _rows(6)
    C, V, F = 3, len(vf), 6
    pc, pf = _brute(D, vf, y, w, C, V, F)
    family = ("pair_count", "pair_feat")
    roomy, plain = CountTables(), CountTables()
    for t, room in ((roomy, 10_000_000), (plain, 0)):
        t.grow_dense(family, ((C, V, V), (C, V, F)), ((0, 0, 0), (0, 0, 0)), room)
        t.get("pair_count")[:] = pc
        t.get("pair_feat")[:] = pf
    buf = roomy.room["pair_count"]
    assert roomy.get("pair_count").base is buf and "pair_count" not in plain.room
    roomy.get("pair_count")[C - 1, V - 1, 0] = 0.0  # (a cell the region below leaves out: zeroed, not moved)
    plain.get("pair_count")[C - 1, V - 1, 0] = 0.0
    steps = [((C + 1, V + 3, V + 3), (C + 1, V + 3, F + 2), (C, V, V), (C, V, F)),  # grown: in place
             ((C + 1, V + 3, V + 3), (C + 2, V + 9, F + 2), (C, V - 1, V), (C, V - 1, F)),  # a region cut short
             ((C + 2, V + 2, V + 2), (C + 2, V + 9, F + 2), (C, V - 1, V), (C, V - 1, F))]  # an axis shorter: a copy
    for ps, fs, pu, fu in steps:
        for t in (roomy, plain):
            t.grow_dense(family, (ps, fs), (pu, fu), 10_000_000 if t is roomy else 0)
        for k in family:
            assert roomy.get(k).shape == plain.get(k).shape and roomy.get(k).tobytes() == plain.get(k).tobytes()
            assert roomy.get(k).flags.c_contiguous
    assert roomy.room["pair_count"] is not buf  # the last step took a new buffer (a shorter axis moves cells back)
    assert not roomy.room["pair_count"][roomy.get("pair_count").size:].any()  # the room past the table is zero
    for twin in (copy.deepcopy(roomy), pickle.loads(pickle.dumps(roomy))):  # a copy: its own arrays, no room
        assert twin.room == {} and twin.get("pair_count").tobytes() == roomy.get("pair_count").tobytes()
    roomy.replace("pair_count", SparseTable((8, 64, 64)))  # another layout: the buffer goes
    assert "pair_count" not in roomy.room and "pair_feat" in roomy.room


def test_blocks_grown_in_their_room_hold_the_counts_bytes_and_layout_of_blocks_grown_into_new_buffers():
    import pickle

    rng = np.random.default_rng(7)
    D, vf, y, w = _rows(7, n=150, F=6, values=5)
    C, V, F = 3, len(vf), 6
    cuts = [30, 60, 100, 150]  # the rows seen so far: their columns (and classes) only
    roomy = plain = None
    lo = 0
    for hi in cuts:
        seen = np.unique(D[:hi][D[:hi] >= 0])
        V_now = int(seen.max()) + 1
        cols_vf = vf[:V_now].copy()
        C_now = int(y[:hi].max()) + 1
        spare = int(rng.integers(0, 50))
        if roomy is None:
            roomy, plain = PairBlocks(cols_vf, F, C_now, spare, room=1 << 16), PairBlocks(cols_vf, F, C_now, spare)
        else:
            roomy.grow(cols_vf, F, C_now, spare, room=1 << 16)
            plain.grow(cols_vf, F, C_now, spare)
        rows = D[lo:hi].copy()
        for t in (roomy, plain):
            t.add_rows(rows, np.arange(F), y[lo:hi], w[lo:hi])
        lo = hi
        assert roomy.buf.tobytes() == plain.buf.tobytes() and roomy.diag.tobytes() == plain.diag.tobytes()
        assert roomy.nbytes == plain.nbytes and roomy.buf.base is roomy.room
    pc, _ = _brute(D, vf, y, w, C, V, F)
    cols = np.arange(V)
    np.testing.assert_array_equal(roomy[:, cols[:, None], cols[None, :]], pc)
    for twin in (roomy.copy(), pickle.loads(pickle.dumps(roomy))):  # a copy: its own buffer, no room
        assert twin.room is None and twin.buf.tobytes() == roomy.buf.tobytes() and twin.nbytes == roomy.nbytes


def test_a_room_refused_or_capped_makes_the_tables_without_it_and_the_same_counts(monkeypatch):
    from stream_nb.stats.tables import _counts, _pair_blocks

    D, vf, y, w = _rows(9)
    C, V, F = 3, len(vf), 6
    pc, _ = _brute(D, vf, y, w, C, V, F)
    monkeypatch.setattr(_pair_blocks, "ROOM_MOST", 100)  # less than any table here: every buffer too small
    assert len(_pair_blocks.room_buffer(10_000)) == 100
    for refuse in (False, True):
        if refuse:  # the system refuses the address space
            monkeypatch.setattr(_counts, "room_buffer", lambda cells: None)
            monkeypatch.setattr(_pair_blocks, "room_buffer", lambda cells: None)
        tables = CountTables()
        tables.grow_dense(("pair_count", "pair_feat"), ((C, V, V), (C, V, F)), ((0, 0, 0), (0, 0, 0)), 10_000)
        tables.get("pair_count")[:] = pc
        tables.grow_dense(("pair_count", "pair_feat"), ((C, V + 2, V + 2), (C, V + 2, F)), ((C, V, V), (C, V, F)),
                          10_000)
        assert tables.room == {} and tables.get("pair_count").base is None
        np.testing.assert_array_equal(tables.get("pair_count")[:, :V, :V], pc)
        blocks = PairBlocks(vf, F, C, 0, room=10_000)
        blocks.add_rows(D, np.arange(F), y, w)
        assert blocks.room is None and blocks.buf.base is None
        cols = np.arange(V)
        np.testing.assert_array_equal(blocks[:, cols[:, None], cols[None, :]], pc)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_dense_cells_moved_into_blocks_in_one_pass_are_numpys_additions_and_a_recount(seed):
    D, vf, y, w = _rows(seed)
    C, V, F = 3, len(vf), 6
    pc, _ = _brute(D, vf, y, w, C, V, F)
    dense = np.zeros((C + 2, V + 5, V + 5))  # a dense table with room beyond the layout, as the store's
    dense[:C, :V, :V] = pc
    dense[1, 0, 3] = dense[2, 5, 0] = 7.0  # a column of no feature: no block holds it
    same = np.flatnonzero(vf == vf[5])
    dense[0, same[0], same[1]] = 2.0  # two values of one attribute: none either
    dense[C, 2, 3] = dense[0, V + 1, 2] = 9.0  # past the layout's classes and columns: not read
    by_numpy = PairBlocks(vf, F, C)
    by_numpy.add(*cells_of(dense, (C, V, V)))
    tables = CountTables()  # the store's move (to_blocks), with spare room
    tables.replace("pair_count", dense)
    tables.to_blocks(vf, F, C, spare=100)
    moved = tables.get("pair_count")
    assert moved.cells.tobytes() == by_numpy.cells.tobytes() and moved.diag.tobytes() == by_numpy.diag.tobytes()
    assert len(moved.buf) == len(by_numpy.cells) + 100 and not moved.buf[len(moved.cells):].any()
    cols = np.arange(V)
    np.testing.assert_array_equal(moved[:, cols[:, None], cols[None, :]], pc)  # the recount, both orientations
    with pytest.raises(ValueError, match="does not cover"):
        PairBlocks(vf, F, C).add_dense(np.zeros((C, V - 1, V - 1)))


@pytest.mark.parametrize("seed", [0, 3])
@pytest.mark.parametrize("cut", [False, True])
def test_blocks_turned_sparse_in_one_pass_hold_numpys_cells_counts_and_capacity(seed, cut, monkeypatch):
    D, vf, y, w = _rows(seed, n=200)
    C, V, F = 3, len(vf), 6
    blocks = PairBlocks(vf, F, C)
    blocks.add_rows(D, np.arange(F), y, w)
    pdims, fdims = ((C - 1, V - 4, V - 2), (C - 1, V - 4, F - 1)) if cut else ((C, V, V), (C, V, F))
    pshape, fshape = (4, 64, 64), (4, 64, 8)
    (pk, pv), (fk, fv) = blocks.sparse_cells(pdims, pshape, fdims, fshape)
    got_pc, got_pf = SparseTable.from_cells(pk, pv, pshape), SparseTable.from_cells(fk, fv, fshape)
    want_pc, want_pf = SparseTable(pshape), SparseTable(fshape)
    want_pc.add(*cells_of(blocks, pdims))
    want_pf.add(*cells_of(blocks.feat, fdims))
    _same_table(got_pc, want_pc)
    _same_table(got_pf, want_pf)
    pc, pf = _brute(D, vf, y, w, C, V, F)  # the recount: pair cells to the bit, feature sums to rounding
    region = tuple(slice(0, d) for d in pdims)
    cols = np.arange(V)
    np.testing.assert_array_equal(got_pc[(slice(0, C), cols[:, None], cols[None, :])][region], pc[region])
    fregion = tuple(slice(0, d) for d in fdims)
    np.testing.assert_allclose(got_pf[(slice(0, C), cols[:, None], np.arange(F)[None, :])][fregion], pf[fregion],
                               rtol=1e-13)
    # the store's move (to_sparse) reads the blocks so, and numpy's way when a column of no feature holds a
    # count of its own (its pair_feat cell filed under no feature): the same tables either way
    for own in (False, True):
        held = blocks.copy()
        if own:
            held.diag[1, 0] = 2.0
            assert held.sparse_cells(pdims, pshape, fdims, fshape) is None
        tables = CountTables()
        tables.replace("pair_count", held)
        tables.replace("pair_feat", held.feat)
        tables.to_sparse(("pair_count", "pair_feat"), (pshape, fshape), (pdims, fdims))
        monkeypatch.setattr(PairBlocks, "sparse_cells", lambda *a: None)  # numpy's way
        reference = CountTables()
        reference.replace("pair_count", held)
        reference.replace("pair_feat", held.feat)
        reference.to_sparse(("pair_count", "pair_feat"), (pshape, fshape), (pdims, fdims))
        monkeypatch.undo()
        for name in ("pair_count", "pair_feat"):
            _same_table(tables.get(name), reference.get(name))
            np.testing.assert_array_equal(tables.get(name).rows_held(), reference.get(name).rows_held())


def _store(table, vf, C, F):
    """What :func:`pair_tests` reads of a store."""
    return types.SimpleNamespace(n_classes=C, value_keys=[None] * len(vf), features=[f"f{i}" for i in range(F)],
                                 value_feature=vf, pair_count=table)


def _g_by_pair(pc, vf, i, j, C):
    """G and degrees of freedom of x_i against x_j given the class and not, summed over a dense table's block."""
    rows, cols = np.flatnonzero(vf == i), np.flatnonzero(vf == j)
    out = []
    for block in (pc[:C][:, rows][:, :, cols], pc[:C][:, rows][:, :, cols].sum(0, keepdims=True)):
        g = df = 0.0
        for n in block:
            if not n.sum():
                continue
            r, c = n.sum(1), n.sum(0)
            held = n > 0
            g += 2.0 * float((n[held] * np.log(n[held] * n.sum() / np.outer(r, c)[held])).sum())
            df += max(int((r > 0).sum()) - 1, 0) * max(int((c > 0).sum()) - 1, 0)
        out.append((g, df))
    return out


def _sparse_counts(seed: int, n: int, weights: str):
    """``n`` rows of five attributes of three values in three classes (weights whole or fractional): the value
    columns' features, the weights, the dense pair counts by brute force, and a sparse table of them."""
    D, vf, y, w = _rows(seed, n=n, F=5, values=3)
    if weights == "whole":
        w = np.ones(len(y))
    C, V = 3, len(vf)
    pc, _ = _brute(D, vf, y, w, C, V, 5)
    table = SparseTable((4, 32, 32))
    table.add(*cells_of(pc, (C, V, V)))
    return vf, w, pc, table


@pytest.mark.parametrize("weights", ["whole", "fractional"])
def test_pair_tests_off_a_sparse_table_are_numpys_to_the_bit_and_the_textbook_g_tests(weights):
    vf, w, pc, table = _sparse_counts(5, 300, weights)
    C, V, F = 3, len(vf), 5
    table.add((np.array([0, 1]), np.array([0, 2]), np.array([2, 0])), np.array([5.0, 1.0]))  # column 0: not read
    s = _store(table, vf, C, F)
    got = pair_tests(s)
    want = pair_tests_of_cells(*cells_of(table, (C, V, V)), vf, C, V, F)
    for a, b in zip(got, want):
        assert a.tobytes() == b.tobytes()
    joint, given, n, _ = got
    for i in range(F):
        for j in range(i + 1, F):
            (g_c, df_c), (g_j, df_j) = _g_by_pair(pc, vf, i, j, C)
            assert math.isclose(n[i, j], pc[:C][:, vf == i][:, :, vf == j].sum(), rel_tol=1e-12)
            for got_p, g, df in ((given[i, j], g_c, df_c), (joint[i, j], g_j, df_j)):
                want_p = float(chi2_logsf(np.array([max(g, 0.0)]), np.array([float(df)]))[0]) if df else 0.0
                assert math.isclose(got_p, want_p, rel_tol=1e-9, abs_tol=1e-12)
    assert given[0, 1] == given.min() < math.log(1e-3)  # the planted dependence, the strongest
    empty = pair_tests(_store(SparseTable((4, 32, 32)), vf, C, F))
    assert all(not a.any() for a in empty)


def _wide(n, seed=0, features=16, values=5):
    rng = np.random.default_rng(seed)
    X = rng.integers(values, size=(n, features))
    y = rng.integers(2, size=n)
    X[:, 0] = (y + rng.integers(2, size=n)) % values
    X[:, 2] = np.where(rng.random(n) < 0.9, X[:, 1], X[:, 2])
    return pd.DataFrame(X, columns=[f"f{i}" for i in range(features)]), pd.Series(y)


def _selected_tan(monkeypatch, X, y):
    from stream_nb.stats.budget import Layout

    monkeypatch.setattr(_budget, "SPARSE_FLOOR", 0)
    monkeypatch.setattr(Layout, "blocks_allowed", lambda self, s: False)
    model = TAN(memory_budget=150_000)
    model.learn_many(X[:400], y[:400])
    s = model._stats
    assert isinstance(s.pair_count, _candidates.SelectedTable) and s.selection.allowed is not None
    keep = s.selection.edges.copy()
    i, j = np.nonzero(np.triu(keep, 1))
    keep[i[0], j[0]] = keep[j[0], i[0]] = False  # one pair fewer: its cells go, the others are copied
    return model, s, keep


def test_a_selection_that_keeps_every_cell_keeps_the_table_and_a_narrower_one_copies_the_kept_cells(monkeypatch):
    X, y = _wide(500)
    model, s, keep = _selected_tan(monkeypatch, X, y)
    before = {name: getattr(s, name).cells() for name in ("pair_count", "pair_feat")}
    _candidates.apply_selection(s, s.selection.allowed.copy(), keep)
    vf = np.asarray(s.value_feature)
    for name, by_feature in (("pair_count", False), ("pair_feat", True)):  # the kept cells, by a filter of the old
        (c, u, v), n = before[name]
        kept = pair_kept(s.selection.allowed, keep, vf[u], v if by_feature else vf[v]) & (n != 0)
        (c2, u2, v2), n2 = getattr(s, name).cells()
        for x, x2 in zip((c[kept], u[kept], v[kept]), (c2, u2, v2)):
            np.testing.assert_array_equal(x, x2)
        np.testing.assert_array_equal(n[kept], n2)
    tables = {name: getattr(s, name) for name in ("pair_count", "pair_feat")}
    copied = {name: (t.cells(), t.nbytes, t.rows_held().copy()) for name, t in tables.items()}
    epoch = s.epoch
    _candidates.apply_selection(s, s.selection.allowed.copy(), keep)  # the same pairs: every cell kept
    assert s.epoch > epoch
    for name, t in tables.items():
        assert getattr(s, name) is t  # the same table, not a copy of it
        (idx, n), nbytes, rows = copied[name]
        idx2, n2 = t.cells()
        assert all(np.array_equal(a, b) for a, b in zip(idx, idx2)) and np.array_equal(n, n2)
        assert t.nbytes == nbytes == 16 * SparseTable.slots_of(2 * len(t))  # the capacity a copy takes
        keys, _ = t.arrays()  # its index: the rows of the cells it holds, as a copy's
        bits = np.zeros(8 * len(rows), dtype=bool)
        bits[np.unique(keys[keys >= 0] // t.shape[2])] = True
        np.testing.assert_array_equal(rows, np.packbits(bits, bitorder="little"))
        np.testing.assert_array_equal(t.rows_held(), rows)
        assert t.allowed is s.selection.allowed and t.edges is s.selection.edges
    # and it learns on as the store whose selection was applied once (its tables then a copy's)
    model.learn_many(X[400:450], y[400:450])
    once, s_once, keep_once = _selected_tan(monkeypatch, X, y)
    np.testing.assert_array_equal(keep_once, keep)
    _candidates.apply_selection(s_once, s_once.selection.allowed.copy(), keep_once)
    once.learn_many(X[400:450], y[400:450])
    for x in X[450:].to_dict("records"):
        assert model.predict_proba_one(x) == once.predict_proba_one(x)


@pytest.mark.parametrize("weights", ["whole", "fractional"])
def test_tans_bayes_gains_off_a_sparse_table_are_numpys_to_the_bit_and_the_dense_tables(weights):
    from stream_nb.learners._tree_score import _gains_from_cells, bayesian_edge_gains, gains_of_cells

    vf, w, pc, table = _sparse_counts(8, 250, weights)
    C, V, F = 3, len(vf), 5
    table.add((np.array([0, 3]), np.array([0, 2]), np.array([2, 1])), np.array([5.0, 1.0]))  # column 0, class 3: not read
    nv = np.bincount(vf[vf >= 0], minlength=F).astype(float)
    s = types.SimpleNamespace(pair_count=table, value_feature=vf)
    got = _gains_from_cells(s, C, V, F, 0.5, nv)
    assert got.tobytes() == gains_of_cells(s, C, V, F, 0.5, nv).tobytes()
    dense = types.SimpleNamespace(n_classes=C, value_keys=[None] * V, features=list(range(F)), value_feature=vf,
                                  n_values=nv, n_seen=int(w.sum()) + 1, pairs_sparse=False, pairs_blocks=False,
                                  pair_count=pc, sync_pairs=lambda: None)
    np.testing.assert_allclose(got, bayesian_edge_gains(dense, 0.5), rtol=1e-9, atol=1e-9)  # the dense tables' gains
    assert (got != 0).sum() == F * (F - 1)


def _wide_events(n: int, seed: int, late: int) -> list:
    """``n`` events of eight categorical attributes in a chain below the class; from event ``late`` on, each
    attribute takes values unseen before (six more each) and a fourth class comes: the tables grow then."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        y = int(rng.integers(0, 3 if i < late else 4))
        prev, x = y, {}
        for j in range(8):
            v = int((prev + rng.integers(0, 2)) % (3 + j % 2))
            if i >= late and rng.random() < 0.5:
                v = 10 + int(rng.integers(0, 6))
            x[f"a{j}"] = f"v{v}"
            prev = v
        out.append((x, f"c{y}"))
    return out


#: memory budgets, and the pair tables' layout with them at the snapshot and after the events that follow it
LAYOUTS = {400_000: (np.ndarray, np.ndarray), 120_000: (np.ndarray, PairBlocks), 30_000: (PairBlocks, SparseTable)}


@pytest.mark.parametrize("budget", sorted(LAYOUTS))
@pytest.mark.parametrize("name", ["TAN", "KDB"])
def test_a_restored_store_takes_no_room_and_no_compiled_move_until_it_learns_then_learns_as_one_never_saved(
        name, budget, monkeypatch):
    import pickle

    from stream_nb import KDB
    from stream_nb.options import EqualFrequency, Ignore, Parents, Tree
    from stream_nb.stats.tables import _counts, _pair_blocks

    def make():
        if name == "TAN":
            return TAN(numeric=EqualFrequency(bins=3), missing=Ignore(), search=Tree(rebuild_every=40),
                       memory_budget=budget)
        return KDB(k=2, numeric=EqualFrequency(bins=3), missing=Ignore(), search=Parents(rebuild_every=40),
                   memory_budget=budget)

    def has_room(model) -> bool:
        tables = model._stats.tables
        return bool(tables.room) or getattr(tables.get("pair_count"), "room", None) is not None

    data = _wide_events(400, 11, late=200)
    assert not has_room(make())  # a store made takes no room before its first event
    model = make()
    for x, y in data[:200]:
        model.learn_one(x, y)
    at_snapshot, after = LAYOUTS[budget]
    assert type(model._stats.tables.get("pair_count")) is at_snapshot
    assert has_room(model)  # learning: the tables grew in their room

    def refused(*args, **kwargs):
        raise AssertionError("a state read took a buffer of room or ran a compiled layout move")

    for module in (_counts, _pair_blocks):  # the layout moves' compiled passes, and the buffers of room
        monkeypatch.setattr(module, "compiled", refused)
        monkeypatch.setattr(module, "room_buffer", refused)
    back = type(model).from_state(*model.state())
    unpickled = pickle.loads(pickle.dumps(model))
    monkeypatch.undo()
    for twin in (back, unpickled):  # exactly their cells: no buffer beyond them
        assert not has_room(twin) and type(twin._stats.tables.get("pair_count")) is at_snapshot
    for x, y in data[200:]:  # new values and a class: the tables grow, the restored ones into room taken now
        for m in (model, back, unpickled):
            m.learn_one(x, y)
    for m in (model, back, unpickled):  # (sparse tables take none)
        assert type(m._stats.tables.get("pair_count")) is after and has_room(m) == (after is not SparseTable)
    s = model._stats
    used = (len(s.classes), len(s.value_keys), len(s.value_keys))
    (idx, n) = cells_of(s.pair_count, used)
    for twin in (back, unpickled):  # the same counts to the bit, and the same probabilities
        (tidx, tn) = cells_of(twin._stats.pair_count, used)
        assert all(np.array_equal(a, b) for a, b in zip(idx, tidx)) and tn.tobytes() == n.tobytes()
        X = pd.DataFrame([x for x, _ in data[300:]])
        assert twin.predict_proba_many(X).values.tobytes() == model.predict_proba_many(X).values.tobytes()
