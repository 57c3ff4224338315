"""The contracts between the engine and the outside world: sources, sinks, checkpointers, connectors.

A connector implements :class:`Source` and :class:`Sink`; optional
capabilities are runtime-checkable protocols, checked with ``isinstance``.
The docs' *Architecture* page has the data path, the commit protocol and the
table of capabilities.

>>> class FileLines:
...     partition = "in.jsonl"
...     def pause(self): pass
>>> isinstance(FileLines(), NamedInput), isinstance(FileLines(), Pausable)  # no resume(): not pausable
(True, False)
"""

from __future__ import annotations

import typing

from ._records import Record

__all__ = [
    "Checkpointing",
    "TwoPhaseSink",
    "ConnectorModule",
    "CountsBlankLines",
    "CountsInFlight",
    "HandlesRevocation",
    "JointConnectorModule",
    "ModelChannel",
    "NamedInput",
    "Pausable",
    "Rebalancing",
    "RebalanceCallback",
    "Repositionable",
    "ReportsCommitted",
    "ReportsLag",
    "ResumePolicy",
    "ResumesByPolicy",
    "RevocationHandler",
    "SendsInTransaction",
    "SharesLearning",
    "SharesQueue",
    "Sink",
    "Source",
    "TracksFiles",
    "Transactional",
]

#: ``callback(event, partitions)`` with ``event`` in ``"revoked"``, ``"assigned"``, ``"lost"``.
RebalanceCallback = typing.Callable[[str, list], None]
#: ``policy(partition, committed_offset or None, committed_metadata or None) -> offset or None``
ResumePolicy = typing.Callable[[str, "int | None", "str | None"], "int | None"]
#: ``handler(partitions) -> (positions to commit, commit metadata, done(ok)) or None``
RevocationHandler = typing.Callable[[list], typing.Any]


class Source(typing.Protocol):
    """Where events come from; the optional capabilities are the protocols below."""

    def poll(self, max_records: int, timeout: float) -> typing.Sequence[Record]:
        """Return up to ``max_records`` records, waiting at most ``timeout`` seconds.

        An empty list means nothing arrived in time. A finite source that is
        exhausted sets :attr:`exhausted` and then returns ``[]``. A source that reads a poll at once may
        return its records as a :class:`~stream_nb.engine.contract._records.RecordColumns` instead of a list.
        """

    @property
    def exhausted(self) -> bool:
        """True once a finite source (a file) has no more records; False for Kafka."""

    def commit(self, positions: dict[str, int]) -> None:
        """Durably record that everything before ``positions[partition]`` is done."""

    def seek(self, positions: dict[str, int]) -> None:
        """Resume each partition at the given ``next_position`` (used by recovery)."""

    def close(self) -> None:
        """Release resources. Must not commit."""


class Sink(typing.Protocol):
    """Where output records (predictions or dead letters) go."""

    def send(self, value: bytes, key: bytes | None = None) -> None:
        """Queue one serialised record. May block for back-pressure; never drops."""

    def flush(self) -> None:
        """Block until every queued record is durably written; raise on failure."""

    def close(self) -> None:
        """Flush and release resources."""


# -- optional capabilities of a source -------------------------------------------


@typing.runtime_checkable
class Pausable(typing.Protocol):
    """A source that can stop fetching while staying alive (Kafka: still in its group)."""

    def pause(self) -> None:
        """Stop fetching; :meth:`Source.poll` keeps the connection (and group membership) alive."""

    def resume(self) -> None:
        """Fetch again what :meth:`pause` stopped."""


@typing.runtime_checkable
class ReportsLag(typing.Protocol):
    """A source that knows how far behind its input it is."""

    #: Unit of :meth:`lag`: ``"records"`` or ``"bytes"``.
    lag_unit: str

    def lag(self, timeout: float) -> dict[str, int] | None:
        """``{partition: how far behind}``, or ``None`` when unknown (a pipe)."""


@typing.runtime_checkable
class Rebalancing(typing.Protocol):
    """A source whose partitions a consumer group assigns and takes away."""

    @property
    def assignment(self) -> frozenset[str]:
        """The partitions currently owned."""

    def add_rebalance_callback(self, callback: RebalanceCallback) -> None:
        """Call ``callback(event, partitions)`` on every rebalance (on the client's thread: keep it short)."""


@typing.runtime_checkable
class NamedInput(typing.Protocol):
    """A source reading one named partition: a file path, or ``"stdin"``."""

    #: The partition name of every record: the path, or ``"stdin"``.
    partition: str


@typing.runtime_checkable
class CountsBlankLines(typing.Protocol):
    """A line-oriented source that skips blank lines and counts them."""

    #: Blank lines skipped so far.
    blank_lines: int


@typing.runtime_checkable
class TracksFiles(typing.Protocol):
    """A file source that knows which file (device and inode) each of its positions lies in, so that a
    restart resumes in that file even when the path names another one since (rotation)."""

    def file_positions(self, positions: dict[str, int]) -> dict[str, dict[str, int]]:
        """For each of ``positions`` of this source, the file and byte it lies in (JSON-able), for a snapshot."""

    def recall_files(self, files: dict[str, typing.Any]) -> None:
        """A snapshot's :meth:`file_positions`, given before :meth:`Source.seek` to the positions it holds."""


@typing.runtime_checkable
class ResumesByPolicy(typing.Protocol):
    """A source that asks where each partition resumes when it is assigned (Kafka)."""

    def set_resume_policy(self, policy: ResumePolicy | None) -> None:
        """Position every partition assigned from now on at ``policy(partition, committed, metadata)``."""


@typing.runtime_checkable
class HandlesRevocation(typing.Protocol):
    """A source that lets its owner checkpoint before partitions are taken away (Kafka)."""

    def set_revocation_handler(self, handler: RevocationHandler | None) -> None:
        """Call ``handler(partitions)`` before they are revoked; commit what it returns."""


@typing.runtime_checkable
class Repositionable(typing.Protocol):
    """A source that can position every assigned partition again with its resume policy (a rewind)."""

    def reposition(self) -> None:
        """Position every assigned partition again before its next record."""


@typing.runtime_checkable
class ReportsCommitted(typing.Protocol):
    """A source that can read back the positions its group committed (Kafka)."""

    def committed(self, partitions: typing.Iterable[str] | None = None) -> dict[str, int | None]:
        """The committed position of each partition (``None``: nothing committed); ``ValueError`` for
        a partition that is not one of this source's."""


# -- optional capabilities of a sink ---------------------------------------------


@typing.runtime_checkable
class CountsInFlight(typing.Protocol):
    """A sink that sends asynchronously and counts what awaits acknowledgement."""

    #: Records handed to ``send`` and neither acknowledged nor failed yet.
    in_flight: int


@typing.runtime_checkable
class SendsMany(typing.Protocol):
    """A sink that takes a poll's records in one call: ``send(value, key)`` of each pair, in order."""

    def send_many(self, values: list[bytes], keys: list[bytes | None]) -> None: ...


@typing.runtime_checkable
class TwoPhaseSink(typing.Protocol):
    """A sink whose records become visible only when a snapshot covers them (an output file, exactly once).

    The checkpointer calls :meth:`recover` once at start-up, before any record
    is sent; then at each snapshot :meth:`precommit` (its state goes into the
    snapshot) and, once the snapshot is durable, :meth:`commit`. A crash at any
    point leaves what the newest restorable snapshot says: :meth:`recover`
    finishes a commit that a crash interrupted and drops what no snapshot
    covers (the input is read again from the snapshot's positions, so those
    records are sent again).
    """

    #: Bytes sent since the last :meth:`commit` (the checkpointer snapshots while any are waiting).
    staged: int

    def recover(self, state: dict | None) -> None:
        """Start from the state the restored snapshot holds for this sink (``{}``: none), or afresh (``None``:
        no snapshot was restored)."""

    def precommit(self) -> dict:
        """Make every record sent so far durable, not yet visible; the JSON-able state to keep in the snapshot."""

    def commit(self) -> None:
        """The snapshot holding the last :meth:`precommit` state is durable: make those records visible."""


@typing.runtime_checkable
class SharesQueue(typing.Protocol):
    """A sink whose ``in_flight`` is a queue shared with other sinks (counted once)."""

    #: The object owning the shared queue.
    in_flight_owner: typing.Any


@typing.runtime_checkable
class Transactional(typing.Protocol):
    """One transaction of outputs and input positions at a time (exactly-once Kafka outputs).

    The sinks send inside the open transaction; :meth:`commit` adds the input
    positions to it and commits it, :meth:`abort` drops it (raising when the
    outputs can no longer be produced at all, e.g. fenced by another instance).
    """

    def commit(self, positions: dict[str, int], metadata: str = "") -> None:
        """Commit the open transaction with ``positions`` (input offsets) in it."""

    def abort(self) -> None:
        """Abort the open transaction; its outputs never become visible."""


@typing.runtime_checkable
class SendsInTransaction(typing.Protocol):
    """A sink that sends inside a :class:`Transactional` (shared by the outputs and dead letters)."""

    #: The transaction the records are sent in.
    transaction: Transactional


# -- the engine's checkpointer ------------------------------------------------------


@typing.runtime_checkable
class Checkpointing(typing.Protocol):
    """What the engine calls on the checkpointer it is given (see ``Engine(checkpointer=)``)."""

    def attach(self, engine: typing.Any) -> None:
        """The engine was built with this checkpointer: act on ``engine`` from now on."""

    def checkpoint(self, final: bool = False) -> None:
        """Do the engine's checkpoint (``final``: the last one of ``Engine.run``)."""

    def status(self) -> dict[str, typing.Any]:
        """Health figures merged into ``Engine.status()``."""


@typing.runtime_checkable
class SharesLearning(typing.Protocol):
    """A checkpointer that shares what the model learns with other processes (``--model-topic``)."""

    def learned(self, events: list[tuple[str, typing.Any, typing.Any]]) -> None:
        """The engine's model learned these ``(partition, features, label)`` events, in input order."""

    def sync(self) -> None:
        """Called on every turn of the run loop, before the poll: apply what others shared (cheap when nothing came)."""


@typing.runtime_checkable
class ModelChannel(typing.Protocol):
    """A log of model states shared by a group (Kafka: a compacted topic read from its start)."""

    #: The topic's name (for messages).
    topic: str
    #: Largest record the channel takes; larger states are split (see ``engine.group._group_records``).
    max_record_bytes: int

    def publish(self, key: str, value: bytes | None) -> None:
        """Queue one record (``None``: delete the key); all records keep their order."""

    def flush(self) -> None:
        """Block until every queued record is durably written; raise on failure."""

    def poll(self, timeout: float) -> list[tuple[str, bytes | None]]:
        """Records that arrived since the last call, in order; wait at most ``timeout`` seconds."""

    def catch_up(self, timeout: float) -> list[tuple[str, bytes | None]]:
        """Every record up to the end of the log as it is now (waiting at most ``timeout`` s)."""

    def close(self) -> None:
        """Release the clients."""


# -- connector modules --------------------------------------------------------------


@typing.runtime_checkable
class ConnectorModule(typing.Protocol):
    """A connector module: a source, an output sink and a dead-letter sink, each from a dict."""

    def make_source(self, config: dict[str, typing.Any]) -> Source: ...

    def make_sink(self, config: dict[str, typing.Any]) -> Sink: ...

    def make_dead_letter_sink(self, config: dict[str, typing.Any]) -> Sink: ...


@typing.runtime_checkable
class JointConnectorModule(typing.Protocol):
    """A connector module whose source and two sinks are built together (they share a client)."""

    def make_connectors(self, config: dict[str, typing.Any]) -> tuple[Source, Sink, Sink]: ...
