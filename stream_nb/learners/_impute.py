"""Imputation: the posterior of an event's missing attributes, and the event with them filled in.

The class is summed out: P(x_m | x_o) = Σ_c P(c | x_o) P(x_m | x_o, c), where
each model says what P(x_m | x_o, c) is under it (its ``_missing_posterior``
hook); Gaussian features report the mean and standard deviation of their
class mixture.
"""

from __future__ import annotations

import numpy as np

from ..stats import GAUSS, check_event

__all__ = ["Imputation"]


class Imputation:
    """``impute_proba_one`` and ``impute_one`` of a :class:`~stream_nb.learners.BayesClassifier`
    (a part of it, not used alone)."""

    def impute_proba_one(self, x: dict) -> dict:
        """The posterior P(x_m | x_o) of every missing attribute, given the observed ones.

        Missing: a known feature that is absent, ``None`` or NaN. The class is
        summed out: Σ_c P(c | x_o) P(x_m | x_o, c). Categorical features give
        ``{value: p}``; a discretised numeric feature ``{"[lo, hi)": p}`` over its
        bins; a Gaussian feature ``{"mean": μ, "std": σ}`` of its mixture.
        """
        s = self._stats
        if not s.n_classes:
            return {}
        enc = s.encode(x)
        post = np.exp(self._log_posterior(x))
        miss = s.missing_of(enc)
        out = {}
        if len(miss):
            mixed = None
            for c, p in enumerate(post.tolist()):
                blocks = self._missing_posterior(enc, c, miss)
                mixed = [p * q for _, _, q in blocks] if mixed is None else [a + p * q for a, (_, _, q) in zip(mixed, blocks)]
            for (f, cols, _), q in zip(blocks, mixed):
                out[s.features[f]] = {self._value_name(f, s.value_keys[col]): float(v) for col, v in zip(cols.tolist(), q.tolist())}
        observed_g = set(enc.gslots.tolist())
        for f in s.gauss_feature:
            g = s.gslot[f]
            if g in observed_g:
                continue
            mean, std = s.gaussian_mixture(g, post)
            out[s.features[f]] = {"mean": mean, "std": std}
        return out

    def impute_one(self, x: dict) -> dict:
        """``x`` with every missing attribute filled in: its most probable value
        (a discretised numeric feature: the middle of its most probable bin; a
        Gaussian one: the posterior mean). Features never learned stay out.

        >>> from stream_nb import NaiveBayes
        >>> model = NaiveBayes()
        >>> for x, y in [({"sky": "sunny", "wind": "weak"}, "play"), ({"sky": "rain", "wind": "strong"}, "stay")] * 3:
        ...     model.learn_one(x, y)
        >>> model.impute_one({"sky": "sunny"})
        {'sky': 'sunny', 'wind': 'weak'}
        """
        s = self._stats
        check_event(x)
        out = dict(x)
        for name, dist in self.impute_proba_one(x).items():
            f = s.feature_index[name]
            if s.kinds[f] == GAUSS:
                out[name] = dist["mean"]
                continue
            best = max(dist, key=dist.get)
            out[name] = self._representative(f, best)
        return out

    def _value_name(self, f, value):
        d = self._stats.disc[f]
        if d is None:
            return value
        e = d.edges
        lo = "-inf" if value == 0 else repr(float(e[value - 1]))
        hi = "inf" if value == len(e) else repr(float(e[value]))
        return f"[{lo}, {hi})"

    def _representative(self, f, name):
        d = self._stats.disc[f]
        if d is None:
            return name
        e = d.edges
        b = next(v for v in self._stats.values[f] if self._value_name(f, v) == name)
        if len(e) == 0:
            return float("nan")
        if len(e) == 1:
            return float(e[0])
        lo = e[b - 1] if b > 0 else e[0] - (e[1] - e[0]) / 2
        hi = e[b] if b < len(e) else e[-1] + (e[-1] - e[-2]) / 2
        return float((lo + hi) / 2)
