"""Sparse count tables: the cells that occur, in an open-addressing hash table held in numpy arrays.

A dense class-conditional table of C·V^t cells is mostly zeros once V is
large: an event touches F^t of them. :class:`SparseTable` keeps only the cells
that were ever counted, keyed by their flat index (mixed radix over the
table's capacity ``shape``) in one int64 array, their counts in one float64
array, with linear probing. Every operation is vectorised over a batch of
cells (duplicates allowed): a lookup walks all keys of the batch one probe
step at a time, so the Python loop runs as many times as the longest probe
sequence (a handful at the load factor of at most one half), not once per cell.

Reading a cell that was never counted gives 0.0, as the dense table would.

A pair table made sparse (:meth:`~stream_nb.stats.tables.CountTables.to_sparse`) or by a selection
(``stats/selection/_candidates.py``) holds an index of its rows beside (:meth:`SparseTable.index_rows`):
one bit per row (c, u) of its capacity, set once the row holds a cell, which the compiled loops that add
cells keep (:func:`add_pair_rows`); AODE's and SPODE's scores read no cell of a row whose bit is clear
(``kernels/_sparse_scores.py``), and a row of a parent value not yet seen with a class (since its pairs
were kept) is most of them in the first events, and while the selection keeps tens of parents.
An addition here in numpy drops the index (it would not set the bits): the table is read as if every row
may hold cells until a selection makes it again. The index is no count, and not in :attr:`nbytes`: at most
:data:`ROWS_INDEXED` bits, 4 MiB.
"""

from __future__ import annotations

import math

import numpy as np

from ...exceptions import CapacityError
from ...kernels import compiled
from ._pair_blocks import PairBlocks, PairFeat

__all__ = ["ROWS_INDEXED", "FilteredTable", "SparseTable", "add_pair_rows", "cells_of", "chunks_of", "sparse_add", "sparse_of"]

_EMPTY = -1
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing: spreads consecutive keys over the slots
_MAX_KEY = 1 << 62
_ADD_BLOCK = 1 << 18  # cells added at a time: the working arrays of one addition stay a few MB
#: The most rows (classes x columns of the capacity) a table indexes (:meth:`SparseTable.index_rows`).
ROWS_INDEXED = 1 << 25
_NO_ROWS = np.zeros(0, dtype=np.uint8)


class SparseTable:
    """Counts of the cells of a table of logical ``shape`` that occur.

    Parameters
    ----------
    shape
        The capacity of each axis (class, values, ..., feature); the flat key
        of a cell is its index in a C-ordered array of this shape.
    slots
        Initial number of hash slots (rounded up to a power of two).

    Examples
    --------
    >>> t = SparseTable((2, 10, 10))
    >>> t.add((np.array([0, 0, 1]), np.array([3, 3, 4]), np.array([5, 5, 6])), np.array([1.0, 2.0, 0.5]))
    >>> t[(slice(0, 2), np.array([3, 4]), np.array([5, 6]))]
    array([[3. , 0. ],
           [0. , 0.5]])
    >>> len(t)
    2
    """

    __slots__ = ("shape", "_keys", "_vals", "_n", "_rows")

    def __init__(self, shape, slots: int = 1024):
        self.shape = tuple(int(d) for d in shape)
        self._check_shape(self.shape)
        size = self.slots_of(slots)
        self._keys = np.full(size, _EMPTY, dtype=np.int64)
        self._vals = np.zeros(size)
        self._n = 0
        self._rows = None

    @staticmethod
    def slots_of(slots: int) -> int:
        """The hash slots of a table made with ``slots``: rounded up to a power of two, at least 16."""
        return 1 << max(4, (int(slots) - 1).bit_length())

    def index_rows(self) -> np.ndarray:
        """Start the index of the rows held (see the module notes) for a table of three axes whose rows fit
        :data:`ROWS_INDEXED` (else none), the bits of the rows of the cells it holds set in a compiled pass
        over its slots (:func:`~stream_nb.kernels._hashed.held_rows`): the array the compiled loops that add
        cells set their bits in (a pair table's alone: the t-way tables' loops keep none)."""
        rows = self.shape[0] * self.shape[1] if len(self.shape) == 3 else ROWS_INDEXED + 1
        if rows > ROWS_INDEXED:
            self._rows = None
            return _NO_ROWS
        self._rows = np.zeros((rows + 7) // 8, dtype=np.uint8)
        if self._n:
            compiled().held_rows(self._keys, self.shape[2], self._rows)
        return self._rows

    def rows_held(self) -> np.ndarray:
        """The index of the rows held (bit ``c * shape[1] + u`` set when row (c, u) may hold a cell), or an
        empty array when the table keeps none (every row may), as the compiled kernels read it."""
        return _NO_ROWS if self._rows is None else self._rows

    @classmethod
    def from_dense(cls, table: np.ndarray, used, shape, slots: int = 1024) -> SparseTable:
        """A sparse table of capacity ``shape`` holding the nonzero cells of dense ``table`` within ``used``
        (what ``add(*cells_of(table, used))`` adds to an empty table of ``slots``, the same cells and
        capacity), read in a compiled pass over the dense cells."""
        region = table[tuple(slice(0, d) for d in used)]
        n = int(np.count_nonzero(region))
        out = cls(shape, slots=max(int(slots), 2 * n))
        if not table.flags.c_contiguous:  # (the store's dense tables are): numpy's gather
            out.add(*cells_of(table, used))
            return out
        out._n = compiled().dense_cells(table.reshape(-1), np.array(table.shape, dtype=np.int64),
                                        np.array(used, dtype=np.int64), np.array(out.shape, dtype=np.int64),
                                        out._keys, out._vals)
        return out

    @classmethod
    def from_cells(cls, keys: np.ndarray, vals: np.ndarray, shape) -> SparseTable:
        """A sparse table of capacity ``shape`` holding the cells of flat ``keys`` (distinct) with counts ``vals``:
        what ``add_flat(keys, vals)`` adds to an empty table (the same cells and capacity), in a compiled loop
        (:func:`~stream_nb.kernels._hashed.fill_cells`)."""
        out = cls(shape)
        out.reserve(len(keys))
        out._n = int(compiled().fill_cells(np.ascontiguousarray(keys, dtype=np.int64),
                                           np.ascontiguousarray(vals, dtype=float), len(keys), out._keys, out._vals))
        return out

    @staticmethod
    def _check_shape(shape) -> None:
        if math.prod(shape) >= _MAX_KEY:
            raise CapacityError(
                f"a sparse count table of shape {list(shape)} has more cells than a 62-bit key can number; "
                f"lower k or the number of values"
            )

    def __len__(self) -> int:
        """Cells held (counted at least once)."""
        return self._n

    def set_held(self, n: int) -> None:
        """Record that the table holds ``n`` cells, after a compiled loop filled its arrays in place."""
        self._n = int(n)

    @property
    def nbytes(self) -> int:
        """Bytes of the hash table (keys and counts, empty slots included)."""
        return self._keys.nbytes + self._vals.nbytes

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """The hash table's keys (int64, -1 for an empty slot) and counts, as the compiled kernels read them
        (:mod:`stream_nb.kernels._hashed`): read only, and only until the table grows."""
        return self._keys, self._vals

    def copy(self) -> SparseTable:
        out = SparseTable.__new__(SparseTable)
        out.shape, out._keys, out._vals, out._n = self.shape, self._keys.copy(), self._vals.copy(), self._n
        out._rows = _copied_rows(self)
        return out

    def keep_cells(self, slots: np.ndarray, reuse: bool, make) -> SparseTable:
        """A table of the cells of ``slots`` (this table's, in slot order: a selection's kept cells) with the
        index of their rows: ``make(n)``, an empty table made with ``n`` slots (twice the cells), filled with
        them in the compiled loop (:func:`~stream_nb.kernels._hashed.copy_cells`); or, with ``reuse`` (this
        table is of the kind ``make`` makes), this table itself when they are all its cells and it has the
        capacity that copy would take (a revision that drops no pair, most of them): the cells, counts,
        capacity and index a copy would hold, not copied."""
        n = len(slots)
        if reuse and n == self._n and len(self._keys) == self.slots_of(2 * max(n, 1)):
            if self._rows is None:
                self.index_rows()  # (an index numpy's additions dropped: made again, as a copy makes one)
            return self
        new = make(2 * max(n, 1))
        rows = new.index_rows()  # the rows it holds, set as the cells are copied (the scores skip the others)
        compiled().copy_cells(self._keys, self._vals, slots, new._keys, new._vals, self.shape[2], rows)
        new.set_held(n)
        return new

    # ------------------------------------------------------------------ hashing

    def _home(self, keys: np.ndarray) -> np.ndarray:
        bits = len(self._keys).bit_length() - 1
        return ((keys.astype(np.uint64) * _GOLDEN) >> np.uint64(64 - bits)).astype(np.int64)

    def _find(self, keys: np.ndarray, insert: bool) -> np.ndarray:
        """The slot of each key (distinct keys when ``insert``; -1 for an absent key when not)."""
        mask = len(self._keys) - 1
        slot = self._home(keys)
        out = np.full(len(keys), -1, dtype=np.int64)
        todo = np.arange(len(keys))
        while len(todo):
            s = slot[todo]
            held = self._keys[s]
            hit = held == keys[todo]
            out[todo[hit]] = s[hit]
            empty = held == _EMPTY
            moved = ~hit & ~empty
            if insert and empty.any():
                # several keys may reach the same empty slot: the first takes it, the rest probe on
                claim_slots, first = np.unique(s[empty], return_index=True)
                winners = todo[empty][first]
                self._keys[claim_slots] = keys[winners]
                out[winners] = claim_slots
                self._n += len(winners)
                won = np.zeros(len(todo), dtype=bool)
                won[np.flatnonzero(empty)[first]] = True
                keep = moved | (empty & ~won)
            else:
                keep = moved
            slot[todo[moved]] = (s[moved] + 1) & mask
            todo = todo[keep]
        return out

    def _slots_for(self, extra: int) -> int:
        """Slots of the hash table once ``extra`` more cells are in: it doubles while they would pass half of them."""
        size = len(self._keys)
        while 2 * (self._n + extra) > size:
            size *= 2
        return size

    def nbytes_after(self, extra: int) -> int:
        """:attr:`nbytes` once ``extra`` more cells are in (at most: some may be there already)."""
        return 16 * self._slots_for(extra)

    def reserve(self, extra: int) -> bool:
        """Make room for ``extra`` more cells: rehash into a larger table if they would pass half the slots
        (True if so). Compiled loops that add cells in place (:mod:`~stream_nb.kernels._hashed`) are given
        the room first, and report what they hold with :meth:`set_held`."""
        size = self._slots_for(extra)
        if size == len(self._keys):
            return False
        keys, vals = np.full(size, _EMPTY, dtype=np.int64), np.zeros(size)
        compiled().rehash(self._keys, self._vals, keys, vals)  # in place: no index arrays of every cell
        self._keys, self._vals = keys, vals
        return True

    # ------------------------------------------------------------------ counting

    def flat(self, idx) -> np.ndarray:
        """Flat keys of the cells ``idx`` (one integer array per axis, broadcast together)."""
        return np.ravel_multi_index(tuple(np.asarray(i, dtype=np.int64) for i in idx), self.shape)

    def add_flat(self, keys: np.ndarray, w) -> None:
        """Add ``w`` (a number or one per key) to the cells of flat ``keys`` (duplicates add up)."""
        keys = np.asarray(keys, dtype=np.int64).ravel()
        if not len(keys):
            return
        slots = self._find(keys, insert=False)
        new = slots < 0
        if new.any():  # cells not held yet: each distinct one takes a slot (and the index of rows is dropped)
            self._rows = None
            uniq, inv = np.unique(keys[new], return_inverse=True)
            if self.reserve(len(uniq)):
                slots = self._find(keys, insert=False)  # rehashed: the held cells moved
            slots[new] = self._find(uniq, insert=True)[inv.ravel()]
        # one at a time in the given order, as np.add.at does on a dense table: the same sums to the bit
        np.add.at(self._vals, slots, np.broadcast_to(np.asarray(w, dtype=float), keys.shape))

    def add(self, idx, w) -> None:
        """Add ``w`` to the cells ``idx`` (one index array per axis; like ``np.add.at``), in order, a block
        of the broadcast's first axis at a time (the pairs of one wide event are millions of cells)."""
        b = np.broadcast_arrays(*(np.asarray(i, dtype=np.int64) for i in idx), np.asarray(w, dtype=float))
        if b[0].ndim == 0:
            self.add_flat(self.flat(b[:-1]), b[-1].ravel())
            return
        step = max(1, _ADD_BLOCK // max(1, b[0][:1].size))
        for lo in range(0, len(b[0]), step):
            part = [a[lo : lo + step] for a in b]
            self.add_flat(self.flat(part[:-1]), part[-1].ravel())

    def get_flat(self, keys: np.ndarray) -> np.ndarray:
        keys = np.asarray(keys, dtype=np.int64)
        slots = self._find(keys.ravel(), insert=False)
        return np.where(slots >= 0, self._vals[slots], 0.0).reshape(keys.shape)

    def __getitem__(self, idx):
        """Gather cells: ``idx`` is a tuple of one entry per axis, the first a class index or a
        slice of classes, the others integers or integer arrays (broadcast together); the result is
        shaped (classes, *broadcast shape) like numpy's advanced indexing of a dense table."""
        lead, rest = idx[0], np.broadcast_arrays(*(np.asarray(i, dtype=np.int64) for i in idx[1:]))
        classes = np.arange(self.shape[0])[lead] if isinstance(lead, slice) else np.asarray(lead, dtype=np.int64)
        shape = rest[0].shape
        cls = np.reshape(classes, (-1,) + (1,) * len(shape))
        full = np.broadcast_arrays(cls, *(r[None] for r in rest))
        out = self.get_flat(self.flat(full))
        return out if isinstance(lead, slice) or np.ndim(lead) else out[0]

    # ------------------------------------------------------------------ bulk

    def cells(self) -> tuple[tuple, np.ndarray]:
        """``(index arrays, counts)`` of the cells held, in key order."""
        held = np.flatnonzero(self._keys != _EMPTY)
        order = np.argsort(self._keys[held], kind="stable")
        keys = self._keys[held][order]
        return np.unravel_index(keys, self.shape), self._vals[held][order]

    def chunks(self, dims=None, size: int = 1 << 18, nonzero: bool = True):
        """``(index arrays, counts)`` of the cells held (``nonzero``: those with a count; within ``dims``,
        if given), in slot order, a slice of at most ``size`` slots at a time: the bulk reads of a large
        table (pruning a selection, reshaping) take memory for one slice, not for every cell at once."""
        for lo in range(0, len(self._keys), size):
            keys, vals = self._keys[lo : lo + size], self._vals[lo : lo + size]
            held = (keys != _EMPTY) & (vals != 0) if nonzero else keys != _EMPTY
            idx = np.unravel_index(keys[held], self.shape)
            vals = vals[held]
            if dims is not None:
                ok = np.logical_and.reduce([a < d for a, d in zip(idx, dims)])
                idx, vals = tuple(a[ok] for a in idx), vals[ok]
            if len(vals):
                yield idx, vals

    def reshaped(self, shape) -> SparseTable:
        """The same cells in a table of another capacity ``shape`` (each axis at least as large), moved a
        slice at a time."""
        out = SparseTable(shape, slots=2 * max(self._n, 1))
        for idx, vals in self.chunks(nonzero=False):
            SparseTable.add(out, idx, vals)
        return out

    def scaled(self, factor: float) -> SparseTable:
        """A new (plain) table of the same cells, each count multiplied by ``factor``."""
        idx, vals = self.cells()
        out = SparseTable(self.shape, slots=2 * max(len(vals), 1))
        if len(vals):
            out.add(idx, vals * factor)
        return out

    def remap(self, maps, keep=None) -> SparseTable:
        """A new table whose cell (c, i1, i2, ...) is the sum of this one's cells mapped onto it by
        ``maps`` (one integer array per axis, or None for the identity; a -1 drops the cell), of the
        cells with ``keep`` (a boolean over the cells of :meth:`cells`) true."""
        idx, vals = self.cells()
        idx = [a if m is None else np.asarray(m)[a] for a, m in zip(idx, maps)]
        ok = np.logical_and.reduce([a >= 0 for a in idx]) if idx else np.ones(len(vals), dtype=bool)
        if keep is not None:
            ok &= keep
        out = SparseTable(self.shape, slots=2 * max(int(ok.sum()), 1))
        if ok.any():
            out.add(tuple(a[ok] for a in idx), vals[ok])
        return out


def add_pair_rows(pair_count: SparseTable, pair_feat: SparseTable, D: np.ndarray, dfeats: np.ndarray, yc: np.ndarray,
                  w: np.ndarray, room: int) -> None:
    """Add the observed pairs of each row of ``D`` (columns of features ``dfeats``; -1 missing), in row order,
    to sparse pair tables (a selection's, ``allowed``/``edges``/``vf``, adds its kept pairs alone) with class
    ``yc[r]`` and weight ``w[r]``, in the compiled loop (:func:`~stream_nb.kernels._hashed.pair_rows`): the
    same cells and sums as :meth:`SparseTable.add` of every pair of each row. ``room``: the most distinct cells
    one row can add to a table; a table is grown (doubled) whenever the next row could take it past half full."""
    sel = getattr(pair_count, "allowed", None)
    if sel is not None:
        allowed, edges, vf = sel, np.ascontiguousarray(pair_count.edges), pair_count.vf
        start, idx = _partners(edges, len(allowed))
    else:
        allowed, edges, vf = _NO_ALLOWED, _NO_EDGES, _NO_VF
        start, idx = _NO_START, _NO_VF
    prows, frows = pair_count.rows_held(), pair_feat.rows_held()  # (the bits of the rows new cells take)
    D, held = np.ascontiguousarray(D, dtype=np.int64), np.array([pair_count._n, pair_feat._n], dtype=np.int64)
    pshape, fshape = np.array(pair_count.shape, dtype=np.int64), np.array(pair_feat.shape, dtype=np.int64)
    yc, w, dfeats = np.asarray(yc, dtype=np.int64), np.asarray(w, dtype=float), np.asarray(dfeats, dtype=np.int64)
    r = 0
    while r < len(D):
        pair_count.reserve(room)
        pair_feat.reserve(room)
        r += compiled().pair_rows(D[r:], dfeats, yc[r:], w[r:], vf, sel is not None, allowed, edges, start, idx,
                                  pshape, fshape, pair_count._keys, pair_count._vals, pair_feat._keys, pair_feat._vals, held, room,
                                  prows, frows)
        pair_count._n, pair_feat._n = int(held[0]), int(held[1])


_NO_ALLOWED, _NO_EDGES, _NO_VF = np.zeros(0, dtype=bool), np.zeros((0, 0), dtype=bool), np.zeros(0, dtype=np.int64)
_NO_START = np.zeros(1, dtype=np.int64)
#: The last lists of kept edges made (:func:`_partners`): ``(F, a copy of the edges, start, idx)``.
_partners_made: list = [None]


def _partners(edges: np.ndarray, F: int) -> tuple[np.ndarray, np.ndarray]:
    """The kept edges of the first ``F`` features as the lists :func:`~stream_nb.kernels._hashed.pair_rows`
    walks (:func:`~stream_nb.kernels._hashed.pair_partners`), made again only when the edges differ from
    those of the last lists made (compared cell by cell, a few microseconds, where making them reads F^2
    cells in compiled code: every event learned one at a time asked for them while the selection stands)."""
    made = _partners_made[0]  # (one tuple read and written whole: a thread never sees a mismatched one)
    if made is None or made[0] != F or made[1].shape != edges.shape or not np.array_equal(made[1], edges):
        made = _partners_made[0] = (F, edges.copy(), *compiled().pair_partners(edges, F))
    return made[2], made[3]


def _copied_rows(table: SparseTable):
    """A copy of ``table``'s index of rows (None without one)."""
    return None if table._rows is None else table._rows.copy()


def chunks_of(table, dims, size: int = 1 << 18):
    """:func:`cells_of` a slice at a time: of a sparse table's slots (see :meth:`SparseTable.chunks`), of a
    dense one's rows (its second axis, about ``size`` cells a slice), so that the index arrays of a large table
    are never all held at once."""
    if isinstance(table, SparseTable):
        yield from table.chunks(dims, size)
        return
    per = max(1, math.prod(dims) // max(dims[1], 1)) if len(dims) > 1 else 1
    step = max(1, size // per)
    for lo in range(0, dims[1] if len(dims) > 1 else 1, step):
        part = dims if len(dims) < 2 else (dims[0], min(dims[1], lo + step) - lo, *dims[2:])
        if len(dims) < 2:
            idx, vals = cells_of(table, dims)
        else:
            idx, vals = cells_of(table[:, lo:], part)
            idx = (idx[0], idx[1] + lo, *idx[2:])
        if len(vals):
            yield idx, vals


def cells_of(table, dims) -> tuple[tuple, np.ndarray]:
    """``(index arrays, counts)`` of the nonzero cells of ``table`` (dense or sparse) within ``dims``."""
    if isinstance(table, (SparseTable, PairBlocks, PairFeat)):
        idx, vals = table.cells() if isinstance(table, SparseTable) else (
            table.cells_held() if isinstance(table, PairBlocks) else table.blocks.feat_cells())
        ok = np.logical_and.reduce([a < d for a, d in zip(idx, dims)]) & (vals != 0)
        return tuple(a[ok] for a in idx), vals[ok]
    part = table[tuple(slice(0, d) for d in dims)]
    idx = np.nonzero(part)
    return idx, part[idx]


def sparse_add(table: SparseTable, other, sign: float) -> SparseTable:
    """``table + sign * other`` (``other`` sparse or dense), in ``table`` (first grown, as a new table, to hold
    ``other``'s shape): the table that holds the sum."""
    if isinstance(other, SparseTable):
        idx, vals = other.cells()
    else:
        idx = np.nonzero(other)
        vals = other[idx]
    if any(d > D for d, D in zip(getattr(other, "shape", ()), table.shape)):
        table = table.reshaped(tuple(max(d, D) for d, D in zip(other.shape, table.shape)))
    if len(vals):
        table.add(idx, sign * np.asarray(vals))
    return table


def sparse_of(a: np.ndarray) -> SparseTable:
    """A sparse table of dense ``a``'s shape holding its nonzero cells."""
    out = SparseTable(a.shape, slots=2 * max(int(np.count_nonzero(a)), 1))
    return sparse_add(out, a, 1.0)


class FilteredTable(SparseTable):
    """A :class:`SparseTable` that adds only the cells :meth:`kept` accepts (a selection under a memory budget).

    A subclass provides :meth:`kept` (per flat key, whether its cell is counted) and ``_like(shape, slots)``
    (an empty table of the same selection); copies, reshapes and remaps keep the selection.
    """

    __slots__ = ()

    def add_flat(self, keys, w) -> None:
        keys = np.asarray(keys, dtype=np.int64).ravel()
        w = np.broadcast_to(np.asarray(w, dtype=float), keys.shape)
        ok = self.kept(keys)
        super().add_flat(keys[ok], w[ok])

    def copy(self):
        out = self._like(self.shape, 16)
        out._keys, out._vals, out._n = self._keys.copy(), self._vals.copy(), self._n
        out._rows = _copied_rows(self)
        return out

    def unfiltered(self) -> SparseTable:
        """A plain table of the same cells (shared, not copied): it counts every cell from now on."""
        plain = SparseTable(self.shape, slots=16)
        plain._keys, plain._vals, plain._n = self._keys, self._vals, self._n
        plain._rows = self._rows  # (the same cells: the same rows)
        return plain

    def reshaped(self, shape):
        out = self._like(shape, 2 * max(self._n, 1))
        for idx, vals in self.chunks(nonzero=False):
            out.add(idx, vals)
        return out

    def remap(self, maps, keep=None):
        plain = SparseTable.remap(self, maps, keep)
        out = self._like(self.shape, 16)
        out._keys, out._vals, out._n = plain._keys, plain._vals, plain._n
        return out
