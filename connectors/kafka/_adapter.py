"""The client adapter protocol: what the Kafka roles ask of a client library.

The source, the sink, the transaction and the model topic of
:mod:`connectors.kafka` are written once, against the protocols below; each
client library has one adapter module that implements them and is the only
module importing that library: :mod:`._kafka_python` (kafka-python) and
:mod:`._confluent` (confluent-kafka, loaded on first use). A partition is
``(topic, number)`` on this side of the protocol; an adapter turns it into
its library's type. Every call may raise one of the adapter's ``errors`` (the
library's own exceptions), except where a docstring names another.

* :class:`Adapter` -- one client library: its settings, and the
  :class:`Consumer` (a group member, or a reader in no group), :class:`Producer`
  and :class:`Admin` it makes;
* :class:`Listener` -- what a consumer calls on a rebalance (the source);
* :class:`Polled` -- a poll as columns, built by :meth:`Polled.of` from the library's records;
* :class:`Assignment` -- the owned and paused partitions, kept for a client
  that does not keep them itself;
* :class:`Failures`, :class:`Acknowledged` -- the counts a producer keeps of
  its library's delivery reports.
"""

from __future__ import annotations

import logging
import typing

__all__ = ["BEGINNING", "END", "TP", "Acknowledged", "Adapter", "Admin", "Assignment", "Consumer", "Failures",
           "Listener", "Polled", "Producer", "Revocation"]

log = logging.getLogger("connectors.kafka")

#: A partition: ``(topic, number)``.
TP = tuple[str, int]
#: Logical offsets :meth:`Consumer.seek` takes: the partition's first record, and after its last.
BEGINNING, END = -2, -1


class Polled(typing.NamedTuple):
    """The records of one poll, as columns (in the order the client returned them)."""

    topics: list[str]
    partitions: list[int]
    offsets: list[int]
    keys: list
    values: list

    @classmethod
    def of(cls, records: list, fields) -> Polled:
        """The columns of ``records``: ``fields`` reads a record's topic, partition, offset, key and value (five
        callables, in that order, of the library's record type)."""
        return cls(*(list(map(field, records)) for field in fields))


class Revocation(typing.NamedTuple):
    """What to commit before revoked partitions go: ``offsets`` with ``metadata``, then ``finish(error or None)``."""

    offsets: dict[TP, int]
    metadata: str
    finish: typing.Callable[[BaseException | None], None]


class Failures:
    """The delivery failures a :class:`Producer` counts (since the last :meth:`forget`), the first one logged;
    each adapter's producer counts through :meth:`count` from its library's failure report."""

    what = ""  # the component, for the log
    failed = 0
    first_error: object = None

    def count(self, error: object, text: str, where: str = "") -> None:
        """One record failed with ``error`` (``text``: how the library says it; ``where``: the topic, if known)."""
        if self.first_error is None:
            self.first_error = error
            log.error("%s: a record%s failed: %s", self.what, where, text)
        self.failed += 1

    def forget(self) -> None:
        self.failed, self.first_error = 0, None


class Assignment:
    """The partitions a consumer owns and those it holds paused, for a client that keeps neither as the source asks
    (librdkafka): the adapter's rebalance callbacks and its ``pause`` / ``resume`` feed it.

    An incremental (cooperative) assignment adds to what is owned, an eager one replaces it. A partition that
    goes while paused is resumed first, through the consumer: a client keeping a pause through revocation would
    else have it paused when it is assigned again.
    """

    def __init__(self, incremental: bool):
        self.incremental = incremental
        self.owned: set[TP] = set()
        self.held: set[TP] = set()  # paused

    def assigned(self, partitions: list[TP], listener: Listener) -> tuple[dict[TP, int], list[TP]]:
        """``partitions`` came: the listener's ``(starts, held)`` of them (the consumer pauses the held ones)."""
        self.owned = (self.owned | set(partitions)) if self.incremental else set(partitions)
        self.held &= self.owned
        return listener.assigned(partitions)

    def gone(self, partitions: list[TP], consumer: Consumer) -> None:
        """``partitions`` went (revoked or lost): those paused are resumed through ``consumer`` first."""
        paused = self.held & set(partitions)
        if paused:
            try:
                consumer.resume(sorted(paused))
            except consumer.errors as exc:
                log.warning("Kafka source: resuming %s before they went failed: %s", sorted(paused), exc)
        self.owned -= set(partitions)
        self.held -= set(partitions)


class Acknowledged(Failures):
    """:class:`Failures` with the records sent and acknowledged counted too, for a producer whose library reports
    each record through a future but counts none in flight (kafka-python's): :meth:`track` takes each future."""

    sent = acked = 0

    @property
    def in_flight(self) -> int:
        return max(0, self.sent - self.acked - self.failed)

    def track(self, future) -> None:
        """One record sent: its future's success counts it acknowledged, its failure (an exception) failed; the
        library calls either on its sender thread."""
        self.sent += 1
        future.add_callback(self._acked)
        future.add_errback(self.failure)

    def _acked(self, _metadata) -> None:
        self.acked += 1

    def failure(self, exc: BaseException) -> None:
        """A record failed with ``exc`` (its future's, or the library's refusal to take it)."""
        self.count(exc, repr(exc))

    def forget(self) -> None:
        super().forget()
        self.sent = self.acked = 0


class Listener(typing.Protocol):
    """The consumer's rebalance callbacks, as the source gives them (see :meth:`Consumer.subscribe`)."""

    def assigned(self, partitions: list[TP]) -> tuple[dict[TP, int], list[TP]]:
        """Partitions came: ``(starts, held)``, where some start now, and which stay paused until positioned."""

    def revoked(self, partitions: list[TP]) -> Revocation | None:
        """Partitions go: the offsets to commit first (the adapter commits them, then calls ``finish``).

        On a client that calls back on the polling thread the source commits them itself, and returns None.
        """

    def lost(self, partitions: list[TP]) -> None:
        """Partitions went without a revocation (the member was dropped from the group)."""


class Consumer(typing.Protocol):
    """A consumer of the library, reading raw bytes, never committing by itself."""

    #: The library's exceptions, as the roles catch them.
    errors: tuple[type[BaseException], ...]
    #: Whether rebalance callbacks run on the polling thread, where the client may be called (else: its IO thread).
    calls_back_on_poll: bool

    def subscribe(self, topics: list[str], listener: Listener) -> None:
        """Join the group on ``topics``; ``listener`` hears every rebalance."""

    def poll(self, max_records: int, timeout: float) -> Polled | None:
        """Up to ``max_records`` records, waiting at most ``timeout`` s for the first; None when none came."""

    def assignment(self) -> set[TP]:
        """The partitions owned now."""

    def commit(self, offsets: dict[TP, int], metadata: str, timeout: float) -> None:
        """Commit these next offsets synchronously (waiting at most ``timeout`` s where the client can tell)."""

    def committed(self, partitions: list[TP], timeout: float) -> dict[TP, tuple[int | None, str | None]]:
        """The group's committed ``(offset, metadata)`` of each partition, as the library gives them (the source
        reads an offset of None, or below 0, as nothing committed)."""

    def seek(self, partition: TP, offset: int) -> None:
        """Read ``partition`` from ``offset`` (or :data:`BEGINNING` / :data:`END`) on."""

    def pause(self, partitions: list[TP]) -> None:
        """Stop fetching these partitions (a partition revoked and assigned again starts unpaused)."""

    def resume(self, partitions: list[TP]) -> None:
        """Fetch these partitions again."""

    def positions(self, partitions: list[TP], timeout: float) -> dict[TP, tuple[int | None, int | None]]:
        """``(position, end offset)`` of each partition (None or negative: not known); the source's lag is the
        difference."""

    def assign(self, partitions: list[TP]) -> None:
        """A reader's: read ``partitions`` from their beginning (in no group)."""

    def offset(self, partition: TP) -> int:
        """A reader's: the offset read up to in an assigned partition (every record before it was read; 0 at first)."""

    def end_offsets(self, partitions: list[TP], timeout: float | None) -> dict[TP, int]:
        """The end offset of each partition now (any topic; the last stable offset when ``read_committed``), within
        ``timeout`` s (None: the client's own bound)."""

    def partition_count(self, topic: str) -> int | None:
        """The partitions of ``topic`` (None when it does not exist); reaching no broker is ``ConnectorUnavailable``."""

    def group_metadata(self) -> object:
        """The group membership, for :meth:`Producer.send_offsets`."""

    def close(self, timeout: float) -> None:
        """Leave the group (revocation callbacks first) and close; never commits."""


class Producer(typing.Protocol):
    """A producer of the library, counting delivery failures, optionally transactional."""

    errors: tuple[type[BaseException], ...]
    #: Records that failed (since the last :meth:`forget`), and the first failure.
    failed: int
    first_error: object

    @property
    def in_flight(self) -> int:
        """Records sent, neither acknowledged nor failed yet."""

    def send(self, topic: str, value: bytes | None, key: bytes | None) -> None:
        """Queue one record (keyed ones where Java's murmur2 puts them); a failure counts in :attr:`failed`."""

    def send_many(self, topic: str, values: list, keys: list) -> None:
        """:meth:`send` of each, in order, stopping at the first failure."""

    def flush(self, timeout: float | None = None) -> None:
        """Wait for every record sent (at most ``timeout`` s)."""

    def close(self, timeout: float) -> None:
        """Let the producer go, waiting at most ``timeout`` s for what is queued."""

    def forget(self) -> None:
        """Start counting failures afresh (after an abort)."""

    def init_transactions(self) -> None:
        """Register the transactional id, aborting what a predecessor left open."""

    def unreachable(self, error: BaseException) -> bool:
        """Whether ``error`` says no broker (or no coordinator) answered: worth retrying later."""

    def begin(self) -> None:
        """Begin a transaction."""

    def send_offsets(self, offsets: dict[TP, int], metadata: str, group: object) -> None:
        """Add input offsets to the transaction (``send_offsets_to_transaction``), bounded by ``max_block_ms``
        (the transaction also waits for it on a helper thread: a call that never returns is not fatal)."""

    def commit_transaction(self) -> None:
        """Commit the transaction, bounded by ``max_block_ms``."""

    def abort_transaction(self) -> None:
        """Abort the transaction, bounded by ``max_block_ms``."""


class Admin(typing.Protocol):
    """An admin client: what creating a topic needs (see :func:`connectors.kafka._topics.ensure_topic`)."""

    def partition_counts(self, topics: list[str]) -> dict[str, int | None]:
        """The partition count of each topic (None: it does not exist)."""

    def create_topic(self, topic: str, partitions: int, replication: int, configs: dict, timeout: float) -> None:
        """Create a topic (-1: the broker's default); the broker's refusal is the library's error (see
        :meth:`Adapter.code`)."""

    def close(self) -> None:
        """Close."""


class Adapter(typing.Protocol):
    """One client library behind the roles."""

    #: The ``--kafka-client`` name; added to component names in errors (``""`` for the default client).
    name: str
    label: str
    #: The keys its consumer / producer takes (the settings both clients have, by kafka-python's name, for a
    #: client that takes dotted names), each with its default (None where the library keeps its own).
    consumer_keys: dict
    producer_keys: dict
    #: Whether it also takes librdkafka's dotted property names, as given.
    dotted: bool
    #: Keys its consumer / producer may not be given (set by the adapter), with why.
    consumer_fixed: dict
    producer_fixed: dict
    #: Producer keys of its own, with defaults, beside the sink's ``DEFAULT_CONFIG``.
    producer_defaults: dict
    errors: tuple[type[BaseException], ...]

    def describe(self, error: object) -> str:
        """A short text of a library error (an exception or a delivery report)."""

    def code(self, error: BaseException) -> int | None:
        """The Kafka protocol's error code of a library error (the same number in every client), else None; the
        roles read a refused topic creation and a fenced producer (:data:`._errors.FENCED`) from it."""

    def consumer(self, cfg: dict, *, role: str, range_assignor: bool) -> Consumer:
        """A group consumer of the source's settings ``cfg`` (with ``range_assignor``, the range assignor);
        bad settings: ``ConfigError``."""

    def producer(self, cfg: dict, *, role: str, what: str) -> Producer:
        """A producer (transactional with ``cfg["transactional_id"]``) of the sink's settings ``cfg``."""

    def reader(self, topic: str, cfg: dict) -> Consumer:
        """A :class:`Consumer` in no group, to read ``topic`` (the model topic's reader), with the source's settings
        ``cfg`` (no group keys, an ``isolation_level``); it fetches nothing before :meth:`Consumer.assign`."""

    def admin(self, cfg: dict, *, role: str) -> Admin:
        """An admin client of the settings ``cfg``; reaching no broker is ``ConnectorUnavailable``."""
