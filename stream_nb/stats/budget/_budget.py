"""The memory budget of a store: dense count tables while they fit, sparse beyond.

Every count array of a :class:`~stream_nb.stats.Stats` is dense (numpy,
allocated with spare room) while the whole store fits in ``memory_budget``
bytes. The pair tables of AODE, SPODE and TAN grow as C·V² and the t-way
tables of KDB as C·V^t: when dense ones would take the store past its budget
they turn sparse (:class:`~stream_nb.stats.SparseTable`: only the cells that
occur, in a hash table held in numpy arrays), from then on for good, holding
exactly the same counts (one rule for both families, :meth:`Budget._go_sparse`;
the pairs are decided first). A budget of ``None`` keeps every table dense.
When the next event could take the sparse pair tables past the budget (or
:data:`SPARSE_FLOOR`), learning is refused with a
:class:`~stream_nb.exceptions.CapacityError` that says what to set, before
anything changes: the cells that occur do not fit either. The observed-only twin (EM) is counted in when it is wanted,
before it exists, so that the choice does not flip when EM starts.

:meth:`Budget.memory_used` says what the counts take: cells and bytes, of the
whole store and of its t-way tables.
"""

from __future__ import annotations

import numpy as np

from ...exceptions import CapacityError
from ..selection import prune_pairs, revise_pairs, selected_cells
from ..tables import SparseTable, cells_of, chunks_of
from ..tables import row_chunks

__all__ = ["Budget", "DEFAULT_MEMORY_BUDGET", "SPARSE_FLOOR", "scatter_add"]

#: Bytes a model's counts may take by default: 256 MiB, room for a small container.
DEFAULT_MEMORY_BUDGET = 256 * 1024 * 1024

#: Bytes the sparse tables may always take, whatever the budget: a budget below it (0 included)
#: only says "sparse from the start", as the tests and small examples use it.
SPARSE_FLOOR = 64 * 1024 * 1024

_TUPLES = ("tuple_count", "tuple_feat")
_PAIRS = ("pair_count", "pair_feat")
_PAIR_ATTRIBUTES = tuple(p + name for p in ("", "obs_") for name in _PAIRS)  # the tables, and their observed-only twins


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
        """Every count array held, by name (the observed-only twin's too, and the Gaussian moments)."""
        arrays = {k: v for k, v in vars(self).items() if isinstance(v, (np.ndarray, SparseTable))}
        return arrays | {"g_n": self.g_n, "g_mean": self.g_mean, "g_m2": self.g_m2}

    @property
    def pairs_sparse(self) -> bool:
        """Whether the pair tables are kept sparse (they are once dense ones would pass the budget)."""
        return isinstance(getattr(self, "pair_count", None), SparseTable)

    def _base_bytes(self, family: tuple = _TUPLES) -> int:
        """Bytes of the arrays other than the tables of ``family`` (and of the t-way tables when it is
        the pairs'), and of their twin if EM will want one."""
        skip = set(family) | (set(_TUPLES) if family == _PAIRS else set())
        held = sum(v.nbytes for k, v in self._arrays().items() if k.removeprefix("obs_") not in skip)
        if self.wants_observed and not self.keeps_observed:
            held += sum(getattr(self, k).nbytes for k in ("value_count", "feat_count") + _PAIRS
                        if hasattr(self, k) and k not in skip)
        return held

    def _sparse_pairs(self, cc: int, cv: int, cf: int) -> bool:
        """Make the pair tables sparse with room for ``cc`` classes, ``cv`` values and ``cf``
        features if they are sparse already or dense ones that large would pass the budget (False,
        and nothing done, when they stay dense): AODE, SPODE and TAN on wide data."""
        return self._go_sparse(_PAIRS, 2, cc, cv, cf)

    def _sparse_tuples(self, cc: int, cv: int, cf: int) -> bool:
        """The same for KDB's t-way tables (C·V^t cells, and C·V^(t-1)·F with a feature last)."""
        return self._go_sparse(_TUPLES, self.tuples, cc, cv, cf)

    def _dense_fits(self, family: tuple, t: int, cc: int, cv: int, cf: int) -> bool:
        """Whether dense tables of ``family`` with room for ``cc`` classes, ``cv`` values and ``cf``
        features (and their twin, if EM will want one) keep the store within its budget."""
        copies = 2 if self.wants_observed else 1
        dense = 8 * copies * (cc * cv**t + cc * cv ** (t - 1) * cf)
        return self.memory_budget is None or dense <= self.memory_budget - self._base_bytes(family)

    def _go_sparse(self, family: tuple, t: int, cc: int, cv: int, cf: int) -> bool:
        """One rule for both families of tables: the t-way table ``family[0]`` (C·V^t cells) and its
        twin with a feature last ``family[1]`` (C·V^(t-1)·F) go sparse, both, when dense ones would
        take the store past ``memory_budget``; from then on for good, with the same counts."""
        if not isinstance(getattr(self, family[0], None), SparseTable) and self._dense_fits(family, t, cc, cv, cf):
            return False
        # capacity grows by doubling with the other arrays' and a sparse table's keys are renumbered
        # (every cell rehashed) when it grows: it is given room for 16 times as many values and
        # features, or 4, while its keys (62 bits) allow
        cc, cv, cf = (max(a, b) for a, b in zip((cc, cv, cf), self._cap[:3]))
        held = getattr(self, family[0], None)
        if isinstance(held, SparseTable) and cc <= held.shape[0] and cv <= held.shape[1] and cf <= held.shape[-1]:
            return True
        for room in (16, 4, 1):
            if (cc * room) * (cv * room) ** t < 1 << 62 and (cc * room) * (cv * room) ** (t - 1) * cf * room < 1 << 62:
                cc, cv, cf = cc * room, cv * room, cf * room
                break
        C, V, F = len(self.classes), len(self.value_keys), len(self.features)
        if family == _PAIRS and held is not None and not isinstance(held, SparseTable) and self.pair_rule is not None:
            # dense tables whose cells, sparse, would pass the budget: the pairs are chosen first (as the next
            # event would choose them), so that only the kept cells move over
            cells = sum(int(np.count_nonzero(getattr(self, p + k)[tuple(slice(0, d) for d in dims)]))
                        for p in self._sets() for k, dims in ((_PAIRS[0], (C, V, V)), (_PAIRS[1], (C, V, F))))
            if 32 * cells > self.pair_limit():
                prune_pairs(self, self.pair_limit())
        shapes = {family[0]: (cc,) + (cv,) * t, family[1]: (cc,) + (cv,) * (t - 1) + (cf,)}
        used = {family[0]: (C,) + (V,) * t, family[1]: (C,) + (V,) * (t - 1) + (F,)}
        for p in self._sets():
            for k, shape in shapes.items():
                old = getattr(self, p + k, None)
                if isinstance(old, SparseTable):
                    if old.shape != shape:
                        setattr(self, p + k, old.reshaped(shape))
                    continue
                if old is not None and family == _PAIRS:  # dense until now: its cells move over, a slice at a time
                    region = old[tuple(slice(0, d) for d in used[k])]
                    new = SparseTable(shape, slots=2 * max(int(np.count_nonzero(region)), 1))
                    del region
                    for idx, vals in chunks_of(old, used[k]):
                        new.add(idx, vals)
                    setattr(self, p + k, new)
                    continue
                new = SparseTable(shape)
                if old is not None:  # dense until now: its cells move over
                    idx, vals = cells_of(old, used[k])
                    if len(vals) and not (family == _TUPLES and self.tuples_wait(len(vals))):
                        new.add(idx, vals)
                setattr(self, p + k, new)
        if family == _TUPLES:
            self.settle_tuples()
        return True

    def sparse_limit(self) -> int:
        """Bytes the sparse pair tables may take: ``memory_budget``, or :data:`SPARSE_FLOOR` if larger."""
        return max(self.memory_budget, SPARSE_FLOOR)

    def pair_limit(self) -> int:
        """Bytes the sparse pair tables of this layer may take: :meth:`sparse_limit`, halved between the two
        layers of a two-layer store that drops pairs, and again when the t-way tables of candidate parents
        take the other half (_tuple_candidates.py)."""
        limit = max(self.memory_budget, SPARSE_FLOOR)
        if self.pair_rule is not None and self.selection_peer is not None:
            limit //= 2
        if self.tuple_rule:
            limit //= 2
        return limit

    def _check_sparse_room(self, k: int) -> None:
        """Refuse to learn more (CapacityError, before anything changes) when one event of ``k``
        observed values could take the sparse pair tables past ``memory_budget`` (or
        :data:`SPARSE_FLOOR`, if larger): if all its cells were new, or the tables had to grow
        (double) to hold them. A vectorised run is checked as one event before it is added."""
        self.refresh_selection()
        if self.memory_budget is None:
            return
        while not self._sparse_room(k):  # a model with a pair rule drops pairs rather than refuse
            pass
        if revise_pairs(self, self.pair_limit()):  # and revises its choice as the events come (_revision.py)
            while not self._sparse_room(k):
                pass
        self.refresh_tuple_selection()
        while not self._tuple_room(k):  # KDB drops candidate parents rather than outgrow the budget
            pass

    def _sparse_room(self, k: int) -> bool:
        """:meth:`_check_sparse_room` once: True when the next event fits, False when pairs were just
        dropped to make room (see :mod:`stream_nb.stats.selection._candidates`); CapacityError when neither."""
        # the pair tables only: KDB's sparse t-way tables are not bounded here (river's checks learn
        # ImageSegments with KDB's defaults, whose 3-way cells alone pass 256 MiB). Dense ones (the usual
        # store) have nothing to check: said without listing the arrays, as every event learned asks
        for name in _PAIR_ATTRIBUTES:
            if isinstance(getattr(self, name, None), SparseTable):
                break
        else:
            return True
        sparse = {name: a for name, a in self._arrays().items()
                  if isinstance(a, SparseTable) and name.removeprefix("obs_") in _PAIRS}
        if not sparse:
            return True
        limit = self.pair_limit()
        held = sum(v.nbytes for v in sparse.values())
        names = ", ".join(sorted({name.removeprefix("obs_") for name in sparse}))
        one = selected_cells(self, k)  # the distinct cells one event can add to each pair table
        if 16 * one > limit:
            raise CapacityError(
                f"memory_budget: one event of {k:,} values adds {one:,} distinct cells to each of {names}, "
                f"more than {limit:,} bytes hold at 16 bytes a cell (memory_budget={self.memory_budget:,}, "
                f"with sparse tables always allowed {SPARSE_FLOOR:,}); "
                f"set memory_budget to at least {32 * one * len(sparse):,} (or None), or learn fewer features"

            )
        after = sum(table.nbytes_after(one) for table in sparse.values())  # what they could take with the event
        if after <= limit:
            return True
        if prune_pairs(self, limit):
            return False
        cells = sum(len(v) for v in sparse.values())
        whole = held + self._base_bytes(())
        raise CapacityError(
            f"memory_budget: the counts need more than memory_budget={self.memory_budget:,} bytes: even "
            f"sparse, {names} hold {cells:,} cells in {held:,} bytes (the whole store {whole:,}), and the "
            f"next event could grow them to {after:,}; set memory_budget higher (at least "
            f"{2 * (after + whole - held):,} to go on a while, or None for no bound), or learn fewer "
            f"features or values (NaiveBayes keeps no pairs)"
        )

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
        and ``table_bytes`` of the t-way tables alone, ``sparse`` (whether they are sparse),
        ``pair_cells``, ``pair_bytes`` and ``pairs_sparse`` the same of the pair tables, and
        ``budget`` (``memory_budget``)."""
        cells = nbytes = 0
        part = {_TUPLES: [0, 0], _PAIRS: [0, 0]}
        for k, v in self._arrays().items():
            n = len(v) if isinstance(v, SparseTable) else v.size
            cells, nbytes = cells + n, nbytes + v.nbytes
            for family, sums in part.items():
                if k.removeprefix("obs_") in family:
                    sums[0], sums[1] = sums[0] + n, sums[1] + v.nbytes
        (t_cells, t_bytes), (p_cells, p_bytes) = part[_TUPLES], part[_PAIRS]
        return {"cells": int(cells), "bytes": int(nbytes), "table_cells": int(t_cells), "table_bytes": int(t_bytes),
                "sparse": self.tuples_sparse, "pair_cells": int(p_cells), "pair_bytes": int(p_bytes),
                "pairs_sparse": self.pairs_sparse, "budget": self.memory_budget,
                "pairs_selected": self.selection_summary(), "tuples_selected": self.tuple_summary()}
