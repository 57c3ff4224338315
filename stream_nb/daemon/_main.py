"""``stream-nb run``: the daemon's main, from the resolved settings to the exit status.

:func:`run` resolves the settings (:mod:`stream_nb.settings`), builds the model
and the engine's config (:mod:`._build`), plans and starts the connectors with
retries (:mod:`._connectors`), chooses the checkpointer (:mod:`._checkpointing`),
attaches the operations endpoints (:mod:`stream_nb.ops`), runs the
:class:`~stream_nb.engine.Engine` until the input ends or a signal arrives,
and logs one shutdown line with the metrics.
"""

from __future__ import annotations

import argparse
import gc
import logging
import signal
import sys
import threading
import typing

import orjson

from .. import __version__
from .._console import silence_stdout
from ..engine import CountsBlankLines, Engine, PartitionHandoff, TracksFiles, describe_reasons
from ..exceptions import ConfigError, StreamNBError
from ..kernels import compile_all
from ..learners import BayesClassifier
from ..ops import configure_logging
from ..settings import add_arguments, describe_setting, resolve_settings
from ._build import build_model, check_engine_config, make_operations
from ._checkpointing import check_settings as check_snapshot_settings
from ._checkpointing import make_checkpointer
from ._connectors import (KAFKA_LOGGER, close_all, connector_plan, open_model_channel, open_pending_channel,
                          start_connectors)
from ._feedback import check_settings as check_feedback_settings
from ._feedback import make_joiner

__all__ = ["add_subcommand", "load_kernels", "one_blas_thread", "prepare_process", "run", "stop_position"]

#: The cycle collector's first-generation threshold while the daemon runs (see :func:`prepare_process`).
GC_FIRST_THRESHOLD = 10_000


def one_blas_thread() -> None:
    """Keep numpy's BLAS on one thread for the rest of the process.

    The engine runs one poll at a time on one thread; the models' matrix products (KDB's and TAN's runs
    of counts, see ``Stats.add_many``) are small, and OpenBLAS's worker threads spin between them, so
    a second thread took a second core's CPU for no shorter wall time.
    """
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")


def load_kernels(model: typing.Any) -> None:
    """Load a stream_nb model's compiled kernels (numba's cache; compiled there when absent) at start-up.

    A model loads them on its first learning call, which would put half a second or more (the import of
    numba and the kernels' machine code) inside the first poll: its outputs late, and that poll's CPU spent
    on the engine's main thread while events wait. The daemon takes that cost before its first poll
    instead, with the decoder's pass over a poll's JSON (``_json``), which the engine uses for a stream_nb
    model's polls. Any other model is left alone.
    """
    if isinstance(model, BayesClassifier):
        compile_all(model.kernel_modules() + ("_json",))


def prepare_process(model: typing.Any) -> None:
    """Set this process up for the engine's loop, as ``stream-nb run`` does before its first poll: the cycle
    collector's first threshold at :data:`GC_FIRST_THRESHOLD`, numpy's BLAS on one thread
    (:func:`one_blas_thread`), the model's kernels loaded (:func:`load_kernels`). The daemon calls it once
    its settings are checked, before it connects: the summaries' first window and the first poll start after.

    Each poll allocates thousands of short-lived objects (records, dicts, outputs) and frees them by
    reference counting; at Python's default first threshold (700) the cycle collector runs every few dozen
    events to find no cycle. 10,000 cuts the run's CPU time by 7% with labels in the events and 12% with
    ``--feedback`` (``bench/delayed.py --throughput``); only cyclic garbage waits longer, everything else is
    freed as before.
    """
    gc.set_threshold(GC_FIRST_THRESHOLD, *gc.get_threshold()[1:])
    load_kernels(model)  # first: numba may load a BLAS library of its own, which one_blas_thread then limits too
    one_blas_thread()


#: The name the daemon's log lines have always carried (the command line's): kept for whoever filters on it.
log = logging.getLogger("stream_nb.daemon")

_DESCRIPTION = """\
Run a streaming Bayesian classifier. Each event (one JSON object) is predicted
by the model as it stands; a labeled event is then learned (prequential).
Every valid event gives one output record; a rejected event gives one
dead-letter record instead. Positions are committed only after the outputs
are flushed (at-least-once)."""

_EPILOG = """\
modes:
  Without any Kafka setting, events are JSON lines read from --input (default
  stdin), predictions go to --output (default stdout) and dead letters to
  --dead-letter (default stderr). An --output or --dead-letter file holds
  each record once, however often the command runs: without --snapshot-dir a
  run starts from the start of its input and replaces the files (a new file,
  renamed into place at the first checkpoint); with --snapshot-dir the files
  get the lines each snapshot covers, exactly once across crashes and restarts
  (visible at each snapshot). stdout and stderr are at-least-once.
  Setting any Kafka option switches to Kafka mode, which needs --input-topic
  and --output-topic.

settings, in order of precedence (the first that sets a value wins):
  1. command-line flags
  2. environment variables STREAM_NB_<NAME>, NAME being the flag's name in
     upper case with "_" for "-" (STREAM_NB_MODEL, STREAM_NB_BOOTSTRAP_SERVERS,
     STREAM_NB_KAFKA_CONFIG="security_protocol=SSL,ssl_cafile=ca.pem", ...)
  3. the TOML file given by --config or STREAM_NB_CONFIG: keys named like the
     flags with "_" for "-", at the top level or all inside a [run] table,
     e.g.  [run]  model = "aode"  features = ["outlook", "wind"]
           [run.kafka_config]  security_protocol = "SSL"
  4. the defaults shown above
  --types and --kafka-config are merged key by key across the layers. Unknown
  keys in the file are rejected; other STREAM_NB_* variables are ignored.

event contract:
  one JSON object per event, UTF-8, at most --max-event-bytes. The label field
  holds a string, integer or boolean (an integral float counts as the
  integer); absent or null: the event is only predicted. null features are
  missing. A rejected event (or --feedback label) gives a dead letter with
  one of these reason codes:
{reasons}

output record (one JSON line / Kafka message per valid event, same key):
  {"id", "prediction", "proba": {label: p}, "model", "learned", "n_learned",
   "source": {where the event came from}}
  --top-k N: "proba" holds the N most probable classes (and the prediction's);
  --no-proba: no "proba".

dead-letter record:
  {"reason", "error", "field", "source", "size", "value" (raw event as text)
   or "value_b64" (when not UTF-8), "truncated" (only when cut)}

signals:
  SIGTERM or SIGINT: finish the current event, flush, commit, exit 0.
  The last log line says where the daemon stopped: the file and its last
  line processed, or the next offset of each Kafka partition.

snapshots (--snapshot-dir DIR; off by default):
  the model, its metrics and the input positions are written to DIR every
  --snapshot-every events or --snapshot-interval seconds, on exit and before
  Kafka revokes partitions; input positions are committed only once a
  snapshot covers them. At start-up the newest valid snapshot is restored and
  the input resumes right after it, so the model learns each labeled event
  exactly once across crashes (--output and --dead-letter files: exactly
  once; stdout, stderr and Kafka topics: at least once). --exactly-once
  (Kafka) commits outputs, dead letters and offsets in one transaction per
  checkpoint: a read_committed consumer sees each output once.
  stream-nb snapshot inspect PATH describes a snapshot file.

exit status:
  0 done (input exhausted or stopped by a signal), 1 runtime failure, or a
  finite input that held records and not one valid event (the last line
  counts them by reason), 2 invalid settings (unusable output paths included: checked before the
  first event), 130 interrupted (Ctrl-C) before start-up finished."""

_EPILOG = _EPILOG.replace("{reasons}", describe_reasons())  # from the one registry of the codes


def add_subcommand(commands: argparse._SubParsersAction) -> None:
    """Register ``run`` (every setting of :data:`~stream_nb.settings.SETTINGS` a flag) on the sub-command parser."""
    parser = commands.add_parser(
        "run",
        help="consume events, predict, learn, write predictions",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(parser)
    parser.set_defaults(handler=run)


class _Stopper:
    """The signal handler: it only records the signal and calls ``Engine.stop()``."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.signum: int | None = None
        self.engine: Engine | None = None

    def __call__(self, signum: int, frame: typing.Any) -> None:
        self.signum = signum
        self.event.set()
        if self.engine is not None:
            self.engine.stop()


def stop_position(engine: Engine, source: typing.Any) -> tuple[str, dict[str, typing.Any]]:
    """Where the daemon stopped, in words and as a dict: the file and its last line processed, or the
    next offset of every Kafka partition it processed (or restored).

    >>> class Source:  # a JSON-lines source
    ...     partition = "in.jsonl"
    ...     def line_at(self, offset): return {0: 0, 120: 3}.get(offset)
    >>> class Engine: positions = {"in.jsonl": 120}
    >>> stop_position(Engine(), Source())
    ('after in.jsonl line 3 (next byte 120)', {'file': 'in.jsonl', 'line': 3, 'byte': 120})
    >>> Engine.positions = {"events-1": 7, "events-0": 12}
    >>> stop_position(Engine(), object())
    ('at the next offsets events-0: 12, events-1: 7', {'offsets': {'events-0': 12, 'events-1': 7}})
    """
    positions = dict(engine.positions)
    line_at = getattr(source, "line_at", None)
    if line_at is not None:  # JSON lines: one partition, the file (or stdin), positions in bytes
        name = source.partition
        offset = positions.get(name, 0)
        if not offset:
            return f"before {name} line 1", {"file": name, "line": 0, "byte": 0}
        try:
            line = line_at(offset)
            if isinstance(source, TracksFiles):  # after a rotation: the byte in the file read now
                offset = source.file_positions({name: offset}).get(name, {}).get("byte", offset)
        except OSError:
            line = None
        text = f"after {name} line {line} (next byte {offset})" if line is not None else f"at {name} byte {offset}"
        return text, {"file": name, "line": line, "byte": offset}
    if not positions:
        return "before the first record", {"offsets": {}}
    ordered = dict(sorted(positions.items()))
    return "at the next offsets " + ", ".join(f"{k}: {v}" for k, v in ordered.items()), {"offsets": ordered}


def _configure_logging(level: str, fmt: str = "text") -> None:
    configure_logging(level, fmt, sys.stderr, brief=() if level == "DEBUG" else (KAFKA_LOGGER,))
    logging.getLogger(KAFKA_LOGGER).setLevel(logging.DEBUG if level == "DEBUG" else logging.WARNING)


def run(args: argparse.Namespace) -> int:
    """``stream-nb run``: returns the exit status (0 done, 1 runtime failure, 2 invalid settings)."""
    try:
        settings = resolve_settings(args)
    except ConfigError as exc:
        print(f"stream-nb: error: {exc}", file=sys.stderr)
        return 2
    _configure_logging(settings["log_level"], settings["log_format"])
    if args.print_config:
        sys.stdout.write(orjson.dumps(settings, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode() + "\n")
        return 0
    try:
        if settings["connect_attempts"] < 0:
            raise ConfigError(f"{describe_setting(settings, 'connect_attempts')} must be >= 0, "
                              f"got {settings['connect_attempts']}")
        if settings["connect_backoff_max"] <= 0:
            raise ConfigError(f"{describe_setting(settings, 'connect_backoff_max')} must be > 0, "
                              f"got {settings['connect_backoff_max']}")
        plan = connector_plan(settings)
        config = check_engine_config(settings)
        model = build_model(settings)
        check_snapshot_settings(settings, kafka=plan.module != "connectors.jsonl")
        check_feedback_settings(settings)
        prepare_process(model)  # once the settings are known good; before the operations' clocks start
        # metrics and health endpoints, log summaries
        ops = make_operations(settings, model_name=config["model_name"], kafka=plan.module != "connectors.jsonl")
    except (ConfigError, ValueError, TypeError) as exc:
        log.error("%s", exc)
        return 2

    stopper = _Stopper()
    previous = {sig: signal.signal(sig, stopper) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        try:
            started = start_connectors(plan, settings, stopper.event)
        except ConfigError as exc:
            log.error("%s", exc)
            return 2
        except (StreamNBError, OSError) as exc:  # OSError includes ConnectionError
            log.error("%s", exc)
            return 1
        if started is None:
            log.info("stopped by %s before start-up finished", signal.Signals(stopper.signum).name)
            return 0
        source, sink, dead_letters = started
        checkpointer = channel = pending = None
        try:  # snapshots: restore the newest valid one before the first event (a model topic: read it)
            channel = open_model_channel(plan, settings, sink)
            checkpointer = make_checkpointer(settings, source, sink, channel, model)
            engine = Engine(model, source, sink, dead_letters, config=config, checkpointer=checkpointer)
            snapshot = checkpointer.recover() if checkpointer is not None else None
            joiner = make_joiner(settings, engine, snapshot)
            pending = open_pending_channel(plan, settings, sink) if joiner and checkpointer else None
            if pending is not None and checkpointer is not None:  # held events follow their partition
                checkpointer.handoff = PartitionHandoff(joiner, pending, joiner.feedback.partner)
        except (StreamNBError, OSError) as exc:
            log.error("%s", exc)
            close_all((source, sink, dead_letters) + tuple(c for c in (channel, pending) if c is not None))
            if checkpointer is not None and checkpointer.store is not None:
                checkpointer.store.close()
            return 2 if isinstance(exc, ConfigError) else 1
        ops.attach(engine)
        stopper.engine = engine
        if stopper.event.is_set():
            engine.stop()
        status = 1
        try:
            log.info("running model %s: %s", config["model_name"], plan.describe,
                     extra={"event": "start", "model": config["model_name"], "version": __version__})
            engine.run()
            status = 0
            how = f"stopped by {signal.Signals(stopper.signum).name}" if stopper.signum else "input exhausted"
            say = lambda where: f"{how} {where}"  # noqa: E731 - where is known once the sources are done
            empty = engine.input_check.no_valid_event if engine.input_check is not None else None
            if empty and not stopper.signum:  # a finite input that held records, none of them a valid event
                status, how = 1, f"input exhausted with no valid event: {empty}"
                say = lambda where: f"input exhausted {where} with no valid event: {empty}"  # noqa: E731
        except BrokenPipeError:
            silence_stdout()
            how = "stopped: the output pipe was closed"
            say = lambda where: f"stopped {where}: the output pipe was closed"  # noqa: E731
        except (StreamNBError, OSError) as exc:
            how = f"stopped on error: {exc}"
            say = lambda where, exc=exc: f"stopped {where} on error: {exc}"  # noqa: E731
        except Exception as exc:  # a bug, not the user's doing: its traceback is what a report needs
            log.exception("unexpected error")
            how = f"stopped on an unexpected error: {exc!r}"
            say = lambda where, exc=exc: f"stopped {where} on an unexpected error: {exc!r}"  # noqa: E731
        finally:
            ops.detach()
            where, position = stop_position(engine, source)
            close_all((source, sink, dead_letters) + tuple(c for c in (channel, pending) if c is not None)
                      + ((joiner.feedback,) if joiner is not None else ()))
            if checkpointer is not None and checkpointer.store is not None:
                checkpointer.store.close()
        summary = engine.status()
        if isinstance(source, CountsBlankLines):
            summary["blank_lines"] = source.blank_lines
        log.log(logging.INFO if status == 0 else logging.ERROR, "%s; metrics %s", say(where),
                orjson.dumps(summary).decode(),
                extra={"event": "shutdown", "how": how, "position": position, "exit_status": status,
                       "metrics": summary})
        return status
    finally:
        ops.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
