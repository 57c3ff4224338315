"""``stream-nb``: run a streaming Bayesian classifier over JSON lines or Kafka.

``stream-nb run`` reads events, predicts each one, learns the labeled ones and
writes one prediction per valid event; rejected events go to a dead-letter
output. See ``stream-nb run --help`` for every setting.

This module is the composition root: the only place in :mod:`stream_nb` that
reaches for :mod:`connectors` (imported on demand, so JSON-lines mode never
imports kafka-python).

Settings are resolved in this order, the first that sets a value wins:

1. command-line flags,
2. ``STREAM_NB_<NAME>`` environment variables (e.g. ``STREAM_NB_MODEL``),
3. the TOML file given by ``--config`` / ``STREAM_NB_CONFIG``,
4. the defaults.

The two mapping settings (``types`` and ``kafka_config``) are merged key by
key across those layers instead.

>>> settings = resolve_settings(build_parser().parse_args(["run", "--model", "aode"]), env={})
>>> settings["model"], settings["label_field"], settings["poll_max_records"]
('aode', 'label', 500)
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import logging
import os
import re
import signal
import stat
import sys
import threading
import tomllib
import typing

import orjson

from . import __version__
from .engine import DEFAULT_CONFIG as ENGINE_DEFAULTS
from .engine import CountsBlankLines, Engine, JointConnectorModule, check_config
from .exceptions import ConfigError, StreamNBError
from .snapshots import SnapshotStore
from ._console import INTERRUPTED, silence_stdout, writable_file

__all__ = ["main", "build_parser", "resolve_settings", "SETTINGS", "MODELS"]

log = logging.getLogger("stream_nb.cli")

ENV_PREFIX = "STREAM_NB_"

#: ``--model`` choice -> (class name in :mod:`stream_nb`, the parameters it takes).
_EM = ("missing", "learn_unlabeled", "unlabeled_weight")
MODELS: dict[str, tuple[str, tuple[str, ...]]] = {
    "nb": ("NaiveBayes", ("alpha", "types", "loss", "var_smoothing", *_EM)),
    "aode": ("AODE", ("alpha", "m", "bins", "warmup", "types", "loss", *_EM)),
    "tan": ("TAN", ("alpha", "rebuild_every", "bins", "warmup", "types", "loss", *_EM)),
    "spode": ("SPODE", ("parent", "alpha", "rebuild_every", "bins", "warmup", "types", "loss", *_EM)),
    "kdb": ("KDB", ("k", "alpha", "rebuild_every", "max_table_cells", "max_completions", "bins", "warmup", "types",
                    "loss", *_EM)),
}


@dataclasses.dataclass(frozen=True)
class Setting:
    """One setting: a flag, an environment variable and a config-file key."""

    name: str
    kind: str  # str, int, float, bool, choice, list, mapping
    default: typing.Any
    help: str
    group: str
    metavar: str | None = None
    choices: tuple[str, ...] = ()

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def env(self) -> str:
        return ENV_PREFIX + self.name.upper()


_MODEL = "model"
_EVENTS = "events"
_JSONL = "JSON-lines mode (the default: no broker needed)"
_KAFKA = "Kafka mode (on when any of these is set)"
_ENGINE = "engine"
_OPS = "operations"
_SNAPSHOTS = "snapshots and recovery (off unless --snapshot-dir is given)"

SETTINGS: tuple[Setting, ...] = (
    Setting("model", "choice", "nb", "classifier: naive Bayes, AODE, TAN, SPODE or KDB", _MODEL, choices=tuple(MODELS)),
    Setting("alpha", "float", None, "Lidstone smoothing > 0 (all models; model default 1.0)", _MODEL, "A"),
    Setting("k", "int", None, "KDB: most attribute parents per attribute (model default 2)", _MODEL, "K"),
    Setting("max_table_cells", "int", None, "KDB: bound on the (k+1)-way count table; events that would pass it "
            "are dead-lettered as table_full (model default 20000000)", _MODEL, "N"),
    Setting("max_completions", "int", None, "KDB: most joint values of missing attributes enumerated per event "
            "(model default 4096)", _MODEL, "N"),
    Setting("parent", "str", None, "SPODE: the super-parent attribute (model default: chosen from the stream, "
            "the lowest running log loss at each rebuild)", _MODEL, "FEATURE"),
    Setting("m", "int", None, "AODE: a value is a parent only once seen in M events (model default 1)", _MODEL, "M"),
    Setting("bins", "int", None, "AODE, TAN, SPODE, KDB: equal-frequency bins per numeric feature (model default 5)", _MODEL, "N"),
    Setting("warmup", "int", None, "AODE, TAN, SPODE, KDB: values of a numeric feature used to place its bin edges; "
            "TAN, SPODE, KDB: also the learned events before the first rebuild (model default 100)", _MODEL, "N"),
    Setting("rebuild_every", "int", None, "TAN, SPODE, KDB: rebuild the structure / re-choose the super-parent every N "
            "learned events (model default 1000); early ones come after --warmup events and each time the count "
            "doubles below N, when the counts show attributes dependent given the class",
            _MODEL, "N"),
    Setting("var_smoothing", "float", None, "NB: floor of each Gaussian variance, as a fraction of the feature's variance over all classes (model default 1e-9)", _MODEL, "V"),
    Setting("types", "mapping", {}, "declare feature types instead of inferring them from the first value "
            "(str, bool, int: categorical; float: numeric); repeatable, or comma-separated",
            _MODEL, "FEATURE=categorical|numeric"),
    Setting("loss", "str", None, "JSON file {true_label: {predicted_label: cost}}: predict the class of least "
            "expected cost; labels are written as in the output's proba keys (1, true, yes)", _MODEL, "FILE"),
    Setting("missing", "choice", None, "learning from events with missing attributes: em (add the expected counts "
            "of the missing values, estimated from the observed values) or ignore (skip them) (model default em)", _MODEL,
            choices=("em", "ignore")),
    Setting("learn_unlabeled", "bool", None, "learn from unlabeled events too, by EM over the class "
            "(semi-supervised; model default off)", _MODEL),
    Setting("unlabeled_weight", "float", None, "weight of an unlabeled event relative to a labeled one "
            "(model default 1.0)", _MODEL, "W"),
    Setting("model_name", "str", None, "name written in each output's \"model\" field (default: the --model value)",
            _MODEL, "NAME"),
    Setting("label_field", "str", ENGINE_DEFAULTS["label_field"], "field holding the class label", _EVENTS, "FIELD"),
    Setting("id_field", "str", ENGINE_DEFAULTS["id_field"], "field passed through as the output's \"id\" "
            "(empty string: none)", _EVENTS, "FIELD"),
    Setting("features", "list", None, "use only these fields as features (default: every field but the label "
            "and the id); comma-separated", _EVENTS, "A,B,C"),
    Setting("emit_imputed", "bool", False, "add \"imputed\": {feature: most probable value} of the missing "
            "attributes to each output", _EVENTS),
    Setting("max_event_bytes", "int", ENGINE_DEFAULTS["max_event_bytes"], "longer events are dead-lettered "
            "as oversize", _EVENTS, "N"),
    Setting("input", "str", None, "JSON-lines file to read (default: stdin)", _JSONL, "PATH"),
    Setting("output", "str", None, "JSON-lines file the predictions are appended to (default: stdout)",
            _JSONL, "PATH"),
    Setting("dead_letter", "str", None, "JSON-lines file the dead letters are appended to (default: stderr, "
            "one JSON object per line among the log lines)", _JSONL, "PATH"),
    Setting("output_mode", "choice", None, "what to do when --output or --dead-letter names a file that already "
            "holds data: append to it, or truncate it first (default: append when --snapshot-dir is a directory "
            "a daemon already used, so a restart resumes; otherwise refuse to start, so running again never "
            "silently writes a second copy of every output)", _JSONL, choices=("append", "truncate")),
    Setting("bootstrap_servers", "list", None, "Kafka brokers, comma-separated host:port", _KAFKA, "HOST:PORT"),
    Setting("input_topic", "str", None, "topic the events are read from (required in Kafka mode)", _KAFKA, "TOPIC"),
    Setting("output_topic", "str", None, "topic the predictions are written to (required in Kafka mode)",
            _KAFKA, "TOPIC"),
    Setting("group_id", "str", None, "consumer group the offsets are committed under "
            "(connector default stream-nb)", _KAFKA, "GROUP"),
    Setting("dead_letter_topic", "str", None, "topic the dead letters are written to (default: <input-topic>.dlq)",
            _KAFKA, "TOPIC"),
    Setting("kafka_config", "mapping", {}, "any other kafka-python consumer/producer setting, e.g. "
            "security_protocol=SASL_SSL sasl_mechanism=PLAIN ssl_cafile=ca.pem; repeatable", _KAFKA, "KEY=VALUE"),
    Setting("poll_max_records", "int", ENGINE_DEFAULTS["poll_max_records"], "most events taken per poll",
            _ENGINE, "N"),
    Setting("poll_timeout", "float", ENGINE_DEFAULTS["poll_timeout"], "longest wait of one poll, in seconds",
            _ENGINE, "SECONDS"),
    Setting("commit_every", "int", ENGINE_DEFAULTS["commit_every_records"], "checkpoint (flush outputs, then "
            "commit input positions) after this many events", _ENGINE, "N"),
    Setting("commit_interval", "float", ENGINE_DEFAULTS["commit_interval_s"], "checkpoint at least this often "
            "while events flow, in seconds (also when the input goes idle, and always on exit)", _ENGINE, "SECONDS"),
    Setting("dead_letter_max_value_bytes", "int", ENGINE_DEFAULTS["dead_letter_max_value_bytes"],
            "raw bytes of a rejected event copied into its dead letter (longer ones are cut and marked "
            "truncated)", _ENGINE, "N"),
    Setting("log_loss_floor", "float", ENGINE_DEFAULTS["log_loss_floor"], "probability floor of the "
            "prequential log loss (a class never seen costs -ln(floor))", _ENGINE, "P"),
    Setting("snapshot_dir", "str", None, "keep snapshots of the model, its metrics and the input positions in "
            "DIR, restore the newest valid one at start-up, and commit input positions only once a snapshot "
            "covers them (default: no snapshots)", _SNAPSHOTS, "DIR"),
    Setting("snapshot_every", "int", 100_000, "snapshot after this many events", _SNAPSHOTS, "N"),
    Setting("snapshot_interval", "float", 60.0, "snapshot at least this often while events flow, in seconds "
            "(and always on exit and before Kafka revokes partitions)", _SNAPSHOTS, "SECONDS"),
    Setting("snapshot_keep", "int", 3, "how many valid snapshots to keep", _SNAPSHOTS, "K"),
    Setting("exactly_once", "bool", False, "Kafka: commit outputs, dead letters and input offsets in one "
            "transaction per checkpoint, each after a snapshot (needs --snapshot-dir); read the outputs with "
            "isolation_level=read_committed", _SNAPSHOTS),
    Setting("instance_id", "str", "0", "stable name of this daemon instance within its group, distinct per "
            "instance; the transactional id is stream-nb-<group id>-<instance id>", _SNAPSHOTS, "ID"),
    Setting("metrics_interval", "float", ENGINE_DEFAULTS["log_metrics_interval_s"], "log the prequential "
            "metrics every this many seconds (0: only at exit)", _OPS, "SECONDS"),
    Setting("connect_attempts", "int", 0, "start-up attempts while the broker is unreachable (0: keep trying)",
            _OPS, "N"),
    Setting("connect_backoff_max", "float", 30.0, "cap of the doubling wait between start-up attempts, in "
            "seconds", _OPS, "SECONDS"),
    Setting("log_level", "choice", "INFO", "logging threshold (logs go to stderr; kafka-python's own logs "
            "show from WARNING up, all of them at DEBUG)", _OPS,
            choices=("DEBUG", "INFO", "WARNING", "ERROR")),
    Setting("log_format", "choice", "text", "text lines, or json: one object per line with time, level, logger, "
            "message and structured fields", _OPS, choices=("text", "json")),
    Setting("metrics_port", "int", None, "serve /metrics (Prometheus), /healthz and /readyz on this port "
            "(0: any free port, logged; unset: no HTTP endpoint)", _OPS, "PORT"),
    Setting("metrics_host", "str", "127.0.0.1", "address the HTTP endpoint listens on (0.0.0.0: every "
            "interface, as in a container)", _OPS, "HOST"),
    Setting("liveness_timeout", "float", 120.0, "/healthz fails once the run loop has not come round for "
            "this long, in seconds", _OPS, "SECONDS"),
    Setting("lag_interval", "float", 10.0, "read the input's lag (Kafka: end offsets) every this many seconds",
            _OPS, "SECONDS"),
    Setting("max_in_flight", "int", ENGINE_DEFAULTS["max_in_flight"], "back-pressure: pause the input while "
            "more than N outputs await the broker's acknowledgement, resume at N/2 (0: never pause; JSON "
            "lines write synchronously and never need it)", _ENGINE, "N"),
)

_BY_NAME = {s.name: s for s in SETTINGS}
_KAFKA_SETTINGS = ("bootstrap_servers", "input_topic", "output_topic", "group_id", "dead_letter_topic", "kafka_config")
_JSONL_SETTINGS = ("input", "output", "dead_letter")
_MODEL_PARAMS = ("k", "max_table_cells", "max_completions", "parent", "alpha", "m", "bins", "warmup", "rebuild_every", "var_smoothing", "types", "loss", *_EM)

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
  --dead-letter (default stderr). An --output or --dead-letter file that
  already holds data is appended to only when that is meant: with
  --output-mode append, or when --snapshot-dir resumes an earlier run;
  otherwise the daemon refuses to start (--output-mode truncate empties it).
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
  missing. Rejected, with a reason code: oversize, invalid_utf8, invalid_json,
  not_an_object, bad_id, bad_label, nested_value, bad_feature_type.

output record (one JSON line / Kafka message per valid event, same key):
  {"id", "prediction", "proba": {label: p}, "model", "learned", "n_learned",
   "source": {where the event came from}}

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
  exactly once across crashes (outputs: at least once). --exactly-once
  (Kafka) commits outputs, dead letters and offsets in one transaction per
  checkpoint: a read_committed consumer sees each output once.
  stream-nb snapshot inspect PATH describes a snapshot file.

exit status:
  0 done (input exhausted or stopped by a signal), 1 runtime failure,
  2 invalid settings (unusable output paths included: checked before the
  first event), 130 interrupted (Ctrl-C) before start-up finished."""


# -- parsing ------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """The ``stream-nb`` argument parser (``run`` sub-command)."""
    parser = argparse.ArgumentParser(
        prog="stream-nb",
        description="Streaming online learning of Bayesian classifiers over JSON lines or Kafka.",
    )
    parser.add_argument("--version", action="version", version=f"stream-nb {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    run = commands.add_parser(
        "run",
        help="consume events, predict, learn, write predictions",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    groups: dict[str, argparse._ArgumentGroup] = {}
    for setting in SETTINGS:
        group = groups.get(setting.group)
        if group is None:
            group = groups[setting.group] = run.add_argument_group(setting.group)
        default = "" if setting.default in (None, {}) else f" (default: {setting.default})"
        kwargs: dict[str, typing.Any] = {
            "dest": setting.name,
            "default": argparse.SUPPRESS,
            "help": f"{setting.help}{default} [env {setting.env}]".replace("%", "%%"),
        }
        if setting.kind == "choice":
            kwargs["choices"] = setting.choices
        elif setting.kind == "bool":
            kwargs.update(action="store_const", const=True)
        else:
            kwargs["metavar"] = setting.metavar
        if setting.kind == "mapping":
            kwargs.update(action="extend", nargs="+")
        elif setting.kind == "list":
            kwargs["action"] = "append"
        group.add_argument(setting.flag, **kwargs)
    other = run.add_argument_group("configuration")
    other.add_argument("--config", metavar="FILE", default=argparse.SUPPRESS,
                       help="TOML file of settings (see below) [env STREAM_NB_CONFIG]")
    other.add_argument("--print-config", action="store_true",
                       help="print the resolved settings as JSON on stdout and exit")
    from .evaluate import add_subcommands  # stream-nb evaluate, stream-nb explain

    add_subcommands(commands)
    from .snapshot_cli import add_subcommand as add_snapshot_subcommand  # stream-nb snapshot inspect

    add_snapshot_subcommand(commands)
    return parser


def _convert(setting: Setting, value: typing.Any, origin: str) -> typing.Any:
    """Check and convert one value from a flag, a variable (strings) or the TOML file (typed)."""

    def bad(expected: str) -> ConfigError:
        return ConfigError(f"{origin}: expected {expected}, got {value!r}")

    kind = setting.kind
    if kind == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("1", "true", "yes", "on"):
            return True
        if isinstance(value, str) and value.strip().lower() in ("0", "false", "no", "off"):
            return False
        raise bad("true or false")
    if kind in ("str", "choice"):
        if not isinstance(value, str):
            raise bad("a string")
        if kind == "choice":
            if setting.name == "log_level":
                value = value.upper()
            if value not in setting.choices:
                raise bad("one of " + ", ".join(setting.choices))
        return value
    if kind == "int":
        if isinstance(value, str):
            try:
                return int(value.strip())
            except ValueError:
                raise bad("an integer") from None
        if isinstance(value, bool) or not isinstance(value, int):
            raise bad("an integer")
        return value
    if kind == "float":
        if isinstance(value, str):
            try:
                return float(value.strip())
            except ValueError:
                raise bad("a number") from None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise bad("a number")
        return float(value)
    if kind == "list":
        items = value if isinstance(value, list) else [value]
        out: list[str] = []
        for item in items:
            if not isinstance(item, str):
                raise bad("a comma-separated string or a list of strings")
            out.extend(part.strip() for part in item.split(",") if part.strip())
        return out
    if kind == "mapping":
        if isinstance(value, dict):
            return {str(k): v for k, v in value.items()}
        if isinstance(value, str) and value.lstrip().startswith("{"):
            try:
                parsed = orjson.loads(value)
            except orjson.JSONDecodeError:
                raise bad("a JSON object or KEY=VALUE pairs") from None
            if not isinstance(parsed, dict):
                raise bad("a JSON object or KEY=VALUE pairs")
            return parsed
        items = value if isinstance(value, list) else [value]
        mapping: dict[str, typing.Any] = {}
        for item in items:
            if not isinstance(item, str):
                raise bad("KEY=VALUE strings")
            parts = item.split(",") if setting.name == "types" or origin.startswith(ENV_PREFIX) else [item]
            for part in parts:
                if not part.strip():
                    continue
                key, sep, val = part.partition("=")
                if not sep or not key.strip():
                    raise ConfigError(f"{origin}: expected KEY=VALUE, got {part!r}")
                mapping[key.strip()] = val.strip()
        return mapping
    raise AssertionError(kind)


def _read_config_file(path: str) -> dict[str, typing.Any]:
    try:
        with open(path, "rb") as f:
            data = tomllib.loads(f.read().decode("utf-8-sig"))  # -sig: a leading byte order mark is ignored
    except OSError as exc:
        raise ConfigError(f"config file {path}: cannot read it: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"config file {path}: not UTF-8 text: {exc.reason} at byte {exc.start}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path}: not valid TOML: {exc}") from None
    where = f"config file {path}"
    if "run" in data and isinstance(data["run"], dict):
        extra = sorted(k for k in data if k != "run")
        if extra:
            raise ConfigError(
                f"{where}: keys {', '.join(map(repr, extra))} are outside the [run] table; "
                "put every setting under [run] or use no table at all"
            )
        data = data["run"]
        where += " [run]"
    settings: dict[str, typing.Any] = {}
    for key, value in data.items():
        name = key.replace("-", "_")
        if name not in _BY_NAME:
            raise ConfigError(
                f"{where}: unknown setting {key!r}; expected one of: {', '.join(sorted(_BY_NAME))}"
            )
        settings[name] = _convert(_BY_NAME[name], value, f"{where}: {key}")
    return settings


def resolve_settings(args: argparse.Namespace, env: typing.Mapping[str, str] | None = None) -> dict[str, typing.Any]:
    """Merge flags over ``STREAM_NB_*`` variables over the config file over the defaults.

    >>> parser = build_parser()
    >>> args = parser.parse_args(["run", "--alpha", "0.5", "--types", "a=numeric"])
    >>> s = resolve_settings(args, env={"STREAM_NB_ALPHA": "2", "STREAM_NB_BINS": "7", "STREAM_NB_TYPES": "b=categorical"})
    >>> s["alpha"], s["bins"], s["types"]
    (0.5, 7, {'b': 'categorical', 'a': 'numeric'})
    >>> resolve_settings(parser.parse_args(["run"]), env={"STREAM_NB_BINS": "seven"})
    Traceback (most recent call last):
    ...
    stream_nb.exceptions.ConfigError: STREAM_NB_BINS: expected an integer, got 'seven'
    """
    env = os.environ if env is None else env
    given = vars(args)
    layers: list[tuple[typing.Callable[[Setting], str], dict[str, typing.Any]]] = []
    config_path = given.get("config", env.get(ENV_PREFIX + "CONFIG"))
    if config_path:
        layers.append((lambda s: f"config file {config_path}", _read_config_file(config_path)))
    from_env: dict[str, typing.Any] = {}
    for setting in SETTINGS:
        if setting.env in env:
            from_env[setting.name] = _convert(setting, env[setting.env], setting.env)
    ignored = sorted(k for k in env if k.startswith(ENV_PREFIX) and k[len(ENV_PREFIX):].lower() not in _BY_NAME)
    if ignored:
        log.debug("ignoring environment variables %s (not stream-nb settings)", ", ".join(ignored))
    layers.append((lambda s: s.env, from_env))
    layers.append((lambda s: s.flag, {
        s.name: _convert(s, given[s.name], s.flag) for s in SETTINGS if s.name in given
    }))
    settings = Settings({s.name: (dict(s.default) if s.kind == "mapping" else s.default) for s in SETTINGS})
    for origin, layer in layers:
        for name, value in layer.items():
            if _BY_NAME[name].kind == "mapping":
                settings[name].update(value)
            else:
                settings[name] = value
            settings.origins[name] = origin(_BY_NAME[name])
    return settings


class Settings(dict):
    """The resolved settings, a plain dict of values; :attr:`origins` says where each one came from.

    ``origins[name]`` is the flag (``--rebuild-every``), the variable
    (``STREAM_NB_REBUILD_EVERY``) or ``config file PATH`` of the layer that set
    it last; a default has no entry.
    """

    def __init__(self, *args: typing.Any, **kwargs: typing.Any):
        super().__init__(*args, **kwargs)
        self.origins: dict[str, str] = {}


def describe_setting(settings: typing.Mapping[str, typing.Any], name: str) -> str:
    """How an error names a setting: its flag, or its name and where it came from when that was not a flag.

    >>> s = resolve_settings(build_parser().parse_args(["run", "--bins", "3"]), env={"STREAM_NB_REBUILD_EVERY": "5"})
    >>> describe_setting(s, "bins"), describe_setting(s, "rebuild_every"), describe_setting(s, "alpha")
    ('--bins', 'rebuild_every (from STREAM_NB_REBUILD_EVERY)', '--alpha')
    """
    flag = _BY_NAME[name].flag
    origin = getattr(settings, "origins", {}).get(name, flag)
    return flag if origin == flag else f"{name} (from {origin})"


def _model_words(settings: typing.Mapping[str, typing.Any]) -> str:
    """``--model tan``, or ``model tan (from STREAM_NB_MODEL)`` when the model was not chosen by the flag."""
    words = describe_setting(settings, "model")
    choice = settings["model"]
    return f"--model {choice}" if words == "--model" else f"model {choice}{words[len('model'):]}"


def _name_settings(settings: typing.Mapping[str, typing.Any], text: str, names: typing.Mapping[str, str]) -> str:
    """``text`` (a component's error) with each key of ``names`` replaced by how the user gave that setting.

    ``names`` maps a component's key (``commit_every_records``) to the setting's name (``commit_every``).

    >>> s = resolve_settings(build_parser().parse_args(["run"]), env={"STREAM_NB_COMMIT_EVERY": "0"})
    >>> _name_settings(s, "commit_every_records must be a positive integer, got 0", {"commit_every_records": "commit_every"})
    'commit_every (from STREAM_NB_COMMIT_EVERY) must be a positive integer, got 0'
    """
    if not names:
        return text
    pattern = re.compile(r"(?<![\w'\"-])(" + "|".join(map(re.escape, sorted(names, key=len, reverse=True))) + r")(?![\w'\"-])")
    return pattern.sub(lambda m: describe_setting(settings, names[m.group(1)]), text)


# -- building the pieces --------------------------------------------------------


def _label_aliases(key: str) -> list[typing.Any]:
    """A loss-file key and, when it reads as a JSON integer or boolean, that label too."""
    try:
        parsed = orjson.loads(key)
    except orjson.JSONDecodeError:
        return [key]
    if isinstance(parsed, (bool, int)):
        return [key, parsed]
    return [key]


def load_loss(path: str) -> dict[typing.Any, dict[typing.Any, float]]:
    """Read a loss matrix ``{true_label: {predicted_label: cost}}`` from a JSON file.

    JSON object keys are strings, so a key that reads as an integer or a
    boolean (``"1"``, ``"true"``) also stands for that label.
    """
    try:
        with open(path, "rb") as f:
            data = orjson.loads(f.read().removeprefix(b"\xef\xbb\xbf"))  # a leading byte order mark is ignored
    except OSError as exc:
        raise ConfigError(f"loss file {path}: cannot read it: {exc.strerror}") from None
    except orjson.JSONDecodeError as exc:
        raise ConfigError(f"loss file {path}: not valid JSON: {exc}") from None
    if not isinstance(data, dict) or not all(isinstance(row, dict) for row in data.values()):
        raise ConfigError(f"loss file {path}: expected an object {{true_label: {{predicted_label: cost}}}}")
    loss: dict[typing.Any, dict[typing.Any, float]] = {}
    for truth, row in data.items():
        out_row: dict[typing.Any, float] = {}
        for predicted, cost in row.items():
            if isinstance(cost, bool) or not isinstance(cost, (int, float)):
                raise ConfigError(f"loss file {path}: cost [{truth!r}][{predicted!r}] must be a number, got {cost!r}")
            for alias in _label_aliases(predicted):
                out_row[alias] = cost
        for alias in _label_aliases(truth):
            loss[alias] = out_row
    return loss


def build_model(settings: dict[str, typing.Any]) -> typing.Any:
    """Instantiate the ``--model`` class with the model parameters that were set."""
    import stream_nb

    choice = settings["model"]
    class_name, accepted = MODELS[choice]
    params: dict[str, typing.Any] = {}
    for name in _MODEL_PARAMS:
        value = settings[name]
        if value is None or value == {}:
            continue
        if name not in accepted:
            flags = ", ".join(_BY_NAME[p].flag for p in accepted)
            given = describe_setting(settings, name)
            given = f"{given} ({name})" if given == _BY_NAME[name].flag else given
            raise ConfigError(f"{given} does not apply to {_model_words(settings)}, which takes {flags}")
        params[name] = load_loss(value) if name == "loss" else value
    cls = getattr(stream_nb, class_name, None)
    if cls is None:
        raise ConfigError(f"{_model_words(settings)}: stream_nb.{class_name} is not available in this installation")
    try:
        return cls(**params)
    except ConfigError as exc:
        text = str(exc)
        name = text.partition(":")[0]
        if name in params and describe_setting(settings, name) != _BY_NAME[name].flag:
            text = describe_setting(settings, name) + text[len(name):]
        raise ConfigError(f"{_model_words(settings)}: {text}") from None


#: Engine config key -> the setting it comes from (:func:`engine_config`).
_ENGINE_KEYS = {
    "label_field": "label_field",
    "id_field": "id_field",
    "features": "features",
    "max_event_bytes": "max_event_bytes",
    "model_name": "model_name",
    "poll_max_records": "poll_max_records",
    "poll_timeout": "poll_timeout",
    "commit_every_records": "commit_every",
    "commit_interval_s": "commit_interval",
    "dead_letter_max_value_bytes": "dead_letter_max_value_bytes",
    "log_loss_floor": "log_loss_floor",
    "log_metrics_interval_s": "metrics_interval",
    "emit_imputed": "emit_imputed",
    "max_in_flight": "max_in_flight",
}


def engine_config(settings: dict[str, typing.Any]) -> dict[str, typing.Any]:
    """The :class:`~stream_nb.engine.Engine` config for these settings."""
    config = {key: settings[name] for key, name in _ENGINE_KEYS.items()}
    config["id_field"] = config["id_field"] or None
    config["features"] = config["features"] or None
    config["model_name"] = config["model_name"] or settings["model"]
    return config


def check_engine_config(settings: dict[str, typing.Any]) -> dict[str, typing.Any]:
    """:func:`~stream_nb.engine.check_config` of :func:`engine_config`, its errors naming the settings as given.

    >>> s = resolve_settings(build_parser().parse_args(["run", "--commit-every", "0"]), env={})
    >>> check_engine_config(s)
    Traceback (most recent call last):
    ...
    stream_nb.exceptions.ConfigError: --commit-every must be a positive integer, got 0
    """
    try:
        return check_config(engine_config(settings))
    except ConfigError as exc:
        raise ConfigError(_name_settings(settings, str(exc), _ENGINE_KEYS)) from None


def check_output_files(settings: dict[str, typing.Any]) -> None:
    """Refuse to append to an ``--output`` or ``--dead-letter`` file that holds data, unless that is meant.

    Appending is meant with ``--output-mode append``, and when ``--snapshot-dir``
    names a directory a daemon already used (its ``.lock`` or a snapshot is
    there): the run then resumes where the last snapshot left off, and its
    outputs continue the file (at-least-once). Otherwise a second run over
    the same input would silently write a second copy of every output.
    ``--output-mode truncate`` empties the files instead.

    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "out.jsonl")
    >>> with open(path, "w") as f:
    ...     _ = f.write('{"id": 1}\\n')
    >>> check_output_files({"output": path, "dead_letter": None, "output_mode": None, "snapshot_dir": None})
    Traceback (most recent call last):
    ...
    stream_nb.exceptions.ConfigError: --output .../out.jsonl already holds 10 bytes, ...
    >>> check_output_files({"output": path, "dead_letter": None, "output_mode": "append", "snapshot_dir": None})
    """
    if settings["output_mode"] is not None:
        return
    directory = settings["snapshot_dir"]
    if directory and os.path.isdir(directory):
        if os.path.exists(os.path.join(directory, ".lock")) or SnapshotStore(directory).sequences():
            return  # a restart: the run resumes from the snapshot and the outputs continue the file
    for name in ("output", "dead_letter"):
        path = settings[name]
        if path in (None, "-"):
            continue
        try:
            info = os.stat(path)
        except OSError:  # missing (created empty), or the sink says why it cannot open it
            continue
        if stat.S_ISREG(info.st_mode) and info.st_size > 0:
            flag = _BY_NAME[name].flag
            raise ConfigError(
                f"{flag} {path} already holds {info.st_size:,} bytes, by all appearances from an earlier run: "
                f"if this run reads the same events again, appending writes a second copy of every "
                f"{'prediction' if name == 'output' else 'dead letter'}. Give --output-mode append to add to it "
                f"anyway, --output-mode truncate to empty it first, or another {flag} file"
            )


@dataclasses.dataclass
class _Plan:
    """Which connector module to use and the dict each factory gets."""

    module: str
    source: dict[str, typing.Any]
    sink: dict[str, typing.Any]
    dead_letters: dict[str, typing.Any]
    describe: str


def connector_plan(settings: dict[str, typing.Any]) -> _Plan:
    """Pick JSON-lines or Kafka mode and build the connector configs."""
    kafka_set = [n for n in _KAFKA_SETTINGS if settings[n]]
    if not kafka_set:
        paths = {n: settings[n] for n in _JSONL_SETTINGS if settings[n] not in (None, "-")}
        outputs = [(n, os.path.realpath(p)) for n, p in paths.items()]
        for i, (a, pa) in enumerate(outputs):
            for b, pb in outputs[i + 1:]:
                if pa == pb:
                    raise ConfigError(f"{describe_setting(settings, a)} and {describe_setting(settings, b)} are the "
                                      f"same file {paths[a]!r}")
        for name in ("output", "dead_letter"):  # before any work: not an hour later, at the first write
            if name in paths:
                writable_file(paths[name], describe_setting(settings, name))
        return _Plan(
            module="connectors.jsonl",
            source={"path": settings["input"], "max_line_bytes": settings["max_event_bytes"]},
            sink={"path": settings["output"], "append": settings["output_mode"] != "truncate"},
            dead_letters={"path": settings["dead_letter"], "append": settings["output_mode"] != "truncate"},
            describe=(
                f"JSON lines from {settings['input'] or 'stdin'} to {settings['output'] or 'stdout'}, "
                f"dead letters to {settings['dead_letter'] or 'stderr'}"
            ),
        )
    jsonl_set = [n for n in (*_JSONL_SETTINGS, "output_mode") if settings[n] is not None]
    if jsonl_set:
        raise ConfigError(
            f"{', '.join(describe_setting(settings, n) for n in jsonl_set)} (JSON-lines mode) cannot be combined "
            f"with {', '.join(describe_setting(settings, n) for n in kafka_set)} (Kafka mode)"
        )
    for name in ("input_topic", "output_topic"):
        if not settings[name]:
            raise ConfigError(f"Kafka mode needs {_BY_NAME[name].flag} (or {_BY_NAME[name].env})")
    extra = dict(settings["kafka_config"])
    clash = sorted(set(extra) & set(_KAFKA_SETTINGS))
    if clash:
        raise ConfigError(
            f"{describe_setting(settings, 'kafka_config')} {clash[0]}=... : use {_BY_NAME[clash[0]].flag} "
            f"(or {_BY_NAME[clash[0]].env}) for this setting"
        )
    config = {
        **extra,
        "bootstrap_servers": settings["bootstrap_servers"],
        "input_topic": settings["input_topic"],
        "output_topic": settings["output_topic"],
        "dead_letter_topic": settings["dead_letter_topic"] or f"{settings['input_topic']}.dlq",
        "group_id": settings["group_id"],
    }
    config = {k: v for k, v in config.items() if v is not None}
    module = "connectors.kafka"
    if settings["exactly_once"]:  # one transactional producer for outputs, dead letters and offsets
        from .snapshot_cli import transactional_id

        config["transactional_id"] = transactional_id(settings)
        module = "connectors.kafka.transactional"
    return _Plan(
        module=module,
        source=config,
        sink=config,
        dead_letters=config,
        describe=(
            f"Kafka {','.join(settings['bootstrap_servers'] or ['(connector default)'])}: "
            f"{config['input_topic']} -> {config['output_topic']}, dead letters to {config['dead_letter_topic']}"
        ),
    )


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


def _close_all(things: typing.Iterable[typing.Any]) -> None:
    for thing in things:
        try:
            thing.close()
        except Exception as exc:  # noqa: BLE001 - closing must not hide the real outcome
            log.warning("closing %s failed: %s", type(thing).__name__, exc)


def start_connectors(plan: _Plan, settings: dict[str, typing.Any], stopper: _Stopper) -> tuple | None:
    """Create source, sink and dead-letter sink, retrying while the other side is unreachable.

    A :class:`ConnectionError` (e.g. the Kafka connector's ``ConnectorUnavailable``)
    is retried with a doubling wait capped at ``connect_backoff_max``, logging one
    line per attempt; any other error is raised at once. Returns ``None`` when a
    signal arrives while waiting.
    """
    module = importlib.import_module(plan.module)
    attempts = settings["connect_attempts"]
    cap = settings["connect_backoff_max"]
    delay = min(1.0, cap)
    attempt = 0
    while True:
        attempt += 1
        made: list[typing.Any] = []
        try:
            with _QuietLibraries():
                if isinstance(module, JointConnectorModule):  # all three at once (exactly-once: one producer)
                    made.extend(module.make_connectors(plan.source))
                else:
                    made.append(module.make_source(plan.source))
                    made.append(module.make_sink(plan.sink))
                    made.append(module.make_dead_letter_sink(plan.dead_letters))
            return tuple(made)
        except ConnectionError as exc:
            _close_all(made)
            if attempts and attempt >= attempts:
                raise ConnectionError(f"gave up after {attempt} start-up attempts: {exc}") from None
            log.warning("start-up attempt %d failed: %s; retrying in %.1f s", attempt, exc, delay)
        except BaseException:
            _close_all(made)
            raise
        if stopper.event.wait(delay):
            return None
        delay = min(delay * 2, cap)


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
        except OSError:
            line = None
        text = f"after {name} line {line} (next byte {offset})" if line is not None else f"at {name} byte {offset}"
        return text, {"file": name, "line": line, "byte": offset}
    if not positions:
        return "before the first record", {"offsets": {}}
    ordered = dict(sorted(positions.items()))
    return "at the next offsets " + ", ".join(f"{k}: {v}" for k, v in ordered.items()), {"offsets": ordered}


# -- main -------------------------------------------------------------------------


#: Logger of kafka-python: chatty, so WARNING and up only unless --log-level DEBUG.
_KAFKA_LOGGER = "kafka"


def _configure_logging(level: str, fmt: str = "text") -> None:
    from .ops import configure_logging

    configure_logging(level, fmt, sys.stderr)
    logging.getLogger(_KAFKA_LOGGER).setLevel(logging.DEBUG if level == "DEBUG" else logging.WARNING)


class _QuietLibraries:
    """Mute kafka-python while start-up is retried: each attempt gets one line of ours instead.

    Nothing is muted at ``--log-level DEBUG``.
    """

    def __enter__(self) -> None:
        self.logger = logging.getLogger(_KAFKA_LOGGER)
        self.level = self.logger.level
        if not log.isEnabledFor(logging.DEBUG):
            self.logger.setLevel(logging.CRITICAL + 1)

    def __exit__(self, *exc_info: typing.Any) -> None:
        self.logger.setLevel(self.level)


def _run(args: argparse.Namespace) -> int:
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
        if plan.module == "connectors.jsonl":
            check_output_files(settings)
        config = check_engine_config(settings)
        model = build_model(settings)
        from .snapshot_cli import check_settings as check_snapshot_settings

        check_snapshot_settings(settings, kafka=plan.module != "connectors.jsonl")
        from .ops import Operations  # metrics and health endpoints, log summaries

        ops = Operations.from_settings(settings, model_name=config["model_name"], kafka=plan.module != "connectors.jsonl")
    except (ConfigError, ValueError, TypeError) as exc:
        log.error("%s", exc)
        return 2

    stopper = _Stopper()
    previous = {sig: signal.signal(sig, stopper) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        try:
            started = start_connectors(plan, settings, stopper)
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
        from .snapshot_cli import make_checkpointer

        checkpointer = None
        try:  # snapshots: restore the newest valid one before the first event
            checkpointer = make_checkpointer(settings, source, sink)
            engine = Engine(model, source, sink, dead_letters, config=config, checkpointer=checkpointer)
            if checkpointer is not None:
                checkpointer.recover()
        except (StreamNBError, OSError) as exc:
            log.error("%s", exc)
            _close_all((source, sink, dead_letters))
            if checkpointer is not None:
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
            _close_all((source, sink, dead_letters))
            if checkpointer is not None:
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


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``stream-nb`` console script; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    handler = getattr(args, "handler", None)  # evaluate, explain
    try:
        return handler(args) if handler is not None else _run(args)
    except KeyboardInterrupt:  # run stops on SIGINT by itself once started; this is any other moment
        print(f"stream-nb {args.command}: interrupted", file=sys.stderr)
        return INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
