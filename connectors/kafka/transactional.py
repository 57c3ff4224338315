"""Exactly-once outputs: predictions, dead letters and input offsets in one Kafka transaction.

``stream-nb run --exactly-once`` builds its connectors here
(:func:`make_connectors`): the :class:`~connectors.kafka.KafkaSource` of
:mod:`connectors.kafka`, reading with ``isolation_level="read_committed"``,
and two :class:`TransactionalSink` views (outputs, dead letters) of one
:class:`Transaction`, a transactional ``KafkaProducer``. The three share the
producer and the consumer group, so this module is a
:class:`~stream_nb.engine.JointConnectorModule`: one ``make_connectors(config)``
instead of three separate factories.

A transaction begins with the first output after the previous commit. At each
checkpoint the daemon's :class:`~stream_nb.engine.ExactlyOnceCheckpointer`
flushes, writes a snapshot, and calls :meth:`Transaction.commit` (a
:class:`Transaction` is a :class:`~stream_nb.engine.Transactional`), which adds
the consumed offsets (``send_offsets_to_transaction`` with the consumer's
``group_metadata()``, so the broker fences a stale member) and commits. A
``read_committed`` consumer of the output topics sees each prediction once;
the outputs of an aborted transaction are never visible.

``transactional_id`` (required) must be stable across restarts of the same
daemon instance and distinct between instances: ``init_transactions()`` at
start-up then aborts whatever a crashed predecessor left open and fences it.
The daemon uses ``stream-nb-<group id>-<instance id>`` (``--instance-id``).
"""

from __future__ import annotations

import logging
import threading
import time

import kafka.errors as Errors
from kafka import KafkaProducer

from stream_nb.exceptions import ConfigError

from ._client import connect, ensure_topic, resolve, servers
from ._confluent_transaction import ConfluentTransaction
from ._errors import ConnectorUnavailable, DeliveryError
from ._factories import client_of, split
from ._sink import KafkaSink
from ._source import KafkaSource

__all__ = ["Transaction", "TransactionalSink", "make_connectors"]

log = logging.getLogger(__name__)


class Transaction:
    """One transactional producer shared by the daemon's sinks; see the module docstring.

    Parameters
    ----------
    source
        The :class:`~connectors.kafka.KafkaSource` whose offsets each transaction commits.
    topics
        The topics written (created when missing, as :class:`~connectors.kafka.KafkaSink` does).
    config
        :class:`~connectors.kafka.KafkaSink` keys and ``KafkaProducer`` keys;
        ``transactional_id`` is required.
    """

    #: The sink's fixed producer keys, except ``transactional_id``: required here.
    FIXED = {k: v for k, v in KafkaSink.FIXED.items() if k != "transactional_id"}

    def __init__(self, source: KafkaSource, topics: list[str], config: dict):
        transactional_id = config.get("transactional_id")
        if not isinstance(transactional_id, str) or not transactional_id:
            raise ConfigError(f"exactly-once outputs need a transactional_id, got {transactional_id!r}")
        cfg = resolve("Kafka transactional producer", KafkaSink.DEFAULT_CONFIG, KafkaProducer.DEFAULT_CONFIG,
                      self.FIXED, {**config, "topic": topics[0]})
        self.source = source
        self.transactional_id = transactional_id
        self._close_timeout_ms = cfg["close_timeout_ms"]
        if cfg["create_topic"]:
            for topic in dict.fromkeys(topics):
                ensure_topic(topic, cfg)
        self._client_cfg = {k: v for k, v in cfg.items() if k not in KafkaSink.OWN_KEYS}
        self._block_s = cfg.get("max_block_ms", KafkaProducer.DEFAULT_CONFIG["max_block_ms"]) / 1000
        self._producer = self._new_producer()
        self._in_transaction = False
        self._lock = threading.Lock()
        self._sent = self._acked = self._failed = 0
        self._first_error: BaseException | None = None
        self._users = 0
        self._closed = False
        self.commits = 0
        self.aborts = 0
        log.info("Kafka exactly-once outputs: transactional id %r, bootstrap %s", transactional_id,
                 servers(cfg["bootstrap_servers"]))

    def _new_producer(self) -> KafkaProducer:
        """A transactional producer, registered: ``init_transactions`` aborts what a predecessor left open."""
        producer = connect(KafkaProducer, self._client_cfg, role=f"transactional producer {self.transactional_id!r}")
        try:
            producer.init_transactions()
        except (Errors.KafkaTimeoutError, Errors.KafkaConnectionError) as exc:
            # No transaction coordinator answered within max_block_ms (a restarted broker still loading, or
            # gone again): the broker counts as unreachable, so callers retry as they do at start-up.
            producer.close(timeout=0)
            raise ConnectorUnavailable(
                f"Kafka transactional producer {self.transactional_id!r}: registering the transactional id "
                f"failed: {exc!r}", bootstrap_servers=servers(self._client_cfg.get("bootstrap_servers"))) from exc
        except BaseException:
            producer.close(timeout=self._close_timeout_ms / 1000)
            raise
        return producer

    def _live(self) -> KafkaProducer:
        """The producer; a new registered one when a failed abort could not replace the last one.

        A broker that stays down past ``bootstrap_timeout_ms`` makes :meth:`abort`
        raise with no producer left; the next send or commit registers again
        (aborting on the broker what the lost producer left open) instead of
        failing on the missing producer.
        """
        if self._producer is None:
            self._producer = self._new_producer()
        return self._producer

    def _complete(self, what: str, start: str, *args) -> None:
        """Run a transactional request and wait for it, at most ``max_block_ms``.

        kafka-python's ``commit_transaction``, ``abort_transaction`` and
        ``send_offsets_to_transaction`` wait without a bound (and a request can
        stay stuck after a broker restart), so this starts the same request on
        the producer's transaction manager, wakes its sender while waiting, and
        raises ``KafkaTimeoutError`` past the bound.
        """
        producer = self._live()
        manager = getattr(producer, "_transaction_manager", None)
        sender = getattr(producer, "_sender", None)
        if manager is None or sender is None or not hasattr(manager, start):  # another kafka-python: no bound
            public = {"begin_commit": "commit_transaction", "begin_abort": "abort_transaction",
                      "send_offsets_to_transaction": "send_offsets_to_transaction"}[start]
            getattr(producer, public)(*args)
            return
        result = getattr(manager, start)(*args)
        sender.wakeup()
        deadline = time.monotonic() + self._block_s
        while not result.wait(timeout_ms=200):  # raises the request's error when it failed
            if time.monotonic() > deadline:
                raise Errors.KafkaTimeoutError(
                    f"Kafka transactional producer {self.transactional_id!r}: {what} did not complete within "
                    f"max_block_ms ({self._block_s * 1000:.0f} ms)"
                )
            sender.wakeup()

    def send(self, topic: str, value: bytes, key: bytes | None) -> None:
        """Send one record inside the current transaction (beginning one if needed)."""
        if self._failed:
            raise self._error(topic)
        if not self._in_transaction:
            self._live().begin_transaction()
            self._in_transaction = True
        producer = self._producer
        try:
            future = producer.send(topic, value=value, key=key)
        except Errors.KafkaError as exc:
            self._on_error(producer, exc)
            raise self._error(topic) from exc
        self._sent += 1
        future.add_callback(self._on_ack, producer)
        future.add_errback(self._on_error, producer)

    def flush(self, topic: str = "outputs") -> None:
        """Wait for every record sent; :class:`~connectors.kafka.DeliveryError` if any failed."""
        if not self._closed and self._producer is not None:
            self._producer.flush(timeout=self._block_s)
        if self._failed:
            raise self._error(topic)

    def commit(self, positions: dict[str, int], metadata: str = "") -> None:
        """Add the offsets of ``positions`` (assigned partitions) to the transaction and commit it."""
        if not self._in_transaction:
            self._live().begin_transaction()
            self._in_transaction = True
        offsets = self.source.transaction_offsets(positions, metadata)
        if offsets:
            self._complete("adding the offsets to the transaction", "send_offsets_to_transaction", offsets,
                           self.source.group_metadata())
        self._complete("committing the transaction", "begin_commit")
        self._in_transaction = False
        self.commits += 1

    def abort(self) -> None:
        """Abort the open transaction, if any, and forget its delivery failures.

        When the producer cannot abort (a timeout, a request stuck after a
        broker restart, an error state), it is replaced by a new one with the
        same transactional id, whose registration aborts the transaction on the
        broker. Raises when even that fails, or when another instance holds the
        transactional id (fenced): the daemon must stop.
        """
        if self._in_transaction:
            try:
                self._complete("aborting the transaction", "begin_abort")
            except (Errors.ProducerFencedError, Errors.TransactionalIdAuthorizationFailedError):
                raise
            except Errors.KafkaError as exc:
                log.warning("Kafka exactly-once outputs: aborting failed (%r); replacing the producer, which "
                            "aborts the transaction on the broker", exc)
                old, self._producer = self._producer, None
                try:
                    old.close(timeout=0)
                except Exception:  # noqa: BLE001 - the old producer is broken anyway
                    log.debug("closing the old transactional producer failed", exc_info=True)
                self._in_transaction = False  # whatever happens next, the old transaction is gone with its producer
                self._producer = self._new_producer()
            self._in_transaction = False
        if not self._closed:  # a replacement that failed (broker away) is retried here, not at the next send
            self._live()
        self.aborts += 1
        self._failed = 0
        self._sent = self._acked = 0
        self._first_error = None

    @property
    def in_flight(self) -> int:
        """Records sent and neither acknowledged nor failed yet."""
        return max(0, self._sent - self._acked - self._failed)

    def acquire(self) -> None:
        self._users += 1

    def release(self) -> None:
        """Close the producer when the last sink using it closes (an open transaction is aborted)."""
        self._users -= 1
        if self._users > 0 or self._closed:
            return
        self._closed = True
        if self._producer is None:  # a failed abort left none: nothing is open
            return
        try:
            if self._in_transaction:
                self._producer.abort_transaction()
                self._in_transaction = False
        except Errors.KafkaError as exc:
            log.warning("Kafka exactly-once outputs: aborting the open transaction at close failed: %r", exc)
        finally:
            self._producer.close(timeout=self._close_timeout_ms / 1000)

    # The callbacks count only the records of the current producer: a replaced one (aborting failed) still
    # fails its queued records later (TransactionAbortedError, fenced), and counting those would fail the
    # transaction of its successor.

    def _on_ack(self, producer: KafkaProducer, metadata) -> None:
        if producer is self._producer:
            self._acked += 1

    def _on_error(self, producer: KafkaProducer, exc: BaseException) -> None:
        if producer is not self._producer:
            log.debug("Kafka exactly-once outputs: a record of a replaced producer failed: %r", exc)
            return
        with self._lock:
            if self._first_error is None:
                self._first_error = exc
                log.error("Kafka exactly-once outputs: a record failed: %r", exc)
            self._failed += 1

    def _error(self, topic: str) -> DeliveryError:
        return DeliveryError(
            f"Kafka transactional producer {self.transactional_id!r}: {self._failed} record(s) were not "
            f"delivered; first error: {self._first_error!r}; the transaction will be aborted",
            topic=topic, failed=self._failed,
        )


class TransactionalSink:
    """A :class:`~stream_nb.engine.Sink` writing one topic inside a shared :class:`Transaction`.

    A :class:`~stream_nb.engine.SendsInTransaction` (its :attr:`transaction`),
    :class:`~stream_nb.engine.CountsInFlight` and :class:`~stream_nb.engine.SharesQueue`.
    """

    def __init__(self, transaction: Transaction, topic: str):
        self.transaction = transaction
        self.topic = topic
        self._closed = False
        transaction.acquire()

    def send(self, value: bytes, key: bytes | None = None) -> None:
        self.transaction.send(self.topic, value, key)

    def flush(self) -> None:
        self.transaction.flush(self.topic)

    @property
    def in_flight(self) -> int:
        return self.transaction.in_flight

    @property
    def in_flight_owner(self):
        """The shared transaction: back-pressure counts its queue once, not once per sink."""
        return self.transaction

    def close(self) -> None:
        """Release the shared producer (closed with the last sink). Never commits."""
        if not self._closed:
            self._closed = True
            self.transaction.release()


def make_connectors(config: dict) -> tuple[KafkaSource, TransactionalSink, TransactionalSink]:
    """Source, output sink and dead-letter sink of ``stream-nb run --exactly-once``.

    ``config`` is the daemon-level dict of :func:`connectors.kafka.make_source`
    plus ``transactional_id``; the source reads ``read_committed``. With
    ``kafka_client="confluent"`` the source is a ``ConfluentSource`` and the
    transaction a :class:`~connectors.kafka._confluent_transaction.ConfluentTransaction`.
    """
    client = client_of(config)
    source_cfg, sink_cfg = split(config)
    output = config.get("output_topic")
    if not output:
        raise ConfigError("Kafka: 'output_topic' is required")
    dead = config.get("dead_letter_topic") or f"{config['input_topic']}.dlq"
    source_cfg["isolation_level"] = "read_committed"
    source = client.source(topic=config["input_topic"], **source_cfg)
    try:
        sink_cfg.setdefault("client_id", "stream-nb-exactly-once")
        make = ConfluentTransaction if client.name == "confluent" else Transaction
        txn = make(source, [output, dead], {**sink_cfg, "partitions_like": config["input_topic"]})
    except BaseException:
        source.close()
        raise
    return source, TransactionalSink(txn, output), TransactionalSink(txn, dead)

