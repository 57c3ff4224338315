"""KDB's own cases of pair blocks (k >= 2): the store holds them within the budget where dense pair tables pass
it, k = 1 keeps sparse pairs, and EM's expected counts turn them sparse with KDB going on as on dense tables.
The cases KDB shares with TAN (every learning path, snapshots, merges, unlearning against the same model on
dense tables) are ``tests/test_tan_pair_blocks.py``'s, parametrized over both.

Past a budget that also selects its t-way tables' candidate parents, KDB learns runs in the compiled loop of
``kernels/_kdb_sparse.py``: the same scores (to the last digit) and counts as one event at a time, through
``learn_many``, ``prequential_many``, a snapshot and a merge; its class, value and pair counts those of KDB
with no budget, its kept tuples a brute-force recount, its scores those of the enumeration's numpy scoring.
"""

import numpy as np
import pandas as pd

from stream_nb.kernels import compiled
from stream_nb.learners import KDB
from stream_nb.options import EM, EqualFrequency, Ignore, Parents
from stream_nb.stats.budget import _budget

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


# ----------------------------------------------------------------------------- runs over pair blocks and candidate parents


def _selected(monkeypatch):
    """KDBs whose pairs are pair blocks and whose t-way tables keep their candidate parents' tuples: the floor
    that spares small sparse tables off, so that :data:`BUDGET` selects them (pending from the first event,
    counting from the first rebuild); and a count of the events the compiled runs over them learn."""
    monkeypatch.setattr(_budget, "SPARSE_FLOOR", 0)
    runs = {"learned": 0}
    kernel = compiled().kdb_block_sparse

    def spy(*args):
        done = kernel(*args)
        runs["learned"] += done if args[9] else 0  # (learn)
        return done

    monkeypatch.setattr(compiled(), "kdb_block_sparse", spy)
    return runs


def _counts(model) -> dict:
    """Every count a KDB on pair blocks and selected t-way tables holds, by name (the tables' cells in key order)."""
    s = model._stats
    assert s.pairs_blocks and s.tuples_selected and not s.tuple_pending
    C, V = s.n_classes, len(s.value_keys)
    out = {"class": s.class_count[:C], "value": s.value_count[:C, :V], "feat": s.feat_count[:C],
           "pairs": s.pair_count.cells, "diag": s.pair_count.diag[:C, :V],
           "cand": s.tuple_cand, "from": np.array([s.tuple_from])}
    for name in ("tuple_count", "tuple_feat"):
        idx, vals = getattr(s, name).cells()
        out[name] = np.stack([*idx, vals]) if len(vals) else np.zeros(0)
    return {k: np.array(v, copy=True) for k, v in out.items()}


def _same_counts(a, b):
    ca, cb = _counts(a), _counts(b)
    assert ca.keys() == cb.keys()
    for name in ca:
        np.testing.assert_array_equal(ca[name], cb[name], err_msg=name)


def _numpy_posterior(model, x) -> dict:
    """P(c | x) by the enumeration's scoring (``KDB._terms``: the ratios off the hash tables in
    ``kernels/_sparse_scores.py: kdb_sparse``, their logarithms and sums in numpy), apart from the kernels that
    score the runs and the one-event predictions."""
    s = model._stats
    model._sync_parents()  # (the parents whose tuples the budget keeps, as every prediction reads them)
    enc = s.encode(x)
    D = np.full((1, len(s.features)), -1, dtype=np.int64)
    D[0, enc.feats] = enc.cols
    jll = model._terms(D)[0]
    p = np.exp(jll - jll.max())
    return dict(zip(s.classes, (p / p.sum()).tolist()))


def test_runs_over_pair_blocks_and_candidate_parents_score_and_count_as_one_event_at_a_time(monkeypatch):
    runs = _selected(monkeypatch)
    data = _events(500, 0, late=300)  # a new value and a new class from event 300 on
    xs, ys = [x for x, _ in data], [y for _, y in data]
    one, many, batch, dense = _kdb(BUDGET), _kdb(BUDGET), _kdb(BUDGET), _kdb(None)
    outs_one = []
    for x, y in data:
        step = one.prequential_one(x, y)
        outs_one.append((step.prediction, step.proba))
        dense.learn_one(x, y)
    assert runs["learned"] == 0  # one event at a time: no run
    outs_many = []
    for lo in range(0, len(xs), 50):
        outs_many += many.prequential_many(xs[lo : lo + 50], ys[lo : lo + 50])
    assert runs["learned"] > 400  # most events learned in runs (new values and classes, and the first, one at a time)
    assert outs_many == outs_one  # the same scores, to the last digit
    for lo in range(0, len(xs), 50):
        batch.learn_many(pd.DataFrame(xs[lo : lo + 50]), pd.Series(ys[lo : lo + 50]))
    for m in (many, batch):
        _same_counts(m, one)
        assert m.structure == one.structure and any(one.structure.values())
        for x in xs[:30]:
            assert m.predict_proba_one(x) == one.predict_proba_one(x)
    # the class, value and pair counts are those of every event, as KDB with no budget holds them (dense tables)
    s, d = many._stats, dense._stats
    C, V = d.n_classes, len(d.value_keys)
    u = np.arange(V)
    assert C == 4 and not d.pairs_blocks and not d.tuples_sparse
    np.testing.assert_array_equal(s.class_count[:C], d.class_count[:C])
    np.testing.assert_array_equal(s.value_count[:C, :V], d.value_count[:C, :V])
    np.testing.assert_array_equal(s.pair_count[:C, u[:, None], u[None, :]], d.pair_count[:C, :V, :V])
    # each kept t-way cell: the events since the tables started counting, recounted from the events
    start, cand = int(s.tuple_from), s.tuple_cand
    assert 0 < start < 300 and not s.pairs_partial  # no candidate admitted late: every kept cell counts from start
    want = {}
    for x, y in data[start:]:
        c, obs = s.class_index[y], {s.feature_index[n]: s.values[s.feature_index[n]][v] for n, v in x.items()}
        for f, vf in obs.items():
            for a, va in obs.items():
                for b, vb in obs.items():
                    if cand[f, a] and cand[f, b]:
                        want[c, vf, va, vb] = want.get((c, vf, va, vb), 0) + 1
    idx, vals = s.tuple_count.cells()
    assert want and {tuple(int(i[j]) for i in idx): float(v) for j, v in enumerate(vals)} == want
    # and the scores those of the enumeration's numpy scoring on the same counts, at every event of a run
    check = _kdb(BUDGET)
    for (x, y), (_, proba) in zip(data, outs_many):
        ref = _numpy_posterior(check, x) if check._stats.n_classes else {}
        assert proba.keys() == ref.keys() and all(abs(proba[k] - ref[k]) <= 1e-12 for k in ref)
        check.learn_one(x, y)


def test_a_snapshot_and_a_merge_of_kdb_on_blocks_and_candidate_parents_go_on_in_runs_as_one_event_at_a_time(
        monkeypatch):
    runs = _selected(monkeypatch)
    data, other = _events(400, 4, late=250), _events(200, 5)
    model = _kdb(BUDGET)
    model.learn_many(pd.DataFrame([x for x, _ in data[:200]]), pd.Series([y for _, y in data[:200]]))
    side = _kdb(BUDGET)
    for x, y in other:
        side.learn_one(x, y)
    back = KDB.from_state(*model.state())
    merged_one, merged_many = KDB.from_state(*model.state()).merge(side), KDB.from_state(*model.state()).merge(side)
    for a, b in ((model, back), (merged_one, merged_many)):
        assert b._stats.pairs_blocks and b._stats.tuples_selected and b._sparse_runs()
        learned = runs["learned"]
        steps = [a.prequential_one(x, y) for x, y in data[200:]]  # one event at a time
        assert runs["learned"] == learned
        got = b.prequential_many([x for x, _ in data[200:]], [y for _, y in data[200:]])  # in runs
        assert runs["learned"] > learned + 100
        assert got == [(step.prediction, step.proba) for step in steps]
        _same_counts(a, b)
        assert a.structure == b.structure
