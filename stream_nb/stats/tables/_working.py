"""The working memory of one batch: index arrays of at most :data:`WORKING_CELLS` entries.

Adding a batch of events to pair (or t-tuple) counts builds, per row, an index
of every cell the row touches: F² pairs, F^t tuples. Over a whole batch of wide
events that is rows x F² entries (200 rows of 1,000 attributes: 1.5 GiB of int64
indices), far more than the counts themselves. :func:`row_chunks` splits the
rows so that each piece's index arrays hold at most :data:`WORKING_CELLS`
entries (a piece holds one row at least). The pieces are added in row order,
so the counts are exactly those of the whole batch (and of the one-event path).
"""

from __future__ import annotations

__all__ = ["WORKING_CELLS", "row_chunks"]

#: Most entries in one index array built for one piece of a batch (2^22 int64: 32 MiB).
WORKING_CELLS = 1 << 22


def row_chunks(rows: int, per_row: int, most: int | None = None):
    """Slices of ``range(rows)`` in order, each of at most ``WORKING_CELLS // per_row`` rows (and ``most``),
    one at least.

    >>> list(row_chunks(5, WORKING_CELLS // 2))
    [slice(0, 2, None), slice(2, 4, None), slice(4, 5, None)]
    """
    step = max(1, min(most or rows or 1, WORKING_CELLS // max(1, per_row)))
    return [slice(lo, min(rows, lo + step)) for lo in range(0, rows, step)]
