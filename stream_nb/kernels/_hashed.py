"""Sparse count tables in compiled code: reading and adding the cells of :class:`~stream_nb.stats.SparseTable`.

A sparse table (``stats/tables/_sparse.py``) is an open-addressing hash table held in two arrays: ``keys``
(int64, -1 for an empty slot) and ``vals`` (float64), a power of two long, with linear probing from
the key's Fibonacci hash (its top bits of ``key * 0x9E3779B97F4A7C15``). These functions read and add
cells of those arrays in place, as the table's numpy methods do: a cell never counted reads 0.0, and
adding to it takes the empty slot where its probe ends. They never grow a table: the caller gives it
room first (at most half its slots held, see :func:`pair_rows`).

A selected table (``stats/selection/_candidates.py``, a budget's candidate pairs) adds only the cells of kept
attribute pairs: the diagonal, the row of an allowed parent, a kept edge (:func:`pair_kept`).

A pair table may keep an index of its rows (``rows``: one bit per row (c, u) of its capacity, set once a
cell of the row is held; see ``SparseTable.rows_held``): the loops that add cells set the bits of the rows
they add to (:func:`copy_cells`, :func:`pair_rows`), and the scores read no cell of a row whose bit is clear,
which holds none (:func:`row_held`). An empty ``rows`` is no index: every row may hold cells.
"""

from __future__ import annotations

import numpy as np

__all__ = ["copy_cells", "dense_cells", "fill_cells", "hashed_add", "hashed_gather", "hashed_get", "hashed_shift",
           "hashed_start", "held_rows", "kept_cells", "key_bits",
           "mark_row",
           "pair_kept", "pair_partners", "pair_rows", "rehash", "row_held", "split_key", "unit_cells", "warm"]

#: Helpers compiled into each caller (numba's inline="always"): the test of :func:`split_key` stays out of
#: the loops that call it, and marking a row costs no call in the loops that add cells.
INLINE = ("split_key", "row_held", "mark_row", "_add_cell", "unravel_within", "hashed_start")

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def hashed_shift(keys):
    """The right shift that takes a key's hash to a slot of ``keys`` (64 minus log2 of its length), as uint64."""
    bits = 0
    n = keys.shape[0]
    while n > 1:
        n >>= 1
        bits += 1
    return np.uint64(64 - bits)


def hashed_start(key, shift):
    """The slot where the probe of ``key`` starts: the top bits of its Fibonacci hash."""
    return np.int64((np.uint64(key) * _GOLDEN) >> shift)


def _slot(keys, key, shift):
    """The slot holding ``key``, or the empty one where its probe ends."""
    mask = keys.shape[0] - 1
    s = hashed_start(key, shift)
    while True:
        held = keys[s]
        if held == key or held == -1:
            return s
        s = (s + 1) & mask


def hashed_get(keys, vals, key, shift):
    """The count of cell ``key`` (0.0 if never counted)."""
    s = _slot(keys, key, shift)
    return vals[s] if keys[s] == key else 0.0


def hashed_gather(keys, vals, base, cols, n, shift, slot, at, got):
    """``got[j]``: the count of cell ``base + cols[j]`` for each j < n, as :func:`hashed_get` reads it, but the
    key at the first slot of every probe read before any is tested: loads independent of one another, which
    the processor overlaps, where lookups one after another each wait for their cache miss (a table far larger
    than the caches; most cells are found, or found absent, at their first slot, the others probed on), then
    the counts of the cells found there. ``slot``, ``at``: room for n slots and the keys they hold."""
    for j in range(n):
        s = hashed_start(base + cols[j], shift)
        slot[j] = s
        at[j] = keys[s]
    for j in range(n):
        key = base + cols[j]
        if at[j] == key:
            got[j] = vals[slot[j]]
        else:
            got[j] = 0.0 if at[j] == -1 else hashed_get(keys, vals, key, shift)


def hashed_add(keys, vals, key, w, shift):
    """Add ``w`` to cell ``key``; 1 if the cell is new (it took an empty slot), else 0."""
    s = _slot(keys, key, shift)
    vals[s] += w
    if keys[s] == key:
        return 0
    keys[s] = key
    return 1


def mark_row(rows, row):
    """Set the bit of ``row`` in the index ``rows`` (nothing without an index)."""
    if rows.shape[0]:
        rows[row >> 3] |= np.uint8(1 << (row & 7))


def row_held(rows, row):
    """Whether ``row`` may hold a cell: its bit in the index ``rows``, or True without an index."""
    return rows.shape[0] == 0 or (np.int64(rows[row >> 3]) >> (row & 7)) & 1 == 1


def rehash(keys, vals, new_keys, new_vals):
    """Move every cell of ``keys``/``vals`` into the empty, larger ``new_keys``/``new_vals`` (a table grown)."""
    shift = hashed_shift(new_keys)
    for s in range(keys.shape[0]):
        if keys[s] != -1:
            t = _slot(new_keys, keys[s], shift)
            new_keys[t] = keys[s]
            new_vals[t] = vals[s]


def key_bits(n):
    """log2 of ``n`` when it is a power of two, else -1: a capacity whose keys :func:`split_key` splits with
    shifts and masks."""
    if n <= 0 or (n & (n - 1)) != 0:
        return -1
    bits = 0
    while (1 << bits) < n:
        bits += 1
    return bits


def split_key(key, P1, P2, b1, b2):
    """``(c, u, v)``: the cell of a key (at least 0) of a table of capacity (·, ``P1``, ``P2``); ``b1``, ``b2``:
    :func:`key_bits` of ``P1`` and ``P2``. Both powers of two (the capacities double as they grow): the same
    numbers by shifts and masks, where the two 64-bit divisions took half of a pass over a table's slots."""
    if b1 >= 0 and b2 >= 0:
        q = key >> b2
        return q >> b1, q & (P1 - 1), key & (P2 - 1)
    q = key // P2
    c = q // P1
    return c, q - c * P1, key - q * P2


def pair_kept(allowed, edges, fa, fb):
    """Whether a selection keeps the pair of features ``fa`` (the row) and ``fb``: the diagonal, a row of an
    allowed parent, or a kept edge; a feature past the arrays, or -1, is not (``_candidates.pair_kept``)."""
    F = allowed.shape[0]
    if fa < 0 or fa >= F:
        return False
    if fa == fb or allowed[fa]:
        return True
    return 0 <= fb < F and edges[fa, fb]


def kept_cells(keys, vals, shape, dims, vf, allowed, edges, by_feature):
    """The slots of ``keys``/``vals`` (capacity ``shape``) whose cells lie within ``dims``, hold a count, and
    are kept by a selection (the row's feature ``vf[u]``, the column's ``vf[v]``, or the feature itself when
    ``by_feature``: :func:`pair_kept`), in slot order: what :func:`copy_cells` copies.

    A row of an allowed parent is kept whole without reading its column's feature. The slots come back as
    the first part of an array as long as the table, not copied out of it: its pages past them are never
    touched (an array of the held slots alone, counted first, took as long, and freed, it moved the C
    allocator's threshold for blocks mapped on their own: about 30 MB more stayed resident on the wide bench)."""
    P1, P2 = shape[1], shape[2]
    b1, b2 = key_bits(P1), key_bits(P2)
    nvf, F = vf.shape[0], allowed.shape[0]
    out = np.empty(keys.shape[0], dtype=np.int64)
    n = 0
    for s in range(keys.shape[0]):
        key = keys[s]
        if key == -1 or vals[s] == 0.0:
            continue
        c, u, v = split_key(key, P1, P2, b1, b2)
        if c >= dims[0] or u >= dims[1] or v >= dims[2]:
            continue
        fa = vf[u] if u < nvf else -1
        if fa < 0 or fa >= F:
            continue  # pair_kept: a row of no feature keeps nothing
        if not allowed[fa]:  # pair_kept's other cases: the diagonal, a kept edge
            fb = v if by_feature else (vf[v] if v < nvf else -1)
            if fa != fb and not (0 <= fb < F and edges[fa, fb]):
                continue
        out[n] = s
        n += 1
    return out[:n]


def unit_cells(keys, vals, P1, P2, V, vf, F, by_feature, parents, per):
    """Add to ``per`` the cells of ``keys``/``vals`` (capacity (·, ``P1``, ``P2``)) that hold a count, one to
    the unit of a pair selection each belongs to: the feature of its row (``parents``), or the pair
    ``min * F + max`` of its row's and column's features (the column's ``vf[v]``, or the feature ``v``
    itself when ``by_feature``; a column past the ``V`` seen read as the last). Returns the cells of the
    diagonal (row and column of one feature, or of none), which belong to no unit; a cell of a feature
    and of none belongs to neither (``_candidates._unit_cells``, which summed numpy's index arrays of
    every cell)."""
    b1, b2 = key_bits(P1), key_bits(P2)
    fixed = 0
    for s in range(keys.shape[0]):
        key = keys[s]
        if key == -1 or vals[s] == 0.0:
            continue
        _, u, v = split_key(key, P1, P2, b1, b2)
        fa = vf[min(u, V - 1)]
        fb = v if by_feature else vf[min(v, V - 1)]
        if fa == fb:
            fixed += 1
            continue
        if fa < 0 or fb < 0:
            continue
        unit = fa if parents else min(fa, fb) * F + max(fa, fb)
        if unit >= per.shape[0]:
            raise ValueError("unit_cells: a cell of a feature past those of the selection")
        per[unit] += 1.0
    return fixed


def unravel_within(r, cap, bound, idx):
    """Write into ``idx`` the axes of ``r``, a flat C-order index into capacity ``cap``; whether each axis
    lies below ``bound``."""
    inside = True
    for d in range(cap.shape[0] - 1, -1, -1):
        idx[d] = r % cap[d]
        r //= cap[d]
        if idx[d] >= bound[d]:
            inside = False
    return inside


def copy_cells(keys, vals, slots, new_keys, new_vals, P2, rows):
    """Add the cells of ``slots`` of ``keys``/``vals``, in that order, to the empty ``new_keys``/``new_vals``
    (room for them all), setting the bit of each one's row (its key over ``P2``, the last axis's capacity)
    in the new table's index ``rows`` (empty: none)."""
    shift = hashed_shift(new_keys)
    b2 = key_bits(P2)  # (the row by a shift where P2 is a power of two, as split_key: no 64-bit division a cell)
    for s in slots:
        key = keys[s]
        hashed_add(new_keys, new_vals, key, vals[s], shift)
        if rows.shape[0]:
            mark_row(rows, key >> b2 if b2 >= 0 else key // P2)


def dense_cells(flat, dims, used, shape, keys, vals):
    """Add each nonzero cell of a dense C-ordered table (``flat``, its cells in order; capacity ``dims``) that
    lies within ``used`` to the empty ``keys``/``vals`` of a sparse table of capacity ``shape`` (room for
    them all), in the table's order, as numpy's ``nonzero`` lists them; the cells added."""
    D = dims.shape[0]
    idx = np.empty(D, dtype=np.int64)
    shift = hashed_shift(keys)
    n = 0
    for i in range(flat.shape[0]):
        x = flat[i]
        if x == 0.0:
            continue
        if not unravel_within(i, dims, used, idx):
            continue
        key = 0
        for d in range(D):
            key = key * shape[d] + idx[d]
        n += hashed_add(keys, vals, key, x, shift)
    return n


def fill_cells(cell_keys, cell_vals, n, keys, vals):
    """Add the first ``n`` cells of ``cell_keys``/``cell_vals`` (distinct keys), in order, to the empty
    ``keys``/``vals`` of a sparse table (room for them all); the cells added."""
    shift = hashed_shift(keys)
    held = 0
    for i in range(n):
        held += hashed_add(keys, vals, cell_keys[i], cell_vals[i], shift)
    return held


def held_rows(keys, P2, rows):
    """Set the bit of the row of every cell ``keys`` holds (its key over ``P2``, the last axis's capacity)
    in the index ``rows``: the index of a table filled otherwise than by the loops that keep it."""
    for s in range(keys.shape[0]):
        if keys[s] >= 0:
            mark_row(rows, keys[s] // P2)


def pair_partners(edges, F):
    """The kept edges as lists: features ``idx[start[a]:start[a + 1]]`` pair with ``a`` (``a`` itself first),
    as :func:`pair_rows` walks them (made again only when the edges change: ``stats/tables/_sparse.py``)."""
    start = np.zeros(F + 1, dtype=np.int64)
    for a in range(F):
        n = 0
        for b in range(F):  # (a count with no branch: F^2 cells)
            n += 1 if edges[a, b] else 0
        start[a + 1] = start[a] + 1 + n - (1 if edges[a, a] else 0)
    idx = np.empty(start[F], dtype=np.int64)
    for a in range(F):
        at = start[a]
        idx[at] = a
        if start[a + 1] - at == 1:
            continue  # no edge of a: its row is not read
        for b in range(F):
            if b != a and edges[a, b]:
                at += 1
                idx[at] = b
    return start, idx


def _add_cell(keys, vals, key, w, shift, held, t, rows, row):
    """:func:`hashed_add`, counting a new cell in ``held[t]`` and setting its row's bit in ``rows``."""
    if hashed_add(keys, vals, key, w, shift):
        held[t] += 1
        mark_row(rows, row)


def pair_rows(D, dfeats, yc, w, vf, selected, allowed, edges, start, idx, pshape, fshape, pkeys, pvals, fkeys, fvals,
              held, room, prows, frows):
    """Add the observed pairs of each row of ``D`` (columns of distinct features ``dfeats``; -1 missing), in
    row order, to the sparse ``pair_count`` (shape ``pshape``, cell ``(c, u, v)``) and ``pair_feat``
    (``fshape``, cell ``(c, u, f)``) of class ``yc[r]`` with weight ``w[r]``: what ``SparseTable.add`` adds,
    one cell at a time. With ``selected``, only the kept pairs' cells (the row's feature ``vf[u]``, the
    column's ``vf[v]`` or ``f``: ``SelectedTable.kept``), found through the kept edges of each row's feature
(``start``, ``idx``: :func:`pair_partners` of ``edges``; read only with ``selected``).
    ``held``: the cells each table holds, updated; ``prows``, ``frows``: the tables' indexes of their rows
    (empty: none), the bit of each row a new cell takes set.

    Stops before a row when either table could then pass half its slots (``held + room`` more cells):
    returns the rows done, for the caller to grow the tables and go on.
    """
    R, k = D.shape
    pshift, fshift = hashed_shift(pkeys), hashed_shift(fkeys)
    nvf, F = vf.shape[0], allowed.shape[0]
    pos = np.full(F, -1, dtype=np.int64)  # the column of D of each feature
    for j in range(k):
        if 0 <= dfeats[j] < F:
            pos[dfeats[j]] = j
    for r in range(R):
        if 2 * (held[0] + room) > pkeys.shape[0] or 2 * (held[1] + room) > fkeys.shape[0]:
            return r
        c, wr = yc[r], w[r]
        plain = True  # every value is of its column's feature (else each pair is checked as the table checks it)
        if selected:
            for j in range(k):
                u = D[r, j]
                if u >= 0 and (u >= nvf or vf[u] != dfeats[j]):
                    plain = False
        for j in range(k):
            u = D[r, j]
            if u < 0:
                continue
            fa = vf[u] if u < nvf else -1
            if selected and not 0 <= fa < F:
                continue  # nothing of this row is kept
            pr, fr = c * pshape[1] + u, c * fshape[1] + u  # the rows (c, u) of both tables
            prow, frow = pr * pshape[2], fr * fshape[2]
            if not selected or allowed[fa]:  # the whole row
                for i in range(k):
                    v = D[r, i]
                    if v >= 0:
                        _add_cell(pkeys, pvals, prow + v, wr, pshift, held, 0, prows, pr)
                        _add_cell(fkeys, fvals, frow + dfeats[i], wr, fshift, held, 1, frows, fr)
            elif plain:  # the row's feature and its kept edges
                for e in range(start[fa], start[fa + 1]):
                    i = pos[idx[e]]
                    if i >= 0 and D[r, i] >= 0:
                        _add_cell(pkeys, pvals, prow + D[r, i], wr, pshift, held, 0, prows, pr)
                        _add_cell(fkeys, fvals, frow + dfeats[i], wr, fshift, held, 1, frows, fr)
            else:
                for i in range(k):
                    v = D[r, i]
                    if v < 0:
                        continue
                    if pair_kept(allowed, edges, fa, vf[v] if v < nvf else -1):
                        _add_cell(pkeys, pvals, prow + v, wr, pshift, held, 0, prows, pr)
                    if pair_kept(allowed, edges, fa, dfeats[i]):
                        _add_cell(fkeys, fvals, frow + dfeats[i], wr, fshift, held, 1, frows, fr)
    return R


def warm(k) -> None:
    """Compile the kernels for the types the stores pass."""
    keys, vals = np.full(16, -1, dtype=np.int64), np.zeros(16)
    k.hashed_get(keys, vals, 3, k.hashed_shift(keys))
    k.hashed_gather(keys, vals, 3, np.arange(2), 2, k.hashed_shift(keys), np.empty(2, dtype=np.int64),
                    np.empty(2, dtype=np.int64), np.empty(2))
    k.rehash(keys, vals, np.full(32, -1, dtype=np.int64), np.zeros(32))
    D, feats = np.array([[1, 3]], dtype=np.int64), np.array([0, 1], dtype=np.int64)
    vf = np.array([-1, 0, 0, 1, 1], dtype=np.int64)
    shape = np.array([2, 5, 5], dtype=np.int64)
    edges = np.zeros((2, 2), dtype=bool)
    for selected in (False, True):
        for rows in (np.zeros(0, dtype=np.uint8), np.zeros(2, dtype=np.uint8)):
            k.pair_rows(D, feats, np.array([1], dtype=np.int64), np.ones(1), vf, selected, np.zeros(2, dtype=bool),
                        edges, *k.pair_partners(edges, 2), shape, shape, keys, vals, keys.copy(), vals.copy(),
                        np.zeros(2, dtype=np.int64), 4, rows, rows.copy())
    for by_feature in (False, True):
        slots = k.kept_cells(keys, vals, shape, shape, vf, np.zeros(2, dtype=bool), np.zeros((2, 2), dtype=bool),
                             by_feature)
    for rows in (np.zeros(0, dtype=np.uint8), np.zeros(2, dtype=np.uint8)):
        k.copy_cells(keys, vals, slots, np.full(16, -1, dtype=np.int64), np.zeros(16), 5, rows)
    for by_feature in (False, True):
        k.unit_cells(keys, vals, 5, 5, 5, vf, 5, by_feature, not by_feature, np.zeros(25))
    for dense in (np.ones((2, 3, 3)), np.ones((2, 3, 3, 3))):
        dims = np.array(dense.shape, dtype=np.int64)
        k.dense_cells(dense.ravel(), dims, dims, dims, np.full(128, -1, dtype=np.int64), np.zeros(128))
    k.held_rows(keys, 5, np.zeros(2, dtype=np.uint8))
    k.fill_cells(np.array([3], dtype=np.int64), np.ones(1), 1, np.full(16, -1, dtype=np.int64), np.zeros(16))
