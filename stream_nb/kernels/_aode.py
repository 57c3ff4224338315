"""AODE and SPODE, compiled: each event of a block scored under the counts as they stand, then counted.

The SPODE values both read are :mod:`stream_nb.kernels._spodes`'. The arguments :func:`aode_block` and
:func:`spode_block` share: ``D`` (rows, k), value columns of the discrete features ``dfeats`` (-1:
missing; 0: a value never seen, which counts nothing and one more value of its feature); ``more`` (rows,
F), the values each feature gained within the block by each row, its own included, or (0, 0); ``yc``,
class indices (-1: unlabelled); ``learn``: count each labelled row after scoring it; ``C`` classes and
Lidstone's ``a``; the store's ``class_count``, ``value_count``, ``feat_count``, ``n_values``,
``pair_count``, ``pair_feat`` and ``value_feature``; ``dens`` (C, V), when ``cached`` (a run, whose
columns are every feature in order, or a complete event scored alone), the products of a complete row's
denominators under the store's counts (:func:`~stream_nb.kernels._spodes.den_table`), kept up to date as the
block is learned; ``out[r, :C]``
gets log P(c | x_r), or with ``joint`` log P(c, x_r). :func:`aode_block` also feeds a drift detector as
:func:`~stream_nb.kernels._naive.naive_block` does (``loss``, ``watch``, ``det_*``, ``warning``).
"""

from __future__ import annotations

import math

import numpy as np

from . import _common, _spodes
from ._addresses import NO_DETECTOR

__all__ = ["aode_block", "spode_block", "warm"]


def aode_block(D, dfeats, more, yc, weights, infl, learn, C, a, m_limit, keep, children, class_count, value_count,
               feat_count, n_values, pair_count, pair_feat, value_feature, dens, cached, joint, out, loss, watch,
               det_kind, det_params, det_state, det_fbuf, det_ibuf, warning):
    """AODE: score each row of a block, then count it, in order (the arguments: the module notes); return
    the rows done (the row a drift detector acts on is scored and not counted, and its index returned).

    A value seen at least ``m_limit`` times is a parent (a value never seen only if ``m_limit`` <= 0), and
    with ``keep`` (per feature: 2 a super-parent and a child, 1 a child only, 0 neither; empty: every feature
    2; a feature past its end: 1) only of a feature it gives 2; with none, the row is scored by naive Bayes
    over the same counts. A feature ``keep`` gives 0 is left out of the row's score, and counted all the same.
    ``children`` (K, K), or (0, 0) for every pair: the children each super-parent's SPODE conditions on it
    (:func:`~stream_nb.kernels._spodes.rooted_chosen`; the kept denominators are then not read).
    """
    R, k = D.shape
    decayed = infl.shape[0] > 0
    a0, m0 = a, m_limit
    if decayed:
        cached = False
        a = a0 * infl[0]
    B, grown = _spodes.block_setup(D, more, n_values, class_count, C, a, weights, a0 * infl[R - 1] if decayed else a)
    u = np.empty(k + 4, dtype=np.int64)
    uu = np.empty(k + 4, dtype=np.uint64)
    fu = np.empty(k + 4, dtype=np.uint64)
    f = np.empty(k + 1, dtype=np.int64)
    an = np.empty(k + 1)
    idx = np.empty(k + 4, dtype=np.int64)
    dinv = np.empty(k + 1)
    anf = np.empty(k if cached else 0)  # a N_f per feature, as dens was made
    for g in range(anf.shape[0]):
        anf[g] = a * n_values[g]
    vf = value_feature.copy() if cached else value_feature
    val = np.empty((C, k + 1))
    lg = np.empty((C, k + 1))
    jll = np.empty(C)
    prior = np.empty(C)
    lcc = np.empty(C)
    total = _spodes.log_counts(class_count, C, a, lcc)
    pair_flat = pair_count.reshape(-1)
    feat_flat = pair_feat.reshape(-1)
    V, FF = pair_count.shape[1], pair_feat.shape[2]
    K = keep.shape[0]
    drops = False  # some feature left out of the score: each row's scored values copied into su, sf, san
    for g in range(K):
        drops = drops or keep[g] == 0
    su, sf, san = np.empty(k + 4, dtype=np.int64), np.empty(k + 1, dtype=np.int64), np.empty(k + 1)
    chosen = children.shape[0]
    for r in range(R):
        if decayed:
            a, m_limit, total = _decayed(a0, m0, infl[r], class_count, C, lcc)
        n = _spodes.row(D, r, dfeats, more, grown, n_values, a, u, f, an)
        fast = cached and n == k and k < B and not drops and chosen == 0
        n = abs(n)
        if cached and grown and _spodes.refresh(anf, n_values, more, r, grown, a, u, f, n, vf):
            _spodes.den_table(pair_feat, vf, anf, C, V, dens)
        _spodes.prior_row(lcc, total, C, a, prior)
        sn = 0
        for i in range(n):
            if not drops or f[i] >= K or keep[f[i]] > 0:
                su[sn], sf[sn], san[sn] = u[i], f[i], an[i]
                sn += 1
        m = 0
        for i in range(sn):
            seen = 0.0
            for c in range(C):
                seen += value_count[c, su[i]]
            if seen >= m_limit and (K == 0 or (sf[i] < K and keep[sf[i]] == 2)):
                idx[m] = i
                m += 1
        linear = sn < B  # every SPODE value in the linear domain
        if m == 0:
            _spodes.naive_row(value_count, feat_count, su, sf, san, sn, C, a, B, prior, jll)
        else:
            if chosen:
                _spodes.inverse_dens(feat_count, sf, san, sn, C, dinv)
                _spodes.rooted_chosen(value_count, pair_flat, feat_flat, feat_count, su, sf, san, sn, idx, m, dinv,
                                      children, C, a, V, FF, B, val, lg)
            else:
                _spodes.spodes(value_count, pair_flat, feat_flat, su, sf, san, sn, idx, m, C, a, V, FF, B, feat_count,
                               fast, dens, uu, fu, dinv, val, lg)
            if linear and not joint:  # the posterior is each class's share of the sum, one log a class
                _spodes.shares(val, idx, m, C, jll, out[r])
            else:
                for c in range(C):
                    jll[c] = _spodes.log_sum(val, lg, c, idx, m)
        if joint or not (linear and m > 0):
            _spodes.finish(jll, prior, C, joint, out[r])
        y = yc[r]
        if watch and y >= 0 and _common.watch_row(out[r], C, loss, y, det_kind, det_params, det_state, det_fbuf,
                                                  det_ibuf, warning):
            return r
        if learn and y >= 0:
            w = weights[r] if decayed else 1.0
            _spodes.count_event(class_count, value_count, feat_count, pair_flat, feat_flat, V, FF, u, f, n, y, w,
                                True)
            lcc[y] = math.log(class_count[y] + a)
            total += w
            if cached:
                _spodes.relearn(pair_feat, u, f, n, y, anf, dens)
    return R


def _decayed(a0, m0, inflation, class_count, C, lcc):
    """A decayed row's smoothing ``a0`` and parent threshold ``m0`` times the inflation it is scored with
    (as the one-event path reads them), and the class counts' total, ``lcc`` (:func:`~._spodes.log_counts`)
    under that smoothing."""
    a = a0 * inflation
    return a, m0 * inflation, _spodes.log_counts(class_count, C, a, lcc)


def spode_block(D, dfeats, more, yc, weights, infl, learn, C, a, p, tcols, score, loss_sum, loss_n, class_count,
                value_count, feat_count, n_values, pair_count, pair_feat, value_feature, dens, cached, joint, out,
                loss, watch, det_kind, det_params, det_state, det_fbuf, det_ibuf, warning):
    """SPODE: score each row of a block under the super-parent ``p`` (-1: none, naive Bayes), then count
    it, in order (the other arguments: the module notes); return the rows done. With ``score``, a labelled
    row then adds each candidate parent's log loss to the running scores ``loss_sum`` and ``loss_n`` (per
    feature), under the counts as they stand, as ``SPODE._score`` does before learning it. A row whose
    super-parent is missing sums it out over its values ``tcols``. A drift detector is fed each labelled
    row's error before either, as :func:`aode_block` feeds it.
    """
    R, k = D.shape
    decayed = infl.shape[0] > 0
    a0 = a
    if decayed:
        cached = False
        a = a0 * infl[0]
    B, grown = _spodes.block_setup(D, more, n_values, class_count, C, a, weights, a0 * infl[R - 1] if decayed else a)
    u = np.empty(k + 4, dtype=np.int64)
    uu = np.empty(k + 4, dtype=np.uint64)
    fu = np.empty(k + 4, dtype=np.uint64)
    f = np.empty(k + 1, dtype=np.int64)
    an = np.empty(k + 1)
    idx = np.empty(k + 4, dtype=np.int64)
    dinv = np.empty(k + 1)
    anf = np.empty(k if cached else 0)  # a N_f per feature, as dens was made
    for g in range(anf.shape[0]):
        anf[g] = a * n_values[g]
    vf = value_feature.copy() if cached else value_feature
    val = np.empty((C, k + 1))
    lg = np.empty((C, k + 1))
    tl = np.empty((C, tcols.shape[0]))  # a missing super-parent: the log SPODE of each of its values
    jll = np.empty(C)
    prior = np.empty(C)
    lcc = np.empty(C)
    total = _spodes.log_counts(class_count, C, a, lcc)
    pair_flat = pair_count.reshape(-1)
    feat_flat = pair_feat.reshape(-1)
    V, FF = pair_count.shape[1], pair_feat.shape[2]
    for r in range(R):
        if decayed:
            a, _, total = _decayed(a0, 0.0, infl[r], class_count, C, lcc)
        n = _spodes.row(D, r, dfeats, more, grown, n_values, a, u, f, an)
        fast = cached and n == k and k < B
        n = abs(n)
        if cached and grown and _spodes.refresh(anf, n_values, more, r, grown, a, u, f, n, vf):
            _spodes.den_table(pair_feat, vf, anf, C, V, dens)
        _spodes.prior_row(lcc, total, C, a, prior)
        y = yc[r]
        at = -1
        for i in range(n):
            if f[i] == p:
                at = i
        scored = score and y >= 0 and n > 0
        if scored:  # every candidate's SPODE; its log loss on the true class
            for i in range(n):
                idx[i] = i
            _spodes.spodes(value_count, pair_flat, feat_flat, u, f, an, n, idx, n, C, a, V, FF, B, feat_count, fast,
                           dens, uu, fu, dinv, val, lg)
        if p < 0:
            _spodes.naive_row(value_count, feat_count, u, f, an, n, C, a, B, prior, jll)
        elif at >= 0:
            if not scored:
                idx[0] = at
                _spodes.spodes(value_count, pair_flat, feat_flat, u, f, an, n, idx, 1, C, a, V, FF, B, feat_count,
                               fast, dens, uu, fu, dinv, val, lg)
            for c in range(C):
                jll[c] = _spodes.log_of(val, lg, c, at)
        else:  # the super-parent missing: summed out over its values, each a root after the row's values
            for q in range(tcols.shape[0]):
                u[n] = tcols[q]
                f[n] = p
                an[n] = a * n_values[p]
                idx[0] = n
                _spodes.spodes(value_count, pair_flat, feat_flat, u, f, an, n + 1, idx, 1, C, a, V, FF, B, feat_count,
                               False, dens, uu, fu, dinv, val, lg)
                for c in range(C):
                    tl[c, q] = _spodes.log_of(val, lg, c, n)
            for c in range(C):
                top = -math.inf
                for q in range(tcols.shape[0]):
                    if tl[c, q] > top:
                        top = tl[c, q]
                s = 0.0
                for q in range(tcols.shape[0]):
                    s += math.exp(tl[c, q] - top)
                jll[c] = top + math.log(s)
        _spodes.finish(jll, prior, C, joint, out[r])
        if watch and y >= 0 and _common.watch_row(out[r], C, loss, y, det_kind, det_params, det_state, det_fbuf,
                                                  det_ibuf, warning):
            return r
        if scored:  # (a missing super-parent's sum wrote past the row's columns only)
            for i in range(n):
                loss_sum[f[i]] -= _spodes.log_of(val, lg, y, i) - _spodes.class_sum(val, lg, i, C)
                loss_n[f[i]] += 1.0
        if learn and y >= 0:
            w = weights[r] if decayed else 1.0
            _spodes.count_event(class_count, value_count, feat_count, pair_flat, feat_flat, V, FF, u, f, n, y, w,
                                True)
            lcc[y] = math.log(class_count[y] + a)
            total += w
            if cached:
                _spodes.relearn(pair_feat, u, f, n, y, anf, dens)
    return R


def warm(k) -> None:
    """Compile the kernels for the types the models pass."""
    C, V, F = 2, 5, 2
    cc, vc, fc = np.zeros(C), np.zeros((C, V)), np.zeros((C, F))
    pc, pf = np.zeros((C, V, V)), np.zeros((C, V, F))
    nv, vf = np.array([2, 2], dtype=np.int64), np.array([-1, 0, 0, 1, 1], dtype=np.int64)
    D = np.array([[1, 3], [2, 4]], dtype=np.int64)
    feats, yc = np.array([0, 1], dtype=np.int64), np.array([0, 1], dtype=np.int64)
    out, dens = np.empty((2, C)), np.ones((C, V))
    k.den_table(pf, vf, np.ones(F), C, V, dens)
    for more in (np.zeros((0, 0), dtype=np.int64), np.zeros((2, F), dtype=np.int64)):
        for decay in (np.zeros(0), np.ones(2)):
            for children in (np.zeros((0, 0), dtype=np.int8), np.ones((F, F), dtype=np.int8)):
                k.aode_block(D, feats, more, yc, decay, decay, True, C, 1.0, 1.0, np.zeros(0, dtype=np.int8), children,
                             cc, vc, fc, nv, pc, pf, vf, dens, True, False, out, np.zeros((0, 0)), *NO_DETECTOR)
            k.spode_block(D, feats, more, yc, decay, decay, True, C, 1.0, 0, np.array([1, 2], dtype=np.int64), True,
                          np.zeros(F), np.zeros(F), cc, vc, fc, nv, pc, pf, vf, dens, True, False, out,
                          np.zeros((0, 0)), *NO_DETECTOR)
    k.count_rows(D, feats, yc, False, cc, vc, fc, pc, pf)
    k.weigh_rows(D, feats, yc, np.ones(2), False, cc, vc, fc, pc, pf)
