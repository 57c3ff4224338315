"""The records that cross the engine's boundary: one raw input record, one output, one dead letter.

:class:`Record` is what a :class:`~stream_nb.engine.Source` hands the engine.
For each one the engine sends exactly one record, built here and nowhere else:
an output when the event is valid, a dead letter when it is rejected, with the
input record's key. ``proba`` keys are :func:`label_key` of the labels. The
docs' *Event contract* page gives both layouts.

>>> record = Record(b'{"sky": {}}', None, "in.jsonl", {"line": 3}, 40)
>>> from stream_nb.exceptions import InvalidEventError
>>> error = InvalidEventError("feature 'sky' must be a string", reason="nested_value", field="sky")
>>> dead_letter_record(record, error, max_value_bytes=4)
{'reason': 'nested_value', 'error': "feature 'sky' must be a string", 'field': 'sky', 'source': {'line': 3}, 'size': 11, 'value': '{"sk', 'truncated': True}
"""

from __future__ import annotations

import base64
import heapq
import json
import operator
import typing
from collections.abc import Sequence
from itertools import repeat

import orjson

from ..._checks import is_integer
from ...exceptions import ConfigError, InvalidEventError

__all__ = ["DeadLetterRecord", "OUTPUT_DEFAULTS", "OutputRecord", "PositionColumns", "Record", "RecordColumns",
           "ShownProba", "dead_letter_record",
           "label_key", "output_bytes", "make_records", "output_record", "outputs_bytes", "shown_proba"]

#: The engine's settings of what an output shows (see :func:`shown_proba`).
OUTPUT_DEFAULTS: dict[str, typing.Any] = {
    # Show only the top_k most probable classes in "proba" (and the prediction's); None: every class.
    "top_k": None,
    # Leave "proba" out of the outputs.
    "no_proba": False,
}

# output_bytes' direct path: a proba of floats keyed all by strings or all by integers and booleans,
# whose keys orjson writes as label_key does (1 -> "1", True -> "true")
_FLOATS = frozenset({float}).issuperset
_STR_KEYS = frozenset({str}).issuperset
_NUMBER_KEYS = frozenset({int, bool}).issuperset
_NON_STR_KEYS = orjson.OPT_NON_STR_KEYS


class Record(typing.NamedTuple):
    """One raw event as read from a source (a named tuple: a source builds one per event, it must be cheap).

    Parameters
    ----------
    value
        The raw bytes of the event, undecoded.
    key
        The message key (Kafka) or ``None``. Outputs for this record are sent
        with the same key.
    partition
        Identifies the ordered stream the record belongs to, for example
        ``"events-2"`` for topic ``events`` partition 2, or a file path.
    position
        JSON-able description of where the record is, copied into the output
        record's ``source`` field, e.g. ``{"topic": "events", "partition": 2,
        "offset": 41}`` or ``{"file": "in.jsonl", "line": 7, "byte": 812}``.
    next_position
        Where to resume *after* this record: the Kafka offset + 1, or the byte
        offset of the next line. Committed and snapshotted.
    size
        The length in bytes of the whole raw event when ``value`` holds only
        its first bytes (a source that does not keep an overlong event in
        memory); ``None``, the default, when ``value`` is the whole event. The
        engine reports it in the event's ``oversize`` dead letter.
    """

    value: bytes
    key: bytes | None
    partition: str
    position: dict
    next_position: int
    size: int | None = None


def make_records(values: list, keys: list, partitions: list, positions: list, next_positions: list) -> list[Record]:
    """The :class:`Record`\\ s of a poll, from its columns (``size`` None): for a source that reads a poll at once.

    Each is built by ``tuple.__new__``, with no Python call per record.

    >>> make_records([b"{}"], [None], ["t-0"], [{"offset": 4}], [5])
    [Record(value=b'{}', key=None, partition='t-0', position={'offset': 4}, next_position=5, size=None)]
    """
    return list(map(tuple.__new__, repeat(Record),
                    zip(values, keys, partitions, positions, next_positions, repeat(None))))


class PositionColumns(Sequence):
    """Records' positions held as columns, each position a dict built only when asked for.

    Position ``i`` is ``{**constants, key: column[i] for each column}``, the constants' keys first. The engine
    writes a poll's ``source`` fields from the columns (:meth:`json_columns`), with no dict per record.

    >>> positions = PositionColumns({"topic": "t"}, {"partition": [0, 2], "offset": [7, 9]})
    >>> len(positions), positions[1], list(positions[:1])
    (2, {'topic': 't', 'partition': 2, 'offset': 9}, [{'topic': 't', 'partition': 0, 'offset': 7}])
    >>> positions.json_columns()
    (b'{"topic":"t","partition":%s,"offset":%s}', [[b'0', b'2'], [b'7', b'9']])
    """

    __slots__ = ("constants", "columns", "_n")

    def __init__(self, constants: dict, columns: dict[str, list]):
        if not columns:
            raise ValueError("PositionColumns needs at least one column (the constants alone have no length)")
        self.constants = constants
        self.columns = columns
        self._n = len(next(iter(columns.values())))

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i):
        if isinstance(i, slice):
            return PositionColumns(self.constants, {key: column[i] for key, column in self.columns.items()})
        position = dict(self.constants)
        for key, column in self.columns.items():
            position[key] = column[i]
        return position

    def __iter__(self):
        keys, constants = list(self.columns), self.constants
        for values in zip(*self.columns.values()):
            position = dict(constants)
            position.update(zip(keys, values))
            yield position

    def json_columns(self) -> tuple[bytes, list[list[bytes]]]:
        """The format (``%s`` for each column) and the columns' JSON that write each position as
        ``orjson.dumps`` does: a column in one ``orjson.dumps`` cut at the commas (numbers, say), one whose values
        hold commas value by value. Raises ``TypeError`` where orjson refuses a value (an integer beyond 64 bits)."""
        parts = [(orjson.dumps(key) + b":" + orjson.dumps(value)).replace(b"%", b"%%")
                 for key, value in self.constants.items()]
        json = []
        for key, column in self.columns.items():
            parts.append(orjson.dumps(key).replace(b"%", b"%%") + b":%s")
            # the column's dump cut at the commas: n parts means no value's JSON holds a comma, so each part is
            # one value's (a check of the whole dump, no look at each value's type)
            parts_of = orjson.dumps(column)[1:-1].split(b",")
            json.append(parts_of if len(parts_of) == len(column) else list(map(orjson.dumps, column)))
        return b"{" + b",".join(parts) + b"}", json


class RecordColumns(Sequence):
    """A poll's :class:`Record`\\ s held as columns (``size`` None), each record built only when asked for: what a
    source that reads a poll at once may hand the engine instead of a list, which then reads the columns.

    >>> poll = RecordColumns([b"{}", b"[]"], [None, b"k"], ["t-0", "t-0"], [{"offset": 4}, {"offset": 5}], [5, 6])
    >>> len(poll), poll[1], poll[1:] == [poll[1]], list(poll) == make_records(*poll.columns)
    (2, Record(value=b'[]', key=b'k', partition='t-0', position={'offset': 5}, next_position=6, size=None), True, True)
    """

    __slots__ = ("values", "keys", "partitions", "positions", "next_positions")

    def __init__(self, values: list, keys: list, partitions: list, positions: Sequence, next_positions: list):
        self.values, self.keys, self.partitions = values, keys, partitions
        self.positions, self.next_positions = positions, next_positions

    @property
    def columns(self) -> tuple:
        """``(values, keys, partitions, positions, next_positions)``: the fields of :class:`Record` but ``size``."""
        return self.values, self.keys, self.partitions, self.positions, self.next_positions

    def __len__(self) -> int:
        return len(self.values)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return RecordColumns(*(column[i] for column in self.columns))
        return Record(self.values[i], self.keys[i], self.partitions[i], self.positions[i], self.next_positions[i])

    def __iter__(self):
        return iter(make_records(*self.columns))

    def __eq__(self, other):
        return isinstance(other, Sequence) and len(self) == len(other) and all(map(operator.eq, self, other))

    __hash__ = None


class OutputRecord(typing.TypedDict, total=False):
    """The output of one valid event; see the module docstring (``imputed`` only with ``emit_imputed``)."""

    id: typing.Any
    prediction: typing.Any
    proba: dict[str, float]
    model: str
    learned: bool
    n_learned: int
    source: dict
    imputed: dict


class DeadLetterRecord(typing.TypedDict, total=False):
    """The dead letter of one rejected record; see the module docstring.

    Exactly one of ``value`` and ``value_b64`` is present; ``truncated`` only when the value was cut.
    """

    reason: str
    error: str
    field: str | None
    source: dict
    size: int
    value: str
    value_b64: str
    truncated: bool


def label_key(label: typing.Any) -> str:
    """The JSON object key for a class label in an output's ``proba``.

    >>> label_key("yes"), label_key(3), label_key(True), label_key(False)
    ('yes', '3', 'true', 'false')
    """
    if isinstance(label, str):
        return label
    if isinstance(label, bool):
        return "true" if label else "false"
    return str(label)


class ShownProba:
    """Which classes an output's ``proba`` shows: the ``k`` most probable and the prediction's, or none.

    Called with an event's ``proba`` and prediction, it gives the part to show,
    or ``None`` (``k`` None) for no ``proba`` at all.

    >>> ShownProba(2)({"a": 0.1, "b": 0.5, "c": 0.3, "d": 0.1}, "b")
    {'b': 0.5, 'c': 0.3}
    >>> ShownProba(1)({"a": 0.1, "b": 0.5, "c": 0.3, "d": 0.1}, "d")   # a loss matrix chose d
    {'b': 0.5, 'd': 0.1}
    >>> ShownProba(None)({"a": 1.0}, "a") is None
    True
    """

    __slots__ = ("k",)

    def __init__(self, k: int | None):
        #: Most probable classes shown; None: no ``proba``.
        self.k = k

    def __call__(self, proba: dict, prediction: typing.Any) -> dict | None:
        k = self.k
        if k is None:
            return None
        if len(proba) <= k:  # every class: only the order changes
            return dict(sorted(proba.items(), key=_PROBABILITY, reverse=True))
        top = dict(heapq.nlargest(k, proba.items(), key=_PROBABILITY))  # sorted(reverse=True)[:k]: ties stay in order
        if prediction not in top and prediction in proba:
            top[prediction] = proba[prediction]
        return top


_PROBABILITY = operator.itemgetter(1)


def shown_proba(config: typing.Mapping[str, typing.Any]) -> ShownProba | None:
    """The :class:`ShownProba` of the config's ``top_k`` and ``no_proba``; None to show every class (the default).

    >>> shown_proba({"top_k": 3, "no_proba": False}).k
    3
    >>> shown_proba({"top_k": 0, "no_proba": False})
    Traceback (most recent call last):
    ...
    stream_nb.exceptions.ConfigError: top_k must be an integer >= 1 (None: every class), got 0
    """
    top_k, off = config["top_k"], config["no_proba"]
    if top_k is not None and (not is_integer(top_k) or top_k < 1):
        raise ConfigError(f"top_k must be an integer >= 1 (None: every class), got {top_k!r}")
    if not isinstance(off, bool):
        raise ConfigError(f"no_proba must be True or False, got {off!r}")
    if off and top_k is not None:
        raise ConfigError("top_k and no_proba exclude each other: show the top_k classes' probabilities, or none")
    return ShownProba(None) if off else ShownProba(int(top_k)) if top_k is not None else None


def output_record(
    event_id: typing.Any,
    prediction: typing.Any,
    proba: dict,
    model_name: str,
    learned: bool,
    n_learned: int,
    position: dict,
    imputed: dict | None = None,
    shown: ShownProba | None = None,
) -> OutputRecord:
    """The output of one valid event (runs once per event: kept to one dict build); ``shown`` cuts its ``proba``.

    Examples
    --------
    >>> output_record(7, "yes", {"yes": 0.8, "no": 0.2}, "nb", True, 1, {"line": 1})
    {'id': 7, 'prediction': 'yes', 'proba': {'yes': 0.8, 'no': 0.2}, 'model': 'nb', 'learned': True, 'n_learned': 1, 'source': {'line': 1}}
    """
    if shown is not None:
        proba = shown(proba, prediction)
        if proba is None:
            bare: OutputRecord = {"id": event_id, "prediction": prediction, "model": model_name, "learned": learned,
                                  "n_learned": n_learned, "source": position}
            if imputed is not None:
                bare["imputed"] = imputed
            return bare
    output: OutputRecord = {
        "id": event_id,
        "prediction": prediction,
        "proba": {c if type(c) is str else label_key(c): float(p) for c, p in proba.items()},
        "model": model_name,
        "learned": learned,
        "n_learned": n_learned,
        "source": position,
    }
    if imputed is not None:
        output["imputed"] = imputed
    return output


def output_bytes(
    event_id: typing.Any,
    prediction: typing.Any,
    proba: dict,
    model_name: str,
    learned: bool,
    n_learned: int,
    position: dict,
    imputed: dict | None = None,
    shown: ShownProba | None = None,
) -> bytes:
    """The JSON bytes of :func:`output_record` (runs once per event).

    A ``proba`` of plain floats keyed all by strings or all by integers and
    booleans (every stream_nb model's) is written as it is, orjson turning the
    keys into :func:`label_key`'s text, with no second dict built; any other
    goes through :func:`output_record`. Both give the same bytes.

    >>> output_bytes(7, 1, {0: 0.25, 1: 0.75}, "nb", True, 3, {"line": 1})
    b'{"id":7,"prediction":1,"proba":{"0":0.25,"1":0.75},"model":"nb","learned":true,"n_learned":3,"source":{"line":1}}'
    """
    if shown is not None:
        proba = shown(proba, prediction)
        if proba is None:
            return _dumps(output_record(event_id, prediction, {}, model_name, learned, n_learned, position, imputed,
                                        shown))
    if imputed is None and _FLOATS(map(type, proba.values())) and (_STR_KEYS(map(type, proba))
                                                                  or _NUMBER_KEYS(map(type, proba))):
        plain = _dumps_plain(event_id, prediction, proba, model_name, learned, n_learned, position)
        if plain is not None:
            return plain
    return _dumps(output_record(event_id, prediction, proba, model_name, learned, n_learned, position, imputed))


def _dumps(output: OutputRecord) -> bytes:
    try:
        return orjson.dumps(output)
    except TypeError:  # a label or an imputed value beyond 64 bits (a model taught in Python): not for orjson
        return json.dumps(output, separators=(",", ":"), ensure_ascii=False).encode()


# where outputs_bytes cuts a poll's JSON array: between one output's "}" and the next one's '{"id":'
_BETWEEN, _CUT = b'},{"id":', b'}\n{"id":'


def outputs_bytes(outputs: list[OutputRecord]) -> list[bytes]:
    """The JSON bytes of each of a poll's :func:`output_record`\\ s, as :func:`output_bytes` gives them.

    One orjson call writes the poll as a JSON array, cut at each ``},{"id":``
    into its outputs (orjson writes no newline, so marking the cuts with one
    is safe). The cut is checked: ``},{"id":`` falls between every two outputs,
    so finding it exactly ``len(outputs) - 1`` times means it is nowhere else
    (a string holds ``\\"``, never a bare quote); otherwise, or when orjson
    refuses a value, each output is written alone.

    >>> outputs_bytes([output_record(1, "a", {"a": 1.0}, "nb", True, 1, {"line": 1}),
    ...                output_record("2", "a", {"a": 1.0}, "nb", False, 1, {"line": 2})])
    [b'{"id":1,"prediction":"a","proba":{"a":1.0},"model":"nb","learned":true,"n_learned":1,"source":{"line":1}}', b'{"id":"2","prediction":"a","proba":{"a":1.0},"model":"nb","learned":false,"n_learned":1,"source":{"line":2}}']
    """
    if not outputs:
        return []
    try:
        parts = orjson.dumps(outputs)[1:-1].replace(_BETWEEN, _CUT).split(b"\n")
    except TypeError:
        parts = ()
    return parts if len(parts) == len(outputs) else list(map(_dumps, outputs))


def dead_letter_record(record: Record, exc: InvalidEventError, max_value_bytes: int) -> DeadLetterRecord:
    """The dead letter of ``record``, rejected with ``exc``; at most ``max_value_bytes`` of it copied.

    ``size`` is the whole event's (:attr:`Record.size` when the source kept only
    a prefix), and a value shorter than it is marked ``truncated``.
    """
    raw = bytes(record.value)
    kept = raw[:max_value_bytes]
    size = len(raw) if record.size is None else record.size
    letter: DeadLetterRecord = {
        "reason": exc.reason,
        "error": str(exc),
        "field": exc.field,
        "source": record.position,
        "size": size,
    }
    try:
        letter["value"] = kept.decode("utf-8")
    except UnicodeDecodeError as err:
        if len(kept) < len(raw) and err.reason == "unexpected end of data":
            # the cut fell inside a multi-byte character of valid text
            letter["value"] = kept[: err.start].decode("utf-8", errors="replace")
        else:
            letter["value_b64"] = base64.b64encode(kept).decode("ascii")
    if len(kept) < size:
        letter["truncated"] = True
    return letter


def _dumps_plain(event_id, prediction, proba, model_name, learned, n_learned, position) -> bytes | None:
    """An output record in one orjson call, or None where its id or prediction is of a type orjson does not
    take (the general path of :func:`output_bytes` then says how it is written)."""
    try:
        return orjson.dumps({"id": event_id, "prediction": prediction, "proba": proba, "model": model_name,
                             "learned": learned, "n_learned": n_learned, "source": position}, option=_NON_STR_KEYS)
    except TypeError:
        return None
