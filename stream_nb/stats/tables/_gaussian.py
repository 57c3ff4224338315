"""Gaussian numeric features: per-class running moments and their log-density.

In ``numeric="gaussian"`` stores (naive Bayes) each numeric feature keeps, per
class, its weight, mean and sum of squared deviations (``g_n``, ``g_mean``,
``g_m2``): a weighted Welford update per event, the exact pairwise formula of
Chan, Golub and LeVeque for batches and merges.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["GaussianMoments", "gaussian_loglik", "variance_floor"]

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


class GaussianMoments:
    """The Gaussian moments of a :class:`~stream_nb.stats.Stats` (a part of it, not used alone)."""

    journal: list | None = None  # see Adding.journal

    def add_gaussian(self, c: int, w: float, gs: np.ndarray, gx: np.ndarray) -> None:
        """Weighted Welford update of the Gaussian moments of class ``c``."""
        self.version += 1
        if len(gs):
            if self.journal is not None:
                self.journal.append(("gauss", c, w, gs, gx))
            n = self.g_n[c, gs] + w
            mean = self.g_mean[c, gs]
            d = gx - mean
            new_mean = mean + d * (w / n)
            self.g_m2[c, gs] += w * d * (gx - new_mean)
            self.g_mean[c, gs] = new_mean
            self.g_n[c, gs] = n

    def gaussian_mixture(self, g: int, weights: np.ndarray) -> tuple[float, float]:
        """Mean and standard deviation of Σ_c weights[c] N(μ_c, σ²_c) for Gaussian slot ``g``."""
        C = self.n_classes
        n, mean, m2 = self.g_n[:C, g], self.g_mean[:C, g], self.g_m2[:C, g]
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

    def add_gaussian_rows(self, G: np.ndarray, gslots, yc: np.ndarray, w: np.ndarray, remove: bool = False) -> None:
        """Add (``remove``: take back) rows of numeric values at once: ``G`` (rows, slots) the values of
        Gaussian slots ``gslots`` (NaN: missing), ``yc`` each row's class, ``w`` its weight. Per class, the
        rows' own moments (two passes: the mean, then the deviations from it) are merged into the stored
        ones by the pairwise formula, or taken out of them by its inverse (:meth:`_unmerge_moments`)."""
        C = len(self.classes)
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
            (self._unmerge_moments if remove else self._merge_moments)(idx, g, nb[idx], mb[idx], m2b[idx])

    def _unmerge_moments(self, cls, g, nb, mb, m2b):
        """The inverse of :meth:`_merge_moments`: the moments of classes ``cls`` at slot ``g`` without a part
        of weight ``nb``, mean ``mb`` and M2 ``m2b`` (exactly zero when nothing is left)."""
        n, mean, m2 = self.g_n[cls, g], self.g_mean[cls, g], self.g_m2[cls, g]
        na = n - nb
        empty = na <= _EMPTY * np.maximum(1.0, n)
        safe = np.where(empty, 1.0, na)
        ma = mean + (mean - mb) * (nb / safe)  # (n mean - nb mb) / na, without the large products
        delta = mb - ma
        m2a = m2 - m2b - delta * (delta * (na * nb / n))
        self.g_n[cls, g] = np.where(empty, 0.0, na)
        self.g_mean[cls, g] = np.where(empty, 0.0, ma)
        self.g_m2[cls, g] = np.where(empty, 0.0, np.maximum(m2a, 0.0))
        self.version += 1

    def _merge_moments(self, cls, g, nb, mb, m2b):
        na, ma, m2a = self.g_n[cls, g], self.g_mean[cls, g], self.g_m2[cls, g]
        n = na + nb
        delta = mb - ma
        self.g_mean[cls, g] = ma + delta * (nb / n)
        # delta * (delta * w), not delta² * w: with an empty side (w = 0) a huge delta adds 0, not inf * 0
        self.g_m2[cls, g] = m2a + m2b + delta * (delta * (na * nb / n))
        self.g_n[cls, g] = n

    def gaussian_loglik(self, gslots: np.ndarray, gx: np.ndarray, var_smoothing: float) -> np.ndarray:
        """Per-class Gaussian log-density of numeric values: ``gx`` (slots,) gives (C,), a batch
        ``gx`` (rows, slots) with NaN for missing gives (rows, C). See :func:`gaussian_loglik`."""
        C = len(self.classes)
        return gaussian_loglik(
            self.g_n[:C, gslots], self.g_mean[:C, gslots], self.g_m2[:C, gslots], gx, var_smoothing
        )
