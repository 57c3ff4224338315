"""Labels as the join (:mod:`._join`) reads them: a poll's ids, a read's feedback records, a label given as text.

The join keys an id by its JSON text (``1`` and ``"1"`` are two ids). A poll
of unlabeled events with ids is keyed in one pass; a read of feedback records
that are all plain JSON objects with a string or integer id and a string,
integer or boolean label is parsed in one pass over the read, any other read
record by record, where each bad one gets its own error. Both give the same
results.

>>> [k for k in event_keys([1, "1", None, 2], [None, None, None, "p"])]
[b'1', b'"1"', None, None]
>>> read = [Record(b'{"id": 7, "label": "p"}', None, "fb", 0, 1), Record(b'{"id": "7", "label": 1}', None, "fb", 1, 2)]
>>> [p[1:] for p in read_labels(read, "id", "label", None)]
[(b'7', 'p', None), (b'"7"', 1, None)]
>>> [p[1:] for p in read_labels(read + [Record(b'{"label": "q"}', None, "fb", 2, 3)], "id", "label", None)]
[(b'7', 'p', None), (b'"7"', 1, None), (InvalidEventError("feedback record has no 'id' (--id-field)"),)]
"""

from __future__ import annotations

import typing
from itertools import repeat

import numpy as np
import orjson

from ...exceptions import ConfigError, InvalidEventError
from ...stats import describe_type, validate_label
from ..contract import json_objects
from ..contract import Record

__all__ = ["ABSENT", "delay_counts", "early_note", "early_notes", "event_keys", "parse_label_value", "parse_on_expire",
           "read_labels", "read_note", "read_whole", "same_label"]

#: A time field a record or an event does not have (a ``null`` one is there, and refused).
ABSENT = object()

_PLAIN_ID = frozenset({str, int}).issuperset
_NEWLINE = b"\n"
_PLAIN_LABEL = frozenset({str, int, bool}).issuperset  # what validate_label returns unchanged


def event_keys(ids: list, ys: list) -> list:
    """The key of each event of a poll that waits for its label (an id, no label), None for the others."""
    if ys.count(None) == len(ys) and None not in ids:  # the usual poll when labels come later
        return list(map(orjson.dumps, ids))
    return [orjson.dumps(i) if y is None and i is not None else None for i, y in zip(ids, ys)]


def read_labels(records: list[Record], id_field: str, label_field: str,
                time_of: typing.Callable[[dict], float] | None) -> list[tuple]:
    """Each feedback record of a read as ``(record, key, label, time)``, or ``(record, error)`` when it is
    no label record. ``time_of(obj)`` gives a record's time (it may raise ``InvalidEventError``); None:
    the records are timed by the caller's clock, given as the time of the whole read (``time_of`` is then
    not called, and the time is None here)."""
    if time_of is None:
        whole = read_whole(records, id_field, label_field)
        if whole is not None:
            keys, ys = whole
            return list(zip(records, keys, ys, repeat(None)))
    return [_read_one(record, id_field, label_field, time_of) for record in records]


def read_whole(records: list[Record], id_field: str, label_field: str,
               time_field: str | None = None) -> tuple[list, list] | tuple[list, list, list] | None:
    """``(keys, labels)`` of a read of common records only (:func:`read_labels` in one pass); None when one
    is not (read one by one). With ``time_field``, ``(keys, labels, times)``: each record's time field as
    it came (:data:`ABSENT` where it has none), for the caller to check.

    >>> read = [Record(b'{"id": 7, "label": "p", "ts": 4.5}', None, "fb", 0, 1), Record(b'{"id": 8, "label": 1}', None, "fb", 1, 2)]
    >>> keys, ys, ts = read_whole(read, "id", "label", "ts")
    >>> keys, ys, ts[0], ts[1] is ABSENT
    ([b'7', b'8'], ['p', 1], 4.5, True)
    """
    objs = json_objects([r.value for r in records])
    if objs is None:
        return None
    ids = list(map(dict.get, objs, repeat(id_field)))
    ys = list(map(dict.get, objs, repeat(label_field)))
    if not (_PLAIN_ID(map(type, ids)) and _PLAIN_LABEL(map(type, ys))):
        return None
    if time_field is None:
        return list(map(orjson.dumps, ids)), ys
    return list(map(orjson.dumps, ids)), ys, list(map(dict.get, objs, repeat(time_field), repeat(ABSENT)))


def _read_one(record: Record, id_field: str, label_field: str, time_of) -> tuple:
    try:
        obj = orjson.loads(record.value)
        if not isinstance(obj, dict):
            raise InvalidEventError("feedback record must be a JSON object", reason="not_an_object")
        event_id = obj.get(id_field)
        if event_id is None:
            raise InvalidEventError(f"feedback record has no {id_field!r} (--id-field)",
                                    reason="missing_id", field=id_field)
        if isinstance(event_id, (dict, list)):  # no event has such an id (bad_id): never joined
            raise InvalidEventError(f"feedback record: id {id_field!r} (--id-field) must be a string, a number or a "
                                    f"boolean, as an event's id, got {describe_type(event_id)}",
                                    reason="bad_id", field=id_field)
        y = obj.get(label_field)
        if y is None:
            raise InvalidEventError(f"feedback record has no {label_field!r} (--label-field)",
                                    reason="missing_label", field=label_field)
        y = validate_label(y, label_field)
        t = time_of(obj) if time_of is not None else None
    except orjson.JSONDecodeError as exc:
        return record, InvalidEventError(f"feedback record is not JSON: {exc}", reason="invalid_json")
    except InvalidEventError as exc:
        return record, exc
    return record, orjson.dumps(event_id), y, t


def early_note(record: Record, y) -> bytes:
    """What the store keeps with a label that came before its event (:func:`read_note` reads it back): the
    label and its record (for the dead-letter sink, or to hand it over), as bytes, no Python object kept.

    >>> record = Record(b'{"id": 7, "label": "p"}', bytes([107, 255]), "fb-0", {"offset": 3}, 4)
    >>> read_note(early_note(record, "p")) == ("p", record)
    True
    """
    return early_notes([record], [y])[0]


def early_notes(records: list[Record], ys: list) -> list[bytes]:
    """:func:`early_note` of each record of ``records`` with its label of ``ys``, a field at a time.

    >>> records = [Record(b'{"id": 7}', None, "fb", {"line": 1}, 9), Record(b'{"id": 8}', b"k", "fb", {"line": 2}, 18)]
    >>> [read_note(note) for note in early_notes(records, ["p", 1])] == [("p", records[0]), (1, records[1])]
    True
    """
    values, keys, partitions, positions, nexts, sizes = zip(*records)
    if keys.count(None) != len(keys):
        keys = [None if key is None else bytes(key).decode("latin-1") for key in keys]
    heads = map(orjson.dumps, zip(ys, positions, partitions, nexts, sizes, keys))
    return list(map(_NEWLINE.join, zip(heads, values)))  # orjson writes no raw newline


def read_note(note: bytes) -> tuple:
    """``(label, record)`` of an :func:`early_note`."""
    head, _, value = note.partition(b"\n")
    y, position, partition, next_position, size, key = orjson.loads(head)
    return y, Record(value, None if key is None else key.encode("latin-1"), partition, position, next_position, size)


def delay_counts(delays: np.ndarray, bounds: tuple) -> np.ndarray:
    """How many of ``delays`` fall in each bucket: the first of ``bounds`` (ascending, the last inf) that is
    at least the delay."""
    return np.bincount(np.searchsorted(np.asarray(bounds), delays, side="left"), minlength=len(bounds))


def parse_on_expire(text: str):
    """``"drop"`` or ``("label", VALUE)`` from ``--on-expire``'s text (VALUE a JSON number, boolean or
    string; anything else is the string itself).

    >>> parse_on_expire("drop"), parse_on_expire("label:0"), parse_on_expire("label:no")
    ('drop', ('label', 0), ('label', 'no'))
    """
    if text == "drop":
        return "drop"
    if isinstance(text, str) and text.startswith("label:") and len(text) > 6:
        return ("label", parse_label_value(text[6:]))
    raise ConfigError(f"--on-expire: expected drop or label:VALUE, got {text!r}")


def parse_label_value(text: str):
    """A label given on the command line: a JSON number, boolean or string, else the text itself."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return text
    return value if isinstance(value, (str, int, float, bool)) else text


def same_label(a, b) -> bool:
    """Whether ``a`` and ``b`` are one label (``True`` is not ``1``, ``1`` is ``1.0``).

    >>> same_label(1, 1.0), same_label(True, 1), same_label("p", "p")
    (True, False, True)
    """
    return a == b and isinstance(a, bool) == isinstance(b, bool)
