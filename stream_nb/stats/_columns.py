"""Events given column by column, where a list of events (dicts) is taken.

A holder of events that keeps them as columns (the join's pending store)
passes them on as :class:`Columns`: the run encoding
(:meth:`Frames.encode_run <stream_nb.stats._frames.Frames.encode_run>`) reads
each feature's values straight from its column, with no dict per event built
and taken apart again; any step that takes one event at a time gets that
event as a dict.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["Columns"]


class Columns(Sequence):
    """``n`` events as ``{name: values}``, one value per event in each list (None: the event lacks the feature).

    A sequence of the events as dicts, each built when asked for (its features in the columns' order,
    the ones it lacks left out), so it goes wherever a list of events does.

    >>> events = Columns({"sky": ["sun", "rain", None], "temp": [21.5, None, 3.0]})
    >>> len(events), events[1], list(events[1:])
    (3, {'sky': 'rain'}, [{'sky': 'rain'}, {'temp': 3.0}])
    """

    __slots__ = ("columns", "_n")

    def __init__(self, columns: dict[str, list], n: int | None = None):
        lengths = {len(values) for values in columns.values()} | ({n} if n is not None else set())
        if len(lengths) != 1:
            raise ValueError(f"columns of lengths {sorted(lengths)}: expected one length (n= when no column)")
        self.columns = columns
        self._n = lengths.pop()

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i):
        if isinstance(i, slice):
            return Columns({name: values[i] for name, values in self.columns.items()}, len(range(self._n)[i]))
        if not -self._n <= i < self._n:
            raise IndexError(f"event {i} of {self._n}")
        return {name: values[i] for name, values in self.columns.items() if values[i] is not None}

    def window(self, start: int, stop: int) -> dict[str, list]:
        """Each column's values of events ``start`` to ``stop``."""
        return {name: values[start:stop] for name, values in self.columns.items()}
