"""One copy of the pair tables while a two-layer store's layers are one.

A :class:`~stream_nb.stats.TwoLayerStats` keeps a fine layer whose counts the
coarse ones are sums of. While no feature is binned (a categorical stream: the
fine layer numbers the same features, values and classes as the coarse one),
every fine count equals its coarse count, and the pair tables, C·V² cells
each (the bulk of the store on wide data), would be held twice. So the fine
layer keeps no pair tables of its own then (``pairs`` off: it counts classes,
values and features alone) and its pair counts *are* the coarse layer's.

:class:`SharedPairs` is the part of the two-layer store that decides this and
moves the tables; the store holds it (``sharing``) and hands it both layers:

- :meth:`SharedPairs.own` gives the fine layer a copy of the coarse pair
  tables, the moment it may need its own: before an event that may bin a
  feature (a float value, or a new feature of a declared type), before
  anything that derives the coarse layer from the fine one (new cut points, a
  merge, unlearning), and for good (``for_good``) in a store that forgets (its
  captures and scaled counts are the fine layer's);
- :meth:`SharedPairs.share` drops that copy again when the layers are one
  (after the coarse layer was derived, and when a store is loaded);
- a snapshot writes the fine layer's pair tables as before (the coarse ones,
  :meth:`SharedPairs.lent`), so its format is unchanged.

Stores with t-way tables (KDB) keep both layers' tables.
"""

from __future__ import annotations

import contextlib

from ..values import BINNED

__all__ = ["SharedPairs"]

_TABLES = ("pair_count", "pair_feat")


class SharedPairs:
    """Whether a two-layer store's fine layer shares the coarse layer's pair tables, and the moves between
    the two states (see the module notes). Its methods take the two layers (``coarse``, ``fine``: stores)
    as arguments and change them through their tables' methods.

    Parameters
    ----------
    forgets
        The store forgets (a window, decay, drift resets): the fine layer keeps tables of its own, for good.
    """

    def __init__(self, forgets: bool = False):
        #: The fine layer holds no pair tables: its pair counts are the coarse layer's.
        self.shared = False
        #: The store forgets: the layers never share their pair tables again.
        self.forgets = bool(forgets)

    def one_layer(self, coarse, fine) -> bool:
        """Whether the fine layer's counts are the coarse one's: no feature binned, the same features, values
        and classes in the same columns, the same count sets, no t-way tables, and a store that does not forget."""
        return (coarse.pairs and not coarse.tuples and not self.forgets and BINNED not in fine.kinds
                and fine.features == coarse.features and fine.value_keys == coarse.value_keys
                and fine.classes == coarse.classes and fine.keeps_observed == coarse.keeps_observed)

    def share(self, coarse, fine) -> None:
        """Drop the fine layer's pair tables if the layers are one (its pair counts are then the coarse layer's)."""
        if self.shared or not self.one_layer(coarse, fine):
            return
        for p in fine.tables.sets():
            for name in _TABLES:
                fine.tables.drop(p + name)
        fine.pairs = False
        fine.epoch += 1
        self.shared = True

    def own(self, coarse, fine, for_good: bool = False) -> None:
        """Give the fine layer its own copy of the pair tables it shares (nothing if it has its own);
        ``for_good``: the layers never share them again (a store that forgets)."""
        self.forgets = self.forgets or for_good
        if not self.shared:
            return
        coarse.blocks_to_sparse()  # pair blocks are held once, by one layer: both layers' tables sparse from here
        for p in coarse.tables.sets():
            for name in _TABLES:
                fine.tables.replace(p + name, coarse.tables.get(p + name).copy())
        if coarse.selection.selected:
            fine.selection.choose(coarse.selection.allowed.copy(), coarse.selection.edges.copy())
        fine.pairs = True
        fine.epoch += 1
        self.shared = False
        fine.refresh_selection()

    @contextlib.contextmanager
    def lent(self, coarse, fine):
        """The fine layer reads the coarse layer's pair tables as its own for a while (writing its state)."""
        if not self.shared:
            yield
            return
        for p in coarse.tables.sets():
            for name in _TABLES:
                fine.tables.replace(p + name, coarse.tables.get(p + name))
        fine.pairs = True
        try:
            yield
        finally:
            for p in coarse.tables.sets():
                for name in _TABLES:
                    fine.tables.drop(p + name)
            fine.pairs = False
