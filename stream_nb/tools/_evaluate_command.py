"""``stream-nb evaluate``: the sub-command's parser and its run."""

from __future__ import annotations

import argparse
import shlex
import sys

from .._console import INTERRUPTED, pipe_safe, writable_directory
from ..exceptions import ConfigError
from ..settings import BY_NAME, MODELS
from ._inputs import MODEL_FLAG_NAMES, BadRowReporter, add_input_flags, global_params, open_input
from .evaluate import (
    DEFAULT_WINDOW,
    ModelError,
    check_results_path,
    evaluate,
    format_cut_points,
    format_table,
    format_tree,
    is_peer,
    make_model,
    parse_model_specs,
    write_results,
)
from .report import write_report

__all__ = ["add_subcommand", "run_evaluate"]

_EVALUATE_DESCRIPTION = """\
Run several models prequentially (predict each event, then learn it when it
is labeled) over the same events, and print for each its accuracy, Cohen's
kappa, kappa_t, kappa_m, macro F1, log loss, events/s, state size and drifts,
and each TAN's final tree. With --results FILE, also write the metrics of every
--window labeled events per model (CSV, or Parquet); with --report DIR,
learning curves, the TAN tree as pictures and a Markdown report."""

_EVALUATE_EPILOG = """\
inputs:
  FILE.csv       header row; cells: empty = missing, integer literal = int
                 (categorical), decimal literal with '.' or exponent = float
                 (numeric), anything else = string
  FILE.jsonl     one JSON object per line, as for stream-nb run
  -              stdin (JSON lines if it starts with '{', else CSV; or --format)
  river:NAME     a river classification stream: synthetic (LED, STAGGER,
                 Agrawal, RandomTree, SEA, ...: --events (default 10000)
                 events, seeds set to --seed) or a data set river ships
                 (Phishing, Bananas, ImageSegments, Shuttle: all its events
                 or the first --events); river:? lists them

models:
  --models nb,aode:m=5,tan:rebuild_every=500:bins=10
  Global model flags apply to every listed model that takes them; PARAM=VALUE
  after a model overrides them for that model alone. A name with a dot is any
  river classifier by its import path, with its own parameters (Python
  literals, else text): river.tree.HoeffdingTreeClassifier:grace_period=100

metrics (river's, and kappa_t, kappa_m as MOA defines them):
  kappa    Cohen's kappa, against chance agreement
  kappa_t  against the no-change classifier (the label of the event before)
  kappa_m  against the majority class
  An event with no prediction (a model that knows no class yet) is not scored,
  as river's progressive_val_score skips it.

bad rows (wrong cell count, invalid JSON, bad label, rejected value types) are
reported on stderr and skipped; events without a label are predicted only.
state bytes: nbytes of the arrays of model.state() + JSON size of its meta.
exit status: 0 done, 1 no valid event, an unreadable input, a model failing on an
event (a peer given values it cannot take) or an unwritable report or results,
2 invalid settings (an unwritable --report directory or --results file included,
checked first),
130 interrupted (Ctrl-C): the table covers the events measured until then."""



def add_subcommand(commands: argparse._SubParsersAction) -> None:
    """Register ``evaluate`` on the ``stream-nb`` sub-command parser."""
    p = commands.add_parser(
        "evaluate",
        help="compare models prequentially on a file or a river stream; optional pictures and report",
        description=_EVALUATE_DESCRIPTION,
        epilog=_EVALUATE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_input_flags(p, "models")
    p.add_argument("--models", default="nb,aode,tan", metavar="SPECS",
                   help=f"models to compare: NAME[:PARAM=VALUE...] with NAME one of {', '.join(MODELS)} or "
                        "a river classifier's import path, comma-separated (default: nb,aode,tan)")
    p.add_argument("--report", metavar="DIR", default=None,
                   help="write learning_curves.png, one tree PNG per TAN and report.md into DIR")
    p.add_argument("--results", metavar="FILE", default=None,
                   help="write one row per window per model: the window's metrics, time and drifts, and the "
                        "cumulative ones (FILE.csv, or FILE.parquet with pyarrow installed)")
    p.add_argument("--window", type=int, default=DEFAULT_WINDOW, metavar="N",
                   help=f"labeled events per tumbling window of --results and per point of the rolling "
                        f"accuracy in the report (default: {DEFAULT_WINDOW})")
    delays = p.add_mutually_exclusive_group()
    delays.add_argument("--delay", type=int, default=None, metavar="N",
                        help="reveal each label N events after its event (predicted on arrival, scored and "
                             "learned when its label comes): river's progressive_val_score(delay=N)")
    delays.add_argument("--delay-field", default=None, metavar="FIELD",
                        help="as --delay, each event's own delay (events, >= 0) read from FIELD, which is "
                             "not a feature")
    p.set_defaults(handler=pipe_safe(run_evaluate))




def run_evaluate(args: argparse.Namespace) -> int:
    """``stream-nb evaluate``: returns the exit status."""
    try:
        if args.window < 1:
            raise ConfigError(f"--window: expected a positive integer, got {args.window}")
        if args.delay is not None and args.delay < 0:
            raise ConfigError(f"--delay: expected a number of events >= 0, got {args.delay}")
        specs = parse_model_specs(args.models)
        defaults = global_params(args)
        unused = [n for n in defaults if not any(not is_peer(s.model) and n in MODELS[s.model][1] for s in specs)]
        if unused:
            takers = {n: [m for m, (_, ps) in MODELS.items() if n in ps] for n in unused}
            raise ConfigError("; ".join(
                f"{BY_NAME[n].flag} applies to {', '.join(takers[n])}, none of which is in --models {args.models}"
                for n in unused))
        models = {s.label: make_model(s.model, s.params, defaults) for s in specs}
        source = open_input(args)
        if args.report:  # now, not after the whole computation
            writable_directory(args.report, "--report")
        if args.results:
            check_results_path(args.results)
    except ConfigError as exc:
        print(f"stream-nb evaluate: error: {exc}", file=sys.stderr)
        return 2
    reporter = BadRowReporter("evaluate")
    try:
        result = evaluate(source, models, source=source.describe, progress=True, total=source.total,
                          on_bad_row=reporter, delay=args.delay, delay_field=args.delay_field, window=args.window)
    except ConfigError as exc:
        print(f"stream-nb evaluate: error: {exc}", file=sys.stderr)
        return 2
    except (OSError, UnicodeDecodeError) as exc:
        print(f"stream-nb evaluate: error: cannot read {args.input}: {exc}", file=sys.stderr)
        return 1
    except ModelError as exc:
        print(f"stream-nb evaluate: error: {exc}", file=sys.stderr)
        return 1
    print(f"{result.source}: {result.counts_line()}")
    if result.bad_rows:
        print(f"stream-nb evaluate: {result.counts_line().split('; ', 1)[1]}", file=sys.stderr)
    if result.interrupted:
        print(f"stream-nb evaluate: interrupted: the figures below cover the first {result.n_events:,} events"
              + ("; no report or results written" if args.report or args.results else ""), file=sys.stderr)
        if result.n_events:
            print()
            print(format_table(result.table()))
        return INTERRUPTED
    if not result.n_events:
        print(f"stream-nb evaluate: error: no valid event in {args.input}", file=sys.stderr)
        return 1
    if not result.n_labeled:
        print(f"stream-nb evaluate: warning: no event has a label in the field {args.label_field!r} "
              "(--label-field): nothing was learned or scored", file=sys.stderr)
    print()
    print(format_table(result.table()))
    unscored = [f"{r.name}: {r.metrics.labeled - sum(row['scored'] for row in r.rows):,}" for r in result.models]
    print(f"\nlabeled events with no prediction, not scored: {', '.join(unscored)}")
    for r in result.models:
        if r.drifts:
            print(f"drifts of {r.name} (after labeled event): {', '.join(f'{d:,}' for d in r.drifts)}")
    for r in result.models:
        if hasattr(r.model, "tree"):
            print(f"\nTAN tree of {r.name}: {format_tree(r.model)}")
        cuts = format_cut_points(r.model)
        if cuts:
            print(f"\ncut points of {r.name}'s numeric features:\n{cuts}")
    if args.results:
        try:
            write_results(result, args.results)
        except OSError as exc:
            print(f"stream-nb evaluate: error: --results {args.results}: cannot write the results: "
                  f"{exc.strerror or exc}", file=sys.stderr)
            return 1
        print(f"\nresults: {args.results} ({len(result.models)} models x "
              f"{len(result.models[0].rows) if result.models else 0} windows of {args.window:,} labeled events)")
    if args.report:
        try:
            paths = write_report(result, args.report, window=args.window, command=_command_line(args))
        except OSError as exc:
            print(f"stream-nb evaluate: error: --report {args.report}: cannot write the report: "
                  f"{exc.strerror or exc}", file=sys.stderr)
            return 1
        print(f"\nreport: {paths['report']}")
    return 0


def _command_line(args: argparse.Namespace) -> str:
    """The ``stream-nb evaluate`` command equivalent to ``args`` (the settings that differ from the defaults)."""
    parts = ["stream-nb", "evaluate", "--input", args.input]
    if args.format:
        parts += ["--format", args.format]
    if args.events is not None:
        parts += ["--events", str(args.events)]
    if args.input.startswith("river:") and args.seed != 1:
        parts += ["--seed", str(args.seed)]
    if not args.input.startswith("river:"):
        if args.label_field != "label":
            parts += ["--label-field", args.label_field]
        if args.id_field != "id":
            parts += ["--id-field", args.id_field]
        for f in args.features or []:
            parts += ["--features", f]
    parts += ["--models", args.models]
    if args.delay is not None:
        parts += ["--delay", str(args.delay)]
    if args.delay_field is not None:
        parts += ["--delay-field", args.delay_field]
    for name in MODEL_FLAG_NAMES:
        value = getattr(args, name)
        if value is not None:
            parts += [BY_NAME[name].flag, *(value if isinstance(value, list) else [value])]
    if args.results:
        parts += ["--results", args.results]
    parts += ["--report", args.report, "--window", str(args.window)]
    return " ".join(shlex.quote(str(p)) for p in parts)
