"""What every ``stream-nb`` subcommand needs from the terminal: surviving ``| head``."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import typing

__all__ = ["pipe_safe", "silence_stdout"]


def silence_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's final flush to a closed pipe does not fail again."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def pipe_safe(handler: typing.Callable[[argparse.Namespace], int]) -> typing.Callable[[argparse.Namespace], int]:
    """Wrap a command so that a closed stdout (``| head``) ends it with status 1 and no traceback."""

    def run(args: argparse.Namespace) -> int:
        try:
            return handler(args)
        except BrokenPipeError:
            silence_stdout()
            return 1

    return run
