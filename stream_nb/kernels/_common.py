"""What every model's kernel shares: the class prior, the normalised posterior, and the Gaussian features.

Each function is the compiled twin of a numpy function of the learners' and the
store's (named in its docstring), for one event.
"""

from __future__ import annotations

import math

import numpy as np

from . import _detectors

__all__ = ["add_gaussian", "decide_row", "gaussian_row", "log_prior_row", "next_digits", "normalise_row", "watch_row",
           "warm"]


_TINY = np.finfo(np.float64).tiny
_ROOT_MAX = math.sqrt(np.finfo(np.float64).max)
_LOG_2PI = math.log(2.0 * math.pi)


def log_prior_row(class_count, C, a, out):
    """``out[:C]`` = log P̂(c) = log(|D_c| + a) - log(|D| + a C) (``learners._decision.log_prior``)."""
    total = 0.0
    for c in range(C):
        total += class_count[c]
    z = math.log(total + a * C)
    for c in range(C):
        out[c] = math.log(class_count[c] + a) - z


def normalise_row(jll, prior, C, out):
    """``out[:C]`` = log P(c | x) from the joint log-likelihoods ``jll``; the prior where every class is
    impossible (``learners._decision.normalise``)."""
    dead = True
    for c in range(C):
        if math.isfinite(jll[c]):
            dead = False
            break
    if dead:
        for c in range(C):
            jll[c] = prior[c]
    m = -math.inf
    for c in range(C):
        v = jll[c]
        if v != v:
            m = math.nan
            break
        if v > m:
            m = v
    if not math.isfinite(m):
        m = 0.0
    s = 0.0
    for c in range(C):
        s += math.exp(jll[c] - m)
    lse = m + math.log(s)
    for c in range(C):
        out[c] = jll[c] - lse


def finish_row(jll, gx, gslots, g_n, g_mean, g_m2, C, var_smoothing, q, joint, prior, out):
    """The end of a row's score, once its discrete factors are in ``jll[:C]``: the Gaussian log-densities of
    ``gx`` added (:func:`gaussian_row`), then ``out[:C]`` the joint log-likelihoods (``joint``) or the log
    posterior (:func:`normalise_row`)."""
    gaussian_row(gx, gslots, g_n, g_mean, g_m2, C, var_smoothing, q, jll)
    if joint:
        for c in range(C):
            out[c] = jll[c]
    else:
        normalise_row(jll, prior, C, out)


def gaussian_row(gx, gslots, g_n, g_mean, g_m2, C, var_smoothing, q, jll):
    """Add to ``jll[:C]`` the Gaussian log-densities of the values ``gx`` (NaN: missing) of the slots
    ``gslots`` (``stats.gaussian_loglik``: the maximum-likelihood variance floored at ``var_smoothing``
    times the feature's spread, the all-class Gaussian for a class that never saw the feature, the quadratic
    term shifted by its least class); ``q`` is scratch of at least C."""
    for j in range(gslots.shape[0]):
        x = gx[j]
        if x != x:
            continue
        g = gslots[j]
        tot = 0.0
        K = -math.inf
        for c in range(C):
            n = g_n[c, g]
            if n > 0:
                tot += n
                if g_mean[c, g] > K:
                    K = g_mean[c, g]
        if not math.isfinite(K):
            K = 0.0
        safe = tot if tot > 0 else 1.0
        acc = 0.0
        for c in range(C):
            if g_n[c, g] > 0:
                acc += g_n[c, g] * (g_mean[c, g] - K)
        pooled_mean = K + acc / safe
        acc = 0.0
        for c in range(C):
            d = g_mean[c, g] - pooled_mean
            acc += g_m2[c, g] + g_n[c, g] * d * d
        pooled_var = acc / safe
        if not pooled_var > 0:
            continue  # every value so far equal: the feature carries nothing
        floor = _variance_floor(g_n, g_mean, g_m2, g, C, var_smoothing)
        qmin = math.inf
        for c in range(C):
            n = g_n[c, g]
            if n > 0:
                var, mu = g_m2[c, g] / n, g_mean[c, g]
            else:
                var, mu = pooled_var, pooled_mean
            if var < floor:
                var = floor
            d = x - mu
            q[c] = d * d / var
            if q[c] < qmin:
                qmin = q[c]
            jll[c] += -0.5 * (_LOG_2PI + math.log(var))
        for c in range(C):
            jll[c] += -0.5 * (q[c] - qmin)


def _variance_floor(g_n, g_mean, g_m2, g, C, var_smoothing):
    """``stats.variance_floor`` of slot ``g``: ``var_smoothing`` times the smallest positive within-class
    variance, else the smallest positive squared gap between two class means, at least the smallest float."""
    spread = math.inf
    for c in range(C):
        n = g_n[c, g]
        if n > 0:
            v = g_m2[c, g] / n
            if 0 < v < spread:
                spread = v
    if spread == math.inf:
        gap = math.inf
        for c in range(C):
            if g_n[c, g] > 0:
                for e in range(C):
                    if g_n[e, g] > 0:
                        d = g_mean[e, g] - g_mean[c, g]
                        if 0 < d < gap:
                            gap = d
        spread = gap * gap if gap <= _ROOT_MAX else 0.0
    f = var_smoothing * spread
    return f if f > _TINY else _TINY


def add_gaussian(gx, gslots, c, w, g_n, g_mean, g_m2):
    """Weighted Welford update of class ``c``'s moments by the values ``gx`` (``stats.Stats.add_gaussian``)."""
    for j in range(gslots.shape[0]):
        x = gx[j]
        if x != x:
            continue
        g = gslots[j]
        n = g_n[c, g] + w
        mean = g_mean[c, g]
        d = x - mean
        new_mean = mean + d * (w / n)
        g_m2[c, g] += w * d * (x - new_mean)
        g_mean[c, g] = new_mean
        g_n[c, g] = n


def next_digits(digits, n, m) -> bool:
    """Count ``digits[:n]`` on by one, as an odometer of base ``m`` (the last digit fastest): False once
    it wraps round to zeros (every combination was visited)."""
    i = n - 1
    while i >= 0:
        digits[i] += 1
        if digits[i] < m:
            return True
        digits[i] = 0
        i -= 1
    return False


def decide_row(log_post, C, loss):
    """The decided class of one event (``learners._decision.decide``): the most probable, or with a loss
    matrix ``loss`` (C, C; (0, 0): none) the one of least conditional risk."""
    best = 0
    if loss.shape[0] == 0:
        for c in range(1, C):
            if log_post[c] > log_post[best]:
                best = c
        return best
    least = math.inf
    for j in range(C):
        risk = 0.0
        for i in range(C):
            risk += math.exp(log_post[i]) * loss[i, j]
        if risk < least:
            best, least = j, risk
    return best


def watch_row(log_post, C, loss, y, det_kind, det_params, det_state, det_fbuf, det_ibuf, warning):
    """Feed a drift detector the 0/1 error of the decision on one labelled event of class ``y``; whether the
    detector acts on it (a drift, or its warning raised or cleared against ``warning``), which the model
    must then do in Python before counting the event."""
    error = 0.0 if decide_row(log_post, C, loss) == y else 1.0
    _detectors.detector_update(det_kind, det_params, det_state, det_fbuf, det_ibuf, error)
    return det_state[_detectors.DRIFT] != 0.0 or (det_state[_detectors.WARNING] != 0.0) != warning


def warm(k) -> None:
    """The helpers compile with the kernels that call them."""
