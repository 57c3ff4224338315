"""The Gaussian moments part of the count store, alone, against the moments computed from the values."""

import numpy as np
import pytest
from scipy.stats import norm

from stream_nb.stats.tables import GaussianMoments


def brute(values, weights):
    """Weight, weighted mean and weighted sum of squared deviations of one class's values."""
    v, w = np.asarray(values, float), np.asarray(weights, float)
    n = w.sum()
    mean = (w * v).sum() / n
    return n, mean, (w * (v - mean) ** 2).sum()


def events(seed=0, rows=40):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 3, rows), rng.normal(5.0, 2.0, (rows, 2)), rng.uniform(0.5, 2.0, rows)


def per_class(yc, X, w, C=3):
    return {(c, g): brute(X[yc == c, g], w[yc == c]) for c in range(C) for g in range(X.shape[1])}


def moments_of(m, C=3, G=2):
    return {(c, g): (m.n[c, g], m.mean[c, g], m.m2[c, g]) for c in range(C) for g in range(G)}


def test_one_event_at_a_time_and_a_batch_both_give_the_moments_of_the_values():
    yc, X, w = events()
    one, rows = GaussianMoments(3, 2), GaussianMoments(3, 2)
    for c, x, wi in zip(yc, X, w):
        one.add(int(c), float(wi), np.array([0, 1]), x)
    rows.add_rows(3, X, [0, 1], yc, w)
    expected = per_class(yc, X, w)
    for got in (moments_of(one), moments_of(rows)):
        for key, value in expected.items():
            assert got[key] == pytest.approx(value, rel=1e-12)


def test_merge_of_two_halves_and_taking_one_back():
    yc, X, w = events(1)
    a, b = GaussianMoments(3, 2), GaussianMoments(3, 2)
    a.add_rows(3, X[:25], [0, 1], yc[:25], w[:25])
    b.add_rows(3, X[25:], [0, 1], yc[25:], w[25:])
    for g in range(2):
        present = np.flatnonzero(b.n[:, g] > 0)
        a.merge(present, g, b.n[present, g], b.mean[present, g], b.m2[present, g])
    for key, value in per_class(yc, X, w).items():
        assert moments_of(a)[key] == pytest.approx(value, rel=1e-12)
    a.add_rows(3, X[25:], [0, 1], yc[25:], w[25:], remove=True)
    for key, value in per_class(yc[:25], X[:25], w[:25]).items():
        assert moments_of(a)[key] == pytest.approx(value, rel=1e-9)


def test_removing_every_event_leaves_exact_zeros():
    yc, X, w = events(2, rows=6)
    m = GaussianMoments(3, 2)
    for c, x, wi in zip(yc, X, w):
        m.add(int(c), float(wi), np.array([0, 1]), x)
    for c, x, wi in reversed(list(zip(yc, X, w))):
        m.remove(int(c), float(wi), np.array([0, 1]), x)
    assert not m.n.any() and not m.mean.any() and not m.m2.any()


def test_set_from_counts_is_the_moments_of_the_counted_values():
    counts = np.array([[2.0, 0.0, 1.0], [0.0, 3.0, 1.0]])
    keys = np.array([1.0, 4.0, 10.0])
    m = GaussianMoments(2, 1)
    m.set_from_counts(0, counts, keys)
    assert (m.n[0, 0], m.mean[0, 0], m.m2[0, 0]) == pytest.approx(brute([1, 1, 10], [1, 1, 1]))
    assert (m.n[1, 0], m.mean[1, 0], m.m2[1, 0]) == pytest.approx(brute([4, 4, 4, 10], [1, 1, 1, 1]))


def test_mixture_and_log_density_by_hand():
    m = GaussianMoments(2, 1)
    for x in (0.0, 2.0):
        m.add(0, 1.0, np.array([0]), np.array([x]))  # mean 1, variance 1
    for x in (9.0, 11.0, 10.0):
        m.add(1, 1.0, np.array([0]), np.array([x]))  # mean 10, variance 2/3
    mean, std = m.mixture(2, 0, np.array([0.5, 0.5]))
    assert mean == pytest.approx(5.5)
    assert std == pytest.approx(np.sqrt(0.5 * (1 + 4.5**2) + 0.5 * (2 / 3 + 4.5**2)))
    ll = m.loglik(2, np.array([0]), np.array([3.0]), 1e-9)
    reference = norm.logpdf(3.0, [1.0, 10.0], np.sqrt([1.0, 2 / 3]))
    assert ll[0] - ll[1] == pytest.approx(reference[0] - reference[1])  # up to the same constant per event


def test_resize_keeps_the_moments_in_use():
    m = GaussianMoments(1, 1)
    m.add(0, 2.0, np.array([0]), np.array([3.0]))
    m.resize(4, 3, 1, 1)
    assert m.n.shape == (4, 3) and (m.n[0, 0], m.mean[0, 0]) == (2.0, 3.0) and m.n.sum() == 2.0


def test_scaling_weighs_every_value_by_the_factor_and_keeps_the_means():
    yc, X, w = events(4)
    m = GaussianMoments(3, 2)
    m.add_rows(3, X, [0, 1], yc, w)
    m.scale(0.3)
    for key, value in per_class(yc, X, w * 0.3).items():
        assert moments_of(m)[key] == pytest.approx(value, rel=1e-12)


def test_subtracting_a_part_by_its_moments_leaves_the_moments_of_the_rest():
    yc, X, w = events(5, rows=60)
    yc[40:] = np.minimum(yc[40:], 1)  # the part: two classes, a part's moments over the first ones only
    m, part = GaussianMoments(3, 2), GaussianMoments(3, 2)
    m.add_rows(3, X, [0, 1], yc, w)
    part.add_rows(3, X[40:], [0, 1], yc[40:], w[40:])
    m.subtract(part.n[:2].copy(), part.mean[:2].copy(), part.m2[:2].copy())
    for key, value in per_class(yc[:40], X[:40], w[:40]).items():
        assert moments_of(m)[key] == pytest.approx(value, rel=1e-9)
    whole = GaussianMoments(3, 2)  # taking out everything leaves exact zeros
    whole.add_rows(3, X, [0, 1], yc, w)
    whole.subtract(whole.n.copy(), whole.mean.copy(), whole.m2.copy())
    assert not whole.n.any() and not whole.mean.any() and not whole.m2.any()


def test_setting_the_moments_replaces_every_cell():
    yc, X, w = events(6)
    m = GaussianMoments(3, 2)
    m.add_rows(3, X, [0, 1], yc, w)
    n, mean, m2 = np.array([[2.0], [3.0]]), np.array([[1.5], [-1.0]]), np.array([[0.5], [4.0]])
    m.set_to(n, mean, m2)
    assert m.n.tolist() == [[2.0, 0.0], [3.0, 0.0], [0.0, 0.0]]
    assert m.mean.tolist() == [[1.5, 0.0], [-1.0, 0.0], [0.0, 0.0]]
    assert m.m2.tolist() == [[0.5, 0.0], [4.0, 0.0], [0.0, 0.0]]
    m.set_to(None, None, None)
    assert not m.n.any() and not m.mean.any() and not m.m2.any()
