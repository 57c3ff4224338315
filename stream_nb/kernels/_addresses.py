"""What a model hands a kernel: its count arrays as their addresses (see :mod:`._address`), and no
drift detector."""

from __future__ import annotations

import numpy as np

__all__ = ["Addresses", "NO_DETECTOR"]

#: The detector arguments of a kernel for a model that watches none (``watch`` False): ``watch, kind,
#: params, state, fbuf, ibuf, warning``.
NO_DETECTOR = (False, 0, np.zeros(1), np.zeros(2), np.zeros(1), np.zeros(1, dtype=np.int64), False)


class Addresses:
    """The addresses of ``arrays`` (C-contiguous float64 or int64), then each one's shape, as one int64 array.

    The instance keeps the arrays, so that no address outlives its array; ``key`` says what the arrays
    were taken from (the caller takes them again when its key changes).
    """

    __slots__ = ("key", "arrays", "table")

    def __init__(self, key, arrays: tuple):
        for a in arrays:
            if not a.flags.c_contiguous or a.dtype not in (np.float64, np.int64):
                raise ValueError(f"a kernel takes C-contiguous float64 or int64 arrays, got {a.dtype} {a.flags}")
        self.key, self.arrays = key, arrays
        shapes = [d for a in arrays for d in (a.shape + (1,))[:2]]
        self.table = np.array([a.ctypes.data for a in arrays] + shapes, dtype=np.int64)
