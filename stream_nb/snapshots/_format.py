"""The snapshot container: a model's arrays and metadata in one checksummed file.

:func:`save` and :func:`load` are the public API (``stream_nb.save``,
``stream_nb.load``); the daemon writes the same container with its source
positions and metrics added to the header (see :mod:`stream_nb.engine.checkpoint._checkpoint`), into
the snapshot directory of :class:`~stream_nb.snapshots.SnapshotStore`.
Loading never executes code: the file holds raw little-endian numeric arrays
and one JSON document, nothing is unpickled or imported from it.

Format, version 2
-----------------
(Version 1 is the same container with the model's parameters flat; it is read
and converted, see :mod:`~stream_nb.snapshots._versions`.)

All integers little-endian::

    offset  size  content
    0       8     magic  89 53 4E 42 0D 0A 1A 0A   ("\\x89SNB\\r\\n\\x1a\\n")
    8       4     format version, uint32 (2)
    12      4     flags, uint32 (0; reserved)
    16      8     header length H, uint64
    24      H     header: one JSON object, UTF-8
    ...           zero bytes up to D, the first multiple of 64 at or after 24 + H
    D       ...   the arrays' bytes, C order, each one starting at D + its "offset"
                  (a multiple of 64), zero bytes in between
    end-32  32    SHA-256 of every byte before it (magic, version, header, arrays)

The header::

    {"format": "stream_nb.snapshot", "version": 2,
     "created": "2025-01-31T12:00:00.123456Z",   # UTC, when the file was written
     "created_unix": 1738324800.123456,
     "stream_nb": "0.1.0",                        # the version that wrote it
     "model": {...},      # model.state()[1], the metadata (encoded, see below)
     "arrays": [{"name": "class_count", "dtype": "<f8", "shape": [3],
                 "offset": 0, "nbytes": 24}, ...],  # model.state()[0]
     "daemon": null}      # or the daemon's part (stream_nb.engine.checkpoint._checkpoint)

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

The checksum catches accidents, not intent: anyone can recompute it. So the
content behind it is checked as if hostile, before anything is allocated from
it: the header's JSON nests at most 64 levels; every dtype is one of a fixed
table of little-endian bool, int and float types (never parsed by numpy, never
an object: nothing is unpickled); an array has at most 32 dimensions, none
larger than the file, and no name twice; the header's time and the daemon's
part (positions, counters, names) have their types; and the model's
``from_state`` refuses a state no model could have written (arrays of another
shape than the metadata gives them, counts that are negative or not finite, a
structure that is no tree). Loading takes at most a small multiple of the
file's size in memory.

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
from ._versions import READS, VERSION, refusal, upgrade_model_meta, written_by

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
FORMAT_VERSION = VERSION
FORMAT_NAME = "stream_nb.snapshot"
_PREFIX = struct.Struct("<8sIIQ")  # magic, version, flags, header length
_DIGEST = 32
_ALIGN = 64
#: numpy kinds a snapshot may hold: boolean, signed and unsigned integers, floats.
_KINDS = frozenset("biuf")
#: The dtype strings a snapshot may name, little-endian (or single-byte) bool, int and float: a file's
#: dtype is looked up here, never handed to numpy's parser (which evaluates tuple syntax and raises
#: TypeError, ValueError or SyntaxError on what it cannot read).
DTYPES = {d.str: d for d in (np.dtype(c).newbyteorder("<") for c in "?bBhHiIlLqQefdg")}
#: Most dimensions an array may have (numpy 1's limit; a KDB with k=3 needs 5).
_MAX_NDIM = 32
#: Deepest nesting of the header's JSON: a model's header needs about a dozen levels.
_MAX_DEPTH = 64
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
        return model_from_state({k: a for k, a in self.arrays.items() if k[:5] != "join."}, self.meta, self.path)


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
    if version not in READS:  # what to do: read it with the release that wrote it, if newer (its header names it)
        writer = written_by(data[_PREFIX.size:_PREFIX.size + hlen])
        raise _damaged(path, refusal("snapshot format", version, READS, __version__, writer))
    header_end = _PREFIX.size + hlen
    header, unreadable = None, "the header is not a JSON object"
    if header_end <= n:
        try:
            header = json.loads(data[_PREFIX.size:header_end].decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            header = None
        except RecursionError:  # json's own limit, before ours
            header, unreadable = None, f"the header nests deeper than {_MAX_DEPTH} levels"
    expected, table_problem = _expected_size(header, header_end) if isinstance(header, dict) else (None, None)
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
        raise _damaged(path, unreadable)
    if _deeper_than(header, _MAX_DEPTH):
        raise _damaged(path, f"the header nests deeper than {_MAX_DEPTH} levels")
    if header.get("format") != FORMAT_NAME or header.get("version") != version:
        raise _damaged(path, f"the header names format {_short(header.get('format'))} version "
                             f"{_short(header.get('version'))}, expected {FORMAT_NAME!r} version {version}")
    if table_problem is not None:
        raise _damaged(path, f"malformed array table: {table_problem}")
    if expected != n:
        raise _damaged(path, f"inconsistent layout: {n} bytes, its header announces {expected}")
    data_start = _align(header_end)
    arrays: dict[str, np.ndarray] = {}
    for entry in header["arrays"]:
        name = entry["name"]
        if name in arrays:
            raise _damaged(path, f"array {name!r} appears twice in the header")
        dtype = DTYPES.get(entry["dtype"])
        if dtype is None:
            raise _damaged(path, f"array {name!r}: dtype {_short(entry['dtype'])} is not a little-endian bool, int "
                                 f"or float (expected one of {', '.join(sorted(DTYPES))})")
        shape = tuple(entry["shape"])
        if len(shape) > _MAX_NDIM:
            raise _damaged(path, f"array {name!r}: {len(shape)} dimensions, at most {_MAX_NDIM} expected")
        if any(d > n for d in shape):
            # no count, no index and no loop of a model's comes near the file's size: this one would
            raise _damaged(path, f"array {name!r}: shape {_short(list(shape))} has a dimension larger than the "
                                 f"{n}-byte file")
        count = math.prod(shape)
        if count * dtype.itemsize != entry["nbytes"]:
            raise _damaged(path, f"array {name!r}: shape {_short(list(shape))} of {dtype.str} is not "
                                 f"{entry['nbytes']} bytes")
        a = np.frombuffer(data, dtype=dtype, count=count, offset=data_start + entry["offset"])
        try:
            arrays[name] = a.reshape(shape)
        except ValueError as exc:  # an empty array whose other dimensions multiply past numpy's limit
            raise _damaged(path, f"array {name!r}: shape {_short(list(shape))}: {exc}") from None
    try:
        header["model"] = decode_meta(header.get("model"))
        header["daemon"] = decode_meta(header.get("daemon"))
    except (TypeError, ValueError) as exc:
        raise _damaged(path, f"malformed metadata: {exc}") from None
    problem = _header_problem(header)
    if problem is not None:
        raise _damaged(path, problem)
    if version != FORMAT_VERSION:
        try:
            header["model"] = upgrade_model_meta(header["model"], version)
        except (TypeError, ValueError) as exc:  # ConfigError is a ValueError
            raise _damaged(path, f"its version-{version} model parameters do not convert: {exc}") from None
    return SnapshotFile(path=path, version=version, header=header, arrays=arrays, size=n)


def _short(value: typing.Any) -> str:
    """``repr(value)``, cut at 60 characters: a hostile file's values go into messages too."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _deeper_than(value: typing.Any, limit: int) -> bool:
    """True when JSON data ``value`` nests more than ``limit`` lists and objects deep (no recursion)."""
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, (dict, list)):
            if depth > limit:
                return True
            stack.extend((child, depth + 1) for child in (node.values() if isinstance(node, dict) else node))
    return False


def _is_count(value: typing.Any) -> bool:
    """An integer a count, position or size can be: from 0 to 2**63 - 1 (what JSON writers, Kafka and
    files take; the engine writes its outputs and metrics with orjson, which takes no larger integer)."""
    return is_integer(value) and 0 <= value < 1 << 63


#: The daemon part's metrics: the engine's exact counters (``PrequentialMetrics.state()``).
_METRIC_COUNTS = ("events", "predicted", "labeled", "learned", "correct", "log_loss_floored")


def _metrics_problem(metrics: dict) -> str | None:
    for name in _METRIC_COUNTS:
        if name not in metrics:
            return f"lack {name!r}"
        if not _is_count(metrics[name]):
            return f"{name} is {_short(metrics[name])}, expected an integer from 0 to 2**63 - 1"
    total = metrics.get("log_loss_sum")
    if not (is_integer(total) or isinstance(total, float)) or not total >= 0:
        return f"log_loss_sum is {_short(total)}, expected a number >= 0"
    reasons = metrics.get("dead_letters_by_reason")
    if not isinstance(reasons, dict) or not all(isinstance(k, str) and _is_count(v) for k, v in reasons.items()):
        return f"dead_letters_by_reason is {_short(reasons)}, expected an object of counts"
    return None


def _header_problem(header: dict) -> str | None:
    """What is wrong with the decoded header beyond its array table, or None.

    The model's metadata is checked by the model's ``from_state``; here the
    fields every reader relies on: when it was written, and the daemon's part
    (positions, counters, names), so that neither ``snapshot inspect`` nor a
    restarting daemon meets a value of the wrong type.
    """
    if not isinstance(header.get("created"), str):
        return f"the header's 'created' is {_short(header.get('created'))}, expected a time as text"
    if not isinstance(header.get("model"), dict):
        return f"the header's 'model' is {_short(header.get('model'))}, expected an object"
    daemon = header.get("daemon")
    if daemon is None:
        return None
    if not isinstance(daemon, dict):
        return f"the daemon part is {_short(daemon)}, expected an object or null"
    expected = {
        "store_id": ("a string", lambda v: isinstance(v, str)),
        "model_name": ("a string or null", lambda v: v is None or isinstance(v, str)),
        "exactly_once": ("true or false", lambda v: isinstance(v, bool)),
        "sequence": ("an integer from 0 to 2**63 - 1", _is_count),
        "source": ("an object or null", lambda v: v is None or isinstance(v, dict)),
        "positions": ("an object of integers from 0 to 2**63 - 1", lambda v: isinstance(v, dict) and all(
            isinstance(k, str) and _is_count(p) for k, p in v.items())),
        "metrics": ("an object or null", lambda v: v is None or isinstance(v, dict)),
    }
    for name, (what, ok) in expected.items():
        if name in daemon and not ok(daemon[name]):
            return f"the daemon part's {name!r} is {_short(daemon[name])}, expected {what}"
    if daemon.get("metrics") is not None:
        problem = _metrics_problem(daemon["metrics"])
        if problem is not None:
            return f"the daemon part's metrics: {problem}"
    return None


def _expected_size(header: dict, header_end: int) -> tuple[int | None, str | None]:
    """The file length the header's array table announces, or ``(None, what is wrong with the table)``."""
    entries = header.get("arrays")
    if not isinstance(entries, list):
        return None, f"'arrays' is {_short(entries)}, expected a list"
    end = 0
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            return None, f"entry {i} is {_short(entry)}, expected an object"
        offset, nbytes, shape = entry.get("offset"), entry.get("nbytes"), entry.get("shape")
        for field, value in (("offset", offset), ("nbytes", nbytes)):
            if not _is_count(value):
                return None, f"entry {i}: {field} is {_short(value)}, expected an integer from 0 to 2**63 - 1"
        if offset % _ALIGN or offset < end:
            return None, f"entry {i}: offset {offset} is not a multiple of {_ALIGN} at or after {end}, the end of " \
                         f"the previous array"
        if not isinstance(entry.get("name"), str):
            return None, f"entry {i}: name is {_short(entry.get('name'))}, expected a string"
        if not isinstance(shape, list) or not all(_is_count(d) for d in shape):
            return None, f"entry {i}: shape is {_short(shape)}, expected a list of integers from 0 to 2**63 - 1"
        if not isinstance(entry.get("dtype"), str):
            return None, f"entry {i}: dtype is {_short(entry.get('dtype'))}, expected a string"
        end = offset + nbytes
    return _align(header_end) + end + _DIGEST, None


# ----------------------------------------------------------------- models


def model_from_state(arrays: dict, meta: dict, path: str = "snapshot") -> typing.Any:
    """Rebuild a stream_nb model from its state; SnapshotError naming ``path`` if it does not fit."""
    name = meta.get("model") if isinstance(meta, dict) else None
    cls = MODEL_CLASSES.get(name) if isinstance(name, str) else None
    if cls is None:
        raise _damaged(path, f"holds a model of type {_short(name)}; expected one of {', '.join(MODEL_CLASSES)}")
    try:
        return cls.from_state(arrays, meta)
    except Exception as exc:  # noqa: BLE001 - any inconsistency of a checksummed file is reported alike
        reason = " ".join(f"{type(exc).__name__}: {exc}".split())  # one line: a numpy error may span several
        raise _damaged(path, f"its {name} state does not rebuild a model: {reason}") from exc


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
