"""The model topic of a consumer group (``--model-topic``): a :class:`~stream_nb.engine.ModelChannel` on Kafka.

One compacted topic of one partition (created when missing; one with more
partitions is refused), written through a :class:`~connectors.kafka.KafkaSink`
of the same client, or in the daemon's transaction with ``--exactly-once``, and
read from its start by the adapter's :class:`~._adapter.Consumer` in no group
(:meth:`~._adapter.Adapter.reader`): read to the end once its offset reaches
the end offset. A ``read_committed`` catch-up first waits, at most the
transaction timeout plus :data:`ABORT_CHECK_S`, until every transaction open
when it starts has ended: an open transaction holds the last stable offset.
The docs' *Groups* page has more.
"""

from __future__ import annotations

import logging
import time

from stream_nb.exceptions import ConfigError

from ._client import resolve_for, servers
from ._confluent import Confluent
from ._errors import ConnectorUnavailable
from ._factories import split
from ._kafka_python import KafkaPython
from ._sink import ConfluentSink, KafkaSink
from ._source import KafkaSource
from ._topics import ensure_topic

__all__ = ["ABORT_CHECK_S", "DEFAULT_RECORD_BYTES", "ConfluentModelTopic", "ModelTopic", "check_model_topic"]

log = logging.getLogger("connectors.kafka")

#: Largest record published by default: under the broker's default ``max.message.bytes`` (1 MB).
DEFAULT_RECORD_BYTES = 900_000

#: How often a broker looks for timed-out transactions to abort, by default
#: (``transaction.abort.timed.out.transaction.cleanup.interval.ms``): past a transaction's timeout, its abort
#: may take this much longer.
ABORT_CHECK_S = 10.0

#: Sink keys about creating the output topics: the model topic is created here, compacted.
_TOPIC_CREATION = frozenset({"create_topic", "topic_partitions", "topic_replication_factor", "partitions_like",
                             "topic_timeout_ms", "topic"})


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

    #: The client library (:mod:`._adapter`) and its sink.
    ADAPTER: type = KafkaPython
    SINK: type = KafkaSink

    def __init__(self, topic: str, config: dict, *, transaction=None, max_record_bytes: int = DEFAULT_RECORD_BYTES,
                 writer: bool = True):
        check_model_topic(topic, max_record_bytes)
        self.topic = topic
        self.max_record_bytes = max_record_bytes
        self.transaction = transaction
        self._sink = self._reader = self._uncommitted = None
        self._assigned = False
        self.committed_only = not writer or transaction is not None
        timeout_ms = config.get("transaction_timeout_ms", config.get("transaction.timeout.ms", 60_000))
        self.transaction_timeout = transaction.timeout_s if transaction is not None else int(timeout_ms) / 1000
        self.client = client = self.ADAPTER()
        source_cfg, sink_cfg = split({**config, "input_topic": config.get("input_topic") or topic,
                                      "kafka_client": client.name})
        source_cfg = {k: v for k, v in source_cfg.items()  # a reader is in no group
                      if k not in ("group_id", "group_instance_id", "group.id", "group.instance.id")}
        source_cfg.update(enable_auto_commit=False, auto_offset_reset="earliest", client_id="stream-nb-model-reader",
                          fetch_max_bytes=max(52_428_800, max_record_bytes * 2),
                          max_partition_fetch_bytes=max(1_048_576, max_record_bytes * 2))
        cfg = resolve_for(client, f"Kafka model topic reader{client.label}", KafkaSource.DEFAULT_CONFIG, {},
                          {**source_cfg, "topic": topic}, role="consumer")
        self._reader_cfg = cfg
        if writer:
            partitions = ensure_topic(client, topic, cfg, role=f"admin client (model topic {topic!r})",
                                      compacted=True)
            if partitions != 1:
                raise ConfigError(f"Kafka: model topic {topic!r} has {partitions} partitions; it needs exactly one "
                                  f"(its records must keep one order): give another --model-topic")
        if transaction is None and writer:
            producer = {k: v for k, v in sink_cfg.items() if k not in _TOPIC_CREATION}
            producer.setdefault("client_id", "stream-nb-model")
            producer["max_request_size"] = max(max_record_bytes + 65_536, 1_048_576)
            self._sink = self.SINK(topic=topic, create_topic=False, **producer)
        try:
            self._reader, exists = self._open(self.committed_only)
        except BaseException:
            self.close()
            raise
        if not exists:
            self.close()
            raise ConfigError(f"Kafka: model topic {topic!r} does not exist")
        log.info("Kafka model topic %r%s, bootstrap %s%s", topic, client.label, servers(cfg["bootstrap_servers"]),
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
        polled = self._read().poll(10_000, timeout)
        return [] if polled is None else [(key.decode("utf-8", "replace") if key is not None else "", value)
                                          for key, value in zip(polled.keys, polled.values)]

    def catch_up(self, timeout: float) -> list[tuple[str, bytes | None]]:
        """Every record up to the end offset the broker gives now (``read_committed``: once the transactions open
        now ended, the last stable offset; see the module docstring)."""
        out: list = []
        end = self._settled(out) if self.committed_only else self._ask(self._end, time.monotonic() + timeout)
        deadline = time.monotonic() + timeout
        while self._read().offset((self.topic, 0)) < end:
            if time.monotonic() > deadline:
                log.warning("Kafka model topic %r: not read to its end (%d) within %.0f s; going on from offset %d",
                            self.topic, end, timeout, self._read().offset((self.topic, 0)))
                break
            out.extend(self.poll(0.2))
        return out

    def _settled(self, out: list) -> int:
        """The last stable offset once it reached the high watermark of now (the records read meanwhile go to
        ``out``), or when the transaction holding it outlived the transaction timeout and the broker's abort check."""
        limit = time.monotonic() + self.transaction_timeout + ABORT_CHECK_S
        high = self._ask(self._high_watermark, limit)
        end = self._ask(self._end, limit)
        if end < high:
            log.info("Kafka model topic %r: an open transaction holds its last stable offset at %d (%d record(s) "
                     "after it); waiting until every transaction open now ends, at most %.0f s (the transaction "
                     "timeout and the broker's abort check)", self.topic, end, high - end, limit - time.monotonic())
        while end < high:
            if time.monotonic() > limit:
                log.warning("Kafka model topic %r: a transaction still holds its last stable offset at %d after "
                            "%.0f s; going on with the states committed before it", self.topic, end,
                            self.transaction_timeout + ABORT_CHECK_S)
                break
            out.extend(self.poll(0.2))
            end = self._ask(self._end, limit)
        return end

    def _open(self, read_committed: bool):
        """A reader of the topic (see :meth:`~._adapter.Adapter.reader`), and whether the topic exists."""
        cfg = {k: v for k, v in self._reader_cfg.items() if k != "isolation.level"}  # set here, by either name
        cfg["isolation_level"] = "read_committed" if read_committed else "read_uncommitted"
        reader = self.client.reader(self.topic, cfg)
        try:
            return reader, reader.partition_count(self.topic) is not None
        except BaseException:
            reader.close(cfg["close_timeout_ms"] / 1000)
            raise

    def _read(self):
        """The reader, reading the topic from its start since the first call (one asked only for end offsets, as
        at the start of a catch-up, fetches nothing)."""
        if not self._assigned:
            self._reader.assign([(self.topic, 0)])
            self._assigned = True
        return self._reader

    def _end(self, reader=None) -> int:
        """The topic's end offset now, as ``reader`` (the reader) sees it: the last stable offset when
        ``read_committed``."""
        return (reader or self._reader).end_offsets([(self.topic, 0)], None)[(self.topic, 0)]

    def _high_watermark(self) -> int:
        """The end offset counting the records of open transactions: asked of a second, ``read_uncommitted``
        reader (made at the first call; it never fetches)."""
        if self._uncommitted is None:
            self._uncommitted = self._open(False)[0]
        return self._end(self._uncommitted)

    def _ask(self, offset, deadline: float) -> int:
        """``offset()`` (an end offset), asked again until ``deadline`` (a client resumed after a pause, or a
        broker moving its partitions, times out a while)."""
        while True:
            try:
                return offset()
            except self._reader.errors as exc:
                if time.monotonic() + 0.2 >= deadline:
                    raise ConnectorUnavailable(f"Kafka model topic {self.topic!r}: its end offset is unknown "
                                               f"({self.client.describe(exc)})") from None
                log.info("Kafka model topic %r: end offset not known yet (%s); asking again", self.topic,
                         self.client.describe(exc))
                time.sleep(0.2)

    @property
    def in_flight(self) -> int:
        return self._sink.in_flight if self._sink is not None else 0

    def end_offsets(self, partitions: list[str]) -> dict[str, int]:
        """The end offset of each input partition named ``"<topic>-<n>"`` (for how far behind a state is)."""
        named = {}
        for name in partitions:
            topic, _, number = name.rpartition("-")
            if number.isdigit():
                named[(topic, int(number))] = name
        try:
            ends = self._reader.end_offsets(list(named), None)
        except self._reader.errors as exc:  # how far behind each state is stays unknown
            log.warning("Kafka model topic %r: end offsets of the input unknown: %s", self.topic,
                        self.client.describe(exc))
            return {}
        return {named[p]: offset for p, offset in ends.items()}

    def close(self) -> None:
        try:
            if self._sink is not None:
                self._sink.close()
        finally:
            for reader in (self._reader, self._uncommitted):
                if reader is not None:
                    reader.close(self._reader_cfg["close_timeout_ms"] / 1000)
            self._reader = self._uncommitted = None


class ConfluentModelTopic(ModelTopic):
    """:class:`ModelTopic` on confluent-kafka: the same parameters, methods and rules."""

    ADAPTER = Confluent
    SINK = ConfluentSink
