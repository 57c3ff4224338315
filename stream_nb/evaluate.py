"""``stream-nb evaluate``: several models, prequentially, over the same events.

Every valid event is first predicted by every model as it stands, then, when
it carries a label, learned by every model (prequential, "test then train").
The scores are those of :class:`~stream_nb.engine.PrequentialMetrics`, the
daemon's own: accuracy over labeled events, and the mean log loss
``-ln(max(p, 1e-15))`` of the probability ``p`` given to the true class (0 when
the model had not seen that class yet).

Inputs (:func:`open_events`)
----------------------------
- a JSON-lines file: one event per line, decoded exactly as ``stream-nb run``
  does (:class:`~stream_nb.engine.EventDecoder`: label field, id field,
  ``null`` missing, nested values rejected);
- a CSV file with a header row. Each cell, stripped of surrounding spaces, is
  parsed by :func:`parse_cell`: empty is missing, an integer literal
  (``-12``, ``0``; no leading zeros) an ``int`` (categorical), a decimal
  literal with a point or an exponent (``0.5``, ``1e3``, ``07.5``) a ``float``
  (numeric), anything else the string itself (``"007"``, ``"nan"``,
  ``"true"`` included). The label cell goes through the same rule and then
  through the daemon's label check (``"1.0"`` is the class ``1``, ``"0.5"`` a
  bad row);
- ``-``: standard input, JSON lines when its first non-blank byte is ``{``,
  CSV otherwise (``--format`` says it outright);
- ``river:NAME``: a river classification stream (single-label: binary or
  multi-class). A synthetic one gives its first ``--events`` events (default
  10,000), with every seed parameter set to ``--seed`` (default 1). LED,
  STAGGER, Agrawal and RandomTree take the settings of ``bench/learners.py``
  (see :data:`RIVER_STREAMS`); any other class of :mod:`river.datasets.synth`
  for classification is built with its defaults. A real data set that river
  ships in its wheel, so no download (``Phishing``, ``Bananas``,
  ``ImageSegments``, ``Shuttle`` in river 0.26), gives all its events or its
  first ``--events``. Feature names become strings (LED's ``0`` is ``"0"``),
  so an event written in JSON can name them; the label is river's ``y``.

A row that cannot be used (a CSV row with the wrong number of cells, a line
that is not a JSON object, a bad label, a label of another type than the
first one, a value of a type the models reject: see the daemon's event
contract) is a *bad row*: it is reported on stderr (the first :data:`MAX_REPORTED`
individually) and skipped, and counted by reason. Blank lines are skipped and
counted apart. An event with no label (absent, ``null`` or an empty cell) is
predicted only, and counted as unlabeled; as in the daemon, a model built with
``learn_unlabeled=True`` learns it too (semi-supervised EM) once it knows a class.

Models (:func:`parse_model_specs`)
----------------------------------
``--models`` is a comma-separated list of ``NAME[:PARAM=VALUE[:PARAM=VALUE]...]``
with NAME one of the daemon's ``--model`` choices (``nb``, ``aode``, ``tan``, ...), e.g. ``nb,aode:m=5,tan:rebuild_every=500:bins=10``. The same model
may appear twice with different parameters. A global flag (``--alpha``,
``--bins``, ...) applies to every listed model that takes it; a per-model
parameter overrides it for that model.

Memory
------
The "state bytes" column is the size of the model's plain-data state: the sum
of ``nbytes`` of the arrays of ``model.state()[0]`` plus the length of the
compact JSON encoding (orjson) of its metadata ``model.state()[1]``: what a snapshot holds.

>>> events = [({"sky": "sun"}, "play"), ({"sky": "rain"}, "stay"), ({"sky": "sun"}, "play"), ({"sky": "rain"}, None)]
>>> result = evaluate(events, {"nb": make_model("nb")})
>>> result.n_events, result.n_labeled, result.n_unlabeled
(4, 3, 1)
>>> nb = result.models[0]
>>> nb.metrics.correct, nb.accuracy
(1, 0.3333333333333333)
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import inspect
import io
import math
import os
import re
import sys
import time
import typing

import numpy as np
import orjson

from .cli import MODELS, SETTINGS, _convert, build_model
from .engine import BOM, EventDecoder, PrequentialMetrics, validate_label
from .exceptions import ConfigError, InvalidEventError, LabelTypeError
from .learners import prequential_step
from ._console import INTERRUPTED, InterruptGuard, pipe_safe, writable_directory

__all__ = [
    "RIVER_STREAMS",
    "BadRow",
    "EventSource",
    "Evaluation",
    "ModelResult",
    "ModelSpec",
    "evaluate",
    "format_table",
    "make_model",
    "open_events",
    "parse_cell",
    "parse_model_specs",
    "rolling_accuracy",
    "state_bytes",
    "train",
]

#: Bad rows reported one by one on stderr; the rest are only counted.
MAX_REPORTED = 10

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
}

_CLASSIFICATION_TASKS = ("Binary classification", "Multi-class classification")
_INT = re.compile(r"[+-]?(?:0|[1-9][0-9]*)")
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)(?:[eE][+-]?[0-9]+)?")
_ALL_PARAMS = tuple(dict.fromkeys(p for _, params in MODELS.values() for p in params))
_SETTING = {s.name: s for s in SETTINGS}


def _synth():
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


def _event_config(label_field: str, id_field: str | None, features: list[str] | None) -> dict:
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
    if events is not None and (isinstance(events, bool) or not isinstance(events, int) or events < 1):
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
    decoder = EventDecoder(_event_config(label_field, id_field, features))
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


# ----------------------------------------------------------------------------- models


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    """One entry of ``--models``: the name shown, the model choice and its own parameters."""

    label: str
    model: str
    params: dict


def parse_model_specs(text: str) -> list[ModelSpec]:
    """Parse ``--models``: ``NAME[:PARAM=VALUE...]`` items, comma-separated.

    >>> parse_model_specs("nb,tan:rebuild_every=500:bins=10")
    [ModelSpec(label='nb', model='nb', params={}), ModelSpec(label='tan:rebuild_every=500:bins=10', model='tan', params={'rebuild_every': 500, 'bins': 10})]
    >>> parse_model_specs("nb,svm")
    Traceback (most recent call last):
    ...
    stream_nb.exceptions.ConfigError: --models: unknown model 'svm' in 'nb,svm'; expected one of nb, aode, tan...
    """
    specs: list[ModelSpec] = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        name, *assignments = (p.strip() for p in item.split(":"))
        if name not in MODELS:
            raise ConfigError(f"--models: unknown model {name!r} in {text!r}; expected one of {', '.join(MODELS)}")
        params: dict = {}
        for assignment in assignments:
            key, sep, value = assignment.partition("=")
            key = key.strip().replace("-", "_")
            if not sep or not key:
                raise ConfigError(f"--models {item}: expected PARAM=VALUE after ':', got {assignment!r}")
            accepted = [p for p in MODELS[name][1] if p != "types"]
            if key not in accepted:
                raise ConfigError(f"--models {item}: {name} takes {', '.join(accepted)} per model, not {key!r}"
                                  + (" (give --types for all models)" if key == "types" else ""))
            params[key] = _convert(_SETTING[key], value.strip(), f"--models {item}: {key}")
        specs.append(ModelSpec(item, name, params))
    if not specs:
        raise ConfigError(f"--models: expected at least one of {', '.join(MODELS)}, got {text!r}")
    labels = [s.label for s in specs]
    dup = sorted({lab for lab in labels if labels.count(lab) > 1})
    if dup:
        raise ConfigError(f"--models: {', '.join(dup)} listed twice")
    return specs


def make_model(model: str, params: dict | None = None, defaults: dict | None = None):
    """Build a model as ``stream-nb run --model`` does: ``params`` over the ``defaults`` that apply.

    ``defaults`` (the global flags) are given only to the model if it takes them;
    ``params`` must all apply (else :class:`~stream_nb.exceptions.ConfigError`).

    >>> model = make_model("tan", {"rebuild_every": 50}, {"alpha": 0.5, "m": 3})   # m is AODE's: ignored
    >>> type(model).__name__, model.alpha, model.rebuild_every
    ('TAN', 0.5, 50)
    """
    accepted = MODELS[model][1]
    settings: dict[str, typing.Any] = {p: None for p in _ALL_PARAMS}
    settings.update({k: v for k, v in (defaults or {}).items() if k in accepted and v not in (None, {})})
    settings.update(params or {})
    settings["model"] = model
    return build_model(settings)


def state_bytes(model) -> int:
    """Bytes of the model's state: ``nbytes`` of every array of ``model.state()[0]`` + the JSON length of the meta.

    >>> from stream_nb import NaiveBayes
    >>> state_bytes(NaiveBayes()) > 0
    True
    """
    arrays, meta = model.state()
    size = sum(int(np.asarray(a).nbytes) for a in arrays.values())
    return size + len(orjson.dumps(meta, option=orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY))


# ----------------------------------------------------------------------------- the loop


@dataclasses.dataclass(eq=False)
class ModelResult:
    """One model's run: its prequential metrics, time spent in it, and the per-event record."""

    name: str
    model: typing.Any
    metrics: PrequentialMetrics
    seconds: float = 0.0
    correct: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, dtype=bool))
    loss: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0))

    @property
    def accuracy(self) -> float | None:
        """Prequential accuracy over the labeled events."""
        return self.metrics.accuracy

    @property
    def log_loss(self) -> float | None:
        """Mean prequential log loss (nats) over the labeled events."""
        return self.metrics.log_loss

    @property
    def events_per_second(self) -> float | None:
        """Valid events (predicted, and learned when labeled) per second spent in this model's calls."""
        return self.metrics.predicted / self.seconds if self.seconds > 0 else None

    @property
    def memory_bytes(self) -> int:
        """:func:`state_bytes` of the model at the end."""
        return state_bytes(self.model)


@dataclasses.dataclass
class Evaluation:
    """The outcome of :func:`evaluate`."""

    source: str
    models: list[ModelResult]
    n_events: int = 0
    n_labeled: int = 0
    n_unlabeled: int = 0
    bad_rows: list[BadRow] = dataclasses.field(default_factory=list)
    blank_lines: int = 0
    #: True when Ctrl-C (KeyboardInterrupt) ended the run early: the figures cover the events before it.
    interrupted: bool = False

    @property
    def n_bad(self) -> int:
        """Rows skipped as bad."""
        return len(self.bad_rows)

    @property
    def bad_by_reason(self) -> dict[str, int]:
        """Bad rows counted by reason code."""
        out: dict[str, int] = {}
        for row in self.bad_rows:
            out[row.reason] = out.get(row.reason, 0) + 1
        return out

    def table(self) -> list[dict[str, typing.Any]]:
        """One row per model: model, accuracy, log_loss, events_per_s, state_bytes."""
        return [
            {
                "model": r.name,
                "accuracy": r.accuracy,
                "log_loss": r.log_loss,
                "events_per_s": r.events_per_second,
                "state_bytes": r.memory_bytes,
            }
            for r in self.models
        ]

    def counts_line(self) -> str:
        """One sentence: events, labeled, unlabeled, bad rows by reason, blank lines."""
        text = (f"{self.n_events:,} events ({self.n_labeled:,} labeled, {self.n_unlabeled:,} unlabeled: "
                f"predicted only); {self.n_bad:,} bad rows skipped")
        if self.bad_rows:
            text += " (" + ", ".join(f"{k}: {v:,}" for k, v in sorted(self.bad_by_reason.items())) + ")"
        if self.blank_lines:
            text += f"; {self.blank_lines:,} blank lines"
        return text


def evaluate(
    events: typing.Iterable,
    models: dict[str, typing.Any],
    *,
    source: str = "events",
    progress: bool = False,
    total: int | None = None,
    on_bad_row: typing.Callable[[BadRow], None] | None = None,
) -> Evaluation:
    """Run every model prequentially over the same events.

    Parameters
    ----------
    events
        ``(x, y)`` or ``(x, y, where)`` tuples (``y`` ``None``: unlabeled) and
        :class:`BadRow` items, e.g. an :func:`open_events` source.
    models
        ``{name: model}``, fresh or already trained.
    progress
        Show a tqdm bar on stderr (only when stderr is a terminal).
    total
        Expected number of items, for the bar.
    on_bad_row
        Called with each :class:`BadRow` (read errors, and events a model rejects).

    Each valid event goes through every model's prequential step
    (:func:`~stream_nb.learners.prequential_step`: predicted, then learned when labeled, or
    unlabeled with ``learn_unlabeled=True``), the daemon's own; its time counts towards the
    model's events/s. An event the models reject (an
    :class:`~stream_nb.exceptions.InvalidEventError`) is a bad row for all: the models share the
    rules that decide it (a model rejecting an event another one took is a bug, raised as
    ``RuntimeError``), and a rejected event leaves a model untouched.

    Ctrl-C (SIGINT, or a :class:`KeyboardInterrupt`) ends the loop early instead of escaping:
    the result holds the figures of the events processed before it and has ``interrupted`` set.
    In the main thread the first Ctrl-C takes effect between two events (every model has then
    predicted and learned the same events); a second one interrupts the event at hand, which
    is then not counted, though a model may have learned it.
    """
    results = [ModelResult(name, model, PrequentialMetrics()) for name, model in models.items()]
    out = Evaluation(source, results)
    label_field = getattr(events, "label_field", None)
    correct = [[] for _ in results]
    losses = [[] for _ in results]
    floor = PrequentialMetrics().log_loss_floor
    clock = time.perf_counter
    bar = _progress_bar(progress, total, source)

    def bad(row: BadRow) -> None:
        out.bad_rows.append(row)
        if on_bad_row is not None:
            on_bad_row(row)

    interrupt = InterruptGuard()
    interrupt.start()
    try:
        for item in events:
            if interrupt.requested:
                raise KeyboardInterrupt
            if bar is not None:
                bar.update()
            if isinstance(item, BadRow):
                bad(item)
                continue
            x, y = item[0], item[1]
            where = item[2] if len(item) > 2 else f"event {out.n_events + out.n_bad + 1}"
            steps, rejected = [], None
            for k, r in enumerate(results):
                t = clock()
                try:
                    steps.append(prequential_step(r.model, x, y))  # the one prequential step
                except InvalidEventError as exc:
                    if isinstance(exc, LabelTypeError) and label_field and exc.field is None:
                        exc = exc.for_field(label_field)
                    if k:
                        raise RuntimeError(
                            f"{where}: {r.name} rejected an event that {results[0].name} took: {exc}"
                        ) from exc
                    rejected = exc
                    break
                finally:
                    r.seconds += clock() - t
            if rejected is not None:  # the first model rejected it, which leaves every model untouched
                bad(BadRow(where, rejected.reason, f"{results[0].name}: {rejected}"))
                continue
            out.n_events += 1
            if y is None:
                out.n_unlabeled += 1
            else:
                out.n_labeled += 1
            for k, (r, (prediction, proba, learned, _)) in enumerate(zip(results, steps)):
                r.metrics.update_prediction(y, prediction, proba, learned=learned)
                if y is not None:
                    correct[k].append(prediction is not None and prediction == y)
                    p = proba.get(y, 0.0)
                    losses[k].append(-math.log(min(p, 1.0) if p >= floor else floor))
    except KeyboardInterrupt:
        out.interrupted = True
    finally:
        interrupt.stop()
        if bar is not None:
            bar.close()
    for r, c, ls in zip(results, correct, losses):
        r.correct = np.array(c, dtype=bool)
        r.loss = np.array(ls, dtype=float)
    out.blank_lines = getattr(events, "blank_lines", 0)
    return out


def _learns_unlabeled(model) -> bool:
    """True when the model learns unlabeled events now (``learn_unlabeled=True`` and a class known), as the daemon."""
    return getattr(model, "learn_unlabeled", False) is True and bool(model.classes)


def _progress_bar(progress: bool, total: int | None, desc: str):
    if not progress or not sys.stderr.isatty():
        return None
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit=" events", file=sys.stderr, mininterval=0.2, dynamic_ncols=True)


def train(model, events: typing.Iterable, on_bad_row: typing.Callable[[BadRow], None] | None = None,
          progress: bool = False, total: int | None = None, source: str = "events") -> tuple[int, list[BadRow]]:
    """Learn every labeled event of ``events`` (as :func:`evaluate` reads them); return ``(learned, bad_rows)``.

    Unlabeled events are skipped, unless the model learns them (``learn_unlabeled=True``).

    >>> from stream_nb import NaiveBayes
    >>> model = NaiveBayes()
    >>> train(model, [({"a": 1}, "x"), ({"a": 2}, None), ({"a": 3}, "y")])
    (2, [])
    """
    learned, bad_rows = 0, []
    bar = _progress_bar(progress, total, source)
    try:
        for i, item in enumerate(events, 1):
            if bar is not None:
                bar.update()
            if not isinstance(item, BadRow):
                if item[1] is None and not _learns_unlabeled(model):
                    continue
                try:
                    model.learn_one(item[0], item[1])
                    learned += 1
                    continue
                except InvalidEventError as exc:
                    if isinstance(exc, LabelTypeError) and getattr(events, "label_field", None) and exc.field is None:
                        exc = exc.for_field(events.label_field)
                    item = BadRow(item[2] if len(item) > 2 else f"event {i}", exc.reason, str(exc))
            bad_rows.append(item)
            if on_bad_row is not None:
                on_bad_row(item)
    finally:
        if bar is not None:
            bar.close()
    return learned, bad_rows


def rolling_accuracy(correct: np.ndarray, window: int) -> np.ndarray:
    """Accuracy over the last ``min(window, i + 1)`` labeled events, at every labeled event ``i``.

    >>> rolling_accuracy(np.array([1, 0, 1, 1], dtype=bool), 2).tolist()
    [1.0, 0.5, 0.5, 1.0]
    """
    if window < 1:
        raise ConfigError(f"--window: expected a positive integer, got {window!r}")
    c = np.concatenate([[0], np.cumsum(correct, dtype=np.int64)])
    i = np.arange(1, len(correct) + 1)
    lo = np.maximum(i - window, 0)
    return (c[i] - c[lo]) / (i - lo)


# ----------------------------------------------------------------------------- output


def _fmt(value: typing.Any, kind: str) -> str:
    if value is None:
        return "-"
    if kind == "accuracy" or kind == "log_loss":
        return f"{value:.4f}"
    return f"{value:,.0f}"


_COLUMNS = (("model", "model"), ("accuracy", "accuracy"), ("log_loss", "log loss"),
            ("events_per_s", "events/s"), ("state_bytes", "state bytes"))


def format_table(rows: list[dict], markdown: bool = False) -> str:
    """The :meth:`Evaluation.table` rows as aligned text, or as a Markdown table.

    >>> print(format_table([{"model": "nb", "accuracy": 0.75, "log_loss": 0.5, "events_per_s": 1234.5, "state_bytes": 900}]))
    model  accuracy  log loss  events/s  state bytes
    nb       0.7500    0.5000     1,234          900
    """
    cells = [[h for _, h in _COLUMNS]]
    for row in rows:
        cells.append([str(row["model"])] + [_fmt(row[k], k) for k, _ in _COLUMNS[1:]])
    if markdown:
        lines = ["| " + " | ".join(cells[0]) + " |", "|---|" + "---:|" * (len(_COLUMNS) - 1)]
        lines += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in cells[1:]]
        return "\n".join(lines)
    widths = [max(len(r[i]) for r in cells) for i in range(len(_COLUMNS))]
    return "\n".join(
        "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()
        for r in cells
    )


def why_no_tree(model) -> str:
    """Why a TAN has no tree yet: how many events it learned, and when (or whether) the first rebuild comes.

    >>> from stream_nb import TAN
    >>> why_no_tree(TAN()), why_no_tree(TAN(rebuild_every=0))
    ('0 events learned; the first rebuild comes after 100', '0 events learned; rebuild_every=0: only on rebuild()')
    """
    learned = f"{model.n_learned:,.0f} events learned"
    if not model.rebuild_every:
        return f"{learned}; rebuild_every=0: only on rebuild()"
    if model.n_rebuilds:  # early rebuilds that found no dependence between the attributes
        return (f"{learned}; the counts show no dependence between the attributes yet, the tree comes after "
                f"{model.rebuild_every:,} at the latest")
    return f"{learned}; the first rebuild comes after {model.rebuild_interval():,}"


def format_tree(model) -> str:
    """A TAN model's tree as text lines ``parent -> child  cmi`` (nats), breadth-first from the root."""
    if not model.tree:
        return f"no tree yet ({why_no_tree(model)}): the model predicts as naive Bayes"
    width = max(len(f"{p} -> {c}") for p, c, _ in model.tree)
    lines = [f"root {model.root!s}; {len(model.tree)} edges, parent -> child: CMI I(parent; child | class) in nats"]
    lines += [f"  {f'{p} -> {c}'.ljust(width)}  {cmi:.4g}" for p, c, cmi in model.tree]
    return "\n".join(lines)


# ----------------------------------------------------------------------------- command line

#: Model parameters with a ``stream-nb run`` flag: evaluate and explain take the same flags.
_MODEL_FLAG_NAMES = tuple(s.name for s in SETTINGS if s.name in _ALL_PARAMS)

_EVALUATE_DESCRIPTION = """\
Run several models prequentially (predict each event, then learn it when it
is labeled) over the same events, and print for each its accuracy, log loss,
events/s and state size, and each TAN's final tree. With --report DIR, also
write learning curves, the TAN tree as pictures and a Markdown report."""

_EVALUATE_EPILOG = """\
inputs:
  FILE.csv       header row; cells: empty = missing, integer literal = int
                 (categorical), decimal literal with '.' or exponent = float
                 (numeric), anything else = string
  FILE.jsonl     one JSON object per line, as for stream-nb run
  -              stdin (JSON lines if it starts with '{', else CSV; or --format)
  river:NAME     a river classification stream: synthetic (LED, STAGGER,
                 Agrawal, RandomTree, SEA, ...: --events (default 10000)
                 events, seeds set to --seed) or a data set river ships
                 (Phishing, Bananas, ImageSegments, Shuttle: all its events
                 or the first --events); river:? lists them

models:
  --models nb,aode:m=5,tan:rebuild_every=500:bins=10
  Global model flags apply to every listed model that takes them; PARAM=VALUE
  after a model overrides them for that model alone.

bad rows (wrong cell count, invalid JSON, bad label, rejected value types) are
reported on stderr and skipped; events without a label are predicted only.
state bytes: nbytes of the arrays of model.state() + JSON size of its meta.
exit status: 0 done, 1 no valid event, an unreadable input or an unwritable report,
2 invalid settings (an unwritable --report directory included, checked first),
130 interrupted (Ctrl-C): the table covers the events measured until then."""


def _add_input_flags(p: argparse.ArgumentParser, model_flag: str) -> None:
    p.add_argument("--input", required=model_flag == "models", metavar="SRC",
                   help="CSV or JSON-lines file, '-' for stdin, or river:NAME (e.g. river:LED)")
    p.add_argument("--format", choices=("csv", "jsonl"), default=None,
                   help="input format (default: by extension; stdin: sniffed)")
    p.add_argument("--events", type=int, default=None, metavar="N",
                   help=f"take at most N valid events (river streams: default {DEFAULT_RIVER_EVENTS})")
    p.add_argument("--seed", type=int, default=1, help="seed of a river stream (default: 1)")
    p.add_argument("--label-field", default="label", metavar="FIELD",
                   help="field (CSV column) holding the label (default: label; river streams: y)")
    p.add_argument("--id-field", default="id", metavar="FIELD",
                   help="field dropped as the event id (default: id; empty string: none)")
    p.add_argument("--features", action="append", default=None, metavar="A,B,C",
                   help="use only these fields as features (default: all but the label and the id)")
    models = p.add_argument_group("model parameters (as for stream-nb run)")
    for name in _MODEL_FLAG_NAMES:
        s = _SETTING[name]
        kwargs: dict[str, typing.Any] = {"dest": name, "default": None, "metavar": s.metavar,
                                         "help": s.help.replace("%", "%%")}
        if s.kind == "mapping":
            kwargs.update(action="extend", nargs="+")
        elif s.kind == "bool":
            kwargs.update(action="store_const", const=True)
            del kwargs["metavar"]
        elif s.kind == "choice":
            kwargs["choices"] = s.choices
        models.add_argument(s.flag, **kwargs)


def _global_params(args: argparse.Namespace) -> dict[str, typing.Any]:
    out = {}
    for name in _MODEL_FLAG_NAMES:
        value = getattr(args, name)
        if value is not None:
            out[name] = _convert(_SETTING[name], value, _SETTING[name].flag)
    return out


def _features(args: argparse.Namespace) -> list[str] | None:
    if not args.features:
        return None
    return _convert(_SETTING["features"], args.features, "--features")


def _open(args: argparse.Namespace) -> EventSource:
    return open_events(args.input, fmt=args.format, label_field=args.label_field, id_field=args.id_field or None,
                       features=_features(args), events=args.events, seed=args.seed)


class BadRowReporter:
    """Print the first :data:`MAX_REPORTED` bad rows on stderr (through tqdm, so the bar stays whole)."""

    def __init__(self, command: str):
        self.command = command
        self.count = 0

    def __call__(self, row: BadRow) -> None:
        self.count += 1
        if self.count <= MAX_REPORTED:
            self._write(f"stream-nb {self.command}: skipped bad row at {row}")
        elif self.count == MAX_REPORTED + 1:
            self._write(f"stream-nb {self.command}: more bad rows: only counted from here on")

    @staticmethod
    def _write(text: str) -> None:
        try:
            from tqdm import tqdm

            tqdm.write(text, file=sys.stderr)
        except ImportError:
            print(text, file=sys.stderr)


def add_subcommands(commands: argparse._SubParsersAction) -> None:
    """Register ``evaluate`` and ``explain`` on the ``stream-nb`` sub-command parser."""
    p = commands.add_parser(
        "evaluate",
        help="compare models prequentially on a file or a river stream; optional pictures and report",
        description=_EVALUATE_DESCRIPTION,
        epilog=_EVALUATE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_input_flags(p, "models")
    p.add_argument("--models", default="nb,aode,tan", metavar="SPECS",
                   help=f"models to compare: NAME[:PARAM=VALUE...] with NAME one of {', '.join(MODELS)}, "
                        "comma-separated (default: nb,aode,tan)")
    p.add_argument("--report", metavar="DIR", default=None,
                   help="write learning_curves.png, one tree PNG per TAN and report.md into DIR")
    p.add_argument("--window", type=int, default=500, metavar="N",
                   help="labeled events per point of the rolling accuracy in the report (default: 500)")
    p.set_defaults(handler=pipe_safe(run_evaluate))

    from .explain import add_subcommand

    add_subcommand(commands, _add_input_flags)




def run_evaluate(args: argparse.Namespace) -> int:
    """``stream-nb evaluate``: returns the exit status."""
    try:
        if args.window < 1:
            raise ConfigError(f"--window: expected a positive integer, got {args.window}")
        specs = parse_model_specs(args.models)
        defaults = _global_params(args)
        unused = [n for n in defaults if not any(n in MODELS[s.model][1] for s in specs)]
        if unused:
            takers = {n: [m for m, (_, ps) in MODELS.items() if n in ps] for n in unused}
            raise ConfigError("; ".join(
                f"{_SETTING[n].flag} applies to {', '.join(takers[n])}, none of which is in --models {args.models}"
                for n in unused))
        models = {s.label: make_model(s.model, s.params, defaults) for s in specs}
        source = _open(args)
        if args.report:  # now, not after the whole computation
            writable_directory(args.report, "--report")
    except ConfigError as exc:
        print(f"stream-nb evaluate: error: {exc}", file=sys.stderr)
        return 2
    reporter = BadRowReporter("evaluate")
    try:
        result = evaluate(source, models, source=source.describe, progress=True, total=source.total,
                          on_bad_row=reporter)
    except ConfigError as exc:
        print(f"stream-nb evaluate: error: {exc}", file=sys.stderr)
        return 2
    except (OSError, UnicodeDecodeError) as exc:
        print(f"stream-nb evaluate: error: cannot read {args.input}: {exc}", file=sys.stderr)
        return 1
    print(f"{result.source}: {result.counts_line()}")
    if result.bad_rows:
        print(f"stream-nb evaluate: {result.counts_line().split('; ', 1)[1]}", file=sys.stderr)
    if result.interrupted:
        print(f"stream-nb evaluate: interrupted: the figures below cover the first {result.n_events:,} events"
              + ("; no report written" if args.report else ""), file=sys.stderr)
        if result.n_events:
            print()
            print(format_table(result.table()))
        return INTERRUPTED
    if not result.n_events:
        print(f"stream-nb evaluate: error: no valid event in {args.input}", file=sys.stderr)
        return 1
    if not result.n_labeled:
        print(f"stream-nb evaluate: warning: no event has a label in the field {args.label_field!r} "
              "(--label-field): nothing was learned or scored", file=sys.stderr)
    print()
    print(format_table(result.table()))
    for r in result.models:
        if hasattr(r.model, "tree"):
            print(f"\nTAN tree of {r.name}: {format_tree(r.model)}")
    if args.report:
        from ._report import write_report

        try:
            paths = write_report(result, args.report, window=args.window, command=_command_line(args))
        except OSError as exc:
            print(f"stream-nb evaluate: error: --report {args.report}: cannot write the report: "
                  f"{exc.strerror or exc}", file=sys.stderr)
            return 1
        print(f"\nreport: {paths['report']}")
    return 0


def _command_line(args: argparse.Namespace) -> str:
    """The ``stream-nb evaluate`` command equivalent to ``args`` (the settings that differ from the defaults)."""
    import shlex

    parts = ["stream-nb", "evaluate", "--input", args.input]
    if args.format:
        parts += ["--format", args.format]
    if args.events is not None:
        parts += ["--events", str(args.events)]
    if args.input.startswith("river:") and args.seed != 1:
        parts += ["--seed", str(args.seed)]
    if not args.input.startswith("river:"):
        if args.label_field != "label":
            parts += ["--label-field", args.label_field]
        if args.id_field != "id":
            parts += ["--id-field", args.id_field]
        for f in args.features or []:
            parts += ["--features", f]
    parts += ["--models", args.models]
    for name in _MODEL_FLAG_NAMES:
        value = getattr(args, name)
        if value is not None:
            parts += [_SETTING[name].flag, *(value if isinstance(value, list) else [value])]
    parts += ["--report", args.report, "--window", str(args.window)]
    return " ".join(shlex.quote(str(p)) for p in parts)
