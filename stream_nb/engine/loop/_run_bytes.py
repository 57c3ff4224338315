"""A run's output records written as JSON bytes column by column, with no dict per event.

:func:`~stream_nb.engine.loop._poll.poll_outputs` hands a run of events here when
nothing but the sink needs its outputs (no joiner reads their predictions). Each
column becomes JSON in one or two C calls: the probabilities of the whole run
in one ``orjson.dumps`` of its array, cut at the commas (floats hold none);
the positions in one ``orjson.dumps`` of the run's list, cut at ``},{`` (checked
as :func:`~stream_nb.engine.contract._records.outputs_bytes` checks its cut), or, held as
:class:`~stream_nb.engine.contract._records.PositionColumns`, written by the format from their columns; the ids
in one call too, cut at the commas (checked: n parts, else one ``orjson.dumps`` each); each class's JSON once; the ``learned`` flag in the
format when the run's events share it. One ``bytes.__mod__`` per event then joins them in the order of
:func:`~stream_nb.engine.contract._records.output_record`'s keys. orjson writes every value, so the bytes are
those of ``orjson.dumps`` of the output's dict (``tests/test_poll_paths.py`` compares them on every run).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import orjson

from ..contract import PositionColumns, label_key

__all__ = ["run_bytes"]

_BOOLEANS = (b"false", b"true")
_DICTS = frozenset({dict}).issuperset
_NUMPY = orjson.OPT_SERIALIZE_NUMPY


def run_bytes(ids: list, classes: list, decided: np.ndarray, proba: np.ndarray, model_name: str,
              learned: list[bool], n_learned: list[int], positions: Sequence) -> list[bytes] | None:
    """The JSON bytes of each event's output in a run; None when orjson refuses a value (an integer beyond
    64 bits, a string with a lone surrogate): the caller then writes the outputs as it does one at a time.

    ``decided`` holds each event's predicted class (an index into ``classes``), ``proba`` (events x
    classes) its probabilities; the other lists hold one item per event.

    >>> run_bytes([7, "b"], ["no", "yes"], np.array([1, 0]), np.array([[0.25, 0.75], [0.5, 0.5]]), "nb",
    ...           [True, False], [3, 3], [{"line": 1}, {"line": 2}])
    [b'{"id":7,"prediction":"yes","proba":{"no":0.25,"yes":0.75},"model":"nb","learned":true,"n_learned":3,"source":{"line":1}}', b'{"id":"b","prediction":"no","proba":{"no":0.5,"yes":0.5},"model":"nb","learned":false,"n_learned":3,"source":{"line":2}}']
    """
    n, c = proba.shape
    if n and type(n_learned[0]) is not int:  # one type for the run (a numpy array's tolist()); %d writes ints
        return None
    try:
        # the ids' dump cut at the commas: n parts means no id's JSON holds a comma, so each part is one id's
        id_json = orjson.dumps(ids)[1:-1].split(b",")
        if len(id_json) != n:
            id_json = list(map(orjson.dumps, ids))
        class_json = [orjson.dumps(label) for label in classes]
        key_json = [orjson.dumps(label_key(label)) for label in classes]
        model_json = orjson.dumps(model_name)
        # the array's floats written by orjson straight from its buffer: the text of their Python floats
        flat = orjson.dumps(np.ravel(proba).astype(np.float64, copy=False), option=_NUMPY)[1:-1].split(b",") \
            if n * c else []
        source, wrap = _positions_json(positions)
    except TypeError:  # orjson.JSONEncodeError
        return None
    proba_fmt = b",".join(key.replace(b"%", b"%%") + b":%s" for key in key_json)
    # a run whose events were all learned (or none was) writes the flag in the format, not once per event
    same = bool(n) and learned.count(learned[0]) == n
    fmt = (b'{"id":%s,"prediction":%s,"proba":{' + proba_fmt + b'},"model":' + model_json.replace(b"%", b"%%")
           + b',"learned":' + (_BOOLEANS[learned[0]] if same else b"%s") + b',"n_learned":%d,"source":' + wrap
           + b"}")
    columns = [flat[k::c] for k in range(c)]
    predictions = np.array(class_json, dtype=object)[decided].tolist()
    flags = [] if same else [map(_BOOLEANS.__getitem__, learned)]
    return list(map(fmt.__mod__, zip(id_json, predictions, *columns, *flags, n_learned, *source)))


def _positions_json(positions: Sequence) -> tuple[list[list[bytes]], bytes]:
    """The columns of the positions' JSON, and the format that writes them: a
    :class:`~stream_nb.engine.contract._records.PositionColumns`' own (its columns' JSON, no dict per position);
    the insides of all-dict positions cut from one ``orjson.dumps`` of the list (``{%s}``); else each position's
    own dump (``%s``)."""
    if type(positions) is PositionColumns:
        fmt, columns = positions.json_columns()
        return columns, fmt
    if positions and _DICTS(map(type, positions)):
        # dicts only: the n - 1 cuts between them are "},{", so n parts means "},{" is nowhere else
        parts = orjson.dumps(positions)[2:-2].split(b"},{")
        if len(parts) == len(positions):
            return [parts], b"{%s}"
    return [list(map(orjson.dumps, positions))], b"%s"
