"""Two schemas side by side, for a merge: what must agree, and the other's classes, features and values as
this schema's indices.

A merge adds another store's counts as if its stream came next (:meth:`Stats.merge
<stream_nb.stats.Stats.merge>`). Classes, features and values are matched by name, and those new here are
registered in the other's order, as a sequential run would register them. What a sequential run would
refuse is refused here, before anything is added: labels of another JSON type, a feature of another kind
or with values of another type, a feature binned with other edges.
"""

from __future__ import annotations

import typing

import numpy as np

from ...exceptions import MergeError
from ..discretiser import Discretiser
from ..values import BINNED, CAT, KIND_NAMES, VALUE_GROUPS, a_noun, json_type

if typing.TYPE_CHECKING:
    from ._schema import Schema

__all__ = ["align", "check_feature", "check_labels", "few_overflow", "index_maps", "new_entries", "turned_numeric"]


def check_labels(mine: Schema, theirs: Schema) -> None:
    """Raise :class:`~stream_nb.exceptions.MergeError` when ``theirs`` holds a label of another JSON type
    than ``mine``'s: two types would merge classes (``True == 1``) or give two classes one key."""
    label_type = mine.labels.type or theirs.labels.type
    odd = next((y for y in theirs.labels.classes if json_type(y) != label_type), None)
    if odd is not None:
        first = mine.labels.classes
        held = f"this model's labels are {label_type}s" + (f" (its first: {first[0]!r})" if first else "")
        raise MergeError(
            f"cannot merge: {held} but the other model has {a_noun(json_type(odd))} label, {odd!r}; "
            f"labels of two types would merge classes (True == 1) or give two classes one key (1 and '1')"
        )


def few_overflow(mine: Schema, theirs: Schema) -> list[tuple[int, int]]:
    """``(feature here, feature there)`` of each numeric feature both count by value (``few``) whose values
    together are more than ``few_max``: a sequential run would have turned it binned at the value that made
    them so many."""
    return [(here, there) for name, there in theirs.feature_index.items()
            if there in theirs.few and (here := mine.feature_index.get(name)) in mine.few
            and len(mine.values[here].keys() | theirs.values[there].keys()) > mine.few_max]


def turned_numeric(mine: Schema, theirs: Schema) -> list[int]:
    """``theirs``' features of integers (``from_int``) that ``mine`` has seen turn numeric: a sequential run
    would promote them too."""
    return [f for name, f in theirs.feature_index.items()
            if f in theirs.from_int and name in mine.feature_index and mine.kinds[mine.feature_index[name]] != CAT]


def check_feature(mine: Schema, theirs: Schema, name) -> None:
    """Raise :class:`~stream_nb.exceptions.MergeError` when feature ``name`` cannot be counted as one: another
    kind, categorical values of another type, or binned with other edges (unless both are still in warm-up
    with room for both buffers, which together are what a sequential run would have buffered)."""
    here, there = mine.feature_index.get(name), theirs.feature_index[name]
    if here is None:
        return
    if KIND_NAMES[mine.kinds[here]] != KIND_NAMES[theirs.kinds[there]]:
        raise MergeError(f"feature {name!r} is {KIND_NAMES[mine.kinds[here]]} here but "
                         f"{KIND_NAMES[theirs.kinds[there]]} in the other model")
    vt_here, vt_there = mine.value_types.types[here], theirs.value_types.types[there]
    if vt_here is not None and vt_there is not None and not set(VALUE_GROUPS[vt_there]) <= set(VALUE_GROUPS[vt_here]):
        raise MergeError(f"feature {name!r} is categorical with {vt_here} values here but "
                         f"{vt_there} values in the other model")
    if theirs.kinds[there] == BINNED:
        a, b = mine.disc[here], theirs.disc[there]
        both_warm = a.edges is None and b.edges is None and len(a.buffer) + len(b.buffer) < a.warmup
        if not a.same_as(b) and not both_warm and (b.edges is not None or b.buffer):
            raise MergeError(
                f"feature {name!r}: the two models discretised it with different bin edges "
                f"({None if a.edges is None else a.edges.tolist()} vs "
                f"{None if b.edges is None else b.edges.tolist()}); declare the edges with "
                f"bin_edges={{{name!r}: [...]}} in both models to merge them exactly"
            )


def new_entries(mine: Schema, theirs: Schema) -> tuple[int, int]:
    """``(values, classes)`` of ``theirs`` that ``mine`` does not hold yet (a value of a detached column
    counts for nothing)."""
    values = 0
    for col in range(1, len(theirs.value_keys)):
        f = theirs.value_feature[col]
        if f < 0:
            continue
        here = mine.feature_index.get(theirs.features[f])
        values += here is None or theirs.value_keys[col] not in (mine.values[here] or {})
    return values, sum(1 for y in theirs.labels.classes if y not in mine.labels.index)


def align(mine: Schema, theirs: Schema, class_of: typing.Callable) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Register in ``mine`` what ``theirs`` holds and ``mine`` does not, in ``theirs``' order (classes through
    ``class_of``, the store's, which checks them; a binned feature with its discretiser; a feature still in
    warm-up on both sides with the other's buffered values), and give :func:`index_maps`."""
    for y in theirs.labels.classes:
        class_of(y)
    for name, there in theirs.feature_index.items():
        here = mine.feature_index.get(name)
        if here is None:
            here = mine.add_feature(name, theirs.kinds[there], few=there in theirs.few)
            if theirs.kinds[there] == BINNED:
                mine.set_discretiser(here, Discretiser.from_state(theirs.disc[there].state()))
        elif theirs.kinds[there] == BINNED and mine.disc[here].edges is None and theirs.disc[there].edges is None:
            mine.disc[here].buffer.extend(theirs.disc[there].buffer)
    for col in range(1, len(theirs.value_keys)):
        f = theirs.value_feature[col]
        if f >= 0:  # (a column detached by a promotion is empty)
            here = mine.feature_index[theirs.features[f]]
            if theirs.value_keys[col] not in mine.values[here]:
                mine.add_value(here, theirs.value_keys[col])
    return index_maps(mine, theirs)


def index_maps(mine: Schema, theirs: Schema) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(cmap, fmap, vmap)``: each class, feature and value column of ``theirs`` as ``mine``'s index, for a
    ``mine`` that holds all of them (:func:`align`); a detached column, or a value ``mine`` no longer holds
    by value, maps to column 0 (none)."""
    cmap = np.array([mine.labels.index[y] for y in theirs.labels.classes], dtype=np.int64)
    fmap = np.array([mine.feature_index[name] for name in theirs.features], dtype=np.int64)
    vmap = np.zeros(len(theirs.value_keys), dtype=np.int64)
    for col in range(1, len(theirs.value_keys)):
        f = theirs.value_feature[col]
        if f >= 0:
            vmap[col] = mine.values[fmap[f]].get(theirs.value_keys[col], 0)
    return cmap, fmap, vmap
