"""Naive Bayes, compiled: each event of a block scored under the counts as they stand, then counted.

The logs of the counts are kept in two tables beside them, so that scoring an
event adds table entries and counting it refreshes only the cells it touched:
``lnum[c, v] = log(|D_c,v| + a)`` and ``lden[c, f] = log(|D_c,f| + a N_f)``,
``N_f`` the values feature ``f`` has. The model rebuilds them
(:func:`naive_tables`) whenever the counts changed outside a kernel.
"""

from __future__ import annotations

import math

import numpy as np

from . import _common

__all__ = ["naive_block", "naive_tables", "warm"]



def naive_tables(value_count, feat_count, n_values, a, lnum, lden):
    """Fill ``lnum`` and ``lden`` from the counts, to their whole capacity (a block may give a value its
    column as it goes: its count is 0 there until the row that brings it is counted)."""
    for c in range(value_count.shape[0]):
        for v in range(value_count.shape[1]):
            lnum[c, v] = math.log(value_count[c, v] + a)
        for f in range(feat_count.shape[1]):
            lden[c, f] = math.log(feat_count[c, f] + a * n_values[f])


def naive_block(D, dfeats, more, G, gslots, yc, w, learn, joint, C, a, var_smoothing,
                class_count, value_count, feat_count, n_values, obs_value_count, obs_feat_count, twin,
                g_n, g_mean, g_m2, lnum, lden, out):
    """Score each row of a block, then (``learn``, a labelled row) count it, in order.

    ``D`` (rows, k): value columns of the discrete features ``dfeats`` (-1: missing; 0: a value never seen,
    which counts nothing and one more value of its feature); ``more`` (rows, F): the values each feature has
    gained within the block by each row, its own included (a labelled row's new value already has its
    column), or (0, 0); ``G`` (rows, g): the Gaussian slots ``gslots`` (NaN: missing); ``yc``: class index
    (-1: unlabelled); ``w``: weights. ``twin``: count the discrete values in the observed-only twin too.
    ``out[r, :C]`` gets log P(c | x_r), or with ``joint`` log P(c, x_r) (what EM's enumerations compare).
    """
    R, k = D.shape
    jll = np.empty(C)
    prior = np.empty(C)
    q = np.empty(C)
    grown = more.shape[0] > 0
    for r in range(R):
        if grown:  # a feature gained a value at this row: its denominators change for every class
            for j in range(k):
                f = dfeats[j]
                if more[r, f] != (more[r - 1, f] if r else 0):
                    nv = n_values[f] + more[r, f]
                    for c in range(C):
                        lden[c, f] = math.log(feat_count[c, f] + a * nv)
        _common.log_prior_row(class_count, C, a, prior)
        for c in range(C):
            jll[c] = prior[c]
        for j in range(k):
            col = D[r, j]
            if col < 0:
                continue
            f = dfeats[j]
            if col == 0:  # never seen: no count, one more value
                nv = n_values[f] + (more[r, f] if grown else 0) + 1
                for c in range(C):
                    jll[c] += math.log(a) - math.log(feat_count[c, f] + a * nv)
            else:
                for c in range(C):
                    jll[c] += lnum[c, col] - lden[c, f]
        _common.gaussian_row(G, r, gslots, g_n, g_mean, g_m2, C, var_smoothing, q, jll)
        if joint:
            out[r, :C] = jll[:C]
        else:
            _common.normalise_row(jll, prior, C, out[r])
        c = yc[r]
        if not learn or c < 0:
            continue
        wr = w[r]
        class_count[c] += wr
        for j in range(k):
            col = D[r, j]
            if col < 0:
                continue
            f = dfeats[j]
            value_count[c, col] += wr
            feat_count[c, f] += wr
            if twin:
                obs_value_count[c, col] += wr
                obs_feat_count[c, f] += wr
            lnum[c, col] = math.log(value_count[c, col] + a)
            lden[c, f] = math.log(feat_count[c, f] + a * (n_values[f] + (more[r, f] if grown else 0)))
        _common.add_gaussian(G, r, gslots, c, wr, g_n, g_mean, g_m2)


def warm(k) -> None:
    """Compile :func:`naive_block` and :func:`naive_tables` for the types the models pass."""
    C, V, F = 2, 4, 2
    cc, vc, fc = np.zeros(C), np.zeros((C, V)), np.zeros((C, F))
    nv = np.array([1, 2], dtype=np.int64)
    gn, gm, g2 = np.zeros((C, 1)), np.zeros((C, 1)), np.zeros((C, 1))
    lnum, lden = np.zeros((C, V)), np.zeros((C, F))
    k.naive_tables(vc, fc, nv, 1.0, lnum, lden)
    D = np.array([[1, 2], [1, 3]], dtype=np.int64)
    feats, G = np.array([0, 1], dtype=np.int64), np.array([[0.5], [1.5]])
    for more in (np.zeros((0, 0), dtype=np.int64), np.zeros((2, F), dtype=np.int64)):
        k.naive_block(D, feats, more, G, np.array([0], dtype=np.int64), np.array([0, 1], dtype=np.int64), np.ones(2),
                      True, False, C, 1.0, 1e-9, cc, vc, fc, nv, vc, fc, False, gn, gm, g2, lnum, lden, np.empty((2, C)))
