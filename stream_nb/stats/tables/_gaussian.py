"""Gaussian numeric features: per-class running moments and their log-density.

In ``numeric="gaussian"`` stores (naive Bayes) each numeric feature keeps, per
class, its weight, mean and sum of squared deviations (``g_n``, ``g_mean``,
``g_m2``): a weighted Welford update per event, the exact pairwise formula of
Chan, Golub and LeVeque for batches and merges.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["GaussianMoments", "gaussian_loglik", "moments_rest", "variance_floor"]

# a class whose weight falls to this (relative) when rows are taken out holds none: its moments are zero
_EMPTY = 1e-9
_TINY = np.finfo(float).tiny
_ROOT_MAX = math.sqrt(np.finfo(float).max)


def gaussian_loglik(n, mean, m2, x, var_smoothing: float) -> np.ndarray:
    """Per-class Gaussian log-density of numeric values from their moments.

    ``n``, ``mean``, ``m2`` are the count, mean and sum of squared deviations
    per class and feature, shape (..., C, slots); ``x`` the values, (..., slots),
    NaN where missing; the result is (..., C) summed over the slots.

    The variance of feature i in class c is the maximum-likelihood variance,
    floored at ``var_smoothing`` times the feature's *spread* (:func:`variance_floor`):
    the smallest positive variance within one class. A class that never saw
    the feature uses the all-class Gaussian. A feature whose values have all
    been equal so far carries no information and contributes nothing, as does
    a missing value.

    Returned values are log-densities up to a constant per event (the same for
    every class), which is all a posterior needs: the quadratic term is shifted
    by its minimum over classes, so that a value far out in the tails leaves
    the closest class finite instead of overflowing every class to -inf.
    """
    tot = n.sum(-2)
    safe_tot = np.where(tot > 0, tot, 1.0)
    seen = n > 0
    # around a shift K (the largest class mean): classes with one mean pool to that mean exactly, so a
    # feature whose values are all equal has a pooled variance of exactly 0 whatever the weights
    K = np.where(seen, mean, -np.inf).max(-2)
    K = np.where(np.isfinite(K), K, 0.0)
    pooled_mean = K + (n * np.where(seen, mean - K[..., None, :], 0.0)).sum(-2) / safe_tot
    # values within ±NUMERIC_LIMIT (1e100) and weights within MAX_COUNT (1e100): every term stays a float
    pooled_var = (m2 + n * (mean - pooled_mean[..., None, :]) ** 2).sum(-2) / safe_tot
    within = m2 / np.where(seen, n, 1.0)  # 0 where not seen: the store keeps an empty class's moments at 0
    var = np.where(seen, within, pooled_var[..., None, :])
    var = np.maximum(var, _floor(within, seen, mean, var_smoothing)[..., None, :])
    mu = np.where(seen, mean, pooled_mean[..., None, :])
    use = (pooled_var > 0) & ~np.isnan(x)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        q = (x[..., None, :] - mu) ** 2 / var
        q = q - q.min(-2, keepdims=True)
        ll = -0.5 * (np.log(2 * np.pi * var) + q)
    return np.where(use[..., None, :], ll, 0.0).sum(-1)


def variance_floor(n, mean, m2, var_smoothing: float) -> np.ndarray:
    """The least variance of a Gaussian feature in any class, (..., slots) from moments (..., C, slots).

    ``var_smoothing`` times the feature's spread: the smallest positive
    within-class variance ``m2 / n``; where no class has one yet (each class
    seen once, or only ever one value), the smallest positive squared distance
    between two class means. A minimum, not the variance over all classes:
    one far value (in a class of its own, or in one class among others) cannot
    raise it, where it would raise the pooled variance by its square and
    swamp every class. It is also at least the smallest normal float: a
    variance of values around 1e-150 underflows to 0, and 0/0 would turn the
    posterior into NaN. Like the moments, it is a function of the additive
    sufficient statistics, so merges, unlearning, forgetting and snapshots
    give the same floor as learning the events.

    >>> n = np.array([[3.0], [1.0], [2.0]])
    >>> mean, m2 = np.array([[0.0], [1e10], [5.0]]), np.array([[6.0], [0.0], [1.0]])
    >>> variance_floor(n, mean, m2, 0.1)  # class 2's variance 0.5; the lone far value adds nothing
    array([0.05])
    >>> variance_floor(n, mean, np.zeros((3, 1)), 0.1)  # no spread within a class: the closest means, 0 and 5
    array([2.5])
    """
    seen = n > 0
    return _floor(np.where(seen, m2, 0.0) / np.where(seen, n, 1.0), seen, mean, var_smoothing)


def _floor(within, seen, mean, var_smoothing: float) -> np.ndarray:
    """:func:`variance_floor` from the within-class variances ``within`` (0 where not ``seen``)."""
    spread = np.where(within > 0, within, np.inf).min(-2)
    none = spread == np.inf
    if none.any():  # no spread within a class (rare after a few events): the closest class means
        if within.shape[-2] > 1:
            ordered = np.sort(np.where(seen, mean, np.nan), axis=-2)  # unseen classes (NaN) last
            gaps = np.diff(ordered, axis=-2)
            gap = np.where(gaps > 0, gaps, np.inf).min(-2)
            # a gap beyond the square root of the float range gives an infinite floor, as its square would
            capped = np.minimum(gap, _ROOT_MAX)
            spread = np.where(none, np.where(gap <= _ROOT_MAX, capped * capped, np.inf), spread)
        spread = np.where(spread == np.inf, 0.0, spread)  # no spread at all: the feature carries nothing
    return np.maximum(var_smoothing * spread, _TINY)


def moments_rest(n, mean, m2, nb, mb, m2b) -> tuple:
    """The rest ``(n_a, mean_a, M2_a)`` of moments ``(n, mean, M2)`` once a part ``(nb, mb, M2_b)`` is taken
    out: Chan's pairwise formula run backwards, elementwise (a part that empties a cell, to 1e-12 of its
    weight, leaves exact zeros)::

        n_a = n - n_b,   mean_a = (n mean - n_b mean_b) / n_a,
        M2_a = M2 - M2_b - (mean_b - mean_a)² n_a n_b / n

    >>> moments_rest(np.array([3.0]), np.array([3.0]), np.array([14.0]), np.array([1.0]), np.array([6.0]), np.array([0.0]))
    (array([2.]), array([1.5]), array([0.5]))
    """
    na = n - nb
    empty = na <= 1e-12 * np.maximum(n, 1.0)
    safe = np.where(empty, 1.0, na)
    ma = np.where(empty, 0.0, (n * mean - nb * mb) / safe)
    d = mb - ma
    with np.errstate(invalid="ignore", divide="ignore"):
        m2a = m2 - m2b - d * (d * (na * nb / np.where(n > 0, n, 1.0)))
    m2a = np.where(empty | np.isnan(m2a), 0.0, np.maximum(m2a, 0.0))
    return np.where(empty, 0.0, na), ma, m2a


class GaussianMoments:
    """The per-class running moments of the Gaussian features: weight ``n``, ``mean`` and sum of
    squared deviations ``m2``, each (classes, slots) with spare room, and their arithmetic.

    A part of the count store that works alone: it knows indices, not names; ``C`` is the number of
    classes in use, which its caller (the store) passes where it matters.

    Examples
    --------
    >>> m = GaussianMoments(2, 1)
    >>> for x in (1.0, 2.0, 6.0):
    ...     m.add(0, 1.0, np.array([0]), np.array([x]))
    >>> float(m.n[0, 0]), float(m.mean[0, 0]), float(m.m2[0, 0])
    (3.0, 3.0, 14.0)
    """

    def __init__(self, classes: int = 0, slots: int = 0):
        self.n, self.mean, self.m2 = (np.zeros((classes, slots)) for _ in range(3))

    def resize(self, classes: int, slots: int, C: int, G: int) -> None:
        """Arrays of ``classes`` x ``slots``, keeping the moments of the first ``C`` classes and ``G`` slots."""
        grown = [np.zeros((classes, slots)) for _ in range(3)]
        for a, b in zip(grown, (self.n, self.mean, self.m2)):
            a[:C, :G] = b[:C, :G]
        self.n, self.mean, self.m2 = grown

    def add(self, c: int, w: float, gs: np.ndarray, gx: np.ndarray) -> None:
        """Weighted Welford update of class ``c`` by the values ``gx`` of slots ``gs``."""
        n = self.n[c, gs] + w
        mean = self.mean[c, gs]
        d = gx - mean
        new_mean = mean + d * (w / n)
        self.m2[c, gs] += w * d * (gx - new_mean)
        self.mean[c, gs] = new_mean
        self.n[c, gs] = n

    def remove(self, c: int, w: float, gs: np.ndarray, gx: np.ndarray) -> None:
        """The reverse of :meth:`add`: the moments without weight ``w`` at values ``gx`` (exactly zero
        when nothing is left)."""
        n1 = self.n[c, gs]
        mean1 = self.mean[c, gs]
        n0 = n1 - w
        empty = n0 <= _EMPTY * np.maximum(1.0, n1)
        safe = np.where(empty, 1.0, n0)
        mean0 = mean1 + (mean1 - gx) * (w / safe)
        m2 = self.m2[c, gs] - w * (gx - mean0) * (gx - mean1)
        self.n[c, gs] = np.where(empty, 0.0, n0)
        self.mean[c, gs] = np.where(empty, 0.0, mean0)
        self.m2[c, gs] = np.where(empty, 0.0, np.maximum(m2, 0.0))

    def scale(self, factor: float) -> None:
        """Multiply every weight and M2 by ``factor``, the means unchanged (exponential decay)."""
        self.n[...] *= factor
        self.m2[...] *= factor

    def subtract(self, nb: np.ndarray, mb: np.ndarray, m2b: np.ndarray) -> None:
        """Take the moments ``(nb, mb, m2b)`` of a part (classes, slots), from the first classes and slots,
        out of these (:func:`moments_rest`)."""
        r = tuple(slice(0, d) for d in nb.shape)
        n, mean, m2 = self.n[r], self.mean[r], self.m2[r]
        n[...], mean[...], m2[...] = moments_rest(n, mean, m2, nb, mb, m2b)

    def set_to(self, n: np.ndarray | None, mean: np.ndarray | None, m2: np.ndarray | None) -> None:
        """Make ``(n, mean, m2)`` (each (classes, slots) from the first; None: none) the moments, every other
        cell zero."""
        for a, d in ((self.n, n), (self.mean, mean), (self.m2, m2)):
            a[...] = 0.0
            if d is not None:
                a[tuple(slice(0, k) for k in d.shape)] = d

    def load(self, C: int, slots, n: np.ndarray, mean: np.ndarray, m2: np.ndarray) -> None:
        """The moments ``(n, mean, m2)`` (C, slots) of a state read back, into the first ``C`` classes and
        ``slots`` (indices, or a slice)."""
        self.n[:C, slots], self.mean[:C, slots], self.m2[:C, slots] = n, mean, m2

    def set_from_counts(self, g: int, counts: np.ndarray, keys: np.ndarray) -> None:
        """Slot ``g``'s moments from weighted counts of values: ``counts`` (C, values) of the numbers ``keys``."""
        C = len(counts)
        n = counts.sum(1)
        mean = np.where(n > 0, counts @ keys / np.where(n > 0, n, 1.0), 0.0)
        self.n[:C, g], self.mean[:C, g] = n, mean
        self.m2[:C, g] = (counts * (keys[None, :] - mean[:, None]) ** 2).sum(1)

    def mixture(self, C: int, g: int, weights: np.ndarray) -> tuple[float, float]:
        """Mean and standard deviation of Σ_c weights[c] N(μ_c, σ²_c) for slot ``g`` over the first ``C`` classes."""
        n, mean, m2 = self.n[:C, g], self.mean[:C, g], self.m2[:C, g]
        tot = n.sum()
        if tot == 0:
            return float("nan"), float("nan")
        pooled_mean = (n * mean).sum() / tot
        pooled_var = (m2 + n * (mean - pooled_mean) ** 2).sum() / tot
        seen = n > 0
        mu = np.where(seen, mean, pooled_mean)
        var = np.where(seen, m2 / np.where(seen, n, 1.0), pooled_var)
        mix_mean = float((weights * mu).sum())
        mix_var = float((weights * (var + (mu - mix_mean) ** 2)).sum())
        return mix_mean, math.sqrt(max(mix_var, 0.0))

    def add_rows(self, C: int, G: np.ndarray, gslots, yc: np.ndarray, w: np.ndarray, remove: bool = False) -> None:
        """Add (``remove``: take back) rows of numeric values at once: ``G`` (rows, slots) the values of
        slots ``gslots`` (NaN: missing), ``yc`` each row's class (below ``C``), ``w`` its weight. Per class,
        the rows' own moments (two passes: the mean, then the deviations from it) are merged into the stored
        ones by the pairwise formula (:meth:`merge`), or taken out of them by its inverse (:meth:`unmerge`)."""
        for j, g in enumerate(gslots):
            x = G[:, j]
            ok = ~np.isnan(x)
            if not ok.any():
                continue
            c, xv, wv = yc[ok], x[ok], w[ok]
            nb = np.bincount(c, weights=wv, minlength=C)
            present = nb > 0
            # the mean around a shift K (each class's first value): equal values give exactly that value and
            # M2 0, as the one-event update does; Σ w x / Σ w may round off it and leave a spurious spread
            K = np.zeros(C)
            firsts, at = np.unique(c, return_index=True)
            K[firsts] = xv[at]
            mb = np.zeros(C)
            mb[present] = K[present] + np.bincount(c, weights=wv * (xv - K[c]), minlength=C)[present] / nb[present]
            m2b = np.bincount(c, weights=wv * (xv - mb[c]) ** 2, minlength=C)
            idx = np.flatnonzero(present)
            (self.unmerge if remove else self.merge)(idx, g, nb[idx], mb[idx], m2b[idx])

    def unmerge(self, cls, g, nb, mb, m2b) -> None:
        """The inverse of :meth:`merge`: the moments of classes ``cls`` at slot ``g`` without a part
        of weight ``nb``, mean ``mb`` and M2 ``m2b`` (exactly zero when nothing is left)."""
        n, mean, m2 = self.n[cls, g], self.mean[cls, g], self.m2[cls, g]
        na = n - nb
        empty = na <= _EMPTY * np.maximum(1.0, n)
        safe = np.where(empty, 1.0, na)
        ma = mean + (mean - mb) * (nb / safe)  # (n mean - nb mb) / na, without the large products
        delta = mb - ma
        m2a = m2 - m2b - delta * (delta * (na * nb / n))
        self.n[cls, g] = np.where(empty, 0.0, na)
        self.mean[cls, g] = np.where(empty, 0.0, ma)
        self.m2[cls, g] = np.where(empty, 0.0, np.maximum(m2a, 0.0))

    def merge(self, cls, g, nb, mb, m2b) -> None:
        """Chan, Golub and LeVeque's pairwise update: the moments of classes ``cls`` at slot ``g`` with a
        part of weight ``nb``, mean ``mb`` and M2 ``m2b`` added."""
        na, ma, m2a = self.n[cls, g], self.mean[cls, g], self.m2[cls, g]
        n = na + nb
        delta = mb - ma
        self.mean[cls, g] = ma + delta * (nb / n)
        # delta * (delta * w), not delta² * w: with an empty side (w = 0) a huge delta adds 0, not inf * 0
        self.m2[cls, g] = m2a + m2b + delta * (delta * (na * nb / n))
        self.n[cls, g] = n

    def loglik(self, C: int, gslots: np.ndarray, gx: np.ndarray, var_smoothing: float) -> np.ndarray:
        """Per-class Gaussian log-density of numeric values over the first ``C`` classes: ``gx`` (slots,)
        gives (C,), a batch ``gx`` (rows, slots) with NaN for missing gives (rows, C). See :func:`gaussian_loglik`."""
        return gaussian_loglik(self.n[:C, gslots], self.mean[:C, gslots], self.m2[:C, gslots], gx, var_smoothing)
