"""The memory budget part of the count store, alone: its answers against the bytes numpy arrays and sparse
tables really take, and against a store that holds it."""

import numpy as np
import pytest

from stream_nb import AODE, KDB
from stream_nb.exceptions import CapacityError
from stream_nb.stats.budget import Budget
from stream_nb.stats.budget._budget import SPARSE_FLOOR
from stream_nb.stats.tables import SparseTable


@pytest.mark.parametrize("t, cc, cv, cf", [(2, 2, 5, 3), (3, 3, 4, 6), (2, 1, 1, 1)])
def test_dense_bytes_are_the_bytes_of_the_numpy_tables(t, cc, cv, cf):
    tables = np.zeros((cc,) + (cv,) * t), np.zeros((cc,) + (cv,) * (t - 1) + (cf,))
    real = sum(a.nbytes for a in tables)
    assert Budget.dense_bytes(t, cc, cv, cf) == real and Budget.dense_bytes(t, cc, cv, cf, copies=2) == 2 * real
    budget = Budget(real + 100)
    assert budget.dense_fits(t, cc, cv, cf, held=100) and not budget.dense_fits(t, cc, cv, cf, held=101)
    assert Budget(None).dense_fits(t, cc, cv, cf, held=10**12)  # no bound: always dense


def test_held_bytes_skip_a_family_and_count_a_twin_to_come():
    arrays = {"class_count": np.zeros(4), "value_count": np.zeros((4, 8)), "pair_count": np.zeros((4, 8, 8)),
              "obs_pair_count": np.zeros((4, 8, 8)), "tuple_count": SparseTable((4, 8, 8, 8))}
    nbytes = {k: a.nbytes for k, a in arrays.items()}
    assert Budget.held(arrays) == sum(nbytes.values())
    assert Budget.held(arrays, skip={"pair_count"}) == nbytes["class_count"] + nbytes["value_count"] + nbytes["tuple_count"]
    # the twin EM will want: value_count and the pair tables once more (the t-way tables have none to come)
    assert Budget.held(arrays, twin=True) == sum(nbytes.values()) + nbytes["value_count"] + nbytes["pair_count"]


def test_memory_used_sums_the_arrays_it_is_given():
    rng = np.random.default_rng(0)
    sparse = SparseTable((3, 20, 20))
    sparse.add((rng.integers(0, 3, 50), rng.integers(0, 20, 50), rng.integers(0, 20, 50)), 1.0)
    arrays = {"class_count": np.zeros(8), "pair_count": sparse, "pair_feat": np.zeros((3, 20, 5)),
              "tuple_count": np.zeros((3, 4, 4, 4))}
    used = Budget(1234).memory_used(arrays)
    assert used["cells"] == 8 + len(sparse) + 300 + 192
    assert used["bytes"] == 64 + sparse.nbytes + 2400 + 1536
    assert (used["pair_cells"], used["pair_bytes"]) == (len(sparse) + 300, sparse.nbytes + 2400)
    assert (used["table_cells"], used["table_bytes"]) == (192, 1536)
    assert used["pairs_sparse"] is True and used["sparse"] is False and used["budget"] == 1234


def test_limits_never_fall_below_the_floor_and_halve_per_share():
    assert Budget(0).sparse_limit() == SPARSE_FLOOR
    big = 3 * SPARSE_FLOOR + 1
    assert Budget(big).sparse_limit() == big
    assert [Budget(big).pair_limit(h) for h in (0, 1, 2)] == [big, big // 2, big // 4]


def test_an_event_fits_as_long_as_the_tables_it_could_grow_stay_within_the_limit():
    tables = {"pair_count": SparseTable((2, 100, 100)), "obs_pair_count": SparseTable((2, 100, 100))}
    budget = Budget(0)
    one = 100
    after = sum(t.nbytes_after(one) for t in tables.values())
    assert budget.event_fits(tables, one, k=10, limit=after)
    assert not budget.event_fits(tables, one, k=10, limit=after - 1)
    # what the answer said: adding that many new cells to each takes the bytes it allowed for
    for t in tables.values():
        t.add(np.unravel_index(np.arange(one), t.shape), 1.0)
    assert sum(t.nbytes for t in tables.values()) <= after
    with pytest.raises(CapacityError, match="one event of 10 values adds 100 distinct cells to each of pair_count"):
        budget.event_fits(tables, one, k=10, limit=16 * one - 1)
    error = budget.refusal(tables, one, store_bytes=1000)
    assert "pair_count hold 200 cells" in str(error) and "memory_budget=0" in str(error)


@pytest.mark.parametrize("make", [lambda: AODE(memory_budget=0), lambda: KDB(k=2, memory_budget=0), lambda: AODE()])
def test_a_store_reports_what_its_budget_measures_of_its_arrays(make):
    model = make()
    rng = np.random.default_rng(1)
    for _ in range(60):
        model.learn_one({f"a{j}": str(rng.integers(0, 4)) for j in range(5)}, str(rng.integers(0, 2)))
    s = model._stats
    held = list(s.tables.arrays().values())  # the count tables (the part that holds them), and any other array
    held += [a for a in vars(s).values() if isinstance(a, (np.ndarray, SparseTable))] + [s.g_n, s.g_mean, s.g_m2]
    held += [s.value_feature, s.n_values]  # the schema's arrays, as large as the tables' room
    used = model.memory_used()
    assert used["bytes"] == sum(a.nbytes for a in held)
    assert used["pairs_sparse"] == isinstance(s.pair_count, SparseTable) == s.pairs_sparse
    assert used["budget"] == s.memory_budget
