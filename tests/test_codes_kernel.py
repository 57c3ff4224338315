"""The compiled encoding of an integer matrix (stream_nb/kernels/_codes.py) against numpy's, in each layout a run
meets: a window of dicts (row-major), a DataFrame's block (column-major) and a slice of one."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from stream_nb.kernels import compiled


def layouts(rng):
    A = rng.integers(-3, 40, size=(57, 6))
    frame = pd.DataFrame(A).to_numpy()  # (a block of one dtype: column-major)
    return {"rows": np.ascontiguousarray(A), "columns": np.asfortranarray(A), "frame slice": frame[5:44],
            "strided": A[::3, ::2], "one row": A[7:8]}


@pytest.mark.parametrize("layout", ["rows", "columns", "frame slice", "strided", "one row"])
def test_ranges_and_gather_are_numpys(layout):
    rng = np.random.default_rng(4)
    A = layouts(rng)[layout]
    k = compiled()
    lo, hi = np.empty(A.shape[1], dtype=np.int64), np.empty(A.shape[1], dtype=np.int64)
    k.column_ranges(A, lo, hi)
    assert lo.tolist() == A.min(axis=0).tolist() and hi.tolist() == A.max(axis=0).tolist()
    width = int((hi - lo).max()) + 1
    flat = rng.integers(-4, 100, size=A.shape[1] * width)
    offset = np.arange(A.shape[1]) * width - lo
    out = np.full((len(A) + 2, A.shape[1]), -9, dtype=np.int64)
    k.gather_codes(A, flat, offset, out[2:])  # (into the rows of a larger array, as a run's columns)
    assert out[2:].tolist() == flat[A + offset].tolist() and (out[:2] == -9).all()
