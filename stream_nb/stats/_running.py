"""Running counts over a batch: what each event would see had the batch been learned one at a time.

Prequential learning predicts event i with the counts of every event before
it, then learns it. Done event by event, that is a round of small numpy calls
per event. Over a run of events that only change counts (no new class,
feature or value; see :meth:`Stats.encode_run <stream_nb.stats.Stats.encode_run>`),
the counts event i sees are the stored counts plus those of events
``0 .. i-1`` of the run, which exclusive prefix sums give for the whole run at
once:

* class counts: a cumulative sum of the one-hot labels;
* value|class and feature|class counts: the same, within each group of
  entries sharing a column (or a feature), in event order;
* Gaussian moments: prefix sums of the shifted values and their squares per
  class, merged into the stored moments by Chan's pairwise formula.

Unlabeled events (class -1) are scored but add nothing. Events may be
weighted (``w``, one per row: the stored weight a decaying model gives each,
see :mod:`stream_nb.learners._forgetting`), and the smoothing may be one per
row (``a``: alpha times the decay's inflation when the row is scored).
Everything is exact up to floating-point rounding; ``tests/test_running.py``
checks it against the event-by-event loop.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "exclusive_counts", "grouped_exclusive_counts", "running_counts", "running_moments", "naive_terms", "tree_terms",
    "values_by_row",
]


def _one_hot(yc: np.ndarray, C: int, w: np.ndarray | None = None) -> np.ndarray:
    """(rows, C): each row's class as a one-hot row (times its weight ``w``, when given)."""
    hot = (yc[:, None] == np.arange(C)[None, :]).astype(float)
    return hot if w is None else hot * w[:, None]


def _exclusive_cumsum(a: np.ndarray) -> np.ndarray:
    """Sum of the rows strictly before each row (row 0: zeros)."""
    out = np.zeros_like(a)
    if len(a) > 1:
        np.cumsum(a[:-1], axis=0, out=out[1:])
    return out


def exclusive_counts(yc: np.ndarray, C: int, w: np.ndarray | None = None) -> np.ndarray:
    """(rows, C): how many earlier rows had each class (their weight ``w``, when given).

    >>> exclusive_counts(np.array([0, 1, -1, 0]), 2)
    array([[0., 0.],
           [1., 0.],
           [1., 1.],
           [1., 1.]])
    """
    if not len(yc) or yc.max() < 0:  # no labeled row (a run predicted, not learned): no count before any
        return np.zeros((len(yc), C))
    return _exclusive_cumsum(_one_hot(yc, C, w))


def grouped_exclusive_counts(keys: np.ndarray, yc: np.ndarray, C: int, w: np.ndarray | None = None) -> np.ndarray:
    """(entries, C): per entry, how many earlier entries with the same key had each class (their weight
    ``w``, one per entry, when given).

    Entries are in event order (``keys`` need not be sorted).

    >>> grouped_exclusive_counts(np.array([5, 7, 5, 5]), np.array([0, 1, 1, 0]), 2)
    array([[0., 0.],
           [0., 0.],
           [1., 0.],
           [1., 1.]])
    """
    if len(keys) == 0 or yc.max() < 0:  # no labeled entry: none before any
        return np.zeros((len(keys), C))
    order = np.argsort(keys, kind="stable")
    k = keys[order]
    before = _exclusive_cumsum(_one_hot(yc[order], C, None if w is None else w[order]))  # all before, sorted
    starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
    sizes = np.diff(np.r_[starts, len(k)])
    before -= np.repeat(before[starts], sizes, axis=0)  # keep only the entries of the same group
    out = np.empty_like(before)
    out[order] = before
    return out


def running_counts(table: np.ndarray, index: tuple, yc: np.ndarray, C: int, w: np.ndarray | None = None) -> np.ndarray:
    """(entries, C): ``table[c, *index]`` for every class c, plus the earlier entries with the same
    index and class c (entries in event order, each event's indices distinct; ``yc`` per entry, and
    ``w``, when given, each entry's weight).

    ``table`` is a class-first count array (``value_count``, ``pair_count``, ``tuple_count``, ...)
    and ``index`` one integer array per axis after the class.

    >>> table = np.zeros((2, 3))
    >>> table[1, 2] = 5.0
    >>> running_counts(table, (np.array([2, 0, 2]),), np.array([0, 1, 1]), 2)
    array([[0., 5.],
           [0., 0.],
           [1., 5.]])
    """
    stored = table[(slice(0, C),) + tuple(index)].T
    if len(index) == 1:
        key = index[0]
    else:
        key = np.ravel_multi_index(tuple(index), table.shape[1:])
    return stored + grouped_exclusive_counts(key, yc, C, w)


def running_moments(G: np.ndarray, yc: np.ndarray, n0: np.ndarray, mean0: np.ndarray, m2_0: np.ndarray,
                    w: np.ndarray | None = None):
    """Per row, the Gaussian moments (count, mean, M2) per class and slot after the stored
    moments ``(n0, mean0, m2_0)`` (each (C, slots)) and every earlier labeled row of ``G`` (weighted
    by ``w``, when given).

    ``G`` is (rows, slots) with NaN where a value is missing; returns three
    (rows, C, slots) arrays, or (1, C, slots) ones, to broadcast, when no row is
    labeled (every row then sees the stored moments). The earlier rows' own moments are taken around a
    shift K (the class's first value in the run; the stored mean where the run has none):

        nb, mean_b = K + S1 / nb, M2_b = S2 - S1² / nb

    with S1, S2 the (weighted) sums of (x - K) and (x - K)² over the earlier rows, and merged into the
    stored ones by Chan's pairwise formula (δ = mean_b - mean0):

        n = n0 + nb,  mean = mean0 + δ nb / n,  M2 = m2_0 + M2_b + δ² n0 nb / n

    so equal values give exactly that mean and M2 0, and stored moments of a negligible weight (decayed
    by many half-lives) add a negligible M2 instead of the rounding of S2 - S1² / n.

    >>> G = np.array([[1.0], [3.0], [np.nan], [5.0]])
    >>> n, mean, m2 = running_moments(G, np.array([0, 0, 0, 0]), np.zeros((1, 1)), np.zeros((1, 1)), np.zeros((1, 1)))
    >>> n[:, 0, 0], mean[:, 0, 0], m2[:, 0, 0]
    (array([0., 1., 2., 2.]), array([0., 1., 2., 2.]), array([0., 0., 2., 2.]))
    """
    C = n0.shape[0]
    if not len(yc) or yc.max() < 0:
        # no labeled row (a run predicted, not learned): every row sees the stored moments, given once as
        # (1, C, slots) to broadcast; the same figures the sums below give with nothing to add
        m2 = np.where(np.isnan(m2_0), np.inf, np.maximum(m2_0, 0.0))
        return n0[None], np.where(n0 > 0, mean0, 0.0)[None], m2[None]
    obs = ~np.isnan(G)
    W = _one_hot(yc, C, w)[:, :, None] * obs[:, None, :]  # (rows, C, slots): row j's weight in (c, g)
    ran = W.any(0)
    K = np.where(ran, G[W.argmax(0), np.arange(G.shape[1])[None, :]], np.where(n0 > 0, mean0, 0.0))  # (C, slots)
    d = np.where(obs, G, 0.0)[:, None, :] - K[None]
    X = W * d
    nb = _exclusive_cumsum(W)
    S1 = _exclusive_cumsum(X)
    S2 = _exclusive_cumsum(X * d)
    safe_b = np.where(nb > 0, nb, 1.0)
    n = n0[None] + nb
    safe = np.where(n > 0, n, 1.0)
    with np.errstate(invalid="ignore", over="ignore"):
        mean_b = K[None] + S1 / safe_b
        m2_b = S2 - S1 * (S1 / safe_b)
        delta = np.where(nb > 0, mean_b - mean0[None], 0.0)
        # an empty (class, slot) keeps mean 0, as the store does: a huge K must not leak into pooled sums
        mean = np.where(n > 0, mean0[None] + delta * (nb / safe), 0.0)
        # delta * (delta * w), not delta² * w: with an empty side (w = 0) a huge delta adds 0, not inf * 0
        m2 = m2_0[None] + np.maximum(m2_b, 0.0) + delta * (delta * (n0[None] * nb / safe))
    # inf - inf: squares beyond the float range, where the one-at-a-time update gives inf too
    m2 = np.where(np.isnan(m2), np.inf, np.maximum(m2, 0.0))
    return n, mean, m2


def values_by_row(s, D: np.ndarray, more: np.ndarray | None = None) -> np.ndarray:
    """(rows, features): N_i, how many values feature i has for each row of a run, as the one-event path
    counts it when scoring that row: the store's, one more for a value never seen (column 0, an unlabeled
    row's), and the values the run registers by the row (``more``, :meth:`Stats.run_more
    <stream_nb.stats.Stats.run_more>`).

    >>> class S: n_values = np.array([2, 3])
    >>> values_by_row(S, np.array([[1, 0], [-1, 4]]), np.array([[0, 0], [1, 0]])).tolist()
    [[2, 4], [3, 3]]
    """
    n = s.n_values[: D.shape[1]][None, :] + (D == 0)
    return n if more is None else n + more


def naive_terms(s, D: np.ndarray, yc: np.ndarray, C: int, a, w: np.ndarray | None = None,
                more: np.ndarray | None = None) -> np.ndarray:
    """(rows, C): Σ_i log P̂(x_i | c) per row of a run (naive Bayes), with Lidstone's ``a`` (a number, or
    one per row), the rows weighted by ``w`` when given.

    ``s`` is the :class:`~stream_nb.stats.Stats`, ``D`` the run's columns
    (rows, features; -1 where missing, 0 for a value never seen, in an unlabeled row)
    and ``yc`` its classes (-1: unlabeled). ``more`` (rows, features): the values each feature has gained
    by each row, where the run registers new ones (:meth:`Stats.run_more <stream_nb.stats.Stats.run_more>`).
    """
    rows, feats = np.nonzero(D >= 0)
    out = np.zeros((len(D), C))
    if len(rows):
        cols, labels = D[rows, feats], yc[rows]
        we = None if w is None else w[rows]
        a = a if np.ndim(a) == 0 else np.asarray(a)[rows][:, None]
        vc = s.value_count[:C, cols].T + grouped_exclusive_counts(cols, labels, C, we)
        fc = s.feat_count[:C, feats].T + _observed_before(D, rows, feats, labels, yc, C, w)
        n_vals = values_by_row(s, D, more)[rows, feats]
        out += _row_sums(np.log(vc + a) - np.log(fc + a * n_vals[:, None]), D, rows, feats)
    return out


def _observed_before(D, rows, feats, labels, yc, C, w=None) -> np.ndarray:
    """(entries, C): per entry (row, feature) of ``D``, the earlier labeled rows of each class that observed
    the feature (their weight ``w``, one per row). Complete rows (``rows`` covers all of ``D``): every
    earlier row, one count of classes."""
    if len(rows) == D.size:
        return np.repeat(exclusive_counts(yc, C, w), D.shape[1], axis=0)
    return grouped_exclusive_counts(feats, labels, C, None if w is None else w[rows])


def _row_sums(terms, D, rows, feats) -> np.ndarray:
    """(rows of D, C): the sum of each row's entries' ``terms`` (entries (row, feature) in row-major order)."""
    if len(rows) == D.size:  # complete rows: the entries are the rows' features in order
        return terms.reshape(D.shape + terms.shape[1:]).sum(1)
    out = np.zeros(D.shape + terms.shape[1:])
    out[rows, feats] = terms
    return out.sum(1)


def tree_terms(s, D: np.ndarray, yc: np.ndarray, C: int, a, parent: np.ndarray, w: np.ndarray | None = None,
               more: np.ndarray | None = None):
    """(rows, C): Σ_i log P̂(x_i | c, x_parent(i)) per row of a run of complete events (TAN's tree); ``a``,
    ``w`` and ``more`` as in :func:`naive_terms`.

    ``parent[f]`` is feature f's parent (-1: a root, which reads P̂(x_f | c)).
    The numerator is the parent's row of the pair counts, N(c, x_pa, x_i), the
    denominator N(c, x_pa) over events with feature i observed (``pair_feat``).
    """
    rows, feats = np.nonzero(D >= 0)
    out = np.zeros((len(D), C))
    if not len(rows):
        return out
    cols, labels = D[rows, feats], yc[rows]
    we = None if w is None else w[rows]
    a = a if np.ndim(a) == 0 else np.asarray(a)[rows][:, None]
    pf = parent[feats]
    child = pf >= 0
    pcols = np.where(child, D[rows, np.maximum(pf, 0)], cols)  # a root: its own column (the diagonal)
    F, V = D.shape[1], s.pair_count.shape[1]
    num = s.pair_count[:C, pcols, cols].T + grouped_exclusive_counts(pcols * V + cols, labels, C, we)
    den_child = s.pair_feat[:C, pcols, feats].T + grouped_exclusive_counts(pcols * F + feats, labels, C, we)
    den_root = s.feat_count[:C, feats].T + _observed_before(D, rows, feats, labels, yc, C, w)
    den = np.where(child[:, None], den_child, den_root)
    # one log a term, as the one-event path
    n_vals = values_by_row(s, D, more)[rows, feats]
    return out + _row_sums(np.log((num + a) / (den + a * n_vals[:, None])), D, rows, feats)
