"""Forgetting counts: captures of the store, their differences, and subtracting or scaling them.

A *capture* is a copy of every count array of a :class:`~stream_nb.stats.Stats`
over the classes, values and features in use when it was taken (a dict of
arrays; the Gaussian moments as ``g_n``, ``g_mean``, ``g_m2``). Classes,
values and features only ever get new indices at the end, so a capture stays
aligned with the store it came from as the store grows: a later, larger store
reads it as zeros beyond its edges.

Everything a window or a reset needs is made of three operations:

* :func:`count_difference` -- the counts added since a capture (``store - capture``):
  the count delta of one pane, or the fresh counts collected since a warning;
* :func:`subtract_counts` -- take a delta out of the store (an expired pane);
* :func:`replace_counts` -- make a delta the store's counts (a switch after a drift).

A two-layer store (:mod:`stream_nb.stats.store._fine`) is forgotten in its fine layer
(:meth:`~stream_nb.stats.Stats.count_layer`), whose columns only ever grow, and
its coarse layer is then derived again from it
(:meth:`~stream_nb.stats.Stats.counts_changed`): the coarse counts stay exact
sums of fine cells, whatever cut points were chosen in between.

Counts subtract as numbers, which is exact while they are integers (float64
holds every integer up to 2**53 exactly). Gaussian moments subtract by Chan's
pairwise formula run backwards: if the whole ``(n, mean, M2)`` is made of a
part ``(n_b, mean_b, M2_b)`` and a rest, the rest is

    n_a = n - n_b,   mean_a = (n mean - n_b mean_b) / n_a,
    M2_a = M2 - M2_b - (mean_b - mean_a)² n_a n_b / n

(exact in real arithmetic, within rounding in floating point; a part that
empties a cell leaves exact zeros). :func:`scale_counts` multiplies every count and
every Gaussian weight and M2 by one factor, the means unchanged: the
renormalisation of exponential decay.
"""

from __future__ import annotations

import numpy as np

from ..tables import SparseTable

__all__ = ["capture", "capture_difference", "count_difference", "subtract_counts", "replace_counts", "scale_counts", "capture_nbytes",
           "count_names"]

_MOMENTS = ("g_n", "g_mean", "g_m2")


def count_names(s) -> list[str]:
    """Names of the additive count arrays ``s`` keeps now (every count set, the twin included)."""
    names = ["class_count"]
    for p in s._sets():
        names += [p + "value_count", p + "feat_count"]
        if s.pairs:
            names += [p + "pair_count", p + "pair_feat"]
        if s.tuples:
            names += [p + "tuple_count", p + "tuple_feat"]
    return names


def _used(s, name: str) -> tuple:
    """The slices of array ``name`` in use: classes, then values (or features) along each axis."""
    C, V, F, G = len(s.classes), len(s.value_keys), len(s.features), s.n_gauss
    base = name[4:] if name.startswith("obs_") else name
    if base == "class_count":
        dims = (C,)
    elif base in ("value_count",):
        dims = (C, V)
    elif base == "feat_count":
        dims = (C, F)
    elif base == "pair_count":
        dims = (C, V, V)
    elif base == "pair_feat":
        dims = (C, V, F)
    elif base == "tuple_count":
        dims = (C,) + (V,) * s.tuples
    elif base == "tuple_feat":
        dims = (C,) + (V,) * (s.tuples - 1) + (F,)
    else:  # the Gaussian moments
        dims = (C, G)
    return tuple(slice(0, d) for d in dims)


def capture(s) -> dict:
    """A copy of every count array of ``s`` (and its Gaussian moments) over what is in use now (a sparse
    t-way table: a copy of the table; see :mod:`stream_nb.stats.budget._budget`)."""
    s = s.count_layer()
    out = {}
    for name in count_names(s) + list(_MOMENTS):
        a = getattr(s, name)
        out[name] = a.copy() if isinstance(a, SparseTable) else a[_used(s, name)].copy()
    return out


def _sparse_add(table: SparseTable, other, sign: float) -> SparseTable:
    """``table + sign * other`` (``other`` sparse or dense), in ``table`` (grown to hold ``other``'s shape)."""
    if isinstance(other, SparseTable):
        idx, vals = other.cells()
    else:
        idx = np.nonzero(other)
        vals = other[idx]
    if any(d > D for d, D in zip(getattr(other, "shape", ()), table.shape)):
        table = table.reshaped(tuple(max(d, D) for d, D in zip(other.shape, table.shape)))
    if len(vals):
        table.add(idx, sign * np.asarray(vals))
    return table


def capture_nbytes(cap: dict | None) -> int:
    """Bytes held by a capture (0 for None)."""
    return 0 if cap is None else sum(a.nbytes for a in cap.values())


def _part(cap: dict, name: str) -> np.ndarray | None:
    """The capture's array for ``name``; the twin of a capture taken before the twin existed is the
    counts themselves (the twin starts as their copy)."""
    a = cap.get(name)
    if a is None and name.startswith("obs_"):
        a = cap.get(name[4:])
    return a


def _region(a: np.ndarray) -> tuple:
    return tuple(slice(0, d) for d in a.shape)


def _unchan(n, mean, m2, nb, mb, m2b):
    """The rest ``(n_a, mean_a, M2_a)`` of moments ``(n, mean, M2)`` once part ``(nb, mb, M2_b)`` is taken out."""
    na = n - nb
    empty = na <= 1e-12 * np.maximum(n, 1.0)
    safe = np.where(empty, 1.0, na)
    ma = np.where(empty, 0.0, (n * mean - nb * mb) / safe)
    d = mb - ma
    with np.errstate(invalid="ignore", divide="ignore"):
        m2a = m2 - m2b - d * (d * (na * nb / np.where(n > 0, n, 1.0)))
    m2a = np.where(empty | np.isnan(m2a), 0.0, np.maximum(m2a, 0.0))
    return np.where(empty, 0.0, na), ma, m2a


def count_difference(s, base: dict | None) -> dict:
    """The counts ``s`` gained since capture ``base`` (None: since it was empty), as a capture."""
    now = capture(s)
    return now if base is None else capture_difference(now, base)


def capture_difference(now: dict, base: dict) -> dict:
    """Capture ``now`` minus capture ``base`` (a part of it), in ``now``'s arrays: what ``now`` holds beyond ``base``."""
    for name, a in now.items():
        if name in _MOMENTS:
            continue
        b = _part(base, name)
        if b is None:
            continue
        if isinstance(a, SparseTable) or isinstance(b, SparseTable):
            now[name] = _sparse_add(a if isinstance(a, SparseTable) else _to_sparse(a), b, -1.0)
        else:
            a[_region(b)] -= b
    if "g_n" in base:
        r = _region(base["g_n"])
        n, mean, m2 = now["g_n"][r], now["g_mean"][r], now["g_m2"][r]
        n[...], mean[...], m2[...] = _unchan(n, mean, m2, base["g_n"], base["g_mean"], base["g_m2"])
    return now


def _to_sparse(a: np.ndarray) -> SparseTable:
    out = SparseTable(a.shape, slots=2 * max(int(np.count_nonzero(a)), 1))
    return _sparse_add(out, a, 1.0)


def subtract_counts(s, delta: dict) -> None:
    """Take the counts of ``delta`` (a :func:`count_difference`) out of ``s``."""
    top, s = s, s.count_layer()
    s.epoch += 1
    s.version += 1
    for name in count_names(s):
        d = _part(delta, name)
        if d is None:
            continue
        a = getattr(s, name)
        if isinstance(a, SparseTable):
            s.tables.replace(name, _sparse_add(a, d, -1.0))
        elif isinstance(d, SparseTable):
            idx, vals = d.cells()
            np.subtract.at(a, idx, vals)
        else:
            a[_region(d)] -= d
    if "g_n" in delta and delta["g_n"].size:
        r = _region(delta["g_n"])
        n, mean, m2 = s.g_n[r], s.g_mean[r], s.g_m2[r]
        n[...], mean[...], m2[...] = _unchan(n, mean, m2, delta["g_n"], delta["g_mean"], delta["g_m2"])
    top.counts_changed()


def replace_counts(s, delta: dict | None) -> None:
    """Make ``delta`` the counts of ``s`` (None: every count zero); classes, features and values stay."""
    top, s = s, s.count_layer()
    s.epoch += 1
    s.version += 1
    for name in count_names(s) + list(_MOMENTS):
        a = getattr(s, name)
        d = None if delta is None else _part(delta, name)
        if isinstance(a, SparseTable):
            s.tables.replace(name, _sparse_add(SparseTable(a.shape), d, 1.0) if d is not None else SparseTable(a.shape))
            continue
        a[...] = 0.0
        if isinstance(d, SparseTable):
            idx, vals = d.cells()
            np.add.at(a, idx, vals)
        elif d is not None:
            a[_region(d)] = d
    top.counts_changed()


def scale_counts(s, factor: float, captures=()) -> None:
    """Multiply every count of ``s`` and of each capture in ``captures`` by ``factor`` (Gaussian: the
    weights and M2, not the means)."""
    top, s = s, s.count_layer()
    s.epoch += 1
    s.version += 1
    for name in count_names(s) + ["g_n", "g_m2"]:
        a = getattr(s, name)
        if isinstance(a, SparseTable):
            s.tables.replace(name, _scaled(a, factor))
        else:
            a[...] *= factor
    for cap in captures:
        if cap is None:
            continue
        for name, a in cap.items():
            if isinstance(a, SparseTable):
                cap[name] = _scaled(a, factor)
            elif name != "g_mean":
                a *= factor
    top.scale_waiting(factor)
    top.counts_changed()


def _scaled(table: SparseTable, factor: float) -> SparseTable:
    idx, vals = table.cells()
    out = SparseTable(table.shape, slots=2 * max(len(vals), 1))
    if len(vals):
        out.add(idx, vals * factor)
    return out
