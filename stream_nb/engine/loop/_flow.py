"""Back-pressure: stop reading input while the outputs wait for their acknowledgements.

Before every poll the engine asks :class:`FlowControl`, which adds up the
sinks' ``in_flight`` (a :class:`~stream_nb.engine.SharesQueue` shared queue
counted once). Above ``limit`` it holds the input: first it waits, reading
nothing, for the sinks to bring it down to ``limit // 2``, for at most
``wait_s`` seconds; a backlog that lasts longer pauses a
:class:`~stream_nb.engine.Pausable` source (a Kafka consumer stays in its
group, as the engine keeps polling it) until the count is down to half. So at
most ``limit`` plus one poll of outputs are ever queued. The wait comes first
because a pause is not free: librdkafka drops the records it has fetched ahead
for a paused partition and fetches them again on resume, which stalls the
input for up to a second (``docs/operations.md``, *Back-pressure*); a short
backlog clears before that. The Kafka clients heartbeat from their own
threads, so a wait of ``wait_s`` costs the group nothing but that much delay
to a rebalance. The docs' *Operations* page has more.

>>> class Sink:
...     in_flight = 0
>>> class Source:
...     paused = False
...     def pause(self): self.paused = True
...     def resume(self): self.paused = False
>>> source, sink = Source(), Sink()
>>> flow = FlowControl(source, [sink], limit=100, wait_s=0.0)
>>> sink.in_flight = 101; flow.check(), source.paused
(True, True)
>>> sink.in_flight = 51; flow.check(), source.paused
(True, True)
>>> sink.in_flight = 50; flow.check(), source.paused, flow.pauses
(False, False, 1)

A backlog that clears within ``wait_s`` holds the input without pausing the source:

>>> class Draining:
...     left = 121
...     @property
...     def in_flight(self):  # the broker acknowledges ten records each time the sink is asked
...         self.left = max(0, self.left - 10)
...         return self.left
>>> source = Source()
>>> flow = FlowControl(source, [Draining()], limit=100, wait_s=5.0)
>>> flow.check(), source.paused, flow.pauses, flow.source_pauses
(False, False, 1, 0)

Two sinks over one queue count it once:

>>> class Shared:
...     in_flight = 60
>>> queue = Shared()
>>> class Over:
...     in_flight_owner = queue
...     in_flight = property(lambda self: queue.in_flight)
>>> FlowControl(source, [Over(), Over()], limit=100).in_flight()
60
"""

from __future__ import annotations

import logging
import time
import typing

from ..contract import CountsInFlight, Pausable, SharesQueue

__all__ = ["FlowControl"]

log = logging.getLogger("stream_nb.engine")

#: Seconds between two INFO lines about pausing; the others go to DEBUG.
_LOG_EVERY_S = 60.0
#: Seconds between two looks at the sinks while waiting for their acknowledgements.
_WAIT_STEP_S = 0.001


class FlowControl:
    """Hold the input while the ``sinks`` hold more than ``limit`` unacknowledged records: wait for them at
    most ``wait_s`` seconds (ended early when ``stopping()`` says so), then pause ``source``.

    ``limit`` 0 disables it. :attr:`active` says whether it can act at all
    (some sink counts ``in_flight`` and the source can pause).
    """

    def __init__(self, source: typing.Any, sinks: typing.Iterable[typing.Any], limit: int, wait_s: float = 1.0,
                 stopping: typing.Callable[[], bool] = lambda: False):
        self.source = source
        self.sinks = [s for s in sinks if isinstance(s, CountsInFlight)]
        # a queue shared by several sinks is counted once: one sink per owner
        owners = {id(s.in_flight_owner if isinstance(s, SharesQueue) else s): s for s in self.sinks}
        self._counted = list(owners.values())
        self.limit = limit
        self.resume_at = limit // 2
        self.wait_s = wait_s
        self._stopping = stopping
        can_pause = isinstance(source, Pausable)
        #: True when this controller can pause the source at all.
        self.active = bool(limit > 0 and self.sinks and can_pause)
        #: True while the input is held (waited for, or the source paused).
        self.paused = False
        #: How many times the input was held.
        self.pauses = 0
        #: How many of those holds lasted past ``wait_s`` and paused the source.
        self.source_pauses = 0
        self._source_paused = False
        self._paused_since = 0.0
        self._paused_total = 0.0
        self._last_info = -_LOG_EVERY_S

    def in_flight(self) -> int:
        """Records handed to the sinks and not yet acknowledged (a shared queue counted once)."""
        return sum(s.in_flight for s in self._counted)

    @property
    def paused_seconds(self) -> float:
        """Total time the input was held, the current hold included."""
        extra = time.monotonic() - self._paused_since if self.paused else 0.0
        return self._paused_total + extra

    def check(self) -> bool:
        """Hold, pause or resume the input as the backlog requires; True while the source is paused."""
        if not self.active:
            return False
        n = self.in_flight()
        if not self.paused:
            if n <= self.limit:
                return False
            self._hold(n)
        deadline = self._paused_since + self.wait_s
        while n > self.resume_at and not self._source_paused and time.monotonic() < deadline:
            if self._stopping():
                break
            time.sleep(_WAIT_STEP_S)
            n = self.in_flight()
        if n <= self.resume_at:
            if self._source_paused:
                self.source.resume()
                self._source_paused = False
            self.paused = False
            waited = time.monotonic() - self._paused_since
            self._paused_total += waited
            log.debug("back-pressure: resumed the input after %.3f s, %d outputs in flight", waited, n)
            return False
        if not self._source_paused:
            self.source_pauses += 1
            self._source_paused = True
        self.source.pause()  # again each time: partitions assigned since the last call start unpaused
        return True

    def _hold(self, n: int) -> None:
        self.paused = True
        self.pauses += 1
        self._paused_since = now = time.monotonic()
        quiet = now - self._last_info < _LOG_EVERY_S
        if not quiet:
            self._last_info = now
        log.log(
            logging.DEBUG if quiet else logging.INFO,
            "back-pressure: %d outputs await acknowledgement (limit %d): input held until at most %d "
            "(hold %d)", n, self.limit, self.resume_at, self.pauses,
            extra={"event": "backpressure", "in_flight": n, "limit": self.limit, "pauses": self.pauses},
        )
