"""Pair counts held pair by pair (stats/tables/_pair_blocks.py): the counts equal a brute-force count of the
events read as the dense ``pair_count`` and ``pair_feat`` are, through growth, merges and a round trip of
the cells a snapshot writes; the bytes are each attribute pair's cells once."""

import itertools
import pickle

import numpy as np
import pytest

from stream_nb.stats.tables import PairBlocks
from table_reference import tree_jll


def _events(rng, n, F, values, classes, missing=0.2):
    """``n`` events of ``F`` attributes (raw values 0..values-1, -1 missing) and their classes."""
    X = rng.integers(0, values, size=(n, F))
    X[rng.random((n, F)) < missing] = -1
    return X, rng.integers(0, classes, size=n)


class Columns:
    """Value columns numbered in order of first appearance, as the store numbers them (column 0: none)."""

    def __init__(self):
        self.col, self.vf, self.F, self.C = {}, [-1], 0, 0

    def encode(self, X, y, feats=None):
        feats = np.arange(X.shape[1]) if feats is None else np.asarray(feats)
        D = np.full(X.shape, -1, dtype=np.int64)
        for r, row in enumerate(X):
            for j, x in enumerate(row):
                if x >= 0:
                    key = (int(feats[j]), int(x))
                    if key not in self.col:
                        self.col[key] = len(self.vf)
                        self.vf.append(int(feats[j]))
                    D[r, j] = self.col[key]
        self.F, self.C = max(self.F, int(feats.max()) + 1), max(self.C, int(y.max()) + 1)
        return D, feats


def brute(D, feats, y, V, F, C):
    """The dense pair_count (C, V, V) and pair_feat (C, V, F) of the rows of ``D``, one cell at a time."""
    pc, pf = np.zeros((C, V, V)), np.zeros((C, V, F))
    for row, c in zip(D, y):
        for j, u in enumerate(row):
            for i, v in enumerate(row):
                if u >= 0 and v >= 0:
                    pc[c, u, v] += 1
                    pf[c, u, feats[i]] += 1
    return pc, pf


def dense(t, V, F):
    """The dense pair_count (C, V, V) and pair_feat (C, V, F) the blocks ``t`` read as."""
    cols = np.arange(V)
    return t[:, cols[:, None], cols[None, :]], t.feat[:, cols[:, None], np.arange(F)[None, :]]


def test_counts_equal_a_brute_force_count_and_the_compiled_rows_the_cell_by_cell_additions():
    rng = np.random.default_rng(1)
    X, y = _events(rng, 60, 5, 4, 3)
    cols = Columns()
    D, feats = cols.encode(X, y)
    V = len(cols.vf)
    t = PairBlocks(cols.vf, cols.F, cols.C)
    t.add_rows(D, feats, y, np.ones(len(y)))
    pc, pf = brute(D, feats, y, V, cols.F, cols.C)
    got_pc, got_pf = dense(t, V, cols.F)
    np.testing.assert_array_equal(got_pc, pc)
    np.testing.assert_array_equal(got_pf, pf)
    # the cells of a dense table added one by one, both orientations: the same counts
    one = PairBlocks(cols.vf, cols.F, cols.C)
    for row, c in zip(D, y):
        obs = row[row >= 0]
        u, v = np.meshgrid(obs, obs, indexing="ij")
        one.add((np.full(u.size, c), u.ravel(), v.ravel()), 1.0)
    np.testing.assert_array_equal(one.cells, t.cells)
    np.testing.assert_array_equal(one.diag, t.diag)
    # cells with a count: each pair of values of two attributes once, each value once
    vf = np.array(cols.vf)
    held = np.count_nonzero(pc[:, vf[:, None] < vf[None, :]]) + np.count_nonzero(np.diagonal(pc, axis1=1, axis2=2))
    assert len(t) == held


def test_bytes_are_each_attribute_pair_once_and_the_diagonal():
    n = np.array([3, 1, 4, 2])
    vf = np.concatenate(([-1], np.repeat(np.arange(4), n)))
    t = PairBlocks(vf, 4, 5)
    pairs = sum(int(n[f] * n[g]) for f, g in itertools.combinations(range(4), 2))
    assert t.nbytes == PairBlocks.bytes_for(n, 5) == 8 * 5 * (pairs + n.sum() + 1)
    # 600 attributes of 6 values, 4 classes: the blocks fit the default budget (256 MiB), the dense
    # C·V² table (and its C·V·F twin) do not
    assert PairBlocks.bytes_for([6] * 600, 4) == 207_129_632 < 256 * 1024 * 1024 < 8 * 4 * 3600 * 3600


def test_values_features_and_classes_that_come_later_grow_the_blocks_between_additions():
    rng = np.random.default_rng(2)
    X1, y1 = _events(rng, 30, 3, 2, 2)
    X2, y2 = _events(rng, 40, 5, 4, 4)  # more values, two more attributes, two more classes
    cols = Columns()
    D1, f1 = cols.encode(X1, y1)
    t = PairBlocks(cols.vf, cols.F, cols.C)
    t.add_rows(D1, f1, y1, np.ones(len(y1)))
    D2, f2 = cols.encode(X2, y2)
    t.grow(cols.vf, cols.F, cols.C)
    t.add_rows(D2, f2, y2, np.ones(len(y2)))
    V = len(cols.vf)
    pc1, pf1 = brute(np.pad(D1, ((0, 0), (0, 2)), constant_values=-1), f2, y1, V, cols.F, cols.C)
    pc2, pf2 = brute(D2, f2, y2, V, cols.F, cols.C)
    got_pc, got_pf = dense(t, V, cols.F)
    np.testing.assert_array_equal(got_pc, pc1 + pc2)
    np.testing.assert_array_equal(got_pf, pf1 + pf2)
    assert t.nbytes == PairBlocks.bytes_for(np.bincount(np.array(cols.vf[1:])), cols.C)
    with pytest.raises(ValueError, match="keep their features"):
        t.grow(cols.vf[:-1], cols.F, cols.C)


def test_blocks_with_room_grow_in_place_value_by_value_and_count_as_a_brute_force_recount():
    rng = np.random.default_rng(7)
    X, y = _events(rng, 120, 6, 5, 4)
    X[:, 4:][np.arange(120) < 60] = -1  # two attributes first seen half way
    cols, roomy, tight = Columns(), None, None
    seen_D, seen_y, in_place, copied = [], [], 0, 0
    for r in range(len(y)):  # one event at a time: each new value, feature or class grows the layout
        D, feats = cols.encode(X[r : r + 1], y[: r + 1])
        if roomy is None:
            roomy, tight = PairBlocks(cols.vf, cols.F, cols.C, spare=400), PairBlocks(cols.vf, cols.F, cols.C)
        else:
            buf = roomy.buf
            roomy.grow(cols.vf, cols.F, cols.C, spare=400)
            tight.grow(cols.vf, cols.F, cols.C)
            in_place += roomy.buf is buf and roomy.cells.size > 0
            copied += roomy.buf is not buf
        roomy.add_rows(D, feats, y[r : r + 1], np.ones(1))
        tight.add_rows(D, feats, y[r : r + 1], np.ones(1))
        seen_D.append(np.pad(D[0], (0, 6 - D.shape[1]), constant_values=-1))
        seen_y.append(y[r])
        # room beyond the layout: the buffer's bytes, zero past the cells
        assert roomy.nbytes == roomy.buf.nbytes + roomy.diag.nbytes >= PairBlocks.bytes_for(
            np.bincount(np.array(cols.vf[1:]), minlength=cols.F), cols.C)
        assert not roomy.buf[roomy.cells.size :].any()
    assert in_place > 10 and copied >= 1  # most growths moved the cells within the buffer
    V = len(cols.vf)
    pc, pf = brute(np.array(seen_D), np.arange(6), np.array(seen_y), V, cols.F, cols.C)
    for t in (roomy, tight):
        got_pc, got_pf = dense(t, V, cols.F)
        np.testing.assert_array_equal(got_pc, pc)
        np.testing.assert_array_equal(got_pf, pf)
    np.testing.assert_array_equal(roomy.cells, tight.cells)
    assert tight.nbytes == PairBlocks.bytes_for(np.bincount(np.array(cols.vf[1:])), cols.C)
    with pytest.raises(ValueError, match="spare"):
        tight.grow(cols.vf + [0], cols.F, cols.C, spare=-1)


def test_a_merge_by_sums_of_cells_and_a_snapshot_round_trip_keep_the_counts():
    rng = np.random.default_rng(3)
    X, y = _events(rng, 80, 4, 3, 3)
    a, b = Columns(), Columns()
    Da, fa = a.encode(X[:40], y[:40])
    Db, fb = b.encode(X[40:][::-1], y[40:][::-1])  # another store: its values numbered in another order
    ta, tb = PairBlocks(a.vf, a.F, a.C), PairBlocks(b.vf, b.F, b.C)
    ta.add_rows(Da, fa, y[:40], np.ones(40))
    tb.add_rows(Db, fb, y[40:][::-1], np.ones(40))
    # the merge: b's columns numbered in a (new ones appended), a grown, b's cells added through the map
    vmap = np.full(len(b.vf), -1, dtype=np.int64)
    for key, col in b.col.items():
        vmap[col] = a.col.setdefault(key, len(a.vf))
        if vmap[col] == len(a.vf):
            a.vf.append(key[0])
    ta.grow(a.vf, max(a.F, b.F), max(a.C, b.C))
    (c, u, v), vals = tb.cells_held()
    ta.add((c, vmap[u], vmap[v]), vals)
    all_cols = Columns()
    all_cols.col, all_cols.vf = dict(a.col), list(a.vf)
    D, feats = all_cols.encode(X, y)
    V, F = len(a.vf), ta.n.size
    pc, pf = brute(D, feats, y, V, F, ta.n_classes)
    got_pc, got_pf = dense(ta, V, F)
    np.testing.assert_array_equal(got_pc, pc)
    np.testing.assert_array_equal(got_pf, pf)
    # a snapshot writes the dense cells (cells_held); the table read back from them, and a pickled one, are equal
    idx, vals = ta.cells_held()
    back = PairBlocks(ta.vf, F, ta.n_classes)
    back.add(idx, vals)
    np.testing.assert_array_equal(back.cells, ta.cells)
    np.testing.assert_array_equal(back.diag, ta.diag)
    again = pickle.loads(pickle.dumps(ta.copy()))
    np.testing.assert_array_equal(dense(again, V, F)[0], pc)


def _dense_tan(seed=4, n=150, F=5):
    """A TAN with dense pair tables that learned ``n`` events (some values missing, counted as observed), and
    its blocks made of the dense cells."""
    from stream_nb import TAN, Ignore
    from stream_nb.stats.tables import cells_of

    rng = np.random.default_rng(seed)
    X, y = _events(rng, n, F, 4, 3, missing=0.15)
    X[:, 1] = np.where(X[:, 0] >= 0, (X[:, 0] + (rng.random(n) < 0.2)) % 4, X[:, 1])  # x1 follows x0
    model = TAN(memory_budget=None, missing=Ignore())  # (EM's expected pairs are not symmetric: see the notes)
    for row, c in zip(X, y):
        model.learn_one({f"x{j}": int(v) for j, v in enumerate(row) if v >= 0}, int(c))
    s = model._stats
    C, V, Fs = s.n_classes, len(s.value_keys), len(s.features)
    blocks = PairBlocks(s.value_feature[:V], Fs, C)
    blocks.add(*cells_of(s.pair_count, (C, V, V)))
    return model, s, blocks, X


def test_blocks_made_of_a_dense_stores_cells_read_as_its_pair_tables_and_give_its_cmi_and_bayes_gains():
    from stream_nb.learners._structure import conditional_mutual_information
    from stream_nb.learners._tree_score import bayesian_edge_gains

    model, s, blocks, _ = _dense_tan()
    C, V, F = s.n_classes, len(s.value_keys), len(s.features)
    got_pc, got_pf = dense(blocks, V, F)
    np.testing.assert_array_equal(got_pc, s.pair_count[:C, :V, :V])
    np.testing.assert_array_equal(got_pf, s.pair_feat[:C, :V, :F])
    np.testing.assert_allclose(blocks.cmi(), conditional_mutual_information(s), rtol=1e-12, atol=1e-15)
    assert blocks.cmi()[0, 1] == blocks.cmi().max() > 0  # the planted dependence is the strongest
    fs, gs = np.array([1, 3, 4]), np.array([0, 2, 1])  # some pairs, either order: their cells, the others 0
    some, every = blocks.cmi((fs, gs)), blocks.cmi()
    held = np.zeros_like(every, dtype=bool)
    held[fs, gs] = held[gs, fs] = True
    np.testing.assert_array_equal(some[held], every[held])
    assert not some[~held].any()
    with pytest.raises(ValueError, match="two distinct ones each"):
        blocks.cmi((np.array([1]), np.array([1])))
    alpha = float(model._alpha)
    np.testing.assert_allclose(blocks.bayes_gains(alpha, s.n_values), bayesian_edge_gains(s, alpha), rtol=1e-9,
                               atol=1e-9)


def test_tree_scores_off_the_blocks_equal_the_textbook_scores_off_the_dense_tables():
    from stream_nb.kernels import NO_DETECTOR, compiled

    model, s, blocks, X = _dense_tan()
    model.rebuild()
    feats = np.arange(len(s.features), dtype=np.int64)
    cols = np.array([[s.values[f].get(int(v), 0) if v >= 0 else -1 for f, v in zip(feats, row)] for row in X[:40]])
    cols[::7, 2] = 0  # a value never seen
    ppos = model._parent_columns(feats)
    assert (ppos >= 0).sum() == len(feats) - 1
    ok = ~((cols < 0) & np.isin(np.arange(len(feats)), ppos[ppos >= 0])[None, :]).any(1)  # every parent observed
    D = np.ascontiguousarray(cols[ok], dtype=np.int64)
    want = tree_jll(model, D, feats, ppos)  # numpy over the dense tables
    out = np.empty((len(D), s.n_classes))
    rows, C = len(D), s.n_classes
    g = [np.zeros((C, 0)) for _ in range(3)]
    compiled().tree_block_pairs(D, feats, ppos, np.zeros((0, 0), dtype=np.int64), np.zeros((rows, 0)),
                                np.zeros(0, dtype=np.int64), np.full(rows, -1, dtype=np.int64), np.zeros(0), np.zeros(0),
                                False, C, float(model._alpha), 0.0, False, 1e-9, s.class_count, s.value_count,
                                s.feat_count, s.n_values, *blocks.arrays(), *g, out, True, np.zeros((0, 0)),
                                *NO_DETECTOR)
    np.testing.assert_allclose(out, want, rtol=1e-10)


@pytest.mark.parametrize("backoff,to_parent", [(0.0, False), (5.0, False), (5.0, True)])
def test_the_learning_kernel_on_blocks_scores_and_counts_as_the_dense_tree_kernel(backoff, to_parent):
    from stream_nb.kernels import NO_DETECTOR, compiled

    model, s, blocks, X = _dense_tan(seed=5, n=120)
    model.rebuild()
    C, V, F = s.n_classes, len(s.value_keys), len(s.features)
    feats = np.arange(F, dtype=np.int64)
    rng = np.random.default_rng(6)
    rows = rng.integers(0, 4, size=(60, F))
    D = np.array([[s.values[f].get(int(v), 0) for f, v in zip(feats, row)] for row in rows], dtype=np.int64)
    yc = rng.integers(0, C, size=60).astype(np.int64)
    yc[::9] = -1  # unlabelled rows: scored, not counted
    D[yc < 0, 3] = 0  # with a value never seen
    ppos = model._parent_columns(feats)
    assert (ppos >= 0).sum() == F - 1  # a tree: every attribute but the root scored given its parent
    dense_arrays = [a.copy() for a in (s.class_count, s.value_count, s.feat_count, s.pair_count, s.pair_feat)]
    block_arrays = [a.copy() for a in (s.class_count, s.value_count, s.feat_count)]
    g = [a.copy() for a in (s.g_n, s.g_mean, s.g_m2)]
    G, gslots = np.zeros((60, 0)), np.zeros(0, dtype=np.int64)
    none, more = np.zeros(0), np.zeros((0, 0), dtype=np.int64)
    want, got = np.empty((60, C)), np.empty((60, C))
    a = float(model._alpha)
    cc, vc, fc, pc, pf = dense_arrays
    compiled().tree_block(D, feats, ppos, more, G, gslots, yc, none, none, True, C, a, backoff, to_parent, 1e-9,
                          cc, vc, fc, pc, pf, s.n_values, False, vc, fc, pc, pf, *g, want, False, np.zeros((0, 0)),
                          *NO_DETECTOR)
    g = [a.copy() for a in (s.g_n, s.g_mean, s.g_m2)]
    done = compiled().tree_block_pairs(D, feats, ppos, more, G, gslots, yc, none, none, True, C, a, backoff, to_parent,
                                       1e-9, *block_arrays, s.n_values, *blocks.arrays(), *g, got, False,
                                       np.zeros((0, 0)), *NO_DETECTOR)
    assert done == 60
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    for x, y in zip(block_arrays, dense_arrays[:3]):
        np.testing.assert_array_equal(x, y)
    got_pc, got_pf = dense(blocks, V, F)
    np.testing.assert_array_equal(got_pc, pc[:C, :V, :V])
    np.testing.assert_array_equal(got_pf, pf[:C, :V, :F])


def _tree_block(k, D, feats, ppos, more, yc, weights, infl, backoff, to_parent, arrays, blocks, out, watch=None):
    """Run the learning kernel on pair blocks over the rows given (Laplace, or the back-off ``backoff``),
    feeding ``watch`` (the detector's kernel arguments) when given; the rows done."""
    from stream_nb.kernels import NO_DETECTOR

    C = blocks.n_classes
    g = [np.zeros((C, 0)) for _ in range(3)]
    return k.tree_block_pairs(D, feats, ppos, more, np.zeros((len(D), 0)), np.zeros(0, dtype=np.int64), yc, weights,
                              infl, True, C, 1.0, backoff, to_parent, 1e-9, *arrays, *blocks.arrays(), *g, out, False,
                              np.zeros((0, 0)), *(NO_DETECTOR if watch is None else watch))


@pytest.mark.parametrize("decayed", [False, True])
@pytest.mark.parametrize("backoff,to_parent", [(0.0, False), (5.0, False), (5.0, True)])
def test_a_block_scored_and_counted_in_one_call_is_the_block_row_by_row(backoff, to_parent, decayed):
    """The kernel counts the tree's pairs as it goes and the other pairs at the end of the call: the scores
    and the counts equal calls of one row each, on a block with values first seen in it, missing attributes
    (each with its subtree), a class first seen mid-block, under decay weights too, and equal the brute-force
    count; a detector that acts mid-block leaves the rows before it counted, its own row scored only."""
    from stream_nb.kernels import compiled
    from stream_nb.kernels._detectors import PAGE_HINKLEY, detector_new

    k = compiled()
    rng = np.random.default_rng(7)
    F, C, R = 7, 3, 40
    parent = np.array([-1, 0, 0, 1, 6, 3, 1])  # edges both ways in feature order: 6 -> 4, 1 -> 6
    X0, y0 = _events(rng, 50, F, 3, 2, missing=0.0)  # counted before: values 0..2 and classes 0, 1
    X = rng.integers(0, 5, size=(R, F))  # values 3 and 4 new in the block
    y = rng.integers(0, 2, size=R)
    y[R // 2:] = rng.integers(0, 3, size=R - R // 2)  # class 2 from mid-block
    y[R // 2] = 2
    y[::11] = -1  # unlabelled rows: scored only
    for r in range(0, R, 3):  # an attribute missing with its subtree: every observed attribute's parent observed
        gone = [int(rng.integers(0, F))]
        while gone[-1:] and len(gone) < F:
            kids = [f for f in range(F) if parent[f] in gone and f not in gone]
            if not kids:
                break
            gone += kids
        X[r, gone] = -1
    cols = Columns()
    D0, feats = cols.encode(X0, y0)
    before = len(cols.vf)
    D, _ = cols.encode(X, np.maximum(y, 0))
    assert len(cols.vf) > before
    V = len(cols.vf)
    vf = np.array(cols.vf)
    n_values = np.bincount(vf[1:before], minlength=F).astype(np.int64)
    more = np.zeros((R, F), dtype=np.int64)  # values each feature gained within the block up to each row
    for r in range(R):
        firsts = np.unique(D[: r + 1][(D[: r + 1] >= before)])
        more[r] = np.bincount(vf[firsts], minlength=F)
    ppos = parent.astype(np.int64)  # D holds every feature in order: a parent's column is itself
    weights, infl = (1.25 ** np.arange(R), 1.25 ** np.arange(R)) if decayed else (np.zeros(0), np.zeros(0))

    def start():
        blocks = PairBlocks(vf[:before], F, 2)
        blocks.add_rows(D0, feats, y0, np.ones(len(y0)))
        cc = np.bincount(y0, minlength=C).astype(float)
        vc, fc = np.zeros((C, V)), np.zeros((C, F))
        for row, c in zip(D0, y0):
            vc[c, row] += 1
            fc[c] += 1
        blocks.grow(vf, F, C)  # grown to hold every column of the block before the kernel reads it
        return blocks, [cc, vc, fc, n_values]

    blocks, arrays = start()
    out = np.empty((R, C))
    assert _tree_block(k, D, feats, ppos, more, y, weights, infl, backoff, to_parent, arrays, blocks, out) == R
    one, one_arrays = start()
    want = np.empty((R, C))
    for r in range(R):
        s = slice(r, r + 1)
        _tree_block(k, D[s], feats, ppos, more[s], y[s], weights[s], infl[s], backoff, to_parent, one_arrays, one,
                    want[s])
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(blocks.cells, one.cells)
    np.testing.assert_array_equal(blocks.diag, one.diag)
    for got, exp in zip(arrays, one_arrays):
        np.testing.assert_array_equal(got, exp)
    if not decayed:  # and the brute-force count of every event
        ok = y >= 0
        pc, pf = brute(np.vstack([D0, D[ok]]), feats, np.concatenate([y0, y[ok]]), V, F, C)
        got_pc, got_pf = dense(blocks, V, F)
        np.testing.assert_array_equal(got_pc, pc)
        np.testing.assert_array_equal(got_pf, pf)
    # a detector that acts on the 9th labelled row (PageHinkley: a drift once it has 9 values, threshold -1)
    params = np.array([9.0, 0.0, -1.0, 1.0, 0.0])
    watch = (True, PAGE_HINKLEY, params, *detector_new(PAGE_HINKLEY, params), False)
    blocks, arrays = start()
    done = _tree_block(k, D, feats, ppos, more, y, weights, infl, backoff, to_parent, arrays, blocks, out, watch)
    assert done == np.flatnonzero(y >= 0)[8]
    one, one_arrays = start()
    for r in range(done):
        s = slice(r, r + 1)
        _tree_block(k, D[s], feats, ppos, more[s], y[s], weights[s], infl[s], backoff, to_parent, one_arrays, one,
                    want[s])
    np.testing.assert_array_equal(out[:done], want[:done])
    np.testing.assert_array_equal(blocks.cells, one.cells)
    np.testing.assert_array_equal(blocks.diag, one.diag)
