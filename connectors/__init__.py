"""Connectors: the Source and Sink implementations that feed the engine.

Each connector module depends on :mod:`stream_nb`, never the reverse, and
exposes the same three factories, each taking one dict of settings:
``make_source(config)``, ``make_sink(config)`` and ``make_dead_letter_sink(config)``
(a :class:`~stream_nb.engine.ConnectorModule`), or, when the three must share
one client, ``make_connectors(config)`` (a :class:`~stream_nb.engine.JointConnectorModule`).
What a source or sink offers beyond the required methods is declared by the
capability protocols of :mod:`stream_nb.engine.contract._protocols`.

* :mod:`connectors.jsonl` -- JSON lines over stdin/stdout or files (no broker).
* :mod:`connectors.kafka` -- Kafka topics through kafka-python: source, sink,
  client configuration; :mod:`connectors.kafka.transactional` -- exactly-once
  outputs (one transaction for outputs, dead letters and input offsets).

Submodules are imported on demand, so JSON-lines mode never imports kafka-python.
"""

__all__ = ["jsonl", "kafka"]
