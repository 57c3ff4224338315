"""The model topic of ``--model-topic`` (``connectors.kafka.open_model_topic``) against the real broker, per client.

* The topic is created compacted with one partition; one with more is refused.
* A state larger than the broker's largest message (``message.max.bytes``, 1 MB
  by default) goes out split in pieces and a manifest (``state_records``), and a
  fresh reader reassembles it byte for byte from the topic's start.
* A ``read_committed`` reader (``stream-nb model export``, the exactly-once
  members) reads to the end of a log whose transactions left control records
  and an aborted record behind: it returns the committed records only, and
  says it reached the end (no "not read to its end" warning).
* It waits for a transaction open when it starts (a member killed inside
  one leaves it open until the broker aborts it): the states committed after
  it are read too, not only those before the last stable offset.
"""

from __future__ import annotations

import logging
import os
import threading
import time

import pytest
from kafka import KafkaAdminClient, KafkaProducer
from kafka.admin import ConfigResource, ConfigResourceType

from connectors import kafka as kc
from stream_nb.engine import StateLog, state_records
from stream_nb.exceptions import ConfigError


def config(bootstrap: str, client: str) -> dict:
    return {"bootstrap_servers": bootstrap, "kafka_client": client}


def topic_name(prefix: str) -> str:
    return f"{prefix}-{os.getpid()}-{time.monotonic_ns()}"


def topic_configs(described: dict, topic: str) -> dict[str, str]:
    """``{name: value}`` of one topic from kafka-python's ``describe_configs`` answer."""
    entries = next(by_name[topic] for by_name in described.values() if topic in by_name)
    return {name: data["value"] if isinstance(data, dict) else data for name, data in entries.items()}


@pytest.mark.kafka
def test_a_state_above_the_message_size_is_split_and_read_back(kafka_bootstrap_servers, kafka_client):
    topic = topic_name("mt-split")
    writer = kc.open_model_topic(topic, config(kafka_bootstrap_servers, kafka_client))
    try:
        admin = KafkaAdminClient(bootstrap_servers=kafka_bootstrap_servers)
        try:
            (described,) = admin.describe_topics([topic])
            configs = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)], config_filter="all")
        finally:
            admin.close()
        assert len(described["partitions"]) == 1
        entries = topic_configs(configs, topic)
        assert entries["cleanup.policy"] == "compact"
        limit = int(entries["max.message.bytes"])
        payload = os.urandom(2 * limit + 12_345)  # no single record may carry it
        small = b"a small state"
        records = state_records("in-0", payload, {"offset": 7}, limit=writer.max_record_bytes, version="v1")
        assert len(records) >= 4  # pieces, then the manifest
        for key, value in [*records, *state_records("in-1", small, {"offset": 3}, limit=writer.max_record_bytes,
                                                    version="v1")]:
            writer.publish(key, value)
        writer.flush()
        reader = kc.open_model_topic(topic, config(kafka_bootstrap_servers, kafka_client), writer=False)
        try:
            got = reader.catch_up(60)
        finally:
            reader.close()
        log = StateLog()
        states = {p: (body, info) for key, value in got for p, body, info in log.feed(key, value)}
        assert states == {"in-0": (payload, {"offset": 7}), "in-1": (small, {"offset": 3})}
        assert log.skipped == 0
        seen = writer.catch_up(60)  # the writer reads the same log from its start
        assert [k for k, _ in seen] == [k for k, _ in got]
    finally:
        writer.close()


@pytest.mark.kafka
def test_a_read_committed_reader_stops_at_the_end_of_a_transactional_log(kafka_bootstrap_servers, kafka_client,
                                                                      caplog):
    topic = topic_name("mt-txn")
    kc.open_model_topic(topic, config(kafka_bootstrap_servers, kafka_client)).close()  # creates it
    producer = KafkaProducer(bootstrap_servers=kafka_bootstrap_servers, transactional_id=topic)
    try:
        producer.init_transactions()
        for n, commit in enumerate([True, False, True]):
            producer.begin_transaction()
            producer.send(topic, key=f"k{n}".encode(), value=f"v{n}".encode())
            producer.flush()
            producer.commit_transaction() if commit else producer.abort_transaction()
    finally:
        producer.close()
    reader = kc.open_model_topic(topic, config(kafka_bootstrap_servers, kafka_client), writer=False)
    try:
        with caplog.at_level(logging.WARNING, logger="connectors.kafka"):
            got = reader.catch_up(30)
        assert got == [("k0", b"v0"), ("k2", b"v2")]
        assert "not read to its end" not in caplog.text
    finally:
        reader.close()


@pytest.mark.kafka
def test_a_read_committed_catch_up_waits_for_an_open_transaction_and_reads_past_it(kafka_bootstrap_servers,
                                                                                  kafka_client, caplog):
    topic = topic_name("mt-lso")
    kc.open_model_topic(topic, config(kafka_bootstrap_servers, kafka_client)).close()  # creates it
    lost = KafkaProducer(bootstrap_servers=kafka_bootstrap_servers, transactional_id=f"{topic}-lost")
    live = KafkaProducer(bootstrap_servers=kafka_bootstrap_servers, transactional_id=f"{topic}-live")
    try:
        lost.init_transactions()
        live.init_transactions()
        lost.begin_transaction()  # left open (its member killed): it holds the last stable offset here
        lost.send(topic, key=b"p1", value=b"p1 unfinished")
        lost.flush()
        live.begin_transaction()  # committed after it: a newer state of another partition
        live.send(topic, key=b"p0", value=b"p0 newer")
        live.flush()
        live.commit_transaction()
        ended = threading.Timer(1.5, lost.abort_transaction)  # as the broker does past the transaction timeout
        reader = kc.open_model_topic(topic, config(kafka_bootstrap_servers, kafka_client), writer=False)
        try:
            with caplog.at_level(logging.INFO, logger="connectors.kafka"):
                ended.start()
                start = time.monotonic()
                got = reader.catch_up(30)
                waited = time.monotonic() - start
            assert got == [("p0", b"p0 newer")]
            assert waited >= 1.0
            assert "an open transaction holds its last stable offset" in caplog.text
            assert "not read to its end" not in caplog.text
        finally:
            ended.join()
            reader.close()
    finally:
        live.close()
        lost.close()


@pytest.mark.kafka
def test_a_model_topic_of_several_partitions_is_refused(kafka_bootstrap_servers, kafka_topic_factory, kafka_client):
    topic = kafka_topic_factory(partitions=2, prefix="mt-wide")
    with pytest.raises(ConfigError, match="needs exactly one"):
        kc.open_model_topic(topic, config(kafka_bootstrap_servers, kafka_client))


@pytest.mark.kafka
def test_model_export_honours_its_timeout_and_says_an_empty_topic_holds_no_state(kafka_bootstrap_servers,
                                                                                 kafka_client, tmp_path):
    import subprocess
    import sys

    topic = topic_name("mt-export")
    kc.open_model_topic(topic, config(kafka_bootstrap_servers, kafka_client)).close()  # created, empty
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAM_NB_")}
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "stream_nb", "model", "export", "--bootstrap-servers",
                           kafka_bootstrap_servers, "--model-topic", topic, "--output", str(tmp_path / "m.snb"),
                           "--timeout", "3", "--kafka-client", kafka_client], capture_output=True, env=env, timeout=120)
    took = time.monotonic() - started
    assert proc.returncode == 2, proc.stderr.decode()
    assert f"model topic {topic!r} holds no model state" in proc.stderr.decode()
    assert took < 15, took  # the interpreter's start and 3 s at most
    # a topic that does not exist: said at once, not after kafka-python's own 30 s
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "stream_nb", "model", "export", "--bootstrap-servers",
                           kafka_bootstrap_servers, "--model-topic", topic + "-none", "--output",
                           str(tmp_path / "m.snb"), "--timeout", "3", "--kafka-client", kafka_client],
                          capture_output=True, env=env, timeout=120)
    assert proc.returncode == 2 and b"does not exist" in proc.stderr, proc.stderr.decode()
    assert time.monotonic() - started < 15
