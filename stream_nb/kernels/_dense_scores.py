"""TAN's and KDB's structure scores read from dense pair tables, and the maximum spanning tree over them.

Each cell is read once or twice (numpy's references, in ``learners/_structure.py`` and
``learners/_tree_score.py``, which the tests compare them with, built temporaries of the table's size).
``P`` (C, V, V): a dense pair table, rows the values of x_j, columns those of x_i; ``cols`` (m,): the live
value columns sorted by feature, ``block`` (m,): the index of each one's feature among the ``nb`` features
present. Every function returns (nb, nb) matrices over those features.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["dense_bayes_gains", "dense_cmi", "prim_tree", "warm"]


def _sums(P, c, cols, block, nb, row, col, blk):
    """Class ``c``'s sums: ``row[a, J]`` over the columns of block J, ``col[I, b]`` over the rows of block I,
    ``blk[I, J]`` over the block."""
    m = len(cols)
    row[:, :] = 0.0
    col[:, :] = 0.0
    blk[:, :] = 0.0
    for a in range(m):
        ba = block[a]
        va = cols[a]
        for b in range(m):
            p = P[c, va, cols[b]]
            if p != 0.0:
                row[a, block[b]] += p
                col[ba, b] += p
                blk[ba, block[b]] += p


def dense_cmi(P, C, cols, block, nb):
    """``(mi, n)``: per block pair (I, J), the sum over classes and cells of n log(n n_IJ / (n_vJ n_Iw)) and
    the events counted, before the two orientations of a pair are pooled."""
    m = len(cols)
    mi = np.zeros((nb, nb))
    n = np.zeros((nb, nb))
    row, col, blk = np.empty((m, nb)), np.empty((nb, m)), np.empty((nb, nb))
    for c in range(C):
        _sums(P, c, cols, block, nb, row, col, blk)
        for a in range(m):
            ba = block[a]
            va = cols[a]
            for b in range(m):
                p = P[c, va, cols[b]]
                if p > 0.0:
                    bb = block[b]
                    mi[ba, bb] += p * math.log(p * blk[ba, bb] / (row[a, bb] * col[ba, b]))
        n += blk
    return mi, n


def _lg(x, base, table):
    """lgamma(base + x) - lgamma(base): from ``table`` (that difference at 0, 1, 2, ...) when x is a whole
    count within it."""
    if x >= 0.0 and x < len(table) and x == math.floor(x):
        return table[int(x)]
    return math.lgamma(base + x) - math.lgamma(base)


def dense_bayes_gains(P, C, cols, block, nb, alpha, va, table):
    """``g[J, I]``: the gain in attribute I's local Bayesian-Dirichlet score from x_J as its second parent,
    summed over the classes (:func:`~stream_nb.learners._tree_score.bayesian_edge_gains`); ``va`` (nb,):
    V_I alpha of each feature, ``table[n]``: lgamma(alpha + n) - lgamma(alpha)."""
    m = len(cols)
    g = np.zeros((nb, nb))
    row, col, blk = np.empty((m, nb)), np.empty((nb, m)), np.empty((nb, nb))
    for c in range(C):
        _sums(P, c, cols, block, nb, row, col, blk)
        for a in range(m):
            ba = block[a]
            va_ = cols[a]
            for b in range(m):
                p = P[c, va_, cols[b]]
                if p != 0.0:
                    g[ba, block[b]] += _lg(p, alpha, table)  # the cells of (c, x_J, x_I)
            for bi in range(nb):  # each x_J value u, class c: a configuration of I's parents
                r = row[a, bi]
                if r != 0.0:
                    g[ba, bi] -= math.lgamma(va[bi] + r) - math.lgamma(va[bi])
        for bj in range(nb):  # the base score of I given c alone, over the events that observed J
            for b in range(m):
                x = col[bj, b]
                if x != 0.0:
                    g[bj, block[b]] -= _lg(x, alpha, table)
            for bi in range(nb):
                x = blk[bj, bi]
                if x != 0.0:
                    g[bj, bi] += math.lgamma(va[bi] + x) - math.lgamma(va[bi])
    for i in range(nb):
        g[i, i] = 0.0
    return g


def prim_tree(weights, nodes, root, rank):
    """Prim's algorithm over ``nodes`` (indices into ``weights``): ``parent[i]``, the parent of each node of the
    maximum-weight spanning tree rooted at ``root`` (-1 for the root and for indices not among ``nodes``).
    The next node is the one of highest weight to the tree, ties to the lower ``rank`` (an array by index);
    a node's parent changes only for a strictly higher weight."""
    F = weights.shape[0]
    parent = np.full(F, -1, dtype=np.int64)
    rest = np.zeros(F, dtype=np.bool_)
    for n in nodes:
        rest[n] = True
    rest[root] = False
    best = np.empty(F)
    via = np.full(F, root, dtype=np.int64)
    for n in range(F):
        best[n] = weights[root, n]
    left = 0
    for n in range(F):
        if rest[n]:
            left += 1
    for _ in range(left):
        nxt = -1
        for n in range(F):
            if rest[n] and (nxt < 0 or best[n] > best[nxt] or (best[n] == best[nxt] and rank[n] < rank[nxt])):
                nxt = n
        parent[nxt] = via[nxt]
        rest[nxt] = False
        for n in range(F):
            if rest[n] and weights[nxt, n] > best[n]:
                best[n] = weights[nxt, n]
                via[n] = nxt
    return parent


def warm(k) -> None:
    """Compile the kernels for the types the models pass."""
    P = np.ones((2, 5, 5))
    cols, block = np.array([1, 2, 3, 4], dtype=np.int64), np.array([0, 0, 1, 1], dtype=np.int64)
    k.dense_cmi(P, 2, cols, block, 2)
    k.dense_bayes_gains(P, 2, cols, block, 2, 1.0, np.array([2.0, 2.0]), np.zeros(4))
    k.prim_tree(np.ones((3, 3)), np.array([0, 1, 2], dtype=np.int64), 0, np.arange(3, dtype=np.int64))
