"""Held events move with their input partition on a rebalance (``--feedback-topic``, Kafka).

An event held for its label belongs to the input partition it came from, and
its label comes on the same partition number of the feedback topic, which the
range assignor gives to the same member (see ``connectors.kafka``'s
``_feedback_topic``). When a rebalance takes partition *p* away, what the join
holds for *p* -- its held events (features, prediction, time, offset), the ids
it joined (kept to count duplicates) and the early labels read from feedback
partition *p* -- goes to the member that gets *p*:

1. before the partitions go (the checkpointer's revocation handler), the old
   owner takes *p*'s part out of its join (:meth:`~stream_nb.engine.Joiner.release`;
   a provisional label is taken back from its model) and publishes it to the
   **pending topic**, a compacted topic keyed by partition, naming the offsets
   of *p* and of its feedback partition it goes with; then it snapshots and
   commits those offsets as always (with ``--exactly-once``, the record is in
   the transaction that commits them);
2. the new owner, positioning *p* at the offset another member committed,
   reads the newest record of *p* and takes it in
   (:meth:`~stream_nb.engine.Joiner.adopt`) when it names exactly that offset
   and that member; a record naming another offset is stale (the commit that
   followed it failed, or a later owner moved on) and is ignored.

Why a compacted topic and not re-reading the input from the oldest held
offset: re-reading would give the new owner the events again, but not which
of them are still waiting. Between the oldest held event and the last
processed one lie events already joined (their labels read and committed by
the old owner: they must not be held again, or a ``--on-expire label:VALUE``
or provisional label would teach them twice across the two models), events
that expired, and events learned with their label in place; telling these
apart needs the old owner's join state anyway, and replaying the labels too
would depend on the order and timing in which the old owner read the two
topics (the TTL). So the join state itself moves, once per hand-over rather
than once per change (a changelog of every held, joined and expired event
would double the records produced for every event), and the input offset
committed stays the processed one.

A stop is a revocation too: the source's close revokes every partition, so
a member stopped alone (scaling the group down) hands its held events to the
members that run on, and a member that restarts takes its own hand-over back
(its snapshot, written after the release, no longer holds them; the
provisional labels of the events handed over are out of its model until the
next owner learns them again). A partition revoked a second time before it
comes back (a consumer stopping during a rebalance revokes its last
assignment again on close) is not handed over again: that would overwrite
the hand-over with an empty one. A member that takes a partition over and
gives it up before any of its events comes names the offset it took it at,
which it commits as its own.

Not covered: a member that dies (kill -9) holding *p*: its held events of *p*
are in its own snapshots, and return with it when it restarts and gets *p*
back (static membership, ``group_instance_id``); if another member gets *p*
first, the events held there wait in the dead member's snapshot only.

With ``--model-topic`` this hand-over is not used: each partition's state on
the model topic carries the join's part of the partition at every checkpoint
that moved it (see :mod:`stream_nb.engine.group._group`), so a new owner takes
it from there, also when the old owner died for good. The write cost that kept
it out of every checkpoint here is then part of the state's anyway.
"""

from __future__ import annotations

import logging
import typing
import zlib

import orjson

__all__ = ["PartitionHandoff"]

log = logging.getLogger("stream_nb.engine")

#: Largest record written to the pending topic; a larger hand-over is split in chunks.
CHUNK_BYTES = 800_000


class PartitionHandoff:
    """The hand-over of held events between the members of a group (see the module notes).

    ``channel`` is a compacted keyed topic: ``publish(key, bytes)``, ``flush()``
    and ``catch_up(timeout) -> [(key, bytes)]`` (``connectors.kafka``'s
    ``ModelTopic`` on ``--pending-topic``); ``partner(partition)`` names the
    feedback partition of an input partition (None: not an input partition).
    """

    def __init__(self, joiner, channel, partner: typing.Callable[[str], str | None]):
        self.joiner = joiner
        self.channel = channel
        self.partner = partner
        self._latest: dict[str, bytes | None] = {}  # what the pending topic holds, key -> newest value
        # partitions handed over and not assigned here since: a second revocation of one (a stopping consumer
        # revokes its last assignment again on close) must not overwrite the hand-over with an empty one
        self._released: set[str] = set()

    def assigned(self, partition: str) -> None:
        """``partition`` is assigned to this member (again): what it holds for it is its own to hand over."""
        self._released.discard(partition)

    def release(self, partitions: list[str], positions: dict[str, int], store_id: str) -> bool:
        """Publish the join's part of each input partition among ``partitions`` (revoked) and drop it here.

        ``positions`` are the offsets the revocation commits. True when anything was published.
        """
        done = False
        for key in partitions:
            feedback = self.partner(key)
            if feedback is None or key in self._released:
                continue
            held = self.joiner.release(key, feedback)
            header = {"partition": key, "store_id": store_id,
                      "offsets": {key: positions.get(key), feedback: positions.get(feedback)}}
            payload = zlib.compress(orjson.dumps({**header, **held}))
            chunks = [payload[i:i + CHUNK_BYTES] for i in range(0, len(payload), CHUNK_BYTES)] or [b""]
            for i, chunk in enumerate(chunks[1:], 1):
                self.channel.publish(f"{key}#{i}", chunk)
            self.channel.publish(key, orjson.dumps({"chunks": len(chunks)}) + b"\n" + chunks[0])
            log.info("handing over %s: %d held events and ids, %d early labels", key, len(held["events"]),
                     len(held["labels"]), extra={"event": "handoff", "partition": key})
            self._released.add(key)
            done = True
        if done:
            self.channel.flush()
        return done

    def adopt(self, partition: str, committed: int | None, committer: str | None, store_id: str,
              positions: dict[str, int]) -> None:
        """Take in what ``committer`` handed over for ``partition`` with the commit at ``committed``.

        ``store_id`` and ``positions`` are this member's: a hand-over of its own (a rebalance revokes every
        partition before assigning them again) is taken in only when its feedback partition is where it left it.
        """
        feedback = self.partner(partition)
        if feedback is None or committer is None:
            return
        for key, value in self.channel.catch_up(10.0):
            self._latest[key] = value
        first = self._latest.get(partition)
        if not first:
            return
        head, _, chunk = first.partition(b"\n")
        n = orjson.loads(head)["chunks"]
        parts = [chunk] + [self._latest.get(f"{partition}#{i}") or b"" for i in range(1, n)]
        try:
            held = orjson.loads(zlib.decompress(b"".join(parts)))
        except (zlib.error, orjson.JSONDecodeError) as exc:
            log.warning("the hand-over of %s is unreadable (%s): the events held there are not taken in",
                        partition, exc)
            return
        own_moved = committer == store_id and feedback in positions and positions[feedback] != held["offsets"].get(
            feedback)
        if held["store_id"] != committer or held["offsets"].get(partition) != committed or own_moved:
            log.info("the hand-over of %s names offset %s by another commit: not taken in", partition,
                     held["offsets"].get(partition))
            return
        self.joiner.adopt(partition, held)
        self._latest[partition] = None  # taken: never twice
        log.info("took over %s: %d held events and ids, %d early labels", partition, len(held["events"]),
                 len(held["labels"]), extra={"event": "handoff", "partition": partition})
