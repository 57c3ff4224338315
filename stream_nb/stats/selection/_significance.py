"""The chi-square tail: how far a G statistic is from what independence would give.

:func:`chi2_logsf` is the log of the upper tail :math:`P(\\chi^2_d > x)`, the
regularised upper incomplete gamma function :math:`Q(d/2, x/2)`, computed
without scipy: by its power series below :math:`x/2 = d/2 + 1` and by its
continued fraction (modified Lentz) above, where the tail is small; the
continued fraction is summed in logs, so a p-value far below the smallest
float still ranks (the candidate pairs of :mod:`stream_nb.stats.selection._revision`
compare pairs whose tails are :math:`10^{-1000}` and less). Both are the
textbook forms (Numerical Recipes, 6.2), vectorised over arrays, each
element iterated until its term is below :math:`10^{-15}` of the sum.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["chi2_logsf", "chi2_sf"]

_EPS = 1e-15
_TINY = 1e-300
_MAX_ITER = 100_000


def _lgamma(a: np.ndarray) -> np.ndarray:
    uniq, inv = np.unique(a, return_inverse=True)  # few distinct degrees of freedom among many statistics
    return np.array([math.lgamma(v) for v in uniq.tolist()])[inv.ravel()].reshape(a.shape)


def _log_series(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """log P(a, x), the lower regularised gamma, by its series (x < a + 1)."""
    term = 1.0 / a
    total = term.copy()
    ap = a.copy()
    todo = np.arange(len(a))
    for _ in range(_MAX_ITER):
        if not len(todo):
            break
        ap[todo] += 1.0
        term[todo] *= x[todo] / ap[todo]
        total[todo] += term[todo]
        todo = todo[np.abs(term[todo]) >= np.abs(total[todo]) * _EPS]
    return np.log(total) - x + a * np.log(np.maximum(x, _TINY)) - _lgamma(a)


def _log_fraction(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """log Q(a, x), the upper regularised gamma, by its continued fraction (x >= a + 1)."""
    b = x + 1.0 - a
    c = np.full(len(a), 1.0 / _TINY)
    d = 1.0 / b
    log_h = np.log(d)
    todo = np.arange(len(a))
    for i in range(1, _MAX_ITER):
        if not len(todo):
            break
        an = -i * (i - a[todo])
        b[todo] += 2.0
        dd = an * d[todo] + b[todo]
        dd = np.where(np.abs(dd) < _TINY, _TINY, dd)
        cc = b[todo] + an / c[todo]
        cc = np.where(np.abs(cc) < _TINY, _TINY, cc)
        d[todo] = 1.0 / dd
        c[todo] = cc
        delta = cc * d[todo]
        log_h[todo] += np.log(np.abs(delta))
        todo = todo[np.abs(delta - 1.0) >= _EPS]
    return log_h - x + a * np.log(x) - _lgamma(a)


def chi2_logsf(x, df):
    """``log P(chi2_df > x)``, elementwise over ``x`` and ``df`` (broadcast; ``df`` > 0).

    >>> round(float(np.exp(chi2_logsf(6.635, 1))), 4)   # the table: the 1% point of chi2(1)
    0.01
    >>> float(chi2_logsf(5000.0, 4)) < -2400   # far below the smallest float as a p-value
    True
    """
    x, df = np.broadcast_arrays(np.asarray(x, dtype=float), np.asarray(df, dtype=float))
    if (df <= 0).any() or np.isnan(x).any():
        raise ValueError(f"chi2_logsf: expected df > 0 and x a number, got df {df.min()} and x {x.ravel()[:3]}")
    a, h = (df / 2.0).ravel(), (np.maximum(x, 0.0) / 2.0).ravel()
    out = np.zeros(len(a))
    low = (h > 0) & (h < a + 1.0)
    high = h >= a + 1.0
    if low.any():
        out[low] = np.log1p(-np.minimum(np.exp(_log_series(a[low], h[low])), 1.0))
    if high.any():
        out[high] = _log_fraction(a[high], h[high])
    out = out.reshape(x.shape)
    return float(out) if out.ndim == 0 else out


def chi2_sf(x, df):
    """``P(chi2_df > x)``, the p-value of a statistic ``x`` with ``df`` degrees of freedom (see :func:`chi2_logsf`).

    >>> round(float(chi2_sf(23.209, 10)), 4)   # the table: the 1% point of chi2(10)
    0.01
    """
    return np.exp(chi2_logsf(x, df))
