"""Incremental naive Bayes: categorical counts with Lidstone smoothing, Gaussian numeric features."""

from __future__ import annotations

import numpy as np

from ..stats import DEFAULT_MEMORY_BUDGET
from ..kernels import NO_DETECTOR, Addresses, compiled
from ..options import BINNED, EM, Gaussian, Option
from ._base import BayesClassifier
from ._keywords import takes_options
from ._em import add_estep, assemble, naive_bayes_blocks

__all__ = ["NaiveBayes"]

_NO_MORE = np.zeros((0, 0), dtype=np.int64)
_NO_LOSS = np.zeros((0, 0))
_NONE = np.zeros(0)
#: The log table's length (:func:`~stream_nb.kernels._naive.naive_logs`): at first, and at most (4 MiB: a
#: count past it is logged as it is refreshed).
_LOG_TABLE = (1 << 10, 1 << 19)


class NaiveBayes(BayesClassifier):
    """Incremental naive Bayes over categorical and numeric features.

    Categorical values are counted with Lidstone smoothing; numeric ones are one Gaussian per class, its
    variance floored so that one far value cannot swamp it (or, with a discretiser, counted in bins).
    Missing values (``None``, NaN, an absent key) drop out of the product.

    Parameters
    ----------
    alpha
        Lidstone smoothing, > 0 (1.0 is Laplace's correction).
    types
        ``{feature: "categorical" | "numeric"}`` overriding the type inferred from the first value.
    loss
        Loss matrix ``{truth: {prediction: cost}}``: predict the class of least expected cost (pairs
        left out cost 0 on the diagonal, 1 elsewhere).
    numeric
        :class:`~stream_nb.Gaussian` (default) or a discretiser: :class:`~stream_nb.MDL`,
        :class:`~stream_nb.EqualFrequency`, :class:`~stream_nb.Edges`.
    missing
        :class:`~stream_nb.EM` (default): learn from events with missing values by online EM (and from
        unlabeled ones with ``EM(unlabeled=True)``); :class:`~stream_nb.Ignore`: skip what is missing.
    forgetting
        :class:`~stream_nb.Window`, :class:`~stream_nb.Decay`, or None (forget nothing).
    drift_detector
        A river drift detector, or its name (``"ddm"``): on a drift, switch to fresh counts.
    memory_budget
        Bytes the counts may take (default 256 MiB; None: no bound); tables beyond it turn sparse.

    Examples
    --------
    >>> from stream_nb import NaiveBayes
    >>> model = NaiveBayes()
    >>> stream = [
    ...     ({"outlook": "sunny", "windy": False, "temp": 29.0}, "no"),
    ...     ({"outlook": "sunny", "windy": True, "temp": 27.0}, "no"),
    ...     ({"outlook": "rain", "windy": False, "temp": 21.0}, "yes"),
    ...     ({"outlook": "overcast", "windy": True, "temp": 18.0}, "yes"),
    ...     ({"outlook": "rain", "windy": False, "temp": 20.0}, "yes"),
    ... ]
    >>> for x, y in stream:
    ...     model.learn_one(x, y)
    >>> model.predict_proba_one({"outlook": "sunny", "windy": False})
    {'no': 0.6923, 'yes': 0.3077}
    >>> model.predict_one({"outlook": "rain"})
    'yes'

    With a loss matrix, a costly mistake weighs more than a likely one:

    >>> cautious = NaiveBayes(loss={"yes": {"no": 50.0}})
    >>> for x, y in stream:
    ...     cautious.learn_one(x, y)
    >>> cautious.predict_one({"outlook": "sunny", "windy": False})
    'yes'

    Notes
    -----
    The docs' *The models*, *Numeric features* and *Missing values and EM* pages give the estimates,
    the variance floor and online EM.

    References
    ----------
    Nigam, K., McCallum, A., Thrun, S., Mitchell, T. (2000). Text classification from labeled and unlabeled
    documents using EM. Machine Learning, 39, 103-134.

    """

    #: The option each of these parameters is when it is None (river keeps a signature's defaults immutable).
    _option_defaults = {"numeric": Gaussian(), "missing": EM()}

    @takes_options
    def __init__(
        self,
        alpha: float = 1.0,
        types: dict | None = None,
        loss: dict | None = None,
        numeric: Option | None = None,
        missing: Option | None = None,
        forgetting: Option | None = None,
        drift_detector=None,
        memory_budget: int | None = DEFAULT_MEMORY_BUDGET,
    ):
        self.alpha = alpha
        self.types = types
        self.loss = loss
        self.numeric = numeric
        self.missing = missing
        self.forgetting = forgetting
        self.drift_detector = drift_detector
        self.memory_budget = memory_budget
        self._setup(pairs=False)

    def _kernel_arrays(self, grow: bool = False) -> Addresses:
        """The address table of the arrays the kernels work on (:data:`~stream_nb.kernels._naive.ARRAYS`):
        the store's counts and the tables of their logs, rebuilt when the counts changed outside a kernel;
        with ``grow`` (before counting), the log table made longer (up to ``_LOG_TABLE[1]``) once a kernel
        met a whole count past its end."""
        s = self._stats
        key = (s.epoch, s.version, s.keeps_observed, id(s.value_count))
        arrays = self.__dict__.get("_karrays")
        held, a = self.__dict__.get("_log_table"), self._alpha_given  # (decay's smoothing: logged, not read)
        if held is None or held[0] != a or (grow and held[1][1] and len(held[1]) < _LOG_TABLE[1] + 2):
            logs = None if held is None or held[0] != a else held[1]
            n = _LOG_TABLE[0] if logs is None else min(
                _LOG_TABLE[1], max(2 * (len(logs) - 2), int(min(logs[1], _LOG_TABLE[1])) + 1))
            held = self._log_table = (a, np.empty(n + 2))  # (its smoothing, and the table)
            compiled().naive_logs(held[1], a)
            arrays = None
        if arrays is None or arrays.key != key:
            twin = s.keeps_observed
            arrays = self._karrays = Addresses(key, (
                s.class_count, s.value_count, s.feat_count, s.n_values,
                s.obs_value_count if twin else s.value_count, s.obs_feat_count if twin else s.feat_count,
                s.g_n, s.g_mean, s.g_m2, np.empty(s.value_count.shape[::-1]), np.empty(s.feat_count.shape[::-1]),
                held[1]))
            compiled().naive_tables(arrays.table, self._alpha)
        return arrays

    def _counted(self, arrays: Addresses, many: bool) -> None:
        """The kernel counted events: the store marks the change, and the tables, refreshed as it went, stay."""
        s = self._stats
        s.mark_counted(many)
        arrays.key = (s.epoch, s.version, s.keeps_observed, id(s.value_count))

    _accepts = {"numeric": (Gaussian, *BINNED)}

    _kernel_modules = ("_naive",)

    def _kernel_block(self, D, dfeats, G, gslots, yc, more, out, learn: bool, decay=None) -> int:
        """Score each row of an encoded block into ``out`` (log posteriors) and, with ``learn``, count each
        labelled row after scoring it, feeding the drift detector first; return the rows done
        (:func:`~stream_nb.kernels._naive.naive_block`). ``decay``: the rows' weights and smoothing
        (:func:`~stream_nb.learners._decay_runs.decay_run`)."""
        s = self._stats
        arrays = self._kernel_arrays(learn)
        loss = _NO_LOSS if self._decision is None else np.ascontiguousarray(self._decision.matrix(s.classes))
        weights, alphas = (_NONE, _NONE) if decay is None else (decay.weight, self._alpha_given * decay.inflation)
        done = compiled().naive_block(
            arrays.table, D, dfeats, _NO_MORE if more is None else more, G, gslots, yc, weights, alphas, out, False,
            learn, s.keeps_observed, s.n_classes, self._alpha, self._var_smoothing, loss, *self._kernel_detector())
        if learn and (yc[:done] >= 0).any():
            self._counted(arrays, True)
            if decay is not None:
                arrays.key = None  # the tables did not follow the decayed counts
        return done

    def _count(self, enc, c: int, w: float) -> None:
        s, f = self._stats, self._forget
        if ((f is not None and f.half_life) or s.journal is not None or s.count_layer() is not s
                or not len(enc.cols) + len(enc.gslots)):
            s.add(enc, c, w)  # decay's scale, receipts and a second layer: the store's own path
            return
        arrays = self._kernel_arrays(True)
        twin = s.keeps_observed
        compiled().naive_learn(arrays.table, enc.cols, enc.feats, enc.gx, enc.gslots, c, float(w), twin,
                               self._alpha_given if f is None else self._alpha)
        s.mark_counted(False)  # (_counted, its key's other parts unchanged: one event moves the version alone)
        key = arrays.key
        arrays.key = (key[0], s.version, twin, key[3])

    def _jll(self, enc):
        f = self._forget
        if f is not None and f.half_life:
            return self._naive_jll(enc)  # (decay changes every cell's smoothing each event: no table)
        return self._kernel_score(enc, True)

    def _decided(self, enc):
        f = self._forget
        if self._decision is not None or (f is not None and f.half_life):
            return super()._decided(enc)
        classes = self._stats.schema.labels.classes  # the most probable class, decided in the kernel
        return classes[compiled().naive_decide(self._kernel_arrays().table, enc.cols, enc.feats, enc.gx, enc.gslots,
                                               len(classes), self._alpha_given if f is None else self._alpha,
                                               self._var_smoothing)]

    def _posterior(self, enc):
        f = self._forget
        if f is not None and f.half_life:
            return super()._posterior(enc)
        return self._kernel_score(enc, False)  # normalised as the kernel normalises a run's rows

    def _kernel_score(self, enc, joint: bool) -> np.ndarray:
        """log P(c, x) (``joint``) or log P(c | x) of one encoded event (a class must be known)."""
        s = self._stats
        out = np.empty(s.n_classes)
        compiled().naive_score(self._kernel_arrays().table, enc.cols, enc.feats, enc.gx, enc.gslots, out, joint,
                               s.n_classes, self._alpha, self._var_smoothing)
        return out

    def _jll_many(self, D, dfeats, G, gslots):
        """(rows, C) log P(c, x) of a batch by the block kernel, scoring only (under decay from the counts
        themselves, with the smoothing as it stands)."""
        s, f = self._stats, self._forget
        R = len(D)
        alphas = np.full(R, float(self._alpha)) if f is not None and f.half_life else _NONE
        out = np.empty((R, s.n_classes))
        if not R:  # (the kernel reads the first row's width)
            return out
        compiled().naive_block(self._kernel_arrays().table, np.ascontiguousarray(D, dtype=np.int64), dfeats, _NO_MORE,
                               np.ascontiguousarray(G, dtype=float), gslots, np.full(R, -1, dtype=np.int64), alphas,
                               alphas, out, True, False, s.keeps_observed, s.n_classes, self._alpha,
                               self._var_smoothing, _NO_LOSS, *NO_DETECTOR)
        return out

    # ------------------------------------------------------------------ EM

    def _add_expected(self, enc, c, w, miss):
        """E-step: the missing attributes are independent given the class, so
        P(x_m = v | x_o, c) = P̂(v | c), read off the observed-only counts; then the M-step."""
        s = self._stats
        add_estep(s, enc, c, w, assemble(enc, naive_bayes_blocks(s.observed(), self._alpha, miss, c), s.pairs))

    def _missing_posterior(self, enc, c, miss):
        return naive_bayes_blocks(self._stats, self._alpha, miss, c)

    # ------------------------------------------------------------------ runs

    def _run_ready(self) -> bool:
        return not self.learn_unlabeled

    @classmethod
    def _unit_test_params(cls):
        yield {}
        yield {"alpha": 0.5, "numeric": Gaussian(var_smoothing=1e-6)}
