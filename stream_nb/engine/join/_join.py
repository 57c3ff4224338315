"""Labels that arrive later: join feedback records to the events they label.

An event without a label but with an id is predicted at once, then held in the
:class:`~stream_nb.engine.join._pending.PendingStore` until a feedback record
``{"<id-field>": ..., "<label-field>": ...}`` brings its label; the model then
learns the pair, and the prediction made on arrival is scored against it. A
label that comes first waits for its event. ``pending_max`` and ``label_ttl``
bound what waits; ``on_expire`` and ``provisional_label`` say what an event
without its label is learned with. A provisional label feeds the drift
detector nothing; the true label feeds it the error of the prediction made on
arrival. In a group sharing one model, :attr:`Joiner.sharing` learns each pair
into its partition's state too. The docs' *Labels that come later* page gives
every rule.
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
import typing

import numpy as np
import orjson

from ..._checks import configure
from ...exceptions import ConfigError, InvalidEventError, LabelTypeError, UnlearnError
from ...stats import json_type
from ._join_handover import HandOver
from ._join_holds import EventHolds, event_key
from ._join_reads import DELAY_BUCKETS, FeedbackReads
from ._label_reads import ABSENT, event_keys, parse_on_expire, read_note, same_label
from ._pending import JOINED, LABEL, PENDING, PendingStore
from ..contract import Record, dead_letter_record

__all__ = ["DELAY_BUCKETS", "Joiner"]

log = logging.getLogger("stream_nb.engine")


def _is_time(t) -> bool:
    """Whether ``t`` is a time the join takes: a finite number of seconds (not a boolean: True is no time)."""
    return not isinstance(t, bool) and isinstance(t, (int, float)) and math.isfinite(t)


DEFAULT_CONFIG: dict[str, typing.Any] = {
    "id_field": "id",
    "label_field": "label",
    "time_field": None,
    "pending_max": 1_000_000,
    "label_ttl": 3600.0,
    "on_expire": "drop",
    "provisional_label": None,
    "feedback_max_records": 500,
}


class Joiner(EventHolds, FeedbackReads, HandOver):
    """The join of an :class:`~stream_nb.engine.Engine` with a feedback source (see the module notes).

    The engine calls :meth:`prepare` on each decoded event, :meth:`hold` after
    sending an unlabeled one, and :meth:`tick` after each poll; :meth:`status`
    gives the counters.
    """

    def __init__(self, engine, feedback, config: dict | None = None, clock=time.time):
        self.config = cfg = configure(DEFAULT_CONFIG, config or {}, "join setting")
        if not isinstance(cfg["pending_max"], int) or cfg["pending_max"] < 1:
            raise ConfigError(f"--pending-max: expected a positive integer, got {cfg['pending_max']!r}")
        if not isinstance(cfg["label_ttl"], (int, float)) or not cfg["label_ttl"] > 0:
            raise ConfigError(f"--label-ttl: expected a positive number of seconds, got {cfg['label_ttl']!r}")
        if isinstance(cfg["on_expire"], str):
            cfg["on_expire"] = parse_on_expire(cfg["on_expire"])
        self.engine = engine
        self.feedback = feedback
        self.clock = clock
        self.reset()
        # held events and early labels given to (out) and taken from (in) other members or this one's next run;
        # counted in this run only (not in snapshots, not rewound)
        self.handed = {"events_out": 0, "labels_out": 0, "events_in": 0, "labels_in": 0}
        # a feedback source read by the input's own consumer (Kafka's --feedback-topic): its positions go with
        # the input's in the engine's, so snapshots, commits and transactions cover them like the input's
        self._shared_positions = bool(getattr(feedback, "shares_positions", False))
        #: The group's checkpointer (``--model-topic``) told of every pair learned or taken back here, with
        #: the input partition of its held event (``learned(events)``, ``unlearned(events)``); None alone.
        self.sharing = None

    def reset(self) -> None:
        """Hold nothing and count nothing: the join of a fresh start (an exactly-once rewind reloads a
        snapshot's join into it, see :func:`~stream_nb.engine.join._join_state.rewind_join`)."""
        # a label that comes before its event is a row of the store too (state LABEL: its id, time, label and
        # record), so that events and early labels share one bound, one look-up and one expiry
        self.store = PendingStore(self.config["pending_max"])
        self.receipts: dict[int, typing.Any] = {}  # row -> receipt of a provisional label not plainly counted
        self.positions: dict[str, int] = {}  # feedback partition -> next position
        self.stream_time = -math.inf  # the latest event time seen (time_field mode)
        self._wall_at_stream_time = self.clock()
        # feedback records by outcome (joined, unmatched, duplicate, rejected: dead-lettered for another reason)
        # and held events by outcome (expired, evicted); delayed_*: the predictions scored by a later label
        # kept_provisional / kept_both: retractions the model refused (the true label taken back, or both kept)
        self.counts = {"joined": 0, "expired": 0, "unmatched": 0, "duplicate": 0, "retractions": 0,
                       "kept_provisional": 0, "kept_both": 0, "evicted": 0, "rejected": 0,
                       "delayed_labeled": 0, "delayed_correct": 0}
        self.delay_histogram = [0] * len(DELAY_BUCKETS)
        self.delay_sum = 0.0
        self._times: dict[int, float] = {}  # id(event) -> its time, between prepare and hold
        # (id, features, prediction, partition, offset, time) to hold, set aside since the last flush_holds()
        self._to_hold: list = []
        # whether each id of _to_hold was not held as its poll began (None: not known, flush_holds looks)
        self._held_absent: list | None = []
        # hold_sent()'s usual poll as columns (ids, features, predictions, partitions, offsets, times,
        # whether each id was not held as the poll began), or None
        self._to_hold_poll: tuple | None = None
        self._joined_rows: list = []  # held rows joined by the labels of one read, learned at its end
        self._joined_y: list = []
        self._retract_rows: list = []  # those of them whose provisional label is taken back then
        self._poll_first = None  # the first label of the poll prepared (its type is the model's next)

    # ------------------------------------------------------------------ time

    @property
    def exhausted(self) -> bool:
        """True once a finite feedback source has been read to its end."""
        return bool(getattr(self.feedback, "exhausted", False))

    def now(self, idle: bool = False) -> float:
        """The join's clock: the wall clock, or with ``time_field`` the latest event time (moved on by the
        wall clock while idle)."""
        if self.config["time_field"] is None:
            return self.clock()
        if idle and self.stream_time > -math.inf:
            return self.stream_time + max(0.0, self.clock() - self._wall_at_stream_time)
        return self.stream_time

    def _time_of(self, fields: dict, where: str) -> tuple[dict, float]:
        name = self.config["time_field"]
        if name is None:
            return fields, self.clock()
        if name not in fields:  # no time of its own: the stream's
            return fields, self.stream_time if self.stream_time > -math.inf else 0.0
        fields = dict(fields)
        t = fields.pop(name)
        if not _is_time(t):
            raise InvalidEventError(f"{where} field {name!r} (--time-field): expected a number of seconds, got "
                                    f"{t!r:.60}", reason="bad_time", field=name)
        if t > self.stream_time:
            self.stream_time, self._wall_at_stream_time = float(t), self.clock()
        return fields, float(t)

    # ------------------------------------------------------------------ events

    def prepare(self, event):
        """An event as the model should see it: without its time field; labeled when its label came first."""
        features, t = self._time_of(event.features, "event")
        if features is not event.features:
            event = event._replace(features=features)
        if event.label is None and event.id is not None and self.store.n_labels:
            row = self.store.find(event_key(event.id))
            if row >= 0 and self.store.state[row] == LABEL and self._early_fit([row], [None], [0]) is True:
                event = event._replace(label=self._take_early([row], t)[0])
        if event.label is not None and self._poll_first is None:
            self._poll_first = event.label
        if event.label is None:
            self._times[id(event)] = t
        return event

    def prepare_columns(self, ids: list, xs: list, ys: list) -> list | None:
        """:meth:`prepare` of a poll's valid events given as columns (ids, features, labels): their labels, with
        each early one in place, and their features without the time field (taken out in place). None, with
        nothing changed, when the join refuses an event's time: the poll then goes event by event, where that
        event gets its own error."""
        name = self.config["time_field"]
        if name is None:
            t = self.clock()
        else:
            t = self._poll_times(xs, name)
            if t is None:
                return None
        keys = event_keys(ids, ys)
        at = [j for j, key in enumerate(keys) if key is not None] if None in keys else None
        rows = self.store.find_many(keys if at is None else [keys[j] for j in at])
        # whether each id is held yet, as flush_holds() asks: nothing changes the store before it does
        found = rows if at is None else np.full(len(keys), -1, dtype=np.int64)
        if at is not None:
            found[at] = rows
        self._column_keys, self._column_time, self._column_absent = keys, t, (found < 0).tolist()
        if not self.store.n_labels:
            return ys
        hit = rows >= 0
        hit[hit] = self.store.state[rows[hit]] == LABEL
        if not hit.any():
            return ys
        where, taken = np.flatnonzero(hit), rows[hit]
        first = np.unique(taken, return_index=True)[1]
        if len(first) < len(taken):  # an id twice in one poll: its first event takes the label (the next: duplicate)
            first.sort()
            where, taken = where[first], taken[first]
        where = where.tolist() if at is None else [at[j] for j in where.tolist()]
        taken = taken.tolist()
        fit = self._early_fit(taken, ys, where)
        if fit is not True:  # a label the model would refuse, gone as feedback: its event is held for another
            for j in (j for j, ok in zip(where, fit) if not ok):
                self._column_absent[j] = True
            where, taken = [j for j, ok in zip(where, fit) if ok], [r for r, ok in zip(taken, fit) if ok]
        ys = list(ys)
        times = t if name is None else np.array([t[j] for j in where])
        for j, y in zip(where, self._take_early(taken, times)):
            ys[j] = y
        return ys

    def _poll_times(self, xs: list, name: str) -> list | None:
        """The time of each event of ``xs`` (its ``name`` field, taken out of it, else the stream's time as
        :meth:`_time_of` gives it one event after the other), the stream time moved on; None, with nothing
        changed, when an event's time is refused (not a finite number)."""
        times = self._times_of([x.get(name, ABSENT) for x in xs])
        if times is not None:
            for x in xs:
                x.pop(name, None)
        return times

    def _times_of(self, raw: list) -> list | None:
        """The time of each of a poll's events or a read's labels, ``raw`` their time fields (:data:`ABSENT`:
        none): its own, else the stream's time as :meth:`_time_of` gives it one after the other; the stream
        time moved on. None, nothing changed, when a time is refused (not a finite number)."""
        given = [v for v in raw if v is not ABSENT]
        if not all(map(_is_time, given)):
            return None
        if len(given) == len(raw):
            times = np.array(given, dtype=np.float64)
        else:
            times = np.array([np.nan if v is ABSENT else v for v in raw], dtype=np.float64)
            # an event without a time takes the stream's: the latest time before it (0.0 before any)
            known = np.where(np.isnan(times), -np.inf, times)
            before = np.maximum.accumulate(np.concatenate([[self.stream_time], known]))[:-1]
            times = np.where(np.isnan(times), np.where(before > -np.inf, before, 0.0), times)
        if given and times.max() > self.stream_time:
            self.stream_time, self._wall_at_stream_time = float(times.max()), self.clock()
        return times.tolist()

    def _early_fit(self, rows: list, ys: list, where: list):
        """Whether the model takes each early label held at ``rows``, about to go to the events at ``where``
        of a poll whose own labels are ``ys``: True when it takes them all, else a boolean each. One of another
        JSON type than the model's labels is the feedback record's fault, not the event's: dead-lettered here
        (``label_type_conflict``), its row freed, so that its event goes on unlabeled, predicted and held for
        a label of the right type, as when such a label comes after its event (:meth:`_check_joined_label`).
        Before the model has labels, the first label of the poll (its own or one come early) sets the type,
        as the model will learn it first."""
        store = self.store
        labels = self._early_labels(rows)
        expected, first = self._expected_label()
        if expected is None:
            first = self._poll_first
            if first is None:
                own = next((j for j, y in enumerate(ys) if y is not None), len(ys))
                first = ys[own] if own < where[0] else labels[0]
            expected = json_type(first)
        kinds = {k: json_type(y) == expected for k, y in {type(y): y for y in labels}.items()}
        if all(kinds.values()):
            return True
        fit = [kinds[type(y)] for y in labels]
        for ok, row, y in zip(fit, rows, labels):
            if not ok:
                self._dead(read_note(store.note_of(row))[1],
                           LabelTypeError(y, json_type(y), expected, first, field=self.config["label_field"]))
                store.remove(row)
        return fit

    def _early_labels(self, rows: list) -> list:
        """The labels held for ``rows`` (early labels, state LABEL)."""
        store = self.store
        ys = store.labels_of(rows)
        if None in ys:  # a label beyond the store's codes: its note has it
            ys = [read_note(store.note_of(row))[0] if y is None else y for row, y in zip(rows, ys)]
        return ys

    def _take_early(self, rows: list, t) -> list:
        """The labels held for ``rows`` (early labels, state LABEL), given to their events, come at time ``t``
        (one for all, or one per row): counted as joined (a delay of 0 unless the label's own time is later),
        each row kept as a joined id (to spot duplicates) until the TTL."""
        store = self.store
        ys = self._early_labels(rows)
        delays = np.maximum(0.0, store.time[rows] - t).tolist()
        # each joined id stays with the feedback partition its label came from: a group hands it on with it
        self.store.joined_in_place(rows, t, [read_note(store.note_of(row))[1].partition for row in rows])
        self._count_delays(delays)
        return ys

    def _learn(self, x: dict, y, record: bool = False, row: int | None = None):
        """Learn ``(x, y)`` (of held ``row``, shared with its partition's state when given); with ``record``,
        the receipt when taking it back needs one (else None)."""
        model = self.engine.model
        if record and hasattr(model, "learn_one_receipt"):
            receipt = model.learn_one_receipt(x, y)
            receipt = receipt if model.receipt_needed(receipt) else None  # else the event alone says what to take back
        else:
            model.learn_one(x, y)
            receipt = None
        if row is not None:
            self._share([row], [x], [y])
        return receipt

    def _share(self, rows: list, xs, ys, unlearn: bool = False) -> None:
        """Tell :attr:`sharing` that the model learned (or, ``unlearn``, took back) labels ``ys`` of the held
        events ``xs`` of ``rows``: each goes to the state of its event's input partition."""
        sharing = self.sharing
        if sharing is None or not len(rows):
            return
        names = self.store.partitions
        events = sorted(zip((names[c] for c in self.store.partition[rows].tolist()), xs, ys), key=lambda e: e[0])
        (sharing.unlearned if unlearn else sharing.learned)(events)

    def _retract(self, row: int, x: dict) -> None:
        """Take back the provisional label of ``row``."""
        model = self.engine.model
        if not hasattr(model, "unlearn_one"):
            raise UnlearnError(f"{type(model).__name__} cannot unlearn: --provisional-label needs a stream_nb model")
        model.unlearn_one(x, self.config["provisional_label"], receipt=self.receipts.pop(row, None))
        self._share([row], [x], [self.config["provisional_label"]], unlearn=True)
        self.counts["retractions"] += 1

    def _room_for(self, n: int) -> None:
        """Make room for ``n`` more held events or labels: when the bounds are reached, expire the oldest
        (joined ids kept to spot duplicates first, then held events, then early labels), a batch at a time."""
        cap = self.config["pending_max"]
        over = len(self.store) + n - cap
        if over <= 0 and not self.store.full:
            return
        self._learn_joined()  # rows joined in this read are read before any row is freed
        over = max(over, 1, cap // 100)  # in batches: finding the oldest scans the store
        self._expire_rows(self.store.oldest(over).tolist(), evicted=True)

    # ------------------------------------------------------------------ labels

    def tick(self, polled: bool) -> None:
        """After each poll of the input: read the feedback that is there, then expire what is due."""
        self.flush_holds()
        self._times.clear()  # the times of the last poll's events, held or rejected by now
        self._poll_first = None  # the first label of the next poll: learned by then, or not at all
        records = self.feedback.poll(self.config["feedback_max_records"], 0.0)
        try:
            self._labels(records)
        finally:
            self._learn_joined()
        self.expire(idle=not polled and not records)

    def _learn_joined(self) -> None:
        """Learn the pairs joined by the last labels read, in one call of the model's ``learn_events`` (the
        vectorised runs of a poll; counts add up in any order): their features read out of the store at once.
        The provisional labels of those set aside to retract are taken back together first (or, when the
        model cannot, each pair goes as :meth:`_join` takes it)."""
        rows, ys, self._joined_rows, self._joined_y = self._joined_rows, self._joined_y, [], []
        retract, self._retract_rows = self._retract_rows, []
        if not rows:
            return
        store, model = self.store, self.engine.model
        if retract and not self._retract_together(retract):
            slow = set(retract)
            for row, y in zip(rows, ys):
                if row in slow:
                    try:
                        self._learn_and_retract(row, store.features(row), y)
                    except InvalidEventError as exc:  # the provisional label stays
                        log.warning("a joined pair was not learned (label %r): %s", y, exc)
                        store.forget_features(row)
            keep = [i for i, row in enumerate(rows) if row not in slow]
            rows, ys, retract = [rows[i] for i in keep], [ys[i] for i in keep], []
        xs = store.columns_many(rows)  # read a column at a time, no dict per event
        if xs is None:
            xs = store.features_many(rows)
        # rows retracted together feed no detector twice: a model with one forgets, so unlearn_events refuses it
        # and its rows with a provisional label went one at a time above (_learn_and_retract)
        refused = model.learn_events(xs, ys) if rows else []
        if self.sharing is not None:
            out = {i for i, _ in refused}
            keep = [i for i in range(len(rows)) if i not in out]
            self._share([rows[i] for i in keep], [xs[i] for i in keep], [ys[i] for i in keep])
        retracted = set(retract)
        first = len(rows) - len(retracted)  # learned for the first time: not learned with a provisional label
        for i, exc in refused:  # checked when set aside (_check_joined_label)
            log.warning("a joined pair was not learned (label %r): %s", ys[i], exc,
                        extra={"event": "join_refused", "reason": getattr(exc, "reason", None)})
            if rows[i] in retracted:  # a label the model refuses leaves the provisional one: learned again
                self._learn_provisional([rows[i]], [xs[i]], self.config["provisional_label"])
                self.counts["retractions"] -= 1
            else:
                first -= 1
        self.engine.metrics.count_learned(first)
        store.forget_features_many(rows)

    def _retract_together(self, rows: list) -> bool:
        """Take back the provisional labels of ``rows`` together (``unlearn_events``); False, nothing changed,
        when the model cannot."""
        xs = self.store.columns_many(rows)
        xs = self.store.features_many(rows) if xs is None else xs
        try:
            self.engine.model.unlearn_events(xs, [self.config["provisional_label"]] * len(rows))
        except UnlearnError:
            return False
        self._share(rows, xs, [self.config["provisional_label"]] * len(rows), unlearn=True)
        self.counts["retractions"] += len(rows)
        return True

    def _observe_true(self, rows: list, ys: list) -> None:
        """Feed the model's drift detector the true labels ``ys`` of held events ``rows`` learned with the
        provisional label: the error of the prediction each got when it arrived (see the module notes)."""
        observe = getattr(self.engine.model, "observe_error", None)
        if observe is not None:
            for row, y in zip(rows, ys):
                observe(self.store.predicted(row), y)

    def _learn_and_retract(self, row: int, x: dict, y) -> None:
        """Learn the true label ``y`` of the held event ``x`` (of ``row``), then take back its provisional
        label: first, so that a label the model rejects leaves the provisional one. The drift detector was
        fed already (:meth:`_observe_true`)."""
        model = self.engine.model
        with model.drift_paused() if hasattr(model, "drift_paused") else contextlib.nullcontext():
            receipt = self._learn(x, y, record=True, row=row)
        self._retract_or_keep(row, x, y, receipt)
        self.store.forget_features(row)

    def _retract_or_keep(self, row: int, x: dict, y, receipt) -> None:
        """Take back the provisional label of ``row``, whose true label ``y`` was learned (with ``receipt``);
        when it cannot be, take ``y`` back instead: the provisional label stays. A model that can unlearn
        nothing any more (candidate pairs that came back, reason ``"partial_pairs"``) keeps both, logged."""
        try:
            self._retract(row, x)
        except UnlearnError as exc:  # no receipt: a snapshot of an older version (see _join_state)
            try:
                self.engine.model.unlearn_one(x, y, receipt=receipt)
            except UnlearnError as again:
                log.error("label %r of a held event learned beside its provisional label, which the model "
                          "cannot take back: %s", y, again)
                self.counts["kept_both"] += 1
                return
            self._share([row], [x], [y], unlearn=True)
            self.counts["kept_provisional"] += 1
            log.warning("label %r of a held event not learned: its provisional label stays: %s", y, exc)

    def _retracts_together(self, rows) -> bool:
        """Whether the provisional labels of held rows ``rows`` may be taken back with the others of their
        read (:meth:`_retract_together`): the model unlearns many at once and none of them has a receipt."""
        receipts = self.receipts
        return hasattr(self.engine.model, "unlearn_events") and (not receipts or receipts.keys().isdisjoint(rows))

    def _check_joined_label(self, y) -> None:
        """Raise :class:`LabelTypeError` for a label the model would refuse (another JSON type than its
        labels', or than the first label waiting to be learned with it), before the pair is set aside."""
        expected, first = self._expected_label()
        t = json_type(y)
        if expected is not None and t != expected:
            raise LabelTypeError(y, t, expected, first, field=self.config["label_field"])

    def _join(self, row: int, y, t: float) -> None:
        store = self.store
        if store.provisional[row]:
            self._check_joined_label(y)
            self._observe_true([row], [y])
            x = store.features(row)
            if not same_label(y, self.config["provisional_label"]):
                self._learn_and_retract(row, x, y)
            else:
                store.forget_features(row)
        elif hasattr(self.engine.model, "learn_events"):
            self._check_joined_label(y)
            self._joined_rows.append(row)  # learned with the others of this read (_learn_joined)
            self._joined_y.append(y)
        else:
            self._learn(store.features(row), y, row=row)
            self.engine.metrics.count_learned(1)  # a held event learned for the first time
            store.forget_features(row)
        prediction = store.predicted(row)
        self.counts["delayed_labeled"] += 1
        self.counts["delayed_correct"] += prediction is not None and same_label(prediction, y)
        self._count_delays([max(0.0, t - float(store.time[row]))])
        self.receipts.pop(row, None)
        store.state[row] = JOINED  # its id kept until the TTL, to count duplicates

    # ------------------------------------------------------------------ expiry

    def expire(self, idle: bool = False) -> None:
        """Expire every event and label older than the TTL, oldest first."""
        self.flush_holds()
        cutoff = self.now(idle) - self.config["label_ttl"]
        if cutoff == -math.inf:
            return
        self._expire_rows(self.store.due(cutoff).tolist())

    def _expire_rows(self, rows: list, evicted: bool = False) -> None:
        """Expire ``rows``, oldest first (``evicted``: to make room, counted so too), and free them: each held
        event by ``on_expire``, each early label dead-lettered. Held events a label policy learns without a
        provisional label to take back are learned together, in order (``learn_events``, as when joined)."""
        store, state, policy = self.store, self.store.state, self.config["on_expire"]
        together = policy != "drop" and self.config["provisional_label"] is None and \
            hasattr(self.engine.model, "learn_events")
        learn = []
        for row in rows:
            if state[row] == PENDING:
                self.counts["evicted"] += evicted
                if together:
                    self.counts["expired"] += 1
                    learn.append(row)
                else:
                    self._expire(row)
            elif state[row] == LABEL:
                self.counts["evicted"] += evicted
                self._unmatched(row)
        if learn:
            xs = store.columns_many(learn)
            xs = store.features_many(learn) if xs is None else xs
            refused = self.engine.model.learn_events(xs, [policy[1]] * len(learn))
            if self.sharing is not None:
                out = {i for i, _ in refused}
                keep = [i for i in range(len(learn)) if i not in out]
                self._share([learn[i] for i in keep], [xs[i] for i in keep], [policy[1]] * len(keep))
            for _, exc in refused:
                log.warning("--on-expire label %r not learned: %s", policy[1], exc)
            self.engine.metrics.count_learned(len(learn) - len(refused))  # none had a provisional label
        for row in rows:
            self.receipts.pop(row, None)  # (a receipt is a held event's: none outlives its row)
            store.remove(row)

    def _expire(self, row: int) -> None:
        """Apply ``on_expire`` to the pending event of ``row``; its receipt, if any, goes with it."""
        self.counts["expired"] += 1
        policy = self.config["on_expire"]
        provisional = self.store.provisional[row]
        if policy == "drop" or (provisional and same_label(policy[1], self.config["provisional_label"])):
            self.receipts.pop(row, None)  # kept as learned (with the provisional label, or not at all)
            return
        value = policy[1]
        x = self.store.features(row)
        try:
            if provisional:
                self._retract(row, x)
            self._learn(x, value, row=row)
            if not provisional:  # learned for the first time (else counted with its provisional label)
                self.engine.metrics.count_learned(1)
        except UnlearnError as exc:  # no receipt: a snapshot of an older version (see _join_state)
            log.warning("--on-expire label %r not learned: the provisional label stays: %s", value, exc)
        except InvalidEventError as exc:
            log.warning("--on-expire label %r not learned: %s", value, exc)
        self.receipts.pop(row, None)

    def _unmatched(self, row: int) -> None:
        """Dead-letter the early label of ``row``: its event did not come within the TTL (the row is the
        caller's to remove)."""
        key, (_, record) = self.store.id_of(row), read_note(self.store.note_of(row))
        self._dead(record, InvalidEventError(
            f"label for id {key.decode(errors='replace')}: no event with this id within --label-ttl "
            f"({self.config['label_ttl']:g} s)", reason="unmatched_label", field=self.config["id_field"]))

    def _dead(self, record: Record, exc: InvalidEventError) -> None:
        """Dead-letter the feedback record ``record`` for ``exc``. Counted as feedback, by the join
        (``unmatched`` for ``unmatched_label``, else ``rejected``), never as an event of the metrics."""
        self.counts["unmatched" if exc.reason == "unmatched_label" else "rejected"] += 1
        engine = self.engine
        letter = dead_letter_record(record, exc, engine.config["dead_letter_max_value_bytes"])
        engine.dead_letters.send(orjson.dumps(letter), record.key)

    # ------------------------------------------------------------------ reporting

    def progress(self) -> tuple:
        """What changes whenever the join changes the model or its own state (a snapshot is due then)."""
        self.flush_holds()
        return tuple(sorted(self.positions.items())), tuple(self.counts.values()), len(self.store), self.store.n_labels

    def status(self) -> dict:
        """The join's counters: pending events and labels, joined, expired, unmatched, duplicate,
        retractions, evicted, rejected (feedback records dead-lettered for another reason), the delay
        histogram, the delayed prequential accuracy, and the held events and early labels handed over to
        another member (``out``; also at a stop, see :mod:`._handoff`) or taken over."""
        c = self.counts
        pending = int((self.store.state[: self.store.high] == PENDING).sum())
        return {
            "pending_events": pending,
            "pending_labels": self.store.n_labels,
            **{f"labels_{k}": v for k, v in c.items() if not k.startswith("delayed")},
            "delayed_labeled": c["delayed_labeled"],
            "delayed_accuracy": c["delayed_correct"] / c["delayed_labeled"] if c["delayed_labeled"] else None,
            "label_delay_buckets": dict(zip([str(b) for b in DELAY_BUCKETS], self.delay_histogram)),
            "label_delay_sum": self.delay_sum,
            **{f"handed_over_{k}": v for k, v in self.handed.items()},
        }

