"""The index of the rows a selected pair table holds (``SparseTable.index_rows``), which AODE's and SPODE's
scores read to skip the rows (class, parent value) that hold no cell.

The reference is the same model run without the index (every cell read from the hash table, as before the
index): the same probabilities to the last digit, through ``learn_one``, ``learn_many``,
``prequential_many``, a snapshot round trip, a merge and unlearning; and the index against the cells each
table holds (every row holding a cell has its bit; bits clear for rows the scores then skip). The stream's
values depend on the class, so that a parent value is seen with few classes, and the budget is small
enough for the selection to keep a few parents (``SPARSE_FLOOR`` lowered).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import stream_nb
from stream_nb import AODE, SPODE, SuperParent
from stream_nb.stats.budget import _budget
from stream_nb.stats.tables import SparseTable
from stream_nb.stats.tables import _sparse

_FLOOR = _budget.SPARSE_FLOOR
MODELS = {"aode": lambda budget: AODE(memory_budget=budget),
          "spode": lambda budget: SPODE(memory_budget=budget, search=SuperParent(rebuild_every=40))}
BUDGET = 300_000


@pytest.fixture(autouse=True)
def small_floor(monkeypatch):
    monkeypatch.setattr(_budget, "SPARSE_FLOOR", 0)


def _no_index(self):
    """``SparseTable.index_rows`` that keeps none: every row read from the hash table."""
    self._rows = None
    return _sparse._NO_ROWS


def _stream(n, seed=0, features=30, values=10, classes=5):
    rng = np.random.default_rng(seed)
    y = rng.integers(classes, size=n)
    X = rng.integers(values, size=(n, features))
    for j in range(0, features, 3):  # a third of the attributes near their class: values seen with few classes
        near = rng.random(n) < 0.8
        X[near, j] = (2 * y[near] + rng.integers(2, size=int(near.sum()))) % values
    return pd.DataFrame(X, columns=[f"f{i}" for i in range(features)]), pd.Series(y)


def _index_holds_the_rows(model) -> int:
    """Assert that each indexed pair table marks every row holding a cell; the rows of the classes and
    columns seen whose bit is clear (those the scores skip)."""
    s = model._stats
    C, V = s.n_classes, len(s.value_keys)
    clear = 0
    for p in s._sets():
        for name in ("pair_count", "pair_feat"):
            t = getattr(s, p + name)
            rows = t.rows_held() if isinstance(t, SparseTable) else np.zeros(0, dtype=np.uint8)
            if not len(rows):
                continue
            keys, _ = t.arrays()
            bits = np.unpackbits(rows, bitorder="little").astype(bool)
            assert bits[np.unique(keys[keys >= 0] // t.shape[2])].all()
            clear += int((~bits[: t.shape[0] * t.shape[1]].reshape(t.shape[:2])[:C, 1:V]).sum())
    return clear


def _runs(name, monkeypatch, learn, budget=BUDGET):
    """``learn(model)``'s outputs for the model with the index and for the reference without it."""
    out = []
    for index in (True, False):
        with monkeypatch.context() as m:
            if not index:
                m.setattr(SparseTable, "index_rows", _no_index)
            model = MODELS[name](budget)
            out.append((model, learn(model)))
    return out


@pytest.mark.parametrize("name", list(MODELS))
def test_the_index_skips_rows_and_every_way_of_learning_predicts_as_reading_every_cell(name, monkeypatch):
    X, y = _stream(700)
    rows = [dict(r) for r in X.to_dict("records")]
    hold = rows[600:]

    def one(model):
        for x, c in zip(rows[:600], y[:600].tolist()):
            model.learn_one(x, c)
        return [model.predict_proba_one(x) for x in hold], _index_holds_the_rows(model)

    def many(model):
        model.learn_many(X[:300], y[:300])
        model.learn_many(X[300:600], y[300:600])
        return model.predict_proba_many(X[600:]).to_numpy(), _index_holds_the_rows(model)

    def preq(model):
        out = [model.prequential_many(rows[lo : lo + 100], y[lo : lo + 100].tolist()) for lo in range(0, 600, 100)]
        return out, _index_holds_the_rows(model)

    for learn in (one, many, preq):
        (model, (got, clear)), (ref_model, (want, ref_clear)) = _runs(name, monkeypatch, learn)
        assert model._stats.pairs_selected and ref_model._stats.pairs_selected
        assert clear > 0 and ref_clear == 0  # rows skipped with the index, none without it
        if isinstance(got, np.ndarray):
            np.testing.assert_array_equal(got, want)
        else:
            assert got == want


def test_a_snapshot_a_merge_and_unlearning_read_as_without_the_index(monkeypatch, tmp_path):
    X, y = _stream(500, seed=3)
    rows = [dict(r) for r in X.to_dict("records")]
    hold = rows[400:]

    def learn(model):
        receipts = [model.learn_one_receipt(x, c) for x, c in zip(rows[:200], y[:200].tolist())]
        path = tmp_path / f"m{id(model)}.snb"
        stream_nb.save(model, path)
        back = stream_nb.load(path)
        assert back._stats.pairs_selected
        out = [[back.predict_proba_one(x) for x in hold], _index_holds_the_rows(back)]
        try:  # unlearning: exact while every kept pair holds every event (else refused, both ways alike)
            for (x, c), r in list(zip(zip(rows[:200], y[:200].tolist()), receipts))[::5]:
                model.unlearn_one(x, c, receipt=r)
            out.append([model.predict_proba_one(x) for x in hold])
        except stream_nb.exceptions.UnlearnError as exc:
            out.append(str(exc))
        other = MODELS["aode"](BUDGET)
        for x, c in zip(rows[200:400], y[200:400].tolist()):
            other.learn_one(x, c)
        back.merge(other)
        _index_holds_the_rows(back)
        for x, c in zip(rows[400:450], y[400:450].tolist()):
            back.learn_one(x, c)
        out.append([back.predict_proba_one(x) for x in hold])
        return out

    (_, got), (_, want) = _runs("aode", monkeypatch, learn)
    assert got[1] > 0 and want[1] == 0
    assert isinstance(got[2], list)  # the events were taken back (no pair admitted again in 200 events)
    assert got[0] == want[0] and got[2] == want[2] and got[3] == want[3]


@pytest.mark.parametrize("name", list(MODELS))
def test_pairs_turned_sparse_index_their_rows_before_any_selection(name, monkeypatch):
    """Dense pairs past the budget turn sparse, every pair still counted (the floor a sparse table is always
    allowed): the index made of the cells moved over, then kept by learning."""
    monkeypatch.setattr(_budget, "SPARSE_FLOOR", _FLOOR)
    X, y = _stream(300, seed=5)
    rows = [dict(r) for r in X.to_dict("records")]

    def learn(model):
        out = [model.prequential_many(rows[lo : lo + 50], y[lo : lo + 50].tolist()) for lo in range(0, 300, 50)]
        return out, _index_holds_the_rows(model), model._stats.pairs_sparse, model._stats.pairs_selected

    (_, got), (_, want) = _runs(name, monkeypatch, learn, budget=120_000)
    assert got[2] and not got[3]  # sparse, no selection
    assert got[1] > 0 and want[1] == 0
    assert got[0] == want[0]


def test_a_table_made_again_in_numpy_drops_its_index():
    t = SparseTable((2, 8, 8), slots=16)
    rows = t.index_rows()
    assert len(rows) == 2 and t.rows_held() is rows
    t.add((np.array([1]), np.array([3]), np.array([4])), 1.0)  # a cell added in numpy: its bit would not be set
    assert len(t.rows_held()) == 0
    big = SparseTable((2, _sparse.ROWS_INDEXED, 4), slots=16)  # more rows than an index takes
    assert len(big.index_rows()) == 0 and len(big.rows_held()) == 0
