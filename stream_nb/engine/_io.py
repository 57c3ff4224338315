"""The two interfaces between the engine and the outside world.

The engine never imports an I/O library. A connector (top-level package
``connectors``) implements :class:`Source` and :class:`Sink`; the engine drives
them. The data path reads straight through::

    Source.poll() -> [Record] -> decode/validate -> model -> Sink.send()
                                        \\-> dead-letter Sink.send()

Ordering: a Source returns records of one partition in their order, and the
engine processes them one at a time in that order, so outputs keep the input
order within a partition.

Commit protocol: after the outputs of a batch have been handed to the sinks,
the engine calls ``Sink.flush()`` on every sink, and only then
``Source.commit(positions)`` with the positions *after* the last processed
record of each partition. A Source must never commit anything else by itself
(Kafka: ``enable_auto_commit=False``).
"""

from __future__ import annotations

import dataclasses
import typing

__all__ = ["Record", "Source", "Sink"]


@dataclasses.dataclass(frozen=True, slots=True)
class Record:
    """One raw event as read from a source.

    Parameters
    ----------
    value
        The raw bytes of the event, undecoded.
    key
        The message key (Kafka) or ``None``. Outputs for this record are sent
        with the same key.
    partition
        Identifies the ordered stream the record belongs to, for example
        ``"events-2"`` for topic ``events`` partition 2, or a file path.
    position
        JSON-able description of where the record is, copied into the output
        record's ``source`` field, e.g. ``{"topic": "events", "partition": 2,
        "offset": 41}`` or ``{"file": "in.jsonl", "line": 7, "byte": 812}``.
    next_position
        Where to resume *after* this record: the Kafka offset + 1, or the byte
        offset of the next line. Committed and snapshotted.
    size
        The length in bytes of the whole raw event when ``value`` holds only
        its first bytes (a source that does not keep an overlong event in
        memory); ``None``, the default, when ``value`` is the whole event. The
        engine reports it in the event's ``oversize`` dead letter.
    """

    value: bytes
    key: bytes | None
    partition: str
    position: dict
    next_position: int
    size: int | None = None


class Source(typing.Protocol):
    """Where events come from.

    Optional, used when present: ``pause()`` / ``resume()`` stop and restart
    fetching while the consumer stays alive (back-pressure, see
    :mod:`stream_nb.engine._flow`); ``lag(timeout)`` returns
    ``{partition: how far behind}`` in the unit named by the attribute
    ``lag_unit`` (``"records"`` or ``"bytes"``), or ``None`` when unknown.
    """

    def poll(self, max_records: int, timeout: float) -> list[Record]:
        """Return up to ``max_records`` records, waiting at most ``timeout`` seconds.

        An empty list means nothing arrived in time. A finite source that is
        exhausted sets :attr:`exhausted` and then returns ``[]``.
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
    """Where output records (predictions or dead letters) go.

    Optional: an integer attribute ``in_flight``, the records handed to
    :meth:`send` and not yet acknowledged (nor failed), for back-pressure.
    """

    def send(self, value: bytes, key: bytes | None = None) -> None:
        """Queue one serialised record. May block for back-pressure; never drops."""

    def flush(self) -> None:
        """Block until every queued record is durably written; raise on failure."""

    def close(self) -> None:
        """Flush and release resources."""
