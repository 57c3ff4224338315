"""Exactly-once outputs: predictions, dead letters and input offsets in one Kafka transaction.

``stream-nb run --exactly-once`` builds its connectors with
:func:`make_connectors`: a ``read_committed`` :class:`~connectors.kafka.KafkaSource`,
and two :class:`TransactionalSink` views (outputs, dead letters) of one
:class:`Transaction`, a transactional producer of the same client library. A
transaction begins with the first output after the previous commit;
:meth:`Transaction.commit` adds the consumed offsets, with the consumer's group
metadata, and commits. Every transactional call is bounded by ``max_block_ms``;
adding the offsets runs on a helper thread and counts as stuck past
``max_block_ms`` plus :data:`GRACE_S`. A producer that cannot abort is replaced
(its registration aborts the transaction on the broker); a fenced one raises
:class:`TransactionFenced`. The docs' *Operations* page gives the guarantees.
"""

from __future__ import annotations

import logging
import threading
import time

from stream_nb.exceptions import CommitError, ConfigError

from ._client import resolve_for, servers
from ._errors import FENCED, ConnectorUnavailable, DeliveryError
from ._factories import client_of, split
from ._sink import KafkaSink
from ._source import KafkaSource
from ._topics import ensure_topic

__all__ = ["GRACE_S", "Transaction", "TransactionFenced", "TransactionalSink", "make_connectors"]

log = logging.getLogger(__name__)

#: Seconds past ``max_block_ms`` before adding the offsets to a transaction, not returned yet, counts as stuck.
GRACE_S = 5.0


def _within(timeout: float, call) -> tuple[bool, BaseException | None]:
    """Run ``call()`` on a daemon thread, waiting at most ``timeout`` s: ``(returned, the exception it raised)``.

    A call that has not returned goes on, and ends on its own.
    """
    done, failure = threading.Event(), []

    def run():
        try:
            call()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            failure.append(exc)
        finally:
            done.set()

    threading.Thread(target=run, name="stream-nb-send-offsets", daemon=True).start()
    returned = done.wait(timeout)
    return returned, (failure[0] if failure else None)


class TransactionFenced(DeliveryError):
    """Another producer with this transactional id took over (or the id may not be used): stop."""


class Transaction:
    """One transactional producer shared by the daemon's sinks; see the module docstring.

    Parameters
    ----------
    source
        The :class:`~connectors.kafka.KafkaSource` whose offsets each transaction commits; the
        producer is of its client library.
    topics
        The topics written (created when missing, as :class:`~connectors.kafka.KafkaSink` does).
    config
        :class:`~connectors.kafka.KafkaSink` keys and the client's producer keys;
        ``transactional_id`` is required.
    """

    #: The sink's fixed producer keys, except ``transactional_id``: required here.
    FIXED = {k: v for k, v in KafkaSink.FIXED.items() if k != "transactional_id"}

    def __init__(self, source: KafkaSource, topics: list[str], config: dict):
        transactional_id = config.get("transactional_id")
        if not isinstance(transactional_id, str) or not transactional_id:
            raise ConfigError(f"exactly-once outputs need a transactional_id, got {transactional_id!r}")
        self.client = client = source.client
        cfg = resolve_for(client, f"Kafka transactional producer{client.label}",
                          {**KafkaSink.DEFAULT_CONFIG, **client.producer_defaults}, self.FIXED,
                          {**config, "topic": topics[0]}, role="producer")
        self.source = source
        source.track_membership()  # the offsets it sends carry the generation their records were read under
        self.transactional_id = transactional_id
        self._close_timeout_s = cfg["close_timeout_ms"] / 1000
        if cfg["create_topic"]:
            for topic in dict.fromkeys(topics):
                ensure_topic(client, topic, cfg, role=f"admin client (topic {topic!r})")
        self._client_cfg = {k: v for k, v in cfg.items() if k not in KafkaSink.OWN_KEYS}
        self._what = f"Kafka transactional producer {transactional_id!r}"
        self._block_s = cfg.get("max_block_ms", 60_000) / 1000
        #: How long the broker lets a transaction stay open before it aborts it (``transaction_timeout_ms``).
        self.timeout_s = int(cfg.get("transaction_timeout_ms", cfg.get("transaction.timeout.ms", 60_000))) / 1000
        self._out = None
        self._out = self._new_producer()
        self._in_transaction = False
        self._stuck = False  # a transactional call never returned: the producer is replaced, not aborted
        self._users = 0
        self._closed = False
        self.commits = 0
        self.aborts = 0
        log.info("Kafka exactly-once outputs%s: transactional id %r, bootstrap %s", client.label, transactional_id,
                 servers(cfg["bootstrap_servers"]))

    def _new_producer(self):
        """A transactional producer, registered: ``init_transactions`` aborts what a predecessor left open."""
        out = self.client.producer(self._client_cfg, role=f"transactional producer {self.transactional_id!r}",
                                   what=self._what)
        # A broker just (re)started answers "coordinator load in progress" for a while: such errors are retried
        # for up to 30 s (or max_block_ms), then the broker counts as unreachable (the daemon retries).
        deadline = time.monotonic() + max(30.0, self._block_s)
        while True:
            try:
                self._call(out.init_transactions, "registering the transactional id", out)
                return out
            except out.errors as exc:
                if out.unreachable(exc) and time.monotonic() < deadline:
                    log.info("Kafka exactly-once outputs: registering %r: %s; retrying", self.transactional_id,
                             self.client.describe(exc))
                    time.sleep(0.2)
                    continue
                out.close(0)
                if not out.unreachable(exc):
                    raise
                raise ConnectorUnavailable(f"{self._what}: registering the transactional id failed: "
                                           f"{self.client.describe(exc)}",
                                           bootstrap_servers=servers(self._client_cfg.get("bootstrap_servers"))) from exc
            except BaseException:
                out.close(0)
                raise

    def _live(self):
        """The producer; a new registered one when a failed abort could not replace the last one.

        A broker that stays down past ``bootstrap_timeout_ms`` makes :meth:`abort`
        raise with no producer left; the next send or commit registers again
        (aborting on the broker what the lost producer left open) instead of
        failing on the missing producer.
        """
        if self._out is None:
            self._out = self._new_producer()
        return self._out

    def _call(self, call, what: str, out=None):
        """``call()``; a fencing error (a code of :data:`._errors.FENCED`) raised as :class:`TransactionFenced`."""
        out = out if out is not None else self._out
        try:
            return call()
        except out.errors as exc:
            if self.client.code(exc) in FENCED:
                raise TransactionFenced(f"{self._what}: {what} failed: {self.client.describe(exc)}; another "
                                        f"instance uses this transactional id", topic="outputs", failed=0) from exc
            raise

    def _begin(self) -> None:
        if not self._in_transaction:
            out = self._live()
            self._call(out.begin, "beginning a transaction")
            self._in_transaction = True

    def send(self, topic: str, value: bytes, key: bytes | None) -> None:
        """Send one record inside the current transaction (beginning one if needed)."""
        if self._out is not None and self._out.failed:
            raise self._error(topic)
        self._begin()
        self._out.send(topic, value, key)
        if self._out.failed:
            raise self._error(topic)

    def flush(self, topic: str = "outputs") -> None:
        """Wait for every record sent; :class:`~connectors.kafka.DeliveryError` if any failed."""
        if not self._closed and self._out is not None:
            self._out.flush(self._block_s)
            if self._out.failed:
                raise self._error(topic)

    def commit(self, positions: dict[str, int], metadata: str = "") -> None:
        """Add the offsets of ``positions`` to the transaction and commit it.

        Every partition of ``positions`` must still be assigned to the source: the outputs of a partition
        whose offset cannot join them (its membership was lost to the group since its records were read)
        are not committed without it. :class:`~stream_nb.exceptions.CommitError` then, and the caller
        aborts; the partition's next owner reads those records again from the last committed offset.
        """
        self._begin()
        out = self._out
        offsets = self.source.transaction_offsets(positions, metadata)
        if len(offsets) < len(positions):
            gone = sorted(set(positions) - self.source.assignment) or sorted(positions)
            raise CommitError(f"{self._what}: {', '.join(gone)} no longer assigned to this consumer (its group "
                              f"membership was lost): their offsets cannot be committed with the outputs of "
                              f"their records, so the transaction is not committed")
        if offsets:
            self._call(lambda: self._send_offsets(out, offsets, metadata), "adding the offsets to the transaction")
        self._call(out.commit_transaction, "committing the transaction")
        self._in_transaction = False
        self.commits += 1

    def _send_offsets(self, out, offsets: dict, metadata: str) -> None:
        """``out.send_offsets`` on a helper thread, waited for at most ``max_block_ms`` + :data:`GRACE_S`."""
        group = self.source.group_metadata()
        returned, failure = _within(self._block_s + GRACE_S, lambda: out.send_offsets(offsets, metadata, group))
        if not returned:
            self._stuck = True
            raise TimeoutError(f"{self._what}: adding the offsets to the transaction did not return within "
                               f"max_block_ms ({self._block_s * 1000:.0f} ms) + {GRACE_S:.0f} s; the producer is "
                               f"replaced")
        if failure is not None:
            raise failure

    def abort(self) -> None:
        """Abort the open transaction, if any, and forget its delivery failures (see the module docstring)."""
        if self._in_transaction:
            try:
                if self._stuck:  # a call still hangs inside the client: another transactional call would conflict
                    raise TimeoutError("a transactional call never returned")
                self._call(self._out.abort_transaction, "aborting the transaction")
            except (TimeoutError, *self._out.errors) as exc:
                log.warning("Kafka exactly-once outputs: aborting failed (%s); replacing the producer, which "
                            "aborts the transaction on the broker", self.client.describe(exc))
                old, self._out = self._out, None
                self._in_transaction = self._stuck = False  # the old transaction is gone with its producer
                try:
                    old.close(0)
                except Exception:  # noqa: BLE001 - the old producer is broken anyway
                    log.debug("letting the old transactional producer go failed", exc_info=True)
                self._out = self._new_producer()
            self._in_transaction = False
        if not self._closed:  # a replacement that failed (broker away) is retried here, not at the next send
            self._live()
        self.aborts += 1
        if self._out is not None:
            self._out.forget()

    @property
    def in_flight(self) -> int:
        """Records sent and neither acknowledged nor failed yet."""
        return self._out.in_flight if self._out is not None else 0

    def acquire(self) -> None:
        self._users += 1

    def release(self) -> None:
        """Close the producer when the last sink using it closes (an open transaction is aborted)."""
        self._users -= 1
        if self._users > 0 or self._closed:
            return
        self._closed = True
        if self._out is None:  # a failed abort left none: nothing is open
            return
        wait = 0 if self._stuck else self._close_timeout_s
        try:
            if self._in_transaction and not self._stuck:
                self._out.abort_transaction()
                self._in_transaction = False
        except self._out.errors as exc:
            log.warning("Kafka exactly-once outputs: aborting the open transaction at close failed: %s",
                        self.client.describe(exc))
            wait = 0
        finally:
            self._out.close(wait)

    def _error(self, topic: str) -> DeliveryError:
        out = self._out
        return DeliveryError(
            f"Kafka transactional producer {self.transactional_id!r}: {out.failed} record(s) were not "
            f"delivered; first error: {self.client.describe(out.first_error)}; the transaction will be aborted",
            topic=topic, failed=out.failed,
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
    transaction's producer confluent-kafka's.
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
        txn = Transaction(source, [output, dead], {**sink_cfg, "partitions_like": config["input_topic"]})
    except BaseException:
        source.close()
        raise
    return source, TransactionalSink(txn, output), TransactionalSink(txn, dead)

