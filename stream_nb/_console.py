"""What every ``stream-nb`` subcommand needs from the terminal: surviving ``| head``, and output paths
checked before the work starts, so that an hour of computation never ends in an unwritable path."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import stat
import sys
import tempfile
import threading
import typing

from .exceptions import ConfigError

__all__ = ["pipe_safe", "silence_stdout", "writable_file", "writable_directory", "InterruptGuard", "INTERRUPTED"]

#: Exit status of a command stopped by Ctrl-C (SIGINT), as a shell reports it: 128 + 2.
INTERRUPTED = 130


def silence_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's final flush to a closed pipe does not fail again."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def pipe_safe(handler: typing.Callable[[argparse.Namespace], int]) -> typing.Callable[[argparse.Namespace], int]:
    """Wrap a command so that a closed stdout (``| head``) ends it with status 1 and no traceback, and any
    other failing write or read the command did not catch (stdout on a full disk) with one error line."""

    def run(args: argparse.Namespace) -> int:
        stdout = sys.stdout
        sys.stdout = watched = _WatchedStream(stdout)
        try:
            return handler(args)
        except BrokenPipeError:
            silence_stdout()
            return 1
        except OSError as exc:
            if watched.failed:
                silence_stdout()
                what = f"cannot write to standard output: {exc.strerror or exc}"
            else:
                what = str(exc)
            command = " ".join(c for c in (getattr(args, "command", None), getattr(args, "snapshot_command", None)) if c)
            print(f"stream-nb {command}: error: {what}", file=sys.stderr)
            return 1
        finally:
            if sys.stdout is watched:
                sys.stdout = stdout

    return run


class _WatchedStream:
    """A text stream that remembers whether a write or a flush failed (and passes everything on)."""

    def __init__(self, stream: typing.TextIO):
        self._stream = stream
        self.failed = False

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError:
            self.failed = True
            raise

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError:
            self.failed = True
            raise

    def __getattr__(self, name: str) -> typing.Any:
        return getattr(self._stream, name)


def _probe(directory: str) -> None:
    """Create and remove a file in ``directory``: raises the OSError that writing there would raise."""
    fd, probe = tempfile.mkstemp(prefix=".stream-nb-probe-", dir=directory)
    os.close(fd)
    os.unlink(probe)


def writable_file(path: str, name: str) -> None:
    """Check that a file can be written at ``path`` without creating or changing it.

    Raises :class:`~stream_nb.exceptions.ConfigError` naming the setting
    (``name``, e.g. ``--plot``), the path and the operating system's reason.
    An existing file must open for writing; a new one needs a directory that
    takes a file. A device or a FIFO is taken as it is.

    >>> writable_file("/proc/no-such-dir/out.png", "--plot")
    Traceback (most recent call last):
    ...
    stream_nb.exceptions.ConfigError: --plot /proc/no-such-dir/out.png: cannot write there: No such file or directory
    """
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise ConfigError(f"{name} {path}: cannot write there: {exc.strerror}") from None
    if mode is not None and stat.S_ISDIR(mode):
        raise ConfigError(f"{name} {path}: is a directory; expected a file name")
    try:
        if mode is None:
            _probe(os.path.dirname(os.path.abspath(path)))
        elif stat.S_ISREG(mode):
            os.close(os.open(path, os.O_WRONLY | os.O_APPEND))
    except OSError as exc:
        raise ConfigError(f"{name} {path}: cannot write there: {exc.strerror}") from None


def writable_directory(path: str, name: str) -> None:
    """Create the directory ``path`` if missing and check that it takes a file.

    Raises :class:`~stream_nb.exceptions.ConfigError` naming the setting, the
    path and the operating system's reason.

    >>> writable_directory("/proc/no-such-dir", "--report")
    Traceback (most recent call last):
    ...
    stream_nb.exceptions.ConfigError: --report /proc/no-such-dir: cannot create the directory: No such file or directory
    """
    try:
        os.makedirs(path, exist_ok=True)
    except FileExistsError:
        raise ConfigError(f"{name} {path}: exists and is not a directory") from None
    except OSError as exc:
        raise ConfigError(f"{name} {path}: cannot create the directory: {exc.strerror}") from None
    try:
        _probe(path)
    except OSError as exc:
        raise ConfigError(f"{name} {path}: cannot write in the directory: {exc.strerror}") from None


class InterruptGuard:
    """Turn Ctrl-C into a request that a loop checks between two items, so no item is left half done.

    Between :meth:`start` and :meth:`stop`, the first SIGINT only sets
    :attr:`requested`; a second one raises :class:`KeyboardInterrupt` as usual
    (for a loop stuck inside one item). It takes SIGINT over only in the main
    thread and only from Python's default handler; otherwise it does nothing
    and :attr:`requested` stays False.

    >>> guard = InterruptGuard()
    >>> guard.start()
    >>> os.kill(os.getpid(), signal.SIGINT); guard.requested
    True
    >>> guard.stop(); signal.getsignal(signal.SIGINT) is signal.default_int_handler
    True
    """

    def __init__(self) -> None:
        self.requested = False
        self._installed = False

    def start(self) -> None:
        """Take SIGINT over (see the class docstring)."""
        self.requested = False
        if threading.current_thread() is threading.main_thread() and \
                signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, self._handle)
            self._installed = True

    def _handle(self, signum: int, frame: typing.Any) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True

    def stop(self) -> None:
        """Give SIGINT back to Python's default handler."""
        if self._installed:
            signal.signal(signal.SIGINT, signal.default_int_handler)
            self._installed = False
