"""The rotation in which dropped candidate pairs are tried again, and how long a pair is on trial.

Pairs are ordered by a hash of their two features' names (:func:`rotation_positions`), and each revision
admits the pairs that follow the last one admitted (the store's ``pair_cursor``), wrapping round, so that
every pair gets its turn whatever the stream (:mod:`stream_nb.stats.selection._revision`,
:mod:`stream_nb.stats.selection._informative`).
"""

from __future__ import annotations

import zlib

import numpy as np

__all__ = ["MASK64", "SCREEN", "TRIAL_EVENTS", "rotation_positions"]

#: events a pair's own counts hold before it is judged (and one per degree of freedom of its test)
TRIAL_EVENTS = 100
#: the p-value above which a judged pair is dropped: lenient, since a dependent pair dropped waits a whole
#: rotation for its next trial, while an independent one kept stays on trial (it enters no tree)
SCREEN = 0.1

#: positions in the rotation are 64-bit: the distance from the cursor wraps round modulo 2**64
MASK64 = (1 << 64) - 1


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser, elementwise over uint64."""
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def rotation_positions(s) -> np.ndarray:
    """(F, F) uint64: each pair's place in the rotation, a hash of its two features' names (symmetric)."""
    h = np.array([zlib.crc32(repr(str(n)).encode()) for n in s.features], dtype=np.uint64)
    lo, hi = np.minimum(h[:, None], h[None, :]), np.maximum(h[:, None], h[None, :])
    return _mix((lo << np.uint64(32)) | hi)
