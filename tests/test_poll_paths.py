"""The engine's whole-poll steps against their event-by-event counterparts.

* ``EventDecoder.decode_columns`` on polls of common events (the path that
  takes a poll with no loop in Python) against ``decode`` one record at a time;
* a model's ``prequential_blocks``, each run expanded, against its
  ``prequential_iter`` (the same results; the model ends the same);
* ``PrequentialMetrics.update_many`` against ``update_prediction`` of each event;
* ``outputs_bytes`` against ``output_bytes`` of each output, the cut's fallback included;
* ``poll_outputs``' bytes of a run, written column by column, against the JSON of its output records;
* ``Engine.process_many`` on the whole-poll path against the same engine event by
  event around ``prequential_iter``: the same output bytes, dead letters in the
  same order, metrics, positions, latency count and model;
* ``make_records`` and the confluent source's column-wise records against ``Record``.
"""

from __future__ import annotations

import json
import math

import numpy as np
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

import stream_nb
from stream_nb import MDL, Tree, Window
from stream_nb.engine.loop._poll import poll_outputs
from stream_nb.engine import (Engine, EventDecoder, Observer, PositionColumns, PrequentialMetrics, Record,
                              RecordColumns, make_records, output_bytes, output_record, outputs_bytes)
from stream_nb.exceptions import InvalidEventError
from stream_nb.learners import RunBlock
from stream_nb.ops import DaemonObserver
from test_batch_paths import Polls, described, one_at_a_time
from test_fuzz_events import ListSink, fuzz_settings, json_scalars

flat_values = st.one_of(st.sampled_from(["x", "y", "z"]), st.integers(0, 3), st.floats(-5, 5), st.booleans())
common_events = st.fixed_dictionaries(
    {"id": st.one_of(st.integers(-(2**63), 2**64 - 1), st.text(max_size=3)), "label": st.sampled_from(["yes", "no", 1, None])},
    optional={"a": flat_values, "b": flat_values, "c": st.sampled_from(["x", "y"])},
)
odd_events = st.one_of(
    st.just(b'{"a": null, "label": "yes"}'), st.just(b'{"a": [1]}'), st.just(b'{"id": 1.5, "a": "x"}'),
    st.just(b'{"label": true}'), st.just(b'[1]'), st.just(b'{"a": NaN}'), st.just(b'\xef\xbb\xbf{"a": 1}'),
    st.just(b'{"a": '), st.just(b'{"id": [2]}'), st.just(b'{"label": 1.0}'), st.just(b'{"a": "' + b"x" * 40 + b'"}'),
)


@fuzz_settings(60)
@given(polls=st.lists(st.lists(common_events.map(orjson.dumps), max_size=12)
                      | st.lists(common_events.map(orjson.dumps) | odd_events, max_size=12), max_size=3),
       config=st.sampled_from([{}, {"id_field": None}, {"max_event_bytes": 32}, {"features": ["a", "c"]}]))
def test_decode_columns_equals_decode_one_at_a_time(polls, config):
    decoder = EventDecoder(config)
    for values in polls:
        ids, xs, ys, bad = decoder.decode_columns(values)
        assert sorted(bad) == [i for i, v in enumerate(values)
                               if isinstance(one_at_a_time(decoder, v), InvalidEventError)]
        valid = iter(zip(ids, xs, ys))
        got = [bad[i] if i in bad else stream_nb.engine.Event(*next(valid)) for i in range(len(values))]
        assert next(valid, None) is None
        assert [described(r) for r in got] == [described(one_at_a_time(decoder, v)) for v in values]


def test_decode_columns_takes_a_poll_of_common_events_whole():
    """The whole-poll path is the one taken for the usual poll (it leaves the parsed objects as the features)."""
    values = [b'{"id": 1, "a": "x", "b": 2.5, "label": "yes"}', b'{"id": "2", "a": "y", "b": 0.5}']
    assert EventDecoder()._decode_whole(values) == ([1, "2"], [{"a": "x", "b": 2.5}, {"a": "y", "b": 0.5}],
                                                    ["yes", None], {})
    for odd in (b'{"a": null}', b'{"label": true}', b'[1]', b'{"a": NaN}'):
        assert EventDecoder()._decode_whole(values + [odd]) is None


MODELS = {
    "nb": stream_nb.NaiveBayes, "nb-bins": lambda: stream_nb.NaiveBayes(numeric=MDL(warmup=20)),
    "tan": lambda: stream_nb.TAN(search=Tree(rebuild_every=40)), "aode": stream_nb.AODE, "spode": stream_nb.SPODE,
    "kdb": lambda: stream_nb.KDB(k=1), "nb-window": lambda: stream_nb.NaiveBayes(forgetting=Window(size=60)),
    "nb-loss": lambda: stream_nb.NaiveBayes(loss={"yes": {"no": 5.0}}),
}


def stream(n: int, seed: int) -> tuple[list, list]:
    """Events with new values and classes now and then, missing values, unlabeled ones and a bad value."""
    rng = np.random.default_rng(seed)
    xs, ys = [], []
    for i in range(n):
        x = {"color": ["red", "blue", "green"][rng.integers(3 if i > 30 else 2)], "size": int(rng.integers(3)),
             "w": float(rng.normal(2.0 if i % 2 else 0.0))}
        if i % 17 == 5:
            del x["size"]
        if i == 77:
            x["w"] = "heavy"  # refused by the model: a string for a numeric feature
        y = ["yes", "no", "maybe"][int(rng.integers(3 if i > 50 else 2))] if i % 9 else None
        xs.append(x)
        ys.append(y)
    return xs, ys


def expanded(items: list) -> list:
    out = []
    for item in items:
        if isinstance(item, RunBlock):
            assert len(item.decided) == len(item.yc) == item.proba.shape[0] == item.stop - item.start
            out.extend((item.classes[d], dict(zip(item.classes, p)))
                       for d, p in zip(item.decided.tolist(), item.proba.tolist()))
        else:
            out.append(item)
    return out


def same_results(a: list, b: list) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b):
        if isinstance(x, InvalidEventError):
            assert (type(x), x.reason, str(x)) == (type(y), y.reason, str(y))
        else:
            assert x == y


@pytest.mark.parametrize("name", sorted(MODELS))
def test_prequential_blocks_expand_to_prequential_iter(name):
    xs, ys = stream(240, seed=len(name))
    by_blocks, by_iter = MODELS[name](), MODELS[name]()
    blocks, results = [], []
    for start in range(0, len(xs), 80):
        blocks += list(by_blocks.prequential_blocks(xs[start:start + 80], ys[start:start + 80]))
        results += list(by_iter.prequential_iter(xs[start:start + 80], ys[start:start + 80]))
    assert any(isinstance(b, RunBlock) for b in blocks)  # the runs were taken whole
    same_results(expanded(blocks), results)
    probe = {"color": "green", "size": 1, "w": 1.0}
    assert by_blocks.predict_proba_one(probe) == by_iter.predict_proba_one(probe)
    assert by_blocks.n_learned == by_iter.n_learned


probabilities = st.one_of(st.floats(0, 1), st.sampled_from([0.0, 1e-300, 1e-15, 1.0, 1.0000000000000002, math.nan]))


@fuzz_settings(100)
@given(events=st.lists(st.tuples(st.sampled_from(["a", "b", None]), st.sampled_from(["a", "b", None]),
                                 probabilities, st.booleans()), max_size=30),
       floor=st.sampled_from([1e-15, 0.25]))
def test_update_many_equals_update_prediction_of_each(events, floor):
    one, many = PrequentialMetrics(floor), PrequentialMetrics(floor)
    for label, prediction, p, learned in events:
        proba = {} if p is None else {"a": p}
        learned = learned or label is not None
        one.update_prediction(label, prediction, proba, learned)
    labeled = [(label, prediction, {"a": p}.get(label, 0.0)) for label, prediction, p, _ in events
               if label is not None]
    hits = np.array([prediction is not None and prediction == label for label, prediction, _ in labeled], dtype=bool)
    many.update_many(len(events), sum(1 for label, _, _, learned in events if learned or label is not None),
                     int(hits.sum()), np.array([p for _, _, p in labeled], dtype=float), hits)
    assert many.state() == one.state()


positions = st.one_of(st.fixed_dictionaries({"topic": st.text(max_size=3), "partition": st.integers(0, 3),
                                             "offset": st.integers(0, 2**40)}),
                      st.just({"x": [1, {"id": 2}]}), st.just({"t": '},{"id":'}),
                      st.dictionaries(st.text(max_size=3), json_scalars, max_size=2))


@fuzz_settings(100)
@given(rows=st.lists(st.tuples(json_scalars, st.none() | st.sampled_from(["a", "b"]) | st.integers(),
                               st.dictionaries(st.sampled_from(["a", "b", "},{\"id\":"]), st.floats(0, 1), max_size=3)
                               | st.dictionaries(st.integers(0, 3) | st.integers(), st.floats(0, 1), max_size=2),
                               st.booleans(), st.integers(0, 2**40), positions), max_size=8))
def test_outputs_bytes_equal_output_bytes_of_each(rows):
    outputs = [output_record(i, p, proba, "nb", learned, n, pos) for i, p, proba, learned, n, pos in rows]
    assert outputs_bytes(outputs) == [output_bytes(i, p, proba, "nb", learned, n, pos)
                                      for i, p, proba, learned, n, pos in rows]


run_classes = st.one_of(st.lists(st.text(max_size=3), min_size=1, max_size=3, unique=True),
                        st.lists(st.integers(-(2**70), 2**70), min_size=1, max_size=3, unique=True),
                        st.just([False, True]), st.just(["%s", "%d%%", "é\\"]))


def drawn_block(data, classes: list, n: int, probabilities) -> RunBlock:
    """A run of ``n`` events over ``classes`` as the kernel gives it: the decided class, the probabilities
    (each drawn from ``probabilities``) and the label's class index (-1: none) of each event, drawn."""
    c = len(classes)
    proba = np.array(data.draw(st.lists(st.lists(probabilities, min_size=c, max_size=c), min_size=n, max_size=n)),
                     dtype=float).reshape(n, c)
    decided, labels = (np.array(data.draw(st.lists(st.integers(low, c - 1), min_size=n, max_size=n)),
                                dtype=np.int64).reshape(n) for low in (0, -1))
    return RunBlock(0, n, classes, decided, proba, labels)


@fuzz_settings(100)
@given(classes=run_classes, data=st.data(), model_name=st.sampled_from(["nb", "%s%%", "é\"\n"]),
       learn_unlabeled=st.booleans(), learned_before=st.integers(0, 2**40))
def test_run_bytes_equal_the_json_of_the_run_outputs(classes, data, model_name, learn_unlabeled, learned_before):
    """A run's outputs as bytes (no dict per event) are the JSON of its output records, whatever the ids,
    classes, probabilities, model name and positions (read from the records, or given as the column
    ``process_many`` takes from its poll); a value orjson refuses (an integer beyond 64 bits) takes the
    records' path."""
    n = data.draw(st.integers(0, 6))
    block = drawn_block(data, classes, n, st.floats(0, 1) | st.sampled_from(
        [1e-300, 5e-324, 1e-5, 1e16, 0.1, 0.30000000000000004, 1.0000000000000002, -0.0]))
    ids = data.draw(st.lists(json_scalars, min_size=n, max_size=n))
    valid = [Record(b"{}", None, "p", pos, 1) for pos in data.draw(st.lists(positions, min_size=n, max_size=n))]
    got = []
    for as_bytes, column in ((True, None), (False, None), (True, tuple(record.position for record in valid))):
        metrics = PrequentialMetrics()
        metrics.learned = learned_before
        outputs, sent, refused = poll_outputs([block], ids, [None] * n, valid, metrics, model_name, learn_unlabeled,
                                              as_bytes=as_bytes, positions=column)
        assert sent == valid and not refused
        got.append((outputs, metrics.state()))
    (written, state), (records, state_of_records), (given, state_given) = got
    assert state == state_of_records == state_given
    assert written == given == [_json(record) for record in records]


@fuzz_settings(100)
@given(data=st.data(), classes=run_classes, topic=st.text(max_size=4) | st.sampled_from(["%s", "%d%%", '"},{"']),
       n=st.integers(0, 6), constant_second=st.booleans())
def test_run_bytes_of_position_columns_equal_the_json_of_their_dicts(data, classes, topic, n, constant_second):
    """A poll held as RecordColumns, its positions as PositionColumns: the run's bytes, written from the
    columns (no dict per position), are the JSON of the output records of its records one by one, whatever
    the constants and the columns' values (integers past 64 bits, which orjson refuses, take the records' path;
    a column of other values is written value by value); every valid event sent leaves the poll as columns."""
    block = drawn_block(data, classes, n, st.floats(0, 1))
    ids = data.draw(st.lists(json_scalars, min_size=n, max_size=n))
    partitions = data.draw(st.lists(st.integers(0, 3) | st.integers(), min_size=n, max_size=n))
    offsets = data.draw(st.lists(st.integers(0, 2**40) | json_scalars, min_size=n, max_size=n))
    constants = {"topic": topic, **({"%s": [1, "x"]} if constant_second else {})}
    columns = PositionColumns(constants, {"partition": partitions, "offset": offsets})
    poll = RecordColumns([b"{}"] * n, [None] * n, ["p"] * n, columns, [1] * n)
    records = list(poll)
    assert [r.position for r in records] == [{**constants, "partition": p, "offset": o}
                                             for p, o in zip(partitions, offsets)] == list(columns)
    got = []
    for valid, as_bytes, column in ((poll, True, columns), (poll, True, None), (records, False, None)):
        outputs, sent, refused = poll_outputs([block], ids, [None] * n, valid, PrequentialMetrics(), "nb", False,
                                              as_bytes=as_bytes, positions=column)
        assert sent == records and not refused
        if valid is poll and n:
            assert sent is poll
        got.append(outputs)
    assert got[0] == got[1] == [_json(record) for record in got[2]]


def test_run_bytes_of_values_holding_commas_equal_their_json():
    """Ids and position values whose JSON holds commas (cut from one dump, they would come out as too many
    parts) are written value by value: the same bytes as the records' JSON."""
    ids = ["a,b", 1, [1, 2]]
    columns = PositionColumns({"topic": "t,u"}, {"partition": [0, "1,2", 2], "offset": [{"x": 1, "y": 2}, 5, 6]})
    poll = RecordColumns([b"{}"] * 3, [None] * 3, ["p"] * 3, columns, [1] * 3)
    block = RunBlock(0, 3, ["x", "y"], np.array([0, 1, 0]), np.array([[0.5, 0.5], [0.25, 0.75], [1.0, 0.0]]),
                     np.array([0, -1, 1]))
    written, sent, _ = poll_outputs([block], ids, ["x", None, "y"], poll, PrequentialMetrics(), "nb", False,
                                    as_bytes=True, positions=columns)
    records, _, _ = poll_outputs([block], ids, ["x", None, "y"], list(poll), PrequentialMetrics(), "nb", False)
    assert sent is poll and written == list(map(orjson.dumps, records))
    assert orjson.loads(written[1])["source"] == {"topic": "t,u", "partition": "1,2", "offset": 5}


def _json(record) -> bytes:
    """The JSON of one output record, as a sink receives it from the one-event path."""
    try:
        return orjson.dumps(record)
    except TypeError:
        return json.dumps(record, separators=(",", ":"), ensure_ascii=False).encode()


class CountingObserver(Observer):
    def __init__(self):
        self.events = 0

    def event_done(self, polled):
        self.events += 1


def engine_pair(make, records, batch):
    engines = []
    for whole in (True, False):
        out, dead = ListSink(), ListSink()
        engine = Engine(make(), Polls(records, batch), out, dead,
                        config={"model_name": "m", "log_metrics_interval_s": 0})
        engine.observer = CountingObserver()
        if not whole:
            engine._blocks = None  # the event-by-event path around prequential_iter
        engine.run()
        engines.append((engine, out, dead))
    return engines


@pytest.mark.parametrize("name", ["nb", "tan", "aode", "nb-window"])
def test_process_many_whole_poll_equals_event_by_event(name):
    xs, ys = stream(300, seed=3)
    raw = [orjson.dumps({"id": i, **x, "label": y}) for i, (x, y) in enumerate(zip(xs, ys))]
    raw[40:40] = [b'{"id": 1, "color": [1]}', b"not json", b'{"color": "red", "label": true}', b"\xff"]
    records = [Record(v, f"k{i}".encode(), f"in-{i % 2}", {"topic": "in", "partition": i % 2, "offset": i // 2},
                      i // 2 + 1) for i, v in enumerate(raw)]
    (whole, out, dead), (each, out_each, dead_each) = engine_pair(MODELS[name], records, 64)
    assert out.sent == out_each.sent and len(out.sent) > 250
    assert dead.sent == dead_each.sent and len(dead.sent) == 5  # the four bad records and the model's refusal
    assert whole.metrics.state() == each.metrics.state()
    assert whole.positions == each.positions == {"in-0": 152, "in-1": 152}
    assert whole.observer.events == each.observer.events == len(records)
    probe = {"color": "green", "size": 1, "w": 1.0}
    assert whole.model.predict_proba_one(probe) == each.model.predict_proba_one(probe)


class ColumnPolls(Polls):
    """The same polls as :class:`Polls`, each handed out as RecordColumns, its positions as PositionColumns."""

    def poll(self, max_records, timeout):
        out = super().poll(max_records, timeout)
        values, keys, partitions, positions, next_positions, _ = zip(*out) if out else [()] * 6
        return RecordColumns(list(values), list(keys), list(partitions),
                             PositionColumns({"topic": "in"}, {"partition": [p["partition"] for p in positions],
                                                               "offset": [p["offset"] for p in positions]}),
                             list(next_positions))


@pytest.mark.parametrize("name", ["nb", "tan"])
def test_process_many_of_record_columns_equals_a_list_of_records(name):
    """A source's polls as columns (RecordColumns, PositionColumns) give the same output bytes, dead letters,
    metrics and positions as the same polls as lists of records, bad events among them."""
    xs, ys = stream(300, seed=4)
    raw = [orjson.dumps({"id": i, **x, "label": y}) for i, (x, y) in enumerate(zip(xs, ys))]
    raw[70:70] = [b'{"id": 1, "color": [1]}', b"not json", b'{"color": "red", "label": true}']
    records = [Record(v, f"k{i}".encode(), f"in-{i % 3}", {"topic": "in", "partition": i % 3, "offset": i // 3},
                      i // 3 + 1) for i, v in enumerate(raw)]
    got = []
    for source in (Polls(records, 64), ColumnPolls(records, 64)):
        out, dead = ListSink(), ListSink()
        engine = Engine(MODELS[name](), source, out, dead, config={"model_name": "m"})
        engine.run()
        got.append((out.sent, dead.sent, engine.metrics.state(), engine.positions))
    assert got[0] == got[1] and len(got[0][0]) > 250 and len(got[0][1]) == 4


def test_a_model_failing_part_way_sends_what_it_learned():
    """An unexpected error inside the model: the events it went through are sent and their positions
    kept, as the event-by-event path does; the error propagates."""
    xs, ys = stream(200, seed=5)
    raw = [orjson.dumps({"id": i, **x, "label": y}) for i, (x, y) in enumerate(zip(xs, ys)) if i != 77]
    records = [Record(v, None, "in-0", {"offset": i}, i + 1) for i, v in enumerate(raw)]

    class Failing(stream_nb.NaiveBayes):
        def prequential_one(self, x, y, impute=False):
            if x.get("color") == "green":
                raise RuntimeError("model bug")
            return super().prequential_one(x, y, impute=impute)

    sent = []
    for whole in (True, False):
        out, dead = ListSink(), ListSink()
        engine = Engine(Failing(), Polls(records, 200), out, dead, config={"model_name": "m"})
        if not whole:
            engine._blocks = None
        with pytest.raises(RuntimeError, match="model bug"):
            engine.run()
        assert engine.positions == {"in-0": len(out.sent) + len(dead.sent)} and out.sent
        sent.append((out.sent, engine.metrics.state(), engine.positions))
    assert sent[0] == sent[1]


def test_daemon_observer_counts_a_poll_at_once():
    observer = DaemonObserver(model_name="m", mode="jsonl")
    observer.events_done(0.0, 500)
    observer.event_done(0.0)
    assert observer.latency.count == 501 and observer.latency.counts[-1] == 501


def test_make_records_equal_records():
    columns = ([b"a", b"b"], [None, b"k"], ["t-0", "t-1"], [{"offset": 1}, {"offset": 2}], [2, 3])
    made = make_records(*columns)
    assert made == [Record(*row) for row in zip(*columns)] and all(type(r) is Record for r in made)
    assert made[1].size is None and made[1].next_position == 3


class Consumes:
    """A stand-in confluent-kafka consumer: ``consume`` hands out the messages once."""

    def __init__(self, messages):
        self.messages = messages

    def consume(self, n, timeout):
        out, self.messages = self.messages[:n], self.messages[n:]
        return out


class Replays:
    """A stand-in adapter consumer: ``poll`` returns one poll's columns; it is in no group."""

    def __init__(self, polled):
        self.polled = polled

    def poll(self, max_records, timeout):
        return self.polled

    def group_metadata(self):
        return None


def test_kafka_source_records_column_wise_equal_the_loop():
    ck = pytest.importorskip("confluent_kafka")
    from connectors.kafka import KafkaSource, _confluent
    from connectors.kafka._feedback_topic import FeedbackTap

    messages = [ck.Message(topic="in", partition=i % 3, offset=10 + i, key=b"k%d" % i if i % 2 else None,
                           value=b'{"a": %d}' % i) for i in range(7)]
    consumer = object.__new__(_confluent._Consumer)  # the adapter's columns of a poll: no broker
    consumer._ck, consumer._c, consumer._down = ck, Consumes(messages), False
    polled = consumer.poll(100, 0.0)
    assert polled.offsets == list(range(10, 17)) and polled.topics == ["in"] * 7
    one = object.__new__(_confluent._Consumer)  # subscribed to the one topic: its name, not each record's
    one._ck, one._c, one._down, one._listener = ck, Consumes(messages), False, None
    one._c.subscribe = lambda topics, **callbacks: None
    one.subscribe(["in"], None)
    assert one._one_topic == "in" and one.poll(100, 0.0) == polled
    one.subscribe(["in", "labels"], None)
    assert one._one_topic is None

    def records(feedback):
        source = object.__new__(KafkaSource)  # the record builders only (no feedback: by columns; else a loop)
        source.topic, source._keys, source.feedback, source._to_settle = "in", {}, feedback, set()
        source._membership_due = True  # as under a transaction: the poll takes the membership too
        source._consumer = Replays(polled)
        return source.poll(100, 0.0)

    tap = FeedbackTap("labels", "in")
    by_columns, by_loop = records(None), records(tap)
    assert by_columns == by_loop and not tap.poll(100, 0.0)
    assert by_columns[4] == Record(b'{"a": 4}', None, "in-1", {"topic": "in", "partition": 1, "offset": 14}, 15)


def test_outputs_and_dead_letters_to_one_sink_keep_input_order():
    """A sink taking both the outputs and the dead letters sees them interleaved as one event at a time sends."""
    xs, ys = stream(120, seed=9)
    raw = [orjson.dumps({"id": i, **x, "label": y}) for i, (x, y) in enumerate(zip(xs, ys))]
    raw[10:10] = [b"[1]"]
    raw[30:30] = [b"{", b'{"color": {}}']
    records = [Record(v, None, "in-0", {"offset": i}, i + 1) for i, v in enumerate(raw)]
    sent = []
    for whole in (True, False):
        both = ListSink()
        engine = Engine(stream_nb.NaiveBayes(), Polls(records, 50), both, both, config={"model_name": "m"})
        if not whole:
            engine._blocks = None
        engine.run()
        sent.append(both.sent)
    assert sent[0] == sent[1] and len(sent[0]) == len(records)
    reasons = {i: orjson.loads(v).get("reason") for i, v in enumerate(sent[0])}
    assert {i: r for i, r in reasons.items() if r} == {10: "not_an_object", 30: "invalid_json", 31: "nested_value",
                                                       80: "bad_feature_type"}  # 80: the model's refusal


def test_output_bytes_of_an_id_past_64_bits_is_its_json():
    # orjson refuses an integer past 64 bits: the record is then written by the general path, as JSON reads it
    source = {"topic": "events", "partition": 0, "offset": 5}
    got = output_bytes(2**70, "a", {"a": 0.25, "b": 0.75}, "nb", True, 3, source)
    assert json.loads(got) == {"id": 2**70, "prediction": "a", "proba": {"a": 0.25, "b": 0.75}, "model": "nb",
                               "learned": True, "n_learned": 3, "source": source}
