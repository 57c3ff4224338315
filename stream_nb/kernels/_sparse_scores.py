"""AODE's, TAN's and KDB's scores read from sparse tables (a memory budget's, :mod:`stream_nb.kernels._hashed`).

Each function scores the rows of a block under the counts as they stand, the one-dependence terms read cell
by cell from the hash tables (``pkeys``/``pvals`` of ``pair_count``, shape ``pshape``; ``fkeys``/``fvals``
of ``pair_feat``, ``fshape``), a block of ratios multiplied before one logarithm.
``D`` (rows, k): the value columns of features ``dfeats`` (-1: missing; 0: a value never seen, one more
value of its feature); ``out[r, :C]``: the joint log-likelihood with ``joint``, else the log posterior.
"""

from __future__ import annotations

import math

import numpy as np

from . import _common, _hashed

__all__ = ["aode_sparse", "kdb_sparse", "spode_terms_sparse", "tree_sparse", "warm"]

#: Ratios multiplied before one logarithm (each in (0, 1] up to rounding, at least a / (count + a N)).
_BLOCK = 8


def _row(D, r, dfeats, n_values, a, u, f, an):
    """The observed values of row ``r`` into ``u``, their features into ``f`` and a N_f into ``an``; their count."""
    n = 0
    for j in range(D.shape[1]):
        v = D[r, j]
        if v < 0:
            continue
        u[n] = v
        f[n] = dfeats[j]
        an[n] = a * (n_values[dfeats[j]] + (1 if v == 0 else 0))
        n += 1
    return n


def _rooted(c, i, u, f, an, n, d, a, children, K, value_count, feat_count, pshape, fshape, pkeys, pvals, fkeys,
            fvals, pshift, fshift, prows, frows, slot, at, pgot, fgot):
    """log P̂(c, x_i) + Σ_{j≠i} log P̂(x_j | c, x_i): the SPODE rooted at the row's value ``u[i]`` in class ``c``
    (``d``: the events that observed x_i's feature), a child not among ``children`` read given the class. A
    row (c, u[i]) that the tables' indexes ``prows``/``frows`` say holds no cell reads 0 without a lookup; a
    row held has every child's cell read first (:func:`~stream_nb.kernels._hashed.hashed_gather`, into
    ``pgot``/``fgot``, length k, with ``slot`` and ``at``), the products then taken in child order as before."""
    pr, fr = c * pshape[1] + u[i], c * fshape[1] + u[i]
    pheld, fheld = _hashed.row_held(prows, pr), _hashed.row_held(frows, fr)
    prow = pr * pshape[2]
    frow = fr * fshape[2]
    if pheld:
        _hashed.hashed_gather(pkeys, pvals, prow, u, n, pshift, slot, at, pgot)
    if fheld:
        _hashed.hashed_gather(fkeys, fvals, frow, f, n, fshift, slot, at, fgot)
    acc = math.log(value_count[c, u[i]] + a) - math.log(d + an[i])
    prod = 1.0
    cnt = 0
    for j in range(n):
        if j == i:
            continue
        if f[i] < K and f[j] < K and children[f[i], f[j]] == 0:
            num = value_count[c, u[j]] + a
            den = feat_count[c, f[j]] + an[j]
        else:
            num = (pgot[j] if pheld else 0.0) + a
            den = (fgot[j] if fheld else 0.0) + an[j]
        prod *= num / den
        cnt += 1
        if cnt == _BLOCK:
            acc += math.log(prod)
            prod = 1.0
            cnt = 0
    return acc + math.log(prod)


def spode_terms_sparse(cols, feats, C, a, selected, allowed, value_count, feat_count, n_values, pshape, fshape, pkeys,
                       pvals, fkeys, fvals, prows, frows, terms):
    """``terms[:C, i]``: the SPODE rooted at each observed value ``cols[i]`` of one event (features ``feats``),
    as :func:`aode_sparse` sums them, over sparse pair tables (``prows``, ``frows``: their indexes of the rows
    they hold, or empty); with ``selected``, of the ``allowed`` features alone (0 for the others)."""
    k = cols.shape[0]
    u = np.empty(k, dtype=np.int64)
    f = np.empty(k, dtype=np.int64)
    an = np.empty(k)
    n = _row(cols.reshape((1, k)), 0, feats, n_values, a, u, f, an)
    slot, at, pgot, fgot = np.empty(k, dtype=np.int64), np.empty(k, dtype=np.int64), np.empty(k), np.empty(k)
    pshift, fshift = _hashed.hashed_shift(pkeys), _hashed.hashed_shift(fkeys)
    F = allowed.shape[0]
    none = np.zeros((0, 0), dtype=np.int8)
    for i in range(n):
        d = 0.0
        for c in range(C):
            d += feat_count[c, f[i]]
        for c in range(C):
            terms[c, i] = 0.0
            if not selected or (f[i] < F and allowed[f[i]]):
                terms[c, i] = _rooted(c, i, u, f, an, n, d, a, none, 0, value_count, feat_count, pshape, fshape,
                                      pkeys, pvals, fkeys, fvals, pshift, fshift, prows, frows, slot, at, pgot, fgot)


def aode_sparse(D, dfeats, C, a, m_limit, selected, allowed, children, class_count, value_count, feat_count, n_values,
                pshape, fshape, pkeys, pvals, fkeys, fvals, prows, frows, joint, out):
    """AODE: log Σ_i P̂(c, x_i) Π_{j≠i} P̂(x_j | c, x_i) over the parents x_i seen at least ``m_limit`` times
    (with ``selected``, of the ``allowed`` features alone, the rows a selection keeps); naive Bayes over the
    same counts when none is. ``children`` (K, K), or (0, 0) for every pair: as
    :func:`~stream_nb.kernels._spodes.rooted_chosen`, a child not chosen for its parent read given the class.
    ``prows``, ``frows``: the tables' indexes of the rows they hold (empty: none), whose empty rows are not read."""
    R, k = D.shape
    u = np.empty(k, dtype=np.int64)
    f = np.empty(k, dtype=np.int64)
    an = np.empty(k)
    terms = np.empty((C, k))
    slot, at, pgot, fgot = np.empty(k, dtype=np.int64), np.empty(k, dtype=np.int64), np.empty(k), np.empty(k)
    jll = np.empty(C)
    prior = np.empty(C)
    pshift, fshift = _hashed.hashed_shift(pkeys), _hashed.hashed_shift(fkeys)
    F = allowed.shape[0]
    K = children.shape[0]
    for r in range(R):
        n = _row(D, r, dfeats, n_values, a, u, f, an)
        _common.log_prior_row(class_count, C, a, prior)
        m = 0
        for i in range(n):
            seen = 0.0
            d = 0.0
            for c in range(C):
                seen += value_count[c, u[i]]
                d += feat_count[c, f[i]]
            if seen < m_limit or (selected and not (f[i] < F and allowed[f[i]])):
                continue
            for c in range(C):
                terms[c, m] = _rooted(c, i, u, f, an, n, d, a, children, K, value_count, feat_count, pshape, fshape,
                                      pkeys, pvals, fkeys, fvals, pshift, fshift, prows, frows, slot, at, pgot, fgot)
            m += 1
        if m == 0:  # naive Bayes over the same counts
            for c in range(C):
                acc = prior[c]
                for i in range(n):
                    acc += math.log(value_count[c, u[i]] + a) - math.log(feat_count[c, f[i]] + an[i])
                jll[c] = acc
        else:
            for c in range(C):
                top = -math.inf
                for q in range(m):
                    if terms[c, q] > top:
                        top = terms[c, q]
                s = 0.0
                for q in range(m):
                    s += math.exp(terms[c, q] - top)
                jll[c] = top + math.log(s)
        if joint:
            for c in range(C):
                out[r, c] = jll[c]
        else:
            _common.normalise_row(jll, prior, C, out[r])


def tree_sparse(D, dfeats, ppos, C, a, backoff, to_parent, class_count, value_count, feat_count, n_values, pshape,
                fshape, pkeys, pvals, fkeys, fvals, joint, out):
    """TAN: log P̂(c) + Σ_i log P̂(x_i | c, x_pa(i)), ``ppos[j]`` the column of ``D`` that holds the parent of
    feature ``dfeats[j]`` (-1: a root, read as naive Bayes; every observed attribute's parent observed). A
    child's estimate is Lidstone's, or with ``backoff`` m > 0 the m-estimate toward P̂(x_i | c) or, with
    ``to_parent``, toward P̂(x_i | x_pa(i)) over every class, as :func:`~stream_nb.kernels._tree.tree_block`
    reads them from dense tables."""
    R, k = D.shape
    jll = np.empty(C)
    prior = np.empty(C)
    prod = np.empty(C)
    pshift, fshift = _hashed.hashed_shift(pkeys), _hashed.hashed_shift(fkeys)
    for r in range(R):
        _common.log_prior_row(class_count, C, a, prior)
        for c in range(C):
            jll[c] = prior[c]
            prod[c] = 1.0
        n = 0
        for j in range(k):
            v = D[r, j]
            if v < 0:
                continue
            fj = dfeats[j]
            an = a * max(n_values[fj] + (1 if v == 0 else 0), 1)
            p = ppos[j]
            if p < 0:
                for c in range(C):
                    prod[c] *= (value_count[c, v] + a) / (feat_count[c, fj] + an)
            else:
                w = D[r, p]
                base = 0.0
                if backoff > 0.0 and to_parent:
                    hits = 0.0
                    seen = 0.0
                    for c in range(C):
                        hits += _hashed.hashed_get(pkeys, pvals, (c * pshape[1] + w) * pshape[2] + v, pshift)
                        seen += _hashed.hashed_get(fkeys, fvals, (c * fshape[1] + w) * fshape[2] + fj, fshift)
                    base = backoff * (hits + a) / (seen + an)
                for c in range(C):
                    num = _hashed.hashed_get(pkeys, pvals, (c * pshape[1] + w) * pshape[2] + v, pshift)
                    den = _hashed.hashed_get(fkeys, fvals, (c * fshape[1] + w) * fshape[2] + fj, fshift)
                    if backoff > 0.0 and to_parent:  # (the expressions of tree_block's)
                        prod[c] *= (num + base) / (den + backoff)
                    elif backoff > 0.0:
                        base = (value_count[c, v] + a) / (feat_count[c, fj] + an)
                        prod[c] *= (num + backoff * base) / (den + backoff)
                    else:
                        prod[c] *= (num + a) / (den + an)
            n += 1
            if n % _BLOCK == 0:
                for c in range(C):
                    jll[c] += math.log(prod[c])
                    prod[c] = 1.0
        for c in range(C):
            jll[c] += math.log(prod[c])
        if joint:
            for c in range(C):
                out[r, c] = jll[c]
        else:
            _common.normalise_row(jll, prior, C, out[r])



def _flat(shape, idx, n):
    """The flat key of cell ``idx[:n]`` of a C-ordered table of capacity ``shape``."""
    key = 0
    for d in range(n):
        key = key * shape[d] + idx[d]
    return key


def kdb_sparse(D, feats, groups, npar, par, C, a, value_count, feat_count, n_values, pairs, tshape, fshape, tkeys,
               tvals, fkeys, fvals, ratios):
    """The ratios of KDB's terms log P̂(x_f | c, x_pa(f)) for each row of ``D`` (columns by feature index; -1
    missing), read off sparse tables: the features ``feats`` in groups (``feats[groups[g]:groups[g + 1]]``),
    feature ``feats[i]`` with parents ``par[i, :npar[i]]``. Group g's ratios fill its own block of ``ratios``,
    (C, rows, g's size) in C order from ``C * rows * groups[g]``, as numpy lays out the terms it logs and
    sums (``learners/kdb.py: _terms``, which takes their logarithms in numpy: numba's ``math.log`` and
    numpy's differ in the last digit of some values). A term whose feature or a parent is missing is 1.0 (its
    logarithm 0, left out); a value never seen (column 0) is one more value of its feature. A root's ratio
    reads the value counts; with parents, the cell of ``tuple_count`` (``tshape``: the class, the child's
    value, then one value per parent slot, a feature with fewer parents than slots repeating its last) over
    the cell of ``tuple_feat`` (``fshape``: the class, the parent slots, the feature); with ``pairs`` (k = 1)
    the cell of ``pair_count`` (the class, the parent's value, the child's) over that of ``pair_feat`` (the
    class, the parent's value, the feature). Each ratio is (count + a) / (count + a N), as numpy computes it."""
    R = D.shape[0]
    slots = tshape.shape[0] - 2
    tshift, fshift = _hashed.hashed_shift(tkeys), _hashed.hashed_shift(fkeys)
    tidx = np.empty(tshape.shape[0], dtype=np.int64)
    fidx = np.empty(fshape.shape[0], dtype=np.int64)
    for g in range(groups.shape[0] - 1):
        lo = groups[g]
        n = groups[g + 1] - lo
        base = C * R * lo
        for r in range(R):
            for q in range(n):
                i = lo + q
                f = feats[i]
                v = D[r, f]
                seen = v >= 0
                for j in range(npar[i]):
                    if D[r, par[i, j]] < 0:
                        seen = False
                if not seen:
                    for c in range(C):
                        ratios[base + (c * R + r) * n + q] = 1.0
                    continue
                an = a * (n_values[f] + (1 if v == 0 else 0))
                if npar[i] == 0:
                    for c in range(C):
                        ratios[base + (c * R + r) * n + q] = (value_count[c, v] + a) / (feat_count[c, f] + an)
                    continue
                for j in range(slots):
                    u = D[r, par[i, min(j, npar[i] - 1)]]
                    tidx[2 + j] = u
                    fidx[1 + j] = u
                tidx[1] = v
                if pairs:
                    tidx[1], tidx[2] = tidx[2], v
                fidx[slots + 1] = f
                for c in range(C):
                    tidx[0] = c
                    fidx[0] = c
                    num = _hashed.hashed_get(tkeys, tvals, _flat(tshape, tidx, tshape.shape[0]), tshift)
                    den = _hashed.hashed_get(fkeys, fvals, _flat(fshape, fidx, fshape.shape[0]), fshift)
                    ratios[base + (c * R + r) * n + q] = (num + a) / (den + an)


def warm(k) -> None:
    """Compile the kernels for the types the models pass."""
    C, V, F = 2, 5, 2
    cc, vc, fc = np.ones(C), np.ones((C, V)), np.ones((C, F))
    nv = np.array([2, 2], dtype=np.int64)
    keys, vals = np.full(16, -1, dtype=np.int64), np.zeros(16)
    D, feats = np.array([[1, 3]], dtype=np.int64), np.array([0, 1], dtype=np.int64)
    shape, out = np.array([C, V, V], dtype=np.int64), np.empty((1, C))
    rows = np.zeros(0, dtype=np.uint8)
    for selected in (False, True):
        for children in (np.zeros((0, 0), dtype=np.int8), np.ones((F, F), dtype=np.int8)):
            k.aode_sparse(D, feats, C, 1.0, 1.0, selected, np.ones(F, dtype=bool), children, cc, vc, fc, nv, shape,
                          shape, keys, vals, keys, vals, rows, rows, False, out)
    k.tree_sparse(D, feats, np.array([-1, 0], dtype=np.int64), C, 1.0, 0.0, False, cc, vc, fc, nv, shape, shape, keys,
                  vals, keys, vals, True, out)
    for selected in (False, True):
        k.spode_terms_sparse(D[0], feats, C, 1.0, selected, np.ones(F, dtype=bool), vc, fc, nv, shape, shape, keys,
                             vals, keys, vals, rows, rows, np.empty((C, 2)))
    tshape, fshape = np.array([C, V, V, V], dtype=np.int64), np.array([C, V, V, F], dtype=np.int64)
    for pairs, (ts, fs) in ((False, (tshape, fshape)), (True, (shape, shape))):
        k.kdb_sparse(D, feats, np.array([0, 1, 2], dtype=np.int64), np.array([0, 2], dtype=np.int64),
                     np.array([[0, 0], [0, 0]], dtype=np.int64), C, 1.0, vc, fc, nv, pairs, ts, fs, keys, vals, keys,
                     vals, np.empty(2 * C))
