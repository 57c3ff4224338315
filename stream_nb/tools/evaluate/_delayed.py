"""Prequential evaluation with labels that arrive later (``stream-nb evaluate --delay N / --delay-field F``).

The schedule is river's ``evaluate.progressive_val_score(..., delay=...)``
(``river.stream.simulate_qa``): the i-th valid event arrives at time i and is
predicted at once by every model as it then stands; its label is revealed at
time ``i + d``, ``d`` the constant ``--delay`` or the event's own
``--delay-field`` (a number of events, >= 0, taken out of the features). Before
each event is predicted, every label due by its arrival (``i + d <= time``) is
revealed, oldest due first (ties in arrival order), and then, for each, the
prediction made at arrival is scored against it and the model learns it.
Labels still pending when the input ends are revealed in that order too.

An event without a label is predicted only. An event that a model rejects when
predicting is a bad row, as without delay; one rejected when its label is
learned is a bad row too (counted then), and is not scored.
"""

from __future__ import annotations

import bisect
import math
import typing

from ...exceptions import ConfigError, InvalidEventError
from ...learners import BayesClassifier
from ._readers import BadRow
from ._steps import call_models

__all__ = ["delay_of", "evaluate_delayed"]


def delay_of(x: dict, field: str):
    """The delay of an event read from (and removed from) its field ``field``: ``(x without it, delay)``,
    or an :class:`~stream_nb.exceptions.InvalidEventError` with reason ``bad_delay``.

    >>> delay_of({"a": 1, "d": 3}, "d")
    ({'a': 1}, 3)
    >>> delay_of({"a": 1}, "d")
    Traceback (most recent call last):
    ...
    stream_nb.exceptions.InvalidEventError: field 'd' (--delay-field): expected a number of events >= 0, got nothing
    """
    x = dict(x)
    d = x.pop(field, None)
    if isinstance(d, bool) or not isinstance(d, (int, float)) or not math.isfinite(d) or d < 0:
        got = "nothing" if d is None else repr(d)
        raise InvalidEventError(f"field {field!r} (--delay-field): expected a number of events >= 0, got {got}",
                                reason="bad_delay", field=field)
    return x, d


def _predict(model, x: dict) -> tuple:
    if isinstance(model, BayesClassifier):
        return model.predict_and_proba_one(x)
    return model.predict_one(x), model.predict_proba_one(x)


def evaluate_delayed(events: typing.Iterable, results: list, out, *, delay=None,
                     delay_field: str | None = None, bad: typing.Callable[[BadRow], None], clock,
                     interrupt, bar, label_field: str | None, order: list[int]) -> None:
    """The loop of :func:`~stream_nb.tools.evaluate.evaluate` with delayed labels (see the module notes);
    fills ``results`` (their metrics and tallies) and ``out`` in place."""
    if delay is not None and (isinstance(delay, bool) or not isinstance(delay, int) or delay < 0):
        raise ConfigError(f"--delay: expected a number of events >= 0, got {delay!r}")
    pending: list = []  # (due, seq, x, y, where, predictions), ordered by due then arrival
    seq = 0

    def reveal(item) -> None:
        _, _, x, y, where, preds = item
        _, rejected = call_models(results, order, lambda model: model.learn_one(x, y), where, clock, label_field)
        if rejected is not None:
            bad(BadRow(where, rejected.reason, f"{results[order[0]].name}: {rejected}"))
            return
        out.labels.append(y)
        for r, (prediction, proba) in zip(results, preds):
            r.metrics.correct += prediction is not None and prediction == y
            r.metrics.labeled += 1
            r.metrics.learned += 1
            p = proba.get(y, 0.0)
            floored = not p >= r.metrics.log_loss_floor
            r.metrics.log_loss_floored += floored
            r.metrics.log_loss_sum -= math.log(r.metrics.log_loss_floor if floored else min(p, 1.0))
            r.tally.add(y, prediction, proba, r.seconds, r.model)

    for item in events:
        if interrupt.requested:
            raise KeyboardInterrupt
        if bar is not None:
            bar.update()
        if isinstance(item, BadRow):
            bad(item)
            continue
        x, y = item[0], item[1]
        where = item[2] if len(item) > 2 else f"event {out.n_events + out.n_bad + 1}"
        try:
            if delay_field is not None:
                x, d = delay_of(x, delay_field)
            else:
                d = delay
        except InvalidEventError as exc:
            bad(BadRow(where, exc.reason, str(exc)))
            continue
        now = out.n_events
        while pending and pending[0][0] <= now:
            reveal(pending.pop(0))
        preds, rejected = call_models(results, order, lambda model: _predict(model, x), where, clock, label_field)
        if rejected is not None:
            bad(BadRow(where, rejected.reason, f"{results[order[0]].name}: {rejected}"))
            continue
        out.n_events += 1
        for r in results:
            r.metrics.events += 1
            r.metrics.predicted += 1
        if y is None:
            out.n_unlabeled += 1
            continue
        out.n_labeled += 1
        bisect.insort(pending, (now + d, seq, x, y, where, preds), key=lambda e: (e[0], e[1]))
        seq += 1
    while pending:
        reveal(pending.pop(0))
