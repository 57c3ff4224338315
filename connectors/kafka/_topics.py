"""Creating the connector's topics at start-up, the same with every client (through its :class:`~._adapter.Admin`).

* the **output and dead-letter topics** (``create_topic=True``): as many
  partitions as ``topic_partitions`` says, else as the input topic
  (``partitions_like``) has, else the broker's default; the replication
  factor ``topic_replication_factor`` or the broker's default. A principal
  that may not create topics gets a warning: producing then relies on the
  topic existing (or on the broker's ``auto.create.topics.enable``);
* the **model topic** (``compacted=True``): one partition,
  ``cleanup.policy=compact``.
"""

from __future__ import annotations

import logging
import time

from stream_nb.exceptions import ConfigError

from ._adapter import Adapter
from ._errors import ConnectorUnavailable

__all__ = ["ensure_topic"]

log = logging.getLogger("connectors.kafka")

# The Kafka protocol's error codes of a refused topic creation (the same in every client: Adapter.code).
TOPIC_AUTHORIZATION_FAILED, CLUSTER_AUTHORIZATION_FAILED = 29, 31
TOPIC_ALREADY_EXISTS, INVALID_REPLICATION_FACTOR = 36, 38


def ensure_topic(client: Adapter, topic: str, cfg: dict, *, role: str, compacted: bool = False) -> int | None:
    """Create ``topic`` unless it exists, as ``cfg`` (a sink's settings) says; its partition count (None: unknown).

    Through an admin client of ``client`` (``role`` names it), closed before returning.
    """
    admin = client.admin(cfg, role=role)
    like = None if compacted else cfg.get("partitions_like")
    timeout_s = cfg.get("topic_timeout_ms", 30_000) / 1000
    try:
        counts = admin.partition_counts([topic] + ([like] if like and like != topic else []))
        if counts.get(topic):
            return counts[topic]
        partitions = 1 if compacted else cfg.get("topic_partitions") or counts.get(like) or -1
        replication = cfg.get("topic_replication_factor")
        try:
            admin.create_topic(topic, int(partitions), -1 if replication is None else int(replication),
                               {"cleanup.policy": "compact"} if compacted else {}, timeout_s)
            created = True
        except client.errors as exc:
            code = client.code(exc)
            if code in (TOPIC_AUTHORIZATION_FAILED, CLUSTER_AUTHORIZATION_FAILED):
                log.warning("Kafka sink: may not create topic %r (%s); producing relies on it existing "
                            "or on the broker's auto.create.topics.enable", topic, client.describe(exc))
                return None
            if code == INVALID_REPLICATION_FACTOR:
                raise ConfigError(f"KafkaSink: cannot create topic {topic!r}: {client.describe(exc)}; set "
                                  f"topic_replication_factor") from None
            if code != TOPIC_ALREADY_EXISTS:
                raise
            created = False
        if created:
            log.info("Kafka: created topic %r (%s partitions, replication factor %s%s)", topic,
                     "broker default" if partitions == -1 else partitions,
                     "broker default" if replication is None else replication, ", compacted" * compacted)
        deadline = time.monotonic() + timeout_s
        while not (count := admin.partition_counts([topic]).get(topic)):
            if time.monotonic() > deadline:
                raise ConnectorUnavailable(f"Kafka: topic {topic!r} was created but its metadata did not appear "
                                           f"within {timeout_s * 1000:.0f} ms")
            time.sleep(0.05)
        return count
    finally:
        admin.close()
