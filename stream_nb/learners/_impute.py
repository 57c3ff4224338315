"""Imputation: the posterior of an event's missing attributes, and the event with them filled in.

The class is summed out: P(x_m | x_o) = Σ_c P(c | x_o) P(x_m | x_o, c), where
each model says what P(x_m | x_o, c) is under it (its ``_missing_posterior``
hook); Gaussian features report the mean and standard deviation of their
class mixture. These are functions of the store and of what the model gives
them (its posterior, its ``_missing_posterior``): the learner's ``impute_proba_one``
and ``impute_one`` call them.
"""

from __future__ import annotations

import numpy as np

from ..stats import GAUSS

__all__ = ["fill_in", "missing_posterior"]


def missing_posterior(stats, enc, post: np.ndarray, posterior_given) -> dict:
    """``{feature: distribution}`` of every missing attribute of encoded event ``enc`` (its class posterior
    ``post``, as probabilities): ``posterior_given(enc, c, miss)`` is the model's P(x_m | x_o, c) of the
    missing discrete features ``miss`` (``(feature, columns, probabilities)`` each), mixed over the classes;
    categorical features give ``{value: p}``, binned ones ``{"[lo, hi)": p}``, Gaussian ones
    ``{"mean": μ, "std": σ}`` of their class mixture."""
    s = stats
    miss = s.missing_of(enc)
    out = {}
    if len(miss):
        mixed = None
        for c, p in enumerate(post.tolist()):
            blocks = posterior_given(enc, c, miss)
            mixed = [p * q for _, _, q in blocks] if mixed is None else [a + p * q for a, (_, _, q) in zip(mixed, blocks)]
        for (f, cols, _), q in zip(blocks, mixed):
            out[s.features[f]] = {_value_name(s, f, s.value_keys[col]): float(v) for col, v in zip(cols.tolist(), q.tolist())}
    observed_g = set(enc.gslots.tolist())
    for f in s.gauss_feature:
        g = s.gslot[f]
        if g in observed_g:
            continue
        mean, std = s.gaussian_mixture(g, post)
        out[s.features[f]] = {"mean": mean, "std": std}
    return out


def fill_in(stats, x: dict, dists: dict) -> dict:
    """``x`` with each attribute of ``dists`` (:func:`missing_posterior`) set to its most probable value (a
    discretised numeric feature: the middle of its most probable bin; a Gaussian one: the posterior mean)."""
    out = dict(x)
    for name, dist in dists.items():
        f = stats.feature_index[name]
        if stats.kinds[f] == GAUSS:
            out[name] = dist["mean"]
            continue
        best = max(dist, key=dist.get)
        out[name] = _representative(stats, f, best)
    return out


def _value_name(stats, f, value):
    d = stats.disc[f]
    if d is None:
        return value
    e = d.edges
    lo = "-inf" if value == 0 else repr(float(e[value - 1]))
    hi = "inf" if value == len(e) else repr(float(e[value]))
    return f"[{lo}, {hi})"


def _representative(stats, f, name):
    d = stats.disc[f]
    if d is None:
        return name
    e = d.edges
    b = next(v for v in stats.values[f] if _value_name(stats, f, v) == name)
    if len(e) == 0:
        return float("nan")
    if len(e) == 1:
        return float(e[0])
    lo = e[b - 1] if b > 0 else e[0] - (e[1] - e[0]) / 2
    hi = e[b] if b < len(e) else e[-1] + (e[-1] - e[-2]) / 2
    return float((lo + hi) / 2)
