"""KDB over sparse (k+1)-way tables, compiled: each event of a block scored from the counts as they stand, then
counted, in order (:func:`~stream_nb.kernels._kdb.kdb_block` reads and adds dense tables).

A term's ratio is read cell by cell off the hash tables (:mod:`._hashed`): ``tuple_count[c, x_i, u_1, ..,
u_(t-1)]`` over ``tuple_feat[c, u_1, .., u_(t-1), i]`` (an attribute with fewer parents repeating its last
one), as :func:`~stream_nb.kernels._sparse_scores.kdb_sparse` reads them, the ratios multiplied in blocks
before one logarithm as ``kdb_block`` multiplies them. Counting a labelled row adds its class and values, its
pairs (to dense pair tables, or to pair blocks: each value's own count at once, the block cells, which no score
of KDB's reads, at the end of the call attribute pair by attribute pair, as
:func:`~stream_nb.kernels._pair_blocks.tree_block_pairs` adds the pairs off its tree) and the t-tuples of its
candidate parents that a selection keeps (:func:`~stream_nb.kernels._tuples.selected_tuple_rows`' cells, in
their order). The tables are never grown here: a row that could take a table past half its slots, or the first
one the caller has not looked at, stops the call once it is scored, for the store to check its budget and make
room (``stats/selection/_tuple_candidates.py``).
"""

from __future__ import annotations

import numpy as np

from . import _common, _hashed, _pair_blocks, _tree, _tuples

__all__ = ["kdb_block_sparse", "warm"]

_BLOCK = 8
_NONE = np.zeros(0)


def _flat_head(D, r, par, j, npa, t, shape, first, key):
    """``key`` carried on through the parents' values of row ``r`` in base ``shape[first:]`` (parent slot i
    of feature column ``j``: ``par[j, min(i, npa - 1)]``)."""
    for i in range(t - 1):
        key = key * shape[first + i] + D[r, par[j, min(i, npa - 1)]]
    return key


def kdb_block_sparse(D, dfeats, par, npar, G, gslots, yc, first, checked, learn, C, a, var_smoothing, class_count,
                     value_count, feat_count, n_values, t, cshape, fshape, ckeys, cvals, fkeys, fvals, lists, held,
                     room, blocks, pair_count, pair_feat, loc, prefix, start, cells, diag, g_n, g_mean, g_m2, out,
                     joint, priors):
    """Score each row of ``D`` (columns of features ``dfeats``, -1 missing) into ``out`` from row ``first`` on
    (the rows before it were scored by the caller), then (``learn``, a labelled row) count it; return the rows
    counted or passed.

    ``par``, ``npar``, ``G``, ``gslots``, ``out``, ``joint`` as in :func:`~stream_nb.kernels._kdb.kdb_block`, and
    ``priors[r]`` (rows of ``out``, or none) each scored row's log prior (what the learner normalises a joint
    row with, in numpy as one event's prediction is, where the log posteriors are wanted to the last digit);
    ``t`` >= 3 the tables' order, ``cshape``/``ckeys``/``cvals`` the sparse ``tuple_count``, ``fshape``/
    ``fkeys``/``fvals`` ``tuple_feat``, ``lists[f]`` the candidate parents of feature f (-1 padded), ``held``
    the cells each table holds (updated), ``room`` the most cells a row adds to one. ``blocks``: the pairs are
    pair blocks (``loc`` to ``diag``, holding every column of ``D``), else the dense ``pair_count`` and
    ``pair_feat``. The call stops at a labelled row to learn, scored and not counted, when either table could
    pass half its slots with it, or when it is the first such row and not ``checked`` (the caller has not made
    the store's room check for it): its index is returned.
    """
    R, k = D.shape
    jll = np.empty(C)
    prior = np.empty(C)
    prod = np.empty(C)
    q = np.empty(C)
    cshift, fshift = _hashed.hashed_shift(ckeys), _hashed.hashed_shift(fkeys)
    cstride = 1  # a class's span of keys in each table
    for i in range(1, cshape.shape[0]):
        cstride *= cshape[i]
    fstride = 1
    for i in range(1, fshape.shape[0]):
        fstride *= fshape[i]
    pos, slots, spar = _tuples._feature_columns(dfeats, lists, t)
    done = R
    for r in range(R):
        if r >= first:
            _common.log_prior_row(class_count, C, a, prior)
            for c in range(C):
                jll[c] = prior[c]
                prod[c] = 1.0
                if priors.shape[0]:
                    priors[r, c] = prior[c]
            n = 0
            for j in range(k):
                v = D[r, j]
                if v < 0:
                    continue
                npa = npar[j]
                if npa < 0:  # left out of the product by a selection
                    continue
                f = dfeats[j]
                an = a * (n_values[f] + (1 if v == 0 else 0))
                if npa == 0:
                    for c in range(C):
                        prod[c] *= (value_count[c, v] + a) / (feat_count[c, f] + an)
                else:
                    key = _flat_head(D, r, par, j, npa, t, cshape, 2, v)  # (class 0, x_i, the parents)
                    fkey = _flat_head(D, r, par, j, npa, t, fshape, 1, 0) * fshape[t] + f
                    for c in range(C):
                        num = _hashed.hashed_get(ckeys, cvals, c * cstride + key, cshift)
                        den = _hashed.hashed_get(fkeys, fvals, c * fstride + fkey, fshift)
                        prod[c] *= (num + a) / (den + an)
                n += 1
                _tree.blocked_log(prod, jll, C, n % _BLOCK == 0)
            _tree.blocked_log(prod, jll, C, True)
            _common.finish_row(jll, G[r], gslots, g_n, g_mean, g_m2, C, var_smoothing, q, joint, prior, out[r])
        c = yc[r]
        if not learn or c < 0:
            continue
        if not checked or 2 * (held[0] + room) > ckeys.shape[0] or 2 * (held[1] + room) > fkeys.shape[0]:
            done = r
            break
        class_count[c] += 1.0
        if blocks:
            for j in range(k):
                u = D[r, j]
                if u >= 0:
                    value_count[c, u] += 1.0
                    feat_count[c, dfeats[j]] += 1.0
                    diag[c, u] += 1.0
        else:
            _tree.add_pairs_row(D, r, dfeats, c, 1.0, value_count, feat_count, pair_count, pair_feat)
        _tuples._selected_row(D, r, dfeats, c, 1.0, lists, t, pos, slots, spar, cshape, fshape, ckeys, cvals, fkeys,
                              fvals, held, cshift, fshift)
        _common.add_gaussian(G[r], gslots, c, 1.0, g_n, g_mean, g_m2)
    if learn and blocks and done > 0:  # every pair of the rows counted, each attribute's block cells together
        _pair_blocks._add_off_tree(D, 0, done, dfeats, np.full(k, -1, dtype=np.int64), yc, _NONE, False, loc,
                                   prefix, start, C, cells)
    return done


def warm(k) -> None:
    """Compile :func:`kdb_block_sparse` for the types the model passes (dense pair tables, and pair blocks)."""
    C, V, F = 2, 4, 3
    cc, vc, fc = np.zeros(C), np.zeros((C, V)), np.zeros((C, F))
    pc, pf = np.zeros((C, V, V)), np.zeros((C, V, F))
    nv = np.array([1, 1, 1], dtype=np.int64)
    gn = np.zeros((C, 1))
    D = np.array([[1, 2, 3], [1, 2, 3]], dtype=np.int64)
    feats, G = np.arange(F, dtype=np.int64), np.array([[0.5], [1.5]])
    par, npar = np.array([[-1, -1], [0, -1], [0, 1]], dtype=np.int64), np.array([0, 1, 2], dtype=np.int64)
    cshape, fshape = np.array([C, V, V, V], dtype=np.int64), np.array([C, V, V, F], dtype=np.int64)
    lists = np.array([[-1, -1], [0, -1], [0, 1]], dtype=np.int64)
    loc, prefix = np.array([-1, 0, 0, 0], dtype=np.int64), np.array([0, 1, 2, 3], dtype=np.int64)
    start = np.array([0, 2 * C, 3 * C, 3 * C], dtype=np.int64)
    for blocks in (False, True):
        keys = np.full(64, -1, dtype=np.int64)
        k.kdb_block_sparse(D, feats, par, npar, G, np.array([0], dtype=np.int64), np.array([0, 1], dtype=np.int64),
                           0, True, True, C, 1.0, 1e-9, cc, vc, fc, nv, 3, cshape, fshape, keys, np.zeros(64),
                           keys.copy(), np.zeros(64), lists, np.zeros(2, dtype=np.int64), 5, blocks, pc, pf, loc,
                           prefix, start, np.zeros(3 * C), np.zeros((C, V)), gn, gn.copy(), gn.copy(),
                           np.empty((2, C)), False, np.empty((2, C)))
