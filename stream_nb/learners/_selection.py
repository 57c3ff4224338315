"""Selective structure: the attributes and parents that the counts show informative, by G-tests.

Selective KDB (:func:`selective_structure`: attributes, and parents among each one's ``k`` candidates)
and selective AODE (:func:`informative_parents`: super-parents), each test twice the events times a
mutual information against the chi-square quantile, at a level shared among the tests of its kind. A
pure function of the counts, so merges and snapshots choose what one model of all the events would.
The docs' *Options* page (Selection) gives the tests.
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
