"""The accuracy over the last labeled events: a window of right/wrong outcomes, filled a run at a time.

The cumulative prequential accuracy moves less and less as a stream goes on:
after a million events, a model that became wrong on every event takes
thousands of events to move it by a point. :class:`RecentHits` keeps the
outcomes (right or wrong) of the last ``window`` labeled events, so the
daemon's periodic line and ``/metrics`` can show the accuracy of the model as
it is now beside the one since the start.

It is river's ``utils.Rolling(metrics.Accuracy(), window_size)`` (the tests
check the two agree event by event), except that it takes a whole run of
outcomes in one call: the engine scores a poll's events as arrays, and river's
window takes one Python call per event.

>>> recent = RecentHits(3)
>>> recent.add(np.array([True, False, True, True]))   # the first falls out of the window
>>> recent.count, recent.accuracy
(3, 0.6666666666666666)
>>> recent.outcomes()
[False, True, True]
"""

from __future__ import annotations

import numpy as np

__all__ = ["RECENT_WINDOW", "RecentHits"]

#: Labeled events in the window of the recent accuracy.
RECENT_WINDOW = 1000


class RecentHits:
    """The outcomes of the last ``window`` labeled events (True: predicted right), as a ring."""

    def __init__(self, window: int = RECENT_WINDOW):
        if not (isinstance(window, int) and window >= 1):
            raise ValueError(f"window must be an integer >= 1, got {window!r}")
        self.window = window
        self._ring = np.zeros(window, dtype=bool)
        self._next = 0  # where the next outcome goes
        self.count = 0  # outcomes in the window (up to window)
        self._hits = 0  # of them, right

    def add(self, hits: np.ndarray) -> None:
        """Add the outcomes of labeled events, in event order (the oldest leave the window)."""
        m = len(hits)
        if not m:
            return
        w = self.window
        if m >= w:
            self._ring[:] = hits[m - w:]
            self._next, self.count, self._hits = 0, w, int(np.count_nonzero(self._ring))
            return
        at = (self._next + np.arange(m)) % w
        # the slots not filled yet hold False: taking their outcome away takes nothing
        self._hits += int(np.count_nonzero(hits)) - int(np.count_nonzero(self._ring[at]))
        self._ring[at] = hits
        self._next = (self._next + m) % w
        self.count = min(w, self.count + m)

    @property
    def accuracy(self) -> float | None:
        """Right outcomes over the outcomes in the window; None before the first."""
        return self._hits / self.count if self.count else None

    def outcomes(self) -> list[bool]:
        """The outcomes in the window, oldest first."""
        order = (self._next - self.count + np.arange(self.count)) % self.window
        return self._ring[order].tolist()
