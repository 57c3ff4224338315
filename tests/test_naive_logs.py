"""Naive Bayes's table of log(n + a): a count's log read from it is the one ``math.log`` gives.

The kernel refreshes ``lnum`` = log(|D_c,v| + a) from the table where it holds the whole count, and
logs the count itself otherwise (a fraction, a count past the table's end, another smoothing). Here
:func:`~stream_nb.kernels._naive.naive_tables` fills ``lnum`` from counts of each kind, checked cell by
cell against ``math.log``; then a model that learns past the table's first length, and with fractional
weights, predicts as the same counts logged directly.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from stream_nb import NaiveBayes
from stream_nb.kernels import Addresses, compiled
from stream_nb.learners.naive_bayes import _LOG_TABLE


def _tables(vc, a, table_a, length):
    C, V = vc.shape
    F = 1
    logs = np.empty(length + 2)
    compiled().naive_logs(logs, table_a)
    arrays = (vc.sum(1), vc, np.full((C, F), 5.0), np.array([V], dtype=np.int64), vc.copy(), np.zeros((C, F)),
              np.zeros((C, 1)), np.zeros((C, 1)), np.zeros((C, 1)), np.empty((V, C)), np.empty((F, C)), logs)
    compiled().naive_tables(Addresses(None, arrays).table, a)
    return arrays[9], logs


@pytest.mark.parametrize("a", [1.0, 0.5, 1e-3])
def test_table_logs_are_math_log(a):
    counts = [0.0, 1.0, 2.0, 7.0, 15.0, 16.0, 17.0, 40.0, 2.5, 0.25, 1e6, -0.0]
    vc = np.array([counts, counts[::-1]])
    lnum, logs = _tables(vc, a, a, 16)
    assert logs[0] == a and [logs[2 + i] for i in range(16)] == [math.log(i + a) for i in range(16)]
    for c in range(2):
        for v, n in enumerate(vc[c]):
            assert lnum[v, c] == math.log(n + a), (c, v, n)
    assert logs[1] == 1e6  # the largest whole count past the end, so that the model makes it longer


def test_table_of_another_smoothing_is_not_read():
    vc = np.array([[3.0, 4.0]])
    lnum, logs = _tables(vc, 1.0, 0.5, 16)
    assert lnum[:, 0].tolist() == [math.log(3.0 + 1.0), math.log(4.0 + 1.0)]
    assert logs[1] == 0.0


def _direct_proba(model, x):
    """The posterior from the model's counts, each logged by ``math.log`` (naive Bayes, Lidstone)."""
    s = model._stats
    a, C = model.alpha, s.n_classes
    cc = s.class_count[:C]
    jll = []
    for c in range(C):
        t = math.log(cc[c] + a) - math.log(cc.sum() + a * C)
        for f, name in enumerate(s.schema.features):
            col = s.schema.values[f][x[name]]
            t += math.log(s.value_count[c, col] + a) - math.log(s.feat_count[c, f] + a * s.n_values[f])
        jll.append(t)
    m = max(jll)
    z = sum(math.exp(t - m) for t in jll)
    return {k: math.exp(t - m) / z for k, t in zip(s.classes, jll)}


def test_a_model_past_the_first_table_predicts_from_its_counts():
    rng = np.random.default_rng(5)
    n = _LOG_TABLE[0] * 3
    xs = [{"a": int(rng.integers(2)), "b": int(rng.integers(3))} for _ in range(n)]
    ys = [int(x["a"] + rng.integers(2) > 0) for x in xs]
    model = NaiveBayes()
    model.prequential_many(xs, ys)
    for x, y in zip(xs[:200], ys[:200]):
        model.learn_one(x, y, 0.75 if x["b"] == 1 else 1.0)  # fractional counts: logged, not read
    assert len(model._log_table[1]) > _LOG_TABLE[0] + 2  # made longer once a count passed its end
    for x in xs[:20]:
        got, want = model.predict_proba_one(x), _direct_proba(model, x)
        assert got.keys() == want.keys()
        assert all(got[k] == pytest.approx(want[k], rel=1e-12) for k in got)
