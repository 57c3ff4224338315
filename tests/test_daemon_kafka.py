"""`stream-nb run` in Kafka mode, as a subprocess, against the real broker.

Labeled, unlabeled and malformed events (keyed, over 3 partitions) go in; the
test checks one prediction per valid event (ids, keys, per-partition order),
one dead letter per malformed event (reason, field, raw value), and that the
daemon's prequential metrics and every prediction equal an in-process replay
of the same model in the order the daemon processed the events. SIGTERM must
stop it with exit 0 after committing everything it processed.
"""

from __future__ import annotations

import collections
import json
import math
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer

from stream_nb import AODE, TAN, NaiveBayes

MODELS = {"nb": NaiveBayes, "aode": AODE, "tan": TAN}
PARTITIONS = 3
LOG_LOSS_FLOOR = 1e-15


def _cli() -> list[str]:
    script = Path(sys.executable).with_name("stream-nb")
    return [str(script)] if script.exists() else [sys.executable, "-m", "stream_nb.cli"]


# ------------------------------------------------------------------- the events

# (raw bytes, expected dead-letter reason, field)
MALFORMED = [
    (b'{"id": "m1", "color": "red", "size": ', "invalid_json", None),
    (b'[1, 2, 3]', "not_an_object", None),
    (b'{"id": "m3", "color": {"r": 255}, "size": 1.0, "label": "yes"}', "nested_value", "color"),
    (b'{"id": "m4", "color": "red", "size": 1.0, "label": 0.5}', "bad_label", "label"),
    (b'\xff\xfe{"id": "m5"}', "invalid_utf8", None),
    (b'{"id": "m6", "color": "red", "size": "big", "label": "no"}', "bad_feature_type", "size"),
    (b'', "invalid_json", None),
]


def make_events(n_per_partition: int, seed: int) -> list[dict]:
    """Events as dicts {partition, key, value, bad: (reason, field) | None, obj | None} in produce order."""
    rng = random.Random(seed)
    colors, shapes = ["red", "green", "blue"], ["round", "square", "flat", "long"]
    per_partition: list[list[dict]] = [[] for _ in range(PARTITIONS)]
    serial = 0
    for p in range(PARTITIONS):
        for i in range(n_per_partition):
            serial += 1
            color, shape = rng.choice(colors), rng.choice(shapes)
            size = round(rng.gauss(2.0 if color == "red" else 1.0, 0.6), 3)
            truth = "yes" if (color == "red") ^ (shape == "flat") ^ (rng.random() < 0.1) else "no"
            obj = {"id": serial, "color": color, "shape": shape, "size": size}
            r = rng.random()
            if r < 0.7:
                obj["label"] = truth
            elif r < 0.8:
                obj["label"] = None  # explicit null: unlabeled
            # else: no label field: unlabeled
            key = None if serial % 37 == 0 else f"key-{serial}".encode()
            per_partition[p].append({"key": key, "value": json.dumps(obj).encode(), "bad": None, "obj": obj})
    # malformed events, each after >= 20 good ones of its partition (so every feature type is known)
    for j, (raw, reason, field) in enumerate(MALFORMED):
        p = j % PARTITIONS
        at = rng.randrange(20, len(per_partition[p]))
        per_partition[p].insert(at, {"key": f"bad-{j}".encode(), "value": raw, "bad": (reason, field), "obj": None})
    # interleave the partitions randomly, keeping each partition's order
    events, cursors = [], [0] * PARTITIONS
    while any(c < len(per_partition[p]) for p, c in enumerate(cursors)):
        p = rng.choice([p for p in range(PARTITIONS) if cursors[p] < len(per_partition[p])])
        events.append({**per_partition[p][cursors[p]], "partition": p})
        cursors[p] += 1
    return events


def produce(bootstrap: str, topic: str, events: list[dict]) -> None:
    """Send the events; record each one's offset in event["offset"]."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    try:
        futures = [producer.send(topic, value=e["value"], key=e["key"], partition=e["partition"]) for e in events]
        producer.flush()
        for e, f in zip(events, futures):
            meta = f.get(timeout=30)
            assert meta.partition == e["partition"]
            e["offset"] = meta.offset
    finally:
        producer.close()


def consume(bootstrap: str, topic: str, n: int, timeout: float, daemon: subprocess.Popen | None = None) -> list:
    """Read a topic from the start until n records arrived; then 1 s more to catch extras."""
    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=None,
                             auto_offset_reset="earliest", enable_auto_commit=False)
    out: list = []
    try:
        deadline = time.monotonic() + timeout
        while len(out) < n and time.monotonic() < deadline:
            if daemon is not None and daemon.poll() is not None:
                break
            for batch in consumer.poll(timeout_ms=200).values():
                out.extend(batch)
        end = time.monotonic() + 1.0
        while time.monotonic() < end:
            for batch in consumer.poll(timeout_ms=100).values():
                out.extend(batch)
    finally:
        consumer.close()
    return out


# ------------------------------------------------------------------- the daemon


class Daemon:
    def __init__(self, tmp_path: Path, args: list[str], name: str):
        self.log_path = tmp_path / f"{name}.stderr"
        self.out_path = tmp_path / f"{name}.stdout"
        with open(self.log_path, "wb") as err, open(self.out_path, "wb") as out:
            self.proc = subprocess.Popen(_cli() + ["run", *args], stdout=out, stderr=err,
                                         stdin=subprocess.DEVNULL, env={**os.environ, "PYTHONUNBUFFERED": "1"})

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def terminate(self, timeout: float = 60.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"the daemon ignored SIGTERM for {timeout} s; log:\n{self.log()[-4000:]}")

    def final_metrics(self) -> dict:
        lines = [line for line in self.log().splitlines() if "stopped by SIGTERM at " in line and "; metrics " in line]
        assert lines, f"no final metrics line in the daemon log:\n{self.log()[-4000:]}"
        return json.loads(re.search(r"metrics (\{.*\})\s*$", lines[-1]).group(1))


def daemon_args(bootstrap: str, model: str, input_topic: str, output_topic: str, group: str) -> list[str]:
    return [
        "--model", model,
        "--bootstrap-servers", bootstrap,
        "--input-topic", input_topic,
        "--output-topic", output_topic,
        "--group-id", group,
        "--commit-interval", "0.5",
        "--metrics-interval", "0",
        "--kafka-config", "linger_ms=2",
    ]


def group_offsets(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        offsets = admin.list_group_offsets(group)[group]
    finally:
        admin.close()
    return {tp.partition: om.offset for tp, om in offsets.items() if tp.topic == topic and om.offset >= 0}


def end_offsets(events: list[dict]) -> dict[int, int]:
    ends: dict[int, int] = {}
    for e in events:
        ends[e["partition"]] = max(ends.get(e["partition"], 0), e["offset"] + 1)
    return ends


@pytest.fixture
def dead_letter_cleanup(kafka_bootstrap_servers):
    """Delete the <input>.dlq topics the daemon created."""
    made: list[str] = []
    yield made
    if made:
        admin = KafkaAdminClient(bootstrap_servers=kafka_bootstrap_servers)
        try:
            admin.delete_topics(made, timeout_ms=30000, raise_errors=False)
        finally:
            admin.close()


# ------------------------------------------------------------------- the reference


def features_of(obj: dict) -> dict:
    """What the engine's decoder makes of a valid event (id and label out, nulls dropped)."""
    return {k: v for k, v in obj.items() if k not in ("id", "label") and v is not None}


def replay(model_cls, outputs: list[dict], by_position: dict) -> dict:
    """Re-run the model in the daemon's processing order; check every output; return the metrics.

    The daemon learned the labeled events in the order of their ``n_learned``
    (1, 2, ...), and predicted an unlabeled event with ``n_learned == k`` when
    it had learned exactly k events. Across partitions that order is the
    daemon's consumption order, which only the outputs record.
    """
    labeled = sorted((o for o in outputs if o["learned"]), key=lambda o: o["n_learned"])
    assert [o["n_learned"] for o in labeled] == list(range(1, len(labeled) + 1))
    unlabeled_at: dict[int, list[dict]] = collections.defaultdict(list)
    for o in outputs:
        if not o["learned"]:
            unlabeled_at[o["n_learned"]].append(o)

    model = model_cls()
    correct, loss_sum, floored = 0, 0.0, 0

    def predict_and_compare(o: dict):
        x = features_of(by_position[_pos(o)]["obj"])
        proba = model.predict_proba_one(x)
        prediction = model.predict_one(x)
        assert o["prediction"] == prediction, o
        assert o["proba"].keys() == {str(c) for c in proba}, o
        for c, p in proba.items():
            assert o["proba"][str(c)] == pytest.approx(p, rel=1e-12, abs=1e-300), o
        return x, proba, prediction

    for k in range(len(labeled) + 1):
        for o in unlabeled_at.pop(k, []):
            predict_and_compare(o)
        if k == len(labeled):
            break
        o = labeled[k]
        x, proba, prediction = predict_and_compare(o)
        y = by_position[_pos(o)]["obj"]["label"]
        correct += prediction == y
        p = proba.get(y, 0.0)
        if not p >= LOG_LOSS_FLOOR:
            p, floored = LOG_LOSS_FLOOR, floored + 1
        loss_sum -= math.log(min(p, 1.0))
        model.learn_one(x, y)
    assert not unlabeled_at, "unlabeled outputs with an n_learned beyond the labeled ones"
    n = len(labeled)
    return {"labeled": n, "correct": correct, "accuracy": correct / n, "log_loss": loss_sum / n,
            "log_loss_floored": floored}


def _pos(o: dict) -> tuple[int, int]:
    return o["source"]["partition"], o["source"]["offset"]


# ------------------------------------------------------------------- the tests


@pytest.mark.kafka
@pytest.mark.parametrize("model", ["nb", "aode", "tan"])
def test_daemon_predicts_every_valid_event_once_and_matches_an_in_process_replay(
    kafka_client, model, kafka_bootstrap_servers, kafka_topic_factory, tmp_path, dead_letter_cleanup
):
    bootstrap = kafka_bootstrap_servers
    input_topic = kafka_topic_factory(partitions=PARTITIONS, prefix="in")
    output_topic = kafka_topic_factory(partitions=PARTITIONS, prefix="out")
    dead_letter_topic = f"{input_topic}.dlq"  # the default; the daemon creates it
    dead_letter_cleanup.append(dead_letter_topic)
    group = f"daemon-{model}-{os.getpid()}-{time.monotonic_ns()}"

    events = make_events(n_per_partition=150, seed={"nb": 11, "aode": 12, "tan": 13}[model])
    produce(bootstrap, input_topic, events)
    valid = [e for e in events if e["bad"] is None]
    bad = [e for e in events if e["bad"] is not None]
    by_position = {(e["partition"], e["offset"]): e for e in events}

    daemon = Daemon(tmp_path, daemon_args(bootstrap, model, input_topic, output_topic, group), f"daemon-{model}")
    try:
        records = consume(bootstrap, output_topic, len(valid), timeout=120, daemon=daemon.proc)
        letters = consume(bootstrap, dead_letter_topic, len(bad), timeout=30, daemon=daemon.proc)
    finally:
        rc = daemon.terminate()
    log = daemon.log()
    assert rc == 0, f"exit status {rc}; log:\n{log[-4000:]}"

    # -- one prediction per valid event, with its id and key
    outputs = [json.loads(r.value) for r in records]
    assert len(outputs) == len(valid), log[-4000:]
    assert sorted(_pos(o) for o in outputs) == sorted((e["partition"], e["offset"]) for e in valid)
    for r, o in zip(records, outputs):
        e = by_position[_pos(o)]
        assert o["source"] == {"topic": input_topic, "partition": e["partition"], "offset": e["offset"]}
        assert o["id"] == e["obj"]["id"]
        assert r.key == e["key"]
        assert o["model"] == model
        assert o["learned"] == (e["obj"].get("label") is not None)

    # -- per input partition, outputs keep the input order: in each output
    #    partition, and in the order the daemon processed them (n_learned)
    for out_partition in {r.partition for r in records}:
        seen: dict[int, int] = {}
        for o in (json.loads(r.value) for r in records if r.partition == out_partition):
            p, offset = _pos(o)
            assert offset > seen.get(p, -1)
            seen[p] = offset
    for p in range(PARTITIONS):
        in_order = sorted((o for o in outputs if o["source"]["partition"] == p), key=lambda o: o["source"]["offset"])
        learned = [o["n_learned"] for o in in_order]
        assert learned == sorted(learned)
        labeled_steps = [o["n_learned"] for o in in_order if o["learned"]]
        assert len(set(labeled_steps)) == len(labeled_steps)

    # -- one dead letter per malformed event, with its reason
    assert len(letters) == len(bad)
    for r in letters:
        letter = json.loads(r.value)
        e = by_position[(letter["source"]["partition"], letter["source"]["offset"])]
        assert e["bad"] is not None, letter
        reason, field = e["bad"]
        assert (letter["reason"], letter["field"]) == (reason, field), letter
        assert r.key == e["key"]
        assert letter["size"] == len(e["value"])
        if reason == "invalid_utf8":
            assert "value_b64" in letter
        else:
            assert letter["value"] == e["value"].decode()
        assert letter["error"]

    # -- the daemon's metrics equal an in-process replay in the same order
    expected = replay(MODELS[model], outputs, by_position)
    summary = daemon.final_metrics()
    assert summary["events"] == len(events)
    assert summary["predicted"] == len(valid)
    assert summary["labeled"] == summary["learned"] == expected["labeled"]
    assert summary["correct"] == expected["correct"]
    assert summary["accuracy"] == pytest.approx(expected["accuracy"], rel=1e-12)
    assert summary["log_loss"] == pytest.approx(expected["log_loss"], rel=1e-9)
    assert summary["log_loss_floored"] == expected["log_loss_floored"]
    assert summary["dead_letters_by_reason"] == dict(collections.Counter(e["bad"][0] for e in bad))
    if model == "nb":
        assert expected["accuracy"] > 0.6  # the stream is learnable; the check above is not vacuous

    # -- SIGTERM committed everything that was processed
    assert group_offsets(bootstrap, group, input_topic) == end_offsets(events)


@pytest.mark.kafka
def test_a_restarted_daemon_resumes_after_what_it_committed(
    kafka_client, kafka_bootstrap_servers, kafka_topic_factory, tmp_path, dead_letter_cleanup
):
    bootstrap = kafka_bootstrap_servers
    input_topic = kafka_topic_factory(partitions=PARTITIONS, prefix="in")
    output_topic = kafka_topic_factory(partitions=PARTITIONS, prefix="out")
    dead_letter_cleanup.append(f"{input_topic}.dlq")
    group = f"daemon-restart-{os.getpid()}-{time.monotonic_ns()}"
    args = daemon_args(bootstrap, "nb", input_topic, output_topic, group)

    first = make_events(n_per_partition=40, seed=1)
    produce(bootstrap, input_topic, first)
    n_first = sum(e["bad"] is None for e in first)
    daemon = Daemon(tmp_path, args, "first")
    try:
        assert len(consume(bootstrap, output_topic, n_first, timeout=120, daemon=daemon.proc)) == n_first
    finally:
        assert daemon.terminate() == 0, daemon.log()[-4000:]
    assert group_offsets(bootstrap, group, input_topic) == end_offsets(first)

    # events produced while no daemon runs are picked up by the next one, and only those
    second = make_events(n_per_partition=30, seed=2)
    produce(bootstrap, input_topic, second)
    n_second = sum(e["bad"] is None for e in second)
    daemon = Daemon(tmp_path, args, "second")
    try:
        records = consume(bootstrap, output_topic, n_first + n_second, timeout=120, daemon=daemon.proc)
    finally:
        assert daemon.terminate() == 0, daemon.log()[-4000:]
    positions = [_pos(json.loads(r.value)) for r in records]
    assert len(positions) == len(set(positions)) == n_first + n_second  # nothing twice, nothing missing
    assert sorted(positions) == sorted((e["partition"], e["offset"]) for e in first + second if e["bad"] is None)
    summary = daemon.final_metrics()
    assert summary["events"] == len(second)
    assert group_offsets(bootstrap, group, input_topic) == end_offsets(first + second)


def test_daemon_waits_for_an_unreachable_broker_and_stops_cleanly_on_sigterm(kafka_client, tmp_path):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    daemon = Daemon(tmp_path, [
        "--bootstrap-servers", f"127.0.0.1:{port}", "--input-topic", "in", "--output-topic", "out",
        "--kafka-config", "bootstrap_timeout_ms=300", "--connect-backoff-max", "0.5",
    ], "unreachable")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and daemon.log().count("retrying in") < 2:
        time.sleep(0.2)
    assert daemon.proc.poll() is None, daemon.log()
    rc = daemon.terminate()
    log = daemon.log()
    assert rc == 0, log
    attempts = [line for line in log.splitlines() if "start-up attempt" in line]
    assert len(attempts) >= 2
    assert all(f"127.0.0.1:{port}" in line and "no broker reachable" in line for line in attempts)
