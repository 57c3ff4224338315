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

This module decides what is taken out, set or scaled, and in which layer; the arithmetic on the store's
tables is their parts': :meth:`~stream_nb.stats.tables.CountTables.subtract`,
:meth:`~stream_nb.stats.tables.CountTables.set_counts` and :meth:`~stream_nb.stats.tables.CountTables.scale`,
and :meth:`~stream_nb.stats.tables.GaussianMoments.subtract`, :meth:`~stream_nb.stats.tables.GaussianMoments.set_to`
and :meth:`~stream_nb.stats.tables.GaussianMoments.scale` for the moments.
"""

from __future__ import annotations

import numpy as np

from ..tables import SparseTable, moments_rest, sparse_add, sparse_of

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
            now[name] = sparse_add(a if isinstance(a, SparseTable) else sparse_of(a), b, -1.0)
        else:
            a[_region(b)] -= b
    if "g_n" in base:
        r = _region(base["g_n"])
        n, mean, m2 = now["g_n"][r], now["g_mean"][r], now["g_m2"][r]
        n[...], mean[...], m2[...] = moments_rest(n, mean, m2, base["g_n"], base["g_mean"], base["g_m2"])
    return now


def subtract_counts(s, delta: dict) -> None:
    """Take the counts of ``delta`` (a :func:`count_difference`) out of ``s``."""
    top, s = s, s.count_layer()
    s.epoch += 1
    s.version += 1
    parts = {name: _part(delta, name) for name in count_names(s)}
    s.tables.subtract({name: d for name, d in parts.items() if d is not None})
    if "g_n" in delta and delta["g_n"].size:
        s.moments.subtract(delta["g_n"], delta["g_mean"], delta["g_m2"])
    top.counts_changed()


def replace_counts(s, delta: dict | None) -> None:
    """Make ``delta`` the counts of ``s`` (None: every count zero); classes, features and values stay."""
    top, s = s, s.count_layer()
    s.epoch += 1
    s.version += 1
    s.tables.set_counts({name: None if delta is None else _part(delta, name) for name in count_names(s)})
    s.moments.set_to(*(None if delta is None else delta.get(name) for name in _MOMENTS))
    top.counts_changed()


def scale_counts(s, factor: float, captures=()) -> None:
    """Multiply every count of ``s`` and of each capture in ``captures`` by ``factor`` (Gaussian: the
    weights and M2, not the means)."""
    top, s = s, s.count_layer()
    s.epoch += 1
    s.version += 1
    s.tables.scale(factor, count_names(s))
    s.moments.scale(factor)
    for cap in captures:
        if cap is None:
            continue
        for name, a in cap.items():
            if isinstance(a, SparseTable):
                cap[name] = a.scaled(factor)
            elif name != "g_mean":
                a *= factor
    top.scale_waiting(factor)
    top.counts_changed()
