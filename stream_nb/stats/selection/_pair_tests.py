"""Two G-tests of each attribute pair's own counts: of X_i and X_j together, and of X_i and X_j given the class.

KDB's pair rule (:mod:`stream_nb.stats.selection._informative`) keeps, for each class-informative
attribute, the pairs with its partners that the counts support. A pair admitted on trial holds only the
events learned since (:func:`~stream_nb.stats.selection._candidates.apply_selection`), often a few
hundred, spread over C |X_i| |X_j| cells: the test of independence given the class
(I(X_i; X_j | C), what KDB's parents are chosen by) shows a dependence only after thousands of them. The
test of X_i and X_j alone (the class summed out, |X_i| |X_j| cells) shows the dependence of a child on its
parent within a few hundred. Both are likelihood-ratio tests read off the pair table's cells, each pair's
G = 2 Σ n log(n n_b / (n_row n_col)) over one orientation of its counts, against the chi-square whose
degrees of freedom count the values that hold a count (Σ_z (|X_i|_z - 1)(|X_j|_z - 1) over the strata z:
none, or the classes), as :func:`~stream_nb.learners._selection.g_test` counts them: where most cells are
still empty, the degrees of freedom of every possible value would make any pair look independent.
"""

from __future__ import annotations

import numpy as np

from ...kernels import compiled
from ._significance import chi2_logsf
from ..tables import SparseTable, cells_of

__all__ = ["pair_tests", "pair_tests_of_cells"]


def _group(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(unique keys, inverse)``."""
    uniq, inv = np.unique(keys, return_inverse=True)
    return uniq, inv.ravel()


def _g_and_df(v, w, b, n, V: int, F: int, B: int) -> tuple[np.ndarray, np.ndarray]:
    """Per block ``b`` (< B) of cells ``(v, w)`` (value columns, V of them; the block determines their
    features, F of them) with counts ``n``: the G statistic of v against w, and its degrees of freedom
    (values of v held minus one, times values of w held minus one)."""
    if not len(n):
        return np.zeros(B), np.zeros(B)
    rows, r_inv = _group(b * V + v)  # n(v, block)
    cols, c_inv = _group(b * V + w)  # n(block, w)
    n_row = np.bincount(r_inv, weights=n)[r_inv]
    n_col = np.bincount(c_inv, weights=n)[c_inv]
    n_blk = np.bincount(b, weights=n, minlength=B)
    g = 2.0 * np.bincount(b, weights=n * np.log(n * n_blk[b] / (n_row * n_col)), minlength=B)
    df = (np.bincount(rows // V, minlength=B) - 1.0).clip(0) * (np.bincount(cols // V, minlength=B) - 1.0).clip(0)
    return np.maximum(g, 0.0), df


def pair_tests(s) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(joint, given, n, excess)``, each (F, F) and symmetric: per pair of discrete features of store ``s``,
    the log p-value of the G-test of X_i against X_j (the class summed out), that of X_i against X_j given
    the class (see the module notes), both from the pair's own counts in ``pair_count`` (dense or sparse),
    n, the events those counts hold, and the excess of the second's G over its degrees of freedom (what
    independence would give on average) per event, (G - df) / n, at least 0: twice I(X_i; X_j | C) less the
    plug-in estimate's bias, comparable between pairs that hold different numbers of events. 0 (p = 1) and
    n = 0 for a pair without counts or without a degree of freedom.

    A sparse table's sums and ratios are read in the compiled loop over its slots
    (:func:`~stream_nb.kernels._sparse_structure.pair_test_terms`, each pair's cells in key order, numpy's
    order), where numpy sorted every cell held five times (a second at KDB's first pruning on cat200); the
    logarithms and the sums of the terms stay numpy's, so the results are the same to the bit
    (:func:`pair_tests_of_cells` is the numpy reading, of any table)."""
    C, V, F = s.n_classes, len(s.value_keys), len(s.features)
    if C == 0 or V <= 1 or F < 2:
        return tuple(np.zeros((F, F)) for _ in range(4))
    vf = np.asarray(s.value_feature[:V], dtype=np.int64)
    table = s.pair_count
    if not isinstance(table, SparseTable):
        return pair_tests_of_cells(*cells_of(table, (C, V, V)), vf, C, V, F)
    keys, vals = table.arrays()
    gb, gn, gr, df_c, jb, jm, jr, df_j, n_b = compiled().pair_test_terms(
        keys, vals, np.array(table.shape, dtype=np.int64), C, V, np.ascontiguousarray(vf), F)
    g_c = np.maximum(2.0 * np.bincount(gb, weights=gn * np.log(gr), minlength=C * F * F), 0.0)
    g_j = np.maximum(2.0 * np.bincount(jb, weights=jm * np.log(jr), minlength=F * F), 0.0)
    return _tests(g_c.reshape(C, F * F).sum(0), df_c.reshape(C, F * F).sum(0), g_j, df_j, n_b, F)


def pair_tests_of_cells(idx: tuple, n: np.ndarray, vf: np.ndarray, C: int, V: int, F: int) -> tuple:
    """:func:`pair_tests` of the cells ``idx`` = (c, v, w) with counts ``n`` of a pair table (in key order,
    as ``cells_of`` lists them) of ``C`` classes, ``V`` columns of features ``vf`` and ``F`` features, in numpy."""
    c, v, w = idx
    ok = (v > 0) & (w > 0) & (n > 0)
    c, v, w, n = c[ok], v[ok], w[ok], n[ok].astype(float)
    fi, fj = vf[v], vf[w]
    ok = (fi >= 0) & (fj >= 0) & (fi < fj)  # one orientation of each pair (both hold the same events)
    c, v, w, n, fi, fj = c[ok], v[ok], w[ok], n[ok], fi[ok], fj[ok]
    b = fi * F + fj
    # given the class: a block per (class, pair)
    g_c, df_c = _g_and_df(v, w, c * F * F + b, n, V, F, C * F * F)
    g_c, df_c = g_c.reshape(C, F * F).sum(0), df_c.reshape(C, F * F).sum(0)
    # the class summed out: the cells (v, w) of every class added
    vw, inv = _group(v * V + w)
    m = np.bincount(inv, weights=n)
    uv, uw = np.divmod(vw, V)
    g_j, df_j = _g_and_df(uv, uw, vf[uv] * F + vf[uw], m, V, F, F * F)
    n_b = np.bincount(b, weights=n, minlength=F * F)
    return _tests(g_c, df_c, g_j, df_j, n_b, F)


def _tests(g_c, df_c, g_j, df_j, n_b, F: int) -> tuple:
    """:func:`pair_tests`' four (F, F) arrays from the G statistics and degrees of freedom of each pair (F F),
    given the class (``g_c``, ``df_c``) and not (``g_j``, ``df_j``), and its count ``n_b``."""
    joint, given, events, excess = np.zeros((F, F)), np.zeros((F, F)), np.zeros((F, F)), np.zeros((F, F))
    for out, g, df in ((joint, g_j, df_j), (given, g_c, df_c)):
        has = df > 0
        flat = np.zeros(F * F)
        if has.any():
            flat[has] = chi2_logsf(g[has], df[has])
        out[:] = flat.reshape(F, F)
        out += out.T
    events[:] = n_b.reshape(F, F)
    events += events.T
    with np.errstate(divide="ignore", invalid="ignore"):
        flat = np.where(n_b > 0, np.maximum(g_c - df_c, 0.0) / np.where(n_b > 0, n_b, 1.0), 0.0)
    excess[:] = flat.reshape(F, F)
    excess += excess.T
    return joint, given, events, excess
