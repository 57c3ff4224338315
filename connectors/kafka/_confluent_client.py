"""confluent-kafka (librdkafka) client configuration: key names, creating clients, creating topics.

The confluent-kafka counterpart of :mod:`connectors.kafka._client`, shared by
the confluent source, sink and transactional producer:

* :func:`library` -- the ``confluent_kafka`` module, or a
  :class:`~stream_nb.exceptions.ConfigError` naming the install command;
* :func:`resolve` -- a component's settings: its own ``DEFAULT_CONFIG`` (the
  same keys as the kafka-python component's, so the daemon's dict is
  client-neutral), the kafka-python names librdkafka has a counterpart for
  (:data:`TO_LIBRDKAFKA`), and any librdkafka property in its own dotted name
  (``security.protocol``, ``sasl.username``, ...), which librdkafka itself
  checks when the client is created (:func:`create`); other keys are rejected
  listing the accepted ones;
* :func:`client_config` -- the settings in librdkafka's names;
* :func:`create` -- a client, bad properties mapped to ``ConfigError``;
* :func:`wait_for_broker` -- start-up: no broker within ``bootstrap_timeout_ms``
  is :class:`~connectors.kafka.ConnectorUnavailable`;
* :func:`ensure_topic` -- the output topics created at start-up (``AdminClient``).
"""

from __future__ import annotations

import logging
import time

from stream_nb._checks import configure
from stream_nb.exceptions import ConfigError

from ._client import Fixed, coerce, servers
from ._errors import ConnectorUnavailable

__all__ = [
    "CONSUMER_ONLY", "INSTALL", "KAFKA_PYTHON_NAMES", "PRODUCER_ONLY", "TO_LIBRDKAFKA", "client_config", "create", "ensure_topic", "kafka_error",
    "library", "resolve", "wait_for_broker",
]

log = logging.getLogger("connectors.kafka")
#: librdkafka's own log lines go here: under kafka-python's "kafka" logger, so the daemon's
#: --log-level and its start-up muting treat both clients' logs alike.
LIBRDKAFKA_LOG = logging.getLogger("kafka.librdkafka")

#: The command that makes ``--kafka-client confluent`` available.
INSTALL = "pip install 'stream-nb[confluent]'"

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


def library():
    """The ``confluent_kafka`` module; a one-line :class:`ConfigError` with the install command if missing."""
    try:
        import confluent_kafka  # optional library (the [confluent] extra): loaded only when chosen
    except ImportError:
        raise ConfigError(f"--kafka-client confluent needs the confluent-kafka package: {INSTALL}") from None
    return confluent_kafka


def resolve(component: str, own: dict, fixed: dict[str, Fixed], config: dict, *, role: str) -> dict:
    """Validate ``config`` against ``own`` keys, the translated common keys and librdkafka's dotted names.

    The same rules as :func:`connectors.kafka._client.resolve`: unknown keys
    rejected listing the accepted ones, string values converted to the type
    of the key's default, ``fixed`` keys refused or limited. A dotted key is
    librdkafka's own and passes as given (librdkafka checks it); a dotted key
    that names a ``fixed`` setting is held to the same rule. ``role``
    (``"consumer"`` or ``"producer"``) leaves out the common keys only the
    other one takes.
    """
    common = set(TO_LIBRDKAFKA) - (PRODUCER_ONLY if role == "consumer" else CONSUMER_ONLY)
    native_fixed = {TO_LIBRDKAFKA[k]: (k, rule) for k, rule in fixed.items() if k in TO_LIBRDKAFKA}
    for key, value in config.items():
        name, rule = native_fixed.get(key, (key, fixed.get(key)))
        if rule is not None and rule.allowed is None:
            raise ConfigError(f"{component}: config key {key!r}={value!r} is not allowed: {rule.why}")
    never = {k for k, f in fixed.items() if f.allowed is None}
    dotted = {k for k in config if isinstance(k, str) and "." in k}
    merged = configure(own, config, f"{component} config key", passthrough=(common - never) | dotted,
                       listing="accepted keys")
    for key, value in config.items():
        name, rule = native_fixed.get(key, (key, fixed.get(key)))
        if key not in dotted:
            value = coerce(component, key, value, own.get(key))
        if rule is not None and rule.allowed is not None:
            check = value
            if isinstance(value, str) and key in dotted:
                check = {"true": True, "false": False}.get(value.lower(), -1 if value == "-1" else value)
            if not rule.allowed(check):
                raise ConfigError(f"{component}: config key {key!r}={value!r} is not allowed: {rule.why}")
        merged[key] = value
    topic = merged.get("topic")
    if not isinstance(topic, str) or not topic:
        raise ConfigError(f"{component}: config key 'topic' is required (a topic name), got {topic!r}")
    return merged


def client_config(cfg: dict, *, drop: frozenset = frozenset()) -> dict:
    """``cfg`` in librdkafka's property names: own keys dropped, common keys translated, dotted keys as given."""
    out: dict = {}
    for key, value in cfg.items():
        if key in _NOT_LIBRDKAFKA or key in drop or value is None:
            continue
        name = TO_LIBRDKAFKA.get(key, key)
        if key == "bootstrap_servers":
            value = servers(value)
        elif key == "ssl_check_hostname":
            value = "https" if value else "none"
        elif key == "acks" and value == "all":
            value = -1
        out[name] = value
    out["logger"] = LIBRDKAFKA_LOG
    return out


def kafka_error(exc: BaseException):
    """The ``KafkaError`` inside a confluent-kafka exception, or ``None``."""
    args = getattr(exc, "args", ())
    err = args[0] if args else None
    return err if hasattr(err, "code") else None


def create(factory, conf: dict, *, role: str):
    """A confluent-kafka client; a property librdkafka rejects is a :class:`ConfigError` naming it."""
    ck = library()
    try:
        return factory(conf)
    except (ck.KafkaException, ValueError, TypeError) as exc:
        err = kafka_error(exc)
        raise ConfigError(f"Kafka {role}: invalid configuration: {err.str() if err is not None else exc}") from None


def wait_for_broker(client, cfg: dict, *, role: str, topic: str | None = None):
    """Cluster metadata (of ``topic`` if given) within ``bootstrap_timeout_ms``, else :class:`ConnectorUnavailable`.

    librdkafka never fails at creation when no broker answers (it keeps
    reconnecting in the background), so start-up asks for metadata to learn
    whether one is there, like kafka-python's bootstrap does.
    """
    ck = library()
    timeout_ms = cfg["bootstrap_timeout_ms"]
    try:
        return client.list_topics(topic, timeout=timeout_ms / 1000) if topic else client.list_topics(
            timeout=timeout_ms / 1000)
    except ck.KafkaException as exc:
        err = kafka_error(exc)
        bootstrap = servers(cfg["bootstrap_servers"])
        raise ConnectorUnavailable(
            f"Kafka {role}: no broker reachable at {bootstrap} within {timeout_ms} ms "
            f"({err.name() if err is not None else type(exc).__name__}); check that Kafka is running and "
            f"that bootstrap_servers is right",
            bootstrap_servers=bootstrap,
        ) from None


def _partition_count(metadata, topic: str | None) -> int | None:
    found = metadata.topics.get(topic) if topic else None
    if found is None or found.error is not None:
        return None
    return len(found.partitions)


def ensure_topic(topic: str, cfg: dict) -> None:
    """Create ``topic`` unless it exists, as ``cfg`` (a sink config) says: see :func:`connectors.kafka._client.ensure_topic`."""
    ck = library()
    from confluent_kafka.admin import AdminClient, NewTopic  # optional library, loaded with library()

    conf = client_config(cfg)
    for producer_only in PRODUCER_ONLY:
        conf.pop(TO_LIBRDKAFKA[producer_only], None)
    admin = create(AdminClient, conf, role=f"admin client (topic {topic!r})")
    metadata = wait_for_broker(admin, cfg, role=f"admin client (topic {topic!r})")
    if _partition_count(metadata, topic) is not None:
        return
    partitions = cfg["topic_partitions"]
    if partitions is None:
        partitions = _partition_count(metadata, cfg["partitions_like"]) or -1
    replication = cfg["topic_replication_factor"]
    spec = NewTopic(topic, num_partitions=int(partitions), replication_factor=-1 if replication is None else int(replication))
    timeout_s = cfg["topic_timeout_ms"] / 1000
    try:
        admin.create_topics([spec], request_timeout=timeout_s)[topic].result(timeout=timeout_s)
    except ck.KafkaException as exc:
        err = kafka_error(exc)
        code = err.code() if err is not None else None
        if code == ck.KafkaError.TOPIC_ALREADY_EXISTS:
            return
        if code in (ck.KafkaError.TOPIC_AUTHORIZATION_FAILED, ck.KafkaError.CLUSTER_AUTHORIZATION_FAILED):
            log.warning("Kafka sink: may not create topic %r (%s); producing relies on it existing "
                        "or on the broker's auto.create.topics.enable", topic, err.str())
            return
        if code == ck.KafkaError.INVALID_REPLICATION_FACTOR:
            raise ConfigError(f"KafkaSink: cannot create topic {topic!r}: {err.str()}; set topic_replication_factor") from None
        raise
    deadline = time.monotonic() + timeout_s
    while _partition_count(admin.list_topics(topic, timeout=timeout_s), topic) is None:
        if time.monotonic() > deadline:
            raise ConnectorUnavailable(f"Kafka sink: topic {topic!r} was created but its metadata did not appear "
                                       f"within {cfg['topic_timeout_ms']} ms")
        time.sleep(0.05)
    log.info("Kafka sink: created topic %r (%s partitions, replication factor %s)", topic,
             "broker default" if partitions == -1 else partitions,
             "broker default" if replication is None else replication)
