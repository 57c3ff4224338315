"""The tables' room and layout alone (:class:`~stream_nb.stats.budget.Layout`): the layout a store's tables take
under a memory budget against the bytes its arrays really take and the budget arithmetic done by hand here, and
the counts of a store that grew, turned sparse or took pair blocks against a store that kept every table dense."""

import numpy as np
import pytest

from stream_nb.exceptions import CapacityError
from stream_nb.stats import Stats
from stream_nb.stats.budget import Layout


def events(n, seed=0, features=12, values=9):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        y = int(rng.integers(0, 3))
        out.append(({f"f{j}": f"v{int(rng.integers(0, values)) ^ (y if j % 3 == 0 else 0)}" for j in range(features)}, y))
    return out


def learn(stream, *stores):
    for x, y in stream:
        for s in stores:
            s.learn_one(x, y)


def dense_bytes(s) -> int:
    """What a store with dense pair tables holds, summed from its arrays here: its count tables, its Gaussian
    moments and its schema's column arrays."""
    arrays = [s.class_count, s.value_count, s.feat_count, s.pair_count, s.pair_feat, s.g_n, s.g_mean, s.g_m2,
              s.value_feature, s.n_values]
    return sum(a.nbytes for a in arrays)


def assert_same_counts(a, b):
    assert a.counts() == b.counts()


@pytest.mark.parametrize("budget", [20_000, 60_000, 150_000, 400_000, 1_000_000])
def test_a_dense_layout_always_fits_the_budget_and_the_counts_are_the_dense_stores(budget):
    reference = Stats(pairs=True, numeric="bins", memory_budget=None)
    s = Stats(pairs=True, numeric="bins", memory_budget=budget)
    assert isinstance(s.layout, Layout) and not s.layout.blocks_ok
    was_sparse = False
    for x, y in events(120, seed=budget % 7):
        learn([(x, y)], reference, s)
        if not s.pairs_sparse:
            assert not was_sparse  # sparse is for good
            assert dense_bytes(s) <= budget  # dense tables are only ever allocated when they fit
        was_sparse = s.pairs_sparse
    C, V, F = len(s.classes), len(s.value_keys), len(s.features)
    if 8 * (C * V * V + C * V * F) > budget:  # the pair tables alone, without spare room, pass the budget
        assert s.pairs_sparse
    assert_same_counts(s, reference)  # every growth and the move to sparse tables kept the counts


def test_a_store_that_fits_dense_stays_dense_with_the_arrays_of_an_unbounded_store():
    stream = events(150, seed=3)
    reference = Stats(pairs=True, numeric="bins", memory_budget=None)
    learn(stream, reference)
    s = Stats(pairs=True, numeric="bins", memory_budget=dense_bytes(reference))  # exactly what it holds: it fits
    learn(stream, s)
    assert not s.pairs_sparse and not s.pairs_blocks and s.tables.capacity == reference.tables.capacity
    (sa, sm), (ra, rm) = s.state(), reference.state()
    assert sorted(sa) == sorted(ra)
    for k in sa:
        np.testing.assert_array_equal(sa[k], ra[k], err_msg=k)
    back = Stats.from_state(sa, sm)  # read again under its budget: all the room at once, dense as before
    assert not back.pairs_sparse and dense_bytes(back) <= dense_bytes(reference)
    assert_same_counts(back, reference)


def test_reserve_doubles_the_room_and_keeps_the_counts():
    s = Stats(pairs=True, numeric="bins", memory_budget=None)
    reference = Stats(pairs=True, numeric="bins", memory_budget=None)
    learn(events(30, seed=1), s, reference)
    cc, cv, cf, cg = s.tables.capacity
    V = len(s.value_keys)
    s.layout.reserve(s, v=3 * cv)  # more values than the room: the capacity doubles until they fit
    want = cv
    while want < V + 3 * cv:
        want *= 2
    assert s.tables.capacity == (cc, want, cf, cg)
    assert s.pair_count.shape[1] == want and s.value_feature.shape[0] == want
    assert_same_counts(s, reference)
    learn(events(30, seed=2), s, reference)  # and learning goes on the same
    assert_same_counts(s, reference)


def test_pair_blocks_hold_the_pairs_where_the_model_reads_them_and_they_fit():
    stream = events(200, seed=5, features=16, values=12)
    reference = Stats(pairs=True, numeric="bins", memory_budget=None)
    learn(stream, reference)
    C, F = len(reference.classes), len(reference.features)
    n = np.array([reference.n_values[f] for f in range(F)])
    # the blocks by hand: a block of C * n_f * n_g cells per pair of features, and the diagonal (column 0 too)
    blocks = 8 * C * (sum(int(n[f] * n[g]) for f in range(F) for g in range(f + 1, F)) + int(n.sum()) + 1)
    budget = blocks * 3 // 2
    assert 8 * C * len(reference.value_keys) ** 2 > budget  # dense pair tables do not fit
    s = Stats(pairs=True, numeric="bins", memory_budget=budget)
    s.pair_blocks_ok = True  # as TAN asks
    assert s.layout.blocks_ok and s.layout.blocks_allowed(s)
    learn(stream, s)
    assert s.pairs_blocks and not s.pairs_sparse
    used = s.memory_used()  # the blocks fit beside every array but the pair tables (their room fills the rest)
    assert s.pair_count.nbytes >= blocks and blocks + used["bytes"] - used["pair_bytes"] <= budget
    assert_same_counts(s, reference)
    s.keep_observed()  # an observed-only twin: no blocks (EM's expected pairs), sparse tables, the same counts
    assert s.pairs_sparse and not s.pairs_blocks and not s.layout.blocks_allowed(s)
    assert_same_counts(s, reference)
    plain = Stats(pairs=True, numeric="bins", memory_budget=budget)  # a model that reads no blocks: sparse
    learn(stream, plain)
    assert plain.pairs_sparse and not plain.pairs_blocks
    assert_same_counts(plain, reference)


def test_the_t_way_table_bound_is_the_cells_counted_by_hand():
    s = Stats(pairs=False, numeric="bins", tuples=3, max_table_cells=None, memory_budget=None)
    learn(events(20, seed=4, features=4, values=3), s)
    C, V = len(s.classes), len(s.value_keys)
    assert s.layout.table_cells(s) == C * V**3 and s.layout.table_cells(s, 2, 1) == (C + 1) * (V + 2) ** 3
    s.layout.check_cells(s, 5, 5)  # no bound: nothing to refuse
    bound = Stats(pairs=False, numeric="bins", tuples=3, max_table_cells=(C + 1) * (V + 2) ** 3, memory_budget=None)
    learn(events(20, seed=4, features=4, values=3), bound)
    bound.layout.check_cells(bound, 2, 1)  # exactly at the bound: fits
    with pytest.raises(CapacityError, match="max_table_cells"):
        bound.layout.check_cells(bound, 3, 1)  # one value more
    assert Layout.table_cells(Stats(pairs=True, numeric="bins"), 10, 10) == 0  # no t-way table
