"""Snapshots of the running daemon: checking the snapshot settings and choosing the engine's checkpointer.

``stream-nb run`` takes the snapshot flags (``--snapshot-dir`` and friends,
defined in :mod:`stream_nb.settings`); :func:`check_settings` validates them and
:func:`make_checkpointer` builds the engine's checkpointer from them: none,
:class:`~stream_nb.engine.Checkpointer` (output files exactly once, other outputs at least once) or
:class:`~stream_nb.engine.ExactlyOnceCheckpointer` (``--exactly-once``).
"""

from __future__ import annotations

import os
import typing

from .. import snapshots
from .._checks import is_integer
from .._console import writable_directory
from ..engine import Checkpointer, ExactlyOnceCheckpointer, GroupCheckpointer, NamedInput, ResumesByPolicy
from ..exceptions import ConfigError
from ..settings import describe_setting

__all__ = ["check_settings", "make_checkpointer", "transactional_id"]


def check_settings(settings: dict[str, typing.Any], kafka: bool) -> None:
    """Validate the snapshot settings of ``stream-nb run``; ConfigError naming the setting as it was given.

    The snapshot directory is created if missing, and must take a file: one
    that cannot is an error now, not at the first snapshot.
    """
    for name, minimum in (("snapshot_every", 1), ("snapshot_keep", 1)):
        value = settings[name]
        if not is_integer(value) or value < minimum:
            raise ConfigError(f"{describe_setting(settings, name)} must be an integer >= {minimum}, got {value!r}")
    interval = settings["snapshot_interval"]
    if isinstance(interval, bool) or not isinstance(interval, (int, float)) or not interval >= 0:
        raise ConfigError(f"{describe_setting(settings, 'snapshot_interval')} must be a number of seconds >= 0, "
                          f"got {interval!r}")
    instance = settings["instance_id"]
    if not isinstance(instance, str) or not instance or any(c.isspace() for c in instance):
        raise ConfigError(f"{describe_setting(settings, 'instance_id')} must be a non-empty name without spaces, "
                          f"got {instance!r}")
    if settings["model_topic"] is not None:
        if not kafka:
            raise ConfigError(f"{describe_setting(settings, 'model_topic')} needs Kafka mode (--bootstrap-servers, "
                              "--input-topic, --output-topic)")
        if not settings["model_topic"]:
            raise ConfigError(f"{describe_setting(settings, 'model_topic')} must be a topic name, got ''")
        interval = settings["sync_interval"]
        if isinstance(interval, bool) or not isinstance(interval, (int, float)) or not interval > 0:
            raise ConfigError(f"{describe_setting(settings, 'sync_interval')} must be a number of seconds > 0, "
                              f"got {interval!r}")
        for name, minimum in (("sync_every", 1), ("model_record_bytes", 1024)):
            value = settings[name]
            if not is_integer(value) or value < minimum:
                raise ConfigError(f"{describe_setting(settings, name)} must be an integer >= {minimum}, got {value!r}")
    if settings["exactly_once"]:
        if not kafka:
            raise ConfigError(f"{describe_setting(settings, 'exactly_once')} needs Kafka mode (--bootstrap-servers, "
                              "--input-topic, --output-topic)")
        if not settings["snapshot_dir"] and not settings["model_topic"]:
            raise ConfigError(f"{describe_setting(settings, 'exactly_once')} needs --snapshot-dir (or --model-topic): each transaction "
                              "commits with a snapshot of the model, so a rewind or a restart never counts an event "
                              "twice")
    if settings["snapshot_dir"]:
        writable_directory(settings["snapshot_dir"], describe_setting(settings, "snapshot_dir"))


def transactional_id(settings: dict[str, typing.Any]) -> str:
    """``stream-nb-<group id>-<instance id>``: stable per daemon instance, distinct between instances.

    Examples
    --------
    >>> transactional_id({"group_id": "scoring", "instance_id": "a"})
    'stream-nb-scoring-a'
    """
    return f"stream-nb-{settings['group_id'] or 'stream-nb'}-{settings['instance_id']}"


def make_checkpointer(settings: dict[str, typing.Any], source: typing.Any, sink: typing.Any,
                      channel: typing.Any = None, template: typing.Any = None) -> typing.Any:
    """The engine's checkpointer for these settings, or ``None`` when snapshots are off.

    Opens (and locks) the snapshot directory: ConfigError when another daemon holds it. With a model
    topic (``channel``, and ``template``: the empty model): a :class:`~stream_nb.engine.GroupCheckpointer`.
    """
    directory = settings["snapshot_dir"]
    if channel is not None:
        store = None
        if directory:
            store = snapshots.SnapshotStore(directory, keep=settings["snapshot_keep"])
            store.open()
        return GroupCheckpointer(
            channel, template, member=settings["instance_id"], sync_interval=float(settings["sync_interval"]),
            sync_every=settings["sync_every"], transaction=sink.transaction if settings["exactly_once"] else None,
            store=store, snapshot_interval=float(settings["snapshot_interval"]),
            source_info={"kind": "kafka", "topic": settings["input_topic"],
                         "group_id": settings["group_id"] or "stream-nb"},
        )
    if not directory:
        return None
    store = snapshots.SnapshotStore(directory, keep=settings["snapshot_keep"])
    store.open()
    kafka = isinstance(source, ResumesByPolicy)
    if kafka:
        info = {"kind": "kafka", "topic": settings["input_topic"], "group_id": settings["group_id"] or "stream-nb"}
    else:
        path = source.partition if isinstance(source, NamedInput) else None
        info = {"kind": "jsonl", "path": path,
                "realpath": os.path.realpath(path) if path not in (None, "stdin") else None}
    if settings["exactly_once"]:
        return ExactlyOnceCheckpointer(store, sink.transaction, source_info=info)
    return Checkpointer(
        store,
        every_events=settings["snapshot_every"],
        interval_s=float(settings["snapshot_interval"]),
        source_info=info,
        commit_metadata=kafka,
    )
