"""A model's state as bytes for a message: the payload of a model topic's records.

A snapshot file (:mod:`~stream_nb.snapshots._format`) is written to disk,
aligned and checksummed for random access; a state on a model topic travels
in one Kafka message (or a few, see :mod:`stream_nb.engine.group._group_records`),
whose broker already checksums it, and its size is what the broker carries
per second. So this encoding is compact: a JSON header (the model's metadata,
encoded as in a snapshot, the arrays' names, dtypes and shapes, and the
caller's ``info``) and the arrays' bytes, zlib-compressed together (counts are
mostly zeros and small integers)::

    b"SNBW" | version (1 byte, 2; 1 is read too, see _versions) | zlib( header length (uint32 LE) | header JSON | arrays' bytes )

Decoding treats the bytes as hostile, as :func:`~stream_nb.snapshots.read`
does a file: at most ``max_bytes`` are inflated, every dtype comes from the
snapshot format's table (never from numpy's parser), the shapes must add up to
the bytes, and the model's ``from_state`` checks the counts.

>>> from stream_nb import NaiveBayes
>>> model = NaiveBayes()
>>> model.learn_one({"sky": "sun"}, "play")
>>> blob = encode_state(*model.state(), info={"offset": 1})
>>> again, info = decode_state(blob)
>>> info, again.predict_proba_one({"sky": "sun"}) == model.predict_proba_one({"sky": "sun"})
({'offset': 1}, True)
>>> decode_state(blob[:-3])
Traceback (most recent call last):
...
stream_nb.exceptions.SnapshotError: model state: the compressed bytes are cut short or damaged
"""

from __future__ import annotations

import json
import math
import struct
import typing
import zlib

import numpy as np

from .._version import __version__
from ..exceptions import SnapshotError
from ._format import DTYPES, decode_meta, encode_meta, model_from_state
from ._versions import READS, VERSION, refusal, upgrade_model_meta

__all__ = ["WIRE_MAGIC", "decode_state", "encode_state"]

WIRE_MAGIC = b"SNBW"
_VERSION = VERSION
_LEN = struct.Struct("<I")
#: Most bytes a state inflates to unless the caller says otherwise (1 GiB).
_MAX_BYTES = 1 << 30


def encode_state(arrays: dict, meta: dict, info: dict | None = None, level: int = 1) -> bytes:
    """A model's ``state()`` (and a JSON-able ``info``) as compressed bytes; see the module docstring."""
    entries, parts = [], []
    for name, array in arrays.items():
        a = np.asarray(array)
        dtype = a.dtype.newbyteorder("<") if a.dtype.byteorder in (">", "=") else a.dtype
        if dtype.str not in DTYPES:
            raise SnapshotError(f"array {name!r} has dtype {a.dtype.str!r}: a state holds bool, int and float arrays")
        a = np.ascontiguousarray(a, dtype=dtype)
        entries.append({"name": name, "dtype": dtype.str, "shape": list(a.shape)})
        parts.append(a.reshape(-1).view(np.uint8).tobytes())
    header = {"model": encode_meta(meta, "model state"), "arrays": entries, "info": info}
    text = json.dumps(header, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")
    return WIRE_MAGIC + bytes([_VERSION]) + zlib.compress(_LEN.pack(len(text)) + text + b"".join(parts), level)


def _damaged(where: str, reason: str) -> SnapshotError:
    return SnapshotError(f"{where}: {reason}")


def decode_state(data: bytes, where: str = "model state", max_bytes: int = _MAX_BYTES) -> tuple[typing.Any, dict]:
    """``(model, info)`` from :func:`encode_state`'s bytes; :class:`SnapshotError` naming ``where`` and why not."""
    if not isinstance(data, (bytes, bytearray, memoryview)) or bytes(data[:4]) != WIRE_MAGIC or len(data) < 5:
        raise _damaged(where, "not a stream_nb model state (bad magic)")
    if data[4] not in READS:
        raise _damaged(where, refusal("model state encoding", data[4], READS, __version__))
    inflater = zlib.decompressobj()
    try:
        raw = inflater.decompress(bytes(data[5:]), max_bytes)
    except zlib.error as exc:
        raise _damaged(where, f"the compressed bytes are damaged ({exc})") from None
    if inflater.unconsumed_tail:
        raise _damaged(where, f"it inflates beyond {max_bytes} bytes")
    if not inflater.eof:
        raise _damaged(where, "the compressed bytes are cut short or damaged")
    if len(raw) < _LEN.size:
        raise _damaged(where, "no header")
    (hlen,) = _LEN.unpack_from(raw)
    start = _LEN.size + hlen
    try:
        header = json.loads(raw[_LEN.size:start].decode("utf-8"))
        entries = header["arrays"]
        meta = decode_meta(header["model"])
        info = header.get("info")
    except (UnicodeDecodeError, ValueError, TypeError, KeyError, RecursionError) as exc:
        raise _damaged(where, f"malformed header ({type(exc).__name__})") from None
    if not isinstance(entries, list) or not isinstance(meta, dict) or not (info is None or isinstance(info, dict)):
        raise _damaged(where, "malformed header")
    arrays, offset = {}, start
    for entry in entries:
        dtype = DTYPES.get(entry.get("dtype")) if isinstance(entry, dict) else None
        shape = entry.get("shape") if isinstance(entry, dict) else None
        if dtype is None or not isinstance(shape, list) or not all(type(d) is int and 0 <= d <= len(raw) for d in shape):
            raise _damaged(where, f"malformed array entry {str(entry)[:60]}")
        nbytes = math.prod(shape) * dtype.itemsize
        if offset + nbytes > len(raw):
            raise _damaged(where, f"array {entry.get('name')!r} runs past the end")
        arrays[entry.get("name")] = np.frombuffer(raw, dtype=dtype, count=math.prod(shape), offset=offset).reshape(shape)
        offset += nbytes
    if offset != len(raw):
        raise _damaged(where, f"{len(raw) - offset} bytes after the last array")
    if data[4] != _VERSION:
        try:
            meta = upgrade_model_meta(meta, data[4])
        except (TypeError, ValueError) as exc:  # ConfigError is a ValueError
            raise _damaged(where, f"its version-{data[4]} model parameters do not convert: {exc}") from None
    return model_from_state(arrays, meta, where), (info or {})
