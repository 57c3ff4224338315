"""The count tables of a store, as one part: :class:`CountTables`.

A store (:class:`~stream_nb.stats.Stats`) counts in up to seven tables, each a numpy array or, past the
memory budget, a :class:`~stream_nb.stats.tables.SparseTable` (the pair counts may also be
:class:`~stream_nb.stats.tables.PairBlocks`):

- ``class_count`` (C,), ``value_count`` (C, V) and ``feat_count`` (C, F): the weight of each class, of each
  (class, value column) and of each (class, feature observed);
- ``pair_count`` (C, V, V) and ``pair_feat`` (C, V, F) with ``pairs``;
- ``tuple_count`` (C, V^t) and ``tuple_feat`` (C, V^(t-1), F) with ``tuples`` = t.

With an observed-only twin (:meth:`CountTables.keep_observed`, EM's E-step) every table but
``class_count`` is kept twice, the twin under the name prefixed ``obs_``
(:data:`~stream_nb.stats.values.TWINNED`).

The part holds them under these names (``held``: an attribute only while the table is held, so that a
store without pair tables has no ``pair_count``), grows the dense ones with spare room and keeps what was
counted (:meth:`CountTables.grow` for the class, value and feature counts, :meth:`CountTables.grow_dense`
for the pair or t-way family), replaces one table by another of the same counts in another layout
(:meth:`CountTables.replace`: sparse, pair blocks, a selection's filtered table, a remapped one) and
drops one (:meth:`CountTables.drop`: a layer that shares another's pair tables), and writes the counts in
use as a snapshot keeps them and reads them back (:meth:`CountTables.state`, :meth:`CountTables.load`), and
adds another store's counts, aligned by maps the store made by name (:meth:`CountTables.merge`). Which layout a table
takes (the memory budget, the pair and tuple selections) is decided by the store, which gives the part
what it chose.

Every count an event adds or takes back is written here too, in whatever layout the table has: the class
counts (:meth:`CountTables.add_class`), one event's values and features (:meth:`CountTables.add_values`) or
a batch's (:meth:`CountTables.add_value_rows`), their pairs (:meth:`CountTables.add_pair_rows`, EM's
expected ones :meth:`CountTables.add_expected_pairs`) and t-tuples (:meth:`CountTables.add_event_tuples`,
:meth:`CountTables.add_tuple_rows`); and a promotion's moves (:meth:`CountTables.clear_feature`,
:meth:`CountTables.clear_columns`, :meth:`CountTables.drop_columns`, :meth:`CountTables.move_columns`). The store
decides what to count, in which count set (``p``: ``""`` or ``"obs_"``) and with how much room (a
selection's cells per event); the part does the arithmetic. Negative weights take counts back.

Forgetting (:mod:`stream_nb.stats.forgetting`) decides which counts go; the part takes them out
(:meth:`CountTables.subtract`), makes them the counts (:meth:`CountTables.set_counts`) or scales every count
(:meth:`CountTables.scale`, exponential decay).
"""

from __future__ import annotations

import math

import numpy as np

from ...kernels import compiled
from ..values import TWINNED
from ._pair_blocks import PairBlocks, PairFeat, room_buffer
from ._sparse import SparseTable, add_pair_rows, cells_of, chunks_of, sparse_add
from ._working import row_chunks

__all__ = ["BASE_TABLES", "COUNT_TABLES", "CountTables", "scatter_add", "selected_room"]


def _flat(table: np.ndarray) -> np.ndarray:
    """A flat view of a (C-contiguous) count table, for adding at flat indices."""
    flat = table.reshape(-1)
    if not np.shares_memory(flat, table):
        raise ValueError("a count table must be C-contiguous")
    return flat

#: The tables every store keeps: the class, value and feature counts.
BASE_TABLES = ("class_count", "value_count", "feat_count")
#: Every name a table may be held by: the tables, then their observed-only twins.
COUNT_TABLES = ("class_count",) + TWINNED + tuple("obs_" + name for name in TWINNED)


def scatter_add(table, idx: tuple, w) -> None:
    """``np.add.at(table, idx, w)`` for a dense table, a :class:`SparseTable` or pair blocks (whose
    ``pair_feat``, :class:`~stream_nb.stats.tables.PairFeat`, is read off them: nothing to add)."""
    if isinstance(table, (SparseTable, PairBlocks)):
        table.add(idx, w)
    elif isinstance(table, PairFeat):
        return
    else:
        np.add.at(table, idx, w)


class Held:
    """The tables a :class:`CountTables` holds, each an attribute under its name while it is held (in the
    order they were first made)."""


class CountTables:
    """The count tables of a store: held by name, grown with spare room, twinned for EM.

    Examples
    --------
    >>> t = CountTables()
    >>> t.grow(4, 8, 2, 1, (0, 0, 0))
    >>> t.held.value_count.shape, t.capacity
    ((4, 8), (4, 8, 2, 1))
    >>> t.held.value_count[1, 3] = 2.0
    >>> t.grow(8, 8, 2, 1, (2, 4, 1))  # more classes: the counts in use stay
    >>> t.held.value_count.shape, float(t.held.value_count[1, 3])
    ((8, 8), 2.0)
    >>> t.keep_observed()
    True
    >>> t.sets(), float(t.held.obs_value_count[1, 3])
    (('', 'obs_'), 2.0)
    """

    def __init__(self):
        self.held = Held()
        #: Whether every table but the class counts has its observed-only twin (``obs_``).
        self.observed = False
        #: The room of the dense class, value and feature counts: (classes, value columns, features,
        #: Gaussian slots); the last is the Gaussian moments', which grow with them.
        self.capacity = (0, 0, 0, 0)
        #: The layout of the pair counts (sparse, or pair blocks) and of the t-way counts (sparse), as
        #: :meth:`replace` last held them: a store reads it with every event.
        self.pairs_sparse = self.pairs_blocks = self.tuples_sparse = False
        #: Per dense pair table grown with room (:meth:`grow_dense`), the zeroed buffer whose start holds it.
        self.room: dict = {}

    def __getstate__(self) -> dict:
        """Pickled and copied without the buffers of :attr:`room` (a copy's tables are its own arrays, which grow
        into new ones): a copy never shares a buffer with the original, nor writes its unused room."""
        state = self.__dict__.copy()
        state["room"] = {}
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update({"room": {}, **state})  # (one pickled before the room was kept has none)

    def sets(self) -> tuple:
        """Name prefixes of the count sets kept: the counts, and with :attr:`observed` their observed-only twin."""
        return ("", "obs_") if self.observed else ("",)

    def get(self, name: str, default=None):
        """The table held under ``name`` (``default`` if none is)."""
        return getattr(self.held, name, default)

    def arrays(self) -> dict:
        """Every table held, by name, in the order they were first made."""
        return {k: v for k, v in vars(self.held).items() if isinstance(v, (np.ndarray, SparseTable, PairBlocks))}

    def grow(self, cc: int, cv: int, cf: int, cg: int, used: tuple) -> None:
        """Dense class, value and feature counts (and their twins) with room for ``cc`` classes, ``cv``
        value columns and ``cf`` features (``cg`` Gaussian slots is kept as :attr:`capacity` only), the
        counts of the ``used`` = (classes, columns, features) in use copied over."""
        C, V, F = used
        new = {"class_count": np.zeros(cc), "value_count": np.zeros((cc, cv)), "feat_count": np.zeros((cc, cf))}
        dims = {"value_count": (C, V), "feat_count": (C, F)}
        for p in self.sets()[1:]:
            for k in dims:
                new[p + k] = np.zeros_like(new[k])
        old = self.get("class_count")
        if old is not None:
            new["class_count"][:C] = old[:C]
            for p in self.sets():
                for k, d in dims.items():
                    part = tuple(slice(0, n) for n in d)
                    new[p + k][part] = self.get(p + k)[part]
        for k, v in new.items():
            self.replace(k, v)
        self.capacity = (cc, cv, cf, cg)

    def grow_dense(self, family: tuple, shapes: tuple, used: tuple, room: int = 0, compiled_move: bool = True) -> None:
        """Dense tables of ``family`` (the pair or the t-way names: the table, then its twin with a feature
        last) of ``shapes``, in every count set, each with the cells of the region ``used`` (one shape
        per name) of the dense table it replaces, if any.

        ``room``: cells of a buffer each table of three axes (the pairs') may take, its start holding the table
        (0: none). A table grown within its buffer moves its cells in place
        (:func:`~stream_nb.kernels._pair_blocks.move_counts`), where a new table would fault in every page it
        writes (the cells of the first events of a wide stream are spread over all of them, and dense pair
        tables grow several times an event then); the buffer's pages that no cell reaches take no memory.
        The tables hold the same counts either way. ``compiled_move``: a pair table's nonzero cells are copied
        into a new one in a compiled pass (:func:`~stream_nb.kernels._pair_blocks.copy_counts`); False, by
        numpy's copy of the region (a store not learning yet: a state read imports no compiled code)."""
        for p in self.sets():
            for k, shape, dims in zip(family, shapes, used):
                old = self.get(p + k)
                buf = self.room.pop(p + k, None)
                size = math.prod(shape)
                if (buf is not None and isinstance(old, np.ndarray) and old.base is buf and len(shape) == 3
                        and old.ctypes.data == buf.ctypes.data and size <= len(buf)
                        and all(a <= b for a, b in zip(old.shape, shape))
                        and all(d <= a for d, a in zip(dims, old.shape))):
                    compiled().move_counts(buf, np.array(old.shape, dtype=np.int64), np.array(dims, dtype=np.int64),
                                           np.array(shape, dtype=np.int64))
                    self.room[p + k] = buf
                    self.replace(p + k, buf[:size].reshape(shape))
                    continue
                buf = room_buffer(room) if len(shape) == 3 and room > size else None
                if buf is not None and len(buf) > size:
                    self.room[p + k] = buf
                    new = buf[:size].reshape(shape)
                else:
                    new = np.zeros(shape)
                if (compiled_move and isinstance(old, np.ndarray) and old.ndim == 3 and old.dtype == new.dtype
                        and all(d <= min(a, b) for d, a, b in zip(dims, old.shape, shape))):
                    compiled().copy_counts(old, new, *dims)  # (the pair tables: their nonzero cells alone)
                elif old is not None:
                    part = tuple(slice(0, d) for d in dims)
                    new[part] = old[part]
                self.replace(p + k, new)

    def replace(self, name: str, table) -> None:
        """Hold ``table`` under ``name`` (one of :data:`COUNT_TABLES`), in place of the one held."""
        if name not in COUNT_TABLES:
            raise KeyError(f"no count table is named {name!r}")
        buf = self.room.get(name)
        if buf is not None and not (isinstance(table, np.ndarray) and table.base is buf):
            del self.room[name]  # (its buffer goes with the table it held)
        setattr(self.held, name, table)
        if name == "pair_count":
            self.pairs_sparse, self.pairs_blocks = isinstance(table, SparseTable), isinstance(table, PairBlocks)
        elif name == "tuple_count":
            self.tuples_sparse = isinstance(table, SparseTable)

    def drop(self, name: str) -> None:
        """Hold no table under ``name`` (nothing if none is held)."""
        vars(self.held).pop(name, None)
        self.room.pop(name, None)
        if name == "pair_count":
            self.pairs_sparse = self.pairs_blocks = False
        elif name == "tuple_count":
            self.tuples_sparse = False

    def keep_observed(self) -> bool:
        """Start keeping the observed-only twin of every table held (:data:`~stream_nb.stats.values.TWINNED`), as a copy; False,
        and nothing done, when it is kept already."""
        if self.observed:
            return False
        self.observed = True
        for k in TWINNED:
            table = self.get(k)
            if table is not None:
                self.replace("obs_" + k, table.copy())
        return True

    # ------------------------------------------------------------------ another layout (the store decides when)

    def to_sparse(self, family: tuple, shapes: tuple, used: tuple, wait=None, compiled_move: bool = True) -> None:
        """Hold the tables of ``family`` (the pair or the t-way names: the table, then its twin with a feature
        last) sparse in every count set, of ``shapes`` (one per name), with the same counts: a sparse table
        reshaped (if its shape differs), the cells of pair blocks moved over, those of a dense table's region
        ``used`` (one shape per name) moved over, the pairs' a slice of rows at a time. ``wait``, given the
        cells a dense t-way table holds, says whether the new table starts empty instead (a t-way selection
        that counts its candidates afresh); None: never. ``compiled_move``: the cells of pair blocks are read in
        one compiled pass (:meth:`~stream_nb.stats.tables.PairBlocks.sparse_cells`); False, in numpy (the same
        tables: a store not learning yet)."""
        pairs = family[0] == "pair_count"
        blocks = self.get("pair_count") if pairs and compiled_move else None
        moved = blocks.sparse_cells(used[0], shapes[0], used[1], shapes[1]) if isinstance(blocks, PairBlocks) else None
        for p in self.sets():
            for k, shape, dims in zip(family, shapes, used):
                old = self.get(p + k)
                if isinstance(old, SparseTable):
                    if old.shape != shape:
                        self.replace(p + k, _indexed(old.reshaped(shape), pairs))
                    continue
                if isinstance(old, (PairBlocks, PairFeat)):  # pair blocks until now: their cells move over
                    if moved is not None:  # read in one compiled pass (both tables' cells)
                        new = SparseTable.from_cells(*moved[family.index(k)], shape)
                    else:
                        new = SparseTable(shape)
                        new.add(*cells_of(old, dims))
                    self.replace(p + k, _indexed(new, pairs))
                    continue
                if old is not None and pairs:  # dense until now: its cells move over, a slice at a time
                    region = old[tuple(slice(0, d) for d in dims)]
                    new = SparseTable(shape, slots=2 * max(int(np.count_nonzero(region)), 1))
                    del region
                    for idx, vals in chunks_of(old, dims):
                        new.add(idx, vals)
                    self.replace(p + k, _indexed(new, pairs))
                    continue
                new = _indexed(SparseTable(shape), pairs)
                if old is not None:  # dense until now: its cells move over
                    held = int(np.count_nonzero(old[tuple(slice(0, d) for d in dims)]))
                    if held and not (wait is not None and wait(held)):
                        new = SparseTable.from_dense(old, dims, shape)
                self.replace(p + k, new)

    def to_blocks(self, vf: np.ndarray, n_features: int, n_classes: int, spare: int, room: int = 0,
                  compiled_move: bool = True) -> None:
        """Hold the pair counts in new :class:`~stream_nb.stats.tables.PairBlocks` of the columns' features
        ``vf`` (one per column in use), ``n_features`` features and ``n_classes`` classes, with ``spare`` cells
        of room (and a buffer of ``room`` cells to grow in); the dense counts held until now move over in one
        compiled pass, or with ``compiled_move`` False (a store not learning yet) a slice of rows at a time in
        numpy, the same blocks."""
        held = self.get("pair_count")
        blocks = PairBlocks(vf, n_features, n_classes, spare, room)
        if compiled_move and isinstance(held, np.ndarray) and held.ndim == 3:  # dense: in one compiled pass
            blocks.add_dense(held)
        elif held is not None:
            for idx, vals in chunks_of(held, (n_classes, len(vf), len(vf))):
                blocks.add(idx, vals)
        self.replace("pair_count", blocks)
        self.replace("pair_feat", blocks.feat)

    def grow_blocks(self, vf: np.ndarray, n_features: int, n_classes: int, spare: int, room: int = 0) -> None:
        """Grow the pair blocks held to the columns' features ``vf``, ``n_features`` features and ``n_classes``
        classes (:meth:`~stream_nb.stats.tables.PairBlocks.grow`, ``spare`` cells of room, a buffer of ``room``
        cells to grow in)."""
        self.held.pair_count.grow(vf, n_features, n_classes, spare, room)

    # ------------------------------------------------------------------ counting (negative weights take back)

    def add_class(self, c, w) -> None:
        """Add ``w`` to the class count of ``c``: one index, or distinct indices (a slice) with a weight each."""
        self.held.class_count[c] += w

    def add_values(self, p: str, c: int, cols: np.ndarray, wcols, feats: np.ndarray, wfeats) -> None:
        """In count set ``p``, add ``wcols`` to class ``c``'s counts of the value columns ``cols`` and ``wfeats``
        to its counts of the features ``feats`` (distinct indices each; a weight, or one per index)."""
        getattr(self.held, p + "value_count")[c, cols] += wcols
        getattr(self.held, p + "feat_count")[c, feats] += wfeats

    def add_value_rows(self, p: str, cc: np.ndarray, cols: np.ndarray, feats: np.ndarray, w: np.ndarray) -> None:
        """In count set ``p``, add ``w[i]`` to the (class ``cc[i]``, column ``cols[i]``) value count and to the
        (``cc[i]``, ``feats[i]``) feature count, for every i (a batch's observed values: the same cell may recur)."""
        np.add.at(getattr(self.held, p + "value_count"), (cc, cols), w)
        np.add.at(getattr(self.held, p + "feat_count"), (cc, feats), w)

    def add_pair_rows(self, p: str, D: np.ndarray, dfeats: np.ndarray, yc: np.ndarray, w: np.ndarray, room: int) -> None:
        """In count set ``p``, add the observed pairs of the rows of ``D`` (value columns, -1 where missing, of
        features ``dfeats``; classes ``yc``, weights ``w``) to the pair tables, row by row in compiled loops:
        dense tables (:func:`~stream_nb.kernels._tree.add_pair_rows`), sparse ones
        (:func:`~stream_nb.stats.tables._sparse.add_pair_rows`; ``room``, the most cells a row adds to one, as
        the store's selection allows) or pair blocks (:meth:`~stream_nb.stats.tables.PairBlocks.add_rows`,
        grown to the columns beforehand; their pair_feat is read off them)."""
        pc = getattr(self.held, p + "pair_count")
        if isinstance(pc, SparseTable):
            add_pair_rows(pc, getattr(self.held, p + "pair_feat"), D, dfeats, yc, w, room)
        elif isinstance(pc, PairBlocks):
            pc.add_rows(D, dfeats, yc, w)
        else:
            compiled().add_pair_rows(np.ascontiguousarray(D), dfeats, yc, w, pc, getattr(self.held, p + "pair_feat"))

    def add_expected_pairs(self, c: int, u: np.ndarray, fs: np.ndarray, J: np.ndarray, Jf: np.ndarray) -> None:
        """Add ``J[r, s]`` to ``pair_count[c, u[r], u[s]]`` and ``Jf[r, g]`` to ``pair_feat[c, u[r], fs[g]]``
        (dense or sparse tables; ``u`` and ``fs`` distinct, so each cell once): EM's expected pairs, or with
        negated weights their removal. The counts only: the observed-only twin takes observed values."""
        pair_count, pair_feat = self.held.pair_count, self.held.pair_feat
        if isinstance(pair_count, SparseTable):  # the cells that change (not the pairs of one feature's values)
            r, q = np.nonzero(J)
            pair_count.add((c, u[r], u[q]), J[r, q])
            r, q = np.nonzero(Jf)
            pair_feat.add((c, u[r], fs[q]), Jf[r, q])
        else:
            pair_count[c][u[:, None], u] += J
            pair_feat[c][u[:, None], fs] += Jf

    def add_cells(self, name: str, idx: tuple, w) -> None:
        """Add ``w`` at the cells ``idx`` (index arrays, broadcast together with ``w``; a cell may recur) of the
        dense or sparse table held under ``name``."""
        table = getattr(self.held, name)
        if isinstance(table, np.ndarray):
            idx = np.broadcast_arrays(*(np.asarray(i) for i in idx))
            np.add.at(table, tuple(idx), np.broadcast_to(w, idx[0].shape))
        else:
            table.add(idx, w)

    def add_event_tuples(self, p: str, t: int, cols: np.ndarray, feats: np.ndarray, c: int, w: float) -> None:
        """In count set ``p``, add weight ``w`` to every ordered t-tuple of one event's value columns ``cols``
        (of class ``c``) and of its values with a feature (of ``feats``) last, dense or sparse tables."""
        tc, tf = getattr(self.held, p + "tuple_count"), getattr(self.held, p + "tuple_feat")
        if isinstance(tc, SparseTable):
            _count_sparse_tuples(tc, tf, t, cols, feats, c, w)
            return
        compiled().add_tuple_rows(cols[None, :], feats, np.array([c]), np.array([float(w)]), t,
                                  tc.shape[-1], tf.shape[-1], _flat(tc), _flat(tf))

    def add_tuple_rows(self, p: str, t: int, D: np.ndarray, dfeats: np.ndarray, yc: np.ndarray, w: np.ndarray,
                       mask: np.ndarray) -> None:
        """In count set ``p``, the t-tuples of the rows of ``D`` (``mask`` = ``D >= 0``; features ``dfeats``,
        classes ``yc``, weights ``w``), in row order as one at a time: dense tables in compiled code, sparse
        ones by blocks of tuples (see :func:`_add_tuples_sparse`)."""
        tc, tf = getattr(self.held, p + "tuple_count"), getattr(self.held, p + "tuple_feat")
        if isinstance(tc, SparseTable):
            _add_tuples_sparse((tc, tf), t, D, dfeats, yc, w, mask)
            return
        compiled().add_tuple_rows(np.ascontiguousarray(D), dfeats, yc, w, t, tc.shape[-1], tf.shape[-1],
                                  _flat(tc), _flat(tf))

    def add_selected_tuples(self, p: str, t: int, lists: np.ndarray, D: np.ndarray, dfeats: np.ndarray, yc: np.ndarray,
                            w: np.ndarray) -> None:
        """In count set ``p``, add to the sparse t-way tables the t-tuples of rows ``D`` (columns of features
        ``dfeats``, -1 missing; class ``yc``, weight ``w`` per row) that a selection keeps: each feature's value
        with every (t-1)-tuple of the values of its candidate parents ``lists[f]`` (-1 padded), in row order,
        in the compiled loop (:func:`~stream_nb.kernels._tuples.selected_tuple_rows`), without index arrays of
        every tuple. A table is grown (doubled) whenever the next row could take it past half full."""
        tc, tf = getattr(self.held, p + "tuple_count"), getattr(self.held, p + "tuple_feat")
        dfeats = np.asarray(dfeats, dtype=np.int64)
        room = selected_room(t, lists, dfeats)
        if not room or not len(D):
            return
        D = np.ascontiguousarray(D, dtype=np.int64)
        yc, w = np.asarray(yc, dtype=np.int64), np.asarray(w, dtype=float)
        cshape, fshape = np.array(tc.shape, dtype=np.int64), np.array(tf.shape, dtype=np.int64)
        held = np.array([len(tc), len(tf)], dtype=np.int64)
        r = 0
        while r < len(D):
            tc.reserve(room)
            tf.reserve(room)
            (ck, cv), (fk, fv) = tc.arrays(), tf.arrays()
            r += compiled().selected_tuple_rows(D[r:], dfeats, yc[r:], w[r:], lists, t, cshape, fshape, ck, cv, fk,
                                                fv, held, room)
            tc.set_held(held[0])
            tf.set_held(held[1])

    def reserve_tuples(self, room: int) -> tuple:
        """Room in the sparse t-way tables for ``room`` more cells each (:meth:`SparseTable.reserve`), for a
        compiled loop that adds cells to their hash arrays in place; returns ``(tuple_count, tuple_feat, held)``,
        ``held`` the cells each holds (an array the loop updates, given back to :meth:`tuples_held`)."""
        tc, tf = self.held.tuple_count, self.held.tuple_feat
        tc.reserve(room)
        tf.reserve(room)
        return tc, tf, np.array([len(tc), len(tf)], dtype=np.int64)

    def tuples_held(self, held: np.ndarray) -> None:
        """Record the cells a compiled loop left in the sparse t-way tables (``held`` of :meth:`reserve_tuples`)."""
        self.held.tuple_count.set_held(held[0])
        self.held.tuple_feat.set_held(held[1])

    # ------------------------------------------------------------------ forgetting (the store decides what)

    def scale(self, factor: float, names) -> None:
        """Multiply every count of the tables held under ``names`` by ``factor`` (exponential decay): a dense
        table in place, a sparse one replaced by its :meth:`~stream_nb.stats.tables.SparseTable.scaled` copy."""
        for name in names:
            table = getattr(self.held, name)
            if isinstance(table, SparseTable):
                self.replace(name, table.scaled(factor))
            else:
                table[...] *= factor

    def subtract(self, deltas: dict) -> None:
        """Take counts out of the tables held: ``deltas`` maps a table's name to the counts to take out of it,
        dense (from its first cells) or sparse, whatever the table's own layout."""
        for name, d in deltas.items():
            table = getattr(self.held, name)
            if isinstance(table, SparseTable):
                self.replace(name, sparse_add(table, d, -1.0))
            elif isinstance(d, SparseTable):
                idx, vals = d.cells()
                np.subtract.at(table, idx, vals)
            else:
                table[tuple(slice(0, n) for n in d.shape)] -= d

    def set_counts(self, counts: dict) -> None:
        """Make ``counts`` (a table's name to its counts, dense from its first cells or sparse; None: none) the
        counts of the tables held under those names, every other cell of them zero."""
        for name, d in counts.items():
            table = getattr(self.held, name)
            if isinstance(table, SparseTable):
                self.replace(name, sparse_add(SparseTable(table.shape), d, 1.0) if d is not None
                             else SparseTable(table.shape))
                continue
            table[...] = 0.0
            if isinstance(d, SparseTable):
                idx, vals = d.cells()
                np.add.at(table, idx, vals)
            elif d is not None:
                table[tuple(slice(0, n) for n in d.shape)] = d

    # ------------------------------------------------------------------ a promotion's moves

    def clear_feature(self, p: str, f: int, classes: int | None = None) -> None:
        """In count set ``p``, zero the feature counts of feature ``f`` (of the first ``classes``; None: all)."""
        getattr(self.held, p + "feat_count")[:classes, f] = 0.0

    def clear_columns(self, p: str, cols: np.ndarray) -> None:
        """In count set ``p``, zero the value counts of columns ``cols`` in every class."""
        getattr(self.held, p + "value_count")[:, cols] = 0.0

    def drop_columns(self, p: str, f: int, old: np.ndarray, pairs: bool, tuples: int) -> None:
        """In count set ``p``, forget every count of feature ``f``'s value columns ``old``, as if its values had
        been missing: its feature counts, and (with ``pairs``, ``tuples`` = t) every pair and t-tuple holding
        one of them or ending in ``f``, in either layout."""
        getattr(self.held, p + "feat_count")[:, f] = 0.0
        gone = np.full(len(old), -1)
        if pairs and self.pairs_sparse:
            self._remap_sparse(p, ("pair_count", "pair_feat"), 2, old, gone, f)
        elif pairs:
            pair_count, pair_feat = getattr(self.held, p + "pair_count"), getattr(self.held, p + "pair_feat")
            pair_feat[:, :, f] -= pair_count[:, :, old].sum(2)
            pair_count[:, old, :] = 0.0
            pair_count[:, :, old] = 0.0
            pair_feat[:, old, :] = 0.0
        t = tuples
        if t and self.tuples_sparse:
            self._remap_sparse(p, ("tuple_count", "tuple_feat"), t, old, gone, f)
        elif t:
            tuple_count, tuple_feat = getattr(self.held, p + "tuple_count"), getattr(self.held, p + "tuple_feat")
            lead = (slice(None),) * t
            tuple_feat[lead + (f,)] -= tuple_count[lead + (old,)].sum(-1)
            for axis in range(1, t + 1):
                idx = [slice(None)] * (t + 1)
                idx[axis] = old
                tuple_count[tuple(idx)] = 0.0
            for axis in range(1, t):
                idx = [slice(None)] * (t + 1)
                idx[axis] = old
                tuple_feat[tuple(idx)] = 0.0

    def move_columns(self, p: str, old: np.ndarray, new: np.ndarray, pairs: bool, tuples: int) -> None:
        """In count set ``p``, add the counts of value columns ``old`` into ``new`` (pairwise, ``old[i]`` into
        ``new[i]``) along every value axis of the value, pair (with ``pairs``) and t-way (``tuples`` = t)
        tables, in either layout; the pair and t-way cells of ``old`` are left empty (its value counts stay,
        for the caller to clear: :meth:`clear_columns`)."""
        t = tuples
        if t and self.tuples_sparse:
            self._remap_sparse(p, ("tuple_count", "tuple_feat"), t, old, new)
        if pairs and self.pairs_sparse:
            self._remap_sparse(p, ("pair_count", "pair_feat"), 2, old, new)
        value_count = getattr(self.held, p + "value_count")
        pair_count, pair_feat = getattr(self.held, p + "pair_count", None), getattr(self.held, p + "pair_feat", None)
        tuple_count, tuple_feat = getattr(self.held, p + "tuple_count", None), getattr(self.held, p + "tuple_feat", None)
        for o, n in zip(old.tolist(), new.tolist()):
            value_count[:, n] += value_count[:, o]
            if pairs and not self.pairs_sparse:
                pair_count[:, n, :] += pair_count[:, o, :]
                pair_count[:, o, :] = 0.0
                pair_count[:, :, n] += pair_count[:, :, o]
                pair_count[:, :, o] = 0.0
                pair_feat[:, n, :] += pair_feat[:, o, :]
                pair_feat[:, o, :] = 0.0
            if t and not self.tuples_sparse:
                for axis in range(1, t + 1):
                    src = [slice(None)] * (t + 1)
                    dst = list(src)
                    src[axis], dst[axis] = o, n
                    tuple_count[tuple(dst)] += tuple_count[tuple(src)]
                    tuple_count[tuple(src)] = 0.0
                for axis in range(1, t):
                    src = [slice(None)] * (t + 1)
                    dst = list(src)
                    src[axis], dst[axis] = o, n
                    tuple_feat[tuple(dst)] += tuple_feat[tuple(src)]
                    tuple_feat[tuple(src)] = 0.0

    def _remap_sparse(self, p: str, family: tuple, t: int, old: np.ndarray, new: np.ndarray, drop_feature: int = -1) -> None:
        """Sparse t-way tables ``family`` (the pairs': t = 2) of count set ``p``: the counts of columns
        ``old`` moved to ``new`` along every value axis (-1: dropped), and with ``drop_feature`` >= 0
        that feature's cells dropped."""
        for k, n_value_axes in zip(family, (t, t - 1)):
            table = self.get(p + k)
            cmap = np.arange(table.shape[1])
            cmap[old] = new
            maps = [None] + [cmap] * n_value_axes
            if k == family[1]:
                fmap = np.arange(table.shape[-1])
                if drop_feature >= 0:
                    fmap[drop_feature] = -1
                maps.append(fmap)
            self.replace(p + k, table.remap(maps))

    def state(self, used: tuple, pairs: bool, tuples: int) -> dict:
        """The counts in use, ``used`` = (classes, value columns, features), as arrays by the names a snapshot
        keeps them under, in its order: the class, value and feature counts, then per count set the twin's
        value and feature counts, the pair tables (with ``pairs``) and the t-way tables (``tuples`` = t).
        A dense table gives its region in use; a sparse one (or pair blocks) its cells, ``<name>_cells``
        (cells, axes) and ``<name>_counts``, after the dense ones of its set."""
        C, V, F = used
        out = {"class_count": self.held.class_count[:C].copy(), "value_count": self.held.value_count[:C, :V].copy(),
               "feat_count": self.held.feat_count[:C, :F].copy()}
        for p in self.sets():
            if p:
                out[p + "value_count"] = self.get(p + "value_count")[:C, :V].copy()
                out[p + "feat_count"] = self.get(p + "feat_count")[:C, :F].copy()
            sparse = []  # the sparse tables: the cells held, (cells, axes) indices and their counts
            if pairs and (self.pairs_sparse or self.pairs_blocks):  # (blocks: their cells, as a sparse table's)
                sparse += [("pair_count", (C, V, V)), ("pair_feat", (C, V, F))]
            elif pairs:
                out[p + "pair_count"] = self.get(p + "pair_count")[:C, :V, :V].copy()
                out[p + "pair_feat"] = self.get(p + "pair_feat")[:C, :V, :F].copy()
            t = tuples
            if t and self.tuples_sparse:
                sparse += [("tuple_count", (C,) + (V,) * t), ("tuple_feat", (C,) + (V,) * (t - 1) + (F,))]
            for k, dims in sparse:
                idx, vals = cells_of(self.get(p + k), dims)
                out[p + k + "_cells"] = np.stack(idx, axis=1).astype(np.int64).reshape(-1, len(dims))
                out[p + k + "_counts"] = vals.astype(float)
            if t and not self.tuples_sparse:
                out[p + "tuple_count"] = self.get(p + "tuple_count")[(slice(0, C),) + (slice(0, V),) * t].copy()
                out[p + "tuple_feat"] = self.get(p + "tuple_feat")[(slice(0, C),) + (slice(0, V),) * (t - 1)
                                                                   + (slice(0, F),)].copy()
        return out

    def load(self, arrays: dict, used: tuple, pairs: bool, tuples: int) -> None:
        """Add the counts of ``arrays`` (as :meth:`state` writes them, dense or as cells) to the empty tables
        held, whatever their layout here, ``used`` = (classes, value columns, features) in use."""
        C, V, F = used
        self.held.class_count[:C] = arrays["class_count"]
        t = tuples
        for p in self.sets():
            self.get(p + "value_count")[:C, :V] = arrays[p + "value_count"]
            self.get(p + "feat_count")[:C, :F] = arrays[p + "feat_count"]
            if pairs and p + "pair_count_cells" in arrays:  # written sparse: dense, blocks or sparse here
                for k in ("pair_count", "pair_feat"):
                    scatter_add(self.get(p + k), tuple(arrays[p + k + "_cells"].T), arrays[p + k + "_counts"])
            elif pairs:
                _put_region(self.get(p + "pair_count"), arrays[p + "pair_count"])
                _put_region(self.get(p + "pair_feat"), arrays[p + "pair_feat"])
            if t and p + "tuple_count_cells" in arrays:  # written sparse: dense or sparse here
                for k in ("tuple_count", "tuple_feat"):
                    scatter_add(self.get(p + k), tuple(arrays[p + k + "_cells"].T), arrays[p + k + "_counts"])
            elif t:
                _put_region(self.get(p + "tuple_count"), arrays[p + "tuple_count"])
                _put_region(self.get(p + "tuple_feat"), arrays[p + "tuple_feat"])

    def merge(self, other: CountTables, maps: tuple, used: tuple, pairs: bool, tuples: int) -> None:
        """Add ``other``'s counts into these, its classes, value columns and features mapped by ``maps`` =
        (cmap, vmap, fmap) to these tables' (column 0, no value, maps to none), ``used`` = (classes, value
        columns, features) in use there. Each count set here takes the other's twin when it keeps one (and
        here it is the twin, or there is none), else its counts: a store without a twin holds observed
        values only. Cells are added from and to any layout; dense into dense by their regions."""
        cmap, vmap, fmap = maps
        C, V, F = used
        for p in self.sets():
            q = "obs_" if other.observed and (p or not self.observed) else ""
            self.get(p + "value_count")[np.ix_(cmap, vmap[1:])] += other.get(q + "value_count")[:C, 1:V]
            self.get(p + "feat_count")[np.ix_(cmap, fmap)] += other.get(q + "feat_count")[:C, :F]
            if pairs and (self.pairs_sparse or other.pairs_sparse or self.pairs_blocks or other.pairs_blocks):
                # the cells held, mapped (as the t-way ones; into blocks, the pair counts alone)
                for k, kmaps, dims in (("pair_count", (cmap, vmap, vmap), (C, V, V)),
                                       ("pair_feat", (cmap, vmap, fmap), (C, V, F))):
                    idx, vals = cells_of(other.get(q + k), dims)
                    scatter_add(self.get(p + k), tuple(m[i] for m, i in zip(kmaps, idx)), vals)
            elif pairs:
                self.get(p + "pair_count")[np.ix_(cmap, vmap[1:], vmap[1:])] += other.get(q + "pair_count")[:C, 1:V, 1:V]
                self.get(p + "pair_feat")[np.ix_(cmap, vmap[1:], fmap)] += other.get(q + "pair_feat")[:C, 1:V, :F]
            t = tuples
            if t and (self.tuples_sparse or other.tuples_sparse):
                for k, kmaps, dims in (("tuple_count", [cmap] + [vmap] * t, (C,) + (V,) * t),
                                       ("tuple_feat", [cmap] + [vmap] * (t - 1) + [fmap], (C,) + (V,) * (t - 1) + (F,))):
                    idx, vals = cells_of(other.get(q + k), dims)
                    scatter_add(self.get(p + k), tuple(m[i] for m, i in zip(kmaps, idx)), vals)
            elif t:
                vv = vmap[1:]
                self.get(p + "tuple_count")[np.ix_(cmap, *([vv] * t))] += other.get(q + "tuple_count")[
                    (slice(0, C),) + (slice(1, V),) * t]
                self.get(p + "tuple_feat")[np.ix_(cmap, *([vv] * (t - 1)), fmap)] += other.get(q + "tuple_feat")[
                    (slice(0, C),) + (slice(1, V),) * (t - 1) + (slice(0, F),)]


def _indexed(table: SparseTable, pairs: bool) -> SparseTable:
    """``table``, with the index of its rows (:meth:`SparseTable.index_rows`) if it is a pair table (the loops
    that add pairs keep it; those that add t-way cells do not)."""
    if pairs:
        table.index_rows()
    return table


def selected_room(t: int, lists: np.ndarray, dfeats: np.ndarray) -> int:
    """The most cells one event of features ``dfeats`` adds to a selected t-way table: Σ m_f^(t-1) over its
    features, m_f the candidate parents of f (``lists[f]``, -1 padded)."""
    have = dfeats[(dfeats >= 0) & (dfeats < len(lists))]
    return int(((lists[have] >= 0).sum(1).astype(np.int64) ** (t - 1)).sum())


def _put_region(table, counts: np.ndarray) -> None:
    """Dense ``counts`` into the empty region of ``table`` they cover: copied into a dense table, their cells
    added to a sparse table or pair blocks (a state written dense read where the budget keeps them sparse)."""
    if isinstance(table, np.ndarray):
        table[tuple(slice(0, d) for d in counts.shape)] = counts
    else:
        idx = np.nonzero(counts)
        scatter_add(table, idx, counts[idx])


def _count_sparse_tuples(tuple_count, tuple_feat, t: int, cols: np.ndarray, feats: np.ndarray, c: int, w: float) -> None:
    """The t-tuples of one event's values (and of its values with a feature last) into sparse tables."""
    for part in row_chunks(len(cols), len(cols) ** (t - 1)):  # by first value, within the working set
        grid = np.ix_(cols[part], *([cols] * (t - 1)))
        tuple_count.add((c, *grid), w)
        tuple_feat.add((c, *grid[:-1], feats.reshape(grid[-1].shape)), w)


def _add_tuples_sparse(tables: tuple, t: int, D: np.ndarray, dfeats: np.ndarray, yc: np.ndarray, w: np.ndarray,
                       mask: np.ndarray) -> None:
    """Add the t-tuples of a batch of encoded rows to sparse ``tables`` (the t-way counts and their twin
    with a feature last).

    The tuples of positions that hold one value in every row (EM's completions of one event
    differ only where it was missing) are added once, with the rows' total weight; the
    others row by row, in chunks.
    """
    if not len(D):
        return
    one_class = bool((yc == yc[0]).all())
    const = one_class & (D == D[0]).all(0) & (D[0] >= 0)  # observed, and the same in every row
    everywhere = one_class & mask.all(0)  # observed in every row (the feature axis needs no more)
    k = D.shape[1]
    for part in row_chunks(k, k ** (t - 1)):  # the tuples by their first position, within the working set
        grid = np.indices((part.stop - part.start,) + (k,) * (t - 1)).reshape(t, -1)  # t-tuples of positions
        grid[0] += part.start
        done = []
        for table, fixed in zip(tables, (const[grid].all(0), const[grid[:-1]].all(0) & everywhere[grid[-1]])):
            g = grid[:, fixed]
            if len(g[0]):
                last = D[0, g[-1]] if table is tables[0] else dfeats[g[-1]]
                table.add((yc[0], *(D[0, g[a]] for a in range(t - 1)), last), float(w.sum()))
            done.append(fixed)
        for table, fixed in zip(tables, done):
            g = grid[:, ~fixed]
            for rows in row_chunks(len(D), len(g[0]), most=64):
                Dm, ok = D[rows], np.logical_and.reduce([mask[rows][:, a] for a in g])
                r, j = np.nonzero(ok)
                last = Dm[r, g[-1][j]] if table is tables[0] else dfeats[g[-1][j]]
                table.add((yc[rows][r], *(Dm[r, g[a][j]] for a in range(t - 1)), last), w[rows][r])
