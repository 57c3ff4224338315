"""One far value in a Gaussian feature: refused beyond the largest numeric value, harmless below it.

The variance floor is ``var_smoothing`` times the smallest positive variance
within one class (else the smallest squared distance between two class means),
so one far value, in a class of its own or inside another class, cannot
inflate it; a value beyond 1e100 (the largest a numeric value may be, so that
the moments never overflow) is refused, naming the feature, and changes nothing.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import warnings

import numpy as np
import orjson
import pandas as pd
import pytest

import stream_nb
from stream_nb import AODE, MDL, Gaussian, NaiveBayes
from stream_nb.exceptions import FeatureTypeError, InvalidEventError
from stream_nb.stats import NUMERIC_LIMIT, gaussian_loglik, variance_floor


def ordinary(n=200):
    """The issue's stream: x in 0..9, 'lo' below 5 and 'hi' from 5 on."""
    return [({"x": float(i % 10)}, "lo" if i % 10 < 5 else "hi") for i in range(n)]


def issue_lines(first: float | None) -> bytes:
    """The issue's command's input: an optional far value of class 'a', the ordinary stream, one query."""
    lines = [json.dumps({"x": first, "label": "a"})] if first is not None else []
    lines += [json.dumps({"x": x["x"], "label": y}) for x, y in ordinary()]
    return ("\n".join(lines + ['{"x":1.0}']) + "\n").encode()


def state_of(model) -> tuple:
    arrays, meta = model.state()
    return {k: v.tolist() for k, v in arrays.items()}, orjson.dumps(stream_nb.snapshots.encode_meta(meta))


@pytest.mark.parametrize("first", [None, 1e10, 1e100, 1e200, 1e300])
def test_the_issue_command_predicts_lo_with_or_without_a_far_first_value(first, tmp_path):
    dead = tmp_path / "dead.jsonl"
    proc = subprocess.run(
        [sys.executable, "-m", "stream_nb.cli", "run", "--dead-letter", str(dead)],
        input=issue_lines(first), capture_output=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    assert b"Warning" not in proc.stderr, proc.stderr.decode()
    last = orjson.loads(proc.stdout.splitlines()[-1])
    assert last["prediction"] == "lo" and last["proba"]["lo"] >= 0.9, last
    letters = [orjson.loads(line) for line in dead.read_bytes().splitlines()]
    if first is None or first <= NUMERIC_LIMIT:
        assert letters == []
    else:
        (letter,) = letters
        assert (letter["reason"], letter["field"], letter["source"]["line"]) == ("bad_feature_type", "x", 1)
        assert letter["error"] == f"feature 'x': expected a number of magnitude at most 1e+100, got {first!r}"


@pytest.mark.parametrize("far", [1e10, -1e10, 1e100, -1e100])
@pytest.mark.parametrize("numeric", [Gaussian(), MDL()], ids=["gaussian", "bins"])
def test_a_far_value_in_a_class_of_its_own_leaves_the_others_predictions(far, numeric):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning on the way
        model, clean = NaiveBayes(numeric=numeric), NaiveBayes(numeric=numeric)
        model.learn_one({"x": far}, "a")
        for x, y in ordinary():
            model.learn_one(x, y)
            clean.learn_one(x, y)
        for q in (1.0, 3.0, 6.0, 8.0):
            p, want = model.predict_proba_one({"x": q}), clean.predict_proba_one({"x": q})
            assert max(p, key=p.get) == max(want, key=want.get) and max(p.values()) >= 0.9
            if numeric == Gaussian():  # the odds of the untouched classes: their own Gaussians' ratio
                assert p["lo"] / p["hi"] == pytest.approx(want["lo"] / want["hi"], rel=1e-6)
        if numeric == Gaussian():  # bins: the far value shares the top bin with hi's values
            assert model.predict_one({"x": far}) == "a"


@pytest.mark.parametrize("far", [1e10, 1e100])
def test_a_far_value_inside_one_class_leaves_the_other_classes_alone(far):
    """Before, the far value's square entered the floor of every class: lo and mid became indistinguishable."""
    stream = [({"x": float(i % 9)}, ("lo", "mid", "hi")[i % 9 // 3]) for i in range(300)]
    model, clean = NaiveBayes(), NaiveBayes()
    for x, y in stream:
        model.learn_one(x, y)
        clean.learn_one(x, y)
    model.learn_one({"x": far}, "hi")
    for q in (0.0, 1.0, 2.0, 3.0, 4.0, 5.0):
        p, want = model.predict_proba_one({"x": q}), clean.predict_proba_one({"x": q})
        # the posterior odds of the two untouched classes are their own Gaussians' likelihood ratio
        assert p["lo"] / p["mid"] == pytest.approx(want["lo"] / want["mid"], rel=1e-9)
    assert model.predict_one({"x": 1.0}) == "lo" and model.predict_one({"x": 4.0}) == "mid"


def test_the_floor_is_the_textbook_gaussian_with_the_smallest_class_variance_scaled():
    """A class seen once has no variance: var_smoothing x the smallest variance within a class, by hand."""
    rng = np.random.default_rng(5)
    events = [({"x": float(rng.normal(0, 1))}, "p") for _ in range(40)]
    events += [({"x": float(rng.normal(3, 4))}, "q") for _ in range(40)] + [({"x": 1e6}, "lone")]
    vs = 1e-3
    model = NaiveBayes(numeric=Gaussian(var_smoothing=vs))
    for x, y in events:
        model.learn_one(x, y)
    by_class = {c: np.array([x["x"] for x, y in events if y == c]) for c in ("p", "q", "lone")}
    floor = vs * min(v.var() for v in by_class.values() if v.var() > 0)
    assert floor == pytest.approx(vs * by_class["p"].var())
    for q in (0.5, 1e6 + 0.01, 1e6):
        score = {}
        for c, v in by_class.items():
            var = max(v.var(), floor)
            score[c] = math.log((len(v) + 1) / (len(events) + 3)) - 0.5 * math.log(2 * math.pi * var) \
                - (q - v.mean()) ** 2 / (2 * var)
        top = max(score.values())
        z = sum(math.exp(s - top) for s in score.values())
        want = {c: math.exp(s - top) / z for c, s in score.items()}
        got = model.predict_proba_one({"x": q})
        for c in want:
            assert got[c] == pytest.approx(want[c], rel=1e-9, abs=1e-12), (q, c)


def test_variance_floor_falls_back_to_the_closest_class_means_and_ignores_empty_classes():
    n = np.array([[1.0, 0.0], [1.0, 2.0], [0.0, 2.0], [1.0, 0.0]])
    mean = np.array([[0.0, 0.0], [4.0, 1.0], [0.0, 1.0], [1e50, 0.0]])
    m2 = np.array([[0.0, 0.0], [0.0, 0.0], [0.0, 8.0], [0.0, 0.0]])
    # slot 0: no spread within a class: the means 0, 4 and 1e50, closest 4 apart; slot 1: class 2's variance 4
    np.testing.assert_allclose(variance_floor(n, mean, m2, 0.5), [0.5 * 16.0, 0.5 * 4.0])
    # one class only, one value: no spread at all, the smallest normal float (the feature is then unused)
    assert variance_floor(n[:1, :1], mean[:1, :1], m2[:1, :1], 0.5).tolist() == [np.finfo(float).tiny]
    # a batch of rows (the vectorised runs' shape) gives each row its own floor
    rows = variance_floor(np.stack([n, n]), np.stack([mean, mean]), np.stack([m2, m2 * 0]), 0.5)
    np.testing.assert_allclose(rows, [[8.0, 2.0], [8.0, np.finfo(float).tiny]])
    x = np.array([[2.0, np.nan]])
    assert np.isfinite(gaussian_loglik(n, mean, m2, x, 1e-9)).all()


BEYOND = [1e101, -1e200, 1e300, 10**200, float(np.finfo(float).max)]


def trained(make=NaiveBayes):
    model = make()
    for x, y in ordinary(60):
        model.learn_one({**x, "c": "u" if y == "lo" else "v"}, y)
    return model


@pytest.mark.parametrize("value", BEYOND)
@pytest.mark.parametrize("make", [NaiveBayes, lambda: AODE(numeric=MDL(warmup=10))])
def test_a_value_beyond_the_limit_is_refused_on_every_path_and_changes_nothing(make, value):
    model = trained(make)
    before = state_of(model)
    bad = {"x": value, "c": "u"}
    message = f"feature 'x': expected a number of magnitude at most 1e+100, got {value!r:.57}"
    message += "..." if len(repr(value)) > 60 else ""
    for call in (lambda: model.learn_one(bad, "lo"), lambda: model.predict_proba_one(bad),
                 lambda: model.prequential_one(bad, "lo")):
        with pytest.raises(FeatureTypeError) as err:
            call()
        assert str(err.value) == message and err.value.field == "x" and err.value.reason == "bad_feature_type"
        assert isinstance(err.value, ValueError) and isinstance(err.value, TypeError)
        assert state_of(model) == before
    # a batch: the event is refused in its place, the others learned as learn_one learns them
    xs = [x for x, _ in ordinary(20)]
    ys = [y for _, y in ordinary(20)]
    without = trained(make)
    got = model.prequential_many(xs[:7] + [bad] + xs[7:], ys[:7] + ["lo"] + ys[7:])
    assert isinstance(got[7], InvalidEventError) and str(got[7]) == message
    assert got[:7] + got[8:] == without.prequential_many(xs, ys)
    assert state_of(model) == state_of(without)
    # learn_many refuses the whole batch before learning any of it
    before = state_of(model)
    frame = pd.DataFrame([{"x": 1.0, "c": "u"}, {"x": float(value), "c": "v"}])
    with pytest.raises(FeatureTypeError, match="feature 'x': expected a number of magnitude at most 1e\\+100"):
        model.learn_many(frame, pd.Series(["lo", "hi"]))
    assert state_of(model) == before


def test_a_far_value_survives_a_snapshot_and_a_merge_exactly(tmp_path):
    """The floor comes from the moments: saved, loaded and merged models predict as the one that learned."""
    events = [({"x": 1e100}, "a")] + ordinary() + [({"x": -1e10}, "a")]
    whole, left, right = NaiveBayes(), NaiveBayes(), NaiveBayes()
    for i, (x, y) in enumerate(events):
        whole.learn_one(x, y)
        (left if i % 2 else right).learn_one(x, y)
    stream_nb.save(whole, tmp_path / "m.snb")
    loaded = stream_nb.load(tmp_path / "m.snb")
    merged = left.merge(right)
    for q in (0.0, 1.0, 4.5, 6.0, 9.0, 1e100, -1e10, 1e99):
        want = whole.predict_proba_one({"x": q})
        assert loaded.predict_proba_one({"x": q}) == want
        got = merged.predict_proba_one({"x": q})
        for c in want:
            assert got[c] == pytest.approx(want[c], rel=1e-9, abs=1e-12)
    assert whole.predict_one({"x": 1.0}) == "lo" and whole.predict_proba_one({"x": 1.0})["lo"] >= 0.9


@pytest.mark.parametrize("model", [NaiveBayes, AODE])
def test_a_feature_of_integers_refuses_a_number_its_moments_could_not_hold(model):
    """A feature inferred from integers counts its numbers as categories until a fraction turns it numeric;
    a number beyond 1e100 among them would overflow the moments then, so it is refused when it comes, as a
    numeric feature refuses it, and the model is unchanged."""
    m = model()
    m.learn_one({"a": 0}, "x")
    before = m.predict_proba_one({"a": 0})
    for far in (1e200, 10**200):
        with pytest.raises(FeatureTypeError, match="magnitude at most 1e"):
            m.learn_one({"a": far}, "y")
    assert m.predict_proba_one({"a": 0}) == before
    m.learn_one({"a": 0.5}, "x")  # the fraction turns it numeric, with no overflow (warnings are errors here)
    assert m.predict_proba_one({"a": 0.2}) == {"x": 1.0}
    with pytest.raises(FeatureTypeError, match="magnitude at most 1e"):
        model().learn_one({"b": 10**200}, "y")  # a new feature whose first value is such a number
