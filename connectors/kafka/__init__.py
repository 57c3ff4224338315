"""Kafka connector: a consumer-group :class:`KafkaSource` and an idempotent-producer :class:`KafkaSink`.

Each role is written once over a thin adapter of the chosen client library
(``kafka_client``: kafka-python, the default, or confluent-kafka). Delivery is
at least once: the source never commits by itself, and the engine commits the
offsets only after every sink is flushed. :mod:`connectors.kafka.transactional`
adds exactly-once outputs, and :class:`ModelTopic` the model shared across a
consumer group. See the docs' *Kafka mode* and *Kafka clients* pages.

>>> from connectors.kafka import CLIENTS, client_of
>>> client_of({"kafka_client": "kafka-python"}).source is KafkaSource
True
>>> sorted(CLIENTS)
['confluent', 'kafka-python']
"""

from __future__ import annotations

from stream_nb.exceptions import CommitError

from ._errors import ConnectorError, ConnectorUnavailable, DeliveryError
from ._factories import CLIENTS, DAEMON_KEYS, Client, client_of, make_dead_letter_sink, make_sink, make_source
from ._model_channel import make_model_channel, open_model_topic
from ._model_topic import ConfluentModelTopic, ModelTopic
from ._sink import ConfluentSink, KafkaSink
from ._source import ConfluentSource, KafkaSource

__all__ = [
    "KafkaSource",
    "KafkaSink",
    "ConfluentSource",
    "ConfluentSink",
    "CLIENTS",
    "Client",
    "client_of",
    "make_source",
    "make_sink",
    "make_dead_letter_sink",
    "make_model_channel",
    "open_model_topic",
    "ModelTopic",
    "ConfluentModelTopic",
    "ConnectorError",
    "ConnectorUnavailable",
    "DeliveryError",
    "CommitError",
    "DAEMON_KEYS",
]
