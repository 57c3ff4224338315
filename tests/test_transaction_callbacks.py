"""kafka-python exactly-once outputs: a replaced producer's late delivery failures stay its own.

When aborting fails (a broker restart), :class:`connectors.kafka.transactional.Transaction`
replaces its producer. The old one still fails the records it had queued
(``TransactionAbortedError`` once the new one fences it); counted against the
shared transaction, those failures failed the successor's first send and stopped
the daemon (seen in ``test_kafka_exactly_once_through_a_broker_restart``).
Each adapter producer counts its own records, so the old one's failures stay
with it. No broker here: the kafka-python producers are stand-ins returning
kafka-python futures, behind the kafka-python adapter's producer.
"""

from __future__ import annotations

import kafka.errors as Errors
import pytest
from kafka.future import Future

from connectors.kafka import DeliveryError, _kafka_python
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
    out.what, out.failed, out.first_error, out._sent, out._acked = "Kafka transactional producer 'tx'", 0, None, 0, 0
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
