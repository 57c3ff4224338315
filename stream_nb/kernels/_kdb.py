"""Sahami's k-dependence Bayesian classifier (KDB), compiled: each event of a block scored, then counted.

log P(c, x) = log P̂(c) + Σ_i log (|D_c,x_i,x_pa(i)| + a) / (|D_c,x_pa(i)| + a N_i), read off the dense
t-way tables (t = k + 1 >= 3: ``tuple_count[c, x_i, u_1, .., u_(t-1)]`` and ``tuple_feat[c, u_1, ..,
u_(t-1), i]``, an attribute with fewer parents repeating its last one), the pair tables for k = 1 (t = 0
here), or the value counts for an attribute without parents; ratios multiplied in blocks, as in
:mod:`._tree`. Counting adds what :meth:`Stats.add <stream_nb.stats.Stats.add>` adds: class, values, pairs,
every ordered t-tuple of the values and every (t-1)-tuple with each feature observed. The tables come flat
(C-ordered views), ``V`` the size of their value axes and ``Ft`` that of ``tuple_feat``'s feature axis.
"""

from __future__ import annotations

import numpy as np

from . import _common, _tree
from ._addresses import NO_DETECTOR

__all__ = ["add_pairs_packed", "add_triples_row", "add_tuple_rows", "add_tuples_row", "flush_pairs", "fold_pairs",
           "gather_triples", "kdb_block", "mirror_pairs", "scatter_triples", "triangle_offsets", "warm"]

_BLOCK = 8


def add_tuples_row(D, r, dfeats, c, w, t, V, Ft, tc, tf, cols, fs, digits):
    """Add every ordered t-tuple of row ``r``'s observed columns to ``tc`` and every (t-1)-tuple with
    each observed feature to ``tf``, for class ``c`` with weight ``w``; ``cols``, ``fs``: scratch of at
    least k, ``digits`` of at least t - 1 (the head tuple's positions, counted like an odometer)."""
    m = 0
    for j in range(D.shape[1]):
        if D[r, j] >= 0:
            cols[m] = D[r, j]
            fs[m] = dfeats[j]
            m += 1
    if m == 0:
        return
    for i in range(t - 1):
        digits[i] = 0
    while True:
        base = c
        for i in range(t - 2):
            base = base * V + cols[digits[i]]
        base = base * V
        for h in range(m):  # the last head position innermost: the rows of one (t-2)-tuple
            row = base + cols[h]
            bc = row * V
            bf = row * Ft
            for j in range(m):
                tc[bc + cols[j]] += w
            for j in range(m):
                tf[bf + fs[j]] += w
        if not _common.next_digits(digits, t - 2, m):
            return


def add_tuple_rows(D, dfeats, yc, w, t, V, Ft, tc, tf):
    """:func:`add_tuples_row` of each row of ``D`` in order, class ``yc[r]`` and weight ``w[r]`` (a batch of
    :meth:`Stats.add_many <stream_nb.stats.Stats.add_many>`: each cell gets the additions one event at a
    time gives it, in the same order)."""
    k = D.shape[1]
    cols, fs, digits = np.empty(k, dtype=np.int64), np.empty(k, dtype=np.int64), np.empty(t, dtype=np.int64)
    for r in range(D.shape[0]):
        add_tuples_row(D, r, dfeats, yc[r], w[r], t, V, Ft, tc, tf, cols, fs, digits)


def triangle_offsets(n, off, P):
    """Offsets of the packed non-decreasing index triples over ``n`` ranks: with ``P[i]`` the pairs (i', j)
    of i' < i, a pair i <= j is ``P[i] + j - i`` and a triple i <= j <= l is ``off[i] + P[j] + l - j``."""
    below = 0
    for i in range(n):
        P[i] = i * n - i * (i - 1) // 2
        off[i] = below - P[i]
        below += (n - i) * (n - i + 1) // 2


def gather_triples(U, nU, C, V, off, P, T3, tc, L3):
    """Copy the non-decreasing cells over the values ``U[:nU]`` (ascending) of every class from ``tc`` into
    the packed ``L3`` (``C`` blocks of ``T3``), where a block counts its rows."""
    for c in range(C):
        for i in range(nU):
            for j in range(i, nU):
                src = ((c * V + U[i]) * V + U[j]) * V
                dst = c * T3 + off[i] + P[j] - j
                for l in range(j, nU):
                    L3[dst + l] = tc[src + U[l]]


def add_triples_row(cols, rk, m, c, w, V, Ft, fs, off, P, T3, L3, tf, pended):
    """Add a row's t = 3 cells (its values ``cols[:m]`` ascending, their ranks among the block's values
    ``rk[:m]``): each non-decreasing triple once, to the packed ``L3`` (:func:`scatter_triples` copies it to
    the cells and their permutations at the end of the block), and unless its pairs were ``pended``
    (:func:`add_pairs_packed`), each pair with each of its features ``fs[:m]`` to ``tf``, in ascending
    order (:func:`mirror_pairs` copies them to the other at the end of the block);
    if they were, only the triples of three distinct values: a cell (a, a, b) or (a, b, b) counts the pair
    (a, b), and :func:`fold_pairs` adds the pended pairs to them at the end of the block."""
    e = 1 if pended else 0  # pended: the cells of a repeated value come from P2 (fold_pairs)
    for i in range(m):
        ri = rk[i]
        for j in range(i + e, m):
            rj = rk[j]
            base = c * T3 + off[ri] + P[rj] - rj
            for l in range(j + e, m):
                L3[base + rk[l]] += w
            if pended:
                continue
            ab = ((c * V + cols[i]) * V + cols[j]) * Ft
            for l in range(m):
                tf[ab + fs[l]] += w


def add_pairs_packed(rk, m, c, w, P, T2, P2):
    """Add the non-decreasing pairs of a row that observes every feature of its block (ranks ``rk[:m]``,
    ascending) to the packed ``P2``, once each: :func:`scatter_triples` adds them to ``tf`` for every
    feature of the block, in place of one ``tf`` cell per feature and row."""
    for i in range(m):
        for j in range(i, m):
            P2[c * T2 + P[rk[i]] + rk[j] - rk[i]] += w


def fold_pairs(nU, learned, off, P, T3, T2, L3, P2):
    """Add the pended pairs ``P2`` of the classes ``learned`` to the packed cells of a repeated value: the
    pair (i, j) to (i, i, j) and (i, j, j), and the pair (i, i) to (i, i, i) (see :func:`add_triples_row`)."""
    for c in range(learned.shape[0]):
        if not learned[c]:
            continue
        for i in range(nU):
            for j in range(i, nU):
                x = P2[c * T2 + P[i] + j - i]
                L3[c * T3 + off[i] + P[i] + j - i] += x
                if i != j:
                    L3[c * T3 + off[i] + P[j]] += x


def scatter_triples(U, nU, learned, V, off, P, T3, L3, tc):
    """Write the packed cells ``L3`` of the classes ``learned`` to every cell of ``tc`` over the values
    ``U[:nU]`` (the tables are symmetric in their value axes: each cell is its non-decreasing permutation).

    The rows are written in the table's order, so that the writes go through memory in one pass. Row (a, b, .)
    of a = U[i], b = U[j] is row (b, a, .): for j < i it is a copy of row (U[j], U[i], .), written before; for
    j >= i its cell (a, b, U[l]) of l < j is (a, U[l], b), of a row of ``a`` written before it, and of l >= j
    the packed (i, j, l)."""
    for c in range(learned.shape[0]):
        if not learned[c]:
            continue
        b3 = c * T3
        for i in range(nU):
            slab = (c * V + U[i]) * V
            for j in range(nU):
                dst = (slab + U[j]) * V
                if j < i:
                    mir = ((c * V + U[j]) * V + U[i]) * V
                    for l in range(nU):
                        tc[dst + U[l]] = tc[mir + U[l]]
                    continue
                for l in range(j):
                    tc[dst + U[l]] = tc[(slab + U[l]) * V + U[j]]
                base = b3 + off[i] + P[j] - j
                for l in range(j, nU):
                    tc[dst + U[l]] = L3[base + l]


def mirror_pairs(U, nU, learned, V, Ft, tf):
    """Copy the cells ``tf[c, a, b, :]`` of the values a < b of ``U[:nU]`` to ``tf[c, b, a, :]``, for the
    classes ``learned``: the table is symmetric in its value axes (see :func:`add_triples_row`)."""
    for c in range(learned.shape[0]):
        if not learned[c]:
            continue
        for i in range(nU):
            for j in range(i + 1, nU):
                ab, ba = ((c * V + U[i]) * V + U[j]) * Ft, ((c * V + U[j]) * V + U[i]) * Ft
                for f in range(Ft):
                    tf[ba + f] = tf[ab + f]


def _add_values_row(D, r, dfeats, c, w, value_count, feat_count):
    """Add row ``r``'s observed values and features to class ``c``'s counts with weight ``w``."""
    for j in range(D.shape[1]):
        u = D[r, j]
        if u >= 0:
            value_count[c, u] += w
            feat_count[c, dfeats[j]] += w


def flush_pairs(U, nU, learned, dfeats, P, T2, P2, V, Ft, tf, pair_count, pair_feat):
    """Add the packed pairs ``P2`` (empty: none) of the classes ``learned`` over the values ``U[:nU]`` to
    ``pair_count`` and, for every feature of ``dfeats``, to ``tf``, in both orders, and each value's (its pair
    with itself: once a row) to ``pair_feat`` for every feature: what :func:`~._tree.add_pairs_row` and
    :func:`add_tuples_row` add for the rows that pended them (:func:`add_pairs_packed`). The cells are taken in
    the tables' order ((a, b) and (b, a) each where it lies), one pass through ``tf``; each gets one addition."""
    if P2.shape[0] == 0:
        return
    F = dfeats.shape[0]
    for c in range(learned.shape[0]):
        if not learned[c]:
            continue
        for i in range(nU):
            a = U[i]
            for j in range(nU):
                x = P2[c * T2 + P[i] + j - i] if i <= j else P2[c * T2 + P[j] + i - j]
                if x == 0.0:
                    continue
                b = U[j]
                pair_count[c, a, b] += x
                ab = ((c * V + a) * V + b) * Ft
                for f in range(F):
                    tf[ab + dfeats[f]] += x
                if i == j:
                    for f in range(F):
                        pair_feat[c, a, dfeats[f]] += x


def _sorted_columns(D, r, dfeats, cols, fs):
    """Row ``r``'s observed columns into ``cols`` in ascending order and its features into ``fs``; returns
    how many."""
    m = 0
    for j in range(D.shape[1]):
        v = D[r, j]
        if v < 0:
            continue
        fs[m] = dfeats[j]
        i = m
        while i > 0 and cols[i - 1] > v:
            cols[i] = cols[i - 1]
            i -= 1
        cols[i] = v
        m += 1
    return m


def _halves(D, yc, k, C, V, Ft, mark, learned):
    """Whether a block of t = 3 is cheaper counted in packed non-decreasing cells, written to the tables at
    its end (:func:`add_triples_row`), than cell by cell (``mark``: the values its labelled rows hold;
    ``learned``: their classes), and how many values."""
    L = 0
    nU = 0
    for r in range(D.shape[0]):
        if yc[r] < 0:
            continue
        L += 1
        learned[yc[r]] = True
        for j in range(k):
            v = D[r, j]
            if v >= 0 and not mark[v]:
                mark[v] = True
                nU += 1
    CL = 0
    for c in range(C):
        if learned[c]:
            CL += 1
    return L * 2 * k ** 3 > CL * (nU ** 3 + nU * nU * Ft), nU


def kdb_block(D, dfeats, par, npar, more, G, gslots, yc, weights, alphas, learn, C, a, var_smoothing, t, V, Ft,
              class_count, value_count, feat_count, pair_count, pair_feat, tc, tf, n_values,
              twin, obs_value_count, obs_feat_count, obs_pair_count, obs_pair_feat, obs_tc, obs_tf,
              g_n, g_mean, g_m2, out, joint, loss, watch, det_kind, det_params, det_state, det_fbuf, det_ibuf, warning,
              keptU, kept):
    """Score each row of a block, then (``learn``, a labelled row) count it, in order; return the rows done.

    ``D``, ``dfeats``, ``more``, ``G``, ``gslots``, ``yc``, ``weights``, ``alphas`` (decay), ``twin``, ``out``
    and the drift detector's arguments (``loss``, ``watch``, ``det_*``, ``warning``: the row it acts on is
    scored and not counted, and its index returned) as in :func:`~stream_nb.kernels._tree.tree_block`;
    ``par[j, :npar[j]]``: the columns of ``D`` holding the parents of feature ``dfeats[j]`` (each observed
    wherever the feature is; ``npar[j] < 0``: the feature is counted but not scored); ``t``: the tables' order
    (0: the pair tables, k = 1); ``tc``, ``tf`` (and their twins): the flat t-way tables.

    ``keptU`` (V + 1 entries, or none: nothing kept) and ``kept``: the packed cells of an earlier block of t = 3
    counted packed, no twin, over the values ``keptU[1:keptU[0] + 1]`` (``keptU[0] < 0``: none), which the
    caller vouches that ``tc`` holds still (nothing written to it since). A block over the same values takes
    them as they are in place of copying them from ``tc`` again (the same cells: the block wrote them to
    ``tc`` at its end). On return ``keptU`` names the values of the packed cells returned, or -1.
    Returns the rows done and the block's packed cells (none if it counted none).
    """
    R, k = D.shape
    jll = np.empty(C)
    prior = np.empty(C)
    prod = np.empty(C)
    q = np.empty(C)
    cols = np.empty(k, dtype=np.int64)
    fs = np.empty(k, dtype=np.int64)
    digits = np.empty(max(t - 1, 1), dtype=np.int64)
    grown = more.shape[0] > 0
    mark = np.zeros(V if t == 3 else 0, dtype=np.bool_)
    learned = np.zeros(C, dtype=np.bool_)
    half, nU = _halves(D, yc, k, C, V, Ft, mark, learned) if learn and t == 3 else (False, 0)
    decayed = alphas.shape[0] > 0
    # a long block counts its rows' t = 3 cells packed (add_triples_row), over the ranks of its values:
    # rank[v] the position of value v among them (-1: none of its rows' values)
    if not half:
        nU = 0
    U = np.flatnonzero(mark) if half else np.zeros(0, dtype=np.int64)
    rank = np.full(V if half else 0, -1, dtype=np.int64)
    rank[U] = np.arange(nU)
    off, P = np.empty(nU, dtype=np.int64), np.empty(nU, dtype=np.int64)
    triangle_offsets(nU, off, P)
    T3, T2 = nU * (nU + 1) * (nU + 2) // 6, nU * (nU + 1) // 2
    keeps = keptU.shape[0] == V + 1 and half and not twin
    same = keeps and keptU[0] == nU and kept.shape[0] == C * T3
    if same:
        for i in range(nU):
            if keptU[1 + i] != U[i]:
                same = False
                break
    L3 = kept if same else np.empty(C * T3)
    oL3 = np.empty(C * T3 if twin else 0)
    if half and not same:
        gather_triples(U, nU, C, V, off, P, T3, tc, L3)
        if twin:
            gather_triples(U, nU, C, V, off, P, T3, obs_tc, oL3)
    # the pairs of complete rows, for tf; decayed rows add to tf one by one, so that each cell sums their
    # weights in the order one event at a time does
    pending = half and not decayed
    P2 = np.zeros(C * T2 if pending else 0)
    rk = np.empty(k, dtype=np.int64)
    direct = False  # whether a row of a long block added its pairs to tf itself (not pended)
    span = V ** (t - 1) if t else 0
    done = R
    for r in range(R):
        if decayed:
            a = alphas[r]
        _common.log_prior_row(class_count, C, a, prior)
        for c in range(C):
            jll[c] = prior[c]
            prod[c] = 1.0
        n = 0
        for j in range(k):
            v = D[r, j]
            if v < 0:
                continue
            npa = npar[j]
            if npa < 0:  # left out of the product by a selection
                continue
            f = dfeats[j]
            an = a * (n_values[f] + (more[r, f] if grown else 0) + (1 if v == 0 else 0))
            if npa == 0:
                for c in range(C):
                    prod[c] *= (value_count[c, v] + a) / (feat_count[c, f] + an)
            elif t == 0:
                u = D[r, par[j, 0]]
                for c in range(C):
                    prod[c] *= (pair_count[c, u, v] + a) / (pair_feat[c, u, f] + an)
            elif t == 3:  # the tables are symmetric in their values: read the non-decreasing cells
                u1 = D[r, par[j, 0]]
                u2 = D[r, par[j, min(1, npa - 1)]]  # one parent: the diagonal
                lo, hi = min(u1, u2), max(u1, u2)
                s0, s2 = min(v, lo), max(v, hi)
                s1 = v + lo + hi - s0 - s2  # the middle value of the three
                nh = (s0 * V + s1) * V + s2
                dh = lo * V + hi
                # what the block counted so far is in its packed tables
                r0, r1, r2 = (rank[s0], rank[s1], rank[s2]) if half else (-1, -1, -1)
                ip = P[rank[lo]] + rank[hi] - rank[lo] if pending and rank[lo] >= 0 and rank[hi] >= 0 else -1
                if r0 >= 0 and r1 >= 0 and r2 >= 0:
                    i3 = off[r0] + P[r1] + r2 - r1
                    # a repeated value's cell: the pended pairs (a, b) of (a, a, b) or (a, b, b) beside it
                    dg = -1
                    if pending and r0 == r1:
                        dg = P[r1] + r2 - r1
                    elif pending and r1 == r2:
                        dg = P[r0] + r1 - r0
                    for c in range(C):
                        den = tf[(c * span + dh) * Ft + f] + (P2[c * T2 + ip] if ip >= 0 else 0.0)
                        num = L3[c * T3 + i3] + (P2[c * T2 + dg] if dg >= 0 else 0.0)
                        prod[c] *= (num + a) / (den + an)
                else:
                    for c in range(C):
                        den = tf[(c * span + dh) * Ft + f] + (P2[c * T2 + ip] if ip >= 0 else 0.0)
                        prod[c] *= (tc[c * V * span + nh] + a) / (den + an)
            else:
                head = 0  # the parents' values, the last one repeated: (u_1, .., u_(t-1)) in base V
                for i in range(t - 1):
                    head = head * V + D[r, par[j, min(i, npa - 1)]]
                for c in range(C):
                    num = tc[(c * V + v) * span + head]
                    den = tf[(c * span + head) * Ft + f]
                    prod[c] *= (num + a) / (den + an)
            n += 1
            _tree.blocked_log(prod, jll, C, n % _BLOCK == 0)
        _tree.blocked_log(prod, jll, C, True)
        _common.finish_row(jll, G[r], gslots, g_n, g_mean, g_m2, C, var_smoothing, q, joint, prior, out[r])
        c = yc[r]
        if watch and c >= 0 and _common.watch_row(out[r], C, loss, c, det_kind, det_params, det_state, det_fbuf,
                                                  det_ibuf, warning):
            done = r
            break
        if not learn or c < 0:
            continue
        w = weights[r] if decayed else 1.0
        class_count[c] += w
        pended = False
        if half:
            m = _sorted_columns(D, r, dfeats, cols, fs)
            for i in range(m):
                rk[i] = rank[cols[i]]
            pended = pending and m == k
            direct = direct or not pended
        if pended:  # its pairs once each to P2: the tables' pairs too, at the end of the block (flush_pairs)
            add_pairs_packed(rk, m, c, w, P, T2, P2)
            _add_values_row(D, r, dfeats, c, w, value_count, feat_count)
        else:
            _tree.add_pairs_row(D, r, dfeats, c, w, value_count, feat_count, pair_count, pair_feat)
        if half:
            add_triples_row(cols, rk, m, c, w, V, Ft, fs, off, P, T3, L3, tf, pended)
        elif t:
            add_tuples_row(D, r, dfeats, c, w, t, V, Ft, tc, tf, cols, fs, digits)
        if twin:
            if pended:
                _add_values_row(D, r, dfeats, c, w, obs_value_count, obs_feat_count)
            else:
                _tree.add_pairs_row(D, r, dfeats, c, w, obs_value_count, obs_feat_count, obs_pair_count, obs_pair_feat)
            if half:
                add_triples_row(cols, rk, m, c, w, V, Ft, fs, off, P, T3, oL3, obs_tf, pended)
            elif t:
                add_tuples_row(D, r, dfeats, c, w, t, V, Ft, obs_tc, obs_tf, cols, fs, digits)
        _common.add_gaussian(G[r], gslots, c, w, g_n, g_mean, g_m2)
    if half:  # (the rows counted before a detector's stop)
        if direct:  # a row's pairs added to tf itself, in ascending order
            mirror_pairs(U, nU, learned, V, Ft, tf)
            if twin:
                mirror_pairs(U, nU, learned, V, Ft, obs_tf)
        if pending:
            fold_pairs(nU, learned, off, P, T3, T2, L3, P2)
            if twin:
                fold_pairs(nU, learned, off, P, T3, T2, oL3, P2)
        scatter_triples(U, nU, learned, V, off, P, T3, L3, tc)
        flush_pairs(U, nU, learned, dfeats, P, T2, P2, V, Ft, tf, pair_count, pair_feat)
        if twin:
            scatter_triples(U, nU, learned, V, off, P, T3, oL3, obs_tc)
            flush_pairs(U, nU, learned, dfeats, P, T2, P2, V, Ft, obs_tf, obs_pair_count, obs_pair_feat)
    if keeps:  # every class's packed cells, as tc now holds them (those of classes not learned as gathered)
        keptU[0] = nU
        keptU[1:nU + 1] = U
        return done, L3
    if keptU.shape[0] > 0 and learn:
        keptU[0] = -1
    return done, np.empty(0)


def warm(k) -> None:
    """Compile :func:`kdb_block` for the types the models pass (pair tables, and t-way ones)."""
    C, V, F = 2, 4, 3
    cc, vc, fc = np.zeros(C), np.zeros((C, V)), np.zeros((C, F))
    pc, pf = np.zeros((C, V, V)), np.zeros((C, V, F))
    tc, tf = np.zeros(C * V**3), np.zeros(C * V * V * F)
    nv = np.array([1, 1, 1], dtype=np.int64)
    gn, gm, g2 = np.zeros((C, 1)), np.zeros((C, 1)), np.zeros((C, 1))
    D = np.array([[1, 2, 3], [1, 2, 0]], dtype=np.int64)
    feats, G = np.arange(F, dtype=np.int64), np.array([[0.5], [1.5]])
    par, npar = np.array([[-1, -1], [0, -1], [0, 1]], dtype=np.int64), np.array([0, 1, 2], dtype=np.int64)
    for t in (0, 3):
        for more in (np.zeros((0, 0), dtype=np.int64), np.zeros((2, F), dtype=np.int64)):
            for decay in (np.zeros(0), np.ones(2)):
                k.kdb_block(D, feats, par, npar, more, G, np.array([0], dtype=np.int64),
                            np.array([0, 1], dtype=np.int64), decay, decay, True, C, 1.0, 1e-9, t, V, F, cc, vc, fc,
                            pc, pf, tc, tf, nv, False, vc, fc, pc, pf, tc, tf, gn, gm, g2, np.empty((2, C)), False,
                            np.zeros((0, 0)), *NO_DETECTOR, np.full(V + 1, -1, dtype=np.int64), np.zeros(0))
    k.add_tuple_rows(D, feats, np.array([0, 1], dtype=np.int64), np.ones(2), 3, V, F, tc, tf)
