"""The errors of the Kafka connector (besides :class:`~stream_nb.exceptions.CommitError`)."""

from __future__ import annotations

from stream_nb.exceptions import StreamNBError

from ._client import servers

__all__ = ["FENCED", "PRODUCER_FENCED", "ConnectorError", "ConnectorUnavailable", "DeliveryError", "no_broker"]

#: The Kafka protocol's error codes (each adapter's ``code``) by which a transactional call says that another
#: producer holds the transactional id, or that it may not be used: INVALID_PRODUCER_EPOCH,
#: TRANSACTIONAL_ID_AUTHORIZATION_FAILED, PRODUCER_FENCED (on a transactional request kafka-python and librdkafka
#: both take the first for the last).
INVALID_PRODUCER_EPOCH, TRANSACTIONAL_ID_AUTHORIZATION_FAILED, PRODUCER_FENCED = 47, 53, 90
FENCED = frozenset({INVALID_PRODUCER_EPOCH, TRANSACTIONAL_ID_AUTHORIZATION_FAILED, PRODUCER_FENCED})


class ConnectorError(StreamNBError):
    """A connector could not talk to its external system."""


class ConnectorUnavailable(ConnectorError, ConnectionError):
    """No Kafka broker answered at start-up. Retry later (with backoff).

    Attributes
    ----------
    bootstrap_servers
        The address that was tried.
    """

    def __init__(self, message: str, *, bootstrap_servers=None):
        super().__init__(message)
        self.bootstrap_servers = bootstrap_servers


class DeliveryError(ConnectorError, RuntimeError):
    """One or more records handed to a :class:`KafkaSink` were not written.

    Attributes
    ----------
    topic
        The sink's topic.
    failed
        How many records failed so far.
    """

    def __init__(self, message: str, *, topic: str, failed: int):
        super().__init__(message)
        self.topic = topic
        self.failed = failed


def no_broker(role: str, bootstrap_servers, waited_ms, why: str) -> ConnectorUnavailable:
    """The :class:`ConnectorUnavailable` of a client that reached no broker at ``bootstrap_servers`` (the setting: a
    string or a list) within ``waited_ms`` (``why``: the client's error), as either adapter raises it at start-up."""
    bootstrap = servers(bootstrap_servers)
    return ConnectorUnavailable(f"Kafka {role}: no broker reachable at {bootstrap} within {waited_ms} ms ({why}); "
                                f"check that Kafka is running and that bootstrap_servers is right",
                                bootstrap_servers=bootstrap)
