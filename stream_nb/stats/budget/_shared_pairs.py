"""One copy of the pair tables while a two-layer store's layers are one.

A :class:`~stream_nb.stats.TwoLayerStats` keeps a fine layer whose counts the
coarse ones are sums of. While no feature is binned (a categorical stream: the
fine layer numbers the same features, values and classes as the coarse one),
every fine count equals its coarse count, and the pair tables, C·V² cells
each (the bulk of the store on wide data), would be held twice. So the fine
layer keeps no pair tables of its own then (``pairs`` off: it counts classes,
values and features alone) and its pair counts *are* the coarse layer's:

- :meth:`SharedPairs.own_pairs` gives the fine layer a copy of them, the
  moment it may need its own: before an event that may bin a feature (a float
  value, or a new feature of a declared type), before anything that derives
  the coarse layer from the fine one (new cut points, a merge, unlearning),
  and for good in a store that forgets (its captures and scaled counts are the
  fine layer's);
- :meth:`SharedPairs.share_pairs` drops that copy again when the layers are
  one (after the coarse layer was derived, and when a store is loaded);
- a snapshot writes the fine layer's pair tables as before (the coarse ones,
  :meth:`SharedPairs.lent_pairs`), so its format is unchanged.

Stores with t-way tables (KDB) keep both layers' tables.
"""

from __future__ import annotations

import contextlib
from itertools import repeat

from ..values import BINNED

__all__ = ["SharedPairs"]

_TABLES = ("pair_count", "pair_feat")


class SharedPairs:
    """The shared pair tables of a :class:`~stream_nb.stats.TwoLayerStats` (a part of it, not used alone)."""

    #: The fine layer holds no pair tables: its pair counts are this layer's (see the module notes).
    shared_pairs = False
    #: The store forgets (a window, decay, drift resets): the fine layer keeps its own tables.
    forgets = False

    def _one_layer(self) -> bool:
        """Whether the fine layer's counts are this one's: no feature binned, the same features, values and
        classes in the same columns, the same count sets, and no t-way tables."""
        fine = self.fine
        return (self.pairs and not self.tuples and not self.forgets and BINNED not in fine.kinds
                and fine.features == self.features and fine.value_keys == self.value_keys
                and fine.classes == self.classes and fine.keeps_observed == self.keeps_observed)

    def share_pairs(self) -> None:
        """Drop the fine layer's pair tables if the layers are one (its pair counts are then this layer's)."""
        if self.shared_pairs or not self._one_layer():
            return
        fine = self.fine
        for p in fine._sets():
            for name in _TABLES:
                fine.tables.drop(p + name)
        fine.pairs = False
        fine.epoch += 1
        self.shared_pairs = True

    def own_pairs(self) -> None:
        """Give the fine layer its own copy of the pair tables it shares (nothing if it has its own)."""
        if not self.shared_pairs:
            return
        self.blocks_to_sparse()  # pair blocks are held once, by one layer: both layers' tables sparse from here
        fine = self.fine
        for p in self._sets():
            for name in _TABLES:
                fine.tables.replace(p + name, self.tables.get(p + name).copy())
        if self.selection.selected:
            fine.selection.choose(self.selection.allowed.copy(), self.selection.edges.copy())
        fine.pairs = True
        fine.epoch += 1
        self.shared_pairs = False
        fine.refresh_selection()

    @contextlib.contextmanager
    def lent_pairs(self):
        """The fine layer reads this layer's pair tables as its own for a while (writing its state)."""
        if not self.shared_pairs:
            yield
            return
        fine = self.fine
        for p in self._sets():
            for name in _TABLES:
                fine.tables.replace(p + name, self.tables.get(p + name))
        fine.pairs = True
        try:
            yield
        finally:
            for p in self._sets():
                for name in _TABLES:
                    fine.tables.drop(p + name)
            fine.pairs = False

    def may_bin(self, x: dict) -> bool:
        """Whether learning event ``x`` may bin a feature in the fine layer (a float value, a value of a numeric
        feature counted by value, which may promote it, or a new feature of a declared type or with
        ``bin_edges``): its pair tables must then be its own first.

        The answer depends on ``x``'s keys and the types of its values alone (and on the fine layer's schema,
        which bumps its epoch when it changes): kept for the usual event's shape (``schema/_shapes.py``),
        so that an event of that shape is not read value by value again."""
        shape = self.schema.usual_shape
        if shape is not None and shape.values_of(x) is not None:
            held = self._cache.get("may_bin")
            if held is None or held[0] is not shape or held[1] != self.fine.epoch:
                held = self._cache["may_bin"] = (shape, self.fine.epoch, self._may_bin(x))
            return held[2]
        return self._may_bin(x)

    def _may_bin(self, x: dict) -> bool:
        """:meth:`may_bin`, reading ``x``."""
        if any(map(isinstance, x.values(), repeat(float))):  # a loop in C: no Python frame per value
            return True
        index, few = self.fine.feature_index, self.fine.few
        if few and any(index.get(k, -1) in few for k in x):
            return True
        if not (self.types or self.bin_edges) or x.keys() <= index.keys():  # no feature new to the fine layer
            return False
        return any(k not in index and (k in self.types or k in self.bin_edges) for k in x)
