"""The stores: :class:`Stats` and the two-layer :class:`TwoLayerStats`, and their counting, merging and state."""

from ._store import Stats
from ._fine import TwoLayerStats

__all__ = ["Stats", "TwoLayerStats"]
