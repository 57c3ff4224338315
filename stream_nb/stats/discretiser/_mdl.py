"""Fayyad and Irani's MDL criterion: supervised cut points from class counts of ordered intervals.

Fayyad and Irani (1993), *Multi-interval discretization of continuous-valued
attributes for classification learning*: the interval S (N events, k classes
present, class entropy Ent(S), in bits) is cut at the boundary T that
minimises the class information entropy of the two halves

.. math::

    E(T; S) = \\frac{|S_1|}{N} \\mathrm{Ent}(S_1) + \\frac{|S_2|}{N} \\mathrm{Ent}(S_2),

and the cut is kept only when its gain passes the MDL threshold

.. math::

    \\mathrm{Ent}(S) - E(T; S) > \\frac{\\log_2(N - 1) + \\Delta}{N}, \\qquad
    \\Delta = \\log_2(3^k - 2) - [k \\mathrm{Ent}(S) - k_1 \\mathrm{Ent}(S_1) - k_2 \\mathrm{Ent}(S_2)];

each half is then cut the same way, recursively. This is Weka's
``weka.filters.supervised.attribute.Discretize`` with its defaults (the first
of equally good cuts wins, ``N - 1`` candidate cuts in the code length).

Here the ordered values come grouped: ``counts[i, c]`` is the weight of class
``c`` in the i-th interval (one distinct value, or one fine bin of
:mod:`stream_nb.stats.store._fine`), and a cut can fall only between two intervals.
With one interval per distinct value this is exactly the textbook procedure on
the raw values (a cut between two equal values is never a candidate).
"""

from __future__ import annotations

import numpy as np

__all__ = ["entropy_bits", "mdl_cuts"]


def entropy_bits(counts: np.ndarray) -> np.ndarray:
    """Class entropy in bits of each row of ``counts`` (..., C); 0 for an empty row.

    >>> entropy_bits(np.array([[1.0, 1.0], [4.0, 0.0]])).tolist()
    [1.0, 0.0]
    """
    counts = np.asarray(counts, dtype=float)
    n = counts.sum(-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(n > 0, counts / np.where(n > 0, n, 1.0), 0.0)
        terms = np.where(p > 0, -p * np.log2(np.where(p > 0, p, 1.0)), 0.0)
    return terms.sum(-1)


def _best_cut(counts: np.ndarray):
    """``(index, left counts, right counts, E)`` of the boundary minimising E(T; S) (first of ties)
    among the boundaries between non-empty intervals; None without any."""
    nonempty = np.flatnonzero(counts.sum(1) > 0)
    if len(nonempty) < 2:
        return None
    total = counts.sum(0)
    # a cut after interval i: the candidates are the non-empty intervals but the last
    left = np.cumsum(counts, axis=0)[nonempty[:-1]]
    right = total[None, :] - left
    nl, nr = left.sum(1), right.sum(1)
    e = (nl * entropy_bits(left) + nr * entropy_bits(right)) / total.sum()
    j = int(np.argmin(e))
    # between two non-empty intervals with empty ones in between, the cut goes midway (as Weka's
    # cut goes midway between two values)
    return (int(nonempty[j]) + 1 + int(nonempty[j + 1])) // 2, left[j], right[j], float(e[j])


def _accepts(total: np.ndarray, left: np.ndarray, right: np.ndarray, e: float) -> bool:
    """Fayyad and Irani's MDL test of the cut splitting ``total`` into ``left`` and ``right``."""
    n = float(total.sum())
    ent = float(entropy_bits(total))
    gain = ent - e
    if gain <= 0 or n <= 1:
        return False
    k, k1, k2 = (int((a > 0).sum()) for a in (total, left, right))
    delta = np.log2(3.0**k - 2.0) - (k * ent - k1 * float(entropy_bits(left)) - k2 * float(entropy_bits(right)))
    return gain > (np.log2(n - 1.0) + delta) / n


def mdl_cuts(counts) -> list[int]:
    """The cut points Fayyad and Irani's MDL criterion keeps, as interval boundaries.

    ``counts`` (intervals, classes) holds the class weights of consecutive
    intervals of one numeric feature. A boundary ``b`` in the result cuts
    between interval ``b - 1`` and interval ``b``; the result is ascending
    and empty when no cut pays for itself.

    Examples
    --------
    Two classes cleanly apart: one cut, between the 3rd and the 4th interval.

    >>> mdl_cuts([[5, 0], [6, 0], [4, 0], [0, 7], [0, 5], [0, 6]])
    [3]

    Classes mixed evenly: no cut.

    >>> mdl_cuts([[3, 3], [2, 2], [4, 4]])
    []
    """
    counts = np.asarray(counts, dtype=float)
    if counts.ndim != 2:
        raise ValueError(f"counts: expected a (intervals, classes) array, got shape {counts.shape}")
    cuts: list[int] = []
    todo = [(0, len(counts))]
    while todo:
        lo, hi = todo.pop()
        best = _best_cut(counts[lo:hi])
        if best is None:
            continue
        b, left, right, e = best
        if not _accepts(counts[lo:hi].sum(0), left, right, e):
            continue
        cuts.append(lo + b)
        todo.append((lo, lo + b))
        todo.append((lo + b, hi))
    return sorted(cuts)
