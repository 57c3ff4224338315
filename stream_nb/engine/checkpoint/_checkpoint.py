"""Snapshots of a running daemon, and the commit protocol built on them.

With ``--snapshot-dir`` a checkpoint flushes the outputs, writes a snapshot
(model, metrics, input positions), then commits the positions that snapshot
holds, so the committed offsets never run ahead of the newest good snapshot.
At start-up the newest valid snapshot is restored, and each input resumes
right after it. The checkpointer acts on the engine through its public
methods and on the source through its capabilities. The docs' *Operations*
page gives the guarantees, rebalances, output files and the header layout.
Exactly-once outputs: :class:`~stream_nb.engine.checkpoint._exactly_once.ExactlyOnceCheckpointer`.
"""

from __future__ import annotations

import logging
import time
import typing
import uuid

from ...exceptions import CommitError, ConfigError, SnapshotError
from ...snapshots import FaultHooks, SnapshotFile, SnapshotStore, encode_meta, installed_fault_hooks
from ..loop import Engine
from ..join import join_state
from ..contract import HandlesRevocation, NamedInput, ResumesByPolicy, TracksFiles, TwoPhaseSink

__all__ = ["COMMIT_METADATA_PREFIX", "Checkpointer", "snapshot_metadata"]

log = logging.getLogger("stream_nb.snapshot")

#: Kafka commit metadata of a commit covered by a snapshot: prefix, store id, sequence.
COMMIT_METADATA_PREFIX = "stream-nb snapshot "


def snapshot_metadata(store_id: str, seq: int | None) -> str:
    """The metadata of a commit covered by snapshot ``seq`` of store ``store_id``."""
    return f"{COMMIT_METADATA_PREFIX}{store_id} {seq if seq is not None else 0}"


def _committer(metadata: str | None) -> str | None:
    """The store id in a commit's metadata, or None when stream-nb's snapshots did not commit it."""
    if not metadata or not metadata.startswith(COMMIT_METADATA_PREFIX):
        return None
    parts = metadata[len(COMMIT_METADATA_PREFIX):].split()
    return parts[0] if parts else None


def _same_source(before: dict, now: dict) -> bool:
    """Whether two snapshot source descriptions name the same input (a file by its real path)."""
    if before.get("kind") == now.get("kind") == "jsonl" and before.get("realpath"):
        return before.get("realpath") == now.get("realpath")
    return before == now


def _file_positions(engine: Engine, positions: dict[str, int], join: dict | None) -> dict[str, dict]:
    """The file (device and inode) and byte each position of the input and feedback files lies in (a
    :class:`~stream_nb.engine.TracksFiles` source's), so that a restart resumes in that file after a rotation."""
    files = dict(engine.source.file_positions(positions)) if isinstance(engine.source, TracksFiles) else {}
    feedback = engine.joiner.feedback if engine.joiner is not None else None
    if join is not None and isinstance(feedback, TracksFiles):
        files.update(feedback.file_positions(join["positions"]))
    return files


def _same_model(built: typing.Any, meta: dict) -> str | None:
    """Why a snapshot's model does not match the one the settings build, or None."""
    name = meta.get("model")
    if name != type(built).__name__:
        return f"it holds a {name} model, the settings build a {type(built).__name__}"
    # a stream_nb model's parameters as its state stores them (option objects as plain data); a river model's own
    get = getattr(built, "state_params", None) or getattr(built, "_get_params", None)
    if get is None:
        return None
    ours = encode_meta(get())
    theirs = encode_meta(meta.get("params"))
    if ours != theirs:
        diff = sorted(k for k in set(ours) | set(theirs) if ours.get(k) != theirs.get(k))
        shown = ", ".join(f"{k}={theirs.get(k)!r} (settings: {ours.get(k)!r})" for k in diff)
        return f"its model parameters differ: {shown}"
    return None


class Checkpointer:
    """Flush, snapshot, commit: the engine's checkpoint with snapshots on (output files exactly once, others
    at least once).

    Parameters
    ----------
    store
        An opened :class:`SnapshotStore`.
    every_events, interval_s
        A snapshot is due after this many events or seconds since the last
        one (and always on the final checkpoint, on a rebalance, and at every
        checkpoint after a failed attempt).
    source_info
        JSON-able description of the input, saved in each snapshot.
    commit_metadata
        Pass ``metadata=`` to ``source.commit`` (a consumer-group source,
        :class:`~stream_nb.engine.ResumesByPolicy`, takes it).
    faults
        Fault hooks (tests only); default: the installed ones (see
        :mod:`stream_nb.snapshots._faults`).

    Call :meth:`attach` (the engine does), then :meth:`recover` before running.
    """

    exactly_once = False
    #: With ``--feedback-topic``: the :class:`~stream_nb.engine.group._handoff.PartitionHandoff` that moves held
    #: events with their partition on a rebalance (set by the daemon), else None.
    handoff = None

    def __init__(
        self,
        store: SnapshotStore,
        *,
        every_events: int = 100_000,
        interval_s: float = 60.0,
        source_info: dict | None = None,
        commit_metadata: bool = False,
        faults: FaultHooks | None = None,
    ):
        self.store = store
        self.every = every_events
        self.interval = interval_s
        self.source_info = dict(source_info or {})
        self.commit_metadata = commit_metadata
        self.faults = faults if faults is not None else installed_fault_hooks()
        self.engine: Engine = None  # type: ignore[assignment]  # set by attach()
        self.store_id = uuid.uuid4().hex
        #: Positions and number of the last good snapshot (written or restored).
        self.snapshot_positions: dict[str, int] | None = None
        self.snapshot_seq: int | None = None
        #: The delayed-label join's progress at the last snapshot (None: none taken with a join).
        self.join_progress = None
        self._events_at_snapshot = 0
        self._last_snapshot_t = time.monotonic()
        self.written = 0
        self.failures = 0
        self.last_ok = True
        self.last_error: str | None = None
        self.last_path: str | None = None
        self.last_size: int | None = None
        self.last_seconds: float | None = None
        self.restored_from: str | None = None
        #: The model's class and state when it started empty (a rewind before any snapshot returns to it).
        self._initial: tuple[type, tuple] | None = None

    def attach(self, engine: Engine) -> None:
        """Called by the engine: the checkpointer acts on this engine.

        Snapshots are written at checkpoints, so the engine's checkpoint
        cadence (and its poll batches) are tightened to the snapshot cadence
        when that is shorter.
        """
        self.engine = engine
        engine.limit_checkpoint_cadence(self.every, self.interval)

    # -- start-up -----------------------------------------------------------

    def recover(self) -> SnapshotFile | None:
        """Restore the newest usable snapshot into the engine and position the source.

        Raises :class:`~stream_nb.exceptions.ConfigError` when the snapshot's
        model does not match the settings, and
        :class:`~stream_nb.exceptions.SnapshotError` when snapshots exist but
        none can be used.
        """
        engine = self.engine
        self._install_source_hooks()
        rejected: list[str] = []
        chosen, model = None, None
        seqs = self.store.sequences()
        context = self._selection_context(seqs)
        for seq in seqs:
            try:
                snap = self.store.read(seq)
                model = snap.model()
            except SnapshotError as exc:
                log.error("unusable snapshot, trying the previous one: %s", exc)
                rejected.append(str(exc))
                continue
            why_not = self._rejects(snap, context)
            if why_not:
                log.warning("snapshot %s not restored: %s", snap.path, why_not)
                rejected.append(f"{snap.path}: {why_not}")
                continue
            mismatch = _same_model(engine.model, snap.meta)
            if mismatch:
                raise ConfigError(
                    f"snapshot {snap.path} does not fit the settings: {mismatch}; run with the settings it was "
                    f"taken with, or point --snapshot-dir at another directory"
                )
            chosen = snap
            break
        if chosen is None:
            if self._start_empty(seqs, rejected, context):
                log.info("no snapshot in %s: starting from an empty model", self.store.directory)
                self._initial = (type(engine.model), engine.model.state())
                for _, sink in self._two_phase_sinks():  # a fresh run: fresh output files
                    sink.recover(None)
                return None
            raise SnapshotError(
                f"no usable snapshot in {self.store.directory} among {len(seqs)} file(s): " + "; ".join(rejected)
                + ". Move them away to start from an empty model."
            )
        self._after_choice(chosen, seqs)
        daemon = chosen.daemon or {}
        positions = self._usable_positions(dict(daemon.get("positions") or {}), daemon.get("source"))
        engine.restore(model, daemon.get("metrics"), positions)
        sink_states = daemon.get("sinks") if isinstance(daemon.get("sinks"), dict) else {}
        for role, sink in self._two_phase_sinks():  # finish the snapshot's commit, drop what it does not cover
            sink.recover(sink_states.get(role) or {})
        self.store_id = daemon.get("store_id") or self.store_id
        self.snapshot_positions = dict(positions)
        self.snapshot_seq = daemon.get("sequence")
        self._events_at_snapshot = engine.metrics.events
        self._last_snapshot_t = time.monotonic()
        self.restored_from = chosen.path
        before = daemon.get("source")
        if before and self.source_info and not _same_source(before, self.source_info):
            log.warning("snapshot %s was taken reading %s, the daemon now reads %s", chosen.path, before,
                        self.source_info)
        log.info(
            "restored snapshot %s (written %s): %s model, %s events learned, positions %s",
            chosen.path, chosen.created, chosen.meta.get("model"), getattr(model, "n_learned", "?"),
            positions or "none",
        )
        self._seek_file(positions, daemon.get("files"), before)
        return chosen

    def _selection_context(self, seqs: list[int]) -> typing.Any:
        return None

    def _rejects(self, snap: SnapshotFile, context: typing.Any) -> str | None:
        return None

    def _start_empty(self, seqs: list[int], rejected: list[str], context: typing.Any) -> bool:
        return not seqs

    def _after_choice(self, chosen: SnapshotFile, seqs: list[int]) -> None:
        """Hook after the snapshot to restore is chosen (exactly-once mode deletes the newer ones)."""

    def _usable_positions(self, positions: dict[str, int], before: dict | None = None) -> dict[str, int]:
        """The saved positions as this source names its partitions.

        A file read under another spelling of its path (relative, through a
        link) keeps its position: the snapshot records the file's real path,
        and so does this checkpointer's ``source_info`` (the daemon resolves it:
        the engine does no file work). Standard input cannot resume; its
        position is dropped.
        """
        source = self.engine.source
        partition = source.partition if isinstance(source, NamedInput) else None
        if partition == "stdin" and "stdin" in positions:
            log.warning("standard input cannot resume at a position: the model is restored, the input is read "
                        "from wherever the pipe starts")
            positions.pop("stdin")
        elif partition is not None and partition not in positions and isinstance(before, dict):
            old, realpath = before.get("path"), before.get("realpath")
            if old in positions and realpath and realpath == self.source_info.get("realpath"):
                log.info("%s is %s of the snapshot (same file): resuming its position", partition, old)
                positions[partition] = positions.pop(old)
        return positions

    def _seek_file(self, positions: dict[str, int], files: dict | None = None, before: dict | None = None) -> None:
        source = self.engine.source
        if isinstance(source, ResumesByPolicy) or not isinstance(source, NamedInput):
            return
        partition = source.partition
        if partition in positions:
            if isinstance(source, TracksFiles) and isinstance(files, dict):  # the file the position lies in
                old = before.get("path") if isinstance(before, dict) else None
                source.recall_files({partition: files.get(partition, files.get(old))})
            source.seek({partition: positions[partition]})
            log.info("resuming %s at byte %d", partition, positions[partition])

    def _two_phase_sinks(self) -> list[tuple[str, TwoPhaseSink]]:
        """The engine's sinks that commit with snapshots, with the key of their state in a snapshot."""
        engine = self.engine
        pairs = (("output", engine.sink), ("dead_letters", engine.dead_letters))
        return [(role, sink) for role, sink in pairs if isinstance(sink, TwoPhaseSink)]

    def _install_source_hooks(self) -> None:
        source = self.engine.source
        if isinstance(source, ResumesByPolicy):
            source.set_resume_policy(self.resume_position)
        if isinstance(source, HandlesRevocation):
            source.set_revocation_handler(self.on_revoke)

    # -- the engine's checkpoint --------------------------------------------

    def _due(self, final: bool) -> bool:
        engine = self.engine
        joined = engine.joiner.progress() if engine.joiner is not None else None
        staged = any(sink.staged for _, sink in self._two_phase_sinks())  # records that wait for a snapshot
        if (engine.positions == (self.snapshot_positions or {}) and joined == self.join_progress
                and not staged):
            return False
        if final or not self.last_ok:
            return True
        return (
            engine.metrics.events - self._events_at_snapshot >= self.every
            or time.monotonic() - self._last_snapshot_t >= self.interval
        )

    def checkpoint(self, final: bool = False) -> None:
        """Flush the outputs; write a snapshot when one is due; commit what the last good one covers."""
        self.engine.flush()
        if self._due(final):
            self.snapshot()
        self._commit()

    def snapshot(self) -> bool:
        """Write a snapshot of the engine now; on failure log, mark unhealthy and return False."""
        engine = self.engine
        positions = dict(engine.positions)
        daemon = {
            "store_id": self.store_id,
            "positions": positions,
            "metrics": engine.metrics.state(),
            "source": self.source_info,
            "exactly_once": self.exactly_once,
            "model_name": engine.model_name,
        }
        sinks = self._two_phase_sinks()
        if sinks:  # the records sent since the last snapshot, durable aside (an I/O error propagates, as flush's)
            daemon["sinks"] = {role: sink.precommit() for role, sink in sinks}
        start = time.perf_counter()
        try:
            arrays, meta = engine.model.state()
            if engine.joiner is not None:  # held events, early labels, feedback positions: with the model
                join_arrays, daemon["join"] = join_state(engine.joiner)
                self.join_progress = engine.joiner.progress()
                arrays = {**arrays, **join_arrays}
            files = _file_positions(engine, positions, daemon.get("join"))
            if files:  # where a rotated file's position lies (an older version: positions only)
                daemon["files"] = files
            seq, path, size = self.store.write(arrays, meta, daemon)
        except SnapshotError as exc:
            self.failures += 1
            self.last_error = str(exc)
            if self.last_ok:
                log.error("snapshot failed, offsets stay at the last good snapshot (%s); retrying at every "
                          "checkpoint: %s", self.snapshot_seq, exc)
            else:
                log.warning("snapshot failed again: %s", exc)
            self.last_ok = False
            engine.observer.snapshot_done(time.perf_counter() - start, False)  # /metrics, /readyz
            return False
        elapsed = time.perf_counter() - start
        if not self.last_ok:
            log.info("snapshots work again: %s", path)
        self.last_ok, self.last_error = True, None
        self.written += 1
        self.last_path, self.last_size, self.last_seconds = path, size, elapsed
        self.snapshot_positions, self.snapshot_seq = positions, seq
        self._events_at_snapshot = engine.metrics.events
        self._last_snapshot_t = time.monotonic()
        log.debug("snapshot %s: %d bytes in %.3f s", path, size, elapsed)
        if sinks:  # the snapshot is durable: its records become visible (a restart would finish this)
            self.faults.before_sink_commit(seq)
            for _, sink in sinks:
                sink.commit()
        engine.observer.snapshot_done(elapsed, True)  # /metrics, /readyz
        if not self.exactly_once:
            self.store.prune(protect=seq)
        return True

    def _commit(self) -> None:
        engine = self.engine
        committed = engine.committed
        target = {k: v for k, v in (self.snapshot_positions or {}).items() if committed.get(k) != v}
        if not target:
            return
        try:
            if self.commit_metadata:
                engine.source.commit(target, metadata=snapshot_metadata(self.store_id, self.snapshot_seq))
            else:
                engine.source.commit(target)
        except CommitError as exc:
            log.warning("commit failed, will retry at the next checkpoint: %s", exc)
            return
        engine.mark_committed(target)

    def status(self) -> dict[str, typing.Any]:
        """Health and snapshot figures, merged into the engine's metrics dict."""
        return {
            "healthy": self.last_ok,
            "last_snapshot_ok": self.last_ok,
            "snapshot_error": self.last_error,
            "snapshots_written": self.written,
            "snapshot_failures": self.failures,
            "last_snapshot": self.last_path,
            "last_snapshot_bytes": self.last_size,
            "last_snapshot_seconds": self.last_seconds,
            "restored_from": self.restored_from,
        }

    # -- Kafka hooks -------------------------------------------------------

    def resume_position(self, key: str, committed: int | None, metadata: str | None) -> int | None:
        """Where partition ``key`` resumes when assigned; None: at the committed offset.

        The model's own position (from the snapshot, or what it processed
        since) wins, unless another consumer committed an offset beyond it.
        Called by the source on the engine's thread.
        """
        engine = self.engine
        mine = engine.positions.get(key)
        committer = _committer(metadata)
        # the events a member (another, or this one: a rebalance revokes every partition first) held for it
        if self.handoff is not None:
            self.handoff.assigned(key)
        handoff = self.handoff if committer is not None else None
        if mine is None:
            if handoff is not None:
                handoff.adopt(key, committed, committer, self.store_id, engine.positions)
                if committed is not None and handoff.partner(key) is not None:
                    # held events were taken in at this offset: from now on it is this member's position, so
                    # the next hand-over of the partition names it, committed by this member, even if no
                    # event of it comes before the partition goes again
                    engine.positions[key] = committed
            return None
        if committed is None or committed <= mine:
            if committed == mine and handoff is not None:
                handoff.adopt(key, committed, committer, self.store_id, engine.positions)
            return mine
        if committer == self.store_id:
            log.warning(
                "partition %s: resuming at offset %d, this model's position, behind the offset %d this daemon "
                "committed (an older snapshot was restored): those events are processed again and their "
                "outputs repeated; the model learns each once", key, mine, committed,
            )
            return mine
        log.warning(
            "partition %s: another consumer committed offset %d, ahead of this model's position %d; resuming "
            "at %d: the events in between belong to that consumer's model", key, committed, mine, committed,
        )
        engine.adopt_position(key, committed)
        if self.snapshot_positions is not None:
            self.snapshot_positions[key] = committed
        if self.handoff is not None:
            self.handoff.adopt(key, committed, committer, self.store_id, engine.positions)
        return committed

    def on_revoke(self, keys: list[str]) -> tuple[dict[str, int], str, typing.Callable[[bool], None]] | None:
        """Before Kafka takes ``keys`` away: flush, snapshot, and hand back the offsets to commit.

        Runs on the Kafka client's thread while the engine waits inside
        ``poll()``, so nothing else touches the engine meanwhile.
        """
        engine = self.engine
        try:
            engine.flush()
        except Exception as exc:  # noqa: BLE001 - nothing may be committed; the new owner replays
            log.error("partitions revoked: flushing the outputs failed, nothing committed: %s", exc)
            return None
        # on a rebalance and at shutdown alike (the source's close revokes every partition): a member stopped
        # alone hands its held events to the members that run on, and gets them back itself when it restarts
        released = self.handoff is not None and self.handoff.release(
            keys, engine.positions, self.store_id)
        if (released or engine.positions != (self.snapshot_positions or {})) and not self.snapshot() and released:
            log.error("partitions revoked: the snapshot failed, so the offsets committed are older than the "
                      "hand-over of the events held for %s: the new owner does not take them in", ", ".join(keys))
        wanted, committed = set(keys), engine.committed
        target = {k: v for k, v in (self.snapshot_positions or {}).items()
                  if k in wanted and committed.get(k) != v}
        if not target:
            return None

        def done(ok: bool) -> None:
            if ok:
                engine.mark_committed(target)

        return target, snapshot_metadata(self.store_id, self.snapshot_seq), done
