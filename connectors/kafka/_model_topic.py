"""The model topic of a consumer group (``--model-topic``): a :class:`~stream_nb.engine.ModelChannel` on Kafka.

Members publish their per-partition model states to one compacted topic and
read everyone's from its start (see :mod:`stream_nb.engine._group`). The topic
is created at start-up when missing, with one partition (every record in one
order: a split state's pieces come before its manifest) and
``cleanup.policy=compact`` (the latest record of each key stays). A topic that
exists with more than one partition is refused.

Publishing goes through a :class:`~connectors.kafka.KafkaSink` (idempotent,
``acks=all``), or, with ``--exactly-once``, through the daemon's
:class:`~connectors.kafka.transactional.Transaction`, so that the states commit
with the outputs and input offsets. Reading is a ``KafkaConsumer`` outside any
group, assigned the topic's partition and reading it from the beginning
(``read_committed`` with ``--exactly-once``: the states of an aborted
transaction are never seen).
"""

from __future__ import annotations

import logging
import time

import kafka.errors as Errors
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic

from stream_nb.exceptions import ConfigError

from ._client import connect, servers
from ._factories import split
from ._sink import KafkaSink

__all__ = ["DEFAULT_RECORD_BYTES", "ModelTopic", "check_model_topic"]

log = logging.getLogger("connectors.kafka")

#: Largest record published by default: under the broker's default ``max.message.bytes`` (1 MB).
DEFAULT_RECORD_BYTES = 900_000


def _ensure_compacted(topic: str, client: dict, timeout_ms: int = 30_000) -> int:
    """Create ``topic`` (one partition, compacted) when missing; return its partition count."""
    admin = connect(KafkaAdminClient, {k: v for k, v in client.items() if k in KafkaAdminClient.DEFAULT_CONFIG},
                    role="admin client (model topic)")
    try:
        if topic not in set(admin.list_topics()):
            try:
                admin.create_topics([NewTopic(topic, 1, -1, topic_configs={"cleanup.policy": "compact"})],
                                    timeout_ms=timeout_ms)
                log.info("Kafka: created model topic %r (1 partition, compacted)", topic)
            except Errors.TopicAlreadyExistsError:
                pass
        deadline = time.monotonic() + timeout_ms / 1000
        while True:
            described = admin.describe_topics([topic])
            parts = described[0].get("partitions") if described else None
            if parts:
                return len(parts)
            if time.monotonic() > deadline:
                raise ConfigError(f"Kafka: model topic {topic!r} has no partitions after {timeout_ms} ms")
            time.sleep(0.1)
    finally:
        admin.close()


def check_model_topic(topic, max_record_bytes) -> None:
    """A :class:`ConfigError` unless ``topic`` is a topic name and ``max_record_bytes`` an integer >= 1024."""
    if not isinstance(topic, str) or not topic:
        raise ConfigError(f"Kafka: the model topic must be a topic name, got {topic!r}")
    if not isinstance(max_record_bytes, int) or max_record_bytes < 1024:
        raise ConfigError(f"model_record_bytes must be an integer >= 1024, got {max_record_bytes!r}")


class ModelTopic:
    """A :class:`~stream_nb.engine.ModelChannel` on one compacted Kafka topic (see the module docstring).

    Parameters
    ----------
    topic
        The model topic.
    config
        The daemon-level Kafka dict (``bootstrap_servers``, security keys, ...).
    transaction
        With ``--exactly-once``: the daemon's transaction; states are sent in it.
    max_record_bytes
        Largest record published; larger states are split.
    writer
        False: only read (``stream-nb model export``): no producer, no topic created,
        ``read_committed``.
    """

    def __init__(self, topic: str, config: dict, *, transaction=None, max_record_bytes: int = DEFAULT_RECORD_BYTES,
                 writer: bool = True):
        check_model_topic(topic, max_record_bytes)
        self.topic = topic
        self.max_record_bytes = max_record_bytes
        self.transaction = transaction
        source_cfg, sink_cfg = split({**config, "input_topic": config.get("input_topic") or topic})
        client = {k: v for k, v in source_cfg.items() if k in KafkaConsumer.DEFAULT_CONFIG}
        partitions = _ensure_compacted(topic, client) if writer else 1
        if partitions != 1:
            raise ConfigError(f"Kafka: model topic {topic!r} has {partitions} partitions; it needs exactly one (its "
                              f"records must keep one order): give another --model-topic")
        self._sink = self._consumer = None
        if transaction is None and writer:
            producer = {k: v for k, v in sink_cfg.items() if k in KafkaProducer.DEFAULT_CONFIG or
                        k in ("bootstrap_timeout_ms", "close_timeout_ms")}
            producer.setdefault("client_id", "stream-nb-model")
            producer["max_request_size"] = max(max_record_bytes + 65_536,
                                               KafkaProducer.DEFAULT_CONFIG["max_request_size"])
            self._sink = KafkaSink(topic=topic, create_topic=False, **producer)
        client.pop("group_id", None)
        client.pop("group_instance_id", None)  # a reader outside any group: the member's name is the input's
        client.update(group_id=None, enable_auto_commit=False, auto_offset_reset="earliest",
                      isolation_level="read_uncommitted" if writer and transaction is None else "read_committed",
                      client_id="stream-nb-model-reader",
                      fetch_max_bytes=max(52_428_800, max_record_bytes * 2),
                      max_partition_fetch_bytes=max(1_048_576, max_record_bytes * 2))
        try:
            self._consumer = connect(KafkaConsumer, client, role=f"reader of model topic {topic!r}")
        except BaseException:
            if self._sink is not None:
                self._sink.close()
            raise
        self._tp = TopicPartition(topic, 0)
        if not writer and not self._consumer.partitions_for_topic(topic):
            self.close()
            raise ConfigError(f"Kafka: model topic {topic!r} does not exist")
        self._consumer.assign([self._tp])
        self._consumer.seek_to_beginning(self._tp)
        log.info("Kafka model topic %r, bootstrap %s%s", topic, servers(client.get("bootstrap_servers")),
                 ", published in the exactly-once transactions" if transaction is not None else "")

    def publish(self, key: str, value: bytes | None) -> None:
        if self.transaction is not None:
            self.transaction.send(self.topic, value, key.encode())
        else:
            self._sink.send(value, key.encode())

    def flush(self) -> None:
        if self.transaction is not None:
            self.transaction.flush(self.topic)
        else:
            self._sink.flush()

    def poll(self, timeout: float) -> list[tuple[str, bytes | None]]:
        batches = self._consumer.poll(timeout_ms=max(0, int(timeout * 1000)), max_records=10_000)
        return [(m.key.decode("utf-8", "replace") if m.key is not None else "", m.value)
                for messages in batches.values() for m in messages]

    def catch_up(self, timeout: float) -> list[tuple[str, bytes | None]]:
        """Every record up to the end offset the broker gives now (``read_committed``: the last stable offset)."""
        end = self._consumer.end_offsets([self._tp])[self._tp]
        out: list = []
        deadline = time.monotonic() + timeout
        while self._consumer.position(self._tp) < end:
            if time.monotonic() > deadline:
                log.warning("Kafka model topic %r: not read to its end (%d) within %.0f s; going on from offset %d",
                            self.topic, end, timeout, self._consumer.position(self._tp))
                break
            out.extend(self.poll(0.2))
        return out

    @property
    def in_flight(self) -> int:
        return self._sink.in_flight if self._sink is not None else 0

    def end_offsets(self, partitions: list[str]) -> dict[str, int]:
        """The end offset of each input partition named ``"<topic>-<n>"`` (for how far behind a state is)."""
        tps = {}
        for name in partitions:
            topic, _, number = name.rpartition("-")
            if number.isdigit():
                tps[TopicPartition(topic, int(number))] = name
        ends = self._consumer.end_offsets(list(tps)) if tps else {}
        return {tps[tp]: offset for tp, offset in ends.items()}

    def close(self) -> None:
        try:
            if self._sink is not None:
                self._sink.close()
        finally:
            if getattr(self, "_consumer", None) is not None:
                self._consumer.close(autocommit=False)

