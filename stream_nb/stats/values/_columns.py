"""Events given column by column, where a list of events (dicts) is taken.

A holder of events that keeps them as columns (the join's pending store)
passes them on as :class:`Columns`: the run encoding
(:meth:`RunEncoder.encode_run <stream_nb.stats.schema.RunEncoder.encode_run>`) reads
each feature's values straight from its column, with no dict per event built
and taken apart again; any step that takes one event at a time gets that
event as a dict.

A column may also be a numpy array (a DataFrame's columns, :meth:`Columns.from_frame`): the runs then
encode it with numpy (:mod:`stream_nb.stats.schema._runs`), and an event taken alone gets each value
as the plain Python value of its column's type (an int of an integer column, never a float), missing
values (NaN, None) left out.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..._pandas import pd

__all__ = ["Columns"]


class Columns(Sequence):
    """``n`` events as ``{name: values}``, one value per event in each list (None: the event lacks the feature).

    A sequence of the events as dicts, each built when asked for (its features in the columns' order,
    the ones it lacks left out), so it goes wherever a list of events does.

    >>> events = Columns({"sky": ["sun", "rain", None], "temp": [21.5, None, 3.0]})
    >>> len(events), events[1], list(events[1:])
    (3, {'sky': 'rain'}, [{'sky': 'rain'}, {'temp': 3.0}])
    """

    __slots__ = ("columns", "_n", "arrays", "encodings", "matrix", "types")

    def __init__(self, columns: dict[str, list], n: int | None = None, types: dict[str, frozenset] | None = None):
        lengths = {len(values) for values in columns.values()} | ({n} if n is not None else set())
        if len(lengths) != 1:
            raise ValueError(f"columns of lengths {sorted(lengths)}: expected one length (n= when no column)")
        self.columns = columns
        self._n = lengths.pop()
        #: every column is a numpy array (the runs encode them with numpy)
        self.arrays = bool(columns) and all(type(values) is np.ndarray for values in columns.values())
        #: what each run encoder has encoded of these events: ``{id(encoder): (encoder, state)}`` (see ``schema/_runs.py``)
        self.encodings: dict = {}
        #: (n, columns) array of one dtype whose columns are the columns' arrays, in order; or None
        self.matrix = None
        #: ``{name: types}``: a set that holds the type of every value of a column (NoneType: missing), for
        #: the columns whose types the maker has looked at already (a poll's decoder); the run encoding then
        #: does not look again
        self.types = types or {}

    @classmethod
    def from_frame(cls, X: pd.DataFrame) -> Columns:
        """The rows of DataFrame ``X`` as events, a numpy array per column: integer, float and boolean
        columns as they are, any other as an array of Python objects with None where pandas holds a missing
        value (NaN, None, ``pd.NA``, ``NaT``).

        >>> import pandas as pd
        >>> events = Columns.from_frame(pd.DataFrame({"n": [1, 2], "x": [0.5, None], "s": ["a", None]}))
        >>> events[0], events[1]
        ({'n': 1, 'x': 0.5, 's': 'a'}, {'n': 2})
        """
        if not X.columns.is_unique:
            dup = X.columns[X.columns.duplicated()][0]
            raise ValueError(f"X: expected one column per feature, got column {dup!r} twice")
        A = X.to_numpy()  # integers, or booleans, only when every column holds them (ints and floats: floats)
        if A.shape[1] and (A.dtype.kind in "iub" or (A.dtype.kind == "f" and all(
                isinstance(dtype, np.dtype) and dtype.kind == "f" for dtype in X.dtypes.tolist()))):
            events = cls.__new__(cls)  # (columns of one length, all arrays: nothing to check)
            events.columns = dict(zip(X.columns.tolist(), A.T))  # each column a view of the one array
            events._n, events.arrays, events.encodings, events.matrix, events.types = len(A), True, {}, A, {}
            return events
        columns = {}
        for name, s in X.items():
            dtype = s.dtype
            if isinstance(dtype, np.dtype) and dtype.kind in "iufb":
                columns[name] = s.to_numpy()
            else:  # objects, strings, pandas' nullable and categorical dtypes: Python values, None missing
                columns[name] = s.to_numpy(dtype=object, na_value=None)
        return cls(columns, len(X))

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i):
        if isinstance(i, slice):
            # (each part's values are among the whole's: the types hold for it too)
            return Columns({name: values[i] for name, values in self.columns.items()}, len(range(self._n)[i]),
                           self.types)
        if not -self._n <= i < self._n:
            raise IndexError(f"event {i} of {self._n}")
        if self.arrays:
            return {name: v for name, values in self.columns.items() if (v := _value(values, i)) is not None}
        return {name: values[i] for name, values in self.columns.items() if values[i] is not None}

    def window(self, start: int, stop: int) -> dict[str, list]:
        """Each column's values of events ``start`` to ``stop``."""
        return {name: values[start:stop] for name, values in self.columns.items()}


def _value(values: np.ndarray, i: int):
    """Event ``i``'s value in array column ``values``, a plain Python value; None when missing (None, NaN)."""
    v = values[i]
    if values.dtype.kind != "O":
        v = v.item()  # numpy's scalar as Python's: int, float or bool
    return None if v is None or (isinstance(v, float) and v != v) else v
