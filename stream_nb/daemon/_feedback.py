"""``--feedback`` / ``--feedback-topic``: the labels that come later, joined to the events they label (see
:mod:`stream_nb.engine`'s Joiner).

A JSON-lines ``--feedback`` file is a source of its own, read alongside the
input, its position kept in the join's part of each snapshot. A regular file
is followed as ``tail -F`` follows it (lines appended, a rotated file's
successor) for as long as the input runs: once the input ends, the feedback is
read to its end and the run ends. A Kafka
``--feedback-topic`` is read by the input's consumer (``connectors.kafka``'s
source sets its records aside in ``source.feedback``): its offsets are the
input's, snapshotted, committed (and with ``--exactly-once`` transacted) with
them.
"""

from __future__ import annotations

import importlib
import logging
import typing

from ..engine import (Engine, Joiner, SharesLearning, TracksFiles, load_join_state, parse_label_value,
                      parse_on_expire)
from ..exceptions import ConfigError, SnapshotError
from ..settings import describe_setting

__all__ = ["check_settings", "make_joiner"]

log = logging.getLogger("stream_nb.daemon")


def check_settings(settings: dict[str, typing.Any]) -> None:
    """The join's settings that can be checked before any connector starts: ConfigError (exit 2) naming them.

    >>> check_settings({"feedback": "labels.jsonl", "feedback_topic": None, "id_field": ""})
    Traceback (most recent call last):
    ...
    stream_nb.exceptions.ConfigError: --feedback joins each label to its event by the id, and --id-field is empty (no id): give the field that holds each event's id, e.g. --id-field id
    """
    name = "feedback" if settings["feedback"] is not None else "feedback_topic"
    if settings[name] is not None and not settings["id_field"]:
        raise ConfigError(f"{describe_setting(settings, name)} joins each label to its event by the id, and "
                          f"{describe_setting(settings, 'id_field')} is empty (no id): give the field that holds "
                          "each event's id, e.g. --id-field id")


def make_joiner(settings: dict[str, typing.Any], engine: Engine, snapshot=None) -> Joiner | None:
    """The engine's :class:`~stream_nb.engine.Joiner` reading ``--feedback`` or ``--feedback-topic`` (None
    without either), holding what the restored ``snapshot`` held (the events waiting for labels, the early
    labels, the feedback positions)."""
    held = (snapshot.daemon or {}).get("join") if snapshot is not None else None
    topic = settings["feedback_topic"]
    if topic is not None and not settings["input_topic"]:
        raise ConfigError(f"{describe_setting(settings, 'feedback_topic')} needs Kafka mode (--bootstrap-servers, "
                          "--input-topic, --output-topic); JSON lines take --feedback PATH")
    if settings["feedback"] is None and topic is None:
        if held and (held["waiting"] or held["counts"]):
            log.warning("snapshot %s holds the state of a join with labels that come later, and this run has no "
                        "--feedback: the events waiting for their labels there are dropped", snapshot.path)
        for name in ("time_field", "provisional_label"):
            if settings[name] is not None and not (name == "time_field" and settings["half_life"] is not None):
                raise ConfigError(f"{describe_setting(settings, name)} needs --feedback (the labels that come later)"
                                  + (" or --half-life (decay in event time)" if name == "time_field" else ""))
        return None
    if settings["input_topic"] and settings["feedback"] is not None:
        raise ConfigError(f"{describe_setting(settings, 'feedback')} is a JSON-lines file: Kafka mode takes "
                          "its labels from a topic")
    if settings["learn_unlabeled"]:
        raise ConfigError(f"{describe_setting(settings, 'learn_unlabeled')} and --feedback: an event learned "
                          "unlabeled would be learned again when its label comes; choose one")
    if settings["input"] is not None and settings["feedback"] == settings["input"]:
        raise ConfigError(f"{describe_setting(settings, 'feedback')} and --input are the same file")
    if settings["time_field"] is not None and settings["half_life"] is not None:
        raise ConfigError(f"{describe_setting(settings, 'time_field')} with --half-life and --feedback: the join "
                          "takes the time field, so decay in event time is not available with labels that come later")
    provisional = settings["provisional_label"]
    config = {
        "id_field": settings["id_field"],
        "label_field": settings["label_field"],
        "time_field": settings["time_field"],
        "pending_max": settings["pending_max"],
        "label_ttl": settings["label_ttl"],
        "on_expire": parse_on_expire(settings["on_expire"]),
        "provisional_label": None if provisional is None else parse_label_value(provisional),
    }
    if config["provisional_label"] is not None and not hasattr(engine.model, "unlearn_one"):
        raise ConfigError("--provisional-label needs a model that can unlearn (stream_nb's models)")
    detector = getattr(engine.model, "drift_detector", None)
    if config["provisional_label"] is not None and str(detector).strip().lower() not in ("none", "") \
            and getattr(engine.model, "window", None) is None:
        raise ConfigError(f"{describe_setting(settings, 'provisional_label')} with --drift-detector needs --window: a "
                          "drift's switch drops counts by time, so a provisional label could not be taken back exactly")
    if topic is not None:
        source = getattr(engine.source, "feedback", None)
        if source is None:
            raise ConfigError(f"{describe_setting(settings, 'feedback_topic')}: the input source reads no feedback topic")
    else:
        jsonl = importlib.import_module("connectors.jsonl")  # by name: stream_nb never imports connectors statically
        input_source = engine.source
        source = jsonl.make_source({"path": settings["feedback"], "max_line_bytes": settings["max_event_bytes"],
                                    "follow": lambda: not input_source.exhausted})
    try:
        joiner = Joiner(engine, source, config)
        if held is not None:
            if isinstance(source, TracksFiles):  # the file the feedback position lies in (a rotation)
                source.recall_files((snapshot.daemon or {}).get("files") or {})
            try:
                load_join_state(joiner, snapshot.arrays, held)
            except ValueError as exc:  # a join (its receipts, its held events) that does not fit: refused
                raise SnapshotError(f"{snapshot.path}: {exc}") from None
    except BaseException:
        source.close()
        raise
    if isinstance(engine.checkpointer, SharesLearning):  # --model-topic: each partition's state learns its pairs
        joiner.sharing = engine.checkpointer
    engine.joiner = joiner
    return joiner
