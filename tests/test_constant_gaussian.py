"""A Gaussian feature whose values have all been equal carries no information, on every path.

Naive Bayes gives such a feature no term (its spread is zero: there is no
variance to floor at). Two roundings used to make it look spread by a few ULPs,
and then the variance floor (the smallest normal float) made the one value
seen so far infinitely likely and every other value impossible:

* a batch (``learn_many``) took a class's mean
  as Σ w x / Σ w, which can round off the repeated value and leave a
  positive M2;
* the score pooled the class means as Σ n mean / Σ n, which rounds off the
  value even with whole weights (three times 0.1), so the pooled variance of
  the feature came out positive on the one-event path too.

The expected posteriors are the prior alone, computed here from the decayed
class counts by hand: with ``half_life`` H, the event learned last weighs 1,
the one before 2**(-1/H), and so on (age 1, 2, ...: 2**(-(age - 1)/H)); and
P(c) = (N_c + α) / (N + α C).
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd
import pytest

from stream_nb import Decay, Ignore, NaiveBayes
from stream_nb.stats import gaussian_loglik

sys.path.insert(0, "tests")
from test_running import loop  # noqa: E402  (the reference event-by-event loop)


def decayed_prior(ages_a, ages_b, half_life=None, alpha=1.0):
    """P(a) from the ages of the events of classes a and b (1: the last event learned)."""
    weigh = (lambda age: 1.0) if half_life is None else (lambda age: 2.0 ** (-(age - 1) / half_life))
    na, nb = sum(map(weigh, ages_a)), sum(map(weigh, ages_b))
    return (na + alpha) / (na + nb + 2 * alpha)


def both_paths(make, warm, stream):
    """The last result of ``stream`` (after ``warm``) from prequential_many and from the loop."""
    batched, looped = make(), make()
    batched.prequential_many([x for x, _ in warm], [y for _, y in warm])
    loop(looped, warm)
    out_b = batched.prequential_many([x for x, _ in stream], [y for _, y in stream])
    out_l = loop(looped, stream)
    return out_b[-1], out_l[-1]


@pytest.mark.parametrize("detector", ["ddm", None])
def test_equal_values_under_decay_leave_the_prior(detector):
    """Class a saw weight 0.03 twice, class b never: a weight of 0.0 changes nothing (the prior)."""
    warm = [({}, "a")]
    stream = [({}, "a")] * 8 + [
        ({"weight": 0.03}, "a"), ({}, "a"), ({"weight": 0.03}, "a"), ({}, "b"), ({"weight": 0.0}, "a"),
    ]
    expected = decayed_prior(ages_a=range(2, 14), ages_b=[1], half_life=5.0)
    assert expected == pytest.approx(0.763337980916, abs=1e-12)
    for label, proba in both_paths(
        lambda: NaiveBayes(drift_detector=detector, forgetting=Decay(half_life=5.0), missing=Ignore()), warm, stream
    ):
        assert label == "a"
        assert proba["a"] == pytest.approx(expected, rel=1e-12)
        assert proba["b"] == pytest.approx(1 - expected, rel=1e-12)


@pytest.mark.parametrize("half_life", [5.0, None])
@pytest.mark.parametrize("value, repeats", [(0.03, 3), (0.1, 3), (0.7, 6)])
def test_a_repeated_value_in_one_class_leaves_the_prior(half_life, value, repeats):
    """The same value ``repeats`` times in class a, then one event of b with no value: 0.0 scores as the prior."""
    warm = [({}, "a")]
    stream = [({"weight": value}, "a")] * repeats + [({}, "b"), ({"weight": 0.0}, "a")]
    expected = decayed_prior(ages_a=range(2, repeats + 3), ages_b=[1], half_life=half_life)
    forgetting = None if half_life is None else Decay(half_life=half_life)
    for label, proba in both_paths(lambda: NaiveBayes(forgetting=forgetting, missing=Ignore()), warm, stream):
        assert label == "a"
        assert proba["a"] == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("half_life, value, repeats", [(None, 0.1, 3), (None, 0.7, 6), (5.0, 0.03, 5)])
def test_learn_many_keeps_a_repeated_value_exact(half_life, value, repeats):
    """A batch of equal values: mean exactly the value and M2 exactly 0, as learned one at a time."""
    xs = [{"weight": value}] * repeats
    forgetting = None if half_life is None else Decay(half_life=half_life)
    batch, single = NaiveBayes(forgetting=forgetting), NaiveBayes(forgetting=forgetting)
    batch.learn_many(pd.DataFrame(xs), pd.Series(["a"] * repeats))
    for x in xs:
        single.learn_one(x, "a")
    for model in (batch, single):
        s = model._stats
        assert s.g_mean[0, 0] == value
        assert s.g_m2[0, 0] == 0.0


@pytest.mark.parametrize("n_a", [4.576325603875541, 3.0, 9.278031643091587])
def test_one_mean_pools_to_itself(n_a):
    """gaussian_loglik: one class seen with one value (any weight), another class unseen: no term at all."""
    n = np.array([[n_a], [0.0]])
    mean = np.array([[0.1], [0.0]])
    m2 = np.zeros((2, 1))
    for v in (0.1, 0.0, 1e6):
        assert gaussian_loglik(n, mean, m2, np.array([v]), 1e-9).tolist() == [0.0, 0.0]
