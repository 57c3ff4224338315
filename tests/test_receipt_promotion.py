"""A receipt issued before a promotion takes its event back after it: the model equals one that never saw it.

``commission`` starts as integers (a categorical feature of integers) and turns
numeric at its first fraction (a promotion: its value columns detached, their
counts moved into bins, dropped into the warm-up, or turned into Gaussian
moments). The events taken back hold an integer commission (a column the
promotion detaches) and a missing value (EM's expected counts, fractional);
every other event is complete, so the counts of a model that never saw them
do not depend on when they were learned.
"""

from __future__ import annotations

import numpy as np
import pytest

from join_helpers import assert_same_counts
from stream_nb import AODE, EM, KDB, MDL, TAN, Edges, EqualFrequency, Ignore, NaiveBayes, Parents, Tree, Window
from stream_nb.stats import Stats
from test_fine_layer import assert_counts_close

DROP = (1, 2, 3, 6)


def stream(n=240, ints=5, seed=4):
    """``ints`` integer commissions, then fractions; the events of DROP lose ``k`` or ``b``."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        y = int(rng.integers(2))
        x = {"commission": int(rng.integers(4)) if i < ints else float(np.round(rng.normal(10 + 5 * y, 3), 2)),
             "k": f"k{int(rng.integers(3)) + y}", "b": float(np.round(rng.normal(y, 1.0), 3))}
        if i in DROP:
            x["k" if i % 2 else "b"] = None
        out.append((x, y))
    return out


def learn_and_take_back(model, events, restore=False):
    receipts = {}
    for i, (x, y) in enumerate(events):
        if i in DROP:
            receipts[i] = model.learn_one_receipt(x, y)
        else:
            model.learn_one(x, y)
    assert model._stats.promoted or model._stats.fine.promoted  # the promotion came after the receipts
    if restore:  # and a restart between: model and receipts through their states
        arrays, meta = model.receipts_state(list(receipts.values()))
        model = type(model).from_state(*model.state())
        receipts = dict(zip(receipts, model.receipts_from_state(arrays, meta)))
    for i in DROP:
        model.unlearn_one(*events[i], receipt=receipts[i])
    return model


TWO_LAYER = {
    "tan": lambda m: TAN(numeric=MDL(fine_bins=16, warmup=40), missing=m, search=Tree(rebuild_every=50)),
    "aode": lambda m: AODE(numeric=MDL(fine_bins=16, warmup=40), missing=m),
    "kdb": lambda m: KDB(k=2, numeric=MDL(fine_bins=16, warmup=40), missing=m, search=Parents(rebuild_every=50)),
}


@pytest.mark.parametrize("restore", [False, True])
@pytest.mark.parametrize("ints", [5, 60], ids=["young-drop", "grown-bins"])
@pytest.mark.parametrize("missing", [EM(), Ignore()], ids=["em", "ignore"])
@pytest.mark.parametrize("name", TWO_LAYER)
def test_two_layer_receipts_follow_a_promotion(name, missing, ints, restore):
    """Young (fewer than ``warmup`` integers: the values wait, counted once the fine edges exist) or grown
    (the fine edges cut from them, every count moved to its bin): the fine layer ends equal to a store given
    its fine edges up front that never learned the events taken back."""
    events = stream(ints=ints)
    model = learn_and_take_back(TWO_LAYER[name](missing), events, restore)
    fine = model._stats.fine
    # b, a float from its first value, is counted by value until its sixth value turns it binned: a promotion too
    assert fine.promoted == {fine.feature_index["commission"]: "drop" if ints < 40 else "bins",
                             fine.feature_index["b"]: "drop"}
    edges = {name: fine.disc[f].edges.tolist() for f, name in enumerate(fine.features) if fine.disc[f] is not None}
    ref = Stats(pairs=True, numeric="bins", bin_edges=edges)
    for i, (x, y) in enumerate(events):
        if i not in DROP:
            ref.learn_one(x, y)
    got, want = fine.counts(), ref.counts()
    assert_counts_close({k: got[k] for k in want}, want)


PLAIN = {
    "nb-gauss": lambda m: NaiveBayes(missing=m),
    "nb-window": lambda m: NaiveBayes(missing=m, forgetting=Window(1000)),  # a forgetting model: its receipts name a pane
    "tan-bins": lambda m: TAN(numeric=Edges({"commission": [8.0, 12.0, 16.0], "b": [0.0, 1.0]}, rest=EqualFrequency()), missing=m, search=Tree(rebuild_every=50)),
    "kdb-bins": lambda m: KDB(k=2, numeric=Edges({"commission": [8.0, 12.0, 16.0], "b": [0.0, 1.0]}, rest=EqualFrequency()), missing=m, search=Parents(rebuild_every=50)),
}


@pytest.mark.parametrize("restore", [False, True])
@pytest.mark.parametrize("missing", [EM(), Ignore()], ids=["em", "ignore"])
@pytest.mark.parametrize("name", PLAIN)
def test_receipts_follow_a_promotion_to_gaussian_moments_or_to_fixed_bins(name, missing, restore):
    """One store: naive Bayes' Gaussian moments (from the per-value counts), or bins of fixed edges: the model
    equals one that never saw the events taken back (counts exactly where they are integers, moments and EM's
    fractions within rounding)."""
    events = stream(ints=30)
    model = learn_and_take_back(PLAIN[name](missing), events, restore)
    ref = PLAIN[name](missing)
    for i, (x, y) in enumerate(events):
        if i not in DROP:
            ref.learn_one(x, y)
    assert model._stats.promoted == ref._stats.promoted == {
        model._stats.feature_index["commission"]: "gauss" if name.startswith("nb") else "bins"}
    assert_same_counts(model, ref)
    if not name.startswith("nb"):  # the pair (and KDB's tuple) counts too, array for array
        for k in ("pair_count", "tuple_count"):
            if getattr(ref._stats, k, None) is not None:
                a, b = named(model, k), named(ref, k)
                assert a.keys() == b.keys() and all(np.isclose(a[c], b[c], atol=1e-9) for c in b), k


def named(model, table: str) -> dict:
    """The nonzero cells of a pair or tuple table, keyed by class and (feature, value) names."""
    s = model._stats
    t = getattr(s, table)
    t = t.to_dense() if hasattr(t, "to_dense") else np.asarray(t)
    name = {col: (s.features[s.value_feature[col]], s.value_keys[col])
            for col in range(1, len(s.value_keys)) if s.value_feature[col] >= 0}
    out = {}
    for idx in zip(*np.nonzero(np.abs(t) > 1e-9)):  # EM's fractions taken back leave rounding behind
        if all(i in name for i in idx[1:]):
            out[(s.classes[idx[0]], *[name[i] for i in idx[1:]])] = float(t[idx])
        else:
            raise AssertionError((table, idx, t[idx]))  # a detached column holds nothing
    return out


@pytest.mark.parametrize("damage, message", [
    (lambda m: m.__setitem__("promoted", [[0, "moved"]]), r"stats.promoted: expected a list of \[numeric feature index"),
    (lambda m: m.__setitem__("promoted", [[1, "gauss"]]), r"stats.promoted: expected a list of \[numeric feature index"),
    (lambda m: m.__setitem__("gauss_features", [2, 2]), r"stats.gauss_features: expected the Gaussian features' indices"),
    (lambda m: m["columns"].__setitem__(0, [-1, "three"]), r"stats.columns\[0\]: a detached column has null or the number"),
])
def test_a_state_whose_promotions_do_not_fit_is_refused_naming_what_was_expected(damage, message):
    model = NaiveBayes()
    for x, y in stream(ints=30):
        model.learn_one(x, y)
    arrays, meta = model.state()
    assert meta["stats"]["promoted"] == [[0, "gauss"]] and meta["stats"]["gauss_features"] == [2, 0]  # b's slot first
    damage(meta["stats"])
    with pytest.raises(ValueError, match=message):
        NaiveBayes.from_state(arrays, meta)


@pytest.mark.parametrize("restore", [False, True])
@pytest.mark.parametrize("missing", [EM(), Ignore()], ids=["em", "ignore"])
def test_a_receipt_follows_a_promotion_that_drops_the_values_into_the_warmup(missing, restore):
    """One store, learned edges: fewer than ``warmup`` integers when the first fraction comes, so they become
    warm-up values (never counted), with the first fractions until ``warmup`` values are seen. The store ends
    equal to one given the model's edges up front that never learned the events taken back, every warm-up
    value counted as missing."""
    ints, warmup = 12, 30
    events = stream(ints=ints)
    model = learn_and_take_back(TAN(numeric=EqualFrequency(warmup=warmup), missing=missing, search=Tree(rebuild_every=50)),
                                events, restore)
    s = model._stats
    f = s.feature_index["commission"]
    assert s.promoted == {f: "drop", s.feature_index["b"]: "drop"}  # b: its sixth value turned it binned
    edges = {name: s.disc[g].edges.tolist() for g, name in enumerate(s.features) if s.disc[g] is not None}
    ref = Stats(pairs=True, numeric="bins", bin_edges=edges)
    b_seen = 0
    for i, (x, y) in enumerate(events):
        x = dict(x)
        if i < warmup:  # the warm-up values of commission (its integers, then fractions) were never counted
            x["commission"] = None
        if x["b"] is not None:  # nor b's first warmup values
            b_seen += 1
            if b_seen <= warmup:
                x["b"] = None
        if i not in DROP:
            ref.learn_one(x, y)
    got, want = s.counts(), ref.counts()
    assert_counts_close({k: got[k] for k in want}, want)


def test_the_join_keeps_the_receipt_of_a_plain_event_whose_integers_a_promotion_may_drop():
    """A provisional label of a complete event needs no receipt, unless a value of it is an integer of a
    feature whose promotion would drop it into the warm-up: the join keeps that receipt, and the label's
    retraction after the promotion takes back what the event added (without it the event's value now falls in
    a bin it was never counted in). Reference: a store given the learned edges, counting what each learning
    counted (the warm-up values missing; the true labels, learned after the warm-up, with every value)."""
    from join_helpers import ListSink, ListSource
    from stream_nb.engine import Engine, Joiner

    warmup = 30
    events = stream(ints=12)
    model = TAN(numeric=EqualFrequency(warmup=warmup), missing=Ignore(), search=Tree(rebuild_every=50))
    engine = Engine(model, ListSource([{"id": i, **x} for i, (x, _) in enumerate(events)]), ListSink(), ListSink())
    engine.joiner = Joiner(engine, ListSource([], "labels"), {"provisional_label": 0})
    engine.run()
    kept = {int(engine.joiner.store.id_of(row)) for row in engine.joiner.receipts}
    assert set(range(12)) <= kept and not kept & set(range(40, len(events)))  # integers before the promotion
    engine.joiner.feedback = ListSource([{"id": i, "label": 1} for i in DROP], "labels")
    engine.run()
    assert engine.joiner.counts["retractions"] == len(DROP)
    s = model._stats
    edges = {name: s.disc[g].edges.tolist() for g, name in enumerate(s.features) if s.disc[g] is not None}
    ref = Stats(pairs=True, numeric="bins", bin_edges=edges)
    b_seen = 0
    for i, (x, _) in enumerate(events):
        x = dict(x)
        if i < warmup:
            x["commission"] = None
        if x["b"] is not None:
            b_seen += 1
            if b_seen <= warmup:
                x["b"] = None
        if i not in DROP:
            ref.learn_one(x, 0)
    for i in DROP:
        ref.learn_one(events[i][0], 1)
    got, want = s.counts(), ref.counts()
    assert_counts_close({k: got[k] for k in want}, want)
