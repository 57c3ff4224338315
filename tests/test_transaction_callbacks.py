"""kafka-python exactly-once outputs: a replaced producer's late delivery failures stay its own.

When aborting fails (a broker restart), :class:`connectors.kafka.transactional.Transaction`
replaces its producer. The old one still fails the records it had queued
(``TransactionAbortedError`` once the new one fences it); counted against the
shared transaction, those failures failed the successor's first send and stopped
the daemon (seen in ``test_kafka_exactly_once_through_a_broker_restart``).
No broker here: the producers are stand-ins returning kafka-python futures.
"""

from __future__ import annotations

import threading

import kafka.errors as Errors
import pytest
from kafka.future import Future

from connectors.kafka import DeliveryError
from connectors.kafka.transactional import Transaction


class StandInProducer:
    def __init__(self):
        self.futures: list[Future] = []

    def send(self, topic, value, key):
        future = Future()
        self.futures.append(future)
        return future


def a_transaction(producer) -> Transaction:
    txn = object.__new__(Transaction)  # the state send() and the callbacks use, without a broker
    txn.transactional_id = "tx"
    txn._producer = producer
    txn._in_transaction = True
    txn._lock = threading.Lock()
    txn._sent = txn._acked = txn._failed = 0
    txn._first_error = None
    return txn


def test_failures_of_a_replaced_producer_do_not_fail_the_new_transaction():
    old, new = StandInProducer(), StandInProducer()
    txn = a_transaction(old)
    txn.send("out", b"queued while the broker was down", b"k")
    txn._producer = new  # what abort() does when it cannot abort in place
    txn._sent = txn._acked = txn._failed = 0
    old.futures[0].failure(Errors.TransactionAbortedError())
    txn.send("out", b"first of the new transaction", b"k")  # raised DeliveryError before the fix
    new.futures[0].success("metadata")
    assert (txn._sent, txn._acked, txn._failed, txn.in_flight) == (1, 1, 0, 0)


def test_failures_of_the_current_producer_still_fail_the_transaction():
    producer = StandInProducer()
    txn = a_transaction(producer)
    txn.send("out", b"a", b"k")
    producer.futures[0].failure(Errors.KafkaTimeoutError())
    assert txn._failed == 1
    with pytest.raises(DeliveryError, match="1 record"):
        txn.send("out", b"b", b"k")
