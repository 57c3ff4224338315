"""The daemon's factories: one daemon-level dict of settings in, a Kafka source or sink out.

The dict is what ``stream-nb run`` builds from its flags: ``bootstrap_servers``,
``input_topic``, ``output_topic``, ``dead_letter_topic``, ``group_id`` and any
key of :class:`~connectors.kafka.KafkaSource`, :class:`~connectors.kafka.KafkaSink`,
``KafkaConsumer`` or ``KafkaProducer`` (:func:`split` routes each key).
"""

from __future__ import annotations

from kafka import KafkaConsumer, KafkaProducer

from stream_nb._checks import configure
from stream_nb.exceptions import ConfigError

from ._sink import KafkaSink
from ._source import KafkaSource

__all__ = ["DAEMON_KEYS", "make_dead_letter_sink", "make_sink", "make_source", "split"]


#: Keys of the daemon-level dict given to the ``make_*`` factories, besides the
#: keys of :class:`KafkaSource` / :class:`KafkaSink` and kafka-python's
#: consumer / producer keys.
DAEMON_KEYS = frozenset({"input_topic", "output_topic", "dead_letter_topic"})


def split(config: dict) -> tuple[dict, dict]:
    """Route a daemon-level dict to source keys and sink keys; ``None`` values mean "default"."""
    config = {k: v for k, v in config.items() if v is not None}
    source_keys = (set(KafkaSource.DEFAULT_CONFIG) | set(KafkaConsumer.DEFAULT_CONFIG)) - {"topic"}
    sink_keys = (set(KafkaSink.DEFAULT_CONFIG) | set(KafkaProducer.DEFAULT_CONFIG)) - {"topic", "partitions_like"}
    configure({}, config, "Kafka config key", passthrough=DAEMON_KEYS | source_keys | sink_keys,
              listing="accepted keys")
    if not config.get("input_topic"):
        raise ConfigError("Kafka: 'input_topic' is required")
    source = {k: v for k, v in config.items() if k in source_keys}
    sink = {k: v for k, v in config.items() if k in sink_keys}
    return source, sink


def make_source(config: dict) -> KafkaSource:
    """The daemon's input: a :class:`KafkaSource` on ``config["input_topic"]``.

    ``config`` is the daemon-level dict: ``bootstrap_servers``, ``input_topic``,
    ``output_topic``, ``dead_letter_topic``, ``group_id`` and any key of
    :class:`KafkaSource`, :class:`KafkaSink`, ``KafkaConsumer`` or
    ``KafkaProducer``; keys the consumer does not take are ignored here.
    """
    source, _ = split(config)
    return KafkaSource(topic=config["input_topic"], **source)


def make_sink(config: dict) -> KafkaSink:
    """The daemon's prediction output: a :class:`KafkaSink` on ``config["output_topic"]``."""
    _, sink = split(config)
    topic = config.get("output_topic")
    if not topic:
        raise ConfigError("Kafka: 'output_topic' is required")
    sink.setdefault("client_id", "stream-nb-output")
    return KafkaSink(topic=topic, partitions_like=config["input_topic"], **sink)


def make_dead_letter_sink(config: dict) -> KafkaSink:
    """The daemon's dead-letter output: ``config["dead_letter_topic"]``, default ``<input_topic>.dlq``."""
    _, sink = split(config)
    topic = config.get("dead_letter_topic") or f"{config['input_topic']}.dlq"
    sink.setdefault("client_id", "stream-nb-dead-letter")
    return KafkaSink(topic=topic, partitions_like=config["input_topic"], **sink)
