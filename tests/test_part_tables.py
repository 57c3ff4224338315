"""The sparse count table, alone: its counts against a dense array, and the bytes it says it will take
against the bytes it takes once the cells are in."""

import numpy as np
import pytest

from stream_nb.stats.tables import SparseTable


@pytest.mark.parametrize("extra", [1, 7, 40, 300])
def test_the_bytes_after_new_cells_are_the_bytes_once_they_are_in(extra):
    rng = np.random.default_rng(extra)
    table = SparseTable((3, 50, 50))
    table.add((rng.integers(0, 3, 20), rng.integers(0, 50, 20), rng.integers(0, 50, 20)), 1.0)
    said = table.nbytes_after(extra)
    free = np.setdiff1d(np.arange(3 * 50 * 50), _held(table))[:extra]  # cells not held yet
    table.add(np.unravel_index(free, table.shape), 1.0)
    assert len(table) == len(_held(table)) and table.nbytes == said


def _held(table):
    (idx, _vals) = table.cells()
    return np.ravel_multi_index(idx, table.shape)


def test_counts_are_those_of_a_dense_array():
    rng = np.random.default_rng(0)
    idx = (rng.integers(0, 2, 500), rng.integers(0, 30, 500), rng.integers(0, 30, 500))
    w = rng.uniform(0.1, 2.0, 500)
    table, dense = SparseTable((2, 30, 30)), np.zeros((2, 30, 30))
    table.add(idx, w)
    np.add.at(dense, idx, w)
    cells, vals = table.cells()
    assert np.allclose(dense[cells], vals) and np.isclose(dense.sum(), vals.sum())
    assert len(table) == np.count_nonzero(dense)


@pytest.mark.parametrize("seed", range(12))
def test_a_table_made_from_a_dense_one_holds_what_adding_its_nonzero_cells_holds(seed):
    """``SparseTable.from_dense`` (a store's dense tables turning sparse), read in compiled code, against adding
    the dense table's nonzero cells within the dims used (``cells_of``): the same cells, counts and slots; cells
    past the dims used (room to grow), negative and fractional counts, 3 and 4 axes, more cells than the
    first slots hold."""
    from stream_nb.stats.tables import cells_of

    rng = np.random.default_rng(seed)
    dims = tuple(int(d) for d in rng.integers(2, 9, size=3 + seed % 2))
    dense = np.where(rng.random(dims) < rng.uniform(0.05, 0.9), rng.normal(size=dims), 0.0)
    dense[rng.random(dims) < 0.1] = rng.integers(1, 5)
    used = tuple(int(rng.integers(1, d + 1)) for d in dims)
    shape = tuple(4 * d for d in dims)
    slots = int(rng.choice([16, 1024]))
    want = SparseTable(shape, slots=slots)
    idx, vals = cells_of(dense, used)
    want.add(idx, vals)
    got = SparseTable.from_dense(dense, used, shape, slots=slots)
    assert len(got) == len(want) == len(vals) and got.nbytes == want.nbytes
    (gi, gv), (wi, wv) = got.cells(), want.cells()
    for a, b in zip(gi + (gv,), wi + (wv,)):
        np.testing.assert_array_equal(a, b)
    assert got[(slice(0, shape[0]), *(i[:5] for i in wi[1:]))].tolist() == want[(slice(0, shape[0]), *(i[:5] for i in wi[1:]))].tolist()


def test_room_reserved_holds_the_cells_and_a_compiled_fill_is_recorded_by_set_held():
    """``reserve`` (the room a compiled loop is given) keeps every count and leaves the new cells at most half
    the slots; ``set_held`` records the cells such a loop left, here a copy of every slot by ``copy_cells``."""
    from stream_nb.kernels import compiled

    rng = np.random.default_rng(3)
    idx = (rng.integers(0, 2, 300), rng.integers(0, 40, 300), rng.integers(0, 40, 300))
    table, dense = SparseTable((2, 40, 40)), np.zeros((2, 40, 40))
    table.add(idx, 1.0)
    np.add.at(dense, idx, 1.0)
    slots = table.nbytes // 16
    assert not table.reserve(0) and table.nbytes // 16 == slots  # room enough already: nothing moves
    assert table.reserve(slots) and 2 * (len(table) + slots) <= table.nbytes // 16
    cells, vals = table.cells()
    assert np.array_equal(dense[cells], vals) and len(table) == np.count_nonzero(dense)
    keys, _ = table.arrays()
    held = np.flatnonzero(keys >= 0)
    copy = SparseTable(table.shape, slots=2 * len(held))
    rows = copy.index_rows()
    compiled().copy_cells(*table.arrays(), held, *copy.arrays(), table.shape[2], rows)
    copy.set_held(len(held))
    c, u = np.nonzero(dense.any(2))  # the rows holding a cell: their bits, and no other
    want = np.zeros(len(rows) * 8, dtype=bool)
    want[c * table.shape[1] + u] = True
    assert np.array_equal(np.unpackbits(rows, bitorder="little").astype(bool), want)
    assert len(copy) == len(table) and copy.nbytes_after(0) == copy.nbytes
    got, got_vals = copy.cells()
    assert np.array_equal(dense[got], got_vals) and got_vals.sum() == dense.sum()
