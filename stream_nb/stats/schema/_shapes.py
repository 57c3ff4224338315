"""The shape of the usual event: every feature present, each value of the Python type it had last time.

River's loop hands a model one dict at a time, and most events of a stream look
alike: the same features, each of the same type, every category one the store
knows. :class:`EventShape` reads such an event in a few C-level passes (an
``itemgetter`` of the features, a ``map`` of the value dicts) where the general
encoder (:meth:`Schema.encode <stream_nb.stats.schema.Schema.encode>`) walks it feature by feature in Python. An event of
any other shape (a missing or new feature, a value of another type or never
seen, a numeric value out of range) is not read here, and goes the general way.
"""

from __future__ import annotations

import operator
import typing

import numpy as np

from ..values import CAT, EMPTY_FLOAT, EMPTY_INT, GAUSS, NUMERIC_LIMIT, Encoded

__all__ = ["EventShape", "shape_of"]

_FLOAT_TYPES = (float, int)


class EventShape(typing.NamedTuple):
    """How to read an event of one shape, valid while the schema's ``epoch`` is the one it was made at."""

    epoch: int
    n: int  # features: an event of this shape has exactly these keys
    get: typing.Callable  # the values, as a tuple in this order
    types: tuple  # the Python type of each
    cat: list  # positions of the categorical features in that order
    cat_dicts: list  # value -> column of each of them, for its type
    gauss: list  # positions of the Gaussian features
    feats: np.ndarray  # the categorical features' indices in the schema
    gslots: np.ndarray  # the Gaussian features' slots

    def values_of(self, x: dict) -> tuple | None:
        """``x``'s values in this shape's order when ``x`` has its keys and their types, else None."""
        if len(x) != self.n:
            return None
        try:
            vals = self.get(x)
        except KeyError:
            return None
        if self.n == 1:
            vals = (vals,)
        return vals if tuple(map(type, vals)) == self.types else None

    def encode(self, x: dict) -> Encoded | None:
        """``x``'s encoding for prediction (one learning takes as is), or None if ``x`` is of another shape."""
        vals = self.values_of(x)
        if vals is None:
            return None
        try:
            cols = np.fromiter(map(operator.getitem, self.cat_dicts, vals if self.gauss == [] else
                                   [vals[i] for i in self.cat]), np.int64, len(self.cat))
        except KeyError:  # a value never seen
            return None
        if not self.gauss:
            return Encoded(cols, self.feats, EMPTY_INT, EMPTY_FLOAT, False, self.epoch)
        try:
            gx = np.array([vals[i] for i in self.gauss], dtype=float)
        except OverflowError:  # an integer beyond the float range
            return None
        if not (np.abs(gx) <= NUMERIC_LIMIT).all():  # NaN (missing) or out of range: the general way says which
            return None
        return Encoded(cols, self.feats, self.gslots, gx, False, self.epoch)


def shape_of(schema, x: dict) -> EventShape | None:
    """The shape of ``x`` in ``schema`` (:class:`~stream_nb.stats.schema.Schema`), or None where the general encoder must read events like it: a feature
    the schema does not know, one counted by bins, a value of a type not yet checked for its feature."""
    lookup, names, types, cat, cat_dicts, gauss, feats, gslots = schema.lookup, [], [], [], [], [], [], []
    for name, v in x.items():
        entry = lookup.get(name)
        if entry is None:
            return None
        kind, f, _, g, _ = entry
        t = type(v)
        if kind == CAT:
            values = schema.value_types.by_python.get(t, {}).get(name)
            if values is None or t not in schema.value_types.ok[f]:
                return None
            cat.append(len(names))
            cat_dicts.append(values)
            feats.append(f)
        elif kind == GAUSS and t in _FLOAT_TYPES:
            gauss.append(len(names))
            gslots.append(g)
        else:
            return None
        names.append(name)
        types.append(t)
    if not names:
        return None
    return EventShape(schema.epoch, len(names), operator.itemgetter(*names), tuple(types), cat, cat_dicts, gauss,
                      np.array(feats, dtype=np.int64), np.array(gslots, dtype=np.int64))
