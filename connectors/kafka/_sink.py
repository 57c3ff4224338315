"""The Kafka sink: an idempotent producer writing one topic, acknowledged by all in-sync replicas.

Written once over the client adapter protocol (:mod:`._adapter`):
:class:`KafkaSink` runs on kafka-python, :class:`ConfluentSink` on
confluent-kafka. See :mod:`connectors.kafka` for the delivery guarantee and
the configuration rules, and :class:`KafkaSink` for its settings.
"""

from __future__ import annotations

import logging

from ._client import Fixed, resolve_for, servers
from ._confluent import Confluent
from ._errors import DeliveryError
from ._kafka_python import KafkaPython
from ._topics import ensure_topic

__all__ = ["ConfluentSink", "KafkaSink"]

log = logging.getLogger("connectors.kafka")


class KafkaSink:
    """A :class:`~stream_nb.engine.Sink` producing to one topic, acknowledged by all in-sync replicas.

    The producer is idempotent (``acks="all"``), so retries neither duplicate
    nor reorder records of a partition. A record that finally fails is never
    dropped silently: :meth:`flush`, and every later call, raises :class:`DeliveryError`.

    Parameters
    ----------
    topic
        The topic written to (required).
    bootstrap_servers
        ``host:port`` of one or more brokers (default ``"localhost:9092"``).
    client_id
        Shown in broker logs and metrics (default ``"stream-nb"``).
    acks, enable_idempotence
        Fixed: ``"all"`` and True.
    linger_ms
        How long the producer waits to fill a batch (default 5).
    batch_size
        Most bytes per partition batch (default 262144).
    compression_type
        ``"gzip"``, ``"snappy"``, ``"lz4"``, ``"zstd"`` or None (default).
    delivery_timeout_ms
        Bound on reporting a record's success or failure (default 120000).
    bootstrap_timeout_ms
        How long to wait for a broker at start-up before :class:`ConnectorUnavailable` (default 10000).
    metrics_enabled
        kafka-python's client-side metrics (default False).
    create_topic
        Create the topic at start-up when missing (default True).
    topic_partitions, topic_replication_factor
        Partitions and replication factor of a created topic (default None: like ``partitions_like``,
        else the broker's defaults).
    partitions_like
        A topic (the input) whose partition count a created topic copies.
    topic_timeout_ms
        How long topic creation may take (default 30000).
    close_timeout_ms
        How long :meth:`close` waits for the producer after flushing (default 30000).
    **configs
        Any other key of the client's producer (confluent-kafka: also librdkafka's dotted names and
        ``max_block_ms``, how long a send waits for room in its queue), except ``transactional_id``.

    Examples
    --------
    >>> KafkaSink(topic="out", acks=1)
    Traceback (most recent call last):
    ...
    stream_nb.exceptions.ConfigError: KafkaSink: config key 'acks'=1 is not allowed: outputs must be acknowledged by all in-sync replicas
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
        "transactional_id": Fixed(None, "the Kafka sink does not use transactions"),
    }

    #: The client library (:mod:`._adapter`): kafka-python.
    ADAPTER: type = KafkaPython

    def __init__(self, **configs):
        self.client = client = self.ADAPTER()
        cfg = resolve_for(client, f"KafkaSink{client.label}", {**self.DEFAULT_CONFIG, **client.producer_defaults},
                          self.FIXED, configs, role="producer")
        self.config = cfg
        self.topic: str = cfg["topic"]
        self._close_timeout_s = cfg["close_timeout_ms"] / 1000
        self._closed = False
        if cfg["create_topic"]:
            ensure_topic(client, self.topic, cfg, role=f"admin client (topic {self.topic!r})")
        self._out = client.producer({k: v for k, v in cfg.items() if k not in self.OWN_KEYS},
                                    role=f"producer to topic {self.topic!r}", what="Kafka sink")
        log.info("Kafka sink%s: topic %r, bootstrap %s", client.label, self.topic, servers(cfg["bootstrap_servers"]))

    # -- Sink protocol ------------------------------------------------------

    def send(self, value: bytes, key: bytes | None = None) -> None:
        """Queue one record; raises :class:`DeliveryError` if this or an earlier record failed."""
        if self._out.failed:
            raise self._error()
        self._out.send(self.topic, value, key)
        if self._out.failed:
            raise self._error()

    def send_many(self, values: list[bytes], keys: list[bytes | None]) -> None:
        """:meth:`send` of each value with its key, in order, in one call (a
        :class:`~stream_nb.engine.SendsMany`: the engine hands it a poll's outputs, as two lists)."""
        if self._out.failed:
            raise self._error()
        self._out.send_many(self.topic, values, keys)
        if self._out.failed:
            raise self._error()

    def flush(self) -> None:
        """Block until every queued record is acknowledged; raise :class:`DeliveryError` if any failed."""
        if not self._closed:
            self._out.flush()
        if self._out.failed:
            raise self._error()

    def close(self) -> None:
        """Flush, then close the producer (also when the flush raised)."""
        if self._closed:
            return
        try:
            self.flush()
        finally:
            self._closed = True
            self._out.close(self._close_timeout_s)

    @property
    def failed(self) -> int:
        """How many records could not be delivered."""
        return self._out.failed

    @property
    def in_flight(self) -> int:
        """Records sent and neither acknowledged nor failed yet (the engine's back-pressure gauge).

        The producer queues records without a bound the engine sees; it pauses
        its input while this is above ``max_in_flight``.
        """
        return self._out.in_flight

    def __enter__(self) -> KafkaSink:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def _error(self) -> DeliveryError:
        return DeliveryError(
            f"Kafka sink: {self._out.failed} record(s) to topic {self.topic!r} were not delivered; "
            f"first error: {self.client.describe(self._out.first_error)}",
            topic=self.topic, failed=self._out.failed,
        )


class ConfluentSink(KafkaSink):
    """:class:`KafkaSink` on confluent-kafka (librdkafka): the same settings and guarantees.

    librdkafka reports only failed deliveries (``delivery.report.only.error``),
    so a delivered record costs no Python call, and the records in flight are
    librdkafka's own count.
    """

    ADAPTER = Confluent
