"""One warning, early, when the input is plainly not what the settings expect.

The engine hands :class:`InputCheck` the records of its first polls, and it
logs one ``WARNING`` on the ``stream_nb.input`` logger per cause it finds:
``not_json_lines`` (the first records are all rejected; the line says what
they look like: CSV, one pretty-printed JSON document, gzip, UTF-16),
``no_label`` (no event carries the label field and the model has learned
nothing) and ``feature_never_seen`` (a name in ``features`` never has a value).
:meth:`InputCheck.finish` adds ``no_valid_event`` when a run took records but
none was valid (``stream-nb run`` then exits 1).

>>> import logging
>>> from stream_nb.engine import EventDecoder
>>> from stream_nb.engine import Record
>>> check = InputCheck(EventDecoder())
>>> rows = [b"outlook,temperature,label", b"sunny,28.0,no", b"rain,18.5,yes"]
>>> check.see([Record(v, None, "in.csv", {"file": "in.csv", "line": i}, i) for i, v in enumerate(rows, 1)])
>>> check.finish()   # logs: the first 3 records were all rejected (invalid_json 3): the input looks like CSV ...
>>> check.warned
['not_json_lines']
"""

from __future__ import annotations

import difflib
import logging
import typing

import orjson

from ...exceptions import InvalidEventError

__all__ = ["InputCheck"]

log = logging.getLogger("stream_nb.input")

#: Rejections that say "this is not JSON lines at all" when every early record has one.
_NOT_JSON_LINES = frozenset({"invalid_json", "invalid_utf8", "not_an_object"})
_BOM = b"\xef\xbb\xbf"
#: Most field names remembered for the hints.
_MAX_NAMES = 1000


def _where(position: typing.Any) -> str:
    """``in.jsonl line 3`` or ``topic t partition 0 offset 7``: a record's place, in words."""
    if isinstance(position, dict):
        if "file" in position and "line" in position:
            return f"{position['file']} line {position['line']}"
        return " ".join(f"{k} {v}" for k, v in position.items())
    return str(position)


def _records(n: int, which: str) -> str:
    """``the first 3 records were all`` / ``the one record was``, as the count asks.

    >>> _records(3, "first"), _records(1, "read")
    ('the first 3 records were all', 'the one record read was')
    """
    if n == 1:
        return "the one record read was" if which == "read" else "the one record was"
    return f"the first {n} records were all" if which == "first" else f"all {n} records read were"


def _text(raw: bytes) -> str:
    return bytes(raw).removeprefix(_BOM).decode("utf-8", errors="replace").strip()


def _csv_delimiter(lines: list[str]) -> str | None:
    """The delimiter when every line splits into the same number (>= 2) of cells, else None."""
    if not lines or lines[0][:1] in ("{", "["):
        return None
    for delimiter in (",", ";", "\t", "|"):
        counts = {line.count(delimiter) for line in lines}
        if len(counts) == 1 and counts.pop() >= 1:
            return delimiter
    return None


def _looks_like(position: typing.Any, raws: list[bytes]) -> str:
    """What input whose first records are all rejected as not JSON lines looks like, as advice."""
    first = bytes(raws[0])
    if first.startswith(b"\x1f\x8b"):
        return "looks like gzip-compressed data: decompress it first (zcat FILE | stream-nb run ...)"
    if first.startswith((b"\xff\xfe", b"\xfe\xff")) or first.count(b"\x00") * 4 >= len(first) > 0:
        return ("looks like UTF-16 text (Windows PowerShell writes it with '>'): convert it to UTF-8 first "
                "(iconv -f UTF-16 -t UTF-8 FILE)")
    lines = [_text(r) for r in raws[:5]]
    delimiter = _csv_delimiter(lines)
    if delimiter is not None:
        name = {"\t": "tab", ",": "comma", ";": "semicolon", "|": "bar"}[delimiter]
        path = position.get("file") if isinstance(position, dict) and position.get("file") != "stdin" else None
        return (f"looks like CSV ({name}-separated; {_where(position)}: {lines[0][:80]!r}): stream-nb run reads "
                f"JSON lines, one JSON object per line. To compare models on a CSV file use 'stream-nb evaluate "
                f"--input {path or 'FILE.csv'}'; to stream it, write each row as a JSON object")
    if lines[0] in ("[", "{") or (lines[0].startswith("[") and lines[0].endswith("]")):
        return (f"looks like one JSON document rather than JSON lines ({_where(position)}: {lines[0][:80]!r}): "
                f"write one JSON object per line (for an array: jq -c '.[]' FILE)")
    return f"is not JSON lines ({_where(position)}: {lines[0][:80]!r}): write one JSON object per line"


class InputCheck:
    """Look at the first records of a run and warn once per plain mistake; see the module docstring.

    Parameters
    ----------
    decoder
        The engine's :class:`~stream_nb.engine.EventDecoder` (its label field and features).
    window
        Records looked at, from the first poll on.
    sample
        Records that must all be rejected as not JSON lines before that is said.
    """

    def __init__(self, decoder: typing.Any, *, window: int = 1000, sample: int = 20):
        self.decoder = decoder
        self.window = window
        self.sample = sample
        #: True while records are still looked at; the engine stops calling :meth:`see` after.
        self.active = True
        #: The causes warned about so far, in order.
        self.warned: list[str] = []
        #: Set by :meth:`finish` when the run took records and none was a valid event: how many, by reason.
        self.no_valid_event: str | None = None
        self._engine: typing.Any = None
        self._seen = 0  # records looked at
        self._valid = 0  # of them, valid events
        self._labeled = 0
        self._rejections: list[tuple[typing.Any, InvalidEventError | None]] = []  # first records: (position, error)
        self._raw: list[bytes] = []  # their bytes while all are rejected
        self._features = decoder.config["features"]
        self._present: set[str] = set()
        self._names: dict[str, None] = {}  # fields of valid events, in order of appearance
        self._start: tuple[int, int, dict] | None = None  # engine metrics (events, predicted, dead letters) at start
        self._learned_before = 0  # events the model had learned when the run started (a restored snapshot)

    def start(self, engine: typing.Any) -> None:
        """The engine's run starts (after any snapshot restore)."""
        metrics = engine.metrics
        self._engine = engine
        self._start = (metrics.events, metrics.predicted, dict(metrics.dead_letters_by_reason))
        n_learned = getattr(engine.model, "n_learned", 0)  # a snapshot restored without its metrics
        self._learned_before = max(metrics.learned, n_learned if isinstance(n_learned, (int, float)) else 0)

    def see(self, records: list) -> None:
        """Look at one poll's records (called while :attr:`active`)."""
        label_field = self.decoder.config["label_field"]
        records = records[:max(0, self.window - self._seen)]
        _, xs, ys, bad = self.decoder.decode_columns([record.value for record in records])  # decode's results
        valid = iter(zip(xs, ys))
        for i, record in enumerate(records):
            self._seen += 1
            exc = bad.get(i)
            if exc is not None:
                if self._seen <= self.sample:
                    self._rejections.append((record.position, exc))
                    self._raw.append(bytes(record.value[:4096]))
                continue
            features, label = next(valid)
            self._valid += 1
            if self._seen <= self.sample:
                self._rejections.append((record.position, None))
            self._labeled += label is not None
            self._present.update(features)
            if len(self._names) < _MAX_NAMES:
                self._remember_names(record.value, label_field)
        if self._seen >= self.sample and "not_json_lines" not in self.warned:
            self._check_json_lines()
        if self._seen >= self.window:
            self._check_fields()
            self.active = False

    def finish(self) -> None:
        """The run ended: the checks not made yet, then a line if no record was a valid event."""
        if self.active:
            self._check_json_lines()
            self._check_fields()
            self.active = False
        if self._engine is None or self._start is None:
            return
        metrics = self._engine.metrics
        events, predicted, dead = self._start
        records = metrics.events - events
        if records > 0 and metrics.predicted <= predicted:
            reasons = {r: n - dead.get(r, 0) for r, n in sorted(metrics.dead_letters_by_reason.items())
                       if n > dead.get(r, 0)}
            first = next(((r, e) for r, e in self._rejections if e is not None), None)
            example = f"; {_where(first[0])}: {first[1]}" if first else ""
            self.no_valid_event = (f"{_records(records, 'read')} dead-lettered "
                                   f"({', '.join(f'{r} {n}' for r, n in reasons.items())})")
            self._warn("no_valid_event", "no valid event: %s%s", self.no_valid_event, example)

    # -- the checks ----------------------------------------------------------------

    def _check_json_lines(self) -> None:
        verdicts = self._rejections
        if "not_json_lines" in self.warned or not verdicts:
            return
        if all(e is not None and e.reason in _NOT_JSON_LINES for _, e in verdicts):
            counts: dict[str, int] = {}
            for _, e in verdicts:
                counts[e.reason] = counts.get(e.reason, 0) + 1
            self._warn("not_json_lines", "%s rejected (%s): the input %s", _records(len(verdicts), "first"),
                       ", ".join(f"{r} {n}" for r, n in counts.items()), _looks_like(verdicts[0][0], self._raw))
        self._raw = []

    def _check_fields(self) -> None:
        if not self._valid:
            return
        label_field = self.decoder.config["label_field"]
        labels_elsewhere = getattr(self._engine, "joiner", None) is not None  # --feedback brings them
        if not self._labeled and not self._learned_before and not labels_elsewhere and "no_label" not in self.warned:
            self._warn("no_label", "none of the first %d events has a value in the label field %r (--label-field): "
                       "they are predicted but never learned, so the model predicts nothing; %s",
                       self._valid, label_field, self._hint([label_field]))
        if self._features is not None and "feature_never_seen" not in self.warned:
            missing = [f for f in self._features if f not in self._present]
            if missing:
                self._warn("feature_never_seen", "--features names %s, which none of the first %d events has a value "
                           "for; %s", ", ".join(map(repr, missing)), self._valid, self._hint(missing))

    # -- helpers -------------------------------------------------------------------

    def _remember_names(self, raw: bytes, label_field: str) -> None:
        try:
            obj = orjson.loads(bytes(raw).removeprefix(_BOM))
        except orjson.JSONDecodeError:  # NaN or Infinity in it: the names of the others are enough
            return
        id_field = self.decoder.config["id_field"]
        for name in obj:
            if name != label_field and name != id_field:
                self._names.setdefault(name, None)

    def _hint(self, wanted: list[str]) -> str:
        names = list(self._names)
        shown = ", ".join(map(repr, names[:20])) + (f" and {len(names) - 20} more" if len(names) > 20 else "")
        text = f"their fields are {shown}" if names else "they have no fields"
        close, lowered = {}, {n.lower(): n for n in names}
        for name in wanted:
            match = lowered.get(name.lower()) or next(iter(difflib.get_close_matches(name, names, n=1)), None)
            if match is not None:
                close[name] = match
        if close:
            text += "; did you mean " + ", ".join(f"{v!r} for {k!r}" for k, v in close.items()) + "?"
        return text

    def _warn(self, cause: str, message: str, *args: typing.Any) -> None:
        self.warned.append(cause)
        log.warning(message, *args, extra={"event": "input_check", "cause": cause})
