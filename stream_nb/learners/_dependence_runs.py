"""Vectorised runs of the one- and k-dependence models (AODE, SPODE, KDB).

Each function scores the rows of a run of complete events (see
:meth:`Stats.encode_run <stream_nb.stats.Stats.encode_run>` with
``complete=True``: every discrete feature observed, every value known) under
the counts each row would have seen had the run been learned one event at a
time: the stored counts plus those of the run's earlier rows
(:func:`~stream_nb.stats.running_counts`). The formulas are those of the
one-event paths (:func:`~stream_nb.learners.aode.spode_terms`,
``SPODE._rooted``, ``KDB._terms``), term for term.

``D`` is the run's columns (rows, F), one per feature in feature order, ``yc``
its class indices (-1: unlabeled, which adds nothing), ``C`` the number of
classes and ``a`` Lidstone's alpha.
"""

from __future__ import annotations

import numpy as np

from ..stats import exclusive_counts, grouped_exclusive_counts, running_counts

__all__ = ["run_cells", "spode_run_terms", "rooted_run_terms", "kdb_run_terms"]


def run_cells(rows: int, per_row: int, cells: int = 1 << 21, most: int = 1024) -> int:
    """How many rows a run may hold when each takes ``per_row`` cells of every array (at most
    ``cells`` cells per array, ``most`` rows, and at least 2)."""
    return max(2, min(most, cells // max(1, per_row))) if rows else 2


def _feature_counts(s, yc, C, feats):
    """(rows, C, len(feats)): N(c) over the events where each feature was observed, per row (complete
    rows: every earlier labeled row of the run observed every feature)."""
    return s.feat_count[:C, feats][None] + exclusive_counts(yc, C)[:, :, None]


def spode_run_terms(s, a: float, D: np.ndarray, yc: np.ndarray, C: int):
    """Per row, :func:`~stream_nb.learners.aode.spode_terms` of every feature as super-parent.

    Returns ``(terms, seen)``: ``terms`` (rows, C, F) log P̂(c, x_i) Π_{j≠i} P̂(x_j | c, x_i),
    and ``seen`` (rows, F) how often each row's value x_i had been seen (AODE's parent limit ``m``).
    """
    R, F = D.shape
    feats = np.arange(F)
    n_vals = s.n_values[:F].astype(float)
    cols = D.ravel()
    before = grouped_exclusive_counts(cols, np.repeat(yc, F), C).reshape(R, F, C)  # earlier rows: x_i, class
    vc = s.value_count[:C, D].transpose(1, 0, 2) + before.transpose(0, 2, 1)  # (R, C, F) |D_c,xi|
    d = _feature_counts(s, yc, C, feats).sum(1)  # (R, F) |D| over the events observing feature i
    joint = np.log(vc + a) - np.log(d + a * n_vals)[:, None, :]
    rows_i = np.broadcast_to(D[:, :, None], (R, F, F))
    rows_j = np.broadcast_to(D[:, None, :], (R, F, F))
    pc = running_counts(s.pair_count, (rows_i.ravel(), rows_j.ravel()), np.repeat(yc, F * F), C)
    pc = pc.reshape(R, F, F, C).transpose(0, 3, 1, 2)  # (R, C, i, j) |D_c,xi,xj|
    # |D_c,xi| over the events observing x_j: every earlier row of the run with x_i observed every j
    den = s.pair_feat[:C][:, rows_i, np.broadcast_to(feats, (R, F, F))].transpose(1, 0, 2, 3)
    den = den + before.transpose(0, 2, 1)[:, :, :, None]
    ratio = (pc + a) / (den + a * n_vals)
    ratio[:, :, feats, feats] = 1.0  # P(x_i | c, x_i) = 1
    return joint + np.log(ratio).sum(3), vc.sum(1)


def rooted_run_terms(s, a: float, D: np.ndarray, yc: np.ndarray, C: int, p: int) -> np.ndarray:
    """(rows, C): log P̂(c, x_p) + Σ_{j≠p} log P̂(x_j | c, x_p) per row (SPODE with super-parent ``p``)."""
    R, F = D.shape
    t = D[:, p]
    before = grouped_exclusive_counts(t, yc, C)  # (R, C) earlier rows with x_p and each class
    vc = s.value_count[:C, t].T + before
    d = (s.feat_count[:C, p][None] + exclusive_counts(yc, C)).sum(1)
    out = np.log(vc + a) - np.log(d + a * s.n_values[p])[:, None]
    others = np.flatnonzero(np.arange(F) != p)
    if len(others):
        J = D[:, others]
        tt = np.repeat(t, len(others))
        pc = running_counts(s.pair_count, (tt, J.ravel()), np.repeat(yc, len(others)), C).reshape(R, len(others), C)
        den = s.pair_feat[:C][:, t[:, None], others[None, :]].transpose(1, 2, 0) + before[:, None, :]
        ratio = (pc + a) / (den + a * s.n_values[others].astype(float)[None, :, None])
        out = out + np.log(ratio).sum(1)
    return out


def kdb_run_terms(s, a: float, D: np.ndarray, yc: np.ndarray, C: int, parents: dict, prior: np.ndarray) -> np.ndarray:
    """(rows, C): log P(c) + Σ_f log P̂(x_f | c, x_pa(f)) per row, ``parents[f]`` the attribute parents
    of feature f (none, or absent: P̂(x_f | c)); the (k+1)-way table when the store keeps one."""
    R, F = D.shape
    t = s.tuples
    out = prior.copy()
    ex = None
    for f in range(F):
        v = D[:, f]
        pa = parents.get(f, ())
        if not pa:
            num = running_counts(s.value_count, (v,), yc, C)
            if ex is None:
                ex = exclusive_counts(yc, C)
            den = s.feat_count[:C, f][None] + ex
        elif t == 0:  # k = 1: the pair counts, the parent's row
            u = D[:, pa[0]]
            num = running_counts(s.pair_count, (u, v), yc, C)
            den = running_counts(s.pair_feat, (u, np.full(R, f)), yc, C)
        else:
            us = [D[:, q] for q in pa]
            us += [us[-1]] * (t - 1 - len(us))  # fewer parents: a diagonal of the table
            num = running_counts(s.tuple_count, (v, *us), yc, C)
            den = running_counts(s.tuple_feat, (*us, np.full(R, f)), yc, C)
        out += np.log((num + a) / (den + a * s.n_values[f]))
    return out
