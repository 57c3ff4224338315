"""Held events move with their input partition on a rebalance (``--feedback-topic``, Kafka).

Before partition *p* goes, the old owner takes *p*'s part out of its join
(:meth:`~stream_nb.engine.Joiner.release`) and publishes it to the compacted
**pending topic**, naming the offsets it goes with; the new owner, positioning
*p* at the offset another member committed, takes the newest record of *p* in
(:meth:`~stream_nb.engine.Joiner.adopt`) when it names exactly that offset and
member. A partition revoked again before it comes back is not handed over
again (that would overwrite the hand-over with an empty one). With
``--model-topic`` the partition's state carries the join's part instead. The
docs' *Labels that come later* page says why and what is not covered.
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
