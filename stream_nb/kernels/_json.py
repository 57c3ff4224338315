"""A poll of flat JSON objects that all hold the same keys in the same order, rewritten as one JSON array per
key (:meth:`EventDecoder.decode_columns <stream_nb.engine.contract.EventDecoder.decode_columns>`): one pass
finds each value's text, a second writes the values key by key, so that one ``orjson.loads`` of the result
gives each field's column with no dict per event built and taken apart again.

The pass checks the objects' structure (JSON's whitespace, braces, colons, commas, and each key's text the
same bytes as the first object's) and the extent of each value: a string (copied with its escapes), a
number (the characters a JSON number is made of) or a lowercase word (``true``, ``false``, ``null``).
It does not check a value's text: the values are copied as they are, and ``orjson.loads`` of the columns
reads (or refuses) each one as it would in the object. Anything else (a nested value, a key that differs
or holds an escape, a byte order mark, ``NaN``) stops the pass: the caller then parses the objects one by one.
"""

from __future__ import annotations

import numpy as np

__all__ = ["KIND_TYPES", "LONG", "flat_columns", "warm"]

#: The bits of a column's ``kinds``: the kinds of value text met in it.
STRING, INTEGER, FLOAT, BOOLEAN, NULL, LONG = 1, 2, 4, 8, 16, 32
#: The type orjson gives a value of each kind (a :data:`LONG` integer's is an int or a float: looked at).
KIND_TYPES = ((STRING, str), (INTEGER, int), (FLOAT, float), (BOOLEAN, bool), (NULL, type(None)))
#: An integer's text this long or shorter (sign included) is within 64 bits: orjson reads it as an int.
SHORT_INTEGER = 18


#: Per byte, what it is in a number's text: :data:`INTEGER` a digit, :data:`FLOAT` one of ``. e E + -``, 0 none
#: (a table: one load where five comparisons were)
_NUMBER = np.zeros(256, dtype=np.int64)
_NUMBER[48:58] = INTEGER
_NUMBER[[46, 101, 69, 43, 45]] = FLOAT


def _space(c) -> bool:
    return c == 32 or c == 10 or c == 13 or c == 9


INLINE = ("_space",)


def flat_columns(buf, starts, spans, kinds, out) -> int:
    """Write into ``out`` the JSON array of the columns of the objects ``buf[starts[e]:starts[e + 1]]``
    (``[[v, v, ...], [v, ...], ...]``, one array per key, in the keys' order); return its length in bytes,
    or -1 when an object is not one this pass takes (see the module notes).

    ``spans`` (2, keys, objects) receives where each value's text starts and ends; ``kinds`` (keys, zeroed)
    the bits of the kinds of value text of each key (:data:`STRING`, ...). ``out`` must hold
    ``len(buf) + keys * objects + 2 * keys + 2`` bytes.
    """
    n = starts.shape[0] - 1
    F = spans.shape[1]
    key_start = np.empty(F, np.int64)
    key_end = np.empty(F, np.int64)
    for e in range(n):
        i = starts[e]
        end = starts[e + 1]
        while i < end and _space(buf[i]):
            i += 1
        if i >= end or buf[i] != 123:  # {
            return -1
        i += 1
        f = 0
        while True:
            while i < end and _space(buf[i]):
                i += 1
            if i >= end or buf[i] != 34 or f >= F:  # a key, and no more keys than the first object's
                return -1
            k = i
            if e == 0:
                i += 1
                while i < end and buf[i] != 34:
                    if buf[i] == 92 or buf[i] < 32:  # an escape (or a control character): not compared as bytes
                        return -1
                    i += 1
                if i >= end:
                    return -1
                i += 1
                key_start[f] = k
                key_end[f] = i
            else:  # the first object's key, byte for byte (its quotes included)
                m = key_end[f] - key_start[f]
                if k + m > end:
                    return -1
                s = key_start[f]
                for j in range(m):
                    if buf[k + j] != buf[s + j]:
                        return -1
                i = k + m
            while i < end and _space(buf[i]):
                i += 1
            if i >= end or buf[i] != 58:  # :
                return -1
            i += 1
            while i < end and _space(buf[i]):
                i += 1
            if i >= end:
                return -1
            c = buf[i]
            v = i
            if c == 34:  # a string, to its closing quote
                i += 1
                while i < end and buf[i] != 34:
                    if buf[i] < 32:
                        return -1
                    if buf[i] == 92:
                        i += 1
                    i += 1
                if i >= end:
                    return -1
                i += 1
                kind = STRING
            elif c == 45 or 48 <= c <= 57:  # a number
                kind = INTEGER
                i += 1
                while i < end:
                    c = _NUMBER[buf[i]]
                    if c == 0:
                        break
                    kind |= c
                    i += 1
                kind = FLOAT if kind & FLOAT else INTEGER  # (orjson reads a number with . e or E as a float)
                if kind == INTEGER and i - v > SHORT_INTEGER:
                    kind = LONG
            elif 97 <= c <= 122:  # a lowercase word: true, false, null (read by orjson)
                kind = NULL if c == 110 else BOOLEAN
                i += 1
                while i < end and 97 <= buf[i] <= 122:
                    i += 1
            else:  # an object, an array, or no JSON value
                return -1
            spans[0, f, e] = v
            spans[1, f, e] = i
            kinds[f] |= kind
            f += 1
            while i < end and _space(buf[i]):
                i += 1
            if i >= end:
                return -1
            if buf[i] == 44:  # ,
                i += 1
            elif buf[i] == 125:  # }
                i += 1
                break
            else:
                return -1
        if f != F:
            return -1
        while i < end and _space(buf[i]):
            i += 1
        if i != end:
            return -1
    o = 0
    out[o] = 91  # [
    o += 1
    for f in range(F):
        if f:
            out[o] = 44
            o += 1
        out[o] = 91
        o += 1
        for e in range(n):
            if e:
                out[o] = 44
                o += 1
            s = spans[0, f, e]
            t = spans[1, f, e]
            for j in range(s, t):
                out[o] = buf[j]
                o += 1
        out[o] = 93  # ]
        o += 1
    out[o] = 93
    return o + 1


def warm(k) -> None:
    """Compile the kernel for what the decoder passes: the poll's bytes as a read-only array."""
    buf = np.frombuffer(b'{"a": 1, "b": "x"}{"a": 2.5, "b": null}', dtype=np.uint8)
    starts = np.array([0, 18, 39], dtype=np.int64)
    spans, kinds = np.empty((2, 2, 2), dtype=np.int64), np.zeros(2, dtype=np.int64)
    k.flat_columns(buf, starts, spans, kinds, np.empty(len(buf) + 10, dtype=np.uint8))
