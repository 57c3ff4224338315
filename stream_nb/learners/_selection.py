"""Selective structure: the attributes and parents that the counts show informative, by G-tests.

On wide data most attributes of a k-dependence model add estimation noise and
no information about the class: an attribute that depends on the class only
through another attribute (in a chain c -> a -> b, b given a) tells nothing
more once that attribute is known, yet naive Bayes and KDB multiply its factor
in all the same. A *selective* model (Martinez et al., "Scalable learning of
Bayesian network classifiers", JMLR 2016: selective KDB; Chen et al.,
selective AnDE) keeps only the attributes and the parents that carry
information.

Here the selection is a pure function of the additive counts, read at the
model's rebuilds: two models merged hold the counts of one model of all
their events, and the merged model's next rebuild (a merge rebuilds) chooses
what that one model would. Evidence kept beside the counts (a prequential log
loss per candidate, a leave-one-out pass over past events) would not merge so:
the prequential losses of two models are each scored by a model that never saw
the other's events, and the events of a leave-one-out pass are gone.

The tests are likelihood-ratio (G) tests, each statistic twice the events
times a mutual information read off the counts, against the chi-square
quantile (Wilson and Hilferty's approximation) at level ``level`` shared
among the tests of its kind (Bonferroni):

- **a parent** g of attribute f, among f's ``k`` candidates of highest
  I(x_f; x_g | y) (KDB's rule): kept when
  :math:`2 n I(x_f; x_g \\mid y)` passes the quantile with
  :math:`\\sum_c (|X_f|_c - 1)(|X_g|_c - 1)` degrees of freedom (the values
  held in each class's stratum), level shared among the pairs of attributes;
  so each attribute's number of parents, up to ``k``, is chosen by the data;
- **an attribute** f: kept when it tells more of the class than the earlier
  attribute z it depends on most (highest I(x_f; x_z | y), kept or not),
  :math:`2 n I(y; x_f \\mid x_z)` against
  :math:`\\sum_u (|C|_u - 1)(|X_f|_u - 1)` over z's values u (first in the
  order, or k = 0: :math:`2 n I(y; x_f)` against :math:`(|C| - 1)(|X_f| - 1)`),
  level shared among the attributes. An attribute dropped is left out of the
  product, and is no parent of another. In a chain c -> a -> b -> d, given a,
  b tells nothing of c, and given b neither does d: both are dropped, however
  much each tells of c alone.

Selective AODE (:func:`informative_parents`) keeps as super-parents the
attributes that the class depends on, each by the G-test of
:math:`2 n I(x_p; y)` against :math:`(|C| - 1)(|X_p| - 1)` degrees of freedom,
level shared among the attributes; every attribute stays a child. Chen,
Martinez, Webb and Wang ("Sample-based attribute selective AnDE for large
data", IEEE TKDE 2017) rank the attributes by I(x; y) and choose how many to
keep by leave-one-out evidence over the events; that choice is not kept here,
since the events are gone and it would not merge (above).

For KDB, the attributes are taken in the order of I(x_f; y), as KDB orders them, and
parents come from the attributes kept before (and allowed by the memory
budget's candidates). When every test passes, the structure is KDB's own.
Before any is kept, and with few events, the tests keep little: the model
then predicts from the few attributes the counts support.
"""

from __future__ import annotations

import numpy as np

from ..stats import chi2_quantile

__all__ = ["g_test", "informative_parents", "selective_structure"]


def g_test(n: np.ndarray) -> tuple[float, int]:
    """``(G, df)`` of the counts ``n[a, b, z]``: G = 2 Σ n log(n n_z / (n_az n_bz)), the likelihood-ratio
    statistic of a independent of b given z, and its degrees of freedom Σ_z (|a|_z - 1)(|b|_z - 1), counting
    in each stratum z the values of a and of b that hold a count.

    >>> g, df = g_test(np.array([[[10.0], [0.0]], [[0.0], [10.0]]]))   # a = b: 2 * 20 * log 2, 1 df
    >>> round(g, 4), df
    (27.7259, 1)
    """
    n = np.asarray(n, dtype=float)
    nz, naz, nbz = n.sum((0, 1)), n.sum(1), n.sum(0)
    pos = n > 0
    ratio = np.ones_like(n)
    ratio[pos] = (n * nz[None, None, :])[pos] / (naz[:, None, :] * nbz[None, :, :])[pos]
    g = 2.0 * float(np.where(pos, n * np.log(ratio), 0.0).sum())
    df = int((np.maximum((naz > 0).sum(0) - 1, 0) * np.maximum((nbz > 0).sum(0) - 1, 0)).sum())
    return max(g, 0.0), df


def _passes(g: float, df: int, level: float) -> bool:
    # a level below the float spacing at 1 (shared among many tests) has no finite quantile: nothing passes
    return df > 0 and 1.0 - level < 1.0 and g > chi2_quantile(1.0 - level, df)


def selective_structure(s, order: list, k: int, level: float, cmi: np.ndarray | None,
                        allowed: np.ndarray | None) -> tuple[dict, set]:
    """``(parents, dropped)`` of the selective KDB over store ``s`` (its observed counts): ``order`` the
    discrete features by decreasing I(x_f; y), ``cmi`` (F, F) I(x_f; x_g | y) (None when ``k`` is 0),
    ``allowed`` [f, g] whether g may be f's parent (None: any). ``parents[f]`` are the parents of each
    feature kept (up to ``k``, by decreasing CMI, ties by name), ``dropped`` the features left out."""
    C = s.n_classes
    names = s.features
    n_pairs = max(len(order) * (len(order) - 1) // 2, 1)
    pair_level, class_level = level / n_pairs, level / max(len(order), 1)
    parents: dict[int, tuple[int, ...]] = {}
    dropped: set[int] = set()
    kept: list[int] = []
    for pos, f in enumerate(order):
        cf = s.columns_of(f)
        # the earlier attribute f depends on most (kept or not): what f may tell nothing more than
        z = order[max(range(pos), key=lambda i: (cmi[f, order[i]], -i))] if k and pos else None
        if z is not None and cmi[f, z] > 0:  # n[c, x_f, u]: the class against x_f within each value u of z
            shown = g_test(s.pair_count[:C, cf[:, None], s.columns_of(z)[None, :]])
        else:
            shown = g_test(np.asarray(s.value_count[:C, cf], dtype=float)[:, :, None])
        if not _passes(*shown, class_level):
            parents[f] = ()
            dropped.add(f)
            continue
        chosen = []
        earlier = [g for g in kept if allowed is None or allowed[f, g]]
        for g in sorted(earlier, key=lambda g: (-cmi[f, g], str(names[g])))[:k]:
            # n[x_f, x_g, c]: f's rows of the pair table, the class last
            block = np.asarray(s.pair_count[:C, cf[:, None], s.columns_of(g)[None, :]], dtype=float)
            if _passes(*g_test(block.transpose(1, 2, 0)), pair_level):
                chosen.append(g)
        parents[f] = tuple(chosen)
        kept.append(f)
    return parents, dropped


def informative_parents(s, level: float) -> np.ndarray:
    """(F,) whether each feature of store ``s`` may be a super-parent of selective AODE: a discrete feature
    whose G-test rejects its independence of the class, ``2 n I(x_p; y)`` on the counts of its values in each
    class against the chi-square quantile with ``(|C| - 1)(|X_p| - 1)`` degrees of freedom (the classes and
    values that hold a count), at ``level`` shared among the discrete features (Bonferroni); a numeric
    feature without bins is none."""
    C = s.n_classes
    nodes = s.discrete_features().tolist()
    keep = np.zeros(len(s.features), dtype=bool)
    shared = level / max(len(nodes), 1)
    for f in nodes:
        keep[f] = _passes(*g_test(np.asarray(s.value_count[:C, s.columns_of(f)], dtype=float)[:, :, None]), shared)
    return keep
