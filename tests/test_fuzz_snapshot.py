"""Fuzzing the snapshot loader (``stream_nb.load``) and ``stream-nb snapshot inspect`` with hypothesis.

A snapshot file is input like any other: it may be damaged on disk, cut short
by a full disk, or written by someone else. Its checksum catches accidents,
not intent: anyone can recompute it. So the mutations below come in two kinds:
raw damage (bit flips, truncation, appended bytes), which the checksum must
catch, and hostile content behind a *valid* checksum (headers that announce
huge or negative shapes, deep JSON, object and other wrong dtypes, arrays
that disagree with the metadata, any node of the metadata replaced), which
the parser and the model's ``from_state`` must refuse. Each case must end in
one of two ways:

* a :class:`~stream_nb.exceptions.SnapshotError` whose message starts with
  the file's path and says why (and ``snapshot inspect`` exits 2 with that one
  line), and nothing else: no other exception, no traceback;
* or a model that works: it predicts, learns, saves and describes itself.

Either way the peak memory traced while loading stays within a small multiple
of the file's size, and nothing is unpickled.

Run time: the example counts below keep the file to well under a minute in
CI. ``STREAM_NB_FUZZ_EXAMPLES=N`` raises every test to ``N`` examples for a
long local session.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import hashlib
import io
import itertools
import json
import math
import os
import pathlib
import pickle
import random
import re
import shutil
import struct
import tempfile
import tracemalloc

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import stream_nb
from stream_nb import MDL, Edges, EqualFrequency, Ignore, Parents, SuperParent, Tree, cli
from stream_nb.engine.loop._metrics import PrequentialMetrics
from stream_nb.exceptions import InvalidEventError, SnapshotError
from stream_nb.snapshots import _format as _snapshot

FUZZ_ENV = "STREAM_NB_FUZZ_EXAMPLES"

#: Peak memory while loading may be this many times the file's size ...
MEMORY_FACTOR = 64
#: ... plus this (a model's empty arrays, the interpreter's own bookkeeping).
MEMORY_SLACK = 8 << 20


def fuzz_settings(default: int):
    """``default`` examples (``$STREAM_NB_FUZZ_EXAMPLES`` when set), no deadline, no database."""
    n = int(os.environ.get(FUZZ_ENV) or default)
    return settings(max_examples=n, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.function_scoped_fixture])


# ----------------------------------------------------------------------- valid snapshots to start from


def stream(n: int, seed: int, int_labels: bool = False) -> list[tuple[dict, object]]:
    """Events with categorical, integer, boolean and float features, missing values, and labels that are
    strings or (``int_labels``) integers: one JSON type per stream, as a model takes them."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        x = {"color": rng.choice(["red", "green", "blue"]), "size": rng.choice([1, 2, 3]),
             "flag": rng.random() < 0.3, "weight": round(rng.gauss(5, 2), 3), "shape": rng.choice("abcd")}
        if rng.random() < 0.15:
            x["color"] = None
        if rng.random() < 0.1:
            del x["shape"]
        y = rng.choice([0, 1, 2] if int_labels else ["yes", "no", "maybe"])
        out.append((x, y))
    return out


MODELS = {
    "nb": lambda: stream_nb.NaiveBayes(loss={"yes": {"no": 3.0}, "maybe": {"yes": 2.0}}),
    "nb-int": lambda: stream_nb.NaiveBayes(loss={1: {0: 2.0}}),  # integer keys: the $dict encoding
    "nb-ignore": lambda: stream_nb.NaiveBayes(types={"size": "numeric"}, missing=Ignore()),
    "aode": lambda: stream_nb.AODE(numeric=MDL(bins=3, warmup=20)),
    "tan": lambda: stream_nb.TAN(numeric=MDL(bins=3, warmup=20), search=Tree(rebuild_every=30)),
    "tan-edges": lambda: stream_nb.TAN(numeric=Edges(edges={"weight": [3.0, 6.0]}, rest=MDL()), search=Tree(rebuild_every=0)),
    "spode": lambda: stream_nb.SPODE(numeric=MDL(bins=3, warmup=20), search=SuperParent(rebuild_every=25)),
    "spode-parent": lambda: stream_nb.SPODE(numeric=MDL(bins=3, warmup=20), search=SuperParent(parent="color")),
    "kdb1": lambda: stream_nb.KDB(k=1, numeric=EqualFrequency(bins=3, warmup=20), search=Parents(rebuild_every=30)),
    "kdb2": lambda: stream_nb.KDB(k=2, numeric=EqualFrequency(bins=2, warmup=20), search=Parents(rebuild_every=30)),
    "kdb3": lambda: stream_nb.KDB(k=3, numeric=EqualFrequency(bins=2, warmup=20), missing=Ignore(), search=Parents(rebuild_every=30)),
}
#: The configurations that learn integer labels (the others learn strings).
INT_LABELS = ("nb-int", "kdb1")


def daemon_part() -> dict:
    metrics = PrequentialMetrics()
    metrics.update_prediction("yes", "yes", {"yes": 0.75, "no": 0.25}, True)
    metrics.update_dead_letter("invalid_json")
    return {"store_id": "0123456789abcdef", "sequence": 7, "positions": {"/data/in.jsonl": 1234},
            "metrics": metrics.state(), "source": {"kind": "jsonl", "path": "/data/in.jsonl", "realpath": None},
            "exactly_once": False, "model_name": "tan"}


def snapshot_bytes(model, daemon: dict | None, directory) -> bytes:
    path = directory / "base.snb"
    arrays, meta = model.state()
    _snapshot.write(path, arrays, meta, daemon=daemon)
    return path.read_bytes()


@functools.cache
def all_bases() -> dict[str, bytes]:
    """One valid snapshot per model configuration (some trained, one untouched, one with a daemon part)."""
    directory = pathlib.Path(tempfile.mkdtemp(prefix="stream-nb-fuzz-"))
    out = {}
    for name, make in MODELS.items():
        model = make()
        for x, y in stream(120, seed=len(name), int_labels=name in INT_LABELS):
            model.learn_one(x, y)
        if hasattr(model, "rebuild") and name != "spode-parent":
            model.rebuild()
        out[name] = snapshot_bytes(model, daemon_part() if name == "tan" else None, directory)
    out["empty-kdb2"] = snapshot_bytes(MODELS["kdb2"](), None, directory)
    shutil.rmtree(directory)
    return out


@pytest.fixture(scope="module")
def bases():
    """The valid snapshots: a fixture whose value hypothesis does not print with a failing case."""
    return Bases()


class Bases:
    def __getitem__(self, name: str) -> bytes:
        return all_bases()[name]

    def __repr__(self) -> str:
        return "bases"


BASE_NAMES = sorted(MODELS) + ["empty-kdb2"]


# ----------------------------------------------------------------------- taking a file apart and back


def split(data: bytes) -> tuple[dict, dict[str, bytes]]:
    """The header (JSON, still encoded) and each array's bytes of a valid snapshot."""
    (hlen,) = struct.unpack_from("<Q", data, 16)
    header = json.loads(data[24:24 + hlen])
    start = _snapshot._align(24 + hlen)
    blobs = {e["name"]: data[start + e["offset"]: start + e["offset"] + e["nbytes"]] for e in header["arrays"]}
    return header, blobs


def assemble(header_text: bytes, body: bytes, *, version: int = _snapshot.FORMAT_VERSION, flags: int = 0, hlen: int | None = None) -> bytes:
    """A file with a correct checksum over any header text and body."""
    start = _snapshot._PREFIX.pack(_snapshot.MAGIC, version, flags, len(header_text) if hlen is None else hlen)
    start += header_text
    content = start + bytes(_snapshot._align(len(start)) - len(start)) + body
    return content + hashlib.sha256(content).digest()


def body_of(blobs) -> bytes:
    """Array bytes laid out as the writer does: each one at a multiple of 64, nothing after the last."""
    body = b""
    for blob in blobs:
        body += bytes(_snapshot._align(len(body)) - len(body)) + blob
    return body


def lay_out(header: dict, blobs: dict[str, bytes], entries: list[dict] | None = None) -> bytes:
    """A consistent, checksummed file: ``entries`` (default: the header's) with offsets and sizes recomputed."""
    header = dict(header)
    table, body = [], b""
    for entry in entries if entries is not None else header["arrays"]:
        name = entry.get("name")
        blob = blobs.get(name, b"") if isinstance(name, str) else b""
        body += bytes(_snapshot._align(len(body)) - len(body))
        table.append(dict(entry, offset=len(body), nbytes=len(blob)))
        body += blob
    header["arrays"] = table
    return assemble(json.dumps(header).encode(), body)


# ----------------------------------------------------------------------- the properties


class Unpickled(Exception):
    pass


@contextlib.contextmanager
def no_unpickling():
    """Make every way into pickle fail loudly while loading."""
    def refuse(*args, **kwargs):
        raise Unpickled("a snapshot was unpickled")

    saved = pickle.loads, pickle.load, pickle.Unpickler
    pickle.loads = pickle.load = pickle.Unpickler = refuse
    try:
        yield
    finally:
        pickle.loads, pickle.load, pickle.Unpickler = saved


PROBES = [
    {"color": "red", "size": 2, "flag": True, "weight": 4.5, "shape": "a"},
    {"color": "blue", "weight": 100.0},
    {"color": "violet", "size": 9, "new": "thing"},
    {},
    {"size": None, "weight": float("nan")},
]


def exercise(model, events: int = 12) -> None:
    """A loaded model must predict (finite probabilities summing to 1), learn, and rebuild from its own state."""
    for x in PROBES:
        proba = model.predict_proba_one(x)
        assert all(isinstance(p, float) and math.isfinite(p) and 0.0 <= p <= 1.0 for p in proba.values()), proba
        assert not proba or math.isclose(sum(proba.values()), 1.0, rel_tol=1e-6), proba
        model.predict_one(x)
    for x, y in stream(events, seed=99, int_labels=any(type(c) is int for c in model.classes)):
        try:
            model.learn_one(x, y)
        except InvalidEventError:
            pass  # e.g. a feature of another type in the loaded model: a rejected event, not a crash
        proba = model.predict_proba_one(x)
        assert all(math.isfinite(p) and 0.0 <= p <= 1.0 for p in proba.values()), proba
    arrays, meta = model.state()
    again = type(model).from_state(arrays, meta)
    assert again.classes == model.classes


def load_or_refuse(path, size: int) -> object | None:
    """``stream_nb.load(path)`` under the properties: a model, or None after a SnapshotError naming the file."""
    tracemalloc.start()
    try:
        with no_unpickling():
            model = stream_nb.load(path)
    except SnapshotError as exc:
        message = str(exc)
        assert message.startswith(f"{path}: ") and len(message) > len(f"{path}: ") and "\n" not in message, message
        model = None
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert peak <= MEMORY_FACTOR * size + MEMORY_SLACK, f"{peak:,} bytes traced loading a {size:,}-byte file"
    return model


def inspect(path, as_json: bool) -> tuple[int, str, str]:
    """``stream-nb snapshot inspect [--json] PATH`` in-process: (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = cli.main(["snapshot", "inspect", str(path)] + (["--json"] if as_json else []))
    return status, out.getvalue(), err.getvalue()


def check(path, data: bytes) -> object | None:
    """Write ``data`` to ``path``; load and inspect it; both must agree and keep the properties."""
    path.write_bytes(data)
    model = load_or_refuse(path, len(data))
    status, out, err = inspect(path, as_json=sum(data[-1:]) % 2 == 0)  # the last byte picks the format
    assert "Traceback" not in out + err
    if model is None:
        assert status == 2 and out == "", (status, out, err)
        assert err.startswith(f"stream-nb: error: {path}: ") and err.count("\n") == 1, err
    else:
        assert status == 0 and err == "", (status, err)
        exercise(model)
    return model


# ----------------------------------------------------------------------- strategies: hostile values

huge = st.sampled_from([2**31, 2**32 + 1, 2**62, 2**63, 2**64 + 7, 10**30, 10**400])
hostile_ints = st.one_of(st.integers(-3, 3), st.integers(0, 20), huge, huge.map(lambda v: -v), st.integers())
hostile_scalars = st.one_of(
    st.none(), st.booleans(), hostile_ints,
    st.floats(), st.sampled_from([1e308, -0.0, 0.5]),
    st.text(max_size=6),
    st.sampled_from(["", "<f8", "|O", "O", "nan", "inf", "$tuple", "$dict", "$float", "NaiveBayes", "TAN",
                     "KDB", "categorical", "gaussian", "binned", "bins", "em", "ignore"]),
)
tags = st.sampled_from([{"$float": "nan"}, {"$float": "inf"}, {"$float": "-inf"}, {"$float": "bogus"},
                        {"$tuple": []}, {"$tuple": [1, "a"]}, {"$dict": []}, {"$dict": [[1, 2]]},
                        {"$dict": [[[1], 2]]}, {"$dict": [1, 2]}, {"$dict": [[{"$tuple": [1]}, 0]]}])
hostile_json = st.recursive(
    hostile_scalars | tags,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=12,
)
dtypes = st.sampled_from([
    "|O", "O", "<O", "object", "<U4", "|S4", "|V8", "<c16", "<M8[s]", "<m8[D]", ">f8", ">i4", "<f8,<i4",
    "(2,)<f8", "<f2", "<f4", "<f16", "|b1", "|i1", "|u1", "<i8", "<u8", "=f8", "f8", "", "<", "<f3", "float64",
    "<f8\x00", "[('a', '<f8')]", "int", "bool", "(1,2", "(-1,)f8", "(99999999999,99999999)f8", "M8[foo]",
])
shapes = st.one_of(
    st.lists(st.integers(0, 4), max_size=4),
    st.lists(hostile_ints, min_size=1, max_size=4),
    st.lists(st.integers(0, 2), min_size=30, max_size=80),  # more dimensions than numpy takes
    st.sampled_from([[0, 2**70], [2**40, 0], [-1], [-1, -8], [1.5], [True], ["3"], None, 3, {}]),
)


def paths_of(value, prefix=()) -> list[tuple]:
    """Every path (keys and indices) to a node of a JSON document, the root excluded."""
    out = []
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return out
    for k, v in items:
        out.append(prefix + (k,))
        out.extend(paths_of(v, prefix + (k,)))
    return out


def replace_at(doc, path: tuple, new, delete: bool = False):
    doc = copy.deepcopy(doc)
    node = doc
    for k in path[:-1]:
        node = node[k]
    if delete:
        del node[path[-1]]
    else:
        node[path[-1]] = new
    return doc


def deep(depth: int, kind: str):
    """A JSON text nested ``depth`` levels deep, without building the object (no recursion here)."""
    if kind == "list":
        return "[" * depth + "]" * depth
    return '{"a":' * depth + "1" + "}" * depth


# ----------------------------------------------------------------------- raw damage


@fuzz_settings(80)
@given(base=st.sampled_from(BASE_NAMES), data=st.data())
def test_raw_damage_is_a_snapshot_error_naming_the_file(bases, tmp_path, base, data):
    original = bases[base]
    kind = data.draw(st.sampled_from(["flip", "truncate", "append", "splice"]))
    damaged = bytearray(original)
    if kind == "flip":
        for position in data.draw(st.lists(st.integers(0, len(original) - 1), min_size=1, max_size=4)):
            damaged[position] ^= 1 << data.draw(st.integers(0, 7))
    elif kind == "truncate":
        damaged = damaged[: data.draw(st.integers(0, len(original) - 1))]
    elif kind == "append":
        damaged += data.draw(st.binary(min_size=1, max_size=100))
    else:
        at = data.draw(st.integers(0, len(original)))
        damaged[at:at] = data.draw(st.binary(min_size=1, max_size=16))
    if bytes(damaged) == original:
        return
    model = check(tmp_path / "damaged.snb", bytes(damaged))
    assert model is None, "a damaged file loaded"


@fuzz_settings(80)
@given(base=st.sampled_from(BASE_NAMES), data=st.data())
def test_damage_behind_a_valid_checksum_is_refused_or_harmless(bases, tmp_path, base, data):
    """The same damage with the checksum recomputed, so that it reaches the parser."""
    content = bytearray(bases[base][:-32])
    kind = data.draw(st.sampled_from(["flip", "flip", "truncate", "splice", "prefix"]))
    if kind == "flip":
        for position in data.draw(st.lists(st.integers(8, len(content) - 1), min_size=1, max_size=6)):
            content[position] ^= 1 << data.draw(st.integers(0, 7))
    elif kind == "truncate":
        content = content[: data.draw(st.integers(0, len(content)))]
    elif kind == "splice":
        at = data.draw(st.integers(8, len(content)))
        content[at:at] = data.draw(st.binary(min_size=1, max_size=16))
    else:  # the 24-byte start: version, flags, header length
        version = data.draw(st.sampled_from([1, 1, 0, 2, 2**32 - 1]))
        flags = data.draw(st.sampled_from([0, 0, 1, 2**32 - 1]))
        hlen = data.draw(st.one_of(st.integers(0, len(content) + 64), st.sampled_from([2**63, 2**64 - 1, 2**40])))
        content[:24] = _snapshot._PREFIX.pack(_snapshot.MAGIC, version, flags, hlen)
    content = bytes(content)
    check(tmp_path / "forged.snb", content + hashlib.sha256(content).digest())


# ----------------------------------------------------------------------- hostile headers with valid checksums


@fuzz_settings(150)
@given(base=st.sampled_from(BASE_NAMES), data=st.data())
def test_any_node_of_the_header_replaced_is_refused_or_harmless(bases, tmp_path, base, data):
    header, blobs = split(bases[base])
    targets = [p for p in paths_of(header) if p[0] not in ("created", "created_unix", "stream_nb")]
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(targets))
        action = data.draw(st.sampled_from(["replace", "replace", "delete", "int", "deep"]))
        try:
            node = header
            for k in path:
                node = node[k]
        except (KeyError, IndexError, TypeError):
            continue
        if action == "delete":
            header = replace_at(header, path, None, delete=True)
        elif action == "int" and isinstance(node, (int, float)) and not isinstance(node, bool):
            header = replace_at(header, path, data.draw(st.one_of(hostile_ints, st.just(node + 1),
                                                                  st.just(-node - 1), st.just(node * 1000))))
        elif action == "deep":
            header = replace_at(header, path, json.loads(deep(data.draw(st.integers(50, 400)), "list")))
        else:
            header = replace_at(header, path, data.draw(hostile_json))
    if "arrays" in header and isinstance(header["arrays"], list) and all(
            isinstance(e, dict) for e in header["arrays"]) and data.draw(st.booleans()):
        data_bytes = lay_out(header, blobs)  # offsets and sizes made consistent again: the model must check
    else:
        data_bytes = assemble(json.dumps(header).encode(), body_of(blobs.values()))
    check(tmp_path / "forged.snb", data_bytes)


@fuzz_settings(120)
@given(base=st.sampled_from(BASE_NAMES), data=st.data())
def test_array_tables_that_lie_are_refused(bases, tmp_path, base, data):
    """Shapes, dtypes, sizes and offsets that disagree with each other or with the file."""
    header, blobs = split(bases[base])
    entries = header["arrays"]
    entry = dict(data.draw(st.sampled_from(entries)))
    i = entries.index(entry)
    field = data.draw(st.sampled_from(["shape", "dtype", "nbytes", "offset", "name", "shape+nbytes", "drop",
                                       "duplicate"]))
    if field == "shape":
        entry["shape"] = data.draw(shapes)
    elif field == "dtype":
        entry["dtype"] = data.draw(dtypes)
    elif field == "nbytes":
        entry["nbytes"] = data.draw(hostile_ints)
    elif field == "offset":
        entry["offset"] = data.draw(st.one_of(hostile_ints, st.just(entry["offset"] + 64)))
    elif field == "name":
        entry["name"] = data.draw(st.one_of(st.sampled_from([e["name"] for e in entries]), hostile_scalars))
    elif field == "shape+nbytes":  # a consistent lie: a huge shape whose size is announced honestly
        entry["shape"] = data.draw(shapes)
        with contextlib.suppress(TypeError, ValueError, OverflowError):
            entry["nbytes"] = math.prod(entry["shape"]) * np.dtype(entry["dtype"]).itemsize
    table = list(entries)
    if field == "drop":
        del table[i]
    elif field == "duplicate":
        table.insert(i, dict(entry))
    else:
        table[i] = entry
    header["arrays"] = table
    body = body_of(blobs.values())
    check(tmp_path / "forged.snb", assemble(json.dumps(header).encode(), body))


@fuzz_settings(150)
@given(base=st.sampled_from(BASE_NAMES), data=st.data())
def test_arrays_that_disagree_with_the_metadata_are_refused_or_harmless(bases, tmp_path, base, data):
    """Arrays of another shape or dtype, or holding hostile numbers, laid out consistently (the parser
    accepts them): the model's ``from_state`` must refuse what it cannot use."""
    header, blobs = split(bases[base])
    entries = [dict(e) for e in header["arrays"]]
    with np.errstate(all="ignore"):  # the forger's casts of NaN or 1e300 to other dtypes, not the model's
        for _ in range(data.draw(st.integers(1, 3))):
            entry = data.draw(st.sampled_from(entries))
            a = np.frombuffer(blobs[entry["name"]], dtype=entry["dtype"]).reshape(entry["shape"])
            change = data.draw(st.sampled_from(["reshape", "grow", "shrink", "dtype", "values", "scalar", "transpose"]))
            if change == "reshape":
                a = a.reshape(data.draw(st.sampled_from([(-1,), (1, -1), (-1, 1), (1, 1, -1)])))
            elif change == "grow":
                axis = data.draw(st.integers(0, max(a.ndim - 1, 0))) if a.ndim else 0
                a = np.concatenate([a, a[:1] if a.ndim and len(a) else np.zeros((1,) + a.shape[1:], a.dtype)], axis=0) \
                    if axis == 0 and a.ndim else np.zeros((2,) * max(a.ndim, 1))
            elif change == "shrink" and a.ndim and a.shape[0]:
                a = a[:-1]
            elif change == "dtype":
                a = a.astype(data.draw(st.sampled_from(["<i8", "<f4", "|b1", "|u1", "<f2", "<i2"])))
            elif change == "values" and a.size:
                a = a.copy()
                flat = a.reshape(-1)
                for _ in range(data.draw(st.integers(1, 3))):
                    j = data.draw(st.integers(0, flat.size - 1))
                    value = data.draw(st.sampled_from([np.nan, np.inf, -np.inf, -1.0, -1e300, 1e300, 2**40, -7, 10**9]))
                    with contextlib.suppress(OverflowError, ValueError):
                        flat[j] = value
            elif change == "scalar":
                a = np.asarray(a.reshape(-1)[:1].sum() if a.size else 0, dtype=a.dtype).reshape(())
            elif change == "transpose" and a.ndim >= 2:
                a = np.ascontiguousarray(np.swapaxes(a, 0, 1))
            a = np.ascontiguousarray(a)
            entry["dtype"], entry["shape"] = a.dtype.str, list(a.shape)
            blobs[entry["name"]] = a.tobytes()
    check(tmp_path / "forged.snb", lay_out(header, blobs, entries))


@fuzz_settings(60)
@given(base=st.sampled_from(BASE_NAMES), where=st.sampled_from(["header", "model", "daemon", "stats", "columns"]),
       depth=st.integers(30, 200_000), kind=st.sampled_from(["list", "dict"]))
def test_deep_json_is_refused_without_a_recursion_error(bases, tmp_path, base, where, depth, kind):
    header, blobs = split(bases[base])
    marker = "\x00DEEP\x00"
    if where == "header":
        text = deep(depth, kind)
    else:
        if where == "model":
            header["model"]["params"] = marker
        elif where == "daemon":
            header["daemon"] = marker
        elif where == "stats":
            header["model"]["stats"]["types"] = marker
        else:
            header["model"]["stats"]["columns"].append(marker)
        text = json.dumps(header).replace(json.dumps(marker), deep(depth, kind))
    body = body_of(blobs.values())
    header_only = assemble(text.encode(), body)
    check(tmp_path / "deep.snb", header_only)


# ----------------------------------------------------------------------- pinned cases: what the fuzzers found


def forged(tmp_path, name, header_text: bytes, body: bytes = b"") -> pathlib.Path:
    path = tmp_path / name
    path.write_bytes(assemble(header_text, body))
    return path


def refused(path, *patterns: str) -> str:
    """``stream_nb.load`` and ``snapshot inspect`` both refuse ``path``, naming it and each pattern."""
    with pytest.raises(SnapshotError) as info:
        stream_nb.load(path)
    message = str(info.value)
    assert message.startswith(f"{path}: ") and "\n" not in message, message
    for pattern in patterns:
        assert re.search(pattern, message), (pattern, message)
    status, out, err = inspect(path, as_json=False)
    assert (status, out, err) == (2, "", f"stream-nb: error: {message}\n")
    return message


def state_file(tmp_path, model, arrays=None, meta=None, daemon=None, name="state.snb") -> pathlib.Path:
    """A snapshot written by the real writer from a (possibly edited) state: checksum and layout right."""
    a, m = model.state()
    path = tmp_path / name
    _snapshot.write(path, a if arrays is None else arrays(a), m if meta is None else meta(m), daemon=daemon)
    return path


def trained(name: str):
    model = MODELS[name]()
    for x, y in stream(120, seed=3, int_labels=name in INT_LABELS):
        model.learn_one(x, y)
    return model


@pytest.mark.parametrize("where", ["header", "model", "daemon"])
def test_json_nested_past_pythons_recursion_limit_is_a_snapshot_error(bases, tmp_path, where):
    # found: json.loads raised RecursionError, which escaped load() and inspect
    header, blobs = split(bases["nb"])
    text = deep(100_000, "list")
    if where != "header":
        header[where if where == "daemon" else "model"] = "MARK"
        text = json.dumps(header).replace('"MARK"', text)
    refused(forged(tmp_path, "deep.snb", text.encode(), body_of(blobs.values())), "nests deeper than 64 levels")


def test_json_nested_within_pythons_limit_but_past_any_models_is_refused_before_decoding(bases, tmp_path):
    # below json's own limit, 900 levels still made decode_meta, deepcopy and inspect recurse ~1000 deep
    header, blobs = split(bases["nb"])
    header["model"]["params"]["types"] = "MARK"
    text = json.dumps(header).replace('"MARK"', deep(900, "dict"))
    refused(forged(tmp_path, "deep.snb", text.encode(), body_of(blobs.values())), "nests deeper than 64 levels")


@pytest.mark.parametrize("dtype", ["(1,2", "(-1,)f8", "(99999999999,99999999)f8", "M8[foo]", "<U4", "|O", ">f8"])
def test_a_dtype_numpy_cannot_parse_or_we_do_not_take_is_a_snapshot_error(bases, tmp_path, dtype):
    # found: numpy's dtype parser raised SyntaxError and ValueError (only TypeError was caught)
    header, blobs = split(bases["nb"])
    header["arrays"][0]["dtype"] = dtype
    path = forged(tmp_path, "dtype.snb", json.dumps(header).encode(), body_of(blobs.values()))
    refused(path, r"array 'class_count': dtype .* is not a little-endian bool, int or float \(expected one of")


@pytest.mark.parametrize("shape,nbytes,reason", [
    # numpy: "Maximum allowed dimension exceeded"
    ([0, 2**70], 0, "entry 0: shape is \\[0, 1180591620717411303424\\], expected a list of integers from 0 to"),
    ([0, 2**62], 0, "array 'class_count': .*dimension larger than the"),
    ([1] * 70, 8, "array 'class_count': 70 dimensions, at most 32"),  # numpy: "maximum supported dimension is 64"
    ([0, 2**40, 2**40], 0, "array 'class_count': .*dimension larger than the"),  # empty, yet 10^24 rows
])
def test_a_shape_numpy_cannot_make_is_a_snapshot_error(bases, tmp_path, shape, nbytes, reason):
    header, blobs = split(bases["nb"])
    entry = header["arrays"][0]
    entry.update(shape=shape, nbytes=nbytes)
    blobs[entry["name"]] = bytes(nbytes)
    refused(forged(tmp_path, "shape.snb", *split_again(header, blobs)), reason)


def split_again(header: dict, blobs: dict[str, bytes]) -> tuple[bytes, bytes]:
    """Header text and body with the array table's offsets recomputed for ``blobs``."""
    body, table = b"", []
    for entry in header["arrays"]:
        body += bytes(_snapshot._align(len(body)) - len(body))
        table.append(dict(entry, offset=len(body)))
        body += blobs[entry["name"]]
    return json.dumps(dict(header, arrays=table)).encode(), body


def test_an_array_named_twice_is_refused(bases, tmp_path):
    # found: the second class_count silently replaced the first
    header, blobs = split(bases["nb"])
    header["arrays"].insert(1, dict(header["arrays"][0]))
    blobs_list = [blobs[e["name"]] for e in header["arrays"]]
    body, table = b"", []
    for entry, blob in zip(header["arrays"], blobs_list):
        body += bytes(_snapshot._align(len(body)) - len(body))
        table.append(dict(entry, offset=len(body)))
        body += blob
    header["arrays"] = table
    refused(forged(tmp_path, "twice.snb", json.dumps(header).encode(), body), "array 'class_count' appears twice")


@pytest.mark.parametrize("daemon,reason", [
    (["a", "list"], "the daemon part is \\['a', 'list'\\], expected an object or null"),
    ({"positions": [["in.jsonl", 3]]}, "'positions' is .*expected an object of integers from 0"),
    ({"positions": {"in.jsonl": -3}}, "'positions' is .*expected an object of integers from 0"),
    ({"metrics": {"labeled": 3}}, "metrics: lack 'events'"),
    ({"metrics": {**PrequentialMetrics().state(), "correct": "many"}}, "metrics: correct is 'many', expected an "
                                                                       "integer from 0"),
    ({"metrics": {**PrequentialMetrics().state(), "log_loss_sum": -1.0}}, "log_loss_sum is -1.0"),
    ({"metrics": {**PrequentialMetrics().state(), "dead_letters_by_reason": {"x": "y"}}}, "dead_letters_by_reason"),
    ({"sequence": "7"}, "'sequence' is '7', expected an integer from 0 to 2\\*\\*63 - 1"),
    ({"sequence": 2**64}, "'sequence' is 18446744073709551616, expected an integer from 0"),  # orjson: none such
    ({"positions": {"in.jsonl": 2**63}}, "'positions' is .*expected an object of integers from 0 to 2"),
    ({"metrics": {**PrequentialMetrics().state(), "learned": 2**70}}, "learned is 1180591620717411303424"),
    ({"exactly_once": "no"}, "'exactly_once' is 'no', expected true or false"),
])
def test_a_daemon_part_of_the_wrong_shape_is_refused_not_a_traceback_in_inspect(tmp_path, daemon, reason):
    # found: inspect raised AttributeError, KeyError or TypeError formatting these
    refused(state_file(tmp_path, trained("nb"), daemon=daemon), reason)


def test_inspect_prints_a_model_with_integers_beyond_64_bits_as_json(tmp_path):
    # found: orjson takes no integer beyond 64 bits, and inspect --json raised TypeError for a model
    # taught such a label in Python (or given such a parameter)
    model = stream_nb.TAN(search=stream_nb.Tree(rebuild_every=2**64), loss={2**70: {1: 3.0}})
    model.learn_one({"a": "x"}, 2**70)
    model.learn_one({"a": "y"}, 1)
    path = tmp_path / "big.snb"
    stream_nb.save(model, path)
    status, out, err = inspect(path, as_json=True)
    assert (status, err) == (0, "")
    info = json.loads(out)
    assert info["model"]["classes"] == [2**70, 1] and info["model"]["params"]["search"]["rebuild_every"] == 2**64
    assert info["model"]["params"]["loss"] == {str(2**70): {"1": 3.0}}
    assert inspect(path, as_json=False)[0] == 0


def test_a_header_without_its_time_is_refused(bases, tmp_path):
    header, blobs = split(bases["nb"])
    del header["created"]  # found: inspect raised KeyError
    refused(forged(tmp_path, "untimed.snb", json.dumps(header).encode(), body_of(blobs.values())),
            "'created' is None, expected a time as text")


def test_a_restarting_daemon_meets_a_hostile_daemon_part_as_an_unusable_snapshot(tmp_path):
    # the daemon reads the same header: it now names the file and refuses to start (before: AttributeError)
    from stream_nb.engine import Checkpointer, Engine
    from stream_nb.snapshots import SnapshotStore

    directory = tmp_path / "snapshots"
    directory.mkdir()
    store = SnapshotStore(directory)
    state_file(directory, trained("nb"), daemon={"positions": "everywhere", "store_id": "x"},
               name=os.path.basename(store.path(1)))
    store.open()
    try:
        assert store.sequences() == [1]
        checkpointer = Checkpointer(store, every_events=10, interval_s=60.0, source_info=None)
        Engine(stream_nb.NaiveBayes(), _EmptySource(), _NullSink(), _NullSink(), checkpointer=checkpointer)
        with pytest.raises(SnapshotError, match=r"no usable snapshot .*'positions' is 'everywhere'"):
            checkpointer.recover()
    finally:
        store.close()


class _EmptySource:
    exhausted = True

    def poll(self, max_records, timeout):
        return []

    def commit(self, positions):
        pass

    def seek(self, positions):
        pass

    def close(self):
        pass


class _NullSink:
    def send(self, value, key=None):
        pass

    def flush(self):
        pass

    def close(self):
        pass


def test_a_model_type_that_is_not_a_name_is_refused(tmp_path):
    # found: ["TAN"] as the model's type raised TypeError (unhashable) in load
    path = state_file(tmp_path, trained("tan"), meta=lambda m: {**m, "model": ["TAN"]})
    refused(path, r"holds a model of type \['TAN'\]; expected one of NaiveBayes")


def test_arrays_of_another_class_count_than_the_metadata_are_refused_not_broadcast(tmp_path):
    # found: one class's counts were broadcast over the five classes the metadata names, and the
    # model loaded, predicting from counts it never had
    def one_class(arrays):
        return {k: v[:1] for k, v in arrays.items()}

    refused(state_file(tmp_path, trained("nb"), arrays=one_class),
            r"array '\w+' has shape \[1(, \d+)*\]; the metadata \(3 classes, .*\) gives it \[3")


@pytest.mark.parametrize("edit,reason", [
    (lambda a: {**a, "class_count": np.full_like(a["class_count"], np.nan)}, "'class_count': counts must be finite"),
    (lambda a: {**a, "value_count": -a["value_count"] - 1}, "'value_count': counts must be finite, >= 0"),
    (lambda a: {**a, "feat_count": a["feat_count"] * 1e300}, "'feat_count': counts must be .* at most 1e\\+100"),
    (lambda a: {**a, "pair_count": a["value_count"]}, "unexpected arrays pair_count"),
    (lambda a: {k: v for k, v in a.items() if k != "obs_feat_count"}, "array 'obs_feat_count' is missing"),
])
def test_counts_no_stream_could_give_are_refused(tmp_path, edit, reason):
    # found: NaN, negative and huge counts loaded, and the model's probabilities were NaN
    refused(state_file(tmp_path, trained("nb"), arrays=edit), reason)


@pytest.mark.parametrize("name,edit,reason", [
    ("tan", lambda m: {**m, "stats": {**m["stats"], "pairs": False}}, "stats.pairs is False; a TAN .* keeps True"),
    ("kdb2", lambda m: {**m, "stats": {**m["stats"], "tuples": 0}}, "stats.tuples is 0; a KDB .* keeps 3"),
    ("nb", lambda m: {**m, "stats": {**m["stats"], "numeric": "bins"}}, "stats.numeric is 'bins'"),
])
def test_a_store_of_another_kind_than_the_model_is_refused(tmp_path, name, edit, reason):
    # found: a TAN over a store without pair counts loaded, then raised AttributeError predicting
    refused(state_file(tmp_path, trained(name), meta=edit), reason)


def _feature(meta, name):
    return next(f for f in meta["stats"]["features"] if f["name"] == name)


def _edit_feature(name, **changes):
    def edit(meta):
        meta = copy.deepcopy(meta)
        _feature(meta, name).update(changes)
        return meta
    return edit


def _edit_discretiser(**changes):
    def edit(meta):
        meta = copy.deepcopy(meta)
        _feature(meta, "weight")["discretiser"].update(changes)
        return meta
    return edit


@pytest.mark.parametrize("edit,reason", [
    (_edit_discretiser(edges=None, buffer=["a", "b"]), "discretiser.buffer: expected a list of fewer than"),
    (_edit_discretiser(bins=-5), "discretiser.bins: expected an integer >= 1"),
    (_edit_discretiser(edges=[5.0, 1.0]), "discretiser.edges: expected a list of numbers in increasing order"),
    (_edit_feature("weight", discretiser=None), "discretiser: expected an object with bins"),
    (_edit_feature("color", kind="gaussian"), "kind: expected one of binned, categorical"),
    (lambda m: {**m, "stats": {**m["stats"], "classes": m["stats"]["classes"][:-1] + [m["stats"]["classes"][0]]}},
     "a class appears twice"),
    (lambda m: {**m, "stats": {**m["stats"], "columns": m["stats"]["columns"] + [[99, "x"]]}},
     "feature index int 99 is not -1 or one of the 5 features"),
    (lambda m: {**m, "stats": {**m["stats"], "bin_edges": {"weight": "abc"}}}, "bin_edges\\['weight'\\]"),
    (lambda m: {**m, "stats": {**m["stats"], "label_type": "number"}}, "label_type: expected the JSON type of every"),
    (lambda m: {**m, "stats": {**m["stats"], "label_type": "banana"}}, "label_type: expected the JSON type of every"),
])
def test_store_metadata_that_would_crash_later_is_refused(tmp_path, edit, reason):
    # found: a discretiser buffering text or with -5 bins loaded, then crashed learning its feature
    refused(state_file(tmp_path, trained("aode"), meta=edit), reason)


def _edit_extra(**changes):
    return lambda m: {**m, "extra": {**m["extra"], **changes}}


def _edit_array(name, make):
    return lambda a: {**a, name: make(a[name])}


def _cycle(parent):
    parent = parent.copy()
    root = int(np.flatnonzero(parent < 0)[0])
    child = int(np.flatnonzero(parent == root)[0])
    parent[root] = child  # the root's child becomes its parent: a cycle through the root
    return parent


@pytest.mark.parametrize("name,arrays,meta,reason", [
    ("tan", _edit_array("model.parent", _cycle), None, "tree: the root \\d+ has a parent"),
    ("tan", _edit_array("model.parent", lambda p: np.append(p, 40)), None, "tree: expected at most 5 parents"),
    ("tan", _edit_array("model.parent", lambda p: p[:4].reshape(2, 2).copy()), None,  # a repr of two lines
     "tree: expected at most 5 parents, each a feature index or -1, got \\[\\[-?\\d+, -?\\d+\\], \\["),
    ("tan", None, _edit_extra(root=17), "tree: the root must be a feature index or -1"),
    ("tan", _edit_array("model.cmi", lambda c: c[:1, :1].copy()), None, "the CMI matrix has shape \\[1, 1\\]"),
    ("spode", _edit_array("model.loss_n", lambda v: np.append(v, [1.0, 1.0])), None, "loss_sum and loss_n"),
    ("spode", None, _edit_extra(chosen="nowhere"), "chosen: expected the parent None or one of the features"),
    ("spode-parent", None, _edit_extra(chosen="size"), "chosen: expected the parent 'color'"),
    ("kdb2", _edit_array("model.order", lambda o: o[::-1].copy()), None, "parents .* are not at most k=2 distinct"),
    ("kdb2", _edit_array("model.order", lambda o: np.append(o[:-1], 9)), None, "the order must list distinct"),
    ("kdb2", None, _edit_extra(since_rebuild=10**6), "since_rebuild: expected an integer from 0 to rebuild_every"),
    ("kdb2", None, _edit_extra(n_em_skipped=-1), "n_em_skipped: expected an integer >= 0"),
])
def test_a_structure_that_is_no_tree_or_points_nowhere_is_refused(tmp_path, name, arrays, meta, reason):
    # found: such models loaded, then looped forever (TAN's tree through a cycle), raised IndexError
    # (SPODE ranking scores of features it does not have) or learned batches of negative size
    refused(state_file(tmp_path, trained(name), arrays=arrays, meta=meta), reason)


def test_a_tiny_snapshot_of_a_kdb_with_many_parents_takes_little_memory(tmp_path):
    # found: KDB(k=8) allocated a 9 GB table with spare room before its first event, so a 2 kB
    # snapshot saying k=8 took 9 GB to load
    path = state_file(tmp_path, stream_nb.KDB(k=8))
    size = path.stat().st_size
    tracemalloc.start()
    try:
        model = stream_nb.load(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < MEMORY_FACTOR * size + MEMORY_SLACK, f"{peak:,} bytes for a {size:,}-byte file"
    exercise(model, events=3)  # each event of a 9-way KDB adds F^9 tuple cells: three show it learns, twelve took 40 s


def test_a_many_dimensional_table_without_spare_room_still_counts_every_event():
    # the table above gets no spare room; it must still grow right when classes and values keep coming
    model = stream_nb.KDB(k=3, search=stream_nb.Parents(0), max_table_cells=10**8, memory_budget=None)  # dense: its growth
    rng = random.Random(8)
    events = [({f: f"{f}{rng.randrange(2 + i // 15)}" for f in "abcd"}, f"c{rng.randrange(1 + i // 40)}")
              for i in range(160)]
    for x, y in events:
        model.learn_one(x, y)
    s = model._stats
    C, V = s.n_classes, len(s.value_keys)
    assert C == 4 and V > 16  # grown past the sizes that keep spare room
    expected = np.zeros((C,) + (V,) * 4)
    for x, y in events:
        cols = [s.values[s.feature_index[f]][v] for f, v in x.items()]
        for index in itertools.product(cols, repeat=4):
            expected[(s.class_index[y],) + index] += 1
    np.testing.assert_array_equal(s.tuple_count[(slice(0, C),) + (slice(0, V),) * 4], expected)


def test_a_pickle_behind_a_valid_checksum_is_never_unpickled(bases, tmp_path):
    """An object array holding a pickle that would create a file: refused for its dtype, never run."""
    marker = tmp_path / "executed"
    payload = pickle.dumps(np.array([Touch(str(marker))], dtype=object))

    header, blobs = split(bases["nb"])
    entries = [dict(e) for e in header["arrays"]]
    entries[0].update(dtype="|O", shape=[1])
    blobs[entries[0]["name"]] = payload
    path = tmp_path / "pickle.snb"
    assert check(path, lay_out(header, blobs, entries)) is None
    refused(path, r"dtype '\|O' is not a little-endian bool, int or float")
    assert not marker.exists()


class Touch:
    """Unpickling this creates a file: the proof that something was unpickled."""

    def __init__(self, path: str):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))
