"""The Kafka source: a consumer-group member reading one topic, committing only when told.

Written once over the client adapter protocol (:mod:`._adapter`):
:class:`KafkaSource` runs on kafka-python, :class:`ConfluentSource` on
confluent-kafka. See :mod:`connectors.kafka` for the delivery guarantee and
the configuration rules, and :class:`KafkaSource` for its settings and
optional capabilities.

Where a partition resumes: a :meth:`~KafkaSource.seek` (pending until the
partition is assigned), else the resume policy, else the committed offset.
A client that calls back on the polling thread (confluent-kafka) starts a
newly assigned partition there, at once; one that calls back on its IO thread
(kafka-python, where asking for the committed offset would wait for that very
thread) keeps it paused until the next :meth:`~KafkaSource.poll` positions it.
"""

from __future__ import annotations

import logging
import threading
import typing

from stream_nb.engine import (PositionColumns, RebalanceCallback, Record, RecordColumns, ResumePolicy,
                              RevocationHandler)
from stream_nb.exceptions import CommitError, ConfigError

from ._adapter import BEGINNING, END, TP, Revocation
from ._client import Fixed, parse_partition, partition_key, resolve_for, servers
from ._confluent import Confluent
from ._errors import ConnectorUnavailable
from ._feedback_topic import FeedbackTap, check_copartitioned
from ._kafka_python import KafkaPython

__all__ = ["ConfluentSource", "KafkaSource"]

log = logging.getLogger("connectors.kafka")


class KafkaSource:
    """A :class:`~stream_nb.engine.Source` reading one topic as a member of a consumer group.

    Records carry the raw key and value bytes; ``Record.partition`` is
    ``"<topic>-<partition>"`` and ``Record.next_position`` the offset after the
    record, which :meth:`commit` and :meth:`seek` take. It never commits by itself.

    Parameters
    ----------
    topic
        The input topic (required).
    bootstrap_servers
        ``host:port`` of one or more brokers (default ``"localhost:9092"``).
    group_id
        The consumer group the offsets are committed under (default ``"stream-nb"``).
    client_id
        Shown in broker logs and metrics (default ``"stream-nb"``).
    auto_offset_reset
        Where a group with no committed offset starts: ``"earliest"`` (default) or ``"latest"``.
    allow_auto_create_topics
        Whether subscribing may create the input topic (default False: a typo does not create a topic).
    bootstrap_timeout_ms
        How long to wait for a broker at start-up before :class:`ConnectorUnavailable` (default 10000).
    metrics_enabled
        kafka-python's client-side metrics (default False: they cost CPU per record).
    commit_timeout_ms
        How long :meth:`commit` may block before :class:`CommitError` (default 30000).
    close_timeout_ms
        How long :meth:`close` may take to leave the group (default 10000).
    session_timeout_ms
        How long the group waits for a silent member before handing its partitions on (default 6000,
        so a restarted daemon gets them back quickly).
    heartbeat_interval_ms
        A third of the session timeout (default 2000).
    feedback_topic
        Also read this topic of later labels, co-partitioned with ``topic``; its records go to
        :attr:`feedback`, not to :meth:`poll` (default None).
    **configs
        Any other key of the client's consumer (confluent-kafka: also librdkafka's dotted names), except
        ``enable_auto_commit`` and the keys the adapter sets itself.

    Rebalance callbacks (:meth:`add_rebalance_callback`) and the revocation handler run on the client's
    thread of rebalances: kafka-python's IO thread, or confluent-kafka's polling thread. Keep them short.

    Examples
    --------
    >>> KafkaSource(bootstrap_servers="localhost:9092")
    Traceback (most recent call last):
    ...
    stream_nb.exceptions.ConfigError: KafkaSource: config key 'topic' is required (a topic name), got None
    >>> sorted(KafkaSource.OWN_KEYS)
    ['close_timeout_ms', 'commit_timeout_ms', 'feedback_topic', 'topic']
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
    }

    #: The client library (:mod:`._adapter`): kafka-python.
    ADAPTER: type = KafkaPython

    def __init__(self, **configs):
        self.client = client = self.ADAPTER()
        cfg = resolve_for(client, f"KafkaSource{client.label}", self.DEFAULT_CONFIG, self.FIXED, configs,
                          role="consumer")
        self.config = cfg
        self.topic: str = cfg["topic"]
        #: The labels of ``feedback_topic`` (None without it): the join's source.
        self.feedback = FeedbackTap(cfg["feedback_topic"], self.topic) if cfg["feedback_topic"] else None
        self._topics = (self.topic,) + ((cfg["feedback_topic"],) if self.feedback is not None else ())
        self._commit_timeout_s = cfg["commit_timeout_ms"] / 1000
        self._settle_timeout_s = min(5.0, self._commit_timeout_s)
        self._close_timeout_s = cfg["close_timeout_ms"] / 1000
        self._lock = threading.Lock()
        self._pending_seeks: dict[TP, int] = {}
        self._resume_policy: ResumePolicy | None = None
        self._revocation_handler: RevocationHandler | None = None
        self._to_settle: set[TP] = set()  # assigned, paused until positioned by the policy
        self._callbacks: list[RebalanceCallback] = []
        self._keys: dict[TP, str] = {}
        self._paused: set[TP] = set()  # paused by pause(), for back-pressure
        self._closed = False
        # the group membership the records were read under (group_metadata): taken at each assignment, and
        # as the first poll that returns records after a transaction read it (track_membership)
        self._membership = None
        self._membership_due = False
        strategy = cfg.get("partition_assignment_strategy", cfg.get("partition.assignment.strategy"))
        if self.feedback is not None and strategy is not None and str(strategy).strip() != "range":
            raise ConfigError(f"KafkaSource{client.label}: the partition assignment strategy must stay range with "
                              f"feedback_topic: it keeps each label's partition with its event's")
        role = f"consumer of topic {self.topic!r}"
        self._consumer = client.consumer({k: v for k, v in cfg.items() if k not in self.OWN_KEYS}, role=role,
                                         range_assignor=self.feedback is not None)
        self._errors = self._consumer.errors
        try:
            # each topic's metadata before joining the group: a member that leads the group knowing no
            # partition of a topic assigns none of it ("No partition metadata for topic"), and kafka-python
            # was seen not to rejoin for minutes after it learned them (a topic created just before)
            counts = [self._consumer.partition_count(topic) for topic in self._topics]
            if counts[0] is None:
                log.warning("Kafka source: topic %r does not exist (yet); waiting for it", self.topic)
            if self.feedback is not None:
                check_copartitioned(self.topic, counts[0], self._topics[1], counts[1])
            self._consumer.subscribe(list(self._topics), self)
        except BaseException:
            self._consumer.close(self._close_timeout_s)
            raise
        log.info("Kafka source%s: topic %r, group %r, bootstrap %s", client.label, self.topic, cfg["group_id"],
                 servers(cfg["bootstrap_servers"]))

    # -- Source protocol --------------------------------------------------

    @property
    def exhausted(self) -> bool:
        """Always False: a Kafka topic has no end."""
        return False

    def poll(self, max_records: int, timeout: float) -> typing.Sequence[Record]:
        """Return up to ``max_records`` records, waiting at most ``timeout`` seconds for the first.

        Records of one partition keep their order; partitions follow each other
        in the order the client returned them.
        """
        if self._to_settle:
            self._settle()
        polled = self._consumer.poll(max_records, timeout)
        if polled is not None and self._membership_due:
            self._membership = self._consumer.group_metadata()
            self._membership_due = False
        unsettled = ()
        if self._to_settle:  # assigned during the poll, or reposition() on another thread: positioned now
            with self._lock:
                unsettled = {self._key(p) for p in self._to_settle}
            self._settle()  # it seeks every such partition anyway, so records fetched before are dropped
        if polled is None:
            return []
        topic = self.topic
        partitions = polled.partitions
        if self.feedback is None:  # the usual poll: one topic, built column by column
            # as columns, no Record nor position dict per record: the engine writes the outputs from the columns
            named = {p: self._key((topic, p)) for p in set(partitions)}
            out = RecordColumns(polled.values, polled.keys, list(map(named.__getitem__, partitions)),
                                PositionColumns({"topic": topic}, {"partition": partitions, "offset": polled.offsets}),
                                [o + 1 for o in polled.offsets])
            aside = []
        else:
            out, aside = [], []  # the feedback topic's records go aside
            for t, p, o, k, v in zip(polled.topics, partitions, polled.offsets, polled.keys, polled.values):
                (out if t == topic else aside).append(
                    Record(v, k, self._key((t, p)), {"topic": t, "partition": p, "offset": o}, o + 1))
        if unsettled:
            out = [r for r in out if r.partition not in unsettled]
            aside = [r for r in aside if r.partition not in unsettled]
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
        offsets = self.transaction_offsets(positions)
        skipped = [key for key in positions if self._partition(key) not in offsets]
        if skipped:
            log.warning(
                "Kafka source: not committing %s: no longer assigned to this consumer "
                "(their new owner resumes from the last commit)", ", ".join(sorted(skipped)),
            )
        if not offsets:
            return
        try:
            self._consumer.commit(offsets, metadata, self._commit_timeout_s)
        except self._errors as exc:
            raise CommitError(
                f"Kafka source: committing offsets of group {self.config['group_id']!r} "
                f"failed: {self.client.describe(exc)}; the records after the last successful commit will be "
                f"processed again"
            ) from exc

    def seek(self, positions: dict[str, int]) -> None:
        """Resume each partition at the given offset (``next_position`` of the last done record).

        Partitions not assigned yet (before the first poll, or owned by another
        member) are remembered and sought when they are assigned; assigned ones
        at the next :meth:`poll`.
        """
        assigned = self._consumer.assignment()
        with self._lock:
            for key, offset in positions.items():
                partition = self._partition(key)
                offset = int(offset)
                if offset < 0:
                    raise ValueError(f"cannot seek {key} to negative offset {offset}")
                self._pending_seeks[partition] = offset
                if partition in assigned:
                    self._to_settle.add(partition)

    def close(self) -> None:
        """Leave the group (the revocation handler runs first) and close the connection. Never commits."""
        if self._closed:
            return
        self._closed = True
        self._consumer.close(self._close_timeout_s)

    # -- extras -------------------------------------------------------------

    @property
    def assignment(self) -> frozenset[str]:
        """The partitions (``"<topic>-<partition>"``) currently assigned to this consumer."""
        return frozenset(map(self._key, self._consumer.assignment()))

    def add_rebalance_callback(self, callback: RebalanceCallback) -> None:
        """Call ``callback(event, partitions)`` on every rebalance (see the class docstring)."""
        self._callbacks.append(callback)

    def set_resume_policy(self, policy: ResumePolicy | None) -> None:
        """Position every partition assigned from now on with ``policy(partition, committed, metadata)``.

        A newly assigned partition resumes at the offset the policy returns, or
        at the committed offset when it returns ``None`` (``auto_offset_reset``
        when nothing is committed), asked on the caller's thread (see the
        module docstring). An explicit :meth:`seek` still wins.
        """
        self._resume_policy = policy

    def set_revocation_handler(self, handler: RevocationHandler | None) -> None:
        """Call ``handler(partitions)`` before partitions are revoked (also on close).

        It runs on the client's thread of rebalances while :meth:`poll` waits,
        must not call this consumer, and returns ``None`` or ``(positions,
        metadata, done)``: the offsets of the revoked partitions to commit now,
        which the source commits (kafka-python: without blocking the
        heartbeats), then calls ``done(ok)``.
        """
        self._revocation_handler = handler

    def reposition(self) -> None:
        """Position every assigned partition again with the resume policy before its next record.

        For a rewind (an aborted transaction): safe on any thread, takes effect at the next :meth:`poll`.
        """
        assigned = self._consumer.assignment()
        with self._lock:
            self._to_settle |= assigned
        if self.feedback is not None:
            self.feedback.drop()  # read again from where the partitions are positioned
        if assigned:
            self._consumer.pause(sorted(assigned))

    def group_metadata(self):
        """The group membership the records were read under, for the transaction's
        ``send_offsets_to_transaction``: taken at the last assignment and as the last poll that returned
        records returned. A rebalance goes through a poll (its revocation ends the transaction first), but
        a membership lost on the client's own threads since (a heartbeat that finds the session expired,
        after a pause of the process) resets the client's live generation to none, and offsets sent with
        no generation are not fenced: a zombie would commit the outputs of partitions another member has
        taken over. With the generation its records were read under, the broker refuses them and the
        transaction is aborted."""
        self._membership_due = True  # the next transaction's records: taken again as their first poll returns
        return self._membership if self._membership is not None else self._consumer.group_metadata()

    def track_membership(self) -> None:
        """Take the group membership as the next poll that returns records returns, for
        :meth:`group_metadata`, which a transactional producer reads as it sends this source's offsets;
        from then on, again after each such read. One take a transaction is enough: within one, the
        generation changes only through a rebalance, whose revocation ends the transaction and whose
        assignment takes the membership anew. Without a transaction nothing reads it; asking the
        client for it at every poll cost the daemon on librdkafka half of its drain rate (the call waits
        on the client's own thread)."""
        self._membership_due = True

    def transaction_offsets(self, positions: dict[str, int], metadata: str = "") -> dict[TP, int]:
        """``{(topic, partition): next offset}`` of the assigned partitions among ``positions``."""
        assigned = self._consumer.assignment()
        offsets = {}
        for key, next_offset in positions.items():
            partition = self._partition(key)
            if partition in assigned:
                offsets[partition] = int(next_offset)
        return offsets

    def pause(self) -> None:
        """Stop fetching every assigned partition; :meth:`poll` keeps the group membership alive.

        Back-pressure (see :mod:`stream_nb.engine.loop._flow`): partitions assigned
        later start unpaused, so the engine calls this again before each poll
        while it holds the input.
        """
        assigned = self._consumer.assignment()
        todo = assigned - self._paused
        if todo:
            self._consumer.pause(sorted(todo))
        self._paused = assigned

    def resume(self) -> None:
        """Fetch again the partitions :meth:`pause` paused (and are still assigned).

        A partition still waiting to be positioned (just assigned) stays paused:
        positioning resumes it.
        """
        assigned = self._consumer.assignment()
        with self._lock:
            unsettled = set(self._to_settle)
        todo = sorted((self._paused & assigned) - unsettled)
        self._paused = set()
        if todo:
            self._consumer.resume(todo)

    #: Unit of :meth:`lag`.
    lag_unit = "records"

    def lag(self, timeout: float = 2.0) -> dict[str, int]:
        """Records after this consumer's position in each assigned partition (end offset - position).

        Call it periodically, never per event (kafka-python asks the broker for
        every partition's end at once; confluent-kafka has the end of a
        partition being fetched with each fetch, and asks for a paused one's).
        Raises :class:`ConnectorUnavailable` when the broker does not answer
        within ``timeout`` seconds. A partition not positioned yet (just
        assigned) is left out.
        """
        with self._lock:
            unsettled = set(self._to_settle)
        todo = sorted(self._consumer.assignment() - unsettled)
        if not todo:
            return {}
        try:
            found = self._consumer.positions(todo, timeout)
        except self._errors as exc:  # a timeout, a lost connection, no leader: the broker is not there
            bootstrap = servers(self.config["bootstrap_servers"])
            raise ConnectorUnavailable(
                f"Kafka source: no end offsets of {self.topic!r} from {bootstrap} within {timeout * 1000:.0f} ms "
                f"({self.client.describe(exc)})", bootstrap_servers=bootstrap,
            ) from exc
        return {self._key(p): max(0, end - position) for p, (position, end) in found.items()
                if position is not None and position >= 0 and end is not None and end >= 0}

    def committed(self, partitions: typing.Iterable[str] | None = None) -> dict[str, int | None]:
        """The group's committed offsets (``None`` where nothing is committed).

        Defaults to the assigned partitions; a remote call.
        """
        keys = sorted(self.assignment) if partitions is None else list(partitions)
        if not keys:
            return {}
        found = self._committed([self._partition(k) for k in keys], self._commit_timeout_s)
        return {key: found[self._partition(key)][0] for key in keys}

    def _committed(self, partitions: list[TP], timeout: float) -> dict[TP, tuple[int | None, str | None]]:
        """The group's committed ``(offset, metadata)`` of each partition; ``(None, None)`` where nothing is (a
        client says so with no offset, or one below 0: librdkafka's -1001, kafka-python's -1)."""
        found = self._consumer.committed(partitions, timeout)
        return {p: (offset, metadata) if offset is not None and offset >= 0 else (None, None)
                for p, (offset, metadata) in found.items()}

    def __enter__(self) -> KafkaSource:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    # -- the consumer's rebalance listener (:class:`._adapter.Listener`) ------

    def assigned(self, partitions: list[TP]) -> tuple[dict[TP, int], list[TP]]:
        """Where the new partitions start now (a pending seek; the resume policy if the client calls back on the
        polling thread), and which stay paused until :meth:`poll` positions them."""
        try:
            self._membership = self._consumer.group_metadata()  # the new generation (see group_metadata)
        except (RuntimeError, *self._errors) as exc:  # confluent-kafka while closing: "not available"
            log.debug("Kafka source: no group membership at this assignment (%s); asked for when needed", exc)
            self._membership = None
        partitions = sorted(p for p in partitions if p[0] in self._topics)
        with self._lock:
            starts = {p: self._pending_seeks.pop(p) for p in partitions if p in self._pending_seeks}
        rest = [p for p in partitions if p not in starts]
        held: list[TP] = []
        if rest and self._resume_policy is not None:
            if not self._consumer.calls_back_on_poll:  # the client's IO thread: no remote call here
                held = rest
            else:
                try:
                    starts.update(self._targets(rest))
                except self._errors as exc:
                    log.warning("Kafka source: no committed offsets yet (%s); retrying at the next poll", exc)
                    held = rest
            with self._lock:
                self._to_settle |= set(held)
        for p, offset in starts.items():
            log.info("Kafka source: %s resumes at %s", self._key(p),
                     "the committed offset (or auto_offset_reset)" if offset is None else f"offset {offset}")
        self._notify("assigned", partitions)
        return {p: offset for p, offset in starts.items() if offset is not None}, held

    def revoked(self, partitions: list[TP]) -> Revocation | None:
        """Tell the callbacks, let the revocation handler snapshot, and hand the client what to commit first."""
        partitions = sorted(p for p in partitions if p[0] in self._topics)
        if not partitions:
            return None
        self._notify("revoked", partitions)
        with self._lock:
            self._to_settle -= set(partitions)
        self._paused -= set(partitions)
        handler = self._revocation_handler
        if handler is None:
            return None
        try:
            result = handler([self._key(p) for p in partitions])
        except Exception:  # noqa: BLE001 - the rebalance must go on
            log.exception("Kafka source: the revocation handler failed; nothing committed")
            return None
        if not result:
            return None
        positions, metadata, done = result

        def finish(error: BaseException | None) -> None:
            if error is not None:  # the new owner resumes from the last commit
                log.warning("Kafka source: committing %s before the partitions went failed: %r",
                            ", ".join(sorted(positions)), error)
            else:
                log.info("Kafka source: committed %s before the partitions went",
                         ", ".join(f"{k}={v}" for k, v in sorted(positions.items())))
            done(error is None)

        offsets = {self._partition(k): int(v) for k, v in positions.items()}
        if not self._consumer.calls_back_on_poll:  # the client's IO thread commits them, heartbeats going on
            return Revocation(offsets, metadata, finish)
        assigned = self._consumer.assignment()  # the polling thread, inside the client's callback: commit here
        try:
            self._consumer.commit({p: o for p, o in offsets.items() if p in assigned}, metadata,
                                  self._commit_timeout_s)
        except self._errors as exc:
            finish(exc)
        else:
            finish(None)
        return None

    def lost(self, partitions: list[TP]) -> None:
        """Partitions went without a revocation: tell the callbacks."""
        partitions = sorted(p for p in partitions if p[0] in self._topics)
        if partitions:
            with self._lock:
                self._to_settle -= set(partitions)
            self._paused -= set(partitions)
            self._notify("lost", partitions)

    # -- internals ----------------------------------------------------------

    def _key(self, partition: TP) -> str:
        key = self._keys.get(partition)
        if key is None:
            key = self._keys[partition] = partition_key(*partition)
        return key

    def _partition(self, key: str) -> TP:
        return parse_partition(key, self._topics)

    def _notify(self, event: str, partitions: list[TP]) -> None:
        keys = [self._key(p) for p in partitions]
        log.info("Kafka source: partitions %s: %s", event, ", ".join(keys) or "none",
                 extra={"event": "rebalance", "change": event, "partitions": keys})
        for callback in list(self._callbacks):
            try:
                callback(event, keys)
            except Exception:  # noqa: BLE001 - a failing hook must not break the rebalance
                log.exception("Kafka source: rebalance callback %r failed", callback)

    def _targets(self, partitions: list[TP]) -> dict[TP, int | None]:
        """Where each partition resumes: a pending seek, else the resume policy (else the committed offset)."""
        with self._lock:
            seeks = {p: self._pending_seeks[p] for p in partitions if p in self._pending_seeks}
        rest = [p for p in partitions if p not in seeks]
        committed = self._committed(rest, self._settle_timeout_s) if rest else {}
        targets: dict[TP, int | None] = dict(seeks)
        with self._lock:
            for p in seeks:
                self._pending_seeks.pop(p, None)
        for p in rest:
            offset, metadata = committed.get(p, (None, None))
            policy = self._resume_policy
            target = policy(self._key(p), offset, metadata) if policy is not None else None
            targets[p] = target if target is not None else offset
        return targets

    def _settle(self) -> None:
        """Seek the partitions a :meth:`seek`, :meth:`reposition` or an assignment marked, then resume them."""
        assigned = self._consumer.assignment()
        with self._lock:
            self._to_settle &= assigned
            todo = sorted(self._to_settle)
        if not todo:
            return
        try:
            targets = self._targets(todo)
        except self._errors as exc:
            log.warning("Kafka source: no committed offsets yet (%s); retrying at the next poll", exc)
            return
        for p in todo:
            target = targets.get(p)
            where = f"offset {target}"
            if target is None:
                latest = self.config["auto_offset_reset"] == "latest"
                target, where = (END, "its end") if latest else (BEGINNING, "its beginning")
                where += " (nothing committed)"
            try:
                self._consumer.seek(p, int(target))
            except self._errors as exc:  # not fetching yet: try again at the next poll
                log.debug("Kafka source: seeking %s failed (%s); retrying", self._key(p), exc)
                if target >= 0:
                    with self._lock:
                        self._pending_seeks.setdefault(p, int(target))
                continue
            with self._lock:
                self._to_settle.discard(p)
            if p not in self._paused:  # not held by back-pressure
                self._consumer.resume([p])
            log.info("Kafka source: %s resumes at %s", self._key(p), where)


class ConfluentSource(KafkaSource):
    """:class:`KafkaSource` on confluent-kafka (librdkafka): the same settings, records, guarantees and capabilities.

    Besides ``KafkaSource``'s settings it takes any librdkafka consumer property
    by its dotted name (``partition.assignment.strategy``, ``group.protocol``,
    ...); rebalance callbacks and the revocation handler run on the caller's
    thread, inside :meth:`poll`.
    """

    ADAPTER = Confluent
