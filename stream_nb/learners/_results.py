"""The results of ``prequential_many`` given a DataFrame: a sequence over the kernel's arrays.

A run through a compiled kernel leaves each event's decided class and probabilities in arrays
(:class:`~stream_nb.learners._runs.RunBlock`). Turning them into one ``(prediction, proba)`` pair an event,
a dict of the classes' probabilities each, costs more than the kernel's scoring and counting of the same
events on LED (ten classes). :class:`PrequentialResults` keeps the arrays and builds those pairs once,
when an element is first read; :attr:`PrequentialResults.predictions` reads the decided classes alone,
with no dict built, as a DataFrame's user reads river's ``predict_many`` Series.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..exceptions import InvalidEventError
from ._decision import outcomes
from ._runs import RunBlock

__all__ = ["PrequentialResults"]


class PrequentialResults(Sequence):
    """What :meth:`~stream_nb.learners.BayesClassifier.prequential_many` returns for a DataFrame: one result
    per event, in order, as in the list it returns for a list of events (``(prediction, proba)``, or the
    :class:`~stream_nb.exceptions.InvalidEventError` of an event refused), built from the kernel's arrays
    when first read (then kept: an element read twice is the same object). It equals that list, and a list
    of the same results equals it.

    :attr:`predictions` gives each event's prediction without building its dict of probabilities.

    >>> import pandas as pd
    >>> from stream_nb import NaiveBayes
    >>> X = pd.DataFrame({"sky": ["sun", "rain", "sun", "sun", "sun"]})
    >>> results = NaiveBayes().prequential_many(X, ["play", "stay", "play", "play", "stay"])
    >>> results.predictions
    [None, 'play', 'play', 'play', 'play']
    >>> results[4]
    ('play', {'play': 0.8276, 'stay': 0.1724})
    >>> results == NaiveBayes().prequential_many(X.to_dict("records"), ["play", "stay", "play", "play", "stay"])
    True
    """

    __slots__ = ("_parts", "_items", "_n")

    def __init__(self, parts: list):
        #: each run's RunBlock, and each other event's result, in event order
        self._parts = parts
        self._items = None
        self._n = sum(p.stop - p.start if type(p) is RunBlock else 1 for p in parts)

    def _list(self) -> list:
        """Every result, as the list :meth:`prequential_many` returns for a list of events (built once)."""
        items = self._items
        if items is None:
            items = []
            for p in self._parts:
                if type(p) is RunBlock:
                    items.extend(outcomes(p.classes, p.decided, p.proba))
                else:
                    items.append(p)
            self._items = items
        return items

    @property
    def predictions(self) -> list:
        """Each event's prediction, in order: None before any class is known, and for an event refused (its
        result is its :class:`~stream_nb.exceptions.InvalidEventError`)."""
        if self._items is not None:
            return [None if isinstance(r, InvalidEventError) else r[0] for r in self._items]
        out = []
        for p in self._parts:
            if type(p) is RunBlock:
                out.extend(map(p.classes.__getitem__, p.decided.tolist()))
            else:
                out.append(None if isinstance(p, InvalidEventError) else p[0])
        return out

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i):
        return self._list()[i]

    def __iter__(self):
        return iter(self._list())

    def __eq__(self, other):
        if isinstance(other, PrequentialResults):
            return self._list() == other._list()
        if isinstance(other, list):
            return self._list() == other
        return NotImplemented

    __hash__ = None

    def __add__(self, other):
        return self._list() + list(other)

    def __radd__(self, other):
        return list(other) + self._list()

    def __repr__(self) -> str:
        return repr(self._list())
