"""One read of feedback records joined: the labels half of the join.

A read is parsed at once (:func:`~stream_nb.engine.join._label_reads.read_labels`; in
event time with each record's time, the times checked together) and its ids
looked up at once; each label then is, by the state of its id's row in the
pending store: joined to its held event (set aside, learned with the others of
the read), a duplicate (its id joined already, or an early label waiting for
it), or an early label (no row: held until its event comes).
The usual read, label records of distinct ids of the model's label type, is
sorted with numpy; any other goes label by label, with the same results.
"""

from __future__ import annotations

import functools
import math
import operator
from itertools import repeat

import numpy as np

from ...exceptions import InvalidEventError, LabelTypeError
from ...stats import json_type
from ._label_reads import delay_counts, early_notes, read_labels, read_whole, same_label
from ._pending import FREE, JOINED, LABEL, MAX_ID_BYTES, PENDING
from ..contract import Record

__all__ = ["DELAY_BUCKETS", "FeedbackReads"]

#: Upper bounds (seconds) of the buckets of the label-delay histogram.
DELAY_BUCKETS = (1.0, 10.0, 60.0, 600.0, 3600.0, 86400.0, math.inf)


class FeedbackReads:
    """How :class:`~stream_nb.engine.Joiner` takes in a read of feedback records (see the module notes).

    The joiner provides: ``store``, ``engine``, ``config``, ``positions``, ``counts``, ``delay_histogram``,
    ``delay_sum``, ``_joined_rows``, ``_joined_y``, ``_retract_rows`` and ``_shared_positions``;
    ``_room_for(n)``, ``_join(row, y, t)``, ``_check_joined_label(y)``, ``_observe_true(rows, ys)``,
    ``_retracts_together(rows)``,
    ``_time_of(fields, where)``,
    ``_times_of(raw)``,
    ``_dead(record, exc)`` and ``clock()``.
    """

    def _labels(self, records: list[Record]) -> None:
        """Join one read of feedback records, in order: parsed (:func:`read_labels`), their ids looked up at once.

        A label for a held event without a provisional label, of the type the model's labels have, is set
        aside for :meth:`_learn_joined` with no check of its own, and counted with the others of its read."""
        if not records:
            return
        cfg = self.config
        last = {record.partition: record.next_position for record in records}
        self.positions.update(last)
        if self._shared_positions:
            self.engine.positions.update(last)
        timed = cfg["time_field"] is not None
        now = None if timed else self.clock()
        store = self.store
        whole = read_whole(records, cfg["id_field"], cfg["label_field"], cfg["time_field"])
        ts = None
        if whole is not None and timed:  # label records only, each at its time (None: one refused)
            ts = self._times_of(whole[2])
        if whole is not None and (ts is not None or not timed):
            keys, ys = whole[:2]
            found = store.find_many(keys)
            if self._read_at_once(records, keys, ys, ts, found, now):
                return
            parsed = list(zip(records, keys, ys, repeat(None) if ts is None else ts))
        else:
            parsed = read_labels(records, cfg["id_field"], cfg["label_field"], self._feedback_time if timed else None)
            keys = [p[1] for p in parsed if len(p) == 4]
            found = store.find_many(keys)
            if len(keys) == len(parsed) and self._read_at_once(*zip(*parsed), found, now):
                return
        plain = self._labels_fit([p[2] for p in parsed if len(p) == 4])
        # each row's state and provisional flag as the read began (no row is freed before its early labels are
        # held); a row joined during the read is in `done`
        states, provisional = np.zeros((2, len(found)), dtype=np.int64)
        states[found >= 0] = store.state[found[found >= 0]]
        provisional[found >= 0] = store.provisional[found[found >= 0]]
        rows, states, provisional = found.tolist(), states.tolist(), provisional.tolist()
        together = any(provisional) and self._retracts_together([r for r, p in zip(rows, provisional) if p])
        joined: tuple = ([], [], [])  # label, time and row of the plain joins, counted together
        early: dict = {}  # id -> (record, label, time) of the labels of this read held for their event
        done: set = set()
        i = 0
        for p in parsed:
            if len(p) == 2:
                self._dead(*p)
                continue
            record, key, y, t = p
            t = now if t is None else t
            row, st, i = rows[i], states[i], i + 1
            if st == FREE:
                if key in early:
                    self.counts["duplicate"] += 1
                    continue
                try:  # a label the model would refuse is no label of its id: a later one may be
                    self._check_joined_label(y)
                except InvalidEventError as exc:
                    self._dead(record, exc)
                else:
                    early[key] = (record, y, t)  # held at the end of the read (_hold_early)
            elif st == JOINED or st == LABEL or row in done:
                self.counts["duplicate"] += 1
            elif plain and (together or not provisional[i - 1]):
                done.add(row)
                for column, value in zip(joined, (y, t, row)):  # learned with the others of this read
                    column.append(value)
            else:
                try:
                    self._join(row, y, t)
                except InvalidEventError as exc:  # a label the model rejects (another JSON type): the label's fault
                    self._dead(record, exc)
                else:
                    done.add(row)
        self._count_joined(*joined)
        if early:
            self._hold_early(list(early), *map(list, zip(*early.values())))

    def _read_at_once(self, records: tuple, keys: list, ys: list, ts, found: np.ndarray, now) -> bool:
        """Join the read of label records ``records`` (ids ``keys``, found at rows ``found``, labels ``ys``,
        times ``ts``, or None: all at ``now``) as :meth:`_labels` would, at once, when it is the usual read:
        of distinct ids, each label of the type the model's labels have, any provisional label of their
        events taken back with the others of the read; False (nothing done) when it is not."""
        if not (self._labels_fit(ys) and len(set(keys)) == len(keys)):
            return False
        provisional = found[found >= 0]
        provisional = provisional[self.store.provisional[provisional] > 0]
        if len(provisional) and not self._retracts_together(provisional.tolist()):
            return False
        self._labels_at_once(records, keys, ys, ts, found, now)
        return True

    def _labels_at_once(self, records: tuple, keys: list, ys: list, ts, found: np.ndarray, now) -> None:
        """:meth:`_labels` of the usual read (:meth:`_read_at_once`). Each record's fate follows from its row's
        state alone (no record of the read changes another's), so the read is sorted at once: a held event's
        label is joined, a joined id's or an early label's is a duplicate, and an unknown id's waits for its
        event; in the order the records came, as :meth:`_labels` takes them one by one."""
        state = np.zeros(len(found), dtype=np.uint8)
        hit = found >= 0
        state[hit] = self.store.state[found[hit]]
        join = np.flatnonzero(state == PENDING).tolist()
        self.counts["duplicate"] += int(np.count_nonzero((state == JOINED) | (state == LABEL)))
        rows = found.tolist()
        self._count_joined([ys[i] for i in join], now if now is not None else [ts[i] for i in join],
                           [rows[i] for i in join])
        early = np.flatnonzero(state == FREE).tolist()
        if early:
            self._hold_early([keys[i] for i in early], [records[i] for i in early], [ys[i] for i in early],
                             now if now is not None else [ts[i] for i in early])

    def _hold_early(self, keys: list, records: list, ys: list, t) -> None:
        """Hold the labels ``ys`` of ids ``keys`` (distinct, not held), from ``records``, come at times ``t``
        (one for all, or one each), until their event comes: rows of the store in state LABEL, added
        together, room made first (the oldest expire)."""
        store = self.store
        ts = [t] * len(keys) if not isinstance(t, list) else t
        if max(map(len, keys), default=0) > MAX_ID_BYTES:
            # no event with such an id is held (flush_holds): its label can never be joined
            short = [i for i, key in enumerate(keys) if len(key) <= MAX_ID_BYTES]
            for key, record in zip(keys, records):
                if len(key) > MAX_ID_BYTES:
                    self._dead(record, InvalidEventError(
                        f"label for an id of {len(key):,} bytes: no event with an id longer than "
                        f"{MAX_ID_BYTES:,} bytes is held for its label", reason="unmatched_label",
                        field=self.config["id_field"]))
            keys, records, ys, ts = ([column[i] for i in short] for column in (keys, records, ys, ts))
        keys, records, ys, ts = self._early_types(keys, records, ys, ts)
        for lo in range(0, len(keys), store.capacity):
            part = slice(lo, lo + store.capacity)
            n = len(keys[part])
            self._room_for(n)
            store.add_many(keys[part], [{}] * n, t=ts[part], predictions=[None] * n, state=LABEL, labels=ys[part],
                           notes=early_notes(records[part], ys[part]))

    def _early_types(self, keys: list, records: list, ys: list, ts: list) -> tuple:
        """``keys, records, ys, ts`` of the early labels to hold, without those of another JSON type than the
        model's labels, or than the first pair this read joined, learned before any later event (when neither
        says: they are checked when their event comes, see
        :meth:`~stream_nb.engine.Joiner.prepare`), each dead-lettered (``label_type_conflict``) as the
        feedback record it is."""
        expected, first = self._expected_label()
        if expected is None or not ys:
            return keys, records, ys, ts
        fits = {kind: json_type(y) == expected for kind, y in {type(y): y for y in ys}.items()}
        if all(fits.values()):
            return keys, records, ys, ts
        keep = []
        for i, (record, y) in enumerate(zip(records, ys)):
            if fits[type(y)]:
                keep.append(i)
            else:
                self._dead(record, LabelTypeError(y, json_type(y), expected, first, field=self.config["label_field"]))
        return tuple([column[i] for i in keep] for column in (keys, records, ys, ts))

    def _feedback_time(self, obj: dict) -> float:
        return self._time_of({k: v for k, v in obj.items() if k == self.config["time_field"]}, "feedback")[1]

    def _labels_fit(self, ys: list) -> bool:
        """Whether the model learns its joined pairs together (``learn_events``) and every label of ``ys`` has
        the JSON type of its labels (of the first waiting to be learned, before it has any)."""
        if not ys or not hasattr(self.engine.model, "learn_events"):
            return False
        expected, _ = self._expected_label()
        if expected is None:
            return False
        types = set(map(type, ys))
        examples = [ys[0]] if len(types) == 1 else {type(y): y for y in ys}.values()  # one label of each type
        return {json_type(y) for y in examples} == {expected}

    def _expected_label(self) -> tuple:
        """``(JSON type, an example)`` of the labels a joined pair may have: the model's labels', or before it
        has any, those of the first pair waiting to be learned; ``(None, None)`` when neither says."""
        model = self.engine.model
        expected = getattr(model, "label_type", None)
        if expected is not None:
            return expected, (list(getattr(model, "classes", None) or []) or [None])[0]
        if self._joined_y:
            return json_type(self._joined_y[0]), self._joined_y[0]
        return None, None

    def _count_joined(self, ys: list, ts, rows: list) -> None:
        """Set aside the plain joins of labels ``ys`` that came at times ``ts`` (one for all, or one each) for
        held rows ``rows``, for :meth:`_learn_joined`, their rows kept as joined ids (to count duplicates until
        the TTL), and count them as :meth:`_join` counts one: delays and delayed accuracy."""
        if not ys:
            return
        store = self.store
        at = np.array(rows, dtype=np.int64)
        store.state[at] = JOINED
        if store.provisional[at].any():
            self._set_aside_provisional(at, rows, ys)
        else:
            self._joined_rows.extend(rows)
            self._joined_y.extend(ys)
        delays = np.maximum(0.0, np.asarray(ts, dtype=np.float64) - store.time[at]).tolist()
        # a prediction is right when it is the label: the same code. Labels are strings, integers or booleans
        # (validate_label: an integral float is its integer), interned by type, so one label has one code, and
        # a label never interned (code 0) is no prediction
        predicted = store.prediction[at]
        right = (predicted == store.label_codes_of(ys)) & (predicted > 0)
        self.counts["delayed_labeled"] += len(ys)
        self.counts["delayed_correct"] += int(np.count_nonzero(right))
        self._count_delays(delays)

    def _set_aside_provisional(self, at: np.ndarray, rows: list, ys: list) -> None:
        """:meth:`_count_joined`'s setting aside when some rows were learned with the provisional label: one
        whose label is the provisional one is done (nothing to learn or take back); one of another label is
        learned and its provisional label taken back (:meth:`_learn_joined`); the others are learned. The true
        label of each row learned with the provisional one feeds the drift detector here (:meth:`_observe_true`)."""
        provisional, flags = self.config["provisional_label"], self.store.provisional[at].tolist()
        self._observe_true([row for row, flag in zip(rows, flags) if flag], [y for y, flag in zip(ys, flags) if flag])
        done = []
        for row, y, flag in zip(rows, ys, flags):
            if not flag:
                self._joined_rows.append(row)
                self._joined_y.append(y)
            elif same_label(y, provisional):
                done.append(row)
            else:
                self._joined_rows.append(row)
                self._joined_y.append(y)
                self._retract_rows.append(row)
        self.store.forget_features_many(done)

    def _count_delays(self, delays: list) -> None:
        """Count joins of these label delays (seconds): the joined count, the delays' sum (added in order)
        and their histogram."""
        if not delays:
            return
        self.counts["joined"] += len(delays)
        self.delay_sum = functools.reduce(operator.add, delays, self.delay_sum)  # in order, as one at a time
        self.delay_histogram = (np.array(self.delay_histogram) + delay_counts(delays, DELAY_BUCKETS)).tolist()
