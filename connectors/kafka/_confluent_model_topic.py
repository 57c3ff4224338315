"""The model topic (``--model-topic``) with confluent-kafka: :class:`ConfluentModelTopic`.

The librdkafka counterpart of :class:`connectors.kafka.ModelTopic` (same
methods, same rules; see :mod:`connectors.kafka._model_topic`): the topic is
created at start-up when missing, with one partition and
``cleanup.policy=compact``; a topic with more than one partition is refused.
Publishing goes through a :class:`~connectors.kafka.ConfluentSink`
(idempotent, ``acks=all``, ``message.max.bytes`` above the largest record)
or, with ``--exactly-once``, through the daemon's
:class:`~connectors.kafka._confluent_transaction.ConfluentTransaction`, so the
states commit with the outputs and input offsets. Reading is a consumer that
joins no group (it is only ``assign``-ed the topic's partition, from the
beginning; librdkafka wants a ``group.id`` all the same, and nothing is ever
committed under it), ``read_committed`` with ``--exactly-once``.

Where the log ends: librdkafka's position does not move past the control
records of transactions, so "read up to the end" is told by the
partition-EOF event (``enable.partition.eof``), which librdkafka raises at
the end offset the broker reports (the last stable offset when
``read_committed``), compared with the end offset asked for at the start.
"""

from __future__ import annotations

import logging
import os
import time
import uuid

from stream_nb.exceptions import ConfigError

from ._client import servers
from ._confluent_client import client_config, create, kafka_error, library, resolve, wait_for_broker
from ._confluent_sink import ConfluentSink
from ._confluent_source import ConfluentSource
from ._errors import ConnectorError, ConnectorUnavailable
from ._factories import split
from ._model_topic import DEFAULT_RECORD_BYTES, check_model_topic

__all__ = ["ConfluentModelTopic"]

log = logging.getLogger("connectors.kafka")

#: Sink keys about creating the output topics: the model topic is created here, compacted.
_TOPIC_CREATION = frozenset({"create_topic", "topic_partitions", "topic_replication_factor", "partitions_like",
                             "topic_timeout_ms", "topic"})


def _ensure_compacted(topic: str, conf: dict, cfg: dict, timeout_s: float = 30.0) -> int:
    """Create ``topic`` (one partition, compacted) when missing; return its partition count."""
    ck = library()
    from confluent_kafka.admin import AdminClient, NewTopic  # optional library, loaded with library()

    role = f"admin client (model topic {topic!r})"
    admin = create(AdminClient, conf, role=role)
    deadline = time.monotonic() + timeout_s
    created = False
    while True:
        found = wait_for_broker(admin, cfg, role=role, topic=topic).topics.get(topic)
        if found is not None and found.error is None and found.partitions:
            return len(found.partitions)
        if not created:
            spec = NewTopic(topic, num_partitions=1, replication_factor=-1, config={"cleanup.policy": "compact"})
            try:
                admin.create_topics([spec], request_timeout=timeout_s)[topic].result(timeout=timeout_s)
                log.info("Kafka: created model topic %r (1 partition, compacted)", topic)
            except ck.KafkaException as exc:
                err = kafka_error(exc)
                if err is None or err.code() != ck.KafkaError.TOPIC_ALREADY_EXISTS:
                    raise ConfigError(f"Kafka: cannot create model topic {topic!r}: "
                                      f"{err.str() if err is not None else exc}") from None
            created = True
        if time.monotonic() > deadline:
            raise ConfigError(f"Kafka: model topic {topic!r} has no partitions after {timeout_s:.0f} s")
        time.sleep(0.1)


class ConfluentModelTopic:
    """A :class:`~stream_nb.engine.ModelChannel` on one compacted Kafka topic, with confluent-kafka.

    Takes the parameters of :class:`connectors.kafka.ModelTopic`: ``topic``,
    ``config`` (the daemon-level Kafka dict), ``transaction`` (with
    ``--exactly-once``: the daemon's ``ConfluentTransaction``),
    ``max_record_bytes`` and ``writer`` (False: only read, for
    ``stream-nb model export``: no producer, no topic created, ``read_committed``).
    """

    def __init__(self, topic: str, config: dict, *, transaction=None, max_record_bytes: int = DEFAULT_RECORD_BYTES,
                 writer: bool = True):
        self._ck = ck = library()
        check_model_topic(topic, max_record_bytes)
        self.topic = topic
        self.max_record_bytes = max_record_bytes
        self.transaction = transaction
        self._sink = self._consumer = None
        source_cfg, sink_cfg = split({**config, "input_topic": config.get("input_topic") or topic})
        source_cfg = {k: v for k, v in source_cfg.items() if k not in ("group_instance_id", "group.instance.id")}
        cfg = resolve("Kafka model topic reader (confluent)", ConfluentSource.DEFAULT_CONFIG, {},
                      {**source_cfg, "topic": topic}, role="consumer")
        conf = client_config(cfg)
        if writer:
            admin = {k: v for k, v in conf.items() if k not in ("group.id", "auto.offset.reset", "enable.auto.commit",
                                                                 "isolation.level", "session.timeout.ms",
                                                                 "heartbeat.interval.ms", "max.poll.interval.ms")}
            partitions = _ensure_compacted(topic, admin, cfg)
            if partitions != 1:
                raise ConfigError(f"Kafka: model topic {topic!r} has {partitions} partitions; it needs exactly one "
                                  f"(its records must keep one order): give another --model-topic")
        if transaction is None and writer:
            producer = {k: v for k, v in sink_cfg.items() if k not in _TOPIC_CREATION}
            producer.setdefault("client_id", "stream-nb-model")
            producer["max_request_size"] = max(max_record_bytes + 65_536, 1_048_576)
            self._sink = ConfluentSink(topic=topic, create_topic=False, **producer)
        # Reads outside any group: assign() only, nothing committed; the group id is librdkafka's requirement.
        conf.update({"group.id": f"stream-nb-model-reader-{os.getpid()}-{uuid.uuid4().hex[:8]}",
                     "enable.auto.commit": False, "enable.auto.offset.store": False,
                     "auto.offset.reset": "earliest", "enable.partition.eof": True,
                     "isolation.level": "read_uncommitted" if writer and transaction is None else "read_committed",
                     "client.id": "stream-nb-model-reader",
                     "fetch.max.bytes": max(52_428_800, max_record_bytes * 2),
                     "max.partition.fetch.bytes": max(1_048_576, max_record_bytes * 2)})
        role = f"reader of model topic {topic!r}"
        try:
            self._consumer = create(ck.Consumer, conf, role=role)
            found = wait_for_broker(self._consumer, cfg, role=role, topic=topic).topics.get(topic)
        except BaseException:
            self.close()
            raise
        if found is None or found.error is not None or not found.partitions:
            self.close()
            raise ConfigError(f"Kafka: model topic {topic!r} does not exist")
        self._timeout_s = cfg["bootstrap_timeout_ms"] / 1000
        self._tp = ck.TopicPartition(topic, 0, ck.OFFSET_BEGINNING)
        self._consumer.assign([self._tp])
        self._next = 0  # offset after the last record read
        self._eof = -1  # the end offset at the last partition-EOF event (-1: none since the last record)
        log.info("Kafka model topic %r (confluent-kafka), bootstrap %s%s", topic, servers(cfg["bootstrap_servers"]),
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
        # what is there now; else wait for the first record (consume(n, timeout) would wait for n or the timeout)
        messages = self._consumer.consume(10_000, 0)
        if not messages and timeout > 0:
            first = self._consumer.poll(timeout)
            messages = [first, *self._consumer.consume(9_999, 0)] if first is not None else []
        out = []
        for m in messages:
            err = m.error()
            if err is not None:
                if err.code() == self._ck.KafkaError._PARTITION_EOF:
                    self._eof = m.offset()
                elif err.fatal():
                    raise ConnectorError(f"Kafka model topic {self.topic!r}: {err.str()}")
                else:
                    log.warning("Kafka model topic %r: %s", self.topic, err.str())
                continue
            key = m.key()
            out.append((key.decode("utf-8", "replace") if key is not None else "", m.value()))
            self._next = m.offset() + 1
            self._eof = -1
        return out

    def _end(self, deadline: float) -> int:
        """The partition's end offset now (the last stable offset when ``read_committed``), asked again until
        ``deadline`` (a client resumed after a pause, or a broker moving its partitions, times out a while)."""
        while True:
            try:
                return self._consumer.get_watermark_offsets(self._tp, timeout=self._timeout_s, cached=False)[1]
            except self._ck.KafkaException as exc:
                err = kafka_error(exc)
                if time.monotonic() + 0.2 >= deadline or (err is not None and err.fatal()):
                    raise ConnectorUnavailable(f"Kafka model topic {self.topic!r}: its end offset is unknown "
                                               f"({err.str() if err is not None else exc})") from None
                log.info("Kafka model topic %r: end offset not known yet (%s); asking again", self.topic,
                         err.str() if err is not None else exc)
                time.sleep(0.2)

    def catch_up(self, timeout: float) -> list[tuple[str, bytes | None]]:
        """Every record up to the end offset the broker gives now (``read_committed``: the last stable offset)."""
        deadline = time.monotonic() + timeout
        end = self._end(deadline)
        out: list = []
        while self._next < end and self._eof < end:
            if time.monotonic() > deadline:
                log.warning("Kafka model topic %r: not read to its end (%d) within %.0f s; going on from offset %d",
                            self.topic, end, timeout, max(self._next, self._eof))
                break
            out.extend(self.poll(0.2))
        return out

    @property
    def in_flight(self) -> int:
        return self._sink.in_flight if self._sink is not None else 0

    def end_offsets(self, partitions: list[str]) -> dict[str, int]:
        """The end offset of each input partition named ``"<topic>-<n>"`` (for how far behind a state is)."""
        out = {}
        for name in partitions:
            topic, _, number = name.rpartition("-")
            if number.isdigit():
                try:
                    out[name] = self._consumer.get_watermark_offsets(self._ck.TopicPartition(topic, int(number)),
                                                                     timeout=self._timeout_s, cached=False)[1]
                except self._ck.KafkaException as exc:
                    log.warning("Kafka: end offset of %s unknown: %s", name, exc)
        return out

    def close(self) -> None:
        try:
            if self._sink is not None:
                self._sink.close()
        finally:
            if self._consumer is not None:
                self._consumer.close()
                self._consumer = None
