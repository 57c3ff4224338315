"""Held events and early labels handed from one member to another: the hand-over half of the join.

When a rebalance moves input partition *p* (see :mod:`stream_nb.engine.group._handoff`),
the member losing it takes *p*'s part of its join out, JSON-able
(:meth:`HandOver.release`): each held event (features, prediction, time,
offset; a provisional label taken back from its model) and each id joined
(kept to count duplicates), and the early labels read from feedback partition
*p*. The member that gets *p* holds them (:meth:`HandOver.adopt`); an event
whose label came to it first, or a label whose event it holds, is joined at once.

In a group sharing one model (``--model-topic``) the join's part of each
input partition is published with the partition's state instead, at every
checkpoint that moved it: :meth:`HandOver.part` copies it (the same JSON, each
held event with its provisional flag, nothing removed), :meth:`HandOver.drop`
forgets it here when the partition goes (its state carries it), and the member
that takes the partition over holds the part of the state it resumes from
(:meth:`HandOver.adopt` with ``counted=True``: the state's counts hold its
provisional labels already, so nothing is learned again), in place of
whatever it held for that partition.

An early label's entry is the same in a hand-over and in a snapshot
(:mod:`stream_nb.engine.join._join_state`): ``[id, label, time, record value,
record partition, record position, record next position]``.
"""

from __future__ import annotations

import logging

import numpy as np

from ...exceptions import InvalidEventError, UnlearnError
from ._label_reads import early_note, read_note
from ._pending import JOINED, LABEL, PENDING
from ..contract import Record

__all__ = ["HandOver", "early_label_entries"]

log = logging.getLogger("stream_nb.engine")


def early_label_entries(store, feedback_partition=..., remove: bool = False) -> list:
    """The entry of each early label of ``store`` (of ``feedback_partition`` only, when given); with ``remove``
    they leave the store."""
    entries = []
    for row in np.flatnonzero(store.state[: store.high] == LABEL).tolist():
        y, rec = read_note(store.note_of(row))
        if feedback_partition is not ... and rec.partition != feedback_partition:
            continue
        entries.append([store.id_of(row).decode(), y, float(store.time[row]), rec.value.decode("utf-8", "replace"),
                        rec.partition, rec.position, rec.next_position])
        if remove:
            store.remove(row)
    return entries


def _rows_of(store, partition: str, feedback_partition: str | None) -> list:
    """The rows of input ``partition`` held in ``store``: its held events and joined ids, and the ids joined in
    place by a label read from ``feedback_partition`` (an early label whose event came after it)."""
    rows = np.zeros(0, dtype=np.int64)
    code = store.partition_codes.get(partition)
    if code is not None:
        rows = np.flatnonzero(((store.state == PENDING) | (store.state == JOINED)) & (store.partition == code))
    code = store.partition_codes.get(feedback_partition) if feedback_partition is not None else None
    if code is not None:
        rows = np.concatenate([rows, np.flatnonzero((store.state == JOINED) & (store.partition == code))])
    return rows.tolist()


class HandOver:
    """What :class:`~stream_nb.engine.Joiner` hands over and takes over (see the module notes).

    The joiner provides: ``store``, ``engine``, ``config``, ``receipts``, ``handed`` and ``counts``;
    ``flush_holds()``, ``_room_for(n)``, ``_learn(x, y, record)``, ``_join(row, y, t)``,
    ``_learn_joined()``, ``_share(rows, xs, ys, unlearn)`` and ``_dead(record, exc)``.
    """

    def release(self, partition: str, feedback_partition: str | None) -> dict:
        """Take out what is held for input ``partition`` (its held events, and the ids joined, kept to count
        duplicates) and the early labels read from ``feedback_partition``, JSON-able, for the member that
        gets the partition. A held event's provisional label is taken back: the new owner learns it again."""
        self.flush_holds()
        store, model = self.store, self.engine.model
        events = []
        code = store.partition_codes.get(partition)
        if code is not None:
            held = (store.state == PENDING) | (store.state == JOINED)
            for row in np.flatnonzero(held & (store.partition == code)).tolist():
                state = int(store.state[row])
                x = store.features(row) if state == PENDING else {}
                if state == PENDING and store.provisional[row]:
                    try:
                        model.unlearn_one(x, self.config["provisional_label"], receipt=self.receipts.get(row))
                    except UnlearnError as exc:  # no receipt (a snapshot of an older version): the label stays here
                        log.warning("handing over a held event: its provisional label stays: %s", exc)
                    else:
                        self._share([row], [x], [self.config["provisional_label"]], unlearn=True)
                events.append([store.id_of(row).decode(), state, x, float(store.time[row]), store.predicted(row),
                               int(store.offset[row])])
                self.receipts.pop(row, None)
                store.remove(row)
        labels = early_label_entries(store, feedback_partition, remove=True)
        self.handed["events_out"] += sum(1 for e in events if e[1] == PENDING)
        self.handed["labels_out"] += len(labels)
        return {"events": events, "labels": labels}

    def part(self, partition: str, feedback_partition: str | None) -> dict:
        """A copy of what :meth:`release` would take out for input ``partition`` (nothing removed, no label
        taken back), each held event with its provisional flag as a seventh entry: the join's part of the
        partition's published state in a group."""
        self.flush_holds()
        store, events = self.store, []
        for row in _rows_of(store, partition, feedback_partition):
            state = int(store.state[row])
            events.append([store.id_of(row).decode(), state, store.features(row) if state == PENDING else {},
                           float(store.time[row]), store.predicted(row), int(store.offset[row]),
                           int(store.provisional[row]) if state == PENDING else 0])
        labels = early_label_entries(store, feedback_partition) if feedback_partition is not None else []
        return {"events": events, "labels": labels}

    def drop(self, partition: str, feedback_partition: str | None) -> int:
        """Forget what is held here for input ``partition`` (its held events and joined ids) and the early
        labels read from ``feedback_partition``, the model untouched: the partition's published state
        carries them to its next owner. Returns how many rows went."""
        self.flush_holds()
        store = self.store
        rows = _rows_of(store, partition, feedback_partition)
        if feedback_partition is not None:
            for row in np.flatnonzero(store.state[: store.high] == LABEL).tolist():
                if read_note(store.note_of(row))[1].partition == feedback_partition:
                    rows.append(row)
        for row in rows:
            self.receipts.pop(row, None)
            store.remove(row)
        return len(rows)

    def adopt(self, partition: str, held: dict, counted: bool = False) -> None:
        """Hold what another member released (:meth:`release`) for input ``partition``. An event whose label
        is held here already, or a label whose event is, is joined at once. With ``counted`` (a group's
        published state, :meth:`part`) the model holds the provisional labels of these events already: each
        keeps its flag and none is learned again."""
        store, provisional = self.store, self.config["provisional_label"]
        for event_id, state, x, t, prediction, offset, *flag in held["events"]:
            key = event_id.encode()
            row = store.find(key)
            early = None
            if row >= 0:
                if store.state[row] != LABEL:  # held here already (restored from this member's own snapshot)
                    continue
                early = (*read_note(store.note_of(row)), float(store.time[row]))  # its label came here first
                store.remove(row)
            self.handed["events_in"] += state == PENDING
            self._room_for(1)
            flagged = state == PENDING and provisional is not None and (not counted or bool(flag and flag[0]))
            row = store.add(key, x, t=t, prediction=prediction, partition=partition, offset=offset, state=state,
                            provisional=flagged)
            if store.provisional[row] and not counted:
                try:
                    receipt = self._learn(x, provisional, record=True)
                except InvalidEventError as exc:
                    log.warning("provisional label %r not learned: %s", provisional, exc)
                    store.provisional[row] = 0
                else:
                    self.engine.metrics.count_learned(1)  # learned by this member's model for the first time
                    if receipt is not None:
                        self.receipts[row] = receipt
            if early is not None:
                self.join_label(row, *early)
        taken, to_join = self.hold_early_entries(held["labels"])
        self.handed["labels_in"] += taken
        for item in to_join:
            self.join_label(*item)
        self._learn_joined()

    def hold_early_entries(self, entries: list) -> tuple[int, list]:
        """Hold the early labels of ``entries`` (room made as needed), except those held already. Returns how
        many it took, and ``(row, label, record, time)`` of each whose event is held here: for the caller to
        join (:meth:`join_label`) once the join's counters are in place."""
        store, taken, to_join = self.store, 0, []
        for key, y, t, value, part, position, next_position in entries:
            record = Record(value.encode(), None, part, position, next_position)
            row = store.find(key.encode())
            if row >= 0 and store.state[row] == LABEL:  # held here already
                continue
            taken += 1
            if row >= 0:  # its event is held here
                to_join.append((row, y, record, t))
                continue
            self._room_for(1)
            store.add(key.encode(), {}, t=t, state=LABEL, label=y, note=early_note(record, y))
        return taken, to_join

    def join_label(self, row: int, y, record: Record, t: float) -> None:
        """Join label ``y`` (of ``record``, time ``t``) to the event of ``row`` held here, as if read now (a
        duplicate when that event was joined already)."""
        if self.store.state[row] != PENDING:
            self.counts["duplicate"] += 1
            return
        try:
            self._join(row, y, t)
        except InvalidEventError as exc:
            self._dead(record, exc)
