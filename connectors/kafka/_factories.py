"""The daemon's factories: one daemon-level dict of settings in, a Kafka source or sink out.

The dict is what ``stream-nb run`` builds from its flags: ``bootstrap_servers``,
``input_topic``, ``output_topic``, ``dead_letter_topic``, ``group_id``,
``kafka_client`` and any key of :class:`~connectors.kafka.KafkaSource`,
:class:`~connectors.kafka.KafkaSink`, ``KafkaConsumer`` or ``KafkaProducer``
(:func:`split` routes each key).

``kafka_client`` picks the client library: ``"kafka-python"`` (the default)
or ``"confluent"`` (confluent-kafka, librdkafka). :data:`CLIENTS` maps each to
its :class:`Client`: the source, sink and key sets of that library, so a
feature written against a ``Client`` works with both. The common settings may
be given in either library's name (``security_protocol`` or
``security.protocol``): each client gets them in its own.
"""

from __future__ import annotations

import typing

from stream_nb._checks import check_choice, configure
from stream_nb.exceptions import ConfigError

from ._client import CONSUMER_ONLY, KAFKA_PYTHON_NAMES, PRODUCER_ONLY
from ._confluent import library
from ._sink import ConfluentSink, KafkaSink
from ._source import ConfluentSource, KafkaSource

__all__ = ["CLIENTS", "DAEMON_KEYS", "Client", "client_of", "make_dead_letter_sink", "make_sink", "make_source",
           "split"]


#: Keys of the daemon-level dict given to the ``make_*`` factories, besides the
#: keys of the chosen client's source and sink.
DAEMON_KEYS = frozenset({"input_topic", "output_topic", "dead_letter_topic", "kafka_client"})


class Client(typing.NamedTuple):
    """One Kafka client library behind the connector interfaces: its source and sink, and the keys each takes."""

    name: str
    source: type
    sink: type
    source_keys: frozenset  # besides librdkafka's dotted names (confluent)
    sink_keys: frozenset
    dotted: bool  # takes librdkafka's dotted property names as given


def _client(source: type, sink: type) -> Client:
    """The :class:`Client` of a source and sink class (of one adapter): the keys each takes."""
    adapter = source.ADAPTER
    return Client(adapter.name, source, sink,
                  frozenset((set(source.DEFAULT_CONFIG) | set(adapter.consumer_keys)) - {"topic"}),
                  frozenset((set(sink.DEFAULT_CONFIG) | set(adapter.producer_defaults) | set(adapter.producer_keys))
                            - {"topic", "partitions_like"}),
                  adapter.dotted)


CLIENTS: dict[str, Client] = {client.name: client for client in (_client(KafkaSource, KafkaSink),
                                                                 _client(ConfluentSource, ConfluentSink))}


def client_of(config: dict) -> Client:
    """The :class:`Client` ``config["kafka_client"]`` names (default kafka-python); confluent checked installed."""
    name = config.get("kafka_client") or "kafka-python"
    check_choice("kafka_client", name, tuple(CLIENTS))
    if name == "confluent":
        library()  # the one-line error with the install command, before any other check
    return CLIENTS[name]


def split(config: dict) -> tuple[dict, dict]:
    """Route a daemon-level dict to source keys and sink keys; ``None`` values mean "default".

    A common setting given in the other library's name is renamed for the
    chosen client (kafka-python gets ``security.protocol`` as ``security_protocol``).
    """
    client = client_of(config)
    config = {k: v for k, v in config.items() if v is not None and k != "kafka_client"}
    if not client.dotted:
        config = {KAFKA_PYTHON_NAMES.get(k, k): v for k, v in config.items()}
    dotted = {k for k in config if client.dotted and isinstance(k, str) and "." in k}
    configure({}, config, "Kafka config key" if not client.dotted else "Kafka config key (confluent client)",
              passthrough=DAEMON_KEYS | client.source_keys | client.sink_keys | dotted, listing="accepted keys")
    if not config.get("input_topic"):
        raise ConfigError("Kafka: 'input_topic' is required")
    source = {k: v for k, v in config.items()
              if k in client.source_keys or (k in dotted and KAFKA_PYTHON_NAMES.get(k) not in PRODUCER_ONLY)}
    sink = {k: v for k, v in config.items()
            if k in client.sink_keys or (k in dotted and KAFKA_PYTHON_NAMES.get(k) not in CONSUMER_ONLY)}
    return source, sink


def make_source(config: dict):
    """The daemon's input: a :class:`KafkaSource` (or ``ConfluentSource``) on ``config["input_topic"]``.

    ``config`` is the daemon-level dict: ``bootstrap_servers``, ``input_topic``,
    ``output_topic``, ``dead_letter_topic``, ``group_id``, ``kafka_client`` and
    any key of the client's source or sink; keys the consumer does not take
    are ignored here.
    """
    source, _ = split(config)
    return client_of(config).source(topic=config["input_topic"], **source)


def make_sink(config: dict):
    """The daemon's prediction output: a :class:`KafkaSink` (or ``ConfluentSink``) on ``config["output_topic"]``."""
    _, sink = split(config)
    topic = config.get("output_topic")
    if not topic:
        raise ConfigError("Kafka: 'output_topic' is required")
    sink.setdefault("client_id", "stream-nb-output")
    return client_of(config).sink(topic=topic, partitions_like=config["input_topic"], **sink)


def make_dead_letter_sink(config: dict):
    """The daemon's dead-letter output: ``config["dead_letter_topic"]``, default ``<input_topic>.dlq``."""
    _, sink = split(config)
    topic = config.get("dead_letter_topic") or f"{config['input_topic']}.dlq"
    sink.setdefault("client_id", "stream-nb-dead-letter")
    return client_of(config).sink(topic=topic, partitions_like=config["input_topic"], **sink)
