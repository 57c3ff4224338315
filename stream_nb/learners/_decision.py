"""From joint log-likelihoods to a decision: the class prior, one logsumexp, and the Bayes decision.

:func:`log_prior` (log P̂(c), Lidstone-smoothed), :func:`logsumexp` and :func:`normalise` (log P(c | x)),
:class:`LossMatrix` (the class of least conditional risk R(j | x) = Σ_i λ[i, j] P(i | x), 0-1 loss for
the pairs it leaves out) and :func:`outcomes` (a block's ``(prediction, proba)`` pairs).
"""

from __future__ import annotations

import functools
import itertools

import numpy as np

from .._checks import check_number
from ..exceptions import ConfigError
from ..stats import json_type

__all__ = ["LossMatrix", "decide", "json_text", "log_prior", "logsumexp", "loss_entry", "normalise", "outcomes"]


def log_prior(class_count: np.ndarray, alpha: float) -> np.ndarray:
    """log P̂(c) = log(|D_c| + α) - log(|D| + α C) from the class counts (..., C).

    A batch of class counts, one row per event, gives one prior per row.

    >>> log_prior(np.array([3.0, 1.0]), 1.0).round(4).tolist()
    [-0.4055, -1.0986]
    """
    C = class_count.shape[-1]
    return np.log(class_count + alpha) - np.log(class_count.sum(-1, keepdims=True) + alpha * C)


def outcomes(classes: list, decided: np.ndarray, proba: np.ndarray) -> list:
    """Each row's ``(classes[decided[r]], dict(zip(classes, proba[r])))`` (``proba``: rows, len(classes)).

    Each dict is built by one dict display of the classes (:func:`_dict_of`), presized, which takes about a
    third less time than ``dict(zip(...))``: a block's results cost more than its kernel.

    >>> outcomes(["a", "b"], np.array([1, 0]), np.array([[0.25, 0.75], [0.5, 0.5]]))
    [('b', {'a': 0.25, 'b': 0.75}), ('a', {'a': 0.5, 'b': 0.5})]
    """
    make = _dict_of(len(classes))(*classes)
    return list(zip(map(classes.__getitem__, decided.tolist()), itertools.starmap(make, proba.tolist())))


@functools.lru_cache(maxsize=64)
def _dict_of(n: int):
    """``keys -> (values -> dict)``: given ``n`` keys, the function of ``n`` values that returns the dict of
    them in that order, as the display ``{k0: v0, ...}`` (the keys are arguments, never part of the source)."""
    keys, values = (", ".join(f"{p}{i}" for i in range(n)) for p in "kv")
    pairs = ", ".join(f"k{i}: v{i}" for i in range(n))
    return eval(f"lambda {keys}: lambda {values}: {{{pairs}}}")  # numbered names only: no key or value is source


def logsumexp(a: np.ndarray, axis: int = -1) -> np.ndarray:
    """log(sum(exp(a))) along ``axis``; stable, and -inf (not NaN) where every entry is -inf."""
    m = a.max(axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        return (m + np.log(np.exp(a - m).sum(axis=axis, keepdims=True))).squeeze(axis)


def normalise(jll: np.ndarray, prior: np.ndarray) -> np.ndarray:
    """log P(c | x) from joint log-likelihoods (rows, C).

    A row where every class is impossible (-inf: a numeric value beyond what
    any class's Gaussian can express in floating point) gets the prior
    (``prior``: (C,) or one row per row of ``jll``).
    """
    dead = ~np.isfinite(jll).any(1)
    if dead.any():
        jll = jll.copy()
        jll[dead] = prior if prior.ndim == 1 else prior[dead]
    return jll - logsumexp(jll, axis=1)[:, None]


def json_text(label) -> str | None:
    """A number's or a boolean's JSON text (``1`` -> ``"1"``, ``True`` -> ``"true"``); None for anything else."""
    t = json_type(label)
    if t == "boolean":
        return "true" if label else "false"
    if t == "number":
        return str(label)
    return None


def loss_entry(table: dict, label):
    """``table``'s entry for class ``label``, or None: under the label's JSON text when the label is a
    number or a boolean (a loss file's keys are strings: ``"1"``, ``"true"``), else under a key of the
    label's own JSON type equal to it (``True`` is not the key ``1``, though Python holds ``True == 1``)."""
    text = json_text(label)
    if text is not None and text in table:
        return table[text]
    t = json_type(label)
    return next((v for k, v in table.items() if json_type(k) == t and k == label), None)


class LossMatrix:
    """``loss[truth][prediction]``: the cost λ of predicting ``prediction`` when the truth is ``truth``.

    Pairs the matrix leaves out cost 0 on the diagonal and 1 elsewhere (0-1 loss),
    so classes that appear later in the stream are handled. A label's row and
    column are found by :func:`loss_entry`.

    >>> LossMatrix({"spam": {"ham": 5.0}}).matrix(["ham", "spam"]).tolist()
    [[0.0, 1.0], [5.0, 0.0]]
    """

    def __init__(self, loss: dict):
        if not isinstance(loss, dict):
            raise ConfigError(f"loss: expected a dict {{truth: {{prediction: cost}}}}, got {type(loss).__name__}")
        for t, row in loss.items():
            if not isinstance(row, dict):
                raise ConfigError(f"loss[{t!r}]: expected a dict {{prediction: cost}}, got {type(row).__name__}")
            for p, cost in row.items():
                check_number(f"loss[{t!r}][{p!r}]", cost, minimum=0)
        self.loss = loss
        self._classes: tuple = ()
        self._matrix = np.empty((0, 0))

    def matrix(self, classes: list) -> np.ndarray:
        """λ[i, j] over the given classes: truth i, prediction j."""
        if len(classes) != len(self._classes):
            n = len(classes)
            m = 1.0 - np.eye(n)
            for i, t in enumerate(classes):
                row = loss_entry(self.loss, t) or {}
                for j, p in enumerate(classes):
                    cost = loss_entry(row, p)
                    if cost is not None:
                        m[i, j] = float(cost)
            self._classes, self._matrix = tuple(classes), m
        return self._matrix


def decide(log_post: np.ndarray, loss: LossMatrix | None, classes: list) -> np.ndarray:
    """Index of the decided class per row of ``log_post`` (rows, C).

    Without a loss matrix, the most probable class; with one, the minimiser of
    the conditional risk R(j | x) = Σ_i λ[i, j] P(i | x).
    """
    if loss is None:
        return log_post.argmax(1)
    return (np.exp(log_post) @ loss.matrix(classes)).argmin(1)
