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


def g_test(n: np.ndarray, williams: bool = False) -> tuple[float, int]:
    """``(G, df)`` of the counts ``n[a, b, z]``: G = 2 Σ n log(n n_z / (n_az n_bz)), the likelihood-ratio
    statistic of a independent of b given z, and its degrees of freedom Σ_z (|a|_z - 1)(|b|_z - 1), counting
    in each stratum z the values of a and of b that hold a count. ``williams``: each stratum's G divided by
    Williams' correction q_z = 1 + (n_z Σ_a 1/n_az - 1)(n_z Σ_b 1/n_bz - 1) / (6 n_z df_z) (Williams 1976;
    Sokal and Rohlf, *Biometry*): in a stratum whose values are rare (many cells of small expectation) G
    runs above the chi-square its p-value is read from, and an attribute independent of the class given its
    parent would pass as informative.

    >>> g, df = g_test(np.array([[[10.0], [0.0]], [[0.0], [10.0]]]))   # a = b: 2 * 20 * log 2, 1 df
    >>> round(g, 4), df
    (27.7259, 1)
    """
    n = np.asarray(n, dtype=float)
    nz, naz, nbz = n.sum((0, 1)), n.sum(1), n.sum(0)
    pos = n > 0
    ratio = np.ones_like(n)
    ratio[pos] = (n * nz[None, None, :])[pos] / (naz[:, None, :] * nbz[None, :, :])[pos]
    dfz = np.maximum((naz > 0).sum(0) - 1, 0) * np.maximum((nbz > 0).sum(0) - 1, 0)
    gz = 2.0 * np.where(pos, n * np.log(ratio), 0.0).sum((0, 1))
    if williams:
        # q_z = 1 + (n_z Σ_a 1/n_az - 1)(n_z Σ_b 1/n_bz - 1) / (6 n_z df_z), over the values held
        with np.errstate(divide="ignore"):
            inv_a = np.where(naz > 0, 1.0 / naz, 0.0).sum(0)
            inv_b = np.where(nbz > 0, 1.0 / nbz, 0.0).sum(0)
        has = dfz > 0
        q = np.ones_like(nz)
        q[has] = 1.0 + (nz[has] * inv_a[has] - 1.0) * (nz[has] * inv_b[has] - 1.0) / (6.0 * nz[has] * dfz[has])
        gz = gz / q
    return max(float(gz.sum()), 0.0), int(dfz.sum())


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
            shown = g_test(s.pair_count[:C, cf[:, None], s.columns_of(z)[None, :]], williams=True)
        else:
            shown = g_test(np.asarray(s.value_count[:C, cf], dtype=float)[:, :, None], williams=True)
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
        # f must also tell something of the class given its first parent (the kept attribute it depends on
        # most): one that carries all f says of it (f's own parent in the network, or an ancestor through which
        # f depends on the class) leaves f nothing but the noise of its estimates
        if chosen and not _passes(*g_test(s.pair_count[:C, cf[:, None], s.columns_of(chosen[0])[None, :]],
                                         williams=True), class_level):
            parents[f] = ()
            dropped.add(f)
            continue
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
