"""A matrix of integer values encoded at once (:meth:`RunEncoder._matrix_codes
<stream_nb.stats.schema.RunEncoder>`, a DataFrame's columns or a window of dicts of ints): each column's range,
then each value's entry in its column's row of one table, written where the run's columns go. Two passes
over the matrix, where numpy takes four (its least and greatest values, an add, a gather) and a copy.

The matrix comes as it is: a row-major window of dicts, a DataFrame's column-major block, or a slice of
either (:func:`warm` compiles the three layouts).
"""

from __future__ import annotations

import numpy as np

__all__ = ["column_ranges", "gather_codes", "warm"]


def column_ranges(A, lo, hi):
    """``lo[j]``, ``hi[j]``: the least and the greatest value of column ``j`` of ``A`` (rows >= 1), numpy's
    ``A.min(axis=0)`` and ``A.max(axis=0)``."""
    for j in range(A.shape[1]):
        a = A[0, j]
        b = a
        for i in range(1, A.shape[0]):
            v = A[i, j]
            if v < a:
                a = v
            elif v > b:
                b = v
        lo[j] = a
        hi[j] = b


def gather_codes(A, flat, offset, out):
    """``out[i, j] = flat[A[i, j] + offset[j]]``: each value's entry in its column's row of the table ``flat``
    (``offset[j]``: where column ``j``'s row starts, less its least value), numpy's ``flat[A + offset]``.
    Every ``A[i, j] + offset[j]`` must fall in ``flat`` (the table spans each column's range): not checked."""
    for j in range(A.shape[1]):
        o = offset[j]
        for i in range(A.shape[0]):
            out[i, j] = flat[A[i, j] + o]


def warm(k) -> None:
    """Compile the kernels for the layouts the run encoder passes: row-major, column-major, and a slice."""
    block = np.arange(12, dtype=np.int64).reshape(3, 4)
    lo, hi = np.empty(2, dtype=np.int64), np.empty(2, dtype=np.int64)
    flat, offset = np.zeros(12, dtype=np.int64), np.zeros(2, dtype=np.int64)
    for A in (block[:, :2].copy(), np.asfortranarray(block[:, :2]), block[:, ::2]):
        k.column_ranges(A, lo, hi)
        k.gather_codes(A, flat, offset, np.empty((3, 2), dtype=np.int64))
