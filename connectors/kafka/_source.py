"""The Kafka source: a consumer-group member reading one topic, committing only when told.

See :mod:`connectors.kafka` for the delivery guarantee and the configuration
rules, and :class:`KafkaSource` for its settings and optional capabilities.
"""

from __future__ import annotations

import logging
import threading
import typing

import kafka.errors as Errors
from kafka import KafkaConsumer
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.consumer.subscription_state import AsyncConsumerRebalanceListener
from kafka.structs import OffsetAndMetadata, TopicPartition

from stream_nb.engine import RebalanceCallback, Record, ResumePolicy, RevocationHandler
from stream_nb.exceptions import CommitError, ConfigError

from ._client import Fixed, connect, partition_key, resolve, servers
from ._errors import ConnectorUnavailable
from ._feedback_topic import FeedbackTap, check_copartitioned

__all__ = ["KafkaSource"]

log = logging.getLogger("connectors.kafka")


class _RebalanceListener(AsyncConsumerRebalanceListener):
    """Forwards kafka-python's rebalance callbacks to the source.

    kafka-python awaits them on its IO thread while the engine's thread waits
    inside ``poll()`` (or ``close()``); being coroutines, they can await a
    commit without stopping the heartbeats.
    """

    def __init__(self, source: KafkaSource):
        self._source = source

    async def on_partitions_revoked(self, revoked):
        self._source._on_rebalance("revoked", revoked)
        await self._source._on_revoke(revoked)

    async def on_partitions_assigned(self, assigned):
        self._source._on_rebalance("assigned", assigned)

    async def on_partitions_lost(self, lost):
        self._source._on_rebalance("lost", lost)


class KafkaSource:
    """A :class:`~stream_nb.engine.Source` reading one topic as a member of a consumer group.

    Records carry the raw key and value bytes; ``Record.partition`` is
    ``"<topic>-<partition>"``, ``Record.position`` is
    ``{"topic", "partition", "offset"}`` and ``Record.next_position`` is
    ``offset + 1``, which is what :meth:`commit` and :meth:`seek` take.

    Configuration (``KafkaSource(**config)``); defaults in ``DEFAULT_CONFIG``:

    topic (str, required)
        The input topic.
    bootstrap_servers (str or list, default ``"localhost:9092"``)
        ``host:port`` of one or more brokers.
    group_id (str, default ``"stream-nb"``)
        Consumer group; offsets are committed under it.
    client_id (str, default ``"stream-nb"``)
        Shown in broker logs and metrics.
    auto_offset_reset (str, default ``"earliest"``)
        Where a group with no committed offset starts: ``"earliest"`` or ``"latest"``.
    allow_auto_create_topics (bool, default ``False``)
        Whether subscribing may create the input topic (see the module docstring).
    bootstrap_timeout_ms (int, default ``10000``)
        How long to wait for a broker at start-up before :class:`ConnectorUnavailable`.
    metrics_enabled (bool, default ``False``)
        kafka-python's client-side metrics; off because they cost CPU per record.
    commit_timeout_ms (int, default ``30000``)
        How long :meth:`commit` may block before :class:`CommitError`.
    close_timeout_ms (int, default ``10000``)
        How long :meth:`close` may take to leave the group.
    session_timeout_ms (int, default ``6000``)
        How long the group waits for a member that stopped heartbeating before
        handing its partitions on: after a kill -9 the restarted daemon gets
        them back within about this time (kafka-python's own default, 45000,
        made recovery take 43 s in ``bench/snapshot.py``). Heartbeats come from
        a background thread, so slow processing does not count against it
        (``max_poll_interval_ms`` bounds that). Static membership
        (``group_instance_id``) hands them back at once.
    heartbeat_interval_ms (int, default ``2000``)
        A third of the session timeout, as Kafka advises.
    feedback_topic (str, default ``None``)
        Also read this topic of labels that come later, co-partitioned with
        ``topic`` (same partition count, checked at start), with the range
        assignor; its records go to :attr:`feedback`, not to :meth:`poll` (see
        :mod:`connectors.kafka._feedback_topic`).

    Any other ``KafkaConsumer`` key passes through, except ``enable_auto_commit``
    (must stay ``False``), ``key_deserializer`` / ``value_deserializer`` (records
    carry raw bytes) and ``kafka_client`` (used internally).

    Rebalances: :attr:`assignment` is the set of partitions currently owned, and
    :meth:`add_rebalance_callback` registers ``callback(event, partitions)``,
    called with ``event`` in ``"revoked"``, ``"assigned"``, ``"lost"``. It runs
    on kafka-python's IO thread, which also heartbeats: keep it short (set a
    flag). Seeks requested for partitions not yet assigned are applied when
    they are assigned.

    Optional capabilities (:mod:`stream_nb.engine._protocols`): it is
    :class:`~stream_nb.engine.Pausable`, :class:`~stream_nb.engine.ReportsLag`,
    :class:`~stream_nb.engine.Rebalancing`, :class:`~stream_nb.engine.ResumesByPolicy`
    (its :meth:`commit` takes ``metadata=``), :class:`~stream_nb.engine.HandlesRevocation`,
    :class:`~stream_nb.engine.Repositionable` and :class:`~stream_nb.engine.ReportsCommitted`.
    """

    DEFAULT_CONFIG: dict = {
        "topic": None,
        "bootstrap_servers": "localhost:9092",
        "group_id": "stream-nb",
        "client_id": "stream-nb",
        "auto_offset_reset": "earliest",
        "allow_auto_create_topics": False,
        "bootstrap_timeout_ms": 10_000,
        "metrics_enabled": False,
        "commit_timeout_ms": 30_000,
        "close_timeout_ms": 10_000,
        "session_timeout_ms": 6_000,
        "heartbeat_interval_ms": 2_000,
        "feedback_topic": None,
    }
    #: Keys of ``DEFAULT_CONFIG`` that are the source's own, not the consumer's.
    OWN_KEYS = frozenset({"topic", "commit_timeout_ms", "close_timeout_ms", "feedback_topic"})
    #: Consumer keys the source sets itself or only takes with one value.
    FIXED = {
        "enable_auto_commit": Fixed(
            lambda v: v is False,
            "it must stay False; the engine commits only after the outputs are flushed",
        ),
        "key_deserializer": Fixed(None, "records carry raw bytes; the engine decodes them"),
        "value_deserializer": Fixed(None, "records carry raw bytes; the engine decodes them"),
        "kafka_client": Fixed(None, "the connector sets it"),
    }

    def __init__(self, **configs):
        cfg = resolve("KafkaSource", self.DEFAULT_CONFIG, KafkaConsumer.DEFAULT_CONFIG, self.FIXED, configs)
        self.config = cfg
        self.topic: str = cfg["topic"]
        #: The labels of ``feedback_topic`` (None without it): the join's source.
        self.feedback = FeedbackTap(cfg["feedback_topic"], self.topic) if cfg["feedback_topic"] else None
        self._topics = (self.topic,) + ((cfg["feedback_topic"],) if self.feedback is not None else ())
        self._commit_timeout_ms = cfg["commit_timeout_ms"]
        self._settle_timeout_ms = min(5_000, self._commit_timeout_ms)
        self._close_timeout_ms = cfg["close_timeout_ms"]
        self._lock = threading.Lock()
        self._pending_seeks: dict[TopicPartition, int] = {}
        self._resume_policy: ResumePolicy | None = None
        self._revocation_handler: RevocationHandler | None = None
        self._to_settle: set[TopicPartition] = set()  # assigned, paused until positioned by the policy
        self._callbacks: list[RebalanceCallback] = []
        self._keys: dict[TopicPartition, str] = {}
        self._paused: set[TopicPartition] = set()  # paused by pause(), for back-pressure
        self._closed = False
        client_cfg = {k: v for k, v in cfg.items() if k not in self.OWN_KEYS}
        client_cfg["enable_auto_commit"] = False
        if self.feedback is not None:  # partition p of both topics to one member
            if "partition_assignment_strategy" in configs:
                raise ConfigError("KafkaSource: partition_assignment_strategy cannot be set with feedback_topic: the "
                                  "range assignor keeps each label's partition with its event's")
            client_cfg["partition_assignment_strategy"] = (RangePartitionAssignor,)
        self._consumer = connect(KafkaConsumer, client_cfg, role=f"consumer of topic {self.topic!r}")
        # kafka-python 3.0 takes allow_auto_create_topics but builds its metadata client without
        # it, so every metadata request would allow creation; hand the setting on ourselves
        cluster = getattr(self._consumer, "_cluster", None)
        if cluster is not None and "allow_auto_create_topics" in getattr(cluster, "config", {}):
            cluster.config["allow_auto_create_topics"] = cfg["allow_auto_create_topics"]
        try:
            # each topic's metadata before joining the group: a member that leads the group knowing no
            # partition of a topic assigns none of it ("No partition metadata for topic"), and kafka-python
            # was seen not to rejoin for minutes after it learned them (a topic created just before)
            counts = [self._partition_count(topic) for topic in self._topics]
            if self.feedback is not None:
                check_copartitioned(*(x for pair in zip(self._topics, counts) for x in pair))
            self._consumer.subscribe(list(self._topics), listener=_RebalanceListener(self))
        except BaseException:
            self._consumer.close(autocommit=False, timeout_ms=self._close_timeout_ms)
            raise
        log.info(
            "Kafka source: topic %r, group %r, bootstrap %s",
            self.topic, cfg["group_id"], servers(cfg["bootstrap_servers"]),
        )

    # -- Source protocol --------------------------------------------------

    @property
    def exhausted(self) -> bool:
        """Always False: a Kafka topic has no end."""
        return False

    def poll(self, max_records: int, timeout: float) -> list[Record]:
        """Return up to ``max_records`` records, waiting at most ``timeout`` seconds.

        Records of one partition keep their order; partitions follow each other
        in the order kafka-python returned them.
        """
        batches = self._consumer.poll(timeout_ms=max(0, int(timeout * 1000)), max_records=max_records)
        if self._to_settle:
            with self._lock:
                unsettled = set(self._to_settle)
            # settling seeks every such partition anyway, so records fetched before that are dropped
            batches = {tp: messages for tp, messages in (batches or {}).items() if tp not in unsettled}
            self._settle()
        if not batches:
            return []
        out: list[Record] = []
        aside: list[Record] = []  # the feedback topic's
        for tp, messages in batches.items():
            key = self._key(tp)
            topic, partition = tp
            (out if topic == self.topic else aside).extend([
                Record(m.value, m.key, key, {"topic": topic, "partition": partition, "offset": m.offset}, m.offset + 1)
                for m in messages
            ])
        if aside:
            self.feedback.put(aside)
        return out

    def commit(self, positions: dict[str, int], metadata: str = "") -> None:
        """Commit ``{"<topic>-<partition>": next_offset}`` synchronously, each with ``metadata``.

        Partitions no longer assigned to this consumer (revoked by a rebalance)
        are skipped with a warning: their new owner resumes from the last
        commit. Raises :class:`CommitError` if the broker rejects the commit.
        """
        if not positions:
            return
        assigned = self._consumer.assignment() or set()
        offsets = {}
        skipped = []
        for key, next_offset in positions.items():
            tp = self._tp(key)
            if tp in assigned:
                offsets[tp] = OffsetAndMetadata(int(next_offset), metadata, -1)
            else:
                skipped.append(key)
        if skipped:
            log.warning(
                "Kafka source: not committing %s: no longer assigned to this consumer "
                "(their new owner resumes from the last commit)", ", ".join(sorted(skipped)),
            )
        if not offsets:
            return
        try:
            self._consumer.commit(offsets, timeout_ms=self._commit_timeout_ms)
        except Errors.KafkaError as exc:
            raise CommitError(
                f"Kafka source: committing offsets of group {self.config['group_id']!r} "
                f"failed: {exc!r}; the records after the last successful commit will be "
                f"processed again"
            ) from exc

    def seek(self, positions: dict[str, int]) -> None:
        """Resume each partition at the given offset (``next_position`` of the last done record).

        Partitions not assigned yet (before the first poll, or owned by another
        member) are remembered and sought when they are assigned.
        """
        with self._lock:
            assigned = self._consumer.assignment() or set()
            for key, offset in positions.items():
                tp = self._tp(key)
                offset = int(offset)
                if offset < 0:
                    raise ValueError(f"cannot seek {key} to negative offset {offset}")
                if tp in assigned:
                    self._consumer.seek(tp, offset)
                    self._pending_seeks.pop(tp, None)
                else:
                    self._pending_seeks[tp] = offset

    def close(self) -> None:
        """Leave the group and close the connection. Never commits."""
        if self._closed:
            return
        self._closed = True
        self._consumer.close(autocommit=False, timeout_ms=self._close_timeout_ms)

    # -- extras -------------------------------------------------------------

    @property
    def assignment(self) -> frozenset[str]:
        """The partitions (``"<topic>-<partition>"``) currently assigned to this consumer."""
        return frozenset(self._key(tp) for tp in (self._consumer.assignment() or ()))

    def add_rebalance_callback(self, callback: RebalanceCallback) -> None:
        """Call ``callback(event, partitions)`` on every rebalance (see the class docstring)."""
        self._callbacks.append(callback)

    def set_resume_policy(self, policy: ResumePolicy | None) -> None:
        """Position every partition assigned from now on with ``policy(partition, committed, metadata)``.

        A newly assigned partition is paused; at the next :meth:`poll`, on the
        caller's thread, its committed offset and metadata are fetched and it
        resumes at the offset the policy returns, or at the committed offset
        when it returns ``None`` (``auto_offset_reset`` when nothing is
        committed). An explicit :meth:`seek` still wins.
        """
        self._resume_policy = policy

    def set_revocation_handler(self, handler: RevocationHandler | None) -> None:
        """Call ``handler(partitions)`` before partitions are revoked (also on close).

        It runs on kafka-python's IO thread while :meth:`poll` waits, must not
        call this consumer, and returns ``None`` or ``(positions, metadata,
        done)``: the offsets of the revoked partitions to commit now, which the
        source commits without blocking the heartbeats, then calls ``done(ok)``.
        """
        self._revocation_handler = handler

    def reposition(self) -> None:
        """Position every assigned partition again with the resume policy before its next record.

        For a rewind (an aborted transaction): safe on any thread, takes effect at the next :meth:`poll`.
        """
        with self._lock:
            assigned = set(self._consumer.assignment() or ())
            self._to_settle |= assigned
        if self.feedback is not None:
            self.feedback.drop()  # read again from where the partitions are positioned
        if assigned:
            self._consumer.pause(*sorted(assigned))

    def group_metadata(self):
        """This consumer's group membership, for ``KafkaProducer.send_offsets_to_transaction``."""
        return self._consumer.group_metadata()

    def transaction_offsets(self, positions: dict[str, int], metadata: str = "") -> dict:
        """``{TopicPartition: OffsetAndMetadata}`` of the assigned partitions among ``positions``."""
        assigned = self._consumer.assignment() or set()
        offsets = {}
        for key, next_offset in positions.items():
            tp = self._tp(key)
            if tp in assigned:
                offsets[tp] = OffsetAndMetadata(int(next_offset), metadata, -1)
        return offsets

    def pause(self) -> None:
        """Stop fetching every assigned partition; :meth:`poll` keeps the group membership alive.

        Back-pressure (see :mod:`stream_nb.engine._flow`): partitions assigned
        later start unpaused, so the engine calls this again before each poll
        while it holds the input.
        """
        assigned = self._consumer.assignment() or set()
        todo = set(assigned) - self._paused
        if todo:
            self._consumer.pause(*sorted(todo))
        self._paused = set(assigned)

    def resume(self) -> None:
        """Fetch again the partitions :meth:`pause` paused (and are still assigned).

        A partition still waiting to be positioned (just assigned) stays paused:
        positioning resumes it.
        """
        assigned = self._consumer.assignment() or set()
        with self._lock:
            unsettled = set(self._to_settle)
        todo = sorted((self._paused & set(assigned)) - unsettled)
        self._paused = set()
        if todo:
            self._consumer.resume(*todo)

    #: Unit of :meth:`lag`.
    lag_unit = "records"

    def lag(self, timeout: float = 2.0) -> dict[str, int]:
        """Records after this consumer's position in each assigned partition (end offset - position).

        One ListOffsets request for all partitions, so call it periodically,
        never per event. Raises :class:`ConnectorUnavailable` when the broker
        does not answer within ``timeout`` seconds. A partition not positioned
        yet (just assigned) is left out.
        """
        with self._lock:
            unsettled = set(self._to_settle)
        assigned = sorted(set(self._consumer.assignment() or ()) - unsettled)
        if not assigned:
            return {}
        timeout_ms = max(1, int(timeout * 1000))
        try:
            ends = self._consumer.end_offsets(assigned, timeout_ms=timeout_ms)
        except Errors.KafkaError as exc:  # a timeout, a lost connection, no leader: the broker is not there
            bootstrap = servers(self.config["bootstrap_servers"])
            raise ConnectorUnavailable(
                f"Kafka source: no end offsets of {self.topic!r} from {bootstrap} within {timeout_ms} ms "
                f"({type(exc).__name__})", bootstrap_servers=bootstrap,
            ) from exc
        out: dict[str, int] = {}
        for tp in assigned:
            try:
                position = self._consumer.position(tp, timeout_ms=timeout_ms)
            except Errors.IllegalStateError:  # revoked meanwhile
                continue
            end = ends.get(tp)
            if position is not None and end is not None:
                out[self._key(tp)] = max(0, end - position)
        return out

    def committed(self, partitions: typing.Iterable[str] | None = None) -> dict[str, int | None]:
        """The group's committed offsets (``None`` where nothing is committed).

        Defaults to the assigned partitions; a remote call per partition.
        """
        keys = sorted(self.assignment) if partitions is None else list(partitions)
        return {key: self._consumer.committed(self._tp(key)) for key in keys}

    def __enter__(self) -> KafkaSource:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    # -- internals ----------------------------------------------------------

    def _key(self, tp: TopicPartition) -> str:
        key = self._keys.get(tp)
        if key is None:
            key = self._keys[tp] = partition_key(tp.topic, tp.partition)
        return key

    def _tp(self, key: str) -> TopicPartition:
        topic, sep, partition = key.rpartition("-")
        if not sep or not partition.isdigit() or topic not in self._topics:
            raise ValueError(f"{key!r} is not a partition of topic {self.topic!r} (expected '{self.topic}-<n>')")
        return TopicPartition(topic, int(partition))

    def _partition_count(self, topic: str) -> int | None:
        found = self._consumer.partitions_for_topic(topic)
        return len(found) if found else None

    def _on_rebalance(self, event: str, partitions) -> None:
        # Runs on kafka-python's IO thread: no blocking calls here.
        partitions = sorted(partitions)
        if not partitions and event != "assigned":
            return
        if event == "assigned":
            settle = []
            with self._lock:
                for tp in partitions:
                    offset = self._pending_seeks.pop(tp, None)
                    if offset is not None:
                        self._consumer.seek(tp, offset)
                    elif self._resume_policy is not None:
                        settle.append(tp)
                self._to_settle |= set(settle)
            if settle:  # no record of theirs until _settle() positioned them
                self._consumer.pause(*settle)
        keys = [self._key(tp) for tp in partitions]
        log.info("Kafka source: partitions %s: %s", event, ", ".join(keys) or "none",
                 extra={"event": "rebalance", "change": event, "partitions": keys})
        for callback in list(self._callbacks):
            try:
                callback(event, keys)
            except Exception:  # noqa: BLE001 - a failing hook must not break the heartbeat loop
                log.exception("Kafka source: rebalance callback %r failed", callback)

    async def _on_revoke(self, partitions) -> None:
        """Let the revocation handler snapshot, then commit what it returns (awaited on the IO thread)."""
        handler = self._revocation_handler
        if handler is None or not partitions:
            return
        keys = [self._key(tp) for tp in sorted(partitions)]
        try:
            result = handler(keys)
        except Exception:  # noqa: BLE001 - the rebalance must go on
            log.exception("Kafka source: the revocation handler failed; nothing committed")
            return
        if not result:
            return
        positions, metadata, done = result
        offsets = {self._tp(k): OffsetAndMetadata(int(v), metadata, -1) for k, v in positions.items()}
        try:
            await self._consumer.commit_async(offsets)
        except Exception as exc:  # noqa: BLE001 - the new owner resumes from the last commit
            log.warning("Kafka source: committing %s before the partitions went failed: %r",
                        ", ".join(sorted(positions)), exc)
            done(False)
            return
        log.info("Kafka source: committed %s before the partitions went",
                 ", ".join(f"{k}={v}" for k, v in sorted(positions.items())))
        done(True)

    def _settle(self) -> None:
        """Seek newly assigned partitions where the resume policy says, then resume them."""
        assigned = self._consumer.assignment() or set()
        with self._lock:
            self._to_settle &= set(assigned)
            todo = sorted(self._to_settle)
        for tp in todo:
            key = self._key(tp)
            try:
                found = self._consumer.committed(tp, metadata=True, timeout_ms=self._settle_timeout_ms)
            except Errors.KafkaError as exc:
                log.warning("Kafka source: no committed offset of %s yet (%r); retrying at the next poll", key, exc)
                continue
            committed = found.offset if found is not None and found.offset >= 0 else None
            metadata = found.metadata if found is not None else None
            policy = self._resume_policy
            target = policy(key, committed, metadata) if policy is not None else None
            if target is None:
                target = committed
            if target is not None:
                self._consumer.seek(tp, int(target))
                where = f"offset {target}"
            elif self.config["auto_offset_reset"] == "latest":
                self._consumer.seek_to_end(tp)
                where = "its end (nothing committed)"
            else:
                self._consumer.seek_to_beginning(tp)
                where = "its beginning (nothing committed)"
            with self._lock:
                self._to_settle.discard(tp)
            if tp not in getattr(self, "_paused", ()):  # not held by back-pressure
                self._consumer.resume(tp)
            log.info("Kafka source: %s resumes at %s", key, where)
