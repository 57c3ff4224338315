"""TAN's store, and KDB's with k >= 2, hold their pairs in pair blocks when dense tables would pass
``memory_budget`` and the blocks fit.

The reference is the same model with no budget (dense pair tables): on the same events a model on blocks must
hold the same counts, choose the same structure (TAN's tree, KDB's parents, on the blocks' exact pair counts)
and give the same probabilities, whichever path learns (river's ``learn_one``, ``learn_many``,
``prequential_many``), through a snapshot, a merge and unlearning. The stream brings new values (and a new
class) mid-stream, so the blocks grow between kernel calls. KDB's (k+1)-way tables are sparse then, within
the floor sparse tables may always take, so that nothing is selected (``tests/test_kdb_pair_blocks.py``: its
own cases).
"""

import numpy as np
import pandas as pd
import pytest

from stream_nb.learners import KDB, TAN
from stream_nb.options import EM, EqualFrequency, Ignore, Parents, Tree
from stream_nb.stats import Stats

F = 8


def _events(n: int, seed: int, late: int = 0) -> list:
    """A chain of categorical attributes below the class; from event ``late`` on, a value and a class unseen
    before (``late`` = 0: none)."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        y = int(rng.integers(0, 3 if not late or i < late else 4))
        prev, x = y, {}
        for j in range(F):
            v = int((prev + rng.integers(0, 2)) % (3 + j % 2))
            if late and i >= late and j == 2 and rng.random() < 0.3:
                v = 9  # a value never seen before
            x[f"a{j}"] = f"v{v}"
            prev = v
        out.append((x, f"c{y}"))
    return out


def _tan(budget, **kw):
    return TAN(numeric=EqualFrequency(bins=3), missing=Ignore(), search=Tree(rebuild_every=40),
               memory_budget=budget, **kw)


BUDGET = 30_000  # dense pair tables (with their spare room) pass it; the blocks fit


def _kdb(budget, k=2, **kw):
    return KDB(k=k, numeric=EqualFrequency(bins=3), missing=Ignore(), search=Parents(rebuild_every=40),
               memory_budget=budget, **kw)


#: the models whose stores take pair blocks, as the model-level tests make them
MODELS = {"TAN": _tan, "KDB": _kdb}


def _same(dense, blocks, xs):
    """The two models agree on ``xs`` (probabilities to 1e-9) and on their structure; the blocks are in use."""
    assert blocks._stats.pairs_blocks and not dense._stats.pairs_blocks and not dense._stats.pairs_sparse
    if isinstance(dense, KDB):  # its parents, chosen on the pairs, with nothing selected
        assert not blocks._stats.pairs_selected and not blocks._stats.tuple_selection.selected
        assert dense.structure == blocks.structure and any(dense.structure.values())
    else:
        assert list(dense._parent) == list(blocks._parent) and dense._root == blocks._root
        # the tree as users read it, each edge with its CMI (the blocks compute the edges' only)
        assert [e[:2] for e in dense.tree] == [e[:2] for e in blocks.tree]
        assert [e[2] for e in blocks.tree] == pytest.approx([e[2] for e in dense.tree], rel=1e-12)
    pd_, pb = dense.predict_proba_many(pd.DataFrame(xs)), blocks.predict_proba_many(pd.DataFrame(xs))
    np.testing.assert_allclose(pb[pd_.columns].values, pd_.values, rtol=1e-9, atol=0)
    for x in xs[:20]:
        a, b = dense.predict_proba_one(x), blocks.predict_proba_one(x)
        assert a.keys() == b.keys() and all(abs(a[k] - b[k]) <= 1e-9 * max(a[k], 1e-300) for k in a)


def test_the_store_holds_the_pairs_in_blocks_with_the_dense_counts_within_the_budget():
    data = _events(300, 0, late=150)
    dense, blocks = Stats(pairs=True, numeric="bins", memory_budget=None), Stats(pairs=True, numeric="bins",
                                                                                 memory_budget=BUDGET)
    blocks.pair_blocks_ok = True
    for x, y in data:
        dense.learn_one(x, y)
        blocks.learn_one(x, y)
    assert blocks.pairs_blocks
    C, V, F_ = dense.n_classes, len(dense.value_keys), len(dense.features)
    u = np.arange(V)
    np.testing.assert_array_equal(blocks.pair_count[:C, u[:, None], u[None, :]], dense.pair_count[:C, :V, :V])
    np.testing.assert_array_equal(blocks.pair_feat[:C, u[:, None], np.arange(F_)[None, :]], dense.pair_feat[:C, :V, :F_])
    used = blocks.memory_used()
    assert used["pairs_blocks"] and not used["pairs_sparse"] and used["bytes"] <= BUDGET
    assert used["pair_bytes"] == blocks.pair_count.nbytes < dense.memory_used()["pair_bytes"]


def test_the_room_blocks_keep_to_grow_stays_within_the_budget_and_the_counts_exact():
    data = _events(300, 4, late=100)
    room = 40_000  # the blocks and a share of room fit; below it, only the room the budget leaves
    for budget in (room, BUDGET):
        dense, blocks = Stats(pairs=True, numeric="bins", memory_budget=None), Stats(
            pairs=True, numeric="bins", memory_budget=budget)
        blocks.pair_blocks_ok = True
        for x, y in data:
            dense.learn_one(x, y)
            blocks.learn_one(x, y)
            assert blocks.memory_used()["bytes"] <= budget
        t = blocks.pair_count
        assert blocks.pairs_blocks and t.buf.size > t.cells.size  # room kept beyond the layout
        C, V = dense.n_classes, len(dense.value_keys)
        u = np.arange(V)
        np.testing.assert_array_equal(t[:C, u[:, None], u[None, :]], dense.pair_count[:C, :V, :V])


def test_a_store_no_model_asked_blocks_of_stays_with_sparse_tables():
    s = Stats(pairs=True, numeric="bins", memory_budget=BUDGET)
    for x, y in _events(50, 1):
        s.learn_one(x, y)
    assert s.pairs_sparse and not s.pairs_blocks


@pytest.mark.parametrize("name", sorted(MODELS))
def test_on_blocks_is_on_dense_tables_through_learn_one_with_new_values_and_a_class_mid_stream(name):
    make = MODELS[name]
    data = _events(300, 2, late=180)
    dense, blocks = make(None), make(BUDGET)
    for x, y in data[:250]:
        assert dense.predict_proba_one(x).keys() == blocks.predict_proba_one(x).keys()
        dense.learn_one(x, y)
        blocks.learn_one(x, y)
    _same(dense, blocks, [x for x, _ in data[250:]])


@pytest.mark.parametrize("name", sorted(MODELS))
def test_on_blocks_is_on_dense_tables_through_learn_many_and_prequential_many(name):
    make = MODELS[name]
    data = _events(400, 3, late=250)
    xs, ys = [x for x, _ in data], [y for _, y in data]
    dense, blocks = make(None), make(BUDGET)
    dense.learn_many(pd.DataFrame(xs[:150]), pd.Series(ys[:150]))
    blocks.learn_many(pd.DataFrame(xs[:150]), pd.Series(ys[:150]))
    got_d, got_b = dense.prequential_many(xs[150:350], ys[150:350]), blocks.prequential_many(xs[150:350], ys[150:350])
    for (pa, qa), (pb, qb) in zip(got_d, got_b):
        assert pa == pb and all(abs(qa[k] - qb[k]) <= 1e-9 * max(qa[k], 1e-300) for k in qa)
    _same(dense, blocks, xs[350:])


@pytest.mark.parametrize("name", sorted(MODELS))
def test_a_snapshot_on_blocks_loads_back_to_blocks_that_predict_the_same(name):
    make = MODELS[name]
    data = _events(200, 4)
    model = make(BUDGET)
    for x, y in data[:150]:
        model.learn_one(x, y)
    back = type(model).from_state(*model.state())
    assert back._stats.pairs_blocks
    xs = [x for x, _ in data[150:]]
    np.testing.assert_allclose(back.predict_proba_many(pd.DataFrame(xs)).values,
                               model.predict_proba_many(pd.DataFrame(xs)).values, rtol=1e-12)
    for x, y in data[150:]:  # and they go on learning alike
        model.learn_one(x, y)
        back.learn_one(x, y)
    np.testing.assert_array_equal(back._stats.pair_count.cells, model._stats.pair_count.cells)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_merging_two_on_blocks_is_one_on_both_streams_on_dense_tables(name):
    make = MODELS[name]
    a_data, b_data = _events(150, 5), _events(150, 6, late=60)
    a, b, whole = make(BUDGET), make(BUDGET), make(None)
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


@pytest.mark.parametrize("name", sorted(MODELS))
def test_unlearning_on_blocks_is_never_having_learned_the_events(name):
    make = MODELS[name]
    data = _events(200, 8)
    model, kept = make(BUDGET), make(None)
    for x, y in data:
        model.learn_one(x, y)
    for x, y in data[:150]:
        kept.learn_one(x, y)
    for x, y in data[150:]:
        model.unlearn_one(x, y)
    model.rebuild()
    kept.rebuild()
    _same(kept, model, [x for x, _ in _events(40, 9)])


def test_em_turns_the_blocks_into_sparse_tables_before_its_expected_counts():
    data = _events(120, 10)
    model = TAN(numeric=EqualFrequency(bins=3), missing=EM(), search=Tree(rebuild_every=40), memory_budget=BUDGET)
    for x, y in data[:100]:
        model.learn_one(x, y)
    assert model._stats.pairs_blocks
    s = model._stats
    u = np.arange(len(s.value_keys))
    before = s.pair_count[:, u[:, None], u[None, :]]
    x = dict(data[100][0])
    del x["a3"]  # a missing value: EM adds expected pairs
    model.learn_one(x, data[100][1])
    assert model._stats.pairs_sparse and not model._stats.pairs_blocks
    after = s.pair_count[: s.n_classes, u[:, None], u[None, :]]
    assert after.sum() > before.sum() and (after >= before).all()  # the counts moved over, and the event added
    assert sum(model.predict_proba_one(data[101][0]).values()) == pytest.approx(1.0)


def test_default_tan_two_layer_store_holds_blocks_while_its_layers_share_the_pairs():
    """TAN's defaults (MDL's two layers, EM) on categorical data: the fine layer shares the coarse pair counts,
    so the blocks are held once; a merge gives the fine layer tables of its own, sparse ones, explicitly."""
    data = _events(300, 11, late=150)
    xs, ys = [x for x, _ in data], [y for _, y in data]
    dense, blocks = TAN(search=Tree(rebuild_every=40), memory_budget=None), TAN(search=Tree(rebuild_every=40),
                                                                                memory_budget=BUDGET)
    for x, y in data[:100]:
        dense.learn_one(x, y)
        blocks.learn_one(x, y)
    dense.learn_many(pd.DataFrame(xs[100:180]), pd.Series(ys[100:180]))
    blocks.learn_many(pd.DataFrame(xs[100:180]), pd.Series(ys[100:180]))
    for (pa, qa), (pb, qb) in zip(dense.prequential_many(xs[180:260], ys[180:260]),
                                  blocks.prequential_many(xs[180:260], ys[180:260])):
        assert pa == pb and all(abs(qa[k] - qb[k]) <= 1e-9 * max(qa[k], 1e-300) for k in qa)
    assert blocks._stats.shared_pairs and blocks._stats.memory_used()["bytes"] <= BUDGET
    _same(dense, blocks, xs[260:])
    back = TAN.from_state(*blocks.state())
    assert back._stats.pairs_blocks
    np.testing.assert_allclose(back.predict_proba_many(pd.DataFrame(xs[260:])).values,
                               blocks.predict_proba_many(pd.DataFrame(xs[260:])).values, rtol=1e-12)
    other = TAN(search=Tree(rebuild_every=40), memory_budget=BUDGET)
    for x, y in data[:50]:
        other.learn_one(x, y)
        dense.learn_one(x, y)
    blocks.merge(other)
    assert blocks._stats.pairs_sparse  # a fine layer of its own: no second copy of the blocks
    blocks.rebuild()
    dense.rebuild()
    got, want = blocks.predict_proba_many(pd.DataFrame(xs[260:])), dense.predict_proba_many(pd.DataFrame(xs[260:]))
    np.testing.assert_allclose(got[want.columns].values, want.values, rtol=1e-9)


@pytest.mark.parametrize("make", [_tan, lambda budget: TAN(search=Tree(rebuild_every=40), memory_budget=budget)],
                         ids=["one layer", "two layers"])
def test_blocks_that_outgrow_the_budget_turn_sparse_and_tan_goes_on_as_on_dense_tables(make):
    rng = np.random.default_rng(12)
    xs, ys = [], []
    for i in range(400):  # three values per attribute, then eight
        y = int(rng.integers(0, 3))
        xs.append({f"a{j}": f"v{(y + int(rng.integers(0, 2 if i < 150 else 6))) % 8}" for j in range(F)})
        ys.append(f"c{y}")
    dense, blocks = make(None), make(BUDGET)
    for x, y in zip(xs[:150], ys[:150]):
        dense.learn_one(x, y)
        blocks.learn_one(x, y)
    assert blocks._stats.pairs_blocks
    got_d, got_b = dense.prequential_many(xs[150:300], ys[150:300]), blocks.prequential_many(xs[150:300], ys[150:300])
    for (pa, qa), (pb, qb) in zip(got_d, got_b):
        assert pa == pb and all(abs(qa[k] - qb[k]) <= 1e-9 * max(qa[k], 1e-300) for k in qa)
    assert blocks._stats.pairs_sparse
    for x, y in zip(xs[300:350], ys[300:350]):
        dense.learn_one(x, y)
        blocks.learn_one(x, y)
    got, want = blocks.predict_proba_many(pd.DataFrame(xs[350:])), dense.predict_proba_many(pd.DataFrame(xs[350:]))
    np.testing.assert_allclose(got[want.columns].values, want.values, rtol=1e-9)
