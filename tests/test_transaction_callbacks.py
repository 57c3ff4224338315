"""kafka-python exactly-once outputs: a replaced producer's late delivery failures stay its own.

When aborting fails (a broker restart), :class:`connectors.kafka.transactional.Transaction`
replaces its producer. The old one still fails the records it had queued
(``TransactionAbortedError`` once the new one fences it); counted against the
shared transaction, those failures failed the successor's first send and stopped
the daemon (seen in ``test_kafka_exactly_once_through_a_broker_restart``).
Each adapter producer counts its own records, so the old one's failures stay
with it. No broker here: the kafka-python producers are stand-ins returning
kafka-python futures, behind the kafka-python adapter's producer. A producer
whose ``send_offsets`` never returns is replaced rather than aborted, whatever
its client.
"""

from __future__ import annotations

import threading

import kafka.errors as Errors
import pytest
from kafka.future import Future

from connectors.kafka import DeliveryError, _kafka_python, transactional
from connectors.kafka.transactional import Transaction


class StandInProducer:
    def __init__(self):
        self.futures: list[Future] = []

    def send(self, topic, value, key, partition=None):
        future = Future()
        self.futures.append(future)
        return future


def an_adapter_producer(producer: StandInProducer):
    """The kafka-python adapter's producer around a stand-in (its counting state, without a broker)."""
    out = object.__new__(_kafka_python._Producer)
    out.what, out.failed, out.first_error, out.sent, out.acked = "Kafka transactional producer 'tx'", 0, None, 0, 0
    out._p, out._send, out._murmur = producer, producer.send, False
    return out


def a_transaction(out) -> Transaction:
    txn = object.__new__(Transaction)  # the state send() uses, without a broker
    txn.transactional_id, txn.client, txn._out, txn._in_transaction = "tx", _kafka_python.KafkaPython(), out, True
    return txn


def test_failures_of_a_replaced_producer_do_not_fail_the_new_transaction():
    old, new = StandInProducer(), StandInProducer()
    txn = a_transaction(an_adapter_producer(old))
    txn.send("out", b"queued while the broker was down", b"k")
    replaced, txn._out = txn._out, an_adapter_producer(new)  # what abort() does when it cannot abort in place
    old.futures[0].failure(Errors.TransactionAbortedError())
    txn.send("out", b"first of the new transaction", b"k")  # raised DeliveryError when the failures were shared
    new.futures[0].success("metadata")
    assert (txn._out.failed, txn.in_flight, replaced.failed) == (0, 0, 1)


def test_failures_of_the_current_producer_still_fail_the_transaction():
    producer = StandInProducer()
    txn = a_transaction(an_adapter_producer(producer))
    txn.send("out", b"a", b"k")
    producer.futures[0].failure(Errors.KafkaTimeoutError())
    assert txn._out.failed == 1
    with pytest.raises(DeliveryError, match="1 record"):
        txn.send("out", b"b", b"k")


class Hanging:
    """A stand-in adapter producer whose ``send_offsets`` never returns until ``release`` is set."""

    errors = (Errors.KafkaError,)

    def __init__(self, release):
        self.release, self.calls, self.failed = release, [], 0

    def begin(self):
        self.calls.append("begin")

    def send_offsets(self, offsets, metadata, group):
        self.calls.append("send_offsets")
        self.release.wait()

    def abort_transaction(self):
        self.calls.append("abort_transaction")

    def close(self, timeout):
        self.calls.append(f"close({timeout})")

    def forget(self):
        self.calls.append("forget")


class Offsets:
    """A stand-in source: partition in-0 is assigned."""

    def transaction_offsets(self, positions, metadata=""):
        return {("in", 0): positions["in-0"]}

    def group_metadata(self):
        return "group"


def test_adding_offsets_that_never_returns_replaces_the_producer_instead_of_aborting_it(monkeypatch):
    monkeypatch.setattr(transactional, "GRACE_S", 0.05)
    release = threading.Event()
    stuck, fresh = Hanging(release), Hanging(release)
    txn = a_transaction(stuck)
    txn.source, txn._block_s, txn._what, txn._stuck, txn._closed, txn.aborts = Offsets(), 0.05, "producer", False, False, 0
    txn._new_producer = lambda: fresh  # what registering the transactional id again gives
    try:
        with pytest.raises(TimeoutError, match="did not return within max_block_ms"):
            txn.commit({"in-0": 5})
        txn.abort()  # an abort call would conflict with the one still hanging: the producer is replaced
        assert stuck.calls == ["send_offsets", "close(0)"]
        assert txn._out is fresh and not txn._stuck and not txn._in_transaction and fresh.calls == ["forget"]
    finally:
        release.set()
