"""The capacity of the count tables: allocated with spare room, grown by doubling, and the observed-only twin.

The count tables are a part the store holds (:class:`~stream_nb.stats.tables.CountTables`); here the store
decides their room and layout and hands them to it. The count arrays are allocated with spare capacity and
grow by doubling as the
schema (:class:`~stream_nb.stats.schema.Schema`) asks for room, through
:meth:`Capacity._reserve`, before it takes a new class, value, feature or
Gaussian slot (the t-way tables of KDB grow exactly, as they are V^t, and turn
sparse when dense ones would pass the memory budget, see ``_budget.py``). A
count table that would pass an explicit ``max_table_cells`` raises
:class:`~stream_nb.exceptions.CapacityError` before anything changes.
"""

from __future__ import annotations

from ...exceptions import CapacityError
from ..tables import GaussianMoments
from ..values import TWINNED

__all__ = ["Capacity", "ObservedView"]


class Capacity:
    """Allocation of the count arrays of a :class:`~stream_nb.stats.Stats` (a part of it, not used alone)."""

    def _alloc(self, cc, cv, cf, cg, need=None):
        C, V, F, G = (len(self.classes), len(self.value_keys), len(self.features), self.n_gauss)
        if self.tables.get("class_count") is not None:
            self.moments.resize(cc, cg, C, G)
        else:
            self.moments = GaussianMoments(cc, cg)
        self.tables.grow(cc, cv, cf, cg, (C, V, F))
        self.schema.make_room(cv, cf)  # its value_feature and n_values keep the tables' room
        if self.pairs:
            self._alloc_pairs(cc, cv, cf, need)
        if self.tuples:
            self._alloc_tuples(cc, cv, cf)
        self.epoch += 1

    def _alloc_pairs(self, cc, cv, cf, need=None):
        """The pair tables, with the base arrays' spare room: dense while they fit the memory budget,
        pair blocks beyond where a model reads them and they fit (:meth:`_take_blocks`), else sparse (see
        ``_budget.py``). Dense tables that fit only without the spare room get
        the classes of ``need`` and a sixteenth more values and features, and grow in ``_reserve``."""
        C, V, F = len(self.classes), len(self.value_keys), len(self.features)
        if not self.pairs_sparse and not self._dense_fits(("pair_count", "pair_feat"), 2, cc, cv, cf):
            nc, nv, nf = need or (C, V, F)
            cc, cv, cf = min(cc, max(nc, 1)), min(cv, nv + 8 + nv // 16), min(cf, nf + 4 + nf // 16)
        if self._take_blocks(cc, cv, cf) or self._go_sparse(("pair_count", "pair_feat"), 2, cc, cv, cf):
            return
        self.tables.grow_dense(("pair_count", "pair_feat"), ((cc, cv, cv), (cc, cv, cf)), ((C, V, V), (C, V, F)))

    def _alloc_tuples(self, cc, cv, cf):
        """The t-way tensors grow as V^t, so they get no spare capacity beyond the base arrays'."""
        t = self.tuples
        old = self.tables.get("tuple_count")
        if old is not None and old.shape[0] >= cc and old.shape[1] >= cv and self.tuple_feat.shape[-1] >= cf:
            return
        C, V, F = len(self.classes), len(self.value_keys), len(self.features)
        cc, cv, cf = min(cc, C + 2), min(cv, V + 8), min(cf, F + 4)
        # Spare room only while it costs little: with many dimensions even 8 spare values multiply
        # the table (KDB(k=8) would take 9 GB before its first event). Otherwise no more than asked
        # for, which is at most one class, value and feature beyond those in use.
        if cc * cv**t > max(8 * max(C, 1) * max(V, 1) ** t, 1 << 16):
            cc, cv, cf = min(cc, C + 1), min(cv, V + 1), min(cf, F + 1)
        if self._go_sparse(("tuple_count", "tuple_feat"), t, cc, cv, cf):  # past the memory budget: sparse (see _budget.py)
            return
        self.tables.grow_dense(("tuple_count", "tuple_feat"), ((cc,) + (cv,) * t, (cc,) + (cv,) * (t - 1) + (cf,)),
                               ((C,) + (V,) * t, (C,) + (V,) * (t - 1) + (F,)))

    def _sets(self) -> tuple:
        """Name prefixes of the count sets kept: the counts, and with ``observed`` their observed-only twin."""
        return self.tables.sets()

    def observed(self):
        """The store as EM's E-step reads it: the observed-only counts under the usual names.

        Returns a read-only view whose ``value_count``, ``feat_count``,
        ``pair_count``, ``pair_feat``, ``tuple_count`` and ``tuple_feat`` are
        the observed-only twins and whose every other attribute (classes,
        values, class counts, ...) is this store's; without a twin, the
        store itself.
        """
        return ObservedView(self) if self.keeps_observed else self

    def keep_observed(self) -> None:
        """Start keeping the observed-only twin, as a copy of the current counts.

        Called with the first expected counts (see :meth:`add_expected`): the
        counts are then all observed, so the copy is exact. (A store written
        by a stream_nb that kept no twin and already holds expected counts
        starts it the same way: the best start there is.)
        """
        self.wants_observed = True
        if self.keeps_observed:
            return
        self.blocks_to_sparse()  # EM's expected pairs have no place in pair blocks
        self.tables.keep_observed()
        self.epoch += 1

    def table_cells(self, extra_values: int = 0, extra_classes: int = 0) -> int:
        """Cells of the t-way count table with that many more values and classes (0 without one)."""
        if not self.tuples:
            return 0
        return (len(self.classes) + extra_classes) * (len(self.value_keys) + extra_values) ** self.tuples

    def _check_room(self, extra_values: int, extra_classes: int) -> None:
        if not self.tuples or self.max_table_cells is None:
            return
        cells = self.table_cells(extra_values, extra_classes)
        if cells > self.max_table_cells:
            raise CapacityError(
                f"the {self.tuples}-way count table would need {cells:,} cells "
                f"({len(self.classes) + extra_classes} classes x {len(self.value_keys) + extra_values} values^{self.tuples}), "
                f"more than max_table_cells={self.max_table_cells:,}; lower k or the number of bins (fine_bins with discretiser=mdl), "
                f"or raise max_table_cells"
            )

    def _reserve(self, c=0, v=0, f=0, g=0):
        """Make room for ``c`` more classes, ``v`` columns, ``f`` features, ``g`` slots."""
        cc, cv, cf, cg = self.tables.capacity
        need = (len(self.classes) + c, len(self.value_keys) + v, len(self.features) + f, self.n_gauss + g)
        if need[0] <= cc and need[1] <= cv and need[2] <= cf and need[3] <= cg:
            if self.pairs and not self.pairs_sparse and not self.pairs_blocks and (  # dense pair tables without spare room: grown here
                    need[0] > self.pair_count.shape[0] or need[1] > self.pair_count.shape[1]
                    or need[2] > self.pair_feat.shape[2]):
                self._alloc_pairs(cc, cv, cf, need[:3])
            if self.pairs and self.pairs_sparse and (  # sparse tables made from dense ones without spare room
                    need[0] > self.pair_count.shape[0] or need[1] > self.pair_count.shape[1]
                    or need[2] > self.pair_feat.shape[-1]):
                self._go_sparse(("pair_count", "pair_feat"), 2, *need[:3])
            if self.tuples:
                self._alloc_tuples(*need[:3])
            return

        def grow(cap, n):
            while cap < n:
                cap *= 2
            return cap

        self._alloc(grow(cc, need[0]), grow(cv, need[1]), grow(cf, need[2]), grow(cg, need[3]), need[:3])

    @property
    def n_classes(self) -> int:
        return len(self.classes)

    @property
    def n_seen(self) -> float:
        """Total weight learned (the number of events, with EM's fractions)."""
        return float(self.class_count[: self.n_classes].sum())


class ObservedView:
    """A store seen through its observed-only twin (see :meth:`Stats.observed`); read-only by convention."""

    __slots__ = ("_stats",)

    def __init__(self, stats: Capacity):
        self._stats = stats

    def __getattr__(self, name):
        if name in TWINNED:
            return getattr(self._stats, "obs_" + name)
        return getattr(self._stats, name)
