"""JSON lines in and out: a Source over stdin or a file, a Sink to stdout, stderr or a file.

The embedded default of ``stream-nb run``: no broker needed. ``Record.partition``
is the path (or ``"stdin"``) and ``Record.next_position`` the byte offset after
the line's newline; blank lines are skipped and counted. The docs' *The daemon*
page gives the rules (following a file, oversize lines, output modes).

>>> import os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "in.jsonl")
>>> with open(path, "wb") as f:
...     _ = f.write(b'{"a": 1}\\n\\n{"a": 2}')
>>> source = make_source({"path": path})
>>> [(r.value, r.position["line"], r.next_position) for r in source.poll(10, 0.1)]
[(b'{"a": 1}', 1, 9), (b'{"a": 2}', 3, 18)]
>>> source.poll(10, 0.1), source.exhausted, source.blank_lines
([], True, 1)
>>> source.close()
"""

from __future__ import annotations

import logging
import os
import select
import stat
import sys
import time
import typing
from itertools import accumulate, repeat

from stream_nb._checks import configure, is_integer
from stream_nb.engine import Record, make_records
from stream_nb.exceptions import ConfigError

from ._jsonl_sink import (SINK_DEFAULT_CONFIG, JsonLinesSink, is_regular_file, make_dead_letter_sink, make_sink,
                          path_setting)
from ._follow import FOLLOW_INTERVAL_S, FollowedFile

__all__ = [
    "SOURCE_DEFAULT_CONFIG",
    "SINK_DEFAULT_CONFIG",
    "JsonLinesSource",
    "JsonLinesSink",
    "make_source",
    "make_sink",
    "make_dead_letter_sink",
]

SOURCE_DEFAULT_CONFIG: dict[str, typing.Any] = {
    # File to read; None or "-" reads standard input (partition name "stdin").
    "path": None,
    # Bytes asked from the operating system per read.
    "read_size": 64 * 1024,
    # Longest line kept whole; keep it >= the engine's max_event_bytes (see above).
    "max_line_bytes": 1024 * 1024,
    # Follow a regular file as tail -F does: True (until stopped), or a callable (while it returns True).
    "follow": False,
}

_BLANK = b" \t\r"
_BOM = b"\xef\xbb\xbf"  # UTF-8 byte order mark

log = logging.getLogger(__name__)


def _int_setting(config: dict, name: str, minimum: int) -> int:
    value = config[name]
    if not is_integer(value) or value < minimum:
        raise ConfigError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return value


class JsonLinesSource:
    """A :class:`~stream_nb.engine.Source` of JSON lines; see the module docstring.

    Keyword arguments are the keys of :data:`SOURCE_DEFAULT_CONFIG`.
    """

    DEFAULT_CONFIG = SOURCE_DEFAULT_CONFIG

    def __init__(self, **configs: typing.Any):
        self.config = configure(self.DEFAULT_CONFIG, configs, "JSON-lines source setting")
        self._read_size = _int_setting(self.config, "read_size", 1)
        self._max_line = _int_setting(self.config, "max_line_bytes", 1)
        path = path_setting(self.config)
        if path is None:
            self.partition = "stdin"
            self._fd = sys.stdin.fileno()
            self._owns_fd = False
        else:
            self.partition = path
            try:
                self._fd = os.open(path, os.O_RDONLY)
            except OSError as exc:
                raise ConfigError(f"cannot open input {path!r}: {exc.strerror}") from None
            if stat.S_ISDIR(os.fstat(self._fd).st_mode):  # opens fine, and fails only at the first read
                os.close(self._fd)
                raise ConfigError(f"cannot read input {path!r}: it is a directory; expected a JSON-lines file")
            self._owns_fd = True
        self._seekable = self._owns_fd and is_regular_file(self._fd)
        follow = self.config["follow"]
        if not (isinstance(follow, bool) or callable(follow)):
            raise ConfigError(f"follow must be true, false or a callable, got {follow!r}")
        if follow is True and not self._seekable:
            if self._owns_fd:
                os.close(self._fd)
            raise ConfigError(f"cannot follow {self.partition!r}: it is not a regular file (a pipe or standard "
                              "input ends when its writer closes it)")
        #: The file read and the files read before it at the path (regular files only).
        self._follower = FollowedFile(path, self._fd, follow) if self._seekable else None
        #: Blank lines skipped so far.
        self.blank_lines = 0
        #: The positions last passed to :meth:`commit`.
        self.committed: dict[str, int] = {}
        # the last record of the poll before the last, and the records of the last poll
        self._handed: tuple[Record | None, list[Record]] = (None, [])
        self._reset(offset=0, line=0)

    def _reset(self, offset: int, line: int, base: int = 0) -> None:
        self._buf = bytearray()
        self._buf_offset = offset  # stream offset of self._buf[0]
        self._base = base  # stream offset of byte 0 of the file read
        self._scan_from = 0  # no newline in self._buf before this index
        self._line = line  # number of the last line handed out or skipped
        self._eof = False
        self._exhausted = False
        self._cut: tuple[bytes, int] | None = None  # (kept prefix, start offset) of an overlong line
        self._cut_tail = b""  # the last byte of an overlong line dropped so far

    # -- Source protocol --------------------------------------------------------

    @property
    def exhausted(self) -> bool:
        """True once every line of the input has been returned."""
        return self._exhausted

    def poll(self, max_records: int, timeout: float) -> list[Record]:
        """Return up to ``max_records`` lines, waiting at most ``timeout`` seconds for the first."""
        records: list[Record] = []
        deadline = time.monotonic() + timeout
        while len(records) < max_records:
            if self._cut is None:
                lines = self._complete_lines(max_records - len(records))
                if lines is not None:
                    records.extend(lines)
                    continue
            record = self._next_line()
            if record is not None:
                records.append(record)
                continue
            if self._eof:
                record = self._last_line()
                if record is not None:
                    records.append(record)
                self._exhausted = not self._buf and self._cut is None
                break
            # Data already in hand is returned without waiting for more.
            wait = 0.0 if records else max(0.0, deadline - time.monotonic())
            if not self._readable(wait):
                break
            chunk = os.read(self._fd, self._read_size)
            if chunk:
                self._buf += chunk
            elif self._follower is None:
                self._eof = True
            elif not self._file_ended(records, deadline):
                break
        if records:
            before = self._handed[1]
            self._handed = (before[-1] if before else self._handed[0], records)
        return records

    def _file_ended(self, records: list[Record], deadline: float) -> bool:
        """At the end of a regular file: go on with its successor (rotated or truncated; the old file's last
        line, even without its newline, goes to ``records``), end the input (not following), or wait for
        more lines until ``deadline`` (False: the poll is over)."""
        follower = self._follower
        how = follower.replaced()
        if how is not None:
            chunk = os.read(self._fd, self._read_size)  # lines written after the last read: read them first
            if chunk:
                self._buf += chunk
                return True
            fd = follower.open_next(how)
            if fd is not None:
                record = self._last_line()
                if record is not None:
                    records.append(record)
                follower.switch(fd, self._buf_offset, how)
                self._fd = follower.fd
                self._reset(offset=self._buf_offset, line=0, base=self._buf_offset)
                return True
        if not follower.following():
            self._eof = True
            return True
        wait = 0.0 if records else deadline - time.monotonic()
        if wait <= 0:
            return False
        time.sleep(min(wait, FOLLOW_INTERVAL_S))
        return True

    def commit(self, positions: dict[str, int]) -> None:
        """Remember ``positions`` in :attr:`committed` (no durable offset store; see above)."""
        self.committed = dict(positions)
        if self._follower is not None and self.partition in positions:
            self._follower.forget_before(positions[self.partition])

    def seek(self, positions: dict[str, int]) -> None:
        """Continue reading at a byte offset that starts a line (a ``next_position``).

        Only a regular file can seek; for stdin only the current position is accepted.
        """
        unknown = set(positions) - {self.partition}
        if unknown:
            raise ConfigError(
                f"cannot seek partition(s) {sorted(unknown)}: this source reads {self.partition!r}"
            )
        if self.partition not in positions:
            return
        offset = positions[self.partition]
        if not is_integer(offset) or offset < 0:
            raise ConfigError(f"seek position must be a byte offset >= 0, got {offset!r}")
        if not self._seekable:
            if offset == self._buf_offset and self._cut is None:
                return
            raise ConfigError(f"{self.partition} is not a regular file and cannot seek to byte {offset}")
        position, offset = offset, self._follower.resume(offset)  # in the file a snapshot said, if it did
        self._fd = self._follower.fd
        size = os.fstat(self._fd).st_size
        if offset > size:
            raise ConfigError(f"cannot seek {self.partition!r} to byte {offset}: the file has {size} bytes")
        line = 0
        if offset:
            os.lseek(self._fd, 0, os.SEEK_SET)
            remaining = offset
            last = b""
            while remaining:
                chunk = os.read(self._fd, min(self._read_size, remaining))
                if not chunk:
                    break
                line += chunk.count(b"\n")
                last = chunk[-1:]
                remaining -= len(chunk)
            if last != b"\n" and offset != size:
                raise ConfigError(f"cannot seek {self.partition!r} to byte {offset}: it is not the start of a line")
            if last != b"\n":
                line += 1  # resuming after a final line without newline
        os.lseek(self._fd, offset, os.SEEK_SET)
        self._reset(offset=position, line=line, base=position - offset)

    def file_positions(self, positions: dict[str, int]) -> dict[str, dict[str, int]]:
        """For a snapshot: ``{partition: {"position", "dev", "ino", "byte"}}``, the file (device and inode)
        this source's position lies in and the byte there; empty for stdin or a pipe."""
        follower, name = self._follower, self.partition
        entry = follower.entry(positions[name]) if follower is not None and name in positions else None
        return {} if entry is None else {name: entry}

    def recall_files(self, files: dict[str, typing.Any]) -> None:
        """Take a snapshot's :meth:`file_positions`: the next :meth:`seek` to that position resumes in that
        file (see :mod:`connectors._follow`); an entry not of that form is ignored."""
        if self._follower is not None and isinstance(files, dict):
            self._follower.recall(files.get(self.partition))

    #: Unit of :meth:`lag`.
    lag_unit = "bytes"

    def lag(self, timeout: float = 0.0) -> dict[str, int] | None:
        """Bytes of a regular input file not yet returned by :meth:`poll`; ``None`` for a pipe or stdin.

        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "in.jsonl")
        >>> with open(path, "wb") as f:
        ...     _ = f.write(b'{"a": 1}\\n{"a": 2}\\n')
        >>> source = JsonLinesSource(path=path)
        >>> source.lag()[path], len(source.poll(1, 0.1)), source.lag()[path]
        (18, 1, 9)
        >>> source.close()
        """
        if not self._seekable or self._fd < 0:
            return None
        return {self.partition: max(0, os.fstat(self._fd).st_size - (self._buf_offset - self._base))}

    def line_at(self, offset: int) -> int | None:
        """The number of the line that ends at byte ``offset`` (a ``next_position``), or ``None`` if unknown.

        Known for the records of the last poll and the last one of the poll
        before (where a consumer stops), and otherwise counted from the start
        of a regular file (a snapshot's position, say).

        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "in.jsonl")
        >>> with open(path, "wb") as f:
        ...     _ = f.write(b'{"a": 1}\\n\\n{"a": 2}\\n')
        >>> source = JsonLinesSource(path=path)
        >>> [r.next_position for r in source.poll(10, 0.1)], source.line_at(19), source.line_at(9), source.line_at(0)
        ([9, 19], 3, 1, 0)
        >>> source.close()
        """
        before, last = self._handed
        for record in (*reversed(last), before):
            if record is not None and record.next_position == offset:
                return record.position["line"]
        if not offset:
            return 0
        found = self._follower.where(offset) if self._follower is not None and self._fd >= 0 else None
        if found is None or not found[0]:  # stdin, a pipe, or a file read before the last rotation
            return None
        offset = found[2]  # the byte in the file read now
        lines, last, done = 0, b"", 0
        while done < offset:
            chunk = os.pread(self._fd, min(1 << 20, offset - done), done)
            if not chunk:
                return None
            lines += chunk.count(b"\n")
            last = chunk[-1:]
            done += len(chunk)
        return lines + (last not in (b"\n", b""))

    def close(self) -> None:
        """Close the file (never stdin). Does not commit."""
        if self._follower is not None:
            self._follower.close()  # the file read now, which may no longer be the one first opened
            self._fd = -1
        elif self._owns_fd and self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    # -- internals ----------------------------------------------------------------

    def _readable(self, wait: float) -> bool:
        if self._seekable:
            return True
        try:
            ready, _, _ = select.select([self._fd], [], [], wait)
        except (OSError, ValueError):  # a descriptor select cannot watch: read blocking
            return True
        return bool(ready)

    def _next_line(self) -> Record | None:
        """The next complete non-blank line in the buffer, or None when more data is needed."""
        while True:
            newline = self._buf.find(b"\n", self._scan_from)
            if newline < 0:
                self._scan_from = len(self._buf)
                if self._cut is None and len(self._buf) > self._max_line:
                    self._cut = (bytes(self._buf[: self._max_line + 1]), self._buf_offset)
                if self._cut is not None:  # drop the rest of an overlong line as it arrives
                    if self._buf:
                        self._cut_tail = bytes(self._buf[-1:])
                    self._buf_offset += len(self._buf)
                    del self._buf[:]
                    self._scan_from = 0
                return None
            end = self._buf_offset + newline + 1
            line = bytes(self._buf[:newline])
            start = self._buf_offset
            del self._buf[: newline + 1]
            self._buf_offset = end
            self._scan_from = 0
            record = self._make(line, start, end)
            if record is not None:
                return record

    def _complete_lines(self, most: int) -> list[Record] | None:
        """The records of up to ``most`` complete lines in the buffer at once (blank ones skipped and
        counted), or None when it holds no complete line: :meth:`_next_line`'s work for a whole read,
        with one split and no Python call per line unless a line needs :meth:`_make`'s care (a
        ``\\r``, a blank line, one over ``max_line_bytes``)."""
        buf = self._buf
        last = buf.rfind(b"\n")
        if last < 0:
            return None
        lines = bytes(buf[:last]).split(b"\n", most)[:most]
        lengths = list(map(len, lines))
        base = self._buf_offset
        ends = [base + at + i for i, at in enumerate(accumulate(lengths), 1)]  # each line's newline counted
        consumed = ends[-1] - base
        starts = [end - n - 1 for end, n in zip(ends, lengths)]
        chunk_has_cr = buf.find(b"\r", 0, consumed) >= 0
        del buf[:consumed]
        self._buf_offset, self._scan_from = base + consumed, 0
        stripped = list(map(bytes.strip, lines, repeat(_BLANK)))
        if chunk_has_cr or max(lengths) > self._max_line or not all(stripped) or _BOM in stripped:
            made = map(self._make, lines, starts, ends)
            return [record for record in made if record is not None]
        first, partition, file_base = self._line + 1, self.partition, self._base
        self._line += len(lines)
        positions = [{"file": partition, "line": n, "byte": start - file_base}
                     for n, start in zip(range(first, first + len(lines)), starts)]
        return make_records(lines, repeat(None), repeat(partition), positions, ends)

    def _last_line(self) -> Record | None:
        line = bytes(self._buf)
        start, end = self._buf_offset, self._buf_offset + len(self._buf)
        del self._buf[:]
        self._buf_offset = end
        self._scan_from = 0
        if not line and self._cut is None:
            return None
        return self._make(line, start, end, terminated=False)

    def _make(self, line: bytes, start: int, end: int, terminated: bool = True) -> Record | None:
        """The record of one line, or None (counted) for a blank line.

        ``line`` is without its newline; ``end`` is the offset after it (after
        the line's last byte when ``terminated`` is False: the input's last line).
        """
        self._line += 1
        size = None  # the whole line's length, when only a prefix of it is kept
        if self._cut is not None:
            last = line[-1:] or self._cut_tail
            line, start = self._cut
            self._cut, self._cut_tail = None, b""
            size = end - start - terminated - (last == b"\r")
            if size <= self._max_line:  # it was cut only because of its "\r"
                line, size = line[:size], None
        else:
            if line.endswith(b"\r"):
                line = line[:-1]
            if len(line) > self._max_line:
                size = len(line)
                line = line[: self._max_line + 1]
        content = line.strip(_BLANK)
        if not content or content == _BOM:
            self.blank_lines += 1
            return None
        position = {"file": self.partition, "line": self._line, "byte": start - self._base}
        return Record(value=line, key=None, partition=self.partition, position=position, next_position=end,
                      size=size)


def make_source(config: dict[str, typing.Any]) -> JsonLinesSource:
    """Build a :class:`JsonLinesSource` from a dict of :data:`SOURCE_DEFAULT_CONFIG` keys."""
    return JsonLinesSource(**config)
