"""The inputs of ``stream-nb evaluate`` and ``explain``: CSV and JSON-lines files, stdin, river streams.

:func:`open_events` gives an :class:`EventSource`: ``(x, y, where)`` events
and :class:`BadRow` items, decoded as :mod:`stream_nb.tools.evaluate` describes.
"""

from __future__ import annotations

import csv
import dataclasses
import inspect
import io
import os
import re
import sys
import typing

import numpy as np

from ..._checks import is_integer
from ...engine import BOM, EventDecoder, validate_label
from ...exceptions import ConfigError, InvalidEventError
from ._drifting import DRIFT_STREAMS

__all__ = [
    "DEFAULT_RIVER_EVENTS",
    "RIVER_STREAMS",
    "BadRow",
    "EventSource",
    "event_config",
    "open_events",
    "parse_cell",
]

#: Default number of events taken from a river synthetic stream.
DEFAULT_RIVER_EVENTS = 10_000

#: ``river:NAME`` -> a function of the seed building the stream (same settings as ``bench/learners.py``).
RIVER_STREAMS: dict[str, typing.Callable[[int], typing.Any]] = {
    "LED": lambda seed: _synth().LED(seed=seed, noise_percentage=0.1, irrelevant_features=True),
    "STAGGER": lambda seed: _synth().STAGGER(seed=seed, balance_classes=False),
    "Agrawal": lambda seed: _synth().Agrawal(seed=seed, classification_function=2, perturbation=0.05),
    "RandomTree": lambda seed: _synth().RandomTree(
        seed_tree=seed, seed_sample=seed, n_classes=3, n_num_features=4, n_cat_features=4, n_categories_per_feature=3
    ),
    **DRIFT_STREAMS,  # concept drift, abrupt (concatenated streams) and gradual: see _drifting.py
}

_CLASSIFICATION_TASKS = ("Binary classification", "Multi-class classification")
_INT = re.compile(r"[+-]?(?:0|[1-9][0-9]*)")
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)(?:[eE][+-]?[0-9]+)?")


def _synth():
    # river's synthetic streams are imported on first use only: most runs read a file
    from river.datasets import synth

    return synth


# ----------------------------------------------------------------------------- inputs


def parse_cell(text: str) -> typing.Any:
    """A CSV cell as a feature value: ``None`` (missing), ``int``, ``float`` or ``str``.

    >>> [parse_cell(c) for c in ["", "  ", "12", "-3", "0", "0.5", "1e3", " 2.50 ", "007", "nan", "true", "a b"]]
    [None, None, 12, -3, 0, 0.5, 1000.0, 2.5, '007', 'nan', 'true', 'a b']
    """
    t = text.strip()
    if not t:
        return None
    if _INT.fullmatch(t):
        return int(t)
    if _FLOAT.fullmatch(t) and not t.lstrip("+-").isdigit():
        return float(t)
    return t


@dataclasses.dataclass(frozen=True)
class BadRow:
    """A row that was skipped: where it was, the reason code and the message."""

    where: str
    reason: str
    error: str

    def __str__(self) -> str:
        return f"{self.where}: {self.reason}: {self.error}"


class EventSource:
    """An iterable of ``(x, y, where)`` events and :class:`BadRow` items, with a description.

    Built by :func:`open_events`. ``total`` is the number of items expected
    (for a progress bar), or ``None`` when unknown; ``blank_lines`` counts
    blank lines skipped so far; ``label_field`` names the field the labels come from.
    """

    label_field: str | None = None

    def __init__(self, describe: str, items: typing.Callable[["EventSource"], typing.Iterator], total: int | None):
        self.describe = describe
        self.total = total
        self.blank_lines = 0
        self._items = items

    def __iter__(self) -> typing.Iterator:
        return self._items(self)


def event_config(label_field: str, id_field: str | None, features: list[str] | None) -> dict:
    """The :class:`~stream_nb.engine.EventDecoder` config of these fields (empty id field or features: none).

    Examples
    --------
    >>> event_config("label", "", None)
    {'label_field': 'label', 'id_field': None, 'features': None}
    """
    return {"label_field": label_field, "id_field": id_field or None, "features": features or None}


def _jsonl_items(lines: typing.Iterable[bytes], name: str, decoder: EventDecoder, limit: int | None):
    def items(src: EventSource):
        taken = 0
        for number, line in enumerate(lines, 1):
            if limit is not None and taken >= limit:
                return
            content = line.strip()
            if not content or content == BOM:  # a lone byte order mark is no event either
                src.blank_lines += 1
                continue
            where = f"{name} line {number}"
            try:
                event = decoder.decode(line.rstrip(b"\r\n"))
            except InvalidEventError as exc:
                yield BadRow(where, exc.reason, str(exc))
                continue
            taken += 1
            yield event.features, event.label, where

    return items


def _csv_items(text: typing.Iterable[str], name: str, label_field: str, id_field: str | None,
               features: list[str] | None, limit: int | None):
    def items(src: EventSource):
        reader = csv.reader(text)
        header = None
        for row in reader:
            if row and any(cell.strip() for cell in row):
                header = [h.strip() for h in row]
                break
            src.blank_lines += 1
        if header is None:
            return
        if "" in header:
            raise ConfigError(f"{name}: the CSV header has an empty column name at column {header.index('') + 1}")
        dup = sorted({h for h in header if header.count(h) > 1})
        if dup:
            raise ConfigError(f"{name}: the CSV header repeats the column name(s) {', '.join(map(repr, dup))}")
        if features:
            missing = [f for f in features if f not in header]
            if missing:
                raise ConfigError(f"{name}: --features names column(s) {', '.join(map(repr, missing))}, "
                                  f"which the header {header} does not have")
        keep = [(i, h) for i, h in enumerate(header)
                if h not in (label_field, id_field) and (not features or h in features)]
        label_at = header.index(label_field) if label_field in header else None
        taken = 0
        for row in reader:
            if limit is not None and taken >= limit:
                return
            if not row or not any(cell.strip() for cell in row):
                src.blank_lines += 1
                continue
            where = f"{name} line {reader.line_num}"
            if len(row) != len(header):
                yield BadRow(where, "wrong_cell_count",
                             f"expected {len(header)} cells as in the header, got {len(row)}")
                continue
            try:
                label = validate_label(parse_cell(row[label_at]), label_field) if label_at is not None else None
            except InvalidEventError as exc:
                yield BadRow(where, exc.reason, str(exc))
                continue
            x = {}
            for i, h in keep:
                v = parse_cell(row[i])
                if v is not None:
                    x[h] = v
            taken += 1
            yield x, label, where

    return items


def _river_classification_streams(seed: int) -> dict[str, typing.Callable[[], typing.Any]]:
    """Every river classification stream ``river:NAME`` can name: ``{name: build}``.

    The streams of :data:`RIVER_STREAMS` (with their settings), then every other class of
    :mod:`river.datasets.synth` whose task is single-label classification (built with its
    defaults and every seed parameter set to ``seed``), then every real data set river ships
    in its wheel (a ``FileDataset`` that is not a ``RemoteDataset``, so no download) whose
    task is single-label classification.
    """
    # river's data sets, like its synthetic streams, are imported on first use only
    from river import datasets
    from river.datasets import base

    synth = _synth()
    out: dict[str, typing.Callable[[], typing.Any]] = {k: (lambda make=make: make(seed)) for k, make in RIVER_STREAMS.items()}
    for n in sorted(dir(synth)):
        cls = getattr(synth, n)
        if n in out or not isinstance(cls, type) or not getattr(cls, "__module__", "").startswith("river"):
            continue
        seeds = {p: seed for p in inspect.signature(cls).parameters if "seed" in p}
        try:
            task = cls(**seeds).task
        except Exception:  # noqa: BLE001 - a generator that cannot be built from its defaults is not offered
            continue
        if task in _CLASSIFICATION_TASKS:
            out[n] = lambda cls=cls, seeds=seeds: cls(**seeds)
    for n in sorted(getattr(datasets, "__all__", ())):
        cls = getattr(datasets, n, None)
        if not isinstance(cls, type) or not issubclass(cls, base.FileDataset) or issubclass(cls, base.RemoteDataset):
            continue
        try:
            dataset = cls()
        except Exception:  # noqa: BLE001
            continue
        if dataset.task in _CLASSIFICATION_TASKS and os.path.exists(dataset.path):
            out[n] = cls
    return out


def _not_offered(name: str) -> str:
    """Why ``river:NAME`` is not among the choices: unknown, not classification, or a download."""
    # river's data sets, imported on first use only (see above)
    from river import datasets
    from river.datasets import base

    synth = _synth()
    for module in (synth, datasets):
        cls = next((getattr(module, n) for n in dir(module) if n.lower() == name.lower()
                    and isinstance(getattr(module, n), type)), None)
        if cls is None:
            continue
        if issubclass(cls, base.RemoteDataset):
            return f"river's {cls.__name__} is downloaded on first use, so it is not offered"
        try:
            task = cls().task
        except Exception:  # noqa: BLE001
            return f"river's {cls.__name__} cannot be built from its defaults"
        return f"river's {cls.__name__} is a {task.lower()} stream, not single-label classification"
    return "no such river classification stream"


def _river_stream(name: str, seed: int):
    """``(name, stream, is_synthetic)`` of ``river:NAME`` (case-insensitive); ConfigError listing the choices."""
    streams = _river_classification_streams(seed)
    match = next((n for n in streams if n.lower() == name.lower()), None)
    if match is None:
        raise ConfigError(f"--input river:{name}: {_not_offered(name)}; expected one of {', '.join(streams)}")
    stream = streams[match]()
    return match, stream, getattr(stream, "n_samples", None) is None


def _river_items(stream, name: str, limit: int):
    def items(src: EventSource):
        for i, (x, y) in enumerate(stream.take(limit), 1):
            where = f"{name} event {i}"
            try:
                label = validate_label(y.item() if isinstance(y, np.generic) else y, "y")
            except InvalidEventError as exc:
                yield BadRow(where, exc.reason, str(exc))
                continue
            yield {str(k): (v.item() if isinstance(v, np.generic) else v) for k, v in x.items()}, label, where

    return items


def _count_lines(path: str) -> int:
    n, last = 0, b"\n"
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            n += chunk.count(b"\n")
            last = chunk[-1:]
    return n + (last != b"\n")


def open_events(
    source: str,
    *,
    fmt: str | None = None,
    label_field: str = "label",
    id_field: str | None = "id",
    features: list[str] | None = None,
    events: int | None = None,
    seed: int = 1,
    stdin: typing.BinaryIO | None = None,
) -> EventSource:
    """The events of a CSV or JSON-lines file, of stdin (``"-"``), or of a river stream (``"river:LED"``).

    Parameters
    ----------
    source
        A path, ``"-"`` for standard input (read whole before the first event), or ``"river:NAME"``.
    fmt
        ``"csv"`` or ``"jsonl"``; by default from the file name (``.csv``; ``.jsonl``, ``.json``,
        ``.ndjson``), for stdin from its first non-blank byte.
    label_field, id_field, features
        As in ``stream-nb run``: the label, a field dropped as the id (``None``: none), the
        fields used as features (``None``: all others). A river stream's label is its ``y``.
    events
        Take at most this many valid events (river streams: default 10,000).
    seed
        Seed of a river stream.

    Examples
    --------
    >>> src = open_events("river:STAGGER", events=3)
    >>> [(x, y) for x, y, _ in src]
    [({'size': 0, 'color': 2, 'shape': 0}, 0), ({'size': 1, 'color': 0, 'shape': 1}, 0), ({'size': 1, 'color': 1, 'shape': 2}, 0)]
    """
    if events is not None and (not is_integer(events) or events < 1):
        raise ConfigError(f"--events: expected a positive integer, got {events!r}")
    if fmt not in (None, "csv", "jsonl"):
        raise ConfigError(f"--format: expected csv or jsonl, got {fmt!r}")
    if source.startswith("river:"):
        name, stream, synthetic = _river_stream(source[len("river:"):], seed)
        if synthetic:
            n = events or DEFAULT_RIVER_EVENTS
            describe = f"river:{name} ({n:,} events, seed {seed})"
        else:  # a data set shipped with river: all of it, or its first --events
            n = min(events or stream.n_samples, stream.n_samples)
            describe = f"river:{name} ({n:,} of its {stream.n_samples:,} events)"
        src = EventSource(describe, _river_items(stream, f"river:{name}", n), n)
        src.label_field = "y"
        return src
    decoder = EventDecoder(event_config(label_field, id_field, features))
    if source == "-":
        raw = stdin if stdin is not None else sys.stdin.buffer
        data = raw.read()
        if data.startswith(BOM):  # a byte order mark is no part of the text (a CSV header, the first event)
            data = data[len(BOM):]
        if fmt is None:
            fmt = "jsonl" if data.lstrip()[:1] == b"{" else "csv"
        name, total = "stdin", data.count(b"\n") + (not data.endswith(b"\n") and bool(data))
        if fmt == "jsonl":
            items = _jsonl_items(io.BytesIO(data), name, decoder, events)
        else:
            items = _csv_items(io.StringIO(data.decode("utf-8"), newline=""), name, label_field, id_field,
                               features, events)
    else:
        if not os.path.isfile(source):
            why = ("it is a directory" if os.path.isdir(source) else
                   "not a regular file" if os.path.exists(source) else "no such file")
            raise ConfigError(f"--input {source}: expected a CSV or JSON-lines file, '-' or river:NAME; {why}")
        try:
            os.close(os.open(source, os.O_RDONLY))
        except OSError as exc:
            raise ConfigError(f"--input {source}: cannot read it: {exc.strerror}") from None
        if fmt is None:
            ext = os.path.splitext(source)[1].lower()
            if ext == ".csv":
                fmt = "csv"
            elif ext in (".jsonl", ".json", ".ndjson"):
                fmt = "jsonl"
            else:
                raise ConfigError(f"--input {source}: cannot tell CSV from JSON lines by the extension "
                                  f"{ext or '(none)'}; give --format csv or --format jsonl")
        name, total = source, _count_lines(source)

        def items(src: EventSource, fmt=fmt):
            if fmt == "jsonl":
                with open(source, "rb") as f:
                    yield from _jsonl_items(f, name, decoder, events)(src)
            else:
                with open(source, encoding="utf-8-sig", newline="") as f:  # -sig: without a byte order mark
                    yield from _csv_items(f, name, label_field, id_field, features, events)(src)

    if fmt == "csv" and total:
        total -= 1  # the header
    if events is not None and total is not None:
        total = min(total, events)
    src = EventSource(f"{name} ({fmt})", items, total)
    src.label_field = label_field
    return src

