"""The one-event river loop through the compiled kernels (``predict_one``, ``predict_proba_one``, then
``learn_one`` of the same dict) against ``prequential_many`` and against the same models kept in numpy.

The numpy reference is each model with its kernels switched off: it scores one event with the numpy
formulas (naive Bayes's ``_naive_jll``, AODE's and TAN's of ``tests/table_reference.py``, and TAN's
``_exact_jll``) and counts it with :meth:`Stats.add`. The stream brings new values and
new classes mid-stream, and events with missing values (learned by EM in all three).
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from stream_nb import AODE, TAN, NaiveBayes, Tree
from stream_nb.learners import BayesClassifier
from stream_nb.learners._decision import logsumexp
from table_reference import spode_terms, tree_jll


def _stream(n=600, seed=3, numeric=False):
    """Categorical events whose later part brings new values, a new class and a new feature, some with
    values missing (None or an absent key); with ``numeric`` a float feature too."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        late = i >= n // 2
        y = rng.choice("abcd" if late else "abc")
        x = {f"f{j}": rng.choice("pqrs" if late and j < 2 else "pqr") for j in range(6)}
        x["f0"] = y if rng.random() < 0.6 else x["f0"]  # something to learn
        if late:
            x["g"] = rng.choice("uv")
        if numeric:
            x["t"] = rng.gauss({"a": 0.0, "b": 1.0, "c": 2.0, "d": 3.0}[y], 1.0)
        if rng.random() < 0.1:
            x["f3"] = None
        if rng.random() < 0.1:
            del x["f4"]
        out.append((x, y))
    return out


class NumpyNaiveBayes(NaiveBayes):
    """Naive Bayes without its kernels."""

    def _jll(self, enc):
        return self._naive_jll(enc)

    _posterior = BayesClassifier._posterior

    def _count(self, enc, c, w):
        self._stats.add(enc, c, w)


class NumpyAODE(AODE):
    """AODE without its kernels: every super-parent's terms in numpy (``spode_terms``), the textbook sum."""

    def _kernel_dense(self):
        return False

    def _jll(self, enc):
        s = self._stats
        if len(enc.cols) == 0 or not s.n_classes:
            return self._naive_jll(enc)
        terms, parents = spode_terms(s, self._alpha, enc.cols, enc.feats, self.m * self._inflation)
        if not parents.any():
            return self._naive_jll(enc)
        return logsumexp(terms[:, parents], axis=1)

    def _count(self, enc, c, w):
        self._stats.add(enc, c, w)


class NumpyTAN(TAN):
    """TAN without its kernels: the tree read in numpy, as on sparse pair tables."""

    def _jll(self, enc):
        s = self._stats
        if not len(enc.cols) or not s.n_classes or self._root < 0:
            return self._naive_jll(enc)
        ppos = self._parent_columns(enc.feats)
        if (ppos < -1).any():
            colmap = np.full(len(s.features), -1, dtype=np.int64)
            colmap[enc.feats] = enc.cols
            return self._exact_jll(colmap, self._parents())
        return tree_jll(self, enc.cols[None, :], enc.feats, ppos)[0]

    _posterior = BayesClassifier._posterior

    def _count(self, enc, c, w):
        self._stats.add(enc, c, w)


MODELS = {
    "NaiveBayes": (NaiveBayes, NumpyNaiveBayes, {}),
    "AODE": (AODE, NumpyAODE, {}),
    "TAN": (TAN, NumpyTAN, {"search": Tree(rebuild_every=100)}),
}


def _river_loop(model, events):
    """What a river user writes: predict, then learn the same dict."""
    out = []
    for x, y in events:
        out.append((model.predict_one(x), model.predict_proba_one(x)))
        model.learn_one(x, y)
    return out


def _same(a, b):
    (pa, qa), (pb, qb) = a, b
    assert pa == pb
    assert list(qa) == list(qb)
    for k in qa:
        assert math.isclose(qa[k], qb[k], rel_tol=1e-9, abs_tol=1e-300), (k, qa[k], qb[k])


@pytest.mark.parametrize("numeric", [False, True], ids=["categorical", "numeric"])
@pytest.mark.parametrize("name", list(MODELS))
def test_the_one_event_loop_equals_prequential_many_and_the_numpy_reference(name, numeric):
    kernel, reference, kw = MODELS[name]
    events = _stream(numeric=numeric)
    xs, ys = [x for x, _ in events], [y for _, y in events]
    one, many, ref = kernel(**kw), kernel(**kw), reference(**kw)
    loop = _river_loop(one, events)
    for got, want in zip(loop, many.prequential_many(xs, ys)):
        _same(got, want)
    for got, want in zip(loop, _river_loop(ref, events)):
        _same(got, want)
    for other in (many, ref):
        assert other.classes == one.classes
        arrays, _ = one.state()
        for key, value in other.state()[0].items():
            np.testing.assert_allclose(arrays[key], value, rtol=1e-9, err_msg=key)
    assert one.predict_proba_one(xs[-1]) == pytest.approx(ref.predict_proba_one(xs[-1]), rel=1e-9)


@pytest.mark.parametrize("name", list(MODELS))
def test_the_one_event_loop_goes_through_the_kernels(name, monkeypatch):
    """learn_one counts a complete event in the compiled kernel, not with Stats.add."""
    model = MODELS[name][0](**MODELS[name][2])
    events = _stream(n=200)
    complete = [(x, y) for x, y in events if len(x) == 6 and None not in x.values()]
    _river_loop(model, complete[:50])

    def refused(*args, **kwargs):
        raise AssertionError("a complete event was counted by Stats.add")

    monkeypatch.setattr(type(model._stats), "add", refused)
    before = model.n_learned
    _river_loop(model, complete[50:60])
    assert model.n_learned == before + 10


@pytest.mark.parametrize("name", ["AODE", "TAN"])
def test_the_fine_layer_is_counted_in_the_same_kernel_call(name, monkeypatch):
    """With no feature binned the fine layer shares the pair tables of the first; learn_one counts its
    classes, values and features in the kernel call that counts the event, not with the fine layer's add."""
    model = MODELS[name][0](**MODELS[name][2])
    complete = [(x, y) for x, y in _stream(n=200) if len(x) == 6 and None not in x.values()]
    _river_loop(model, complete[:50])
    fine = model._stats.fine
    assert model._stats.shared_pairs
    before = fine.class_count.copy(), fine.value_count.copy()

    def refused(*args, **kwargs):
        raise AssertionError("a complete event was counted in the fine layer by its numpy add")

    monkeypatch.setattr(type(fine), "add", refused)
    _river_loop(model, complete[50:60])
    assert fine.class_count.sum() == before[0].sum() + 10
    assert fine.value_count.sum() == before[1].sum() + 10 * 6


@pytest.mark.parametrize("name", ["AODE", "TAN"])
def test_a_run_counts_the_fine_layer_it_shares_pairs_with_in_compiled_code(name, monkeypatch):
    """With no feature binned a run's fine layer (pairs shared) counts its classes, values and features by the
    compiled row count, not with the fine layer's numpy add_many, and holds what the one-event loop counts."""
    model, loop = MODELS[name][0](**MODELS[name][2]), MODELS[name][0](**MODELS[name][2])
    complete = [(x, y) for x, y in _stream(n=300) if len(x) == 6 and None not in x.values()]
    _river_loop(model, complete[:50])
    fine = model._stats.fine
    assert model._stats.shared_pairs

    def refused(*args, **kwargs):
        raise AssertionError("a run was counted in the fine layer by its numpy add_many")

    monkeypatch.setattr(type(fine), "add_many", refused)
    model.prequential_many([x for x, _ in complete[50:]], [y for _, y in complete[50:]])
    _river_loop(loop, complete)
    assert model._stats.shared_pairs
    for k in ("class_count", "value_count", "feat_count"):
        np.testing.assert_array_equal(getattr(fine, k), getattr(loop._stats.fine, k), err_msg=k)
        np.testing.assert_array_equal(getattr(fine, k), getattr(model._stats, k), err_msg=k)


@pytest.mark.parametrize("numeric", [False, True], ids=["categorical", "numeric"])
def test_aode_scores_from_its_kept_denominators_to_the_last_digit(numeric):
    """AODE keeps the product of a complete event's denominators per class and value: a complete event
    scored from it in the one-event loop gets the probabilities of the same model scoring it without them
    (as one restored from its state does) to the last digit; on categorical events, prequential_many's runs
    (which score from it too) give the loop's to the last digit (with a binned feature: to 1e-9, above)."""
    events = _stream(numeric=numeric)
    first = AODE()
    first.prequential_many([x for x, _ in events], [y for _, y in events])
    order = first._stats.features
    # each dict's keys in the store's order: a run multiplies in that order, one event in its dict's
    events = [({k: x[k] for k in order if k in x}, y) for x, y in events]
    xs, ys = [x for x, _ in events], [y for _, y in events]
    if not numeric:
        assert _river_loop(AODE(), events) == [r[:2] for r in AODE().prequential_many(xs, ys)]
    model, read = AODE(), 0
    for i, (x, y) in enumerate(events):
        if i % 25 == 24:
            enc = model._stats.schema.encode(x)
            kept = model.__dict__.get("_aone") is not None and model._dens_hold(enc.feats, model._alpha) is not None
            read += kept
            bare = AODE.from_state(*model.state())  # keeps no denominators
            assert bare.__dict__.get("_kdens") is None
            assert model.predict_proba_one(x) == bare.predict_proba_one(x), i
            assert model.predict_one(x) == bare.predict_one(x)
        model.predict_one(x)
        model.learn_one(x, y)
    assert read >= 3  # complete events scored from the kept denominators (EM counts the others in numpy)


def test_an_event_of_the_usual_shape_with_a_float_still_gives_the_fine_layer_its_pair_tables():
    """A two-layer store keeps its answer to whether an event may bin a feature for the usual event's shape
    (its keys and its values' types): an event with the same keys and a float where an integer was is
    another shape, read again, and the fine layer takes its own pair tables before it learns that event."""
    model = AODE()
    complete = [(dict(x, n=i % 3), y) for i, (x, y) in enumerate(_stream(n=200))
                if len(x) == 6 and None not in x.values()]
    _river_loop(model, complete[:50])
    s = model._stats
    assert s.shared_pairs and not s.may_bin(complete[50][0])
    x = dict(complete[50][0], n=1.5)
    assert s.may_bin(x)
    model.predict_one(x)
    model.learn_one(x, complete[50][1])
    assert not s.shared_pairs
