"""The metrics of ``stream-nb evaluate``, cumulative and per tumbling window, from each model's record.

Over each model's labeled events, in the order they were scored: river's
accuracy, Cohen's kappa, macro F1 and log loss, and :class:`KappaT` and
:class:`KappaM`. An event with no prediction (a model that knows no class
yet) is not scored, as river's ``progressive_val_score`` skips it. Each
window of ``window`` labeled events has fresh metrics (the no-change classifier
of ``kappa_t`` starts from the label that closed the previous one) beside the
cumulative ones. The docs' *Evaluate* page describes every column.
"""

from __future__ import annotations

import typing

from ._kappas import KappaM, KappaT

__all__ = ["METRICS", "RESULT_COLUMNS", "Scorer", "Tally", "drift_count", "window_rows"]

#: The metrics of every row, in the order of the table's columns.
METRICS = ("accuracy", "kappa", "kappa_t", "kappa_m", "macro_f1", "log_loss")

#: The columns of the results: one row per tumbling window per model.
RESULT_COLUMNS = ("model", "window", "first", "last", "labeled", "scored", *METRICS, "seconds", "drifts",
                  "drift_positions", *(f"cumulative_{m}" for m in METRICS))


def drift_count(model) -> int:
    """How many drifts ``model`` has found: ``len(model.drifts)`` (stream_nb's models), river's
    ``model.n_drifts_detected()`` (its adaptive trees and forests), else 0.

    >>> from stream_nb import NaiveBayes
    >>> drift_count(NaiveBayes(drift_detector="ddm")), drift_count(object())
    (0, 0)
    """
    drifts = getattr(model, "drifts", None)
    if isinstance(drifts, (list, tuple)):
        return len(drifts)
    counter = getattr(model, "n_drifts_detected", None)
    return int(counter()) if callable(counter) else 0


class Tally:
    """One model's record of its labeled events, in the order they were scored: what it predicted,
    the probability it gave the true class, the seconds spent in it so far, and its drifts."""

    def __init__(self, model):
        self.predictions: list = []
        self.p_true: list = []  # P(true class), None when the model gave no probabilities
        self.seconds: list = []  # seconds spent in the model's calls up to and including this event
        self.drifts: list[int] = []  # labeled events of this evaluation at each drift found
        self._drifts_before = drift_count(model)

    def add(self, y, prediction, proba: dict, seconds: float, model) -> None:
        """Record one labeled event, scored and learned."""
        self.predictions.append(prediction)
        self.p_true.append(proba.get(y, 0.0) if proba else None)
        self.seconds.append(seconds)
        found = drift_count(model)
        if found > self._drifts_before:
            self.drifts.extend([len(self.predictions)] * (found - self._drifts_before))
            self._drifts_before = found


class Scorer:
    """The metrics of :data:`METRICS` over a stretch of labeled events (see the module notes).

    >>> s = Scorer()
    >>> for y, pred, p in [("a", None, None), ("a", "a", 0.9), ("b", "a", 0.3), ("b", "b", 0.6)]:
    ...     s.update(y, pred, p)
    >>> s.labeled, s.scored
    (4, 3)
    >>> figures = s.figures()
    >>> round(figures["accuracy"], 4), figures["kappa_t"]   # no-change: -, a, b -> right on event 4 only
    (0.6667, 0.5)
    """

    def __init__(self, last: typing.Any = None):
        # river's metrics load scipy.stats (a second): imported when an evaluation scores, not when stream-nb starts
        from river import metrics

        self.cm = metrics.ConfusionMatrix()
        self.accuracy = metrics.Accuracy(cm=self.cm)
        self.kappa = metrics.CohenKappa(cm=self.cm)
        self.macro_f1 = metrics.MacroF1(cm=self.cm)
        self.log_loss = metrics.CrossEntropy()
        self.kappa_t = KappaT(last=last)
        self.kappa_m = KappaM()
        self.labeled = 0
        self.scored = 0
        self.with_proba = 0

    def update(self, y, prediction, p_true: float | None) -> None:
        """One labeled event: the prediction (``None``: none) and the probability of ``y`` (``None``: no
        probabilities)."""
        self.labeled += 1
        if prediction is not None:
            self.scored += 1
            self.cm.update(y, prediction)  # shared by accuracy, kappa and macro F1
            self.kappa_t.update(y, prediction)
            self.kappa_m.update(y, prediction)
        if p_true is not None:
            self.with_proba += 1
            self.log_loss.update(y, {y: p_true})  # CrossEntropy reads the true class's probability only

    def figures(self) -> dict[str, float | None]:
        """``{metric: value}`` (``None`` when no event was scored)."""
        out: dict[str, float | None] = {m: getattr(self, m).get() if self.scored else None for m in METRICS}
        out["log_loss"] = self.log_loss.get() if self.with_proba else None
        return out


def window_rows(name: str, labels: list, tally: Tally, window: int) -> list[dict]:
    """The rows of one model: one per tumbling window of ``window`` labeled events (see the module notes)."""
    rows: list[dict] = []
    total = Scorer()
    drifts = iter(tally.drifts)
    upcoming = next(drifts, None)
    last, spent = None, 0.0
    for start in range(0, len(labels), window):
        stop = min(start + window, len(labels))
        part = Scorer(last=last)
        for i in range(start, stop):
            y, prediction, p = labels[i], tally.predictions[i], tally.p_true[i]
            part.update(y, prediction, p)
            total.update(y, prediction, p)
        found = []
        while upcoming is not None and upcoming <= stop:
            found.append(upcoming)
            upcoming = next(drifts, None)
        row = {"model": name, "window": len(rows), "first": start + 1, "last": stop, "labeled": part.labeled,
               "scored": part.scored, **part.figures(), "seconds": tally.seconds[stop - 1] - spent,
               "drifts": len(found), "drift_positions": " ".join(map(str, found))}
        row.update({f"cumulative_{k}": v for k, v in total.figures().items()})
        rows.append(row)
        last, spent = part.kappa_t.last, tally.seconds[stop - 1]
    return rows
