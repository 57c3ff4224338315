"""Forgetting: windows of panes, exponential decay, and a reset of the counts on a detected drift.

:class:`Forgetting` is the part a :class:`~stream_nb.learners.BayesClassifier` holds (``model._forget``,
None when nothing forgets) behind the ``forgetting`` (``Window``, ``Decay``) and ``drift_detector``
parameters. It keeps what forgetting needs beside the store (the panes of a window, the decay's scale,
the detector and its warning) and works on the store the learner passes to each call
(:mod:`stream_nb.stats.forgetting._forgetting`), so every model gets it at once; it reads nothing of the
learner. The docs' *Forgetting* page gives the rules, the memory and the costs.

What the learner calls
----------------------
- ``weight(stats, w, t)``: the stored weight of an event about to be added (decay);
- ``learned(stats, n)``: after ``n`` learned events, close a full pane or renormalise;
- ``settle(stats)``: renormalise decayed counts (the stored counts are then the true ones);
- ``limit()``: the events one batch may learn before forgetting must act;
- ``run_decay(yc, times)`` and ``ran(watched, after)``: a run's rows under decay, and what a run left;
- ``observe(stats, prediction, y)`` and ``act(stats)``: feed the detector one error, act on what it says
  (True: the counts switched to the fresh ones; the learner's structure follows);
- ``pause()``, ``watching``, ``kernel_detector()``, ``kernel_watches()``: the detector's watch;
- ``unlearn(stats, w, receipt, take_back)``: take one event back from its pane, or its decayed weight;
- ``state(rebuild_origin)`` and ``load(arrays, meta)``: the plain-data state of a snapshot.

and it exposes, to read only: ``window``, ``panes``, ``half_life``, ``inflation`` (stored counts = true
counts times it), ``halvings``, ``clock``, ``pane_no``, ``detector``, ``warning``, ``seen``, ``drifts``,
``expired_unlearns``, ``nbytes``. :func:`split_time` takes an event's time field out,
:func:`prepare_merge` readies two models' counts for a merge.
"""

from __future__ import annotations

import contextlib
import logging
import math

import numpy as np

from ..exceptions import InvalidEventError, UnlearnError
from ..kernels import NO_DETECTOR
from ..stats import (SparseTable, capture, capture_difference, capture_nbytes, check_event, count_difference,
                     replace_counts, scale_counts, subtract_counts)
from ._decay_runs import RENORMALISE_AT, DecayRun, decay_run
from ._detectors import CompiledDetector, decode_object, encode_object
from ._unlearn import Receipt

__all__ = ["Forgetting", "UNSCORED", "prepare_merge", "split_time"]

log = logging.getLogger("stream_nb.drift")

#: The prediction of an event not scored yet (the learner's ``_watch`` makes it when a detector needs it).
UNSCORED = object()


def split_time(x: dict, name: str | None) -> tuple[dict, float | None]:
    """``x`` without its time field ``name`` (not a feature) and that time (None: ``x`` has none, or no field is
    named); nothing changes (InvalidEventError, reason ``bad_time``, unless the time is a finite number).

    >>> split_time({"ts": 5, "a": "x"}, "ts")
    ({'a': 'x'}, 5.0)
    """
    if type(x) is not dict:
        check_event(x)  # the first read of x when learning: no dict, no event (EventTypeError)
    if name is None or name not in x:
        return x, None
    t = x[name]
    if isinstance(t, bool) or not isinstance(t, (int, float, np.integer, np.floating)) or not math.isfinite(t):
        raise InvalidEventError(f"field {name!r} (time_field): expected the event's time, a finite number, "
                                f"got {t!r:.60}", reason="bad_time", field=name)
    return {k: v for k, v in x.items() if k != name}, float(t)


class Forgetting:
    """Windows, decay and drift resets of a :class:`~stream_nb.learners.BayesClassifier`: a part it holds; see
    the module notes for what the learner calls.

    ``window`` events (None: no window) in ``panes`` panes, decay with ``half_life`` (None: none) in events or
    (``timed``) in event time, and ``detector`` (a river detector or its compiled twin; None: none).

    >>> f = Forgetting(None, 4, 2.0, None, timed=False)
    >>> [f.weight(None, 1.0) for _ in range(3)], f.halvings  # decay by events: each weighs 2**(1/2) more
    ([1.4142135623730951, 2.0000000000000004, 2.8284271247461907], 1.5)
    """

    def __init__(self, window: int | None, panes: int, half_life: float | None, detector, timed: bool):
        self.window, self.panes, self.half_life, self.timed = window, panes, half_life, timed
        self.pane_size = math.ceil(window / panes) if window else 0
        self.deltas: list[dict] = []  # the complete panes in the window, oldest first
        self.base: dict | None = None  # capture at the start of the pane in progress (None: empty counts)
        self.pane_n = 0  # events learned in the pane in progress
        self.step = 2.0 ** (1.0 / half_life) if half_life else 1.0
        self.inflation = 1.0  # stored counts = true counts * inflation
        self.clock: float | None = None  # decay in event time: the latest event time learned
        self.halvings = 0.0  # decay so far, in half-lives (an event's weight is 2**-(halvings now - then))
        self.pane_no = 0  # window: the number of the pane in progress (the kept ones are the ones before it)
        self.expired_unlearns = 0  # unlearn of events whose pane had expired: nothing to take back
        self.detector = detector
        self.warn_base: dict | None = None  # capture at the warning (the fresh counts are what came since)
        self.warning = False
        self.seen = 0  # labeled events the detector watched
        self.paused = 0  # inside pause(): learning feeds the detector nothing
        self.drifts: list[int] = []

    # -------------------------------------------------------------- windows and decay

    def weight(self, stats, w: float, t: float | None = None) -> float:
        """The stored weight of the event about to be added (decay: advances the clock one event, or in
        event time to ``t`` when it is later than the latest time learned, decaying ``stats`` if need be)."""
        if not self.half_life:
            return w
        if not self.timed:
            self.inflation *= self.step
            self.halvings += 1.0 / self.half_life
        elif t is not None:
            if self.clock is not None and t > self.clock:
                self._decay_by(stats, (t - self.clock) / self.half_life)
            self.clock = t if self.clock is None else max(self.clock, t)
        return w * self.inflation

    def _decay_by(self, stats, halvings: float) -> None:
        """Decay every count by ``2**-halvings``: in the inflation, or (when that would pass the
        renormalisation point) in the cells themselves."""
        self.halvings += halvings
        if math.log2(self.inflation) + halvings < math.log2(RENORMALISE_AT):
            self.inflation *= 2.0**halvings
            return
        self.settle(stats)
        scale_counts(stats, 2.0 ** -halvings, (self.warn_base,))

    def learned(self, stats, n: int) -> None:
        """After ``n`` learned events: close the pane when full (expiring the oldest), renormalise decayed counts."""
        if self.window:
            self.pane_n += n
            if self.pane_n >= self.pane_size:
                self.deltas.append(count_difference(stats, self.base))
                if len(self.deltas) > self.panes - 1:
                    subtract_counts(stats, self.deltas.pop(0))
                self.base = capture(stats)
                self.pane_n = 0
                self.pane_no += 1
        elif self.half_life and self.inflation >= RENORMALISE_AT:
            self.settle(stats)

    def settle(self, stats) -> None:
        """Renormalise decayed counts (inflation back to 1): the stored counts are then the true ones."""
        if self.inflation != 1.0:
            scale_counts(stats, 1.0 / self.inflation, (self.warn_base,))
            self.inflation = 1.0

    def limit(self) -> int:
        """Events that may be learned in one batch before forgetting must act (the end of the pane)."""
        if not self.window:
            return 1 << 62
        return max(1, self.pane_size - self.pane_n)

    def run_decay(self, yc: np.ndarray, times: list | None) -> DecayRun | None:
        """The weights and smoothing of a run's rows of classes ``yc`` (:func:`decay_run`; ``times``: each row's
        event time, None: none), nothing changed; None without decay or rows."""
        if not self.half_life or not len(yc):
            return None
        return decay_run(self, yc, times, self.timed)

    def ran(self, watched: int, after: tuple | None) -> None:
        """A run in a kernel learned events: ``watched`` of them fed the detector (counted unless paused), and
        ``after`` is the decay's ``(inflation, halvings, clock)`` once its rows are in (None: no decay, no row)."""
        if self.detector is not None and not self.paused:
            self.seen += watched
        if after is not None:
            self.inflation, self.halvings, self.clock = after

    @property
    def nbytes(self) -> int:
        """Bytes of counts forgetting keeps beside the store (panes, captures)."""
        return (sum(capture_nbytes(d) for d in self.deltas) + capture_nbytes(self.base)
                + capture_nbytes(self.warn_base))

    # -------------------------------------------------------------- the drift detector

    @contextlib.contextmanager
    def pause(self):
        """Within the ``with`` block, learning feeds the detector nothing."""
        self.paused += 1
        try:
            yield self
        finally:
            self.paused -= 1

    @property
    def watching(self) -> bool:
        """Whether a labeled event's error goes to the detector now (one is set and not paused)."""
        return self.detector is not None and not self.paused

    def observe(self, stats, prediction, y) -> bool:
        """Feed the detector the 0/1 error of the prediction (None: none made) of labeled event ``y``, and act
        on a warning or drift (:meth:`act`); True when the counts switched."""
        self.seen += 1
        if prediction is None:
            return False  # no class known yet: no prediction to judge
        self.detector.update(0 if prediction == y else 1)
        return self.act(stats)

    def act(self, stats) -> bool:
        """Act on what the detector says after its last update: switch the counts on a drift (True), take a
        capture when a warning begins, drop it when the warning ends."""
        det = self.detector
        if det.drift_detected:
            self._switch(stats)
            return True
        if getattr(det, "warning_detected", False):
            if not self.warning:
                self.warning = True
                self.warn_base = None if self.window else capture(stats)
        elif self.warning:
            self.warning, self.warn_base = False, None
        return False

    def _switch(self, stats) -> None:
        """A drift: switch to the fresh counts (the pane in progress; the counts since the warning; none)."""
        if self.window:
            keep = count_difference(stats, self.base)
            self.deltas, self.base = [], None
        elif self.warning and self.warn_base is not None:
            keep = count_difference(stats, self.warn_base)
        else:
            keep = None
        replace_counts(stats, keep)
        self.warning, self.warn_base = False, None
        self.drifts.append(self.seen)
        log.info("drift detected after %d labeled events: switched to %s", self.seen,
                 "the pane in progress" if self.window else "the counts since the warning" if keep is not None
                 else "empty counts", extra={"event": "drift", "position": self.seen, "n_drifts": len(self.drifts)})

    def kernel_detector(self) -> tuple:
        """The detector arguments of a kernel: the compiled twin watched now (``watch, kind, params, state,
        fbuf, ibuf, warning``), or :data:`~stream_nb.kernels.NO_DETECTOR` (none, or while paused)."""
        if self.detector is None or self.paused:
            return NO_DETECTOR
        d = self.detector
        return True, d.kind, d.params, d.state, d.fbuf, d.ibuf, self.warning

    def kernel_watches(self) -> bool:
        """Whether a kernel can run the prequential loop with this detector: none watched, or the compiled twin
        of one (a river detector without a twin is fed in Python, one event at a time)."""
        return self.detector is None or self.paused or isinstance(self.detector, CompiledDetector)

    # -------------------------------------------------------------- unlearning

    def unlearn(self, stats, w: float, receipt, take_back) -> None:
        """Take one event of weight ``w`` back under forgetting; ``take_back(w, receipt)`` takes a weight out of
        ``stats`` as unlearning without forgetting does (raising, nothing changed, when it cannot).

        Window: the event leaves the counts and its pane (the receipt's, else the pane in progress); if that
        pane expired (or a drift dropped it), nothing changes and :attr:`expired_unlearns` counts it.
        Decay: its weight decayed since the receipt's stamp is subtracted (receipt and plain counting needed).
        A drift detector without a window is refused (``reason="forgets"``): a switch drops counts by time.
        """
        stamp = receipt.stamp if isinstance(receipt, Receipt) else None
        if self.half_life:
            if stamp is None:
                raise UnlearnError(f"unlearning: with decay (half_life={self.half_life}) the event's weight depends "
                                   "on when it was learned: unlearn it with the receipt learn_one_receipt returned",
                                   reason="needs_receipt")
            if receipt.extra is not None or any(e[0] not in ("count", "gauss") for e in receipt.entries):
                raise UnlearnError("unlearning: with decay only an event learned by plain counting (every feature "
                                   "observed, or missing=Ignore()) can be taken back", reason="forgets")
            w = w * 2.0 ** -(self.halvings - stamp[1]) * self.inflation
            receipt = None
        if not self.window:
            if self.detector is not None:
                raise UnlearnError(f"unlearning: this model forgets (drift_detector={type(self.detector).__name__}): "
                                   "the event's counts may have been dropped by a switch since it was learned, so "
                                   "they cannot be taken back exactly", reason="forgets")
            take_back(w, receipt)
            return
        pane = self.pane_no if stamp is None else stamp[0]
        first = self.pane_no - len(self.deltas)  # the oldest pane still in the counts
        if pane > self.pane_no:
            raise UnlearnError(f"receipt: it names pane {pane}, but the pane in progress is {self.pane_no}")
        if pane < first:
            self.expired_unlearns += 1  # its pane expired (or a drift dropped it): nothing of it is left
            return
        before = None if pane == self.pane_no else capture(stats)  # the pane in progress: counts since base
        take_back(w, receipt)
        if before is None:
            return
        part = capture_difference(before, capture(stats))  # what the event held in the counts
        k = pane - first
        self.deltas[k] = capture_difference(self.deltas[k], part)
        self.base = capture_difference(self.base, part)  # the pane in progress starts from counts without it

    # -------------------------------------------------------------- state

    def state(self, rebuild_origin: int = 0) -> tuple[dict, dict]:
        """``(arrays, meta)`` of what forgetting keeps (keys of ``arrays`` start with ``forget.``); the meta also
        carries ``rebuild_origin``, the learner's (a structured model's schedule origin), where the snapshot
        format has always kept it."""
        arrays: dict = {}
        caps = {"base": self.base, "warn": self.warn_base, **{f"pane{i}": d for i, d in enumerate(self.deltas)}}
        sparse = {}
        for tag, cap in caps.items():
            for name, a in (cap or {}).items():
                if isinstance(a, SparseTable):  # a sparse t-way table: its cells and their counts
                    idx, vals = a.cells()
                    arrays[f"forget.{tag}.{name}.cells"] = np.stack(idx).astype(np.int64) if len(vals) else \
                        np.zeros((len(a.shape), 0), dtype=np.int64)
                    arrays[f"forget.{tag}.{name}.counts"] = vals.copy()
                    sparse[f"{tag}.{name}"] = list(a.shape)
                else:
                    arrays[f"forget.{tag}.{name}"] = a.copy()
        meta = {
            "panes_kept": len(self.deltas), "base": self.base is not None, "warn": self.warn_base is not None,
            "pane_n": self.pane_n, "inflation": self.inflation.hex(), "warning": self.warning, "seen": self.seen,
            "sparse": sparse, "drifts": list(self.drifts),
            "clock": None if self.clock is None else self.clock.hex(), "halvings": self.halvings.hex(),
            "pane_no": self.pane_no, "expired_unlearns": self.expired_unlearns, "rebuild_origin": int(rebuild_origin),
            "detector": None if self.detector is None else encode_object(self.detector),
        }
        return arrays, meta

    def load(self, arrays: dict, meta: dict) -> int:
        """Restore what :meth:`state` saved (ValueError naming what does not fit); return the
        ``rebuild_origin`` it carried (0: none)."""
        try:
            sparse = meta.get("sparse") or {}

            def cap(tag):
                prefix = f"forget.{tag}."
                out = {k[len(prefix):]: np.array(v, dtype=float) for k, v in arrays.items()
                       if k.startswith(prefix) and f"{tag}.{k[len(prefix):]}" not in sparse
                       and not k.endswith((".cells", ".counts"))}
                for key, shape in sparse.items():
                    if key.startswith(tag + "."):
                        name = key[len(tag) + 1:]
                        table = SparseTable(tuple(shape))
                        cells, counts = arrays[f"forget.{key}.cells"], np.asarray(arrays[f"forget.{key}.counts"])
                        if len(counts):
                            table.add(tuple(np.asarray(cells, dtype=np.int64)), counts)
                        out[name] = table
                return out

            self.deltas = [cap(f"pane{i}") for i in range(int(meta["panes_kept"]))]
            self.base = cap("base") if meta["base"] else None
            self.warn_base = cap("warn") if meta["warn"] else None
            self.pane_n = int(meta["pane_n"])
            self.inflation = float.fromhex(meta["inflation"])
            self.warning, self.seen = bool(meta["warning"]), int(meta["seen"])
            self.drifts = [int(d) for d in meta["drifts"]]
            self.clock = None if meta.get("clock") is None else float.fromhex(meta["clock"])
            self.halvings = float.fromhex(meta.get("halvings", "0x0p+0"))
            self.pane_no, self.expired_unlearns = int(meta.get("pane_no", 0)), int(meta.get("expired_unlearns", 0))
            origin = int(meta.get("rebuild_origin") or 0)
            if meta["detector"] is not None:
                self.detector = decode_object(meta["detector"])
        except Exception as exc:  # noqa: BLE001 - a snapshot is untrusted data: whatever breaks is one refusal
            raise ValueError(f"forget: cannot restore the forgetting state: {exc!r:.80}") from None
        if not (self.inflation >= 1.0 and math.isfinite(self.inflation)) or self.pane_n < 0 or (
                self.window and (self.pane_n > self.pane_size or len(self.deltas) > self.panes - 1)):
            raise ValueError("forget: the forgetting state does not fit the model's window and panes")
        return origin


def prepare_merge(ours: Forgetting | None, stats, theirs: Forgetting | None, their_stats) -> None:
    """Ready two models' counts for a merge (neither forgets by a window: the learner refuses that): decayed
    counts renormalised, decay in event time brought to the later clock on both sides, and a warning's
    capture taken again from ``stats`` as they stand (what it holds now counts as before the warning)."""
    for f, s in ((ours, stats), (theirs, their_stats)):
        if f is not None:
            f.settle(s)
    clocks = [f.clock for f in (ours, theirs) if f is not None and f.clock is not None]
    for f, s in ((ours, stats), (theirs, their_stats)):  # decay in event time: both as of the later clock
        if f is not None and f.half_life and clocks:
            if f.clock is not None and f.clock < max(clocks):
                scale_counts(s, 2.0 ** (-(max(clocks) - f.clock) / f.half_life), (f.warn_base,))
            f.clock = max(clocks)
    if ours is not None and ours.warning:
        ours.warn_base = capture(stats)
