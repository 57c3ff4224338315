"""Exactly-once outputs with confluent-kafka: :class:`ConfluentTransaction`.

The librdkafka counterpart of :class:`connectors.kafka.transactional.Transaction`
(same methods, same rules; see :mod:`connectors.kafka.transactional`): one
transactional producer for predictions, dead letters and the input offsets
(``send_offsets_to_transaction`` with the consumer's group metadata). Every
transactional call of librdkafka takes a timeout (``max_block_ms``); one does
not keep it: ``send_offsets_to_transaction`` can wait forever for a group
coordinator it cached before a broker restart (librdkafka issues #5456 and
#5511: the coordinator request's timeout is never checked; seen here as a daemon
stuck after the local broker restarted). So that call runs on a helper thread
and counts as failed past ``max_block_ms`` plus a grace period; the stuck
producer is then replaced, not aborted. An error librdkafka marks fatal (or an abort that fails) replaces
the producer with a new one of the same transactional id, whose
``init_transactions`` aborts on the broker what the old one left open; a
fenced producer (another instance holds the id) raises: the daemon must stop.
"""

from __future__ import annotations

import logging
import threading
import time

from stream_nb.exceptions import ConfigError

from ._client import Fixed, servers
from ._confluent_client import client_config, ensure_topic, kafka_error, library, resolve
from ._confluent_sink import ConfluentProducer, ConfluentSink
from ._confluent_source import ConfluentSource
from ._errors import ConnectorUnavailable, DeliveryError

__all__ = ["ConfluentTransaction", "TransactionFenced"]

log = logging.getLogger("connectors.kafka.transactional")


class TransactionFenced(DeliveryError):
    """Another producer with this transactional id took over (or the id may not be used): stop."""


class ConfluentTransaction:
    """One transactional confluent-kafka producer shared by the daemon's sinks.

    Parameters
    ----------
    source
        The :class:`~connectors.kafka.ConfluentSource` whose offsets each transaction commits.
    topics
        The topics written (created when missing).
    config
        Sink keys; ``transactional_id`` is required.
    """

    FIXED = {**{k: v for k, v in ConfluentSink.FIXED.items() if k != "transactional_id"},
             "transactional.id": Fixed(None, "give transactional_id")}

    #: Seconds past ``max_block_ms`` before a ``send_offsets_to_transaction`` that has not returned counts as stuck.
    GRACE_S = 5.0

    def __init__(self, source: ConfluentSource, topics: list[str], config: dict):
        self._ck = library()
        transactional_id = config.get("transactional_id")
        if not isinstance(transactional_id, str) or not transactional_id:
            raise ConfigError(f"exactly-once outputs need a transactional_id, got {transactional_id!r}")
        cfg = resolve("Kafka transactional producer (confluent)", ConfluentSink.DEFAULT_CONFIG, self.FIXED,
                      {**config, "topic": topics[0]}, role="producer")
        self.source = source
        self.transactional_id = transactional_id
        self._cfg = cfg
        self._block_s = float(cfg["max_block_ms"]) / 1000
        if cfg["create_topic"]:
            for topic in dict.fromkeys(topics):
                ensure_topic(topic, cfg)
        self._conf = client_config(cfg)
        # librdkafka insists that a record's delivery timeout fits in the transaction's
        txn_timeout = int(self._conf.get("transaction.timeout.ms", 60_000))
        self._conf["delivery.timeout.ms"] = min(int(self._conf.get("delivery.timeout.ms", txn_timeout)), txn_timeout)
        self._out: ConfluentProducer | None = None
        self._stuck = False
        self._out = self._new_producer()
        self._in_transaction = False
        self._lock = threading.Lock()
        self._users = 0
        self._closed = False
        self.commits = 0
        self.aborts = 0
        log.info("Kafka exactly-once outputs (confluent-kafka): transactional id %r, bootstrap %s", transactional_id,
                 servers(cfg["bootstrap_servers"]))

    def _new_producer(self) -> ConfluentProducer:
        """A registered transactional producer: ``init_transactions`` aborts what a predecessor left open."""
        out = ConfluentProducer(self._conf, self._cfg, role=f"transactional producer {self.transactional_id!r}",
                                what=f"Kafka transactional producer {self.transactional_id!r}")
        # A broker just (re)started answers "coordinator load in progress" for a while: retriable errors are
        # retried for up to 30 s (or max_block_ms), then the broker counts as unreachable (the daemon retries).
        deadline = time.monotonic() + max(30.0, self._block_s)
        while True:
            try:
                out.producer.init_transactions(self._block_s)
                return out
            except self._ck.KafkaException as exc:
                err = kafka_error(exc)
                if err is not None and err.retriable() and time.monotonic() < deadline:
                    log.info("Kafka exactly-once outputs: registering %r: %s; retrying", self.transactional_id,
                             err.str())
                    time.sleep(0.2)
                    continue
                out.producer.flush(0)
                if err is not None and err.retriable():
                    raise ConnectorUnavailable(
                        f"Kafka transactional producer {self.transactional_id!r}: registering the transactional id "
                        f"failed: {err.str()}", bootstrap_servers=servers(self._cfg["bootstrap_servers"])) from None
                self._raise(exc, "registering the transactional id")

    def _live(self) -> ConfluentProducer:
        """The producer; a new registered one when a failed abort could not replace the last one."""
        if self._out is None:
            self._out = self._new_producer()
        return self._out

    def _raise(self, exc: BaseException, what: str):
        err = kafka_error(exc)
        fenced = err is not None and err.code() in (
            self._ck.KafkaError._FENCED, self._ck.KafkaError.PRODUCER_FENCED,
            self._ck.KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, self._ck.KafkaError.INVALID_PRODUCER_EPOCH)
        text = err.str() if err is not None else repr(exc)
        if fenced:
            raise TransactionFenced(f"Kafka transactional producer {self.transactional_id!r}: {what} failed: {text}; "
                                    f"another instance uses this transactional id", topic="outputs", failed=0) from None
        raise exc

    def _begin(self) -> None:
        if not self._in_transaction:
            try:
                self._live().producer.begin_transaction()
            except self._ck.KafkaException as exc:
                self._raise(exc, "beginning a transaction")
            self._in_transaction = True

    def send(self, topic: str, value: bytes, key: bytes | None) -> None:
        """Send one record inside the current transaction (beginning one if needed)."""
        if self._out is not None and self._out.failed:
            raise self._error(topic)
        self._begin()
        self._out.send(topic, value, key)

    def flush(self, topic: str = "outputs") -> None:
        """Wait for every record sent; :class:`~connectors.kafka.DeliveryError` if any failed."""
        if not self._closed and self._out is not None:
            self._out.flush(self._block_s)
            if self._out.failed:
                raise self._error(topic)

    def commit(self, positions: dict[str, int], metadata: str = "") -> None:
        """Add the offsets of ``positions`` (assigned partitions) to the transaction and commit it."""
        self._begin()
        producer = self._out.producer
        offsets = self.source.transaction_offsets(positions, metadata)
        try:
            if offsets:
                self._send_offsets(producer, offsets, self.source.group_metadata())
            producer.commit_transaction(self._block_s)
        except self._ck.KafkaException as exc:
            self._raise(exc, "committing the transaction")
        self._in_transaction = False
        self.commits += 1

    def _send_offsets(self, producer, offsets, group_metadata) -> None:
        """``send_offsets_to_transaction``, given up on past ``max_block_ms`` + :attr:`GRACE_S` (module docstring)."""
        done = threading.Event()
        failure: list[BaseException] = []

        def call():
            try:
                producer.send_offsets_to_transaction(offsets, group_metadata, self._block_s)
            except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
                failure.append(exc)
            finally:
                done.set()

        threading.Thread(target=call, name="stream-nb-send-offsets", daemon=True).start()
        if not done.wait(self._block_s + self.GRACE_S):
            self._stuck = True
            raise TimeoutError(f"Kafka transactional producer {self.transactional_id!r}: adding the offsets to the "
                               f"transaction did not return within max_block_ms ({self._block_s * 1000:.0f} ms) + "
                               f"{self.GRACE_S:.0f} s; the producer is replaced")
        if failure:
            raise failure[0]

    def abort(self) -> None:
        """Abort the open transaction, if any, and forget its delivery failures (see the module docstring)."""
        if self._in_transaction:
            try:
                if self._stuck:  # a call still hangs inside librdkafka: any other transactional call would conflict
                    raise self._ck.KafkaException(self._ck.KafkaError(
                        self._ck.KafkaError._TIMED_OUT, "a transactional call never returned"))
                self._out.producer.abort_transaction(self._block_s)
            except self._ck.KafkaException as exc:
                err = kafka_error(exc)
                try:
                    self._raise(exc, "aborting the transaction")
                except TransactionFenced:
                    raise
                except self._ck.KafkaException:
                    pass
                log.warning("Kafka exactly-once outputs: aborting failed (%s); replacing the producer, which "
                            "aborts the transaction on the broker", err.str() if err is not None else exc)
                self._stuck = False  # the stuck call stays with the old producer, which the new one fences
                old, self._out = self._out, None
                self._in_transaction = False
                try:
                    old.producer.purge()
                    old.producer.flush(0)
                except Exception:  # noqa: BLE001 - the old producer is broken anyway
                    log.debug("letting the old transactional producer go failed", exc_info=True)
                self._out = self._new_producer()
            self._in_transaction = False
        if not self._closed:  # a replacement that failed (broker away) is retried here, not at the next send
            self._live()
        self.aborts += 1
        if self._out is not None:
            self._out.failed = 0
            self._out.first_error = None

    @property
    def in_flight(self) -> int:
        """Records sent and neither acknowledged nor failed yet."""
        return self._out.in_flight if self._out is not None else 0

    def acquire(self) -> None:
        self._users += 1

    def release(self) -> None:
        """Let the producer go when the last sink using it closes (an open transaction is aborted)."""
        self._users -= 1
        if self._users > 0 or self._closed:
            return
        self._closed = True
        if self._out is None:
            return
        try:
            if self._in_transaction:
                self._out.producer.abort_transaction(self._block_s)
                self._in_transaction = False
        except self._ck.KafkaException as exc:
            log.warning("Kafka exactly-once outputs: aborting the open transaction at close failed: %s", exc)
        finally:
            self._out.producer.flush(0)

    def _error(self, topic: str) -> DeliveryError:
        first = self._out.first_error if self._out is not None else None
        failed = self._out.failed if self._out is not None else 0
        return DeliveryError(
            f"Kafka transactional producer {self.transactional_id!r}: {failed} record(s) were not "
            f"delivered; first error: {first.str() if first is not None else None}; the transaction will be aborted",
            topic=topic, failed=failed,
        )
