"""The pending store: events waiting for their label, as encoded rows in numpy arrays.

One row per event: its features (one column per feature name: an interned code
for a categorical value, the float's bits for a number), its time, its
prediction, its input position and its state. Its id is kept as its JSON bytes
in one byte arena and found through an open-addressing hash table (linear
probing, deletion by backward shift): no Python object per event, so a
million pending events of 20 features fit in under 200 MB
(``bench/delayed.py --memory`` measures it).

A label that comes before its event is a row too (state :data:`LABEL`): its id,
its time, the label's code, and a *note* its holder keeps with it (the label's
record, as bytes, after the id in the arena). So events and early labels
share one bound, one look-up finds either, and one scan expires both. A
joined event's row stays (state :data:`JOINED`, no features) until the TTL,
to spot duplicate labels.

Every array is allocated zeroed for the whole capacity at once
(``np.zeros``: pages the operating system hands out only when a row is
first written), so the resident memory follows the events actually held.

The features of a row are its *cells* (:mod:`._pending_cells`).
"""

from __future__ import annotations

from itertools import chain

import numpy as np

from ._pending_cells import FeatureCells, intern

__all__ = ["FREE", "JOINED", "LABEL", "MAX_ID_BYTES", "PENDING", "PendingStore"]

# a row's state: unused; an event waiting for its label; joined (its id kept to spot duplicates); a label that
# came before its event, waiting for it (no features: the label itself is the joiner's to keep)
FREE, PENDING, JOINED, LABEL = 0, 1, 2, 3
NONE_TYPE = type(None)

_ID_BYTES = 16  # arena bytes reserved per row up front (grows when ids are longer)
MAX_ID_BYTES = 65535  # the longest id held (its JSON text)
_EVICTION_RANK = np.array([3, 1, 0, 2], dtype=np.int8)  # by state: who makes room first (see oldest)


class PendingStore(FeatureCells):
    """Up to ``capacity`` rows of pending events, found by id (the JSON bytes of the event's id).

    >>> store = PendingStore(4)
    >>> row = store.add(b'"a"', {"sky": "sun", "temp": 21.5, "n": 3}, t=10.0, prediction=1)
    >>> store.find(b'"a"') == row, store.find(b'"b"')
    (True, -1)
    >>> store.features(row)
    {'sky': 'sun', 'n': 3, 'temp': 21.5}
    >>> store.remove(row)
    >>> store.find(b'"a"'), len(store)
    (-1, 0)
    """

    def __init__(self, capacity: int):
        self.capacity = int(capacity)
        n = self.capacity
        self.state = np.zeros(n, dtype=np.uint8)
        self.time = np.zeros(n, dtype=np.float64)
        self.prediction = np.zeros(n, dtype=np.int16)  # index into self.labels + 1; 0: none
        self.partition = np.zeros(n, dtype=np.int16)  # index into self.partitions
        self.offset = np.zeros(n, dtype=np.int64)  # the input position after the event
        self.provisional = np.zeros(n, dtype=np.uint8)  # 1: learned with the provisional label
        self.hashes = np.zeros(n, dtype=np.int64)  # hash() of each row's id: a probe compares it before the bytes
        self.id_start = np.zeros(n, dtype=np.int64)
        self.id_len = np.zeros(n, dtype=np.uint16)
        # an early label's (state LABEL) code + 1 in self.labels (0: none, or beyond 32,767 distinct labels), and
        # its note: bytes its holder keeps with it (the record, for the dead-letter sink), in the arena after its id
        self.label = np.zeros(n, dtype=np.int16)
        self.note_len = np.zeros(n, dtype=np.uint32)
        self.n_labels = 0  # rows in state LABEL
        self.arena = np.zeros(max(64, n * _ID_BYTES), dtype=np.uint8)
        self.arena_used = 0
        self.arena_live = 0
        size = 1
        while size < 2 * n:
            size *= 2
        self.table = np.zeros(size, dtype=np.int32)  # row + 1; 0: empty
        self.mask = size - 1
        self._start_cells([], [], [])
        self.labels: list = []  # interned predictions and early labels
        self.label_codes: dict[type, dict] = {}  # type -> value -> code, as self.codes
        self.partitions: list = []
        self.partition_codes: dict = {}
        self.free = np.arange(n - 1, -1, -1, dtype=np.int32)  # a stack of free rows (the lowest on top)
        self.n_free = n
        self.high = 0  # every row ever used is below it: scans look at rows[:high], not the whole capacity
        self.time_floor = np.inf  # no live row is older: due() scans only once a cutoff reaches it

    def __len__(self) -> int:
        return self.capacity - self.n_free

    @property
    def full(self) -> bool:
        return self.n_free == 0

    # ------------------------------------------------------------------ ids

    def _slot(self, key: bytes, h: int) -> int:
        """The table slot of ``key`` (its row is ``table[slot] - 1``), or the empty slot where it would go."""
        i, mask = h & self.mask, self.mask
        table, hashes = self.table.item, self.hashes.item
        while True:
            r = table(i) - 1
            if r < 0:
                return i
            if hashes(r) == h and self._id(r) == key:
                return i
            i = (i + 1) & mask

    def _id(self, row: int) -> bytes:
        s = self.id_start.item(row)
        return self.arena[s : s + self.id_len.item(row)].tobytes()

    def find(self, key: bytes) -> int:
        """The row of id ``key``, or -1."""
        return int(self.table[self._slot(key, hash(key))]) - 1

    def find_many(self, keys: list[bytes]) -> np.ndarray:
        """:meth:`find` of each id of ``keys``, as an array: the home slots looked at and the ids compared
        at once (hashes, then lengths and bytes); a probe, one id at a time, only past a home slot that
        holds another id."""
        n = len(keys)
        out = np.full(n, -1, dtype=np.int64)
        if not n:
            return out
        h = np.fromiter(map(hash, keys), dtype=np.int64, count=n)
        first = self.table[h & self.mask].astype(np.int64) - 1
        taken = np.flatnonzero(first >= 0)
        if not len(taken):
            return out
        rows = first[taken]
        same = self.hashes[rows] == h[taken]
        at, rows = taken[same], rows[same]
        if len(at):
            picked = keys if len(at) == n else list(map(keys.__getitem__, at.tolist()))
            lens = np.fromiter(map(len, picked), dtype=np.int64, count=len(picked))
            equal = self.id_len[rows].astype(np.int64) == lens
            starts = np.cumsum(lens) - lens
            pos = np.arange(int(lens.sum()), dtype=np.int64) + np.repeat(self.id_start[rows] - starts, lens)
            differ = self.arena[np.minimum(pos, len(self.arena) - 1)] != np.frombuffer(b"".join(picked), np.uint8)
            nonempty = lens > 0
            equal[nonempty] &= np.add.reduceat(differ, starts[nonempty]) == 0 if differ.size else True
            out[at[equal]] = rows[equal]
            probe = np.concatenate([taken[~same], at[~equal]])
        else:
            probe = taken
        if len(probe):  # the home slot holds another id: probe on, as find() does
            table, slot = self.table.item, self._slot
            out[probe] = [table(slot(keys[i], hi)) - 1 for i, hi in zip(probe.tolist(), h[probe].tolist())]
        return out

    def id_of(self, row: int) -> bytes:
        """The JSON bytes of the id of ``row``."""
        return self._id(row)

    # ------------------------------------------------------------------ rows

    def add(self, key: bytes, x: dict, *, t: float, prediction=None, partition=None, offset: int = 0,
            provisional: bool = False, state: int = PENDING, label=None, note: bytes = b"") -> int:
        """Hold the event ``x`` of id ``key`` (not held yet; the store not full); return its row. An early label
        (``state=LABEL``) gives its ``label`` and ``note`` instead of features."""
        if self.n_free == 0:
            raise OverflowError("the pending store is full")
        if len(key) > MAX_ID_BYTES:
            raise ValueError(f"id of {len(key):,} bytes: at most {MAX_ID_BYTES:,} are held")
        h = hash(key)
        slot = self._slot(key, h)
        if self.table[slot]:
            raise KeyError(f"id {key!r} is held already")
        self.n_free -= 1
        row = int(self.free[self.n_free])
        self.high = max(self.high, row + 1)
        self.table[slot] = row + 1
        self.hashes[row] = h
        self._put_id(row, key, note)
        self.state[row] = state
        self._set_labels([row], [label] if state == LABEL else None)
        self.time[row] = t
        self.time_floor = min(self.time_floor, t)
        self.prediction[row] = self._label_codes([prediction])[0]  # 0 beyond 32,767 distinct ones: not scored
        self.partition[row] = self._partition_code(partition)
        self.offset[row] = offset
        self.provisional[row] = provisional
        self._put(row, x)
        return row

    def absent(self, keys: list[bytes]) -> list[bool]:
        """For each id of ``keys``, True when it is not held (:meth:`find_many`)."""
        return (self.find_many(keys) < 0).tolist()

    def add_many(self, keys: list[bytes], xs: list[dict], *, t, predictions: list, partition=None, offsets=None,
                 provisional: bool = False, state: int = PENDING, labels: list | None = None,
                 notes: list[bytes] | None = None) -> np.ndarray:
        """:meth:`add` for many events at once (ids distinct, none held, none over :data:`MAX_ID_BYTES`; room
        for all): the same rows, cells and table as adding them one by one, written column by column. Early
        labels (``state=LABEL``) give ``labels`` and ``notes`` (one each) instead of features."""
        n = len(keys)
        if n > self.n_free:
            raise OverflowError("the pending store is full")
        if not n:
            return np.zeros(0, dtype=np.int64)
        rows = self.free[self.n_free - n : self.n_free][::-1].astype(np.int64)  # the rows add() would pop
        self.n_free -= n
        self.high = max(self.high, int(rows.max()) + 1)
        h = np.fromiter(map(hash, keys), dtype=np.int64, count=n)
        self.hashes[rows] = h
        table, mask = self.table, self.mask
        home = h & mask
        # each id whose home slot is empty takes it, one of them where several share a home (the one whose
        # row is read back there); the others probe on
        free = np.flatnonzero(table[home] == 0)
        table[home[free]] = rows[free] + 1
        direct = np.zeros(n, dtype=bool)
        direct[free] = table[home[free]] == rows[free] + 1
        for i in np.flatnonzero(~direct).tolist():  # a taken home slot: probe on, as add() does
            j = int(home[i])
            while table[j]:
                j = (j + 1) & mask
            table[j] = rows[i] + 1
        lens = np.fromiter(map(len, keys), dtype=np.int64, count=n)
        note_lens = np.zeros(n, dtype=np.int64) if notes is None else np.fromiter(map(len, notes), np.int64, n)
        spans = lens + note_lens
        total = int(spans.sum())
        if self.arena_used + total > len(self.arena):
            self._compact(total)
        s = self.arena_used
        data = b"".join(keys if notes is None else chain.from_iterable(zip(keys, notes)))
        self.arena[s : s + total] = np.frombuffer(data, dtype=np.uint8)
        self.id_start[rows] = s + np.cumsum(spans) - spans
        self.id_len[rows] = lens
        self.note_len[rows] = note_lens
        self.arena_used += total
        self.arena_live += total
        self.state[rows] = state
        self._set_labels(rows, labels if state == LABEL else None)
        self.time[rows] = t
        self.time_floor = min(self.time_floor, float(np.min(self.time[rows])))
        self.prediction[rows] = self._label_codes(predictions)
        self.partition[rows] = self._partition_code(partition)
        self.offset[rows] = 0 if offsets is None else offsets
        self.provisional[rows] = provisional
        self._put_many(rows, xs)
        return rows

    def _set_labels(self, rows, labels: list | None) -> None:
        """The label column of ``rows``: each early label's code (None: not early labels)."""
        if labels is None:
            self.label[rows] = 0
            return
        self.label[rows] = self._label_codes(labels)  # 0 beyond 32,767 distinct labels: the note has it
        self.n_labels += len(labels)

    def _put_id(self, row: int, key: bytes, note: bytes = b"") -> None:
        n = len(key) + len(note)
        if self.arena_used + n > len(self.arena):
            self._compact(n)
        s = self.arena_used
        self.arena[s : s + n] = np.frombuffer(key + note, dtype=np.uint8)
        self.id_start[row], self.id_len[row], self.note_len[row] = s, len(key), len(note)
        self.arena_used += n
        self.arena_live += n

    def _live_rows(self) -> np.ndarray:
        """The rows in use."""
        return np.flatnonzero(self.state[: self.high] != FREE)

    def _compact(self, need: int) -> None:
        """Rewrite the arena with the live ids and notes only (grown when that is not room enough)."""
        live = self._live_rows()
        live = live[np.argsort(self.id_start[live])]  # in arena order: the bytes are read front to back
        size = len(self.arena)
        while self.arena_live + need > size // 2:
            size *= 2
        arena = np.zeros(size, dtype=np.uint8)
        spans = self.id_len[live].astype(np.int64) + self.note_len[live]
        starts = np.cumsum(spans) - spans
        pos = int(spans.sum())
        arena[:pos] = self.arena[np.arange(pos, dtype=np.int64) + np.repeat(self.id_start[live] - starts, spans)]
        self.id_start[live] = starts
        self.arena, self.arena_used, self.arena_live = arena, pos, pos

    def note_of(self, row: int) -> bytes:
        """The note kept with early label ``row`` (:meth:`add`)."""
        s = int(self.id_start[row]) + int(self.id_len[row])
        return self.arena[s : s + int(self.note_len[row])].tobytes()

    def labels_of(self, rows) -> list:
        """The label of each early label of ``rows`` held by code; None where it is not (its note has it)."""
        labels = self.labels
        return [labels[c - 1] if c else None for c in self.label[np.asarray(rows, dtype=np.int64)].tolist()]

    def load_vocabulary(self, cat_names: list, num_names: list, values: list, labels: list, partitions: list) -> None:
        """Start an empty store with these columns and interned values (a snapshot's), coded as when they came."""
        self._start_cells(cat_names, num_names, values)
        self.labels, self.label_codes = [], {}
        for y in labels:
            self._label_code(y)
        self.partitions, self.partition_codes = [], {}
        for p in partitions:
            self._partition_code(p)

    def _label_code(self, y) -> int:
        """The code of label (or prediction) ``y`` in :attr:`labels` (interned now if new)."""
        return intern(self.label_codes, self.labels, y)

    def _label_codes(self, ys: list) -> np.ndarray:
        """``code + 1`` of each of ``ys`` (0: None, or a code beyond 32,767: not kept in an int16 column)."""
        types = set(map(type, ys))
        if len(types) == 1 and NONE_TYPE not in types:  # the usual poll: labels of one type, all known
            codes = list(map(self.label_codes.get(next(iter(types)), {}).get, ys))
            if None not in codes and max(codes) < 32767:
                return np.array(codes, dtype=np.int64) + 1
        if types == {NONE_TYPE}:
            return np.zeros(len(ys), dtype=np.int64)
        codes = np.array([0 if y is None else self._label_code(y) + 1 for y in ys], dtype=np.int64)
        codes[codes > 32767] = 0
        return codes

    def label_codes_of(self, ys: list) -> np.ndarray:
        """``code + 1`` of each of ``ys`` in :attr:`labels` as :attr:`prediction` holds them (0: not there),
        interning none.

        >>> store = PendingStore(2)
        >>> store.label_codes_of([True, 1]).tolist(), store._label_codes([1, True]).tolist()
        ([0, 0], [1, 2])
        >>> store.label_codes_of([True, 1, 2]).tolist()
        [2, 1, 0]
        """
        types = set(map(type, ys))
        tables = self.label_codes
        if len(types) == 1:
            codes = list(map(tables.get(next(iter(types)), {}).get, ys))
        else:
            codes = [tables.get(type(y), {}).get(y) for y in ys]
        if None in codes:
            codes = [-1 if c is None else c for c in codes]
        out = np.array(codes, dtype=np.int64) + 1
        out[out > 32767] = 0  # beyond the int16 column: not held as a code
        return out

    def _partition_code(self, p) -> int:
        code = self.partition_codes.get(p)
        if code is None:
            code = self.partition_codes[p] = len(self.partitions)
            self.partitions.append(p)
        return code

    def joined_in_place(self, rows, t: float, partitions: list | None = None) -> None:
        """Turn the early labels of ``rows`` (state :data:`LABEL`) into joined ids, their event having come at
        time ``t``: kept, without features or prediction, to spot duplicates until the TTL; with the partition
        each label was read from (``partitions``), so that they go with it (else none)."""
        rows = np.asarray(rows, dtype=np.int64)
        codes = [self._partition_code(p) for p in partitions] if partitions is not None else None
        self.n_labels -= int(np.count_nonzero(self.state[rows] == LABEL))
        self.state[rows] = JOINED
        self.arena_live -= int(self.note_len[rows].sum())  # the notes' bytes go at the next compaction
        self.note_len[rows] = 0
        self.label[rows] = 0
        self.time[rows] = t
        self.time_floor = min(self.time_floor, float(np.min(t)))  # an event may be older than its early label
        self.prediction[rows] = 0
        self.partition[rows] = self._partition_code(None) if codes is None else codes
        self.offset[rows] = 0
        self.provisional[rows] = 0

    def predicted(self, row: int):
        """The prediction made for ``row`` when it arrived (None: none)."""
        p = int(self.prediction[row])
        return self.labels[p - 1] if p else None

    def remove(self, row: int) -> None:
        """Forget ``row``: its id, its cells; the row is free again."""
        if self.state[row] == FREE:
            return
        key = self._id(row)
        slot = self._slot(key, hash(key))
        self._delete_slot(slot)
        self.forget_features(row)
        self.n_labels -= int(self.state[row] == LABEL)
        self.state[row] = FREE
        self.arena_live -= int(self.id_len[row]) + int(self.note_len[row])
        self.note_len[row] = 0
        self.label[row] = 0
        self.free[self.n_free] = row
        self.n_free += 1

    def _delete_slot(self, i: int) -> None:
        """Empty slot ``i``, shifting back the entries that probed past it (linear probing, no tombstones)."""
        table, mask = self.table, self.mask
        j = i
        while True:
            table[i] = 0
            while True:
                j = (j + 1) & mask
                r = int(table[j]) - 1
                if r < 0:
                    return
                home = int(self.hashes[r]) & mask
                # the entry at j may move to i unless its home lies cyclically in (i, j]
                if (j > i and (home <= i or home > j)) or (j < i and (home <= i and home > j)):
                    break
            table[i] = table[j]
            i = j

    # ------------------------------------------------------------------ time

    def due(self, cutoff: float, state: int | None = None) -> np.ndarray:
        """Rows (oldest first) whose time is at most ``cutoff``; only those in ``state`` when given. No scan
        while ``cutoff`` is below :attr:`time_floor`, which a scan raises to the oldest live row's time."""
        if cutoff < self.time_floor:
            return np.zeros(0, dtype=np.int64)
        states, times = self.state[: self.high], self.time[: self.high]
        live = states != FREE
        self.time_floor = float(times[live].min()) if live.any() else np.inf
        if state is not None:
            live = states == state
        rows = np.flatnonzero(live & (times <= cutoff))
        return rows[np.argsort(self.time[rows], kind="stable")]

    def times_changed(self) -> None:
        """Say that :attr:`time` was written directly (a snapshot loaded): the next :meth:`due` scans."""
        self.time_floor = -np.inf

    def oldest(self, n: int) -> np.ndarray:
        """The ``n`` oldest live rows, joined ones first (they only spot duplicates), then held events, then
        early labels; oldest first within each."""
        live = np.flatnonzero(self.state[: self.high] != FREE)
        order = np.lexsort((self.time[live], _EVICTION_RANK[self.state[live]]))
        return live[order[:n]]
