"""The model topic of the chosen client: :func:`open_model_topic` and the daemon's :func:`make_model_channel`.

kafka-python's :class:`~connectors.kafka.ModelTopic` or confluent-kafka's
:class:`~connectors.kafka.ConfluentModelTopic` (both ``_model_topic``), by the
dict's ``kafka_client``.
"""

from __future__ import annotations

from ._factories import client_of
from ._model_topic import DEFAULT_RECORD_BYTES, ConfluentModelTopic, ModelTopic

__all__ = ["make_model_channel", "open_model_topic"]


def open_model_topic(topic: str, config: dict, *, transaction=None, max_record_bytes: int = DEFAULT_RECORD_BYTES,
                     writer: bool = True):
    """A ``ModelTopic`` (or ``ConfluentModelTopic`` when ``config["kafka_client"]`` is ``"confluent"``).

    ``writer=False`` only reads (``stream-nb model export``): no producer, no
    topic created, ``read_committed``.
    """
    kind = ConfluentModelTopic if client_of(config).name == "confluent" else ModelTopic
    return kind(topic, config, transaction=transaction, max_record_bytes=max_record_bytes, writer=writer)


def make_model_channel(config: dict, transaction=None):
    """The daemon's model topic: ``config["model_topic"]`` with the daemon-level Kafka dict ``config``."""
    config = dict(config)
    topic = config.pop("model_topic", None)
    record_bytes = config.pop("model_record_bytes", None) or DEFAULT_RECORD_BYTES
    config.pop("transactional_id", None)
    return open_model_topic(topic, config, transaction=transaction, max_record_bytes=record_bytes)
