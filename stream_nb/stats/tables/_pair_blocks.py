"""Pair counts held pair by pair: each attribute pair's own cells, not the value axis squared.

The dense pair table ``pair_count[c, u, v]`` numbers the value columns of all
features together (V of them) on both value axes: C·V² cells, each pair of
attributes twice (both orientations) and the cells of two values of one
attribute, which no event counts. On 600 attributes of 6 values and 4 classes
that is 415 MB, and its twin ``pair_feat[c, u, g]`` (C·V·F: the events with
value u and feature g observed) 69 MB more. :class:`PairBlocks` holds each
unordered pair of attributes f < g once, a block of n_f × n_g × C cells (n_f:
the values of f), and each column's own count (the diagonal) beside:
C·(Σ_{f<g} n_f n_g + V + 1) cells with the store's column 0, 207 MB there
(:meth:`PairBlocks.bytes_for`).
``pair_feat`` is no table of its own: the cell (c, u, g) is the sum of the n_g
cells of u's row in the block {f, g}, exact with missing values too
(:meth:`PairBlocks.feat`).

Layout: the row of attribute f is an array (n_f, S_f, C) with S_f = Σ_{g>f} n_g,
value a of f and value b of g at column P[g] - P[f+1] + b (P: the prefix sums of
the n), the class last (contiguous, as the kernels loop over the classes
innermost). Values that appear later grow the layout between additions
(:meth:`PairBlocks.grow`, every cell moved to its new place in compiled code,
:func:`~stream_nb.kernels._pair_blocks.move_blocks`). The blocks hold exactly the
values seen (spare room in every block would multiply the whole: two spare values
of six, 1.8 times); the room to grow is kept at the end of the one buffer that
holds them, as a dynamic array keeps it (``spare`` cells, which the store bounds
by its budget), so that a new value moves the cells within that buffer, never
before their old places, from the last to the first: no second copy of the table.
Only a layout past the buffer takes a new one (the old and the new held together
for that moment).

The table reads like a dense ``pair_count`` (``table[c, u, v]``, both
orientations, 0 for two values of one attribute) and takes the cells a dense
one holds (:meth:`PairBlocks.add`, both orientations given as a dense table is
given them: the block cell takes one of the two), so that the counts of a
symmetric dense table and of the blocks are the same function of the events.
EM's expected pair counts, which fill the two orientations of a pair
differently (each attribute's rows under its own one-dependence model), have
no place in it: one number stands for both.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ...kernels import compiled

__all__ = ["PairBlocks", "PairFeat"]


#: The most cells a buffer of room (``PairBlocks.room``, ``CountTables.room``) takes, 2 GiB of address space
#: (the default budget's is 256 MiB): a large budget never reserves more for one table.
ROOM_MOST = 1 << 28


def room_buffer(cells: int):
    """A zeroed buffer of at most :data:`ROOM_MOST` of ``cells`` (its pages taken as cells are written), or None
    when the system refuses the address space: the table is then made without room, as before."""
    try:
        return np.zeros(min(int(cells), ROOM_MOST))
    except MemoryError:
        return None


def _columns(value_feature: np.ndarray, F: int) -> tuple[np.ndarray, np.ndarray]:
    """Each column's place among its feature's values (in column order; -1 for a column of no feature),
    and the values of each of ``F`` features."""
    vf = np.asarray(value_feature, dtype=np.int64)
    loc = np.full(len(vf), -1, dtype=np.int64)
    held = np.flatnonzero(vf >= 0)
    order = held[np.argsort(vf[held], kind="stable")]
    n = np.bincount(vf[held], minlength=F).astype(np.int64)
    first = np.concatenate(([0], np.cumsum(n)[:-1])) if F else np.zeros(0, dtype=np.int64)
    loc[order] = np.arange(len(order)) - np.repeat(first, n)
    return loc, n


def _layout(n: np.ndarray, C: int) -> tuple[np.ndarray, np.ndarray]:
    """The prefix sums P of the values ``n`` (F + 1) and each row's first cell (F + 1, the last the total)."""
    prefix = np.concatenate(([0], np.cumsum(n))).astype(np.int64)
    after = prefix[-1] - prefix[1:]
    start = np.concatenate(([0], np.cumsum(n * after * C))).astype(np.int64)
    return prefix, start


class PairBlocks:
    """Class-conditional counts of every pair of values of distinct attributes, each attribute pair's block once.

    Parameters
    ----------
    value_feature
        The feature of each value column (-1: a column of no feature, as the store's column 0).
    n_features
        Features numbered (at least one more than the largest in ``value_feature``).
    n_classes
        Classes numbered.
    spare
        Cells of room the buffer keeps beyond the layout, for values that come later (:meth:`grow`).

    Examples
    --------
    >>> t = PairBlocks(np.array([-1, 0, 0, 1, 1, 1]), 2, 2)  # a: columns 1, 2; b: columns 3, 4, 5
    >>> t.add((np.array([1, 1]), np.array([2, 4]), np.array([4, 2])), 1.0)  # class 1, a=2 with b=4, both ways
    >>> float(t[1, 2, 4]), float(t[1, 4, 2]), float(t[1, 1, 2]), t.nbytes  # per class: 2·3 block cells, 6 own counts
    (1.0, 1.0, 0.0, 192)
    >>> t.feat[1, np.array([2, 4]), 1], float(t.feat[1, 4, 0])  # events with the value and feature b observed, or a
    (array([1., 0.]), 1.0)
    """

    __slots__ = ("n_classes", "vf", "loc", "n", "prefix", "start", "buf", "diag", "room")

    def __init__(self, value_feature, n_features: int, n_classes: int, spare: int = 0, room: int = 0):
        self.n_classes = 0
        none = np.zeros(0, dtype=np.int64)
        self.vf, self.loc, self.n = none, none.copy(), none.copy()
        self.prefix, self.start = _layout(self.n, 0)
        self.buf, self.diag, self.room = np.zeros(0), np.zeros((0, 0)), None
        self.grow(value_feature, n_features, n_classes, spare, room)

    @property
    def cells(self) -> np.ndarray:
        """The block cells of the layout (a view of the start of the buffer, which may hold room beyond)."""
        return self.buf[: self.start[-1]]

    @staticmethod
    def bytes_for(n_values, n_classes: int) -> int:
        """Bytes of the blocks and the diagonal (the store's column 0, of no feature, included) for features of
        ``n_values`` values each and ``n_classes`` classes."""
        n = np.asarray(n_values, dtype=np.int64)
        pairs = (int(n.sum()) ** 2 - int((n * n).sum())) // 2
        return 8 * n_classes * (pairs + int(n.sum()) + 1)

    @property
    def nbytes(self) -> int:
        """Bytes of the counts (the blocks, with the room kept to grow, and the diagonal)."""
        return self.buf.nbytes + self.diag.nbytes

    @property
    def shape(self) -> tuple:
        """The shape of the dense table it stands for: (classes, columns, columns)."""
        return (self.n_classes, len(self.vf), len(self.vf))

    def __len__(self) -> int:
        """Cells with a count."""
        return int(np.count_nonzero(self.cells) + np.count_nonzero(self.diag))

    def copy(self) -> PairBlocks:
        out = PairBlocks.__new__(PairBlocks)
        out.__setstate__(self.__getstate__())
        return out

    def __getstate__(self) -> dict:
        """The blocks' arrays, copied, without the buffer of :attr:`room` (a copy's buffer is its own, and
        takes a new one to grow past it)."""
        state = {name: getattr(self, name) for name in self.__slots__ if name != "room"}
        return {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in state.items()}

    def __setstate__(self, state: dict) -> None:
        for name in self.__slots__:
            setattr(self, name, state.get(name))

    # ------------------------------------------------------------------ growth

    def grow(self, value_feature, n_features: int, n_classes: int, spare: int = 0, room: int = 0) -> None:
        """Take the columns, features and classes of the store as they are now (each at least as many as
        before, the columns held keeping their features): every block moves to its place in the larger
        layout, within the buffer when it has room; else into a new buffer with room for ``spare`` cells
        more than the layout.

        ``room``: cells of a zeroed buffer (:attr:`room`) the buffers may take, each new one its start
        (0: none): a buffer grown within it is its start again, longer, the cells moved in place as within one
        buffer, where a new buffer would fault in every page the cells are written to. Its pages that no cell
        reaches take no memory; :attr:`nbytes` counts the buffer the blocks hold, as without it."""
        vf = np.asarray(value_feature, dtype=np.int64)
        old_vf = self.vf
        if len(vf) < len(old_vf) or not np.array_equal(vf[: len(old_vf)], old_vf):
            raise ValueError(f"pair blocks: the value columns must keep their features as they grow; had "
                             f"{len(old_vf)} columns, received {len(vf)} whose first ones differ")
        F, C = max(int(n_features), len(self.n)), max(int(n_classes), self.n_classes)
        if len(vf) and vf.max(initial=-1) >= F:
            raise ValueError(f"pair blocks: a value column of feature {int(vf.max())}, but {F} features")
        if int(spare) < 0:
            raise ValueError(f"pair blocks: spare must be a count of cells (0 or more); received {spare}")
        loc, n = _columns(vf, F)
        if len(vf) == len(old_vf) and F == len(self.n) and C == self.n_classes:
            return
        prefix, start = _layout(n, C)
        size = int(start[-1])
        want = size + int(spare)
        if size <= len(self.buf):
            buf = self.buf
        elif (self.room is not None and want <= len(self.room) and self.buf.base is self.room
              and self.buf.ctypes.data == self.room.ctypes.data):
            buf = self.room[:want]  # (the same start: zero past the old buffer, the cells move in place)
        elif int(room) > want and (held := room_buffer(room)) is not None and len(held) > want:
            self.room = held
            buf = self.room[:want]
        else:
            self.room, buf = None, np.zeros(want)
        diag = np.zeros((C, len(vf)))
        oldC, old_n, old_prefix = self.n_classes, self.n, self.prefix
        diag[:oldC, : len(old_vf)] = self.diag
        if self.start[-1]:
            compiled().move_blocks(self.buf, old_n, old_prefix, self.start, oldC, buf, prefix, start, C)
        self.vf, self.loc, self.n, self.prefix, self.start = vf.copy(), loc, n, prefix, start
        self.buf, self.diag, self.n_classes = buf, diag, C

    # ------------------------------------------------------------------ cells

    def _where(self, u: np.ndarray, v: np.ndarray):
        """For columns ``u``, ``v`` (broadcast): the flat place of their block cell of class 0 (-1 where
        none), and whether the cell is a diagonal one."""
        V = len(self.vf)
        ok = (u >= 0) & (u < V) & (v >= 0) & (v < V)
        uu, vv = np.where(ok, u, 0), np.where(ok, v, 0)
        fu, fv = np.where(ok, self.vf[uu], -1), np.where(ok, self.vf[vv], -1)
        diag = ok & (uu == vv) & (fu >= 0)
        pair = ok & (fu >= 0) & (fv >= 0) & (fu != fv)
        lo_col, hi_col = np.where(fu < fv, uu, vv), np.where(fu < fv, vv, uu)
        f, g = np.where(pair, np.minimum(fu, fv), 0), np.where(pair, np.maximum(fu, fv), 0)
        P = self.prefix
        width = P[-1] - P[f + 1]
        at = self.start[f] + (self.loc[lo_col] * width + P[g] - P[f + 1] + self.loc[hi_col]) * self.n_classes
        return np.where(pair, at, -1), diag, uu, lo_col, hi_col

    def __getitem__(self, idx):
        """Cells as a dense ``pair_count`` gives them: ``idx`` is (classes, columns, columns), the first a
        class index or a slice of classes, the others integers or integer arrays (broadcast together); the
        result is shaped (classes, *broadcast shape), as numpy's advanced indexing of a dense table."""
        lead, u, v = idx[0], *np.broadcast_arrays(*(np.asarray(i, dtype=np.int64) for i in idx[1:]))
        classes = np.arange(self.n_classes)[lead] if isinstance(lead, slice) else np.asarray(lead, dtype=np.int64)
        cls = np.reshape(classes, (-1,) + (1,) * u.ndim)
        at, diag, uu, _, _ = self._where(u, v)
        out = np.where(at >= 0, self.cells[np.maximum(at, 0) + cls] if len(self.cells) else 0.0, 0.0)
        out = np.where(diag, self.diag[cls, uu] if self.diag.size else 0.0, out)
        out = out if isinstance(lead, slice) or np.ndim(lead) else out[0]
        return out[()] if out.ndim == 0 else out

    def add(self, idx, w) -> None:
        """Add ``w`` to the cells ``idx`` (class, column, column) of the dense table it stands for, in order
        (like ``np.add.at``): a block cell takes the additions given in the order of its attributes
        (the other orientation, which a symmetric dense table is given as well, is the same cell), a
        diagonal cell its own; the cells of two values of one attribute, never counted, are none."""
        c, u, v, w = np.broadcast_arrays(*(np.asarray(i, dtype=np.int64) for i in idx), np.asarray(w, dtype=float))
        at, diag, uu, lo_col, _ = self._where(u, v)
        first = (at >= 0) & (lo_col == u)
        np.add.at(self.cells, at[first] + c[first], w[first])
        np.add.at(self.diag, (c[diag], uu[diag]), w[diag])

    def add_dense(self, table: np.ndarray) -> None:
        """Add the nonzero cells of the region (classes, columns, columns) of the layout of a dense pair table
        (of that capacity or more), as :meth:`add` adds them, in one compiled pass
        (:func:`~stream_nb.kernels._pair_blocks.dense_blocks`): each block cell takes its row's first
        attribute's orientation, each column of a feature its own cell."""
        V, C = len(self.vf), self.n_classes
        if table.shape[0] < C or table.shape[1] < V or table.shape[2] < V:
            raise ValueError(f"pair blocks: a dense table of shape {table.shape} does not cover {C} classes and {V} columns")
        compiled().dense_blocks(table, V, self.vf, self.loc, self.prefix, self.start, C, self.cells, self.diag)

    def add_rows(self, D: np.ndarray, dfeats: np.ndarray, yc: np.ndarray, w: np.ndarray) -> None:
        """Add every pair of observed values of each row of ``D`` (value columns of features ``dfeats``; -1
        missing) with class ``yc[r]`` and weight ``w[r]``, and each value's own count, in compiled code
        (:func:`~stream_nb.kernels._pair_blocks.add_block_rows`): what :meth:`add` of every ordered pair of
        each row adds, in the same order."""
        compiled().add_block_rows(np.ascontiguousarray(D, dtype=np.int64), np.asarray(dfeats, dtype=np.int64),
                                  np.asarray(yc, dtype=np.int64), np.asarray(w, dtype=float), self.loc, self.prefix,
                                  self.start, self.n_classes, self.cells, self.diag)

    def arrays(self) -> tuple:
        """``(loc, prefix, start, cells, diag)`` as the compiled kernels read them
        (:mod:`stream_nb.kernels._pair_blocks`): valid until the table grows."""
        return self.loc, self.prefix, self.start, self.cells, self.diag

    def cmi(self, pairs=None) -> np.ndarray:
        """(F, F): I(x_f; x_g | y) of every pair of features from its block, over the events in which both
        were observed (:func:`~stream_nb.kernels._pair_blocks.block_cmi`), as TAN's structure reads it off a
        dense table; with ``pairs`` (two arrays of features), of those pairs only, the other cells 0."""
        out = np.zeros((len(self.n), len(self.n)))
        if pairs is None:
            compiled().block_cmi(self.prefix, self.start, self.n_classes, self.cells, out)
        else:
            fs, gs = (np.ascontiguousarray(x, dtype=np.int64) for x in pairs)
            if len(fs) != len(gs) or ((fs < 0) | (fs >= len(self.n)) | (gs < 0) | (gs >= len(self.n)) | (fs == gs)).any():
                raise ValueError(f"pair blocks: pairs must be two arrays of as many features of 0 to {len(self.n) - 1}, "
                                 f"two distinct ones each; received {len(fs)} and {len(gs)}")
            compiled().block_cmi_pairs(self.prefix, self.start, self.n_classes, self.cells, fs, gs, out)
        return out

    def bayes_gains(self, alpha: float, n_values) -> np.ndarray:
        """(F, F): ``g[j, i]``, the gain in attribute i's local Bayesian-Dirichlet score from x_j as its second
        parent, with a prior of ``alpha`` per cell and ``n_values`` (F,) values of each attribute
        (:func:`~stream_nb.kernels._pair_blocks.block_bayes_gains`), as TAN's ``Tree(score="bayes")`` reads
        it off a dense table."""
        F = len(self.n)
        table = _lgamma_table(float(alpha), int(min(self.diag.sum(), 1 << 16)) + 2)
        va = np.ascontiguousarray(np.asarray(n_values, dtype=float)[:F] * alpha)
        out = np.zeros((F, F))
        compiled().block_bayes_gains(self.prefix, self.start, self.n_classes, self.cells, float(alpha), va, table, out)
        return out

    def cells_held(self) -> tuple[tuple, np.ndarray]:
        """``(index arrays, counts)`` of the nonzero cells of the dense table it stands for (both
        orientations of each block cell, and the diagonal), as ``cells_of`` gives a dense table's:
        what a snapshot writes and a merge adds."""
        C = self.n_classes
        at = np.flatnonzero(self.cells)
        f = np.searchsorted(self.start, at, side="right") - 1
        rel = at - self.start[f]
        c = rel % C
        width = self.prefix[-1] - self.prefix[f + 1]
        a, col = np.divmod(rel // C, width)
        q = col + self.prefix[f + 1]  # the place of the other value in the order by feature
        g = np.searchsorted(self.prefix, q, side="right") - 1
        cols = _columns_by_order(self)
        u, v = cols[self.prefix[f] + a], cols[self.prefix[g] + (q - self.prefix[g])]
        dc, du = np.nonzero(self.diag)
        vals = self.cells[at]
        idx = (np.concatenate((c, c, dc)), np.concatenate((u, v, du)), np.concatenate((v, u, du)))
        return idx, np.concatenate((vals, vals, self.diag[dc, du]))

    def sparse_cells(self, pdims, pshape, fdims, fshape):
        """``((keys, counts), (keys, counts))``: the flat keys, in tables of capacity ``pshape`` and ``fshape``,
        of the nonzero cells within ``pdims`` and ``fdims`` of the ``pair_count`` and the ``pair_feat`` these
        counts stand for, with their counts, as :meth:`cells_held` and :meth:`feat_cells` give them (each
        ``pair_feat`` cell the same sum, in the same order), read in one compiled pass over the blocks
        (:func:`~stream_nb.kernels._pair_blocks.block_cells`): what a store's pair tables turning sparse
        move over. None when a column of no feature holds a count of its own (``feat_cells`` files its
        ``pair_feat`` cell under no feature): numpy's reading then."""
        no_feature = self.vf < 0
        if no_feature.any() and self.diag[:, no_feature].any():
            return None
        held = int(np.count_nonzero(self.cells))
        room = 2 * held + int(np.count_nonzero(self.diag))
        pkeys, fkeys = np.empty(room, dtype=np.int64), np.empty(room, dtype=np.int64)
        pvals, fvals = np.empty(room), np.empty(room)
        n_pair, n_feat = compiled().block_cells(self.prefix, self.start, self.n_classes, self.cells, self.diag,
                                                np.ascontiguousarray(_columns_by_order(self), dtype=np.int64), self.vf,
                                                *(np.array(d, dtype=np.int64) for d in (pdims, pshape, fdims, fshape)),
                                                pkeys, pvals, fkeys, fvals)
        return (pkeys[:n_pair], pvals[:n_pair]), (fkeys[:n_feat], fvals[:n_feat])

    def feat_cells(self) -> tuple[tuple, np.ndarray]:
        """``(index arrays, counts)`` of the nonzero cells of the ``pair_feat`` these counts stand for (cell
        (c, u, g): the events of class c with value u and feature g observed), as ``cells_of`` gives a dense
        table's: each block cell summed into the row of either of its values, a diagonal cell into its own
        feature's."""
        (c, u, v), vals = self.cells_held()
        if not len(vals):
            return (c, u, v), vals
        g = self.vf[v]
        F = max(len(self.n), 1)
        key = (c * len(self.vf) + u) * F + g
        keys, at = np.unique(key, return_inverse=True)
        sums = np.bincount(at, weights=vals, minlength=len(keys))
        cu, gg = np.divmod(keys, F)
        cc, uu = np.divmod(cu, len(self.vf))
        ok = sums != 0
        return (cc[ok], uu[ok], gg[ok]), sums[ok]

    @property
    def feat(self) -> PairFeat:
        """The ``pair_feat`` of these counts: cell (c, u, g) the events of class c with value u and feature
        g observed (the sum of u's row in the block of its feature and g), read like the dense one."""
        return PairFeat(self)


class PairFeat:
    """``pair_feat`` read off :class:`PairBlocks` (see :attr:`PairBlocks.feat`)."""

    __slots__ = ("blocks",)

    def __init__(self, blocks: PairBlocks):
        self.blocks = blocks

    def __getitem__(self, idx):
        t = self.blocks
        lead, u, g = idx[0], *np.broadcast_arrays(*(np.asarray(i, dtype=np.int64) for i in idx[1:]))
        F = len(t.n)
        ok = (g >= 0) & (g < F) & (u >= 0) & (u < len(t.vf))
        gg = np.where(ok, g, 0)
        fu = np.where(ok, t.vf[np.where(ok, u, 0)], -1)
        first, cols = t.prefix[gg], _columns_by_order(t)
        sums = 0.0
        for b in range(int(t.n.max(initial=0))):  # the values of g, each a column of the order by feature
            held = ok & (b < t.n[gg])
            col = np.where(held, cols[np.minimum(first + b, len(t.vf) - 1)], 0)
            sums = sums + np.where(held, t[lead, u, col], 0.0)
        own = t[lead, u, u]  # a value with its own feature: its own count
        out = np.where(ok & (fu == gg), own, sums)
        return out[()] if out.ndim == 0 else out


@functools.lru_cache(maxsize=4)
def _lgamma_table(alpha: float, top: int) -> np.ndarray:
    """lgamma(alpha + n) - lgamma(alpha) for the whole counts n below ``top`` (kept: every rebuild past a few
    hundred events asks for the same one)."""
    return np.array([math.lgamma(alpha + n) for n in range(top)]) - math.lgamma(alpha)


def _columns_by_order(t: PairBlocks) -> np.ndarray:
    """The column of each place in the order of the values by feature (then the columns of no feature)."""
    key = np.where(t.vf >= 0, t.prefix[np.maximum(t.vf, 0)] + t.loc, t.prefix[-1] + np.arange(len(t.vf)))
    return np.argsort(key, kind="stable")
