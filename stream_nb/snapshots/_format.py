"""The snapshot container: a model's arrays and metadata in one checksummed file.

:func:`save` and :func:`load` are the public API (``stream_nb.save``,
``stream_nb.load``); the daemon writes the same container with its source
positions and metrics added to the header (see :mod:`stream_nb.engine._checkpoint`), into
the snapshot directory of :class:`~stream_nb.snapshots.SnapshotStore`.
Loading never executes code: the file holds raw little-endian numeric arrays
and one JSON document, nothing is unpickled or imported from it.

Format, version 1
-----------------
All integers little-endian::

    offset  size  content
    0       8     magic  89 53 4E 42 0D 0A 1A 0A   ("\\x89SNB\\r\\n\\x1a\\n")
    8       4     format version, uint32 (1)
    12      4     flags, uint32 (0; reserved)
    16      8     header length H, uint64
    24      H     header: one JSON object, UTF-8
    ...           zero bytes up to D, the first multiple of 64 at or after 24 + H
    D       ...   the arrays' bytes, C order, each one starting at D + its "offset"
                  (a multiple of 64), zero bytes in between
    end-32  32    SHA-256 of every byte before it (magic, version, header, arrays)

The header::

    {"format": "stream_nb.snapshot", "version": 1,
     "created": "2025-01-31T12:00:00.123456Z",   # UTC, when the file was written
     "created_unix": 1738324800.123456,
     "stream_nb": "0.1.0",                        # the version that wrote it
     "model": {...},      # model.state()[1], the metadata (encoded, see below)
     "arrays": [{"name": "class_count", "dtype": "<f8", "shape": [3],
                 "offset": 0, "nbytes": 24}, ...],  # model.state()[0]
     "daemon": null}      # or the daemon's part (stream_nb.engine._checkpoint)

``dtype`` is a numpy type string of a little-endian (or single-byte) boolean,
integer or floating-point type; any other dtype is refused on writing and
reading. The file's length must be exactly D plus the end of the last array
plus 32.

JSON encoding of the metadata: JSON scalars, lists and objects with string
keys as themselves; three tagged objects keep what JSON would otherwise lose:
``{"$tuple": [...]}`` a tuple, ``{"$dict": [[key, value], ...]}`` a dict
whose keys are not all strings (e.g. integer or boolean class labels in a loss
matrix), ``{"$float": "nan" | "inf" | "-inf"}`` a non-finite float. So
``type(model).from_state(arrays, meta)`` gets back exactly what
``model.state()`` gave.

Checks on reading, each failing with a :class:`~stream_nb.exceptions.SnapshotError`
naming the file and the reason: readable, long enough, the magic, a known
version, the checksum (a truncated file is reported as truncated, with the
length its header announces), a well-formed header, arrays inside the file,
and a model that rebuilds from its state.

Writing is atomic: a temporary file in the same directory (``.NAME.tmp-*``),
written, flushed and fsynced, renamed over NAME, and the directory fsynced. A
crash leaves either the old file or the new one, and at most a temporary file
that no reader takes for a snapshot. :func:`write` calls its ``before_rename``
argument, when given, between the fsync of the temporary file and the rename
(the fault tests' window for a kill -9 during a write; see
:class:`~stream_nb.snapshots.FaultHooks`).

>>> import os, tempfile
>>> from stream_nb import NaiveBayes
>>> model = NaiveBayes()
>>> model.learn_one({"sky": "sun", "wind": 3}, "play")
>>> model.learn_one({"sky": "rain", "wind": 7}, "stay")
>>> path = os.path.join(tempfile.mkdtemp(), "model.snb")
>>> size = save(model, path)
>>> again = load(path)
>>> again.predict_proba_one({"sky": "sun"}) == model.predict_proba_one({"sky": "sun"})
True
>>> with open(path, "r+b") as f:
...     _ = f.seek(40); byte = f.read(1); _ = f.seek(40); _ = f.write(bytes([byte[0] ^ 1]))
>>> load(path)
Traceback (most recent call last):
...
stream_nb.exceptions.SnapshotError: .../model.snb: checksum mismatch: the content is damaged ...
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import hashlib
import json
import math
import os
import struct
import time
import typing
import uuid

import numpy as np

from .._checks import is_integer
from .._version import __version__
from ..exceptions import SnapshotError
from ..learners import MODELS

__all__ = [
    "FORMAT_VERSION",
    "MAGIC",
    "SnapshotFile",
    "save",
    "load",
    "read",
    "write",
    "model_from_state",
    "encode_meta",
    "decode_meta",
    "MODEL_CLASSES",
]

MAGIC = b"\x89SNB\r\n\x1a\n"
FORMAT_VERSION = 1
FORMAT_NAME = "stream_nb.snapshot"
_PREFIX = struct.Struct("<8sIIQ")  # magic, version, flags, header length
_DIGEST = 32
_ALIGN = 64
#: numpy kinds a snapshot may hold: boolean, signed and unsigned integers, floats.
_KINDS = frozenset("biuf")
_TAGS = ("$tuple", "$dict", "$float")
#: The model classes a snapshot may name: stream_nb's exported classifiers, by class name.
MODEL_CLASSES: dict[str, type] = dict(MODELS)


# ----------------------------------------------------------------- metadata


def encode_meta(value: typing.Any, where: str = "meta") -> typing.Any:
    """``value`` as plain JSON data, tagging tuples, non-string-keyed dicts and non-finite floats.

    >>> encode_meta({"loss": {1: {0: 2.0}}, "edges": (0.5, float("inf"))})
    {'loss': {'$dict': [[1, {'$dict': [[0, 2.0]]}]]}, 'edges': {'$tuple': [0.5, {'$float': 'inf'}]}}
    >>> decode_meta(encode_meta({"loss": {1: {0: 2.0}}, "edges": (0.5, float("inf"))}))
    {'loss': {1: {0: 2.0}}, 'edges': (0.5, inf)}
    """
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if math.isfinite(value):
            return float(value)
        return {"$float": "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")}
    if isinstance(value, np.generic) and value.dtype.kind in "biuf":
        return encode_meta(value.item(), where)
    if isinstance(value, list):
        return [encode_meta(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, tuple):
        return {"$tuple": [encode_meta(v, f"{where}[{i}]") for i, v in enumerate(value)]}
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value) and not (len(value) == 1 and next(iter(value)) in _TAGS):
            return {k: encode_meta(v, f"{where}[{k!r}]") for k, v in value.items()}
        return {"$dict": [[encode_meta(k, f"{where} key {k!r}"), encode_meta(v, f"{where}[{k!r}]")]
                          for k, v in value.items()]}
    raise SnapshotError(
        f"{where}: a {type(value).__name__} value ({value!r:.60}) cannot be stored in a snapshot; "
        f"expected None, a bool, int, float or str, or a list, tuple or dict of those"
    )


def decode_meta(value: typing.Any) -> typing.Any:
    """The inverse of :func:`encode_meta`."""
    if isinstance(value, list):
        return [decode_meta(v) for v in value]
    if isinstance(value, dict):
        if len(value) == 1:
            (tag, inner), = value.items()
            if tag == "$tuple" and isinstance(inner, list):
                return tuple(decode_meta(v) for v in inner)
            if tag == "$float" and inner in ("nan", "inf", "-inf"):
                return float(inner)
            if tag == "$dict" and isinstance(inner, list):
                out = {}
                for pair in inner:
                    if not (isinstance(pair, list) and len(pair) == 2):
                        raise ValueError(f"a $dict entry must be a [key, value] pair, got {pair!r:.60}")
                    out[decode_meta(pair[0])] = decode_meta(pair[1])
                return out
        return {k: decode_meta(v) for k, v in value.items()}
    return value


# ----------------------------------------------------------------- writing


def _align(n: int) -> int:
    return -(-n // _ALIGN) * _ALIGN


def _prepare(arrays: dict[str, np.ndarray]) -> list[tuple[str, np.ndarray]]:
    out = []
    for name, array in arrays.items():
        if not isinstance(name, str):
            raise SnapshotError(f"array names must be strings, got {name!r}")
        a = np.asarray(array)
        if a.dtype.kind not in _KINDS:
            raise SnapshotError(
                f"array {name!r} has dtype {a.dtype.str!r}; a snapshot holds boolean, integer and float arrays only"
            )
        if a.dtype.byteorder == ">" or (a.dtype.byteorder == "=" and not np.little_endian):
            a = a.astype(a.dtype.newbyteorder("<"))
        out.append((name, np.ascontiguousarray(a)))
    return out


def _utc(t: float) -> str:
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _fsync_dir(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write(
    path: str | os.PathLike,
    arrays: dict[str, np.ndarray],
    meta: dict,
    *,
    daemon: dict | None = None,
    before_rename: typing.Callable[[str, str], None] | None = None,
) -> int:
    """Write a snapshot atomically (see the module docstring); return its size in bytes.

    ``arrays`` and ``meta`` are a model's ``state()``; ``daemon`` is the
    daemon's JSON-able part of the header, or ``None``. ``before_rename``, when
    given, is called with the temporary file and ``path`` once the temporary
    file is written and fsynced, just before it is renamed over ``path``. Raises
    :class:`~stream_nb.exceptions.SnapshotError` naming the file when it cannot
    be written (the original ``OSError`` is its ``__cause__``); the file at
    ``path``, if any, is then left as it was.
    """
    path = os.fspath(path)
    prepared = _prepare(arrays)
    entries, offset = [], 0
    for name, a in prepared:
        entries.append({"name": name, "dtype": a.dtype.str, "shape": list(a.shape), "offset": offset,
                        "nbytes": int(a.nbytes)})
        offset = _align(offset + a.nbytes)
    now = time.time()
    header = {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "created": _utc(now),
        "created_unix": now,
        "stream_nb": __version__,
        "model": encode_meta(meta, "model state"),
        "arrays": entries,
        "daemon": encode_meta(daemon, "daemon state") if daemon is not None else None,
    }
    text = json.dumps(header, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")
    start = _PREFIX.pack(MAGIC, FORMAT_VERSION, 0, len(text)) + text
    data_start = _align(len(start))

    directory = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(directory, f".{os.path.basename(path)}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    digest = hashlib.sha256()
    try:
        with open(tmp, "xb", buffering=0) as f:
            written = 0

            def put(chunk) -> None:
                nonlocal written
                view = memoryview(chunk).cast("B")
                digest.update(view)
                while view:
                    n = f.write(view)
                    view = view[n:]
                    written += n

            put(start)
            put(bytes(data_start - len(start)))
            for (name, a), entry in zip(prepared, entries):
                gap = data_start + entry["offset"] - written
                if gap:
                    put(bytes(gap))
                if a.nbytes:
                    put(a.reshape(-1).view(np.uint8))
            put(digest.digest())
            os.fsync(f.fileno())
        if before_rename is not None:
            before_rename(tmp, path)
        os.replace(tmp, path)
        _fsync_dir(directory)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise SnapshotError(f"{path}: cannot write the snapshot: {exc.strerror or exc}") from exc
    return written


# ----------------------------------------------------------------- reading


@dataclasses.dataclass
class SnapshotFile:
    """A snapshot read and verified by :func:`read`.

    Attributes
    ----------
    path
        The file.
    version
        The format version.
    header
        The header, metadata decoded (``header["model"]`` is the model's meta).
    arrays
        The model's arrays, read-only views of the file's bytes.
    size
        The file's length in bytes.
    """

    path: str
    version: int
    header: dict
    arrays: dict[str, np.ndarray]
    size: int

    @property
    def meta(self) -> dict:
        """The model's metadata (``model.state()[1]``)."""
        return self.header["model"]

    @property
    def daemon(self) -> dict | None:
        """The daemon's part of the header, or ``None`` for a model saved with :func:`save`."""
        return self.header.get("daemon")

    @property
    def created(self) -> str:
        """When the file was written (UTC, ISO 8601)."""
        return self.header["created"]

    def model(self) -> typing.Any:
        """Rebuild the model; :class:`~stream_nb.exceptions.SnapshotError` if its state does not fit."""
        return model_from_state(self.arrays, self.meta, self.path)


def _damaged(path: str, reason: str) -> SnapshotError:
    return SnapshotError(f"{path}: {reason}")


def read(path: str | os.PathLike) -> SnapshotFile:
    """Read and verify a snapshot; see the module docstring for the checks.

    Raises :class:`~stream_nb.exceptions.SnapshotError` naming the file and the reason.
    """
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise _damaged(path, f"cannot read it: {exc.strerror or exc}") from exc
    n = len(data)
    if n < _PREFIX.size:
        raise _damaged(path, f"truncated: {n} bytes, shorter than the {_PREFIX.size}-byte start of a snapshot")
    magic, version, _flags, hlen = _PREFIX.unpack_from(data)
    if magic != MAGIC:
        raise _damaged(path, f"not a stream_nb snapshot (its first bytes are {data[:8]!r}, expected {MAGIC!r})")
    if version != FORMAT_VERSION:
        raise _damaged(
            path, f"unknown snapshot format version {version}; this stream_nb ({__version__}) reads version "
            f"{FORMAT_VERSION} only"
        )
    header_end = _PREFIX.size + hlen
    header = None
    if header_end <= n:
        try:
            header = json.loads(data[_PREFIX.size:header_end].decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            header = None
    expected = _expected_size(header, header_end) if isinstance(header, dict) else None
    if n < header_end + _DIGEST:
        raise _damaged(path, f"truncated: {n} bytes, its header alone announces {header_end + _DIGEST}")
    actual = hashlib.sha256(memoryview(data)[: n - _DIGEST]).digest()
    if actual != data[n - _DIGEST:]:
        if expected is not None and n < expected:
            raise _damaged(path, f"truncated: {n} bytes, its header announces {expected}")
        extra = f" ({n - expected} bytes more than its header announces)" if expected is not None and n > expected else ""
        raise _damaged(
            path, f"checksum mismatch: the content is damaged{extra} (sha256 {actual.hex()[:16]}..., "
            f"recorded {data[n - _DIGEST:].hex()[:16]}...)"
        )
    if not isinstance(header, dict):
        raise _damaged(path, "the header is not a JSON object")
    if expected is None or expected != n:
        raise _damaged(path, f"inconsistent layout: {n} bytes, its header announces {expected}")
    if header.get("format") != FORMAT_NAME or header.get("version") != FORMAT_VERSION:
        raise _damaged(path, f"the header names format {header.get('format')!r} version {header.get('version')!r}, "
                             f"expected {FORMAT_NAME!r} version {FORMAT_VERSION}")
    data_start = _align(header_end)
    arrays: dict[str, np.ndarray] = {}
    for entry in header["arrays"]:
        name = entry["name"]
        try:
            dtype = np.dtype(entry["dtype"])
        except TypeError:
            raise _damaged(path, f"array {name!r}: unknown dtype {entry['dtype']!r}") from None
        if dtype.kind not in _KINDS or dtype.byteorder == ">":
            raise _damaged(path, f"array {name!r}: dtype {entry['dtype']!r} is not a little-endian bool, int or float")
        shape = tuple(entry["shape"])
        count = math.prod(shape)
        if count * dtype.itemsize != entry["nbytes"]:
            raise _damaged(path, f"array {name!r}: shape {list(shape)} of {dtype.str} is not {entry['nbytes']} bytes")
        a = np.frombuffer(data, dtype=dtype, count=count, offset=data_start + entry["offset"])
        arrays[name] = a.reshape(shape)
    try:
        header["model"] = decode_meta(header.get("model"))
        header["daemon"] = decode_meta(header.get("daemon"))
    except (TypeError, ValueError) as exc:
        raise _damaged(path, f"malformed metadata: {exc}") from None
    return SnapshotFile(path=path, version=version, header=header, arrays=arrays, size=n)


def _expected_size(header: dict, header_end: int) -> int | None:
    """The file length the header's array table announces, or None when the table is malformed."""
    entries = header.get("arrays")
    if not isinstance(entries, list):
        return None
    end = 0
    for entry in entries:
        if not isinstance(entry, dict):
            return None
        offset, nbytes, shape = entry.get("offset"), entry.get("nbytes"), entry.get("shape")
        if not all(is_integer(v) and v >= 0 for v in (offset, nbytes)):
            return None
        if offset % _ALIGN or offset < end or not isinstance(entry.get("name"), str):
            return None
        if not isinstance(shape, list) or not all(is_integer(d) and d >= 0 for d in shape):
            return None
        if not isinstance(entry.get("dtype"), str):
            return None
        end = offset + nbytes
    return _align(header_end) + end + _DIGEST


# ----------------------------------------------------------------- models


def model_from_state(arrays: dict, meta: dict, path: str = "snapshot") -> typing.Any:
    """Rebuild a stream_nb model from its state; SnapshotError naming ``path`` if it does not fit."""
    name = meta.get("model") if isinstance(meta, dict) else None
    cls = MODEL_CLASSES.get(name)
    if cls is None:
        raise _damaged(path, f"holds a model of type {name!r}; expected one of {', '.join(MODEL_CLASSES)}")
    try:
        return cls.from_state(arrays, meta)
    except Exception as exc:  # noqa: BLE001 - any inconsistency of a checksummed file is reported alike
        raise _damaged(path, f"its {name} state does not rebuild a model: {type(exc).__name__}: {exc}") from exc


def save(model: typing.Any, path: str | os.PathLike) -> int:
    """Write ``model`` (a stream_nb classifier) to ``path``, atomically; return the size in bytes.

    The file is the snapshot container of this module; :func:`load` reads it back.
    """
    if type(model).__name__ not in MODEL_CLASSES or not callable(getattr(model, "state", None)):
        raise TypeError(f"save() takes a stream_nb classifier ({', '.join(MODEL_CLASSES)}), got {type(model).__name__}")
    arrays, meta = model.state()
    return write(path, arrays, meta)


def load(path: str | os.PathLike) -> typing.Any:
    """Read a model written by :func:`save` (or a daemon snapshot: its model).

    Raises :class:`~stream_nb.exceptions.SnapshotError` naming the file and the
    reason when it is unreadable, truncated, damaged or of an unknown version.
    """
    return read(path).model()
