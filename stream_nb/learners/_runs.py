"""Vectorised prequential runs: score and learn a run of plain events in one pass.

:meth:`BayesClassifier.prequential_iter <stream_nb.learners.BayesClassifier.prequential_iter>`
hands each run of events that only change counts (see
:meth:`Stats.encode_run <stream_nb.stats.Stats.encode_run>`) to
:meth:`VectorisedRuns._prequential_run`. Each event of the run is scored with
the stored counts plus those of the run's earlier events (the running counts of
:mod:`stream_nb.stats._running`), then the run is learned in one
:meth:`Stats.add_many <stream_nb.stats.Stats.add_many>`: the same predictions
and model as one event at a time, up to floating-point rounding.
"""

from __future__ import annotations

import abc
import typing

import numpy as np

from ..exceptions import InvalidEventError
from ..stats import Columns, exclusive_counts, frame_events, gaussian_loglik, is_missing_label, running_moments
from ._decay_runs import decay_run
from ._decision import log_prior, normalise

__all__ = ["RunBlock", "VectorisedRuns"]

#: The time a run reads in place of one the model refuses: no run takes it (VectorisedRuns._run_events).
_REFUSED_TIME = object()


class RunBlock(typing.NamedTuple):
    """The results of one vectorised run, as arrays: what :meth:`VectorisedRuns.prequential_blocks` yields.

    Event ``start + i`` of the run was predicted ``classes[decided[i]]`` with
    ``dict(zip(classes, proba[i]))``, which is what
    :meth:`~stream_nb.learners.BayesClassifier.prequential_iter` yields for it;
    ``yc[i]`` is its label's index in ``classes`` (-1: unlabeled).
    """

    start: int
    stop: int
    classes: list
    decided: np.ndarray
    proba: np.ndarray
    yc: np.ndarray


class _Blocks(list):
    """The ``out`` of :meth:`VectorisedRuns._prequential_run` that takes a run whole, as a :class:`RunBlock`."""


class _Timed(list):
    """Events as runs read them (:meth:`VectorisedRuns._run_events`), with each one's time (None: none)."""

    def __init__(self, events: list, times: list):
        super().__init__(events)
        self.times = times


class VectorisedRuns(abc.ABC):
    """A model that scores runs of plain events at once (NaiveBayes, TAN, AODE, SPODE, KDB); list it
    before its base class.

    A subclass provides:

    - :meth:`_run_ready`: whether runs may be vectorised in the model's state now;
    - :meth:`_run_jll`: log P(c, x) of a run's rows under the counts each row would have
      seen (naive Bayes and TAN: the running class prior plus the discrete attributes'
      log-likelihood terms; AODE, SPODE and KDB: their own joint);
    - ``_run_complete``: True when runs take complete events only (always), False when
      only under EM (whose missing values need E-steps one event at a time);
    - optionally :meth:`_run_rows`: the most events of one run (what its arrays can hold);
    - optionally ``_decayed_runs = True``: its :meth:`_run_jll` weighs each row by :attr:`_run_weights`,
      so runs go on under decay (``half_life``; else every decayed event goes the one-event way);
    - optionally ``_run_unseen = True``: its :meth:`_run_jll` scores a value never seen (column 0) as its
      one-event path does, so an unlabeled event carrying one stays in the run (else it ends it);
    - optionally ``_run_new_values = True``: its :meth:`_run_jll` counts the values a run registers as it
      goes, so a labeled event with a new categorical value stays in the run too.
    """

    #: Most events scored and learned in one vectorised pass of prequential_many.
    _RUN = 1024
    #: Runs take complete events only (always; else only under EM, whose missing values need E-steps).
    _run_complete = False
    #: Scoring a run changes the model (SPODE's running loss of each candidate parent): learning
    #: without predictions (learn_events) must still score.
    _run_scoring_learns = False
    #: Runs take decayed counts (``half_life``): :meth:`_run_jll` reads each row's weight, smoothing and
    #: inflation from :attr:`_run_weights` (see :mod:`stream_nb.learners._decay_runs`).
    _decayed_runs = False
    #: Runs take unlabeled events with values never seen, as column 0 (see :meth:`Stats.encode_run`): with
    #: labels coming later such events are common (a value first met before any label has taught it).
    _run_unseen = False
    #: Runs take labeled events with categorical values never seen (see :meth:`Stats.encode_run`), where the
    #: store :meth:`~stream_nb.stats.Stats.registers_in_runs`: its :meth:`_run_jll` reads how many values each
    #: feature has at each row from :meth:`Stats.run_more <stream_nb.stats.Stats.run_more>`.
    _run_new_values = False
    #: While a run is scored under decay: ``(w, a, g)``, each row's stored weight, smoothing and inflation;
    #: else None.
    _run_weights: tuple | None = None

    @abc.abstractmethod
    def _run_ready(self) -> bool:
        """Whether runs may be vectorised now."""

    @abc.abstractmethod
    def _run_jll(self, D: np.ndarray, yc: np.ndarray, C: int, prior: np.ndarray) -> np.ndarray:
        """(rows, C): log P(c, x) of each row's discrete attributes under the counts it would have
        seen (see :mod:`stream_nb.stats._running`), ``prior`` (rows, C) being its running log class prior."""

    def _run_rows(self) -> int:
        """Most events in one run; default ``_RUN``."""
        return self._RUN

    def _run_state(self):
        """What scoring a run changes beyond the counts (SPODE's running scores), for :meth:`_set_run_state`
        when the run is cut short (a drift detector acting inside it); default: nothing."""
        return None

    def _set_run_state(self, state) -> None:
        """Restore what :meth:`_run_state` returned; default: nothing."""

    def _run_events(self, xs):
        """The events as runs read them; None when runs are off (:meth:`_forget_runs`). Events that carry the
        ``time_field`` (no feature) are read without it; an event whose time is refused keeps the field with a
        value no run takes (a feature the store does not know), so it goes the one-event way, refused there."""
        if not self._forget_runs():
            return None
        name = getattr(self, "time_field", None)
        if name is None or (xs.columns.get(name) is None if isinstance(xs, Columns) else
                            not any(type(x) is dict and name in x for x in xs)):
            return xs
        out, times = [], []
        for x in xs:
            t = None
            if type(x) is dict and name in x:  # no dict: no event, refused the one-event way
                try:
                    x, t = self._forget_time(x)
                except InvalidEventError:
                    x = {**{k: v for k, v in x.items() if k != name}, name: _REFUSED_TIME}
            out.append(x)
            times.append(t)
        return _Timed(out, times)

    def learn_events(self, xs: list, ys: list, receipts: dict | None = None, *, watch: bool = True) -> list:
        """Learn events as :meth:`prequential_iter` does (the same runs; an event it refuses is skipped),
        predicting only what a drift detector or the model learns from. Group members' partition states learn so,
        and the daemon its joined labels. ``watch=False``: the drift detector is fed nothing (:meth:`drift_paused`).

        ``receipts``: a dict that gets, under its index, the receipt of each event that taking back will need
        (``unlearn_one(x, y, receipt=...)``; the others go with :meth:`unlearn_events`). Runs are learned
        together when :meth:`unlearns_plainly` says their events need none; the other events, and every
        event otherwise, one at a time with :meth:`learn_one_receipt`.

        Returns ``[(index, error), ...]``: the events refused (each an
        :class:`~stream_nb.exceptions.InvalidEventError`), for the caller to report.

        >>> from stream_nb import NaiveBayes
        >>> xs, ys = [{"sky": "sun"}, {"sky": "rain"}, {"sky": ["?"]}, {"sky": "sun"}], ["play", "stay", "play", "play"]
        >>> a, b = NaiveBayes(), NaiveBayes()
        >>> _ = a.prequential_many(xs, ys)
        >>> [(i, e.reason) for i, e in b.learn_events(xs, ys)]
        [(2, 'bad_feature_type')]
        >>> a.predict_proba_one({"sky": "sun"}) == b.predict_proba_one({"sky": "sun"}), b.n_learned
        (True, 3.0)
        """
        if len(xs) != len(ys):
            raise ValueError(f"learn_events: {len(xs)} events but {len(ys)} labels")
        xs, ys = frame_events(xs, ys)  # a DataFrame: its columns as arrays
        if not watch:
            with self.drift_paused():
                return self.learn_events(xs, ys, receipts)
        i, n, refused = 0, len(xs), []
        runs = self._run_events(xs)  # the events as runs read them (None: no runs)
        if receipts is not None and not self.unlearns_plainly(xs):
            runs = None
        while i < n:
            if runs is not None:
                i = self._prequential_run(runs, ys, i, None)
            if i < n:
                try:  # one event (its learning feeds a drift detector the error of its prediction)
                    if self.learn_unlabeled or not is_missing_label(ys[i]):
                        if receipts is None:
                            self.learn_one(xs[i], ys[i])
                        elif self.receipt_needed(receipt := self.learn_one_receipt(xs[i], ys[i])):
                            receipts[i] = receipt
                except InvalidEventError as exc:  # the model is left as it was, as prequential_iter does
                    refused.append((i, exc))
                i += 1
        return refused

    def prequential_blocks(self, xs: list, ys: list):
        """:meth:`~stream_nb.learners.BayesClassifier.prequential_iter`, yielding each vectorised run
        as one :class:`RunBlock` (arrays, no dict per event) and every other event's result as it does.

        Expanding each block into ``(classes[d], dict(zip(classes, p)))`` per row gives exactly
        ``prequential_iter``'s results, and the model ends the same.

        >>> from stream_nb import NaiveBayes
        >>> model = NaiveBayes()
        >>> for item in model.prequential_blocks([{"a": "x"}] * 5, [1, 2, 1, 1, 2]):
        ...     print(item if not isinstance(item, RunBlock) else (item.start, item.stop, item.classes))
        (None, {})
        (1, {1: 1.0})
        (2, 5, [1, 2])
        """
        return self._prequential_items(xs, ys, _Blocks, "prequential_blocks")

    def _run_scores_learned(self) -> bool:
        """Whether learning a run needs its scores: they change the model (``_run_scoring_learns``)
        or a drift detector (not paused) learns from the run's errors."""
        return self._run_scoring_learns or self._run_watched()

    def _run_watched(self) -> bool:
        """Whether a drift detector (not paused) learns from the errors of a run's predictions."""
        forget = getattr(self, "_forget", None)
        return forget is not None and forget.detector is not None and not forget.paused

    def _prequential_run(self, xs: list, ys: list, start: int, out: list | None) -> int:
        """Append the results of a vectorised run of events from ``start``; return where it stopped.

        A run is what :meth:`Stats.encode_run` accepts: events that only change counts (complete
        ones under EM). Each is scored with the stored counts plus those of the run's earlier
        events: the class prior and the Gaussian moments here, the discrete attributes by
        :meth:`_run_jll`. Then the run is learned in one :meth:`Stats.add_many`.
        With ``out=None`` the run is learned and scored only if the scores are learned
        (:meth:`_run_scores_learned`); :meth:`learn_events`.
        """
        s = self._stats
        C = s.n_classes
        if not C or not self._run_ready():
            return start
        limit = min(self._run_rows(), self._batch_limit())
        complete = self._run_complete or self.missing.attributes
        new_values = self._run_new_values and s.registers_in_runs()
        stop, D, G, yc = s.encode_run(xs, ys, start, complete=complete, limit=limit, unseen=self._run_unseen,
                                      new_values=new_values)
        try:
            return self._score_run(xs, start, stop, D, G, yc, out)
        finally:
            s.run_new = None  # registered by _add_run for the rows learned; the others are met again

    def _score_run(self, xs, start: int, stop: int, D: np.ndarray, G: np.ndarray, yc: np.ndarray, out) -> int:
        """:meth:`_prequential_run` of the run :meth:`Stats.encode_run` gave (events ``start`` to ``stop``)."""
        s = self._stats
        C = s.n_classes
        decay = self._decay_run(xs, start, yc)
        if decay is not None and decay.stop < len(yc):  # the decay acts on the cells after this row
            s.cut_run(decay.stop)
            D, G, yc, stop = D[: decay.stop], G[: decay.stop], yc[: decay.stop], start + decay.stop
        # (a two-layer store takes a single event the one-event way: it registers new values in its order)
        if (stop - start >= 2 or (stop > start and s.count_layer() is s)) and self._kernel_ready() and (
                decay is None or getattr(self, "_decayed_kernel", False)):
            return self._kernel_run(xs, start, stop, D, G, yc, out, decay)
        if stop - start < 2:
            return start  # a single event: the one-event path is cheaper
        if out is None and not self._run_scores_learned():
            return self._add_run(D, G, yc, stop, decay)  # nobody reads the scores, nothing learns from them
        w = None if decay is None else decay.weight
        a = self._alpha if decay is None else self._alpha_given * decay.inflation[:, None]
        prior = log_prior(s.class_count[:C] + exclusive_counts(yc, C, w), a)
        mark = self._run_state()
        self._run_weights = None if decay is None else (w, a[:, 0], decay.inflation)
        try:
            jll = self._run_jll(D, yc, C, prior)
        finally:
            self._run_weights = None
        if G.shape[1]:
            Gs = G.shape[1]
            n, mean, m2 = running_moments(G, yc, s.g_n[:C, :Gs], s.g_mean[:C, :Gs], s.g_m2[:C, :Gs], w)
            jll += gaussian_loglik(n, mean, m2, G, self._var_smoothing)
        log_post = normalise(jll, prior)  # as in predict_proba_one: every class impossible -> the prior
        decided = self._decide(log_post)
        keep = self._forget_run(decided, yc)  # a drift detector may act at an event: the run ends before it
        if keep < len(yc):
            self._set_run_state(mark)  # what scoring the run changed, scored again over the rows kept
            s.cut_run(keep)
            if keep == 0:
                return start
            D, G, yc, log_post, decided = D[:keep], G[:keep], yc[:keep], log_post[:keep], decided[:keep]
            stop = start + keep
            self._run_weights = None if decay is None else (w[:keep], a[:keep, 0], decay.inflation[:keep])
            try:
                self._run_jll(D, yc, C, prior[:keep])
            finally:
                self._run_weights = None
        if isinstance(out, _Blocks):
            out.append(RunBlock(start, stop, s.classes[:C], decided, np.exp(log_post), yc))
        elif out is not None:
            classes = s.classes
            out.extend(
                (classes[i], dict(zip(classes, p)))
                for i, p in zip(decided.tolist(), np.exp(log_post).tolist())
            )
        return self._add_run(D, G, yc, stop, decay)

    #: The model's kernel feeds a compiled drift detector (``_kernel_block`` takes its arguments) and
    #: returns the rows done; without it, runs with a detector go the numpy way.
    _kernel_feeds_detector = False

    def _kernel_ready(self) -> bool:
        """Whether the model's compiled kernel (:meth:`_kernel_block`) may score and learn runs now: it has
        one, it can watch the model's drift detector (:meth:`_kernel_watches`), and the store's counts are
        dense and recorded by no receipt (what a run's scores teach the model, SPODE's running scores, its
        kernel learns in order)."""
        s = self._stats
        watched = self._kernel_detector()[0]
        return (getattr(self, "_kernel_block", None) is not None and self._kernel_watches()
                and (not watched or self._kernel_feeds_detector)
                and s.journal is None and not s.pairs_sparse and not s.tuples_sparse)

    #: Whether :meth:`_count` counts one learned event in the kernel (SPODE's learning scores it first).
    _kernel_counts_one = True

    def _count(self, enc, c: int, w: float) -> None:
        """Count one complete event of class ``c`` in the kernel, as a block of one (a two-layer store's fine
        layer then takes it, :meth:`Stats.counted_one`); with a weight (decay), receipts, sparse tables or a
        value missing, the store's own :meth:`Stats.add`."""
        s = self._stats
        if (not self._kernel_counts_one or w != 1.0 or s.journal is not None or s.pairs_sparse or s.tuples_sparse
                or len(enc.cols) != len(s.discrete_features())):
            s.add(enc, c, w)
            return
        self._kernel_block(enc.cols[None, :], enc.feats, enc.gx[None, :], enc.gslots, np.array([c]), None,
                           np.empty((1, s.n_classes)), True)
        s.counted_one(c, w)

    def _kernel_run(self, xs, start: int, stop: int, D: np.ndarray, G: np.ndarray, yc: np.ndarray, out,
                    decay=None) -> int:
        """Score and learn a run in the compiled kernel, event by event in order; return where it stopped.

        Where the drift detector acts on an event, the kernel stops there, having scored it: the model acts
        (:meth:`_forget_act`), then learns that event, and the run ends after it."""
        s = self._stats
        C = s.n_classes
        log_post = np.empty((len(yc), C))
        done = self._kernel_block(D, np.arange(D.shape[1]), G, np.arange(G.shape[1]), yc, s.run_more(len(yc)),
                                  log_post, True, **({} if decay is None else {"decay": decay}))
        acted = done < len(yc)
        n = done + acted  # the events scored
        if out is not None:
            decided = self._decide(log_post[:n])
            if isinstance(out, _Blocks):
                out.append(RunBlock(start, start + n, s.classes[:C], decided, np.exp(log_post[:n]), yc[:n]))
            else:
                classes = s.classes
                out.extend((classes[i], dict(zip(classes, p)))
                           for i, p in zip(decided.tolist(), np.exp(log_post[:n]).tolist()))
        s.cut_run(done)  # a second layer's rows past the ones counted are met again
        s.register_run_values(done)
        labeled = yc[:done] >= 0
        learned = int(np.count_nonzero(labeled))
        if learned:
            s.add_fine_run(yc[:done][labeled], None if decay is None else decay.weight[:done][labeled])
        if self._forget is not None and self._forget.detector is not None and not self._forget.paused:
            self._forget.seen += learned + acted
        if decay is not None and done:
            f = self._forget
            f.inflation, f.halvings, f.clock = decay.after[done - 1]  # the decay's state once those rows are in
        if learned:
            self._settle_store()
            self._learned(learned)
        if acted:
            self._forget_act()
            with self.drift_paused():  # fed already: the event is learned as its label says
                self.learn_one(xs[start + done], s.classes[yc[done]])
        return start + n

    def _add_run(self, D: np.ndarray, G: np.ndarray, yc: np.ndarray, stop: int, decay=None) -> int:
        """Learn a run's labeled rows in one :meth:`Stats.add_many` (under decay, each with its weight, and
        the decay's state then as after its last row); return ``stop``."""
        labeled = yc >= 0
        self._stats.register_run_values(len(yc))  # the new values of the rows learned, in order
        if labeled.any():
            w = None if decay is None else decay.weight[: len(yc)][labeled]
            self._stats.add_many(D[labeled], np.arange(D.shape[1]), G[labeled], np.arange(G.shape[1]), yc[labeled], w)
            if decay is not None:
                f = self._forget
                f.inflation, f.halvings, f.clock = decay.after[len(yc) - 1]
            self._settle_store()
            self._learned(int(labeled.sum()))
        return stop

    def _decay_run(self, xs, start: int, yc: np.ndarray):
        """The rows' weights and smoothing under decay (:func:`decay_run`), or None without decay."""
        f = getattr(self, "_forget", None)
        if f is None or not f.half_life or not len(yc):
            return None
        timed = getattr(self, "time_field", None) is not None
        times = getattr(xs, "times", None)
        return decay_run(f, yc, None if times is None else times[start : start + len(yc)], timed)
