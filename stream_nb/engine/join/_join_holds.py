"""Unlabeled events held for their label: the holding half of the join.

After a poll's predictions are sent, each of its unlabeled events with an id is
set aside (:meth:`EventHolds.hold_sent`, or :meth:`EventHolds.hold` one at a
time) and then put in the pending store a poll at a time
(:meth:`EventHolds.flush_holds`): the ids checked at once, the rows written
column by column. The first event of an id keeps it; a later one is counted as
a duplicate. With a provisional label each held event is learned with it at
once, in the order the events came.
"""

from __future__ import annotations

import logging
import operator
import typing

import orjson

from ...exceptions import InvalidEventError
from ._pending import MAX_ID_BYTES
from ..contract import Record

__all__ = ["EventHolds", "event_key"]

log = logging.getLogger("stream_nb.engine")

_INTEGERS = frozenset({int}).issuperset
_PREDICTION = operator.itemgetter("prediction")
_PARTITION = operator.attrgetter("partition")
_NEXT_POSITION = operator.attrgetter("next_position")


def _picker(at) -> typing.Callable[[list], list]:
    """A function giving the items at ``at`` (indices, in order; a whole range: all) of a list, as a list."""
    if isinstance(at, range):
        return list
    if len(at) == 1:
        return lambda values: [values[at[0]]]
    getter = operator.itemgetter(*at)
    return lambda values: list(getter(values))


def event_key(event_id) -> bytes:
    """An id as the store keys it: its JSON text (``1`` and ``"1"`` are two ids)."""
    return orjson.dumps(event_id)


class EventHolds:
    """How :class:`~stream_nb.engine.Joiner` holds the unlabeled events it has sent (see the module notes).

    The joiner provides: ``store``, ``engine``, ``config``, ``counts``, ``receipts``, ``_to_hold``,
    ``_held_absent``, ``_to_hold_poll``, ``_times``, and the poll's ``_column_keys``, ``_column_time`` and
    ``_column_absent`` (:meth:`~stream_nb.engine.Joiner.prepare_columns`), ``sharing``; ``now()``,
    ``_room_for(n)``, ``_learn(x, y, record)`` and ``_share(rows, xs, ys)``.
    """

    def hold_sent(self, outputs: list, sent: list, xs: list, ys: list, refused: dict) -> None:
        """:meth:`hold` of each unlabeled event with an id among a poll's ``outputs`` (sent for ``sent``, the
        records of the valid events the model did not refuse, in order) after :meth:`prepare_columns`."""
        keys, t, absent = self._column_keys, self._column_time, self._column_absent
        times = t if isinstance(t, list) else None  # one time each (time_field), or the poll's
        if not refused and not self._to_hold and None not in keys:
            # the usual poll when labels come later: its unlabeled events held, set aside as columns
            at = range(len(ys)) if ys.count(None) == len(ys) else [j for j, y in enumerate(ys) if y is None]
            if not at:
                return
            pick = _picker(at)
            held = pick(sent)
            offsets = list(map(_NEXT_POSITION, held))
            if _INTEGERS(map(type, offsets)):
                self._to_hold_poll = (pick(keys), pick(xs), list(map(_PREDICTION, pick(outputs))),
                                      list(map(_PARTITION, held)), offsets, pick(t) if times is not None else t,
                                      pick(absent))
                return
        if self._to_hold:  # held one at a time before: flush_holds() looks every id up
            self._held_absent = None
        k = 0
        for j in range(len(outputs) + len(refused)):
            if j in refused:
                continue
            if ys[j] is None and keys[j] is not None:
                record = sent[k]
                offset = record.next_position if isinstance(record.next_position, int) else 0
                self._to_hold.append((keys[j], xs[j], outputs[k]["prediction"], record.partition, offset,
                                      t if times is None else times[j]))
                if self._held_absent is not None:
                    self._held_absent.append(absent[j])
            k += 1

    def hold(self, event, prediction, record: Record) -> None:
        """Hold an unlabeled event with an id until its label comes (after its prediction was sent).

        Held with the others of its poll by :meth:`flush_holds`, which the engine calls once the poll is sent.
        """
        t = self._times.pop(id(event), None)
        self._held_absent = None  # looked up by flush_holds()
        offset = record.next_position if isinstance(record.next_position, int) else 0
        self._to_hold.append((event_key(event.id), event.features, prediction, record.partition, offset,
                              self.now() if t is None else t))

    def flush_holds(self) -> None:
        """Put in the store what :meth:`hold` and :meth:`hold_sent` set aside, in their order, a poll at a time:
        the ids checked at once, the rows written column by column (:meth:`PendingStore.add_many`); with
        ``provisional_label`` each held event is learned with it, in order. The first event of an id keeps
        it; a later one is counted as a duplicate."""
        poll, self._to_hold_poll = self._to_hold_poll, None
        if poll is not None:  # hold_sent()'s usual poll, as columns (nothing else set aside before it)
            *columns, absent = poll
            self._hold_columns(columns, absent)
        items, self._to_hold = self._to_hold, []
        known, self._held_absent = self._held_absent, []
        if items:
            absent = known if known is not None and len(known) == len(items) else None
            self._hold_columns(list(map(list, zip(*items))), absent)

    def _hold_columns(self, columns: list, absent: list | None) -> None:
        """Hold the events of ``columns`` (ids, features, predictions, partitions, offsets, and times: a list,
        or one for all), in order; ``absent``: whether each id was not held as its poll began (None: looked
        up here)."""
        store = self.store
        keys = columns[0]
        if absent is None:
            absent = store.absent(keys)
        if not (all(absent) and len(set(keys)) == len(keys) and max(map(len, keys)) <= MAX_ID_BYTES):
            keep, seen = [], set()
            for i, (key, new) in enumerate(zip(keys, absent)):
                if not new or key in seen:
                    self.counts["duplicate"] += 1  # an id seen before: the first event keeps it
                elif len(key) > MAX_ID_BYTES:
                    log.warning("an event was not held for its label: its id has %s bytes, at most %s are held",
                                f"{len(key):,}", f"{MAX_ID_BYTES:,}")
                else:
                    seen.add(key)
                    keep.append(i)
            if not keep:
                return
            columns = [column if not isinstance(column, list) else [column[i] for i in keep] for column in columns]
        provisional = self.config["provisional_label"]
        n = len(columns[0])
        for lo in range(0, n, store.capacity):
            part = [column[lo : lo + store.capacity] if isinstance(column, list) else column for column in columns]
            keys, xs, predictions, partitions, offsets, ts = part
            m = len(keys)
            self._room_for(m)
            if partitions.count(partitions[0]) == m:  # one add_many per input partition
                row_of = store.add_many(keys, xs, t=ts, predictions=predictions, partition=partitions[0],
                                        offsets=offsets, provisional=provisional is not None).tolist()
            else:
                groups: dict = {}
                for i, partition in enumerate(partitions):
                    groups.setdefault(partition, []).append(i)
                row_of = [0] * m
                for partition, idx in groups.items():
                    rows = store.add_many([keys[i] for i in idx], [xs[i] for i in idx],
                                          t=[ts[i] for i in idx] if isinstance(ts, list) else ts,
                                          predictions=[predictions[i] for i in idx], partition=partition,
                                          offsets=[offsets[i] for i in idx], provisional=provisional is not None)
                    for i, row in zip(idx, rows.tolist()):
                        row_of[i] = row
            if provisional is not None:  # learned in the order the events came, as one at a time would
                # the first time these events are learned: counted as learned now (PrequentialMetrics.learned)
                self.engine.metrics.count_learned(self._learn_provisional(row_of, xs, provisional))

    def _learn_provisional(self, rows: list, xs: list, provisional) -> int:
        """Learn the held events ``xs`` (of ``rows``) with the provisional label, in order: together
        (``learn_events``, keeping the receipts taking one back will need), else one at a time. Returns how
        many the model learned (a refused one is held without a provisional label)."""
        model = self.engine.model
        if hasattr(model, "learn_events") and hasattr(model, "learn_one_receipt"):
            receipts: dict = {}
            # no true label: the drift detector is fed nothing (the true label feeds it, see _join)
            refused = model.learn_events(xs, [provisional] * len(xs), receipts=receipts, watch=False)
            self.receipts.update((rows[i], receipt) for i, receipt in receipts.items())
        else:
            refused = []
            for i, (row, x) in enumerate(zip(rows, xs)):
                try:
                    receipt = self._learn(x, provisional, record=True)
                except InvalidEventError as exc:
                    refused.append((i, exc))
                    continue
                if receipt is not None:
                    self.receipts[row] = receipt
        for i, exc in refused:
            log.warning("provisional label %r not learned: %s", provisional, exc)
            self.store.provisional[rows[i]] = 0
        if self.sharing is not None:  # each partition's state of a group learns them too
            out = {i for i, _ in refused}
            keep = [i for i in range(len(rows)) if i not in out]
            self._share([rows[i] for i in keep], [xs[i] for i in keep], [provisional] * len(keep))
        return len(rows) - len(refused)
