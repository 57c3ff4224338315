"""Structure learning from the counts: mutual information, conditional mutual information, spanning trees.

TAN's tree and KDB's parents are chosen from the same class-conditional pair
counts every discretising model keeps, so a rebuild needs no pass over past
events.
"""

from __future__ import annotations

import math

import numpy as np

from ..kernels import compiled
from ..stats import G_TEST_ALPHA, chi2_quantile, cmi_from_cells, mutual_information_with_class, pair_evidence

__all__ = ["conditional_mutual_information", "dependence_shown", "dependent_pairs", "maximum_spanning_tree", "mutual_information_with_class",
           "value_blocks"]


def conditional_mutual_information(stats) -> np.ndarray:
    """I(x_i; x_j | y) for every pair of discrete features, an (F, F) matrix over ``stats.features`` (zero on
    the diagonal and for features without values), from the pair counts over the events in which both were
    observed; the two blocks of a pair, which EM may fill differently, are pooled.
    """
    C, V, F = stats.n_classes, len(stats.value_keys), len(stats.features)
    out = np.zeros((F, F))
    if V <= 1 or C == 0:
        return out
    live = np.flatnonzero(stats.value_feature[1:V] >= 0) + 1  # columns a promotion detached hold nothing
    if not len(live):
        return out
    stats.sync_pairs()
    if stats.pairs_sparse:
        return cmi_from_cells(stats)
    if stats.pairs_blocks:  # each pair's own block (stats/tables/_pair_blocks.py)
        mi = np.maximum(stats.pair_count.cmi(), 0.0)
        np.fill_diagonal(mi, 0.0)
        return mi
    cols, block, present = value_blocks(stats, live)
    # one compiled pass over the cells (numpy's built several (V, V) temporaries per class)
    mi, n_pair = compiled().dense_cmi(np.asarray(stats.pair_count), C, cols, block, len(present))
    mi, n_pair = mi + mi.T, n_pair + n_pair.T  # both blocks of each pair
    with np.errstate(divide="ignore", invalid="ignore"):
        mi = np.where(n_pair > 0, mi / np.where(n_pair > 0, n_pair, 1.0), 0.0)
    np.fill_diagonal(mi, 0.0)
    out[np.ix_(present, present)] = np.maximum(mi, 0.0)
    return out


def value_blocks(stats, live: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(cols, block, present)``: the ``live`` value columns sorted by feature, the index of each one's
    feature among ``present``, the features that hold a live column (in increasing order)."""
    fcol = stats.value_feature[live]
    order = np.argsort(fcol, kind="stable")
    cols, fsorted = live[order], fcol[order]
    present, block = np.unique(fsorted, return_inverse=True)
    return np.ascontiguousarray(cols, dtype=np.int64), block.astype(np.int64).ravel(), present


def maximum_spanning_tree(weights: np.ndarray, nodes, root, rank=None) -> dict:
    """Prim's algorithm: ``{child: parent}`` of the maximum-weight spanning tree over ``nodes``, rooted at ``root``.

    Ties go to the node of lower ``rank`` (default: lower index), so the tree is deterministic.
    """
    nodes = list(nodes)
    if not nodes:
        return {}
    rank = rank if rank is not None else {n: n for n in nodes}
    F = max(max(nodes), root) + 1
    order = np.zeros(F, dtype=np.int64)
    order[nodes] = [rank[n] for n in nodes]
    w = np.ascontiguousarray(np.asarray(weights, dtype=float)[:F, :F])
    parent = compiled().prim_tree(w, np.asarray(nodes, dtype=np.int64), int(root), order)
    return {n: int(parent[n]) for n in nodes if n != root}


def dependence_shown(stats, rule: str = "bic") -> bool:
    """Whether the counts show two attributes dependent given the class, enough to be worth modelling.

    ``"bic"``: some pair has n I(x_i; x_j | y) > ½ |C| (|X_i| − 1)(|X_j| − 1) ln n; ``"g"``: the G-test of
    2n I(x_i; x_j | y) rejects independence at level 0.01 shared among the pairs. Both read the observed
    counts (not EM's imputed ones).

    >>> from stream_nb import TAN, Tree
    >>> model = TAN(search=Tree(rebuild_every=0))
    >>> for i in range(200):
    ...     model.learn_one({"a": i % 2, "b": i % 2, "c": (i // 2) % 3}, i % 3 == 0)
    >>> dependence_shown(model._stats), dependence_shown(model._stats, "g")   # b copies a
    (True, True)
    >>> import random
    >>> rng, model = random.Random(1), TAN(search=Tree(rebuild_every=0))
    >>> for i in range(200):   # a and c independent given the class
    ...     y = rng.random() < 0.4
    ...     model.learn_one({"a": rng.random() < (0.8 if y else 0.3), "c": rng.choice("pqr")}, y)
    >>> dependence_shown(model._stats), dependence_shown(model._stats, "g")
    (False, False)
    """
    if rule not in ("bic", "g"):
        raise ValueError(f"rule: expected 'bic' or 'g', got {rule!r}")
    s = stats.observed()
    C = s.n_classes
    feats = s.discrete_features()
    n = s.n_seen
    if C == 0 or len(feats) < 2 or n <= 1:
        return False
    if rule == "g":
        return bool(dependent_pairs(s, G_TEST_ALPHA).any())
    gain = n * conditional_mutual_information(s)[np.ix_(feats, feats)]
    dof = np.maximum(s.n_values[feats] - 1, 1).astype(float)
    np.fill_diagonal(gain, 0.0)
    return bool((gain > 0.5 * C * np.outer(dof, dof) * math.log(n)).any())


def dependent_pairs(stats, level: float) -> np.ndarray:
    """(F, F), symmetric: whether the G-test of 2n I(x_i; x_j | y) against the chi-square quantile with
    |C| (|X_i| − 1)(|X_j| − 1) degrees of freedom rejects the independence of two discrete features given the
    class, at ``level`` shared among the pairs (Bonferroni), I read off the observed counts; n the events seen,
    or in sparse pair tables those the pair's own counts hold (a pair admitted late has seen fewer), and 0 for a
    pair they do not keep.

    >>> import random
    >>> from stream_nb import AODE
    >>> rng, model = random.Random(1), AODE()
    >>> for i in range(300):   # b copies a; c is apart from both, given the class
    ...     y, a = rng.random() < 0.4, rng.random() < 0.5
    ...     model.learn_one({"a": a, "b": a, "c": rng.choice("pq" if y else "pqr")}, y)
    >>> dependent_pairs(model._stats, 0.01).astype(int)
    array([[0, 1, 0],
           [1, 0, 0],
           [0, 0, 0]])
    """
    s = stats.observed()
    C, F = s.n_classes, len(s.features)
    out = np.zeros((F, F), dtype=bool)
    feats = s.discrete_features()
    n = s.n_seen
    if C == 0 or len(feats) < 2 or n <= 1:
        return out
    s.sync_pairs()
    # in sparse tables a pair kept since its last admission is tested on the events its own counts hold
    g = pair_evidence(s)[0] if s.pairs_sparse else 2.0 * n * conditional_mutual_information(s)
    g = g[np.ix_(feats, feats)]
    dof = np.maximum(s.n_values[feats] - 1, 1).astype(float)
    i, j = np.triu_indices(len(feats), 1)
    shown = g[i, j] > chi2_quantile(1.0 - level / len(i), C * dof[i] * dof[j])
    out[feats[i[shown]], feats[j[shown]]] = True
    return out | out.T
