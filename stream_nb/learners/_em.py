"""EM's E-steps: the expected counts of an event whose attributes are partly missing.

``missing="em"`` learns an incomplete event by adding, in place of the counts
of its missing values, their posterior given its observed values and its
class (the E-step), with parameters read from the observed-only counts
(:meth:`Stats.observed <stream_nb.stats.Stats.observed>`), so that imputed
counts never feed later imputations. Each model says which posterior:

- :func:`naive_bayes_blocks`: the missing attributes independent given the class (naive Bayes);
- :func:`one_dependence_estep`: each pair table filled under the one-dependence model
  that owns it (AODE, SPODE, TAN);
- KDB enumerates the completions itself (:mod:`stream_nb.learners.kdb`).

:func:`add_estep` adds an E-step's result to the store (the M-step), and
:func:`mixture_posterior` is AODE's and SPODE's posterior of the missing values
as they predict (what imputation reports).
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
    """EM's E-step of the one-dependence models (AODE, SPODE, TAN): each attribute's rows under its own SPODE.

    The pair counts are a bank of one-dependence tables: the rows of
    attribute p (``pair_count[c, x_p, :]``, with ``value_count[c, x_p]``) are
    the parameters P̂(c, x_p) and P̂(x_j | c, x_p) of the SPODE whose
    super-parent is p, which is how AODE, SPODE and TAN read them. So the
    expected counts of those rows are the posterior of the event's missing
    values given its observed ones and its class ``c`` *under that SPODE*:

    * p observed: the missing x_j are independent given (c, x_p), so the row
      x_p of block (p, j) gets P̂(x_j | c, x_p), exactly;
    * p missing: x_p = t with posterior
      q_p(t) ∝ P̂(c, t) Π_{o observed} P̂(x_o | c, t); the rows t of block
      (p, o) get q_p(t) at x_o, those of block (p, j), j missing,
      q_p(t) P̂(x_j | c, t), and ``value_count`` gets q_p.

    The parameters P̂ are read from ``s``, which EM passes as the
    observed-only counts (:meth:`Stats.observed`). Every row block sums to
    one, so the event adds exactly one unit of weight to every table. The
    expected pair indicators ``J`` are not symmetric: block (p, j) is
    SPODE p's, block (j, p) SPODE j's.

    Returns ``(u, m, feats_u, J)`` for :meth:`Stats.add_expected`.
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


def mixture_posterior(s, a, enc, c, miss, m_limit, allowed, naive_jll=None):
    """``(feature, columns, P(x_f = v | x_o, c))`` of each missing feature under AODE as it predicts,
    read off store ``s`` with Lidstone's ``a`` (``allowed``: the features that may be super-parents,
    None for all; ``m_limit``: the frequency limit; ``naive_jll``: the naive-Bayes joint
    log-likelihood (C,) of ``enc``, needed when ``allowed`` is None): what imputation reports.

    AODE's joint is a sum of one-dependence models (SPODEs); summed over
    the completions of the missing values it is a mixture whose
    components are: each qualifying observed parent i (given x_i the
    missing attributes are independent, P̂(x_m | c, x_i)), and each
    qualifying value t of each missing attribute i (then x_i = t and the
    others follow P̂(x_m | c, t)). When no observed attribute qualifies,
    completions with no qualifying value at all follow naive Bayes, a
    last component. Component weights are their marginal likelihoods,
    so the result is the exact posterior under the model.
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

    def cond(vcols):
        """P̂(u | c, v) for parent columns vcols (rows) and every missing column u: (len(vcols), |U|)."""
        return (s.pair_count[c, vcols[:, None], U] + a) / (s.pair_feat[c, vcols[:, None], Ufeat] + a * n_all[Ufeat])

    ok_o = np.ones(len(ocols), dtype=bool) if allowed is None else np.isin(ofeats, allowed)
    ok_m = [allowed is None or f in allowed for f in miss.tolist()]
    if len(ocols):
        qual = (count[ocols] >= m_limit) & ok_o
        if qual.any():
            pc = ocols[qual]
            joint = np.log(s.value_count[c, pc] + a) - np.log(d_all[ofeats[qual]] + a * n_all[ofeats[qual]])
            ratio = (s.pair_count[c, pc[:, None], ocols] + a) / (s.pair_feat[c, pc[:, None], ofeats] + a * n_all[ofeats])
            ratio[np.arange(len(pc)), np.flatnonzero(qual)] = 1.0
            logw.append(joint + np.log(ratio).sum(1))
            rows.append(cond(pc))
    lo = 0
    for f, cl, ok in zip(miss.tolist(), mcols, ok_m):
        hi = lo + len(cl)
        qual = (count[cl] >= m_limit) & ok
        if qual.any():
            t = cl[qual]
            joint = np.log(s.value_count[c, t] + a) - np.log(d_all[f] + a * n_all[f])
            if len(ocols):
                ratio = (s.pair_count[c, t[:, None], ocols] + a) / (s.pair_feat[c, t[:, None], ofeats] + a * n_all[ofeats])
                joint = joint + np.log(ratio).sum(1)
            r = cond(t)
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
