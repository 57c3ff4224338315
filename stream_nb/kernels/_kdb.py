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

__all__ = ["add_sorted_triples_row", "add_tuple_rows", "add_tuples_row", "flush_pairs", "kdb_block", "mirror_triples",
           "warm"]

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


def add_sorted_triples_row(cols, m, c, w, V, Ft, fs, tc, tf, pend):
    """Add a row's t = 3 cells with non-decreasing values only (``cols[:m]`` ascending): each cell of the
    symmetric tables once, the others filled in by :func:`mirror_triples` at the end of the block.

    ``pend`` (C V V; empty: none): a row that observes every feature of its block adds its pairs there, once
    each, in place of one ``tf`` cell per feature: :func:`flush_pairs` adds them to ``tf`` at the end of the
    block, and until then ``tf[c, a, b, f]`` is ``tf[c, a, b, f] + pend[c, a, b]`` for the block's features."""
    for i in range(m):
        for j in range(i, m):
            row = (c * V + cols[i]) * V + cols[j]
            bc = row * V
            for l in range(j, m):
                tc[bc + cols[l]] += w
            if pend.shape[0]:
                pend[row] += w
                continue
            bf = row * Ft
            for l in range(m):
                tf[bf + fs[l]] += w


def flush_pairs(U, nU, learned, V, Ft, dfeats, pend, tf):
    """Add the non-decreasing pair cells ``pend`` over the values ``U[:nU]`` (ascending) of the classes
    ``learned`` to ``tf`` for every feature of ``dfeats`` (see :func:`add_sorted_triples_row`)."""
    for c in range(learned.shape[0]):
        if not learned[c]:
            continue
        for i in range(nU):
            for j in range(i, nU):
                row = (c * V + U[i]) * V + U[j]
                w = pend[row]
                if w == 0.0:
                    continue
                bf = row * Ft
                for l in range(dfeats.shape[0]):
                    tf[bf + dfeats[l]] += w


def mirror_triples(U, nU, learned, V, Ft, tc, tf):
    """Copy each non-decreasing cell over the values ``U[:nU]`` (ascending) of the classes ``learned`` to
    its permutations: the tables are symmetric in their value axes, and only those cells changed."""
    for c in range(learned.shape[0]):
        if not learned[c]:
            continue
        for i in range(nU):
            a = U[i]
            for j in range(i, nU):
                b = U[j]
                ab = (c * V + a) * V + b
                ba = (c * V + b) * V + a
                if a != b:
                    for f in range(Ft):
                        tf[ba * Ft + f] = tf[ab * Ft + f]
                for l in range(j, nU):
                    d = U[l]
                    x = tc[ab * V + d]
                    ad = (c * V + a) * V + d
                    bd = (c * V + b) * V + d
                    da = (c * V + d) * V + a
                    db = (c * V + d) * V + b
                    tc[ad * V + b] = x
                    tc[ba * V + d] = x
                    tc[bd * V + a] = x
                    tc[da * V + b] = x
                    tc[db * V + a] = x


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
    """Whether a block of t = 3 is cheaper counted in the non-decreasing cells and mirrored at its end
    (``mark``: the values its labelled rows hold; ``learned``: their classes), and how many values."""
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
              g_n, g_mean, g_m2, out, joint, loss, watch, det_kind, det_params, det_state, det_fbuf, det_ibuf, warning):
    """Score each row of a block, then (``learn``, a labelled row) count it, in order; return the rows done.

    ``D``, ``dfeats``, ``more``, ``G``, ``gslots``, ``yc``, ``weights``, ``alphas`` (decay), ``twin``, ``out``
    and the drift detector's arguments (``loss``, ``watch``, ``det_*``, ``warning``: the row it acts on is
    scored and not counted, and its index returned) as in :func:`~stream_nb.kernels._tree.tree_block`;
    ``par[j, :npar[j]]``: the columns of ``D`` holding the parents of feature ``dfeats[j]`` (each observed
    wherever the feature is; ``npar[j] < 0``: the feature is counted but not scored); ``t``: the tables' order
    (0: the pair tables, k = 1); ``tc``, ``tf`` (and their twins): the flat t-way tables.
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
    # the pairs of complete rows, for tf (add_sorted_triples_row); decayed rows add to tf one by one, so that
    # each cell sums their weights in the order one event at a time does
    pending = half and not decayed
    pend = np.zeros(C * V * V if pending else 0)
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
                nh = (s0 * V + v + lo + hi - s0 - s2) * V + s2  # the middle value of the three
                dh = lo * V + hi
                for c in range(C):
                    den = tf[(c * span + dh) * Ft + f] + (pend[c * span + dh] if pending else 0.0)
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
        _common.gaussian_row(G[r], gslots, g_n, g_mean, g_m2, C, var_smoothing, q, jll)
        if joint:
            for c in range(C):
                out[r, c] = jll[c]
        else:
            _common.normalise_row(jll, prior, C, out[r])
        c = yc[r]
        if watch and c >= 0 and _common.watch_row(out[r], C, loss, c, det_kind, det_params, det_state, det_fbuf,
                                                  det_ibuf, warning):
            done = r
            break
        if not learn or c < 0:
            continue
        w = weights[r] if decayed else 1.0
        class_count[c] += w
        _tree.add_pairs_row(D, r, dfeats, c, w, value_count, feat_count, pair_count, pair_feat)
        if half:
            m = _sorted_columns(D, r, dfeats, cols, fs)
            add_sorted_triples_row(cols, m, c, w, V, Ft, fs, tc, tf, pend if m == k else pend[:0])
        elif t:
            add_tuples_row(D, r, dfeats, c, w, t, V, Ft, tc, tf, cols, fs, digits)
        if twin:
            _tree.add_pairs_row(D, r, dfeats, c, w, obs_value_count, obs_feat_count, obs_pair_count, obs_pair_feat)
            if half:
                add_sorted_triples_row(cols, m, c, w, V, Ft, fs, obs_tc, obs_tf, pend[:0])
            elif t:
                add_tuples_row(D, r, dfeats, c, w, t, V, Ft, obs_tc, obs_tf, cols, fs, digits)
        _common.add_gaussian(G[r], gslots, c, w, g_n, g_mean, g_m2)
    if half:  # (the rows counted before a detector's stop: mirroring the others' values copies equal cells)
        U = np.flatnonzero(mark)
        if pending:
            flush_pairs(U, nU, learned, V, Ft, dfeats, pend, tf)
        mirror_triples(U, nU, learned, V, Ft, tc, tf)
        if twin:
            mirror_triples(U, nU, learned, V, Ft, obs_tc, obs_tf)
    return done


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
                            np.zeros((0, 0)), *NO_DETECTOR)
    k.add_tuple_rows(D, feats, np.array([0, 1], dtype=np.int64), np.ones(2), 3, V, F, tc, tf)
