"""The records of a model topic: one input partition's state per key, split when too large.

A member publishes, for each input partition it owns, the cumulative state
learned from that partition and the input offset it covers (see
:mod:`stream_nb.engine.group._group`). On a compacted topic the latest record of a
key is that partition's state. Every record's value is::

    b"SNBG" | kind (1 byte) | header length (uint32 LE) | header JSON | payload

kinds:

* ``S`` -- a whole state; key: the partition (``"events-3"``); header: the
  state's ``info`` (``partition``, ``offset``, ...); payload: the encoded state
  (:func:`stream_nb.snapshots.encode_state`).
* ``C`` -- one piece of a state too large for one record; key:
  ``"<partition>#<version>#<i>"``; header: ``{"version", "i"}``; payload: the piece.
* ``M`` -- the manifest that completes a split state, written after its pieces;
  key: the partition; header: the ``info`` plus ``version``, ``chunks`` and
  the ``sha256`` of the whole payload.

Pieces of one version keep their own keys, so compaction never drops a piece
that the latest manifest needs; once a newer version is complete its
publisher deletes the older pieces (tombstones, value ``None``). A reader
(:class:`StateLog`) keeps the pieces it has read until their manifest comes.
All records of a model topic go to one partition, in order.

>>> records = state_records("in-0", b"x" * 10, {"partition": "in-0", "offset": 5}, limit=512 + 4, version="v1")
>>> [key for key, _ in records]
['in-0#v1#0', 'in-0#v1#1', 'in-0#v1#2', 'in-0']
>>> log = StateLog()
>>> done = [log.feed(key, value) for key, value in records]
>>> done[-1]
[('in-0', b'xxxxxxxxxx', {'partition': 'in-0', 'offset': 5})]
>>> log.pieces_of("in-0")
['in-0#v1#0', 'in-0#v1#1', 'in-0#v1#2']
"""

from __future__ import annotations

import hashlib
import json
import logging
import struct
import typing

__all__ = ["GROUP_MAGIC", "StateLog", "merge_states", "partition_order", "state_order", "state_records"]

log = logging.getLogger("stream_nb.group")

GROUP_MAGIC = b"SNBG"
_LEN = struct.Struct("<I")
#: Room kept in each record for its envelope and header.
_OVERHEAD = 512


def partition_order(partition: str) -> tuple:
    """Sort key of a partition name: by topic, then by number (``in-2`` before ``in-10``)."""
    topic, _, number = partition.rpartition("-")
    return (topic, int(number)) if number.isdigit() else (partition, -1)


def state_order(info: dict) -> tuple:
    """Where a partition's state (its ``info``) stands among the partition's states: the newest is the greatest.

    By the input offset it covers, then (``--feedback-topic``) the feedback offset it read, then its
    publisher's sequence number: a state the join alone changed (an expiry) covers the offsets of the one
    before it. A missing entry counts as -1.

    >>> state_order({"offset": 7}) < state_order({"offset": 7, "feedback_offset": 3}) < state_order(
    ...     {"offset": 7, "feedback_offset": 3, "seq": 2}) < state_order({"offset": 8, "feedback_offset": 0})
    True
    """
    return tuple(v if isinstance(v, int) and not isinstance(v, bool) else -1
                 for v in (info.get("offset"), info.get("feedback_offset"), info.get("seq")))


def merge_states(template, parts: typing.Iterable[tuple[str, typing.Any]]):
    """The group's model: ``template.clone()`` with every ``(partition, state)`` merged in partition order,
    then its structure (TAN, SPODE, KDB) rebuilt from the merged counts once it has ``warmup`` events.

    The same states give the same model, counts and structure, on every member.
    """
    view = template.clone()
    for _, part in sorted(parts, key=lambda item: partition_order(item[0])):
        view.merge(part)
    if callable(getattr(view, "rebuild", None)) and view.n_learned > 0 and view.n_learned >= getattr(view, "warmup", 0):
        view.rebuild()
    return view


def _record(kind: bytes, header: dict, payload: bytes = b"") -> bytes:
    text = json.dumps(header, separators=(",", ":"), allow_nan=False).encode()
    return GROUP_MAGIC + kind + _LEN.pack(len(text)) + text + payload


def state_records(partition: str, payload: bytes, info: dict, *, limit: int, version: str) -> list[tuple[str, bytes]]:
    """The ``(key, value)`` records publishing one partition's state, each at most ``limit`` bytes of payload
    plus the envelope: one ``S`` record, or ``C`` pieces then an ``M`` manifest."""
    if len(payload) + _OVERHEAD <= limit:
        return [(partition, _record(b"S", info, payload))]
    step = max(1, limit - _OVERHEAD)
    pieces = [payload[i:i + step] for i in range(0, len(payload), step)]
    out = [(f"{partition}#{version}#{i}", _record(b"C", {"version": version, "i": i}, piece))
           for i, piece in enumerate(pieces)]
    manifest = {**info, "version": version, "chunks": len(pieces), "sha256": hashlib.sha256(payload).hexdigest()}
    out.append((partition, _record(b"M", manifest)))
    return out


def _parse(value: bytes) -> tuple[bytes, dict, bytes]:
    if len(value) < 9 or value[:4] != GROUP_MAGIC:
        raise ValueError("not a stream_nb model-topic record")
    kind = value[4:5]
    (n,) = _LEN.unpack_from(value, 5)
    header = json.loads(value[9:9 + n])
    if not isinstance(header, dict):
        raise ValueError("its header is not an object")
    return kind, header, value[9 + n:]


class StateLog:
    """Reads a model topic's records in order and hands back each partition state as it completes."""

    def __init__(self) -> None:
        self._pieces: dict[str, bytes] = {}  # piece key -> payload, until its manifest comes
        self.skipped = 0

    def feed(self, key: str, value: bytes | None) -> list[tuple[str, bytes, dict]]:
        """Take one record; return ``[(partition, payload, info)]`` when it completes a state, else ``[]``."""
        if value is None:  # a tombstone: a piece no longer needed
            self._pieces.pop(key, None)
            return []
        try:
            kind, header, payload = _parse(value)
        except (ValueError, struct.error, UnicodeDecodeError) as exc:
            self.skipped += 1
            log.error("model topic: record %r is unreadable, skipped: %s", key[:80], exc)
            return []
        if kind == b"C":
            self._pieces[key] = payload
            return []
        if kind == b"S":
            return [(key, payload, header)]
        if kind == b"M":
            version, n = header.pop("version", None), header.pop("chunks", 0)
            digest = header.pop("sha256", None)
            keys = [f"{key}#{version}#{i}" for i in range(n if isinstance(n, int) else 0)]
            missing = [k for k in keys if k not in self._pieces]
            payload = b"".join(self._pieces.get(k, b"") for k in keys)
            if missing or hashlib.sha256(payload).hexdigest() != digest:
                self.skipped += 1
                log.error("model topic: the state of %s (version %s) is incomplete (%d of %d pieces), skipped",
                          key, version, len(keys) - len(missing), len(keys))
                return []
            return [(key, payload, header)]
        self.skipped += 1
        log.error("model topic: record %r of unknown kind %r, skipped", key[:80], kind)
        return []

    def pieces_of(self, partition: str, keep: str | None = None) -> list[str]:
        """Keys of the pieces held for ``partition``, except those of version ``keep``."""
        prefix = f"{partition}#"
        return sorted(k for k in self._pieces if k.startswith(prefix) and (keep is None or
                      not k.startswith(f"{prefix}{keep}#")))

    def forget(self, keys: list[str]) -> None:
        """Drop pieces (their tombstones were sent)."""
        for k in keys:
            self._pieces.pop(k, None)
