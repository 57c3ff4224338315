"""Kafka connector: a consumer-group :class:`KafkaSource` and idempotent-producer :class:`KafkaSink`.

Implements the engine's :class:`~stream_nb.engine._io.Source` and
:class:`~stream_nb.engine._io.Sink` with kafka-python only.

Delivery guarantee: at least once. The source never commits by itself
(``enable_auto_commit=False``); the engine flushes every sink and only then
calls :meth:`KafkaSource.commit` with the offsets after the last processed
record of each partition. After a crash the group resumes at the last commit,
so an event may be predicted twice but is never skipped. Every output is
produced with ``acks="all"`` by an idempotent producer, and
:meth:`KafkaSink.flush` raises :class:`DeliveryError` if any record failed.

Configuration follows kafka-python: each component has a ``DEFAULT_CONFIG``;
keys it does not know are rejected with :class:`~stream_nb.exceptions.ConfigError`
naming the key and listing the accepted ones. Any other kafka-python key of the
underlying ``KafkaConsumer`` / ``KafkaProducer`` (``security_protocol``,
``sasl_mechanism``, ``sasl_plain_username``, ``ssl_cafile``, ...) passes
through. Values given as strings (``--kafka-config linger_ms=20``) are converted
to the type of the key's default (int, float, bool, ``none``).

Topics
------
* The **input topic** is never created by stream_nb: the consumer runs with
  ``allow_auto_create_topics=False`` so a typo in ``--input-topic`` does not
  silently create an empty topic. If it does not exist yet the consumer waits
  for it (a warning is logged).
* The **output and dead-letter topics** are created at start-up if missing
  (``create_topic=True``), through the admin API, with as many partitions as the
  input topic (so keys spread like the input) unless ``topic_partitions`` is
  set, and the broker's ``default.replication.factor`` unless
  ``topic_replication_factor`` is set. If the principal may not create topics,
  a warning is logged and producing relies on the topic existing (or on the
  broker's ``auto.create.topics.enable``). With ``create_topic=False`` nothing
  is created.

Errors
------
* :class:`ConnectorUnavailable` (a :class:`ConnectionError`): no broker
  answered at ``bootstrap_servers`` within ``bootstrap_timeout_ms`` at start-up.
  Retry with backoff.
* :class:`DeliveryError`: an output record could not be written. The sink stays
  failed; the engine must not commit and should restart from the last commit.
* :class:`~stream_nb.exceptions.CommitError`: the offset commit failed,
  typically because the group is rebalancing. Nothing is lost (records after
  the last commit are delivered again); the engine logs it and commits at its
  next checkpoint, after a poll has completed the rebalance.
* :class:`~stream_nb.exceptions.ConfigError`: an unknown key or a value that
  kafka-python rejects.

Snapshots (``--snapshot-dir``, see :mod:`stream_nb.engine._checkpoint`) use
three hooks of :class:`KafkaSource`: :meth:`~KafkaSource.set_resume_policy`
decides where each partition resumes when it is assigned (the partition is
paused until it is positioned, on the engine's thread);
:meth:`~KafkaSource.set_revocation_handler` flushes, snapshots and hands back
the offsets to commit before partitions are revoked (the commit is awaited on
kafka-python's IO thread, so heartbeats go on); :meth:`~KafkaSource.reposition`
positions every assigned partition again after the engine rewound.
:mod:`connectors.transactional_kafka` adds the exactly-once (transactional) outputs.
"""

from __future__ import annotations

import logging
import threading
import typing

import kafka.errors as Errors
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.consumer.subscription_state import AsyncConsumerRebalanceListener
from kafka.structs import OffsetAndMetadata, TopicPartition

from stream_nb.engine import Record
from stream_nb.exceptions import CommitError, ConfigError, StreamNBError

__all__ = [
    "KafkaSource",
    "KafkaSink",
    "make_source",
    "make_sink",
    "make_dead_letter_sink",
    "ConnectorError",
    "ConnectorUnavailable",
    "DeliveryError",
    "CommitError",
    "DAEMON_KEYS",
]

log = logging.getLogger(__name__)

# kafka-python's own client factory (KafkaNetClient); wrapped by _connect().
_NET_CLIENT = KafkaConsumer.DEFAULT_CONFIG["kafka_client"]
# Raised by older kafka-python releases when no bootstrap server answers.
_NO_BROKERS = tuple(e for e in (getattr(Errors, "NoBrokersAvailable", None),) if e is not None)
_UNAVAILABLE = (Errors.KafkaTimeoutError, Errors.KafkaConnectionError) + _NO_BROKERS


# --------------------------------------------------------------------- errors


class ConnectorError(StreamNBError):
    """A connector could not talk to its external system."""


class ConnectorUnavailable(ConnectorError, ConnectionError):
    """No Kafka broker answered at start-up. Retry later (with backoff).

    Attributes
    ----------
    bootstrap_servers
        The address that was tried.
    """

    def __init__(self, message: str, *, bootstrap_servers=None):
        super().__init__(message)
        self.bootstrap_servers = bootstrap_servers


class DeliveryError(ConnectorError, RuntimeError):
    """One or more records handed to a :class:`KafkaSink` were not written.

    Attributes
    ----------
    topic
        The sink's topic.
    failed
        How many records failed so far.
    """

    def __init__(self, message: str, *, topic: str, failed: int):
        super().__init__(message)
        self.topic = topic
        self.failed = failed


# --------------------------------------------------------------------- config

# kafka-python keys whose value is a Python object, not settable from a string.
_OBJECT_KEYS = frozenset({
    "selector", "socket_options", "partition_assignment_strategy", "metric_reporters",
    "partitioner", "ssl_context", "sasl_oauth_token_provider",
    "default_offset_commit_callback", "kafka_client",
})
# Keys whose default is None but whose value is an integer.
_INT_OR_NONE_KEYS = frozenset({
    "receive_buffer_bytes", "send_buffer_bytes", "topic_partitions", "topic_replication_factor",
})
_TRUE = frozenset({"true", "1", "yes", "on"})
_FALSE = frozenset({"false", "0", "no", "off"})


def _coerce(component: str, key: str, value, default):
    """Convert a string value (from ``KEY=VALUE`` on the command line) to the key's type."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    try:
        if key in _OBJECT_KEYS:
            raise ConfigError(
                f"{component}: config key {key!r} takes a Python object and cannot be set "
                f"from the string {value!r}; pass it through the Python API"
            )
        if key == "acks":
            return "all" if text.lower() == "all" else int(text)
        if key == "api_version":
            return tuple(int(part) for part in text.split("."))
        if default is None and text.lower() in ("none", "null"):
            return None
        if isinstance(default, bool):
            if text.lower() in _TRUE:
                return True
            if text.lower() in _FALSE:
                return False
            raise ValueError("expected true or false")
        if isinstance(default, int) or key in _INT_OR_NONE_KEYS:
            return int(text)
        if isinstance(default, float):
            return float(text)
    except ValueError as exc:
        if isinstance(exc, ConfigError):
            raise
        raise ConfigError(
            f"{component}: config key {key!r} got {value!r}, which is not a valid "
            f"{'version like 3.9' if key == 'api_version' else type(default).__name__ if default is not None else 'integer'}"
        ) from None
    return value


class _Fixed(typing.NamedTuple):
    allowed: typing.Callable[[object], bool] | None  # None: the key may never be set
    why: str


def _resolve(component: str, own: dict, client_defaults: dict, fixed: dict, config: dict) -> dict:
    """Validate ``config`` against ``own`` keys and the client's keys; return the merged config."""
    accepted = sorted((set(own) | set(client_defaults)) - {k for k, f in fixed.items() if f.allowed is None})
    merged = dict(own)
    for key, value in config.items():
        if key not in own and key not in client_defaults:
            raise ConfigError(
                f"{component}: unknown config key {key!r}; accepted keys: {', '.join(accepted)}"
            )
        value = _coerce(component, key, value, own.get(key, client_defaults.get(key)))
        rule = fixed.get(key)
        if rule is not None and (rule.allowed is None or not rule.allowed(value)):
            raise ConfigError(f"{component}: config key {key!r}={value!r} is not allowed: {rule.why}")
        merged[key] = value
    topic = merged.get("topic")
    if not isinstance(topic, str) or not topic:
        raise ConfigError(f"{component}: config key 'topic' is required (a topic name), got {topic!r}")
    return merged


def _connect(factory, config: dict, *, role: str):
    """Create a kafka-python client; map "no broker" and bad-config failures to our errors.

    kafka-python starts an IO thread before bootstrapping and leaves it running
    when bootstrap fails; the ``kafka_client`` hook lets us close it so that a
    caller retrying in a loop does not leak one thread per attempt.
    """
    created = []

    def kafka_client(**kwargs):
        client = _NET_CLIENT(**kwargs)
        created.append(client)
        return client

    def discard():
        for client in created:
            try:
                client.close()
            except Exception:  # noqa: BLE001 - best effort cleanup of a half-built client
                log.debug("closing a half-built Kafka client failed", exc_info=True)

    bootstrap = _servers(config.get("bootstrap_servers"))
    try:
        return factory(kafka_client=kafka_client, **config)
    except _UNAVAILABLE as exc:
        discard()
        raise ConnectorUnavailable(
            f"Kafka {role}: no broker reachable at {bootstrap} within "
            f"{config.get('bootstrap_timeout_ms')} ms ({type(exc).__name__}); check that Kafka "
            f"is running and that bootstrap_servers is right",
            bootstrap_servers=bootstrap,
        ) from exc
    except (Errors.KafkaConfigurationError, ValueError, TypeError) as exc:
        discard()
        raise ConfigError(f"Kafka {role}: invalid configuration: {exc}") from exc
    except BaseException:
        discard()
        raise


def _servers(bootstrap) -> str:
    """``bootstrap_servers`` (a string or a list) as one readable string."""
    return ",".join(bootstrap) if isinstance(bootstrap, (list, tuple)) else str(bootstrap)


def _partition_key(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


# --------------------------------------------------------------------- source


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


RebalanceCallback = typing.Callable[[str, list], None]
#: ``policy(partition, committed_offset or None, committed_metadata or None) -> offset or None``
ResumePolicy = typing.Callable[[str, "int | None", "str | None"], "int | None"]
#: ``handler(partitions) -> (positions to commit, commit metadata, done(ok)) or None``
RevocationHandler = typing.Callable[[list], typing.Any]


class KafkaSource:
    """A :class:`~stream_nb.engine._io.Source` reading one topic as a member of a consumer group.

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

    Any other ``KafkaConsumer`` key passes through, except ``enable_auto_commit``
    (must stay ``False``), ``key_deserializer`` / ``value_deserializer`` (records
    carry raw bytes) and ``kafka_client`` (used internally).

    Rebalances: :attr:`assignment` is the set of partitions currently owned, and
    :meth:`add_rebalance_callback` registers ``callback(event, partitions)``,
    called with ``event`` in ``"revoked"``, ``"assigned"``, ``"lost"``. It runs
    on kafka-python's IO thread, which also heartbeats: keep it short (set a
    flag). Seeks requested for partitions not yet assigned are applied when
    they are assigned.
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
    }
    _OWN_KEYS = frozenset({"topic", "commit_timeout_ms", "close_timeout_ms"})
    _FIXED = {
        "enable_auto_commit": _Fixed(
            lambda v: v is False,
            "it must stay False; the engine commits only after the outputs are flushed",
        ),
        "key_deserializer": _Fixed(None, "records carry raw bytes; the engine decodes them"),
        "value_deserializer": _Fixed(None, "records carry raw bytes; the engine decodes them"),
        "kafka_client": _Fixed(None, "the connector sets it"),
    }

    def __init__(self, **configs):
        cfg = _resolve("KafkaSource", self.DEFAULT_CONFIG, KafkaConsumer.DEFAULT_CONFIG, self._FIXED, configs)
        self.config = cfg
        self.topic: str = cfg["topic"]
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
        client_cfg = {k: v for k, v in cfg.items() if k not in self._OWN_KEYS}
        client_cfg["enable_auto_commit"] = False
        self._consumer = _connect(KafkaConsumer, client_cfg, role=f"consumer of topic {self.topic!r}")
        # kafka-python 3.0 takes allow_auto_create_topics but builds its metadata client without
        # it, so every metadata request would allow creation; hand the setting on ourselves
        cluster = getattr(self._consumer, "_cluster", None)
        if cluster is not None and "allow_auto_create_topics" in getattr(cluster, "config", {}):
            cluster.config["allow_auto_create_topics"] = cfg["allow_auto_create_topics"]
        try:
            self._consumer.subscribe([self.topic], listener=_RebalanceListener(self))
        except BaseException:
            self._consumer.close(autocommit=False, timeout_ms=self._close_timeout_ms)
            raise
        log.info(
            "Kafka source: topic %r, group %r, bootstrap %s",
            self.topic, cfg["group_id"], _servers(cfg["bootstrap_servers"]),
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
        for tp, messages in batches.items():
            key = self._key(tp)
            topic, partition = tp
            out.extend([
                Record(m.value, m.key, key, {"topic": topic, "partition": partition, "offset": m.offset}, m.offset + 1)
                for m in messages
            ])
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
            bootstrap = _servers(self.config["bootstrap_servers"])
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
            key = self._keys[tp] = _partition_key(tp.topic, tp.partition)
        return key

    def _tp(self, key: str) -> TopicPartition:
        topic, sep, partition = key.rpartition("-")
        if not sep or not partition.isdigit() or topic != self.topic:
            raise ValueError(f"{key!r} is not a partition of topic {self.topic!r} (expected '{self.topic}-<n>')")
        return TopicPartition(topic, int(partition))

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


# ----------------------------------------------------------------------- sink


class KafkaSink:
    """A :class:`~stream_nb.engine._io.Sink` producing to one topic.

    Each :meth:`send` is acknowledged by all in-sync replicas (``acks="all"``)
    through an idempotent producer, so retries neither duplicate nor reorder
    records of a partition. A record that finally fails is never dropped
    silently: :meth:`flush` (and every later :meth:`send`/:meth:`flush`) raises
    :class:`DeliveryError`.

    Configuration (``KafkaSink(**config)``); defaults in ``DEFAULT_CONFIG``:

    topic (str, required)
        The topic written to.
    bootstrap_servers (str or list, default ``"localhost:9092"``)
        ``host:port`` of one or more brokers.
    client_id (str, default ``"stream-nb"``)
        Shown in broker logs and metrics.
    acks (default ``"all"``)
        Fixed: ``"all"`` (or ``-1``) is the only accepted value.
    enable_idempotence (bool, default ``True``)
        Fixed: ``True`` is the only accepted value.
    linger_ms (int, default ``5``)
        How long the producer waits to fill a batch; the engine flushes at the
        end of each of its batches anyway, so this only shapes batching inside one.
    batch_size (int, default ``262144``)
        Maximum bytes per partition batch (kafka-python's default is 16384).
    compression_type (str or None, default ``None``)
        ``"gzip"``, ``"snappy"``, ``"lz4"``, ``"zstd"`` or ``None``.
    delivery_timeout_ms (int, default ``120000``)
        Upper bound on the time to report success or failure of a record, so
        :meth:`flush` cannot hang forever on an unreachable broker.
    bootstrap_timeout_ms (int, default ``10000``)
        How long to wait for a broker at start-up before :class:`ConnectorUnavailable`.
    metrics_enabled (bool, default ``False``)
        kafka-python's client-side metrics; off because they cost CPU per record.
    create_topic (bool, default ``True``)
        Create the topic at start-up if it does not exist (see the module docstring).
    topic_partitions (int or None, default ``None``)
        Partitions of a created topic; ``None``: as many as ``partitions_like``
        has, else the broker's ``num.partitions``.
    topic_replication_factor (int or None, default ``None``)
        Replication factor of a created topic; ``None``: the broker's
        ``default.replication.factor``.
    partitions_like (str or None, default ``None``)
        A topic (the input topic) whose partition count a created topic copies.
    topic_timeout_ms (int, default ``30000``)
        How long topic creation may take.
    close_timeout_ms (int, default ``30000``)
        How long :meth:`close` waits for the producer to shut down after flushing.

    Any other ``KafkaProducer`` key passes through, except ``key_serializer`` /
    ``value_serializer`` (the engine sends bytes), ``transactional_id`` (not
    used) and ``kafka_client`` (used internally).
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
    _OWN_KEYS = frozenset({
        "topic", "create_topic", "topic_partitions", "topic_replication_factor",
        "partitions_like", "topic_timeout_ms", "close_timeout_ms",
    })
    _FIXED = {
        "acks": _Fixed(lambda v: v in ("all", -1), "outputs must be acknowledged by all in-sync replicas"),
        "enable_idempotence": _Fixed(
            lambda v: v is True, "retries must not duplicate or reorder outputs",
        ),
        "key_serializer": _Fixed(None, "the engine sends bytes"),
        "value_serializer": _Fixed(None, "the engine sends bytes"),
        "transactional_id": _Fixed(None, "the Kafka sink does not use transactions"),
        "kafka_client": _Fixed(None, "the connector sets it"),
    }

    def __init__(self, **configs):
        cfg = _resolve("KafkaSink", self.DEFAULT_CONFIG, KafkaProducer.DEFAULT_CONFIG, self._FIXED, configs)
        self.config = cfg
        self.topic: str = cfg["topic"]
        self._close_timeout_ms = cfg["close_timeout_ms"]
        self._failed = 0
        self._sent = 0  # records handed to the producer (engine thread)
        self._acked = 0  # records acknowledged (sender thread)
        self._first_error: BaseException | None = None
        self._closed = False
        if cfg["create_topic"]:
            self._ensure_topic(cfg)
        client_cfg = {k: v for k, v in cfg.items() if k not in self._OWN_KEYS}
        self._producer = _connect(KafkaProducer, client_cfg, role=f"producer to topic {self.topic!r}")
        self._send = self._producer.send
        log.info("Kafka sink: topic %r, bootstrap %s", self.topic, _servers(cfg["bootstrap_servers"]))

    # -- Sink protocol ------------------------------------------------------

    def send(self, value: bytes, key: bytes | None = None) -> None:
        """Queue one record; raises :class:`DeliveryError` if an earlier record failed."""
        if self._failed:
            raise self._error()
        try:
            future = self._send(self.topic, value=value, key=key)
        except Errors.KafkaError as exc:
            self._on_error(exc)
            raise self._error() from exc
        self._sent += 1
        future.add_callback(self._on_ack)
        future.add_errback(self._on_error)

    def flush(self) -> None:
        """Block until every queued record is acknowledged; raise :class:`DeliveryError` if any failed."""
        if not self._closed:
            self._producer.flush()
        if self._failed:
            raise self._error()

    def close(self) -> None:
        """Flush, then close the producer (also when the flush raised)."""
        if self._closed:
            return
        try:
            self.flush()
        finally:
            self._closed = True
            self._producer.close(timeout=self._close_timeout_ms / 1000)

    @property
    def failed(self) -> int:
        """How many records could not be delivered."""
        return self._failed

    @property
    def in_flight(self) -> int:
        """Records sent and neither acknowledged nor failed yet (the engine's back-pressure gauge).

        kafka-python's producer queues records without any bound; the engine
        pauses its input while this is above ``max_in_flight``.
        """
        return max(0, self._sent - self._acked - self._failed)

    def __enter__(self) -> KafkaSink:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    # -- internals ----------------------------------------------------------

    def _on_ack(self, metadata) -> None:
        # Called on the producer's sender thread, once per acknowledged record.
        self._acked += 1

    def _on_error(self, exc: BaseException) -> None:
        # Called on the producer's sender thread.
        if self._first_error is None:
            self._first_error = exc
            log.error("Kafka sink: a record to topic %r failed: %r", self.topic, exc)
        self._failed += 1

    def _error(self) -> DeliveryError:
        return DeliveryError(
            f"Kafka sink: {self._failed} record(s) to topic {self.topic!r} were not delivered; "
            f"first error: {self._first_error!r}",
            topic=self.topic, failed=self._failed,
        )

    def _ensure_topic(self, cfg: dict) -> None:
        admin_cfg = {k: v for k, v in cfg.items() if k in KafkaAdminClient.DEFAULT_CONFIG}
        admin = _connect(KafkaAdminClient, admin_cfg, role=f"admin client (topic {self.topic!r})")
        try:
            like = cfg["partitions_like"]
            names = [self.topic] + ([like] if like and like != self.topic else [])
            described = {t["name"]: t for t in admin.describe_topics(names)}
            mine = described.get(self.topic)
            if mine is not None and mine["error_code"] == 0:
                return
            partitions = cfg["topic_partitions"]
            if partitions is None:
                source = described.get(like) if like else None
                partitions = len(source["partitions"]) if source and source["error_code"] == 0 else -1
            replication = cfg["topic_replication_factor"]
            spec = {"num_partitions": int(partitions), "replication_factor": -1 if replication is None else int(replication)}
            try:
                admin.create_topics({self.topic: spec}, timeout_ms=cfg["topic_timeout_ms"])
            except Errors.TopicAlreadyExistsError:
                return
            admin.wait_for_topics([self.topic], timeout_ms=cfg["topic_timeout_ms"])
            log.info(
                "Kafka sink: created topic %r (%s partitions, replication factor %s)",
                self.topic,
                "broker default" if spec["num_partitions"] == -1 else spec["num_partitions"],
                "broker default" if spec["replication_factor"] == -1 else spec["replication_factor"],
            )
        except (Errors.TopicAuthorizationFailedError, Errors.ClusterAuthorizationFailedError) as exc:
            log.warning(
                "Kafka sink: may not create topic %r (%r); producing relies on it existing "
                "or on the broker's auto.create.topics.enable", self.topic, exc,
            )
        except Errors.InvalidReplicationFactorError as exc:
            raise ConfigError(
                f"KafkaSink: cannot create topic {self.topic!r}: {exc}; set topic_replication_factor"
            ) from exc
        finally:
            admin.close()


# ------------------------------------------------------------ daemon factories

#: Keys of the daemon-level dict given to the ``make_*`` factories, besides the
#: keys of :class:`KafkaSource` / :class:`KafkaSink` and kafka-python's
#: consumer / producer keys.
DAEMON_KEYS = frozenset({"input_topic", "output_topic", "dead_letter_topic"})


def _split(config: dict) -> tuple[dict, dict]:
    """Route a daemon-level dict to source keys and sink keys; ``None`` values mean "default"."""
    config = {k: v for k, v in config.items() if v is not None}
    source_keys = (set(KafkaSource.DEFAULT_CONFIG) | set(KafkaConsumer.DEFAULT_CONFIG)) - {"topic"}
    sink_keys = (set(KafkaSink.DEFAULT_CONFIG) | set(KafkaProducer.DEFAULT_CONFIG)) - {"topic", "partitions_like"}
    for key in config:
        if key not in DAEMON_KEYS and key not in source_keys and key not in sink_keys:
            accepted = sorted(DAEMON_KEYS | source_keys | sink_keys)
            raise ConfigError(f"Kafka: unknown config key {key!r}; accepted keys: {', '.join(accepted)}")
    if not config.get("input_topic"):
        raise ConfigError("Kafka: 'input_topic' is required")
    source = {k: v for k, v in config.items() if k in source_keys}
    sink = {k: v for k, v in config.items() if k in sink_keys}
    return source, sink


def make_source(config: dict) -> KafkaSource:
    """The daemon's input: a :class:`KafkaSource` on ``config["input_topic"]``.

    ``config`` is the daemon-level dict: ``bootstrap_servers``, ``input_topic``,
    ``output_topic``, ``dead_letter_topic``, ``group_id`` and any key of
    :class:`KafkaSource`, :class:`KafkaSink`, ``KafkaConsumer`` or
    ``KafkaProducer``; keys the consumer does not take are ignored here.
    """
    source, _ = _split(config)
    return KafkaSource(topic=config["input_topic"], **source)


def make_sink(config: dict) -> KafkaSink:
    """The daemon's prediction output: a :class:`KafkaSink` on ``config["output_topic"]``."""
    _, sink = _split(config)
    topic = config.get("output_topic")
    if not topic:
        raise ConfigError("Kafka: 'output_topic' is required")
    sink.setdefault("client_id", "stream-nb-output")
    return KafkaSink(topic=topic, partitions_like=config["input_topic"], **sink)


def make_dead_letter_sink(config: dict) -> KafkaSink:
    """The daemon's dead-letter output: ``config["dead_letter_topic"]``, default ``<input_topic>.dlq``."""
    _, sink = _split(config)
    topic = config.get("dead_letter_topic") or f"{config['input_topic']}.dlq"
    sink.setdefault("client_id", "stream-nb-dead-letter")
    return KafkaSink(topic=topic, partitions_like=config["input_topic"], **sink)
