from __future__ import annotations

import numpy as np

from ._base import BayesClassifier, logsumexp, naive_bayes_blocks
from ..exceptions import ConfigError

__all__ = ["AODE", "spode_terms", "one_dependence_estep", "mixture_posterior"]


class AODE(BayesClassifier):
    """Averaged one-dependence estimators, learned incrementally.

    Every attribute observed often enough becomes in turn the super-parent of
    all others, and the one-dependence models (SPODEs) are averaged:

    .. math::

        P(c \\mid x) \\propto \\sum_{i:\\ |D_{x_i}| \\ge m} \\hat P(c, x_i)
        \\prod_{j \\ne i} \\hat P(x_j \\mid c, x_i)

    .. math::

        \\hat P(c, x_i) = \\frac{|D_{c,x_i}| + \\alpha}{|D| + \\alpha N_i}, \\qquad
        \\hat P(x_j \\mid c, x_i) = \\frac{|D_{c,x_i,x_j}| + \\alpha}{|D_{c,x_i}| + \\alpha N_j}

    exactly as in the textbook (Zhou, *Machine Learning*, eq. 7.23-7.25, with
    Laplace's 1 generalised to ``alpha``). The factor for j = i is
    P(x_i | c, x_i) = 1 and is left out. When no attribute of the event
    qualifies as a parent, the prediction falls back to naive Bayes over the
    same counts. With missing values, |D| and |D_c,x_i| are counted over the
    events where the attributes involved were observed, and a missing
    attribute is neither parent nor child.

    Numeric (``float``) features are discretised online into ``bins``
    equal-frequency bins whose edges are chosen from the first ``warmup``
    values and then never move (see :mod:`stream_nb.stats._discretise`); until then
    the feature counts as missing.

    Parameters
    ----------
    alpha
        Lidstone smoothing, > 0.
    m
        Frequency limit: an attribute value is a parent only when seen in at
        least ``m`` events (the textbook suggests 30; 1 is Weka's default).
    bins
        Bins per numeric feature.
    warmup
        Values of a numeric feature used to choose its bin edges.
    bin_edges
        ``{feature: [edges]}`` to fix some features' edges up front (needed to
        merge models that discretise numeric features).
    types
        ``{feature: "categorical" | "numeric"}`` overriding type inference.
    loss
        Optional loss matrix ``{truth: {prediction: cost}}`` for Bayes decision.
    missing
        ``"em"`` (default): learn from events with missing attributes by
        online EM (see :func:`one_dependence_estep` for the E-step; it keeps
        a second, observed-only copy of the counts); ``"ignore"``: skip
        missing values when learning.
    learn_unlabeled
        Learn from unlabeled events (``learn_one(x, None)``) by EM over the
        class too (semi-supervised, Nigam et al. 2000).
    unlabeled_weight
        Weight of an unlabeled event relative to a labeled one.

    Examples
    --------
    >>> from stream_nb import AODE
    >>> model = AODE()
    >>> stream = [
    ...     ({"colour": "green", "root": "curled", "sound": "dull"}, "good"),
    ...     ({"colour": "dark", "root": "curled", "sound": "dull"}, "good"),
    ...     ({"colour": "dark", "root": "stiff", "sound": "crisp"}, "bad"),
    ...     ({"colour": "light", "root": "stiff", "sound": "crisp"}, "bad"),
    ...     ({"colour": "green", "root": "slightly", "sound": "dull"}, "bad"),
    ... ]
    >>> for x, y in stream:
    ...     model.learn_one(x, y)
    >>> model.predict_proba_one({"colour": "green", "root": "curled", "sound": "dull"})
    {'good': 0.7525, 'bad': 0.2475}

    """

    _pairs = True
    _numeric = "bins"

    def __init__(
        self,
        alpha: float = 1.0,
        m: int = 1,
        bins: int = 5,
        warmup: int = 100,
        bin_edges: dict | None = None,
        types: dict | None = None,
        loss: dict | None = None,
        missing: str = "em",
        learn_unlabeled: bool = False,
        unlabeled_weight: float = 1.0,
    ):
        self.alpha = alpha
        self.m = m
        self.bins = bins
        self.warmup = warmup
        self.bin_edges = bin_edges
        self.types = types
        self.loss = loss
        self.missing = missing
        self.learn_unlabeled = learn_unlabeled
        self.unlabeled_weight = unlabeled_weight
        if isinstance(m, bool) or not isinstance(m, int) or m < 0:
            raise ConfigError(f"m: expected an integer >= 0 (frequency limit), got {m!r}")
        _check_binning(bins, warmup)
        self._setup()

    @classmethod
    def _unit_test_params(cls):
        yield {}
        yield {"m": 5, "bins": 3, "warmup": 20}

    def _spode_terms(self, cols, feats):
        """(C, k) log P̂(c, x_i) Π_j P̂(x_j | c, x_i) for every observed i, and the parent mask."""
        return spode_terms(self._stats, self._alpha, cols, feats, self.m)

    def _jll(self, enc):
        cols = enc.cols
        if len(cols) == 0 or not self._stats.n_classes:
            return self._naive_jll(enc)
        terms, parents = self._spode_terms(cols, enc.feats)
        if not parents.any():
            return self._naive_jll(enc)
        return logsumexp(terms[:, parents], axis=1)

    def _estep(self, enc, c, miss):
        return one_dependence_estep(self._stats.observed(), self._alpha, enc, c, miss)

    def _missing_posterior(self, enc, c, miss):
        return mixture_posterior(self, enc, c, miss, self.m, None)

    def _jll_many(self, D, dfeats, G, gslots):
        out = self._naive_jll_many(D, dfeats, G, gslots)
        if not D.shape[1]:
            return out
        s, a = self._stats, self._alpha
        C, k = s.n_classes, D.shape[1]
        d_i = s.feat_count[:C, dfeats].sum(0)  # 0 only for features with no values: masked
        diag = np.eye(k, dtype=bool)
        for lo in range(0, len(D), 128):  # rows in chunks: the pair gather is (C, rows, k, k)
            Dr = D[lo : lo + 128]
            obs = Dr >= 0
            Dc = np.where(obs, Dr, 0)
            n_vals = np.maximum(s.n_values[dfeats][None, :] + (Dr == 0), 1)
            vc = s.value_count[:C][:, Dc]
            parents = obs & (vc.sum(0) >= self.m)
            joint = np.log(vc + a) - np.log(d_i[None, :] + a * n_vals)[None]
            pc = s.pair_count[:C][:, Dc[:, :, None], Dc[:, None, :]]
            den = s.pair_feat[:C][:, Dc[:, :, None], dfeats[None, None, :]]
            ratio = (pc + a) / (den + a * n_vals[:, None, :][None])
            skip = ~obs[:, None, :] | diag[None]
            terms = joint + np.log(np.where(skip[None], 1.0, ratio)).sum(3)
            rows = parents.any(1)
            if rows.any():
                t = np.where(parents[None], terms, -np.inf)[:, rows]
                out[lo : lo + 128][rows] = logsumexp(t, axis=2).T
        return out


def spode_terms(s, a, cols, feats, m_limit=0):
    """(C, k) log P̂(c, x_i) Π_{j≠i} P̂(x_j | c, x_i) of the SPODE rooted at each observed x_i,
    and the mask of the parents seen at least ``m_limit`` times."""
    C = s.n_classes
    vc = s.value_count[:C, cols]  # |D_c,xi|  (C, k)
    n_vals = s.n_values[feats] + (cols == 0)  # N_i (a never-seen value counts as one more)
    parents = vc.sum(0) >= m_limit
    d_i = s.feat_count[:C, feats].sum(0)  # |D| over the events where feature i was observed
    joint = np.log(vc + a) - np.log(d_i + a * n_vals)
    pc = s.pair_count[:C][:, cols[:, None], cols[None, :]]  # (C, k, k)  |D_c,xi,xj|
    den = s.pair_feat[:C][:, cols[:, None], feats[None, :]]  # |D_c,xi| where x_j observed
    ratio = (pc + a) / (den + a * n_vals[None, None, :])
    k = len(cols)
    idx = np.arange(k)
    ratio[:, idx, idx] = 1.0  # P(x_i | c, x_i) = 1
    return joint + np.log(ratio).sum(2), parents


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
    pc, pf = s.pair_count[c], s.pair_feat[c]

    def cond(vcols):
        """P̂(u | c, v) for parent columns ``vcols`` (rows) and every missing column u (columns)."""
        return (pc[vcols[:, None], U] + a) / (pf[vcols[:, None], Ufeat] + a * n_all[Ufeat])

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
            logq = logq + np.log((pc[cl[:, None], ocols] + a) / (pf[cl[:, None], ofeats] + a * n_all[ofeats])).sum(1)
        q = np.exp(logq - logq.max())
        q /= q.sum()
        m[lo:hi] = q
        J[lo:hi, :k] = q[:, None]
        J[lo:hi, k:] = q[:, None] * cond(cl)
        J[lo:hi, lo:hi] = np.diag(q)  # one attribute takes one value
        lo = hi
    return np.concatenate([ocols, U]), m, np.concatenate([ofeats, Ufeat]), J


def mixture_posterior(self, enc, c, miss, m_limit, allowed):
    # ``self``: the AODE or SPODE whose counts and smoothing are used
    """``(feature, columns, P(x_f = v | x_o, c))`` of each missing feature under AODE as it predicts
    (``allowed``: the features that may be super-parents, None for all; ``m_limit``: the
    frequency limit): what imputation reports.

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
    s, a = self._stats, self._alpha
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
        return (s.pair_count[c][vcols[:, None], U] + a) / (s.pair_feat[c][vcols[:, None], Ufeat] + a * n_all[Ufeat])

    ok_o = np.ones(len(ocols), dtype=bool) if allowed is None else np.isin(ofeats, allowed)
    ok_m = [allowed is None or f in allowed for f in miss.tolist()]
    if len(ocols):
        qual = (count[ocols] >= m_limit) & ok_o
        if qual.any():
            pc = ocols[qual]
            joint = np.log(s.value_count[c, pc] + a) - np.log(d_all[ofeats[qual]] + a * n_all[ofeats[qual]])
            ratio = (s.pair_count[c][pc[:, None], ocols] + a) / (s.pair_feat[c][pc[:, None], ofeats] + a * n_all[ofeats])
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
                ratio = (s.pair_count[c][t[:, None], ocols] + a) / (s.pair_feat[c][t[:, None], ofeats] + a * n_all[ofeats])
                joint = joint + np.log(ratio).sum(1)
            r = cond(t)
            r[:, lo:hi] = 0.0
            r[np.arange(len(t)), lo + np.flatnonzero(qual)] = 1.0
            logw.append(joint)
            rows.append(r)
        lo = hi
    if allowed is None and (not len(ocols) or not (count[ocols] >= m_limit).any()):
        # completions in which nothing qualifies: naive Bayes over the unqualified values
        nb = self._naive_jll(enc)[c]
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
    mvec = _softmax(np.concatenate(logw)) @ np.concatenate(rows)
    blocks, lo = [], 0
    for f, cl in zip(miss.tolist(), mcols):
        blocks.append((f, cl, mvec[lo : lo + len(cl)]))
        lo += len(cl)
    return blocks


def _softmax(logw: np.ndarray) -> np.ndarray:
    w = np.exp(logw - logw.max())
    return w / w.sum()


def _check_binning(bins, warmup):
    if isinstance(bins, bool) or not isinstance(bins, int) or bins < 1:
        raise ConfigError(f"bins: expected an integer >= 1, got {bins!r}")
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 1:
        raise ConfigError(f"warmup: expected an integer >= 1, got {warmup!r}")

