"""Compiled kernels: one sequential path per event, over the store's count arrays.

Each kernel scores each event of a block under the counts as they stand, then counts it: the one-event
loop, compiled. They are plain functions (numpy and math only); :func:`compiled` imports numba on first
use and compiles them, cached. ``python -m stream_nb.kernels`` compiles every kernel ahead of time. The
docs' *Architecture* page (The compiled kernels) says more.
"""

from ._addresses import NO_DETECTOR, Addresses
from ._detectors import DETECTOR_KINDS
from ._json import KIND_TYPES as JSON_KIND_TYPES
from ._json import LONG as JSON_LONG
from ._loader import compile_all, compiled

__all__ = ["Addresses", "DETECTOR_KINDS", "JSON_KIND_TYPES", "JSON_LONG", "NO_DETECTOR", "compile_all", "compiled"]
