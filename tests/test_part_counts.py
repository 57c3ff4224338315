"""The count tables (stats.tables.CountTables), alone: growth keeps the counts in use, the observed-only twin
is an independent copy, tables are held by their names only; a store's counts are the part's, under
read-only names, against counts made by hand; and what the part counts, moves and rebuilds in another layout
holds what counting each event's cells by hand holds."""

import collections
import itertools
from operator import attrgetter

import numpy as np
import pytest

from stream_nb.stats import Stats
from stream_nb.stats.tables import COUNT_TABLES, CountTables, SparseTable, cells_of, scatter_add, sparse_of


def _filled(rng, t: CountTables, used):
    """Random counts in the region ``used`` = (C, V, F) of the class, value and feature counts."""
    C, V, F = used
    t.held.class_count[:C] = rng.integers(1, 9, C)
    t.held.value_count[:C, :V] = rng.integers(0, 9, (C, V))
    t.held.feat_count[:C, :F] = rng.integers(0, 9, (C, F))
    return t.held.class_count[:C].copy(), t.held.value_count[:C, :V].copy(), t.held.feat_count[:C, :F].copy()


@pytest.mark.parametrize("observed", [False, True])
def test_growing_keeps_the_counts_in_use_and_zeroes_the_room(observed):
    rng = np.random.default_rng(3)
    t = CountTables()
    t.grow(4, 16, 8, 4, (0, 0, 0))
    if observed:
        assert t.keep_observed()
    used = (3, 11, 5)
    cc, vc, fc = _filled(rng, t, used)
    if observed:
        t.held.obs_value_count[:3, :11] = vc / 2
        t.held.obs_feat_count[:3, :5] = fc / 2
    t.grow(8, 32, 8, 4, used)
    assert t.capacity == (8, 32, 8, 4)
    assert t.held.class_count.shape == (8,) and t.held.value_count.shape == (8, 32) and t.held.feat_count.shape == (8, 8)
    np.testing.assert_array_equal(t.held.class_count[:3], cc)
    np.testing.assert_array_equal(t.held.value_count[:3, :11], vc)
    np.testing.assert_array_equal(t.held.feat_count[:3, :5], fc)
    total = cc.sum() + vc.sum() + fc.sum()
    assert t.held.class_count.sum() + t.held.value_count.sum() + t.held.feat_count.sum() == total  # the room is zero
    if observed:
        np.testing.assert_array_equal(t.held.obs_value_count[:3, :11], vc / 2)
        np.testing.assert_array_equal(t.held.obs_feat_count[:3, :5], fc / 2)
        assert t.held.obs_value_count.sum() == vc.sum() / 2 and t.held.obs_value_count.shape == (8, 32)
    else:
        assert t.get("obs_value_count") is None


def test_a_dense_family_grows_with_the_cells_of_the_region_in_use():
    rng = np.random.default_rng(5)
    t = CountTables()
    t.grow(2, 6, 3, 0, (0, 0, 0))
    t.keep_observed()
    family = ("pair_count", "pair_feat")
    t.grow_dense(family, ((2, 6, 6), (2, 6, 3)), ((0, 0, 0), (0, 0, 0)))
    before = {}
    for p, k in itertools.product(t.sets(), family):
        a = t.get(p + k)
        a[...] = rng.integers(0, 5, a.shape)
        before[p + k] = a.copy()
    t.grow_dense(family, ((4, 10, 10), (4, 10, 5)), ((2, 4, 4), (2, 4, 3)))
    for p in t.sets():
        pc, pf = t.get(p + "pair_count"), t.get(p + "pair_feat")
        assert pc.shape == (4, 10, 10) and pf.shape == (4, 10, 5)
        np.testing.assert_array_equal(pc[:2, :4, :4], before[p + "pair_count"][:2, :4, :4])
        np.testing.assert_array_equal(pf[:2, :4, :3], before[p + "pair_feat"][:2, :4, :3])
        assert pc.sum() == before[p + "pair_count"][:2, :4, :4].sum()  # only the region in use moves over
        assert pf.sum() == before[p + "pair_feat"][:2, :4, :3].sum()


def test_the_observed_twin_is_a_copy_of_every_table_held_made_once():
    t = CountTables()
    t.grow(2, 4, 2, 0, (0, 0, 0))
    t.held.value_count[1, 2] = 3.0
    sparse = SparseTable((2, 4, 4))
    sparse.add((np.array([1]), np.array([2]), np.array([3])), 2.5)
    t.replace("pair_count", sparse)
    assert t.sets() == ("",)
    assert t.keep_observed() and t.observed and t.sets() == ("", "obs_")
    assert t.held.obs_value_count[1, 2] == 3.0 and t.held.obs_pair_count[1, 2, 3] == 2.5
    assert t.get("obs_class_count") is None and t.get("obs_tuple_count") is None  # no twin of what is not held
    t.held.value_count[1, 2] += 1.0
    t.held.pair_count.add((np.array([1]), np.array([2]), np.array([3])), 1.0)
    assert t.held.obs_value_count[1, 2] == 3.0 and t.held.obs_pair_count[1, 2, 3] == 2.5  # independent copies
    t.held.obs_value_count[0, 0] = 7.0
    assert not t.keep_observed()  # kept already: the twin stays as it is
    assert t.held.obs_value_count[0, 0] == 7.0


def test_tables_are_held_by_their_names_only():
    t = CountTables()
    t.grow(2, 4, 2, 0, (0, 0, 0))
    with pytest.raises(KeyError, match="no count table is named 'g_n'"):
        t.replace("g_n", np.zeros(2))
    assert list(t.arrays()) == ["class_count", "value_count", "feat_count"]  # in the order they were made
    t.replace("pair_feat", np.zeros((2, 4, 2)))
    t.replace("pair_count", np.zeros((2, 4, 4)))
    t.replace("value_count", np.ones((2, 4)))  # a table replaced keeps its place
    assert list(t.arrays()) == ["class_count", "value_count", "feat_count", "pair_feat", "pair_count"]
    assert set(t.arrays()) <= set(COUNT_TABLES)
    t.drop("pair_count")
    t.drop("pair_count")  # nothing held: nothing to do
    assert t.get("pair_count", "none") == "none" and "pair_count" not in t.arrays()
    with pytest.raises(AttributeError):  # how a store's read-only name reads a table not held
        attrgetter("held.pair_count")(t)


def _events(n: int, seed: int):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        y = str(rng.integers(3))
        x = {f"a{f}": str(rng.integers(4)) for f in range(4) if rng.random() < 0.8}
        out.append((x, y))
    return out


@pytest.mark.parametrize("pairs", [False, True])
def test_a_stores_counts_are_the_parts_under_read_only_names(pairs):
    events = _events(300, 11)
    s = Stats(pairs=pairs, numeric="bins")
    for x, y in events:
        s.learn_one(x, y)
    for name in s.tables.arrays():
        assert getattr(s, name) is s.tables.get(name)
        with pytest.raises(AttributeError):
            setattr(s, name, None)
    assert hasattr(s, "pair_count") == pairs and not hasattr(s, "obs_value_count")
    # the counts against counts made by hand, by name
    classes = collections.Counter(y for _, y in events)
    values = collections.Counter((y, f, v) for x, y in events for f, v in x.items())
    C = len(s.classes)
    assert {y: s.class_count[c] for y, c in s.class_index.items()} == classes
    assert s.class_count[C:].sum() == 0
    for f, name in enumerate(s.features):
        for v, col in s.values[f].items():
            for y, c in s.class_index.items():
                assert s.value_count[c, col] == values[(y, name, v)]
        for y, c in s.class_index.items():
            assert s.feat_count[c, f] == sum(name in x for x, yy in events if yy == y)
    if pairs:
        pair = collections.Counter((y, (f, v), (g, u)) for x, y in events for f, v in x.items() for g, u in x.items()
                                   if f != g)
        held = s.pair_count
        for (y, (f, v), (g, u)), n in itertools.islice(pair.items(), 200):
            c, i, j = s.class_index[y], s.values[s.feature_index[f]][v], s.values[s.feature_index[g]][u]
            assert held[c, i, j] == n


def test_a_store_keeps_the_twin_in_its_part():
    s = Stats(pairs=True, numeric="bins", observed=True)
    for x, y in _events(50, 2):
        s.learn_one(x, y)
    assert not s.keeps_observed and s._sets() == ("",)
    s.keep_observed()
    assert s.keeps_observed and s.tables.observed and s._sets() == ("", "obs_")
    for name in ("value_count", "feat_count", "pair_count", "pair_feat"):
        np.testing.assert_array_equal(getattr(s, "obs_" + name), getattr(s, name))
        assert getattr(s, "obs_" + name) is s.tables.get("obs_" + name)
    assert s.observed().value_count is s.obs_value_count


def test_the_layout_is_that_of_the_table_last_held():
    t = CountTables()
    t.grow(2, 4, 2, 0, (0, 0, 0))
    assert not (t.pairs_sparse or t.pairs_blocks or t.tuples_sparse)
    t.replace("pair_count", SparseTable((2, 4, 4)))
    t.replace("tuple_feat", SparseTable((2, 4, 4, 2)))  # the t-way layout is the t-way count's
    assert t.pairs_sparse and not t.pairs_blocks and not t.tuples_sparse
    t.replace("tuple_count", SparseTable((2, 4, 4, 4)))
    assert t.tuples_sparse
    t.replace("pair_count", np.zeros((2, 4, 4)))
    t.drop("tuple_count")
    assert not (t.pairs_sparse or t.pairs_blocks or t.tuples_sparse)


@pytest.mark.parametrize("budget", [None, 0])
def test_a_stores_layout_is_its_tables(budget):
    s = Stats(pairs=True, numeric="bins", tuples=3, memory_budget=budget)
    for x, y in _events(40, 4):
        s.learn_one(x, y)
    assert s.pairs_sparse == isinstance(s.pair_count, SparseTable) == (budget == 0)
    assert s.tuples_sparse == isinstance(s.tuple_count, SparseTable) == (budget == 0)
    assert not s.pairs_blocks


def _dense_of(table, dims):
    """The region ``dims`` of ``table`` (dense or sparse) as a dense array."""
    out = np.zeros(dims)
    idx, vals = cells_of(table, dims)
    np.add.at(out, idx, vals)
    return out


@pytest.mark.parametrize("observed", [False, True])
@pytest.mark.parametrize("written, read", [("dense", "sparse"), ("sparse", "dense"), ("sparse", "sparse")])
def test_the_state_reads_back_into_either_layout(observed, written, read):
    rng = np.random.default_rng(8)
    C, V, F, t = 3, 7, 4, 3
    used = (C, V, F)
    shapes = {"pair_count": (C, V, V), "pair_feat": (C, V, F), "tuple_count": (C,) + (V,) * t,
              "tuple_feat": (C,) + (V,) * (t - 1) + (F,)}

    def make(layout):
        tables = CountTables()
        tables.grow(4, 8, 5, 0, (0, 0, 0))
        if observed:
            tables.keep_observed()
        for family in (("pair_count", "pair_feat"), ("tuple_count", "tuple_feat")):
            room = tuple(tuple(n + 1 for n in shapes[k]) for k in family)
            if layout == "dense":
                tables.grow_dense(family, room, ((0, 0, 0), (0, 0, 0)))
            else:
                for p in tables.sets():
                    for k, shape in zip(family, room):
                        tables.replace(p + k, SparseTable(shape))
        return tables

    source = make(written)
    for p in source.sets():
        for k in ("value_count", "feat_count"):
            region = (C, V) if k == "value_count" else (C, F)
            source.get(p + k)[:C, :region[1]] = rng.integers(0, 5, region)
        for k, dims in shapes.items():
            idx = tuple(rng.integers(0, n, 30) for n in dims)
            scatter_add(source.get(p + k), idx, rng.integers(1, 4, 30).astype(float))
    source.held.class_count[:C] = [3.0, 1.0, 2.0]
    arrays = source.state(used, pairs=True, tuples=t)
    names = list(arrays)
    assert names[:3] == ["class_count", "value_count", "feat_count"]
    cells = [n for n in names if n.endswith(("_cells", "_counts"))]
    assert bool(cells) == (written == "sparse")
    target = make(read)
    target.load(arrays, used, pairs=True, tuples=t)
    np.testing.assert_array_equal(target.held.class_count[:C], [3.0, 1.0, 2.0])
    assert target.held.class_count.sum() == 6.0
    for p in source.sets():
        np.testing.assert_array_equal(target.get(p + "value_count"), source.get(p + "value_count"))
        np.testing.assert_array_equal(target.get(p + "feat_count"), source.get(p + "feat_count"))
        for k, dims in shapes.items():
            want = _dense_of(source.get(p + k), dims)
            assert want.sum() > 0
            np.testing.assert_array_equal(_dense_of(target.get(p + k), dims), want)
            assert _dense_of(target.get(p + k), tuple(n + 1 for n in dims)).sum() == want.sum()  # nothing beyond


@pytest.mark.parametrize("mine, theirs", [("dense", "dense"), ("dense", "sparse"), ("sparse", "dense"), ("sparse", "sparse")])
@pytest.mark.parametrize("twins", [(False, False), (True, False), (False, True), (True, True)])
def test_a_merge_adds_each_cell_where_the_maps_send_it(mine, theirs, twins):
    rng = np.random.default_rng(13)
    C, V, F, t = 2, 5, 3, 3  # the other's classes, value columns (column 0: none) and features
    shapes = {"pair_count": (C, V, V), "pair_feat": (C, V, F), "tuple_count": (C,) + (V,) * t,
              "tuple_feat": (C,) + (V,) * (t - 1) + (F,)}
    Cm, Vm, Fm = 3, 8, 4  # this store's, in use after the alignment
    room = {"pair_count": (4, 9, 9), "pair_feat": (4, 9, 5), "tuple_count": (4,) + (9,) * t,
            "tuple_feat": (4,) + (9,) * (t - 1) + (5,)}

    def make(layout, twin, dims):
        tables = CountTables()
        tables.grow(4, 9, 5, 0, (0, 0, 0))
        if twin:
            tables.keep_observed()
        for p in tables.sets():
            for k, shape in dims.items():
                tables.replace(p + k, np.zeros(shape) if layout == "dense" else SparseTable(shape))
        return tables

    here, there = make(mine, twins[0], room), make(theirs, twins[1], room)
    for tables in (here, there):
        for p in tables.sets():
            tables.get(p + "value_count")[:C, 1:V] = rng.integers(0, 5, (C, V - 1))
            tables.get(p + "feat_count")[:C, :F] = rng.integers(0, 5, (C, F))
            for k, dims in shapes.items():
                lo = [0] + [1] * (len(dims) - 1) if k.endswith("count") else [0] + [1] * (len(dims) - 2) + [0]
                idx = tuple(rng.integers(a, n, 25) for a, n in zip(lo, dims))
                scatter_add(tables.get(p + k), idx, rng.integers(1, 4, 25).astype(float))
    cmap = np.array([2, 0])
    vmap = np.array([0, 7, 3, 1, 5])
    fmap = np.array([3, 0, 2])
    full = {"value_count": (Cm, Vm), "feat_count": (Cm, Fm), "pair_count": (Cm, Vm, Vm), "pair_feat": (Cm, Vm, Fm),
            "tuple_count": (Cm,) + (Vm,) * t, "tuple_feat": (Cm,) + (Vm,) * (t - 1) + (Fm,)}
    other_dims = {"value_count": (C, V), "feat_count": (C, F)} | shapes
    want = {}
    for p in here.sets():
        q = "obs_" if there.observed and (p or not here.observed) else ""
        for k, dims in full.items():
            expect = _dense_of(here.get(p + k), dims)
            src = _dense_of(there.get(q + k), other_dims[k])
            for cell in zip(*np.nonzero(src)):
                if k in ("value_count",) and cell[1] == 0:
                    continue
                axes = [cmap] + [vmap] * (len(cell) - 1) if not k.endswith("feat") and k != "feat_count" else (
                    [cmap] + [vmap] * (len(cell) - 2) + [fmap])
                expect[tuple(m[i] for m, i in zip(axes, cell))] += src[cell]
            want[p + k] = expect
    here.merge(there, (cmap, vmap, fmap), (C, V, F), pairs=True, tuples=t)
    for name, expect in want.items():
        np.testing.assert_array_equal(_dense_of(here.get(name), full[name.removeprefix("obs_")]), expect, err_msg=name)


# ----------------------------------------------------------------------------- counting, against a brute-force count

C_, F_, PER = 3, 4, 3  # classes, features, values per feature (columns 1.., column 0: none)
V_ = 1 + F_ * PER + 2  # and two columns no event takes: the bins of a promotion


def _rows(rng, n: int, missing: float = 0.3):
    """Rows of value columns by feature (-1 missing), their classes and integer weights."""
    D = np.array([[1 + f * PER + rng.integers(PER) if rng.random() > missing else -1 for f in range(F_)]
                  for _ in range(n)], dtype=np.int64)
    return D, rng.integers(0, C_, n), rng.integers(1, 4, n).astype(float)


def _brute(D, yc, w, t: int) -> dict:
    """Every count the rows add, one cell at a time: each observed value, its feature, each ordered pair (and
    t-tuple) of observed positions, repeats included, the last as a value or as its feature."""
    out = {"class_count": np.zeros(C_), "value_count": np.zeros((C_, V_)), "feat_count": np.zeros((C_, F_)),
           "pair_count": np.zeros((C_, V_, V_)), "pair_feat": np.zeros((C_, V_, F_)),
           "tuple_count": np.zeros((C_,) + (V_,) * t), "tuple_feat": np.zeros((C_,) + (V_,) * (t - 1) + (F_,))}
    for row, c, wr in zip(D, yc, w):
        out["class_count"][c] += wr
        seen = [j for j in range(F_) if row[j] >= 0]
        for j in seen:
            out["value_count"][c, row[j]] += wr
            out["feat_count"][c, j] += wr
        for a, b in itertools.product(seen, repeat=2):
            out["pair_count"][c, row[a], row[b]] += wr
            out["pair_feat"][c, row[a], b] += wr
        for pos in itertools.product(seen, repeat=t):
            out["tuple_count"][(c,) + tuple(row[list(pos)])] += wr
            out["tuple_feat"][(c,) + tuple(row[list(pos[:-1])]) + (pos[-1],)] += wr
    return out


def _counting_tables(layout: str, t: int, observed: bool = False) -> CountTables:
    tables = CountTables()
    tables.grow(C_, V_, F_, 0, (0, 0, 0))
    if observed:
        tables.keep_observed()
    shapes = {"pair_count": (C_, V_, V_), "pair_feat": (C_, V_, F_), "tuple_count": (C_,) + (V_,) * t,
              "tuple_feat": (C_,) + (V_,) * (t - 1) + (F_,)}
    for p in tables.sets():
        for k, shape in shapes.items():
            tables.replace(p + k, np.zeros(shape) if layout == "dense" else SparseTable(shape))
    return tables


def _assert_counts(tables: CountTables, want: dict, p: str = "") -> None:
    for k, expect in want.items():
        got = tables.get(k if k == "class_count" else p + k)
        np.testing.assert_array_equal(_dense_of(got, expect.shape), expect, err_msg=p + k)


@pytest.mark.parametrize("layout", ["dense", "sparse"])
@pytest.mark.parametrize("t", [2, 3])
def test_events_added_one_at_a_time_or_as_rows_count_each_cell_as_by_hand(layout, t):
    rng = np.random.default_rng(21)
    D, yc, w = _rows(rng, 40)
    want = _brute(D, yc, w, t)
    one, rows = _counting_tables(layout, t, observed=True), _counting_tables(layout, t)
    for row, c, wr in zip(D, yc, w):  # one event: every count set, as the store adds one
        cols, feats = row[row >= 0], np.flatnonzero(row >= 0)
        one.add_class(c, wr)
        for p in one.sets():
            one.add_values(p, c, cols, wr, feats, wr)
            one.add_pair_rows(p, cols[None, :], feats, np.array([c]), np.array([wr]), len(cols) ** 2)
            one.add_event_tuples(p, t, cols, feats, c, wr)
    rows.add_class(slice(0, C_), np.bincount(yc, weights=w, minlength=C_))  # the rows at once
    mask = D >= 0
    rr, jj = np.nonzero(mask)
    rows.add_value_rows("", yc[rr], D[rr, jj], jj, w[rr])
    rows.add_pair_rows("", D, np.arange(F_), yc, w, F_ * F_)
    rows.add_tuple_rows("", t, D, np.arange(F_), yc, w, mask)
    for tables, p in ((one, ""), (one, "obs_"), (rows, "")):
        _assert_counts(tables, want, p)
    # negated weights take every event back, exactly (integer weights)
    rows.add_class(slice(0, C_), -np.bincount(yc, weights=w, minlength=C_))
    rows.add_value_rows("", yc[rr], D[rr, jj], jj, -w[rr])
    rows.add_pair_rows("", D, np.arange(F_), yc, -w, F_ * F_)
    rows.add_tuple_rows("", t, D, np.arange(F_), yc, -w, mask)
    _assert_counts(rows, {k: np.zeros_like(v) for k, v in want.items()})


@pytest.mark.parametrize("layout", ["dense", "sparse"])
def test_expected_pairs_and_cells_add_where_they_name(layout):
    rng = np.random.default_rng(22)
    tables = _counting_tables(layout, 2)
    c, u, fs = 1, np.array([2, 3, 7, 11]), np.array([0, 2, 3])
    J, Jf = rng.random((4, 4)), rng.random((4, 3))
    tables.add_expected_pairs(c, u, fs, J, Jf)
    want_pc, want_pf = np.zeros((C_, V_, V_)), np.zeros((C_, V_, F_))
    for r, s in itertools.product(range(4), range(4)):
        want_pc[c, u[r], u[s]] += J[r, s]
    for r, g in itertools.product(range(4), range(3)):
        want_pf[c, u[r], fs[g]] += Jf[r, g]
    np.testing.assert_array_equal(_dense_of(tables.get("pair_count"), want_pc.shape), want_pc)
    np.testing.assert_array_equal(_dense_of(tables.get("pair_feat"), want_pf.shape), want_pf)
    tables.add_expected_pairs(c, u, fs, -J, -Jf)
    assert not _dense_of(tables.get("pair_count"), want_pc.shape).any()
    tables.add_cells("pair_count", (0, 5, np.array([1, 5, 5])), np.array([1.0, 2.0, 4.0]))  # a cell may recur
    assert _dense_of(tables.get("pair_count"), want_pc.shape)[0, 5, 5] == 6.0
    assert _dense_of(tables.get("pair_count"), want_pc.shape).sum() == 7.0


@pytest.mark.parametrize("layout", ["dense", "sparse"])
@pytest.mark.parametrize("t", [2, 3])
def test_a_promotions_moves_leave_the_counts_of_the_events_as_promoted(layout, t):
    rng = np.random.default_rng(23)
    D, yc, w = _rows(rng, 40)
    f = 2
    old = 1 + f * PER + np.arange(PER)  # every column of feature f

    # into bins: values 0 and 1 of f into the bin at column V_ - 2, value 2 into V_ - 1 (new columns)
    new = np.array([V_ - 2, V_ - 2, V_ - 1])
    binned = D.copy()
    binned[:, f] = np.where(D[:, f] >= 0, new[np.maximum(D[:, f] - old[0], 0)], -1)
    tables = _counted(layout, t, D, yc, w)
    tables.move_columns("", old, new, pairs=True, tuples=t)
    tables.clear_columns("", old)  # the old columns stay, empty and detached
    want = _brute(binned, yc, w, t)
    _assert_counts(tables, want)
    # dropped: as if feature f had been missing in every event
    tables = _counted(layout, t, D, yc, w)
    tables.drop_columns("", f, old, pairs=True, tuples=t)
    tables.clear_columns("", old)
    gone = D.copy()
    gone[:, f] = -1
    _assert_counts(tables, _brute(gone, yc, w, t))
    # turned Gaussian: its feature counts emptied (of the classes in use)
    tables.clear_feature("", 1, C_)
    assert not tables.held.feat_count[:, 1].any() and tables.held.feat_count[:, 0].any()


def _counted(layout: str, t: int, D, yc, w) -> CountTables:
    """Tables of ``layout`` holding the counts of rows ``D`` (classes ``yc``, weights ``w``)."""
    tables = _counting_tables(layout, t)
    tables.add_class(slice(0, C_), np.bincount(yc, weights=w, minlength=C_))
    mask = D >= 0
    rr, jj = np.nonzero(mask)
    tables.add_value_rows("", yc[rr], D[rr, jj], jj, w[rr])
    tables.add_pair_rows("", D, np.arange(F_), yc, w, F_ * F_)
    tables.add_tuple_rows("", t, D, np.arange(F_), yc, w, mask)
    return tables


@pytest.mark.parametrize("layout", ["dense", "sparse"])
@pytest.mark.parametrize("t", [2, 3])
def test_scaling_multiplies_every_count_as_counting_scaled_weights(layout, t):
    rng = np.random.default_rng(25)
    D, yc, w = _rows(rng, 40)
    tables = _counted(layout, t, D, yc, w)
    before = {k: tables.get(k) for k in _brute(D, yc, w, t)}
    tables.scale(0.25, tuple(before))  # a power of two: every product exact
    _assert_counts(tables, _brute(D, yc, w * 0.25, t))
    for k, table in before.items():  # dense: in place; sparse: a new table, the old one as it was
        assert (tables.get(k) is table) == isinstance(table, np.ndarray), k
    if layout == "sparse":
        np.testing.assert_array_equal(_dense_of(before["pair_count"], (C_, V_, V_)), _brute(D, yc, w, t)["pair_count"])
    tables.scale(0.5, ("value_count",))  # the tables named only
    want = _brute(D, yc, w * 0.25, t)
    want["value_count"] = want["value_count"] * 0.5
    _assert_counts(tables, want)


@pytest.mark.parametrize("layout", ["dense", "sparse"])
@pytest.mark.parametrize("given", ["dense", "sparse"])
@pytest.mark.parametrize("t", [2, 3])
def test_subtracting_a_part_leaves_the_counts_of_the_rest(layout, given, t):
    rng = np.random.default_rng(26)
    D, yc, w = _rows(rng, 50)
    yc[30:] = np.minimum(yc[30:], C_ - 2)  # the part taken out: classes below C_ - 1 only
    tables = _counted(layout, t, D, yc, w)
    part = _brute(D[30:], yc[30:], w[30:], t)
    # each delta over the classes it has (a capture taken while fewer were in use), dense or as a sparse table
    deltas = {k: a[:C_ - 1] for k, a in part.items()}
    deltas = {k: sparse_of(a) if given == "sparse" else a for k, a in deltas.items()}
    tables.subtract(deltas)
    _assert_counts(tables, _brute(D[:30], yc[:30], w[:30], t))
    tables.subtract({"value_count": _brute(D[:30], yc[:30], w[:30], t)["value_count"]})  # the tables named only
    want = _brute(D[:30], yc[:30], w[:30], t)
    want["value_count"] = np.zeros_like(want["value_count"])
    _assert_counts(tables, want)


@pytest.mark.parametrize("layout", ["dense", "sparse"])
@pytest.mark.parametrize("given", ["dense", "sparse"])
def test_setting_the_counts_replaces_every_cell(layout, given):
    rng = np.random.default_rng(27)
    D, yc, w = _rows(rng, 50)
    yc[30:] = np.minimum(yc[30:], C_ - 2)
    tables = _counted(layout, 2, D, yc, w)
    fresh = _brute(D[30:], yc[30:], w[30:], 2)
    counts = {k: a[:C_ - 1] for k, a in fresh.items()}
    counts = {k: sparse_of(a) if given == "sparse" else a for k, a in counts.items()}
    tables.set_counts(counts)  # the counts since a warning become the counts
    _assert_counts(tables, fresh)
    tables.set_counts({k: None for k in ("class_count", "pair_count", "tuple_feat")})  # None: emptied
    want = dict(fresh, class_count=np.zeros(C_), pair_count=np.zeros((C_, V_, V_)),
                tuple_feat=np.zeros_like(fresh["tuple_feat"]))
    _assert_counts(tables, want)


@pytest.mark.parametrize("t", [2, 3])
def test_the_selected_tuples_are_those_of_each_features_candidate_parents(t):
    rng = np.random.default_rng(28)
    D, yc, w = _rows(rng, 40)
    lists = np.array([[1, 2], [0, -1], [-1, -1], [0, 1]])  # each feature's candidate parents, -1 padded
    tables = _counting_tables("sparse", t, observed=True)
    for p in tables.sets():  # two calls: the tables grow in between
        tables.add_selected_tuples(p, t, lists, D[:15], np.arange(F_), yc[:15], w[:15])
        tables.add_selected_tuples(p, t, lists, D[15:], np.arange(F_), yc[15:], w[15:])
    want = {"tuple_count": np.zeros((C_,) + (V_,) * t), "tuple_feat": np.zeros((C_,) + (V_,) * (t - 1) + (F_,))}
    for row, c, wr in zip(D, yc, w):
        for f in range(F_):
            parents = [g for g in lists[f] if g >= 0]
            for ps in itertools.product(parents, repeat=t - 1):
                if row[f] >= 0 and all(row[g] >= 0 for g in ps):
                    want["tuple_count"][(c, row[f]) + tuple(row[list(ps)])] += wr
                    want["tuple_feat"][(c,) + tuple(row[list(ps)]) + (f,)] += wr
    assert want["tuple_count"].any()
    for p in tables.sets():
        _assert_counts(tables, want, p)


@pytest.mark.parametrize("t", [2, 3])
def test_the_layouts_the_part_builds_hold_the_counts_it_held(t):
    rng = np.random.default_rng(24)
    D, yc, w = _rows(rng, 40)
    want = _brute(D, yc, w, t)
    tables = _counting_tables("dense", t, observed=True)
    mask = D >= 0
    rr, jj = np.nonzero(mask)
    for p in tables.sets():
        tables.add_value_rows(p, yc[rr], D[rr, jj], jj, w[rr])
        tables.add_pair_rows(p, D, np.arange(F_), yc, w, F_ * F_)
        tables.add_tuple_rows(p, t, D, np.arange(F_), yc, w, mask)
    pairs, tuples = ("pair_count", "pair_feat"), ("tuple_count", "tuple_feat")
    used = {k: want[k].shape for k in pairs + tuples}
    room = {k: (C_ + 1,) + tuple(n + 2 for n in used[k][1:]) for k in used}
    tables.to_sparse(tuples, (room["tuple_count"], room["tuple_feat"]), (used["tuple_count"], used["tuple_feat"]))
    tables.to_sparse(pairs, (room["pair_count"], room["pair_feat"]), (used["pair_count"], used["pair_feat"]))
    for p in tables.sets():
        for k in pairs + tuples:
            assert isinstance(tables.get(p + k), SparseTable) and tables.get(p + k).shape == room[k]
        _assert_counts(tables, {k: want[k] for k in pairs + tuples}, p)
    assert tables.pairs_sparse and tables.tuples_sparse
    # a t-way selection that waits: its new tables start empty
    fresh = _counting_tables("dense", t)
    fresh.add_tuple_rows("", t, D, np.arange(F_), yc, w, mask)
    fresh.to_sparse(tuples, (room["tuple_count"], room["tuple_feat"]), (used["tuple_count"], used["tuple_feat"]),
                    wait=lambda held: held > 0)
    assert not _dense_of(fresh.get("tuple_count"), room["tuple_count"]).any()
    # pair blocks from dense pair tables: the same pair counts (the features' blocks), grown to a new column
    blocks = _counting_tables("dense", t)
    blocks.add_pair_rows("", D, np.arange(F_), yc, w, F_ * F_)
    vf = np.r_[-1, np.repeat(np.arange(F_), PER), -1, -1]
    blocks.to_blocks(vf, F_, C_, 0)
    assert blocks.pairs_blocks and not blocks.pairs_sparse
    np.testing.assert_array_equal(_dense_of(blocks.get("pair_count"), used["pair_count"]), want["pair_count"])
    blocks.grow_blocks(np.r_[vf, 0], F_, C_, 0)  # a fourth value of feature 0
    np.testing.assert_array_equal(_dense_of(blocks.get("pair_count"), used["pair_count"]), want["pair_count"])
    blocks.add_pair_rows("", np.array([[V_, -1, -1, -1]]), np.arange(F_), np.array([0]), np.array([1.0]), 0)
    assert _dense_of(blocks.get("pair_count"), (C_, V_ + 1, V_ + 1))[0, V_, V_] == 1.0
