"""Whether a feature's quantile cuts tell more of the class, alone or with another feature: a G-test.

Fayyad and Irani's MDL criterion (:mod:`stream_nb.stats.discretiser._mdl`) judges a
numeric feature by itself. A feature whose class information lies only in
its interactions gets no cut from it (river's Bananas: either coordinate alone
says little of the class, the two together much), so the coarse layer of a
two-layer store (:mod:`stream_nb.stats.store._fine`) may also cut a feature at the
fine boundaries nearest its ``bins`` equal-frequency quantiles. Kept for every
feature, those cuts cost where they carry nothing: on river's Agrawal
(classification function 2) the class depends on age and salary, the
quantiles split commission, home value, home years and loan in five bins each,
and AODE, which takes every feature in turn as the parent of all the others,
averages in models made noisier by the split (``bench/holdout.py``).

So the quantile cuts of feature X are kept only when the counts show them
informative. With A the cells of X under MDL's cuts and B the finer cells
under MDL's and the quantile cuts together, and Z a partner (another feature:
a categorical one's values, a binned one's cells under its own MDL and
quantile cuts; or no partner, a single cell), the likelihood-ratio statistic

.. math::

    G = 2 N \\, [I(C; X_B \\mid Z) - I(C; X_A \\mid Z)] = 2 N \\, I(C; X_B \\mid X_A, Z)

(:math:`X_A` is a function of :math:`X_B`, hence the chain rule; mutual
information in nats, from the counts) is, when the finer cells tell nothing
more of the class given Z and the coarser cell, asymptotically
:math:`\\chi^2` with :math:`(|B| - |A|)(K - 1)|Z|` degrees of freedom (K
classes; cells and classes that hold no count are not counted). The cuts are
kept when the test rejects for some partner at level ``alpha`` divided by the
number of partners tested (Bonferroni). The counts are the fine layer's:
class counts per fine bin for no partner, its pair table for the others
(a pair the store does not count under a memory budget's selection is not
tested). The :math:`\\chi^2` quantile is Wilson and Hilferty's cube-root
normal approximation. The coarse layer
(:func:`~stream_nb.stats.discretiser._coarse.coarse_edges`) asks only once the feature has
``10 * warmup`` events: with fewer the test cannot tell, and the cuts stay.
"""

from __future__ import annotations

from statistics import NormalDist

import numpy as np

from ..values import BINNED

__all__ = ["ALPHA", "chi2_quantile", "g_statistic", "quantiles_inform"]

#: the level of the test (before the Bonferroni division)
ALPHA = 0.01


def chi2_quantile(p: float, df):
    """The p-quantile of the chi-square distribution with ``df`` degrees of freedom (Wilson-Hilferty);
    ``df`` a number, or an array (one quantile each).

    >>> round(chi2_quantile(0.99, 10), 1)   # the table value: 23.21
    23.2
    >>> chi2_quantile(0.99, np.array([1.0, 10.0])).round(1).tolist()   # the table: 6.63, 23.21
    [6.6, 23.2]
    """
    z = NormalDist().inv_cdf(p)
    d = np.asarray(df, dtype=float)
    h = 2.0 / (9.0 * d)
    q = d * np.maximum(1.0 - h + z * np.sqrt(h), 0.0) ** 3
    return float(q) if q.ndim == 0 else q


def g_statistic(n: np.ndarray) -> float:
    """``2 N I(C; X | Z)`` (nats) of the counts ``n[c, x, z]``: the G statistic of C independent of X given Z.

    >>> g_statistic(np.array([[[10.0], [0.0]], [[0.0], [10.0]]]))   # C = X: 2 * 20 * log 2
    27.725887222397812
    """
    return float(_strata_g(np.asarray(n, dtype=float)).sum())


def _one_hot(groups: np.ndarray) -> np.ndarray:
    out = np.zeros((len(groups), int(groups.max()) + 1 if len(groups) else 0))
    out[np.arange(len(groups)), groups] = 1.0
    return out


def _strata_g(n: np.ndarray) -> np.ndarray:
    """Per stratum z of ``n[c, x, z]``: its term of :func:`g_statistic` (they add up to it)."""
    nz, ncz, nxz = n.sum((0, 1)), n.sum(1), n.sum(0)
    pos = n > 0
    ratio = np.ones_like(n)
    ratio[pos] = (n * nz[None, None, :])[pos] / (ncz[:, None, :] * nxz[None, :, :])[pos]
    return 2.0 * np.where(pos, n * np.log(ratio), 0.0).sum((0, 1))


def _rejects(by_z: np.ndarray, starts: np.ndarray, coarse: np.ndarray, finer: np.ndarray, p: float) -> bool:
    """Whether for some partner the finer cells ``finer`` (per row of ``by_z``) tell more of the class than
    ``coarse`` at level 1 - p; ``by_z[c, row, z]``: the counts of the partners' cells side by side, partner
    ``i``'s from ``starts[i]`` on."""
    n_b, n_a = _one_hot(finer).T @ by_z, _one_hot(coarse).T @ by_z  # (C, cells, Z)
    gain = np.add.reduceat(_strata_g(n_b) - _strata_g(n_a), starts)

    def held(a, axis):  # per partner: how many of a's entries along axis hold a count
        return (np.add.reduceat(a, starts, axis=-1) > 0).sum(axis)

    K = held(n_b.sum(1), 0)
    Z = np.add.reduceat((n_b.sum((0, 1)) > 0).astype(np.int64), starts)
    extra = held(n_b.sum(0), 0) - held(n_a.sum(0), 0)
    df = extra * (K - 1) * Z
    ok = df > 0
    return bool((gain[ok] > chi2_quantile(p, df[ok])).any())


def _cells(cuts, n_bins: int) -> np.ndarray:
    """The cell of each fine bin key 0..n_bins-1 under boundaries ``cuts`` (cut b: between keys b-1 and b)."""
    return np.searchsorted(np.array(sorted(cuts), dtype=np.int64), np.arange(n_bins), side="right")


def quantiles_inform(fine, f: int, obs, cuts: dict, alpha: float = ALPHA) -> bool:
    """Whether binned feature ``f``'s quantile cuts pass the test of the module notes.

    ``fine`` is the fine layer (a Stats), ``obs`` its observed counts, ``cuts`` ``{feature: (keys, columns,
    MDL's cuts, quantile cuts, ...)}`` for every binned feature with fine edges (keys: each fine value's bin).
    """
    keys, cols, mdl, quantile = cuts[f][:4]
    n_bins = len(fine.disc[f].edges) + 1
    coarse, finer = _cells(mdl, n_bins)[keys], _cells(mdl | quantile, n_bins)[keys]
    C = fine.n_classes
    # no partner: the class counts of f's fine bins, one stratum
    parts, starts, width = [obs.value_count[:C, cols][:, :, None]], [0], 1
    if fine.pairs:
        row_cols, row_z, col_cols, col_z = [], [], [], []
        allowed = None if fine.pair_allowed is None else fine.pair_mask(np.arange(len(fine.features)))
        for j in range(len(fine.features)):
            if j == f or not fine.values[j] or (fine.kinds[j] == BINNED and j not in cuts):
                continue
            if j in cuts:
                jkeys, jcols, jm, jq = cuts[j][:4]
                z = _cells(jm | jq, len(fine.disc[j].edges) + 1)[jkeys]
            else:
                jcols = np.fromiter(fine.values[j].values(), dtype=np.int64, count=len(fine.values[j]))
                z = np.arange(len(jcols))
            # the pair is read as counted: f's row (or j's, under a selection that keeps only that one)
            if allowed is None or allowed[f, j]:
                row_cols.append(jcols), row_z.append(z + width)
            elif allowed[j, f]:
                col_cols.append(jcols), col_z.append(z + width)
            else:
                continue
            starts.append(width)
            width += int(z.max()) + 1
        for side, jcols, z in ((0, row_cols, row_z), (1, col_cols, col_z)):
            if not jcols:
                continue
            jcols, z = np.concatenate(jcols), np.concatenate(z)
            order = np.argsort(z, kind="stable")
            jcols, z = jcols[order], z[order]
            if side == 0:
                block = obs.pair_count[(slice(0, C), cols[:, None], jcols[None, :])]
            else:
                block = obs.pair_count[(slice(0, C), jcols[:, None], cols[None, :])].transpose(0, 2, 1)
            cells, first = np.unique(z, return_index=True)
            summed = np.zeros((C, len(cols), width))
            summed[:, :, cells] = np.add.reduceat(np.asarray(block, dtype=float), first, axis=2)
            parts.append(summed)
    by_z = parts[0] if len(parts) == 1 else np.concatenate(
        [parts[0], sum(parts[1:])[:, :, 1:]], axis=2)  # each partner's cells in their own columns
    return _rejects(by_z, np.array(starts), coarse, finer, 1.0 - alpha / len(starts))
