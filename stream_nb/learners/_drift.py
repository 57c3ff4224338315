"""Drift detection: the detector is fed the error of every labeled event learned, and the counts reset on a drift.

The error is fed once per event, whichever way it is learned: ``learn_one`` predicts first
(:meth:`DriftWatch._watch`), ``prequential_one`` hands its prediction over, and runs
(``prequential_many``, ``learn_events``, ``learn_many``) feed a compiled twin in the kernel.
:meth:`DriftWatch.drift_paused` learns without feeding it, :meth:`DriftWatch.observe_error` feeds an error
scored before. The docs' *Forgetting* page gives the rules.
"""

from __future__ import annotations

import contextlib
import logging

from ..kernels import NO_DETECTOR
from ..stats import Encoded, capture, count_difference, is_missing_label, replace_counts
from ._detectors import CompiledDetector

__all__ = ["DriftWatch", "UNSCORED"]

log = logging.getLogger("stream_nb.drift")

#: The prediction of an event not scored yet (:meth:`DriftWatch._watch` makes it when a detector needs it).
UNSCORED = object()

class DriftWatch:
    """The drift detector of a :class:`~stream_nb.learners.BayesClassifier` (a part of it, with forgetting's
    ``_forget`` state); see the module notes."""

    def _watch(self, x: dict, y, known: Encoded | None = None, prediction=UNSCORED) -> Encoded | None:
        """Before labeled event ``(x, y)`` is learned: feed the detector the 0/1 error of ``prediction``, or
        (:data:`UNSCORED`) of the model's decision made now; act on a warning or drift.

        Returns the encoding of ``x`` for prediction (``known``, or the one made here) for learning to reuse.
        Nothing is done without a detector, while it is paused, or for an unlabeled event; a label or time
        that learning would refuse raises before the detector sees anything.
        """
        f = self._forget
        if f is None or f.detector is None or f.paused or is_missing_label(y):
            return known
        s = self._stats
        x, _ = self._forget_time(x)  # a time the model refuses: refused here, as learning would
        s.check_label(y)
        if prediction is UNSCORED:
            prediction = None
            if s.n_classes:
                known = s.encode(x) if known is None else known
                prediction = self._decided(known)
        self._forget_observe(prediction, y)
        return known

    @contextlib.contextmanager
    def drift_paused(self):
        """Within the ``with`` block, learn without feeding the drift detector (nothing changes without one).

        The daemon learns a provisional label so: it is no true label, and its error says nothing
        of the concept; the true label, when it comes, is fed with :meth:`observe_error`.
        """
        f = self._forget
        if f is not None:
            f.paused += 1
        try:
            yield self
        finally:
            if f is not None:
                f.paused -= 1

    def observe_error(self, prediction, y) -> None:
        """Feed the drift detector the 0/1 error of ``prediction`` for the true label ``y``, a prediction made
        before the event was learned (``None``: none made), and act on a warning or drift as learning does.
        Nothing without a detector or with ``y`` missing; the event itself is not learned."""
        f = self._forget
        if f is not None and f.detector is not None and not is_missing_label(y):
            self._forget_observe(prediction, y)

    def _forget_observe(self, prediction, y) -> None:
        """Feed the detector the 0/1 error of the prediction of labeled event ``y``; act on a warning or drift."""
        f = self._forget
        det = f.detector
        f.seen += 1
        if prediction is None:
            return  # no class known yet: no prediction to judge
        det.update(0 if prediction == y else 1)
        self._forget_act()

    def _forget_act(self) -> None:
        """Act on what the detector says after its last update: switch the counts on a drift, take a capture
        when a warning begins, drop it when the warning ends."""
        f = self._forget
        det = f.detector
        if det.drift_detected:
            self._switch()
        elif getattr(det, "warning_detected", False):
            if not f.warning:
                f.warning = True
                f.warn_base = None if f.window else capture(self._stats)
        elif f.warning:
            f.warning, f.warn_base = False, None

    def _kernel_detector(self) -> tuple:
        """The detector arguments of a kernel: the compiled twin the model watches now (``watch, kind, params,
        state, fbuf, ibuf, warning``), or :data:`~stream_nb.kernels.NO_DETECTOR` (none, or while paused).
        A river detector without a twin has no kernel arguments: :meth:`_kernel_watches` says so."""
        f = self._forget
        if f is None or f.detector is None or f.paused:
            return NO_DETECTOR
        d = f.detector
        return True, d.kind, d.params, d.state, d.fbuf, d.ibuf, f.warning

    def _kernel_watches(self) -> bool:
        """Whether a kernel can run this model's prequential loop with its detector: none watched, or the
        compiled twin of one (a river detector without a twin is fed in Python, one event at a time)."""
        f = self._forget
        return f is None or f.detector is None or f.paused or isinstance(f.detector, CompiledDetector)

    def _switch(self) -> None:
        """A drift: switch to the fresh counts (see the module notes) and let the structure follow."""
        f, s = self._forget, self._stats
        if f.window:
            keep = count_difference(s, f.base)
            f.deltas, f.base = [], None
        elif f.warning and f.warn_base is not None:
            keep = count_difference(s, f.warn_base)
        else:
            keep = None
        replace_counts(s, keep)
        f.warning, f.warn_base = False, None
        f.drifts.append(f.seen)
        log.info("drift detected after %d labeled events: switched to %s", f.seen,
                 "the pane in progress" if f.window else "the counts since the warning" if keep is not None
                 else "empty counts", extra={"event": "drift", "position": f.seen, "n_drifts": len(f.drifts)})
        self._switched()

    def _switched(self) -> None:
        """Hook run after a switch to fresh counts (structured models rebuild); default: nothing."""

    @property
    def drifts(self) -> list:
        """Positions of the drifts the detector found: the number of labeled events predicted up to and
        including the one whose error raised it (the switch comes before that event is learned); [] without one."""
        return [] if self._forget is None else list(self._forget.drifts)
