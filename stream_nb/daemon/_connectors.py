"""Connector planning and start-up: JSON-lines or Kafka mode, and creating the connectors with retries.

This is the only place in :mod:`stream_nb` that reaches for :mod:`connectors`,
by module name (:func:`importlib.import_module`) and only once the mode is
known, so JSON-lines mode never imports kafka-python and nothing in
:mod:`stream_nb` imports :mod:`connectors` statically.
"""

from __future__ import annotations

import dataclasses
import importlib
import logging
import os
import threading
import typing

from .._console import writable_file
from ..engine import JointConnectorModule
from ..exceptions import ConfigError
from ..settings import BY_NAME, JSONL_SETTINGS, KAFKA_SETTINGS, describe_setting
from ._checkpointing import transactional_id

__all__ = ["KAFKA_LOGGER", "ConnectorPlan", "close_all", "connector_plan", "open_model_channel",
           "open_pending_channel", "start_connectors"]

#: The name the daemon's log lines have always carried (the command line's): kept for whoever filters on it.
log = logging.getLogger("stream_nb.daemon")

#: Logger of kafka-python: chatty, so WARNING and up only unless --log-level DEBUG.
KAFKA_LOGGER = "kafka"


#: librdkafka's names of the settings that have flags of their own (refused in --kafka-config like their
#: kafka-python names).
_DOTTED = {"bootstrap.servers": "bootstrap_servers", "group.id": "group_id"}


@dataclasses.dataclass
class ConnectorPlan:
    """Which connector module to use and the dict each factory gets."""

    module: str
    source: dict[str, typing.Any]
    sink: dict[str, typing.Any]
    dead_letters: dict[str, typing.Any]
    describe: str


def connector_plan(settings: dict[str, typing.Any]) -> ConnectorPlan:
    """Pick JSON-lines or Kafka mode and build the connector configs."""
    kafka_set = [n for n in KAFKA_SETTINGS if settings[n]]
    if not kafka_set:
        paths = {n: settings[n] for n in JSONL_SETTINGS if settings[n] not in (None, "-")}
        outputs = [(n, os.path.realpath(p)) for n, p in paths.items()]
        for i, (a, pa) in enumerate(outputs):
            for b, pb in outputs[i + 1:]:
                if pa == pb:
                    raise ConfigError(f"{describe_setting(settings, a)} and {describe_setting(settings, b)} are the "
                                      f"same file {paths[a]!r}")
        for name in ("output", "dead_letter"):  # before any work: not an hour later, at the first write
            if name in paths:
                writable_file(paths[name], describe_setting(settings, name))
        if settings["follow"] and "input" not in paths:
            raise ConfigError(f"{describe_setting(settings, 'follow')} needs --input FILE: standard input is read "
                              "until its writer closes it")
        # files: exactly once with snapshots (each snapshot commits its lines); without, a run starts from the
        # start of its input, and its files start afresh (replaced at the first checkpoint, never appended to)
        file_mode = "snapshots" if settings["snapshot_dir"] else "replace"
        return ConnectorPlan(
            module="connectors.jsonl",
            source={"path": settings["input"], "max_line_bytes": settings["max_event_bytes"],
                    "follow": settings["follow"]},
            sink={"path": settings["output"], "mode": file_mode},
            dead_letters={"path": settings["dead_letter"], "mode": file_mode},
            describe=(
                f"JSON lines from {settings['input'] or 'stdin'} to {settings['output'] or 'stdout'}, "
                f"dead letters to {settings['dead_letter'] or 'stderr'}"
            ),
        )
    jsonl_set = [n for n in (*JSONL_SETTINGS, "follow") if settings[n] not in (None, False)]
    if jsonl_set:
        raise ConfigError(
            f"{', '.join(describe_setting(settings, n) for n in jsonl_set)} (JSON-lines mode) cannot be combined "
            f"with {', '.join(describe_setting(settings, n) for n in kafka_set)} (Kafka mode)"
        )
    for name in ("input_topic", "output_topic"):
        if not settings[name]:
            raise ConfigError(f"Kafka mode needs {BY_NAME[name].flag} (or {BY_NAME[name].env})")
    extra = dict(settings["kafka_config"])
    clash = sorted({_DOTTED.get(k, k) for k in extra} & {*KAFKA_SETTINGS, "kafka_client"})
    if clash:
        raise ConfigError(
            f"{describe_setting(settings, 'kafka_config')} {clash[0]}=... : use {BY_NAME[clash[0]].flag} "
            f"(or {BY_NAME[clash[0]].env}) for this setting"
        )
    config = {
        **extra,
        "bootstrap_servers": settings["bootstrap_servers"],
        "input_topic": settings["input_topic"],
        "output_topic": settings["output_topic"],
        "dead_letter_topic": settings["dead_letter_topic"] or f"{settings['input_topic']}.dlq",
        "group_id": settings["group_id"],
        "kafka_client": settings["kafka_client"],
        "feedback_topic": settings["feedback_topic"],
    }
    config = {k: v for k, v in config.items() if v is not None}
    module = "connectors.kafka"
    if settings["exactly_once"]:  # one transactional producer for outputs, dead letters and offsets
        config["transactional_id"] = transactional_id(settings)
        module = "connectors.kafka.transactional"
    return ConnectorPlan(
        module=module,
        source=config,
        sink=config,
        dead_letters=config,
        describe=(
            f"Kafka ({settings['kafka_client']}) {','.join(settings['bootstrap_servers'] or ['(connector default)'])}: "
            f"{config['input_topic']} -> {config['output_topic']}, dead letters to {config['dead_letter_topic']}"
        ),
    )


def close_all(things: typing.Iterable[typing.Any]) -> None:
    """Close each of ``things``, logging (not raising) a failure: closing must not hide the real outcome."""
    for thing in things:
        try:
            thing.close()
        except Exception as exc:  # noqa: BLE001 - closing must not hide the real outcome
            log.warning("closing %s failed: %s", type(thing).__name__, exc)


def start_connectors(plan: ConnectorPlan, settings: dict[str, typing.Any], stop: threading.Event) -> tuple | None:
    """Create source, sink and dead-letter sink, retrying while the other side is unreachable.

    A :class:`ConnectionError` (e.g. the Kafka connector's ``ConnectorUnavailable``)
    is retried with a doubling wait capped at ``connect_backoff_max``, logging one
    line per attempt; any other error is raised at once. Returns ``None`` when
    ``stop`` is set (a signal arrived) while waiting.
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
            close_all(made)
            if attempts and attempt >= attempts:
                raise ConnectionError(f"gave up after {attempt} start-up attempts: {exc}") from None
            log.warning("start-up attempt %d failed: %s; retrying in %.1f s", attempt, exc, delay)
        except BaseException:
            close_all(made)
            raise
        if stop.wait(delay):
            return None
        delay = min(delay * 2, cap)


def open_model_channel(plan: ConnectorPlan, settings: dict[str, typing.Any], sink: typing.Any) -> typing.Any:
    """The model topic of ``--model-topic`` (``connectors.kafka``'s ``make_model_channel``), or None without it.

    With ``--exactly-once`` the states are published in the sink's transaction.
    """
    if not settings["model_topic"]:
        return None
    module = importlib.import_module("connectors.kafka")
    config = {**plan.source, "model_topic": settings["model_topic"],
              "model_record_bytes": settings["model_record_bytes"]}
    with _QuietLibraries():
        return module.make_model_channel(config, getattr(sink, "transaction", None) if settings["exactly_once"] else None)


def open_pending_channel(plan: ConnectorPlan, settings: dict[str, typing.Any], sink: typing.Any) -> typing.Any:
    """The pending topic of ``--feedback-topic`` (a compacted topic like the model topic's, default
    ``<input-topic>.pending``) through which held events follow their partition; None without a feedback topic,
    and with ``--model-topic`` (each partition's state on the model topic carries its held events).

    With ``--exactly-once`` the hand-overs are written in the sink's transaction.
    """
    if not settings["feedback_topic"] or settings["model_topic"]:
        return None
    module = importlib.import_module("connectors.kafka")
    config = {**plan.source, "model_topic": settings["pending_topic"] or f"{settings['input_topic']}.pending"}
    config.pop("feedback_topic", None)
    with _QuietLibraries():
        return module.make_model_channel(config, getattr(sink, "transaction", None) if settings["exactly_once"] else None)


class _QuietLibraries:
    """Mute kafka-python while start-up is retried: each attempt gets one line of ours instead.

    Nothing is muted at ``--log-level DEBUG``.
    """

    def __enter__(self) -> None:
        self.logger = logging.getLogger(KAFKA_LOGGER)
        self.level = self.logger.level
        if not log.isEnabledFor(logging.DEBUG):
            self.logger.setLevel(logging.CRITICAL + 1)

    def __exit__(self, *exc_info: typing.Any) -> None:
        self.logger.setLevel(self.level)

