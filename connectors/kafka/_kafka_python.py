"""The kafka-python adapter (:mod:`._adapter`): the one module of the connector that imports kafka-python.

kafka-python calls back on its IO thread, which also heartbeats; see the docs'
*Kafka clients* page for how each adapter works.
"""

from __future__ import annotations

import itertools
import logging
import operator
import time

import kafka.errors as Errors
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from kafka.consumer.subscription_state import AsyncConsumerRebalanceListener
from kafka.coordinator.base import MemberState
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.partitioner.default import DefaultPartitioner
from kafka.structs import OffsetAndMetadata

from stream_nb.exceptions import ConfigError

from ._adapter import BEGINNING, END, TP, Acknowledged, Listener, Polled
from ._client import KAFKA_PYTHON_FIXED
from ._errors import no_broker
from ._partitions import partitions_of

__all__ = ["KafkaPython"]

log = logging.getLogger("connectors.kafka")

# kafka-python's own client factory (KafkaNetClient); wrapped by connect().
_NET_CLIENT = KafkaConsumer.DEFAULT_CONFIG["kafka_client"]
_UNAVAILABLE = (Errors.KafkaTimeoutError, Errors.KafkaConnectionError)  # no bootstrap server answered
_FIELDS = tuple(map(operator.attrgetter, ("topic", "partition", "offset", "key", "value")))  # of a ConsumerRecord


def connect(factory, cfg: dict, *, role: str):
    """A kafka-python client of the keys of ``cfg`` it takes; "no broker" is :class:`ConnectorUnavailable`, a
    bad setting ``ConfigError``.

    kafka-python starts an IO thread before bootstrapping and leaves it running
    when bootstrap fails; the ``kafka_client`` hook closes it, so that a caller
    retrying in a loop does not leak one thread per attempt.
    """
    config, created = {k: v for k, v in cfg.items() if k in factory.DEFAULT_CONFIG}, []

    def kafka_client(**kwargs):
        created.append(_NET_CLIENT(**kwargs))
        return created[-1]

    try:
        return factory(kafka_client=kafka_client, **config)
    except BaseException as exc:
        for client in created:
            try:
                client.close()
            except Exception:  # noqa: BLE001 - best effort cleanup of a half-built client
                log.debug("closing a half-built Kafka client failed", exc_info=True)
        if isinstance(exc, _UNAVAILABLE):
            waited = config.get("bootstrap_timeout_ms", factory.DEFAULT_CONFIG.get("bootstrap_timeout_ms"))
            raise no_broker(role, config.get("bootstrap_servers"), waited, type(exc).__name__) from exc
        if isinstance(exc, (Errors.KafkaConfigurationError, ValueError, TypeError)):
            raise ConfigError(f"Kafka {role}: invalid configuration: {exc}") from exc
        raise


def _tp(partition: TP) -> TopicPartition:
    return TopicPartition(*partition)


class _Rebalance(AsyncConsumerRebalanceListener):
    """kafka-python's rebalance callbacks, awaited on its IO thread, handed to the source's :class:`Listener`.

    A revocation's commit is awaited at most ``session_timeout_ms`` (kafka-python
    without a bounded commit: ``commit_async``, unbounded).
    """

    def __init__(self, consumer: KafkaConsumer, listener: Listener):
        self._consumer, self._listener = consumer, listener
        self._deadline_ms = consumer.config["session_timeout_ms"]
        self._commit_within = getattr(getattr(consumer, "_coordinator", None), "_commit_offsets_sync_async", None)

    async def on_partitions_revoked(self, revoked):
        request = self._listener.revoked(sorted(revoked))
        if request is None:
            return
        offsets = {_tp(p): OffsetAndMetadata(offset, request.metadata, -1) for p, offset in request.offsets.items()}
        try:
            if self._commit_within is None:
                await self._consumer.commit_async(offsets)
            else:
                await self._commit_within(offsets, timeout_ms=self._deadline_ms)
        except Errors.KafkaTimeoutError as exc:  # the new owner resumes from the partition's last commit or state
            request.finish(Errors.KafkaTimeoutError(
                f"the commit did not complete within session_timeout_ms ({self._deadline_ms} ms): {exc}"))
            return
        except Exception as exc:  # noqa: BLE001 - the new owner resumes from the partition's last commit or state
            request.finish(exc)
            return
        request.finish(None)

    async def on_partitions_assigned(self, assigned):
        starts, held = self._listener.assigned(sorted(assigned))
        # one paused before a revocation and assigned again keeps its pause here: it starts unpaused
        self._consumer.resume(*(tp for tp in assigned if tp not in held))
        for partition, offset in starts.items():
            self._consumer.seek(_tp(partition), offset)
        if held:  # no record of theirs until the polling thread positioned them
            self._consumer.pause(*map(_tp, held))

    async def on_partitions_lost(self, lost):
        self._listener.lost(sorted(lost))


class _Consumer:
    """A ``KafkaConsumer`` as the source's :class:`~._adapter.Consumer`."""

    errors = (Errors.KafkaError,)
    calls_back_on_poll = False

    def __init__(self, consumer: KafkaConsumer):
        self._c = consumer

    def subscribe(self, topics, listener):
        self._c.subscribe(topics, listener=_Rebalance(self._c, listener))

    def poll(self, max_records, timeout):
        batches = self._c.poll(timeout_ms=max(0, int(timeout * 1000)), max_records=max_records)
        if not batches:
            self._rejoin_if_the_join_was_dropped()
            return None
        return Polled.of(list(itertools.chain.from_iterable(batches.values())), _FIELDS)

    def _rejoin_if_the_join_was_dropped(self):
        """kafka-python finishes a join (the new assignment, the listener, heartbeats) in the poll awaiting it; if
        that poll's time ran out as the SyncGroup answer came, and the join was asked for by a change of the
        leader's metadata (a restarted broker, a partition added), no later poll takes it up: the member
        would fetch nothing and send no heartbeat, for good. Such a join is asked for again."""
        coordinator = getattr(self._c, "_coordinator", None)
        task = getattr(coordinator, "_join_task", None)
        if (task is not None and task.is_done and coordinator.state is not MemberState.STABLE
                and not coordinator.need_rejoin()):
            log.warning("Kafka source: the group join completed after the poll waiting for it gave up; joining again")
            coordinator.request_rejoin()

    def assignment(self):
        return {(tp.topic, tp.partition) for tp in self._c.assignment() or ()}

    def commit(self, offsets, metadata, timeout):
        self._c.commit({_tp(p): OffsetAndMetadata(o, metadata, -1) for p, o in offsets.items()},
                       timeout_ms=int(timeout * 1000))

    def committed(self, partitions, timeout):
        out = {}
        for partition in partitions:
            found = self._c.committed(_tp(partition), metadata=True, timeout_ms=int(timeout * 1000))
            out[partition] = (found.offset, found.metadata) if found is not None else (None, None)
        return out

    def seek(self, partition, offset):
        if offset == BEGINNING:
            self._c.seek_to_beginning(_tp(partition))
        elif offset == END:
            self._c.seek_to_end(_tp(partition))
        else:
            self._c.seek(_tp(partition), offset)

    def pause(self, partitions):
        self._c.pause(*map(_tp, partitions))

    def resume(self, partitions):
        self._c.resume(*map(_tp, partitions))

    def positions(self, partitions, timeout):
        ends, out, timeout_ms = self.end_offsets(partitions, timeout), {}, max(1, int(timeout * 1000))
        for partition in partitions:
            try:
                out[partition] = self._c.position(_tp(partition), timeout_ms=timeout_ms), ends.get(partition)
            except Errors.IllegalStateError:  # revoked meanwhile
                continue
        return out

    def assign(self, partitions):
        self._c.assign(list(map(_tp, partitions)))
        self._c.seek_to_beginning(*map(_tp, partitions))

    def offset(self, partition):
        return self._c.position(_tp(partition))

    def end_offsets(self, partitions, timeout):
        timeout_ms = None if timeout is None else max(1, int(timeout * 1000))
        ends = self._c.end_offsets(list(map(_tp, partitions)), timeout_ms=timeout_ms) if partitions else {}
        return {(tp.topic, tp.partition): offset for tp, offset in ends.items()}

    def partition_count(self, topic):
        found = self._c.partitions_for_topic(topic)
        return len(found) if found else None

    def group_metadata(self):
        return self._c.group_metadata()

    def close(self, timeout):
        self._c.close(autocommit=False, timeout_ms=int(timeout * 1000))


class _Producer(Acknowledged):
    """A ``KafkaProducer`` as the :class:`~._adapter.Producer`: futures count acknowledgements and failures."""

    errors = (Errors.KafkaError,)

    def __init__(self, cfg: dict, *, role: str, what: str):
        self.what = what
        self._block_s = cfg.get("max_block_ms", KafkaProducer.DEFAULT_CONFIG["max_block_ms"]) / 1000
        self._p = connect(KafkaProducer, cfg, role=role)
        self._send = self._p.send
        # with kafka-python's own partitioner, send_many finds a poll's partitions at once (the same ones)
        self._murmur = type(self._p.config["partitioner"]) is DefaultPartitioner

    def send(self, topic, value, key, partition=None):
        try:
            future = self._send(topic, value=value, key=key, partition=partition)
        except Errors.KafkaError as exc:
            self.failure(exc)
            return
        self.track(future)

    def send_many(self, topic, values, keys):
        parts = [None] * len(values)
        if self._murmur and any(key is not None for key in keys):
            try:
                known = self._p.partitions_for(topic)
            except Errors.KafkaError as exc:
                self.failure(exc)
                return
            parts = partitions_of(keys, known) if known else parts
        for value, key, partition in zip(values, keys, parts):
            if self.failed:
                return
            self.send(topic, value, key, partition)

    def flush(self, timeout=None):
        self._p.flush(timeout=timeout)

    def close(self, timeout):
        self._p.close(timeout=timeout)

    def init_transactions(self):
        self._p.init_transactions()

    def unreachable(self, error):  # no transaction coordinator answered within max_block_ms
        return isinstance(error, (Errors.KafkaTimeoutError, Errors.KafkaConnectionError))

    def begin(self):
        self._p.begin_transaction()

    def send_offsets(self, offsets, metadata, group):
        self._complete("adding the offsets to the transaction", "send_offsets_to_transaction",
                       {_tp(p): OffsetAndMetadata(o, metadata, -1) for p, o in offsets.items()}, group)

    def commit_transaction(self):
        self._complete("committing the transaction", "begin_commit")

    def abort_transaction(self):
        self._complete("aborting the transaction", "begin_abort")

    def _complete(self, what: str, start: str, *args) -> None:
        """Start a transactional request on the transaction manager; wait for it at most ``max_block_ms``."""
        manager = getattr(self._p, "_transaction_manager", None)
        sender = getattr(self._p, "_sender", None)
        if manager is None or sender is None or not hasattr(manager, start):  # another kafka-python: no bound
            public = {"begin_commit": "commit_transaction", "begin_abort": "abort_transaction"}.get(start, start)
            getattr(self._p, public)(*args)
            return
        result = getattr(manager, start)(*args)
        sender.wakeup()
        deadline = time.monotonic() + self._block_s
        while not result.wait(timeout_ms=200):  # raises the request's error when it failed
            if time.monotonic() > deadline:
                raise Errors.KafkaTimeoutError(f"{self.what}: {what} did not complete within max_block_ms "
                                               f"({self._block_s * 1000:.0f} ms)")
            sender.wakeup()


class _Admin:
    """A ``KafkaAdminClient`` as the :class:`~._adapter.Admin`."""

    def __init__(self, admin: KafkaAdminClient):
        self._a = admin

    def partition_counts(self, topics):
        return {t["name"]: len(t["partitions"]) if t["error_code"] == 0 and t["partitions"] else None
                for t in self._a.describe_topics(topics)}

    def create_topic(self, topic, partitions, replication, configs, timeout):
        self._a.create_topics([NewTopic(topic, partitions, replication, topic_configs=configs)],
                              timeout_ms=int(timeout * 1000))

    def close(self):
        self._a.close()


class KafkaPython:
    """kafka-python as the connector's :class:`~._adapter.Adapter` (the default client)."""

    name, label, dotted = "kafka-python", "", False
    consumer_keys, producer_keys = KafkaConsumer.DEFAULT_CONFIG, KafkaProducer.DEFAULT_CONFIG
    consumer_fixed, producer_fixed = KAFKA_PYTHON_FIXED["consumer"], KAFKA_PYTHON_FIXED["producer"]
    producer_defaults: dict = {}
    errors = (Errors.KafkaError,)

    def describe(self, error) -> str:
        return repr(error)

    def code(self, error):
        return getattr(error, "errno", None)

    def consumer(self, cfg, *, role, range_assignor):
        cfg = {**cfg, "enable_auto_commit": False}
        if range_assignor:
            cfg["partition_assignment_strategy"] = (RangePartitionAssignor,)
        consumer = connect(KafkaConsumer, cfg, role=role)
        # kafka-python 3.0 takes allow_auto_create_topics but builds its metadata client without
        # it, so every metadata request would allow creation; hand the setting on ourselves
        cluster = getattr(consumer, "_cluster", None)
        if cluster is not None and "allow_auto_create_topics" in getattr(cluster, "config", {}):
            cluster.config["allow_auto_create_topics"] = cfg.get("allow_auto_create_topics", False)
        return _Consumer(consumer)

    def producer(self, cfg, *, role, what):
        return _Producer(cfg, role=role, what=what)

    def reader(self, topic, cfg):
        return _Consumer(connect(KafkaConsumer, {**cfg, "group_id": None}, role=f"reader of model topic {topic!r}"))

    def admin(self, cfg, *, role):
        return _Admin(connect(KafkaAdminClient, cfg, role=role))
