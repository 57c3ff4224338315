"""The confluent-kafka sink: :class:`ConfluentSink`, the librdkafka counterpart of ``KafkaSink``.

Same settings and guarantees as :class:`~connectors.kafka.KafkaSink`: an
idempotent producer, ``acks=all``, a failed record never dropped silently
(:meth:`~ConfluentSink.flush` raises :class:`~connectors.kafka.DeliveryError`).
librdkafka reports deliveries through callbacks served by ``poll``/``flush``;
only failures are reported (``delivery.report.only.error``), so a delivered
record costs no Python call, and the records in flight are librdkafka's own
count (``len(producer)``).
"""

from __future__ import annotations

import collections
import itertools
import logging
import operator
import time

from ._client import Fixed, servers
from ._confluent_client import client_config, create, ensure_topic, library, resolve, wait_for_broker
from ._errors import DeliveryError
from ._sink import KafkaSink

__all__ = ["ConfluentProducer", "ConfluentSink"]

log = logging.getLogger("connectors.kafka")


class ConfluentProducer:
    """A confluent-kafka producer with the sink's delivery rules; shared by the sink and the transaction.

    ``send`` queues a record (waiting for room when librdkafka's queue is
    full); ``flush`` waits for every record and raises
    :class:`~connectors.kafka.DeliveryError` if any failed; failures are
    counted from librdkafka's delivery reports.
    """

    def __init__(self, conf: dict, cfg: dict, *, role: str, what: str):
        ck = library()
        self._ck = ck
        self.what = what
        self.failed = 0
        self.first_error = None
        conf = dict(conf)
        # a keyed record goes where the Java client and kafka-python put it (murmur2), not where librdkafka's
        # own default (CRC32) would: outputs keyed like their events land in the same partitions on either client
        conf.setdefault("partitioner", "murmur2_random")
        conf["on_delivery"] = self._on_delivery
        conf["delivery.report.only.error"] = True
        self.producer = create(ck.Producer, conf, role=role)
        try:
            wait_for_broker(self.producer, cfg, role=role)
        except BaseException:
            self.producer.flush(0)
            raise
        self._produce = self.producer.produce
        self._poll = self.producer.poll
        self._block_s = cfg["max_block_ms"] / 1000

    def send(self, topic: str, value: bytes, key: bytes | None) -> None:
        try:
            self._produce(topic, value, key)
        except BufferError:  # librdkafka's queue is full: serve deliveries until there is room
            deadline = time.monotonic() + self._block_s
            while True:
                self._poll(0.05)
                try:
                    self._produce(topic, value, key)
                    return
                except BufferError:
                    if time.monotonic() > deadline:
                        raise DeliveryError(f"{self.what}: librdkafka's queue stayed full for max_block_ms "
                                            f"({self._block_s * 1000:.0f} ms)", topic=topic, failed=0) from None

    def flush(self, timeout: float | None = None) -> None:
        """Wait for every queued record (at most ``timeout`` seconds when given); raise if any failed."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = self.producer.flush(1.0)
            if not left or (deadline is not None and time.monotonic() > deadline):
                break
        if left:
            raise DeliveryError(f"{self.what}: {left} record(s) not acknowledged within {timeout} s",
                                topic=self.what, failed=left)

    @property
    def in_flight(self) -> int:
        """Records neither acknowledged nor failed yet (serving the delivery reports first).

        librdkafka counts a record until its report is served, even when
        successes are not reported, so ``poll(0)`` comes first.
        """
        self._poll(0)
        return len(self.producer)

    def _on_delivery(self, err, msg) -> None:
        # Served by poll()/flush() on the caller's thread; only failures come here.
        if err is None:
            return
        if self.first_error is None:
            self.first_error = err
            log.error("%s: a record to topic %r failed: %s", self.what, msg.topic(), err.str())
        self.failed += 1


class ConfluentSink:
    """A :class:`~stream_nb.engine.Sink` producing to one topic with confluent-kafka.

    Takes :class:`~connectors.kafka.KafkaSink`'s settings (the same
    ``DEFAULT_CONFIG``), the kafka-python names of the settings both clients
    share and any librdkafka producer property by its dotted name;
    ``acks`` must stay ``all`` and ``enable_idempotence`` ``True``. ``max_block_ms``
    (kafka-python's name) bounds how long :meth:`send` waits for room in
    librdkafka's queue (and the transactional requests of exactly-once outputs).
    """

    DEFAULT_CONFIG: dict = {**KafkaSink.DEFAULT_CONFIG, "max_block_ms": 60_000}
    #: Producer keys the sink sets itself or only takes with one value.
    FIXED = {
        "acks": KafkaSink.FIXED["acks"],
        "enable_idempotence": KafkaSink.FIXED["enable_idempotence"],
        "transactional_id": KafkaSink.FIXED["transactional_id"],
        "on_delivery": Fixed(None, "the sink counts delivery failures itself"),
        "delivery.report.only.error": Fixed(None, "the sink counts delivery failures itself"),
        "logger": Fixed(None, "the connector routes librdkafka's logs to Python logging"),
    }

    def __init__(self, **configs):
        cfg = resolve("KafkaSink (confluent)", self.DEFAULT_CONFIG, self.FIXED, configs, role="producer")
        self.config = cfg
        self.topic: str = cfg["topic"]
        self._close_timeout_s = cfg["close_timeout_ms"] / 1000
        self._closed = False
        if cfg["create_topic"]:
            ensure_topic(self.topic, cfg)
        self._out = ConfluentProducer(client_config(cfg), cfg, role=f"producer to topic {self.topic!r}",
                                      what="Kafka sink")
        self._produce = self._out.producer.produce
        log.info("Kafka sink (confluent-kafka): topic %r, bootstrap %s", self.topic, servers(cfg["bootstrap_servers"]))

    def send(self, value: bytes, key: bytes | None = None) -> None:
        """Queue one record; raises :class:`DeliveryError` if an earlier record failed."""
        if self._out.failed:
            raise self._error()
        try:
            self._produce(self.topic, value, key)
        except BufferError:  # librdkafka's queue is full: ConfluentProducer.send waits for room
            self._out.send(self.topic, value, key)

    def send_many(self, values: list[bytes], keys: list[bytes | None]) -> None:
        """:meth:`send` of each value with its key, in order, in one call (a
        :class:`~stream_nb.engine.SendsMany`: the engine hands it a poll's outputs, as two lists)."""
        out, produce, topic = self._out, self._produce, self.topic
        if out.failed:
            raise self._error()
        # produce() serves no delivery report, so no failure shows until a wait for room (out.send) serves them
        rest, rest_keys = iter(values), iter(keys)
        while True:
            try:
                collections.deque(map(produce, itertools.repeat(topic), rest, rest_keys), 0)  # no Python per record
                return
            except BufferError:  # librdkafka's queue is full: ConfluentProducer.send waits for room
                i = len(values) - operator.length_hint(rest) - 1  # the value produce() refused
                out.send(topic, values[i], keys[i])
                if out.failed:
                    raise self._error() from None

    def flush(self) -> None:
        """Block until every queued record is acknowledged; raise :class:`DeliveryError` if any failed."""
        if not self._closed:
            self._out.flush()
        if self._out.failed:
            raise self._error()

    def close(self) -> None:
        """Flush, then let the producer go (also when the flush raised)."""
        if self._closed:
            return
        try:
            self.flush()
        finally:
            self._closed = True
            self._out.producer.flush(self._close_timeout_s)

    @property
    def failed(self) -> int:
        """How many records could not be delivered."""
        return self._out.failed

    @property
    def in_flight(self) -> int:
        """Records queued and neither acknowledged nor failed yet (the engine's back-pressure gauge)."""
        return self._out.in_flight

    def __enter__(self) -> ConfluentSink:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def _error(self) -> DeliveryError:
        first = self._out.first_error
        return DeliveryError(
            f"Kafka sink: {self._out.failed} record(s) to topic {self.topic!r} were not delivered; "
            f"first error: {first.str() if first is not None else None}",
            topic=self.topic, failed=self._out.failed,
        )
