"""Pair counts held pair by pair (:class:`~stream_nb.stats.tables.PairBlocks`), added in compiled loops.

The row of attribute f is an array (n_f, S_f, C), S_f the values of the attributes after f: value a of f
and value b of g > f at column ``prefix[g] - prefix[f + 1] + b``, the class last. ``loc[u]``: the place of
column u among its attribute's values.
"""

from __future__ import annotations

import numpy as np

__all__ = ["add_block_rows", "warm"]


def add_block_rows(D, dfeats, yc, w, loc, prefix, start, C, cells, diag):
    """Add each row of ``D`` (value columns of features ``dfeats``; -1 missing), in row order, with class
    ``yc[r]`` and weight ``w[r]``: every pair of its observed values of two attributes to their block
    cell once, and each observed value to its own count (``diag``)."""
    k = D.shape[1]
    total = prefix[prefix.shape[0] - 1]
    for r in range(D.shape[0]):
        c, wr = yc[r], w[r]
        for j in range(k):
            u = D[r, j]
            if u < 0:
                continue
            diag[c, u] += wr
            f = dfeats[j]
            base = start[f] + loc[u] * (total - prefix[f + 1]) * C - prefix[f + 1] * C
            for i in range(k):
                v = D[r, i]
                g = dfeats[i]
                if v < 0 or g <= f:
                    continue
                cells[base + (prefix[g] + loc[v]) * C + c] += wr


def warm(k) -> None:
    """Compile :func:`add_block_rows` for the types the store passes."""
    D, feats = np.array([[1, 3], [2, -1]], dtype=np.int64), np.array([0, 1], dtype=np.int64)
    loc, prefix, start = np.array([-1, 0, 1, 0], dtype=np.int64), np.array([0, 2, 3], dtype=np.int64), np.array([0, 4, 4], dtype=np.int64)
    k.add_block_rows(D, feats, np.array([0, 1], dtype=np.int64), np.ones(2), loc, prefix, start, 2, np.zeros(4), np.zeros((2, 4)))
