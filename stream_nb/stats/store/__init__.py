"""The stores: :class:`Stats` and the two-layer :class:`TwoLayerStats`, and their counting, merging and state."""

from ._store import Stats
from ._adding import Adding, add_pairs_expected
from ._removing import Removing
from ._merging import Merging
from ._state import State, check_state, MAX_COUNT
from ._fine import CoarseDiscretiser, TwoLayerStats

__all__ = [
    "Stats",
    "Adding",
    "add_pairs_expected",
    "Removing",
    "Merging",
    "State",
    "check_state",
    "MAX_COUNT",
    "CoarseDiscretiser",
    "TwoLayerStats",
]
