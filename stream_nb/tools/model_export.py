"""``stream-nb model export``: the group's current model, read from its model topic, as a snapshot file.

The members of a group that runs with ``--model-topic`` publish one state per
input partition (see :mod:`stream_nb.engine.group._group`). This command reads the
topic from its start (``read_committed``: states of aborted transactions are
left out), keeps the newest state of each partition, merges them as every
member does (:func:`stream_nb.engine.merge_states`) and writes the result with
:func:`stream_nb.snapshots.write`: ``stream_nb.load``, ``snapshot inspect`` and
``explain --snapshot`` read it. The file's daemon part holds the offset each
partition's state covers; the command prints, per partition, how many records
of the input are not in the model yet (the input's end offset minus that).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import os
import sys
import time

from .. import snapshots
from .._console import pipe_safe
from ..engine import StateLog, merge_states, state_order
from ..exceptions import ConfigError, SnapshotError, StreamNBError
from ..settings import BY_NAME

__all__ = ["add_subcommand", "export_model", "run_export"]

_DESCRIPTION = """\
Write the model a consumer group shares through --model-topic (stream-nb run
--model-topic) to a snapshot file: the newest state of every input partition
on the topic, merged. It prints how far behind each partition the model is."""


def _rebuilt_every(model, every: int) -> dict:
    """The clone parameters that give ``model`` the group's ``rebuild_every`` (TAN's, SPODE's and KDB's is in
    their ``search`` option; a model without structure has none)."""
    search = getattr(model, "search", None)
    if search is not None and hasattr(search, "rebuild_every"):
        return {"search": dataclasses.replace(search, rebuild_every=every)}
    return {}


def export_model(channel, path: str, timeout: float = 60.0) -> dict:
    """Read ``channel`` (a :class:`~stream_nb.engine.ModelChannel`) to its end and write the group's model to
    ``path``; return ``{"partitions": {partition: {"offset", "learned", "behind"}}, "learned": n, "bytes": size}``."""
    reader, known = StateLog(), {}
    for key, value in channel.catch_up(timeout):
        for partition, payload, info in reader.feed(key, value):
            offset = info.get("offset")
            if isinstance(offset, int) and (partition not in known or state_order(info) > state_order(
                    known[partition][2])):
                known[partition] = (offset, payload, info)
    if not known:
        raise ConfigError(f"model topic {channel.topic!r} holds no model state (has a group run with it yet?)")
    parts, template = [], None
    for partition, (offset, payload, info) in known.items():
        model, _ = snapshots.decode_state(payload, f"model topic {channel.topic}, state of {partition}")
        parts.append((partition, model))
        if template is None:
            every = info.get("rebuild_every")
            template = model.clone(_rebuilt_every(model, every) if every is not None else {})
    view = merge_states(template, parts)
    ends = channel.end_offsets(list(known))
    figures = {p: {"offset": o, "learned": info.get("learned"),
                   "behind": max(0, ends[p] - o) if p in ends else None}
               for p, (o, _, info) in sorted(known.items())}
    daemon = {"store_id": f"export-{channel.topic}", "positions": {p: f["offset"] for p, f in figures.items()},
              "source": {"kind": "kafka", "model_topic": channel.topic, "behind": {p: f["behind"] for p, f in
                                                                                   figures.items()}},
              "exactly_once": False, "model_name": type(view).__name__, "metrics": None,
              "exported_unix": time.time()}
    size = snapshots.write(path, *view.state(), daemon=daemon)
    return {"partitions": figures, "learned": int(view.n_learned), "bytes": size}


def run_export(args: argparse.Namespace) -> int:
    if not args.timeout > 0:
        print(f"stream-nb: error: --timeout: expected a number of seconds > 0, got {args.timeout}", file=sys.stderr)
        return 2
    deadline = time.monotonic() + args.timeout  # one budget: reaching the broker, then reading the topic
    # the client's own bootstrap wait (kafka-python's default is 30 s) takes the budget, unless given
    config = {"bootstrap_servers": args.bootstrap_servers, "bootstrap_timeout_ms": max(1, round(args.timeout * 1000)),
              **dict(args.kafka_config or []), "kafka_client": args.kafka_client}
    channel = None
    try:
        module = importlib.import_module("connectors.kafka")  # loaded by name: stream_nb never imports connectors
        channel = module.open_model_topic(args.model_topic, config, writer=False)
        result = export_model(channel, args.output, timeout=max(0.0, deadline - time.monotonic()))
    except (StreamNBError, OSError) as exc:
        print(f"stream-nb: error: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, (ConfigError, SnapshotError)) else 1
    finally:
        if channel is not None:
            channel.close()
    print(f"{args.output}: {type_name(args.output)} model of {result['learned']} learned events, "
          f"{result['bytes']:,} bytes")
    for partition, f in result["partitions"].items():
        behind = "unknown" if f["behind"] is None else f"{f['behind']} records behind"
        print(f"  {partition}: offset {f['offset']}, {f['learned']} learned, {behind}")
    return 0


def type_name(path: str) -> str:
    return snapshots.read(path).meta.get("model", "?")


def _pair(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value.strip()


def add_subcommand(commands: argparse._SubParsersAction) -> None:
    """Register ``model export`` on the ``stream-nb`` sub-command parser."""
    model = commands.add_parser("model", help="work with a group's shared model (export)",
                                description="Work with the model a consumer group shares through a model topic.")
    actions = model.add_subparsers(dest="model_command", metavar="ACTION", required=True)
    export = actions.add_parser("export", help="write the group's current model to a snapshot file",
                                description=_DESCRIPTION,
                                epilog="exit status: 0 done, 1 broker or file failure, 2 invalid settings or no "
                                       "state on the topic, 130 interrupted (Ctrl-C).")
    export.add_argument("--bootstrap-servers", required=True, metavar="HOST:PORT",
                        type=lambda s: [x.strip() for x in s.split(",") if x.strip()], help="Kafka brokers")
    export.add_argument("--model-topic", required=True, metavar="TOPIC", help="the group's model topic")
    export.add_argument("--output", required=True, metavar="FILE", help="the snapshot file to write")
    export.add_argument("--kafka-config", action="append", type=_pair, metavar="KEY=VALUE",
                        help="a consumer setting of the Kafka client (security_protocol=SSL, ...; confluent also "
                             "takes librdkafka's dotted names); repeatable")
    client = BY_NAME["kafka_client"]
    export.add_argument("--kafka-client", choices=client.choices, default=os.environ.get(client.env) or client.default,
                        help=f"Kafka client library, as for stream-nb run (env {client.env}; default {client.default})")
    export.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS",
                        help="longest wait, in all, to reach the broker and read the topic to its end "
                             "(default: 60)")
    export.set_defaults(handler=pipe_safe(run_export))
