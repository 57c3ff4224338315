"""A float feature of a few values (0, 0.5 and 1) is counted by value, each value its own bin, from its first
event; one value more than ``bins`` turns it binned, as a fraction turns a feature of integers numeric.

Checked against independent references: the same stream with the feature declared categorical (while it has
few values), the same stream with it declared numeric from the start (after the promotion: the same counts,
EM's observed ones included), a sequential run (merges), a restored snapshot, and the one-event path (runs
and batches).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import stream_nb
from stream_nb import AODE, EM, KDB, MDL, SPODE, TAN, Decay, EqualFrequency, Ignore, NaiveBayes, Parents, SuperParent, Tree, Window
from stream_nb.exceptions import FeatureTypeError
from stream_nb.tools.inspect_snapshot import describe
from test_fine_layer import assert_counts_close, observed_counts
from test_learners import assert_proba_close, learn

MODELS = {
    "tan": lambda **kw: TAN(search=Tree(rebuild_every=50), **kw),
    "aode": lambda **kw: AODE(**kw),
    "spode": lambda **kw: SPODE(search=SuperParent(rebuild_every=50), **kw),
    "kdb": lambda **kw: KDB(k=2, search=Parents(50), **kw),
    "tan-ef": lambda **kw: TAN(numeric=EqualFrequency(), search=Tree(rebuild_every=50), **kw),
    "nb-bins": lambda **kw: NaiveBayes(numeric=MDL(), **kw),
}


def few_stream(n=300, seed=1, levels=(0.0, 0.5, 1.0), missing=0.0):
    """``form`` takes three values (one of them tells the class), ``k`` is categorical, ``b`` a float of
    many values; some values missing."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        y = int(rng.integers(2))
        x = {"form": levels[int(rng.integers(len(levels) - 1)) + y], "k": f"k{int(rng.integers(3)) + y}",
             "b": float(np.round(rng.normal(y, 1.0), 3))}
        for key in list(x):
            if rng.random() < missing:
                x[key] = None
        out.append((x, y))
    return out


def then_many(n=200, seed=2):
    """The same stream after ``form`` has turned continuous."""
    rng = np.random.default_rng(seed)
    return [({"form": float(np.round(rng.normal(y, 0.4), 3)), "k": f"k{int(rng.integers(3)) + y}",
              "b": float(np.round(rng.normal(y, 1.0), 3))}, y) for y in rng.integers(2, size=n).tolist()]


@pytest.mark.parametrize("name", MODELS)
def test_a_feature_of_few_float_values_predicts_as_the_same_feature_declared_categorical(name):
    events = few_stream()
    model = learn(MODELS[name](), events)
    s = model._stats
    f = s.feature_index["form"]
    assert f in s.few and s.kinds[f] == 0 and sorted(s.values[f]) == [0.0, 0.5, 1.0]
    assert "form" not in model.cut_points()
    declared = learn(MODELS[name](types={"form": "categorical"}), events)
    for x, _ in few_stream(40, seed=9):
        assert_proba_close(model.predict_proba_one(x), declared.predict_proba_one(x), 1e-12)


@pytest.mark.parametrize("missing", [Ignore(), EM()], ids=["ignore", "em"])
@pytest.mark.parametrize("name", ["tan", "kdb", "tan-ef", "nb-bins"])
def test_one_value_more_than_bins_turns_it_binned_as_if_numeric_from_the_start(name, missing):
    """Five values and then a sixth: the counts after the promotion are those of the same stream with the
    feature declared numeric (the values seen by value become warm-up values, counted once the edges
    exist); under EM its observed counts are (its E-step read the values as categories before)."""
    events = few_stream(40, levels=(0.0, 0.25, 0.5, 0.75, 1.0), missing=0.1) + then_many(200)
    model = learn(MODELS[name](missing=missing), events)
    ref = learn(MODELS[name](missing=missing, types={"form": "numeric"}), events)
    s = model._stats
    f = s.feature_index["form"]
    assert f not in s.few and s.kinds[f] == 2 and "form" in model.cut_points()
    assert model.cut_points() == ref.cut_points()
    layer = getattr(s, "fine", s)
    ref_layer = getattr(ref._stats, "fine", ref._stats)
    assert layer.promoted[f] == "drop"
    assert_counts_close(observed_counts(layer), observed_counts(ref_layer))
    if missing == Ignore():
        assert_counts_close(layer.counts(), ref_layer.counts())
        for x, _ in then_many(40, seed=9):
            assert_proba_close(model.predict_proba_one(x), ref.predict_proba_one(x), 1e-9)


@pytest.mark.parametrize("missing", [Ignore(), EM()], ids=["ignore", "em"])
def test_a_promotion_of_integers_under_em_counts_the_values_seen_not_the_expected_ones(missing):
    """EM's expected counts of a missing value are no values seen: a feature of integers promoted by a
    fraction takes its warm-up values from the observed counts, and ends with the observed counts of the
    same stream with the feature declared numeric from the start."""
    rng = np.random.default_rng(2)
    events = []
    for i in range(115):
        y = int(rng.integers(2))
        x = {"commission": int(rng.integers(3)) if i < 5 else float(np.round(rng.normal(10 + 5 * y, 3), 2)),
             "k": f"k{int(rng.integers(3)) + y}", "b": float(rng.normal(y, 1.0))}
        for key in list(x):
            if rng.random() < 0.3:
                x[key] = None
        events.append((x, y))
    make = lambda **kw: AODE(numeric=MDL(fine_bins=16, warmup=40), missing=missing, **kw)  # noqa: E731
    model = learn(make(types={"b": "numeric"}), events)
    ref = learn(make(types={"b": "numeric", "commission": "numeric"}), events)
    for m in (model, ref):
        m._stats.rediscretise()
    assert model._stats.fine.promoted == {model._stats.feature_index["commission"]: "drop"}
    assert observed_counts(model._stats.fine) == observed_counts(ref._stats.fine)


def test_naive_bayes_with_gaussians_keeps_a_float_feature_gaussian_from_its_first_value():
    model = learn(NaiveBayes(), few_stream(50))
    s = model._stats
    assert not s.few and s.kinds[s.feature_index["form"]] == 1


@pytest.mark.parametrize("name", ["tan", "aode", "kdb", "nb-bins"])
def test_runs_and_batches_learn_what_one_event_at_a_time_learns(name):
    events = few_stream(60, levels=(0.0, 0.5, 1.0)) + then_many(140)
    one = learn(MODELS[name](missing=Ignore()), events)
    runs = MODELS[name](missing=Ignore())
    for lo in range(0, len(events), 25):
        runs.prequential_many([x for x, _ in events[lo:lo + 25]], [y for _, y in events[lo:lo + 25]])
    batches = MODELS[name](missing=Ignore())
    for lo in range(0, len(events), 25):
        part = events[lo:lo + 25]
        batches.learn_many(pd.DataFrame([x for x, _ in part]), pd.Series([y for _, y in part]))
    for other in (runs, batches):
        assert other.cut_points() == one.cut_points()
        assert_counts_close(getattr(other._stats, "fine", other._stats).counts(),
                            getattr(one._stats, "fine", one._stats).counts())


@pytest.mark.parametrize("name", ["tan", "aode", "tan-ef"])
def test_two_models_whose_values_together_are_too_many_merge_into_a_binned_feature(name):
    """Each side saw three values of ``form``, together six: the merged model turns it binned, as the
    sequential run did at its sixth value, with the same counts."""
    a_events = few_stream(20, seed=3, levels=(0.0, 0.5, 1.0))
    b_events = few_stream(20, seed=4, levels=(2.0, 2.5, 3.0))
    a, b = learn(MODELS[name](missing=Ignore()), a_events), learn(MODELS[name](missing=Ignore()), b_events)
    assert a._stats.feature_index["form"] in a._stats.few and b._stats.feature_index["form"] in b._stats.few
    seq = learn(MODELS[name](missing=Ignore()), a_events + b_events)
    a.merge(b)
    s = a._stats
    assert s.kinds[s.feature_index["form"]] == 2 and not s.few
    rest = then_many(150)
    for m in (a, seq):
        learn(m, rest)
    assert a.cut_points() == seq.cut_points()
    assert_counts_close(getattr(a._stats, "fine", s).counts(), getattr(seq._stats, "fine", seq._stats).counts())


@pytest.mark.parametrize("name", ["tan", "kdb"])
def test_a_snapshot_keeps_a_feature_counted_by_value_and_its_promotion_to_come(name):
    events = few_stream(30)
    model = learn(MODELS[name](missing=Ignore()), events)
    arrays, meta = model.state()
    copy = type(model).from_state(arrays, json.loads(json.dumps(meta)))
    assert copy._stats.few == model._stats.few == {model._stats.feature_index["form"]}
    rest = then_many(150)
    for m in (model, copy):
        learn(m, rest)
    assert copy.cut_points() == model.cut_points()
    assert_counts_close(getattr(copy._stats, "fine", copy._stats).counts(),
                        getattr(model._stats, "fine", model._stats).counts())


def test_a_value_that_is_no_number_is_refused_as_for_a_numeric_feature():
    model = learn(TAN(), few_stream(20))
    before = model._stats.counts()
    with pytest.raises(FeatureTypeError, match=r"feature 'form' is numeric: expected a number, got str 'high'"):
        model.learn_one({"form": "high", "k": "k1", "b": 0.5}, 1)
    with pytest.raises(FeatureTypeError, match=r"feature 'form' is numeric: expected a number, got bool True"):
        model.learn_one({"form": True, "k": "k1", "b": 0.5}, 1)
    with pytest.raises(FeatureTypeError, match=r"feature 'form': expected a finite number, got inf"):
        model.learn_one({"form": float("inf"), "k": "k1", "b": 0.5}, 1)
    assert model._stats.counts() == before


@pytest.mark.parametrize("forgetting", [{"forgetting": Window(100)}, {"forgetting": Decay(half_life=50.0)}, {"drift_detector": "ddm"}])
def test_a_model_that_forgets_bins_a_float_feature_from_its_first_value(forgetting):
    """A window's panes, decay's scaled counts and a detector's captures would not follow a promotion's
    moves: a forgetting model counts no float feature by value, as before, through a snapshot too."""
    model = learn(TAN(**forgetting), few_stream(30))
    s = model._stats
    assert not s.few and s.kinds[s.feature_index["form"]] == 2
    copy = type(model).from_state(*model.state())
    learn(copy, [({"form": 0.5, "k": "k1", "new": 0.25}, 1)])
    assert not copy._stats.few and copy._stats.kinds[copy._stats.feature_index["new"]] == 2


def test_snapshot_inspect_names_a_feature_counted_by_value(tmp_path):
    model = learn(TAN(), few_stream(30))
    path = tmp_path / "m.snb"
    stream_nb.save(model, path)
    kinds = {f["name"]: f["kind"] for f in describe(stream_nb.snapshots.read(path))["model"]["features"]}
    assert kinds == {"form": "numeric by value", "k": "categorical", "b": "binned"}
