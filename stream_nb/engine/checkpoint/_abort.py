"""Aborting a transaction while the broker is away: retry until it answers (or the daemon stops).

A transaction that cannot be aborted in place is replaced by the connector
with a newly registered producer (whose registration aborts the old one on the
broker). While the broker is down or its transaction coordinator is still
loading, that registration fails with a :class:`ConnectionError` (the
connectors' ``ConnectorUnavailable``): the same "retry later" the daemon
answers with a doubling wait at start-up. Giving up there would turn a broker
restart that outlasts the client's own bounds (``max_block_ms``,
``bootstrap_timeout_ms``) into a daemon exit.
"""

from __future__ import annotations

import logging
import time
import typing

__all__ = ["abort_while_unreachable"]

log = logging.getLogger("stream_nb.snapshot")

#: First and longest wait between attempts, in seconds.
FIRST_WAIT = 0.5
LONGEST_WAIT = 10.0


def abort_while_unreachable(transaction: typing.Any, stopping: typing.Callable[[], bool],
                            sleep: typing.Callable[[float], None] = time.sleep) -> None:
    """``transaction.abort()``, retried with a doubling wait while it raises :class:`ConnectionError`.

    Any other error is raised at once (a fenced producer must stop the daemon);
    so is the :class:`ConnectionError` once ``stopping()`` is true.
    """
    wait = FIRST_WAIT
    attempt = 0
    while True:
        attempt += 1
        try:
            transaction.abort()
            if attempt > 1:
                log.info("transaction aborted after %d attempts: the broker answers again", attempt)
            return
        except ConnectionError as exc:
            if stopping():
                raise
            log.warning("aborting the transaction: %s; retrying in %.1f s", exc, wait)
        sleep(wait)
        wait = min(wait * 2, LONGEST_WAIT)
