"""Compiled kernels: one sequential path per event, over the store's count arrays.

A kernel takes a block of encoded events (integer columns, float values, class
indices) and, for each event in order, writes its posterior under the counts as
they stand, then adds the event's counts: exactly the one-event loop, compiled.
Python acts only between kernel calls (a new value, class or feature, a
structure rebuild, a promotion).

The kernels are plain Python functions in the modules of this package (they
import numpy and math only); :func:`compiled` imports numba on first use and
compiles them (``cache=True``: later processes read the machine code from
numba's cache, ``NUMBA_CACHE_DIR`` where the package is read-only). Commands
that never learn nor predict (``--help``, ``snapshot inspect``) never import
numba. ``python -m stream_nb.kernels`` compiles every kernel ahead of time
(the Docker image does, at build time).
"""

from ._addresses import NO_DETECTOR, Addresses
from ._detectors import DETECTOR_KINDS
from ._loader import compile_all, compiled

__all__ = ["Addresses", "DETECTOR_KINDS", "NO_DETECTOR", "compile_all", "compiled"]
