"""Kafka client configuration: checking and converting settings, creating clients, creating topics.

Shared by the source, the sink and the transactional producer of
:mod:`connectors.kafka`:

* :func:`resolve` -- a component's settings: its own ``DEFAULT_CONFIG`` plus
  kafka-python's keys of the underlying client, through the one settings rule
  of :func:`stream_nb._checks.configure`; string values (``--kafka-config
  linger_ms=20``) converted to the type of the key's default (:func:`coerce`);
  keys that would break the delivery guarantees refused (:class:`Fixed`);
* :func:`connect` -- a kafka-python client, "no broker" mapped to
  :class:`~connectors.kafka.ConnectorUnavailable`;
* :func:`ensure_topic` -- the output topics created at start-up when missing.
"""

from __future__ import annotations

import logging
import typing

import kafka.errors as Errors
from kafka import KafkaAdminClient, KafkaConsumer

from stream_nb._checks import configure, parse_bool, parse_int
from stream_nb.exceptions import ConfigError

from ._errors import ConnectorUnavailable

__all__ = ["Fixed", "coerce", "connect", "ensure_topic", "partition_key", "resolve", "servers"]

log = logging.getLogger("connectors.kafka")

# kafka-python's own client factory (KafkaNetClient); wrapped by connect().
_NET_CLIENT = KafkaConsumer.DEFAULT_CONFIG["kafka_client"]
# Raised by older kafka-python releases when no bootstrap server answers.
_NO_BROKERS = tuple(e for e in (getattr(Errors, "NoBrokersAvailable", None),) if e is not None)
_UNAVAILABLE = (Errors.KafkaTimeoutError, Errors.KafkaConnectionError) + _NO_BROKERS

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


def resolve(component: str, own: dict, client_defaults: dict, fixed: dict[str, Fixed], config: dict) -> dict:
    """Validate ``config`` against ``own`` keys (the component's ``DEFAULT_CONFIG``) and the client's keys.

    Returns ``own`` with ``config`` merged over it, string values converted.
    Unknown keys are rejected by :func:`stream_nb._checks.configure`, listing
    the accepted ones; a key of ``fixed`` the connector sets itself, or whose
    value would break the guarantees, is refused with the reason.
    """
    for key, value in config.items():
        rule = fixed.get(key)
        if rule is not None and rule.allowed is None:
            raise ConfigError(f"{component}: config key {key!r}={value!r} is not allowed: {rule.why}")
    never = {k for k, f in fixed.items() if f.allowed is None}
    merged = configure(own, config, f"{component} config key", passthrough=set(client_defaults) - never,
                       listing="accepted keys")
    for key, value in config.items():
        value = coerce(component, key, value, own.get(key, client_defaults.get(key)))
        rule = fixed.get(key)
        if rule is not None and not rule.allowed(value):
            raise ConfigError(f"{component}: config key {key!r}={value!r} is not allowed: {rule.why}")
        merged[key] = value
    topic = merged.get("topic")
    if not isinstance(topic, str) or not topic:
        raise ConfigError(f"{component}: config key 'topic' is required (a topic name), got {topic!r}")
    return merged


def connect(factory, config: dict, *, role: str):
    """Create a kafka-python client; map "no broker" and bad-config failures to our errors.

    kafka-python starts an IO thread before bootstrapping and leaves it running
    when bootstrap fails; the ``kafka_client`` hook lets us close it so that a
    caller retrying in a loop does not leak one thread per attempt.
    """
    created = []

    def kafka_client(**kwargs):
        client = _NET_CLIENT(**kwargs)
        created.append(client)
        return client

    def discard():
        for client in created:
            try:
                client.close()
            except Exception:  # noqa: BLE001 - best effort cleanup of a half-built client
                log.debug("closing a half-built Kafka client failed", exc_info=True)

    bootstrap = servers(config.get("bootstrap_servers"))
    # the wait the client was given, or its own default (kafka-python's: 30 s)
    waited = config.get("bootstrap_timeout_ms", getattr(factory, "DEFAULT_CONFIG", {}).get("bootstrap_timeout_ms"))
    try:
        return factory(kafka_client=kafka_client, **config)
    except _UNAVAILABLE as exc:
        discard()
        raise ConnectorUnavailable(
            f"Kafka {role}: no broker reachable at {bootstrap} within "
            f"{waited} ms ({type(exc).__name__}); check that Kafka "
            f"is running and that bootstrap_servers is right",
            bootstrap_servers=bootstrap,
        ) from exc
    except (Errors.KafkaConfigurationError, ValueError, TypeError) as exc:
        discard()
        raise ConfigError(f"Kafka {role}: invalid configuration: {exc}") from exc
    except BaseException:
        discard()
        raise


def servers(bootstrap) -> str:
    """``bootstrap_servers`` (a string or a list) as one readable string."""
    return ",".join(bootstrap) if isinstance(bootstrap, (list, tuple)) else str(bootstrap)


def partition_key(topic: str, partition: int) -> str:
    """The engine's name of a partition: ``"<topic>-<partition>"``."""
    return f"{topic}-{partition}"


def ensure_topic(topic: str, cfg: dict) -> None:
    """Create ``topic`` unless it exists, as ``cfg`` (a :class:`~connectors.kafka.KafkaSink` config) says.

    Partitions: ``topic_partitions``, else as many as ``partitions_like`` has,
    else the broker's default; replication: ``topic_replication_factor``, else
    the broker's default. A principal that may not create topics gets a
    warning (producing then relies on the topic existing).
    """
    admin_cfg = {k: v for k, v in cfg.items() if k in KafkaAdminClient.DEFAULT_CONFIG}
    admin = connect(KafkaAdminClient, admin_cfg, role=f"admin client (topic {topic!r})")
    try:
        like = cfg["partitions_like"]
        names = [topic] + ([like] if like and like != topic else [])
        described = {t["name"]: t for t in admin.describe_topics(names)}
        mine = described.get(topic)
        if mine is not None and mine["error_code"] == 0:
            return
        partitions = cfg["topic_partitions"]
        if partitions is None:
            source = described.get(like) if like else None
            partitions = len(source["partitions"]) if source and source["error_code"] == 0 else -1
        replication = cfg["topic_replication_factor"]
        spec = {"num_partitions": int(partitions), "replication_factor": -1 if replication is None else int(replication)}
        try:
            admin.create_topics({topic: spec}, timeout_ms=cfg["topic_timeout_ms"])
        except Errors.TopicAlreadyExistsError:
            return
        admin.wait_for_topics([topic], timeout_ms=cfg["topic_timeout_ms"])
        log.info(
            "Kafka sink: created topic %r (%s partitions, replication factor %s)",
            topic,
            "broker default" if spec["num_partitions"] == -1 else spec["num_partitions"],
            "broker default" if spec["replication_factor"] == -1 else spec["replication_factor"],
        )
    except (Errors.TopicAuthorizationFailedError, Errors.ClusterAuthorizationFailedError) as exc:
        log.warning(
            "Kafka sink: may not create topic %r (%r); producing relies on it existing "
            "or on the broker's auto.create.topics.enable", topic, exc,
        )
    except Errors.InvalidReplicationFactorError as exc:
        raise ConfigError(
            f"KafkaSink: cannot create topic {topic!r}: {exc}; set topic_replication_factor"
        ) from exc
    finally:
        admin.close()
