"""One model across a consumer group (``run --model-topic``), against the real broker.

Three members on a six-partition topic; one is killed with kill -9 at random
points (twice) and restarted, one more is added mid-stream and one removed
(SIGTERM), one starts late with an empty snapshot directory and one has none
at all. After the stream goes quiet, the model ``stream-nb model export``
writes and the model in every member's local cache equal the single-process
reference over every labeled event: counts exactly, and the TAN tree after a
rebuild. Run in at-least-once mode with kafka-python and exactly-once mode
with confluent-kafka.
"""

from __future__ import annotations

import os
import random
import re
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from kafka import KafkaProducer
from prometheus_client.parser import text_string_to_metric_families

import stream_nb
from recovery import Daemon, clean_env, cli, make_events, named_counts, newest_model, reference, wait_until
from stream_nb import TAN

PARTITIONS = 6


def produce(bootstrap: str, topic: str, events: list[dict], start: int, pause: float = 0.0, batches: int = 1) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    try:
        size = -(-len(events) // batches)
        for b in range(batches):
            for i, e in enumerate(events[b * size:(b + 1) * size], start=start + b * size):
                producer.send(topic, value=e["raw"], key=f"k{i}".encode(), partition=i % PARTITIONS)
            producer.flush()
            time.sleep(pause)
    finally:
        producer.close()


def export(bootstrap: str, model_topic: str, path: Path) -> dict:
    """``stream-nb model export`` as a user runs it; returns the exported model."""
    done = subprocess.run(cli() + ["model", "export", "--bootstrap-servers", bootstrap, "--model-topic", model_topic,
                                   "--output", str(path)], capture_output=True, text=True, env=clean_env(), timeout=120)
    assert done.returncode == 0, done.stderr
    return stream_nb.load(path)


def tree_after_rebuild(model) -> list:
    """The TAN's edges (parent, child) after a rebuild from its counts; their CMI weights agree to rounding."""
    model.rebuild()
    return [(a, b, pytest.approx(w, rel=1e-9)) for a, b, w in model.tree]


@pytest.mark.kafka
# each client in one mode (the longest Kafka test: CI time); the fault tests run exactly-once on both
@pytest.mark.parametrize("exactly_once, kafka_client", [(False, "kafka-python"), (True, "confluent")],
                         ids=["at-least-once-kafka-python", "exactly-once-confluent"], indirect=["kafka_client"])
def test_group_model_equals_one_process(tmp_path, kafka_bootstrap_servers, kafka_topic_factory, exactly_once,
                                       kafka_client):
    bootstrap = kafka_bootstrap_servers
    rng = random.Random(18 + exactly_once)
    source = kafka_topic_factory(partitions=PARTITIONS, prefix="gin")
    output = kafka_topic_factory(partitions=PARTITIONS, prefix="gout")
    model_topic = f"gmodel-{os.getpid()}-{time.monotonic_ns()}"
    group = f"group-{os.getpid()}-{time.monotonic_ns()}"
    events = make_events(3000, seed=rng.randrange(1000), poison_every=97)
    base = [
        "--model", "tan", "--rebuild-every", "200", "--bootstrap-servers", bootstrap, "--input-topic", source,
        "--output-topic", output, "--group-id", group, "--model-topic", model_topic, "--sync-interval", "0.3",
        "--commit-interval", "0.3", "--metrics-interval", "0", "--poll-max-records", "100",
        "--kafka-config", "session_timeout_ms=6000", "heartbeat_interval_ms=1000", "linger_ms=2",
        *(["--exactly-once", "--kafka-config", "transaction_timeout_ms=10000"] if exactly_once else []),
    ]

    def member(name: str, disk: bool = True, *extra: str) -> Daemon:
        cache = ["--snapshot-dir", str(tmp_path / name), "--snapshot-interval", "0.5"] if disk else []
        daemon = Daemon(tmp_path, [*base, "--instance-id", name, *cache, *extra], name)
        wait_until(lambda: "running model" in daemon.log(), 60, f"member {name} to start", daemon, step=0.1)
        return daemon

    first, rest = events[:1800], events[1800:]
    feeder = threading.Thread(target=produce, args=(bootstrap, source, first, 0, 0.4, 9))
    members = {"a": member("a"), "b": member("b"), "c": member("c", disk=False)}
    feeder.start()
    try:
        for _ in range(2):  # kill -9 of b at a random point, then it comes back with its cache
            time.sleep(rng.uniform(1.0, 3.0))
            members["b"].kill9()
            members["b"] = member("b")
        members["d"] = member("d", True, "--metrics-port", "0")  # added mid-stream, with an empty disk
        time.sleep(rng.uniform(0.5, 2.0))
        assert members.pop("a").terminate() == 0  # removed mid-stream
        feeder.join()
        produce(bootstrap, source, rest, len(first), 0.2, 3)

        ref = reference(TAN, events)
        counts = named_counts(ref)

        def quiet():  # every partition's published state covers its whole input, and holds the reference counts
            model = export(bootstrap, model_topic, tmp_path / "export.snb")
            return model if named_counts(model) == counts else None

        exported = wait_until(quiet, 150, "the group's model to cover every event", step=1.0)
        time.sleep(1.5)  # a few sync intervals: every member applies the last states
        url = re.search(r"serving /metrics, /healthz and /readyz on (\S+)", members["d"].log()).group(1)
        scraped = {s.name: s.value for f in text_string_to_metric_families(
            urllib.request.urlopen(url + "/metrics", timeout=10).read().decode()) for s in f.samples}
    finally:
        codes = {name: d.terminate() for name, d in members.items()}
    assert codes == {name: 0 for name in codes}, {n: d.log()[-3000:] for n, d in members.items()}
    assert exported.n_learned == ref.n_learned
    assert scraped["stream_nb_group_events_learned"] == ref.n_learned
    assert scraped["stream_nb_model_staleness_events"] == 0 and scraped["stream_nb_model_staleness_seconds"] == 0
    assert scraped["stream_nb_model_records_applied_total"] > 0 and scraped["stream_nb_model_bytes_applied_total"] > 0
    tree = tree_after_rebuild(ref)
    assert tree_after_rebuild(exported) == tree
    for name in ("a", "b", "d"):  # every member's cache holds the whole group's model
        cached = newest_model(tmp_path / name)
        if name == "a":  # left before the end: what the group had learned by then, never more
            assert cached.n_learned <= ref.n_learned
            continue
        assert named_counts(cached) == counts, name
        assert tree_after_rebuild(cached) == tree, name
    for name in ("b", "c", "d"):  # c has no disk: its view's total says it applied every state
        assert members[name].final_metrics()["group_events_learned"] == ref.n_learned, name
    logs = "".join(d.log() for d in members.values())
    assert "Traceback" not in logs


@pytest.mark.kafka
def test_export_of_a_missing_topic_says_why(tmp_path, kafka_bootstrap_servers, kafka_client):
    done = subprocess.run(cli() + ["model", "export", "--bootstrap-servers", kafka_bootstrap_servers, "--model-topic",
                                   f"no-such-model-{time.monotonic_ns()}", "--output", str(tmp_path / "m.snb"),
                                   "--timeout", "5"], capture_output=True, text=True, env=clean_env(), timeout=120)
    assert done.returncode == 2
    assert "does not exist" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "m.snb").exists()
