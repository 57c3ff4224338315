"""TAN's edge weights by the Bayesian network score: the gain of each candidate edge, from the pair counts.

As Weka's ``BayesNet`` TAN search (score ``BAYES``): the weight of edge (i, j) is
max(g(i ← j), g(j ← i)), g(i ← j) = S(i | c, x_j) − S(i | c) the gain in the node's local
Bayesian-Dirichlet (K2) score with a prior of ``alpha`` per cell, each count read over the events in
which both attributes were observed. The docs' *The models* page gives the score.
"""

from __future__ import annotations

import numpy as np

from ..kernels import compiled
from ._structure import value_blocks

__all__ = ["bayesian_edge_gains", "bayesian_edge_weights", "gains_of_cells"]


def gammaln(x):
    """scipy's ``gammaln``, imported on first use: scipy.special takes about 0.17 s to import, close
    to half of ``stream-nb``'s start-up, and only ``tree_score="bayes"`` needs it."""
    from scipy.special import gammaln as lgamma

    return lgamma(x)


def bayesian_edge_gains(stats, alpha: float) -> np.ndarray:
    """``g[j, i]``: the gain in attribute i's local score from x_j as its second parent (see the module).

    An (F, F) matrix over ``stats.features``, zero on the diagonal and for
    features without values.
    """
    C, V, F = stats.n_classes, len(stats.value_keys), len(stats.features)
    out = np.zeros((F, F))
    if V <= 1 or C == 0:
        return out
    fv = stats.value_feature
    live = np.flatnonzero(fv[1:V] >= 0) + 1  # columns a promotion detached hold nothing
    if not len(live):
        return out
    nv = np.asarray(stats.n_values, dtype=float)
    stats.sync_pairs()
    if stats.pairs_sparse:
        return _gains_from_cells(stats, C, V, F, alpha, nv)
    if stats.pairs_blocks:  # each pair's own block (stats/tables/_pair_blocks.py)
        return stats.pair_count.bayes_gains(alpha, nv)
    cols, block, present = value_blocks(stats, live)
    va = nv[present] * alpha  # V_i alpha of each head
    top = int(min(stats.n_seen, 1 << 22)) + 2  # lgamma(alpha + n) - lgamma(alpha) of the whole counts up to n_seen
    table = gammaln(alpha + np.arange(top)) - gammaln(alpha)
    # one compiled pass over the cells (numpy's took lgamma of several (V, V) arrays per class)
    g = compiled().dense_bayes_gains(np.asarray(stats.pair_count), C, cols, block, len(present), float(alpha),
                                     np.ascontiguousarray(va, dtype=float), table)
    out[np.ix_(present, present)] = g
    return out


def _group_sums(keys: np.ndarray, n: np.ndarray):
    """The distinct ``keys`` and the sum of ``n`` over each."""
    uniq, inv = np.unique(keys, return_inverse=True)
    return uniq, np.bincount(inv.ravel(), weights=n, minlength=len(uniq))


def _gains_from_cells(stats, C: int, V: int, F: int, alpha: float, nv: np.ndarray) -> np.ndarray:
    """:func:`bayesian_edge_gains` read off sparse pair tables (an empty cell adds nothing to a score): the
    sums of the cells in the compiled loop over the hash table's slots
    (:func:`~stream_nb.kernels._sparse_structure.bayes_gain_terms`, where numpy sorted every cell held four
    times), their gammaln terms and the sums of those in numpy as :func:`gains_of_cells` takes them (the
    same numbers to the bit)."""
    keys, vals = stats.pair_count.arrays()
    b1, x1, b2, h2, x2, b3, x3, b4, h4, x4 = compiled().bayes_gain_terms(
        keys, vals, np.array(stats.pair_count.shape, dtype=np.int64), C, V,
        np.ascontiguousarray(stats.value_feature[:V], dtype=np.int64), F)
    lga = gammaln(alpha)
    g = np.bincount(b1, weights=gammaln(alpha + x1) - lga, minlength=F * F)
    g -= np.bincount(b2, weights=gammaln(nv[h2] * alpha + x2) - gammaln(nv[h2] * alpha), minlength=F * F)
    g -= np.bincount(b3, weights=gammaln(alpha + x3) - lga, minlength=F * F)
    g += np.bincount(b4, weights=gammaln(nv[h4] * alpha + x4) - gammaln(nv[h4] * alpha), minlength=F * F)
    g = g.reshape(F, F)
    np.fill_diagonal(g, 0.0)
    return g


def gains_of_cells(stats, C: int, V: int, F: int, alpha: float, nv: np.ndarray) -> np.ndarray:
    """:func:`_gains_from_cells` in numpy, over the cells of the sparse pair table sorted by key (the reference
    the tests compare with)."""
    (c, v, w), n = stats.pair_count.cells()
    fv = stats.value_feature
    ok = (c < C) & (v < V) & (w < V) & (n > 0)
    c, v, w, n = c[ok], v[ok], w[ok], n[ok]
    ok = (v > 0) & (w > 0) & (fv[np.where(v < V, v, 0)] >= 0) & (fv[np.where(w < V, w, 0)] >= 0)
    c, v, w, n = c[ok], v[ok], w[ok], np.asarray(n[ok], dtype=float)
    fj, fi = fv[v], fv[w]
    lga = gammaln(alpha)
    g = np.bincount(fj * F + fi, weights=gammaln(alpha + n) - lga, minlength=F * F)
    key, tot = _group_sums((c * V + v) * F + fi, n)  # n(c, x_j = u, i observed)
    head = key % F
    g -= np.bincount(fv[(key // F) % V] * F + head, weights=gammaln(nv[head] * alpha + tot) - gammaln(nv[head] * alpha),
                     minlength=F * F)
    key, tot = _group_sums((c * F + fj) * V + w, n)  # n(c, j observed, x_i = w)
    pair = ((key // V) % F) * F + fv[key % V]
    g -= np.bincount(pair, weights=gammaln(alpha + tot) - lga, minlength=F * F)
    key, tot = _group_sums((c * F + fj) * F + fi, n)  # n(c, j observed, i observed)
    head = key % F
    g += np.bincount(key % (F * F), weights=gammaln(nv[head] * alpha + tot) - gammaln(nv[head] * alpha),
                     minlength=F * F)
    g = g.reshape(F, F)
    np.fill_diagonal(g, 0.0)
    return g


def bayesian_edge_weights(stats, alpha: float) -> np.ndarray:
    """The symmetric weight of each candidate TAN edge, max(g(i <- j), g(j <- i)) (see the module)."""
    g = bayesian_edge_gains(stats, alpha)
    return np.maximum(g, g.T)
