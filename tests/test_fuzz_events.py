"""Fuzzing the event decoder and the whole ``run`` path with hypothesis.

Whatever bytes arrive, the daemon must answer each record with exactly one
output or exactly one dead letter, in input order, and never let an exception
escape. These properties are checked on random bytes, random unicode (lone
surrogates included, so invalid UTF-8 too), random JSON documents (``NaN``,
``Infinity``, integers beyond 64 bits, deep nesting, duplicate keys) and
events whose labels and features mix every JSON type, for every model.

Run time: the example counts below keep the whole file to a few seconds per
test in CI. ``STREAM_NB_FUZZ_EXAMPLES=N`` raises every test to ``N`` examples
for a long local session (``STREAM_NB_FUZZ_EXAMPLES=20000 python -m pytest
tests/test_fuzz_events.py``).
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import stream_nb
from connectors.jsonl import make_dead_letter_sink, make_sink, make_source
from stream_nb import EM, MDL, EqualFrequency, Ignore, Parents, SuperParent, Tree, cli
from stream_nb.settings import MODELS as DAEMON_MODELS
from stream_nb.engine import Engine, Record, label_key
from stream_nb.engine.contract._events import EventDecoder
from stream_nb.exceptions import InvalidEventError

FUZZ_ENV = "STREAM_NB_FUZZ_EXAMPLES"


def fuzz_settings(default: int):
    """``default`` examples (``$STREAM_NB_FUZZ_EXAMPLES`` when set), no deadline, no database."""
    n = int(os.environ.get(FUZZ_ENV) or default)
    return settings(max_examples=n, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# ----------------------------------------------------------------------- strategies

NAMES = ["a", "b", "c", "label", "id", "", "é", "a b", "\u2028", "label "]

#: JSON scalars of every kind, the awkward ones included.
json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.integers(),
    st.integers(-(2**70), 2**70),  # beyond 64 bits: orjson reads them as floats
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1.0, 0.5, 1e308, -1e308, 5e-324, 2.0**53, 2.0**53 + 2, 1e16, float("nan")]),
    st.text(max_size=8),
    st.sampled_from(["x", "y", "1", "true", "", "\ufeff", "NaN"]),
)

json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(NAMES) | st.text(max_size=4), inner,
                                                                max_size=3),
    max_leaves=8,
)

#: Feature values of a stream that mostly makes sense: few distinct ones, so the models learn and predict.
sane_features = st.one_of(
    st.sampled_from(["x", "y", "z"]),
    st.integers(0, 2),
    st.floats(-10, 10, allow_nan=False),
    st.booleans(),
    st.none(),
)

#: Feature values that should be rejected or taken with care.
awkward_features = st.one_of(
    st.sampled_from(["1", "0", "true", "", "\ufeff", "NaN", 0.0, -0.0, 1e-300, 5e-324, 1e300, -1e300, 1.7e308,
                     2.0**53, 2.0**60, float("nan"), float("inf"), float("-inf")]),
    st.integers(-(2**65), 2**65),
    st.floats(),
    json_values,
)

sane_labels = st.one_of(st.sampled_from(["yes", "no"]), st.integers(0, 1), st.booleans(), st.none())
awkward_labels = st.one_of(
    st.sampled_from(["1", "true", "", 1.0, 0.0, -0.0, 0.5, 2.0**53, 2.0**53 + 2, 1e300, 2**63, -(2**63) - 1, 2**64,
                     float("nan"), float("inf")]),
    json_values,
)


@st.composite
def events(draw) -> dict:
    """An event object: mostly sane features and labels, some awkward ones, sometimes odd field names."""
    names = ["a", "b", "c", "d"] + draw(st.lists(st.sampled_from(NAMES) | st.text(max_size=3), max_size=2))
    event = {}
    for name in draw(st.lists(st.sampled_from(names), unique=True, max_size=len(names))):
        event[name] = draw(st.one_of(*[sane_features] * 7, awkward_features))
    if draw(st.integers(0, 9)):
        event["label"] = draw(st.one_of(sane_labels, sane_labels, sane_labels, awkward_labels))
    if draw(st.booleans()):
        event["id"] = draw(st.one_of(st.integers(), st.text(max_size=3), json_values))
    return event


@st.composite
def streams(draw, extra=st.nothing(), most: int = 60) -> list[bytes]:
    """A list of raw records (and ``extra`` ones), of any length up to ``most``, long ones as likely as short."""
    n = draw(st.integers(0, most))
    return draw(st.lists(raw_records() | extra, min_size=n, max_size=n))


def encode_json(value, ensure_ascii: bool, compact: bool) -> bytes:
    """``value`` as a Python producer writes it: NaN and Infinity as literals (``json.dumps``'s default)."""
    return json.dumps(value, ensure_ascii=ensure_ascii, separators=(",", ":") if compact else None).encode("utf-8")


@st.composite
def raw_records(draw) -> bytes:
    """One raw record: an event object, any JSON document, any text, or any bytes, maybe damaged."""
    kind = draw(st.sampled_from(["event"] * 6 + ["json", "text", "bytes"]))
    if kind == "event":
        raw = encode_json(draw(events()), draw(st.booleans()), draw(st.booleans()))
    elif kind == "json":
        raw = encode_json(draw(json_values), draw(st.booleans()), draw(st.booleans()))
    elif kind == "text":
        raw = draw(st.text(st.characters() | st.characters(categories=["Cs"]), max_size=30)).encode("utf-8", "surrogatepass")
    else:
        raw = draw(st.binary(max_size=40))
    damage = draw(st.sampled_from(["none"] * 8 + ["bom", "truncate", "flip", "pad"]))
    if damage == "bom":
        raw = b"\xef\xbb\xbf" + raw
    elif damage == "truncate" and raw:
        raw = raw[: draw(st.integers(0, len(raw) - 1))]
    elif damage == "flip" and raw:
        i = draw(st.integers(0, len(raw) - 1))
        raw = raw[:i] + bytes([raw[i] ^ (1 << draw(st.integers(0, 7)))]) + raw[i + 1:]
    elif damage == "pad":
        raw = b" \t" + raw + b"\r"
    return raw


MODELS = {
    "nb": lambda: stream_nb.NaiveBayes(),
    "nb-ignore-unlabeled": lambda: stream_nb.NaiveBayes(missing=EM(attributes=False, unlabeled=True)),
    "nb-loss": lambda: stream_nb.NaiveBayes(loss={"x": {"y": 5.0}, 1: {True: 0.5}}),
    "aode": lambda: stream_nb.AODE(numeric=MDL(bins=2, warmup=3)),
    "tan": lambda: stream_nb.TAN(numeric=MDL(bins=2, warmup=3), search=Tree(rebuild_every=3)),
    "tan-unlabeled": lambda: stream_nb.TAN(numeric=MDL(bins=2, warmup=2), missing=EM(unlabeled=True), search=Tree(rebuild_every=4)),
    "spode": lambda: stream_nb.SPODE(numeric=MDL(bins=2, warmup=3), search=SuperParent(rebuild_every=3)),
    "spode-parent": lambda: stream_nb.SPODE(numeric=MDL(bins=2, warmup=3), search=SuperParent(parent="a", rebuild_every=3)),
    "kdb1": lambda: stream_nb.KDB(k=1, numeric=EqualFrequency(bins=2, warmup=3), search=Parents(rebuild_every=3)),
    "kdb2": lambda: stream_nb.KDB(k=2, max_table_cells=4000, numeric=EqualFrequency(bins=2, warmup=3), search=Parents(rebuild_every=3)),
    "kdb3-ignore": lambda: stream_nb.KDB(k=3, max_table_cells=20000, numeric=EqualFrequency(bins=2, warmup=2), missing=Ignore(), search=Parents(rebuild_every=2)),
}


class ListSource:
    """A finite source over raw values, ``batch`` records per poll."""

    def __init__(self, values: list[bytes], batch: int):
        self.records = [Record(value=v, key=None, partition="p", position={"offset": i}, next_position=i + 1)
                        for i, v in enumerate(values)]
        self.batch = batch
        self.exhausted = False

    def poll(self, max_records, timeout):
        n = min(max_records, self.batch)
        out, self.records = self.records[:n], self.records[n:]
        self.exhausted = not out
        return out

    def commit(self, positions):
        pass

    def seek(self, positions):
        raise AssertionError("the engine never seeks by itself")

    def close(self):
        pass


class ListSink:
    def __init__(self):
        self.sent: list[bytes] = []

    def send(self, value, key=None):
        self.sent.append(value)

    def flush(self):
        pass

    def close(self):
        pass


def check_answers(outputs: list[dict], letters: list[dict], n: int, where: str) -> None:
    """Exactly one output or dead letter per record ``0..n-1``, each in input order; outputs well formed:
    probabilities in [0, 1] that sum to 1 (two classes never share a ``proba`` key), the prediction among them."""
    out_at = [o["source"][where] for o in outputs]
    dead_at = [d["source"][where] for d in letters]
    assert out_at == sorted(out_at) and dead_at == sorted(dead_at)
    assert sorted(out_at + dead_at) == list(range(n))
    for o in outputs:
        proba = o["proba"]
        assert all(isinstance(p, float) and 0.0 <= p <= 1.0 for p in proba.values()), proba
        if proba:
            assert math.isclose(sum(proba.values()), 1.0, rel_tol=1e-6), proba
            assert o["prediction"] is not None and label_key(o["prediction"]) in proba, o
        else:
            assert o["prediction"] is None, o
    for d in letters:
        assert isinstance(d["reason"], str) and d["reason"] and isinstance(d["error"], str) and d["error"]


# ----------------------------------------------------------------------- the decoder


@fuzz_settings(600)
@given(raw=raw_records(), config=st.sampled_from([{}, {"features": ["a", "b"]}, {"id_field": None},
                                                   {"label_field": "a", "id_field": "b"}, {"max_event_bytes": 16}]))
def test_the_decoder_returns_an_event_or_raises_invalid_event_error_and_nothing_else(raw, config):
    decoder = EventDecoder(config)
    try:
        event = decoder.decode(raw)
    except InvalidEventError as exc:
        assert isinstance(exc.reason, str) and exc.reason and str(exc)
        return
    assert event.label is None or type(event.label) in (str, int, bool)
    for name, value in event.features.items():
        assert isinstance(name, str)
        assert value is not None and type(value) in (str, int, float, bool), (name, value)
    assert type(event.id) not in (dict, list)


# ----------------------------------------------------------------------- the engine


@pytest.mark.slow
@fuzz_settings(150)
@given(
    model=st.sampled_from(sorted(MODELS)),
    values=streams(),
    batch=st.integers(1, 12),
    imputed=st.booleans(),
    features=st.sampled_from([None, None, ["a", "b", "c"]]),
)
def test_the_engine_answers_every_record_once_whatever_it_holds(model, values, batch, imputed, features):
    source, out, dlq = ListSource(values, batch), ListSink(), ListSink()
    engine = Engine(MODELS[model](), source, out, dlq,
                    config={"poll_max_records": batch, "emit_imputed": imputed, "features": features,
                            "log_metrics_interval_s": 0})
    engine.run()
    check_answers([orjson.loads(v) for v in out.sent], [orjson.loads(v) for v in dlq.sent], len(values), "offset")
    assert engine.metrics.events == len(values)
    assert engine.metrics.predicted == len(out.sent)


# ----------------------------------------------------------------------- stream-nb run


#: Small bins, warm-ups and rebuild intervals, so that a few dozen events reach every code path.
RUN_FLAGS = {
    "nb": ["--learn-unlabeled"],
    "aode": ["--bins", "2", "--warmup", "3"],
    "tan": ["--bins", "2", "--warmup", "3", "--rebuild-every", "3"],
    "spode": ["--bins", "2", "--warmup", "3", "--rebuild-every", "3"],
    "kdb": ["--bins", "2", "--warmup", "3", "--rebuild-every", "3", "--max-table-cells", "3000"],
}


def lines_of(values: list[bytes]) -> list[bytes]:
    """The raw records as lines of a file: no newline inside (each split where it had one)."""
    return [part for v in values for part in v.split(b"\n")]


def is_blank(line: bytes) -> bool:
    """A blank line, as the JSON-lines source skips it: only spaces, tabs, ``\r`` and a byte order mark."""
    return line.strip(b" \t\r") in (b"", b"\xef\xbb\xbf")


def numbered_events(data: bytes) -> tuple[list[int], int]:
    """Line numbers of the events of a JSON-lines file's bytes, and how many lines are blank."""
    pieces = data.split(b"\n")
    if pieces[-1] == b"":
        pieces.pop()  # after a final newline (or in an empty file) there is no further line
    events = [number for number, line in enumerate(pieces, 1) if not is_blank(line)]
    return events, len(pieces) - len(events)


@fuzz_settings(40)
@given(
    model=st.sampled_from(sorted(DAEMON_MODELS)),
    values=streams(st.sampled_from([b"", b" ", b"\r", b"\t \r"]), most=30),
    final_newline=st.booleans(),
)
def test_stream_nb_run_answers_every_line_once_and_exits_0_unless_none_is_valid(tmp_path_factory, model, values,
                                                                                 final_newline):
    directory = tmp_path_factory.mktemp("run")
    lines = lines_of(values)
    data = b"\n".join(lines) + (b"\n" if final_newline and lines else b"")
    (directory / "in.jsonl").write_bytes(data)
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr):
        status = cli.main(["run", "--input", str(directory / "in.jsonl"), "--output", str(directory / "out.jsonl"),
                           "--dead-letter", str(directory / "dead.jsonl"), "--model", model,
                           "--log-level", "WARNING", *RUN_FLAGS[model]])
    assert "Traceback" not in stderr.getvalue()
    outputs = [orjson.loads(v) for v in (directory / "out.jsonl").read_bytes().splitlines()]
    letters = [orjson.loads(v) for v in (directory / "dead.jsonl").read_bytes().splitlines()]
    events, _ = numbered_events(data)
    # a file that held events and not one valid event ends with exit status 1 (as evaluate), any other with 0
    assert status == (1 if events and not outputs else 0), stderr.getvalue()
    # every non-blank line is answered once, by its line number; blank lines are skipped
    answered = sorted([o["source"]["line"] for o in outputs] + [d["source"]["line"] for d in letters])
    assert answered == events
    check_answers(
        [dict(o, source={"i": events.index(o["source"]["line"])}) for o in outputs],
        [dict(d, source={"i": events.index(d["source"]["line"])}) for d in letters],
        len(events), "i",
    )


@fuzz_settings(60)
@given(values=streams(st.sampled_from([b"", b"  ", b"\r"]), most=40),
       read_size=st.integers(1, 64), batch=st.integers(1, 9))
def test_json_lines_source_and_sinks_count_blank_lines_and_answer_the_rest(tmp_path_factory, values, read_size,
                                                                           batch):
    directory = tmp_path_factory.mktemp("jsonl")
    data = b"\n".join(lines_of(values))
    (directory / "in.jsonl").write_bytes(data)
    source = make_source({"path": str(directory / "in.jsonl"), "read_size": read_size})
    sink = make_sink({"path": str(directory / "out.jsonl")})
    dead = make_dead_letter_sink({"path": str(directory / "dead.jsonl")})
    engine = Engine(stream_nb.TAN(numeric=MDL(bins=2, warmup=2), search=Tree(rebuild_every=2)), source, sink, dead,
                    config={"poll_max_records": batch, "log_metrics_interval_s": 0})
    engine.run()
    for closing in (source, sink, dead):
        closing.close()
    outputs = (directory / "out.jsonl").read_bytes().splitlines()
    letters = (directory / "dead.jsonl").read_bytes().splitlines()
    events, blank = numbered_events(data)
    assert source.blank_lines == blank
    assert len(outputs) + len(letters) == len(events) == engine.metrics.events


# ----------------------------------------------------------------------- pinned cases: what the fuzzers found


def test_tan_predicts_an_event_whose_tree_parent_lost_its_values_when_it_turned_numeric():
    # found: "a" is the tree's root; its third value 2.5 turns it numeric and, before its bins are
    # chosen, it has no value at all. An event without "a" then made TAN sum "a" out over no value:
    # ValueError (zero-size array) escaped the engine, and the daemon stopped. Equal-frequency bins:
    # the two-layer discretiser (the default) counts the warm-up values later, so "a" keeps values.
    values = [b'{"a": 1, "b": "x", "label": "y"}', b'{"a": 2, "b": "z", "label": "n"}',
              b'{"a": 2.5, "b": "x", "label": "y"}', b'{"b": "x"}']
    for batch in (1, 5):  # one event at a time, and a whole poll through prequential_many
        source, out, dlq = ListSource(values, batch), ListSink(), ListSink()
        model = stream_nb.TAN(numeric=EqualFrequency(bins=2, warmup=3), search=Tree(rebuild_every=2))
        engine = Engine(model, source, out, dlq,
                        config={"poll_max_records": batch, "log_metrics_interval_s": 0})
        engine.run()
        outputs = [orjson.loads(v) for v in out.sent]
        check_answers(outputs, [], len(values), "offset")
        assert engine.model.root == "a" and engine.model._stats.n_values[0] == 0  # the case above
        # "a" has no value, so "b" is read on its own: P(b = x | class), as if "b" were a root
        assert outputs[3]["proba"] == pytest.approx({"y": 0.771428571, "n": 0.228571429})


def test_a_model_taught_integers_beyond_64_bits_in_python_still_answers_every_event():
    # found: orjson takes no integer beyond 64 bits; a label or an imputed value that large (learned
    # through the Python API, or restored from a snapshot) made the engine's output raise TypeError
    model = stream_nb.NaiveBayes()
    model.learn_one({"a": "x", "b": 2**70}, 2**70)
    model.learn_one({"a": "y", "b": 3}, 1)
    for imputed in (False, True):
        source, out, dlq = ListSource([b'{"a": "x"}', b'{"a": "y", "label": 1}'], 1), ListSink(), ListSink()
        engine = Engine(model, source, out, dlq, config={"emit_imputed": imputed, "log_metrics_interval_s": 0})
        engine.run()
        outputs = [json.loads(v) for v in out.sent]
        check_answers(outputs, [], 2, "offset")
        assert outputs[0]["prediction"] == 2**70
        if imputed:
            assert outputs[0]["imputed"] == {"b": 2**70}
