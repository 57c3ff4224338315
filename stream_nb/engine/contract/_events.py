"""Decode and validate one raw event into ``(id, features, label)``.

An event is one JSON object, UTF-8 encoded, at most ``max_event_bytes`` long:
the label field holds the class (absent or ``null``: unlabeled), the id field
is passed through, and every other field is a feature (``null``: missing). A
rejected event raises :class:`~stream_nb.exceptions.InvalidEventError` with a
reason code. The docs' *Event contract* and *Reason codes* pages give every rule.

>>> decoder = EventDecoder()
>>> decoder.decode(b'{"id": 7, "outlook": "sunny", "temp": 21.5, "wind": null, "label": "yes"}')
Event(id=7, features={'outlook': 'sunny', 'temp': 21.5}, label='yes')
>>> decoder.decode(b'{"outlook": "rain"}').labeled
False
>>> decoder.decode(b'\\xef\\xbb\\xbf{"outlook": "rain", "temp": NaN, "label": "no"}')
Event(id=None, features={'outlook': 'rain'}, label='no')
>>> decoder.decode(b'{"outlook": {"sky": "grey"}}')
Traceback (most recent call last):
...
stream_nb.exceptions.InvalidEventError: feature 'outlook' must be a string, number, boolean or null, got an object
"""

from __future__ import annotations

import json
import math
import typing
from itertools import chain, repeat
from operator import countOf

import numpy as np
import orjson

from ..._checks import configure, is_integer
from ...exceptions import ConfigError, FeatureTypeError, InvalidEventError
from ...kernels import JSON_KIND_TYPES, JSON_LONG, compiled
from ...stats import Columns, describe_type, validate_label

__all__ = ["BOM", "DEFAULT_CONFIG", "Event", "EventDecoder", "json_objects", "oversize_error"]

#: The UTF-8 byte order mark, ignored at the start of an event.
BOM = b"\xef\xbb\xbf"
#: orjson reads JSON integers in [-2**63, 2**64) as int, the others as the nearest float.
_INT_MIN, _INT_END = -(2**63), 2**64

DEFAULT_CONFIG: dict[str, typing.Any] = {
    # Field holding the class label. Absent or null: the event is only predicted.
    "label_field": "label",
    # Field passed through to the output as "id"; None disables it.
    "id_field": "id",
    # List of feature field names to use, or None to use every other field.
    "features": None,
    # Events longer than this many bytes are rejected as "oversize".
    "max_event_bytes": 1024 * 1024,
}


class Event(typing.NamedTuple):
    """A decoded, validated event (a named tuple: built once per event, it must be cheap)."""

    id: typing.Any
    features: dict[str, str | int | float | bool]
    label: str | int | bool | None

    @property
    def labeled(self) -> bool:
        """True when the event carries a label and is therefore learned."""
        return self.label is not None


_NESTED = (dict, list)  # orjson gives exactly these types for JSON objects and arrays
_NESTED_SET = frozenset(_NESTED)
# decode_columns' whole-poll path: every parsed event an object; ids and labels strings, integers or null;
# feature values neither nested nor null
_DICT_ONLY = frozenset({dict}).issuperset
_PLAIN_FIELD = frozenset({str, int, type(None)}).issuperset
_FLAT = frozenset({dict, list, type(None)})
#: The kinds of value text (stream_nb.kernels' JSON_KIND_TYPES) of a string, an integer of 64 bits or null
_PLAIN_KINDS = sum(bit for bit, kind in JSON_KIND_TYPES if kind in (str, int, type(None)))
#: The value types of each combination of kinds of value text met in a column (JSON_LONG's looked at)
_KIND_TYPES = {mask: frozenset(kind for bit, kind in JSON_KIND_TYPES if mask & bit)
               for mask in range(1 << len(JSON_KIND_TYPES))}


def json_objects(values: list) -> list[dict] | None:
    """Each of ``values`` (raw JSON) parsed, when every one is a JSON object; None when one is not (or is
    not JSON): the caller then goes value by value, where each gets its own error.

    >>> json_objects([b'{"a": 1}', b'{}']), json_objects([b'{"a": 1}', b'[1]']), json_objects([b'{'])
    ([{'a': 1}, {}], None, None)
    """
    try:
        objs = list(map(orjson.loads, values))
    except orjson.JSONDecodeError:
        return None
    return objs if _DICT_ONLY(map(type, objs)) else None


def _flat_text(values: list) -> bool:
    """Whether the raw text of a poll of JSON objects shows that no value in them is an object, an array or
    null: one ``{`` per object (its own), no ``[``, no ``null``; a few scans of the poll's bytes instead of a
    look at the type of every value. False when it cannot tell (a ``{`` in a string, say).

    >>> _flat_text([b'{"a": 1, "b": "x"}', b'{"a": 2.5}']), _flat_text([b'{"a": {"b": 1}}', b'{}'])
    (True, False)
    >>> _flat_text([b'{"a": [1]}']), _flat_text([b'{"a": null}']), _flat_text([b'{"a": "{"}'])
    (False, False, False)
    """
    try:
        text = b"".join(values)
    except TypeError:  # a value that is not bytes-like
        return False
    return text.count(b"{") == len(values) and b"[" not in text and b"null" not in text


def _value_types(column: list) -> frozenset:
    """The types of a non-empty column's values: one count of the first value's type (no set built) when,
    as in most columns, it is the only one.

    >>> sorted(t.__name__ for t in _value_types([1.5, 2.0])), sorted(t.__name__ for t in _value_types([1, "a", 2]))
    (['float'], ['int', 'str'])
    """
    first = type(column[0])
    if countOf(map(type, column), first) == len(column):
        return frozenset((first,))
    return frozenset(map(type, column))


def oversize_error(size: int, max_bytes: int) -> InvalidEventError:
    """The ``oversize`` rejection of an event of ``size`` bytes."""
    return InvalidEventError(f"event is {size} bytes, more than max_event_bytes={max_bytes}", reason="oversize")


def _constant(name: str) -> float | None:
    """``NaN`` is missing, like ``null``; ``Infinity`` and ``-Infinity`` are the floats."""
    return None if name == "NaN" else float(name)


def _integer(text: str) -> int | float:
    """A JSON integer as orjson reads it: exact in [-2**63, 2**64), the nearest float outside."""
    value = int(text)
    return value if _INT_MIN <= value < _INT_END else float(text)


def _loads_lenient(value: bytes, error: orjson.JSONDecodeError) -> typing.Any:
    """Read what orjson refused when it is a byte order mark away, or holds ``NaN``/``Infinity``.

    Only called once orjson has failed, so the common case never pays for it.
    Raises ``invalid_utf8`` or ``invalid_json`` (with orjson's message) otherwise.
    """
    raw = bytes(value)
    if raw.startswith(BOM):
        raw = raw[len(BOM):]
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            error = exc  # its position is the one in the text after the mark
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as utf8_exc:
        raise InvalidEventError(
            f"event is not valid UTF-8: {utf8_exc.reason} at byte {utf8_exc.start}", reason="invalid_utf8"
        ) from None
    try:
        obj = json.loads(text, parse_constant=_constant, parse_int=_integer)
        # the standard library also takes what orjson rightly refuses (lone surrogates): keep orjson's verdict
        orjson.dumps(obj)
    except (ValueError, TypeError, RecursionError):  # json.JSONDecodeError is a ValueError
        raise InvalidEventError(f"event is not valid JSON: {error}", reason="invalid_json") from None
    return obj


def _check_finite(obj: dict, id_field: str | None, label_field: str, features: tuple[str, ...] | None) -> None:
    """Reject an infinite id or feature value (the label check rejects an infinite label)."""
    for name, value in obj.items():
        if type(value) is not float or math.isfinite(value) or name == label_field:
            continue
        if name == id_field:
            raise InvalidEventError(f"id {name!r} must be a string, a finite number, a boolean or null, got {value}",
                                    reason="bad_id", field=name)
        if features is None or name in features:
            raise FeatureTypeError(f"feature {name!r}: expected a finite number, got {value}", field=name)


def _wide_integer(value: bytes, field: str) -> int | None:
    """The exact integer the raw event holds in ``field`` when orjson turned it into a float, else None."""
    try:
        obj = json.loads(bytes(value).decode("utf-8").removeprefix("\ufeff"), parse_constant=_constant)
    except (ValueError, RecursionError):  # read once already; only the standard library's limits can fail here
        return None
    exact = obj.get(field) if isinstance(obj, dict) else None
    return exact if type(exact) is int else None


class EventDecoder:
    """Turn raw event bytes into an :class:`Event`, or raise ``InvalidEventError``.

    Parameters
    ----------
    config
        Keys of :data:`DEFAULT_CONFIG`; unknown keys raise ``ConfigError``.

    >>> EventDecoder({"features": ["a"], "label_field": "y"}).decode(b'{"a": 1, "b": [1], "y": false}')
    Event(id=None, features={'a': 1}, label=False)
    >>> EventDecoder({"labelfield": "y"})
    Traceback (most recent call last):
    ...
    stream_nb.exceptions.ConfigError: unknown event setting 'labelfield'; expected one of: features, id_field, label_field, max_event_bytes
    """

    def __init__(self, config: dict[str, typing.Any] | None = None):
        self.config = configure(DEFAULT_CONFIG, config or {}, "event setting")
        label_field = self.config["label_field"]
        id_field = self.config["id_field"]
        features = self.config["features"]
        max_bytes = self.config["max_event_bytes"]
        if not isinstance(label_field, str) or not label_field:
            raise ConfigError(f"label_field must be a non-empty string, got {label_field!r}")
        if id_field is not None and (not isinstance(id_field, str) or not id_field):
            raise ConfigError(f"id_field must be a non-empty string or None, got {id_field!r}")
        if id_field == label_field:
            raise ConfigError(f"id_field and label_field must differ, both are {label_field!r}")
        if features is not None:
            if isinstance(features, str) or not all(isinstance(f, str) and f for f in features):
                raise ConfigError(
                    f"features must be a list of non-empty field names or None, got {features!r}"
                )
            features = tuple(dict.fromkeys(features))
            for reserved, what in ((label_field, "label_field"), (id_field, "id_field")):
                if reserved in features:
                    raise ConfigError(
                        f"features must not contain {reserved!r}: it is the {what}, not a feature"
                    )
        if not is_integer(max_bytes) or max_bytes < 1:
            raise ConfigError(f"max_event_bytes must be a positive integer, got {max_bytes!r}")
        self._label_field = label_field
        self._id_field = id_field
        self._features = features
        self._max_bytes = max_bytes

    def decode(self, value: bytes) -> Event:
        """Decode and validate one raw event."""
        if len(value) > self._max_bytes:
            raise oversize_error(len(value), self._max_bytes)
        try:
            obj = orjson.loads(value)
        except orjson.JSONDecodeError as exc:
            obj = _loads_lenient(value, exc)  # a byte order mark, NaN, Infinity; or the rejection
            if isinstance(obj, dict):
                _check_finite(obj, self._id_field, self._label_field, self._features)
        if not isinstance(obj, dict):
            raise InvalidEventError(
                f"event must be a JSON object, got {describe_type(obj)}", reason="not_an_object"
            )

        event_id = None
        if self._id_field is not None:
            event_id = obj.get(self._id_field)
            if type(event_id) in _NESTED:
                raise InvalidEventError(
                    f"id {self._id_field!r} must be a string, number, boolean or null, "
                    f"got {describe_type(event_id)}",
                    reason="bad_id",
                    field=self._id_field,
                )
            if type(event_id) is float and not _INT_MIN < event_id < _INT_END:  # maybe a rounded integer
                exact = _wide_integer(value, self._id_field)
                if exact is not None:  # the output would carry a rounded id: refuse rather than alter it
                    raise InvalidEventError(
                        f"id {self._id_field!r} is the integer {exact}, outside the 64-bit range the outputs "
                        f"can carry exactly; send it as a string",
                        reason="bad_id",
                        field=self._id_field,
                    )

        label = obj.get(self._label_field)
        if label is not None and type(label) is not str:
            label = validate_label(label, self._label_field)

        if self._features is None:
            obj.pop(self._label_field, None)
            if self._id_field is not None:
                obj.pop(self._id_field, None)
            features = {name: v for name, v in obj.items() if v is not None}
        else:
            features = {name: obj[name] for name in self._features if obj.get(name) is not None}
        if not _NESTED_SET.isdisjoint(map(type, features.values())):  # one C-level pass; then find it
            name, feature_value = next((k, v) for k, v in features.items() if type(v) in _NESTED)
            raise InvalidEventError(
                f"feature {name!r} must be a string, number, boolean or null, "
                f"got {describe_type(feature_value)}",
                reason="nested_value",
                field=name,
            )
        return Event(id=event_id, features=features, label=label)

    def decode_many(self, values: list) -> list:
        """:meth:`decode` of each raw event of a poll: its :class:`Event`, or the ``InvalidEventError`` it raised.

        The same results as :meth:`decode` one at a time (see :meth:`decode_columns`).

        >>> EventDecoder().decode_many([b'{"id": 1, "a": "x", "label": 2}', b'[1]'])
        [Event(id=1, features={'a': 'x'}, label=2), InvalidEventError('event must be a JSON object, got an array')]
        """
        ids, xs, ys, bad = self.decode_columns(values)
        valid = iter(zip(ids, xs, ys))
        return [bad[i] if i in bad else Event(*next(valid)) for i in range(len(values))]

    def decode_columns(self, values: list, columns: bool = False) -> tuple[list, typing.Sequence, list, dict]:
        """:meth:`decode` of a poll, as columns: ``(ids, features, labels, bad)``.

        ``ids``, ``features`` and ``labels`` hold the valid events' fields in
        input order; ``bad`` maps the index of each rejected event to its
        ``InvalidEventError``. The results are :meth:`decode`'s. A poll of
        common events (JSON objects within ``max_event_bytes``, a string or
        integer id and label, flat features, no ``features`` list) is
        taken whole, each step one call over the poll (each event's parsed
        object, less the id and label, is its features); any other poll event by
        event, the common ones here and the rest through :meth:`decode`.

        With ``columns``, a common poll whose events all hold the same fields in the same order gives its
        features as one :class:`~stream_nb.stats.Columns`, a list of each field's values (None: missing),
        built by one transposition of the parsed objects with no step in Python per event or value; the
        events it stands for are :meth:`decode`'s features. Any other poll gives a list of dicts.

        >>> EventDecoder().decode_columns([b'{"id": 1, "a": "x", "label": 2}', b'[1]'])
        ([1], [{'a': 'x'}], [2], {1: InvalidEventError('event must be a JSON object, got an array')})
        >>> ids, xs, ys, bad = EventDecoder().decode_columns(
        ...     [b'{"id": 1, "a": "x", "t": 0.5, "label": 2}', b'{"id": 2, "a": "y", "t": null, "label": null}'],
        ...     columns=True)
        >>> ids, xs.columns, list(xs), ys, bad
        ([1, 2], {'a': ['x', 'y'], 't': [0.5, None]}, [{'a': 'x', 't': 0.5}, {'a': 'y'}], [2, None], {})
        """
        if self._features is None and values:
            taken = self._decode_whole(values, columns)
            if taken is not None:
                return taken
        return self._decode_each(values)

    def _decode_whole(self, values: list, columns: bool = False) -> tuple[list, typing.Sequence, list, dict] | None:
        """:meth:`decode_columns` of a poll of common events only, with no loop in Python; None otherwise."""
        if max(map(len, values)) > self._max_bytes:
            return None
        if columns:
            taken = self._scanned(values)
            if taken is not None:
                return taken
        objs = json_objects(values)
        if objs is None:
            return None
        n = len(objs)
        if columns:
            fields = list(objs[0])
            if countOf(map(list, objs), fields) == n:  # every event holds the same fields, in the same order
                taken = self._transposed(objs, fields, n)
                if taken is not None:
                    return taken
        labels = list(map(dict.pop, objs, repeat(self._label_field, n), repeat(None, n)))
        if self._id_field is None:
            ids = [None] * n
        else:
            ids = list(map(dict.pop, objs, repeat(self._id_field, n), repeat(None, n)))
        if (_PLAIN_FIELD(map(type, labels)) and _PLAIN_FIELD(map(type, ids))
                and (_flat_text(values) or _FLAT.isdisjoint(map(type, chain.from_iterable(map(dict.values, objs)))))):
            return ids, objs, labels, {}
        return None  # the parsed objects lost their id and label: the loop parses again

    def _scanned(self, values: list) -> tuple[list, Columns, list, dict] | None:
        """:meth:`decode_columns` with ``columns`` of a poll of flat objects whose keys are the same bytes in
        the same order, with no object parsed but the first: a compiled pass over the poll's bytes
        (``stream_nb.kernels``' ``flat_columns``) writes its values as one JSON array per key, and one
        ``orjson.loads`` reads them, each value as orjson reads it in its object. None (nothing taken) when the
        pass refuses the poll or orjson a value, or a label or id is no string, integer or null."""
        try:
            first = orjson.loads(values[0])
            text = b"".join(values)
        except (orjson.JSONDecodeError, TypeError):
            return None
        if type(first) is not dict or not first:
            return None
        fields, n = list(first), len(values)
        starts = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, values), dtype=np.int64, count=n), out=starts[1:])
        if starts[-1] != len(text):  # a value whose length is not its bytes' (a view of wider items)
            return None
        F = len(fields)
        spans, kinds = np.empty((2, F, n), dtype=np.int64), np.zeros(F, dtype=np.int64)
        out = np.empty(len(text) + F * n + 2 * F + 2, dtype=np.uint8)
        size = compiled().flat_columns(np.frombuffer(text, dtype=np.uint8), starts, spans, kinds, out)
        if size < 0:
            return None
        try:
            table = dict(zip(fields, orjson.loads(memoryview(out)[:size])))
        except orjson.JSONDecodeError:
            return None
        masks = dict(zip(fields, kinds.tolist()))
        labels = table.pop(self._label_field, None) or [None] * n
        ids = [None] * n if self._id_field is None else table.pop(self._id_field, None) or [None] * n
        for name, column in ((self._label_field, labels), (self._id_field, ids)):
            if masks.get(name, 0) & ~_PLAIN_KINDS and not _PLAIN_FIELD(map(type, column)):
                return None
        types = {name: _value_types(column) if masks[name] & JSON_LONG else _KIND_TYPES[masks[name]]
                 for name, column in table.items()}
        return ids, Columns(table, n, types), labels, {}

    def _transposed(self, objs: list[dict], fields: list, n: int) -> tuple[list, Columns, list, dict] | None:
        """:meth:`decode_columns` with ``columns`` of parsed objects that all hold ``fields``, in that order;
        None (the objects untouched) when a label or id is no string, integer or null, or a feature holds an
        object or an array."""
        table = dict(zip(fields, map(list, zip(*map(dict.values, objs)))))
        labels = table.pop(self._label_field, None) or [None] * n
        ids = [None] * n if self._id_field is None else table.pop(self._id_field, None) or [None] * n
        if not (_PLAIN_FIELD(map(type, labels)) and _PLAIN_FIELD(map(type, ids))):
            return None
        types = dict(zip(table, map(_value_types, table.values())))
        if not all(map(_NESTED_SET.isdisjoint, types.values())):  # a nested value: event by event, named
            return None
        return ids, Columns(table, n, types), labels, {}

    def _decode_each(self, values: list) -> tuple[list, list, list, dict]:
        loads, decode_error, decode = orjson.loads, orjson.JSONDecodeError, self.decode
        max_bytes, label_field, id_field = self._max_bytes, self._label_field, self._id_field
        fast = self._features is None
        isdisjoint = _NESTED_SET.isdisjoint
        ids: list = []
        xs: list = []
        ys: list = []
        bad: dict = {}
        for i, value in enumerate(values):
            if fast and len(value) <= max_bytes:
                try:
                    obj = loads(value)
                except decode_error:
                    obj = None
                if type(obj) is dict:
                    label = obj.get(label_field)
                    event_id = obj.get(id_field) if id_field is not None else None
                    kind, id_kind = type(label), type(event_id)
                    if ((kind is str or kind is int or label is None)
                            and (id_kind is str or id_kind is int or event_id is None)):
                        obj.pop(label_field, None)
                        if id_field is not None:
                            obj.pop(id_field, None)
                        values_ = obj.values()
                        if None not in values_ and isdisjoint(map(type, values_)):
                            ids.append(event_id)
                            xs.append(obj)
                            ys.append(label)
                            continue
            try:
                event = decode(value)
            except InvalidEventError as exc:
                bad[i] = exc
            else:
                ids.append(event.id)
                xs.append(event.features)
                ys.append(event.label)
        return ids, xs, ys, bad
