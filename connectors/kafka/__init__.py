"""Kafka connector: a consumer-group :class:`KafkaSource` and idempotent-producer :class:`KafkaSink`.

Implements the engine's :class:`~stream_nb.engine.Source` and
:class:`~stream_nb.engine.Sink` with two client libraries, chosen by the
daemon dict's ``kafka_client`` (``stream-nb run --kafka-client``):
kafka-python (the default: pure Python) and confluent-kafka (librdkafka,
``pip install 'stream-nb[confluent]'``), with the same settings, guarantees
and capabilities. Where things are:

* ``_adapter`` -- the client adapter protocol: what the roles ask of a
  client library (poll, commit, produce, transactions, admin); one adapter
  module per library implements it and alone imports it: ``_kafka_python``
  and ``_confluent`` (confluent-kafka, loaded on first use);
* ``_client`` -- client configuration: settings checked and converted, the
  names of the settings both clients share;
* ``_source`` -- :class:`KafkaSource` (kafka-python) and
  :class:`ConfluentSource` (confluent-kafka); ``_sink`` -- :class:`KafkaSink`
  and :class:`ConfluentSink`: each role written once, the client chosen by
  its adapter; librdkafka's dotted property names are accepted besides the
  kafka-python names of the common settings, which are translated;
* ``_factories`` -- ``make_source``, ``make_sink``, ``make_dead_letter_sink``
  (this package is a :class:`~stream_nb.engine.ConnectorModule`), and
  ``CLIENTS``: one :class:`Client` per library (its source and sink classes
  and the keys they take): a Kafka feature written against a ``Client``
  (``client_of(config).source(...)``) works with both;
* ``_errors`` -- :class:`ConnectorError` and its subclasses;
* :mod:`connectors.kafka.transactional` -- exactly-once outputs: one
  transactional producer for outputs, dead letters and input offsets.

Delivery guarantee: at least once. The source never commits by itself
(``enable_auto_commit=False``); the engine flushes every sink and only then
calls :meth:`KafkaSource.commit` with the offsets after the last processed
record of each partition. After a crash the group resumes at the last commit,
so an event may be predicted twice but is never skipped. Every output is
produced with ``acks="all"`` by an idempotent producer, and
:meth:`KafkaSink.flush` raises :class:`DeliveryError` if any record failed.

Configuration follows kafka-python: each component has a ``DEFAULT_CONFIG``;
keys it does not know are rejected with :class:`~stream_nb.exceptions.ConfigError`
naming the key and listing the accepted ones (the one settings rule of
:func:`stream_nb._checks.configure`). Any other kafka-python key of the
underlying ``KafkaConsumer`` / ``KafkaProducer`` (``security_protocol``,
``sasl_mechanism``, ``sasl_plain_username``, ``ssl_cafile``, ...) passes
through. Values given as strings (``--kafka-config linger_ms=20``) are converted
to the type of the key's default (int, float, bool, ``none``).

Topics
------
* The **input topic** is never created by stream_nb: the consumer runs with
  ``allow_auto_create_topics=False`` so a typo in ``--input-topic`` does not
  silently create an empty topic. If it does not exist yet the consumer waits
  for it (a warning is logged).
* The **output and dead-letter topics** are created at start-up if missing
  (``create_topic=True``), through the admin API, with as many partitions as the
  input topic (so keys spread like the input) unless ``topic_partitions`` is
  set, and the broker's ``default.replication.factor`` unless
  ``topic_replication_factor`` is set. If the principal may not create topics,
  a warning is logged and producing relies on the topic existing (or on the
  broker's ``auto.create.topics.enable``). With ``create_topic=False`` nothing
  is created.

Errors
------
* :class:`ConnectorUnavailable` (a :class:`ConnectionError`): no broker
  answered at ``bootstrap_servers`` within ``bootstrap_timeout_ms`` at start-up.
  Retry with backoff.
* :class:`DeliveryError`: an output record could not be written. The sink stays
  failed; the engine must not commit and should restart from the last commit.
* :class:`~stream_nb.exceptions.CommitError`: the offset commit failed,
  typically because the group is rebalancing. Nothing is lost (records after
  the last commit are delivered again); the engine logs it and commits at its
  next checkpoint, after a poll has completed the rebalance.
* :class:`~stream_nb.exceptions.ConfigError`: an unknown key or a value that
  kafka-python rejects.

Snapshots (``--snapshot-dir``, see :mod:`stream_nb.engine.checkpoint._checkpoint`) use
three capabilities of :class:`KafkaSource` (declared in :mod:`stream_nb.engine.contract._protocols`): :meth:`~KafkaSource.set_resume_policy`
decides where each partition resumes when it is assigned (the partition is
paused until it is positioned, on the engine's thread);
:meth:`~KafkaSource.set_revocation_handler` flushes, snapshots and hands back
the offsets to commit before partitions are revoked (the commit is awaited on
kafka-python's IO thread, so heartbeats go on); :meth:`~KafkaSource.reposition`
positions every assigned partition again after the engine rewound.
:mod:`connectors.kafka.transactional` adds the exactly-once (transactional) outputs;
``_model_topic`` -- :class:`ModelTopic` (and :class:`ConfluentModelTopic`), the
compacted topic through which the members of a group share one model
(``--model-topic``); ``_model_channel`` -- :func:`open_model_topic` and
:func:`make_model_channel`, the one of the chosen client.
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
