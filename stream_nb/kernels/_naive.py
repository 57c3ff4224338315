"""Naive Bayes, compiled: each event scored under the counts as they stand, then counted.

The logs of the counts are kept in two tables beside them, so that scoring an
event adds table entries and counting it refreshes only the cells it touched:
``lnum[v, c] = log(|D_c,v| + a)`` and ``lden[f, c] = log(|D_c,f| + a N_f)``,
``N_f`` the values feature ``f`` has (the classes contiguous, as the scoring loop reads them). The model rebuilds them
(:func:`naive_tables`) whenever the counts changed outside a kernel. A third, ``log_table``, holds log(n + a) of
the whole counts n below its length (:func:`naive_logs`): a count's refresh reads it there, the same double
``math.log`` gives, and logs only the counts it does not hold.

The arrays come as one table of addresses (:class:`~stream_nb.kernels.Addresses`),
in the order of :data:`ARRAYS`.
"""

from __future__ import annotations

import math

import numpy as np

from . import _common
from ._addresses import NO_DETECTOR, Addresses

__all__ = ["ARRAYS", "INLINE", "naive_block", "naive_decide", "naive_learn", "naive_logs", "naive_score", "naive_tables",
           "warm"]

#: The arrays of a naive Bayes model's address table, in order.
ARRAYS = ("class_count", "value_count", "feat_count", "n_values", "obs_value_count", "obs_feat_count",
          "g_n", "g_mean", "g_m2", "lnum", "lden", "log_table")
_N = 12

#: The helpers compiled into each kernel that calls them (see :mod:`._loader`): a call that hands them the
#: views of a dozen arrays and of a row costs more than their work on an event.
INLINE = ("_score", "_count")

_address = None  # the views of arrays by address (kernels/_address.py, which imports numba): set by the loader


def _views(t):
    """The arrays of address table ``t``, in the order of :data:`ARRAYS`."""
    cc = _address.f8_1d(t[0], t[_N])
    vc = _address.f8_2d(t[1], t[_N + 2], t[_N + 3])
    fc = _address.f8_2d(t[2], t[_N + 4], t[_N + 5])
    nv = _address.i8_1d(t[3], t[_N + 6])
    ovc = _address.f8_2d(t[4], t[_N + 8], t[_N + 9])
    ofc = _address.f8_2d(t[5], t[_N + 10], t[_N + 11])
    gn = _address.f8_2d(t[6], t[_N + 12], t[_N + 13])
    gm = _address.f8_2d(t[7], t[_N + 14], t[_N + 15])
    g2 = _address.f8_2d(t[8], t[_N + 16], t[_N + 17])
    lnum = _address.f8_2d(t[9], t[_N + 18], t[_N + 19])
    lden = _address.f8_2d(t[10], t[_N + 20], t[_N + 21])
    lt = _address.f8_1d(t[11], t[_N + 22])
    return cc, vc, fc, nv, ovc, ofc, gn, gm, g2, lnum, lden, lt


def naive_logs(lt, a):
    """Fill the log table ``lt``: ``lt[0]`` = ``a``, the smoothing it holds logs for; ``lt[1]``, the largest
    whole count a kernel looked for past its end (0: none yet), so that the model knows to make it longer;
    ``lt[2 + i]`` = log(i + a)."""
    lt[0] = a
    lt[1] = 0.0
    for i in range(lt.shape[0] - 2):
        lt[i + 2] = math.log(i + a)


def _log_count(lt, n, a):
    """log(n + a) of a count ``n``: from the log table ``lt`` (:func:`naive_logs`) where it holds that whole
    count for that ``a`` (the same double), else logged (a whole count past its end noted in ``lt[1]``)."""
    if lt[0] == a and n >= 0.0:
        if n < lt.shape[0] - 2:
            i = int(n)
            if i == n:
                return lt[i + 2]
        elif n > lt[1] and n == math.floor(n):
            lt[1] = n
    return math.log(n + a)


def naive_tables(t, a):
    """Fill ``lnum`` and ``lden`` from the counts, to their whole capacity (a block may give a value its
    column as it goes: its count is 0 there until the row that brings it is counted)."""
    cc, vc, fc, nv, ovc, ofc, gn, gm, g2, lnum, lden, lt = _views(t)
    for c in range(vc.shape[0]):
        for v in range(vc.shape[1]):
            lnum[v, c] = _log_count(lt, vc[c, v], a)
        for f in range(fc.shape[1]):
            lden[f, c] = math.log(fc[c, f] + a * nv[f])


def _score(v, cols, feats, gx, gslots, extra, C, a, var_smoothing, joint, prior, jll, q, out, direct=False):
    """``out[:C]``: log P(c | x) (``joint``: log P(c, x)) of one event, ``prior`` its log prior; ``v``: the
    arrays (:func:`_views`); ``extra[f]``: the values feature ``f`` gained within the block before and with
    this event (empty: none). ``direct``: from the counts themselves, not the tables of their logs (decay
    changes the smoothing ``a`` of every cell each event)."""
    cc, vc, fc, nv, ovc, ofc, gn, gm, g2, lnum, lden, lt = v
    for c in range(C):
        jll[c] = prior[c]
    for j in range(cols.shape[0]):
        col = cols[j]
        if col < 0:
            continue
        f = feats[j]
        if col == 0:  # never seen: no count, one more value
            n = nv[f] + (extra[f] if extra.shape[0] else 0) + 1
            for c in range(C):
                jll[c] += math.log(a) - math.log(fc[c, f] + a * n)
        elif direct:
            n = nv[f] + (extra[f] if extra.shape[0] else 0)
            for c in range(C):
                jll[c] += math.log(vc[c, col] + a) - math.log(fc[c, f] + a * n)
        else:
            for c in range(C):
                jll[c] += lnum[col, c] - lden[f, c]
    _common.gaussian_row(gx, gslots, gn, gm, g2, C, var_smoothing, q, jll)
    if joint:
        for c in range(C):
            out[c] = jll[c]
    else:
        _common.normalise_row(jll, prior, C, out)


def _count(v, cols, feats, gx, gslots, extra, c, w, twin, a, refresh=True):
    """Add one event of class ``c`` with weight ``w``, and (``refresh``) the tables' cells it touched
    (features whose denominators are equal, as every complete event's are when they have as many values,
    share one logarithm)."""
    cc, vc, fc, nv, ovc, ofc, gn, gm, g2, lnum, lden, lt = v
    cc[c] += w
    last, logged = math.nan, 0.0
    for j in range(cols.shape[0]):
        col = cols[j]
        if col < 0:
            continue
        f = feats[j]
        vc[c, col] += w
        fc[c, f] += w
        if twin:
            ovc[c, col] += w
            ofc[c, f] += w
        if refresh:
            lnum[col, c] = _log_count(lt, vc[c, col], a)
            den = fc[c, f] + a * (nv[f] + (extra[f] if extra.shape[0] else 0))
            if den != last:
                last, logged = den, math.log(den)
            lden[f, c] = logged
    _common.add_gaussian(gx, gslots, c, w, gn, gm, g2)


def _prior(cc, lcc, C, a, prior):
    """``prior[:C]`` = log P̂(c) as :func:`~._common.log_prior_row` gives it, from ``lcc[c]`` = log(|D_c| + a)."""
    total = 0.0
    for c in range(C):
        total += cc[c]
    z = math.log(total + a * C)
    for c in range(C):
        prior[c] = lcc[c] - z


def naive_score(t, cols, feats, gx, gslots, out, joint, C, a, var_smoothing):
    """One event's ``out[:C]`` (see :func:`_score`)."""
    prior, jll, q = np.empty(C), np.empty(C), np.empty(C)
    v = _views(t)
    _common.log_prior_row(v[0], C, a, prior)
    _score(v, cols, feats, gx, gslots, cols[:0], C, a, var_smoothing, joint, prior, jll, q, out)


def naive_learn(t, cols, feats, gx, gslots, c, w, twin, a):
    """Count one event of class ``c`` with weight ``w``."""
    _count(_views(t), cols, feats, gx, gslots, cols[:0], c, w, twin, a)


def naive_block(t, D, dfeats, more, G, gslots, yc, weights, alphas, out, joint, learn, twin, C, a, var_smoothing,
                loss, watch, det_kind, det_params, det_state, det_fbuf, det_ibuf, warning):
    """Score each row of a block, then (``learn``, a labelled row) count it, in order; return the rows done.

    ``D`` (rows, k): value columns of the discrete features ``dfeats`` (-1: missing; 0: a value never seen,
    which counts nothing and one more value of its feature); ``more`` (rows, F): the values each feature has
    gained within the block by each row, its own included (a labelled row's new value already has its
    column), or (0, 0); ``G`` (rows, g): the Gaussian slots ``gslots`` (NaN: missing); ``yc``: class index
    (-1: unlabelled), each counted with weight 1 and scored with smoothing ``a``; under decay (``alphas`` of
    one per row) row ``r`` is scored with ``alphas[r]`` from the counts and counted with ``weights[r]``, and
    the tables are left stale. ``out[r, :C]`` gets log P(c | x_r), or with ``joint`` log P(c, x_r).

    With ``watch``, a drift detector (``det_*``, see :mod:`._detectors`) is fed the error of each labelled
    row's decision (``loss``: :func:`~._common.decide_row`) before the row is counted: at the first row it
    acts on (:func:`~._common.watch_row`) the block stops, that row scored and not counted, and its index is
    returned (else the number of rows).
    """
    v = _views(t)
    cc, vc, fc, nv, ovc, ofc, gn, gm, g2, lnum, lden, lt = v
    prior, jll, q, lcc = np.empty(C), np.empty(C), np.empty(C), np.empty(C)
    grown = more.shape[0] > 0
    none = D[0, :0]
    decayed = alphas.shape[0] > 0
    for c in range(C):  # log(|D_c| + a), refreshed for the class each row counts (decay: every row, in full)
        lcc[c] = _log_count(lt, cc[c], a)
    for r in range(D.shape[0]):
        extra = more[r] if grown else none
        if grown:  # a feature gained a value at this row: its denominators change for every class
            for j in range(D.shape[1]):
                f = dfeats[j]
                if more[r, f] != (more[r - 1, f] if r else 0):
                    for c in range(C):
                        lden[f, c] = math.log(fc[c, f] + a * (nv[f] + more[r, f]))
        ar = alphas[r] if decayed else a
        if decayed:
            _common.log_prior_row(cc, C, ar, prior)
        else:
            _prior(cc, lcc, C, a, prior)
        _score(v, D[r], dfeats, G[r], gslots, extra, C, ar, var_smoothing, joint, prior, jll, q, out[r], decayed)
        if yc[r] < 0:
            continue
        if watch and _common.watch_row(out[r], C, loss, yc[r], det_kind, det_params, det_state, det_fbuf, det_ibuf,
                                       warning):
            return r
        if learn:
            _count(v, D[r], dfeats, G[r], gslots, extra, yc[r], weights[r] if decayed else 1.0, twin, a, not decayed)
            lcc[yc[r]] = _log_count(lt, cc[yc[r]], a)
    return D.shape[0]


def naive_decide(t, cols, feats, gx, gslots, C, a, var_smoothing):
    """The class naive Bayes decides for one event without a loss matrix: the argmax of its joint
    log-likelihood (:func:`~stream_nb.kernels._naive.naive_score`; the first of ties, or of NaNs, as numpy's),
    or where every class is impossible the prior's."""
    prior, jll, q, out = np.empty(C), np.empty(C), np.empty(C), np.empty(C)
    v = _views(t)
    _common.log_prior_row(v[0], C, a, prior)
    _score(v, cols, feats, gx, gslots, cols[:0], C, a, var_smoothing, True, prior, jll, q, out)
    best = _argmax(out, C)
    return _argmax(prior, C) if out[best] == -math.inf else best


def _argmax(v, n):
    """numpy's argmax of ``v[:n]``: the first largest, or the first NaN."""
    best = 0
    for i in range(1, n):
        if v[best] != v[best]:
            break
        if v[i] != v[i] or v[i] > v[best]:
            best = i
    return best


def warm(k) -> None:
    """Compile the kernels for the types the models pass."""
    C, V, F = 2, 4, 2
    arrays = (np.zeros(C), np.zeros((C, V)), np.zeros((C, F)), np.array([1, 2], dtype=np.int64), np.zeros((C, V)),
              np.zeros((C, F)), np.zeros((C, 1)), np.zeros((C, 1)), np.zeros((C, 1)), np.zeros((V, C)),
              np.zeros((F, C)), np.zeros(4))
    t = Addresses(None, arrays).table
    k.naive_logs(arrays[-1], 1.0)
    k.naive_tables(t, 1.0)
    D = np.array([[1, 2], [1, 3]], dtype=np.int64)
    feats, G, gslots = np.array([0, 1], dtype=np.int64), np.array([[0.5], [1.5]]), np.array([0], dtype=np.int64)
    for more in (np.zeros((0, 0), dtype=np.int64), np.zeros((2, F), dtype=np.int64)):
        for loss in (np.zeros((0, 0)), np.ones((C, C))):
            for decay in (np.zeros(0), np.ones(2)):
                k.naive_block(t, D, feats, more, G, gslots, np.array([0, 1], dtype=np.int64), decay, decay,
                              np.empty((2, C)), False, True, False, C, 1.0, 1e-9, loss, *NO_DETECTOR)
    k.naive_score(t, D[0], feats, G[0], gslots, np.empty(C), False, C, 1.0, 1e-9)
    k.naive_learn(t, D[0], feats, G[0], gslots, 1, 1.0, False, 1.0)
    k.naive_decide(t, D[0], feats, G[0], gslots, C, 1.0, 1e-9)
