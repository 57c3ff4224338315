"""The coarse layer of a two-layer store as exact sums of its fine layer's cells (see :mod:`stream_nb.stats.store._fine`).

:func:`coarse_state` turns the state of the fine store into the state of the
coarse one: every fine column of a binned feature goes to the coarse bin
holding it (its edges are a subset of the fine edges), every categorical
column to itself, and each count array is summed along each of its value axes
over the fine columns of each coarse one (grouped, then one sum per group).
Counts of whole events stay whole numbers, so the sums are exact.
"""

from __future__ import annotations

import math

import numpy as np

from ..._checks import is_integer
from ._joint import quantiles_inform
from ._mdl import mdl_cuts
from ..values import BINNED, TWINNED
from ._waiting import check_exp, entry_json

__all__ = ["check_backlog", "coarse_edges", "coarse_state", "load_waiting", "waiting_state"]


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


def check_backlog(backlog, fine, name: str = "backlog", prefix: str = "stats.two_layer.") -> list:
    """The backlog (or the candidates) of a two-layer state as the store keeps it (entries of
    :mod:`stream_nb.stats.discretiser._waiting`, each with the key a receipt knows it by, if any); ValueError naming
    what does not fit (``prefix + name``)."""
    if not isinstance(backlog, list):
        raise ValueError(f"{prefix}{name}: expected a list, got {type(backlog).__name__}")
    V, F, C = len(fine.value_keys), len(fine.features), fine.n_classes
    out = []
    for i, entry in enumerate(backlog):
        where = f"{prefix}{name}[{i}]" if prefix else name
        if not isinstance(entry, list) or len(entry) not in (5, 6, 7):
            raise ValueError(f"{where}: expected [columns, features, values, class, weight, EM part, receipt key]")
        cols, feats, vals, c, w = entry[:5]
        if not (isinstance(cols, list) and isinstance(feats, list) and len(cols) == len(feats)
                and all(is_integer(v) and 0 < v < V for v in cols) and all(is_integer(f) and 0 <= f < F for f in feats)):
            raise ValueError(f"{where}: expected columns and features of the fine layer, one each")
        if not isinstance(vals, list) or not all(
                isinstance(e, list) and len(e) == 2 and is_integer(e[0]) and 0 <= e[0] < F and fine.kinds[e[0]] == BINNED
                and isinstance(e[1], (int, float)) and not isinstance(e[1], bool) and math.isfinite(e[1]) for e in vals):
            raise ValueError(f"{where}: expected [binned feature, finite number] pairs")
        if not (is_integer(c) and 0 <= c < C) or not (isinstance(w, (int, float)) and math.isfinite(w) and w >= 0):
            raise ValueError(f"{where}: expected a class index and a weight >= 0")
        out.append((np.array(cols, dtype=np.int64), np.array(feats, dtype=np.int64),
                    [(int(f), float(x)) for f, x in vals], int(c), float(w),
                    check_exp(entry[5] if len(entry) >= 6 else None, fine, where + "[5]"), _key(entry, where)))
    return out


def _key(entry: list, where: str):
    """The receipt key of a waiting entry read from a state: None, or an integer >= 1."""
    key = entry[6] if len(entry) == 7 else None
    if key is not None and not (is_integer(key) and key >= 1):
        raise ValueError(f"{where}[6]: expected null or the key a receipt knows the event by (an integer >= 1)")
    return None if key is None else int(key)


def waiting_state(s) -> dict:
    """The events two-layer store ``s`` keeps (backlog, candidates, the features past them) and what its
    receipts know them by (the last key given, the receipted entries counted since), for its state."""
    out = {"backlog": [entry_json(e) for e in s.backlog], "candidates": [entry_json(e) for e in s.candidates],
           "grown": sorted(s.grown)}
    if s.receipts:  # a store that gave no receipt writes the state it always wrote
        out["receipts"] = s.receipts
        out["counted"] = [entry_json(e) for e in s.counted.values()]
    return out


def load_waiting(s, tl: dict) -> None:
    """Put :func:`waiting_state`'s ``tl`` into two-layer store ``s``; ValueError naming what does not fit."""
    s.backlog = check_backlog(tl.get("backlog"), s.fine)
    s.candidates = check_backlog(tl.get("candidates", []), s.fine, "candidates")
    grown = tl.get("grown", [])
    if not isinstance(grown, list) or not all(is_integer(f) and 0 <= f < len(s.features) for f in grown):
        raise ValueError(f"stats.two_layer.grown: expected a list of feature indices, got {grown!r:.60}")
    s.grown = set(grown)
    receipts = tl.get("receipts", 0)
    if not is_integer(receipts) or receipts < 0:
        raise ValueError(f"stats.two_layer.receipts: expected an integer >= 0, got {receipts!r:.60}")
    counted = check_backlog(tl.get("counted", []), s.fine, "counted")
    keys = [e[6] for e in s.backlog + s.candidates + counted if e[6] is not None]
    if any(k > receipts for k in keys) or len(set(keys)) != len(keys) or any(e[6] is None for e in counted):
        raise ValueError(f"stats.two_layer: expected receipt keys of the waiting and counted events distinct, each "
                         f"in 1..{receipts} (stats.two_layer.receipts), and one for every counted event")
    s.receipts, s.counted = int(receipts), {e[6]: e for e in counted}
