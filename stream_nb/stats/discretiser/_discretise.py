"""Online equal-frequency discretisation with edges that never move once chosen.

AODE and TAN count values; a numeric feature must become a small set of bins
for them. The bins are chosen once, from the first ``warmup`` observed values
of the feature (equal-frequency: the interior edges are the ``k/bins``
quantiles of those values, duplicates removed), and never change afterwards,
so every count keeps its meaning for the life of the model.

The ``warmup`` values used to choose the edges teach only the edges: while a
feature's edges are not chosen yet, its value counts as missing for AODE and
TAN (in learning and in prediction). Edges can also be given up front
(``bin_edges``), in which case there is no warm-up at all.

A value ``x`` falls in bin ``searchsorted(edges, x, side="right")``: bin 0 is
``x < edges[0]``, bin ``len(edges)`` is ``x >= edges[-1]``.
"""

from __future__ import annotations

from bisect import bisect_right

import numpy as np

__all__ = ["Discretiser"]


class Discretiser:
    """Bin edges of one numeric feature, chosen from its first values.

    Parameters
    ----------
    bins
        Number of equal-frequency bins wanted (fewer when values repeat).
    warmup
        How many observed values choose the edges.
    edges
        Edges given up front; skips the warm-up.

    Examples
    --------
    >>> d = Discretiser(bins=2, warmup=4)
    >>> [d.bin_or_buffer(v) for v in (1.0, 2.0, 3.0, 4.0)]
    [None, None, None, None]
    >>> d.edges.tolist()
    [2.5]
    >>> d.bin(0.0), d.bin(2.5), d.bin(9.0)
    (0, 1, 1)
    """

    __slots__ = ("bins", "warmup", "edges", "buffer", "_cut")

    def __init__(self, bins: int, warmup: int, edges=None):
        self.bins = bins
        self.warmup = warmup
        self.edges = None if edges is None else np.asarray(edges, dtype=float)
        self.buffer: list[float] = []
        self._cut = None  # (the edges array, its values as a list): bin() bisects the list

    @property
    def ready(self) -> bool:
        return self.edges is not None

    def bin(self, x: float) -> int:
        """The bin of ``x``; edges must be chosen. (``bisect_right`` on a list of the edges: the
        bin ``np.searchsorted(edges, x, side="right")`` gives, without a numpy call per value.)"""
        cut = self._cut
        if cut is None or cut[0] is not self.edges:
            cut = self._cut = (self.edges, self.edges.tolist())
        return bisect_right(cut[1], x)

    def bin_many(self, xs: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.edges, xs, side="right")

    def bin_or_buffer(self, x: float) -> int | None:
        """Learning path: the bin of ``x``, or ``None`` while ``x`` is a warm-up value."""
        if self.edges is not None:
            return self.bin(x)
        self.buffer.append(x)
        if len(self.buffer) >= self.warmup:
            self._choose()
        return None

    def _choose(self) -> None:
        values = np.asarray(self.buffer, dtype=float)
        qs = np.linspace(0.0, 1.0, self.bins + 1)[1:-1]
        edges = np.unique(np.quantile(values, qs)) if len(qs) else np.empty(0)
        # An edge equal to the minimum would leave bin 0 empty forever.
        self.edges = edges[edges > values.min()]
        self.buffer = []

    def state(self) -> dict:
        return {
            "bins": self.bins,
            "warmup": self.warmup,
            "edges": None if self.edges is None else self.edges.tolist(),
            "buffer": list(self.buffer),
        }

    @classmethod
    def from_state(cls, state: dict) -> "Discretiser":
        d = cls(state["bins"], state["warmup"], state["edges"])
        d.buffer = list(state["buffer"])
        return d

    def same_as(self, other: "Discretiser") -> bool:
        if self.edges is None or other.edges is None:
            return self.edges is None and other.edges is None and not self.buffer and not other.buffer
        return self.edges.shape == other.edges.shape and bool(np.all(self.edges == other.edges))
