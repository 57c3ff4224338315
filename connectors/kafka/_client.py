"""Kafka client configuration, the same for every client library: checking and converting settings.

Shared by the source, the sink, the transaction and the model topic of
:mod:`connectors.kafka`, whichever client adapter (:mod:`._adapter`) runs them:

* :func:`resolve` -- a component's settings: its own ``DEFAULT_CONFIG`` plus
  the keys the client takes, through the one settings rule of
  :func:`stream_nb._checks.configure`; string values (``--kafka-config
  linger_ms=20``) converted to the type of the key's default (:func:`coerce`);
  keys that would break the delivery guarantees refused (:class:`Fixed`); a
  client taking librdkafka's dotted property names (``security.protocol``)
  gets them as given, held to the same rules;
* :data:`TO_LIBRDKAFKA` -- the settings both clients have, by kafka-python's
  name and librdkafka's, and which only a consumer or a producer takes;
  :data:`KAFKA_PYTHON_FIXED`, :data:`LIBRDKAFKA_FIXED` -- the keys each
  client's adapter sets itself; :func:`librdkafka_config` -- the properties
  of each librdkafka client the connector makes;
* :func:`servers`, :func:`partition_key` -- addresses and partition names.
"""

from __future__ import annotations

import logging
import os
import typing
import uuid

from stream_nb._checks import configure, parse_bool, parse_int
from stream_nb.exceptions import ConfigError

__all__ = ["CONSUMER_ONLY", "KAFKA_PYTHON_FIXED", "KAFKA_PYTHON_NAMES", "LIBRDKAFKA_FIXED", "PRODUCER_ONLY",
           "TO_LIBRDKAFKA", "Fixed", "coerce", "librdkafka_config",
           "parse_partition", "partition_key", "resolve", "resolve_for", "servers", "to_librdkafka"]

log = logging.getLogger("connectors.kafka")
#: librdkafka's log lines: under kafka-python's "kafka" logger, so --log-level treats both clients' logs alike.
LIBRDKAFKA_LOG = logging.getLogger("kafka.librdkafka")

#: kafka-python names of the settings both clients have, and librdkafka's name of each.
TO_LIBRDKAFKA: dict[str, str] = {
    "bootstrap_servers": "bootstrap.servers",
    "client_id": "client.id",
    "group_id": "group.id",
    "group_instance_id": "group.instance.id",
    "auto_offset_reset": "auto.offset.reset",
    "allow_auto_create_topics": "allow.auto.create.topics",
    "enable_auto_commit": "enable.auto.commit",
    "isolation_level": "isolation.level",
    "session_timeout_ms": "session.timeout.ms",
    "heartbeat_interval_ms": "heartbeat.interval.ms",
    "max_poll_interval_ms": "max.poll.interval.ms",
    "fetch_min_bytes": "fetch.min.bytes",
    "fetch_max_wait_ms": "fetch.wait.max.ms",
    "fetch_max_bytes": "fetch.max.bytes",
    "max_partition_fetch_bytes": "max.partition.fetch.bytes",
    "security_protocol": "security.protocol",
    "sasl_mechanism": "sasl.mechanism",
    "sasl_plain_username": "sasl.username",
    "sasl_plain_password": "sasl.password",
    "sasl_kerberos_service_name": "sasl.kerberos.service.name",
    "sasl_kerberos_domain_name": "sasl.kerberos.principal",
    "ssl_cafile": "ssl.ca.location",
    "ssl_certfile": "ssl.certificate.location",
    "ssl_keyfile": "ssl.key.location",
    "ssl_password": "ssl.key.password",
    "ssl_crlfile": "ssl.crl.location",
    "ssl_ciphers": "ssl.cipher.suites",
    "ssl_check_hostname": "ssl.endpoint.identification.algorithm",
    "request_timeout_ms": "request.timeout.ms",
    "retry_backoff_ms": "retry.backoff.ms",
    "reconnect_backoff_ms": "reconnect.backoff.ms",
    "reconnect_backoff_max_ms": "reconnect.backoff.max.ms",
    "metadata_max_age_ms": "metadata.max.age.ms",
    "connections_max_idle_ms": "connections.max.idle.ms",
    "receive_buffer_bytes": "socket.receive.buffer.bytes",
    "send_buffer_bytes": "socket.send.buffer.bytes",
    "acks": "acks",
    "enable_idempotence": "enable.idempotence",
    "linger_ms": "linger.ms",
    "batch_size": "batch.size",
    "compression_type": "compression.type",
    "delivery_timeout_ms": "delivery.timeout.ms",
    "max_in_flight_requests_per_connection": "max.in.flight.requests.per.connection",
    "max_request_size": "message.max.bytes",
    "retries": "retries",
    "transactional_id": "transactional.id",
    "transaction_timeout_ms": "transaction.timeout.ms",
}
#: Common settings only a consumer takes, and only a producer takes (kafka-python names).
CONSUMER_ONLY = frozenset({
    "group_id", "group_instance_id", "auto_offset_reset", "enable_auto_commit", "isolation_level",
    "session_timeout_ms", "heartbeat_interval_ms", "max_poll_interval_ms", "fetch_min_bytes", "fetch_max_wait_ms",
    "fetch_max_bytes", "max_partition_fetch_bytes",
})
PRODUCER_ONLY = frozenset({
    "acks", "enable_idempotence", "linger_ms", "batch_size", "compression_type", "delivery_timeout_ms",
    "retries", "transactional_id", "transaction_timeout_ms", "request_timeout_ms",
})
#: librdkafka's name of a common setting -> kafka-python's (``--kafka-config security.protocol=SSL``
#: works with kafka-python too).
KAFKA_PYTHON_NAMES: dict[str, str] = {v: k for k, v in TO_LIBRDKAFKA.items() if k != "ssl_check_hostname"}

# The components' own keys, used by the connector and never handed to librdkafka.
_NOT_LIBRDKAFKA = frozenset({
    "topic", "commit_timeout_ms", "close_timeout_ms", "bootstrap_timeout_ms", "metrics_enabled", "create_topic",
    "topic_partitions", "topic_replication_factor", "partitions_like", "topic_timeout_ms", "max_block_ms",
    "feedback_topic",
})
# kafka-python keys whose value is a Python object, not settable from a string.
_OBJECT_KEYS = frozenset({
    "selector", "socket_options", "partition_assignment_strategy", "metric_reporters",
    "partitioner", "ssl_context", "sasl_oauth_token_provider",
    "default_offset_commit_callback", "kafka_client",
})
# Keys whose default is None but whose value is an integer.
_INT_OR_NONE_KEYS = frozenset({
    "receive_buffer_bytes", "send_buffer_bytes", "topic_partitions", "topic_replication_factor",
})


def coerce(component: str, key: str, value, default):
    """Convert a string value (from ``KEY=VALUE`` on the command line) to the key's type."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    try:
        if key in _OBJECT_KEYS:
            raise ConfigError(
                f"{component}: config key {key!r} takes a Python object and cannot be set "
                f"from the string {value!r}; pass it through the Python API"
            )
        if key == "acks":
            return "all" if text.lower() == "all" else parse_int(text)
        if key == "api_version":
            return tuple(parse_int(part) for part in text.split("."))
        if default is None and text.lower() in ("none", "null"):
            return None
        if isinstance(default, bool):
            return parse_bool(text)  # the words of stream-nb's own boolean settings
        if isinstance(default, int) or key in _INT_OR_NONE_KEYS:
            return parse_int(text)
        if isinstance(default, float):
            return float(text)
    except ValueError as exc:
        if isinstance(exc, ConfigError):
            raise
        raise ConfigError(
            f"{component}: config key {key!r} got {value!r}, which is not a valid "
            f"{'version like 3.9' if key == 'api_version' else type(default).__name__ if default is not None else 'integer'}"
        ) from None
    return value


class Fixed(typing.NamedTuple):
    """A rule on a key: ``allowed(value)``, or ``None`` when the key may never be set; ``why`` says why."""

    allowed: typing.Callable[[object], bool] | None  # None: the key may never be set
    why: str


#: Keys each client's consumer / producer may not be given, because its adapter sets them, with why
#: (an adapter's ``consumer_fixed`` / ``producer_fixed``).
KAFKA_PYTHON_FIXED = {
    "consumer": {"key_deserializer": Fixed(None, "records carry raw bytes; the engine decodes them"),
                 "value_deserializer": Fixed(None, "records carry raw bytes; the engine decodes them"),
                 "kafka_client": Fixed(None, "the connector sets it")},
    "producer": {"key_serializer": Fixed(None, "the engine sends bytes"),
                 "value_serializer": Fixed(None, "the engine sends bytes"),
                 "kafka_client": Fixed(None, "the connector sets it")},
}
_ROUTED = Fixed(None, "the connector routes librdkafka's logs to Python logging")
LIBRDKAFKA_FIXED = {
    "consumer": {"enable.auto.offset.store": Fixed(None, "the source commits explicit offsets"),
                 "on_commit": Fixed(None, "the source commits synchronously"), "logger": _ROUTED,
                 "error_cb": Fixed(None, "the source watches the brokers' state itself")},
    "producer": {"on_delivery": Fixed(None, "the sink counts delivery failures itself"),
                 "delivery.report.only.error": Fixed(None, "the sink counts delivery failures itself"),
                 "logger": _ROUTED, "transactional.id": Fixed(None, "give transactional_id")},
}


def resolve(component: str, own: dict, fixed: dict[str, Fixed], config: dict, *, native: typing.Collection[str],
            defaults: dict | None = None, dotted: bool = False) -> dict:
    """Validate ``config`` against ``own`` keys (the component's ``DEFAULT_CONFIG``) and the client's ``native`` keys.

    Returns ``own`` with ``config`` merged over it, string values converted to
    the type of the key's default (in ``own``, else ``defaults``: the client's
    own defaults). Unknown keys are rejected by
    :func:`stream_nb._checks.configure`, listing the accepted ones; a key of
    ``fixed`` the connector sets itself, or whose value would break the
    guarantees, is refused with the reason. With ``dotted``, a dotted key is
    librdkafka's own and passes as given (librdkafka checks it); one that names
    a ``fixed`` setting is held to the same rule.
    """
    defaults = defaults or {}
    by_native = {TO_LIBRDKAFKA[k]: rule for k, rule in fixed.items() if k in TO_LIBRDKAFKA} if dotted else {}
    for key, value in config.items():
        rule = by_native.get(key, fixed.get(key))
        if rule is not None and rule.allowed is None:
            raise ConfigError(f"{component}: config key {key!r}={value!r} is not allowed: {rule.why}")
    never = {k for k, f in fixed.items() if f.allowed is None}
    given_dotted = {k for k in config if dotted and isinstance(k, str) and "." in k}
    merged = configure(own, config, f"{component} config key", passthrough=(set(native) - never) | given_dotted,
                       listing="accepted keys")
    for key, value in config.items():
        rule = by_native.get(key, fixed.get(key))
        check = value
        if key in given_dotted:  # librdkafka's text: its booleans read as ours for the rule
            if isinstance(value, str):
                check = {"true": True, "false": False}.get(value.lower(), -1 if value == "-1" else value)
        else:
            value = check = coerce(component, key, value, own.get(key, defaults.get(key)))
        if rule is not None and not rule.allowed(check):
            raise ConfigError(f"{component}: config key {key!r}={value!r} is not allowed: {rule.why}")
        merged[key] = value
    topic = merged.get("topic")
    if not isinstance(topic, str) or not topic:
        raise ConfigError(f"{component}: config key 'topic' is required (a topic name), got {topic!r}")
    return merged


def resolve_for(adapter, component: str, own: dict, fixed: dict[str, Fixed], config: dict, *, role: str) -> dict:
    """:func:`resolve` with the keys of ``adapter``'s consumer (``role="consumer"``) or producer.

    ``adapter`` is a :class:`~._adapter.Adapter`: its keys (with their
    defaults), the keys it sets itself, and whether it takes dotted names.
    """
    keys, extra = ((adapter.consumer_keys, adapter.consumer_fixed) if role == "consumer"
                   else (adapter.producer_keys, adapter.producer_fixed))
    return resolve(component, own, {**fixed, **extra}, config, native=keys, defaults=keys, dotted=adapter.dotted)


def to_librdkafka(cfg: dict, *, drop: typing.Collection[str] = ()) -> dict:
    """``cfg`` in librdkafka's property names: the components' own keys and ``drop`` left out, the common keys
    translated, dotted keys as given.

    >>> to_librdkafka({"topic": "t", "bootstrap_servers": ["a:1", "b:2"], "acks": "all", "linger.ms": 5})
    {'bootstrap.servers': 'a:1,b:2', 'acks': -1, 'linger.ms': 5}
    """
    out: dict = {}
    for key, value in cfg.items():
        if key in _NOT_LIBRDKAFKA or key in drop or value is None:
            continue
        if key == "bootstrap_servers":
            value = servers(value)
        elif key == "ssl_check_hostname":
            value = "https" if value else "none"
        elif key == "acks" and value == "all":
            value = -1
        out[TO_LIBRDKAFKA.get(key, key)] = value
    return out


def librdkafka_config(cfg: dict, role: str, *, range_assignor: bool = False) -> dict:
    """librdkafka's properties of a ``role`` (``consumer``, ``reader``, ``producer`` or ``admin``) of settings ``cfg``:
    :func:`to_librdkafka`, logging through Python's logging, with what the connector sets for that role."""
    conf = {"logger": LIBRDKAFKA_LOG,
            **to_librdkafka(cfg, drop=CONSUMER_ONLY | PRODUCER_ONLY if role == "admin" else ())}
    if role == "consumer":
        conf.update({"enable.auto.commit": False, "enable.auto.offset.store": False})
        if range_assignor:
            conf["partition.assignment.strategy"] = "range"
    elif role == "reader":  # in no group: the group id is librdkafka's requirement; nothing is committed under it
        conf.update({"group.id": f"stream-nb-model-reader-{os.getpid()}-{uuid.uuid4().hex[:8]}",
                     "enable.auto.offset.store": False, "enable.partition.eof": True})
    elif role == "producer":
        if "transactional.id" in conf:  # librdkafka insists that a record's delivery timeout fits in the transaction's
            txn_timeout = int(conf.get("transaction.timeout.ms", 60_000))
            conf["delivery.timeout.ms"] = min(int(conf.get("delivery.timeout.ms", txn_timeout)), txn_timeout)
        # a keyed record goes where the Java client and kafka-python put it (murmur2), not where librdkafka's
        # own default (CRC32) would: outputs keyed like their events land in the same partitions on either client
        conf.update({"partitioner": conf.get("partitioner", "murmur2_random"), "delivery.report.only.error": True})
    return conf


def servers(bootstrap) -> str:
    """``bootstrap_servers`` (a string or a list) as one readable string."""
    return ",".join(bootstrap) if isinstance(bootstrap, (list, tuple)) else str(bootstrap)


def partition_key(topic: str, partition: int) -> str:
    """The engine's name of a partition: ``"<topic>-<partition>"``."""
    return f"{topic}-{partition}"


def parse_partition(key: str, topics: typing.Collection[str]) -> tuple[str, int]:
    """``(topic, number)`` of the engine's name ``"<topic>-<n>"`` of a partition of one of ``topics``.

    >>> parse_partition("my-events-3", ["my-events"])
    ('my-events', 3)
    """
    topic, sep, partition = key.rpartition("-")
    if not sep or not partition.isdigit() or topic not in topics:
        first = next(iter(topics), "")
        raise ValueError(f"{key!r} is not a partition of topic {first!r} (expected '{first}-<n>')")
    return topic, int(partition)

