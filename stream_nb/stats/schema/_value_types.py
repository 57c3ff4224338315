"""The type of each categorical feature's values, fixed by its first value and checked on every other.

A categorical feature's first value fixes the type of its values (a key of
:data:`~stream_nb.stats.values.VALUE_GROUPS`: strings, numbers or booleans; a
feature declared categorical takes strings and numbers alike unless its first
value is a boolean). A value of another type raises
:class:`~stream_nb.exceptions.FeatureTypeError`: across types Python would merge
``True`` and ``1`` silently, and JSON would write ``1`` and ``"1"`` as the same key.

:class:`ValueTypes` keeps this per feature, with the Python types already
checked, and the fast lookup the encoder tries first: Python type -> feature
name -> the feature's ``{value: column}`` (which the store passes it), so that
a value of another type misses.
"""

from __future__ import annotations

from ...exceptions import FeatureTypeError
from ..values import PLAIN_TYPES, VALUE_GROUPS, a_noun, json_type, short_repr

__all__ = ["ValueTypes"]


class ValueTypes:
    """The value types of a store's categorical features, by feature position.

    Examples
    --------
    >>> vt = ValueTypes()
    >>> vt.add_feature()
    >>> vt.set(0, "colour", ValueTypes.first("red", declared=None), {"red": 1})
    >>> vt.types, vt.by_python[str]["colour"]
    (['string'], {'red': 1})
    >>> vt.check(0, "colour", 3)
    Traceback (most recent call last):
    ...
    stream_nb.exceptions.FeatureTypeError: feature 'colour' is categorical with string values (the type of its first value): expected a string, got a number 3; declare it categorical (types={'colour': 'categorical'}, --types colour=categorical) to take both
    """

    def __init__(self):
        #: per feature: the type of its values (a key of VALUE_GROUPS); None for a numeric feature or
        #: one without a value yet
        self.types: list[str | None] = []
        self.ok: list[set] = []  # per feature: Python types checked to be of its type
        # Python type -> name -> value dict, categorical features only, each under the plain Python
        # types of its values (PLAIN_TYPES): the fast path of encoding, which a value of another type misses
        self.by_python: dict = {}

    def add_feature(self) -> None:
        """A new feature, without a value type yet."""
        self.types.append(None)
        self.ok.append(set())

    def set(self, f: int, name, vt: str | None, values: dict | None) -> None:
        """Fix the type of feature ``f`` (``name``, whose ``{value: column}`` is ``values``) to ``vt``;
        None: none (e.g. it turned numeric)."""
        for table in self.by_python.values():
            table.pop(name, None)
        self.types[f] = vt
        self.ok[f] = set(PLAIN_TYPES[vt]) if vt is not None else set()
        if vt is not None:
            for t in PLAIN_TYPES[vt]:
                self.by_python.setdefault(t, {})[name] = values

    @staticmethod
    def first(v, declared: str | None) -> str:
        """The value type a categorical feature takes from its first value ``v`` (``declared``: its type in
        ``types``, if any)."""
        t = json_type(v)
        if declared == "categorical" and t in ("string", "number"):
            return "string or number"
        return t

    def check(self, f: int, name, v, numeric: bool = False, declared: str | None = None) -> None:
        """Raise FeatureTypeError unless ``v`` (a categorical value, not missing) is of feature ``f``'s value
        type (``numeric``, ``declared``: see :meth:`error`)."""
        vt = self.types[f]
        if vt is None:
            return
        if json_type(v) in VALUE_GROUPS[vt]:
            self.ok[f].add(type(v))
            return
        raise self.error(name, vt, v, "", numeric, declared)

    @staticmethod
    def error(name, vt: str, v, where: str = "", numeric: bool = False, declared: str | None = None) -> FeatureTypeError:
        """The error for categorical value ``v`` of feature ``name``, whose values are of type ``vt``
        (``numeric``: a numeric feature counted by value for now; ``declared``: its type in ``types``)."""
        t = json_type(v)
        if numeric:
            return FeatureTypeError(f"feature {name!r} is numeric: expected a number, got {type(v).__name__} "
                                    f"{short_repr(v)}{where}", field=name)
        origin = "declared categorical in types" if declared == "categorical" else "the type of its first value"
        hint = ""
        if vt in ("string", "number") and t in ("string", "number"):
            hint = f"; declare it categorical (types={{{name!r}: 'categorical'}}, --types {name}=categorical) to take both"
        return FeatureTypeError(
            f"feature {name!r} is categorical with {vt} values ({origin}): expected {a_noun(vt)}, "
            f"got {a_noun(t)} {short_repr(v)}{where}{hint}",
            field=name,
        )
