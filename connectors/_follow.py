"""Following a file as ``tail -F`` does: which file a path names, its rotation, and where a position lies.

A :class:`FollowedFile` holds the file a JSON-lines source reads and the path
it was opened at, and tells at the file's end whether it was rotated (the path
names another file) or truncated. A source's positions count the bytes of every
file read at that path in turn; :meth:`FollowedFile.where` turns one into the
file it lies in (device, inode) and the byte there, which a snapshot records,
and :meth:`FollowedFile.resume` reopens that place at start-up, reading the
rest of a rotated file first when it is still in the same directory. The docs'
*Operations* page gives the rules.
"""

from __future__ import annotations

import logging
import os
import stat
import typing

__all__ = ["FOLLOW_INTERVAL_S", "FollowedFile"]

#: Longest sleep between two looks at a followed file with nothing new (the poll's timeout bounds it too).
FOLLOW_INTERVAL_S = 0.05

log = logging.getLogger("connectors.jsonl")

Identity = tuple[int, int]  # (st_dev, st_ino)


def _identity(info: os.stat_result) -> Identity:
    return info.st_dev, info.st_ino


def _file_entry(entry: typing.Any) -> tuple[int, Identity, int] | None:
    """``(position, (dev, ino), byte)`` of a snapshot's file entry, or None when it is not one.

    >>> _file_entry({"position": 120, "dev": 2049, "ino": 77, "byte": 20})
    (120, (2049, 77), 20)
    >>> _file_entry({"position": 120}) is None, _file_entry(7) is None
    (True, True)
    """
    if not isinstance(entry, dict):
        return None
    values = [entry.get(k) for k in ("position", "dev", "ino", "byte")]
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in values):
        return None
    position, dev, ino, byte = values
    return (position, (dev, ino), byte) if byte <= position else None


class FollowedFile:
    """The file a source reads at ``path`` (open as ``fd``), followed across rotations; see the module notes.

    ``follow`` is True (follow until stopped), False (the end of the file is the end) or a callable
    (follow while it returns True). The path is watched for a new file at each end of file when
    ``follow`` is not False, and once after a restart resumed in a file no longer at the path.
    """

    def __init__(self, path: str, fd: int, follow: bool | typing.Callable[[], bool]):
        self.path = path
        self.fd = fd
        self.identity = _identity(os.fstat(fd))
        self._follow = follow
        #: (start position, identity) of each file read, oldest first; the last is the one read now.
        self.segments: list[tuple[int, Identity]] = [(0, self.identity)]
        self._away = False  # the file read is known not to be the path's (a restart resumed in a rotated file)
        self._recalled: tuple[int, Identity, int] | None = None  # a snapshot's (position, identity, byte)

    @property
    def base(self) -> int:
        """The position of byte 0 of the file read now."""
        return self.segments[-1][0]

    def following(self) -> bool:
        """Whether to wait for more lines at the end of the file (else it is the end of the input)."""
        return bool(self._follow()) if callable(self._follow) else self._follow

    def replaced(self) -> str | None:
        """At the end of the file read: ``"rotated"`` when the path names another file now, ``"truncated"``
        when the file is shorter than what was read of it, else None (also while the path names nothing:
        the old file was moved away and its successor is not there yet)."""
        if self._follow is False and not self._away:
            return None
        try:
            now = os.stat(self.path)
        except OSError:
            return None
        if _identity(now) != self.identity:
            return "rotated"
        if os.fstat(self.fd).st_size < os.lseek(self.fd, 0, os.SEEK_CUR):
            return "truncated"
        return None

    def open_next(self, how: str) -> int | None:
        """The descriptor to go on with after :meth:`replaced` said ``how``: the path's new file, or the
        truncated one rewound; None when the path cannot be opened now (try again later)."""
        if how == "truncated":
            os.lseek(self.fd, 0, os.SEEK_SET)
            return self.fd
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except OSError:
            return None
        if not _is_regular(fd):
            os.close(fd)
            return None
        return fd

    def switch(self, fd: int, end: int, how: str) -> None:
        """Go on with ``fd`` (from :meth:`open_next`), its byte 0 at position ``end``."""
        if fd != self.fd:
            os.close(self.fd)
            self.fd, self.identity = fd, _identity(os.fstat(fd))
        self._away = False
        self.segments.append((end, self.identity))
        log.info("%s was %s: reading %s from its start (position %d)", self.path, how,
                 "the new file" if how == "rotated" else "it again", end)

    def where(self, position: int) -> tuple[bool, Identity, int] | None:
        """``(in the file read now, its identity, byte)`` of a position: the newest file read that starts
        at or before it; None when it lies before every file still remembered."""
        for i in range(len(self.segments) - 1, -1, -1):
            base, identity = self.segments[i]
            if base <= position:
                return i == len(self.segments) - 1, identity, position - base
        return None

    def entry(self, position: int) -> dict[str, int] | None:
        """A snapshot's record of ``position``: ``{"position", "dev", "ino", "byte"}``, or None (unknown).

        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "in.jsonl")
        >>> with open(path, "wb") as f:
        ...     _ = f.write(b'{"a": 1}\\n')
        >>> followed = FollowedFile(path, os.open(path, os.O_RDONLY), True)
        >>> entry = followed.entry(9)
        >>> entry["byte"], entry["ino"] == os.stat(path).st_ino
        (9, True)
        >>> followed.close()
        """
        found = self.where(position)
        if found is None:
            return None
        _, (dev, ino), byte = found
        return {"position": position, "dev": dev, "ino": ino, "byte": byte}

    def recall(self, entry: typing.Any) -> None:
        """Take a snapshot's :meth:`entry` for the next :meth:`resume` (ignored when not of that form)."""
        self._recalled = _file_entry(entry)

    def forget_before(self, position: int) -> None:
        """Drop the files that end at or before ``position`` (committed: never sought again)."""
        keep = 0
        for i, (base, _) in enumerate(self.segments):
            if base <= position:
                keep = i
        del self.segments[:keep]

    def resume(self, position: int) -> int:
        """The byte of :attr:`fd` to read from to resume at ``position``: with the entry :meth:`recall` took
        for it, in the file it names (see the module notes for the three cases); without one (a snapshot of
        an older version), the byte ``position`` of the file at the path."""
        recalled, self._recalled = self._recalled, None
        if recalled is None or recalled[0] != position:
            self.segments = [(0, self.identity)]
            return position
        _, identity, byte = recalled
        if identity == self.identity:
            size = os.fstat(self.fd).st_size
            if byte > size:
                log.warning("%s has %d bytes, fewer than the %d read of it by the snapshot: it was truncated "
                            "since; reading it from its start", self.path, size, byte)
                byte = 0
            self.segments = [(position - byte, identity)]
            return byte
        old = self._find(identity)
        if old is not None:
            name, fd = old
            if os.fstat(fd).st_size >= byte:
                log.info("%s was rotated since the snapshot: reading the rest of %s (the file it was) from byte "
                         "%d, then %s from its start", self.path, name, byte, self.path)
                os.close(self.fd)
                self.fd, self.identity, self._away = fd, identity, True
                self.segments = [(position - byte, identity)]
                return byte
            os.close(fd)
        log.warning("%s names another file than the snapshot's (device %d, inode %d), which is no longer in %s: "
                    "reading %s from its start; lines that file got after byte %d, if any, are not read",
                    self.path, identity[0], identity[1], os.path.dirname(os.path.abspath(self.path)), self.path,
                    byte)
        self.segments = [(position, self.identity)]
        return 0

    def _find(self, identity: Identity) -> tuple[str, int] | None:
        """``(path, descriptor)`` of the regular file ``identity`` in the path's directory, or None."""
        directory = os.path.dirname(os.path.abspath(self.path))
        try:
            entries = list(os.scandir(directory))
        except OSError:
            return None
        for entry in entries:
            try:
                if entry.inode() != identity[1] or not entry.is_file(follow_symlinks=False):
                    continue
                fd = os.open(entry.path, os.O_RDONLY)
            except OSError:
                continue
            if _identity(os.fstat(fd)) == identity:
                return entry.path, fd
            os.close(fd)
        return None

    def close(self) -> None:
        """Close the file read now."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def _is_regular(fd: int) -> bool:
    return stat.S_ISREG(os.fstat(fd).st_mode)
