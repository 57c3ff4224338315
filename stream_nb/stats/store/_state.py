"""The store as plain data: ``(arrays, meta)``, numpy arrays and JSON-able metadata; no pickle.

The codec of a :class:`~stream_nb.stats.Stats`: :func:`write_state` reads a store through its
public names and its parts' methods (the count tables', the selections'); :func:`read_state` fills a
new store, made with the keywords :func:`store_options` reads, through the methods of its schema and
of its parts and the store's room (:meth:`Stats.reserve <stream_nb.stats.Stats.reserve>`).
:func:`check_state` says, before anything is allocated, whether a state is one :func:`write_state`
could have written. :meth:`Stats.state` and :meth:`Stats.from_state` delegate here and are exact
inverses; the snapshot format (:mod:`stream_nb.snapshots`) writes and reads them.
"""

from __future__ import annotations

import math

import numpy as np

from ..._checks import is_integer
from ...exceptions import ConfigError
from ..budget import DEFAULT_MEMORY_BUDGET
from ..selection import restore_selection
from ..selection import restore_tuple_selection
from ..discretiser import Discretiser
from ..tables import BASE_TABLES
from ..values import BINNED, CAT, GAUSS, NUMERIC_LIMIT, VALUE_GROUPS, check_types, hashable, is_nan, json_type

__all__ = ["counts_of", "write_state", "store_options", "read_state", "check_state", "MAX_COUNT"]


def counts_of(s) -> dict:
    """The counts of store ``s`` as nested dicts keyed by names (for people and tests)."""
    out = {
        "class_count": {y: float(s.class_count[c]) for c, y in enumerate(s.classes)},
        "value_count": {},
        "gaussian": {},
    }
    for f, name in enumerate(s.features):
        if s.kinds[f] == GAUSS:
            g = s.gslot[f]
            out["gaussian"][name] = {
                y: (float(s.g_n[c, g]), float(s.g_mean[c, g]), float(s.g_m2[c, g]))
                for c, y in enumerate(s.classes)
            }
        else:
            out["value_count"][name] = {
                v: {y: float(s.value_count[c, col]) for c, y in enumerate(s.classes)}
                for v, col in s.values[f].items()
            }
    return out


def write_state(s) -> tuple[dict, dict]:
    """``(arrays, meta)`` of store ``s``: numpy arrays and JSON-able metadata, the whole store."""
    C, V, F, G = len(s.classes), len(s.value_keys), len(s.features), s.n_gauss
    counts = s.tables.state((C, V, F), s.pairs, s.tuples)
    arrays = {k: counts.pop(k) for k in BASE_TABLES}  # the class, value and feature counts first, as always
    arrays |= {"g_n": s.g_n[:C, :G].copy(), "g_mean": s.g_mean[:C, :G].copy(), "g_m2": s.g_m2[:C, :G].copy()}
    arrays |= counts
    meta = {
        "pairs": s.pairs,
        "observed": s.wants_observed,
        "tuples": s.tuples,
        "max_table_cells": s.max_table_cells,
        "memory_budget": s.memory_budget,
        "numeric": s.numeric,
        "types": dict(s.types),
        "bins": s.bins,
        "warmup": s.warmup,
        "bin_edges": {k: list(map(float, v)) for k, v in s.bin_edges.items()},
        "classes": list(s.classes),
        "label_type": s.label_type,
        "features": [
            {
                "name": name,
                "kind": ["categorical", "gaussian", "binned"][s.kinds[f]],
                "value_type": s.vtypes[f],
                "values": list(s.values[f]) if s.values[f] is not None else None,
                "discretiser": s.disc[f].state() if s.disc[f] is not None else None,
            }
            for f, name in enumerate(s.features)
        ],
        # [feature, value] per column; [-1, its old value] for the columns a promotion detached (a receipt
        # of before the promotion names them, see _promoted.py; [-1, null] in states of older versions)
        "columns": [
            [int(s.value_feature[col]), s.value_keys[col]] for col in range(1, V)
        ],
        "from_int": sorted(s.from_int),
    }
    if s.few:  # numeric features counted by value for now (a state without them: none)
        meta["few"] = sorted(s.few)
    if s.few_max != s.bins:  # a fine layer's: its model's bins; 0 when forgetting (none: the bins)
        meta["few_max"] = s.few_max
    if s.gauss_feature != sorted(s.gauss_feature):  # a promotion made a Gaussian slot after others:
        meta["gauss_features"] = list(s.gauss_feature)  # the feature of each, as g_* are written
    if s.promoted:  # how each promotion moved its counts (_promoted.py)
        meta["promoted"] = [[f, rule] for f, rule in sorted(s.promoted.items())]
    # the candidate pairs (PairSelection.state), the rule first and pair_blocks after it, as always written
    selection_arrays, selection_meta = s.selection.state(F)
    if "pair_rule" in selection_meta:
        meta["pair_rule"] = selection_meta.pop("pair_rule")
    if s.pair_blocks_ok:  # its model reads pair blocks (they hold its pairs past the budget)
        meta["pair_blocks"] = True
    arrays.update(selection_arrays)
    meta.update(selection_meta)
    tuple_arrays, tuple_meta = s.tuple_selection.state(F)  # the candidate parents of the t-way tables
    arrays.update(tuple_arrays)
    meta.update(tuple_meta)
    return arrays, meta


def store_options(meta: dict) -> dict:
    """The keywords of the store the metadata ``meta`` (checked: :func:`check_state`) describes."""
    return dict(pairs=meta["pairs"], numeric=meta["numeric"], types=meta["types"],
                bins=meta["bins"], warmup=meta["warmup"], bin_edges=meta["bin_edges"],
                tuples=meta.get("tuples", 0), max_table_cells=meta.get("max_table_cells"),
                observed=meta.get("observed", False), memory_budget=meta.get("memory_budget", DEFAULT_MEMORY_BUDGET))


def read_state(s, arrays: dict, meta: dict) -> None:
    """Fill ``s``, a new store made with :func:`store_options` of ``meta``, with the state ``(arrays, meta)``
    (checked: :func:`check_state`): its schema, counts and selections, as :func:`write_state` read them."""
    # counts (and M2) a rounding left just below zero read as zero: the logs of a prediction stay finite
    arrays = {k: np.maximum(a, 0) if k != "g_mean" and not k.endswith("_cells") and a.size and a.min() < 0
              else a for k, a in arrays.items()}
    # pair blocks where its model reads them, unless the pairs were written selected (their selection is
    # restored on sparse tables; the model's choice is restored after them)
    s.pair_blocks_ok = meta.get("pair_blocks") is True and "pair_allowed" not in arrays
    kinds = {"categorical": CAT, "gaussian": GAUSS, "binned": BINNED}
    # room for everything at once (the capacities adding one at a time reaches), not a growth per doubling
    s.reserve(c=len(meta["classes"]), v=len(meta["columns"]), f=len(meta["features"]),
              g=sum(feat["kind"] == "gaussian" for feat in meta["features"]))
    # the classes, features and values into its schema (a two-layer store reads its fine layer after, from a
    # state of its own)
    for y in meta["classes"]:
        s.schema.add_class(y)
    for feat in meta["features"]:
        f = s.schema.add_feature(feat["name"], kinds[feat["kind"]])
        if feat["discretiser"] is not None:
            s.schema.set_discretiser(f, Discretiser.from_state(feat["discretiser"]))
    for f, v in meta["columns"]:
        if f >= 0:
            s.schema.add_value(f, v)
        else:  # a detached column: kept so that the later ones keep their place
            s.schema.add_column(v)
    s.schema.restore(meta.get("from_int", []), meta.get("few", []), meta.get("few_max", meta["bins"]),
                     {f: rule for f, rule in meta.get("promoted", [])})
    # the types of the labels and of each categorical feature's values; a state written before
    # they were kept has them from its first class and each feature's first value (schema.add_class, add_value)
    if meta.get("label_type") is not None:
        if not isinstance(meta["label_type"], str):
            raise ValueError(f"label_type: expected a JSON type name, got {meta['label_type']!r}")
        s.labels.set_type(meta["label_type"])
    for f, feat in enumerate(meta["features"]):
        vt = feat.get("value_type")
        if vt is not None and s.kinds[f] == CAT:
            if vt not in VALUE_GROUPS:
                raise ValueError(f"feature {feat['name']!r}: unknown value type {vt!r}")
            s.schema.set_vtype(f, vt)
    C, V, F, G = len(s.classes), len(s.value_keys), len(s.features), s.n_gauss
    if "obs_value_count" in arrays:
        s.keep_observed()
    # the slots are made again in feature order; the arrays are in the order they were made in
    slots = np.array([s.gslot[f] for f in meta["gauss_features"]]) if "gauss_features" in meta else slice(0, G)
    s.moments.load(C, slots, arrays["g_n"], arrays["g_mean"], arrays["g_m2"])
    if s.pairs and any(p + "pair_count_cells" in arrays for p in s.tables.sets()):
        s.sync_pairs()  # pair blocks take the columns, features and classes of the state before its cells
    s.tables.load(arrays, (C, V, F), s.pairs, s.tuples)
    restore_selection(s, arrays, meta)
    restore_tuple_selection(s, arrays, meta)
    s.pair_blocks_ok = meta.get("pair_blocks") is True


#: Largest count a state may hold: far beyond any stream's, and small enough that no sum, square or
#: product of counts a model computes overflows a float.
MAX_COUNT = 1e100
#: The largest sum of squared deviations (``g_m2``) values within ±NUMERIC_LIMIT can reach in MAX_COUNT events.
MOMENT_LIMIT = (2 * NUMERIC_LIMIT) ** 2 * MAX_COUNT


def _kind(value) -> str:
    r = " ".join(repr(value).split())  # one line, whatever the value (a numpy array's repr has several)
    return f"{type(value).__name__} {r if len(r) <= 40 else r[:37] + '...'}"


def _check_int(where: str, value, low: int = 0) -> None:
    if not is_integer(value) or value < low:
        raise ValueError(f"{where}: expected an integer >= {low}, got {_kind(value)}")


def _check_hashable(where: str, value) -> None:
    if value is None or is_nan(value) or not hashable(value):
        raise ValueError(f"{where}: expected a str, int, bool or float (not null or NaN), got {_kind(value)}")


def _check_edges(where: str, edges) -> None:
    try:
        e = np.asarray(edges, dtype=float) if isinstance(edges, (list, tuple, np.ndarray)) else None
    except (TypeError, ValueError):
        e = None
    if e is None or e.ndim != 1 or np.isnan(e).any() or (np.diff(e) < 0).any():
        raise ValueError(f"{where}: expected a list of numbers in increasing order, got {_kind(edges)}")


def _check_discretiser(where: str, d) -> None:
    if not isinstance(d, dict) or set(d) != {"bins", "warmup", "edges", "buffer"}:
        raise ValueError(f"{where}: expected an object with bins, warmup, edges and buffer, got {_kind(d)}")
    _check_int(f"{where}.bins", d["bins"], 1)
    _check_int(f"{where}.warmup", d["warmup"], 1)
    if d["edges"] is not None:
        _check_edges(f"{where}.edges", d["edges"])
    buffer = d["buffer"]
    if not isinstance(buffer, list) or not all(
            type(v) in (int, float) and math.isfinite(v) for v in buffer) or (
            d["edges"] is None and len(buffer) >= d["warmup"]):
        raise ValueError(f"{where}.buffer: expected a list of fewer than warmup={d['warmup']} finite numbers, "
                         f"got {_kind(buffer)}")


def check_state(arrays: dict, meta: dict) -> None:
    """Check that ``(arrays, meta)`` is a state :meth:`Stats.state` could have written; ValueError if not.

    The metadata's every field must have its type and range, and every array
    exactly the shape the metadata gives it (no broadcasting: a count array of
    one class does not fill three), a numeric dtype, and counts that are finite,
    >= 0 (up to rounding) and at most :data:`MAX_COUNT`. A state that passes
    builds a store that learns and predicts like any other.
    """
    if not isinstance(meta, dict):
        raise ValueError(f"stats: expected an object, got {_kind(meta)}")
    if not isinstance(arrays, dict):
        raise ValueError(f"arrays: expected a dict of arrays, got {_kind(arrays)}")
    required = {"pairs", "numeric", "types", "bins", "warmup", "bin_edges", "classes", "features", "columns"}
    missing = sorted(required - set(meta))
    if missing:
        raise ValueError(f"stats: missing {', '.join(missing)}")
    for name in ("pairs", "observed"):
        if not isinstance(meta.get(name, False), bool):
            raise ValueError(f"stats.{name}: expected true or false, got {_kind(meta[name])}")
    numeric = meta["numeric"]
    if numeric not in ("gaussian", "bins"):
        raise ValueError(f"stats.numeric: expected 'gaussian' or 'bins', got {_kind(numeric)}")
    tuples = meta.get("tuples", 0)
    _check_int("stats.tuples", tuples)
    if tuples in (1, 2) or (tuples and not meta["pairs"]):
        raise ValueError(f"stats.tuples: expected 0, or 3 or more with pairs, got {tuples}")
    if meta.get("max_table_cells") is not None:
        _check_int("stats.max_table_cells", meta["max_table_cells"], 1)
    if meta.get("memory_budget") is not None:
        _check_int("stats.memory_budget", meta["memory_budget"], 0)
    try:
        check_types(meta["types"])
    except ConfigError as exc:
        raise ValueError(f"stats.{exc}") from None
    _check_int("stats.bins", meta["bins"], 1)
    _check_int("stats.few_max", meta.get("few_max", meta["bins"]), 0)
    _check_int("stats.warmup", meta["warmup"], 1)
    edges = meta["bin_edges"]
    if not isinstance(edges, dict):
        raise ValueError(f"stats.bin_edges: expected an object, got {_kind(edges)}")
    for name, e in edges.items():
        _check_edges(f"stats.bin_edges[{name!r}]", e)

    classes = meta["classes"]
    if not isinstance(classes, list):
        raise ValueError(f"stats.classes: expected a list, got {_kind(classes)}")
    for i, y in enumerate(classes):
        _check_hashable(f"stats.classes[{i}]", y)
    if len(set(classes)) != len(classes):
        raise ValueError("stats.classes: a class appears twice (or two classes are equal in Python, like 1 and True)")
    label_type = meta.get("label_type")
    if label_type is not None and (not isinstance(label_type, str) or any(json_type(y) != label_type for y in classes)):
        raise ValueError(f"stats.label_type: expected the JSON type of every class, got {_kind(label_type)} for "
                         f"classes {_kind(classes)}")

    features = meta["features"]
    if not isinstance(features, list):
        raise ValueError(f"stats.features: expected a list, got {_kind(features)}")
    kinds, names = [], []
    allowed = {"categorical", "gaussian" if numeric == "gaussian" else "binned"}
    edges_of: list = []  # a binned feature's edges (None while warming up)
    for i, feat in enumerate(features):
        where = f"stats.features[{i}]"
        if not isinstance(feat, dict) or not {"name", "kind", "discretiser"} <= set(feat):
            raise ValueError(f"{where}: expected an object with name, kind and discretiser, got {_kind(feat)}")
        _check_hashable(f"{where}.name", feat["name"])
        if feat["kind"] not in allowed:
            raise ValueError(f"{where}.kind: expected one of {', '.join(sorted(allowed))} (numeric={numeric!r}), "
                             f"got {_kind(feat['kind'])}")
        if feat["kind"] == "binned":
            _check_discretiser(f"{where}.discretiser", feat["discretiser"])
        elif feat["discretiser"] is not None:
            raise ValueError(f"{where}.discretiser: a {feat['kind']} feature has none, got {_kind(feat['discretiser'])}")
        kinds.append(feat["kind"])
        names.append(feat["name"])
        edges_of.append(feat["discretiser"]["edges"] if feat["kind"] == "binned" else None)
    if len(set(names)) != len(names):
        raise ValueError("stats.features: a feature name appears twice")

    columns = meta["columns"]
    if not isinstance(columns, list):
        raise ValueError(f"stats.columns: expected a list, got {_kind(columns)}")
    seen: set = set()
    for i, column in enumerate(columns):
        where = f"stats.columns[{i}]"
        if not isinstance(column, list) or len(column) != 2:
            raise ValueError(f"{where}: expected a [feature, value] pair, got {_kind(column)}")
        f, v = column
        if not is_integer(f) or not -1 <= f < len(features):
            raise ValueError(f"{where}: feature index {_kind(f)} is not -1 or one of the {len(features)} features")
        if f == -1:
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
                raise ValueError(f"{where}: a detached column has null or the number it held, got {_kind(v)}")
            continue
        if kinds[f] == "gaussian":
            raise ValueError(f"{where}: feature {names[f]!r} is gaussian and has no value columns")
        _check_hashable(f"{where}", v)
        if kinds[f] == "binned" and (not is_integer(v) or v < 0):
            raise ValueError(f"{where}: a bin of binned feature {names[f]!r} is an integer >= 0, got {_kind(v)}")
        if kinds[f] == "binned" and edges_of[f] is not None and v > len(edges_of[f]):
            raise ValueError(f"{where}: binned feature {names[f]!r} has {len(edges_of[f]) + 1} bins "
                             f"({len(edges_of[f])} edges), got bin {v}")
        if (f, v) in seen:
            raise ValueError(f"{where}: value {v!r} of feature {names[f]!r} appears twice")
        seen.add((f, v))
    from_int = meta.get("from_int", [])
    if not isinstance(from_int, list) or not all(
            isinstance(f, int) and not isinstance(f, bool) and 0 <= f < len(features) and kinds[f] == "categorical"
            for f in from_int):
        raise ValueError(f"stats.from_int: expected a list of categorical feature indices, got {_kind(from_int)}")
    few = meta.get("few", [])
    if not isinstance(few, list) or not all(is_integer(f) and f in from_int for f in few):
        raise ValueError(f"stats.few: expected a list of indices of features counted by value (each in from_int), "
                         f"got {_kind(few)}")
    order = meta.get("gauss_features")
    if order is not None and (not isinstance(order, list) or not all(is_integer(f) for f in order)
                              or sorted(order) != [f for f, k in enumerate(kinds) if k == "gaussian"]):
        raise ValueError("stats.gauss_features: expected the Gaussian features' indices, each once, got "
                         f"{_kind(order)}")
    promoted = meta.get("promoted", [])
    if not isinstance(promoted, list) or not all(
            isinstance(p, list) and len(p) == 2 and is_integer(p[0]) and 0 <= p[0] < len(features)
            and kinds[p[0]] != "categorical" and p[1] in ("bins", "drop", "gauss") for p in promoted):
        raise ValueError("stats.promoted: expected a list of [numeric feature index, \"bins\", \"drop\" or \"gauss\"], "
                         f"got {_kind(promoted)}")

    C, V, F = len(classes), len(columns) + 1, len(features)
    G = kinds.count("gaussian")
    shapes = {"class_count": (C,), "value_count": (C, V), "feat_count": (C, F),
              "g_n": (C, G), "g_mean": (C, G), "g_m2": (C, G)}
    twinned = {"value_count": (C, V), "feat_count": (C, F)}
    cells = {}  # a table written sparse: (n, axes) cell indices within these bounds, and n counts
    if meta["pairs"] and "pair_count_cells" in arrays:
        cells.update(pair_count=(C, V, V), pair_feat=(C, V, F))
        for k in ("pair_count", "pair_feat"):
            twinned.update({k + "_cells": (None, 3), k + "_counts": (None,)})
    elif meta["pairs"]:
        twinned.update(pair_count=(C, V, V), pair_feat=(C, V, F))
    if tuples and "tuple_count_cells" in arrays:
        cells.update(tuple_count=(C,) + (V,) * tuples, tuple_feat=(C,) + (V,) * (tuples - 1) + (F,))
        for k in cells:
            twinned.update({k + "_cells": (None, tuples + 1), k + "_counts": (None,)})
    elif tuples:
        twinned.update(tuple_count=(C,) + (V,) * tuples, tuple_feat=(C,) + (V,) * (tuples - 1) + (F,))
    shapes.update(twinned)
    if "obs_value_count" in arrays:  # the observed-only twin: all of it or none
        shapes.update({"obs_" + k: v for k, v in twinned.items()})
    if meta["pairs"] and ("pair_allowed" in arrays or "pair_edges" in arrays):  # candidate pairs (_candidates.py)
        shapes.update(pair_allowed=(F,), pair_edges=(F, F))
    if tuples and "tuple_cand" in arrays:  # candidate parents (_tuple_candidates.py)
        shapes.update(tuple_cand=(F, F), tuple_score=(F, F))
    unexpected = sorted(map(str, set(arrays) - set(shapes)))
    if unexpected:
        raise ValueError(f"unexpected arrays {', '.join(unexpected)} (expected {', '.join(shapes)})")
    scale = None
    for name, shape in shapes.items():
        if name not in arrays:
            raise ValueError(f"array {name!r} is missing")
        a = arrays[name]
        if not isinstance(a, np.ndarray) or a.dtype.kind not in "biuf":
            raise ValueError(f"array {name!r}: expected a numeric array, got {_kind(a)}")
        if name.endswith("_cells") or name.endswith("_counts"):
            shape = _check_cells(name, a, arrays, cells[name.removeprefix("obs_").rsplit("_", 1)[0]])
        if a.shape != shape:
            raise ValueError(f"array {name!r} has shape {list(a.shape)}; the metadata ({C} classes, {V} value "
                             f"columns, {F} features, {G} Gaussian) gives it {list(shape)}")
        if name in ("g_mean", "g_m2"):  # values within ±NUMERIC_LIMIT and counts within MAX_COUNT bound them
            bound = NUMERIC_LIMIT if name == "g_mean" else MOMENT_LIMIT
            if a.size and not (np.isfinite(a).all() and float(np.abs(a).max()) <= bound):
                raise ValueError(f"array {name!r}: Gaussian moments must be finite and of magnitude at most "
                                 f"{bound:g}")
            continue
        if scale is None:
            scale = 1e-6 * max(1.0, float(np.abs(arrays["class_count"]).sum()))
        if a.size and not (np.isfinite(a).all() and float(a.min()) >= -scale and float(a.max()) <= MAX_COUNT):
            raise ValueError(f"array {name!r}: counts must be finite, >= 0 and at most {MAX_COUNT:g}")


def _check_cells(name: str, a: np.ndarray, arrays: dict, bounds: tuple) -> tuple:
    """The shape array ``name`` of a sparse table must have (cells within ``bounds``, one
    row per count of its ``_counts`` twin); ValueError when they are out of bounds."""
    base = name.rsplit("_", 1)[0]
    n = len(arrays[base + "_counts"]) if isinstance(arrays.get(base + "_counts"), np.ndarray) else -1
    if name.endswith("_cells"):
        if a.dtype.kind not in "iu":
            raise ValueError(f"array {name!r}: expected integer cell indices, got {a.dtype}")
        if a.ndim == 2 and a.shape == (n, len(bounds)) and a.dtype.kind in "iu" and n and (
                (a < 0).any() or (a >= np.array(bounds)).any()):
            raise ValueError(f"array {name!r}: cell indices must lie within {list(bounds)}")
        return (n, len(bounds))
    return (n,)
