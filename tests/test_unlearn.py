"""unlearn_one: the exact inverse of learn_one, checked against a model that never saw the event."""

from __future__ import annotations

import random

import numpy as np
import pytest

from stream_nb import AODE, KDB, SPODE, TAN, NaiveBayes
from stream_nb.exceptions import UnlearnError
from test_learners import random_events

MODELS = {
    "nb": lambda **kw: NaiveBayes(**kw),
    "aode": lambda **kw: AODE(**kw),
    "tan": lambda **kw: TAN(rebuild_every=50, **kw),
    "spode": lambda **kw: SPODE(parent="f1", **kw),
    "spode-chosen": lambda **kw: SPODE(rebuild_every=50, **kw),
    "kdb": lambda **kw: KDB(k=2, rebuild_every=50, **kw),
}


def store_arrays(model) -> dict:
    arrays, meta = model.state()
    return {k: v for k, v in arrays.items() if not k.startswith("model.")}, meta["stats"]


def assert_same_counts(a, b, exact=True, keys=None):
    """The store of ``a`` equals that of ``b`` (same vocabulary; counts exactly, or within rounding)."""
    (arr_a, meta_a), (arr_b, meta_b) = store_arrays(a), store_arrays(b)
    assert meta_a["classes"] == meta_b["classes"] and meta_a["columns"] == meta_b["columns"]
    for k in keys or arr_b:
        if k.startswith("g_") or not exact:
            np.testing.assert_allclose(arr_a[k], arr_b[k], rtol=1e-10, atol=1e-10, err_msg=k)
        else:
            np.testing.assert_array_equal(arr_a[k], arr_b[k], err_msg=k)


def split(events, drop):
    return [e for i, e in enumerate(events) if i not in drop]


@pytest.mark.parametrize("name", MODELS)
def test_unlearn_equals_the_model_that_never_saw_the_events(name):
    events = random_events(240, n_feats=4, seed=3)
    drop = {70, 131, 200, 239}  # after the prefix that shows every class and value
    a, b = MODELS[name](), MODELS[name]()
    for x, y in events:
        a.learn_one(x, y)
    for x, y in split(events, drop):
        b.learn_one(x, y)
    for i in sorted(drop, reverse=True)[:2] + sorted(drop)[:2]:  # any order
        a.unlearn_one(*events[i])
    assert_same_counts(a, b)
    assert a.n_learned == b.n_learned == len(events) - len(drop)
    # structures follow the counts at the next rebuild, and then every prediction agrees
    if hasattr(a, "rebuild") and name != "spode-chosen":  # SPODE's choice also rests on its running scores
        a.rebuild(), b.rebuild()
    if name != "spode-chosen":
        for x, _ in events[:60]:
            assert a.predict_proba_one(x) == pytest.approx(b.predict_proba_one(x), abs=1e-12)


def test_gaussian_moments_come_back_to_the_model_that_never_saw_the_event():
    rng = random.Random(1)
    events = [({"t": rng.gauss(3 * (i % 2), 1.0) * 1e3, "u": rng.random(), "s": "ab"[i % 2]}, i % 2)
              for i in range(200)]
    drop = {57, 58, 150}
    a, b = NaiveBayes(), NaiveBayes()
    for x, y in events:
        a.learn_one(x, y)
    for x, y in split(events, drop):
        b.learn_one(x, y)
    for i in drop:
        a.unlearn_one(*events[i])
    assert_same_counts(a, b)
    # the last value of a class: back to exactly nothing
    c = NaiveBayes()
    c.learn_one({"t": 1.5}, "x")
    c.learn_one({"t": 2.25}, "y")
    c.unlearn_one({"t": 2.25}, "y")
    s = c._stats
    assert (s.g_n[1, 0], s.g_mean[1, 0], s.g_m2[1, 0]) == (0.0, 0.0, 0.0)


@pytest.mark.parametrize("name", ["nb", "aode", "kdb"])
def test_unlearning_what_was_never_learned_raises_and_changes_nothing(name):
    model = MODELS[name](missing="ignore")
    for x, y in [({"a": "p", "b": "q"}, "yes"), ({"a": "r", "b": "s"}, "no"), ({"a": "p", "b": "q"}, "yes"),
                 ({"a": "r", "b": "s"}, "yes")]:
        model.learn_one(x, y)
    before = store_arrays(model)[0]
    bad = [
        (({"a": "p", "b": "q"}, "maybe"), "class 'maybe' was never learned"),
        (({"a": "p", "c": "q"}, "yes"), "feature 'c' was never learned"),
        (({"a": "zz", "b": "q"}, "yes"), "value 'zz' was never learned"),
        (({"a": "p", "b": "q"}, "no"), "less than the weight"),  # the values, not in that class
    ]
    if name != "nb":  # pair counts see a combination never learned together
        bad.append((({"a": "p", "b": "s"}, "yes"), "value pairs"))
    for (x, y), message in bad:
        with pytest.raises(UnlearnError, match=message):
            model.unlearn_one(x, y)
        for k, v in store_arrays(model)[0].items():
            np.testing.assert_array_equal(v, before[k], err_msg=k)
    model.unlearn_one({"a": "p", "b": "q"}, "yes")
    model.unlearn_one({"a": "p", "b": "q"}, "yes")
    with pytest.raises(UnlearnError, match="unlearned already"):  # the third time: the counts would go negative
        model.unlearn_one({"a": "p", "b": "q"}, "yes")


@pytest.mark.parametrize("name", MODELS)
def test_em_events_retract_exactly_the_fractions_they_added(name):
    """An incomplete event learned under EM, then complete events: unlearning it with its receipt gives
    the model that learned only the complete ones (within rounding), though the counts moved since."""
    events = random_events(160, n_feats=4, seed=5)
    incomplete = ({"f0": "v1", "f2": "v0"}, "c1")  # f1, f3 missing: EM adds expected counts for them
    a, b = MODELS[name](), MODELS[name]()
    for x, y in events[:100]:
        a.learn_one(x, y), b.learn_one(x, y)
    receipt = a.learn_one_receipt(*incomplete)
    assert any(e[0] in ("expected", "many") for e in receipt.entries)
    for x, y in events[100:]:
        a.learn_one(x, y), b.learn_one(x, y)
    with pytest.raises(UnlearnError, match="receipt") as err:
        a.unlearn_one(*incomplete)
    assert err.value.reason == "needs_receipt"
    a.unlearn_one(*incomplete, receipt=receipt)
    assert_same_counts(a, b, exact=False)
    if name != "spode-chosen":
        if hasattr(a, "rebuild"):
            a.rebuild(), b.rebuild()
        for x, _ in events[:40]:
            assert a.predict_proba_one(x) == pytest.approx(b.predict_proba_one(x), abs=1e-9)


def test_a_receipt_is_the_receipt_of_its_label():
    model = NaiveBayes()
    model.learn_one({"a": "p"}, "no")
    receipt = model.learn_one_receipt({"a": "p"}, "yes")
    with pytest.raises(UnlearnError, match="labeled 'yes', not 'no'"):
        model.unlearn_one({"a": "p"}, "no", receipt=receipt)
    model.unlearn_one({"a": "p"}, "yes", receipt=receipt)
    assert model._stats.counts()["class_count"] == {"no": 1.0, "yes": 0.0}


def test_unlabeled_events_spread_by_posterior_come_back_with_their_receipt():
    events = random_events(80, n_feats=3, seed=2)
    a, b = NaiveBayes(learn_unlabeled=True), NaiveBayes(learn_unlabeled=True)
    for x, y in events[:60]:
        a.learn_one(x, y), b.learn_one(x, y)
    receipt = a.learn_one_receipt(events[60][0], None)
    assert len({e[2] for e in receipt.entries if e[0] == "count"}) == 3  # spread over the three classes
    for x, y in events[61:]:
        a.learn_one(x, y), b.learn_one(x, y)
    with pytest.raises(UnlearnError, match="receipt"):
        a.unlearn_one(events[60][0], None)
    a.unlearn_one(events[60][0], None, receipt=receipt)
    assert_same_counts(a, b, exact=False)


def test_spode_running_scores_come_back_with_the_receipt():
    events = random_events(120, n_feats=4, seed=4)
    model = SPODE(rebuild_every=1000)
    for x, y in events[:100]:
        model.learn_one(x, y)
    scores = model.scores
    receipt = model.learn_one_receipt(*events[100])
    assert model.scores != scores
    model.unlearn_one(*events[100], receipt=receipt)
    assert model.scores == pytest.approx(scores, abs=1e-12)
