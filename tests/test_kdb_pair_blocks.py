"""KDB (k >= 2) holds its pairs in pair blocks when dense pair tables would pass ``memory_budget`` and the
blocks fit, as TAN does: its parents are then chosen on exact counts of every pair.

The reference is the same model with no budget (dense tables). The budget here is one that dense pair
tables pass while the blocks fit, and the sparse (k+1)-way tables fit the floor that sparse tables may
always take, so that no selection narrows what is counted: on the same events a KDB on blocks must choose the same parents and give the same
probabilities, whichever path learns (river's ``learn_one``, ``learn_many``, ``prequential_many``), through
a snapshot, a merge and unlearning. The stream brings a new value and a new class mid-stream, so the blocks
grow between kernel calls.
"""

import numpy as np
import pandas as pd
import pytest

from stream_nb.learners import KDB
from stream_nb.options import EM, EqualFrequency, Ignore, Parents

from test_tan_pair_blocks import _events

BUDGET = 30_000  # dense pair tables (with their spare room) pass it; the blocks fit (sparse tables may always
# take the budget's floor, which holds the triples here)


def _kdb(budget, k=2):
    return KDB(k=k, numeric=EqualFrequency(bins=3), missing=Ignore(), search=Parents(rebuild_every=40),
               memory_budget=budget)


def _same(dense, blocks, xs):
    """The two models agree on ``xs`` (probabilities to 1e-9) and on their parents; the blocks are in use and
    nothing is selected."""
    s = blocks._stats
    assert s.pairs_blocks and not dense._stats.pairs_blocks and not dense._stats.pairs_sparse
    assert not s.pairs_selected and not s.tuple_selection.selected
    assert dense.structure == blocks.structure and any(dense.structure.values())
    pd_, pb = dense.predict_proba_many(pd.DataFrame(xs)), blocks.predict_proba_many(pd.DataFrame(xs))
    np.testing.assert_allclose(pb[pd_.columns].values, pd_.values, rtol=1e-9, atol=0)
    for x in xs[:20]:
        a, b = dense.predict_proba_one(x), blocks.predict_proba_one(x)
        assert a.keys() == b.keys() and all(abs(a[k] - b[k]) <= 1e-9 * max(a[k], 1e-300) for k in a)


def test_the_pairs_are_held_in_blocks_within_the_budget_and_k_1_keeps_sparse_pairs():
    data = _events(200, 1)
    model, one = _kdb(BUDGET), _kdb(BUDGET, k=1)
    for x, y in data:
        model.learn_one(x, y)
        one.learn_one(x, y)
    used, dense = model.memory_used(), _kdb(None)
    for x, y in data:
        dense.learn_one(x, y)
    assert used["pairs_blocks"] and not used["pairs_sparse"] and used["pair_bytes"] <= BUDGET
    assert dense.memory_used()["pair_bytes"] > BUDGET  # what dense pair tables would take
    assert model._stats.tuples_sparse  # the triples are past the budget as dense tables
    # k = 1 scores its pairs in kernels that read dense or sparse tables only
    assert one._stats.pairs_sparse and not one._stats.pairs_blocks


def test_kdb_on_blocks_is_kdb_on_dense_tables_through_learn_one_with_new_values_and_a_class_mid_stream():
    data = _events(300, 2, late=180)
    dense, blocks = _kdb(None), _kdb(BUDGET)
    for x, y in data[:250]:
        assert dense.predict_proba_one(x).keys() == blocks.predict_proba_one(x).keys()
        dense.learn_one(x, y)
        blocks.learn_one(x, y)
    _same(dense, blocks, [x for x, _ in data[250:]])


def test_kdb_on_blocks_is_kdb_on_dense_tables_through_learn_many_and_prequential_many():
    data = _events(400, 3, late=250)
    xs, ys = [x for x, _ in data], [y for _, y in data]
    dense, blocks = _kdb(None), _kdb(BUDGET)
    dense.learn_many(pd.DataFrame(xs[:150]), pd.Series(ys[:150]))
    blocks.learn_many(pd.DataFrame(xs[:150]), pd.Series(ys[:150]))
    got_d, got_b = dense.prequential_many(xs[150:350], ys[150:350]), blocks.prequential_many(xs[150:350], ys[150:350])
    for (pa, qa), (pb, qb) in zip(got_d, got_b):
        assert pa == pb and all(abs(qa[k] - qb[k]) <= 1e-9 * max(qa[k], 1e-300) for k in qa)
    _same(dense, blocks, xs[350:])


def test_a_snapshot_of_kdb_on_blocks_loads_back_to_blocks_that_predict_and_learn_the_same():
    data = _events(200, 4)
    model = _kdb(BUDGET)
    for x, y in data[:150]:
        model.learn_one(x, y)
    back = KDB.from_state(*model.state())
    assert back._stats.pairs_blocks and back.structure == model.structure
    xs = [x for x, _ in data[150:]]
    np.testing.assert_allclose(back.predict_proba_many(pd.DataFrame(xs)).values,
                               model.predict_proba_many(pd.DataFrame(xs)).values, rtol=1e-12)
    for x, y in data[150:]:
        model.learn_one(x, y)
        back.learn_one(x, y)
    np.testing.assert_array_equal(back._stats.pair_count.cells, model._stats.pair_count.cells)


def test_merging_two_kdb_on_blocks_is_kdb_on_both_streams_on_dense_tables():
    a_data, b_data = _events(150, 5), _events(150, 6, late=60)
    a, b, whole = _kdb(BUDGET), _kdb(BUDGET), _kdb(None)
    for x, y in a_data:
        a.learn_one(x, y)
        whole.learn_one(x, y)
    for x, y in b_data:
        b.learn_one(x, y)
        whole.learn_one(x, y)
    a.merge(b)
    a.rebuild()
    whole.rebuild()
    _same(whole, a, [x for x, _ in _events(40, 7)])


def test_unlearning_from_kdb_on_blocks_is_never_having_learned_the_events():
    data = _events(200, 8)
    model, kept = _kdb(BUDGET), _kdb(None)
    for x, y in data:
        model.learn_one(x, y)
    for x, y in data[:150]:
        kept.learn_one(x, y)
    for x, y in data[150:]:
        model.unlearn_one(x, y)
    model.rebuild()
    kept.rebuild()
    _same(kept, model, [x for x, _ in _events(40, 9)])


def test_em_turns_the_blocks_sparse_before_its_expected_counts_and_kdb_goes_on_as_on_dense_tables():
    data = _events(160, 10)
    dense, blocks = (KDB(k=2, numeric=EqualFrequency(bins=3), missing=EM(), search=Parents(rebuild_every=40),
                         memory_budget=budget) for budget in (None, BUDGET))
    for x, y in data[:100]:
        dense.learn_one(x, y)
        blocks.learn_one(x, y)
    assert blocks._stats.pairs_blocks
    for i, (x, y) in enumerate(data[100:150]):
        if i % 5 == 0:
            x = {k: v for k, v in x.items() if k != f"a{i % 8}"}  # a missing value: EM adds expected counts
        dense.learn_one(x, y)
        blocks.learn_one(x, y)
    assert blocks._stats.pairs_sparse and not blocks._stats.pairs_blocks
    assert dense.structure == blocks.structure
    xs = [x for x, _ in data[150:]]
    got, want = blocks.predict_proba_many(pd.DataFrame(xs)), dense.predict_proba_many(pd.DataFrame(xs))
    np.testing.assert_allclose(got[want.columns].values, want.values, rtol=1e-9)
