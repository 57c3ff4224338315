"""The confluent-kafka adapter (:mod:`._adapter`): the one module that imports confluent-kafka, on first use.

librdkafka serves every callback on the thread calling ``poll``/``consume``/``flush``
(``calls_back_on_poll``); see the docs' *Kafka clients* page for how each adapter works.
"""

from __future__ import annotations

import collections
import itertools
import logging
import operator
import time

from stream_nb.exceptions import ConfigError

from ._adapter import TP, Assignment, Failures, Polled
from ._client import CONSUMER_ONLY, LIBRDKAFKA_FIXED, PRODUCER_ONLY, TO_LIBRDKAFKA, librdkafka_config
from ._errors import PRODUCER_FENCED, ConnectorUnavailable, DeliveryError, no_broker

__all__ = ["Confluent", "INSTALL", "library"]

log = logging.getLogger("connectors.kafka")
#: The command that makes ``--kafka-client confluent`` available.
INSTALL = "pip install 'stream-nb[confluent]'"
_INVALID = -1001  # librdkafka's OFFSET_INVALID: no position yet


def library():
    """The ``confluent_kafka`` module; a one-line :class:`ConfigError` with the install command if missing."""
    try:
        import confluent_kafka  # optional library (the [confluent] extra): loaded only when chosen
    except ImportError:
        raise ConfigError(f"--kafka-client confluent needs the confluent-kafka package: {INSTALL}") from None
    return confluent_kafka


def kafka_error(exc: BaseException):
    """The ``KafkaError`` inside a confluent-kafka exception, or ``None``."""
    args = getattr(exc, "args", ())
    return args[0] if args and hasattr(args[0], "code") else None


def create(factory, conf: dict, *, role: str):
    """A confluent-kafka client; a property librdkafka rejects is a :class:`ConfigError` naming it."""
    try:
        return factory(conf)
    except (library().KafkaException, ValueError, TypeError) as exc:
        raise ConfigError(f"Kafka {role}: invalid configuration: {_text(exc)}") from None


def wait_for_broker(client, cfg: dict, *, role: str, topic: str | None = None):
    """Cluster metadata (of ``topic`` if given) within ``bootstrap_timeout_ms``, else :class:`ConnectorUnavailable`.

    librdkafka never fails at creation when no broker answers (it keeps reconnecting), so start-up asks.
    """
    timeout_s = cfg["bootstrap_timeout_ms"] / 1000
    try:
        return client.list_topics(topic, timeout=timeout_s) if topic else client.list_topics(timeout=timeout_s)
    except library().KafkaException as exc:
        err = kafka_error(exc)
        raise no_broker(role, cfg["bootstrap_servers"], cfg["bootstrap_timeout_ms"],
                        err.name() if err is not None else type(exc).__name__) from None


def _text(error) -> str:
    err = kafka_error(error) if isinstance(error, BaseException) else error
    return err.str() if err is not None and hasattr(err, "str") else repr(error)


def _count(metadata, topic: str | None) -> int | None:
    found = metadata.topics.get(topic) if topic else None
    return len(found.partitions) if found is not None and found.error is None and found.partitions else None


class _Consumer:
    """A ``confluent_kafka.Consumer`` as the :class:`~._adapter.Consumer`; it keeps the assignment."""

    calls_back_on_poll = True
    _failed: Exception | None = None  # a rebalance callback's error, raised by the next poll or close
    _one_topic: str | None = None  # subscribed to this one topic (not a pattern): every record is of it

    def __init__(self, ck, conf: dict, cfg: dict, role: str, reader: str | None = None):
        self._ck, self._cfg, self._role, self.errors = ck, cfg, role, (ck.KafkaException,)
        self._what = "Kafka source" if reader is None else f"Kafka model topic {reader!r}"
        strategy = str(conf.get("partition.assignment.strategy", ""))
        incremental = "cooperative" in strategy or str(conf.get("group.protocol", "")).lower() == "consumer"
        self._assignment = Assignment(incremental)
        self._eof: dict[TP, int] = {}  # a reader's end of each partition, at its last end event
        self._down = False  # librdkafka said all brokers are down; cleared once one answers
        if reader is None:  # a reader (of one topic, in no group) leaves librdkafka's errors to its log
            conf["error_cb"] = self._on_client_error
        self._c = create(ck.Consumer, conf, role=role)
        self._listener = None

    def _tps(self, partitions, offsets=None) -> list:
        return [self._ck.TopicPartition(*p, *(() if offsets is None or p not in offsets else (offsets[p],)))
                for p in sorted(partitions)]

    def subscribe(self, topics, listener):
        self._listener = listener
        self._one_topic = topics[0] if len(topics) == 1 and not topics[0].startswith("^") else None
        self._c.subscribe(topics, on_assign=self._kept(self._on_assign), on_revoke=self._kept(self._on_revoke),
                          on_lost=self._kept(self._on_lost))

    def _kept(self, callback):
        """``callback`` for librdkafka, its error kept for :meth:`_raise_kept`: an exception must not pass back into
        confluent-kafka, which (on Python 3.11) raises one set by C code, such as a builtin's, as ``SystemError:
        _PyErr_SetObject: exception <class 'str'> is not a BaseException subclass``, losing it."""
        def called_back(consumer, tps):
            try:
                callback(consumer, tps)
            except Exception as exc:  # noqa: BLE001 - raised by the next poll or close, on this thread
                self._failed = self._failed or exc
        return called_back

    def _raise_kept(self):
        if self._failed is not None:
            exc, self._failed = self._failed, None
            raise exc

    def _on_assign(self, consumer, tps):
        partitions = [(tp.topic, tp.partition) for tp in tps]
        starts, held = self._assignment.assigned(partitions, self._listener)
        assign = consumer.incremental_assign if self._assignment.incremental else consumer.assign
        assign(self._tps(partitions, starts))
        if held:
            self.pause(held)

    def _gone(self, consumer, tps) -> list[TP]:
        partitions = sorted((tp.topic, tp.partition) for tp in tps)
        self._assignment.gone(partitions, self)  # librdkafka keeps a partition's pause through its revocation
        if self._assignment.incremental:
            consumer.incremental_unassign(tps)
        else:
            consumer.unassign()
        return partitions

    def _on_revoke(self, consumer, tps):
        self._listener.revoked(sorted((tp.topic, tp.partition) for tp in tps))  # on this thread: it commits itself
        self._gone(consumer, tps)

    def _on_lost(self, consumer, tps):
        self._listener.lost(self._gone(consumer, tps))

    def _on_client_error(self, error) -> None:  # served inside consume(), on the polling thread
        if error.code() in (self._ck.KafkaError._ALL_BROKERS_DOWN, self._ck.KafkaError._TRANSPORT):
            self._down = True
        (log.error if error.fatal() else log.debug)("Kafka source: client error: %s", error.str())

    def _keep(self, message) -> bool:
        """Whether a message is a record; an error one is reported (a fatal one raised), an end one noted."""
        error = message.error()
        if error is None:
            return True
        if error.code() == self._ck.KafkaError._PARTITION_EOF:  # a reader's (enable.partition.eof)
            self._eof[(message.topic(), message.partition())] = message.offset()
        elif error.code() == self._ck.KafkaError.UNKNOWN_TOPIC_OR_PART:
            log.warning("%s: topic %r does not exist (yet); waiting for it", self._what, message.topic())
        elif error.fatal():
            raise ConnectorUnavailable(f"{self._what}: fatal consumer error: {error.str()}")
        else:
            log.warning("%s: %s", self._what, error.str())
        return False

    def poll(self, max_records, timeout):
        # Like kafka-python's poll: return as soon as any record is there, with what is there.
        # (consume(n, timeout) alone would wait for n records or the whole timeout.)
        consume, n = self._c.consume, max(1, max_records)
        messages = consume(n, 0)
        if not messages:
            first = self._c.poll(max(0.0, timeout)) if timeout > 0 else None
            self._raise_kept()
            if first is None:
                return None
            messages = [first, *consume(n - 1, 0)] if n > 1 else [first]
        self._raise_kept()
        self._down = False
        message = self._ck.Message
        if any(map(message.error, messages)):
            messages = list(filter(self._keep, messages))
        if self._one_topic is not None:  # no topic read from each record
            return Polled([self._one_topic] * len(messages),
                          *(list(map(field, messages)) for field in (message.partition, message.offset, message.key,
                                                                       message.value)))
        return Polled.of(messages, (message.topic, message.partition, message.offset, message.key, message.value))

    def assignment(self):
        return set(self._assignment.owned)

    def commit(self, offsets, metadata, timeout):
        if offsets:
            tps = [self._ck.TopicPartition(*p, o, metadata) for p, o in sorted(offsets.items())]
            failed = [tp.error for tp in self._c.commit(offsets=tps, asynchronous=False) or () if tp.error]
            if failed:
                raise self._ck.KafkaException(failed[0])

    def committed(self, partitions, timeout):
        out = {}
        for tp in self._c.committed(self._tps(partitions), timeout=timeout):
            if tp.error is not None:
                raise self._ck.KafkaException(tp.error)
            out[(tp.topic, tp.partition)] = (tp.offset, tp.metadata)
        return out

    def assign(self, partitions):
        self._c.assign([self._ck.TopicPartition(*p, self._ck.OFFSET_BEGINNING) for p in partitions])

    def offset(self, partition):
        # read_committed ends with transaction markers, never returned: the end event says they were read
        return max(0, self._c.position(self._tps([partition]))[0].offset, self._eof.get(partition, -1))

    def end_offsets(self, partitions, timeout):
        timeout = self._cfg["bootstrap_timeout_ms"] / 1000 if timeout is None else max(0.001, timeout)
        return {p: self._c.get_watermark_offsets(self._ck.TopicPartition(*p), timeout=timeout, cached=False)[1]
                for p in partitions}

    def seek(self, partition, offset):
        self._c.seek(self._ck.TopicPartition(*partition, offset))

    def pause(self, partitions):
        self._assignment.held |= set(partitions)
        self._c.pause(self._tps(partitions))

    def resume(self, partitions):
        self._assignment.held -= set(partitions)
        self._c.resume(self._tps(partitions))

    def positions(self, partitions, timeout):
        """The high watermark of a partition being fetched comes with every fetch (cached: no request); a
        paused partition's, or any after the brokers were reported down, is asked for."""
        positions = {(tp.topic, tp.partition): tp.offset for tp in self._c.position(self._tps(partitions))}
        watermarks, out = self._c.get_watermark_offsets, {}
        for partition in partitions:
            tp, high = self._ck.TopicPartition(*partition), _INVALID
            if not (self._down or partition in self._assignment.held):
                high = watermarks(tp, cached=True)[1]
            if high is None or high < 0:
                high = watermarks(tp, timeout=max(0.001, timeout), cached=False)[1]
                self._down = False  # answered
            out[partition] = positions.get(partition), high
        return out

    def partition_count(self, topic):
        return _count(wait_for_broker(self._c, self._cfg, role=self._role, topic=topic), topic)

    def group_metadata(self):
        return self._c.consumer_group_metadata()

    def close(self, timeout):
        self._c.close()
        self._raise_kept()


class _Producer(Failures):
    """A ``confluent_kafka.Producer`` as the :class:`~._adapter.Producer`, counting failed delivery reports."""

    def __init__(self, ck, conf: dict, cfg: dict, *, role: str, what: str):
        self._ck, self.errors, self.what = ck, (ck.KafkaException,), what
        self._block_s = cfg["max_block_ms"] / 1000
        self._p = create(ck.Producer, {**conf, "on_delivery": self._on_delivery}, role=role)
        try:
            wait_for_broker(self._p, cfg, role=role)
        except BaseException:
            self._p.flush(0)
            raise
        self._produce, self._poll = self._p.produce, self._p.poll

    def _on_delivery(self, err, msg) -> None:  # served by poll()/flush() on the caller's thread; only failures
        if err is not None:
            self.count(err, err.str(), f" to topic {msg.topic()!r}")

    @property
    def in_flight(self):
        self._poll(0)  # librdkafka counts a record until its report is served, even when not reported
        return len(self._p)

    def send(self, topic, value, key):
        try:
            self._produce(topic, value, key)
        except BufferError:  # librdkafka's queue is full: serve delivery reports until there is room
            deadline = time.monotonic() + self._block_s
            while True:
                self._poll(0.05)
                try:
                    return self._produce(topic, value, key)
                except BufferError:
                    if time.monotonic() > deadline:
                        raise DeliveryError(f"{self.what}: librdkafka's queue stayed full for max_block_ms "
                                            f"({self._block_s * 1000:.0f} ms)", topic=topic, failed=0) from None

    def send_many(self, topic, values, keys):
        # produce() serves no delivery report, so no failure shows until a wait for room (send) serves them
        rest, rest_keys = iter(values), iter(keys)
        while not self.failed:
            try:
                collections.deque(map(self._produce, itertools.repeat(topic), rest, rest_keys), 0)  # no Python per record
                return
            except BufferError:
                i = len(values) - operator.length_hint(rest) - 1  # the value produce() refused
                self.send(topic, values[i], keys[i])

    def flush(self, timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while (left := self._p.flush(1.0)) and (deadline is None or time.monotonic() <= deadline):
            continue
        if left:
            raise DeliveryError(f"{self.what}: {left} record(s) not acknowledged within {timeout} s",
                                topic=self.what, failed=left)

    def close(self, timeout):
        if not timeout:
            self._p.purge()
        self._p.flush(timeout)

    def init_transactions(self):
        self._p.init_transactions(self._block_s)

    def unreachable(self, error):
        err = kafka_error(error)
        return err is not None and err.retriable()

    def begin(self):
        self._p.begin_transaction()

    def send_offsets(self, offsets, metadata, group):
        tps = [self._ck.TopicPartition(*p, o, metadata) for p, o in sorted(offsets.items())]
        self._p.send_offsets_to_transaction(tps, group, self._block_s)

    def commit_transaction(self):
        self._p.commit_transaction(self._block_s)

    def abort_transaction(self):
        self._p.abort_transaction(self._block_s)


class _Admin:
    """An ``AdminClient`` as the :class:`~._adapter.Admin` (topic counts from cluster metadata)."""

    def __init__(self, ck, cfg: dict, role: str):
        from confluent_kafka.admin import AdminClient, NewTopic  # optional library, loaded with library()

        self._ck, self._new = ck, NewTopic
        self._a = create(AdminClient, librdkafka_config(cfg, "admin"), role=role)
        self._timeout_s = cfg["bootstrap_timeout_ms"] / 1000
        wait_for_broker(self._a, cfg, role=role)

    def partition_counts(self, topics):
        metadata = self._a.list_topics(timeout=self._timeout_s)
        return {topic: _count(metadata, topic) for topic in topics}

    def create_topic(self, topic, partitions, replication, configs, timeout):
        spec = self._new(topic, num_partitions=partitions, replication_factor=replication, config=configs)
        self._a.create_topics([spec], request_timeout=timeout)[topic].result(timeout=timeout)

    def close(self):
        """Nothing: librdkafka's admin client closes when it goes."""


class Confluent:
    """confluent-kafka as the connector's :class:`~._adapter.Adapter`; the library is loaded when one is made."""

    name, label, dotted = "confluent", " (confluent)", True
    consumer_keys = dict.fromkeys(TO_LIBRDKAFKA.keys() - PRODUCER_ONLY)
    producer_keys = dict.fromkeys(TO_LIBRDKAFKA.keys() - CONSUMER_ONLY)
    consumer_fixed, producer_fixed = LIBRDKAFKA_FIXED["consumer"], LIBRDKAFKA_FIXED["producer"]
    #: ``max_block_ms`` (kafka-python's name): how long a send waits for room in librdkafka's queue, and the
    #: bound of the transactional calls.
    producer_defaults = {"max_block_ms": 60_000}

    def __init__(self):
        self._ck = library()
        self.errors = (self._ck.KafkaException,)

    def describe(self, error) -> str:
        return _text(error)

    def code(self, error):
        err = kafka_error(error)
        if err is None:
            return None
        # a producer fenced by the broker fails its later calls with librdkafka's own (local) _FENCED
        return PRODUCER_FENCED if err.code() == self._ck.KafkaError._FENCED else err.code()

    def consumer(self, cfg, *, role, range_assignor):
        return _Consumer(self._ck, librdkafka_config(cfg, "consumer", range_assignor=range_assignor), cfg, role)

    def producer(self, cfg, *, role, what):
        return _Producer(self._ck, librdkafka_config(cfg, "producer"), cfg, role=role, what=what)

    def reader(self, topic, cfg):
        """A consumer in no group."""
        conf = librdkafka_config(cfg, "reader")
        return _Consumer(self._ck, conf, cfg, f"reader of model topic {topic!r}", reader=topic)

    def admin(self, cfg, *, role):
        return _Admin(self._ck, cfg, role)
