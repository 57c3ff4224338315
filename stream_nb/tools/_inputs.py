"""What ``stream-nb evaluate`` and ``stream-nb explain`` share on the command line.

The input flags (``--input``, ``--format``, ``--events``, ...), the model flags
(named and checked as ``stream-nb run``'s, :mod:`stream_nb.settings`), opening
the input they describe, and reporting bad rows on stderr.
"""

from __future__ import annotations

import argparse
import sys
import typing

from ..settings import BY_NAME, MODEL_PARAMS, SETTINGS, convert
from .evaluate import DEFAULT_RIVER_EVENTS, BadRow, EventSource, open_events

__all__ = [
    "MAX_REPORTED",
    "MODEL_FLAG_NAMES",
    "BadRowReporter",
    "add_input_flags",
    "features_of",
    "global_params",
    "open_input",
]

#: Bad rows reported one by one on stderr; the rest are only counted.
MAX_REPORTED = 10

#: Model parameters with a ``stream-nb run`` flag: evaluate and explain take the same flags, but for
#: ``--window`` (evaluate's own: the rolling accuracy's); give a model's window in its spec (``nb:window=2000``).
MODEL_FLAG_NAMES = tuple(s.name for s in SETTINGS if s.name in MODEL_PARAMS and s.name != "window")


def add_input_flags(p: argparse.ArgumentParser, model_flag: str) -> None:
    """Add the input flags and the model flags to ``p``; ``model_flag`` is ``"models"`` (evaluate) or ``"model"``."""
    p.add_argument("--input", required=model_flag == "models", metavar="SRC",
                   help="CSV or JSON-lines file, '-' for stdin, or river:NAME (e.g. river:LED)")
    p.add_argument("--format", choices=("csv", "jsonl"), default=None,
                   help="input format (default: by extension; stdin: sniffed)")
    p.add_argument("--events", type=int, default=None, metavar="N",
                   help=f"take at most N valid events (river streams: default {DEFAULT_RIVER_EVENTS})")
    p.add_argument("--seed", type=int, default=1, help="seed of a river stream (default: 1)")
    p.add_argument("--label-field", default="label", metavar="FIELD",
                   help="field (CSV column) holding the label (default: label; river streams: y)")
    p.add_argument("--id-field", default="id", metavar="FIELD",
                   help="field dropped as the event id (default: id; empty string: none)")
    p.add_argument("--features", action="append", default=None, metavar="A,B,C",
                   help="use only these fields as features (default: all but the label and the id)")
    models = p.add_argument_group("model parameters (as for stream-nb run)")
    for name in MODEL_FLAG_NAMES:
        s = BY_NAME[name]
        kwargs: dict[str, typing.Any] = {"dest": name, "default": None, "metavar": s.metavar,
                                         "help": s.help.replace("%", "%%")}
        if s.kind == "mapping":
            kwargs.update(action="extend", nargs="+")
        elif s.kind == "bool":
            kwargs.update(action="store_const", const=True)
            del kwargs["metavar"]
        elif s.kind == "choice":
            kwargs["choices"] = s.choices
        models.add_argument(s.flag, **kwargs)


def global_params(args: argparse.Namespace) -> dict[str, typing.Any]:
    """The model flags that were given, converted as ``stream-nb run`` converts them."""
    out = {}
    for name in MODEL_FLAG_NAMES:
        value = getattr(args, name)
        if value is not None:
            out[name] = convert(BY_NAME[name], value, BY_NAME[name].flag)
    return out


def features_of(args: argparse.Namespace) -> list[str] | None:
    """``--features`` as a list of names, or ``None`` (every field)."""
    if not args.features:
        return None
    return convert(BY_NAME["features"], args.features, "--features")


def open_input(args: argparse.Namespace) -> EventSource:
    """:func:`~stream_nb.tools.evaluate.open_events` of the input flags."""
    return open_events(args.input, fmt=args.format, label_field=args.label_field, id_field=args.id_field or None,
                       features=features_of(args), events=args.events, seed=args.seed)


class BadRowReporter:
    """Print the first :data:`MAX_REPORTED` bad rows on stderr (through tqdm, so the bar stays whole)."""

    def __init__(self, command: str):
        self.command = command
        self.count = 0

    def __call__(self, row: BadRow) -> None:
        self.count += 1
        if self.count <= MAX_REPORTED:
            self._write(f"stream-nb {self.command}: skipped bad row at {row}")
        elif self.count == MAX_REPORTED + 1:
            self._write(f"stream-nb {self.command}: more bad rows: only counted from here on")

    @staticmethod
    def _write(text: str) -> None:
        try:
            from tqdm import tqdm  # optional here: the bar's own writer, when tqdm is installed

            tqdm.write(text, file=sys.stderr)
        except ImportError:
            print(text, file=sys.stderr)

