"""The memory budget of a store: dense count tables while they fit, sparse beyond.

Every count array of a :class:`~stream_nb.stats.Stats` is dense (numpy,
allocated with spare room) while the whole store fits in ``memory_budget``
bytes. The pair tables of AODE, SPODE and TAN grow as C·V² and the t-way
tables of KDB as C·V^t: when dense ones would take the store past its budget
they turn sparse (:class:`~stream_nb.stats.SparseTable`: only the cells that
occur, in a hash table held in numpy arrays), from then on for good, holding
exactly the same counts (one rule for both families, :meth:`Budget.dense_fits`;
the pairs are decided first). A budget of ``None`` keeps every table dense.
When the next event could take the sparse pair tables past the budget (or
:data:`SPARSE_FLOOR`), learning is refused with a
:class:`~stream_nb.exceptions.CapacityError` that says what to set, before
anything changes: the cells that occur do not fit either. The observed-only twin (EM) is counted in when it is wanted,
before it exists, so that the choice does not flip when EM starts.

The store holds one :class:`Budget` (``store.budget``) and asks it these
questions, passing the arrays and shapes it asks about: the budget reads none
of the store's attributes. :meth:`Budget.memory_used` says what the counts
take: cells and bytes, of the whole store and of its t-way tables.
"""

from __future__ import annotations

import numpy as np

from ...exceptions import CapacityError
from ..tables import PairBlocks, PairFeat, SparseTable, scatter_add  # (scatter_add: read here as before)

__all__ = ["Budget", "DEFAULT_MEMORY_BUDGET", "PAIR_TABLES", "SPARSE_FLOOR", "TUPLE_TABLES", "scatter_add"]

#: Bytes a model's counts may take by default: 256 MiB, room for a small container.
DEFAULT_MEMORY_BUDGET = 256 * 1024 * 1024

#: Bytes the sparse tables may always take, whatever the budget: a budget below it (0 included)
#: only says "sparse from the start", as the tests and small examples use it.
SPARSE_FLOOR = 64 * 1024 * 1024

#: The two families of tables that turn sparse: each a table of C·V^t cells and its twin with a feature last.
TUPLE_TABLES = ("tuple_count", "tuple_feat")
PAIR_TABLES = ("pair_count", "pair_feat")


class Budget:
    """How many bytes a store's counts may take, and what fits in them.

    Parameters
    ----------
    limit
        Bytes the counts may take while dense (the store's ``memory_budget``); None: no bound,
        every table stays dense.

    The store passes what it asks about: its arrays by name (``{"class_count": array, ...}``,
    an observed-only twin's under ``"obs_"`` and its name, dense or sparse), and the shapes of
    the tables it would allocate.

    Examples
    --------
    >>> budget = Budget(1_000)
    >>> budget.dense_bytes(2, 2, 5, 3)  # C·V² + C·V·F cells of 8 bytes: 2·25 + 2·5·3
    640
    >>> budget.dense_fits(2, 2, 5, 3, held=300), budget.dense_fits(2, 2, 5, 3, held=400)
    (True, False)
    >>> budget.memory_used({"class_count": np.zeros(4)})["bytes"]
    32
    """

    def __init__(self, limit: int | None):
        self.limit = limit

    @staticmethod
    def dense_bytes(t: int, cc: int, cv: int, cf: int, copies: int = 1) -> int:
        """Bytes of ``copies`` dense tables of a family with room for ``cc`` classes, ``cv`` values and ``cf``
        features: C·V^t cells, and C·V^(t-1)·F with a feature last."""
        return 8 * copies * (cc * cv**t + cc * cv ** (t - 1) * cf)

    def dense_fits(self, t: int, cc: int, cv: int, cf: int, held: int, copies: int = 1) -> bool:
        """Whether :meth:`dense_bytes` fit beside the ``held`` bytes of the store's other arrays."""
        return self.limit is None or self.dense_bytes(t, cc, cv, cf, copies) <= self.limit - held

    @staticmethod
    def held(arrays: dict, skip=(), twin: bool = False) -> int:
        """Bytes of the ``arrays`` whose names (an observed-only twin's without its ``obs_``) are not in
        ``skip``; with ``twin`` (EM will want an observed-only twin it does not hold yet) also what that
        twin of the class-conditional counts and the pair tables will take."""
        held = sum(v.nbytes for k, v in arrays.items() if k.removeprefix("obs_") not in skip)
        if twin:
            held += sum(arrays[k].nbytes for k in ("value_count", "feat_count") + PAIR_TABLES
                        if k in arrays and k not in skip)
        return held

    def sparse_limit(self) -> int:
        """Bytes the sparse pair tables may take: the limit, or :data:`SPARSE_FLOOR` if larger."""
        return max(self.limit, SPARSE_FLOOR)

    def pair_limit(self, halves: int = 0) -> int:
        """:meth:`sparse_limit`, halved ``halves`` times (a share of it: the two layers of a store that
        drops pairs, the t-way tables of candidate parents, see ``_tuple_candidates.py``)."""
        limit = self.sparse_limit()
        for _ in range(halves):
            limit //= 2
        return limit

    def event_fits(self, tables: dict, one: int, k: int, limit: int) -> bool:
        """Whether the sparse pair ``tables`` (by name) stay within ``limit`` bytes if one event of ``k``
        values adds ``one`` distinct cells to each (all new, the tables doubled to hold them). A
        :class:`~stream_nb.exceptions.CapacityError` when one event alone could not fit."""
        if 16 * one > limit:
            raise CapacityError(
                f"memory_budget: one event of {k:,} values adds {one:,} distinct cells to each of {_names(tables)}, "
                f"more than {limit:,} bytes hold at 16 bytes a cell (memory_budget={self.limit:,}, "
                f"with sparse tables always allowed {SPARSE_FLOOR:,}); "
                f"set memory_budget to at least {32 * one * len(tables):,} (or None), or learn fewer features"
            )
        return sum(table.nbytes_after(one) for table in tables.values()) <= limit

    def refusal(self, tables: dict, one: int, store_bytes: int) -> CapacityError:
        """The error for sparse pair ``tables`` that cannot take the next event (``one`` new cells each)
        even when pairs are dropped; ``store_bytes``: what the store's arrays take besides."""
        held = sum(v.nbytes for v in tables.values())
        after = sum(table.nbytes_after(one) for table in tables.values())
        cells = sum(len(v) for v in tables.values())
        whole = held + store_bytes
        return CapacityError(
            f"memory_budget: the counts need more than memory_budget={self.limit:,} bytes: even "
            f"sparse, {_names(tables)} hold {cells:,} cells in {held:,} bytes (the whole store {whole:,}), and the "
            f"next event could grow them to {after:,}; set memory_budget higher (at least "
            f"{2 * (after + whole - held):,} to go on a while, or None for no bound), or learn fewer "
            f"features or values (NaiveBayes keeps no pairs)"
        )

    def memory_used(self, arrays: dict) -> dict:
        """What the ``arrays`` (by name) take: ``cells`` and ``bytes`` of them all (dense cells count
        whole, with their spare room; a sparse table counts the cells it holds), ``table_cells`` and
        ``table_bytes`` of the t-way tables alone, ``sparse`` (whether they are sparse),
        ``pair_cells``, ``pair_bytes`` and ``pairs_sparse`` the same of the pair tables (pair blocks count
        every cell they hold, ``pairs_blocks`` says they are blocks), and
        ``budget`` (the limit)."""
        cells = nbytes = 0
        part = {TUPLE_TABLES: [0, 0], PAIR_TABLES: [0, 0]}
        for k, v in arrays.items():
            n = len(v) if isinstance(v, SparseTable) else v.cells.size + v.diag.size if isinstance(v, PairBlocks) else v.size
            cells, nbytes = cells + n, nbytes + v.nbytes
            for family, sums in part.items():
                if k.removeprefix("obs_") in family:
                    sums[0], sums[1] = sums[0] + n, sums[1] + v.nbytes
        (t_cells, t_bytes), (p_cells, p_bytes) = part[TUPLE_TABLES], part[PAIR_TABLES]
        return {"cells": int(cells), "bytes": int(nbytes), "table_cells": int(t_cells), "table_bytes": int(t_bytes),
                "sparse": isinstance(arrays.get(TUPLE_TABLES[0]), SparseTable), "pair_cells": int(p_cells),
                "pair_bytes": int(p_bytes), "pairs_sparse": isinstance(arrays.get(PAIR_TABLES[0]), SparseTable),
                "pairs_blocks": isinstance(arrays.get(PAIR_TABLES[0]), PairBlocks),
                "budget": self.limit}


def _names(tables: dict) -> str:
    """The tables' names, an observed-only twin's as its own."""
    return ", ".join(sorted({name.removeprefix("obs_") for name in tables}))
