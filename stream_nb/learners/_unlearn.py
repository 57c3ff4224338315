"""Unlearning: the exact inverse of learning one event, by subtracting what it added.

An event learned by plain counting is taken back from the event alone; one whose counts EM or
semi-supervised learning spread by posteriors needs the :class:`Receipt` that
:meth:`Unlearning.learn_one_receipt` returned. The docs' *Learners in Python* page (Unlearning) says
what is detected and what stays.
"""

from __future__ import annotations

import typing

import numpy as np

from ..exceptions import UnlearnError
from ..stats import CAT, Columns, check_event, frame_events, is_missing_label
from ._receipt_state import receipt_parts, receipts_state

__all__ = ["Receipt", "Unlearning"]


class Receipt(typing.NamedTuple):
    """What learning one event added: enough to take it back exactly (:meth:`Unlearning.unlearn_one`)."""

    label: typing.Any  # the label it was learned with (None: unlabeled, semi-supervised)
    entries: tuple  # the store's journal (see stream_nb.stats.store._removing)
    extra: typing.Any = None  # the model's own state the event changed (SPODE: its running scores' increments)
    stamp: typing.Any = None  # forgetting: (pane it was added to, halvings of decay so far) when it was learned


class Unlearning:
    """``learn_one_receipt`` and ``unlearn_one`` of :class:`~stream_nb.learners.BayesClassifier` (a part of it)."""

    def learn_one_receipt(self, x: dict, y, w: float = 1.0) -> Receipt:
        """Learn one event as :meth:`learn_one` does, and return the :class:`Receipt` of what it added.

        >>> from stream_nb import EM, NaiveBayes
        >>> model = NaiveBayes(missing=EM())
        >>> model.learn_one({"sky": "sun", "wind": "low"}, "play")
        >>> model.learn_one({"sky": "rain", "wind": "high"}, "stay")
        >>> before = model.predict_proba_one({"sky": "sun"})
        >>> receipt = model.learn_one_receipt({"sky": "sun"}, "play")  # wind missing: EM adds fractions
        >>> model.unlearn_one({"sky": "sun"}, "play", receipt=receipt)
        >>> model.predict_proba_one({"sky": "sun"}) == before
        True
        """
        s, f = self._stats, self._forget
        pane = None if f is None else f.pane_no  # forgetting: the pane the event goes to
        known = self._watch(x, y)  # a drift detector is fed the event's error first, as learn_one does
        mark = self._unlearn_mark()
        s.journal = []
        try:
            self._learn(x, y, w, known)
            entries = tuple(s.journal)
        finally:
            s.journal = None
        # forgetting: the stamp names the event's pane and the decay so far (its own step included)
        return Receipt(y, entries, self._unlearn_delta(mark), None if f is None else (pane, f.halvings))

    def unlearn_one(self, x: dict, y, w: float = 1.0, *, receipt: Receipt | None = None) -> None:
        """Take back one learned event: the exact inverse of ``learn_one(x, y, w)``.

        An event EM or semi-supervised learning spread needs the ``receipt`` :meth:`learn_one_receipt`
        returned (else :class:`~stream_nb.exceptions.UnlearnError`, reason ``needs_receipt``); one the model
        cannot have learned raises it too (``not_learned``), and nothing changes.

        >>> from stream_nb import NaiveBayes
        >>> model = NaiveBayes()
        >>> model.learn_one({"sky": "sun"}, "play")
        >>> model.learn_one({"sky": "rain"}, "stay")
        >>> model.unlearn_one({"sky": "rain"}, "stay")
        >>> model.n_learned
        1.0
        >>> model.unlearn_one({"sky": "rain"}, "stay")
        Traceback (most recent call last):
        ...
        stream_nb.exceptions.UnlearnError: class 'stay': the counts hold 0, less than the weight to unlearn; this event was never learned (or was unlearned already); nothing was changed

        Under forgetting (:meth:`Forgetting.unlearn <stream_nb.learners._forgetting.Forgetting.unlearn>`): with
        a window the event leaves its pane (an expired one's is counted in :attr:`expired_unlearns`); with decay
        its decayed weight is subtracted, which needs its receipt; a drift detector without a window refuses.
        """
        f = self._forget
        if f is None:
            self._take_back(x, y, w, receipt)
            return
        x, _ = self._forget_time(x)
        f.unlearn(self._stats, w, receipt, lambda w, receipt: self._take_back(x, y, w, receipt))

    def _take_back(self, x: dict, y, w: float, receipt: Receipt | None) -> None:
        """:meth:`unlearn_one` without forgetting: subtract what the event (or its receipt) says it added."""
        s = self._stats
        if type(x) is not dict:
            check_event(x)
        if receipt is not None:
            if not isinstance(receipt, Receipt):
                raise UnlearnError(f"receipt: expected the Receipt learn_one_receipt returned, got {type(receipt).__name__}")
            if not _same_label(receipt.label, y):
                raise UnlearnError(f"receipt: it is the receipt of an event labeled {receipt.label!r}, not {y!r}")
            entries, extra = receipt.entries, receipt.extra
        else:
            entries, extra = self._plain_entries(x, y, w), None
        s.remove(entries)
        self._unlearn_extra(extra)
        for c in sorted({e[2] if e[0] == "count" else e[1] for e in entries if e[0] in ("count", "expected")}):
            self._added(c)

    def unlearn_events(self, xs: list, ys: list) -> None:
        """Take back many events learned by plain counting, at once: ``unlearn_one(x, y)`` for each pair, all
        or nothing (:class:`~stream_nb.exceptions.UnlearnError` when one cannot be taken back so, nothing changed).

        >>> from stream_nb import NaiveBayes
        >>> xs = [{"sky": "sun", "t": 20.5}, {"sky": "rain", "t": 11.0},
        ...       {"sky": "sun", "t": 25.0}, {"sky": "sun", "t": 23.0}]
        >>> ys = [1, 0, 1, 1]
        >>> model, reference = NaiveBayes(), NaiveBayes()
        >>> _ = model.learn_events(xs, ys), reference.learn_events(xs[:2], ys[:2])
        >>> model.unlearn_events(xs[2:], ys[2:])
        >>> x = {"sky": "sun", "t": 21.0}
        >>> model.n_learned, model.predict_proba_one(x)[1] - reference.predict_proba_one(x)[1] < 1e-12
        (2.0, True)
        >>> model.unlearn_events(xs[:1] * 2, ys[:1] * 2)
        Traceback (most recent call last):
        ...
        stream_nb.exceptions.UnlearnError: class 1: the counts hold 1, less than the 2 events to unlearn; they were never learned (or were unlearned already); nothing was changed
        """
        if len(xs) != len(ys):
            raise ValueError(f"unlearn_events: {len(xs)} events but {len(ys)} labels")
        if not len(xs):
            return
        xs, ys = frame_events(xs, ys)  # a DataFrame: numpy columns
        if not self.unlearns_plainly():
            raise UnlearnError(f"{type(self).__name__}: {self._receipts_why()}; take each event back with "
                               "unlearn_one and its receipt", reason="needs_receipt")
        s = self._stats
        stop, D, G, yc = s.encode_run(xs, ys, 0, complete=self.missing.attributes, limit=len(xs))
        if stop == len(xs) and (yc < 0).any():
            stop = int(np.argmax(yc < 0))
        if stop < len(xs):  # the event's own error (a value never learned, EM's missing value, no label)
            self._plain_entries(xs[stop], ys[stop], 1.0)
            raise UnlearnError(f"event {stop}: a value it holds was not learned by plain counting (a discretiser's "
                               "warm-up); nothing was changed", reason="needs_receipt")
        s.remove_rows(D, G, yc)
        for c in sorted(set(yc.tolist())):
            self._added(c)

    #: Whether learning changes state of the model's own beside the store's counts (SPODE's running scores):
    #: taking an event back then needs its receipt.
    _learns_own_state = False

    def unlearns_plainly(self, xs=()) -> bool:
        """Whether the events learned with a label from now on (those of ``xs``, when given) that are learned
        by plain counting (under ``missing=EM()``, the complete ones) can be taken back without a receipt
        (:meth:`unlearn_events`, or ``unlearn_one(x, y)``): no forgetting (a receipt says an event's pane and
        decay), no state of the model's own that learning changes (SPODE's running scores), one layer of
        counts (with ``discretiser="mdl"`` a receipt names the fine layer's cells), and no feature of integers
        of a discretising store that a promotion could take the counts of (nor one that ``xs`` could add).
        ``learn_events(xs, ys, receipts={})`` then learns runs of them together.

        >>> from stream_nb import NaiveBayes, SPODE, Window
        >>> NaiveBayes().unlearns_plainly(), SPODE().unlearns_plainly(), NaiveBayes(forgetting=Window(100)).unlearns_plainly()
        (True, False, False)
        """
        s = self._stats
        if self._forget is not None or self._learns_own_state or s.count_layer() is not s:
            return False
        if s.numeric == "gaussian":
            return True
        if any(s.promotion_drops(f) for f in s.from_int):
            return False
        if not len(xs):
            return True
        names = xs.columns.keys() if isinstance(xs, Columns) else set().union(*map(dict.keys, xs))
        return names <= s.feature_index.keys()

    def _receipts_why(self) -> str:
        """Why :meth:`unlearns_plainly` is False, for an error."""
        if self._forget is not None:
            return "a forgetting model takes events back by their panes and decay"
        if self._learns_own_state:
            return "learning also changes the model's own running scores"
        if self._stats.count_layer() is not self._stats:
            return "the counts are derived from a fine layer, which each event's receipt names"
        return "a feature of integers may be promoted to numeric, which drops counts"

    def _plain_entries(self, x: dict, y, w: float) -> tuple:
        """The journal ``learn_one(x, y, w)`` would write by plain counting; UnlearnError when it cannot be known."""
        s = self._stats
        if is_missing_label(y):
            raise UnlearnError("label: an unlabeled event was spread over the classes by the posterior of its time; "
                               "unlearn it with the receipt learn_one_receipt returned", reason="needs_receipt")
        s.check_label(y)
        c = s.class_index.get(y)
        if c is None:
            raise UnlearnError(f"label: class {y!r} was never learned; nothing was changed")
        for name, v in x.items():
            if is_missing_label(v):
                continue
            f = s.feature_index.get(name)
            if f is None:
                raise UnlearnError(f"feature {name!r} was never learned; nothing was changed")
        enc = s.encode(x)
        if enc.unseen:
            for name, v in x.items():
                f = s.feature_index[name] if not is_missing_label(v) else None
                if f is not None and s.kinds[f] == CAT and s.values[f].get(v) is None:
                    raise UnlearnError(f"feature {name!r}: value {v!r} was never learned; nothing was changed")
            raise UnlearnError("a numeric value falls in a bin that never counted anything; nothing was changed")
        if self.missing.attributes and len(s.missing_of(enc)):
            names = [s.features[f] for f in s.missing_of(enc).tolist()]
            raise UnlearnError(f"features {names} are missing: with missing='em' the event was learned with the "
                               "expected counts of its time; unlearn it with the receipt learn_one_receipt "
                               "returned", reason="needs_receipt")
        entries = [("count", enc, c, w)]
        if len(enc.gslots):
            entries.append(("gauss", c, w, enc.gslots, enc.gx))
        return tuple(entries)

    def receipt_needed(self, receipt: Receipt) -> bool:
        """Whether taking the event of ``receipt`` back exactly needs it: not when the event was learned by
        plain counting (the journal ``unlearn_one`` makes without a receipt is the same) and holds no value of
        a feature of integers whose promotion would now drop its counts (the event would then no longer say
        what it added, see :mod:`stream_nb.stats.forgetting._promoted`).

        >>> from stream_nb import AODE, EM, EqualFrequency, NaiveBayes
        >>> model = NaiveBayes(missing=EM())
        >>> model.learn_one({"sky": "sun", "wind": "low"}, "play")
        >>> model.receipt_needed(model.learn_one_receipt({"sky": "sun", "wind": "low"}, "play"))
        False
        >>> model.receipt_needed(model.learn_one_receipt({"sky": "sun"}, "play"))  # EM's fractions
        True
        >>> binned = AODE(numeric=EqualFrequency(warmup=20))
        >>> binned.receipt_needed(binned.learn_one_receipt({"sky": "sun", "n": 2}, "play"))  # n: integers so far
        True
        """
        if receipt.extra is not None or getattr(receipt, "stamp", None) is not None:
            return True
        if any(e[0] not in ("count", "gauss") for e in receipt.entries):
            return True
        s = self._stats
        return any(s.promotion_drops(f) for f in {f for e in receipt.entries if e[0] == "count"
                                                  for f in e[1].feats.tolist()} & s.from_int)

    def receipts_state(self, receipts: list) -> tuple[dict, list]:
        """``(arrays, meta)`` of ``receipts`` (of this model): numeric arrays, and JSON-able data referring
        to them, for a snapshot (see :mod:`stream_nb.learners._receipt_state`).

        >>> from stream_nb import EM, NaiveBayes
        >>> model = NaiveBayes(missing=EM())
        >>> model.learn_one({"sky": "sun", "wind": "low"}, "play")
        >>> receipt = model.learn_one_receipt({"sky": "sun"}, "play")
        >>> arrays, meta = model.receipts_state([receipt])
        >>> model.unlearn_one({"sky": "sun"}, "play", receipt=model.receipts_from_state(arrays, meta)[0])
        >>> model.n_learned
        1.0
        """
        return receipts_state(self._stats, receipts)

    def receipts_from_state(self, arrays: dict, meta, where: str = "receipts") -> list:
        """The receipts :meth:`receipts_state` gave, read back for this model (the one that issued them, or
        its restored copy); ValueError naming ``where`` and what was expected when one does not fit it."""
        return [Receipt(*parts) for parts in receipt_parts(self._stats, arrays, meta, where, self._check_receipt_extra)]

    # hooks: a model with state of its own that learning changes (SPODE's running scores)

    def _check_receipt_extra(self, extra, where: str) -> None:
        """ValueError naming ``where`` unless ``extra`` (read from a state) fits :meth:`_unlearn_extra`;
        default: none is recorded."""
        if extra is not None:
            raise ValueError(f"{where}: expected null ({type(self).__name__} records nothing of its own)")

    def _unlearn_mark(self):
        """What :meth:`_unlearn_delta` needs from before learning; default: nothing."""
        return None

    def _unlearn_delta(self, mark):
        """The model's own increments since ``mark`` (the receipt's ``extra``); default: none."""
        return None

    def _unlearn_extra(self, extra) -> None:
        """Take back the increments ``extra`` (None: nothing recorded); default: nothing."""


def _same_label(a, b) -> bool:
    """One label: equal, and both booleans or neither (``True == 1`` in Python, not in JSON)."""
    if is_missing_label(a) or is_missing_label(b):
        return is_missing_label(a) and is_missing_label(b)
    return a == b and isinstance(a, bool) == isinstance(b, bool)
