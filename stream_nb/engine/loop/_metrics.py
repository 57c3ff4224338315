"""Live prequential (predict-then-learn) metrics of a running engine.

Every labeled event is predicted by the model as it was *before* the event,
then learned, and the prediction is scored against the label: accuracy, log
loss (floored at ``log_loss_floor``, so never infinite) and the accuracy over
the last ``recent_window`` labeled events. The docs' *Event contract* page
says what each counter counts.

>>> m = PrequentialMetrics()
>>> m.update_prediction(label="yes", prediction=None, proba={}, learned=True)
>>> m.update_prediction(label="yes", prediction="yes", proba={"yes": 0.75, "no": 0.25}, learned=True)
>>> m.update_prediction(label=None, prediction="yes", proba={"yes": 0.8, "no": 0.2}, learned=False)
>>> m.update_dead_letter("invalid_json")
>>> d = m.as_dict()
>>> d["events"], d["predicted"], d["learned"], d["dead_letters"], d["accuracy"]
(4, 3, 2, 1, 0.5)
>>> round(d["log_loss"], 4)  # (34.5388 + 0.2877) / 2
17.4132
"""

from __future__ import annotations

import typing

import numpy as np

from ..._checks import is_integer
from ...exceptions import ConfigError
from ._recent import RecentHits

__all__ = ["PrequentialMetrics", "DEFAULT_LOG_LOSS_FLOOR"]

_NOTHING = np.empty(0)

#: Smallest probability used in the log loss: ``-ln(1e-15)`` is about 34.54 nats.
DEFAULT_LOG_LOSS_FLOOR = 1e-15


class PrequentialMetrics:
    """Counters and running prequential scores; see the module docstring.

    Attributes
    ----------
    events
        Records taken from the input (valid events plus the events
        dead-lettered); ``events == predicted + dead_letters``. Feedback
        records (``--feedback``) are not events: the join counts them
        (``labels_*`` of :meth:`Joiner.status <stream_nb.engine.Joiner.status>`),
        the bad ones too.
    predicted
        Valid events, each predicted and given one output record.
    labeled
        Predicted events that carried a label as they arrived (their own, or
        one from feedback that came before them), each scored against it on
        arrival: the ``accuracy`` and ``log_loss``. A label that comes after
        its event is scored in the join's ``delayed_accuracy`` instead.
    learned
        Events the model learned, each counted once, when the model first
        learned it: a labeled event as it arrives (with ``learn_unlabeled``,
        an unlabeled one too); an event held for its label when it is
        learned with its provisional label, its joined label or its
        ``--on-expire`` label, whichever comes first (:meth:`count_learned`).
        A provisional label replaced by the true one is the same event: not
        counted again. A counter: it never goes down (a provisional label
        handed over at a rebalance stays counted here). An output's
        ``n_learned`` is this count once its event was counted.
    correct
        Labeled events whose prediction equalled the label.
    dead_letters_by_reason
        Dead-lettered events counted by ``reason`` code.
    log_loss_floored
        Labeled events whose true-class probability was below the floor.
    """

    def __init__(self, log_loss_floor: float = DEFAULT_LOG_LOSS_FLOOR):
        if not (is_integer(log_loss_floor) or isinstance(log_loss_floor, float)) or not (
            0.0 < log_loss_floor < 1.0
        ):
            raise ConfigError(f"log_loss_floor must be a number in (0, 1), got {log_loss_floor!r}")
        self.log_loss_floor = float(log_loss_floor)
        self.events = 0
        self.predicted = 0
        self.labeled = 0
        self.learned = 0
        self.correct = 0
        self.log_loss_sum = 0.0
        self.log_loss_floored = 0
        self.dead_letters_by_reason: dict[str, int] = {}
        #: The outcomes of the last labeled events (the recent accuracy).
        self.recent = RecentHits()

    def update_prediction(
        self,
        label: typing.Any,
        prediction: typing.Any,
        proba: dict[typing.Any, float],
        learned: bool,
    ) -> None:
        """Count one valid event; score it when it is labeled (``label is not None``)."""
        if label is None:
            self.update_many(1, int(learned), 0, _NOTHING)
        else:
            correct = prediction is not None and prediction == label
            self.update_many(1, int(learned), int(correct), np.array([proba.get(label, 0.0)], dtype=float),
                             np.array([correct], dtype=bool))

    def update_many(self, events: int, learned: int, correct: int, probabilities: np.ndarray,
                    hits: np.ndarray | None = None) -> None:
        """Count ``events`` valid events at once, as :meth:`update_prediction` of each in turn would.

        ``learned`` of them were learned; ``probabilities`` holds, in event
        order, the probability each *labeled* one gave its label (0 for a class
        missing from its prediction), ``correct`` of which predicted it, and
        ``hits`` whether each did, in the same order (needed unless all or none
        did). The counters and the log-loss sum (added in event order) come out the same.

        >>> m = PrequentialMetrics()
        >>> m.update_many(3, 2, 1, np.array([0.75, 0.0]), np.array([True, False]))
        >>> m.predicted, m.labeled, m.learned, m.correct, m.log_loss_floored, round(m.log_loss_sum, 4)
        (3, 2, 2, 1, 1, 34.8265)
        """
        self.events += events
        self.predicted += events
        self.learned += learned
        n = len(probabilities)
        if not n:
            return
        self.labeled += n
        self.correct += correct
        if hits is None:
            if 0 < correct < n:
                raise ValueError(f"update_many: which {correct} of the {n} labeled events were right? give hits")
            hits = np.full(n, correct == n)
        self.recent.add(hits)
        floor = self.log_loss_floor
        low = ~(probabilities >= floor)  # also catches NaN
        self.log_loss_floored += int(np.count_nonzero(low))
        # rounding in the model's normalisation may pass 1
        p = np.where(low, floor, np.minimum(probabilities, 1.0, where=~low, out=np.ones(n)))
        # each log subtracted in event order (accumulate runs left to right), whatever the events' grouping
        self.log_loss_sum = float(np.subtract.accumulate(np.concatenate(([self.log_loss_sum], np.log(p))))[-1])

    def count_learned(self, n: int) -> None:
        """Count ``n`` events learned after their output was sent: events held for their label, learned for
        the first time (with a provisional, joined or ``--on-expire`` label; see :attr:`learned`).

        >>> m = PrequentialMetrics()
        >>> m.update_prediction(label=None, prediction=None, proba={}, learned=False)
        >>> m.count_learned(1)
        >>> m.events, m.labeled, m.learned
        (1, 0, 1)
        """
        self.learned += n

    def update_dead_letter(self, reason: str) -> None:
        """Count one dead-lettered event under its reason code."""
        self.events += 1
        self.dead_letters_by_reason[reason] = self.dead_letters_by_reason.get(reason, 0) + 1

    @property
    def dead_letters(self) -> int:
        """Total dead-lettered records."""
        return sum(self.dead_letters_by_reason.values())

    @property
    def accuracy(self) -> float | None:
        """Prequential accuracy over labeled events; ``None`` before the first."""
        return self.correct / self.labeled if self.labeled else None

    @property
    def log_loss(self) -> float | None:
        """Mean prequential log loss (nats) over labeled events; ``None`` before the first."""
        return self.log_loss_sum / self.labeled if self.labeled else None

    def state(self) -> dict[str, typing.Any]:
        """The exact counters (the log loss as its sum), JSON-able; :meth:`load_state` takes them back.

        >>> m = PrequentialMetrics()
        >>> m.update_prediction("yes", "yes", {"yes": 0.5}, True)
        >>> other = PrequentialMetrics()
        >>> other.load_state(m.state())
        >>> other.state() == m.state(), other.accuracy == m.accuracy, other.recent.count   # the window starts again
        (True, True, 0)
        """
        return {
            "events": self.events,
            "predicted": self.predicted,
            "labeled": self.labeled,
            "learned": self.learned,
            "correct": self.correct,
            "log_loss_sum": self.log_loss_sum,
            "log_loss_floored": self.log_loss_floored,
            "dead_letters_by_reason": dict(self.dead_letters_by_reason),
        }

    def load_state(self, state: dict[str, typing.Any]) -> None:
        """Continue from counters saved by :meth:`state` (the floor stays this object's own)."""
        for name in ("events", "predicted", "labeled", "learned", "correct", "log_loss_floored"):
            value = state[name]
            if not is_integer(value) or value < 0:
                raise ValueError(f"metrics state: {name} must be an integer >= 0, got {value!r}")
            setattr(self, name, value)
        total = state["log_loss_sum"]
        if not (is_integer(total) or isinstance(total, float)) or not total >= 0:
            raise ValueError(f"metrics state: log_loss_sum must be a number >= 0, got {total!r}")
        self.log_loss_sum = float(total)
        reasons = state["dead_letters_by_reason"]
        if not isinstance(reasons, dict) or not all(
            isinstance(k, str) and is_integer(v) and v >= 0 for k, v in reasons.items()
        ):
            raise ValueError(f"metrics state: dead_letters_by_reason must map reasons to counts, got {reasons!r:.80}")
        self.dead_letters_by_reason = dict(reasons)
        self.recent = RecentHits()  # not in snapshots: the window starts again with the process

    def as_dict(self) -> dict[str, typing.Any]:
        """A JSON-able snapshot of every counter and score.

        >>> PrequentialMetrics().as_dict()
        {'events': 0, 'predicted': 0, 'labeled': 0, 'learned': 0, 'correct': 0, 'accuracy': None, 'recent_accuracy': None, 'recent_labeled': 0, 'recent_window': 1000, 'log_loss': None, 'log_loss_floor': 1e-15, 'log_loss_floored': 0, 'dead_letters': 0, 'dead_letters_by_reason': {}}
        """
        return {
            "events": self.events,
            "predicted": self.predicted,
            "labeled": self.labeled,
            "learned": self.learned,
            "correct": self.correct,
            "accuracy": self.accuracy,
            "recent_accuracy": self.recent.accuracy,
            "recent_labeled": self.recent.count,
            "recent_window": self.recent.window,
            "log_loss": self.log_loss,
            "log_loss_floor": self.log_loss_floor,
            "log_loss_floored": self.log_loss_floored,
            "dead_letters": self.dead_letters,
            "dead_letters_by_reason": dict(self.dead_letters_by_reason),
        }

    def headline(self) -> str:
        """The accuracy since the start and over the recent window, in words (the daemon's periodic line).

        >>> m = PrequentialMetrics()
        >>> m.headline()
        'accuracy -, no labeled event yet'
        >>> m.update_many(4, 4, 3, np.full(4, 0.5), np.array([True, True, True, False]))
        >>> m.headline()
        'accuracy 0.7500 (last 4 labeled: 0.7500)'
        """
        if self.accuracy is None:
            return "accuracy -, no labeled event yet"
        recent = self.recent.accuracy
        return (f"accuracy {self.accuracy:.4f} (last {self.recent.count:,} labeled: "
                f"{'-' if recent is None else format(recent, '.4f')})")
