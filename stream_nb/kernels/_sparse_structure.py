"""TAN's structure scores read from sparse pair tables: the conditional mutual information sums of every pair.

A revision of a budget's candidate pairs (``stats/selection/_revision.py``) and a rebuild of TAN's tree read
every cell the sparse pair table holds, millions on 600 attributes. numpy's version (the reference the tests
compare with) sorted every cell by key and grouped them three times; this reads the hash table's slots
twice, groups the cells by attribute pair, and sums each pair's cells in key order, as numpy's sums do.

``keys``/``vals``: the hash table of ``pair_count`` (:mod:`stream_nb.kernels._hashed`), capacity ``shape``
(C', V', V'), cell ``(c, v, w)``: rows the values of x_i, columns those of x_j; ``vf`` maps a value column to
its feature (-1: none). Only the cells of the ``C`` classes and ``V`` value columns seen count, with a
positive count, both columns past 0 (a value never seen) and of a feature.
"""

from __future__ import annotations

import math

import numpy as np

from . import _hashed

__all__ = ["sparse_cmi", "warm"]


def _block(key, val, P1, P2, b1, b2, C, V, vf, F):
    """The pair ``fi * F + fj`` of a held cell, or -1 for a cell that does not count."""
    if key < 0 or not val > 0.0:
        return -1
    c, v, w = _hashed.split_key(key, P1, P2, b1, b2)
    if c >= C or v >= V or w >= V or v == 0 or w == 0 or v >= vf.shape[0] or w >= vf.shape[0]:
        return -1
    fi, fj = vf[v], vf[w]
    if fi < 0 or fj < 0 or fi >= F or fj >= F:
        return -1
    return fi * F + fj


def sparse_cmi(keys, vals, shape, C, V, vf, F, least):
    """``(mi, n, scored)``, each (F, F): per ordered pair (i, j), the sum over the cells (c, v, w) of the block
    of x_i's rows and x_j's columns of n log(n n(c, i, j) / (n(c, v, j) n(c, i, w))), and the block's count:
    one orientation of each pair, before the two are pooled.

    A feature's block with itself is not scored (``mi`` 0, ``n`` its count).

    ``least`` (F, F), or (0, 0) for none: a pair whose count, both blocks pooled (half their sum), is below
    ``least[i, j]`` is not scored (``scored`` False, ``mi`` 0; ``n`` is still its count). Its count is then
    summed in slot order, not in key order, so this holds only when every count is a whole number (their
    sums are then exact in any order): with a fractional count every pair is scored."""
    P1, P2 = shape[1], shape[2]
    b1, b2 = _hashed.key_bits(P1), _hashed.key_bits(P2)
    S = keys.shape[0]
    pair = np.empty(S, dtype=np.int64)  # each slot's pair, -1: a cell that does not count
    held = np.zeros(F * F, dtype=np.int64)  # each block's cells
    rough = np.zeros(F * F)  # each block's count, in slot order
    whole = True
    for s in range(S):
        b = _block(keys[s], vals[s], P1, P2, b1, b2, C, V, vf, F)
        pair[s] = b
        if b >= 0:
            held[b] += 1
            rough[b] += vals[s]
            whole = whole and vals[s] == math.floor(vals[s])
    scored = np.ones((F, F), dtype=np.bool_)
    if least.shape[0] and whole:
        for i in range(F):
            for j in range(F):
                scored[i, j] = i == j or (rough[i * F + j] + rough[j * F + i]) / 2.0 >= least[i, j]
    start = np.zeros(F * F + 1, dtype=np.int64)  # the scored blocks' cells, grouped
    most = 0
    for b in range(F * F):
        if scored[b // F, b % F] and b // F != b % F:  # (a feature's pair with itself: no score)
            most = max(most, held[b])
            start[b + 1] = held[b]
        start[b + 1] += start[b]
    at = start[:-1].copy()
    ck = np.empty(start[F * F], dtype=np.int64)  # the cells' keys and counts, grouped by pair
    cx = np.empty(start[F * F])
    for s in range(S):
        b = pair[s]
        if b >= 0 and scored[b // F, b % F] and b // F != b % F:
            ck[at[b]] = keys[s]
            cx[at[b]] = vals[s]
            at[b] += 1
    row = np.zeros(C * V)  # n(c, v, j) by c * V + v, within the pair at hand
    col = np.zeros(C * V)  # n(c, i, w) by c * V + w
    blk = np.zeros(C)  # n(c, i, j)
    rv = np.empty(most, dtype=np.int64)  # the pair's cells in key order: c * V + v, c * V + w, c, count
    cw = np.empty(most, dtype=np.int64)
    cc = np.empty(most, dtype=np.int64)
    x = np.empty(most)
    mi = np.zeros((F, F))
    n = np.zeros((F, F))
    for b in range(F * F):
        if not scored[b // F, b % F] or b // F == b % F:
            n[b // F, b % F] = rough[b]
            continue
        lo, hi = start[b], start[b + 1]
        if lo == hi:
            continue
        order = np.argsort(ck[lo:hi])  # key order: numpy's sums add the cells in that order
        m = hi - lo
        for t in range(m):
            c, v, w = _hashed.split_key(ck[lo + order[t]], P1, P2, b1, b2)
            cc[t], rv[t], cw[t], x[t] = c, c * V + v, c * V + w, cx[lo + order[t]]
            row[rv[t]] += x[t]
            col[cw[t]] += x[t]
            blk[c] += x[t]
        acc = 0.0
        tot = 0.0
        for t in range(m):
            acc += x[t] * math.log(x[t] * blk[cc[t]] / (row[rv[t]] * col[cw[t]]))
            tot += x[t]
        mi[b // F, b % F] = acc
        n[b // F, b % F] = tot
        for t in range(m):
            row[rv[t]] = 0.0
            col[cw[t]] = 0.0
            blk[cc[t]] = 0.0
    return mi, n, scored


def warm(k) -> None:
    """Compile the kernels for the types the stores pass."""
    keys, vals = np.full(16, -1, dtype=np.int64), np.zeros(16)
    keys[3], vals[3] = 1 * 25 + 1 * 5 + 3, 2.0
    k.sparse_cmi(keys, vals, np.array([2, 5, 5], dtype=np.int64), 2, 5, np.array([-1, 0, 0, 1, 1], dtype=np.int64), 2,
                 np.zeros((0, 0)))
