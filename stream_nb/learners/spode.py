"""Super-parent one-dependence estimator (SPODE), its super-parent chosen from the stream."""

from __future__ import annotations

import numpy as np

from ..exceptions import InvalidEventError
from ..kernels import NO_DETECTOR, compiled
from ..stats import DEFAULT_MEMORY_BUDGET, Encoded, is_missing_label, set_pair_rule
from ..options import BINNED, EM, MDL, EqualFrequency, Option, SuperParent
from ._keywords import takes_options
from ._decision import logsumexp
from ._em import add_estep, mixture_posterior, naive_bayes_blocks, one_dependence_estep
from ._spode_kernel import NO_LOSS, NO_MORE, NO_WEIGHTS, UNLABELED, OneDependenceKernel
from ._structured import StructuredClassifier

__all__ = ["SPODE"]

_NO_COLUMNS = np.zeros(0, dtype=np.int64)


class SPODE(OneDependenceKernel, StructuredClassifier):
    """Super-parent one-dependence estimator: every attribute depends on the class and one super-parent.

    The estimates are :class:`~stream_nb.AODE`'s for one parent; a missing super-parent is summed out.
    With ``SuperParent(parent=None)`` the model scores every attribute's SPODE on each labeled event
    before learning it, and at each rebuild the one of lowest running mean log loss becomes the
    super-parent (naive Bayes before the first).

    Parameters
    ----------
    search
        :class:`~stream_nb.SuperParent` (default): ``parent``, the super-parent's name (None: chosen from
        the stream); ``rebuild_every``, learned events between choices (0: only on :meth:`rebuild`).
    alpha
        Lidstone smoothing, > 0.
    numeric
        How numeric features are binned: :class:`~stream_nb.MDL` (default),
        :class:`~stream_nb.EqualFrequency` or :class:`~stream_nb.Edges`; its ``warmup`` is also the
        events learned before the first choice.
    types
        ``{feature: "categorical" | "numeric" | "time"}`` overriding type inference (``"time"``: the
        event's time, not a feature).
    loss
        Loss matrix ``{truth: {prediction: cost}}`` for a Bayes decision.
    missing
        :class:`~stream_nb.EM` (default) or :class:`~stream_nb.Ignore` (see :class:`~stream_nb.NaiveBayes`).
    forgetting, drift_detector
        :class:`~stream_nb.Window`, :class:`~stream_nb.Decay` or None; a river drift detector.
    memory_budget
        Bytes the counts may take (default 256 MiB; None: no bound); tables beyond it turn sparse.

    Examples
    --------
    >>> from stream_nb import SPODE, SuperParent
    >>> model = SPODE(search=SuperParent(rebuild_every=8))
    >>> stream = [
    ...     ({"weather": "sun", "season": "summer", "wind": "calm"}, "beach"),
    ...     ({"weather": "rain", "season": "summer", "wind": "calm"}, "museum"),
    ...     ({"weather": "sun", "season": "winter", "wind": "gale"}, "museum"),
    ...     ({"weather": "sun", "season": "summer", "wind": "gale"}, "beach"),
    ... ] * 2
    >>> for x, y in stream:
    ...     model.learn_one(x, y)
    >>> model.super_parent
    'season'
    >>> model.predict_proba_one({"weather": "sun", "season": "summer"})
    {'beach': 0.8475, 'museum': 0.1525}

    By hand: P̂(beach, summer) = (4 + 1)/(8 + 2), P̂(sun | beach, summer) = (4 + 1)/(4 + 2),
    P̂(museum, summer) = (2 + 1)/(8 + 2), P̂(sun | museum, summer) = (0 + 1)/(2 + 2).

    Notes
    -----
    The docs' *The models* page gives the estimates and the schedule of choices.

    References
    ----------
    Keogh, E., Pazzani, M. (1999). Learning augmented Bayesian classifiers: a comparison of
    distribution-based and classification-based approaches. AISTATS, 225-230.

    """

    _rebuild_after_merge = False  # the choice rests on this model's own running scores

    @property
    def parent(self) -> str | None:
        """The fixed super-parent (None: chosen from the stream): the :class:`~stream_nb.SuperParent`'s ``parent``."""
        return self.search.parent

    @property
    def rebuild_every(self) -> int:
        """Learned events between two choices: the :class:`~stream_nb.SuperParent`'s ``rebuild_every``."""
        return self.search.rebuild_every

    _accepts = {"numeric": BINNED, "search": (SuperParent,)}

    #: The option each of these parameters is when it is None (river keeps a signature's defaults immutable).
    _option_defaults = {"search": SuperParent(), "numeric": MDL(), "missing": EM()}

    @takes_options
    def __init__(
        self,
        search: Option | None = None,
        alpha: float = 1.0,
        numeric: Option | None = None,
        types: dict | None = None,
        loss: dict | None = None,
        missing: Option | None = None,
        forgetting: Option | None = None,
        drift_detector=None,
        memory_budget: int | None = DEFAULT_MEMORY_BUDGET,
    ):
        self.search = search
        self.alpha = alpha
        self.numeric = numeric
        self.types = types
        self.loss = loss
        self.missing = missing
        self.forgetting = forgetting
        self.drift_detector = drift_detector
        self.memory_budget = memory_budget
        self._setup(pairs=True)
        self._setup_rebuilds()
        if self.parent is None and forgetting is None and drift_detector is None:
            set_pair_rule(self._stats, "parents")  # past the budget: keep the candidate super-parents' pairs
        self._chosen = self.parent  # the super-parent's name, or None (naive Bayes)
        self._loss_sum = np.zeros(0)
        self._loss_n = np.zeros(0)

    @classmethod
    def _unit_test_params(cls):
        yield {}
        yield {"search": SuperParent(rebuild_every=20), "numeric": EqualFrequency(bins=3, warmup=20)}  # both discretisers checked

    @property
    def super_parent(self):
        """The current super-parent's name (None: predicting as naive Bayes)."""
        return self._chosen

    @property
    def scores(self) -> dict:
        """Running mean prequential log loss of the SPODE rooted at each attribute (``parent=None``)."""
        names = self._stats.features
        return {names[f]: float(self._loss_sum[f] / self._loss_n[f]) for f in range(len(self._loss_n)) if self._loss_n[f]}

    # ------------------------------------------------------------------ choosing the parent

    def _learn(self, x: dict, y, w: float, known) -> None:
        if self.parent is None and not is_missing_label(y):
            # the event is scored before it is learned; an event that learning rejects leaves no score
            self._stats.check_label(y)
            saved = (self._loss_sum.copy(), self._loss_n.copy())
            try:
                self._score(x, y, known)
                super()._learn(x, y, w, known)
            except InvalidEventError:
                self._loss_sum, self._loss_n = saved
                raise
            return
        super()._learn(x, y, w, known)

    def _score(self, x: dict, y, known) -> None:
        """Add each candidate SPODE's log loss on (x, y), before learning it (``known``: ``x``'s
        encoding for prediction, when the caller has it)."""
        s = self._stats
        c = s.class_index.get(y)
        self._grow_scores()
        if c is None or not s.n_classes:
            return  # a class never seen: every SPODE gives it probability 0; nothing to rank by
        enc = known if known is not None else s.encode(x)
        if not len(enc.cols):
            return
        if self._kernel_dense():
            out = np.empty((1, s.n_classes))
            self._spode_kernel(enc.cols[None, :], enc.feats, np.full(1, c), None, out, False, True, True)
            return
        terms = self._sparse_terms(enc.cols, enc.feats)
        logp = terms - logsumexp(terms, axis=0)[None, :]
        feats, lp = enc.feats, logp[c]
        if s.pairs_selected:  # only the candidates whose pairs are counted are scored
            ok = s.parent_ok(feats)
            feats, lp = feats[ok], lp[ok]
        self._loss_sum[feats] -= lp
        self._loss_n[feats] += 1

    def _grow_scores(self) -> None:
        """One running score per feature."""
        F = len(self._stats.features)
        if len(self._loss_n) < F:
            grow = F - len(self._loss_n)
            self._loss_sum = np.concatenate([self._loss_sum, np.zeros(grow)])
            self._loss_n = np.concatenate([self._loss_n, np.zeros(grow)])

    def rebuild(self) -> None:
        """Choose the super-parent now (``parent=None``): the lowest running mean log loss, ties by name."""
        if self.parent is None and self._loss_n.any():
            names = self._stats.features
            seen = np.flatnonzero((self._loss_n > 0) & self._stats.parent_ok(np.arange(len(self._loss_n))))
            if len(seen):  # none when the memory budget dropped every parent's pairs: the choice stands
                mean = self._loss_sum[seen] / self._loss_n[seen]
                best = min(zip(mean.tolist(), seen.tolist()), key=lambda t: (t[0], str(names[t[1]])))
                self._chosen = names[best[1]]
        self._rebuilt()

    # ------------------------------------------------------------------ inference

    def _parent_index(self):
        p = self._stats.feature_index.get(self._chosen) if self._chosen is not None else None
        return p if p is None or self._stats.parent_ok(np.array([p]))[0] else None  # its pairs may be dropped

    def _jll(self, enc):
        s = self._stats
        if s.n_classes and self._kernel_dense():
            out = np.empty((1, s.n_classes))
            self._spode_kernel(enc.cols[None, :], enc.feats, UNLABELED, None, out, False, False, True)
            return out[0]
        p = self._parent_index()
        if p is None or not s.n_classes or s.n_values[p] == 0:
            return self._naive_jll(enc)
        cols, feats = enc.cols, enc.feats
        hit = feats == p
        only = np.zeros(p + 1, dtype=bool)
        only[p] = True
        if hit.any():  # the super-parent observed: its SPODE's term, read in compiled code
            return self._sparse_terms(cols, feats, only)[:, np.flatnonzero(hit)[0]]
        # the super-parent is missing: summed out, the SPODE rooted at each of its values read as when observed
        rooted = [self._sparse_terms(np.r_[t, cols], np.r_[p, feats], only)[:, 0] for t in s.columns_of(p).tolist()]
        return logsumexp(np.stack(rooted, axis=1), axis=1)

    def _posterior(self, enc):
        s = self._stats
        if not self._kernel_dense():
            return super()._posterior(enc)
        out = np.empty((1, s.n_classes))  # normalised as the kernel normalises a run's rows
        self._spode_kernel(enc.cols[None, :], enc.feats, UNLABELED, None, out, False, False, False)
        return out[0]

    _kernel_modules = ("_spodes", "_aode")
    _kernel_counts_one = False  # its learning scores the candidate parents first (_learn)

    def _kernel_block(self, D, dfeats, G, gslots, yc, more, out, learn: bool, decay=None) -> int:
        """Score each row of an encoded block into ``out`` (log posteriors) and, with ``learn``, count each
        labelled row after scoring it, feeding the drift detector first, with ``parent=None`` adding then
        each candidate's log loss on it to the running scores; return the rows done
        (:func:`~stream_nb.kernels._aode.spode_block`; a store that bins its numeric features has no Gaussian
        slot). ``decay``: the rows' weights and smoothing (:func:`~stream_nb.learners._decay_runs.decay_run`)."""
        return self._spode_kernel(D, dfeats, yc, more, out, learn, learn and self.parent is None, False, decay)

    def _spode_kernel(self, D, dfeats, yc, more, out, learn: bool, score: bool, joint: bool, decay=None) -> int:
        """:meth:`_kernel_block`, scoring the candidate parents of the labelled rows with ``score``, writing
        each row's joint log-likelihood with ``joint``."""
        s = self._stats
        p = self._parent_index()
        p = -1 if p is None or not s.n_values[p] else p
        if score:
            self._grow_scores()
        *counts, dens, cached = self._kernel_arguments(D, dfeats, learn, decay)
        watch = self._kernel_detector() if learn else NO_DETECTOR  # fed the error of each row before its count
        loss = NO_LOSS if self._decision is None or not watch[0] else np.ascontiguousarray(
            self._decision.matrix(s.classes))
        weights, infl, a = (NO_WEIGHTS, NO_WEIGHTS, self._alpha) if decay is None else (
            decay.weight, decay.inflation, self._alpha_given)
        done = compiled().spode_block(D, dfeats, NO_MORE if more is None else more, yc, weights, infl, learn,
                                      s.n_classes, a, p, s.columns_of(p) if p >= 0 else _NO_COLUMNS, score,
                                      self._loss_sum, self._loss_n, *counts, dens, cached, joint, out, loss, *watch)
        if learn:
            self._kernel_learned(D[:done], dfeats, yc[:done], cached, decay)
        return done

    def _jll_many(self, D, dfeats, G, gslots):
        s = self._stats
        if self._parent_index() is None or not s.n_classes:
            return self._naive_jll_many(D, dfeats, G, gslots)
        if self._kernel_dense():
            out = np.empty((len(D), s.n_classes))
            self._spode_kernel(np.ascontiguousarray(D), dfeats, np.full(len(D), -1), None, out, False, False, True)
            return out
        out = np.empty((len(D), s.n_classes))
        for r in range(len(D)):
            obs = D[r] >= 0
            cols = D[r, obs]
            out[r] = self._jll(Encoded(cols, dfeats[obs], gslots[:0], G[r, :0], bool((cols == 0).any())))
        return out

    # ------------------------------------------------------------------ runs

    _run_complete = True  # complete events: the super-parent observed, every candidate scored alike

    def _run_ready(self) -> bool:
        # under a pair selection the one-event path scores the candidate parents alone
        return not self.learn_unlabeled and not (self.parent is None and self._stats.pairs_selected)

    # ------------------------------------------------------------------ EM

    def _add_expected(self, enc, c, w, miss):
        # every candidate super-parent's tables, each under its own SPODE (the scores read them all)
        s = self._stats
        if s.pairs_selected:  # the E-step would read pairs no longer counted: counted as missing="ignore"
            s.add(enc, c, w)
            return
        add_estep(s, enc, c, w, one_dependence_estep(s.observed(), self._alpha, enc, c, miss))

    def _missing_posterior(self, enc, c, miss):
        p = self._parent_index()
        if p is None or not self._stats.n_values[p]:  # no super-parent: naive Bayes
            return naive_bayes_blocks(self._stats, self._alpha, miss, c)
        return mixture_posterior(self._stats, self._alpha, enc, c, miss, 0, [p])

    # ------------------------------------------------------------------ unlearning: the running scores

    _learns_own_state = True  # the running scores: a receipt keeps what an event added to them

    def _unlearn_mark(self):
        return self._loss_sum.copy(), self._loss_n.copy()

    def _unlearn_delta(self, mark):
        k = len(mark[0])  # learning only appends features: the first k are the old ones
        return self._loss_sum - np.r_[mark[0], np.zeros(len(self._loss_sum) - k)], \
            self._loss_n - np.r_[mark[1], np.zeros(len(self._loss_n) - k)]

    def _check_receipt_extra(self, extra, where: str) -> None:
        if extra is None:
            return
        if len(extra) != 2 or len(extra[0]) != len(extra[1]) or len(extra[0]) > len(self._loss_sum):
            raise ValueError(f"{where}: expected null or the increments of the running scores, two arrays of at "
                             f"most {len(self._loss_sum)} numbers each")

    def _unlearn_extra(self, extra):
        if extra is not None:
            k = len(extra[0])
            self._loss_sum[:k] -= extra[0]
            self._loss_n[:k] -= extra[1]

    # ------------------------------------------------------------------ state

    def _extra_state(self):
        return (
            {"loss_sum": self._loss_sum.copy(), "loss_n": self._loss_n.copy()},
            {"chosen": self._chosen, "since_rebuild": self._since_rebuild, "n_rebuilds": self.n_rebuilds},
        )

    def _load_extra_state(self, arrays, meta):
        self._loss_sum = np.asarray(arrays["loss_sum"], dtype=float)
        self._loss_n = np.asarray(arrays["loss_n"], dtype=float)
        self._chosen = meta["chosen"]
        self._since_rebuild = meta["since_rebuild"]
        self.n_rebuilds = meta["n_rebuilds"]

    def _check_loaded(self):
        """The running scores of a state: one finite pair per feature at most, and a super-parent
        that is the fixed ``parent``, or a feature, or None."""
        super()._check_loaded()
        s = self._stats
        total, n = self._loss_sum, self._loss_n
        if total.ndim != 1 or total.shape != n.shape or len(n) > len(s.features):
            raise ValueError(f"loss_sum and loss_n: expected two lists of at most {len(s.features)} numbers, got "
                             f"shapes {list(total.shape)} and {list(n.shape)}")
        if not (np.isfinite(total).all() and np.isfinite(n).all() and (n >= 0).all()):
            raise ValueError("loss_sum and loss_n: expected finite numbers, loss_n >= 0")
        chosen = self._chosen
        try:
            known = chosen is None or chosen in s.feature_index
        except TypeError:  # unhashable
            known = False
        if self.parent is not None and chosen != self.parent or self.parent is None and not known:
            raise ValueError(f"chosen: expected the parent {self.parent!r} or one of the features, got {chosen!r:.60}")
