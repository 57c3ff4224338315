"""The feedback topic (``--feedback-topic``): labels that come later, read by the input's own consumer.

The input consumer subscribes to the input topic *and* the feedback topic, in
one consumer group, with the range assignor. Two topics with the same number
of partitions are then co-partitioned: partition ``p`` of both goes to the same
member, so the labels of the events keyed into input partition ``p`` (keyed
like the events, hence in feedback partition ``p``) reach the member holding
those events, and move with them on a rebalance. Being one consumer, the
feedback offsets are committed with the input offsets -- under the same group,
after the snapshot that covers them, and with ``--exactly-once`` in the same
transaction (one ``send_offsets_to_transaction`` for both topics).

The source hands the engine the input's records and keeps the feedback
records for :class:`FeedbackTap`, the engine's feedback source (the join reads
it after every poll of the input). :func:`check_copartitioned` refuses at
start a feedback topic with another partition count than the input.
"""

from __future__ import annotations

from stream_nb.engine import Record
from stream_nb.exceptions import ConfigError

__all__ = ["FeedbackTap", "check_copartitioned"]


def check_copartitioned(input_topic: str, input_count: int | None, feedback_topic: str,
                        feedback_count: int | None) -> None:
    """Refuse a feedback topic that is missing or not co-partitioned with the input (ConfigError naming both).

    >>> check_copartitioned("events", 3, "labels", 3)
    >>> check_copartitioned("events", 3, "labels", 2)
    Traceback (most recent call last):
    ...
    stream_nb.exceptions.ConfigError: --feedback-topic labels has 2 partitions and --input-topic events has 3: ...
    """
    if feedback_topic == input_topic:
        raise ConfigError(f"--feedback-topic {feedback_topic} is the input topic: labels need a topic of their own")
    if input_count is None:
        raise ConfigError(f"--input-topic {input_topic} does not exist: with --feedback-topic the daemon checks at "
                          f"start that both topics have the same partition count, so create it first")
    if feedback_count is None:
        raise ConfigError(f"--feedback-topic {feedback_topic} does not exist: create it with {input_count} "
                          f"partition(s), like --input-topic {input_topic}, and key each label like its event")
    if feedback_count != input_count:
        raise ConfigError(
            f"--feedback-topic {feedback_topic} has {feedback_count} partitions and --input-topic {input_topic} has "
            f"{input_count}: a label must land in the partition number of its event (same key, same partition "
            f"count), so give the feedback topic {input_count} partition(s)")


class FeedbackTap:
    """The feedback records a two-topic Kafka source set aside: a :class:`~stream_nb.engine.Source` for the join.

    Its positions are the source's own (``"<feedback topic>-<p>"`` partitions
    of the same consumer): the engine records them with the input's, they are
    snapshotted, committed and resumed with them, so :meth:`seek` and
    :meth:`commit` have nothing to do (``shares_positions``).
    """

    #: The join writes this source's positions into the engine's (see :class:`~stream_nb.engine.Joiner`).
    shares_positions = True
    exhausted = False

    def __init__(self, topic: str, input_topic: str):
        self.topic = topic
        self.input_topic = input_topic
        self._records: list[Record] = []

    def partner(self, partition: str) -> str | None:
        """The feedback partition of input ``partition`` (same number); None for another topic's.

        >>> FeedbackTap("labels", "events").partner("events-2"), FeedbackTap("labels", "events").partner("labels-2")
        ('labels-2', None)
        """
        topic, _, number = partition.rpartition("-")
        return f"{self.topic}-{number}" if topic == self.input_topic and number.isdigit() else None

    def input_of(self, partition: str) -> str | None:
        """The input partition whose feedback partition is ``partition`` (same number); None for another topic's.

        >>> FeedbackTap("labels", "events").input_of("labels-2"), FeedbackTap("labels", "events").input_of("events-2")
        ('events-2', None)
        """
        topic, _, number = partition.rpartition("-")
        return f"{self.input_topic}-{number}" if topic == self.topic and number.isdigit() else None

    def put(self, records: list[Record]) -> None:
        """Called by the source's poll: feedback records, in the order they came."""
        self._records.extend(records)

    def poll(self, max_records: int, timeout: float) -> list[Record]:
        """Every feedback record set aside since the last call (the source's poll already bounded them)."""
        out, self._records = self._records, []
        return out

    def drop(self, partitions: set[str] | None = None) -> None:
        """Forget the records set aside (of ``partitions`` only, when given): they are read again."""
        self._records = [] if partitions is None else [r for r in self._records if r.partition not in partitions]

    def commit(self, positions: dict[str, int]) -> None:
        """Nothing: the source commits these positions with the input's."""

    def seek(self, positions: dict[str, int]) -> None:
        """Nothing: the source positions these partitions with the input's (its resume policy)."""

    def close(self) -> None:
        """Nothing: the source's consumer is closed with the source."""
