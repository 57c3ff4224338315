"""The contracts between the learners' template, the count store and their callers.

- a model must define the abstract hooks of :class:`BayesClassifier` (no silent naive-Bayes default);
- the prequential step encodes each event once and hands that encoding to learning explicitly;
- one label rule: the engine's, evaluate's and the learners' (``None`` or NaN: no label).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from river import naive_bayes

import stream_nb
from stream_nb import AODE, KDB, MDL, SPODE, TAN, EqualFrequency, Gaussian, NaiveBayes
from stream_nb.engine import EventDecoder, validate_label
from stream_nb.exceptions import InvalidEventError
from stream_nb.learners import BayesClassifier, prequential_step
from stream_nb.stats import Stats, TwoLayerStats

MODELS = [NaiveBayes, AODE, TAN, SPODE, lambda: KDB(k=1)]


def test_a_model_without_its_hooks_cannot_be_built():
    class Half(BayesClassifier):
        def __init__(self, alpha=1.0, types=None, loss=None, missing=None, memory_budget=None):
            self.alpha, self.types, self.loss, self.missing = alpha, types, loss, missing
            self.memory_budget = memory_budget
            self._setup(pairs=False)

        def _jll(self, enc):
            return self._naive_jll(enc)

    with pytest.raises(TypeError, match="abstract") as info:
        Half()
    for hook in ("_jll_many", "_add_expected", "_missing_posterior"):
        assert hook in str(info.value)


class CountingDict(dict):
    """An event that counts how often it is read: its items or values walked, or its feature "a" looked up
    (an encoder reads every feature once a pass, by key or by walking the items)."""

    reads = 0

    def items(self):
        CountingDict.reads += 1
        return super().items()

    def values(self):
        CountingDict.reads += 1
        return super().values()

    def __getitem__(self, key):
        CountingDict.reads += key == "a"
        return super().__getitem__(key)


@pytest.mark.parametrize("make", MODELS)
@pytest.mark.parametrize("discretiser", ["equal_frequency", "mdl"])
def test_the_prequential_step_reads_a_known_event_once(make, discretiser):
    model = make()
    if not isinstance(model.numeric, Gaussian):  # the discretising models
        model = model.clone({"numeric": MDL() if discretiser == "mdl" else EqualFrequency()})
    two_layers = isinstance(model._stats, TwoLayerStats)  # the discretising models' default
    for x, y in [({"a": "x", "b": "y"}, "p"), ({"a": "y", "b": "x"}, "q")] * 3:
        model.learn_one(x, y)
    n = model.n_learned
    CountingDict.reads = 0
    # AODE, SPODE and KDB go one event at a time; NaiveBayes and TAN too for a single event
    result = model.prequential_many([CountingDict(a="x", b="y")], ["p"])
    assert not isinstance(result[0], Exception) and result[0][0] == "p"
    assert model.n_learned == n + 1
    # encoded for prediction, and that encoding learned; the two-layer store reads the event's values once
    # more before it is learned, to know whether it may bin a feature (a float value)
    assert CountingDict.reads == (2 if two_layers else 1)


def test_learning_never_reuses_an_encoding_made_before_the_schema_changed():
    s = Stats(pairs=True, numeric="bins")
    s.learn_one({"a": "x"}, "p")
    stale = s.encode({"a": "x", "b": "new"})  # "b" is unknown: not reusable
    assert stale.epoch == -1
    known = s.encode({"a": "x"})
    assert known.epoch == s.epoch
    s.learn_one({"a": "y"}, "q")  # a new value and class: the schema changed
    enc, c = s.encode_labeled({"a": "x"}, "p", known)
    assert enc is not known and c == 0
    np.testing.assert_array_equal(enc.cols, s.encode({"a": "x"}).cols)
    enc, _ = s.encode_labeled({"a": "x"}, "p", s.encode({"a": "x"}))
    assert enc.cols.tolist() == known.cols.tolist()


def test_the_engine_and_the_learners_share_one_label_rule():
    assert validate_label is stream_nb.stats.validate_label
    assert EventDecoder().decode(b'{"a": "x", "label": 2.0}').label == 2
    # None and NaN both mean "no label", for an event and for a model
    assert validate_label(None) is None and validate_label(float("nan")) is None
    store = Stats(pairs=False, numeric="gaussian")
    for missing in (None, float("nan"), np.float64("nan")):
        with pytest.raises(InvalidEventError, match="the label is missing") as info:
            store.check_label(missing)
        assert info.value.reason == "bad_label"
    with pytest.raises(InvalidEventError, match="must be a string, an integer or a boolean") as info:
        validate_label([1])
    assert info.value.reason == "bad_label"


@pytest.mark.parametrize("make", MODELS)
def test_a_nan_label_is_no_label_in_the_prequential_loop(make):
    with_none, with_nan = make(), make()
    stream = [({"a": "x"}, "p"), ({"a": "y"}, "q"), ({"a": "x"}, None), ({"a": "y"}, "q")]
    got_none = with_none.prequential_many([x for x, _ in stream], [y for _, y in stream])
    got_nan = with_nan.prequential_many([x for x, _ in stream],
                                        [float("nan") if y is None else y for _, y in stream])
    assert got_nan == got_none
    assert with_nan.n_learned == with_none.n_learned == 3


def test_the_step_of_any_river_classifier():
    model = naive_bayes.MultinomialNB()
    first = prequential_step(model, {"w": 2}, "a")
    assert first.learned and first.prediction is None
    second = prequential_step(model, {"w": 1}, None)
    assert second.prediction == "a" and not second.learned
    assert math.isclose(sum(second.proba.values()), 1.0)


def test_the_public_face_is_exactly_its_names():
    from stream_nb import AODE, KDB, SPODE, TAN, NaiveBayes, exceptions, load, save  # noqa: F401 - the documented import

    assert sorted(stream_nb.__all__) == sorted(["NaiveBayes", "AODE", "TAN", "SPODE", "KDB", "exceptions", "save", "load",
                                                # the options (stream_nb.options)
                                                "Window", "Decay", "Gaussian", "MDL", "EqualFrequency", "Edges", "EM",
                                                "Ignore", "Tree", "SuperParent", "Parents", "SuperParents"])
    assert "annotations" not in vars(stream_nb)  # no __future__ import leaking into the namespace
