"""The coarse layer of a two-layer store as exact sums of its fine layer's cells (see :mod:`stream_nb.stats.store._fine`).

:func:`coarse_state` turns the state of the fine store into the state of the
coarse one: every fine column of a binned feature goes to the coarse bin
holding it (its edges are a subset of the fine edges), every categorical
column to itself, and each count array is summed along each of its value axes
over the fine columns of each coarse one (grouped, then one sum per group).
Counts of whole events stay whole numbers, so the sums are exact.
"""

from __future__ import annotations

import numpy as np

from ._joint import quantiles_inform
from ._mdl import mdl_cuts
from ..values import BINNED, TWINNED

__all__ = ["coarse_edges", "coarse_state"]


def _bin_map(fine_edges: np.ndarray, coarse_edges: np.ndarray) -> np.ndarray:
    """Fine-bin boundaries of the coarse bins (fine bin k is in coarse bin searchsorted(b, k, 'right'))."""
    at = np.searchsorted(fine_edges, coarse_edges, side="left")
    if len(coarse_edges) and not np.array_equal(fine_edges[np.minimum(at, len(fine_edges) - 1)], coarse_edges):
        raise ValueError("coarse edges must be fine edges")
    return at + 1


def coarse_edges(fine, f: int, bins: int) -> np.ndarray:
    """The coarse edges of binned feature ``f`` chosen from ``fine`` (a Stats, the fine layer): MDL's cut
    points over its fine bins' observed class counts, and with ``bins`` > 1 the fine boundaries nearest
    the k/bins quantiles of those counts when they tell more of the class, alone or with another feature
    (:func:`~stream_nb.stats.discretiser._joint.quantiles_inform`)."""
    fe = fine.disc[f].edges
    cuts = _candidate_cuts(fine, bins)
    mdl, quantile, n = cuts[f][2:]
    chosen = set(mdl)
    # before ``10 * warmup`` events of the feature the test has too few to tell: the quantiles stay
    if quantile and (n < 10 * fine.warmup or quantiles_inform(fine, f, fine.observed(), cuts)):
        chosen |= quantile
    chosen = sorted(chosen)
    return fe[np.array(chosen, dtype=np.int64) - 1] if chosen else np.empty(0)


def _candidate_cuts(fine, bins: int) -> dict:
    """``{feature: (keys, columns, MDL's cuts, quantile cuts not among them, events counted)}`` of every
    binned feature of ``fine`` with fine edges, from its observed class counts (kept until the counts change)."""
    key = (fine.epoch, fine.version, bins)
    hit = fine._cache.get("candidate_cuts")
    if hit is not None and hit[0] == key:
        return hit[1]
    obs, out = fine.observed(), {}
    for f, d in enumerate(fine.disc):
        if d is None or d.edges is None or fine.kinds[f] != BINNED:
            continue
        fe = d.edges
        keys = np.fromiter(fine.values[f].keys(), dtype=np.int64, count=len(fine.values[f]))
        cols = np.fromiter(fine.values[f].values(), dtype=np.int64, count=len(fine.values[f]))
        counts = np.zeros((len(fe) + 1, fine.n_classes))
        counts[keys] = obs.value_count[: fine.n_classes, cols].T
        mdl = set(mdl_cuts(counts))
        quantile: set = set()
        if bins > 1:
            cum = np.cumsum(counts.sum(1))
            if cum[-1] > 0:
                at = np.searchsorted(cum, cum[-1] * np.arange(1, bins) / bins, side="left") + 1
                quantile = {int(b) for b in at if 0 < b <= len(fe)} - mdl
        out[f] = (keys, cols, mdl, quantile, float(counts.sum()))
    fine._cache["candidate_cuts"] = (key, out)
    return out


def coarse_state(fine, edges: dict, bins: int, warmup: int, max_table_cells) -> tuple[dict, dict]:
    """``(arrays, meta)`` of the coarse store: ``fine`` (a Stats) with each binned feature ``f`` of
    ``edges`` cut at ``edges[f]`` (a subset of its fine edges); features without edges yet stay
    without values."""
    arrays, meta = fine.state()
    bounds = {f: _bin_map(fine.disc[f].edges, np.asarray(e, dtype=float)) for f, e in edges.items()}
    columns, index = [], {}
    Vf = len(meta["columns"]) + 1
    vmap = np.zeros(Vf, dtype=np.int64)
    for i, (f, v) in enumerate(meta["columns"], start=1):
        if f < 0:
            continue  # detached by a promotion: empty, and not needed in a derived layer
        if fine.kinds[f] == BINNED:
            if f not in bounds:
                continue
            v = int(np.searchsorted(bounds[f], v, side="right"))
        j = index.get((f, v))
        if j is None:
            columns.append([f, v])
            j = index[(f, v)] = len(columns)
        vmap[i] = j
    Vc = len(columns) + 1
    # the fine columns grouped by their coarse column: one gather and one sum of each group along an axis
    order = np.argsort(vmap, kind="stable")
    ordered = vmap[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    targets = ordered[starts]

    def summed(a: np.ndarray, axis: int) -> np.ndarray:
        shape = list(a.shape)
        shape[axis] = Vc
        out = np.zeros(shape)
        sums = np.add.reduceat(np.take(a, order, axis=axis), starts, axis=axis)
        np.moveaxis(out, axis, 0)[targets] = np.moveaxis(sums, axis, 0)
        np.moveaxis(out, axis, 0)[0] = 0.0  # column 0 never counts
        return out

    out = dict(arrays)
    for p in ("", "obs_"):
        for name in TWINNED:
            a = arrays.get(p + name)
            if a is None:
                continue
            # value axes: all but the class axis and, for the *_feat arrays, the last
            n_axes = a.ndim - 1 - (name in ("feat_count", "pair_feat", "tuple_feat"))
            for axis in range(1, 1 + n_axes):
                a = summed(a, axis)
            out[p + name] = np.ascontiguousarray(a)
        for name in ("pair_count", "pair_feat", "tuple_count", "tuple_feat"):  # a table written sparse: its cells' value indices mapped
            cells = arrays.get(p + name + "_cells")
            if cells is None:
                continue
            n = cells.shape[1] - 1 - name.endswith("_feat")
            cells = cells.copy()
            cells[:, 1 : 1 + n] = vmap[cells[:, 1 : 1 + n]]
            keep = (cells[:, 1 : 1 + n] > 0).all(1)
            out[p + name + "_cells"] = cells[keep]
            out[p + name + "_counts"] = arrays[p + name + "_counts"][keep]  # equal cells add up when loaded
    meta = dict(meta)
    meta["bins"], meta["warmup"], meta["max_table_cells"] = bins, warmup, max_table_cells
    feats = []
    for f, feat in enumerate(meta["features"]):
        feat = dict(feat)
        if fine.kinds[f] == BINNED:
            e = edges.get(f)
            feat["discretiser"] = {"bins": bins, "warmup": warmup, "edges": None if e is None else list(map(float, e)),
                                   "buffer": []}
            feat["values"] = [v for g, v in columns if g == f]
        feats.append(feat)
    meta["features"] = feats
    meta["columns"] = columns
    return out, meta
