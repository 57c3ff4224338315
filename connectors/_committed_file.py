"""Output files that never hold a line twice: replaced by a fresh run, or committed with snapshots.

Both write through a hidden file beside the target, ``.<name>.inprogress``.
:class:`ReplacedFile` (a run without snapshots) renames it over the target at
the first flush. :class:`StagedFile` (a run with snapshots) stages the lines
there until a snapshot covers them, then appends them to the target, as a
Flink ``FileSink`` commits part files at checkpoints. At start-up
(:meth:`StagedFile.recover`) it finishes a commit a crash cut short, skips
the lines the target already holds, and drops what no snapshot covers. The
docs' *Operations* page gives the guarantees.

>>> import os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "out.jsonl")
>>> f = StagedFile(path, fsync=False)
>>> f.recover(None)
>>> f.write(b'{"id": 1}\\n')
>>> state = f.precommit()            # kept in the snapshot
>>> open(path, "rb").read(), state["length"], state["staged"]
(b'', 0, 10)
>>> f.commit()                       # the snapshot is durable
>>> open(path, "rb").read()
b'{"id": 1}\\n'
>>> f.close()
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
import typing

from stream_nb._checks import is_integer
from stream_nb.exceptions import ConfigError, StreamNBError

__all__ = ["CommittedJsonLinesSink", "ReplacedFile", "StagedFile", "aside_path", "is_special_file"]

log = logging.getLogger("connectors.jsonl")

#: Bytes kept in memory before they are written to the staging file, and per copy to the target.
_CHUNK = 1 << 20


def aside_path(path: str) -> str:
    """The hidden file beside ``path`` where its lines wait: ``dir/.<name>.inprogress``.

    >>> aside_path("/data/out.jsonl")
    '/data/.out.jsonl.inprogress'
    """
    directory, name = os.path.split(os.path.abspath(path))
    return os.path.join(directory, f".{name}.inprogress")


def is_special_file(path: str) -> bool:
    """True when ``path`` exists and is no regular file (``/dev/null``, a FIFO, a terminal): it is written
    straight through, as nothing can be renamed over it or staged beside it."""
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except FileNotFoundError:
        return False


def _fsync_dir(path: str) -> None:
    """Make a rename in ``path``'s directory durable."""
    fd = os.open(os.path.dirname(os.path.abspath(path)) or ".", os.O_RDONLY)
    try:
        with contextlib.suppress(OSError):  # some file systems refuse to fsync a directory; a rename is atomic
            os.fsync(fd)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes | memoryview) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _keep_mode(fd: int, path: str) -> None:
    """Give the file of ``fd`` the permissions of the file it replaces at ``path``, if there is one."""
    with contextlib.suppress(OSError):
        os.fchmod(fd, stat.S_IMODE(os.stat(path).st_mode))


class ReplacedFile:
    """A file written afresh: lines go to :func:`aside_path`, renamed over ``path`` at the first :meth:`flush`.

    ``fsync``: fsync at every flush (and the directory after the rename).
    """

    def __init__(self, path: str, fsync: bool = True):
        self.path = path
        self.aside = aside_path(path)
        self._fsync = fsync
        fd = os.open(self.aside, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o666)
        _keep_mode(fd, path)
        self._file = open(fd, "wb", buffering=_CHUNK)  # noqa: SIM115 - closed in close()
        self._published = False
        self._written = False

    def write(self, data: bytes) -> None:
        """Write ``data`` (visible at the next flush at the latest)."""
        self._file.write(data)
        self._written = True

    def flush(self) -> None:
        """Write everything out (fsync), and the first time put the new file in place of the old one."""
        self._file.flush()
        if self._fsync:
            os.fsync(self._file.fileno())
        if not self._published:
            os.replace(self.aside, self.path)
            self._published = True
            if self._fsync:
                _fsync_dir(self.path)

    def close(self) -> None:
        """Flush and close; a file never flushed and never written to is dropped, leaving the old one."""
        if self._file.closed:
            return
        try:
            if self._published or self._written:
                self.flush()
        finally:
            self._file.close()
            if not self._published:
                with contextlib.suppress(OSError):
                    os.unlink(self.aside)


class StagedFile:
    """Lines committed with snapshots: staged beside ``path``, appended to it by :meth:`commit`.

    See the module docstring. :meth:`recover` comes first, before any
    :meth:`write`; ``fsync``: fsync the staging file at every flush and the
    target at every commit.
    """

    def __init__(self, path: str, fsync: bool = True):
        self.path = path
        self.staging = aside_path(path)
        self._fsync = fsync
        # not truncated: until recover() decides, it may hold the bytes of a commit a crash cut short
        self._staging_fd = os.open(self.staging, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o666)
        self._target_fd = -1
        self._buf = bytearray()
        self._written = 0  # bytes in the staging file
        self._dirty = False  # written to the staging file since its last fsync
        self._committed = 0  # the target's length
        self._identity: tuple[int, int] | None = None
        self._skip = 0  # lines the replay sends that the target holds already
        self._pending: tuple[int, int] | None = None  # (committed, staged) of the last precommit

    @property
    def staged(self) -> int:
        """Bytes written since the last commit, not yet in the target."""
        return self._written + len(self._buf)

    # -- writing ----------------------------------------------------------------

    def write(self, data: bytes) -> None:
        """Stage ``data`` (whole lines over successive calls); the first lines after a recovery may be ones the
        target holds already, and are dropped."""
        if self._target_fd < 0:
            raise RuntimeError(f"{self.path}: recover() must come before the first write")
        if self._skip:
            data = self._drop_lines(data)
        self._buf += data
        if len(self._buf) >= _CHUNK:
            self._write_out()

    def _drop_lines(self, data: bytes) -> bytes:
        at = 0
        while self._skip:
            newline = data.find(b"\n", at)
            if newline < 0:
                return b""
            at = newline + 1
            self._skip -= 1
        return data[at:]

    def _write_out(self) -> None:
        if self._buf:
            _write_all(self._staging_fd, self._buf)
            self._written += len(self._buf)
            self._dirty = True
            del self._buf[:]

    def flush(self) -> None:
        """Write the staged lines to the staging file (fsync): durable, not yet visible."""
        self._write_out()
        if self._dirty and self._fsync:
            os.fsync(self._staging_fd)
        self._dirty = False

    # -- the two phases -----------------------------------------------------------

    def precommit(self) -> dict[str, typing.Any]:
        """Flush; the state a snapshot keeps: the target, its committed length, the staged length."""
        self.flush()
        self._pending = (self._committed, self._written)
        return {"path": self.path, "realpath": os.path.realpath(self.path), "file": list(self._identity or ()),
                "length": self._committed, "staged": self._written, "skip": self._skip}

    def commit(self) -> None:
        """Append the bytes of the last :meth:`precommit` to the target (fsync), then empty the staging file."""
        if self._pending is None:
            return
        committed, staged = self._pending
        self._complete(committed, staged)
        later = self._written - staged  # bytes staged after the precommit (none in the daemon's checkpoint)
        tail = os.pread(self._staging_fd, later, staged) if later else b""
        os.ftruncate(self._staging_fd, 0)
        if tail:
            _write_all(self._staging_fd, tail)
        self._written, self._dirty = len(tail), bool(tail)
        self._committed = committed + staged
        self._pending = None

    def _complete(self, committed: int, staged: int) -> int:
        """Append staging bytes ``T - committed`` to ``staged`` to the target of length ``T``; bytes appended.

        Appending only what the target lacks makes a commit that is repeated
        (after an error, or by a restart) add each byte once.
        """
        start = os.fstat(self._target_fd).st_size - committed
        if start >= staged:
            return 0
        available = os.fstat(self._staging_fd).st_size
        if available < staged:
            raise StreamNBError(f"{self.staging} holds {available} bytes, fewer than the {staged} to commit to "
                                f"{self.path}: the staging file was changed while no daemon ran")
        at = start
        while at < staged:
            chunk = os.pread(self._staging_fd, min(_CHUNK, staged - at), at)
            _write_all(self._target_fd, chunk)
            at += len(chunk)
        if self._fsync:
            os.fsync(self._target_fd)
        return staged - start

    # -- start-up -------------------------------------------------------------------

    def recover(self, state: dict | None) -> None:
        """Start from a snapshot's state for this file (``{}``: it has none), or afresh (``None``).

        With the state ``{length: C, staged: S}`` and the target's length ``T``: ``T < C + S``, a crash cut
        the commit short, and bytes ``T - C`` to ``S`` of the staging file are appended now; ``T > C + S``,
        the target holds lines of newer snapshots that could not be restored, and as many replayed lines are
        not written again. The rest of the staging file is dropped (the input replays it). A target that is
        not the file the snapshot committed to is continued as it is, with a warning.
        """
        if state is None:
            self._start_afresh()
            return
        self._target_fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o666)
        info = os.fstat(self._target_fd)
        size = info.st_size
        self._identity = (info.st_dev, info.st_ino)
        why_not = self._not_committed_here(state, info)
        if why_not is None:
            committed, staged, self._skip = state["length"], state["staged"], state["skip"]
            end = committed + staged
            if size < end:
                added = self._complete(committed, staged)
                log.info("%s: finished the commit a crash cut short: %d bytes appended", self.path, added)
                size = end
            elif size > end:  # newer snapshots committed these lines, but the restored one is older
                lines = self._count_lines(end, size)
                self._skip += lines
                log.warning("%s holds %d lines committed after the restored snapshot (a newer one was unusable): "
                            "the first %d lines of the replay are not written again", self.path, lines, lines)
        else:
            log.warning("%s: %s; this run goes on appending to it, from the snapshot's position", self.path, why_not)
        self._committed = size
        os.ftruncate(self._staging_fd, 0)  # sent after the snapshot: the replay sends it again

    def _not_committed_here(self, state: dict, info: os.stat_result) -> str | None:
        """Why the snapshot's state does not describe this file, or None when it does."""
        if not state:
            return "the snapshot holds no state of it"
        if not all(is_integer(state.get(k)) and state[k] >= 0 for k in ("length", "staged", "skip")):
            return f"the snapshot's state of it is not valid: {state!r}"
        if state.get("realpath") != os.path.realpath(self.path):
            return f"the snapshot's outputs went to {state.get('path')!r}"
        if list(state.get("file") or ()) != [info.st_dev, info.st_ino]:
            return "it is not the file the snapshot committed to (moved, replaced or deleted since)"
        if info.st_size < int(state["length"]):
            return f"it holds {info.st_size} bytes, fewer than the {state['length']} committed (truncated since)"
        return None

    def _start_afresh(self) -> None:
        """An empty file replaces the target at once: the (empty) staging file renamed over it."""
        os.ftruncate(self._staging_fd, 0)
        _keep_mode(self._staging_fd, self.path)
        os.replace(self.staging, self.path)
        if self._fsync:
            _fsync_dir(self.path)
        self._target_fd = self._staging_fd
        info = os.fstat(self._target_fd)
        self._identity = (info.st_dev, info.st_ino)
        self._committed = 0
        self._staging_fd = os.open(self.staging, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o666)

    def _count_lines(self, start: int, end: int) -> int:
        count = 0
        with open(self.path, "rb") as f:
            f.seek(start)
            while start < end:
                chunk = f.read(min(_CHUNK, end - start))
                if not chunk:
                    break
                count += chunk.count(b"\n")
                start += len(chunk)
        return count

    def close(self) -> None:
        """Flush (staged lines stay staged: a snapshot commits them); an empty staging file is removed."""
        if self._staging_fd < 0:
            return
        try:
            if self._target_fd >= 0:
                self.flush()
        finally:
            empty = os.fstat(self._staging_fd).st_size == 0
            os.close(self._staging_fd)
            self._staging_fd = -1
            if self._target_fd >= 0:
                os.close(self._target_fd)
                self._target_fd = -1
            if empty:
                with contextlib.suppress(OSError):
                    os.unlink(self.staging)


class CommittedJsonLinesSink:
    """A JSON-lines sink whose file gets the lines a snapshot covers, each exactly once across crashes.

    A :class:`~stream_nb.engine.TwoPhaseSink` over a :class:`StagedFile`: the
    daemon's checkpointer calls :meth:`recover` before the first record, and
    :meth:`precommit` and :meth:`commit` around each snapshot.
    ``connectors.jsonl.make_sink`` builds it for a file in mode
    ``"snapshots"``; ``path`` names a regular file or a new one.
    """

    def __init__(self, path: str, fsync: bool = True):
        self.name = path
        try:
            self._file = StagedFile(path, fsync)
        except OSError as exc:
            raise ConfigError(f"cannot open output {path!r}: {exc.strerror} ({exc.filename})") from None
        self._closed = False

    @property
    def staged(self) -> int:
        """Bytes sent since the last :meth:`commit`."""
        return self._file.staged

    def send(self, value: bytes, key: bytes | None = None) -> None:
        """Stage ``value`` and a newline; ``key`` is not written."""
        if b"\n" in value:
            raise ValueError(f"a JSON-lines value cannot contain a newline: {value[:80]!r}")
        try:
            self._file.write(value + b"\n")
        except OSError as exc:
            raise self._named(exc) from None

    def flush(self) -> None:
        """Write the staged lines aside durably (not yet visible: a snapshot commits them)."""
        self._call(self._file.flush)

    def recover(self, state: dict | None) -> None:
        """Finish the commit of the restored snapshot's ``state`` and drop what it does not cover (``None``: no
        snapshot, an empty file replaces this one)."""
        self._call(self._file.recover, state)

    def precommit(self) -> dict:
        """Stage every line sent so far durably; the state a snapshot keeps."""
        return self._call(self._file.precommit)

    def commit(self) -> None:
        """Append the lines of the last :meth:`precommit` to the file (its snapshot is durable)."""
        self._call(self._file.commit)

    def close(self) -> None:
        """Flush and close; the staged lines stay staged (see :meth:`StagedFile.close`)."""
        if not self._closed:
            self._closed = True
            self._call(self._file.close)

    def _call(self, method: typing.Callable, *args: typing.Any) -> typing.Any:
        try:
            return method(*args)
        except OSError as exc:
            raise self._named(exc) from None

    def _named(self, exc: OSError) -> OSError:
        """The same error naming the file, as the other JSON-lines sinks' errors do."""
        return exc if exc.filename is not None else OSError(exc.errno, exc.strerror or str(exc), self.name)
