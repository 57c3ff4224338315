"""Vectorised runs of the one- and k-dependence models (AODE, SPODE, KDB) in numpy.

AODE and SPODE take these only for the runs their compiled kernels do not (see
``VectorisedRuns._kernel_ready``: under decay, watched by a drift detector, or on sparse pair tables).

Each function scores the rows of a run of complete events (see
:meth:`Stats.encode_run <stream_nb.stats.Stats.encode_run>` with
``complete=True``: every discrete feature observed, every value known, but
in unlabeled rows, where a value never seen is column 0 as the one-event
paths read it: no count, one more value of its feature) under
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

from ..stats import exclusive_counts, grouped_exclusive_counts, running_counts, values_by_row

__all__ = ["run_cells", "spode_run_terms", "rooted_run_terms", "kdb_run_terms"]


#: Factors multiplied before one logarithm: each is in (0, 1] and at least alpha / (count + alpha·N),
#: so a block of 8 stays far above the smallest double for any count below 10^30.
_BLOCK = 8


def _scratch(scratch: dict | None, name: str, shape: tuple) -> np.ndarray:
    """An uninitialised float array of ``shape``, reusing ``scratch[name]``'s memory when it is large enough."""
    size = int(np.prod(shape))
    if scratch is None:
        return np.empty(shape)
    buf = scratch.get(name)
    if buf is None or len(buf) < size:
        buf = scratch[name] = np.empty(size)
    return buf[:size].reshape(shape)


def run_cells(rows: int, per_row: int, cells: int = 1 << 19, most: int = 1024) -> int:
    """How many rows a run may hold when each takes ``per_row`` cells of every array (at most
    ``cells`` cells per array, ``most`` rows, and at least 2)."""
    return max(2, min(most, cells // max(1, per_row))) if rows else 2


def spode_run_terms(s, a, D: np.ndarray, yc: np.ndarray, C: int, scratch: dict | None = None,
                    w: np.ndarray | None = None, more: np.ndarray | None = None):
    """Per row, :func:`~stream_nb.learners.aode.spode_terms` of every feature as super-parent. Under decay,
    ``a`` is one per row and ``w`` each row's weight (see :mod:`stream_nb.learners._decay_runs`).

    Returns ``(terms, seen)``: ``terms`` (rows, C, F) log P̂(c, x_i) Π_{j≠i} P̂(x_j | c, x_i),
    and ``seen`` (rows, F) how often each row's value x_i had been seen (AODE's parent limit ``m``).

    The pair counts each row sees are gathered from class-last copies of the tables that the
    run's labeled rows are added to in turn (a gather and an add per row: cheaper than sorting
    the run's F² pairs), into ``scratch``'s buffers when given (a dict the model keeps: fresh
    arrays of this size cost a page fault per 4 KiB on every run). The product over the children j is taken in blocks of :data:`_BLOCK` factors, each
    in (0, 1], before its logarithm: a log per block, not per factor.
    """
    R, F = D.shape
    V = max(len(s.value_keys), int(D.max(initial=0)) + 1)  # with the values the run registers (Stats.run_new)
    feats = np.arange(F)
    n_vals = s.n_values[:F].astype(float)
    n_row = values_by_row(s, D, more)  # (R, F) N_i as each row's one-event path counts it
    extra = n_row - n_vals[None, :]  # beyond the store's: a value never seen, the values the run registers
    rowed = np.ndim(a) > 0  # a smoothing per row (decay): added after each row's gather
    ar = np.asarray(a, dtype=float).reshape(R, 1, 1) if rowed else a
    before = grouped_exclusive_counts(D.ravel(), np.repeat(yc, F), C,
                                      None if w is None else np.repeat(w, F)).reshape(R, F, C)  # earlier with x_i
    vc = s.value_count[:C, D].transpose(1, 2, 0) + before  # (R, F, C) |D_c,xi|
    d = (s.feat_count[:C, :F][None] + exclusive_counts(yc, C, w)[:, :, None]).sum(1)  # (R, F) |D| observing i
    joint = np.log(vc + ar) - np.log(d + (ar[:, :, 0] if rowed else a) * n_row)[:, :, None]
    # numerator |D_c,xi,xj| + alpha and denominator |D_c,xi| over the events observing x_j, + alpha N_j,
    # laid out (row, child j, parent i, class): the product over j multiplies contiguous slabs
    if s.pairs_sparse:
        num, den = _sparse_pair_terms(s, ar, D, yc, C, n_row, w)
    else:
        a0 = 0.0 if rowed else a  # a smoothing per row is added to each row's gather instead
        num_table = np.ascontiguousarray(s.pair_count[:C, :V, :V].reshape(C, V * V).T) + a0  # (V·V, C)
        den_table = np.ascontiguousarray((s.pair_feat[:C, :V, :F] + a0 * n_vals).reshape(C, V * F).T)  # (V·F, C)
        keys = (D[:, None, :] * V + D[:, :, None]).reshape(R, F * F)  # [r, j, i]: x_i's row, x_j's column
        fkeys = (D[:, None, :] * F + feats[None, :, None]).reshape(R, F * F)
        num = _scratch(scratch, "num", (R, F * F, C))
        den = _scratch(scratch, "den", (R, F * F, C))
        num_flat, den_flat = num_table.reshape(-1), den_table.reshape(-1)  # views: a row's adds, flat
        weights = [1.0] * R if w is None else w.tolist()
        for r, c in enumerate(yc.tolist()):
            # mode="clip" (the keys are in range) spares take a bounds-checked copy: 4x faster
            np.take(num_table, keys[r], axis=0, out=num[r], mode="clip")
            np.take(den_table, fkeys[r], axis=0, out=den[r], mode="clip")
            if c >= 0:
                num_flat[keys[r] * C + c] += weights[r]
                den_flat[fkeys[r] * C + c] += weights[r]
        if rowed:
            num += ar
            den += ar * np.repeat(n_row, F, axis=1)[:, :, None]  # N_j of the child j (rows of [j, i])
        elif extra.any():  # the tables hold alpha N_j: a child's values beyond them add theirs
            den += a * np.repeat(extra, F, axis=1)[:, :, None]
    ratio = np.divide(num, den, out=num).reshape(R, F, F, C)
    ratio[:, feats, feats, :] = 1.0  # P(x_i | c, x_i) = 1
    logs = joint
    for lo in range(0, F, _BLOCK):
        logs = logs + np.log(ratio[:, lo : lo + _BLOCK].prod(1))
    return logs.transpose(0, 2, 1), vc.sum(2)


def _sparse_pair_terms(s, a, D: np.ndarray, yc: np.ndarray, C: int, n_vals: np.ndarray, w=None):
    """``(num, den)`` of :func:`spode_run_terms` when the pair tables are sparse: (rows, F·F, C) laid
    out [r, child j, parent i], gathered from the tables with the run's earlier rows added
    (:func:`running_counts`: the counts the one-event path reads, term for term); ``n_vals`` (rows, F)
    each row's N_j."""
    R, F = D.shape
    parent = np.broadcast_to(D[:, None, :], (R, F, F)).ravel()  # x_i, the row of the pair tables
    child = np.broadcast_to(D[:, :, None], (R, F, F)).ravel()  # x_j
    fchild = np.broadcast_to(np.arange(F)[None, :, None], (R, F, F)).ravel()
    labels = np.repeat(yc, F * F)
    we = None if w is None else np.repeat(w, F * F)
    num = running_counts(s.pair_count, (parent, child), labels, C, we).reshape(R, F * F, C) + a
    den = running_counts(s.pair_feat, (parent, fchild), labels, C, we).reshape(R, F * F, C)
    den += a * np.repeat(n_vals, F, axis=1)[:, :, None]  # N_j of the child j (rows of [j, i])
    return num, den


def rooted_run_terms(s, a, D: np.ndarray, yc: np.ndarray, C: int, p: int, w: np.ndarray | None = None,
                     more: np.ndarray | None = None) -> np.ndarray:
    """(rows, C): log P̂(c, x_p) + Σ_{j≠p} log P̂(x_j | c, x_p) per row (SPODE with super-parent ``p``);
    under decay ``a`` is one per row and ``w`` each row's weight; ``more`` the values registered by each
    row (Stats.run_more)."""
    R, F = D.shape
    n_row = values_by_row(s, D, more)  # (R, F) N_i as each row's one-event path counts it
    t = D[:, p]
    a1 = a if np.ndim(a) == 0 else np.asarray(a)  # (R,) under decay
    a2 = a if np.ndim(a) == 0 else a1[:, None]
    before = grouped_exclusive_counts(t, yc, C, w)  # (R, C) earlier rows with x_p and each class
    vc = s.value_count[:C, t].T + before
    d = (s.feat_count[:C, p][None] + exclusive_counts(yc, C, w)).sum(1)
    out = np.log(vc + a2) - np.log(d + a1 * n_row[:, p])[:, None]
    others = np.flatnonzero(np.arange(F) != p)
    if len(others):
        J = D[:, others]
        tt = np.repeat(t, len(others))
        pc = running_counts(s.pair_count, (tt, J.ravel()), np.repeat(yc, len(others)), C,
                            None if w is None else np.repeat(w, len(others))).reshape(R, len(others), C)
        den = s.pair_feat[:C, t[:, None], others[None, :]].transpose(1, 2, 0) + before[:, None, :]
        a3 = a if np.ndim(a) == 0 else a1[:, None, None]
        ratio = (pc + a3) / (den + a3 * n_row[:, others, None])
        out = out + np.log(ratio).sum(1)
    return out


def kdb_run_terms(s, a, D: np.ndarray, yc: np.ndarray, C: int, parents: dict, prior: np.ndarray,
                  w: np.ndarray | None = None, more: np.ndarray | None = None) -> np.ndarray:
    """(rows, C): log P(c) + Σ_f log P̂(x_f | c, x_pa(f)) per row, ``parents[f]`` the attribute parents
    of feature f (none, or absent: P̂(x_f | c)); the (k+1)-way table when the store keeps one. Under
    decay, ``a`` is one per row and ``w`` each row's weight (see :mod:`stream_nb.learners._decay_runs`)."""
    R, F = D.shape
    t = s.tuples
    out = prior.copy()
    ex = None
    a = a if np.ndim(a) == 0 else np.asarray(a)[:, None]
    n_row = values_by_row(s, D, more)  # (R, F) N_f as each row's one-event path counts it
    for f in range(F):
        v = D[:, f]
        pa = parents.get(f, ())
        if not pa:
            num = running_counts(s.value_count, (v,), yc, C, w)
            if ex is None:
                ex = exclusive_counts(yc, C, w)
            den = s.feat_count[:C, f][None] + ex
        elif t == 0:  # k = 1: the pair counts, the parent's row
            u = D[:, pa[0]]
            num = running_counts(s.pair_count, (u, v), yc, C, w)
            den = running_counts(s.pair_feat, (u, np.full(R, f)), yc, C, w)
        else:
            us = [D[:, q] for q in pa]
            us += [us[-1]] * (t - 1 - len(us))  # fewer parents: a diagonal of the table
            num = running_counts(s.tuple_count, (v, *us), yc, C, w)
            den = running_counts(s.tuple_feat, (*us, np.full(R, f)), yc, C, w)
        out += np.log((num + a) / (den + a * n_row[:, f, None]))
    return out
