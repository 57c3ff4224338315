"""EM's E-steps: the expected counts of an event whose attributes are partly missing.

The posterior of the missing values given the observed ones and the class, with parameters from the
observed-only counts: :func:`naive_bayes_blocks` (naive Bayes), :func:`one_dependence_estep` (AODE, SPODE,
TAN; KDB enumerates its own); :func:`add_estep` adds it (the M-step), and :func:`mixture_posterior` is
AODE's and SPODE's posterior as they predict. The docs' *Missing values and EM* page.
"""

from __future__ import annotations

import numpy as np

__all__ = ["add_estep", "assemble", "mixture_posterior", "naive_bayes_blocks", "one_dependence_estep", "softmax"]


def assemble(enc, blocks, pairs: bool):
    """Build ``(u, m, feats_u, J)`` from the observed columns and the missing blocks.

    ``blocks`` lists ``(feature, columns, expected indicator)`` per missing
    feature, the missing features independent of each other given the class;
    ``J`` (None unless ``pairs``) is then E[e eᵀ].
    """
    k = len(enc.cols)
    if blocks:
        u = np.concatenate([enc.cols] + [b[1] for b in blocks])
        m = np.concatenate([np.ones(k)] + [b[2] for b in blocks])
        feats_u = np.concatenate([enc.feats] + [np.full(len(b[1]), b[0], dtype=np.int64) for b in blocks])
    else:
        u, m, feats_u = enc.cols, np.ones(k), enc.feats
    if not pairs:
        return u, m, feats_u, None
    J = np.outer(m, m)
    lo = k
    for _, cols, q in blocks:  # one attribute takes one value: its own block is diagonal
        hi = lo + len(cols)
        J[lo:hi, lo:hi] = np.diag(q)
        lo = hi
    return u, m, feats_u, J


def naive_bayes_blocks(s, a: float, miss: np.ndarray, c: int) -> list:
    """``(feature, columns, P̂(v | c))`` of each missing feature: the posterior under naive Bayes
    (missing attributes independent of everything else given the class), read off store ``s``."""
    out = []
    for f in miss.tolist():
        cols = s.columns_of(f)
        out.append((f, cols, (s.value_count[c, cols] + a) / (s.feat_count[c, f] + a * len(cols))))
    return out


def one_dependence_estep(s, a, enc, c, miss):
    """EM's E-step of the one-dependence models (AODE, SPODE, TAN): each attribute's rows under its own SPODE,
    parameters from ``s`` (the observed-only counts); ``(u, m, feats_u, J)`` for :meth:`Stats.add_expected`.

    A missing x_j of an observed parent p gets P̂(x_j | c, x_p); a missing p gets
    q_p(t) ∝ P̂(c, t) Π_o P̂(x_o | c, t) and its missing children follow given t. Every row block sums to
    one, and ``J`` is not symmetric (block (p, j) is SPODE p's). The docs' *Missing values and EM* page.
    """
    ocols, ofeats = enc.cols, enc.feats
    k = len(ocols)
    n_all = s.n_values
    miss_l = miss.tolist()
    mcols = [s.columns_of(f) for f in miss_l]
    U = np.concatenate(mcols)
    Ufeat = np.concatenate([np.full(len(cl), f, dtype=np.int64) for f, cl in zip(miss_l, mcols)])
    pc, pf = s.pair_count, s.pair_feat  # read as [c, rows, columns]: dense arrays or sparse tables alike

    def cond(vcols):
        """P̂(u | c, v) for parent columns ``vcols`` (rows) and every missing column u (columns)."""
        return (pc[c, vcols[:, None], U] + a) / (pf[c, vcols[:, None], Ufeat] + a * n_all[Ufeat])

    n = k + len(U)
    J = np.empty((n, n))
    m = np.ones(n)
    J[:k, :k] = 1.0
    J[:k, k:] = cond(ocols)
    lo = k
    for cl in mcols:
        hi = lo + len(cl)
        logq = np.log(s.value_count[c, cl] + a)  # P̂(c, t) up to a constant
        if k:
            logq = logq + np.log((pc[c, cl[:, None], ocols] + a) / (pf[c, cl[:, None], ofeats] + a * n_all[ofeats])).sum(1)
        q = np.exp(logq - logq.max())
        q /= q.sum()
        m[lo:hi] = q
        J[lo:hi, :k] = q[:, None]
        J[lo:hi, k:] = q[:, None] * cond(cl)
        J[lo:hi, lo:hi] = np.diag(q)  # one attribute takes one value
        lo = hi
    return np.concatenate([ocols, U]), m, np.concatenate([ofeats, Ufeat]), J


def mixture_posterior(s, a, enc, c, miss, m_limit, allowed, naive_jll=None, children=None):
    """``(feature, columns, P(x_f = v | x_o, c))`` of each missing feature under AODE as it predicts, from
    store ``s`` (``allowed``: the possible super-parents, None for all; ``m_limit``: the frequency limit;
    ``naive_jll``: naive Bayes' log P(c, x) of ``enc``, needed when ``allowed`` is None; ``children``: the
    (K, K) choice of each super-parent's children, a child not chosen read given the class alone).

    The exact posterior: a mixture, weighted by marginal likelihood, of one component per qualifying
    observed parent, one per qualifying value of each missing attribute, and naive Bayes when none qualifies.
    """
    C = s.n_classes
    ocols, ofeats = enc.cols, enc.feats
    n_all = s.n_values
    mcols = [s.columns_of(f) for f in miss.tolist()]
    U = np.concatenate(mcols)
    Ufeat = np.concatenate([np.full(len(cl), f, dtype=np.int64) for f, cl in zip(miss.tolist(), mcols)])
    count = s.value_count[:C].sum(0)  # |D_v|, for the frequency limit m
    d_all = s.feat_count[:C].sum(0)  # |D| over the events where each feature was observed
    logw, rows = [], []

    K = 0 if children is None else children.shape[0]

    def chosen(ratio, pfeats, ccols, cfeats):
        """``ratio`` (parents, children) with each child not chosen for its parent read as P̂(x | c)."""
        if not K:
            return ratio
        no = (pfeats[:, None] < K) & (cfeats[None, :] < K)
        no &= children[np.minimum(pfeats, K - 1)[:, None], np.minimum(cfeats, K - 1)[None, :]] == 0
        alone = (s.value_count[c, ccols] + a) / (s.feat_count[c, cfeats] + a * n_all[cfeats])
        return np.where(no, alone[None, :], ratio)

    def cond(vcols, vfeats):
        """P̂(u | c, v) for parent columns vcols (rows) and every missing column u: (len(vcols), |U|)."""
        return chosen((s.pair_count[c, vcols[:, None], U] + a) / (s.pair_feat[c, vcols[:, None], Ufeat] + a * n_all[Ufeat]),
                      vfeats, U, Ufeat)

    ok_o = np.ones(len(ocols), dtype=bool) if allowed is None else np.isin(ofeats, allowed)
    ok_m = [allowed is None or f in allowed for f in miss.tolist()]
    if len(ocols):
        qual = (count[ocols] >= m_limit) & ok_o
        if qual.any():
            pc = ocols[qual]
            joint = np.log(s.value_count[c, pc] + a) - np.log(d_all[ofeats[qual]] + a * n_all[ofeats[qual]])
            ratio = (s.pair_count[c, pc[:, None], ocols] + a) / (s.pair_feat[c, pc[:, None], ofeats] + a * n_all[ofeats])
            ratio = chosen(ratio, ofeats[qual], ocols, ofeats)
            ratio[np.arange(len(pc)), np.flatnonzero(qual)] = 1.0
            logw.append(joint + np.log(ratio).sum(1))
            rows.append(cond(pc, ofeats[qual]))
    lo = 0
    for f, cl, ok in zip(miss.tolist(), mcols, ok_m):
        hi = lo + len(cl)
        qual = (count[cl] >= m_limit) & ok
        if qual.any():
            t = cl[qual]
            joint = np.log(s.value_count[c, t] + a) - np.log(d_all[f] + a * n_all[f])
            if len(ocols):
                ratio = (s.pair_count[c, t[:, None], ocols] + a) / (s.pair_feat[c, t[:, None], ofeats] + a * n_all[ofeats])
                joint = joint + np.log(chosen(ratio, np.full(len(t), f), ocols, ofeats)).sum(1)
            r = cond(t, np.full(len(t), f))
            r[:, lo:hi] = 0.0
            r[np.arange(len(t)), lo + np.flatnonzero(qual)] = 1.0
            logw.append(joint)
            rows.append(r)
        lo = hi
    if allowed is None and (not len(ocols) or not (count[ocols] >= m_limit).any()):
        # completions in which nothing qualifies: naive Bayes over the unqualified values
        nb = naive_jll[c]
        r = (s.value_count[c, U] + a) / (s.feat_count[c, Ufeat] + a * n_all[Ufeat])
        r = np.where(count[U] >= m_limit, 0.0, r)
        lo, ok = 0, True
        for cl in mcols:
            hi = lo + len(cl)
            z = r[lo:hi].sum()
            if z == 0.0:
                ok = False
                break
            nb += np.log(z)
            r[lo:hi] /= z
            lo = hi
        if ok:
            logw.append(np.array([nb]))
            rows.append(r[None, :])
    if not logw:
        return naive_bayes_blocks(s, a, miss, c)
    mvec = softmax(np.concatenate(logw)) @ np.concatenate(rows)
    blocks, lo = [], 0
    for f, cl in zip(miss.tolist(), mcols):
        blocks.append((f, cl, mvec[lo : lo + len(cl)]))
        lo += len(cl)
    return blocks


def softmax(logw: np.ndarray) -> np.ndarray:
    """exp(logw) normalised to sum to one, without overflow."""
    w = np.exp(logw - logw.max())
    return w / w.sum()


def add_estep(s, enc, c: int, w: float, expected: tuple) -> None:
    """EM's M-step for one event of class ``c``: add the E-step's ``expected`` counts ``(u, m, feats_u, J)``
    to the counts, its observed values to the observed-only twin, and its Gaussian values."""
    s.add_expected(c, w, *expected)
    s.add_observed(enc, c, w)
    s.add_gaussian(c, w, enc.gslots, enc.gx)
