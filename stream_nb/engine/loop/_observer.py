"""Hooks through which a running :class:`~stream_nb.engine.Engine` reports what it does.

The engine calls the methods of its :attr:`~stream_nb.engine.Engine.observer`
at a few fixed points; the default :class:`Observer` ignores every call. The
daemon installs one that feeds its ``/metrics``, ``/healthz`` and ``/readyz``
endpoints (:mod:`stream_nb.ops`). The engine imports nothing of it: this
module is the whole interface.

Cost: :meth:`Observer.event_done` runs once per event, on the engine's thread,
so an implementation must do no more there than a few additions. Everything
else runs at most once per poll or per checkpoint.

Threads: every hook runs on the engine's thread. An implementation that is
read from another thread (an HTTP scrape) must only publish plain values.
"""

from __future__ import annotations

__all__ = ["Observer"]


class Observer:
    """The engine's reporting hooks; this base class ignores them all.

    >>> class Counting(Observer):
    ...     events = 0
    ...     def event_done(self, polled): self.events += 1
    >>> counting = Counting()
    >>> counting.event_done(0.0); counting.loop(); counting.events
    1
    """

    def loop(self) -> None:
        """The run loop came round: called before every poll of the source."""

    def event_done(self, polled: float) -> None:
        """One record was processed and its output handed to a sink.

        ``polled`` is the :func:`time.perf_counter` value taken when the poll
        that returned the record came back, so ``perf_counter() - polled`` is
        the record's time from poll to output sent.
        """

    def events_done(self, polled: float, n: int) -> None:
        """``n`` records of one poll were processed, their outputs handed to the sinks: :meth:`event_done`
        of each, unless an implementation counts them at once."""
        if type(self).event_done is not Observer.event_done:  # nothing to call n times for the default
            for _ in range(n):
                self.event_done(polled)

    def flush_done(self, seconds: float, error: BaseException | None) -> None:
        """A checkpoint flushed both sinks (``error`` is ``None``) or a flush raised ``error``."""

    def restored(self) -> None:
        """The engine continued from a snapshot: its model and :attr:`~stream_nb.engine.Engine.metrics` were
        replaced, the counters now hold the snapshot's figures (a rewind, or a start-up restore)."""

    def snapshot_done(self, seconds: float, ok: bool) -> None:
        """A snapshot of the model and positions was written (``ok``) or failed.

        Called by the snapshot code, once per attempt, with its duration.
        """
