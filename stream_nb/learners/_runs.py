"""Prequential runs: a run of plain events scored and learned in order by the model's compiled kernel.

Each run of events that only change counts (:meth:`Stats.encode_run <stream_nb.stats.Stats.encode_run>`)
goes to :meth:`VectorisedRuns._kernel_run`: each event scored under the counts as they stand, then counted;
every other event goes the one-event way.
"""

from __future__ import annotations

import abc
import contextlib
import typing

import numpy as np

from ..exceptions import InvalidEventError
from ..stats import Columns, frame_events, is_missing_label
from ._decision import outcomes

__all__ = ["RunBlock", "VectorisedRuns"]

#: No context: what :meth:`VectorisedRuns._count` enters when no detector is to be paused.
_NOTHING = contextlib.nullcontext()
#: The time a run reads in place of one the model refuses: no run takes it (VectorisedRuns._run_events).
_REFUSED_TIME = object()


class RunBlock(typing.NamedTuple):
    """The results of one run through the kernel, as arrays: what :meth:`VectorisedRuns.prequential_blocks` yields.

    Event ``start + i`` of the run was predicted ``classes[decided[i]]`` with
    ``dict(zip(classes, proba[i]))``, which is what
    :meth:`~stream_nb.learners.BayesClassifier.prequential_iter` yields for it;
    ``yc[i]`` is its label's index in ``classes`` (-1: unlabeled).

    Examples
    --------
    >>> from stream_nb import NaiveBayes
    >>> *_, block = NaiveBayes().prequential_blocks([{"a": "x"}] * 4, ["p", "q", "p", "p"])
    >>> block.start, block.stop, block.classes, block.decided.tolist(), block.yc.tolist()
    (2, 4, ['p', 'q'], [0, 0], [0, 0])
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
    """The runs of a :class:`~stream_nb.learners.BayesClassifier` (a part of it, not used alone): its compiled
    kernel scores and learns runs of plain events (NaiveBayes, TAN, AODE, SPODE, KDB).

    A subclass provides:

    - :meth:`_run_ready`: whether runs may be taken in the model's state now;
    - ``_kernel_block``: its compiled kernel over a block of encoded events (see :meth:`_kernel_run`),
      which weighs each row under decay (``decay``: :func:`~stream_nb.learners._decay_runs.decay_run`) and feeds the compiled twin of the
      drift detector, returning the rows done;
    - ``_run_complete``: True when runs take complete events only (always), False when
      only under EM (whose missing values need E-steps one event at a time).
    """

    #: Most events scored and learned in one kernel call of prequential_many.
    _RUN = 1024
    #: Runs take complete events only (always; else only under EM, whose missing values need E-steps).
    _run_complete = False

    @abc.abstractmethod
    def _run_ready(self) -> bool:
        """Whether runs may be taken now."""

    def _run_events(self, xs):
        """The events as runs read them. Events that carry the ``time_field`` (no feature) are read without it;
        an event whose time is refused keeps the field with a value no run takes (a feature the store does not
        know), so it goes the one-event way, refused there."""
        name = self._time_name
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
        """Learn events as :meth:`prequential_iter` does, predicting only for a drift detector (``watch=False``:
        none); return ``[(index, InvalidEventError), ...]`` of the events refused. ``receipts``: a dict that
        gets, by index, the receipt of each event whose taking back will need one.

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
                i, limited = self._prequential_run(runs, ys, i, None)
                if limited:  # stopped at its length, not at an event a run may not take: the next run goes on
                    continue
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
        """:meth:`~stream_nb.learners.BayesClassifier.prequential_iter`, yielding each run through the kernel
        as one :class:`RunBlock` (arrays, no dict per event) and every other event's result as it does.
        ``xs`` may be :class:`~stream_nb.stats.Columns`. Expanding each block's rows gives ``prequential_iter``'s
        results exactly.

        >>> from stream_nb import NaiveBayes
        >>> model = NaiveBayes()
        >>> for item in model.prequential_blocks([{"a": "x"}] * 5, [1, 2, 1, 1, 2]):
        ...     print(item if not isinstance(item, RunBlock) else (item.start, item.stop, item.classes))
        (None, {})
        (1, {1: 1.0})
        (2, 5, [1, 2])
        """
        return self._prequential_items(xs, ys, _Blocks, "prequential_blocks")

    def _prequential_parts(self, xs: list, ys: list, name: str) -> list:
        """:meth:`prequential_blocks`' items, all learned, as a list (``name``: the method named in an error)."""
        return list(self._prequential_items(xs, ys, _Blocks, name))

    def _prequential_run(self, xs: list, ys: list, start: int, out: list | None) -> tuple[int, bool]:
        """Append the results of a run of events from ``start`` scored and learned by the model's compiled
        kernel (:meth:`_kernel_run`); return where it stopped (``start``: the next event goes the one-event way)
        and whether it stopped only because it was as long as a run may be then (the model's batch limit, the
        store's :meth:`~stream_nb.stats.Stats.learn_limit`, :attr:`_RUN`): the next event may start another.

        A run is what :meth:`Stats.encode_run` accepts: events that only change counts (complete ones under
        EM), while the kernel may take them (:meth:`_kernel_ready`). With ``out=None`` the run is learned
        (:meth:`learn_events`).
        """
        s = self._stats
        if not s.n_classes or not self._run_ready() or not self._kernel_ready():
            return start, False
        complete = self._run_complete or self.missing.attributes
        limit = min(self._RUN, self._batch_limit())
        longest = min(limit, s.learn_limit())  # (a two-layer store's runs stop where it chooses cut points)
        stop, D, G, yc = s.encode_run(xs, ys, start, complete=complete, limit=limit, unseen=True,
                                      new_values=s.registers_in_runs())
        try:
            decay = self._decay_run(xs, start, yc)
            if decay is not None and decay.stop < len(yc):  # the decay acts on the cells after this row
                s.cut_run(decay.stop)
                D, G, yc, stop = D[: decay.stop], G[: decay.stop], yc[: decay.stop], start + decay.stop
                longest = 0
            # (a two-layer store takes a single event the one-event way: it registers new values in its order,
            # and a single event's run there gave other results on streams whose features turn numeric)
            if stop - start >= 2 or (stop > start and s.count_layer() is s):
                at = self._kernel_run(xs, start, stop, D, G, yc, out, decay)
                return at, at == stop == start + longest and at < len(xs)
            return start, False
        finally:
            s.run_new = None  # registered by _kernel_run for the rows learned; the others are met again

    def _kernel_ready(self) -> bool:
        """Whether the model's compiled kernel (:meth:`_kernel_block`) may score and learn runs now: it can
        watch the model's drift detector (:meth:`_kernel_watches`: none, or a compiled twin), and the store's
        counts are dense and recorded by no receipt (what a run's scores teach the model, SPODE's running
        scores, its kernel learns in order)."""
        s = self._stats
        return self._kernel_watches() and s.journal is None and not s.pairs_sparse and not s.tuples_sparse

    #: Whether :meth:`_count` counts one learned event in the kernel (SPODE's learning scores it first).
    _kernel_counts_one = True

    def _count(self, enc, c: int, w: float) -> None:
        """Count one complete event of class ``c`` in the kernel, as a block of one (a two-layer store's fine
        layer then takes it, :meth:`Stats.counted_one`); with a weight (decay), receipts, sparse tables or a
        value missing, the store's own :meth:`Stats.add`."""
        s = self._stats
        if (not self._kernel_counts_one or w != 1.0 or s.journal is not None or s.pairs_sparse or s.tuples_sparse
                or len(enc.cols) != len(s.schema.discrete_features())):
            s.add(enc, c, w)
            return
        C = len(s.schema.labels.classes)
        out = self.__dict__.get("_out_one")  # (kept: the score written here is not read)
        if out is None or out.shape[1] != C:
            out = self._out_one = np.empty((1, C))
        f = self._forget
        if f is None or f.detector is None:
            twin = self._kernel_one(enc, c, out)
        else:
            with self.drift_paused():  # fed already
                twin = self._kernel_one(enc, c, out)
        s.counted_one(c, w, twin)

    def _kernel_one(self, enc, c: int, out: np.ndarray) -> bool:
        """``out`` (1, C): log P(c | x) of one encoded event by the kernel, on a block of one; then, ``c`` >= 0,
        the event counted in class ``c`` (a model may hand its kernel the block with fewer arguments, count a
        complete event without scoring it again, as its prediction did, and count it in the store's
        :meth:`~stream_nb.stats.Stats.counted_twin` too); returns whether it did that."""
        self._kernel_block(enc.cols[None, :], enc.feats, enc.gx[None, :], enc.gslots, np.array([c]), None, out, c >= 0)
        return False

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
            decided, proba = self._decide(log_post[:n]), np.exp(log_post[:n])
            if isinstance(out, _Blocks):
                out.append(RunBlock(start, start + n, s.classes[:C], decided, proba, yc[:n]))
            else:
                out.extend(outcomes(s.classes[:C], decided, proba))
        s.cut_run(done)  # a second layer's rows past the ones counted are met again
        s.register_run_values(done)
        labeled = yc[:done] >= 0
        learned = int(np.count_nonzero(labeled))
        if learned:
            s.add_fine_run(yc[:done][labeled], None if decay is None else decay.weight[:done][labeled])
        if self._forget is not None:  # the detector's count of events, the decay's state once those rows are in
            self._forget.ran(learned + acted, decay.after[done - 1] if decay is not None and done else None)
        if learned:
            self._settle_store()
            self._learned(learned)
        if acted:
            self._forget_act()
            with self.drift_paused():  # fed already: the event is learned as its label says
                self.learn_one(xs[start + done], s.classes[yc[done]])
        return start + n

    def _decay_run(self, xs, start: int, yc: np.ndarray):
        """The rows' weights and smoothing under decay (:func:`~stream_nb.learners._decay_runs.decay_run`), or
        None without decay."""
        f = self._forget
        if f is None:
            return None
        times = xs.times if isinstance(xs, _Timed) else None
        return f.run_decay(yc, None if times is None else times[start : start + len(yc)])
