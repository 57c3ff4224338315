"""The textbook formulas in numpy over a store's count tables: the scores the kernels compute, as the tests'
reference (AODE's and SPODE's terms, TAN's tree). The counts are read as they stand; that they hold the
events is checked against brute force elsewhere (``reference.py``)."""

from __future__ import annotations

import numpy as np


def spode_terms(s, a, cols, feats, m_limit=0):
    """(C, k) log P̂(c, x_i) Π_{j≠i} P̂(x_j | c, x_i) of the SPODE rooted at each observed x_i, and the mask of
    the parents seen at least ``m_limit`` times: the textbook terms in numpy over the store's tables (the
    kernels compute them in :mod:`stream_nb.kernels._spodes` and, over sparse tables,
    :func:`~stream_nb.kernels._sparse_scores.spode_terms_sparse`)."""
    C = s.n_classes
    vc = s.value_count[:C, cols]  # |D_c,xi|  (C, k)
    n_vals = s.n_values[feats] + (cols == 0)  # N_i (a never-seen value counts as one more)
    parents = (vc.sum(0) >= m_limit) & s.parent_ok(feats)  # and counted as parents (stats/selection/_candidates.py)
    d_i = s.feat_count[:C, feats].sum(0)  # |D| over the events where feature i was observed
    joint = np.log(vc + a) - np.log(d_i + a * n_vals)
    k = len(cols)
    if s.pairs_selected:  # only the candidate parents' pairs are counted: the rows of those alone
        rows = np.flatnonzero(s.parent_ok(feats))
        terms = np.zeros((C, k))
        if len(rows):
            pc = s.pair_count[:C, cols[rows, None], cols[None, :]]
            den = s.pair_feat[:C, cols[rows, None], feats[None, :]]
            ratio = (pc + a) / (den + a * n_vals[None, None, :])
            ratio[:, np.arange(len(rows)), rows] = 1.0
            terms[:, rows] = joint[:, rows] + np.log(ratio).sum(2)
        return terms, parents
    pc = s.pair_count[:C, cols[:, None], cols[None, :]]  # (C, k, k)  |D_c,xi,xj|
    den = s.pair_feat[:C, cols[:, None], feats[None, :]]  # |D_c,xi| where x_j observed
    ratio = (pc + a) / (den + a * n_vals[None, None, :])
    idx = np.arange(k)
    ratio[:, idx, idx] = 1.0  # P(x_i | c, x_i) = 1
    return joint + np.log(ratio).sum(2), parents


def tree_jll(model, D, feats, ppos) -> np.ndarray:
    """(rows, C) log P̂(c) + Σ_i log P̂(x_i | c, x_pa(i)) with Lidstone's estimates, in numpy over the store's
    tables: ``D`` (rows, k) columns of the attributes ``feats`` (-1: missing, none of its children observed),
    ``ppos`` their parents' positions in ``D`` (-1: none)."""
    s, a = model._stats, model._alpha
    C = s.n_classes
    obs = D >= 0
    Dc = np.where(obs, D, 0)
    has_pa = np.broadcast_to(ppos[None, :] >= 0, D.shape)
    Pc = np.where(has_pa, Dc[:, np.maximum(ppos, 0)], 0)
    n_vals = np.maximum(s.n_values[feats][None, :] + (D == 0), 1)
    vc, fc, an = s.value_count[:C][:, Dc], s.feat_count[:C, feats][:, None, :], a * n_vals[None]
    pc, pf = s.pair_count[:C, Pc, Dc], s.pair_feat[:C, Pc, np.broadcast_to(feats, D.shape)]
    child = np.log(pc + a) - np.log(pf + an)
    term = np.where(has_pa[None], child, np.log(vc + a) - np.log(fc + an))
    return model._log_prior()[None, :] + np.where(obs[None], term, 0.0).sum(2).T

