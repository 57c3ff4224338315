"""The engine's run loop against in-memory Source/Sink doubles and the real learners."""

from __future__ import annotations

import ast
import base64
import importlib.util
import logging
import math
import pathlib

import orjson
import pytest

from stream_nb import AODE, TAN, NaiveBayes, Tree
from stream_nb.engine import DEFAULT_CONFIG, Engine, PrequentialMetrics, Record, label_key
from stream_nb.exceptions import CommitError, ConfigError

ROOT = pathlib.Path(__file__).resolve().parent.parent


def load_example_generator():
    spec = importlib.util.spec_from_file_location("make_events", ROOT / "examples" / "make_events.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class ListSource:
    """A finite Source over given values, in batches of at most ``batch`` records.

    ``calls`` is shared with the sinks to check the order of flushes and commits.
    """

    def __init__(self, values, *, partition="p0", batch=1000, calls=None, keys=None):
        self.records = [
            Record(
                value=v,
                key=None if keys is None else keys[i],
                partition=partition,
                position={"partition": partition, "offset": i},
                next_position=i + 1,
            )
            for i, v in enumerate(values)
        ]
        self.batch = batch
        self.calls = [] if calls is None else calls
        self.commits: list[dict] = []
        self.exhausted = False
        self.on_poll = None

    def poll(self, max_records, timeout):
        if self.on_poll is not None:
            self.on_poll()
        n = min(max_records, self.batch)
        out, self.records = self.records[:n], self.records[n:]
        if not out:
            self.exhausted = True
        self.calls.append(("poll", len(out)))
        return out

    def commit(self, positions):
        self.calls.append(("commit", dict(positions)))
        self.commits.append(dict(positions))

    def seek(self, positions):
        raise AssertionError("the engine never seeks by itself")

    def close(self):
        self.calls.append(("close-source",))


class ListSink:
    def __init__(self, name="out", calls=None):
        self.name = name
        self.calls = [] if calls is None else calls
        self.sent: list[tuple[bytes, bytes | None]] = []
        self.flushed = 0

    def send(self, value, key=None):
        self.sent.append((value, key))

    def flush(self):
        self.flushed = len(self.sent)
        self.calls.append(("flush", self.name))

    def close(self):
        self.flush()

    @property
    def records(self):
        return [orjson.loads(v) for v, _ in self.sent]


def make_engine(values, model=None, config=None, **source_kwargs):
    calls: list = []
    source = ListSource(values, calls=calls, **source_kwargs)
    out, dlq = ListSink("out", calls), ListSink("dlq", calls)
    engine = Engine(model if model is not None else NaiveBayes(), source, out, dlq, config=config)
    return engine, source, out, dlq, calls


def example_lines():
    return load_example_generator().generate()


# ----------------------------------------------------------------------- outputs


def test_exactly_one_output_per_valid_event_in_input_order():
    values = [orjson.dumps({"id": i, "x": "ab"[i % 2], "label": "yn"[i % 3 == 0]}) for i in range(50)]
    values.insert(10, b"not json")
    values.insert(30, b"[1]")
    engine, source, out, dlq, _ = make_engine(values, config={"poll_max_records": 7})
    engine.run()
    ids = [r["id"] for r in out.records]
    assert ids == list(range(50))
    assert [r["source"]["offset"] for r in out.records] == [i for i in range(52) if i not in (10, 30)]
    assert len(dlq.sent) == 2
    assert engine.metrics.predicted == 50 and engine.metrics.events == 52


def test_output_record_format():
    values = [
        b'{"id": "a", "x": "u", "label": "yes"}',
        b'{"id": "b", "x": "v", "label": "no"}',
        b'{"id": "c", "x": "u"}',
    ]
    engine, _, out, _, _ = make_engine(values, config={"model_name": "nb-test"})
    engine.run()
    first, second, third = out.records
    assert first == {
        "id": "a",
        "prediction": None,
        "proba": {},
        "model": "nb-test",
        "learned": True,
        "n_learned": 1,
        "source": {"partition": "p0", "offset": 0},
    }
    assert second["prediction"] == "yes" and set(second["proba"]) == {"yes"}
    assert second["n_learned"] == 2
    assert third["learned"] is False and third["n_learned"] == 2
    assert set(third["proba"]) == {"yes", "no"}
    assert math.isclose(sum(third["proba"].values()), 1.0)
    assert third["prediction"] == "yes"  # x=u was seen with "yes" only


def test_model_name_defaults_to_the_model_class():
    engine, _, out, _, _ = make_engine([b'{"x": 1}'])
    engine.run()
    assert out.records[0]["model"] == "NaiveBayes"


def test_integer_and_boolean_labels_keep_their_type_in_prediction_and_key_proba_as_json_text():
    values = [b'{"x": "a", "label": 1}', b'{"x": "b", "label": 2}', b'{"x": "a"}']
    engine, _, out, _, _ = make_engine(values)
    engine.run()
    last = out.records[-1]
    assert last["prediction"] == 1
    assert set(last["proba"]) == {"1", "2"}

    values = [b'{"x": "a", "label": true}', b'{"x": "b", "label": false}', b'{"x": "b"}']
    engine, _, out, _, _ = make_engine(values)
    engine.run()
    last = out.records[-1]
    assert last["prediction"] is False
    assert set(last["proba"]) == {"true", "false"}
    assert [label_key(v) for v in ("s", 7, True, False)] == ["s", "7", "true", "false"]


def test_outputs_keep_the_input_key():
    values = [b'{"x": 1}', b"oops", b'{"x": 2}']
    engine, _, out, dlq, _ = make_engine(values, keys=[b"k0", b"k1", None])
    engine.run()
    assert [k for _, k in out.sent] == [b"k0", None]
    assert [k for _, k in dlq.sent] == [b"k1"]


# ----------------------------------------------------------------------- dead letters


def test_every_malformed_kind_goes_to_the_dead_letter_sink_with_reason_and_position():
    values = [
        b'{"t": 20.5, "o": "sun", "label": "yes"}',  # teaches the model that t is numeric
        b'{"x": "caf\xe9"}',
        b'{"x": 1',
        b'"just a string"',
        b'{"o": {"nested": 1}}',
        b'{"o": "sun", "label": 0.5}',
        b'{"id": [1], "o": "sun"}',
        b'{"t": "hot", "label": "no"}',
        b'{"pad": "' + b"x" * 200 + b'"}',
        b'{"t": 18.0, "o": "rain", "label": "no"}',
    ]
    engine, _, out, dlq, _ = make_engine(values, config={"max_event_bytes": 128})
    engine.run()
    letters = dlq.records
    assert [(d["reason"], d["field"], d["source"]["offset"]) for d in letters] == [
        ("invalid_utf8", None, 1),
        ("invalid_json", None, 2),
        ("not_an_object", None, 3),
        ("nested_value", "o", 4),
        ("bad_label", "label", 5),
        ("bad_id", "id", 6),
        ("bad_feature_type", "t", 7),
        ("oversize", None, 8),
    ]
    assert [r["source"]["offset"] for r in out.records] == [0, 9]
    assert engine.metrics.dead_letters_by_reason == {
        "invalid_utf8": 1, "invalid_json": 1, "not_an_object": 1, "nested_value": 1,
        "bad_label": 1, "bad_id": 1, "bad_feature_type": 1, "oversize": 1,
    }
    # the rejected event changed nothing: the model learned exactly the two valid labeled events
    assert engine.metrics.learned == 2 and out.records[-1]["n_learned"] == 2


def test_dead_letter_record_format_text_base64_and_truncation():
    long_text = b'{"a": [' + b"1," * 100 + b"1]}"
    split_char = b'["' + b"a" * 17 + "é".encode() + b'"'  # é is bytes 19-20: the cut at 20 splits it
    values = [b"[1]", b'{"x": "\xff"}', long_text, split_char]
    engine, _, _, dlq, _ = make_engine(values, config={"dead_letter_max_value_bytes": 20})
    engine.run()
    text, binary, cut, cut_text = dlq.records
    assert text == {
        "reason": "not_an_object",
        "error": "event must be a JSON object, got an array",
        "field": None,
        "source": {"partition": "p0", "offset": 0},
        "size": 3,
        "value": "[1]",
    }
    assert "value" not in binary
    assert base64.b64decode(binary["value_b64"]) == values[1]
    assert binary["reason"] == "invalid_utf8"
    assert cut["truncated"] is True and cut["size"] == len(long_text)
    assert cut["value"] == long_text[:20].decode()
    assert cut["reason"] == "nested_value" and cut["field"] == "a"
    assert "truncated" not in text
    # a cut inside a multi-byte character keeps the text form
    assert cut_text["reason"] == "invalid_json"
    assert cut_text["value"] == '["' + "a" * 17
    assert cut_text["truncated"] is True


# ----------------------------------------------------------------------- prequential metrics


@pytest.mark.parametrize("make_model", [NaiveBayes, AODE, lambda: TAN(search=Tree(rebuild_every=50))], ids=["nb", "aode", "tan"])
def test_metrics_and_outputs_equal_an_independent_predict_then_learn_loop(make_model):
    lines = example_lines()
    values = [raw for raw, _ in lines if raw]
    engine, _, out, dlq, _ = make_engine(values, model=make_model(), config={"poll_max_records": 37})
    engine.run()

    reference = make_model()
    floor = DEFAULT_CONFIG["log_loss_floor"]
    outputs, labeled, correct, loss, floored, learned = [], 0, 0, 0.0, 0, 0
    for raw, reason in lines:
        if reason is not None:
            continue
        event = orjson.loads(raw)
        label = event.pop("label", None)
        event.pop("id")
        x = {k: v for k, v in event.items() if v is not None}
        proba = reference.predict_proba_one(x)
        prediction = reference.predict_one(x)
        if label is not None:
            reference.learn_one(x, label)
            learned += 1
            labeled += 1
            correct += prediction == label
            p = proba.get(label, 0.0)
            if p < floor:
                p, floored = floor, floored + 1
            loss -= math.log(min(p, 1.0))
        outputs.append({"prediction": prediction, "proba": proba, "learned": label is not None, "n_learned": learned})

    # NaiveBayes scores each poll with running counts (prequential_many): the same numbers up to rounding
    assert len(out.records) == len(outputs)
    for r, want in zip(out.records, outputs):
        assert {k: r[k] for k in ("prediction", "learned", "n_learned")} == {k: want[k] for k in ("prediction", "learned", "n_learned")}
        assert r["proba"] == pytest.approx(want["proba"], rel=1e-9, abs=0.0)
    m = engine.metrics.as_dict()
    assert m["labeled"] == m["learned"] == labeled
    assert m["correct"] == correct
    assert m["accuracy"] == correct / labeled
    assert m["log_loss"] == pytest.approx(loss / labeled, rel=1e-9)
    assert m["log_loss_floored"] == floored
    assert m["predicted"] == len(outputs)
    assert m["dead_letters"] == sum(r not in (None, "blank") for _, r in lines) == len(dlq.sent)
    assert m["events"] == m["predicted"] + m["dead_letters"]
    assert 0.6 < m["accuracy"] <= 1.0  # the example stream is learnable


def test_log_loss_of_an_unseen_class_is_the_floor_never_inf_or_nan():
    metrics = PrequentialMetrics(log_loss_floor=1e-6)
    metrics.update_prediction(label="a", prediction=None, proba={}, learned=True)
    assert metrics.log_loss == pytest.approx(-math.log(1e-6))
    metrics.update_prediction(label="b", prediction="a", proba={"a": 1.0}, learned=True)
    metrics.update_prediction(label="a", prediction="a", proba={"a": 0.0, "b": float("nan")}, learned=True)
    metrics.update_prediction(label="a", prediction="a", proba={"a": 1.0000000002}, learned=True)
    assert metrics.log_loss_floored == 3
    assert metrics.log_loss == pytest.approx(3 * -math.log(1e-6) / 4)
    assert math.isfinite(metrics.log_loss)
    assert metrics.accuracy == 0.5


def test_metrics_before_any_labeled_event_are_none_not_nan():
    engine, _, _, _, _ = make_engine([b'{"x": 1}', b'{"x": 2}'])
    engine.run()
    m = engine.metrics.as_dict()
    assert m["accuracy"] is None and m["log_loss"] is None
    assert m["predicted"] == 2 and m["learned"] == 0
    orjson.dumps(m)  # JSON-able


@pytest.mark.parametrize("floor", [0, 1, -1e-3, "1e-9", True])
def test_log_loss_floor_must_be_a_probability(floor):
    with pytest.raises(ConfigError, match="log_loss_floor must be a number in"):
        PrequentialMetrics(floor)


# ----------------------------------------------------------------------- checkpoints


def test_flush_happens_before_commit_and_commit_holds_the_next_positions():
    values = [b'{"x": 1}'] * 5
    engine, source, out, dlq, calls = make_engine(values, config={"commit_every_records": 2, "poll_max_records": 2})
    engine.run()
    commits = [i for i, c in enumerate(calls) if c[0] == "commit"]
    assert [calls[i][1] for i in commits] == [{"p0": 2}, {"p0": 4}, {"p0": 5}]
    for i in commits:
        assert calls[i - 2:i] == [("flush", "out"), ("flush", "dlq")]
    assert out.flushed == len(out.sent) == 5


def test_commit_on_interval():
    values = [b'{"x": 1}'] * 6
    engine, source, _, _, _ = make_engine(
        values, config={"commit_every_records": 10_000, "commit_interval_s": 0, "poll_max_records": 3}
    )
    engine.run()
    assert source.commits == [{"p0": 3}, {"p0": 6}]


def test_idle_poll_with_pending_work_checkpoints():
    class IdleOnce(ListSource):
        was_idle = False

        def poll(self, max_records, timeout):
            if not self.records and not self.was_idle:
                self.was_idle = True
                self.calls.append(("idle",))
                return []  # nothing arrived in time, but the source is not finished
            return super().poll(max_records, timeout)

    calls: list = []
    source = IdleOnce([b'{"x": 1}', b'{"x": 2}'], calls=calls)
    engine = Engine(NaiveBayes(), source, ListSink("out", calls), ListSink("dlq", calls), config={"commit_interval_s": 3600})
    engine.run()
    assert calls == [
        ("poll", 2),
        ("idle",),
        ("flush", "out"), ("flush", "dlq"), ("commit", {"p0": 2}),  # at once, not an hour later
        ("poll", 0),
        ("flush", "out"), ("flush", "dlq"),  # the final checkpoint has nothing new to commit
    ]


def test_no_commit_when_nothing_was_processed():
    engine, source, out, _, _ = make_engine([])
    engine.run()
    assert source.commits == []
    assert out.flushed == 0


def test_positions_are_per_partition():
    calls: list = []

    class TwoPartitions(ListSource):
        def __init__(self):
            super().__init__([], calls=calls)
            self.records = [
                Record(b'{"x": 1}', None, "a", {"p": "a", "o": 0}, 1),
                Record(b'{"x": 1}', None, "b", {"p": "b", "o": 10}, 11),
                Record(b"bad", None, "a", {"p": "a", "o": 1}, 2),
            ]

    source = TwoPartitions()
    engine = Engine(NaiveBayes(), source, ListSink("out", calls), ListSink("dlq", calls))
    engine.run()
    assert source.commits == [{"a": 2, "b": 11}]
    assert engine.positions == {"a": 2, "b": 11}


class PublicCheckpointer:
    """A checkpointer written against the engine's public methods only, as the snapshot one is."""

    def __init__(self):
        self.finals: list[bool] = []

    def attach(self, engine):
        self.engine = engine
        engine.limit_checkpoint_cadence(3, 0.0)

    def checkpoint(self, final=False):
        engine = self.engine
        engine.flush()
        committed = engine.committed
        target = {k: v for k, v in engine.positions.items() if committed.get(k) != v}
        if target:
            engine.source.commit(target)
            engine.mark_committed(target)
        self.finals.append(final)

    def status(self):
        return {"checkpoints": len(self.finals)}


def test_a_checkpointer_drives_the_engine_through_its_public_methods():
    values = [orjson.dumps({"id": i, "x": "ab"[i % 2], "label": "yn"[i % 3 == 0]}) for i in range(10)]
    calls: list = []
    source, out, dlq = ListSource(values, calls=calls), ListSink("out", calls), ListSink("dlq", calls)
    cp = PublicCheckpointer()
    engine = Engine(NaiveBayes(), source, out, dlq, config={"commit_every_records": 100, "poll_max_records": 50},
                    checkpointer=cp)
    # the checkpointer's own cadence, when shorter, bounds the engine's checkpoints and polls
    assert engine.config["commit_every_records"] == 3 and engine.config["poll_max_records"] == 3
    assert engine.config["commit_interval_s"] == DEFAULT_CONFIG["commit_interval_s"]  # 0: no limit asked
    engine.adopt_position("other-0", 7)  # taken as processed and committed elsewhere: never committed here
    engine.run()
    assert source.commits == [{"p0": 3}, {"p0": 6}, {"p0": 9}, {"p0": 10}]
    assert cp.finals == [False, False, False, True]
    assert engine.committed == {"p0": 10, "other-0": 7} and engine.positions == engine.committed
    assert [c for c in calls if c[0] != "poll"][:3] == [("flush", "out"), ("flush", "dlq"), ("commit", {"p0": 3})]
    assert engine.status()["checkpoints"] == 4


def test_a_checkpointer_without_the_checkpointing_methods_is_rejected():
    with pytest.raises(ConfigError, match=r"checkpointer must have attach\(engine\), checkpoint\(final\) and "
                                          r"status\(\); object has not"):
        Engine(NaiveBayes(), ListSource([]), ListSink(), ListSink(), checkpointer=object())


# ----------------------------------------------------------------------- stopping


def test_stop_finishes_the_current_event_flushes_commits_and_returns():
    values = [b'{"x": 1, "label": "a"}'] * 10

    class StopOnThirdLearn(NaiveBayes):
        prequential_iter = None  # one event at a time: stop() is noticed between events

        def learn_one(self, x, y, w=1.0):
            seen.append(1)
            if len(seen) == 3:
                engine.stop()  # what a signal handler would do, mid-event
            super().learn_one(x, y, w)

    seen: list = []
    engine, source, out, _, _ = make_engine(values, model=StopOnThirdLearn(), config={"poll_max_records": 10})
    engine.run()
    assert engine.stopping
    assert len(out.sent) == 3 == out.flushed  # the third event was finished, not dropped
    assert out.records[-1]["n_learned"] == 3
    assert source.commits == [{"p0": 3}]


def test_stop_with_a_model_that_takes_whole_polls_finishes_the_poll():
    values = [b'{"x": 1, "label": "a"}'] * 10 + [b'{"x": 2, "label": "b"}'] * 10

    class StopOnSecondSend(ListSink):
        def send(self, value, key=None):
            super().send(value, key)
            if len(self.sent) == 2:
                engine.stop()  # a signal arriving while the first poll's outputs go out

    engine, source, _, _, _ = make_engine(values, config={"poll_max_records": 7})
    engine.sink = out = StopOnSecondSend("out", [])
    engine.run()
    assert engine.stopping
    assert len(out.sent) == 7  # the poll was finished: none of its events left half-done
    assert engine.model.n_learned == 7 and source.commits == [{"p0": 7}]


def test_a_river_model_without_predict_and_proba_one_works_too():
    from river.naive_bayes import MultinomialNB

    values = [b'{"w": 2, "label": "a"}', b'{"v": 3, "label": "b"}', b'{"w": 1}']
    engine, _, out, _, _ = make_engine(values, model=MultinomialNB())
    engine.run()
    reference = MultinomialNB()
    reference.learn_one({"w": 2}, "a")
    reference.learn_one({"v": 3}, "b")
    assert out.records[-1]["prediction"] == reference.predict_one({"w": 1})
    assert out.records[-1]["proba"] == reference.predict_proba_one({"w": 1})


def test_stop_while_waiting_for_records_returns_promptly():
    engine, source, out, _, _ = make_engine([b'{"x": 1}'])
    polls = []

    def on_poll():
        polls.append(1)
        if len(polls) == 3:
            engine.stop()

    source.on_poll = on_poll
    source.exhausted = False
    # an endless source: after the record, polls return [] without being exhausted
    original = ListSource.poll

    def endless(max_records, timeout):
        batch = original(source, max_records, timeout)
        source.exhausted = False
        return batch

    source.poll = endless
    engine.run()
    assert len(polls) == 3
    assert source.commits == [{"p0": 1}]
    assert out.flushed == 1


def test_stop_before_run_processes_nothing():
    engine, source, out, _, _ = make_engine([b'{"x": 1}'])
    engine.stop()
    engine.run()
    assert out.sent == [] and source.commits == []


# ----------------------------------------------------------------------- failures


def test_an_unexpected_model_error_commits_what_was_done_and_propagates():
    class Broken(NaiveBayes):
        def learn_one(self, x, y, w=1.0):
            if x.get("boom"):
                raise ZeroDivisionError("model bug")
            super().learn_one(x, y, w)

    values = [b'{"x": 1, "label": "a"}', b'{"x": 2, "label": "b"}', b'{"boom": true, "label": "a"}', b'{"x": 3}']
    engine, source, out, _, _ = make_engine(values, model=Broken())
    with pytest.raises(ZeroDivisionError):
        engine.run()
    assert len(out.sent) == 2 == out.flushed
    assert source.commits == [{"p0": 2}]


def test_a_failing_flush_never_commits():
    class FailingSink(ListSink):
        def flush(self):
            raise OSError("disk full")

    source = ListSource([b'{"x": 1}'])
    engine = Engine(NaiveBayes(), source, FailingSink(), ListSink())
    with pytest.raises(OSError, match="disk full"):
        engine.run()
    assert source.commits == []


def test_commit_error_is_logged_and_retried_at_the_next_checkpoint(caplog):
    class Rebalancing(ListSource):
        failures = 1

        def commit(self, positions):
            if self.failures:
                self.failures -= 1
                raise CommitError("group rebalanced")
            super().commit(positions)

    source = Rebalancing([b'{"x": 1}'] * 4, batch=2)
    engine = Engine(NaiveBayes(), source, ListSink(), ListSink(), config={"commit_every_records": 2})
    with caplog.at_level(logging.WARNING, logger="stream_nb.engine"):
        engine.run()
    assert source.commits == [{"p0": 4}]
    assert "commit failed, will retry at the next checkpoint: group rebalanced" in caplog.text


# ----------------------------------------------------------------------- configuration


def test_unknown_engine_settings_are_rejected_with_the_accepted_keys():
    with pytest.raises(ConfigError) as err:
        make_engine([], config={"poll_max_record": 10})
    message = str(err.value)
    assert "unknown engine setting 'poll_max_record'" in message
    assert "poll_max_records" in message and "commit_interval_s" in message


@pytest.mark.parametrize(
    ("config", "match"),
    [
        ({"poll_max_records": 0}, "poll_max_records must be a positive integer"),
        ({"poll_timeout": -1}, "poll_timeout must be a non-negative number"),
        ({"max_in_flight_wait_s": "1"}, "max_in_flight_wait_s must be a non-negative number"),
        ({"commit_every_records": 1.5}, "commit_every_records must be a positive integer"),
        ({"model_name": 3}, "model_name must be a string"),
        ({"label_field": "id"}, "must differ"),
    ],
)
def test_bad_engine_settings(config, match):
    with pytest.raises(ConfigError, match=match):
        make_engine([], config=config)


def test_a_model_without_the_river_classifier_methods_is_rejected():
    with pytest.raises(ConfigError, match="has no predict_proba_one"):
        Engine(object(), ListSource([]), ListSink(), ListSink())


def test_every_default_setting_is_documented_in_the_engine_module():
    source = "".join((ROOT / "stream_nb" / "engine" / name).read_text()
                     for name in ("loop/_engine.py", "contract/_events.py", "contract/_records.py"))
    for key in DEFAULT_CONFIG:
        assert f'    "{key}":' in source
        comment_line = source.split(f'    "{key}":')[0].rstrip().splitlines()[-1]
        assert comment_line.strip().startswith("#"), key


def test_the_engine_package_does_no_file_or_network_io_of_its_own():
    """Sources and sinks (connectors) and the snapshot store do the I/O; the engine drives them."""
    io_modules = {"os", "fcntl", "io", "pathlib", "shutil", "socket", "select", "tempfile", "glob", "kafka"}
    found = []
    for path in sorted((ROOT / "stream_nb" / "engine").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            else:
                names = ["open()"] if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "open" else []
            found += [f"{path.relative_to(ROOT)}: {name}" for name in names if name.split(".")[0] in io_modules | {"open()"}]
    assert found == []
