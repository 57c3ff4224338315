"""``stream-nb``: run a streaming Bayesian classifier over JSON lines or Kafka, evaluate and explain models.

``stream-nb run`` reads events, predicts each one, learns the labeled ones and
writes one prediction per valid event; rejected events go to a dead-letter
output. See ``stream-nb run --help`` for every setting.

This module is only the parser's tree and :func:`main`, the console entry
point: ``run`` is wired in :mod:`stream_nb.daemon` (its settings in
:mod:`stream_nb.settings`), ``evaluate``, ``explain`` and ``snapshot inspect``
in :mod:`stream_nb.tools`.

>>> args = build_parser().parse_args(["run", "--model", "aode"])
>>> args.command, args.model
('run', 'aode')
"""

from __future__ import annotations

import argparse
import sys

from . import __version__, daemon, tools
from ._console import INTERRUPTED

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The ``stream-nb`` argument parser: ``run``, ``evaluate``, ``explain`` and ``snapshot`` sub-commands."""
    parser = argparse.ArgumentParser(
        prog="stream-nb",
        description="Streaming online learning of Bayesian classifiers over JSON lines or Kafka.",
    )
    parser.add_argument("--version", action="version", version=f"stream-nb {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    daemon.add_subcommand(commands)  # stream-nb run
    tools.add_subcommands(commands)  # stream-nb evaluate, explain, snapshot inspect
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``stream-nb`` console script; returns the exit status.

    Examples
    --------
    >>> main(["--version"])
    Traceback (most recent call last):
    ...
    SystemExit: 0
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return args.handler(args)
    except KeyboardInterrupt:  # run stops on SIGINT by itself once started; this is any other moment
        print(f"stream-nb {args.command}: interrupted", file=sys.stderr)
        return INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
