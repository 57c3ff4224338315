"""Writing JSON lines: the sink of :mod:`connectors.jsonl` to stdout, stderr or a file.

Writes each value followed by ``\\n``; see :mod:`connectors.jsonl` for the
modes of a file.
"""

from __future__ import annotations

import logging
import os
import stat
import sys
import typing

from stream_nb._checks import configure
from stream_nb.exceptions import ConfigError

from ._committed_file import CommittedJsonLinesSink, ReplacedFile, is_special_file

__all__ = ["SINK_DEFAULT_CONFIG", "JsonLinesSink", "is_regular_file", "make_dead_letter_sink", "make_sink",
           "path_setting"]

SINK_DEFAULT_CONFIG: dict[str, typing.Any] = {
    # File to write; None or "-" writes to `stream` instead.
    "path": None,
    # "stdout" or "stderr": where to write when no path is given.
    "stream": "stdout",
    # A file: "append" to it, "replace" it (written aside, renamed into place at the first flush), or commit
    # lines with "snapshots" (see the module docstring).
    "mode": "append",
    # fsync a regular file on every flush(), so a commit never runs ahead of the disk.
    "fsync": True,
}

log = logging.getLogger("connectors.jsonl")


def path_setting(config: dict) -> str | None:
    path = config["path"]
    if path is not None and not isinstance(path, (str, os.PathLike)):
        raise ConfigError(f"path must be a file path, '-' or None, got {path!r}")
    path = os.fspath(path) if path is not None else None
    return None if path in (None, "-") else path


def is_regular_file(fd: int) -> bool:
    return stat.S_ISREG(os.fstat(fd).st_mode)


class JsonLinesSink:
    """A :class:`~stream_nb.engine.Sink` writing one JSON value per line; see the module docstring.

    Keyword arguments are the keys of :data:`SINK_DEFAULT_CONFIG`.
    """

    DEFAULT_CONFIG = SINK_DEFAULT_CONFIG

    def __init__(self, **configs: typing.Any):
        self.config = configure(self.DEFAULT_CONFIG, configs, "JSON-lines sink setting")
        path = path_setting(self.config)
        stream = self.config["stream"]
        if stream not in ("stdout", "stderr"):
            raise ConfigError(f"stream must be 'stdout' or 'stderr', got {stream!r}")
        if not isinstance(self.config["fsync"], bool):
            raise ConfigError(f"fsync must be true or false, got {self.config['fsync']!r}")
        mode = self.config["mode"]
        if mode not in ("append", "replace", "snapshots"):
            raise ConfigError(f"mode must be 'append', 'replace' or 'snapshots', got {mode!r}")
        if mode == "snapshots" and _commits(path):
            raise ConfigError(f"{path}: a file in mode 'snapshots' is written by a CommittedJsonLinesSink: build "
                              f"it with make_sink")
        if path is None:
            self.name = stream
            self._file = (sys.stdout if stream == "stdout" else sys.stderr).buffer
            self._owns_file = False
        else:
            self.name = path
            try:
                if mode == "replace" and not is_special_file(path):
                    self._file = ReplacedFile(path, self.config["fsync"])  # fsyncs itself
                else:
                    self._file = open(path, "ab", buffering=1024 * 1024)  # noqa: SIM115 - closed in close()
            except OSError as exc:
                raise ConfigError(f"cannot open output {path!r}: {exc.strerror}") from None
            self._owns_file = True
        # fsync means something for a regular file only (not /dev/null, a FIFO, a tty)
        self._fsync = (self._owns_file and self.config["fsync"] and not isinstance(self._file, ReplacedFile)
                       and is_regular_file(self._file.fileno()))
        if self._owns_file and mode == "append":
            self._end_partial_line(path)
        self._closed = False

    def _end_partial_line(self, path: str) -> None:
        """End with a newline a last line that a crash cut short, so new records start on a line of their own.

        The cut record stays as it is, never parsed as a record; the daemon
        writes that event's output again, as no snapshot or commit covered it.
        """
        try:
            with open(path, "rb") as f:
                size = f.seek(0, os.SEEK_END)
                if not size or not is_regular_file(f.fileno()):
                    return
                f.seek(size - 1)
                last = f.read(1)
        except OSError:
            return
        if last != b"\n":
            log.warning("output %s ended with an incomplete line (a crash during a write?); ending it with a "
                        "newline before appending", path)
            self._file.write(b"\n")
            self._file.flush()

    def send(self, value: bytes, key: bytes | None = None) -> None:
        """Write ``value`` and a newline; ``key`` is not written."""
        if b"\n" in value:
            raise ValueError(f"a JSON-lines value cannot contain a newline: {value[:80]!r}")
        try:
            self._file.write(value)
            self._file.write(b"\n")
        except OSError as exc:
            raise self._named(exc) from None

    def flush(self) -> None:
        """Flush to the operating system, and fsync a file when ``fsync`` is on."""
        try:
            self._file.flush()
            if self._fsync:
                os.fsync(self._file.fileno())
        except OSError as exc:
            raise self._named(exc) from None

    def _named(self, exc: OSError) -> OSError:
        """The same error (a BrokenPipeError stays one) naming this sink's file, or stdout/stderr."""
        return exc if exc.filename is not None else OSError(exc.errno, exc.strerror or str(exc), self.name)

    def close(self) -> None:
        """Flush, then close a file (stdout and stderr stay open).

        In mode ``"replace"`` a sink never flushed and never sent to (a run that
        failed at start-up) leaves the old file in place.
        """
        if self._closed:
            return
        self._closed = True
        try:
            if not isinstance(self._file, ReplacedFile):  # it flushes in its close(), when it was used
                self.flush()
        finally:
            if self._owns_file:
                try:
                    self._file.close()
                except OSError as exc:
                    raise self._named(exc) from None


def _commits(path: str | None) -> bool:
    """Whether a sink in mode ``"snapshots"`` commits lines to ``path``: a regular file or a new one."""
    return path is not None and not is_special_file(path)


def make_sink(config: dict[str, typing.Any]) -> JsonLinesSink | CommittedJsonLinesSink:
    """Build the output :class:`JsonLinesSink` (stdout unless ``path`` is given), or for a file in mode
    ``"snapshots"`` a :class:`~connectors._committed_file.CommittedJsonLinesSink`."""
    checked = configure(SINK_DEFAULT_CONFIG, config, "JSON-lines sink setting")
    path = path_setting(checked)
    if checked["mode"] == "snapshots" and _commits(path):
        if not isinstance(checked["fsync"], bool):
            raise ConfigError(f"fsync must be true or false, got {checked['fsync']!r}")
        return CommittedJsonLinesSink(path, fsync=checked["fsync"])
    return JsonLinesSink(**config)


def make_dead_letter_sink(config: dict[str, typing.Any]) -> JsonLinesSink | CommittedJsonLinesSink:
    """Build the dead-letter sink as :func:`make_sink` does: stderr unless ``path`` or ``stream`` is given."""
    return make_sink({"stream": "stderr", **config})
