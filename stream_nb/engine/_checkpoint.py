"""Snapshots of a running daemon, and the commit protocol built on them.

With ``--snapshot-dir`` the daemon keeps its model, its prequential metrics
and its input positions in snapshot files (the container of
:mod:`stream_nb._snapshot`), and the snapshot becomes the source of truth:

* **Checkpoint order**: flush the outputs, write a snapshot, commit the input
  positions that snapshot holds. The group offsets (Kafka) therefore never run
  ahead of the newest good snapshot; when a snapshot cannot be written, nothing
  further is committed until one can.
* **Start-up**: the newest valid snapshot is restored (model, metrics,
  positions), every snapshot that fails its checks is logged with the file and
  the reason and skipped. A JSON-lines file resumes at the saved byte
  position. A Kafka partition resumes, when it is assigned, at the snapshot's
  offset (:meth:`Checkpointer.resume_position`). The model learns every
  labeled event exactly once: what it learned is in the snapshot, and the
  input resumes right after it.
* **Rebalance**: before Kafka takes partitions away, the daemon flushes,
  snapshots and commits what it processed (:meth:`Checkpointer.on_revoke`).

Files in the directory: ``snapshot-<sequence, 12 digits>.snb``, numbered
upwards, never overwritten; temporary files ``.snapshot-*.tmp-*`` while one is
written (removed at start-up if a crash left one); ``.lock``, held by the
running daemon (a second daemon on the same directory is refused). The newest
``keep`` valid snapshots are kept; an older file is deleted only once ``keep``
newer valid ones exist, so the newest good snapshot is never deleted or
overwritten. If files exist but none can be used, the daemon refuses to start
rather than silently start over from an empty model.

The daemon's part of a snapshot header (``header["daemon"]``)::

    {"store_id": "3f2a...",     # this directory's identity, kept across restarts
     "sequence": 42,            # the number in the file name
     "positions": {"weather-0": 1234, ...},  # per partition, the next offset / next byte
     "metrics": {...},          # PrequentialMetrics.state(): exact counters
     "source": {"kind": "kafka", "topic": "weather", "group_id": "g"},  # or {"kind": "jsonl", "path": ...}
     "exactly_once": false,
     "model_name": "tan"}

Kafka offsets committed with snapshots on carry the metadata
``"stream-nb snapshot <store_id> <sequence>"``: when a partition is assigned
and its committed offset is *ahead* of this model's position, it tells whether
this daemon committed it (it then fell back to an older snapshot and resumes
there, re-processing: outputs repeat, the model learns each event once) or
another member of the group did (the partition resumes at the committed
offset: those events belong to that member's model).

Exactly once (:class:`ExactlyOnceCheckpointer`, ``--exactly-once``)
-------------------------------------------------------------------
Outputs, dead letters and input offsets commit in one Kafka transaction per
checkpoint, and every checkpoint writes a snapshot *before* the transaction
commits, holding exactly the positions the transaction commits. A crash
between the two leaves the newest snapshot *ahead* of the committed offsets:
the transaction it belongs to never committed (the broker aborts it when the
restarted producer re-registers), so its outputs were never visible, and
restoring it would make the model count those events twice when they are
processed again. So on start-up the daemon restores the newest valid snapshot
that is nowhere ahead of the group's committed offsets, which is the one of
the last committed transaction (it is never pruned while it is that one), and
deletes the newer ones. A failed transaction (or a snapshot that cannot be
written) is aborted and the engine rewinds to the last committed snapshot:
model, metrics, positions, and the consumer's position in every assigned
partition.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import re
import time
import typing
import uuid

from .. import _snapshot
from ..exceptions import CommitError, ConfigError, SnapshotError

__all__ = ["SnapshotStore", "Checkpointer", "ExactlyOnceCheckpointer", "COMMIT_METADATA_PREFIX"]

log = logging.getLogger("stream_nb.snapshot")

_NAME = re.compile(r"^snapshot-(\d{12})\.snb$")
_TEMP = re.compile(r"^\.snapshot-\d{12}\.snb\.tmp-")
#: Kafka commit metadata of a commit covered by a snapshot: prefix, store id, sequence.
COMMIT_METADATA_PREFIX = "stream-nb snapshot "


_FOREIGN = object()
#: Test-only: seconds to sleep between writing a snapshot and committing its transaction
#: (exactly-once mode), so a fault test can kill the daemon in that window.
TEST_PAUSE_BEFORE_COMMIT_ENV = "STREAM_NB_TEST_PAUSE_BEFORE_COMMIT"


def _test_pause(name: str) -> float:
    try:
        return max(0.0, float(os.environ.get(name, "") or 0))
    except ValueError:
        return 0.0


def _name(seq: int) -> str:
    return f"snapshot-{seq:012d}.snb"


class SnapshotStore:
    """The snapshot files of one directory; see the module docstring.

    Parameters
    ----------
    directory
        Created if missing (at :meth:`open`, and again before each write).
    keep
        How many valid snapshots to keep (>= 1).
    """

    def __init__(self, directory: str | os.PathLike, keep: int = 3):
        if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
            raise ConfigError(f"snapshot keep must be an integer >= 1, got {keep!r}")
        self.directory = os.fspath(directory)
        self.keep = keep
        self._valid: dict[int, bool] = {}
        self._last_seq = 0
        self._lock_fd: int | None = None

    # -- set-up -------------------------------------------------------------

    def open(self) -> None:
        """Create the directory, take its lock, remove temporary files a crash left.

        A directory that cannot be created or written is logged and tolerated
        (writes are retried at every checkpoint); one locked by another process
        raises :class:`~stream_nb.exceptions.ConfigError`.
        """
        try:
            os.makedirs(self.directory, exist_ok=True)
            fd = os.open(os.path.join(self.directory, ".lock"), os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            log.error("snapshot directory %s is not usable (%s); snapshots will be retried at every checkpoint",
                      self.directory, exc.strerror or exc)
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.read(fd, 64).decode(errors="replace").strip() or "another process"
            os.close(fd)
            raise ConfigError(
                f"snapshot directory {self.directory} is in use by another stream-nb process (pid {holder}); "
                f"give each daemon its own --snapshot-dir"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._lock_fd = fd
        for name in self._listdir():
            if _TEMP.match(name):
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(self.directory, name))
                    log.info("removed %s, a snapshot a crash left half-written", os.path.join(self.directory, name))

    def close(self) -> None:
        """Release the directory's lock."""
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    # -- files --------------------------------------------------------------

    def _listdir(self) -> list[str]:
        try:
            return os.listdir(self.directory)
        except OSError:
            return []

    def path(self, seq: int) -> str:
        """The file of snapshot ``seq``."""
        return os.path.join(self.directory, _name(seq))

    def sequences(self) -> list[int]:
        """Snapshot numbers present, newest first."""
        seqs = [int(m.group(1)) for m in map(_NAME.match, self._listdir()) if m]
        return sorted(seqs, reverse=True)

    def read(self, seq: int) -> _snapshot.SnapshotFile:
        """Read and verify snapshot ``seq``; remembers whether it is valid."""
        try:
            snap = _snapshot.read(self.path(seq))
        except SnapshotError:
            self._valid[seq] = False
            raise
        self._valid[seq] = True
        return snap

    def write(self, arrays: dict, meta: dict, daemon: dict) -> tuple[int, str, int]:
        """Write the next snapshot; return ``(sequence, path, size)``. Raises SnapshotError."""
        try:
            os.makedirs(self.directory, exist_ok=True)
        except OSError as exc:
            raise SnapshotError(f"{self.directory}: cannot create the snapshot directory: {exc.strerror or exc}") from exc
        seq = max([self._last_seq, *self.sequences()]) + 1
        path = self.path(seq)
        size = _snapshot.write(path, arrays, meta, daemon={**daemon, "sequence": seq})
        self._last_seq = seq
        self._valid[seq] = True
        return seq, path, size

    def delete(self, seq: int) -> None:
        """Remove snapshot ``seq`` (a missing file is fine)."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path(seq))
        self._valid.pop(seq, None)

    def prune(self, protect: int | None = None) -> list[int]:
        """Delete files older than the ``keep``-th newest valid snapshot; never ``protect``.

        Validity is known for the snapshots this store wrote or read; another
        file is read once to find out. Returns the numbers deleted.
        """
        deleted, valid = [], 0
        for seq in self.sequences():
            if valid >= self.keep and seq != protect:
                try:
                    os.unlink(self.path(seq))
                except OSError as exc:
                    log.warning("could not delete old snapshot %s: %s", self.path(seq), exc.strerror or exc)
                    continue
                self._valid.pop(seq, None)
                deleted.append(seq)
                continue
            ok = self._valid.get(seq)
            if ok is None:
                try:
                    self.read(seq)
                    ok = True
                except SnapshotError:
                    ok = False
            valid += ok
        return deleted


def _flush(engine: typing.Any) -> None:
    """Flush the engine's outputs, then its dead letters (through the engine's reporting hook when it has one)."""
    flush = getattr(engine, "_flush_sinks", None)
    if flush is not None:
        flush()
    else:
        engine.sink.flush()
        engine.dead_letters.flush()


def _metadata(store_id: str, seq: int | None) -> str:
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


def _same_model(built: typing.Any, meta: dict) -> str | None:
    """Why a snapshot's model does not match the one the settings build, or None."""
    name = meta.get("model")
    if name != type(built).__name__:
        return f"it holds a {name} model, the settings build a {type(built).__name__}"
    get = getattr(built, "_get_params", None)
    if get is None:
        return None
    ours = _snapshot.encode_meta(get())
    theirs = _snapshot.encode_meta(meta.get("params"))
    if ours != theirs:
        diff = sorted(k for k in set(ours) | set(theirs) if ours.get(k) != theirs.get(k))
        shown = ", ".join(f"{k}={theirs.get(k)!r} (settings: {ours.get(k)!r})" for k in diff)
        return f"its model parameters differ: {shown}"
    return None


class Checkpointer:
    """Flush, snapshot, commit: the engine's checkpoint with snapshots on (at-least-once outputs).

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
        Pass ``metadata=`` to ``source.commit`` (the Kafka source takes it).

    Call :meth:`attach` (the engine does), then :meth:`recover` before running.
    """

    exactly_once = False

    def __init__(
        self,
        store: SnapshotStore,
        *,
        every_events: int = 100_000,
        interval_s: float = 60.0,
        source_info: dict | None = None,
        commit_metadata: bool = False,
    ):
        self.store = store
        self.every = every_events
        self.interval = interval_s
        self.source_info = dict(source_info or {})
        self.commit_metadata = commit_metadata
        self.engine: typing.Any = None
        self.store_id = uuid.uuid4().hex
        #: Positions and number of the last good snapshot (written or restored).
        self.snapshot_positions: dict[str, int] | None = None
        self.snapshot_seq: int | None = None
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

    def attach(self, engine: typing.Any) -> None:
        """Called by the engine: the checkpointer acts on this engine.

        Snapshots are written at checkpoints, so the engine's checkpoint
        cadence (and its poll batches) are tightened to the snapshot cadence
        when that is shorter.
        """
        self.engine = engine
        cfg = engine.config
        cfg["commit_every_records"] = min(cfg["commit_every_records"], self.every)
        cfg["poll_max_records"] = min(cfg["poll_max_records"], self.every)
        if 0 < self.interval < cfg["commit_interval_s"]:
            cfg["commit_interval_s"] = self.interval

    # -- start-up -----------------------------------------------------------

    def recover(self) -> _snapshot.SnapshotFile | None:
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
                return None
            raise SnapshotError(
                f"no usable snapshot in {self.store.directory} among {len(seqs)} file(s): " + "; ".join(rejected)
                + ". Move them away to start from an empty model."
            )
        self._after_choice(chosen, seqs)
        daemon = chosen.daemon or {}
        positions = self._usable_positions(dict(daemon.get("positions") or {}), daemon.get("source"))
        engine.restore(model, daemon.get("metrics"), positions)
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
        self._seek_file(positions)
        return chosen

    def _selection_context(self, seqs: list[int]) -> typing.Any:
        return None

    def _rejects(self, snap: _snapshot.SnapshotFile, context: typing.Any) -> str | None:
        return None

    def _start_empty(self, seqs: list[int], rejected: list[str], context: typing.Any) -> bool:
        return not seqs

    def _after_choice(self, chosen: _snapshot.SnapshotFile, seqs: list[int]) -> None:
        """Hook after the snapshot to restore is chosen (exactly-once mode deletes the newer ones)."""

    def _usable_positions(self, positions: dict[str, int], before: dict | None = None) -> dict[str, int]:
        """The saved positions as this source names its partitions.

        A file read under another spelling of its path (relative, through a
        link) keeps its position: the snapshot records the file's real path.
        Standard input cannot resume; its position is dropped.
        """
        source = self.engine.source
        partition = getattr(source, "partition", None)
        if partition == "stdin" and "stdin" in positions:
            log.warning("standard input cannot resume at a position: the model is restored, the input is read "
                        "from wherever the pipe starts")
            positions.pop("stdin")
        elif partition is not None and partition not in positions and isinstance(before, dict):
            old = before.get("path")
            if old in positions and before.get("realpath") == os.path.realpath(partition):
                log.info("%s is %s of the snapshot (same file): resuming its position", partition, old)
                positions[partition] = positions.pop(old)
        return positions

    def _seek_file(self, positions: dict[str, int]) -> None:
        source = self.engine.source
        partition = getattr(source, "partition", None)
        if hasattr(source, "set_resume_policy") or partition is None:
            return
        if partition in positions:
            source.seek({partition: positions[partition]})
            log.info("resuming %s at byte %d", partition, positions[partition])

    def _install_source_hooks(self) -> None:
        source = self.engine.source
        if hasattr(source, "set_resume_policy"):
            source.set_resume_policy(self.resume_position)
        if hasattr(source, "set_revocation_handler"):
            source.set_revocation_handler(self.on_revoke)

    # -- the engine's checkpoint --------------------------------------------

    def _due(self, final: bool) -> bool:
        engine = self.engine
        if engine.positions == (self.snapshot_positions or {}):
            return False
        if final or not self.last_ok:
            return True
        return (
            engine.metrics.events - self._events_at_snapshot >= self.every
            or time.monotonic() - self._last_snapshot_t >= self.interval
        )

    def checkpoint(self, final: bool = False) -> None:
        """Flush the outputs; write a snapshot when one is due; commit what the last good one covers."""
        _flush(self.engine)
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
        start = time.perf_counter()
        try:
            arrays, meta = engine.model.state()
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
        engine.observer.snapshot_done(elapsed, True)  # /metrics, /readyz
        if not self.exactly_once:
            self.store.prune(protect=seq)
        return True

    def _commit(self) -> None:
        engine = self.engine
        target = {k: v for k, v in (self.snapshot_positions or {}).items() if engine._committed.get(k) != v}
        if not target:
            return
        try:
            if self.commit_metadata:
                engine.source.commit(target, metadata=_metadata(self.store_id, self.snapshot_seq))
            else:
                engine.source.commit(target)
        except CommitError as exc:
            log.warning("commit failed, will retry at the next checkpoint: %s", exc)
            return
        engine._committed.update(target)

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
        if mine is None:
            return None
        if committed is None or committed <= mine:
            return mine
        if _committer(metadata) == self.store_id:
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
        engine.positions[key] = committed
        engine._committed[key] = committed
        if self.snapshot_positions is not None:
            self.snapshot_positions[key] = committed
        return committed

    def on_revoke(self, keys: list[str]) -> tuple[dict[str, int], str, typing.Callable[[bool], None]] | None:
        """Before Kafka takes ``keys`` away: flush, snapshot, and hand back the offsets to commit.

        Runs on the Kafka client's thread while the engine waits inside
        ``poll()``, so nothing else touches the engine meanwhile.
        """
        engine = self.engine
        try:
            _flush(engine)
        except Exception as exc:  # noqa: BLE001 - nothing may be committed; the new owner replays
            log.error("partitions revoked: flushing the outputs failed, nothing committed: %s", exc)
            return None
        if engine.positions != (self.snapshot_positions or {}):
            self.snapshot()
        wanted = set(keys)
        target = {k: v for k, v in (self.snapshot_positions or {}).items()
                  if k in wanted and engine._committed.get(k) != v}
        if not target:
            return None

        def done(ok: bool) -> None:
            if ok:
                engine._committed.update(target)

        return target, _metadata(self.store_id, self.snapshot_seq), done


class ExactlyOnceCheckpointer(Checkpointer):
    """Flush, snapshot, commit a transaction: exactly-once outputs (Kafka only).

    ``transaction`` has ``commit(positions, metadata)`` (offsets into the
    transaction, then commit) and ``abort()``; the sinks send inside it. Every
    checkpoint with new positions snapshots and commits. See the module docstring.
    """

    exactly_once = True

    def __init__(self, store: SnapshotStore, transaction: typing.Any, *, source_info: dict | None = None):
        super().__init__(store, every_events=1, interval_s=0.0, source_info=source_info, commit_metadata=True)
        self.transaction = transaction
        self.aborts = 0
        self.last_abort: str | None = None
        self._initial: tuple[type, tuple] | None = None

    def attach(self, engine: typing.Any) -> None:
        """Called by the engine; every checkpoint of the engine commits a transaction."""
        self.engine = engine

    # -- start-up -----------------------------------------------------------

    def _selection_context(self, seqs: list[int]) -> dict[str, typing.Any]:
        """A cache of the group's committed offsets, filled as snapshots name partitions."""
        return {}

    def _committed(self, keys: typing.Iterable[str], cache: dict[str, typing.Any]) -> dict[str, int | None]:
        """Committed offsets of the partitions of this input among ``keys`` (others are left out)."""
        source = self.engine.source
        for key in keys:
            if key not in cache:
                try:
                    cache[key] = source.committed([key])[key]
                except ValueError:  # a partition of another topic
                    cache[key] = _FOREIGN
        return {k: cache[k] for k in keys if cache[k] is not _FOREIGN}

    def _rejects(self, snap: _snapshot.SnapshotFile, cache: dict[str, typing.Any]) -> str | None:
        positions = (snap.daemon or {}).get("positions", {})
        committed = self._committed(positions, cache)
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

    def _after_choice(self, chosen: _snapshot.SnapshotFile, seqs: list[int]) -> None:
        seq = (chosen.daemon or {}).get("sequence")
        for newer in seqs:
            if seq is not None and newer > seq:
                log.info("deleting %s: its transaction never committed", self.store.path(newer))
                self.store.delete(newer)

    def recover(self) -> _snapshot.SnapshotFile | None:
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
            _flush(engine)
        except Exception as exc:  # noqa: BLE001 - a delivery error aborts the transaction
            self._abort_and_rewind(f"flushing the outputs failed: {exc}")
            return False
        previous = (self.snapshot_positions, self.snapshot_seq)
        if not self.snapshot():
            self._abort_and_rewind(f"the snapshot could not be written: {self.last_error}")
            return False
        seq = self.snapshot_seq
        pause = _test_pause(TEST_PAUSE_BEFORE_COMMIT_ENV)
        if pause:
            log.warning("test hook %s: pausing %.1f s between snapshot %s and its transaction's commit",
                        TEST_PAUSE_BEFORE_COMMIT_ENV, pause, seq)
            time.sleep(pause)
        try:
            self.transaction.commit(dict(self.snapshot_positions), _metadata(self.store_id, seq))
        except Exception as exc:  # noqa: BLE001 - any failure: abort (fatal ones re-raise from abort)
            self.store.delete(seq)
            self.snapshot_positions, self.snapshot_seq = previous
            self._abort_and_rewind(f"committing the transaction failed: {exc!r}")
            return False
        engine._committed = dict(self.snapshot_positions)
        self.last_abort = None
        self.store.prune(protect=seq)
        return True

    def _abort_and_rewind(self, why: str) -> None:
        engine = self.engine
        self.aborts += 1
        self.last_abort = why
        log.error("transaction aborted (%s); rewinding to snapshot %s", why, self.snapshot_seq)
        self.transaction.abort()
        if self.snapshot_seq is not None:
            snap = self.store.read(self.snapshot_seq)
            daemon = snap.daemon or {}
            positions = self._usable_positions(dict(daemon.get("positions") or {}), daemon.get("source"))
            engine.restore(snap.model(), daemon.get("metrics"), positions)
        else:
            cls, (arrays, meta) = self._initial
            engine.restore(cls.from_state(arrays, meta), None, {})
            positions = {}
        self.snapshot_positions = dict(positions)
        reposition = getattr(engine.source, "reposition", None)
        if reposition is not None:
            reposition()

    def on_revoke(self, keys: list[str]) -> None:
        """Before Kafka takes partitions away: commit the transaction (offsets included) now."""
        if self.engine.positions != (self.snapshot_positions or {}):
            self.commit()
        return None

    def status(self) -> dict[str, typing.Any]:
        out = super().status()
        out["healthy"] = self.last_ok and self.last_abort is None
        out["transactions_aborted"] = self.aborts
        out["last_abort"] = self.last_abort
        return out
