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

__all__ = ["bayes_gain_terms", "pair_test_terms", "sparse_cmi", "warm"]


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
    for s in range(S if start[F * F] > 0 else 0):  # (no pair scored: no second pass over the slots)
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


def _by_block(keys, vals, P1, P2, b1, b2, C, V, vf, F, upper):
    """The cells of the table grouped by their pair block ``b = i * F + j``, in slot order within each:
    ``(start, ck, cx)``, the block ``b``'s keys ``ck[start[b]:start[b + 1]]`` and counts ``cx[...]``; the
    blocks of pairs ``i < j`` alone with ``upper``, else of every pair ``i != j``."""
    S = keys.shape[0]
    FF = F * F
    start = np.zeros(FF + 1, dtype=np.int64)
    for s in range(S):
        b = _block(keys[s], vals[s], P1, P2, b1, b2, C, V, vf, F)
        if b >= 0 and (b // F < b % F if upper else b // F != b % F):
            start[b + 1] += 1
    for b in range(FF):
        start[b + 1] += start[b]
    at = start[:-1].copy()
    ck = np.empty(start[FF], dtype=np.int64)
    cx = np.empty(start[FF])
    for s in range(S):
        b = _block(keys[s], vals[s], P1, P2, b1, b2, C, V, vf, F)
        if b >= 0 and (b // F < b % F if upper else b // F != b % F):
            ck[at[b]] = keys[s]
            cx[at[b]] = vals[s]
            at[b] += 1
    return start, ck, cx


def _block_cells(ck, cx, lo, hi, P1, P2, b1, b2):
    """The cells ``ck[lo:hi]`` (keys), ``cx[lo:hi]`` (counts) of one pair block in key order, split into their
    classes, row values and column values: ``(cc, vv, ww, x)``."""
    m = hi - lo
    order = np.argsort(ck[lo:hi])
    cc = np.empty(m, dtype=np.int64)
    vv = np.empty(m, dtype=np.int64)
    ww = np.empty(m, dtype=np.int64)
    x = np.empty(m)
    for t in range(m):
        c, v, w = _hashed.split_key(ck[lo + order[t]], P1, P2, b1, b2)
        cc[t], vv[t], ww[t], x[t] = c, v, w, cx[lo + order[t]]
    return cc, vv, ww, x


def pair_test_terms(keys, vals, shape, C, V, vf, F):
    """The parts of the two G-tests of each attribute pair (``stats/selection/_pair_tests.py``) read off a
    sparse pair table (the hash table ``keys``/``vals`` of capacity ``shape``): its cells (c, v, w) that count
    (as :func:`sparse_cmi` counts them), of one orientation, x_v's feature before x_w's, grouped by pair and
    in key order within a pair.

    Returns ``(gb, gn, gr, df_c, jb, jm, jr, df_j, n_b)``. Given the class, per cell: its block
    ``c * F * F + fi * F + fj``, its count n and the ratio n n(c, i, j) / (n(c, v, j) n(c, i, w)), the sums
    over the cells of its (class, pair) in key order; ``df_c`` (C F F): per (class, pair), the values of
    x_i held less one times those of x_j (each at least 0). The class summed out, per cell (v, w) of a pair
    (in the order of v * V + w): its pair, its count m (the sum over the classes in key order) and the ratio
    m m(i, j) / (m(v, j) m(i, w)), the sums in that order; ``df_j`` (F F) as ``df_c``. ``n_b`` (F F): each
    pair's count, in key order. The logarithms are left to numpy (whose vectorised log and numba's differ
    in the last digit of some values): the sums and ratios are numpy's ``bincount``'s in the same order."""
    P1, P2 = shape[1], shape[2]
    b1, b2 = _hashed.key_bits(P1), _hashed.key_bits(P2)
    FF = F * F
    start, ck, cx = _by_block(keys, vals, P1, P2, b1, b2, C, V, vf, F, True)
    M = start[FF]
    gb = np.empty(M, dtype=np.int64)
    gn = np.empty(M)
    gr = np.empty(M)
    jb = np.empty(M, dtype=np.int64)
    jm = np.empty(M)
    jr = np.empty(M)
    df_c = np.zeros(C * FF)
    df_j = np.zeros(FF)
    n_b = np.zeros(FF)
    row = np.zeros(C * V)  # n(c, v, j), by c * V + v, within the pair at hand
    col = np.zeros(C * V)  # n(c, i, w)
    blk = np.zeros(C)
    rows_c = np.zeros(C, dtype=np.int64)  # the values of x_i held, per class
    cols_c = np.zeros(C, dtype=np.int64)
    jrow = np.zeros(V)  # m(v, j)
    jcol = np.zeros(V)  # m(i, w)
    jv = np.empty(M, dtype=np.int64)  # the pair's cells (v, w), class summed out
    jw = np.empty(M, dtype=np.int64)
    nj = 0
    for b in range(FF):
        lo, hi = start[b], start[b + 1]
        if lo == hi:
            continue
        m = hi - lo
        cc, vv, ww, x = _block_cells(ck, cx, lo, hi, P1, P2, b1, b2)
        for t in range(m):
            c, v, w = cc[t], vv[t], ww[t]
            if row[c * V + v] == 0.0:
                rows_c[c] += 1
            if col[c * V + w] == 0.0:
                cols_c[c] += 1
            row[c * V + v] += x[t]
            col[c * V + w] += x[t]
            blk[c] += x[t]
            n_b[b] += x[t]
        for t in range(m):
            c = cc[t]
            gb[lo + t] = c * FF + b
            gn[lo + t] = x[t]
            gr[lo + t] = x[t] * blk[c] / (row[c * V + vv[t]] * col[c * V + ww[t]])
        for t in range(m):
            row[cc[t] * V + vv[t]] = 0.0
            col[cc[t] * V + ww[t]] = 0.0
        for c in range(C):
            if rows_c[c] or cols_c[c]:
                df_c[c * FF + b] = max(rows_c[c] - 1.0, 0.0) * max(cols_c[c] - 1.0, 0.0)
            rows_c[c] = 0
            cols_c[c] = 0
            blk[c] = 0.0
        # the class summed out: the cells (v, w) in the order of v * V + w, each the sum over its classes
        vw = np.empty(m, dtype=np.int64)
        for t in range(m):
            vw[t] = vv[t] * V + ww[t]
        by = np.argsort(vw, kind="mergesort")  # stable: the classes of one (v, w) stay in key order
        first = nj
        whole = 0.0
        n_rows = 0
        n_cols = 0
        t = 0
        while t < m:
            key = vw[by[t]]
            sm = 0.0
            while t < m and vw[by[t]] == key:
                sm += x[by[t]]
                t += 1
            v, w = key // V, key % V
            if jrow[v] == 0.0:
                n_rows += 1
            if jcol[w] == 0.0:
                n_cols += 1
            jrow[v] += sm
            jcol[w] += sm
            whole += sm
            jb[nj] = b
            jm[nj] = sm
            jv[nj - first] = v
            jw[nj - first] = w
            nj += 1
        for q in range(first, nj):
            jr[q] = jm[q] * whole / (jrow[jv[q - first]] * jcol[jw[q - first]])
        for q in range(nj - first):
            jrow[jv[q]] = 0.0
            jcol[jw[q]] = 0.0
        df_j[b] = max(n_rows - 1.0, 0.0) * max(n_cols - 1.0, 0.0)
    return gb, gn, gr, df_c, jb[:nj].copy(), jm[:nj].copy(), jr[:nj].copy(), df_j, n_b


def bayes_gain_terms(keys, vals, shape, C, V, vf, F):
    """The four sums of TAN's Bayesian edge gains (``learners/_tree_score.py``) read off a sparse pair table
    (the hash table ``keys``/``vals`` of capacity ``shape``): its cells (c, v, w) that count (as
    :func:`sparse_cmi` counts them) of two distinct features, grouped by pair (row's feature * F + column's),
    in key order within a pair. Returns ``(b1, x1, b2, h2, x2, b3, x3, b4, h4, x4)``: per cell, its pair and
    count; per (c, v, column's feature), its pair, that feature and the sum of its cells; per (c, row's
    feature, w), its pair and sum; per (c, pair), its pair, the column's feature and sum. Each sum adds its
    cells in key order, and each pair's entries come in the order of numpy's sorted group keys, so that
    numpy's ``bincount`` of the gammaln terms (left to scipy) adds them as ``_gains_from_cells`` does."""
    P1, P2 = shape[1], shape[2]
    b1_, b2_ = _hashed.key_bits(P1), _hashed.key_bits(P2)
    FF = F * F
    start, ck, cx = _by_block(keys, vals, P1, P2, b1_, b2_, C, V, vf, F, False)
    M = start[FF]
    b1 = np.empty(M, dtype=np.int64)
    x1 = np.empty(M)
    b2 = np.empty(M, dtype=np.int64)
    h2 = np.empty(M, dtype=np.int64)
    x2 = np.empty(M)
    b3 = np.empty(M, dtype=np.int64)
    x3 = np.empty(M)
    b4 = np.empty(M, dtype=np.int64)
    h4 = np.empty(M, dtype=np.int64)
    x4 = np.empty(M)
    n2 = 0
    n3 = 0
    n4 = 0
    for b in range(FF):
        lo, hi = start[b], start[b + 1]
        if lo == hi:
            continue
        m = hi - lo
        fi = b % F  # the column's feature
        cc, vv, ww, x = _block_cells(ck, cx, lo, hi, P1, P2, b1_, b2_)
        for t in range(m):
            b1[lo + t] = b
            x1[lo + t] = x[t]
        t = 0
        while t < m:  # (c, v): consecutive in key order, summed over w ascending
            c, v = cc[t], vv[t]
            tot = 0.0
            while t < m and cc[t] == c and vv[t] == v:
                tot += x[t]
                t += 1
            b2[n2] = b
            h2[n2] = fi
            x2[n2] = tot
            n2 += 1
        t = 0
        while t < m:  # c: consecutive in key order, summed in it
            c = cc[t]
            tot = 0.0
            while t < m and cc[t] == c:
                tot += x[t]
                t += 1
            b4[n4] = b
            h4[n4] = fi
            x4[n4] = tot
            n4 += 1
        cw = np.empty(m, dtype=np.int64)
        for t in range(m):
            cw[t] = cc[t] * V + ww[t]
        by = np.argsort(cw, kind="mergesort")  # (c, w), v ascending within each: stable from key order
        t = 0
        while t < m:
            key = cw[by[t]]
            tot = 0.0
            while t < m and cw[by[t]] == key:
                tot += x[by[t]]
                t += 1
            b3[n3] = b
            x3[n3] = tot
            n3 += 1
    return (b1, x1, b2[:n2].copy(), h2[:n2].copy(), x2[:n2].copy(), b3[:n3].copy(), x3[:n3].copy(), b4[:n4].copy(),
            h4[:n4].copy(), x4[:n4].copy())


def warm(k) -> None:
    """Compile the kernels for the types the stores pass."""
    keys, vals = np.full(16, -1, dtype=np.int64), np.zeros(16)
    keys[3], vals[3] = 1 * 25 + 1 * 5 + 3, 2.0
    k.sparse_cmi(keys, vals, np.array([2, 5, 5], dtype=np.int64), 2, 5, np.array([-1, 0, 0, 1, 1], dtype=np.int64), 2,
                 np.zeros((0, 0)))
    k.pair_test_terms(keys, vals, np.array([2, 5, 5], dtype=np.int64), 2, 5, np.array([-1, 0, 0, 1, 1], dtype=np.int64), 2)
    k.bayes_gain_terms(keys, vals, np.array([2, 5, 5], dtype=np.int64), 2, 5, np.array([-1, 0, 0, 1, 1], dtype=np.int64), 2)
