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
