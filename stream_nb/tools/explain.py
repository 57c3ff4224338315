"""Why did the model decide so? Shapley values of the log-odds between the top two classes.

A coalition S of the event's attributes is worth the log-odds
ln P(c1 | x_S) / P(c2 | x_S) of the two most probable classes, with the other
attributes absent (the models marginalise them exactly, as a missing value).
An attribute's contribution is its Shapley value, and the *prior* plus the
contributions add up to the prediction's log-odds. Up to
:data:`EXACT_MAX_ATTRIBUTES` attributes every coalition is enumerated; beyond,
the values are sampled over random orders (the docs' *Evaluate* page).

>>> from stream_nb import NaiveBayes
>>> model = NaiveBayes()
>>> for x, y in [({"sky": "sun", "wind": "calm"}, "play"), ({"sky": "sun", "wind": "gale"}, "play"),
...              ({"sky": "rain", "wind": "gale"}, "stay"), ({"sky": "rain", "wind": "calm"}, "play")]:
...     model.learn_one(x, y)
>>> e = explain_one(model, {"sky": "sun", "wind": "gale"})
>>> e.classes, e.method
(('play', 'stay'), 'exact')
>>> [(c.attribute, round(c.shapley, 4)) for c in e.contributions]   # ln (3/5)/(1/3), ln (2/5)/(2/3)
[('sky', 0.5878), ('wind', -0.5108)]
>>> round(e.prior, 4), round(e.log_odds, 4)   # ln (4/6)/(2/6), and the sum of the three
(0.6931, 0.7701)
"""

from __future__ import annotations

import dataclasses
import math
import typing

import numpy as np
import orjson

from .._checks import is_integer
from ..exceptions import ConfigError
from ..stats import json_type

__all__ = ["EXACT_MAX_ATTRIBUTES", "DEFAULT_PERMUTATIONS", "Contribution", "Explanation", "explain_one", "log_odds"]

#: Up to this many attributes the Shapley values are computed exactly (2^n coalitions).
EXACT_MAX_ATTRIBUTES = 12

#: Random permutations sampled beyond :data:`EXACT_MAX_ATTRIBUTES` attributes.
DEFAULT_PERMUTATIONS = 500


@dataclasses.dataclass(frozen=True)
class Contribution:
    """One attribute's share of the log-odds: its Shapley value (and standard error when sampled)."""

    attribute: typing.Any
    value: typing.Any
    shapley: float
    stderr: float | None = None


@dataclasses.dataclass(frozen=True)
class Explanation:
    """The result of :func:`explain_one`.

    Attributes
    ----------
    classes
        ``(c1, c2)``: the decision explained is c1 over c2.
    proba
        ``(P(c1 | x), P(c2 | x))``.
    prior
        v(∅): the log-odds ln P(c1)/P(c2) with no attribute.
    log_odds
        v(N): the log-odds ln P(c1 | x)/P(c2 | x) of the prediction.
    contributions
        One :class:`Contribution` per attribute, largest |Shapley value| first
        (ties by attribute name).
    method
        ``"exact"`` or ``"sampled"``.
    permutations, seed
        The sampling's settings (``None`` when exact).
    coalitions
        Distinct coalitions whose value was computed.
    """

    classes: tuple
    proba: tuple
    prior: float
    log_odds: float
    contributions: list[Contribution]
    method: str
    permutations: int | None = None
    seed: int | None = None
    coalitions: int = 0

    @property
    def total(self) -> float:
        """prior + Σ contributions (equal to :attr:`log_odds` up to floating-point rounding)."""
        return self.prior + math.fsum(c.shapley for c in self.contributions)

    def describe(self) -> str:
        """Which log-odds are explained and how, in two lines."""
        c1, c2 = self.classes
        p1, p2 = self.proba
        n = len(self.contributions)
        head = (f"P({c1!s} | x) = {p1:.4f}, P({c2!s} | x) = {p2:.4f}: the log-odds "
                f"ln P({c1!s}|x)/P({c2!s}|x) = {self.log_odds:+.4f} = prior {self.prior:+.4f} "
                f"+ the attributes' contributions {self.log_odds - self.prior:+.4f}")
        if self.method == "exact":
            how = f"exact Shapley values over {n} attributes ({self.coalitions:,} coalitions)"
        else:
            how = (f"Shapley values estimated from {self.permutations:,} random permutations (seed {self.seed}) "
                   f"over {n} attributes ({self.coalitions:,} coalitions); ± is the standard error")
        return head + "\n" + how

    def table(self) -> str:
        """The contributions as an aligned text table, then the prior and the total.

        Positive contributions push towards c1, negative ones towards c2.
        """
        sampled = self.method == "sampled"
        rows = [["attribute", "value", "contribution"] + (["± s.e."] if sampled else [])]
        for c in self.contributions:
            rows.append([str(c.attribute), _show(c.value), f"{c.shapley:+.4f}"]
                        + ([f"{c.stderr:.4f}" if c.stderr is not None else "-"] if sampled else []))
        rows.append(["prior", "", f"{self.prior:+.4f}"] + ([""] if sampled else []))
        rows.append(["total = log-odds", "", f"{self.total:+.4f}"] + ([""] if sampled else []))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        lines = ["  ".join(cell.ljust(w) if i < 2 else cell.rjust(w) for i, (cell, w) in enumerate(zip(r, widths)))
                 .rstrip() for r in rows]
        lines.insert(len(lines) - 2, "-" * len(lines[0]))
        return "\n".join(lines)

    def as_dict(self) -> dict:
        """A JSON-able dict of everything above."""
        return {
            "classes": list(self.classes),
            "proba": list(self.proba),
            "prior": self.prior,
            "log_odds": self.log_odds,
            "contributions": [dataclasses.asdict(c) for c in self.contributions],
            "method": self.method,
            "permutations": self.permutations,
            "seed": self.seed,
            "coalitions": self.coalitions,
        }


def _show(value: typing.Any) -> str:
    return orjson.dumps(value).decode() if not isinstance(value, str) else value


def _is_missing(v) -> bool:
    return v is None or (isinstance(v, float) and v != v)


def _log_posterior(model, x: dict) -> np.ndarray:
    """ln P(c | x) over ``model.classes``: the model's own (:meth:`~stream_nb.NaiveBayes.log_posterior_one`),
    else the log of ``predict_proba_one``."""
    if callable(getattr(model, "log_posterior_one", None)):
        return model.log_posterior_one(x)
    proba = model.predict_proba_one(x)
    with np.errstate(divide="ignore"):
        return np.log(np.array([proba.get(c, 0.0) for c in _classes(model)], dtype=float))


def _classes(model) -> list:
    classes = getattr(model, "classes", None)
    if classes is None:
        raise TypeError(f"explain_one needs a classifier with a 'classes' attribute, got {type(model).__name__}")
    return list(classes)


def log_odds(model, x: dict, c1, c2) -> float:
    """ln P(c1 | x) / P(c2 | x) as the model computes it (absent attributes marginalised).

    >>> from stream_nb import NaiveBayes
    >>> model = NaiveBayes()
    >>> model.learn_one({"a": 1}, "p"); model.learn_one({"a": 2}, "q")
    >>> round(log_odds(model, {"a": 1}, "p", "q"), 4)   # ln (2/3)/(1/3)
    0.6931
    """
    classes = _classes(model)
    lp = _log_posterior(model, x)
    value = float(lp[classes.index(c1)] - lp[classes.index(c2)])
    if not math.isfinite(value):
        raise ValueError(f"the log-odds of {c1!r} against {c2!r} is {value} for {x!r}: a class has probability 0")
    return value


def explain_one(
    model,
    x: dict,
    *,
    classes: tuple | None = None,
    exact_max: int = EXACT_MAX_ATTRIBUTES,
    permutations: int = DEFAULT_PERMUTATIONS,
    seed: int = 0,
) -> Explanation:
    """Shapley values of the attributes of ``x`` for the log-odds between the model's top two classes.

    Parameters
    ----------
    model
        A trained classifier (stream_nb's, or any river classifier with ``classes``).
    x
        The event's attributes; ``None`` or NaN values are missing and take no part.
    classes
        ``(c1, c2)`` to explain instead of the two most probable classes.
    exact_max
        Enumerate all coalitions up to this many attributes; sample permutations beyond.
    permutations, seed
        Number of random permutations and the seed of :func:`numpy.random.default_rng`
        when sampling.

    Returns
    -------
    Explanation
        ``prior + sum of the contributions == log_odds`` (exactly up to rounding).

    Examples
    --------
    >>> from stream_nb import TAN, Tree
    >>> model = TAN(search=Tree(rebuild_every=0))
    >>> for i in range(40):
    ...     model.learn_one({"a": i % 2, "b": i % 2, "c": i % 3}, i % 2 == 0)
    >>> model.rebuild()
    >>> e = explain_one(model, {"a": 0, "b": 0, "c": 1})
    >>> e.classes, e.method, len(e.contributions)
    ((True, False), 'exact', 3)
    >>> abs(e.total - e.log_odds) < 1e-9
    True
    >>> s = explain_one(model, {"a": 0, "b": 0, "c": 1}, exact_max=0, permutations=20, seed=1)
    >>> s.method, abs(s.total - s.log_odds) < 1e-9
    ('sampled', True)
    """
    known = _classes(model)
    if len(known) < 2:
        raise ValueError(f"explain_one needs a model that has seen at least two classes, got {len(known)}: {known!r}")
    if not is_integer(permutations) or permutations < 1:
        raise ConfigError(f"permutations: expected a positive integer, got {permutations!r}")
    if not is_integer(exact_max) or exact_max < 0:
        raise ConfigError(f"exact_max: expected an integer >= 0, got {exact_max!r}")
    names = [k for k, v in x.items() if not _is_missing(v)]
    values = [x[k] for k in names]
    full = {k: v for k, v in zip(names, values)}
    lp = _log_posterior(model, full)
    if classes is None:
        order = sorted(range(len(known)), key=lambda i: -lp[i])  # stable: ties in order of first appearance
        c1, c2 = known[order[0]], known[order[1]]
    else:
        # a class is one of the model's of the same JSON type: True is not the class 1, though True == 1
        at = [next((i for i, k in enumerate(known) if json_type(k) == json_type(c) and k == c), None) for c in classes] \
            if len(classes) == 2 else []
        if len(at) != 2 or None in at or at[0] == at[1]:
            raise ValueError(f"classes: expected two different classes among {known!r}, got {classes!r}")
        c1, c2 = known[at[0]], known[at[1]]
    i1, i2 = known.index(c1), known.index(c2)
    n = len(names)

    def value(mask: int) -> float:
        xs = {names[i]: values[i] for i in range(n) if mask >> i & 1}
        return log_odds(model, xs, c1, c2)

    v_empty = value(0)
    v_full = log_odds(model, full, c1, c2)
    if n <= exact_max:
        method = "exact"
        masks = np.arange(1 << n, dtype=np.int64)
        v = np.empty(1 << n)
        v[0], v[-1] = v_empty, v_full
        for m in range(1, (1 << n) - 1):
            v[m] = value(m)
        size = ((masks[:, None] >> np.arange(n)) & 1).sum(1) if n else np.zeros(1, dtype=np.int64)
        weight = np.array([math.factorial(s) * math.factorial(n - s - 1) / math.factorial(n) for s in range(n)])
        phi = np.empty(n)
        for i in range(n):
            without = masks[(masks >> i) & 1 == 0]
            phi[i] = math.fsum(weight[size[without]] * (v[without | (1 << i)] - v[without]))
        stderr = [None] * n
        perms, used_seed, coalitions = None, None, 1 << n
    else:
        method = "sampled"
        rng = np.random.default_rng(seed)
        cache = {0: v_empty, (1 << n) - 1: v_full}
        marginal = np.empty((permutations, n))
        for k in range(permutations):
            mask, prev = 0, v_empty
            for i in rng.permutation(n).tolist():
                mask |= 1 << i
                cur = cache.get(mask)
                if cur is None:
                    cur = cache[mask] = value(mask)
                marginal[k, i] = cur - prev
                prev = cur
        phi = marginal.mean(0)
        stderr = (marginal.std(0, ddof=1) / math.sqrt(permutations)).tolist() if permutations > 1 else [None] * n
        perms, used_seed, coalitions = permutations, seed, len(cache)
    contributions = [Contribution(names[i], values[i], float(phi[i]), stderr[i]) for i in range(n)]
    contributions.sort(key=lambda c: (-abs(c.shapley), str(c.attribute)))
    return Explanation(
        classes=(c1, c2),
        proba=(float(np.exp(lp[i1])), float(np.exp(lp[i2]))),
        prior=v_empty,
        log_odds=v_full,
        contributions=contributions,
        method=method,
        permutations=perms,
        seed=used_seed,
        coalitions=coalitions,
    )
