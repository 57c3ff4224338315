"""``stream-nb explain``: the sub-command's parser and its run (the maths is :mod:`stream_nb.tools.explain`)."""

from __future__ import annotations

import argparse
import difflib
import sys

import stream_nb

from .._console import pipe_safe
from ..engine import EventDecoder
from ..exceptions import ConfigError, InvalidEventError, SnapshotError
from ..settings import MODELS
from ._inputs import BadRowReporter, add_input_flags, features_of, global_params, open_input
from .evaluate import event_config, format_cut_points, make_model, parse_model_specs, train
from .explain import DEFAULT_PERMUTATIONS, EXACT_MAX_ATTRIBUTES, explain_one
from .inspect_snapshot import read_snapshot
from .report import check_plot_path, plot_explanation

__all__ = ["add_subcommand", "run_explain"]

_DESCRIPTION = """\
Explain one prediction: the contribution of each attribute of the event to
the decision between the model's two most probable classes, as Shapley values
of the log-odds ln P(c1|x)/P(c2|x), where a coalition of attributes is worth
the log-odds with the other attributes absent (the models marginalise them
exactly). prior (no attribute) + the contributions = the log-odds."""

_EPILOG = f"""\
the model:
  --input SRC --model SPEC   trained on SRC (CSV, JSON lines, '-' or
                             river:NAME, as for stream-nb evaluate), learning
                             every labeled event; SPEC as one --models item
                             of stream-nb evaluate, e.g. tan:rebuild_every=500
  --snapshot PATH            a model saved with stream_nb.save, or a
                             daemon's --snapshot-dir (its newest valid
                             snapshot, as snapshot inspect takes it)

method:
  up to {EXACT_MAX_ATTRIBUTES} attributes: exact (all 2^n coalitions); more: the mean
  marginal contribution over --permutations random orders (default
  {DEFAULT_PERMUTATIONS}, seed --permutation-seed), with standard errors.
  For naive Bayes each contribution is the attribute's log-likelihood ratio
  ln P(x_i|c1)/P(x_i|c2).

An attribute of the event that the model has never seen contributes 0; a
warning on stderr names it and the closest feature the model knows.

exit status: 0 done, 1 the model cannot explain the event (fewer than two
classes), an unreadable input, a damaged snapshot or a plot that cannot be
drawn, 2 invalid settings or a bad event (not one JSON object of scalar
fields, or a value of another type than the model's feature: a string for a
numeric one), an unwritable --plot path or an unknown picture format
included, checked first, 130 interrupted (Ctrl-C)."""


def add_subcommand(commands: argparse._SubParsersAction) -> None:
    """Register ``stream-nb explain`` on the ``stream-nb`` sub-command parser."""
    p = commands.add_parser(
        "explain",
        help="explain one prediction: each attribute's contribution (Shapley values of the log-odds)",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    event = p.add_mutually_exclusive_group(required=True)
    event.add_argument("--event", metavar="JSON", help="the event, one JSON object (its label and id fields "
                       "are not attributes)")
    event.add_argument("--event-file", metavar="PATH", help="file holding the event as one JSON object")
    add_input_flags(p, "model")
    p.add_argument("--model", default="nb", metavar="SPEC",
                   help=f"model trained on --input: one of {', '.join(MODELS)}, with :PARAM=VALUE as in "
                        "evaluate's --models (default: nb)")
    p.add_argument("--snapshot", metavar="PATH", default=None,
                   help="explain with the model saved at PATH (stream_nb.load), or the newest valid snapshot of "
                        "the --snapshot-dir PATH, instead of training one")
    p.add_argument("--permutations", type=int, default=DEFAULT_PERMUTATIONS, metavar="K",
                   help=f"random permutations when the event has more than {EXACT_MAX_ATTRIBUTES} attributes "
                        f"(default: {DEFAULT_PERMUTATIONS})")
    p.add_argument("--permutation-seed", type=int, default=0, metavar="S",
                   help="seed of the permutations (default: 0)")
    p.add_argument("--plot", metavar="PATH", default=None,
                   help="also draw the contributions as a bar chart: PNG, or SVG, PDF, ... by the extension")
    p.set_defaults(handler=pipe_safe(run_explain))


def _load_model(args: argparse.Namespace):
    """The model to explain and a sentence saying where it comes from."""
    if args.snapshot is not None:
        if args.input is not None:
            raise ConfigError("give either --snapshot or --input (to train a model), not both")
        if not hasattr(stream_nb, "load"):
            raise ConfigError("--snapshot needs stream_nb.load, which this installation of stream_nb does not "
                              "have; train a model with --input SRC --model SPEC instead")
        snap = read_snapshot(args.snapshot, use="explained")  # a file, or a --snapshot-dir's newest valid one
        model = snap.model()
        return model, f"{type(model).__name__} from snapshot {snap.path} ({model.n_learned:,.0f} events learned)"
    if args.input is None:
        raise ConfigError("expected --input SRC (with --model) or --snapshot PATH: a model to explain")
    specs = parse_model_specs(args.model)
    if len(specs) != 1:
        raise ConfigError(f"--model: expected one model, got {len(specs)}: {args.model!r}")
    model = make_model(specs[0].model, specs[0].params, global_params(args))
    source = open_input(args)
    learned, bad = train(model, source, on_bad_row=BadRowReporter("explain"), progress=True, total=source.total,
                         source=source.describe)
    text = f"{specs[0].label} trained on {source.describe}: {learned:,} events learned, {len(bad):,} bad rows skipped"
    if hasattr(model, "tree"):
        text += f"; TAN root {model.root!s}, {len(model.tree)} edges" if model.tree else "; TAN tree not built yet"
    return model, text


def _read_event(args: argparse.Namespace):
    """The event of ``--event`` or ``--event-file``, decoded as ``stream-nb run`` does, and which flag gave it."""
    if args.event is not None:
        raw, where = args.event.encode(), "--event"
    else:
        try:
            with open(args.event_file, "rb") as f:
                raw = f.read()
        except OSError as exc:
            raise ConfigError(f"--event-file {args.event_file}: cannot read it: {exc.strerror}") from None
        where = f"--event-file {args.event_file}"
    try:
        config = event_config(args.label_field, args.id_field or None, features_of(args))
        return EventDecoder(config).decode(raw.strip()), where
    except InvalidEventError as exc:
        raise ConfigError(f"{where}: expected one JSON object of scalar fields: {exc}") from None


def unknown_features(model, features: dict, where: str) -> list[str]:
    """A warning per attribute of ``features`` that the model has never seen (it contributes 0), naming the
    closest feature the model knows; none for a model that does not list its features (not stream_nb's).

    >>> from stream_nb import NaiveBayes
    >>> model = NaiveBayes()
    >>> model.learn_one({"outlook": "sunny", "temperature": 28.0}, "no")
    >>> unknown_features(model, {"outlook": "rain", "temprature": 18.0}, "--event")
    ["--event: the model has never seen feature 'temprature' (it contributes 0); did you mean 'temperature'?"]
    """
    if not callable(getattr(model, "feature_summary", None)):
        return []
    known = [f["name"] for f in model.feature_summary()]
    names = {str(name): name for name in known}
    out = []
    for name in features:
        if name in names.values():
            continue
        close = difflib.get_close_matches(str(name), list(names), n=1, cutoff=0.6)
        hint = (f"did you mean {names[close[0]]!r}?" if close else
                f"it knows {', '.join(map(repr, list(names.values())[:10]))}{', ...' if len(names) > 10 else ''}"
                if names else "it knows no feature yet")
        out.append(f"{where}: the model has never seen feature {name!r} (it contributes 0); {hint}")
    return out


def run_explain(args: argparse.Namespace) -> int:
    """``stream-nb explain``: returns the exit status."""
    try:
        if args.permutations < 1:
            raise ConfigError(f"--permutations: expected a positive integer, got {args.permutations}")
        if args.plot:  # now, not after training the model
            check_plot_path(args.plot, "--plot")
        event, where = _read_event(args)
        model, origin = _load_model(args)
    except ConfigError as exc:
        print(f"stream-nb explain: error: {exc}", file=sys.stderr)
        return 2
    except (OSError, UnicodeDecodeError) as exc:
        print(f"stream-nb explain: error: cannot read the model's input: {exc}", file=sys.stderr)
        return 1
    except SnapshotError as exc:
        print(f"stream-nb explain: error: {exc}", file=sys.stderr)
        return 1
    for warning in unknown_features(model, event.features, where):
        print(f"stream-nb explain: warning: {warning}", file=sys.stderr)
    try:
        expl = explain_one(model, event.features, permutations=args.permutations, seed=args.permutation_seed)
    except InvalidEventError as exc:  # a bad event, as invalid JSON is: the value of a feature of another type
        print(f"stream-nb explain: error: {where}: {exc}", file=sys.stderr)
        return 2
    except ValueError as exc:
        print(f"stream-nb explain: error: {exc}", file=sys.stderr)
        return 1
    print(f"model: {origin}")
    if event.label is not None:
        print(f"the event's label: {event.label!s}")
    print(expl.describe())
    print()
    print(expl.table())
    cuts = format_cut_points(model)
    if cuts:
        print(f"\ncut points of the numeric features:\n{cuts}")
    if args.plot:
        try:
            plot_explanation(expl, args.plot, subtitle=origin)
        except (OSError, ValueError, RuntimeError) as exc:  # e.g. a format whose writer is not installed
            print(f"stream-nb explain: error: --plot {args.plot}: cannot draw it: {exc}", file=sys.stderr)
            return 1
        print(f"\nplot: {args.plot}")
    return 0

