"""The confluent-kafka source: :class:`ConfluentSource`, the librdkafka counterpart of ``KafkaSource``.

Same settings, records, guarantees and capabilities as
:class:`~connectors.kafka.KafkaSource` (see :mod:`connectors.kafka`); what
differs is where things run. librdkafka fetches and heartbeats on its own C
threads, and calls the rebalance callbacks (``on_assign``, ``on_revoke``,
``on_lost``) on the engine's thread, inside :meth:`~ConfluentSource.poll`
(or :meth:`~ConfluentSource.close`): so the resume policy positions a newly
assigned partition right in ``on_assign``, and the revocation handler's
commit is a plain synchronous commit there (the heartbeats go on meanwhile).
"""

from __future__ import annotations

import logging
import threading
import typing

from stream_nb.engine import RebalanceCallback, Record, ResumePolicy, RevocationHandler, make_records
from stream_nb.exceptions import CommitError, ConfigError

from ._client import Fixed, partition_key, servers
from ._confluent_client import client_config, create, kafka_error, library, resolve, wait_for_broker
from ._errors import ConnectorUnavailable
from ._feedback_topic import FeedbackTap, check_copartitioned
from ._source import KafkaSource

__all__ = ["ConfluentSource"]

log = logging.getLogger("connectors.kafka")

_INVALID = -1001  # librdkafka's OFFSET_INVALID: nothing committed / no position yet

#: A partition inside the source: (topic, number) -- the input's, or with ``feedback_topic`` the labels'.
_TP = tuple[str, int]


class ConfluentSource:
    """A :class:`~stream_nb.engine.Source` reading one topic with confluent-kafka as a consumer-group member.

    Takes :class:`~connectors.kafka.KafkaSource`'s settings (``DEFAULT_CONFIG``
    below is the same), the kafka-python names of the settings both clients
    share (``group_instance_id``, ``security_protocol``, ``sasl_plain_username``,
    ``ssl_cafile``, ... translated to librdkafka's) and any librdkafka consumer
    property by its dotted name (``partition.assignment.strategy``,
    ``group.protocol``, ...). ``enable_auto_commit`` must stay ``False``.

    It offers the same optional capabilities as ``KafkaSource``
    (:class:`~stream_nb.engine.Pausable`, :class:`~stream_nb.engine.ReportsLag`,
    :class:`~stream_nb.engine.Rebalancing`, :class:`~stream_nb.engine.ResumesByPolicy`,
    :class:`~stream_nb.engine.HandlesRevocation`, :class:`~stream_nb.engine.Repositionable`,
    :class:`~stream_nb.engine.ReportsCommitted`); rebalance callbacks and the
    revocation handler run on the caller's thread, inside :meth:`poll`. With
    ``feedback_topic`` it reads that topic too, co-partitioned (checked at
    start, range assignor), and sets its records aside in :attr:`feedback`.
    """

    DEFAULT_CONFIG: dict = dict(KafkaSource.DEFAULT_CONFIG)
    #: Consumer keys the source sets itself or only takes with one value.
    FIXED = {
        "enable_auto_commit": KafkaSource.FIXED["enable_auto_commit"],
        "enable.auto.offset.store": Fixed(None, "the source commits explicit offsets"),
        "on_commit": Fixed(None, "the source commits synchronously"),
        "logger": Fixed(None, "the connector routes librdkafka's logs to Python logging"),
        "error_cb": Fixed(None, "the source watches the brokers' state itself"),
    }

    def __init__(self, **configs):
        ck = library()
        self._ck = ck
        cfg = resolve("KafkaSource (confluent)", self.DEFAULT_CONFIG, self.FIXED, configs, role="consumer")
        self.config = cfg
        self.topic: str = cfg["topic"]
        #: The labels of ``feedback_topic`` (None without it): the join's source.
        self.feedback = FeedbackTap(cfg["feedback_topic"], self.topic) if cfg["feedback_topic"] else None
        self._topics = (self.topic,) + ((cfg["feedback_topic"],) if self.feedback is not None else ())
        self._commit_timeout_s = cfg["commit_timeout_ms"] / 1000
        self._lock = threading.Lock()
        self._pending_seeks: dict[_TP, int] = {}
        self._resume_policy: ResumePolicy | None = None
        self._revocation_handler: RevocationHandler | None = None
        self._callbacks: list[RebalanceCallback] = []
        self._assigned: set[_TP] = set()  # partitions of the topics subscribed
        self._to_settle: set[_TP] = set()  # assigned, to be positioned by the policy at the next poll
        self._paused: set[_TP] = set()  # paused by pause(), for back-pressure
        self._keys: dict[_TP, str] = {}
        self._closed = False
        conf = client_config(cfg)
        conf["enable.auto.commit"] = False
        conf["enable.auto.offset.store"] = False
        conf["error_cb"] = self._on_client_error
        if self.feedback is not None:  # partition p of both topics to one member
            if str(conf.setdefault("partition.assignment.strategy", "range")).strip() != "range":
                raise ConfigError("KafkaSource (confluent): partition.assignment.strategy must stay range with "
                                  "feedback_topic: it keeps each label's partition with its event's")
        self._brokers_down = False  # librdkafka said so; cleared once a broker answers again
        strategy = str(conf.get("partition.assignment.strategy", ""))
        self._incremental = "cooperative" in strategy or str(conf.get("group.protocol", "")).lower() == "consumer"
        role = f"consumer of topic {self.topic!r}"
        self._consumer = create(ck.Consumer, conf, role=role)
        try:
            metadata = wait_for_broker(self._consumer, cfg, role=role, topic=self.topic)
            found = metadata.topics.get(self.topic)
            if found is None or found.error is not None:
                log.warning("Kafka source: topic %r does not exist (yet); waiting for it", self.topic)
            if self.feedback is not None:
                found = {t: wait_for_broker(self._consumer, cfg, role=role, topic=t).topics.get(t)
                         for t in self._topics}
                check_copartitioned(*(x for t in self._topics for x in (
                    t, len(found[t].partitions) if found[t] is not None and found[t].error is None else None)))
            self._consumer.subscribe(list(self._topics), on_assign=self._on_assign, on_revoke=self._on_revoke,
                                     on_lost=self._on_lost)
        except BaseException:
            self._consumer.close()
            raise
        log.info("Kafka source (confluent-kafka): topic %r, group %r, bootstrap %s",
                 self.topic, cfg["group_id"], servers(cfg["bootstrap_servers"]))

    # -- Source protocol --------------------------------------------------

    @property
    def exhausted(self) -> bool:
        """Always False: a Kafka topic has no end."""
        return False

    def poll(self, max_records: int, timeout: float) -> list[Record]:
        """Return up to ``max_records`` records, waiting at most ``timeout`` seconds for the first (partition order kept)."""
        if self._to_settle:
            self._settle()
        # Like kafka-python's poll: return as soon as any record is there, with what is there.
        # (consume(n, timeout) alone would wait for n records or the whole timeout.)
        consume, n = self._consumer.consume, max(1, max_records)
        messages = consume(n, 0)
        if not messages:
            first = self._consumer.poll(max(0.0, timeout)) if timeout > 0 else None
            if first is None:
                return []
            messages = [first, *consume(n - 1, 0)] if n > 1 else [first]
        self._brokers_down = False
        if self.feedback is None and not any(map(self._ck.Message.error, messages)):
            out, aside = self._records(messages), []  # the usual poll: one topic, no error
        else:
            out, aside = self._sort(messages)
        if self._to_settle:  # reposition() ran meanwhile (another thread): drop what it rewinds
            with self._lock:
                unsettled = {self._key(p) for p in self._to_settle}
            out = [r for r in out if r.partition not in unsettled]
            aside = [r for r in aside if r.partition not in unsettled]
        if aside:
            self.feedback.put(aside)
        return out

    def _records(self, messages: list) -> list[Record]:
        """The records of a poll of the input topic's messages, none an error: built column by column."""
        message, topic, keys = self._ck.Message, self.topic, self._keys
        partitions = list(map(message.partition, messages))
        offsets = list(map(message.offset, messages))
        named = {}  # partition number -> "<topic>-<partition>"
        for partition in set(partitions):
            name = keys.get((topic, partition))
            named[partition] = name if name is not None else keys.setdefault((topic, partition),
                                                                             partition_key(topic, partition))
        return make_records(
            list(map(message.value, messages)), list(map(message.key, messages)),
            list(map(named.__getitem__, partitions)),
            [{"topic": topic, "partition": p, "offset": o} for p, o in zip(partitions, offsets)],
            [o + 1 for o in offsets])

    def _sort(self, messages: list) -> tuple[list[Record], list[Record]]:
        """The records of the input topic's messages and of the feedback topic's; errors reported."""
        keys = self._keys
        out: list[Record] = []
        aside: list[Record] = []  # the feedback topic's
        append = out.append
        ours = self.topic
        for m in messages:
            if m.error() is not None:
                self._on_message_error(m.error())
                continue
            topic, partition = m.topic(), m.partition()
            key = keys.get((topic, partition))
            if key is None:
                key = keys[(topic, partition)] = partition_key(topic, partition)
            offset = m.offset()
            (append if topic == ours else aside.append)(Record(
                m.value(), m.key(), key, {"topic": topic, "partition": partition, "offset": offset}, offset + 1))
        return out, aside

    def commit(self, positions: dict[str, int], metadata: str = "") -> None:
        """Commit ``{"<topic>-<partition>": next_offset}`` synchronously, each with ``metadata``.

        Partitions no longer assigned are skipped with a warning; a rejected
        commit raises :class:`CommitError`.
        """
        if not positions:
            return
        offsets, skipped = [], []
        for key, next_offset in positions.items():
            partition = self._partition(key)
            if partition in self._assigned:
                offsets.append(self._ck.TopicPartition(*partition, int(next_offset), metadata))
            else:
                skipped.append(key)
        if skipped:
            log.warning("Kafka source: not committing %s: no longer assigned to this consumer "
                        "(their new owner resumes from the last commit)", ", ".join(sorted(skipped)))
        if not offsets:
            return
        try:
            result = self._consumer.commit(offsets=offsets, asynchronous=False)
        except self._ck.KafkaException as exc:
            raise CommitError(self._commit_failed(kafka_error(exc) or exc)) from None
        failed = [tp for tp in result or () if tp.error is not None]
        if failed:
            raise CommitError(self._commit_failed(failed[0].error))

    def seek(self, positions: dict[str, int]) -> None:
        """Resume each partition at the given offset; partitions not assigned yet are sought when assigned."""
        with self._lock:
            for key, offset in positions.items():
                partition = self._partition(key)
                offset = int(offset)
                if offset < 0:
                    raise ValueError(f"cannot seek {key} to negative offset {offset}")
                self._pending_seeks[partition] = offset
                if partition in self._assigned:
                    self._to_settle.add(partition)

    def close(self) -> None:
        """Leave the group (the revocation handler runs first) and close. Never commits by itself."""
        if self._closed:
            return
        self._closed = True
        self._consumer.close()

    # -- extras -------------------------------------------------------------

    @property
    def assignment(self) -> frozenset[str]:
        """The partitions (``"<topic>-<partition>"``) currently assigned to this consumer."""
        return frozenset(self._key(p) for p in self._assigned)

    def add_rebalance_callback(self, callback: RebalanceCallback) -> None:
        """Call ``callback(event, partitions)`` on every rebalance, on the thread calling :meth:`poll`."""
        self._callbacks.append(callback)

    def set_resume_policy(self, policy: ResumePolicy | None) -> None:
        """Position every partition assigned from now on with ``policy(partition, committed, metadata)``."""
        self._resume_policy = policy

    def set_revocation_handler(self, handler: RevocationHandler | None) -> None:
        """Call ``handler(partitions)`` before partitions are revoked (also on close), inside :meth:`poll`."""
        self._revocation_handler = handler

    def reposition(self) -> None:
        """Position every assigned partition again with the resume policy before its next record."""
        with self._lock:
            self._to_settle |= self._assigned
        if self.feedback is not None:
            self.feedback.drop()  # read again from where the partitions are positioned

    def group_metadata(self):
        """This consumer's group membership, for ``Producer.send_offsets_to_transaction``."""
        return self._consumer.consumer_group_metadata()

    def transaction_offsets(self, positions: dict[str, int], metadata: str = "") -> list:
        """``TopicPartition``s with the offsets of the assigned partitions among ``positions``."""
        return [self._ck.TopicPartition(*p, int(v), metadata)
                for p, v in ((self._partition(k), v) for k, v in positions.items()) if p in self._assigned]

    def pause(self) -> None:
        """Stop fetching every assigned partition (back-pressure); :meth:`poll` keeps the membership alive."""
        todo = self._assigned - self._paused
        if todo:
            self._consumer.pause(self._tps(todo))
        self._paused = set(self._assigned)

    def resume(self) -> None:
        """Fetch again the partitions :meth:`pause` paused (and are still assigned)."""
        todo = self._paused & self._assigned
        self._paused = set()
        if todo:
            self._consumer.resume(self._tps(todo))

    #: Unit of :meth:`lag`.
    lag_unit = "records"

    def lag(self, timeout: float = 2.0) -> dict[str, int]:
        """Records after this consumer's position in each assigned partition (high watermark - position).

        The high watermark of a partition being fetched comes with every fetch
        response (librdkafka keeps it: no request, no wait); a paused
        partition's, or any after librdkafka reported its brokers down, is
        asked for (one request each, which waits behind a pending fetch).
        Raises :class:`ConnectorUnavailable` when the broker does not answer
        within ``timeout`` seconds; partitions not positioned yet are left out.
        """
        with self._lock:
            todo = sorted(self._assigned - self._to_settle)
        if not todo:
            return {}
        positions = {(tp.topic, tp.partition): tp.offset for tp in self._consumer.position(self._tps(todo))}
        out: dict[str, int] = {}
        for partition in todo:
            tp = self._ck.TopicPartition(*partition)
            high = _INVALID
            if not (self._brokers_down or partition in self._paused):
                _, high = self._consumer.get_watermark_offsets(tp, cached=True)
            if high is None or high < 0:
                try:
                    _, high = self._consumer.get_watermark_offsets(tp, timeout=max(0.001, timeout), cached=False)
                except self._ck.KafkaException as exc:
                    bootstrap = servers(self.config["bootstrap_servers"])
                    err = kafka_error(exc)
                    raise ConnectorUnavailable(
                        f"Kafka source: no end offsets of {self.topic!r} from {bootstrap} within "
                        f"{timeout * 1000:.0f} ms ({err.name() if err is not None else type(exc).__name__})",
                        bootstrap_servers=bootstrap,
                    ) from None
                self._brokers_down = False  # answered
            position = positions.get(partition, _INVALID)
            if position is not None and position >= 0 and high is not None and high >= 0:
                out[self._key(partition)] = max(0, high - position)
        return out

    def committed(self, partitions: typing.Iterable[str] | None = None) -> dict[str, int | None]:
        """The group's committed offsets (``None`` where nothing is committed); defaults to the assigned ones."""
        keys = sorted(self.assignment) if partitions is None else list(partitions)
        if not keys:
            return {}
        found = self._fetch_committed([self._partition(k) for k in keys])
        return {key: found[self._partition(key)][0] for key in keys}

    def __enter__(self) -> ConfluentSource:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    # -- internals ----------------------------------------------------------

    def _key(self, partition: _TP) -> str:
        key = self._keys.get(partition)
        if key is None:
            key = self._keys[partition] = partition_key(*partition)
        return key

    def _partition(self, key: str) -> _TP:
        topic, sep, partition = key.rpartition("-")
        if not sep or not partition.isdigit() or topic not in self._topics:
            raise ValueError(f"{key!r} is not a partition of topic {self.topic!r} (expected '{self.topic}-<n>')")
        return topic, int(partition)

    def _tps(self, partitions: typing.Iterable[_TP]) -> list:
        return [self._ck.TopicPartition(*p) for p in sorted(partitions)]

    def _commit_failed(self, error) -> str:
        text = error.str() if hasattr(error, "str") else repr(error)
        return (f"Kafka source: committing offsets of group {self.config['group_id']!r} failed: {text}; the "
                f"records after the last successful commit will be processed again")

    def _on_client_error(self, error) -> None:
        # librdkafka's client-level errors, served inside consume() on the caller's thread
        if error.code() in (self._ck.KafkaError._ALL_BROKERS_DOWN, self._ck.KafkaError._TRANSPORT):
            self._brokers_down = True
        if error.fatal():
            log.error("Kafka source: fatal client error: %s", error.str())
        else:
            log.debug("Kafka source: client error: %s", error.str())

    def _on_message_error(self, error) -> None:
        ck = self._ck
        if error.code() == ck.KafkaError._PARTITION_EOF:
            return
        if error.code() == ck.KafkaError.UNKNOWN_TOPIC_OR_PART:
            log.warning("Kafka source: topic %r does not exist (yet); waiting for it", self.topic)
            return
        if error.fatal():
            raise ConnectorUnavailable(f"Kafka source: fatal consumer error: {error.str()}")
        log.warning("Kafka source: %s", error.str())

    def _fetch_committed(self, partitions: list[_TP]) -> dict[_TP, tuple[int | None, str | None]]:
        """``{partition: (committed offset or None, metadata or None)}``, one request."""
        found = self._consumer.committed(self._tps(partitions), timeout=self._commit_timeout_s)
        out = {}
        for tp in found:
            if tp.error is not None:
                raise self._ck.KafkaException(tp.error)
            offset = tp.offset if tp.offset >= 0 else None
            out[(tp.topic, tp.partition)] = (offset, (tp.metadata if offset is not None else None))
        return out

    def _targets(self, partitions: list[_TP]) -> dict[_TP, int | None]:
        """Where each partition resumes: a pending seek, else the resume policy (else the committed offset)."""
        with self._lock:
            seeks = {p: self._pending_seeks.pop(p) for p in partitions if p in self._pending_seeks}
        targets: dict[_TP, int | None] = dict(seeks)
        rest = [p for p in partitions if p not in seeks]
        if rest and self._resume_policy is not None:
            committed = self._fetch_committed(rest)
            for p in rest:
                offset, metadata = committed[p]
                target = self._resume_policy(self._key(p), offset, metadata)
                targets[p] = target if target is not None else offset
        return targets

    def _where(self, partition: _TP, target: int | None) -> str:
        if target is not None:
            return f"offset {target}"
        return "the committed offset (or auto_offset_reset)"

    def _notify(self, event: str, partitions: list[_TP]) -> None:
        keys = [self._key(p) for p in partitions]
        log.info("Kafka source: partitions %s: %s", event, ", ".join(keys) or "none",
                 extra={"event": "rebalance", "change": event, "partitions": keys})
        for callback in list(self._callbacks):
            try:
                callback(event, keys)
            except Exception:  # noqa: BLE001 - a failing hook must not break the rebalance
                log.exception("Kafka source: rebalance callback %r failed", callback)

    def _on_assign(self, consumer, tps) -> None:
        # librdkafka calls this inside consume(), on the engine's thread.
        partitions = sorted((tp.topic, tp.partition) for tp in tps if tp.topic in self._topics)
        try:
            targets = self._targets(partitions)
        except self._ck.KafkaException as exc:  # no committed offsets yet: position at the next poll
            log.warning("Kafka source: no committed offsets yet (%s); retrying at the next poll", exc)
            targets = {}
            with self._lock:
                self._to_settle |= set(partitions)
        assign = []
        for p in partitions:
            target = targets.get(p)
            assign.append(self._ck.TopicPartition(*p, int(target)) if target is not None
                          else self._ck.TopicPartition(*p))
            if p in targets:
                log.info("Kafka source: %s resumes at %s", self._key(p), self._where(p, target))
        if self._incremental:
            consumer.incremental_assign(assign)
        else:
            consumer.assign(assign)
        with self._lock:
            self._assigned = (self._assigned | set(partitions)) if self._incremental else set(partitions)
            self._paused &= self._assigned
        self._notify("assigned", partitions)

    def _gone(self, tps) -> list[_TP]:
        partitions = sorted((tp.topic, tp.partition) for tp in tps if tp.topic in self._topics)
        with self._lock:
            self._assigned -= set(partitions)
            self._to_settle -= set(partitions)
            self._paused -= set(partitions)
        return partitions

    def _on_revoke(self, consumer, tps) -> None:
        partitions = sorted((tp.topic, tp.partition) for tp in tps if tp.topic in self._topics)
        if partitions:
            self._notify("revoked", partitions)
            self._commit_before_revoke(partitions)
        self._gone(tps)
        if self._incremental:
            consumer.incremental_unassign(tps)
        else:
            consumer.unassign()

    def _on_lost(self, consumer, tps) -> None:
        partitions = self._gone(tps)
        if partitions:
            self._notify("lost", partitions)
        if self._incremental:
            consumer.incremental_unassign(tps)
        else:
            consumer.unassign()

    def _commit_before_revoke(self, partitions: list[_TP]) -> None:
        """Let the revocation handler snapshot, then commit what it returns (still owning the partitions)."""
        handler = self._revocation_handler
        if handler is None:
            return
        keys = [self._key(p) for p in partitions]
        try:
            result = handler(keys)
        except Exception:  # noqa: BLE001 - the rebalance must go on
            log.exception("Kafka source: the revocation handler failed; nothing committed")
            return
        if not result:
            return
        positions, metadata, done = result
        try:
            self.commit(positions, metadata)
        except CommitError as exc:  # the new owner resumes from the last commit
            log.warning("Kafka source: committing %s before the partitions went failed: %s",
                        ", ".join(sorted(positions)), exc)
            done(False)
            return
        log.info("Kafka source: committed %s before the partitions went",
                 ", ".join(f"{k}={v}" for k, v in sorted(positions.items())))
        done(True)

    def _settle(self) -> None:
        """Seek the partitions :meth:`seek` or :meth:`reposition` marked, where the policy says."""
        with self._lock:
            todo = sorted(self._to_settle & self._assigned)
            self._to_settle = set()
        if not todo:
            return
        try:
            targets = self._targets(todo)
        except self._ck.KafkaException as exc:
            log.warning("Kafka source: no committed offsets yet (%s); retrying at the next poll", exc)
            with self._lock:
                self._to_settle |= set(todo)
            return
        for p in todo:
            target = targets.get(p)
            if target is None:
                target = self._start_offset(p)
            try:
                self._consumer.seek(self._ck.TopicPartition(*p, int(target)))
            except self._ck.KafkaException as exc:  # not fetching yet: try again at the next poll
                log.debug("Kafka source: seeking %s failed (%s); retrying", self._key(p), exc)
                with self._lock:
                    self._to_settle.add(p)
                    if p not in targets or targets[p] is None:
                        continue
                    self._pending_seeks.setdefault(p, int(target))
                continue
            log.info("Kafka source: %s resumes at %s", self._key(p), self._where(p, target))

    def _start_offset(self, partition: _TP) -> int:
        """Where ``auto_offset_reset`` puts a partition with nothing committed."""
        ck = self._ck
        return ck.OFFSET_END if self.config["auto_offset_reset"] == "latest" else ck.OFFSET_BEGINNING
