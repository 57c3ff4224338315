"""Pair counts held pair by pair (:class:`~stream_nb.stats.tables.PairBlocks`), added in compiled loops.

The row of attribute f is an array (n_f, S_f, C), S_f the values of the attributes after f: value a of f
and value b of g > f at column ``prefix[g] - prefix[f + 1] + b``, the class last. ``loc[u]``: the place of
column u among its attribute's values.
"""

from __future__ import annotations

import math

import numpy as np

from . import _common, _dense_scores
from ._addresses import NO_DETECTOR

#: Ratios multiplied before one logarithm (as in ``_tree.py``).
_BLOCK = 8

__all__ = ["add_block_rows", "block_bayes_gains", "block_cells", "block_cmi", "block_cmi_pairs", "copy_counts", "dense_blocks",
           "move_blocks", "move_counts", "tree_block_pairs", "warm"]


def add_block_rows(D, dfeats, yc, w, loc, prefix, start, C, cells, diag):
    """Add each row of ``D`` (value columns of features ``dfeats``; -1 missing), in row order, with class
    ``yc[r]`` and weight ``w[r]``: every pair of its observed values of two attributes to their block
    cell once, and each observed value to its own count (``diag``)."""
    for r in range(D.shape[0]):
        _add_row(D, r, dfeats, yc[r], w[r], loc, prefix, start, C, cells, diag)


def _add_row(D, r, dfeats, c, w, loc, prefix, start, C, cells, diag):
    """Add row ``r`` of ``D`` with class ``c`` and weight ``w`` (see :func:`add_block_rows`)."""
    k = D.shape[1]
    total = prefix[prefix.shape[0] - 1]
    for j in range(k):
        u = D[r, j]
        if u < 0:
            continue
        diag[c, u] += w
        f = dfeats[j]
        base = start[f] + loc[u] * (total - prefix[f + 1]) * C - prefix[f + 1] * C
        for i in range(k):
            v = D[r, i]
            g = dfeats[i]
            if v < 0 or g <= f:
                continue
            cells[base + (prefix[g] + loc[v]) * C + c] += w


def move_blocks(old, old_n, old_prefix, old_start, old_C, new, prefix, start, C):
    """Move every cell of the layout (``old_n``, ``old_prefix``, ``old_start``, ``old_C`` classes) in ``old`` to its
    place in the larger layout (``prefix``, ``start``, ``C`` classes) in ``new``: the values of each feature keep
    their places among its values, new ones after them. ``new`` may be ``old`` itself (the layout grown in
    place): a cell's new place is never before its old one, so the cells move from the last to the first,
    each old place zeroed as it is left; ``new`` must be zero beyond the old layout. A cell without a count
    (most of them while the first events bring new values) is read, not written: its new place is zero
    already (past the old layout, in a new buffer, or an old place left), and the pages of a new buffer
    that only such cells would take are never touched."""
    old_total = old_prefix[old_prefix.shape[0] - 1]
    total = prefix[prefix.shape[0] - 1]
    F = old_n.shape[0]
    for f in range(F - 1, -1, -1):
        old_width = old_total - old_prefix[f + 1]
        width = total - prefix[f + 1]
        for a in range(old_n[f] - 1, -1, -1):
            for g in range(F - 1, f, -1):  # the block of f and g in the row of f's value a: one run
                at = old_start[f] + (a * old_width + old_prefix[g] - old_prefix[f + 1]) * old_C
                to = start[f] + (a * width + prefix[g] - prefix[f + 1]) * C
                if C == old_C:  # the same classes: the run moves whole, one stretch of cells
                    for i in range(old_n[g] * C - 1, -1, -1):
                        x = old[at + i]
                        if x != 0.0:
                            old[at + i] = 0.0
                            new[to + i] = x
                    continue
                for b in range(old_n[g] - 1, -1, -1):
                    for c in range(old_C - 1, -1, -1):
                        x = old[at + b * old_C + c]
                        if x != 0.0:
                            old[at + b * old_C + c] = 0.0
                            new[to + b * C + c] = x


def copy_counts(old, new, C, V, W):
    """Copy the nonzero cells of the region (``C``, ``V``, ``W``) of the dense table ``old`` into the zeroed
    ``new`` (at least as large): a dense pair table grown. Only the cells that hold a count are written (a
    few rows of each class while the first events bring new values), so the pages of ``new`` the others
    would take stay untouched until a count comes to them."""
    for c in range(C):
        for u in range(V):
            for v in range(W):
                x = old[c, u, v]
                if x != 0.0:
                    new[c, u, v] = x


def move_counts(flat, old_shape, used, shape):
    """Move the cells of a dense table of three axes held at the start of ``flat`` (of ``old_shape``) to their
    places in a table of ``shape`` (each axis at least as long) held there: those of the region ``used`` move,
    the others are zeroed. A cell's new place is never before its old one, so the cells move from the last to
    the first, each old place zeroed as it is left (``flat`` must be zero beyond the old table); a cell without
    a count is read, not written."""
    C0, V0, W0 = old_shape[0], old_shape[1], old_shape[2]
    V1, W1 = shape[1], shape[2]
    for c in range(C0 - 1, -1, -1):
        for u in range(V0 - 1, -1, -1):
            for v in range(W0 - 1, -1, -1):
                at = (c * V0 + u) * W0 + v
                x = flat[at]
                if x == 0.0:
                    continue
                flat[at] = 0.0
                if c < used[0] and u < used[1] and v < used[2]:
                    flat[(c * V1 + u) * W1 + v] = x


def dense_blocks(table, V, vf, loc, prefix, start, C, cells, diag):
    """Add the nonzero cells of the region (``C`` classes, ``V`` columns, ``V`` columns) of a dense pair table
    (C', V', V') to empty blocks: a cell of two attributes f < g (the row's first) to its block cell, a
    column's own cell (one of a feature) to ``diag``; the others (two values of one attribute, a column of no
    feature) none. What ``PairBlocks.add`` of the region's nonzero cells adds: each cell once."""
    total = prefix[prefix.shape[0] - 1]
    for c in range(C):
        for u in range(V):
            fu = vf[u]
            if fu < 0:
                continue
            base = start[fu] + loc[u] * (total - prefix[fu + 1]) * C - prefix[fu + 1] * C + c
            for v in range(V):
                x = table[c, u, v]
                if x == 0.0:
                    continue
                fv = vf[v]
                if v == u:
                    diag[c, u] += x
                elif fv > fu:
                    cells[base + (prefix[fv] + loc[v]) * C] += x


def block_cells(prefix, start, C, cells, diag, cols, vf, pdims, pshape, fdims, fshape, pkeys, pvals, fkeys, fvals):
    """The cells of ``pair_count`` and ``pair_feat`` that blocks stand for, as flat keys of tables of capacity
    ``pshape`` and ``fshape`` (within ``pdims`` and ``fdims``), with their counts, written to ``pkeys``/``pvals``
    and ``fkeys``/``fvals`` (room for them all); returns how many of each. ``cols``: the column of each place
    in the order of the values by feature.

    ``pair_count``: each nonzero block cell in both orientations, and each nonzero ``diag`` cell. ``pair_feat``
    (c, u, g): the sum of u's row in the block of its feature and g (its cells in the blocks' order, the
    values of g or of u's feature ascending, as numpy's ``bincount`` sums them in ``PairBlocks.feat_cells``), a
    ``diag`` cell its own feature's; a cell whose sum is 0 none. ``diag`` must hold no count of a column of no
    feature (whose ``pair_feat`` cell ``feat_cells`` files under no feature: the caller's numpy path)."""
    F = prefix.shape[0] - 1
    total = prefix[F]
    np_ = 0
    nf = 0
    row = np.zeros(C)  # u's row in the block at hand, by class
    acc = np.zeros(total * C)  # per place after f's values and class: the sum over f's values
    for f in range(F):
        width = total - prefix[f + 1]
        for a in range(prefix[f + 1] - prefix[f]):
            u = cols[prefix[f] + a]
            for g in range(f + 1, F):
                for c in range(C):
                    row[c] = 0.0
                first = start[f] + (a * width + prefix[g] - prefix[f + 1]) * C
                for b in range(prefix[g + 1] - prefix[g]):
                    v = cols[prefix[g] + b]
                    at = (prefix[g] - prefix[f + 1] + b) * C
                    for c in range(C):
                        x = cells[first + b * C + c]
                        if x == 0.0:
                            continue
                        row[c] += x
                        acc[at + c] += x
                        if c < pdims[0] and u < pdims[1] and v < pdims[2]:
                            pkeys[np_] = (c * pshape[1] + u) * pshape[2] + v
                            pvals[np_] = x
                            np_ += 1
                        if c < pdims[0] and v < pdims[1] and u < pdims[2]:
                            pkeys[np_] = (c * pshape[1] + v) * pshape[2] + u
                            pvals[np_] = x
                            np_ += 1
                for c in range(C):
                    if row[c] != 0.0 and c < fdims[0] and u < fdims[1] and g < fdims[2]:
                        fkeys[nf] = (c * fshape[1] + u) * fshape[2] + g
                        fvals[nf] = row[c]
                        nf += 1
        for q in range(width):  # the rows of the later features' values, each summed over f's values
            v = cols[prefix[f + 1] + q]
            for c in range(C):
                x = acc[q * C + c]
                if x == 0.0:
                    continue
                acc[q * C + c] = 0.0
                if c < fdims[0] and v < fdims[1] and f < fdims[2]:
                    fkeys[nf] = (c * fshape[1] + v) * fshape[2] + f
                    fvals[nf] = x
                    nf += 1
    for c in range(diag.shape[0]):
        for u in range(diag.shape[1]):
            x = diag[c, u]
            if x == 0.0:
                continue
            if c < pdims[0] and u < pdims[1] and u < pdims[2]:
                pkeys[np_] = (c * pshape[1] + u) * pshape[2] + u
                pvals[np_] = x
                np_ += 1
            g = vf[u]
            if c < fdims[0] and u < fdims[1] and g < fdims[2]:
                fkeys[nf] = (c * fshape[1] + u) * fshape[2] + g
                fvals[nf] = x
                nf += 1
    return np_, nf


def tree_block_pairs(D, dfeats, ppos, more, G, gslots, yc, weights, infl, learn, C, a, backoff, to_parent,
                     var_smoothing, class_count, value_count, feat_count, n_values, loc, prefix, start, cells, diag,
                     g_n, g_mean, g_m2, out, joint, loss, watch, det_kind, det_params, det_state, det_fbuf, det_ibuf,
                     warning):
    """:func:`~stream_nb.kernels._tree.tree_block` on pair blocks: each row of the block scored along the tree,
    then (``learn``, a labelled row) counted, in order; the rows done returned. The arguments are
    ``tree_block``'s, the pair tables replaced by the blocks (``loc`` to ``diag``, which must hold every column
    of ``D``: grown before the call) and no observed-only twin (EM's expected pairs are not held in blocks).
    Counting a row adds its class, its values and features, and every pair of its observed values once.

    Scoring a row reads the pairs of the tree's edges only (each attribute with its parent, in the blocks of
    those attribute pairs) and the values' own counts: those cells are counted as each row is, the rest of
    the rows' pairs at the end of the call (and before an early return), attribute pair by attribute pair
    (:func:`_add_off_tree`), so that the block of one pair stays in the cache while every row's pair of it is
    added. Each cell still takes its rows' additions in row order: the scores and
    the counts are those of counting every row whole before the next is scored.
    """
    R, k = D.shape
    jll = np.empty(C)
    prior = np.empty(C)
    prod = np.empty(C)
    q = np.empty(C)
    hit = np.empty(C)
    seen = np.empty(C)
    grown = more.shape[0] > 0
    decayed = infl.shape[0] > 0
    total = prefix[prefix.shape[0] - 1]
    a0, m0 = a, backoff
    for r in range(R):
        if decayed:
            a, backoff = a0 * infl[r], m0 * infl[r]
        _common.log_prior_row(class_count, C, a, prior)
        for c in range(C):
            jll[c] = prior[c]
            prod[c] = 1.0
        n = 0
        for j in range(k):
            v = D[r, j]
            if v < 0:
                continue
            f = dfeats[j]
            an = a * (n_values[f] + (more[r, f] if grown else 0) + (1 if v == 0 else 0))
            p = ppos[j]
            if p < 0:
                for c in range(C):
                    prod[c] *= (value_count[c, v] + a) / (feat_count[c, f] + an)
            else:
                _edge_cells(D[r, p], dfeats[p], v, f, loc, prefix, start, C, cells, hit, seen)
                if backoff > 0.0 and to_parent:
                    hits = 0.0
                    seen_all = 0.0
                    for c in range(C):
                        hits += hit[c]
                        seen_all += seen[c]
                    base = backoff * (hits + a) / (seen_all + an)
                    for c in range(C):
                        prod[c] *= (hit[c] + base) / (seen[c] + backoff)
                elif backoff > 0.0:
                    for c in range(C):
                        base = (value_count[c, v] + a) / (feat_count[c, f] + an)
                        prod[c] *= (hit[c] + backoff * base) / (seen[c] + backoff)
                else:
                    for c in range(C):
                        prod[c] *= (hit[c] + a) / (seen[c] + an)
            n += 1
            if n % _BLOCK == 0:
                for c in range(C):
                    jll[c] += math.log(prod[c])
                    prod[c] = 1.0
        for c in range(C):
            jll[c] += math.log(prod[c])
        _common.finish_row(jll, G[r], gslots, g_n, g_mean, g_m2, C, var_smoothing, q, joint, prior, out[r])
        c = yc[r]
        if watch and c >= 0 and _common.watch_row(out[r], C, loss, c, det_kind, det_params, det_state, det_fbuf,
                                                  det_ibuf, warning):
            if learn:
                _add_off_tree(D, 0, r, dfeats, ppos, yc, weights, decayed, loc, prefix, start, C, cells)
            return r
        if not learn or c < 0:
            continue
        w = weights[r] if decayed else 1.0
        class_count[c] += w
        for j in range(k):
            v = D[r, j]
            if v < 0:
                continue
            value_count[c, v] += w
            feat_count[c, dfeats[j]] += w
            diag[c, v] += w
            p = ppos[j]
            if p < 0:
                continue
            u = D[r, p]
            if u < 0:
                continue
            f, fp = dfeats[j], dfeats[p]
            if fp < f:  # the edge's block cell: row u of the parent's attribute, or row v of the child's
                cells[start[fp] + (loc[u] * (total - prefix[fp + 1]) + prefix[f] - prefix[fp + 1] + loc[v]) * C
                      + c] += w
            else:
                cells[start[f] + (loc[v] * (total - prefix[f + 1]) + prefix[fp] - prefix[f + 1] + loc[u]) * C
                      + c] += w
        _common.add_gaussian(G[r], gslots, c, w, g_n, g_mean, g_m2)
    if learn:
        _add_off_tree(D, 0, R, dfeats, ppos, yc, weights, decayed, loc, prefix, start, C, cells)
    return R


def _edge_cells(u, fu, v, fv, loc, prefix, start, C, cells, hit, seen):
    """``hit[c]``: ``pair_count[c, u, v]``, and ``seen[c]``: ``pair_feat[c, u, fv]`` (the sum of u's row in the
    block, over fv's values in order) off the blocks (``u`` a column of feature ``fu``, ``v`` of ``fv`` != ``fu``),
    a column never seen (0) holding none."""
    if u == 0:
        for c in range(C):
            hit[c] = 0.0
            seen[c] = 0.0
        return
    total = prefix[prefix.shape[0] - 1]
    if fu < fv:  # u's row in the block of fu and fv: v's values one after the other
        at = start[fu] + (loc[u] * (total - prefix[fu + 1]) + prefix[fv] - prefix[fu + 1]) * C
        step = C
    else:  # u's column in the block of fv and fu: each of v's values in its own row
        at = start[fv] + (prefix[fu] - prefix[fv + 1] + loc[u]) * C
        step = (total - prefix[fv + 1]) * C
    for c in range(C):
        seen[c] = 0.0
        hit[c] = 0.0 if v == 0 else cells[at + loc[v] * step + c]
    for b in range(prefix[fv + 1] - prefix[fv]):
        for c in range(C):
            seen[c] += cells[at + b * step + c]


def _add_off_tree(D, lo, hi, dfeats, ppos, yc, weights, decayed, loc, prefix, start, C, cells):
    """Add the pairs of rows ``lo`` to ``hi`` - 1 (each labelled one, class ``yc[r]``, weight ``weights[r]``
    when ``decayed``, else 1) but those of the tree's edges (``ppos``: see :func:`tree_block_pairs`): attribute
    pair by attribute pair, in the order of the features, for each every row in order, so that the block of
    the pair (a few cache lines) takes all the rows' additions while it is in the cache."""
    k = D.shape[1]
    n = hi - lo
    order = np.argsort(dfeats)
    at = np.empty(k, dtype=np.int64)  # each column's place in that order
    for ja in range(k):
        at[order[ja]] = ja
    # each attribute's values (in that order) in each row, as the offset of their cells in a row of an earlier
    # attribute (-1: missing), one attribute's rows together
    Q = np.empty((k, n), dtype=np.int64)
    for r in range(lo, hi):
        for ja in range(k):
            v = D[r, order[ja]]
            Q[ja, r - lo] = (prefix[dfeats[order[ja]]] + loc[v]) * C if v >= 0 else -1
    w = np.empty(n)
    for r in range(lo, hi):
        w[r - lo] = weights[r] if decayed else 1.0
    # the tree's edges by the place of their earlier end: the places of their later ends, in order
    ends = np.zeros(k + 1, dtype=np.int64)
    for j in range(k):
        p = ppos[j]
        if p >= 0:
            ends[min(at[j], at[p]) + 1] += 1
    for ja in range(k):
        ends[ja + 1] += ends[ja]
    later = np.empty(ends[k], dtype=np.int64)
    fill = ends[:k].copy()
    for j in range(k):
        p = ppos[j]
        if p >= 0:
            e = min(at[j], at[p])
            later[fill[e]] = max(at[j], at[p])
            fill[e] += 1
    for ja in range(k):
        later[ends[ja]:ends[ja + 1]].sort()
    total = prefix[prefix.shape[0] - 1]
    row = np.empty(n, dtype=np.int64)  # each row's cells in the row of the earlier attribute's value
    has = np.empty(n, dtype=np.bool_)  # whether the row adds them (labelled, that attribute observed)
    for ja in range(k):
        f = dfeats[order[ja]]
        width = (total - prefix[f + 1]) * C
        first = start[f] - prefix[f + 1] * C
        for r in range(lo, hi):
            c = yc[r]
            u = D[r, order[ja]]
            has[r - lo] = c >= 0 and u >= 0
            row[r - lo] = first + loc[u] * width + c
        ib = ja + 1
        for e in range(ends[ja], ends[ja + 1] + 1):  # the runs of attributes between two edges
            stop = later[e] if e < ends[ja + 1] else k
            for i in range(ib, stop):
                for q in range(n):
                    v = Q[i, q]
                    if v >= 0 and has[q]:
                        cells[row[q] + v] += w[q]
            ib = stop + 1


def block_cmi(prefix, start, C, cells, out):
    """``out[f, g]`` (F, F): I(x_f; x_g | y) of every pair of features from its block, over the events in
    which both were observed (0 for a pair without events, and on the diagonal), as
    ``learners/_structure.py: conditional_mutual_information`` computes it from a dense table."""
    F = prefix.shape[0] - 1
    col = np.empty(_most_values(prefix))
    for f in range(F):
        out[f, f] = 0.0
        for g in range(f + 1, F):
            out[f, g] = out[g, f] = _pair_cmi(prefix, start, C, cells, f, g, col)


def block_cmi_pairs(prefix, start, C, cells, fs, gs, out):
    """``out[f, g]`` and ``out[g, f]``, for each pair of features ``f = fs[i]`` and ``g = gs[i]`` (f != g):
    their I(x_f; x_g | y), as :func:`block_cmi` gives it; the other cells of ``out`` as they are."""
    col = np.empty(_most_values(prefix))
    for i in range(fs.shape[0]):
        f, g = min(fs[i], gs[i]), max(fs[i], gs[i])
        out[f, g] = out[g, f] = _pair_cmi(prefix, start, C, cells, f, g, col)


def _most_values(prefix):
    """The most values a feature has."""
    most = 0
    for f in range(prefix.shape[0] - 1):
        most = max(most, prefix[f + 1] - prefix[f])
    return most


def _pair_cmi(prefix, start, C, cells, f, g, col):
    """I(x_f; x_g | y) from the block of features f < g (0 without events); ``col``: room for g's values."""
    total = prefix[prefix.shape[0] - 1]
    n_f = prefix[f + 1] - prefix[f]
    width = total - prefix[f + 1]
    n_g = prefix[g + 1] - prefix[g]
    first = start[f] + (prefix[g] - prefix[f + 1]) * C  # cell (x, b, c): first + (x * width + b) * C + c
    mi = 0.0
    seen = 0.0
    for c in range(C):
        whole = 0.0
        for b in range(n_g):
            col[b] = 0.0
            for x in range(n_f):
                col[b] += cells[first + (x * width + b) * C + c]
            whole += col[b]
        if whole <= 0.0:
            continue
        seen += whole
        for x in range(n_f):
            row = 0.0
            for b in range(n_g):
                row += cells[first + (x * width + b) * C + c]
            for b in range(n_g):
                p = cells[first + (x * width + b) * C + c]
                if p > 0.0:
                    mi += p * math.log(p * whole / (row * col[b]))
    v = mi / seen if seen > 0.0 else 0.0
    return max(v, 0.0)


def _gain_terms(lg_cells, rows, cols, whole, va_head, head_table, alpha, table, n_rows, n_cols, by_row):
    """One class's part of a gain (see :func:`block_bayes_gains`): ``by_row``, the head's values are the
    columns (its parent's the rows); else the other way. ``head_table[n]``: lgamma(va_head + n) -
    lgamma(va_head)."""
    g = lg_cells
    parents, heads = (rows, cols) if by_row else (cols, rows)
    n_p, n_h = (n_rows, n_cols) if by_row else (n_cols, n_rows)
    for x in range(n_p):
        if parents[x] != 0.0:
            g -= _dense_scores._lg(parents[x], va_head, head_table)
    for b in range(n_h):
        if heads[b] != 0.0:
            g -= _dense_scores._lg(heads[b], alpha, table)
    g += _dense_scores._lg(whole, va_head, head_table)
    return g


def block_bayes_gains(prefix, start, C, cells, alpha, va, table, out):
    """``out[J, I]`` (F, F): the gain in attribute I's local Bayesian-Dirichlet score from x_J as its second
    parent, summed over the classes, each count over the events that observed both (as
    :func:`~stream_nb.kernels._dense_scores.dense_bayes_gains` reads a dense table); ``va`` (F,): V_I alpha of
    each feature, ``table[n]``: lgamma(alpha + n) - lgamma(alpha)."""
    F = prefix.shape[0] - 1
    total = prefix[F]
    most = _most_values(prefix)
    rows, cols = np.empty(most), np.empty(most)
    # lgamma(V_I alpha + n) - lgamma(V_I alpha) of the whole counts, for each distinct V_I alpha
    heads = np.unique(va)
    head = np.searchsorted(heads, va)
    head_tables = np.empty((heads.shape[0], table.shape[0]))
    for h in range(heads.shape[0]):
        for n in range(table.shape[0]):
            head_tables[h, n] = math.lgamma(heads[h] + n) - math.lgamma(heads[h])
    for f in range(F):
        out[f, f] = 0.0
        n_f = prefix[f + 1] - prefix[f]
        width = total - prefix[f + 1]
        for g in range(f + 1, F):
            n_g = prefix[g + 1] - prefix[g]
            first = start[f] + (prefix[g] - prefix[f + 1]) * C
            to_g = 0.0  # the gain of g from f as its parent
            to_f = 0.0
            for c in range(C):
                lg_cells = 0.0
                whole = 0.0
                for b in range(n_g):
                    cols[b] = 0.0
                for x in range(n_f):
                    rows[x] = 0.0
                    for b in range(n_g):
                        p = cells[first + (x * width + b) * C + c]
                        if p != 0.0:
                            rows[x] += p
                            cols[b] += p
                            lg_cells += _dense_scores._lg(p, alpha, table)
                    whole += rows[x]
                if whole == 0.0:
                    continue
                to_g += _gain_terms(lg_cells, rows, cols, whole, va[g], head_tables[head[g]], alpha, table, n_f, n_g,
                                    True)
                to_f += _gain_terms(lg_cells, rows, cols, whole, va[f], head_tables[head[f]], alpha, table, n_f, n_g,
                                    False)
            out[f, g] = to_g
            out[g, f] = to_f


def warm(k) -> None:
    """Compile :func:`add_block_rows` for the types the store passes."""
    D, feats = np.array([[1, 3], [2, -1]], dtype=np.int64), np.array([0, 1], dtype=np.int64)
    loc, prefix = np.array([-1, 0, 1, 0], dtype=np.int64), np.array([0, 2, 3], dtype=np.int64)
    start = np.array([0, 4, 4], dtype=np.int64)
    cells, diag = np.zeros(4), np.zeros((2, 4))
    k.add_block_rows(D, feats, np.array([0, 1], dtype=np.int64), np.ones(2), loc, prefix, start, 2, cells, diag)
    cc, vc, fc, nv = np.ones(2), np.ones((2, 4)), np.ones((2, 2)), np.array([2, 1], dtype=np.int64)
    k.block_cmi(prefix, start, 2, cells, np.empty((2, 2)))
    k.block_cmi_pairs(prefix, start, 2, cells, np.array([1], dtype=np.int64), np.array([0], dtype=np.int64),
                      np.zeros((2, 2)))
    k.move_blocks(cells, np.array([2, 1], dtype=np.int64), prefix, start, 2, cells, prefix, start, 2)
    k.copy_counts(np.zeros((2, 4, 4)), np.zeros((3, 5, 5)), 2, 4, 4)
    shape3 = np.array([2, 4, 4], dtype=np.int64)
    k.move_counts(np.zeros(64), shape3, shape3, np.array([2, 5, 5], dtype=np.int64))
    k.dense_blocks(np.zeros((2, 4, 4)), 4, np.array([-1, 0, 0, 1], dtype=np.int64), loc, prefix, start, 2, cells, diag)
    dims, keys = np.array([2, 4, 4], dtype=np.int64), np.zeros(16, dtype=np.int64)
    k.block_cells(prefix, start, 2, cells, diag, np.array([1, 2, 3, 0], dtype=np.int64),
                  np.array([-1, 0, 0, 1], dtype=np.int64), dims, dims, dims, dims, keys, np.zeros(16), keys.copy(),
                  np.zeros(16))
    k.block_bayes_gains(prefix, start, 2, cells, 1.0, np.ones(2), np.zeros(4), np.empty((2, 2)))
    gn, G = np.zeros((2, 1)), np.array([[0.5], [1.5]])
    for more in (np.zeros((0, 0), dtype=np.int64), np.zeros((2, 2), dtype=np.int64)):
        for decay in (np.zeros(0), np.ones(2)):
            k.tree_block_pairs(D, feats, np.array([-1, 0], dtype=np.int64), more, G, np.array([0], dtype=np.int64),
                               np.array([0, 1], dtype=np.int64), decay, decay, True, 2, 1.0, 0.0, False, 1e-9, cc, vc,
                               fc, nv, loc, prefix, start, cells, diag, gn, gn.copy(), gn.copy(), np.empty((2, 2)),
                               False, np.zeros((0, 0)), *NO_DETECTOR)
