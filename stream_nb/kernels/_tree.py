"""Tree-augmented naive Bayes (TAN), compiled: each event of a block scored along the tree, then counted.

log P(c, x) = log P̂(c) + Σ_i log (|D_c,x_pa(i),x_i| + a) / (|D_c,x_pa(i)| + a N_i) (with a back-off m > 0:
(|D_c,x_pa(i),x_i| + m P̂) / (|D_c,x_pa(i)| + m)), from the parent value's row of ``pair_count`` and
``pair_feat``, or for a root from ``value_count`` and ``feat_count``; the ratios of 8 attributes multiplied
before one logarithm. Counting an event adds what :meth:`Stats.add <stream_nb.stats.Stats.add>` adds with
pairs kept: its class, its values, every ordered pair of its values (the diagonal too) and each value with
each feature observed.
"""

from __future__ import annotations

import math

import numpy as np

from . import _common
from ._addresses import NO_DETECTOR

__all__ = ["add_pair_rows", "add_pairs_row", "blocked_log", "tree_block", "warm"]

#: Ratios multiplied before one logarithm (see the module notes); a product below _FLUSH is logged early.
_BLOCK = 8
_FLUSH = 1e-200


def blocked_log(prod, jll, C, force):
    """Add ``log(prod[c])`` to ``jll[c]`` and reset ``prod`` to 1 when ``force`` or a product nears the
    smallest double."""
    for c in range(C):
        if force or prod[c] < _FLUSH:
            jll[c] += math.log(prod[c])
            prod[c] = 1.0


def add_pairs_row(D, r, dfeats, c, w, value_count, feat_count, pair_count, pair_feat):
    """Add row ``r`` of ``D`` (columns of features ``dfeats``; -1 missing) to class ``c``'s values, features
    and pairs with weight ``w``."""
    k = D.shape[1]
    for j in range(k):
        u = D[r, j]
        if u < 0:
            continue
        value_count[c, u] += w
        feat_count[c, dfeats[j]] += w
        for i in range(k):
            v = D[r, i]
            if v >= 0:
                pair_count[c, u, v] += w
                pair_feat[c, u, dfeats[i]] += w


def add_pair_rows(D, dfeats, yc, w, pair_count, pair_feat):
    """Add the observed pairs of each row of ``D`` (columns of features ``dfeats``; -1 missing), in row order,
    to class ``yc[r]``'s pair tables with weight ``w[r]``: each cell gets the additions one event at a time
    gives it, in the same order (a batch of :meth:`Stats.add_many <stream_nb.stats.Stats.add_many>`)."""
    k = D.shape[1]
    for r in range(D.shape[0]):
        c, wr = yc[r], w[r]
        for j in range(k):
            u = D[r, j]
            if u < 0:
                continue
            for i in range(k):
                v = D[r, i]
                if v >= 0:
                    pair_count[c, u, v] += wr
                    pair_feat[c, u, dfeats[i]] += wr


def tree_block(D, dfeats, ppos, more, G, gslots, yc, weights, infl, learn, C, a, backoff, to_parent, var_smoothing,
               class_count, value_count, feat_count, pair_count, pair_feat, n_values,
               twin, obs_value_count, obs_feat_count, obs_pair_count, obs_pair_feat, g_n, g_mean, g_m2, out, joint,
               loss, watch, det_kind, det_params, det_state, det_fbuf, det_ibuf, warning):
    """Score each row of a block along the tree, then (``learn``, a labelled row) count it, in order; return
    the rows done.

    ``D`` (rows, k): value columns of the discrete features ``dfeats`` (-1: missing, 0: a value never
    seen); ``ppos[j]``: the column of ``D`` that holds the parent of feature ``dfeats[j]`` (-1: a root;
    every observed attribute's parent must be observed in the row); ``more`` (rows, F) or (0, 0): the
    values each feature gained within the block by each row; ``G`` (rows, g): the Gaussian slots
    ``gslots``; ``yc``: class index (-1: unlabelled), each counted with weight 1 and scored with smoothing
    ``a`` and back-off ``backoff``; under decay (``infl`` of one per row) row ``r`` is scored with ``a`` and
    ``backoff`` times the inflation ``infl[r]`` and counted with ``weights[r]``
    (:func:`~stream_nb.learners._decay_runs.decay_run`). ``twin``: count in the observed-only twin too.
    ``out[r, :C]`` gets log P(c | x_r), or with ``joint`` log P(c, x_r). ``backoff`` > 0: a child's
    estimate is the m-estimate (|D_c,u,v| + m P̂) / (|D_c,u| + m) with m = ``backoff`` and P̂ = P̂(v | c),
    the root estimate above, or with ``to_parent`` P̂(v | u) = (|D_u,v| + a) / (|D_u| + a N) over all
    classes; 0: Lidstone's (|D_c,u,v| + a) / (|D_c,u| + a N). A drift detector is fed as in
    :func:`~stream_nb.kernels._naive.naive_block` (``loss``, ``watch``, ``det_*``, ``warning``): the row it
    acts on is scored and not counted, and its index returned.
    """
    R, k = D.shape
    jll = np.empty(C)
    prior = np.empty(C)
    prod = np.empty(C)
    q = np.empty(C)
    grown = more.shape[0] > 0
    decayed = infl.shape[0] > 0
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
                u = D[r, p]
                if backoff > 0.0 and to_parent:
                    hits = 0.0
                    seen = 0.0
                    for c in range(C):
                        hits += pair_count[c, u, v]
                        seen += pair_feat[c, u, f]
                    base = backoff * (hits + a) / (seen + an)
                    for c in range(C):
                        prod[c] *= (pair_count[c, u, v] + base) / (pair_feat[c, u, f] + backoff)
                elif backoff > 0.0:
                    for c in range(C):
                        base = (value_count[c, v] + a) / (feat_count[c, f] + an)
                        prod[c] *= (pair_count[c, u, v] + backoff * base) / (pair_feat[c, u, f] + backoff)
                else:
                    for c in range(C):
                        prod[c] *= (pair_count[c, u, v] + a) / (pair_feat[c, u, f] + an)
            n += 1
            blocked_log(prod, jll, C, n % _BLOCK == 0)
        blocked_log(prod, jll, C, True)
        _common.finish_row(jll, G[r], gslots, g_n, g_mean, g_m2, C, var_smoothing, q, joint, prior, out[r])
        c = yc[r]
        if watch and c >= 0 and _common.watch_row(out[r], C, loss, c, det_kind, det_params, det_state, det_fbuf,
                                                  det_ibuf, warning):
            return r
        if not learn or c < 0:
            continue
        w = weights[r] if decayed else 1.0
        class_count[c] += w
        add_pairs_row(D, r, dfeats, c, w, value_count, feat_count, pair_count, pair_feat)
        if twin:
            add_pairs_row(D, r, dfeats, c, w, obs_value_count, obs_feat_count, obs_pair_count, obs_pair_feat)
        _common.add_gaussian(G[r], gslots, c, w, g_n, g_mean, g_m2)
    return R


def warm(k) -> None:
    """Compile :func:`tree_block` for the types the models pass."""
    C, V, F = 2, 4, 2
    cc, vc, fc = np.zeros(C), np.zeros((C, V)), np.zeros((C, F))
    pc, pf = np.zeros((C, V, V)), np.zeros((C, V, F))
    nv = np.array([1, 2], dtype=np.int64)
    gn, gm, g2 = np.zeros((C, 1)), np.zeros((C, 1)), np.zeros((C, 1))
    D = np.array([[1, 2], [1, 3]], dtype=np.int64)
    feats, G, ppos = np.array([0, 1], dtype=np.int64), np.array([[0.5], [1.5]]), np.array([-1, 0], dtype=np.int64)
    for more in (np.zeros((0, 0), dtype=np.int64), np.zeros((2, F), dtype=np.int64)):
        for decay in (np.zeros(0), np.ones(2)):
            k.tree_block(D, feats, ppos, more, G, np.array([0], dtype=np.int64), np.array([0, 1], dtype=np.int64),
                         decay, decay, True, C, 1.0, 0.0, False, 1e-9, cc, vc, fc, pc, pf, nv, False, vc, fc, pc, pf,
                         gn, gm, g2, np.empty((2, C)), False, np.zeros((0, 0)), *NO_DETECTOR)
    k.add_pair_rows(D, feats, np.array([0, 1], dtype=np.int64), np.ones(2), pc, pf)
