"""Connectors: the Source and Sink implementations that feed the engine.

Each connector module depends on :mod:`stream_nb`, never the reverse, and
exposes the same three factories, each taking one dict of settings:
``make_source(config)``, ``make_sink(config)`` and ``make_dead_letter_sink(config)``.

* :mod:`connectors.jsonl` -- JSON lines over stdin/stdout or files (no broker).
* :mod:`connectors.kafka` -- Kafka topics through kafka-python.

Submodules are imported on demand, so JSON-lines mode never imports kafka-python.
"""

__all__ = ["jsonl", "kafka"]
