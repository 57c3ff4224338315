"""Exactly-once outputs: a snapshot and one transaction per checkpoint (``--exactly-once``, Kafka).

Every checkpoint writes a snapshot holding exactly the positions its
transaction commits, then commits the transaction. At start-up the daemon
restores the newest snapshot that is nowhere ahead of the committed offsets
(:class:`~stream_nb.engine.ReportsCommitted`) and deletes the newer ones, whose
transactions never committed. A failed transaction is aborted, and the engine
rewinds model, metrics and positions to the last committed snapshot
(:class:`~stream_nb.engine.Repositionable`). The docs' *Operations* page says why.
"""

from __future__ import annotations

import logging
import typing

from ...exceptions import ConfigError
from ...snapshots import FaultHooks, SnapshotFile, SnapshotStore
from ._abort import abort_while_unreachable
from ._checkpoint import Checkpointer, snapshot_metadata
from ..loop import Engine
from ..join import rewind_join
from ..contract import Repositionable, ReportsCommitted, Transactional

__all__ = ["ExactlyOnceCheckpointer"]

log = logging.getLogger("stream_nb.snapshot")

#: A partition of another input, in the positions of a snapshot.
_FOREIGN = object()


class ExactlyOnceCheckpointer(Checkpointer):
    """Flush, snapshot, commit a transaction: exactly-once outputs (Kafka only).

    ``transaction`` (a :class:`~stream_nb.engine.Transactional`) has
    ``commit(positions, metadata)`` (offsets into the transaction, then commit)
    and ``abort()``; the sinks send inside it. Every checkpoint with new
    positions snapshots and commits. The engine's source must be a
    :class:`~stream_nb.engine.ReportsCommitted` and a
    :class:`~stream_nb.engine.Repositionable` (the Kafka source is). See the
    module docstring.
    """

    exactly_once = True

    def __init__(
        self,
        store: SnapshotStore,
        transaction: Transactional,
        *,
        source_info: dict | None = None,
        faults: FaultHooks | None = None,
    ):
        super().__init__(store, every_events=1, interval_s=0.0, source_info=source_info, commit_metadata=True,
                         faults=faults)
        if not isinstance(transaction, Transactional):
            raise ConfigError(f"exactly-once checkpoints need a transaction with commit() and abort(), got "
                              f"{type(transaction).__name__}")
        self.transaction = transaction
        self.aborts = 0
        self.last_abort: str | None = None

    def attach(self, engine: Engine) -> None:
        """Called by the engine; every checkpoint of the engine commits a transaction."""
        source = engine.source
        if not (isinstance(source, ReportsCommitted) and isinstance(source, Repositionable)):
            raise ConfigError(f"exactly-once checkpoints need a source that reads back its committed offsets "
                              f"and repositions its partitions (Kafka), got {type(source).__name__}")
        self.engine = engine

    # -- start-up -----------------------------------------------------------

    def _selection_context(self, seqs: list[int]) -> dict[str, typing.Any]:
        """A cache of the group's committed offsets, filled as snapshots name partitions."""
        return {}

    def _committed_offsets(self, keys: typing.Iterable[str], cache: dict[str, typing.Any]) -> dict[str, int | None]:
        """Committed offsets of the partitions of this input among ``keys`` (others are left out)."""
        source = self.engine.source
        for key in keys:
            if key not in cache:
                try:
                    cache[key] = source.committed([key])[key]
                except ValueError:  # a partition of another topic
                    cache[key] = _FOREIGN
        return {k: cache[k] for k in keys if cache[k] is not _FOREIGN}

    def _rejects(self, snap: SnapshotFile, cache: dict[str, typing.Any]) -> str | None:
        positions = (snap.daemon or {}).get("positions", {})
        committed = self._committed_offsets(positions, cache)
        ahead = sorted(k for k, c in committed.items() if c is None or positions[k] > c)
        if not ahead:
            return None
        shown = ", ".join(f"{k} at {positions[k]} (committed: {committed[k]})" for k in ahead)
        return f"it is ahead of the committed offsets ({shown}): its transaction did not commit"

    def _start_empty(self, seqs: list[int], rejected: list[str], committed: dict) -> bool:
        if not seqs:
            return True
        # Only the very first snapshot of this directory, its transaction not committed: nothing was.
        return seqs == [1] and len(rejected) == 1 and "ahead of the committed offsets" in rejected[0]

    def _after_choice(self, chosen: SnapshotFile, seqs: list[int]) -> None:
        seq = (chosen.daemon or {}).get("sequence")
        for newer in seqs:
            if seq is not None and newer > seq:
                log.info("deleting %s: its transaction never committed", self.store.path(newer))
                self.store.delete(newer)

    def recover(self) -> SnapshotFile | None:
        chosen = super().recover()
        if chosen is None:
            for seq in self.store.sequences():  # the uncommitted first snapshot, if any
                self.store.delete(seq)
        return chosen

    # -- the engine's checkpoint --------------------------------------------

    def checkpoint(self, final: bool = False) -> None:
        """Commit the open transaction with a snapshot of exactly the positions it commits."""
        if self.engine.positions == (self.snapshot_positions or {}):
            return
        self.commit()

    def commit(self) -> bool:
        """Flush, snapshot, commit the transaction; abort and rewind on failure. True when committed."""
        engine = self.engine
        try:
            engine.flush()
        except Exception as exc:  # noqa: BLE001 - a delivery error aborts the transaction
            self._abort_and_rewind(f"flushing the outputs failed: {exc}")
            return False
        previous = (self.snapshot_positions, self.snapshot_seq)
        committed = engine.committed
        if not self.snapshot():
            self._abort_and_rewind(f"the snapshot could not be written: {self.last_error}")
            return False
        seq = self.snapshot_seq
        moved = {k: v for k, v in self.snapshot_positions.items() if committed.get(k) != v}
        self.faults.before_transaction_commit(seq)
        try:
            # the partitions that moved since the last commit: each must still be this consumer's (a partition
            # lost to the group without a revocation makes the transaction refuse, and the rewind redoes it)
            self.transaction.commit(moved, snapshot_metadata(self.store_id, seq))
        except Exception as exc:  # noqa: BLE001 - any failure: abort (fatal ones re-raise from abort)
            self.store.delete(seq)
            self.snapshot_positions, self.snapshot_seq = previous
            self._abort_and_rewind(f"committing the transaction failed: {exc!r}")
            return False
        engine.mark_committed(self.snapshot_positions)
        self.last_abort = None
        self.store.prune(protect=seq)
        return True

    def _abort_and_rewind(self, why: str) -> None:
        engine = self.engine
        self.aborts += 1
        self.last_abort = why
        log.error("transaction aborted (%s); rewinding to snapshot %s", why, self.snapshot_seq)
        abort_while_unreachable(self.transaction, lambda: engine.stopping)
        if self.snapshot_seq is not None:
            snap = self.store.read(self.snapshot_seq)
            daemon = snap.daemon or {}
            positions = self._usable_positions(dict(daemon.get("positions") or {}), daemon.get("source"))
            engine.restore(snap.model(), daemon.get("metrics"), positions)
            if engine.joiner is not None:  # the held events and early labels of that snapshot
                rewind_join(engine.joiner, snap.arrays, daemon.get("join"))
        else:
            cls, (arrays, meta) = self._initial
            engine.restore(cls.from_state(arrays, meta), None, {})
            positions = {}
            if engine.joiner is not None:
                rewind_join(engine.joiner, None, None)
        self.snapshot_positions = dict(positions)
        engine.source.reposition()

    def on_revoke(self, keys: list[str]) -> None:
        """Before Kafka takes partitions away: commit the transaction (offsets included, and the hand-over of
        the events held for them) now."""
        engine = self.engine
        released = self.handoff is not None and self.handoff.release(
            keys, engine.positions, self.store_id)
        if released or engine.positions != (self.snapshot_positions or {}):
            self.commit()
        return None

    def status(self) -> dict[str, typing.Any]:
        out = super().status()
        out["healthy"] = self.last_ok and self.last_abort is None
        out["transactions_aborted"] = self.aborts
        out["last_abort"] = self.last_abort
        return out
