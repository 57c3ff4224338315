"""What every stream_nb classifier shares: the template around one store of counts.

A model is a view of a :class:`~stream_nb._stats.Stats`. Subclasses say how
their statistics are kept (``_pairs``, ``_numeric``) and how a class's joint
log-likelihood is read off them (``_jll`` for one event, ``_jll_many`` for a
batch). Everything else lives here once: learning one event or a batch,
normalising with one logsumexp, Bayes decision with a loss matrix, merging,
and the plain-data state.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pandas as pd
from river import base

from ._running import exclusive_counts, naive_terms, running_moments
from ._stats import GAUSS, Encoded, Stats, gaussian_loglik, json_type
from .exceptions import ConfigError, InvalidEventError, MergeError

__all__ = ["BayesClassifier", "StructuredClassifier", "logsumexp"]

_NONE = np.empty(0, dtype=np.int64)


def _assemble(enc, blocks, pairs: bool):
    """Build ``(u, m, feats_u, J)`` from the observed columns and the missing blocks.

    ``blocks`` lists ``(feature, columns, expected indicator)`` per missing
    feature, the missing features independent of each other given the class;
    ``J`` (None unless ``pairs``) is then E[e eᵀ].
    """
    k = len(enc.cols)
    if blocks:
        u = np.concatenate([enc.cols] + [b[1] for b in blocks])
        m = np.concatenate([np.ones(k)] + [b[2] for b in blocks])
        feats_u = np.concatenate([enc.feats] + [np.full(len(b[1]), b[0], dtype=np.int64) for b in blocks])
    else:
        u, m, feats_u = enc.cols, np.ones(k), enc.feats
    if not pairs:
        return u, m, feats_u, None
    J = np.outer(m, m)
    lo = k
    for _, cols, q in blocks:  # one attribute takes one value: its own block is diagonal
        hi = lo + len(cols)
        J[lo:hi, lo:hi] = np.diag(q)
        lo = hi
    return u, m, feats_u, J


def naive_bayes_blocks(s, a: float, miss: np.ndarray, c: int) -> list:
    """``(feature, columns, P̂(v | c))`` of each missing feature: the posterior under naive Bayes
    (missing attributes independent of everything else given the class), read off store ``s``."""
    out = []
    for f in miss.tolist():
        cols = s.columns_of(f)
        out.append((f, cols, (s.value_count[c, cols] + a) / (s.feat_count[c, f] + a * len(cols))))
    return out


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


def _json_text(label) -> str | None:
    """A number's or a boolean's JSON text (``1`` -> ``"1"``, ``True`` -> ``"true"``); None for anything else."""
    t = json_type(label)
    if t == "boolean":
        return "true" if label else "false"
    if t == "number":
        return str(label)
    return None


def _loss_entry(table: dict, label):
    """``table``'s entry for class ``label``, or None: under the label's JSON text when the label is a
    number or a boolean (a loss file's keys are strings: ``"1"``, ``"true"``), else under a key of the
    label's own JSON type equal to it (``True`` is not the key ``1``, though Python holds ``True == 1``)."""
    text = _json_text(label)
    if text is not None and text in table:
        return table[text]
    t = json_type(label)
    return next((v for k, v in table.items() if json_type(k) == t and k == label), None)


class _LossMatrix:
    """``loss[truth][prediction]``: the cost λ of predicting ``prediction`` when the truth is ``truth``.

    Pairs the matrix leaves out cost 0 on the diagonal and 1 elsewhere (0-1 loss),
    so classes that appear later in the stream are handled. A label's row and
    column are found by :func:`_loss_entry`.
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
                row = _loss_entry(self.loss, t) or {}
                for j, p in enumerate(classes):
                    cost = _loss_entry(row, p)
                    if cost is not None:
                        m[i, j] = float(cost)
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
        if self.missing not in ("em", "ignore"):
            raise ConfigError(f"missing: expected 'em' or 'ignore', got {self.missing!r}")
        if not isinstance(self.learn_unlabeled, bool):
            raise ConfigError(f"learn_unlabeled: expected True or False, got {self.learn_unlabeled!r}")
        uw = self.unlabeled_weight
        if isinstance(uw, bool) or not isinstance(uw, (int, float)) or not 0 <= uw < math.inf:
            raise ConfigError(f"unlabeled_weight: expected a finite number >= 0, got {uw!r}")
        self._stats = Stats(
            pairs=self._pairs,
            observed=self.missing == "em",  # EM's E-step reads the observed-only counts
            tuples=self._tuples(),
            max_table_cells=getattr(self, "max_table_cells", None),
            numeric=self._numeric,
            types=self.types,
            bins=getattr(self, "bins", 5),
            warmup=getattr(self, "warmup", 100),
            bin_edges=getattr(self, "bin_edges", None),
        )

    def _tuples(self) -> int:
        """Order of the joint counts beyond pairs that the model needs (0: none)."""
        return 0

    @property
    def _multiclass(self):
        return True

    @property
    def classes(self) -> list:
        """Every class seen so far, in order of first appearance."""
        return list(self._stats.classes)

    @property
    def label_type(self) -> str | None:
        """The JSON type of every label of this model, ``"string"``, ``"number"`` or ``"boolean"``
        (another Python type: its name), fixed by the first label; ``None`` before it.

        A label of another type raises :class:`~stream_nb.exceptions.LabelTypeError`: ``True`` would
        merge with the class ``1`` (Python holds ``True == 1``), and ``"1"`` would be a second class
        written with the same JSON key as ``1``.

        >>> from stream_nb import NaiveBayes
        >>> model = NaiveBayes()
        >>> model.learn_one({"sky": "sun"}, 1)
        >>> model.label_type
        'number'
        >>> model.learn_one({"sky": "sun"}, True)
        Traceback (most recent call last):
        ...
        stream_nb.exceptions.LabelTypeError: label: expected a number, the type of this model's labels (set by its first label, 1), got a boolean, true; one stream's labels must share one JSON type
        """
        return self._stats.label_type

    @property
    def n_learned(self) -> float:
        """Number of events learned (fractional with EM's weights)."""
        return self._stats.n_seen

    # ------------------------------------------------------------------ learning

    def learn_one(self, x: dict, y, w: float = 1.0) -> None:
        """Learn one event (``y=None`` with ``learn_unlabeled=True``: semi-supervised EM).

        A label of another JSON type than the model's (see :attr:`label_type`) raises
        :class:`~stream_nb.exceptions.LabelTypeError`, and a value of another type than its
        feature's :class:`~stream_nb.exceptions.FeatureTypeError`; the model is then unchanged.
        """
        s = self._stats
        if y is None or (isinstance(y, float) and y != y):
            if self.learn_unlabeled:
                self._learn_unlabeled(x, w * self.unlabeled_weight)
                return
            s._check_label(y)  # raises: a missing label
        s._check_label(y)
        enc = s.encode_learn(x, y)
        c = s.class_of(y)
        miss = s.missing_of(enc) if self.missing == "em" else None
        if miss is not None and len(miss):
            self._add_expected(enc, c, w, miss)
        else:
            s.add(enc, c, w)
        self._added(c)
        self._learned(1)

    # ------------------------------------------------------------------ EM

    def _add_expected(self, enc, c: int, w: float, miss: np.ndarray) -> None:
        """E-step (under the observed-only counts), then M-step: add the expected counts."""
        s = self._stats
        u, m, feats_u, J = self._estep(enc, c, miss)
        s.add_expected(c, w, u, m, feats_u, J)
        s.add_observed(enc, c, w)
        s.add_gaussian(c, w, enc.gslots, enc.gx)

    def _learn_unlabeled(self, x: dict, w: float) -> None:
        """Semi-supervised EM (Nigam et al., 2000): spread the event over the classes by posterior."""
        s = self._stats
        if not s.n_classes:
            return  # no class to spread the event over yet
        enc = s.encode_learn(x)
        post = np.exp(_normalise(self._jll(enc)[None, :], self._log_prior())[0])
        miss = s.missing_of(enc) if self.missing == "em" else _NONE
        expected = [self._estep(enc, c, miss) if len(miss) else None for c in range(len(post))]
        for c, p in enumerate(post.tolist()):
            if w * p == 0.0:
                continue
            if expected[c] is None:
                s.add(enc, c, w * p)
            else:
                s.add_expected(c, w * p, *expected[c])
                s.add_observed(enc, c, w * p)
                s.add_gaussian(c, w * p, enc.gslots, enc.gx)
            self._added(c)
        self._learned(1)

    def _estep(self, enc, c: int, miss: np.ndarray):
        """EM's E-step: the expected counts of an event of class ``c`` whose features ``miss`` are missing.

        Returns ``(u, m, feats_u, J)`` for :meth:`Stats.add_expected` (``J`` None
        without pair counts). The parameters are read from the observed-only
        counts (:meth:`Stats.observed`), never from counts that earlier
        imputations went into. Here, for naive Bayes, the missing attributes
        are independent given the class: P(x_m = v | x_o, c) = P̂(v | c).
        """
        s = self._stats.observed()
        return _assemble(enc, naive_bayes_blocks(s, self._alpha, miss, c), s.pairs)

    def _missing_posterior(self, enc, c: int, miss: np.ndarray) -> list:
        """``(feature, columns, P(x_f = v | x_o, c))`` of each missing feature under the model as it
        predicts (its counts): what :meth:`impute_proba_one` mixes over the classes. Naive Bayes here."""
        return naive_bayes_blocks(self._stats, self._alpha, miss, c)

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

    def learn_many(self, X: pd.DataFrame, y: pd.Series) -> None:
        """Learn a batch: the same model as ``learn_one`` over the rows in order.

        With ``missing="em"``, a batch holding any missing value is learned
        row by row (each E-step depends on the counts the previous rows left);
        complete batches are counted in one vectorised pass.

        A feature seen for the first time takes its type from the column's
        dtype (a float column is numeric). pandas stores an integer column
        that has missing values as float, so declare such features in
        ``types`` (or build the frame with the nullable ``"Int64"`` dtype) to
        keep them categorical as ``learn_one`` would.

        A label or a value that ``learn_one`` would refuse at its row (given the rows before it)
        raises the same error, and nothing of the batch is learned.
        """
        if len(X) != len(y):
            raise ValueError(f"learn_many: X has {len(X)} rows but y has {len(y)} labels")
        # every label of the batch is of the model's label type (a fresh model: of the first one's), checked
        # before anything changes; one per value unless pandas holds them in one dtype (it factorises True and 1 as one)
        uniform = isinstance(y, pd.Series) and y.dtype != object and not isinstance(y.dtype, pd.CategoricalDtype)
        self._stats.check_labels(pd.unique(y).tolist() if uniform else list(y))
        if self._needs_rows(X, y):
            # EM's E-step for a row depends on the counts left by the rows before it;
            # the whole batch is checked first so that a bad row leaves no trace
            self._stats.validate_frame(X)
            for row, label in zip(X.to_dict("records"), list(y)):
                self.learn_one(row, None if label is None or (isinstance(label, float) and label != label) else label)
            return
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

    def _needs_rows(self, X: pd.DataFrame, y) -> bool:
        """True when a batch must be learned row by row to equal ``learn_one``:
        with EM and a missing value anywhere, or unlabeled rows to learn from."""
        if self.learn_unlabeled and pd.isna(pd.Series(list(y), dtype=object)).any():
            return True
        if self._stats.frame_promotes(X):
            return True  # a feature turns numeric at one row: the rows before it count as categories
        if self.missing != "em":
            return False
        s = self._stats
        if any(s.features[f] not in X.columns for f in s.discrete_features().tolist()):
            return True
        return bool(X.isna().to_numpy().any())

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
        s = self._stats
        key = (s.epoch, s.version)
        cached = getattr(self, "_prior_cache", None)
        if cached is None or cached[0] != key:
            a = self._alpha
            cc = s.class_count[: s.n_classes]
            cached = self._prior_cache = (key, np.log(cc + a) - math.log(cc.sum() + a * s.n_classes))
        return cached[1]

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

    def prequential_many(self, xs: list, ys: list) -> list:
        """Predict each event, then learn it, in order: the prequential loop over a batch.

        The same model, predictions and probabilities as, for each event in
        turn, ``predict_and_proba_one(x)`` then ``learn_one(x, y)`` when ``y``
        is a label (or is None with ``learn_unlabeled=True``), up to
        floating-point rounding. An event that either step rejects is neither
        learned nor predicted: its entry is the
        :class:`~stream_nb.exceptions.InvalidEventError`, and the loop goes on.

        Models with a vectorised path (NaiveBayes, TAN) score and learn each run of
        events that only changes counts in one pass, with the running counts
        every event would have seen (see :mod:`stream_nb._running`).

        Returns one ``(prediction, proba)`` or error per event.

        >>> from stream_nb import NaiveBayes
        >>> model = NaiveBayes()
        >>> xs = [{"sky": "sun"}, {"sky": "rain"}, {"sky": ["?"]}, {"sky": "sun"}, {"sky": "sun"}]
        >>> for result in model.prequential_many(xs, ["play", "stay", "play", "play", None]):
        ...     print(result)
        (None, {})
        ('play', {'play': 1.0})
        feature 'sky': expected a categorical value (str, int or bool), got list ['?']
        ('play', {'play': 0.6667, 'stay': 0.3333})
        ('play', {'play': 0.7714, 'stay': 0.2286})
        """
        return list(self.prequential_iter(xs, ys))

    def prequential_iter(self, xs: list, ys: list):
        """:meth:`prequential_many`, yielding each result as soon as its event is learned.

        A consumer that acts on each result (the daemon sends it) has then
        acted on exactly the events the model learned, even if an unexpected
        error escapes part-way.
        """
        if len(xs) != len(ys):
            raise ValueError(f"prequential_many: {len(xs)} events but {len(ys)} labels")
        i, n = 0, len(xs)
        while i < n:
            run: list = []
            i = self._prequential_run(xs, ys, i, run)
            yield from run
            if i < n:
                yield self._prequential_one(xs[i], ys[i])
                i += 1

    def _prequential_one(self, x: dict, y):
        try:
            result = self.predict_and_proba_one(x)
            if y is not None or self.learn_unlabeled:
                self.learn_one(x, y)
        except InvalidEventError as exc:
            return exc
        return result

    #: Most events scored and learned in one vectorised pass of prequential_many.
    _RUN = 1024
    #: Runs take complete events only (always; else only under EM, whose missing values need E-steps).
    _run_complete = False

    def _run_ready(self) -> bool:
        """Whether runs may be vectorised now (the model defines :meth:`_run_terms` and is in a state for it)."""
        return False

    def _run_terms(self, D: np.ndarray, yc: np.ndarray, C: int) -> np.ndarray:
        """(rows, C): the discrete attributes' log-likelihood terms of each row of a run, under the
        counts each row would have seen (see :mod:`stream_nb._running`); here naive Bayes' terms."""
        return naive_terms(self._stats, D, yc, C, self._alpha)

    def _prequential_run(self, xs: list, ys: list, start: int, out: list) -> int:
        """Append the results of a vectorised run of events from ``start``; return where it stopped.

        A run is what :meth:`Stats.encode_run` accepts: events that only change counts (complete
        ones under EM). Each is scored with the stored counts plus those of the run's earlier
        events: the class prior and the Gaussian moments here, the discrete terms by
        :meth:`_run_terms`. Then the run is learned in one :meth:`Stats.add_many`.
        """
        s = self._stats
        C = s.n_classes
        if not C or not self._run_ready():
            return start
        limit = min(self._RUN, self._batch_limit())
        complete = self._run_complete or self.missing == "em"
        stop, D, G, yc = s.encode_run(xs, ys, start, complete=complete, limit=limit)
        if stop - start < 2:
            return start  # a single event: the one-event path is cheaper
        a = self._alpha
        cc = s.class_count[:C] + exclusive_counts(yc, C)
        prior = np.log(cc + a) - np.log(cc.sum(1, keepdims=True) + a * C)
        jll = prior + self._run_terms(D, yc, C)
        if G.shape[1]:
            Gs = G.shape[1]
            n, mean, m2 = running_moments(G, yc, s.g_n[:C, :Gs], s.g_mean[:C, :Gs], s.g_m2[:C, :Gs])
            jll += gaussian_loglik(n, mean, m2, G, getattr(self, "var_smoothing", 0.0))
        dead = ~np.isfinite(jll).any(1)  # as in predict_proba_one: every class impossible -> the prior
        jll[dead] = prior[dead]
        log_post = jll - logsumexp(jll, axis=1)[:, None]
        classes = s.classes
        out.extend(
            (classes[i], dict(zip(classes, p)))
            for i, p in zip(self._decide(log_post).tolist(), np.exp(log_post).tolist())
        )
        s._last = None
        labeled = yc >= 0
        if labeled.any():
            s.add_many(D[labeled], np.arange(D.shape[1]), G[labeled], np.arange(G.shape[1]), yc[labeled])
            self._learned(int(labeled.sum()))
        return stop

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
        """Model-specific state beyond the counts (TAN's tree, SPODE's scores, KDB's structure)."""
        return {}, {}

    def _load_extra_state(self, arrays: dict, meta: dict) -> None:
        """Restore what :meth:`_extra_state` saved (models with a structure override both)."""

    def state(self) -> tuple[dict, dict]:
        """The model's full state as ``(arrays, meta)``: numpy arrays and JSON-able metadata.

        ``type(model).from_state(*model.state())`` rebuilds an equal model; no pickle is involved.
        """
        arrays, meta = self._stats.state()
        extra_arrays, extra_meta = self._extra_state()
        arrays.update({f"model.{k}": v for k, v in extra_arrays.items()})
        # the parameters are the model's own objects (a loss matrix, bin edges): the state gets copies
        params = copy.deepcopy(self._get_params())
        return arrays, {"model": type(self).__name__, "params": params, "stats": meta, "extra": extra_meta}

    @classmethod
    def from_state(cls, arrays: dict, meta: dict) -> "BayesClassifier":
        """Rebuild the model :meth:`state` describes.

        The model owns everything it keeps: no array is a view of ``arrays`` and
        no dict or list is one of ``meta``'s. Those may be read-only
        (:func:`stream_nb.load` gives views of the file's bytes) or be shared
        (``from_state(arrays, meta)`` twice), and a model learns by writing into
        its arrays in place.
        """
        if not isinstance(meta, dict) or meta.get("model") != cls.__name__:
            got = meta.get("model") if isinstance(meta, dict) else meta
            raise ValueError(f"state is of a {got!r:.60} model, not {cls.__name__!r}")
        for key in ("params", "stats", "extra"):
            if not isinstance(meta.get(key), dict):
                raise ValueError(f"state: {key!r} must be an object, got {meta.get(key)!r:.60}")
        meta = copy.deepcopy(meta)
        model = cls(**meta["params"])
        model._check_fits(meta["stats"])
        # the store copies the counts into arrays of its own (with room to grow)
        model._stats = Stats.from_state({k: v for k, v in arrays.items() if not k.startswith("model.")}, meta["stats"])
        # EM's E-step wants the observed-only counts (a state written before they existed does not say so)
        model._stats.wants_observed = model.missing == "em"
        # a model's own arrays (SPODE's running scores, TAN's tree, ...) may be kept as they come: copy them
        extra = {k[6:]: np.array(v, copy=True) for k, v in arrays.items() if k.startswith("model.")}
        model._load_extra_state(extra, meta["extra"])
        model._check_loaded()
        return model

    def _check_fits(self, stats: dict) -> None:
        """ValueError unless the state's store is the kind this model keeps (pair counts, numeric
        handling, t-way table): a store of another kind lacks tables the model reads."""
        s = self._stats
        for name, want in (("pairs", s.pairs), ("numeric", s.numeric), ("tuples", s.tuples)):
            got = stats.get(name, 0 if name == "tuples" else None)
            if got != want or type(got) is not type(want):
                raise ValueError(f"stats.{name} is {got!r:.60}; a {type(self).__name__} with these parameters "
                                 f"keeps {want!r}")

    def _check_loaded(self) -> None:
        """ValueError unless the model :meth:`from_state` built is consistent (models with a
        structure check it against their store here)."""


class StructuredClassifier(BayesClassifier):
    """A classifier whose structure (TAN's tree, SPODE's super-parent, KDB's parents) is
    rebuilt from the running counts every ``rebuild_every`` learned events and on ``rebuild()``.

    Subclasses define ``rebuild()`` and call :meth:`_setup_rebuilds` from ``__init__``.
    """

    #: Rebuild after a merge (when the model had been built), from the merged counts.
    _rebuild_after_merge = True

    def _setup_rebuilds(self) -> None:
        r = self.rebuild_every
        if isinstance(r, bool) or not isinstance(r, int) or r < 0:
            raise ConfigError(f"rebuild_every: expected an integer >= 0, got {r!r}")
        self._since_rebuild = 0
        self.n_rebuilds = 0

    def _learned(self, n: int) -> None:
        self._since_rebuild += n
        if self.rebuild_every and self._since_rebuild >= self.rebuild_every:
            self.rebuild()

    def _batch_limit(self) -> int:
        # a batch stops at the next rebuild, so that learn_many rebuilds where learn_one would
        return self.rebuild_every - self._since_rebuild if self.rebuild_every else 1 << 62

    def _merged(self) -> None:
        if self._rebuild_after_merge and self.n_rebuilds:
            self.rebuild()

    def _check_loaded(self) -> None:
        super()._check_loaded()
        since, n = self._since_rebuild, self.n_rebuilds
        if isinstance(since, bool) or not isinstance(since, int) or since < 0 or (
                self.rebuild_every and since > self.rebuild_every):
            raise ValueError(f"since_rebuild: expected an integer from 0 to rebuild_every={self.rebuild_every}, "
                             f"got {since!r:.60}")
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"n_rebuilds: expected an integer >= 0, got {n!r:.60}")
