"""The settings of ``stream-nb run``: one schema, its conversion, and the environment and TOML layers.

Every setting is one :class:`Setting` of :data:`SETTINGS`: a command-line flag
(``--rebuild-every``), an environment variable (``STREAM_NB_REBUILD_EVERY``) and
a key of the TOML file (``rebuild_every``), checked and converted by one
function, :func:`convert`. :data:`MODELS` says which ``--model`` choices exist
and which model settings each one takes. :func:`resolve_settings` records where
each value came from (:class:`Settings`), so an error names a setting as the
user gave it (:func:`describe_setting`).

Settings are resolved in this order, the first that sets a value wins:

1. command-line flags,
2. ``STREAM_NB_<NAME>`` environment variables (e.g. ``STREAM_NB_MODEL``),
3. the TOML file given by ``--config`` / ``STREAM_NB_CONFIG``,
4. the defaults.

The two mapping settings (``types`` and ``kafka_config``) are merged key by
key across those layers instead.

>>> parser = argparse.ArgumentParser()
>>> add_arguments(parser)
>>> settings = resolve_settings(parser.parse_args(["--model", "aode"]), env={})
>>> settings["model"], settings["label_field"], settings["poll_max_records"]
('aode', 'label', 500)
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import tomllib
import typing

import orjson

from ._checks import parse_bool, parse_int
from .engine import DEFAULT_CONFIG as ENGINE_DEFAULTS
from .exceptions import ConfigError
from .learners import AODE, DETECTORS, KDB, SPODE, TAN, NaiveBayes, flat_settings
from .options import FLAT

__all__ = [
    "BY_NAME",
    "ENV_PREFIX",
    "JSONL_SETTINGS",
    "KAFKA_SETTINGS",
    "MODELS",
    "MODEL_PARAMS",
    "REMOVED",
    "SETTINGS",
    "Setting",
    "Settings",
    "add_arguments",
    "convert",
    "describe_setting",
    "read_config_file",
    "resolve_settings",
]

#: The name the daemon's log lines have always carried (the command line's): kept for whoever filters on it.
log = logging.getLogger("stream_nb.settings")


ENV_PREFIX = "STREAM_NB_"

#: ``--model`` choice -> (class name in :mod:`stream_nb`, the flat settings it takes), read off each class's
#: constructor (:func:`stream_nb.learners.flat_settings`).
_CLASSES = {"nb": NaiveBayes, "aode": AODE, "tan": TAN, "spode": SPODE, "kdb": KDB}
MODELS: dict[str, tuple[str, tuple[str, ...]]] = {
    choice: (cls.__name__, tuple(flat_settings(cls))) for choice, cls in _CLASSES.items()}
#: The model settings, in the order of their declarations (``time_field`` is the join's too: its row is below).
_MODEL_SETTINGS = tuple(n for n in FLAT if n != "time_field" and any(n in names for _, names in MODELS.values()))

@dataclasses.dataclass(frozen=True)
class Setting:
    """One setting: a flag, an environment variable and a config-file key.

    Examples
    --------
    >>> BY_NAME["poll_timeout"].flag, BY_NAME["poll_timeout"].env
    ('--poll-timeout', 'STREAM_NB_POLL_TIMEOUT')
    """

    name: str
    kind: str  # str, int, float, bool, choice, list, mapping
    default: typing.Any
    help: str
    group: str
    metavar: str | None = None
    choices: tuple[str, ...] = ()
    #: a choice given in any case (``debug`` and ``DEBUG``), folded to the upper case of ``choices``
    fold_case: bool = False

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
_JOIN = "labels that arrive later (on with --feedback or --feedback-topic)"
_GROUP = "one model across a consumer group (Kafka; off unless --model-topic is given)"

def _model_rows() -> tuple[Setting, ...]:
    """The model settings' rows, derived from their declarations (:data:`stream_nb.options.FLAT`): the help,
    the models that take each (:data:`MODELS`) and each model's default (:func:`stream_nb.learners.flat_settings`)."""
    rows = []
    for name in _MODEL_SETTINGS:
        p = FLAT[name]
        takers = [c for c, (_, names) in MODELS.items() if name in names]
        who = "" if len(takers) == len(MODELS) else ", ".join(c.upper() if c != "nb" else "NB" for c in takers) + ": "
        defaults: dict[str, list[str]] = {}
        for c in takers:
            value = flat_settings(_CLASSES[c])[name]
            defaults.setdefault("none" if value is None else str(value).lower() if isinstance(value, bool)
                                else str(value), []).append(c.upper() if c != "nb" else "NB")
        ordered = sorted(defaults.items(), key=lambda kv: -len(kv[1]))
        text = f"model default {ordered[0][0]}" + "".join(f"; {', '.join(ws)} {v}" for v, ws in ordered[1:])
        if name == "loss":  # a file on the command line, read by daemon._build.load_loss
            rows.append(Setting(name, "str", None, f"JSON file of the {p.help}; labels are written as in the "
                                "output's proba keys (1, true, yes)", _MODEL, "FILE"))
        elif name == "types":
            rows.append(Setting(name, "mapping", {}, f"{p.help}; repeatable, or comma-separated", _MODEL, p.metavar))
        elif name == "drift_detector":
            rows.append(Setting(name, "choice", None, f"{p.help} ({text})", _MODEL, choices=("none", *DETECTORS)))
        else:
            kind = "int" if p.kind == "int" else "float" if p.kind == "float" else p.kind
            rows.append(Setting(name, kind, None, f"{who}{p.help} ({text})", _MODEL, p.metavar,
                                choices=tuple(p.choices)))
    return tuple(rows)


SETTINGS: tuple[Setting, ...] = (
    Setting("model", "choice", "nb", "classifier: naive Bayes, AODE, TAN, SPODE or KDB", _MODEL, choices=tuple(MODELS)),
    *_model_rows(),
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
    Setting("top_k", "int", None, "\"proba\" of each output holds only the N most probable classes, and the "
            "prediction's class when a loss matrix chose a less probable one (default: every class)", _EVENTS, "N"),
    Setting("no_proba", "bool", False, "leave \"proba\" out of the outputs: the prediction only", _EVENTS),
    Setting("input", "str", None, "JSON-lines file to read (default: stdin)", _JSONL, "PATH"),
    Setting("follow", "bool", False, "keep reading --input as lines are appended, as tail -F does (a rotated "
            "file is read to its end first), until SIGTERM or SIGINT", _JSONL),
    Setting("output", "str", None, "JSON-lines file of the predictions, each once: replaced by a run without "
            "--snapshot-dir, continued exactly once with it (default: stdout, at least once)", _JSONL, "PATH"),
    Setting("dead_letter", "str", None, "JSON-lines file of the dead letters, kept as --output is (default: "
            "stderr, one JSON object per line among the log lines)", _JSONL, "PATH"),
    Setting("bootstrap_servers", "list", None, "Kafka brokers, comma-separated host:port", _KAFKA, "HOST:PORT"),
    Setting("input_topic", "str", None, "topic the events are read from (required in Kafka mode)", _KAFKA, "TOPIC"),
    Setting("output_topic", "str", None, "topic the predictions are written to (required in Kafka mode)",
            _KAFKA, "TOPIC"),
    Setting("group_id", "str", None, "consumer group the offsets are committed under "
            "(connector default stream-nb)", _KAFKA, "GROUP"),
    Setting("dead_letter_topic", "str", None, "topic the dead letters are written to (default: <input-topic>.dlq)",
            _KAFKA, "TOPIC"),
    Setting("kafka_config", "mapping", {}, "any other consumer/producer setting of the Kafka client, e.g. "
            "security_protocol=SASL_SSL (confluent also takes librdkafka's dotted names); repeatable", _KAFKA, "KEY=VALUE"),
    Setting("kafka_client", "choice", "kafka-python", "Kafka client library: kafka-python (pure Python, the "
            "default) or confluent (confluent-kafka, librdkafka: pip install 'stream-nb[confluent]')", _KAFKA, choices=("kafka-python", "confluent")),
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
            "DIR, restore the newest at start-up, and commit positions only once a snapshot covers them", _SNAPSHOTS, "DIR"),
    Setting("snapshot_every", "int", 100_000, "snapshot after this many events", _SNAPSHOTS, "N"),
    Setting("snapshot_interval", "float", 60.0, "snapshot at least this often while events flow, in seconds "
            "(and always on exit and before Kafka revokes partitions)", _SNAPSHOTS, "SECONDS"),
    Setting("snapshot_keep", "int", 3, "how many valid snapshots to keep", _SNAPSHOTS, "K"),
    Setting("exactly_once", "bool", False, "Kafka: commit outputs, dead letters and input offsets in one "
            "transaction per checkpoint (needs --snapshot-dir), for isolation_level=read_committed readers", _SNAPSHOTS),
    Setting("instance_id", "str", "0", "stable name of this daemon instance within its group, distinct per "
            "instance; the transactional id is stream-nb-<group id>-<instance id>", _SNAPSHOTS, "ID"),
    Setting("model_topic", "str", None, "share one model across the members of --group-id through this compacted "
            "topic: each publishes the counts of its partitions and applies the others' (--snapshot-dir: a cache)",
            _GROUP, "TOPIC"),
    Setting("sync_interval", "float", 1.0, "publish and apply the group's model at least this often, in seconds",
            _GROUP, "SECONDS"),
    Setting("sync_every", "int", 10_000, "publish after this many events, and apply others' states once they "
            "hold this many new events", _GROUP, "N"),
    Setting("model_record_bytes", "int", 900_000, "largest model-topic record; larger states are split "
            "(keep under the broker's max.message.bytes)", _GROUP, "BYTES"),
    Setting("metrics_interval", "float", ENGINE_DEFAULTS["log_metrics_interval_s"], "log the prequential "
            "metrics every this many seconds (0: only at exit)", _OPS, "SECONDS"),
    Setting("connect_attempts", "int", 0, "start-up attempts while the broker is unreachable (0: keep trying)",
            _OPS, "N"),
    Setting("connect_backoff_max", "float", 30.0, "cap of the doubling wait between start-up attempts, in "
            "seconds", _OPS, "SECONDS"),
    Setting("log_level", "choice", "INFO", "logging threshold (logs go to stderr; kafka-python's own logs "
            "show from WARNING up, all of them at DEBUG)", _OPS,
            choices=("DEBUG", "INFO", "WARNING", "ERROR"), fold_case=True),
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
    Setting("max_in_flight", "int", ENGINE_DEFAULTS["max_in_flight"], "back-pressure: hold the input while "
            "more than N outputs await the broker's acknowledgement, until N/2 do (0: never hold)", _ENGINE, "N"),
    Setting("max_in_flight_wait", "float", ENGINE_DEFAULTS["max_in_flight_wait_s"], "back-pressure: wait this "
            "long for the acknowledgements before pausing the input partitions, in seconds (a paused "
            "confluent-kafka consumer drops what it fetched ahead; 0: pause at once)", _ENGINE, "SECONDS"),
    Setting("feedback", "str", None, "JSON-lines file of labels that come later, {<id-field>: ..., <label-field>: "
            "...}, followed while --input runs: an unlabeled event with an id waits for its label", _JOIN, "PATH"),
    Setting("feedback_topic", "str", None, "Kafka topic of labels that come later, {<id-field>: ..., "
            "<label-field>: ...}, keyed like their events, with as many partitions as --input-topic", _JOIN, "TOPIC"),
    Setting("pending_topic", "str", None, "with --feedback-topic: the compacted topic through which held events "
            "go with their partition to its new owner (default: <input-topic>.pending)", _JOIN, "TOPIC"),
    Setting("pending_max", "int", 1_000_000, "most events (and early labels) waiting at once; the oldest expire "
            "first when it is reached", _JOIN, "N"),
    Setting("label_ttl", "float", 3600.0, "seconds an event waits for its label (and a label for its event)",
            _JOIN, "S"),
    Setting("time_field", "str", None, "event field holding its time in seconds (not a feature): the join's "
            "clock with --feedback (default: the arrival time); with --half-life, decay in event time (H seconds)", _JOIN, "FIELD"),
    Setting("on_expire", "str", "drop", "an event whose label did not come within --label-ttl: drop (counted, "
            "never learned) or label:VALUE (learned with VALUE)", _JOIN, "POLICY"),
    Setting("provisional_label", "str", None, "learn each waiting event at once with VALUE, and when its label "
            "comes take VALUE back exactly and learn the label", _JOIN, "VALUE"),
)


BY_NAME = {s.name: s for s in SETTINGS}
KAFKA_SETTINGS = ("bootstrap_servers", "input_topic", "output_topic", "group_id", "dead_letter_topic", "kafka_config")
JSONL_SETTINGS = ("input", "output", "dead_letter")
#: Settings that no longer exist -> what to do instead; a flag, variable or config key of one is an error saying so.
REMOVED: dict[str, str] = {
    "output_mode": "--output and --dead-letter files hold each record once: a run without --snapshot-dir replaces "
                   "them, one with --snapshot-dir continues them exactly once from its snapshot; to add to a "
                   "file across runs anyway, write to stdout and redirect it with >> FILE",
}
MODEL_PARAMS = (*_MODEL_SETTINGS, "time_field")


# -- parsing ------------------------------------------------------------------


def add_arguments(run: argparse.ArgumentParser) -> None:
    """Add a flag for every setting of :data:`SETTINGS` to ``run`` (``stream-nb run``), by group, and ``--config``.

    A flag that is not given leaves no attribute (``argparse.SUPPRESS``), so
    :func:`resolve_settings` can tell it from one given with the default value.
    """
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
            if setting.fold_case:
                kwargs["type"] = str.upper
        elif setting.kind == "bool":
            kwargs.update(action="store_const", const=True)
        else:
            kwargs["metavar"] = setting.metavar
        if setting.kind == "mapping":
            kwargs.update(action="extend", nargs="+")
        elif setting.kind == "list":
            kwargs["action"] = "append"
        group.add_argument(setting.flag, **kwargs)
    for name in REMOVED:  # hidden: given, they are a clear error (resolve_settings), not "unrecognized"
        run.add_argument("--" + name.replace("_", "-"), dest=name, nargs="?", default=argparse.SUPPRESS,
                         help=argparse.SUPPRESS)
    other = run.add_argument_group("configuration")
    other.add_argument("--config", metavar="FILE", default=argparse.SUPPRESS,
                       help="TOML file of settings (see below) [env STREAM_NB_CONFIG]")
    other.add_argument("--print-config", action="store_true",
                       help="print the resolved settings as JSON on stdout and exit")


def convert(setting: Setting, value: typing.Any, origin: str) -> typing.Any:
    """Check and convert one value from a flag, a variable (strings) or the TOML file (typed).

    Examples
    --------
    >>> convert(BY_NAME["poll_timeout"], "2.5", "--poll-timeout")
    2.5
    >>> convert(BY_NAME["poll_timeout"], "soon", "--poll-timeout")
    Traceback (most recent call last):
    ...
    stream_nb.exceptions.ConfigError: --poll-timeout: expected a number, got 'soon'
    """

    def bad(expected: str) -> ConfigError:
        return ConfigError(f"{origin}: expected {expected}, got {value!r}")

    kind = setting.kind
    if kind == "bool":
        try:
            return parse_bool(value)
        except ValueError:
            raise bad("true or false") from None
    if kind in ("str", "choice"):
        if not isinstance(value, str):
            raise bad("a string")
        if kind == "choice":
            if setting.fold_case:
                value = value.upper()
            if value not in setting.choices:
                raise bad("one of " + ", ".join(setting.choices))
        return value
    if kind == "int":
        try:
            return parse_int(value)
        except ValueError:
            raise bad("an integer") from None
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


def read_config_file(path: str) -> dict[str, typing.Any]:
    """The settings of a TOML file, converted; ConfigError naming the file and the key.

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "run.toml")
    >>> with open(path, "w") as f:
    ...     _ = f.write('model = "tan"\\npoll_timeout = 2\\n')
    >>> read_config_file(path)
    {'model': 'tan', 'poll_timeout': 2.0}
    """
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
        if name in REMOVED:
            raise ConfigError(f"{where}: setting {key!r} was removed: {REMOVED[name]}")
        if name not in BY_NAME:
            raise ConfigError(
                f"{where}: unknown setting {key!r}; expected one of: {', '.join(sorted(BY_NAME))}"
            )
        settings[name] = convert(BY_NAME[name], value, f"{where}: {key}")
    return settings


def resolve_settings(args: argparse.Namespace, env: typing.Mapping[str, str] | None = None) -> Settings:
    """Merge flags over ``STREAM_NB_*`` variables over the config file over the defaults.

    >>> parser = argparse.ArgumentParser()
    >>> add_arguments(parser)
    >>> args = parser.parse_args(["--alpha", "0.5", "--types", "a=numeric"])
    >>> s = resolve_settings(args, env={"STREAM_NB_ALPHA": "2", "STREAM_NB_BINS": "7", "STREAM_NB_TYPES": "b=categorical"})
    >>> s["alpha"], s["bins"], s["types"]
    (0.5, 7, {'b': 'categorical', 'a': 'numeric'})
    >>> resolve_settings(parser.parse_args([]), env={"STREAM_NB_BINS": "seven"})
    Traceback (most recent call last):
    ...
    stream_nb.exceptions.ConfigError: STREAM_NB_BINS: expected an integer, got 'seven'
    """
    env = os.environ if env is None else env
    given = vars(args)
    for name in REMOVED:
        flag, variable = "--" + name.replace("_", "-"), ENV_PREFIX + name.upper()
        if name in given or variable in env:
            raise ConfigError(f"{flag if name in given else variable} was removed: {REMOVED[name]}")
    layers: list[tuple[typing.Callable[[Setting], str], dict[str, typing.Any]]] = []
    config_path = given.get("config", env.get(ENV_PREFIX + "CONFIG"))
    if config_path:
        layers.append((lambda s: f"config file {config_path}", read_config_file(config_path)))
    from_env: dict[str, typing.Any] = {}
    for setting in SETTINGS:
        if setting.env in env:
            from_env[setting.name] = convert(setting, env[setting.env], setting.env)
    ignored = sorted(k for k in env if k.startswith(ENV_PREFIX) and k[len(ENV_PREFIX):].lower() not in BY_NAME)
    if ignored:
        log.debug("ignoring environment variables %s (not stream-nb settings)", ", ".join(ignored))
    layers.append((lambda s: s.env, from_env))
    layers.append((lambda s: s.flag, {
        s.name: convert(s, given[s.name], s.flag) for s in SETTINGS if s.name in given
    }))
    settings = Settings({s.name: (dict(s.default) if s.kind == "mapping" else s.default) for s in SETTINGS})
    for origin, layer in layers:
        for name, value in layer.items():
            if BY_NAME[name].kind == "mapping":
                settings[name].update(value)
            else:
                settings[name] = value
            settings.origins[name] = origin(BY_NAME[name])
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

    >>> parser = argparse.ArgumentParser()
    >>> add_arguments(parser)
    >>> s = resolve_settings(parser.parse_args(["--bins", "3"]), env={"STREAM_NB_REBUILD_EVERY": "5"})
    >>> describe_setting(s, "bins"), describe_setting(s, "rebuild_every"), describe_setting(s, "alpha")
    ('--bins', 'rebuild_every (from STREAM_NB_REBUILD_EVERY)', '--alpha')
    """
    flag = BY_NAME[name].flag
    origin = getattr(settings, "origins", {}).get(name, flag)
    return flag if origin == flag else f"{name} (from {origin})"

