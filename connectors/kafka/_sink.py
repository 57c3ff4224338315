"""The Kafka sink: an idempotent producer writing one topic, acknowledged by all in-sync replicas.

See :mod:`connectors.kafka` for the delivery guarantee and the configuration
rules, and :class:`KafkaSink` for its settings.
"""

from __future__ import annotations

import logging

import kafka.errors as Errors
from kafka import KafkaProducer
from kafka.partitioner.default import DefaultPartitioner

from ._client import Fixed, connect, ensure_topic, resolve, servers
from ._errors import DeliveryError
from ._partitions import partitions_of

__all__ = ["KafkaSink"]

log = logging.getLogger("connectors.kafka")


class KafkaSink:
    """A :class:`~stream_nb.engine.Sink` producing to one topic.

    Each :meth:`send` is acknowledged by all in-sync replicas (``acks="all"``)
    through an idempotent producer, so retries neither duplicate nor reorder
    records of a partition. A record that finally fails is never dropped
    silently: :meth:`flush` (and every later :meth:`send`/:meth:`flush`) raises
    :class:`DeliveryError`.

    Configuration (``KafkaSink(**config)``); defaults in ``DEFAULT_CONFIG``:

    topic (str, required)
        The topic written to.
    bootstrap_servers (str or list, default ``"localhost:9092"``)
        ``host:port`` of one or more brokers.
    client_id (str, default ``"stream-nb"``)
        Shown in broker logs and metrics.
    acks (default ``"all"``)
        Fixed: ``"all"`` (or ``-1``) is the only accepted value.
    enable_idempotence (bool, default ``True``)
        Fixed: ``True`` is the only accepted value.
    linger_ms (int, default ``5``)
        How long the producer waits to fill a batch; the engine flushes at the
        end of each of its batches anyway, so this only shapes batching inside one.
    batch_size (int, default ``262144``)
        Maximum bytes per partition batch (kafka-python's default is 16384).
    compression_type (str or None, default ``None``)
        ``"gzip"``, ``"snappy"``, ``"lz4"``, ``"zstd"`` or ``None``.
    delivery_timeout_ms (int, default ``120000``)
        Upper bound on the time to report success or failure of a record, so
        :meth:`flush` cannot hang forever on an unreachable broker.
    bootstrap_timeout_ms (int, default ``10000``)
        How long to wait for a broker at start-up before :class:`ConnectorUnavailable`.
    metrics_enabled (bool, default ``False``)
        kafka-python's client-side metrics; off because they cost CPU per record.
    create_topic (bool, default ``True``)
        Create the topic at start-up if it does not exist (see the module docstring).
    topic_partitions (int or None, default ``None``)
        Partitions of a created topic; ``None``: as many as ``partitions_like``
        has, else the broker's ``num.partitions``.
    topic_replication_factor (int or None, default ``None``)
        Replication factor of a created topic; ``None``: the broker's
        ``default.replication.factor``.
    partitions_like (str or None, default ``None``)
        A topic (the input topic) whose partition count a created topic copies.
    topic_timeout_ms (int, default ``30000``)
        How long topic creation may take.
    close_timeout_ms (int, default ``30000``)
        How long :meth:`close` waits for the producer to shut down after flushing.

    Any other ``KafkaProducer`` key passes through, except ``key_serializer`` /
    ``value_serializer`` (the engine sends bytes), ``transactional_id`` (not
    used) and ``kafka_client`` (used internally).
    """

    DEFAULT_CONFIG: dict = {
        "topic": None,
        "bootstrap_servers": "localhost:9092",
        "client_id": "stream-nb",
        "acks": "all",
        "enable_idempotence": True,
        "linger_ms": 5,
        "batch_size": 262_144,
        "compression_type": None,
        "delivery_timeout_ms": 120_000,
        "bootstrap_timeout_ms": 10_000,
        "metrics_enabled": False,
        "create_topic": True,
        "topic_partitions": None,
        "topic_replication_factor": None,
        "partitions_like": None,
        "topic_timeout_ms": 30_000,
        "close_timeout_ms": 30_000,
    }
    #: Keys of ``DEFAULT_CONFIG`` that are the sink's own, not the producer's.
    OWN_KEYS = frozenset({
        "topic", "create_topic", "topic_partitions", "topic_replication_factor",
        "partitions_like", "topic_timeout_ms", "close_timeout_ms",
    })
    #: Producer keys the sink sets itself or only takes with one value.
    FIXED = {
        "acks": Fixed(lambda v: v in ("all", -1), "outputs must be acknowledged by all in-sync replicas"),
        "enable_idempotence": Fixed(
            lambda v: v is True, "retries must not duplicate or reorder outputs",
        ),
        "key_serializer": Fixed(None, "the engine sends bytes"),
        "value_serializer": Fixed(None, "the engine sends bytes"),
        "transactional_id": Fixed(None, "the Kafka sink does not use transactions"),
        "kafka_client": Fixed(None, "the connector sets it"),
    }

    def __init__(self, **configs):
        cfg = resolve("KafkaSink", self.DEFAULT_CONFIG, KafkaProducer.DEFAULT_CONFIG, self.FIXED, configs)
        self.config = cfg
        self.topic: str = cfg["topic"]
        self._close_timeout_ms = cfg["close_timeout_ms"]
        self._failed = 0
        self._sent = 0  # records handed to the producer (engine thread)
        self._acked = 0  # records acknowledged (sender thread)
        self._first_error: BaseException | None = None
        self._closed = False
        if cfg["create_topic"]:
            ensure_topic(self.topic, cfg)
        client_cfg = {k: v for k, v in cfg.items() if k not in self.OWN_KEYS}
        self._producer = connect(KafkaProducer, client_cfg, role=f"producer to topic {self.topic!r}")
        self._send = self._producer.send
        # with kafka-python's own partitioner, send_many finds a poll's partitions at once (the same ones)
        self._default_partitioner = type(self._producer.config["partitioner"]) is DefaultPartitioner
        log.info("Kafka sink: topic %r, bootstrap %s", self.topic, servers(cfg["bootstrap_servers"]))

    # -- Sink protocol ------------------------------------------------------

    def send(self, value: bytes, key: bytes | None = None) -> None:
        """Queue one record; raises :class:`DeliveryError` if an earlier record failed."""
        if self._failed:
            raise self._error()
        self._queue(value, key, None)

    def send_many(self, values: list[bytes], keys: list[bytes | None]) -> None:
        """:meth:`send` of each value with its key, in order, in one call (a
        :class:`~stream_nb.engine.SendsMany`: the engine hands it a poll's outputs). With the default
        partitioner, the keyed records' partitions are found together (:mod:`._partitions`), not one
        murmur2 in Python per record."""
        parts = [None] * len(values)
        if self._default_partitioner and any(key is not None for key in keys):
            try:
                known = self._producer.partitions_for(self.topic)
            except Errors.KafkaError as exc:
                self._on_error(exc)
                raise self._error() from exc
            if known:
                parts = partitions_of(keys, known)
        for value, key, partition in zip(values, keys, parts):
            if self._failed:
                raise self._error()
            self._queue(value, key, partition)

    def flush(self) -> None:
        """Block until every queued record is acknowledged; raise :class:`DeliveryError` if any failed."""
        if not self._closed:
            self._producer.flush()
        if self._failed:
            raise self._error()

    def close(self) -> None:
        """Flush, then close the producer (also when the flush raised)."""
        if self._closed:
            return
        try:
            self.flush()
        finally:
            self._closed = True
            self._producer.close(timeout=self._close_timeout_ms / 1000)

    @property
    def failed(self) -> int:
        """How many records could not be delivered."""
        return self._failed

    @property
    def in_flight(self) -> int:
        """Records sent and neither acknowledged nor failed yet (the engine's back-pressure gauge).

        kafka-python's producer queues records without any bound; the engine
        pauses its input while this is above ``max_in_flight``.
        """
        return max(0, self._sent - self._acked - self._failed)

    def __enter__(self) -> KafkaSink:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    # -- internals ----------------------------------------------------------

    def _queue(self, value: bytes, key: bytes | None, partition: int | None) -> None:
        """Hand one record to the producer (``partition`` None: its partitioner picks) and count it."""
        try:
            future = self._send(self.topic, value=value, key=key, partition=partition)
        except Errors.KafkaError as exc:
            self._on_error(exc)
            raise self._error() from exc
        self._sent += 1
        future.add_callback(self._on_ack)
        future.add_errback(self._on_error)

    def _on_ack(self, metadata) -> None:
        # Called on the producer's sender thread, once per acknowledged record.
        self._acked += 1

    def _on_error(self, exc: BaseException) -> None:
        # Called on the producer's sender thread.
        if self._first_error is None:
            self._first_error = exc
            log.error("Kafka sink: a record to topic %r failed: %r", self.topic, exc)
        self._failed += 1

    def _error(self) -> DeliveryError:
        return DeliveryError(
            f"Kafka sink: {self._failed} record(s) to topic {self.topic!r} were not delivered; "
            f"first error: {self._first_error!r}",
            topic=self.topic, failed=self._failed,
        )
