"""Back-pressure: stop reading input while the outputs wait for their acknowledgements.

Before every poll the engine asks :class:`FlowControl`, which adds up the
sinks' ``in_flight`` (a :class:`~stream_nb.engine.SharesQueue` shared queue
counted once): above ``limit`` it pauses a :class:`~stream_nb.engine.Pausable`
source (a Kafka consumer stays in its group), and at ``limit // 2`` or below it
resumes it. So at most ``limit`` plus one poll of outputs are ever queued. The
docs' *Operations* page has more.

>>> class Sink:
...     in_flight = 0
>>> class Source:
...     paused = False
...     def pause(self): self.paused = True
...     def resume(self): self.paused = False
>>> source, sink = Source(), Sink()
>>> flow = FlowControl(source, [sink], limit=100)
>>> sink.in_flight = 101; flow.check(), source.paused
(True, True)
>>> sink.in_flight = 51; flow.check(), source.paused
(True, True)
>>> sink.in_flight = 50; flow.check(), source.paused, flow.pauses
(False, False, 1)

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


class FlowControl:
    """Pause ``source`` while the ``sinks`` hold more than ``limit`` unacknowledged records.

    ``limit`` 0 disables it. :attr:`active` says whether it can act at all
    (some sink counts ``in_flight`` and the source can pause).
    """

    def __init__(self, source: typing.Any, sinks: typing.Iterable[typing.Any], limit: int):
        self.source = source
        self.sinks = [s for s in sinks if isinstance(s, CountsInFlight)]
        # a queue shared by several sinks is counted once: one sink per owner
        owners = {id(s.in_flight_owner if isinstance(s, SharesQueue) else s): s for s in self.sinks}
        self._counted = list(owners.values())
        self.limit = limit
        self.resume_at = limit // 2
        can_pause = isinstance(source, Pausable)
        #: True when this controller can pause the source at all.
        self.active = bool(limit > 0 and self.sinks and can_pause)
        #: True while the source is paused.
        self.paused = False
        #: How many times the source was paused.
        self.pauses = 0
        self._paused_since = 0.0
        self._paused_total = 0.0
        self._last_info = -_LOG_EVERY_S

    def in_flight(self) -> int:
        """Records handed to the sinks and not yet acknowledged (a shared queue counted once)."""
        return sum(s.in_flight for s in self._counted)

    @property
    def paused_seconds(self) -> float:
        """Total time spent paused, the current pause included."""
        extra = time.monotonic() - self._paused_since if self.paused else 0.0
        return self._paused_total + extra

    def check(self) -> bool:
        """Pause or resume the source as the backlog requires; True while paused."""
        if not self.active:
            return False
        n = self.in_flight()
        if self.paused:
            if n <= self.resume_at:
                self.source.resume()
                self.paused = False
                waited = time.monotonic() - self._paused_since
                self._paused_total += waited
                log.debug("back-pressure: resumed the input after %.3f s, %d outputs in flight", waited, n)
            else:
                self.source.pause()  # again: partitions assigned since the last call start unpaused
        elif n > self.limit:
            self.source.pause()
            self.paused = True
            self.pauses += 1
            self._paused_since = now = time.monotonic()
            quiet = now - self._last_info < _LOG_EVERY_S
            if not quiet:
                self._last_info = now
            log.log(
                logging.DEBUG if quiet else logging.INFO,
                "back-pressure: %d outputs await acknowledgement (limit %d): input paused until at most %d "
                "(pause %d)", n, self.limit, self.resume_at, self.pauses,
                extra={"event": "backpressure", "in_flight": n, "limit": self.limit, "pauses": self.pauses},
            )
        return self.paused
