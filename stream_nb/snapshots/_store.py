"""The snapshot directory of a running daemon: numbered files, one lock, old files pruned.

The daemon's checkpointer (:mod:`stream_nb.engine.checkpoint._checkpoint`) decides *when*
to write a snapshot and what it holds; :class:`SnapshotStore` does every file
operation on the directory: locking, listing, writing, reading, deleting.

Files in the directory: ``snapshot-<sequence, 12 digits>.snb``, numbered
upwards, never overwritten; temporary files ``.snapshot-*.tmp-*`` while one is
written (removed at start-up if a crash left one); ``.lock``, held by the
running daemon (a second daemon on the same directory is refused). The newest
``keep`` valid snapshots are kept; an older file is deleted only once ``keep``
newer valid ones exist, so the newest good snapshot is never deleted or
overwritten.

>>> import os, tempfile
>>> from stream_nb import NaiveBayes
>>> store = SnapshotStore(tempfile.mkdtemp(), keep=2)
>>> store.open()
>>> model = NaiveBayes()
>>> for _ in range(3):
...     seq, path, size = store.write(*model.state(), daemon={"positions": {}})
>>> store.sequences(), os.path.basename(store.path(3))
([3, 2, 1], 'snapshot-000000000003.snb')
>>> store.prune(protect=3), store.sequences()  # keep=2: the oldest goes
([1], [3, 2])
>>> store.read(3).daemon["sequence"]
3
>>> store.close()
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import re

from .._checks import is_integer
from ..exceptions import ConfigError, SnapshotError
from ._faults import FaultHooks, installed_fault_hooks
from ._format import SnapshotFile
from ._format import read as read_snapshot
from ._format import write as write_snapshot

__all__ = ["SnapshotStore"]

log = logging.getLogger("stream_nb.snapshot")

_NAME = re.compile(r"^snapshot-(\d{12})\.snb$")
_TEMP = re.compile(r"^\.snapshot-\d{12}\.snb\.tmp-")


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
    faults
        Fault hooks called while a snapshot is written (tests only); default:
        the installed ones (see :mod:`stream_nb.snapshots._faults`).
    """

    def __init__(self, directory: str | os.PathLike, keep: int = 3, *, faults: FaultHooks | None = None):
        if not is_integer(keep) or keep < 1:
            raise ConfigError(f"snapshot keep must be an integer >= 1, got {keep!r}")
        self.directory = os.fspath(directory)
        self.keep = keep
        self.faults = faults if faults is not None else installed_fault_hooks()
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

    def read(self, seq: int) -> SnapshotFile:
        """Read and verify snapshot ``seq``; remembers whether it is valid."""
        try:
            snap = read_snapshot(self.path(seq))
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
        size = write_snapshot(path, arrays, meta, daemon={**daemon, "sequence": seq},
                              before_rename=self.faults.before_rename)
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
