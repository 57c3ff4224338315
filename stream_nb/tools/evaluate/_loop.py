"""The evaluation loop: every model prequentially over the same events, and training without scores."""

from __future__ import annotations

import dataclasses
import math
import sys
import time
import typing

import numpy as np

from ..._console import InterruptGuard
from ..._pandas import pd
from ...engine import PrequentialMetrics
from ...exceptions import ConfigError, InvalidEventError, LabelTypeError
from ...learners import prequential_step
from ._delayed import evaluate_delayed
from ._readers import BadRow
from ._scores import METRICS, RESULT_COLUMNS, Tally, window_rows
from ._specs import state_bytes
from ._steps import call_models, stepping_order

__all__ = ["DEFAULT_WINDOW", "Evaluation", "ModelResult", "evaluate", "rolling_accuracy", "train"]

#: Labeled events per tumbling window of the results (and per point of the rolling curve): ``--window``.
DEFAULT_WINDOW = 500


@dataclasses.dataclass(eq=False)
class ModelResult:
    """One model's run: its metrics, the time spent in it, and its per-event record.

    ``metrics`` holds the daemon's counters (:class:`~stream_nb.engine.PrequentialMetrics`: events
    predicted, labeled, learned); ``rows`` the results of each tumbling window (see
    :mod:`stream_nb.tools.evaluate._scores`), whose last row's cumulative figures are :attr:`figures`.
    ``correct`` and ``loss`` hold each labeled event's hit (no prediction: a miss) and log loss
    (floored as the daemon floors it), for the rolling curve.
    """

    name: str
    model: typing.Any
    metrics: PrequentialMetrics
    seconds: float = 0.0
    correct: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, dtype=bool))
    loss: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0))
    tally: Tally | None = None
    rows: list[dict] = dataclasses.field(default_factory=list)

    @property
    def figures(self) -> dict[str, float | None]:
        """The cumulative metrics (``accuracy``, ``kappa``, ``kappa_t``, ``kappa_m``, ``macro_f1``,
        ``log_loss``) over every labeled event with a prediction; ``None`` before any."""
        last = self.rows[-1] if self.rows else {}
        return {m: last.get(f"cumulative_{m}") for m in METRICS}

    @property
    def accuracy(self) -> float | None:
        """Prequential accuracy over the labeled events with a prediction: river's ``Accuracy``."""
        return self.figures["accuracy"]

    @property
    def log_loss(self) -> float | None:
        """Mean prequential log loss (nats) over the labeled events with probabilities (see the module notes)."""
        return self.figures["log_loss"]

    @property
    def drifts(self) -> list[int]:
        """The drifts the model's detector found in this evaluation: the labeled events up to and
        including the one whose error raised each."""
        return list(self.tally.drifts) if self.tally is not None else []

    @property
    def events_per_second(self) -> float | None:
        """Valid events (predicted, and learned when labeled) per second spent in this model's calls."""
        return self.metrics.predicted / self.seconds if self.seconds > 0 else None

    @property
    def memory_bytes(self) -> int | None:
        """:func:`state_bytes` of the model at the end; ``None`` for a model without ``state()`` (a river model)."""
        return state_bytes(self.model) if callable(getattr(self.model, "state", None)) else None


@dataclasses.dataclass
class Evaluation:
    """The outcome of :func:`evaluate`."""

    source: str
    models: list[ModelResult]
    n_events: int = 0
    n_labeled: int = 0
    n_unlabeled: int = 0
    bad_rows: list[BadRow] = dataclasses.field(default_factory=list)
    blank_lines: int = 0
    #: True when Ctrl-C (KeyboardInterrupt) ended the run early: the figures cover the events before it.
    interrupted: bool = False
    #: Labeled events per tumbling window of :meth:`results`.
    window: int = DEFAULT_WINDOW
    #: The labels of the labeled events, in the order they were scored.
    labels: list = dataclasses.field(default_factory=list)

    @property
    def n_bad(self) -> int:
        """Rows skipped as bad."""
        return len(self.bad_rows)

    @property
    def bad_by_reason(self) -> dict[str, int]:
        """Bad rows counted by reason code."""
        out: dict[str, int] = {}
        for row in self.bad_rows:
            out[row.reason] = out.get(row.reason, 0) + 1
        return out

    def table(self) -> list[dict[str, typing.Any]]:
        """One row per model: model, the cumulative metrics (accuracy, kappa, kappa_t, kappa_m, macro_f1,
        log_loss), events_per_s, state_bytes, drifts (how many)."""
        return [
            {"model": r.name, **r.figures, "events_per_s": r.events_per_second, "state_bytes": r.memory_bytes,
             "drifts": len(r.drifts)}
            for r in self.models
        ]

    def results(self):
        """One row per tumbling window per model, as a pandas DataFrame (what ``--results`` writes).

        Columns: ``model``, ``window`` (from 0), ``first`` and ``last`` (labeled events, from 1),
        ``labeled``, ``scored``, the window's metrics, ``seconds`` spent in the model, ``drifts`` and
        ``drift_positions`` (space-separated) found in the window, then ``cumulative_<metric>`` up to
        its end. See :mod:`stream_nb.tools.evaluate._scores`.

        >>> from stream_nb import NaiveBayes
        >>> events = [({"sky": "sun"}, "play"), ({"sky": "rain"}, "stay"), ({"sky": "sun"}, "play")]
        >>> frame = evaluate(events, {"nb": NaiveBayes()}, window=2).results()
        >>> print(frame[["model", "window", "first", "last", "labeled", "scored", "accuracy"]].to_string(index=False))
        model  window  first  last  labeled  scored  accuracy
           nb       0      1     2        2       1       0.0
           nb       1      3     3        1       1       1.0
        """
        return pd.DataFrame([row for r in self.models for row in r.rows], columns=RESULT_COLUMNS)

    def counts_line(self) -> str:
        """One sentence: events, labeled, unlabeled, bad rows by reason, blank lines."""
        text = (f"{self.n_events:,} events ({self.n_labeled:,} labeled, {self.n_unlabeled:,} unlabeled: "
                f"predicted only); {self.n_bad:,} bad rows skipped")
        if self.bad_rows:
            text += " (" + ", ".join(f"{k}: {v:,}" for k, v in sorted(self.bad_by_reason.items())) + ")"
        if self.blank_lines:
            text += f"; {self.blank_lines:,} blank lines"
        return text


def evaluate(
    events: typing.Iterable,
    models: dict[str, typing.Any],
    *,
    source: str = "events",
    progress: bool = False,
    total: int | None = None,
    on_bad_row: typing.Callable[[BadRow], None] | None = None,
    delay: int | None = None,
    delay_field: str | None = None,
    window: int = DEFAULT_WINDOW,
) -> Evaluation:
    """Run every model prequentially over the same events.

    Parameters
    ----------
    events
        ``(x, y)`` or ``(x, y, where)`` tuples (``y`` ``None``: unlabeled) and
        :class:`BadRow` items, e.g. an :func:`open_events` source.
    models
        ``{name: model}``, fresh or already trained.
    progress
        Show a tqdm bar on stderr (only when stderr is a terminal).
    total
        Expected number of items, for the bar.
    on_bad_row
        Called with each :class:`BadRow` (read errors, and events a model rejects).
    delay, delay_field
        Labels revealed ``delay`` events later, or as many as the event's field ``delay_field`` says
        (see :mod:`stream_nb.tools.evaluate._delayed`): river's ``progressive_val_score(..., delay=)``.
    window
        Labeled events per tumbling window of :meth:`Evaluation.results`.

    Each valid event goes through every model's prequential step, the daemon's own, and its time
    counts for that model. An event the models reject is a bad row for all; any other error of a model
    is a :class:`~stream_nb.tools.evaluate.ModelError`. Ctrl-C ends the loop early: the result holds
    the events processed before it, and has ``interrupted`` set.

    Examples
    --------
    >>> from stream_nb.tools.evaluate import make_model
    >>> result = evaluate([({"sky": "sun"}, "play"), ({"sky": "rain"}, "stay")], {"nb": make_model("nb")})
    >>> result.n_labeled, result.models[0].name
    (2, 'nb')
    """
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        raise ConfigError(f"--window: expected a positive integer, got {window!r}")
    results = [ModelResult(name, model, PrequentialMetrics(), tally=Tally(model)) for name, model in models.items()]
    out = Evaluation(source, results, window=window)
    label_field = getattr(events, "label_field", None)
    clock = time.perf_counter
    bar = _progress_bar(progress, total, source)
    order = stepping_order(results)

    def bad(row: BadRow) -> None:
        out.bad_rows.append(row)
        if on_bad_row is not None:
            on_bad_row(row)

    interrupt = InterruptGuard()
    interrupt.start()
    try:
        if delay is not None or delay_field is not None:
            evaluate_delayed(events, results, out, delay=delay, delay_field=delay_field, bad=bad, clock=clock,
                             interrupt=interrupt, bar=bar, label_field=label_field, order=order)
        for item in () if delay is not None or delay_field is not None else events:
            if interrupt.requested:
                raise KeyboardInterrupt
            if bar is not None:
                bar.update()
            if isinstance(item, BadRow):
                bad(item)
                continue
            x, y = item[0], item[1]
            where = item[2] if len(item) > 2 else f"event {out.n_events + out.n_bad + 1}"
            # the one prequential step of each model
            steps, rejected = call_models(results, order, lambda model: prequential_step(model, x, y), where, clock,
                                          label_field)
            if rejected is not None:  # the first model rejected it, which leaves every model untouched
                bad(BadRow(where, rejected.reason, f"{results[order[0]].name}: {rejected}"))
                continue
            out.n_events += 1
            if y is None:
                out.n_unlabeled += 1
            else:
                out.n_labeled += 1
                out.labels.append(y)
            for r, (prediction, proba, learned, _) in zip(results, steps):
                r.metrics.update_prediction(y, prediction, proba, learned=learned)
                if y is not None:
                    r.tally.add(y, prediction, proba, r.seconds, r.model)
    except KeyboardInterrupt:
        out.interrupted = True
    finally:
        interrupt.stop()
        if bar is not None:
            bar.close()
    floor = PrequentialMetrics().log_loss_floor
    for r in results:
        r.correct = np.array([p is not None and p == y for y, p in zip(out.labels, r.tally.predictions)], dtype=bool)
        r.loss = np.array([-math.log(min(p, 1.0) if p is not None and p >= floor else floor) for p in r.tally.p_true],
                          dtype=float)
        r.rows = window_rows(r.name, out.labels, r.tally, window)
    out.blank_lines = getattr(events, "blank_lines", 0)
    return out


def _learns_unlabeled(model) -> bool:
    """True when the model learns unlabeled events now (``learn_unlabeled=True`` and a class known), as the daemon."""
    return getattr(model, "learn_unlabeled", False) is True and bool(model.classes)


def _progress_bar(progress: bool, total: int | None, desc: str):
    if not progress or not sys.stderr.isatty():
        return None
    from tqdm import tqdm  # only on a terminal: loaded when a bar is drawn

    return tqdm(total=total, desc=desc, unit=" events", file=sys.stderr, mininterval=0.2, dynamic_ncols=True)


def train(model, events: typing.Iterable, on_bad_row: typing.Callable[[BadRow], None] | None = None,
          progress: bool = False, total: int | None = None, source: str = "events") -> tuple[int, list[BadRow]]:
    """Learn every labeled event of ``events`` (as :func:`evaluate` reads them); return ``(learned, bad_rows)``.

    Unlabeled events are skipped, unless the model learns them (``learn_unlabeled=True``).

    >>> from stream_nb import NaiveBayes
    >>> model = NaiveBayes()
    >>> train(model, [({"a": 1}, "x"), ({"a": 2}, None), ({"a": 3}, "y")])
    (2, [])
    """
    learned, bad_rows = 0, []
    bar = _progress_bar(progress, total, source)
    try:
        for i, item in enumerate(events, 1):
            if bar is not None:
                bar.update()
            if not isinstance(item, BadRow):
                if item[1] is None and not _learns_unlabeled(model):
                    continue
                try:
                    model.learn_one(item[0], item[1])
                    learned += 1
                    continue
                except InvalidEventError as exc:
                    if isinstance(exc, LabelTypeError) and getattr(events, "label_field", None) and exc.field is None:
                        exc = exc.for_field(events.label_field)
                    item = BadRow(item[2] if len(item) > 2 else f"event {i}", exc.reason, str(exc))
            bad_rows.append(item)
            if on_bad_row is not None:
                on_bad_row(item)
    finally:
        if bar is not None:
            bar.close()
    return learned, bad_rows


def rolling_accuracy(correct: np.ndarray, window: int) -> np.ndarray:
    """Accuracy over the last ``min(window, i + 1)`` labeled events, at every labeled event ``i``.

    >>> rolling_accuracy(np.array([1, 0, 1, 1], dtype=bool), 2).tolist()
    [1.0, 0.5, 0.5, 1.0]
    """
    if window < 1:
        raise ConfigError(f"--window: expected a positive integer, got {window!r}")
    c = np.concatenate([[0], np.cumsum(correct, dtype=np.int64)])
    i = np.arange(1, len(correct) + 1)
    lo = np.maximum(i - window, 0)
    return (c[i] - c[lo]) / (i - lo)
