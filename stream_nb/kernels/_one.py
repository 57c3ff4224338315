"""One event through a block kernel, its arrays by address: ``predict_one`` and ``learn_one`` of TAN and AODE
(naive Bayes's decision is :func:`~stream_nb.kernels._naive.naive_decide`, so that naive Bayes compiles no
structured model's kernel).

The functions view the table of addresses (:class:`~stream_nb.kernels.Addresses`, a pair table as its 2-D
view of rows (class, value)) and call the block kernel on the event as a block of one, with no drift
detector and no loss matrix. AODE's ``y`` >= 0: the event is counted in that class after it is scored; -1: scored
only (TAN scores with :func:`tree_one` and counts with :func:`tree_count`). ``out`` (1, C) gets log P(c | x), or with ``joint`` log P(c, x). ``twin``: the table of a second count
set (a two-layer store's fine layer) that counts a complete event too, in the same columns; empty: none.
"""

from __future__ import annotations

import numpy as np

from . import _aode, _common, _spodes, _tree
from ._addresses import Addresses

__all__ = ["AODE_ARRAYS", "TREE_ARRAYS", "aode_count", "aode_one", "tree_count", "tree_one", "warm"]

#: The arrays of a TAN model's address table, in order (pair tables as (C V, V) and (C V, F) views).
TREE_ARRAYS = ("class_count", "value_count", "feat_count", "pair_count", "pair_feat", "n_values",
               "obs_value_count", "obs_feat_count", "obs_pair_count", "obs_pair_feat", "g_n", "g_mean", "g_m2")
#: The arrays of an AODE model's address table, in order.
AODE_ARRAYS = ("class_count", "value_count", "feat_count", "n_values", "pair_count", "pair_feat", "value_feature",
               "dens")

_address = None  # the views of arrays by address (kernels/_address.py, which imports numba): set by the loader


def _f1(t, n, i):
    """The float64 vector ``i`` of a table of ``n`` arrays."""
    return _address.f8_1d(t[i], t[n + 2 * i])


def _i1(t, n, i):
    """The int64 vector ``i`` of a table of ``n`` arrays."""
    return _address.i8_1d(t[i], t[n + 2 * i])


def _f2(t, n, i):
    """The float64 matrix ``i`` of a table of ``n`` arrays."""
    return _address.f8_2d(t[i], t[n + 2 * i], t[n + 2 * i + 1])


def _f3(t, n, i, v):
    """The pair table ``i`` of a table of ``n`` arrays, given as its (C v, width) view: (C, v, width)."""
    rows, width = t[n + 2 * i], t[n + 2 * i + 1]
    return _address.f8_1d(t[i], rows * width).reshape((rows // v, v, width))


def _count_twin(f, cols, feats, y):
    """Count a complete event in class ``y`` in the count set of table ``f`` (see the module notes)."""
    n = 5
    v, w = f[n + 7], f[n + 9]
    _spodes.count_event(_f1(f, n, 0), _f2(f, n, 1), _f2(f, n, 2), _address.f8_1d(f[3], f[n + 6] * v),
                        _address.f8_1d(f[4], f[n + 8] * w), v, w, cols, feats, cols.shape[0], y, 1.0, True)


def tree_one(t, cols, feats, ppos, gx, gslots, C, a, backoff, to_parent, var_smoothing, joint, out):
    """One event of TAN scored into ``out`` (see the module notes; the arguments: :func:`~stream_nb.kernels._tree.tree_block`'s);
    :func:`tree_count` counts it."""
    n = 13
    v, ov = t[n + 7], t[n + 17]  # the pair tables' values: the width of pair_count and of its twin
    _tree.tree_block(cols.reshape((1, cols.shape[0])), feats, ppos, np.zeros((0, 0), dtype=np.int64),
                     gx.reshape((1, gx.shape[0])), gslots, np.full(1, -1, dtype=np.int64), np.zeros(0), np.zeros(0),
                     False, C, a, backoff, to_parent, var_smoothing, _f1(t, n, 0), _f2(t, n, 1), _f2(t, n, 2),
                     _f3(t, n, 3, v), _f3(t, n, 4, v), _i1(t, n, 5), False, _f2(t, n, 6), _f2(t, n, 7),
                     _f3(t, n, 8, ov), _f3(t, n, 9, ov), _f2(t, n, 10), _f2(t, n, 11), _f2(t, n, 12), out, joint,
                     np.zeros((0, 0)), False, 0, np.zeros(1), np.zeros(2), np.zeros(1), np.zeros(1, dtype=np.int64),
                     False)


def tree_count(t, cols, feats, gx, gslots, y, twin, fine):
    """Count one complete event of TAN in class ``y`` as :func:`~stream_nb.kernels._tree.tree_block` counts a
    row it has scored, the same additions in the same order (the one-event path scored it before:
    ``predict_one``); ``twin``: whether the table holds the observed-only twin of the counts (see the module
    notes), ``fine``: the fine layer's table to count in as well (none: no rows)."""
    n = 13
    v, ov = t[n + 7], t[n + 17]
    D = cols.reshape((1, cols.shape[0]))
    _f1(t, n, 0)[y] += 1.0
    _tree.add_pairs_row(D, 0, feats, y, 1.0, _f2(t, n, 1), _f2(t, n, 2), _f3(t, n, 3, v), _f3(t, n, 4, v))
    if twin:
        _tree.add_pairs_row(D, 0, feats, y, 1.0, _f2(t, n, 6), _f2(t, n, 7), _f3(t, n, 8, ov), _f3(t, n, 9, ov))
    _common.add_gaussian(gx, gslots, y, 1.0, _f2(t, n, 10), _f2(t, n, 11), _f2(t, n, 12))
    if fine.shape[0]:
        _count_twin(fine, cols, feats, y)


def aode_one(t, cols, feats, y, C, a, m_limit, keep, children, cached, joint, out):
    """One event of AODE (see the module notes; the other arguments: :func:`~stream_nb.kernels._aode.aode_block`'s)."""
    n = 8
    v = t[n + 9]
    _aode.aode_block(cols.reshape((1, cols.shape[0])), feats, np.zeros((0, 0), dtype=np.int64),
                     np.full(1, y, dtype=np.int64), np.zeros(0), np.zeros(0), y >= 0, C, a, m_limit, keep, children,
                     _f1(t, n, 0), _f2(t, n, 1), _f2(t, n, 2), _i1(t, n, 3), _f3(t, n, 4, v), _f3(t, n, 5, v),
                     _i1(t, n, 6), _f2(t, n, 7), cached, joint, out, np.zeros((0, 0)), False, 0, np.zeros(1),
                     np.zeros(2), np.zeros(1), np.zeros(1, dtype=np.int64), False)


def aode_count(t, cols, feats, y, a, cached, twin):
    """Count one complete event of AODE in class ``y`` as :func:`~stream_nb.kernels._aode.aode_block` counts
    a row it has scored (the one-event path scored it before: ``predict_one``), and with ``cached`` refresh
    the kept denominators of its class and values as the block does; ``twin``: see the module notes."""
    n = 8
    v = t[n + 9]
    pc, pf = _f3(t, n, 4, v), _f3(t, n, 5, v)
    k = cols.shape[0]
    _spodes.count_event(_f1(t, n, 0), _f2(t, n, 1), _f2(t, n, 2), pc.reshape(-1), pf.reshape(-1), v, pf.shape[2],
                        cols, feats, k, y, 1.0, True)
    if cached:
        nv = _i1(t, n, 3)
        anf = np.empty(k)  # a N_f per feature, as the denominators were made
        for g in range(k):
            anf[g] = a * nv[g]
        _spodes.relearn(pf, cols, feats, k, y, anf, _f2(t, n, 7))
    if twin.shape[0]:
        _count_twin(twin, cols, feats, y)


def warm(k) -> None:
    """Compile the kernels for the types the models pass."""
    C, V, F = 2, 4, 2
    cc, vc, fc = np.zeros(C), np.zeros((C, V)), np.zeros((C, F))
    pc, pf = np.zeros((C * V, V)), np.zeros((C * V, F))
    nv = np.array([1, 2], dtype=np.int64)
    cols, feats = np.array([1, 2], dtype=np.int64), np.array([0, 1], dtype=np.int64)
    g = np.zeros((C, 1))
    out = np.empty((1, C))
    tree = Addresses(None, (cc, vc, fc, pc, pf, nv, vc, fc, pc, pf, g, g, g)).table
    fine = Addresses(None, (cc, vc, fc, pc, pf)).table
    k.tree_one(tree, cols, feats, np.array([-1, 0], dtype=np.int64), np.zeros(0), np.zeros(0, dtype=np.int64), C,
               1.0, 0.0, False, 1e-9, False, out)
    k.tree_count(tree, cols, feats, np.zeros(0), np.zeros(0, dtype=np.int64), 1, False, fine)
    aode = Addresses(None, (cc, vc, fc, nv, pc, pf, np.array([-1, 0, 1, 1], dtype=np.int64), np.ones((C, V)))).table
    k.aode_one(aode, cols, feats, 1, C, 1.0, 1.0, np.zeros(0, dtype=np.int8), np.zeros((0, 0), dtype=np.int8), True,
               False, out)
    k.aode_count(aode, cols, feats, 1, 1.0, True, fine)
