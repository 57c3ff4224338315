"""KDB's own cases of pair blocks (k >= 2): the store holds them within the budget where dense pair tables pass
it, k = 1 keeps sparse pairs, and EM's expected counts turn them sparse with KDB going on as on dense tables.
The cases KDB shares with TAN (every learning path, snapshots, merges, unlearning against the same model on
dense tables) are ``tests/test_tan_pair_blocks.py``'s, parametrized over both.
"""

import numpy as np
import pandas as pd

from stream_nb.learners import KDB
from stream_nb.options import EM, EqualFrequency, Ignore, Parents

from test_tan_pair_blocks import BUDGET, _events, _kdb

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
