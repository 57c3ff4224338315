"""What a value may be: the store's kinds of feature, one event's encoding, and the checks on values.

A categorical value is a ``str``, ``int`` or ``bool`` (numpy's scalars too, and a
float, counted as a category when the feature was declared categorical); a numeric
value is a real number of magnitude at most :data:`NUMERIC_LIMIT` (1e100: a Gaussian feature keeps
sums of squares). ``None``, NaN and an absent key are missing. A
value of another type raises :class:`~stream_nb.exceptions.FeatureTypeError`
naming the feature, what was expected and what was received.
"""

from __future__ import annotations

import collections.abc
import math
import numbers
import typing

import numpy as np

from ...exceptions import ConfigError, EventTypeError, FeatureTypeError

__all__ = [
    "BINNED", "CAT", "EMPTY_FLOAT", "EMPTY_INT", "GAUSS", "KIND_NAMES", "NONE_TYPE", "NUMERIC_LIMIT", "PLAIN_TYPES",
    "PROMOTE", "TWINNED", "VALUE_GROUPS", "Encoded", "a_noun", "categorical_value", "check_event", "check_types",
    "describe_type", "hashable", "is_nan", "json_type", "number_column", "numeric_value", "short_repr",
]

#: the count arrays that EM adds expected counts to, and that ``observed=True`` keeps twice
TWINNED = ("value_count", "feat_count", "pair_count", "pair_feat", "tuple_count", "tuple_feat")

CAT, GAUSS, BINNED = 0, 1, 2
PROMOTE = 3  # a learning step: a categorical feature turns numeric
KIND_NAMES = {CAT: "categorical", GAUSS: "numeric", BINNED: "numeric"}
EMPTY_INT = np.empty(0, dtype=np.int64)
EMPTY_FLOAT = np.empty(0, dtype=float)

_JSON_TYPES = {str: "string", bool: "boolean", int: "number", float: "number"}
#: the JSON types a categorical feature of each value type takes ("string or number": declared categorical)
VALUE_GROUPS = {
    "string": ("string",),
    "number": ("number",),
    "boolean": ("boolean",),
    "string or number": ("string", "number"),
}
#: the Python types whose values the fast lookups of each value type may take as they are
PLAIN_TYPES = {"string": (str,), "number": (int, float), "boolean": (bool,), "string or number": (str, int, float)}
NONE_TYPE = type(None)
#: The largest magnitude of a numeric value. A Gaussian feature keeps, per class, the sum of its squared
#: deviations from the mean: with values within ±1e100 and at most MAX_COUNT (1e100, see ``_state``)
#: events, that sum is at most 1e100 * (2e100)² = 4e300, so no moment, its update or its log-density
#: overflows a float (1.8e308). A value whose square is no float (beyond 1.34e154) is far past it.
NUMERIC_LIMIT = 1e100


def json_type(v) -> str:
    """The JSON type a label or a value stands for: ``"string"``, ``"number"`` or ``"boolean"``
    (numpy scalars and subclasses included); the name of its Python type for anything else.

    Python holds ``True == 1`` and ``1 == 1.0``: values of one JSON type never collide with
    values of another only because the model never lets two types meet (see :class:`~stream_nb.stats.Stats`).

    >>> json_type("1"), json_type(1), json_type(1.5), json_type(True), json_type(np.int64(3)), json_type((1,))
    ('string', 'number', 'number', 'boolean', 'number', 'tuple')
    """
    t = _JSON_TYPES.get(type(v))
    if t is not None:
        return t
    if isinstance(v, (bool, np.bool_)):
        return "boolean"
    if isinstance(v, str):
        return "string"
    if isinstance(v, numbers.Number):
        return "number"
    return type(v).__name__


def a_noun(noun: str) -> str:
    """``noun`` with its indefinite article: ``a_noun("string") == "a string"``, ``a_noun("integer") == "an integer"``."""
    return ("an " if noun[:1] in "aeiou" else "a ") + noun


class Encoded(typing.NamedTuple):
    """One event as indices into the store."""

    cols: np.ndarray  # value column of each observed discrete feature (0: a value never seen)
    feats: np.ndarray  # the feature of each of those columns
    gslots: np.ndarray  # Gaussian slot of each observed numeric feature
    gx: np.ndarray  # its value
    unseen: bool = False  # some value was never seen (column 0)
    #: the store's epoch when this prediction encoding was made, if learning the event would need
    #: nothing new (no new feature or value): it is then the learning encoding too (-1: it is not)
    epoch: int = -1


def describe_type(value) -> str:
    """How a value is named in error messages: by its JSON name (``null``, ``true``, ``false``, "a number",
    "a string", "an object", "an array"), else by its Python type.

    >>> describe_type({}), describe_type(None), describe_type(True), describe_type(1.5), describe_type(b"x")
    ('an object', 'null', 'true', 'a number', 'bytes')
    """
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (int, float, np.integer, np.floating)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return type(value).__name__


def check_event(x) -> None:
    """Raise :class:`~stream_nb.exceptions.EventTypeError` unless ``x`` is an event: a dict (any mapping) of
    feature name -> value, as river's ``learn_one(x, y)`` takes.

    >>> check_event({"sky": "sun"})
    >>> check_event(["sun", 3])
    Traceback (most recent call last):
    ...
    stream_nb.exceptions.EventTypeError: x: expected a dict of feature name -> value, got list ['sun', 3]
    """
    if type(x) is not dict and not isinstance(x, collections.abc.Mapping):
        got = "None" if x is None else f"{type(x).__name__} {short_repr(x)}"
        raise EventTypeError(f"x: expected a dict of feature name -> value, got {got}")


def is_nan(v) -> bool:
    return isinstance(v, (float, np.floating)) and v != v


def categorical_value(name, v):
    """A usable category, as a plain Python value, or None when missing."""
    t = type(v)
    if t is str or t is int or t is bool:
        return v
    if v is None:
        return None
    if t is float or isinstance(v, np.floating):
        if v != v:
            return None
        if math.isinf(v):
            raise FeatureTypeError(
                f"feature {name!r}: expected a category (str, int, bool) or a finite number, got {v!r}",
                field=name,
            )
        return float(v)
    if isinstance(v, (np.integer, np.bool_, np.str_)):
        return v.item()
    if isinstance(v, (str, int)):  # subclasses (e.g. enums over str)
        return v
    raise FeatureTypeError(
        f"feature {name!r}: expected a categorical value (str, int or bool), "
        f"got {type(v).__name__} {short_repr(v)}",
        field=name,
    )


def numeric_value(name, v):
    """A finite float of magnitude at most :data:`NUMERIC_LIMIT`, or None when missing.

    >>> numeric_value("t", 3), numeric_value("t", float("nan"))
    (3.0, None)
    >>> numeric_value("t", 1e200)
    Traceback (most recent call last):
    ...
    stream_nb.exceptions.FeatureTypeError: feature 't': expected a number of magnitude at most 1e+100, got 1e+200
    """
    t = type(v)
    if t is float:
        if v != v:
            return None
        if not -NUMERIC_LIMIT <= v <= NUMERIC_LIMIT:
            raise _out_of_range(name, v)
        return v
    if v is None:
        return None
    if t is int or (isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))):
        try:
            f = float(v)
        except OverflowError:  # an integer beyond the float range
            raise _out_of_range(name, v) from None
        if f != f:
            return None
        if not -NUMERIC_LIMIT <= f <= NUMERIC_LIMIT:
            raise _out_of_range(name, v)
        return f
    raise FeatureTypeError(
        f"feature {name!r} is numeric: expected a number, got {type(v).__name__} {short_repr(v)}",
        field=name,
    )


def _out_of_range(name, v) -> FeatureTypeError:
    """The rejection of numeric value ``v`` of feature ``name``: infinite, or beyond :data:`NUMERIC_LIMIT`."""
    infinite = isinstance(v, float) and math.isinf(v)
    what = "finite number" if infinite else f"number of magnitude at most {NUMERIC_LIMIT:g}"
    return FeatureTypeError(f"feature {name!r}: expected a {what}, got {short_repr(v)}", field=name)


_FLOATS_OR_NONE = frozenset({float, NONE_TYPE}).issuperset


def number_column(vals: list, types: frozenset | None = None) -> np.ndarray:
    """Floats of a feature's values across events: NaN where missing, inf where not a plain finite number
    of magnitude at most :data:`NUMERIC_LIMIT` (:func:`numeric_value` names what is wrong with it).
    ``types``, when given, holds the type of every value (their maker has looked already).

    >>> number_column([1.5, None, 1e200, 2]).tolist()
    [1.5, nan, inf, 2.0]
    >>> number_column([1.5, None, -1e200]).tolist()
    [1.5, nan, inf]
    """
    if _FLOATS_OR_NONE(types) if types is not None else _FLOATS_OR_NONE(map(type, vals)):
        col = np.array(vals, dtype=float)  # None: NaN (missing)
        return np.where(np.abs(col) > NUMERIC_LIMIT, np.inf, col)
    col = np.empty(len(vals))
    for i, v in enumerate(vals):
        t = type(v)
        if t is float:
            col[i] = v if -NUMERIC_LIMIT <= v <= NUMERIC_LIMIT or v != v else np.inf
        elif v is None:
            col[i] = np.nan
        elif t is int and -NUMERIC_LIMIT <= v <= NUMERIC_LIMIT:
            col[i] = v
        else:
            col[i] = np.inf
    return col


def hashable(v) -> bool:
    try:
        hash(v)
    except TypeError:
        return False
    return True


def short_repr(v) -> str:
    r = repr(v)
    return r if len(r) <= 60 else r[:57] + "..."


def check_types(types) -> dict:
    if types is None:
        return {}
    if not isinstance(types, dict):
        raise ConfigError(f"types: expected a dict of feature -> 'categorical' | 'numeric', got {type(types).__name__}")
    for k, v in types.items():
        if v not in ("categorical", "numeric"):
            raise ConfigError(f"types[{k!r}]: expected 'categorical' or 'numeric', got {v!r}")
    return dict(types)
