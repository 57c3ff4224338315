"""The Kafka test harness itself, against a real broker (see tests/conftest.py).

Produce/consume over partitions, transactions with read_committed isolation, and
a broker restart in the middle of a stream (what later fault tests build on).
"""

from __future__ import annotations

import socket
import time

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

pytestmark = pytest.mark.kafka


def _consume(bootstrap: str, topic: str, expected: int, *, timeout: float = 30.0,
             settle: float = 0.0, **consumer_kwargs) -> list:
    """Read from the beginning of topic until `expected` records arrived (then keep
    polling for `settle` seconds to catch extras), or until timeout."""
    kwargs = dict(bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                  enable_auto_commit=False, client_id="harness-test")
    kwargs.update(consumer_kwargs)
    consumer = KafkaConsumer(topic, **kwargs)
    records: list = []
    try:
        deadline = time.monotonic() + timeout
        while len(records) < expected and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=500).values():
                records.extend(batch)
        settle_deadline = time.monotonic() + settle
        while time.monotonic() < settle_deadline:
            for batch in consumer.poll(timeout_ms=200).values():
                records.extend(batch)
    finally:
        consumer.close()
    return records


def _port_answers(bootstrap: str) -> bool:
    host, port = bootstrap.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=1):
            return True
    except OSError:
        return False


def test_broker_metadata(kafka_broker, kafka_bootstrap_servers):
    from kafka import KafkaAdminClient

    assert kafka_bootstrap_servers == kafka_broker.bootstrap_servers
    admin = KafkaAdminClient(bootstrap_servers=kafka_bootstrap_servers, request_timeout_ms=10000)
    try:
        cluster = admin.describe_cluster()
    finally:
        admin.close()
    assert cluster["cluster_id"]
    assert len(cluster["brokers"]) >= 1
    if kafka_broker.kind == "local":
        host, port = kafka_bootstrap_servers.rsplit(":", 1)
        assert host == "127.0.0.1"
        assert [(b["host"], b["port"]) for b in cluster["brokers"]] == [(host, int(port))]


def test_produce_consume_three_partitions(kafka_bootstrap_servers, kafka_topic_factory):
    topic = kafka_topic_factory(partitions=3)
    producer = KafkaProducer(bootstrap_servers=kafka_bootstrap_servers, acks="all")
    sent = {}
    try:
        for i in range(90):
            partition = i % 3
            value = f"v{i}".encode()
            md = producer.send(topic, key=f"k{i}".encode(), value=value,
                               partition=partition).get(timeout=30)
            assert md.topic == topic and md.partition == partition
            sent[value] = partition
        producer.flush(timeout=30)
    finally:
        producer.close()

    records = _consume(kafka_bootstrap_servers, topic, expected=90, settle=1.0)
    got = {r.value: r.partition for r in records}
    assert len(records) == 90, f"expected 90 records, got {len(records)}"
    assert got == sent
    assert {r.partition for r in records} == {0, 1, 2}
    for p in range(3):
        offsets = [r.offset for r in records if r.partition == p]
        assert offsets == list(range(30)), f"partition {p} offsets {offsets}"
        # order within a partition is the send order
        values = [int(r.value[1:]) for r in records if r.partition == p]
        assert values == sorted(values)


def test_consumer_group_commit_and_resume(kafka_bootstrap_servers, kafka_topic_factory):
    topic = kafka_topic_factory(partitions=3)
    producer = KafkaProducer(bootstrap_servers=kafka_bootstrap_servers)
    for i in range(30):
        producer.send(topic, value=b"%d" % i)
    producer.flush(timeout=30)
    producer.close()

    group = f"g-{topic}"
    first = KafkaConsumer(topic, bootstrap_servers=kafka_bootstrap_servers, group_id=group,
                          auto_offset_reset="earliest", enable_auto_commit=False)
    seen = []
    deadline = time.monotonic() + 30
    while len(seen) < 30 and time.monotonic() < deadline:
        for batch in first.poll(timeout_ms=500).values():
            seen.extend(batch)
    first.commit()
    first.close()
    assert sorted(int(r.value) for r in seen) == list(range(30))

    producer = KafkaProducer(bootstrap_servers=kafka_bootstrap_servers)
    for i in range(30, 40):
        producer.send(topic, value=b"%d" % i)
    producer.flush(timeout=30)
    producer.close()
    resumed = _consume(kafka_bootstrap_servers, topic, expected=10, settle=1.0, group_id=group)
    assert sorted(int(r.value) for r in resumed) == list(range(30, 40))


def test_transactions_read_committed(kafka_bootstrap_servers, kafka_topic_factory):
    topic = kafka_topic_factory(partitions=3)
    producer = KafkaProducer(bootstrap_servers=kafka_bootstrap_servers,
                             transactional_id=f"tx-{topic}")
    try:
        producer.init_transactions()

        producer.begin_transaction()
        for i in range(6):
            producer.send(topic, key=b"c1", value=b"committed-1-%d" % i, partition=i % 3)
        producer.commit_transaction()

        producer.begin_transaction()
        for i in range(6):
            producer.send(topic, key=b"a", value=b"aborted-%d" % i, partition=i % 3)
        producer.flush(timeout=30)  # really on the log before the abort
        producer.abort_transaction()

        producer.begin_transaction()
        for i in range(3):
            producer.send(topic, key=b"c2", value=b"committed-2-%d" % i, partition=i % 3)
        producer.commit_transaction()
    finally:
        producer.close()

    committed = {b"committed-1-%d" % i for i in range(6)} | {b"committed-2-%d" % i for i in range(3)}
    aborted = {b"aborted-%d" % i for i in range(6)}

    rc = _consume(kafka_bootstrap_servers, topic, expected=len(committed), settle=2.0,
                  isolation_level="read_committed")
    rc_values = [r.value for r in rc]
    assert set(rc_values) == committed
    assert len(rc_values) == len(committed)  # no duplicates
    assert not aborted & set(rc_values)

    # The aborted records were really written: a read_uncommitted consumer sees them.
    ru = _consume(kafka_bootstrap_servers, topic, expected=len(committed) + len(aborted),
                  settle=1.0, isolation_level="read_uncommitted")
    assert {r.value for r in ru} == committed | aborted


def test_broker_restart_keeps_data(kafka_broker, kafka_topic_factory):
    if not kafka_broker.restartable:
        pytest.skip(f"restart needs the local broker (session uses {kafka_broker.kind})")
    bootstrap = kafka_broker.bootstrap_servers
    topic = kafka_topic_factory(partitions=3)

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    for i in range(60):
        producer.send(topic, value=b"before-%d" % i, partition=i % 3)
    producer.flush(timeout=30)
    producer.close()

    group = f"g-{topic}"
    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                             auto_offset_reset="earliest", enable_auto_commit=False)
    got = []
    deadline = time.monotonic() + 30
    while len(got) < 30 and time.monotonic() < deadline:
        for batch in consumer.poll(timeout_ms=500, max_records=10).values():
            got.extend(batch)
    # commit exactly what was processed so far, per partition
    last = {}
    for r in got:
        last[r.partition] = max(last.get(r.partition, -1), r.offset)
    from kafka.structs import OffsetAndMetadata
    consumer.commit({TopicPartition(topic, p): OffsetAndMetadata(o + 1, "", -1)
                     for p, o in last.items()})
    consumer.close()
    assert got, "consumed nothing before the restart"

    kafka_broker.stop()
    assert not kafka_broker.is_running()
    assert not _port_answers(bootstrap)

    assert kafka_broker.start() == bootstrap
    assert kafka_broker.is_running()

    # committed data and committed group offsets survived the restart
    everything = _consume(bootstrap, topic, expected=60, settle=1.0)
    assert sorted(r.value for r in everything) == sorted(b"before-%d" % i for i in range(60))

    rest = _consume(bootstrap, topic, expected=60 - len(got), settle=1.0, group_id=group)
    assert {r.value for r in rest} == {b"before-%d" % i for i in range(60)} - {r.value for r in got}

    # and the restarted broker takes new writes, including transactional ones
    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=f"tx-{topic}")
    producer.init_transactions()
    producer.begin_transaction()
    producer.send(topic, value=b"after", partition=0)
    producer.commit_transaction()
    producer.close()
    after = _consume(bootstrap, topic, expected=61, settle=1.0, isolation_level="read_committed")
    assert sorted(r.value for r in after) == sorted([b"after"] + [b"before-%d" % i for i in range(60)])
