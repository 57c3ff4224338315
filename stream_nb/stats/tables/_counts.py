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
"""

from __future__ import annotations

import numpy as np

from ..values import TWINNED
from ._pair_blocks import PairBlocks, PairFeat
from ._sparse import SparseTable, cells_of

__all__ = ["BASE_TABLES", "COUNT_TABLES", "CountTables", "scatter_add"]

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

    def grow_dense(self, family: tuple, shapes: tuple, used: tuple) -> None:
        """Dense tables of ``family`` (the pair or the t-way names: the table, then its twin with a feature
        last) of ``shapes``, in every count set, each with the cells of the region ``used`` (one shape
        per name) of the dense table it replaces, if any."""
        for p in self.sets():
            for k, shape, dims in zip(family, shapes, used):
                new = np.zeros(shape)
                old = self.get(p + k)
                if old is not None:
                    part = tuple(slice(0, d) for d in dims)
                    new[part] = old[part]
                self.replace(p + k, new)

    def replace(self, name: str, table) -> None:
        """Hold ``table`` under ``name`` (one of :data:`COUNT_TABLES`), in place of the one held."""
        if name not in COUNT_TABLES:
            raise KeyError(f"no count table is named {name!r}")
        setattr(self.held, name, table)
        if name == "pair_count":
            self.pairs_sparse, self.pairs_blocks = isinstance(table, SparseTable), isinstance(table, PairBlocks)
        elif name == "tuple_count":
            self.tuples_sparse = isinstance(table, SparseTable)

    def drop(self, name: str) -> None:
        """Hold no table under ``name`` (nothing if none is held)."""
        vars(self.held).pop(name, None)
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


def _put_region(table, counts: np.ndarray) -> None:
    """Dense ``counts`` into the empty region of ``table`` they cover: copied into a dense table, their cells
    added to a sparse table or pair blocks (a state written dense read where the budget keeps them sparse)."""
    if isinstance(table, np.ndarray):
        table[tuple(slice(0, d) for d in counts.shape)] = counts
    else:
        idx = np.nonzero(counts)
        scatter_add(table, idx, counts[idx])
