"""Pair counts within the memory budget: AODE, SPODE and TAN with sparse pair tables.

Every sparse result is checked against the dense path (``memory_budget=None``) on the
same events: the same cells and counts, the same structure, the same predictions and
probabilities (within rounding: AODE's and SPODE's compiled kernels read the dense tables,
numpy the sparse ones), through one-event learning, vectorised runs,
EM's expected counts, snapshots, merges, unlearning and forgetting. ``memory_budget=0``
makes the pair tables sparse from the first event.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import stream_nb
from stream_nb import AODE, EM, KDB, SPODE, TAN, Decay, Ignore, Parents, SuperParent, Tree, Window
from stream_nb.exceptions import CapacityError
from stream_nb.learners import conditional_mutual_information
from stream_nb.stats.budget import _budget

MODELS = {
    "aode": lambda **kw: AODE(**kw),
    "spode": lambda **kw: SPODE(search=SuperParent(rebuild_every=40), **kw),
    "tan": lambda **kw: TAN(search=Tree(rebuild_every=40), **kw),
    "kdb1": lambda **kw: KDB(k=1, search=Parents(40), **kw),
}


def _stream(n, seed=0, values=5, features=5, holes=True):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, values, size=(n, features))
    X[:, 1] = np.where(rng.random(n) < 0.8, X[:, 0], X[:, 1])  # a dependence for the trees to find
    y = (X[:, 0] + X[:, 2] * X[:, 3]) % 3
    out = []
    for i, (row, c) in enumerate(zip(X, y)):
        x = {f"f{j}": int(v) for j, v in enumerate(row)}
        if holes and i % 7 == 0:
            del x[f"f{i % features}"]
        out.append((x, int(c)))
    return out


def _pairs(model) -> dict:
    """Every nonzero pair cell of every count set, by (class, value, value) names: dense and sparse alike."""
    s = model._stats
    C, V, F = s.n_classes, len(s.value_keys), len(s.features)
    out = {}
    for p in s._sets():
        for k, dims in (("pair_count", (C, V, V)), ("pair_feat", (C, V, F))):
            grid = np.indices(dims[1:]).reshape(2, -1)
            got = np.asarray(getattr(s, p + k)[(slice(0, C), *grid)])
            out[p + k] = got
    return out


def _same_proba(a: dict, b: dict) -> bool:
    """The same classes and probabilities, within rounding."""
    return a.keys() == b.keys() and all(a[k] == pytest.approx(b[k], rel=1e-12, abs=1e-15) for k in a)


def _same_results(got: list, want: list) -> bool:
    """The same predictions, and probabilities within rounding, of two prequential_many results."""
    return len(got) == len(want) and all(g[0] == w[0] and _same_proba(g[1], w[1]) for g, w in zip(got, want))


def _assert_same(dense, sparse):
    assert sparse._stats.pairs_sparse and not dense._stats.pairs_sparse
    a, b = _pairs(dense), _pairs(sparse)
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_array_equal(b[k], a[k], err_msg=k)


@pytest.mark.parametrize("name", list(MODELS))
@pytest.mark.parametrize("missing", [EM(), Ignore()], ids=["em", "ignore"])
def test_sparse_pairs_learn_and_predict_as_the_dense_ones(name, missing):
    stream = _stream(160)
    dense, sparse = MODELS[name](missing=missing, memory_budget=None), MODELS[name](missing=missing, memory_budget=0)
    for x, y in stream:
        assert _same_proba(sparse.predict_proba_one(x), dense.predict_proba_one(x))
        dense.learn_one(x, y)
        sparse.learn_one(x, y)
    _assert_same(dense, sparse)
    if name != "aode":
        assert sparse.n_rebuilds == dense.n_rebuilds >= 3
    if name == "tan":  # the same edges; their weights (CMI) summed over the cells in another order
        assert [e[:2] for e in sparse.tree] == [e[:2] for e in dense.tree]
        assert [e[2] for e in sparse.tree] == pytest.approx([e[2] for e in dense.tree], rel=1e-12)
    if name == "spode":
        assert sparse.super_parent == dense.super_parent
    used = sparse.memory_used()
    assert used["pairs_sparse"] and 0 < used["pair_cells"] and 0 < used["pair_bytes"] <= used["bytes"]


@pytest.mark.parametrize("name", list(MODELS))
def test_vectorised_runs_on_sparse_pairs_equal_the_dense_path_and_the_loop(name):
    stream = _stream(300, holes=False)
    xs, ys = [x for x, _ in stream], [y for _, y in stream]
    dense, sparse, looped = (MODELS[name](memory_budget=m) for m in (None, 0, 0))
    got = []
    for lo in range(0, 300, 100):
        want = dense.prequential_many(xs[lo : lo + 100], ys[lo : lo + 100])
        out = sparse.prequential_many(xs[lo : lo + 100], ys[lo : lo + 100])
        assert _same_results(out, want)
        got += out
    one = [stream_nb.learners.prequential_step(looped, x, y) for x, y in stream]  # one event at a time
    assert [o[0] for o in got] == [o.prediction for o in one]
    for (_, pa), step in zip(got, one):
        pb = step.proba
        assert pa.keys() == pb.keys() and all(pa[c] == pytest.approx(pb[c], rel=1e-12) for c in pa)
    _assert_same(dense, sparse)


def test_cmi_from_sparse_cells_equals_the_dense_one():
    stream = _stream(200)  # EM: fractional, asymmetric pair counts
    dense, sparse = TAN(memory_budget=None, search=Tree(rebuild_every=0)), TAN(memory_budget=0, search=Tree(rebuild_every=0))
    for x, y in stream:
        dense.learn_one(x, y)
        sparse.learn_one(x, y)
    want = conditional_mutual_information(dense._stats)
    assert (want > 0.05).any()
    np.testing.assert_allclose(conditional_mutual_information(sparse._stats), want, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("name", ["aode", "tan"])
def test_a_sparse_snapshot_round_trip_restores_the_same_model(name, tmp_path):
    model = MODELS[name](memory_budget=0)
    for x, y in _stream(120):
        model.learn_one(x, y)
    path = tmp_path / "m.snb"
    stream_nb.save(model, path)
    back = stream_nb.load(path)
    assert back._stats.pairs_sparse
    arrays, meta = model._stats.state()
    assert "pair_count_cells" in arrays and "pair_count" not in arrays
    for k, v in _pairs(model).items():
        np.testing.assert_array_equal(_pairs(back)[k], v)
    for x, _ in _stream(20, seed=5):
        assert back.predict_proba_one(x) == model.predict_proba_one(x)
    # the same state read with room for dense tables: dense, the same counts
    dense = type(model._stats).from_state(arrays, {**meta, "memory_budget": None})
    assert not dense.pairs_sparse
    twin = MODELS[name](memory_budget=None)
    twin._stats = dense
    for k, v in _pairs(model).items():
        np.testing.assert_array_equal(_pairs(twin)[k], v)


def test_a_sparse_state_with_pair_cells_out_of_bounds_is_refused():
    model = AODE(memory_budget=0)
    for x, y in _stream(20):
        model.learn_one(x, y)
    arrays, meta = model._stats.state()
    bad = dict(arrays)
    bad["pair_count_cells"] = arrays["pair_count_cells"].copy()
    bad["pair_count_cells"][0, 2] = 10**6
    with pytest.raises(ValueError, match="pair_count_cells.*within"):
        type(model._stats).from_state(bad, meta)


@pytest.mark.parametrize("budgets", [(0, 0), (None, 0), (0, None)])
def test_merging_sparse_and_dense_pairs_equals_one_dense_run(budgets):
    stream = _stream(200)
    a, b = (AODE(memory_budget=m, missing=Ignore()) for m in budgets)
    whole = AODE(memory_budget=None, missing=Ignore())
    for i, (x, y) in enumerate(stream):
        (a if i < 100 else b).learn_one(x, y)
        whole.learn_one(x, y)
    a.merge(b)
    for k, v in _pairs(whole).items():
        np.testing.assert_array_equal(_pairs(a)[k], v)
    for x, _ in stream[:20]:
        assert _same_proba(a.predict_proba_one(x), whole.predict_proba_one(x))


@pytest.mark.parametrize("missing", [EM(), Ignore()], ids=["em", "ignore"])
def test_unlearning_from_sparse_pairs_equals_unlearning_from_dense_ones(missing):
    stream = _stream(120)
    dense, sparse = TAN(search=Tree(rebuild_every=0), missing=missing, memory_budget=None), TAN(search=Tree(rebuild_every=0), missing=missing, memory_budget=0)
    receipts = []
    for x, y in stream:
        receipts.append((dense.learn_one_receipt(x, y), sparse.learn_one_receipt(x, y)))
    for (x, y), (rd, rs) in list(zip(stream, receipts))[::3]:
        dense.unlearn_one(x, y, receipt=rd)
        sparse.unlearn_one(x, y, receipt=rs)
    _assert_same(dense, sparse)
    with pytest.raises(stream_nb.exceptions.UnlearnError):  # the sparse tables check what they hold
        sparse.unlearn_one({"f0": 99, "f1": 98}, 0)


@pytest.mark.parametrize("forget", [{"forgetting": Window(50)}, {"forgetting": Decay(half_life=30.0)}, {"forgetting": Window(60), "drift_detector": "ddm"}])
def test_forgetting_on_sparse_pairs_equals_the_dense_path(forget):
    """The same predictions and counts; under decay the runs' scores within rounding (a run weighs its rows
    by decayed weights, which the dense tables add row by row and the sparse ones as running sums)."""
    stream = _stream(200, holes=False)
    dense, sparse = (SPODE(search=SuperParent(rebuild_every=40), memory_budget=m, **forget) for m in (None, 0))
    xs, ys = [x for x, _ in stream], [y for _, y in stream]
    for lo in range(0, 200, 50):
        got = sparse.prequential_many(xs[lo : lo + 50], ys[lo : lo + 50])
        want = dense.prequential_many(xs[lo : lo + 50], ys[lo : lo + 50])
        if not isinstance(forget["forgetting"], Decay):
            assert _same_results(got, want)
            continue
        assert [p for p, _ in got] == [p for p, _ in want]
        for (_, a), (_, b) in zip(got, want):
            assert a.keys() == b.keys() and all(a[k] == pytest.approx(b[k], rel=1e-9, abs=1e-12) for k in b)
    _assert_same(dense, sparse)


def test_pairs_turn_sparse_when_the_budget_is_passed_and_keep_their_counts():
    stream = _stream(200, values=12, holes=False)
    dense = AODE(memory_budget=None)
    budget = AODE(memory_budget=120_000)  # room for the first values only: sparse midway
    for i, (x, y) in enumerate(stream):
        if i == 1:
            assert not budget._stats.pairs_sparse
        assert _same_proba(budget.predict_proba_one(x), dense.predict_proba_one(x))
        dense.learn_one(x, y)
        budget.learn_one(x, y)
    _assert_same(dense, budget)


def test_a_budget_not_met_even_sparsely_is_refused_with_what_to_set(monkeypatch):
    monkeypatch.setattr(_budget, "SPARSE_FLOOR", 0)  # the floor that spares small examples, off
    rng = np.random.default_rng(4)
    # a model without a pair rule: with forgetting (AODE, SPODE, TAN and KDB without it drop pairs
    # instead: tests/test_candidates.py, tests/test_kdb_candidates.py)
    model = KDB(k=1, memory_budget=200_000, forgetting=Window(size=100000))
    with pytest.raises(CapacityError, match=r"memory_budget=200,000 bytes.*pair_count.*set memory_budget higher"):
        for _ in range(200):
            row = rng.integers(0, 40, size=12)
            model.learn_one({f"f{j}": int(v) for j, v in enumerate(row)}, int(row[0] % 2))
    s = model._stats
    before = (model.n_learned, s.class_count.sum(), len(s.pair_count), len(s.value_keys), s.n_values.tolist())
    # the state is as before the refused event: an event as wide is refused again, and nothing of it
    # is registered (not even its new values); a narrower one may still fit
    with pytest.raises(CapacityError):
        model.learn_one({f"f{j}": j for j in range(12)}, 1)
    with pytest.raises(CapacityError):
        model.learn_one({f"f{j}": 1000 + j for j in range(12)}, 1)
    with pytest.raises(CapacityError):
        model.learn_many(*_frame([{f"f{j}": 2000 + j for j in range(12)}] * 3, [1, 0, 1]))
    assert (model.n_learned, s.class_count.sum(), len(s.pair_count), len(s.value_keys), s.n_values.tolist()) == before
    assert model.predict_proba_one({"f0": 1})  # it still predicts


def _frame(xs, ys):
    return pd.DataFrame(xs), pd.Series(ys)


def test_snapshot_inspect_shows_the_sparse_pair_tables(tmp_path):
    model = AODE(memory_budget=0)
    for x, y in _stream(30):
        model.learn_one(x, y)
    path = tmp_path / "aode.snb"
    stream_nb.save(model, path)
    out = subprocess.run([sys.executable, "-m", "stream_nb", "snapshot", "inspect", str(path)],
                         capture_output=True, text=True, check=True).stdout
    used = stream_nb.load(path).memory_used()
    assert used["pairs_sparse"] and used["pair_cells"] == model.memory_used()["pair_cells"] > 0
    assert (f"counts     {used['cells']:,} cells, {used['bytes']:,} bytes; pair tables sparse, "
            f"{used['pair_cells']:,} cells, {used['pair_bytes']:,} bytes (memory budget 0 bytes)") in out


def test_a_window_across_the_switch_to_sparse_pairs_forgets_as_the_dense_one():
    stream = _stream(240, values=12)
    xs, ys = [x for x, _ in stream], [y for _, y in stream]
    dense, budget = AODE(memory_budget=None, forgetting=Window(size=60)), AODE(memory_budget=120_000, forgetting=Window(size=60))
    cuts = [0, 3] + list(range(30, 241, 30))
    for lo, hi in zip(cuts, cuts[1:]):
        assert _same_results(budget.prequential_many(xs[lo:hi], ys[lo:hi]), dense.prequential_many(xs[lo:hi], ys[lo:hi]))
        if lo == 0:
            assert not budget._stats.pairs_sparse  # dense panes first, sparse ones after the switch
    _assert_same(dense, budget)


def test_dense_pairs_without_spare_room_while_only_that_fits_grow_with_new_values_and_classes():
    stream = _stream(200, values=26, holes=False)
    stream += [({**x, "f4": 100 + i}, 3) for i, (x, _) in enumerate(stream[:10])]  # a new class, new values
    dense, tight = AODE(memory_budget=None, missing=Ignore()), AODE(memory_budget=1_000_000, missing=Ignore())
    for x, y in stream:
        assert tight.predict_proba_one(x) == dense.predict_proba_one(x)
        dense.learn_one(x, y)
        tight.learn_one(x, y)
    s = tight._stats
    assert not s.pairs_sparse and s.pair_count.shape[1] < dense._stats.pair_count.shape[1]  # no doubling room
    assert s.pair_count.shape[0] >= s.n_classes == 4 and tight.memory_used()["bytes"] <= 1_000_000
    for k, v in _pairs(dense).items():
        np.testing.assert_array_equal(_pairs(tight)[k], v)


def test_a_sparse_fine_layer_counts_a_waiting_value_as_a_dense_one_does():
    """A two-layer store re-cut around its warm-up counts a value that waited into events whose other
    values are expected (EM): sparse pair tables (memory_budget=0) must take it as the dense ones do."""
    events = [({"c": "rg"[i % 2], "x": float(i % 7)} if i % 5 else {"x": float(i % 7)}, "ab"[i % 2])
              for i in range(200)]
    sparse, dense = AODE(memory_budget=0), AODE(memory_budget=None)
    for x, y in events:
        sparse.learn_one(x, y)
        dense.learn_one(x, y)
    assert sparse.memory_used()["pairs_sparse"] and not dense.memory_used()["pairs_sparse"]
    for probe in ({"c": "r", "x": 3.0}, {"c": "g"}, {"x": 6.0}):
        got, want = sparse.predict_proba_one(probe), dense.predict_proba_one(probe)
        assert got.keys() == want.keys() and all(abs(got[k] - want[k]) < 1e-12 for k in want)
