"""``abort_while_unreachable``: a transaction abort rides out an unreachable broker, nothing else.

The daemon-level check is ``test_kafka_exactly_once_through_a_broker_restart``
(a broker down for longer than the clients' own bounds); this pins the rule.
"""

from __future__ import annotations

import pytest

from stream_nb.engine.checkpoint._abort import FIRST_WAIT, LONGEST_WAIT, abort_while_unreachable


class FlakyTransaction:
    def __init__(self, errors: list[BaseException]):
        self.errors = list(errors)
        self.calls = 0

    def abort(self) -> None:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)


def test_unreachable_is_retried_with_a_doubling_capped_wait_until_the_abort_succeeds():
    waits: list[float] = []
    txn = FlakyTransaction([ConnectionError("down")] * 7)
    abort_while_unreachable(txn, lambda: False, sleep=waits.append)
    assert txn.calls == 8
    expected = [min(FIRST_WAIT * 2 ** i, LONGEST_WAIT) for i in range(7)]
    assert waits == expected
    assert waits[-1] == LONGEST_WAIT


def test_any_other_error_is_raised_at_once():
    txn = FlakyTransaction([ConnectionError("down"), RuntimeError("fenced")])
    waits: list[float] = []
    with pytest.raises(RuntimeError, match="fenced"):
        abort_while_unreachable(txn, lambda: False, sleep=waits.append)
    assert txn.calls == 2 and waits == [FIRST_WAIT]


def test_a_stopping_daemon_stops_retrying():
    txn = FlakyTransaction([ConnectionError("down")] * 3)
    stopping = iter([False, True])
    with pytest.raises(ConnectionError):
        abort_while_unreachable(txn, lambda: next(stopping), sleep=lambda s: None)
    assert txn.calls == 2
