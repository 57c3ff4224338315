"""bench/wide.py's planted streams: the network :func:`planted_parents` reports is the one the events come from.

Checked on the events themselves: each attribute shares the most information with its reported parent among
the attributes before it, and says nothing of the class given it (the plug-in G-test of X_j against the class
within each value of its parent does not reject independence), while the attributes the class drives do.
"""

from __future__ import annotations


import numpy as np
from scipy.stats import chi2

from scripts import load_script


wide = load_script("bench/wide.py", "bench_wide")


def _mi(a, b):
    t = np.zeros((a.max() + 1, b.max() + 1))
    np.add.at(t, (a, b), 1)
    p = t / t.sum()
    pos = p > 0
    return float((p[pos] * np.log(p[pos] / np.outer(p.sum(1), p.sum(0))[pos])).sum())


def _class_given(x, y, z):
    """log p-value of the G-test of x against y within each value of z (df: values held in each stratum)."""
    g = df = 0.0
    for u in np.unique(z):
        t = np.zeros((x.max() + 1, y.max() + 1))
        np.add.at(t, (x[z == u], y[z == u]), 1)
        t = t[t.sum(1) > 0][:, t.sum(0) > 0]
        e = np.outer(t.sum(1), t.sum(0)) / t.sum()
        pos = t > 0
        g += 2.0 * float((t[pos] * np.log(t[pos] / e[pos])).sum())
        df += (t.shape[0] - 1) * (t.shape[1] - 1)
    return chi2.logsf(g, df) if df else 0.0


def test_the_reported_parents_are_the_network_the_events_come_from():
    X, y, _ = wide.planted("cat200", 20_000, 0)
    X = X.astype(np.int64)
    parents = wide.planted_parents("cat200", 0)
    assert len(parents) == X.shape[1] and parents[:4] == [(), (0,), (1,), (1, 2)]
    for j in range(4, 40):
        (p,) = parents[j]
        assert 0 <= p < j
        mi = [_mi(X[:, j], X[:, g]) for g in range(j)]
        assert int(np.argmax(mi)) == p, j
        assert _class_given(X[:, j], y, X[:, p]) > np.log(1e-4), j  # nothing of the class given its parent
    for j in (1, 2):  # the class drives these: they say it given their parent too
        assert _class_given(X[:, j], y, X[:, parents[j][0]]) < np.log(1e-10), j
