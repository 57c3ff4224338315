"""unlearn_one: the exact inverse of learn_one, checked against a model that never saw the event."""

from __future__ import annotations

import random

import numpy as np
import pytest

from stream_nb import AODE, EM, KDB, SPODE, TAN, EqualFrequency, Ignore, NaiveBayes, Parents, SuperParent, Tree
from stream_nb.exceptions import UnlearnError
from test_learners import random_events

MODELS = {
    "nb": lambda **kw: NaiveBayes(**kw),
    "aode": lambda **kw: AODE(**kw),
    "tan": lambda **kw: TAN(search=Tree(rebuild_every=50), **kw),
    "spode": lambda **kw: SPODE(search=SuperParent(parent="f1"), **kw),
    "spode-chosen": lambda **kw: SPODE(search=SuperParent(rebuild_every=50), **kw),
    "kdb": lambda **kw: KDB(k=2, search=Parents(50), **kw),
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
    model = MODELS[name](missing=Ignore())
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
    a, b = NaiveBayes(missing=EM(unlabeled=True)), NaiveBayes(missing=EM(unlabeled=True))
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
    model = SPODE(search=SuperParent())
    for x, y in events[:100]:
        model.learn_one(x, y)
    scores = model.scores
    receipt = model.learn_one_receipt(*events[100])
    assert model.scores != scores
    model.unlearn_one(*events[100], receipt=receipt)
    assert model.scores == pytest.approx(scores, abs=1e-12)


# ---------------------------------------------------------------- many events at once (unlearn_events)


def with_numbers(events, seed):
    """``events`` with two numeric features beside the categorical ones (Gaussian in naive Bayes)."""
    rng = random.Random(seed)
    return [({**x, "t": rng.gauss(int(y[1]), 1.0), "u": rng.uniform(-5, 5) * 1e3}, y) for x, y in events]


# one layer of counts (equal-frequency bins; the default MDL() keeps a fine layer, whose cells receipts name)
ONE_LAYER = {**MODELS, **{f"{name}-one-layer": (lambda make: lambda **kw: make(numeric=EqualFrequency(), **kw))(
    MODELS[name]) for name in ("aode", "tan", "spode", "kdb")}}
NEEDS_RECEIPTS = {"aode", "tan", "spode", "spode-chosen", "spode-one-layer"}


@pytest.mark.parametrize("name", ONE_LAYER)
def test_unlearn_events_equals_the_model_that_never_saw_them(name):
    """Many events taken back at once: the counts of a model that never saw them (exactly; the Gaussian
    moments within rounding), and each event as unlearn_one takes it back. A model whose events need
    receipts (SPODE's running scores, a fine layer's cells) refuses the batch and keeps its counts."""
    events = random_events(300, n_feats=4, seed=5)
    if name == "nb":
        events = with_numbers(events, seed=5)
    drop = set(range(90, 300, 3))  # after the prefix that shows every class and value
    a, b, one_by_one = ONE_LAYER[name](), ONE_LAYER[name](), ONE_LAYER[name]()
    for x, y in events:
        a.learn_one(x, y)
        one_by_one.learn_one(x, y)
    for x, y in split(events, drop):
        b.learn_one(x, y)
    gone = [events[i] for i in sorted(drop)]
    if not a.unlearns_plainly():
        before = store_arrays(a)
        with pytest.raises(UnlearnError) as info:
            a.unlearn_events([x for x, _ in gone], [y for _, y in gone])
        assert info.value.reason == "needs_receipt" and name in NEEDS_RECEIPTS
        assert all(np.array_equal(v, store_arrays(a)[0][k]) for k, v in before[0].items())
        return
    assert name not in NEEDS_RECEIPTS
    a.unlearn_events([x for x, _ in gone], [y for _, y in gone])
    for x, y in gone:
        one_by_one.unlearn_one(x, y)
    assert_same_counts(a, b)
    assert_same_counts(a, one_by_one)
    assert a.n_learned == b.n_learned == len(events) - len(drop)


def test_unlearn_events_is_all_or_nothing():
    """A batch with one event the model cannot have learned (a value it never saw, a class drained by the
    batch itself, no label) changes nothing and says which."""
    events = with_numbers(random_events(200, n_feats=3, seed=8), seed=8)
    model = NaiveBayes(missing=Ignore())
    model.learn_events([x for x, _ in events], [y for _, y in events])
    before = store_arrays(model)[0]
    xs, ys = [x for x, _ in events[:50]], [y for _, y in events[:50]]
    n_c0 = sum(y == "c0" for _, y in events)
    for bad_xs, bad_ys, message in (
            (xs + [{**xs[0], "f1": "never"}], ys + [ys[0]], "feature 'f1': value 'never' was never learned"),
            ([xs[0]] * (n_c0 + 1), ["c0"] * (n_c0 + 1), f"class 'c0': the counts hold {n_c0}, less than the {n_c0 + 1}"),
            (xs + [xs[0]], ys + [None], "an unlabeled event"),
    ):
        with pytest.raises(UnlearnError, match=message):
            model.unlearn_events(bad_xs, bad_ys)
        after = store_arrays(model)[0]
        assert all(np.array_equal(v, after[k]) for k, v in before.items())


def test_learn_events_keeps_the_receipts_taking_back_will_need():
    """Under EM, learn_events with ``receipts`` learns the complete events in runs and keeps a receipt for
    each incomplete one (its expected counts): taking all back, those with unlearn_one and their receipts
    and the rest with unlearn_events, leaves the counts of before."""
    rng = random.Random(4)
    events = with_numbers(random_events(400, n_feats=4, seed=4), seed=4)
    for x, _ in events[100:]:
        if rng.random() < 0.2:
            x.pop(f"f{rng.randrange(4)}")
    model = NaiveBayes(missing=EM())
    model.learn_events([x for x, _ in events[:100]], [y for _, y in events[:100]])
    before = NaiveBayes.from_state(*model.state())
    later = events[100:]
    receipts: dict = {}
    assert model.learn_events([x for x, _ in later], [y for _, y in later], receipts=receipts) == []
    incomplete = {i for i, (x, _) in enumerate(later) if len(x) < 6}
    assert set(receipts) == incomplete and len(incomplete) > 30
    for i in sorted(receipts, reverse=True):
        model.unlearn_one(*later[i], receipt=receipts[i])
    rest = [e for i, e in enumerate(later) if i not in receipts]
    model.unlearn_events([x for x, _ in rest], [y for _, y in rest])
    assert_same_counts(model, before, exact=False)
    assert model.n_learned == pytest.approx(100)
