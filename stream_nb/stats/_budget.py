"""The memory budget of a store: dense count tables while they fit, sparse beyond.

Every count array of a :class:`~stream_nb.stats.Stats` is dense (numpy,
allocated with spare room) while the whole store fits in ``memory_budget``
bytes. The t-way tables of KDB grow as C·V^t: when dense ones would take the
store past its budget they turn sparse (:class:`~stream_nb.stats.SparseTable`:
only the cells that occur, in a hash table held in numpy arrays), from then on
for good, holding exactly the same counts. A budget of ``None`` keeps every
table dense. The observed-only twin (EM) is counted in when it is wanted,
before it exists, so that the choice does not flip when EM starts.

:meth:`Budget.memory_used` says what the counts take: cells and bytes, of the
whole store and of its t-way tables.
"""

from __future__ import annotations

import numpy as np

from ._sparse import SparseTable, cells_of
from ._working import row_chunks

__all__ = ["Budget", "DEFAULT_MEMORY_BUDGET", "scatter_add"]

#: Bytes a model's counts may take by default: 256 MiB, room for a small container.
DEFAULT_MEMORY_BUDGET = 256 * 1024 * 1024

_TUPLES = ("tuple_count", "tuple_feat")


def scatter_add(table, idx: tuple, w) -> None:
    """``np.add.at(table, idx, w)`` for a dense table or a :class:`SparseTable`."""
    if isinstance(table, SparseTable):
        table.add(idx, w)
    else:
        np.add.at(table, idx, w)


class Budget:
    """The memory budget of a :class:`~stream_nb.stats.Stats` (a part of it, not used alone)."""

    @property
    def tuples_sparse(self) -> bool:
        """Whether the t-way tables are kept sparse (they are once dense ones would pass the budget)."""
        return isinstance(getattr(self, "tuple_count", None), SparseTable)

    def _arrays(self) -> dict:
        """Every count array held, by name (the observed-only twin's too)."""
        return {k: v for k, v in vars(self).items() if isinstance(v, (np.ndarray, SparseTable))}

    def _base_bytes(self) -> int:
        """Bytes of the arrays other than the t-way tables, and of their twin if EM will want one."""
        held = sum(v.nbytes for k, v in self._arrays().items() if k.removeprefix("obs_") not in _TUPLES)
        if self.wants_observed and not self.keeps_observed:
            held += sum(getattr(self, k).nbytes for k in ("value_count", "feat_count", "pair_count", "pair_feat")
                        if hasattr(self, k))
        return held

    def _sparse_tuples(self, cc: int, cv: int, cf: int) -> bool:
        """Make the t-way tables sparse with room for ``cc`` classes, ``cv`` values and ``cf``
        features, if they are sparse already or dense ones that large would pass the budget;
        False (and nothing done) when they stay dense."""
        t = self.tuples
        if not self.tuples_sparse:
            copies = 2 if self.wants_observed else 1
            dense = 8 * copies * (cc * cv**t + cc * cv ** (t - 1) * cf)
            if self.memory_budget is None or dense <= self.memory_budget - self._base_bytes():
                return False
        # capacity grows by doubling with the other arrays', so that the keys are rarely renumbered
        cc, cv, cf = (max(a, b) for a, b in zip((cc, cv, cf), self._cap[:3]))
        C, V, F = len(self.classes), len(self.value_keys), len(self.features)
        shapes = {"tuple_count": (cc,) + (cv,) * t, "tuple_feat": (cc,) + (cv,) * (t - 1) + (cf,)}
        used = {"tuple_count": (C,) + (V,) * t, "tuple_feat": (C,) + (V,) * (t - 1) + (F,)}
        for p in self._sets():
            for k, shape in shapes.items():
                old = getattr(self, p + k, None)
                if isinstance(old, SparseTable):
                    if old.shape != shape:
                        setattr(self, p + k, old.reshaped(shape))
                    continue
                new = SparseTable(shape)
                if old is not None:  # dense until now: its cells move over
                    idx, vals = cells_of(old, used[k])
                    if len(vals):
                        new.add(idx, vals)
                setattr(self, p + k, new)
        return True

    def _add_tuples_sparse(self, p: str, D: np.ndarray, dfeats: np.ndarray, yc: np.ndarray, w: np.ndarray,
                           mask: np.ndarray) -> None:
        """Add the t-tuples of a batch of encoded rows (see ``Adding.add_many``) to sparse tables.

        The tuples of positions that hold one value in every row (EM's completions of one event
        differ only where it was missing) are added once, with the rows' total weight; the
        others row by row, in chunks.
        """
        t = self.tuples
        if not len(D):
            return
        tables = (getattr(self, p + "tuple_count"), getattr(self, p + "tuple_feat"))
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

    def memory_used(self) -> dict:
        """What the counts take: ``cells`` and ``bytes`` of every array held (dense cells count
        whole, with their spare room; a sparse table counts the cells it holds), ``table_cells``
        and ``table_bytes`` of the t-way tables alone, ``sparse`` (whether they are sparse) and
        ``budget`` (``memory_budget``)."""
        cells = nbytes = t_cells = t_bytes = 0
        for k, v in self._arrays().items():
            n = len(v) if isinstance(v, SparseTable) else v.size
            cells, nbytes = cells + n, nbytes + v.nbytes
            if k.removeprefix("obs_") in _TUPLES:
                t_cells, t_bytes = t_cells + n, t_bytes + v.nbytes
        return {"cells": int(cells), "bytes": int(nbytes), "table_cells": int(t_cells), "table_bytes": int(t_bytes),
                "sparse": self.tuples_sparse, "budget": self.memory_budget}
