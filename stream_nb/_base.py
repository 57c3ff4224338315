"""What every stream_nb classifier shares: the template around one store of counts.

A model is a view of a :class:`~stream_nb._stats.Stats`. Subclasses say how
their statistics are kept (``_pairs``, ``_numeric``) and how a class's joint
log-likelihood is read off them (``_jll`` for one event, ``_jll_many`` for a
batch). Everything else lives here once: learning one event or a batch,
normalising with one logsumexp, Bayes decision with a loss matrix, merging,
and the plain-data state.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from river import base

from ._stats import Encoded, Stats
from .exceptions import ConfigError, InvalidEventError, MergeError

__all__ = ["BayesClassifier", "logsumexp"]


def logsumexp(a: np.ndarray, axis: int = -1) -> np.ndarray:
    """log(sum(exp(a))) along ``axis``; stable, and -inf (not NaN) where every entry is -inf."""
    m = a.max(axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        return (m + np.log(np.exp(a - m).sum(axis=axis, keepdims=True))).squeeze(axis)


def _normalise(jll: np.ndarray, prior: np.ndarray) -> np.ndarray:
    """log P(c | x) from joint log-likelihoods (rows, C).

    A row where every class is impossible (-inf: a numeric value beyond what
    any class's Gaussian can express in floating point) gets the prior.
    """
    dead = ~np.isfinite(jll).any(1)
    if dead.any():
        jll = jll.copy()
        jll[dead] = prior
    return jll - logsumexp(jll, axis=1)[:, None]


def _check_alpha(alpha) -> float:
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not (0 < alpha < math.inf):
        raise ConfigError(f"alpha: expected a finite number > 0 (Lidstone smoothing), got {alpha!r}")
    return float(alpha)


class _LossMatrix:
    """``loss[truth][prediction]``: the cost λ of predicting ``prediction`` when the truth is ``truth``.

    Pairs the matrix leaves out cost 0 on the diagonal and 1 elsewhere (0-1 loss),
    so classes that appear later in the stream are handled.
    """

    def __init__(self, loss: dict):
        if not isinstance(loss, dict):
            raise ConfigError(f"loss: expected a dict {{truth: {{prediction: cost}}}}, got {type(loss).__name__}")
        for t, row in loss.items():
            if not isinstance(row, dict):
                raise ConfigError(f"loss[{t!r}]: expected a dict {{prediction: cost}}, got {type(row).__name__}")
            for p, cost in row.items():
                if isinstance(cost, bool) or not isinstance(cost, (int, float)) or not (0 <= cost < math.inf):
                    raise ConfigError(f"loss[{t!r}][{p!r}]: expected a finite cost >= 0, got {cost!r}")
        self.loss = loss
        self._classes: tuple = ()
        self._matrix = np.empty((0, 0))

    def matrix(self, classes: list) -> np.ndarray:
        """λ[i, j] over the given classes: truth i, prediction j."""
        if len(classes) != len(self._classes):
            n = len(classes)
            m = 1.0 - np.eye(n)
            for i, t in enumerate(classes):
                row = self.loss.get(t, {})
                for j, p in enumerate(classes):
                    if p in row:
                        m[i, j] = float(row[p])
            self._classes, self._matrix = tuple(classes), m
        return self._matrix


class BayesClassifier(base.MiniBatchClassifier):
    """Base class of stream_nb's classifiers (not used directly)."""

    _pairs = False
    _numeric = "gaussian"

    def _setup(self):
        """Validate parameters and create the empty store; called by subclass ``__init__``."""
        self._alpha = _check_alpha(self.alpha)
        self._decision = None if self.loss is None else _LossMatrix(self.loss)
        self._stats = Stats(
            pairs=self._pairs,
            numeric=self._numeric,
            types=self.types,
            bins=getattr(self, "bins", 5),
            warmup=getattr(self, "warmup", 100),
            bin_edges=getattr(self, "bin_edges", None),
        )

    @property
    def _multiclass(self):
        return True

    @property
    def classes(self) -> list:
        """Every class seen so far, in order of first appearance."""
        return list(self._stats.classes)

    @property
    def n_learned(self) -> float:
        """Number of events learned (fractional with EM's weights)."""
        return self._stats.n_seen

    # ------------------------------------------------------------------ learning

    def learn_one(self, x: dict, y, w: float = 1.0) -> None:
        s = self._stats
        s._check_label(y)
        enc = s.encode_learn(x)
        c = s.class_of(y)
        s.add(enc, c, w)
        self._added(c)
        self._learned(1)

    def learn_many(self, X: pd.DataFrame, y: pd.Series) -> None:
        """Learn a batch: the same model as ``learn_one`` over the rows in order.

        A feature seen for the first time takes its type from the column's
        dtype (a float column is numeric). pandas stores an integer column
        that has missing values as float, so declare such features in
        ``types`` (or build the frame with the nullable ``"Int64"`` dtype) to
        keep them categorical as ``learn_one`` would.
        """
        if len(X) != len(y):
            raise ValueError(f"learn_many: X has {len(X)} rows but y has {len(y)} labels")
        codes, uniques = pd.factorize(pd.Series(list(y)) if not isinstance(y, pd.Series) else y, use_na_sentinel=True)
        if (codes < 0).any():
            raise InvalidEventError(
                f"the label is missing (None or NaN) at row {int(np.argmax(codes < 0))} of the batch", reason="bad_label"
            )
        labels = uniques.tolist()
        for v in labels:
            self._stats._check_label(v)
        start = 0
        while start < len(codes):
            stop = min(len(codes), start + self._batch_limit())
            self._learn_batch(X.iloc[start:stop], codes[start:stop], labels)
            self._learned(stop - start)
            start = stop

    def _learn_batch(self, X, codes, labels):
        s = self._stats
        D, dfeats, G, gslots = s.encode_frame(X, learn=True)
        s.add_many(D, dfeats, G, gslots, s.classes_from_codes(codes, labels))

    def _batch_limit(self) -> int:
        """How many events may be learned before the model must look at its counts again."""
        return 1 << 62

    def _added(self, c: int) -> None:
        """Hook run after one event of class index ``c`` was added (views refresh caches here)."""

    def _learned(self, n: int) -> None:
        """Hook run after ``n`` events were learned (TAN rebuilds its tree here)."""

    # ------------------------------------------------------------------ inference

    def _naive_jll(self, enc: Encoded) -> np.ndarray:
        """log P(c) + Σ_i log P(x_i | c) over the discrete and Gaussian features of ``enc``."""
        s, a = self._stats, self._alpha
        C = s.n_classes
        cc = s.class_count[:C]
        jll = np.log(cc + a) - math.log(cc.sum() + a * C)
        cols, feats = enc.cols, enc.feats
        if len(cols):
            n_vals = s.n_values[feats] + (cols == 0)
            jll = jll + (np.log(s.value_count[:C, cols] + a) - np.log(s.feat_count[:C, feats] + a * n_vals)).sum(1)
        if len(enc.gslots):
            jll = jll + s.gaussian_loglik(enc.gslots, enc.gx, getattr(self, "var_smoothing", 0.0))
        return jll

    def _naive_jll_many(self, D, dfeats, G, gslots) -> np.ndarray:
        """Batch :meth:`_naive_jll`: shape (rows, C)."""
        s, a = self._stats, self._alpha
        C = s.n_classes
        cc = s.class_count[:C]
        jll = np.broadcast_to(np.log(cc + a) - math.log(cc.sum() + a * C), (len(D), C)).copy()
        if D.shape[1]:
            miss = D < 0
            Dc = np.where(miss, 0, D)
            n_vals = np.maximum(s.n_values[dfeats][None, :] + (D == 0), 1)  # masked entries may have none
            num = np.log(s.value_count[:C][:, Dc] + a)  # (C, R, k)
            den = np.log(s.feat_count[:C, dfeats][:, None, :] + a * n_vals[None])
            term = np.where(miss[None], 0.0, num - den)
            jll += term.sum(2).T
        if G.shape[1]:
            jll += s.gaussian_loglik(gslots, G, getattr(self, "var_smoothing", 0.0))
        return jll

    def _jll(self, enc: Encoded) -> np.ndarray:
        return self._naive_jll(enc)

    def _jll_many(self, D, dfeats, G, gslots) -> np.ndarray:
        return self._naive_jll_many(D, dfeats, G, gslots)

    def _log_prior(self) -> np.ndarray:
        s, a = self._stats, self._alpha
        cc = s.class_count[: s.n_classes]
        return np.log(cc + a) - math.log(cc.sum() + a * s.n_classes)

    def _log_posterior(self, x: dict) -> np.ndarray:
        jll = self._jll(self._stats.encode(x))
        return _normalise(jll[None, :], self._log_prior())[0]

    def predict_proba_one(self, x: dict) -> dict:
        """The posterior P(c | x) over every class seen so far (empty before any learning)."""
        if not self._stats.n_classes:
            return {}
        p = np.exp(self._log_posterior(x))
        return dict(zip(self._stats.classes, p.tolist()))

    def predict_one(self, x: dict):
        """The Bayes decision: the most probable class, or with ``loss`` the class of least risk."""
        s = self._stats
        if not s.n_classes:
            return None
        if self._decision is None:
            # the most probable class: an argmax, which needs no normalisation
            jll = self._jll(s.encode(x))
            i = int(jll.argmax())
            if jll[i] == -math.inf:
                i = int(self._log_prior().argmax())
            return s.classes[i]
        lp = self._log_posterior(x)
        return s.classes[self._decide(lp[None, :])[0]]

    def predict_and_proba_one(self, x: dict) -> tuple:
        """``(predict_one(x), predict_proba_one(x))`` from one pass over the counts.

        >>> from stream_nb import NaiveBayes
        >>> model = NaiveBayes()
        >>> model.learn_one({"sky": "sunny"}, "play")
        >>> model.predict_and_proba_one({"sky": "sunny"})
        ('play', {'play': 1.0})
        """
        s = self._stats
        if not s.n_classes:
            return None, {}
        lp = self._log_posterior(x)
        return s.classes[self._decide(lp[None, :])[0]], dict(zip(s.classes, np.exp(lp).tolist()))

    def _decide(self, log_post: np.ndarray) -> np.ndarray:
        """Index of the decided class per row of ``log_post`` (rows, C).

        With a loss matrix λ, the conditional risk of predicting j is
        R(j | x) = Σ_i λ[i, j] P(i | x) and the decision is its minimiser.
        """
        if self._decision is None:
            return log_post.argmax(1)
        risk = np.exp(log_post) @ self._decision.matrix(self._stats.classes)
        return risk.argmin(1)

    def risk_one(self, x: dict) -> dict:
        """The conditional risk R(c | x) of predicting each class (needs ``loss``; else the 0-1 risk)."""
        s = self._stats
        if not s.n_classes:
            return {}
        p = np.exp(self._log_posterior(x))
        lam = self._decision.matrix(s.classes) if self._decision is not None else 1.0 - np.eye(s.n_classes)
        return dict(zip(s.classes, (p @ lam).tolist()))

    def _log_posterior_many(self, X: pd.DataFrame) -> np.ndarray:
        D, dfeats, G, gslots = self._stats.encode_frame(X, learn=False)
        return _normalise(self._jll_many(D, dfeats, G, gslots), self._log_prior())

    def predict_proba_many(self, X: pd.DataFrame) -> pd.DataFrame:
        if not self._stats.n_classes:
            return pd.DataFrame(index=X.index)
        p = np.exp(self._log_posterior_many(X))
        return pd.DataFrame(p, index=X.index, columns=list(self._stats.classes))

    def predict_many(self, X: pd.DataFrame) -> pd.Series:
        s = self._stats
        if not s.n_classes:
            return pd.Series([None] * len(X), index=X.index, dtype=object)
        idx = self._decide(self._log_posterior_many(X))
        return pd.Series([s.classes[i] for i in idx], index=X.index)

    # ------------------------------------------------------------------ merging and state

    def merge(self, other: "BayesClassifier") -> "BayesClassifier":
        """Add the counts of ``other`` (same model type) into this model; return self.

        Counts are additive, so merging a model trained on stream A with one
        trained on stream B gives the model trained on A then B.
        """
        if type(other) is not type(self):
            raise MergeError(f"cannot merge a {type(other).__name__} into a {type(self).__name__}")
        self._stats.merge(other._stats)
        self._merged()
        return self

    def _merged(self) -> None:
        """Hook run after a merge."""

    def _extra_state(self) -> tuple[dict, dict]:
        return {}, {}

    def _load_extra_state(self, arrays: dict, meta: dict) -> None:
        pass

    def state(self) -> tuple[dict, dict]:
        """The model's full state as ``(arrays, meta)``: numpy arrays and JSON-able metadata.

        ``type(model).from_state(*model.state())`` rebuilds an equal model; no pickle is involved.
        """
        arrays, meta = self._stats.state()
        extra_arrays, extra_meta = self._extra_state()
        arrays.update({f"model.{k}": v for k, v in extra_arrays.items()})
        return arrays, {"model": type(self).__name__, "params": self._get_params(), "stats": meta, "extra": extra_meta}

    @classmethod
    def from_state(cls, arrays: dict, meta: dict) -> "BayesClassifier":
        if meta.get("model") != cls.__name__:
            raise ValueError(f"state is of a {meta.get('model')!r} model, not {cls.__name__!r}")
        model = cls(**meta["params"])
        model._stats = Stats.from_state({k: v for k, v in arrays.items() if not k.startswith("model.")}, meta["stats"])
        model._load_extra_state({k[6:]: v for k, v in arrays.items() if k.startswith("model.")}, meta["extra"])
        return model
