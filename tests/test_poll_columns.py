"""A poll decoded once into columns (``EventDecoder.decode_columns(columns=True)``) and encoded from them.

The engine's whole-poll path hands the model a poll of events that all hold the same fields as one
``stats.Columns`` (a list per field, built by one transposition of the parsed objects), which the run
encoding reads column by column. Checked here against the event-by-event counterparts:

* the decoded events against ``decode`` one record at a time (hypothesis);
* ``Engine.process_many`` over such polls against the one-event loop (``decode``, then
  ``prequential_one`` per event): the same output bytes, dead letters, metrics and model state, with
  new values, classes and a new feature met inside polls, unlabeled events, a value the model refuses
  and polls that mix bad records in;
* the same engine fed the poll as dicts (the path before columns): byte for byte the same.
"""

from __future__ import annotations

import numpy as np
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

import stream_nb
from stream_nb import MDL, Tree, Window
from stream_nb.engine import Engine, EventDecoder, Record
from stream_nb.engine.contract import dead_letter_record
from stream_nb.exceptions import InvalidEventError, LabelTypeError
from stream_nb.stats import Columns
from test_batch_paths import Polls, described, one_at_a_time, reference_bytes
from test_fuzz_events import ListSink, fuzz_settings

cells = st.one_of(st.none(), st.sampled_from(["x", "y", "z", ""]), st.integers(-2, 2), st.floats(-3, 3),
                  st.booleans(), st.just(1e300), st.just(2**64 - 1), st.just([1]), st.just({"k": 1}))
plain = st.one_of(st.none(), st.sampled_from(["yes", "no"]), st.integers(0, 2), st.just(1.0), st.just(True))


def decoded_as_one_at_a_time(decoder: EventDecoder, values: list) -> tuple:
    """``decoder.decode_columns(values, columns=True)``, checked to stand for the events (or errors) ``decode``
    gives one record at a time, in order."""
    ids, xs, ys, bad = decoder.decode_columns(values, columns=True)
    expected = [one_at_a_time(decoder, v) for v in values]
    valid = iter(zip(ids, xs, ys))
    got = [bad[i] if i in bad else stream_nb.engine.Event(*next(valid)) for i in range(len(values))]
    assert next(valid, None) is None
    assert [described(r) for r in got] == [described(e) for e in expected]
    return ids, xs, ys, bad


@fuzz_settings(80)
@given(fields=st.lists(st.sampled_from(["a", "b", "id", "label", "c"]), min_size=1, max_size=4, unique=True),
       data=st.data(), config=st.sampled_from([{}, {"id_field": None}, {"label_field": "a"}]))
def test_a_poll_as_columns_holds_the_events_decode_gives(fields, data, config):
    """Events with the same fields in the same order (any values, odd ones too): the columns stand for the
    events ``decode`` gives; an event with an odd id, label or nested value sends the poll the dict way."""
    rows = data.draw(st.lists(st.tuples(*[(plain if name in ("id", "label") else cells) for name in fields]),
                              min_size=1, max_size=8))
    values = [orjson.dumps(dict(zip(fields, row))) for row in rows]
    decoder = EventDecoder(config)
    ids, xs, ys, bad = decoded_as_one_at_a_time(decoder, values)
    reserved = {config.get("label_field", "label"), config.get("id_field", "id")}
    common = all(type(v) in (str, int, type(None)) for row in rows for name, v in zip(fields, row) if name in reserved)
    if not bad and common:  # the poll was taken as columns
        assert isinstance(xs, Columns)


def test_columns_are_taken_only_for_events_with_the_same_fields_in_the_same_order():
    decoder = EventDecoder()
    same = [b'{"id": 1, "a": "x", "b": 2.5, "label": "yes"}', b'{"id": "2", "a": null, "b": 0.5, "label": null}']
    ids, xs, ys, bad = decoder.decode_columns(same, columns=True)
    assert isinstance(xs, Columns) and xs.columns == {"a": ["x", None], "b": [2.5, 0.5]}
    assert (ids, ys, bad, list(xs)) == ([1, "2"], ["yes", None], {}, [{"a": "x", "b": 2.5}, {"b": 0.5}])
    assert xs.types == {"a": {str, type(None)}, "b": {float}}  # what the run encoding reads instead of the values
    for other in (b'{"id": 3, "b": 1.5, "a": "y", "label": "no"}', b'{"id": 3, "a": "y", "label": "no"}'):
        ids, xs, ys, bad = decoder.decode_columns(same + [other], columns=True)
        assert type(xs) is list and list(map(list, xs)) == [["a", "b"], ["b"], list(orjson.loads(other))[1:-1]]
    assert type(decoder.decode_columns(same)[1]) is list  # without columns=True: dicts, as the joiner takes them


# value texts as written by hand: spaces, escapes, exponents, wide integers, and texts orjson refuses
good_texts = st.sampled_from([
    b'1', b'-0', b'12.5', b'-1.25e3', b'1E+2', b'3e-400', b'1e400', b'9223372036854775807', b'18446744073709551616',
    b'123456789012345678', b'-123456789012345678', b'-1234567890123456789', b'0.30000000000000004', b'"x"', b'""',
    b'"a\\"b"', b'"\\u00e9t\\u00e9"', b'"\xc3\xa9"', b'true', b'false', b'null'])
odd_texts = st.sampled_from([b'01', b'1.', b'-', b'1.5.5', b'+1', b'"\\ud800"', b'"\xff"', b'"tab\there"', b'nul',
                             b'truex', b'NaN', b'Infinity', b'[1]', b'{}', b'{"k": 1}'])
value_texts = st.integers(0, 29).flatmap(lambda i: odd_texts if i == 0 else good_texts)  # an odd one in 30
key_texts = st.sampled_from([b'"a"', b'"b"', b'"id"', b'"label"', b'"\xc3\xa9"'])
other_keys = st.sampled_from([b'"a"', b'"c"', b'"\\u0061"', b'"a" '])
spaces = st.sampled_from([b"", b" ", b"\n", b" \t\r"])


@st.composite
def object_texts(draw, keys):
    """One object's raw text over ``keys``, the same keys in the same order as the poll's others but now and
    then one changed, dropped or added, the spaces and value texts drawn."""
    keys = list(keys)
    change = draw(st.integers(0, 39))
    if change == 0 and keys:
        keys[draw(st.integers(0, len(keys) - 1))] = draw(other_keys)
    elif change == 1 and keys:
        keys.pop()
    elif change == 2:
        keys.append(draw(other_keys))
    parts = [draw(spaces) + k + draw(spaces) + b":" + draw(spaces) + draw(value_texts) + draw(spaces) for k in keys]
    head = draw(st.sampled_from([b""] * 12 + [b" ", b"\xef\xbb\xbf"]))
    return head + b"{" + b",".join(parts) + b"}" + draw(st.sampled_from([b""] * 12 + [b"\n", b"x", b"}"]))


@fuzz_settings(150)
@given(keys=st.lists(key_texts, min_size=1, max_size=4, unique=True), data=st.data(),
       config=st.sampled_from([{}, {"id_field": None}, {"label_field": "a"}]))
def test_a_poll_of_raw_texts_as_columns_holds_the_events_decode_gives(keys, data, config):
    """Raw texts, as a hand or another JSON writer makes them (spaces, escapes, exponents, wide integers,
    odd or refused values, a changed key, a byte order mark, trailing bytes): the columns the compiled pass
    and one ``orjson.loads`` give stand for the events ``decode`` gives one at a time, and each column's
    value types are the types of its values."""
    values = data.draw(st.lists(object_texts(keys), min_size=1, max_size=6))
    decoder = EventDecoder(config)
    ids, xs, ys, bad = decoded_as_one_at_a_time(decoder, values)
    if isinstance(xs, Columns):
        assert xs.types == {name: set(map(type, column)) for name, column in xs.columns.items()}


def test_the_compiled_pass_takes_a_poll_whose_keys_are_the_same_bytes_and_refuses_what_it_cannot_read():
    """The pass (``_scanned``) takes flat objects whose keys are the same bytes in the same order, spaces
    anywhere JSON allows them, the values parsed as orjson parses them in the objects; it leaves the
    others to the parse object by object (which gives the same events, or each event its error)."""
    decoder = EventDecoder()
    values = [b'{"id": 1, "a": "x\\"y", "t": 1e2, "n": 18446744073709551616, "label": "yes"}',
              b' { "id" :"2","a":"\\u00e9" , "t":-0.5,"n":3,"label":null}\n']
    ids, xs, ys, bad = decoder._scanned(values)
    assert (ids, ys, bad) == ([1, "2"], ["yes", None], {})
    assert xs.columns == {"a": ['x"y', "\u00e9"], "t": [100.0, -0.5], "n": [18446744073709551616.0, 3]}
    assert xs.types == {"a": {str}, "t": {float}, "n": {float, int}}
    for other in (b'{"id": 3, "a": "y", "t": 1, "label": "no", "n": 1}',  # the keys in another order
                  b'{"id": 3, "a": "y", "t": 1, "n": 1, "label": "no", "z": 1}',  # one more key
                  b'{"id": 3, "a": "y", "t": 1, "n": 1, "lab\\u0065l": "no"}',  # the same key, written otherwise
                  b'{"id": 3, "a": "y", "t": NaN, "n": 1, "label": "no"}', b'{"id": 3, "a": "y", "t": 01, "n": 1}',
                  b'{"id": 3, "a": ["y"], "t": 1, "n": 1, "label": "no"}', b'{"id": 3, "a": "y", "t": 1, "n": 1} 1',
                  b'\xef\xbb\xbf{"id": 3, "a": "y", "t": 1, "n": 1, "label": "no"}',
                  b'{"id": 3.5, "a": "y", "t": 1, "n": 1, "label": "no"}'):
        assert decoder._scanned(values + [other]) is None
        decoded_as_one_at_a_time(decoder, values + [other])


def trained(make):
    """A model taught a few events of two float features, two integer ones and a string one."""
    rng = np.random.default_rng(3)
    model = make()
    for i in range(60):
        model.learn_one({"g": float(rng.normal()), "h": float(rng.normal()), "c": int(rng.integers(3)),
                         "d": int(rng.integers(2)), "s": ["u", "v"][i % 2]}, ["p", "q"][i % 2])
    return model


floats = st.sampled_from([0.5, -1.25, 3.0, None, 1e300, -1e101, float("inf"), float("nan")])
ints = st.sampled_from([0, 1, 2, 1, 0, 7])


@fuzz_settings(120)
@given(rows=st.lists(st.tuples(floats, floats, ints, ints, st.sampled_from(["u", "v", "w"]),
                               st.sampled_from(["p", "q", None, "r"])), min_size=1, max_size=40),
       name=st.sampled_from(["nb", "nb", "nb-bins", "tan", "aode"]), room=st.integers(0, 3))
def test_a_window_of_columns_read_together_is_encoded_as_the_same_events_as_dicts(rows, name, room):
    """The run encoding of a window of columns whose value types are known reads its float columns in one
    array and its integer columns through one table; the same events as dicts are read one column at a
    time, value by value: the same run (where it stops), value columns, Gaussian values, classes, and new
    values met in it."""
    import copy

    model = trained(MODELS[name])
    names = ["g", "h", "c", "d", "s"]
    table = {k: [row[j] for row in rows] for j, k in enumerate(names)}
    xs = Columns(table, len(rows), {k: frozenset(map(type, v)) for k, v in table.items()})
    dicts = [{k: v for k, v in zip(names, row) if v is not None} for row in rows]
    ys = [row[-1] for row in rows]
    got, expected = copy.deepcopy(model), copy.deepcopy(model)
    a = got._stats.schema.runs.encode_run(xs, ys, 0, False, 1024, True, True, room)
    b = expected._stats.schema.runs.encode_run(dicts, ys, 0, False, 1024, True, True, room)
    assert a[0] == b[0]
    for x, y in zip(a[1:], b[1:]):
        assert x.dtype == y.dtype and np.array_equal(x, y, equal_nan=True)
    new_a, new_b = got._stats.schema.runs.run_new, expected._stats.schema.runs.run_new
    assert (new_a is None) == (new_b is None)
    if new_a is not None:
        assert np.array_equal(new_a[0], new_b[0]) and new_a[1] == new_b[1] and np.array_equal(new_a[2], new_b[2])


def test_a_window_of_known_floats_and_integers_is_read_together():
    """The window the bench's events make (floats, and integers every one of which has a column) is read in
    one float array and one integer table, and a too large number stops the run where it stands."""
    model = trained(MODELS["nb"])
    rows = [(0.5, 1.0, 1, 0), (1e300, 2.0, 2, 1), (0.25, 3.0, 0, 1)]
    table = {k: [row[j] for row in rows] for j, k in enumerate(["g", "h", "c", "d"])}
    xs = Columns(table, 3, {k: frozenset(map(type, v)) for k, v in table.items()})
    s = model._stats
    runs = s.schema.runs
    window = xs.window(0, 3)
    floats, M, first_bad, codes = runs._bulk_columns(lambda f, name: window[name], xs.types, 3)
    features = list(runs.schema.features)
    assert sorted(floats) == sorted(features.index(k) for k in ("g", "h"))
    assert sorted(codes) == sorted(features.index(k) for k in ("c", "d"))
    assert first_bad[floats[features.index("g")]] == 1 and first_bad[floats[features.index("h")]] == 3
    stop, D, G, yc = s.encode_run(xs, ["p", "q", "p"], 0, complete=False, limit=1024, unseen=True)
    assert stop == 1 and np.array_equal(G[0, [runs.schema.gslot[features.index(k)] for k in ("g", "h")]], [0.5, 1.0])


MODELS = {
    "nb": stream_nb.NaiveBayes, "nb-bins": lambda: stream_nb.NaiveBayes(numeric=MDL(warmup=20)),
    "tan": lambda: stream_nb.TAN(search=Tree(rebuild_every=40)), "aode": stream_nb.AODE, "nb-window": lambda: stream_nb.NaiveBayes(forgetting=Window(60)),
}


def stream(n: int, seed: int) -> list[bytes]:
    """Events that all hold the same fields (null where a value is missing, a numeric one too): new values
    and classes now and then (inside polls), a feature whose first value comes late, unlabeled events and a
    value the model refuses (a string for the numeric feature)."""
    rng = np.random.default_rng(seed)
    raw = []
    for i in range(n):
        color = ["red", "blue", "green", f"c{i}"][int(rng.integers(4 if i > 120 else 3 if i > 30 else 2))]
        size = int(rng.integers(5 if i > 90 else 3)) if i % 17 != 5 else None
        w = float(rng.normal(2.0 if i % 2 else 0.0)) if i != 77 else "heavy"
        w = None if i % 13 == 3 else w  # a numeric value missing
        extra = None if i < 150 else ["s", "t"][i % 2]  # a feature the model first meets at event 150
        label = ["yes", "no", "maybe"][int(rng.integers(3 if i > 50 else 2))] if i % 9 else None
        raw.append(orjson.dumps({"id": i, "color": color, "size": size, "w": w, "extra": extra, "label": label}))
    return raw


def records_of(raw: list[bytes]) -> list[Record]:
    return [Record(v, f"k{i}".encode(), f"in-{i % 2}", {"topic": "in", "partition": i % 2, "offset": i // 2},
                   i // 2 + 1) for i, v in enumerate(raw)]


def run_engine(make, records, batch, dicts=False):
    out, dead = ListSink(), ListSink()
    engine = Engine(make(), Polls(records, batch), out, dead, config={"model_name": "m", "log_metrics_interval_s": 0})
    if dicts:  # the whole-poll path with the features as dicts, as before columns
        decode = engine.decoder.decode_columns
        engine.decoder.decode_columns = lambda values, columns=False: decode(values)
    taken = []
    blocks = engine._blocks
    engine._blocks = lambda xs, ys: (taken.append(type(xs)), blocks(xs, ys))[1]
    engine.run()
    return engine, out.sent, dead.sent, taken


def one_event_loop(make, records):
    """The reference: each record decoded alone, then predicted and learned alone (``prequential_one``)."""
    decoder, model, out, dead, n_learned = EventDecoder(), make(), [], [], 0
    for record in records:
        event = one_at_a_time(decoder, record.value)
        if not isinstance(event, InvalidEventError):
            try:
                step = model.prequential_one(event.features, event.label)
            except InvalidEventError as exc:
                event = exc.for_field("label") if isinstance(exc, LabelTypeError) and exc.field is None else exc
            else:
                n_learned += event.label is not None
                out.append(reference_bytes(event.id, step.prediction, step.proba, "m", event.label is not None,
                                           n_learned, record.position))
                continue
        dead.append(orjson.dumps(dead_letter_record(record, event, 64 * 1024)))
    return model, out, dead


def same_state(a, b, rtol: float = 0.0) -> None:
    (arrays_a, meta_a), (arrays_b, meta_b) = a.state(), b.state()
    assert meta_a == meta_b
    assert arrays_a.keys() == arrays_b.keys()
    for key in arrays_a:
        assert arrays_a[key].shape == arrays_b[key].shape, key
        if rtol:
            assert np.allclose(arrays_a[key], arrays_b[key], rtol=rtol, atol=0, equal_nan=True), key
        else:
            assert np.array_equal(arrays_a[key], arrays_b[key], equal_nan=True), key


def same_outputs(a: list[bytes], b: list[bytes]) -> None:
    """The same outputs, their probabilities to rounding (a model's kernel sums in its own order; the
    one-event loop of naive Bayes gives the same bytes)."""
    assert len(a) == len(b)
    for x, y in zip(map(orjson.loads, a), map(orjson.loads, b)):
        px, py = x.pop("proba"), y.pop("proba")
        assert x == y and px.keys() == py.keys()
        assert np.allclose(list(px.values()), list(py.values()), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_polls_as_columns_equal_the_one_event_loop(name):
    raw = stream(300, seed=len(name))
    raw[210:210] = [b'{"id": 1, "color": [1]}', b"not json", b'{"color": "red", "label": true}', b"\xff"]
    records = records_of(raw)
    engine, out, dead, taken = run_engine(MODELS[name], records, 60)
    assert taken == [Columns] * 3 + [list] + [Columns] * 2  # the poll with bad records goes as dicts
    model, out_ref, dead_ref = one_event_loop(MODELS[name], records)
    assert len(out) == len(records) - 5
    if name.startswith("nb"):
        assert out == out_ref
    same_outputs(out, out_ref)
    assert dead == dead_ref
    assert [orjson.loads(d)["reason"] for d in dead] == ["bad_feature_type", "nested_value", "invalid_json",
                                                         "label_type_conflict", "invalid_utf8"]
    same_state(engine.model, model, rtol=0.0 if name.startswith("nb") else 1e-9)
    assert engine.metrics.learned == orjson.loads(out_ref[-1])["n_learned"]


@pytest.mark.parametrize("name", sorted(MODELS))
def test_polls_as_columns_equal_polls_as_dicts(name):
    records = records_of(stream(300, seed=7))
    columns, dicts = run_engine(MODELS[name], records, 100), run_engine(MODELS[name], records, 100, dicts=True)
    assert set(columns[3]) == {Columns} and set(dicts[3]) == {list}
    assert columns[1] == dicts[1] and columns[2] == dicts[2]
    assert columns[0].metrics.state() == dicts[0].metrics.state()
    same_state(columns[0].model, dicts[0].model)


def test_stream_nb_run_over_a_file_takes_its_polls_as_columns_as_the_one_event_loop(tmp_path):
    """The real command over a file of such events, in polls of 60 (the one with bad records goes as dicts):
    each output and dead letter is the one-event loop's."""
    import subprocess
    import sys

    raw = stream(300, seed=11)
    raw[210:210] = [b'{"id": 1, "color": [1]}', b"not json", b'{"color": "red", "label": true}']
    path, dead = tmp_path / "in.jsonl", tmp_path / "dead.jsonl"
    path.write_bytes(b"\n".join(raw) + b"\n")
    done = subprocess.run([sys.executable, "-m", "stream_nb.cli", "run", "--input", str(path), "--dead-letter",
                           str(dead), "--poll-max-records", "60", "--model-name", "m"],
                          capture_output=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    _, expected, expected_dead = one_event_loop(MODELS["nb"], records_of(raw))
    outputs = [orjson.loads(line) for line in done.stdout.splitlines()]
    assert [{k: v for k, v in o.items() if k != "source"} for o in outputs] == [
        {k: v for k, v in orjson.loads(e).items() if k != "source"} for e in expected]
    assert [orjson.loads(line)["reason"] for line in dead.read_bytes().splitlines()] == [
        orjson.loads(d)["reason"] for d in expected_dead] == ["bad_feature_type", "nested_value", "invalid_json",
                                                              "label_type_conflict"]
