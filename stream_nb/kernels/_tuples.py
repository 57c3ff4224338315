"""KDB's t-way tables of candidate parents in compiled code: each row's kept tuples added to the hash tables.

A store whose t-way tables keep only candidate parents (``stats/selection/_tuple_candidates.py``) counts,
for each observed child value ``x_f`` of a row, the t-tuples ``(c, x_f, x_a1, .., x_a(t-1))`` whose
parents ``a1 .. a(t-1)`` are all candidates of ``f`` and observed in the row (``tuple_count``), and the
same parents with the child's feature last, ``(c, x_a1, .., x_a(t-1), f)`` (``tuple_feat``). Here each
row is added in order, one cell at a time, into the sparse tables' hash arrays
(:mod:`._hashed`): the cells and sums of ``selected_tuple_cells`` added by ``SparseTable.add``, in the
same order (rows, then children by position, then the parents' slots, the first slowest).
"""

from __future__ import annotations

import numpy as np

from . import _common, _hashed

__all__ = ["selected_tuple_rows", "tuple_kept_cells", "warm"]


def selected_tuple_rows(D, dfeats, yc, w, lists, t, cshape, fshape, ckeys, cvals, fkeys, fvals, held, room):
    """Add the kept t-tuples of each row of ``D`` (columns of distinct features ``dfeats``; -1 missing) of
    class ``yc[r]`` with weight ``w[r]`` to ``tuple_count`` (shape ``cshape``) and ``tuple_feat``
    (``fshape``); ``lists[f]``: the candidate parents of feature f, padded with -1. ``held``: the cells each
    table holds, updated. Stops before a row when either table could then pass half its slots (``held +
    room`` more cells): returns the rows done, for the caller to grow the tables and go on."""
    R = D.shape[0]
    pos, slots, par = _feature_columns(dfeats, lists, t)
    cshift, fshift = _hashed.hashed_shift(ckeys), _hashed.hashed_shift(fkeys)
    for r in range(R):
        if 2 * (held[0] + room) > ckeys.shape[0] or 2 * (held[1] + room) > fkeys.shape[0]:
            return r
        _selected_row(D, r, dfeats, yc[r], w[r], lists, t, pos, slots, par, cshape, fshape, ckeys, cvals,
                           fkeys, fvals, held, cshift, fshift)
    return R


def _feature_columns(dfeats, lists, t):
    """``(pos, slots, par)`` for :func:`_selected_row`: the column of each feature among ``dfeats`` (-1:
    none), and room for the parents' slots in ``lists[f]`` (an odometer) and for their columns."""
    F = lists.shape[0]
    pos = np.full(max(F, 1), -1, dtype=np.int64)  # the column of D of each feature
    for j in range(dfeats.shape[0]):
        if 0 <= dfeats[j] < F:
            pos[dfeats[j]] = j
    return pos, np.zeros(max(t - 1, 1), dtype=np.int64), np.zeros(max(t - 1, 1), dtype=np.int64)


def _selected_row(D, r, dfeats, c, wr, lists, t, pos, slots, par, cshape, fshape, ckeys, cvals, fkeys, fvals,
                       held, cshift, fshift):
    """Add the kept t-tuples of row ``r`` of ``D`` (class ``c``, weight ``wr``; see
    :func:`selected_tuple_rows`), the tables given room for them; ``pos``, ``slots``, ``par`` from
    :func:`_feature_columns`, ``cshift``, ``fshift`` the tables' :func:`~._hashed.hashed_shift`."""
    F, m = lists.shape[0], lists.shape[1]
    for j in range(D.shape[1]):
        f = dfeats[j]
        v = D[r, j]
        if v < 0 or f < 0 or f >= F or m == 0:
            continue
        for a in range(t - 1):
            slots[a] = 0
        while True:
            ok = True
            for a in range(t - 1):
                g = lists[f, slots[a]]
                q = pos[g] if g >= 0 else -1
                if q < 0 or D[r, q] < 0:
                    ok = False
                    break
                par[a] = q
            if ok:
                key = c * cshape[1] + v
                fkey = c
                for a in range(t - 1):
                    u = D[r, par[a]]
                    key = key * cshape[2 + a] + u
                    fkey = fkey * fshape[1 + a] + u
                fkey = fkey * fshape[t] + f
                held[0] += _hashed.hashed_add(ckeys, cvals, key, wr, cshift)
                held[1] += _hashed.hashed_add(fkeys, fvals, fkey, wr, fshift)
            if not _common.next_digits(slots, t - 1, m):
                break


def tuple_kept_cells(keys, vals, shape, dims, vf, cand, by_feature):
    """The slots of a sparse t-way table's ``keys``/``vals`` (capacity ``shape``: the class, then the child's
    value and the parents' values, or with ``by_feature`` the parents' values and the child's feature) whose
    cells lie within ``dims``, hold a count, and whose parents are all candidates of their child
    (``cand[child, parent]``; a value's feature ``vf[u]``, -1 past ``vf``), in slot order: the cells
    ``stats/selection/_tuple_candidates.py: tuple_kept`` keeps, for :func:`~._hashed.copy_cells`."""
    n_axes = shape.shape[0]
    F = cand.shape[0]
    nvf = vf.shape[0]
    idx = np.empty(n_axes, dtype=np.int64)
    out = np.empty(keys.shape[0], dtype=np.int64)
    n = 0
    for s in range(keys.shape[0]):
        key = keys[s]
        if key == -1 or vals[s] == 0.0:
            continue
        if not _hashed.unravel_within(key, shape, dims, idx):
            continue
        if by_feature:
            child, lo, hi = idx[n_axes - 1], 1, n_axes - 1
        else:
            child, lo, hi = (vf[idx[1]] if idx[1] < nvf else -1), 2, n_axes
        if child < 0 or child >= F:
            continue
        kept = True
        for d in range(lo, hi):
            g = vf[idx[d]] if idx[d] < nvf else -1
            if g < 0 or g >= F or not cand[child, g]:
                kept = False
                break
        if kept:
            out[n] = s
            n += 1
    return out[:n].copy()


def warm(k) -> None:
    """Compile the kernels for the types the stores pass."""
    D, feats = np.array([[1, 3]], dtype=np.int64), np.array([0, 1], dtype=np.int64)
    lists = np.array([[1], [0]], dtype=np.int64)
    cshape, fshape = np.array([2, 5, 5, 5], dtype=np.int64), np.array([2, 5, 5, 2], dtype=np.int64)
    k.selected_tuple_rows(D, feats, np.array([1], dtype=np.int64), np.ones(1), lists, 3, cshape, fshape,
                          np.full(16, -1, dtype=np.int64), np.zeros(16), np.full(16, -1, dtype=np.int64), np.zeros(16),
                          np.zeros(2, dtype=np.int64), 4)
    for by_feature in (False, True):
        k.tuple_kept_cells(np.full(16, -1, dtype=np.int64), np.zeros(16), cshape, cshape,
                           np.array([-1, 0, 0, 1, 1], dtype=np.int64), np.ones((2, 2), dtype=np.bool_), by_feature)
