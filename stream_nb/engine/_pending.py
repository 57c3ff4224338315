"""The pending store: events waiting for their label, as encoded rows in numpy arrays.

One row per event: its features (one column per feature name: an interned code
for a categorical value, the float's bits for a number), its time, its
prediction, its input position and its state. Its id is kept as its JSON bytes
in one byte arena and found through an open-addressing hash table (linear
probing, deletion by backward shift): no Python object per event, so a
million pending events of 20 features fit in well under 200 MB
(``bench/delayed.py --memory`` measures it).

Every array is allocated zeroed for the whole capacity at once
(``np.zeros``: pages the operating system hands out only when a row is
first written), so the resident memory follows the events actually held.

Cells: a categorical column holds ``code + 1`` of the value in the intern
table (0: absent); a numeric column holds the float's 64 bits plus one (0:
absent). A column takes its kind from its first value (a float: numeric;
anything else: categorical); a value of the other kind (an int in a numeric
column, a float in a categorical one) goes to a small side table, so every
value comes back exactly as it came, type included.
"""

from __future__ import annotations

import numpy as np

__all__ = ["FREE", "JOINED", "MAX_ID_BYTES", "PENDING", "PendingStore"]

FREE, PENDING, JOINED = 0, 1, 2  # a row's state: unused; waiting for its label; joined (kept to spot duplicates)

_ID_BYTES = 16  # arena bytes reserved per row up front (grows when ids are longer)
MAX_ID_BYTES = 65535  # the longest id held (its JSON text)


class PendingStore:
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
        self.id_start = np.zeros(n, dtype=np.int64)
        self.id_len = np.zeros(n, dtype=np.uint16)
        self.arena = np.zeros(max(64, n * _ID_BYTES), dtype=np.uint8)
        self.arena_used = 0
        self.arena_live = 0
        size = 1
        while size < 2 * n:
            size *= 2
        self.table = np.zeros(size, dtype=np.int32)  # row + 1; 0: empty
        self.mask = size - 1
        self.cat_names: dict[str, int] = {}  # categorical column of each feature name
        self.num_names: dict[str, int] = {}  # numeric column of each feature name
        self.cat = np.zeros((n, 0), dtype=np.int32)
        self.num = np.zeros((n, 0), dtype=np.uint64)
        self.values: list = []  # interned categorical values
        self.codes: dict = {}  # (type, value) -> code
        self.odd: dict = {}  # row -> {name: value} of the values of the other kind than their column's
        self.labels: list = []  # interned predictions
        self.label_codes: dict = {}
        self.partitions: list = []
        self.partition_codes: dict = {}
        self.free = np.arange(n - 1, -1, -1, dtype=np.int32)  # a stack of free rows
        self.n_free = n

    def __len__(self) -> int:
        return self.capacity - self.n_free

    @property
    def full(self) -> bool:
        return self.n_free == 0

    # ------------------------------------------------------------------ ids

    def _slot(self, key: bytes, h: int) -> int:
        """The table slot of ``key`` (its row is ``table[slot] - 1``), or the empty slot where it would go."""
        i = h & self.mask
        table = self.table
        while True:
            r = int(table[i]) - 1
            if r < 0:
                return i
            if self._id(r) == key:
                return i
            i = (i + 1) & self.mask

    def _id(self, row: int) -> bytes:
        s = int(self.id_start[row])
        return self.arena[s : s + int(self.id_len[row])].tobytes()

    def find(self, key: bytes) -> int:
        """The row of id ``key``, or -1."""
        return int(self.table[self._slot(key, hash(key))]) - 1

    def id_of(self, row: int) -> bytes:
        """The JSON bytes of the id of ``row``."""
        return self._id(row)

    # ------------------------------------------------------------------ rows

    def add(self, key: bytes, x: dict, *, t: float, prediction=None, partition=None, offset: int = 0,
            provisional: bool = False, state: int = PENDING) -> int:
        """Hold the event ``x`` of id ``key`` (not held yet; the store not full); return its row."""
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
        self.table[slot] = row + 1
        self._put_id(row, key)
        self.state[row] = state
        self.time[row] = t
        code = 0 if prediction is None else self._label_code(prediction) + 1
        self.prediction[row] = code if code < 32768 else 0  # beyond 32,767 distinct predictions: not scored
        self.partition[row] = self._partition_code(partition)
        self.offset[row] = offset
        self.provisional[row] = provisional
        self._put(row, x)
        return row

    def _put_id(self, row: int, key: bytes) -> None:
        n = len(key)
        if self.arena_used + n > len(self.arena):
            self._compact(n)
        s = self.arena_used
        self.arena[s : s + n] = np.frombuffer(key, dtype=np.uint8)
        self.id_start[row], self.id_len[row] = s, n
        self.arena_used += n
        self.arena_live += n

    def _compact(self, need: int) -> None:
        """Rewrite the arena with the live ids only (grown when that is not room enough)."""
        live = np.flatnonzero(self.state != FREE)
        size = len(self.arena)
        while self.arena_live + need > size // 2:
            size *= 2
        arena = np.zeros(size, dtype=np.uint8)
        pos = 0
        for r in live.tolist():
            s, n = int(self.id_start[r]), int(self.id_len[r])
            arena[pos : pos + n] = self.arena[s : s + n]
            self.id_start[r] = pos
            pos += n
        self.arena, self.arena_used, self.arena_live = arena, pos, pos

    def _put(self, row: int, x: dict) -> None:
        cj, cv, nj, nv = [], [], [], []
        cat_names, num_names, codes = self.cat_names, self.num_names, self.codes
        for name, v in x.items():
            if v is None:
                continue
            if type(v) is float:
                j = num_names.get(name)
                if j is None:
                    if name in cat_names:
                        self.odd.setdefault(row, {})[name] = v
                        continue
                    j = num_names[name] = self._widen("num")
                nj.append(j)
                nv.append(v)
                continue
            j = cat_names.get(name)
            if j is None:
                if name in num_names:
                    self.odd.setdefault(row, {})[name] = v
                    continue
                j = cat_names[name] = self._widen("cat")
            key = (type(v), v)
            code = codes.get(key)
            if code is None:
                code = codes[key] = len(self.values)
                self.values.append(v)
            cj.append(j)
            cv.append(code + 1)
        if cj:
            self.cat[row, cj] = cv
        if nj:
            self.num[row, nj] = np.array(nv, dtype=np.float64).view(np.uint64) + np.uint64(1)

    def _widen(self, which: str) -> int:
        """One more column in matrix ``which`` ("cat" or "num"); its index."""
        old = getattr(self, which)
        new = np.zeros((old.shape[0], old.shape[1] + 1), dtype=old.dtype)
        new[:, : old.shape[1]] = old
        setattr(self, which, new)
        return old.shape[1]

    def _label_code(self, y) -> int:
        key = (type(y), y)
        code = self.label_codes.get(key)
        if code is None:
            code = self.label_codes[key] = len(self.labels)
            self.labels.append(y)
        return code

    def _partition_code(self, p) -> int:
        code = self.partition_codes.get(p)
        if code is None:
            code = self.partition_codes[p] = len(self.partitions)
            self.partitions.append(p)
        return code

    def features(self, row: int) -> dict:
        """The features of ``row``, as they came (categorical ones first, then numeric ones, then others)."""
        x = {}
        values = self.values
        crow = self.cat[row]
        for name, j in self.cat_names.items():
            c = int(crow[j])
            if c:
                x[name] = values[c - 1]
        nrow = self.num[row]
        present = nrow != 0
        if present.any():
            floats = (nrow - np.uint64(1)).view(np.float64).tolist()
            for name, j in self.num_names.items():
                if present[j]:
                    x[name] = floats[j]
        if row in self.odd:
            x.update(self.odd[row])
        return x

    def predicted(self, row: int):
        """The prediction made for ``row`` when it arrived (None: none)."""
        p = int(self.prediction[row])
        return self.labels[p - 1] if p else None

    def forget_features(self, row: int) -> None:
        """Clear the cells of ``row`` (its id, time and state stay)."""
        self.cat[row] = 0
        self.num[row] = 0
        self.odd.pop(row, None)

    def remove(self, row: int) -> None:
        """Forget ``row``: its id, its cells; the row is free again."""
        if self.state[row] == FREE:
            return
        key = self._id(row)
        slot = self._slot(key, hash(key))
        self._delete_slot(slot)
        self.forget_features(row)
        self.state[row] = FREE
        self.arena_live -= int(self.id_len[row])
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
                home = hash(self._id(r)) & mask
                # the entry at j may move to i unless its home lies cyclically in (i, j]
                if (j > i and (home <= i or home > j)) or (j < i and (home <= i and home > j)):
                    break
            table[i] = table[j]
            i = j

    # ------------------------------------------------------------------ time

    def due(self, cutoff: float, state: int | None = None) -> np.ndarray:
        """Rows (oldest first) whose time is at most ``cutoff``; only those in ``state`` when given."""
        live = self.state != FREE if state is None else self.state == state
        rows = np.flatnonzero(live & (self.time <= cutoff))
        return rows[np.argsort(self.time[rows], kind="stable")]

    def oldest(self, n: int) -> np.ndarray:
        """The ``n`` oldest live rows (joined ones first: they only spot duplicates), oldest first."""
        live = np.flatnonzero(self.state != FREE)
        order = np.lexsort((self.time[live], self.state[live] != JOINED))
        return live[order[:n]]
