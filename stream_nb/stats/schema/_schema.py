"""The store's schema and capacity: classes, features, values and the arrays that hold their counts.

Classes, features and values get indices in order of first appearance; the
count arrays are allocated with spare capacity and grow by doubling (the
t-way tables of KDB grow exactly, as they are V^t, and turn sparse when dense
ones would pass the memory budget, see ``_budget.py``). A count table that would
pass an explicit ``max_table_cells`` raises :class:`~stream_nb.exceptions.CapacityError`
before anything changes.
"""

from __future__ import annotations

import numpy as np

from ...exceptions import CapacityError, FeatureTypeError
from ..discretiser import Discretiser
from ..tables import GaussianMoments
from ..values import validate_label
from ._value_types import ValueTypes
from ..values import BINNED, CAT, EMPTY_INT, GAUSS, TWINNED, Encoded

__all__ = ["ObservedView", "Schema"]


class Schema:
    """Schema and capacity of a :class:`~stream_nb.stats.Stats` (a part of it, not used alone)."""

    def _alloc(self, cc, cv, cf, cg, need=None):
        old = getattr(self, "class_count", None)
        C, V, F, G = (len(self.classes), len(self.value_keys), len(self.features), self.n_gauss)
        new = {
            "class_count": np.zeros(cc),
            "value_feature": np.full(cv, -1, dtype=np.int64),
            "n_values": np.zeros(cf, dtype=np.int64),
            "value_count": np.zeros((cc, cv)),
            "feat_count": np.zeros((cc, cf)),
        }
        used = {"value_count": (C, V), "feat_count": (C, F)}
        for p in self._sets()[1:]:
            for k in used:
                if k in new:
                    new[p + k] = np.zeros_like(new[k])
        if old is not None:
            new["class_count"][:C] = self.class_count[:C]
            new["value_feature"][:V] = self.value_feature[:V]
            new["n_values"][:F] = self.n_values[:F]
            self.moments.resize(cc, cg, C, G)
            for p in self._sets():
                for k, dims in used.items():
                    if p + k in new:
                        part = tuple(slice(0, d) for d in dims)
                        new[p + k][part] = getattr(self, p + k)[part]
        else:
            self.moments = GaussianMoments(cc, cg)
        for k, v in new.items():
            setattr(self, k, v)
        self._cap = (cc, cv, cf, cg)
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
        for p in self._sets():
            pc, pf = np.zeros((cc, cv, cv)), np.zeros((cc, cv, cf))
            old = getattr(self, p + "pair_count", None)
            if old is not None:
                pc[:C, :V, :V] = old[:C, :V, :V]
                pf[:C, :V, :F] = getattr(self, p + "pair_feat")[:C, :V, :F]
            setattr(self, p + "pair_count", pc)
            setattr(self, p + "pair_feat", pf)

    def _alloc_tuples(self, cc, cv, cf):
        """The t-way tensors grow as V^t, so they get no spare capacity beyond the base arrays'."""
        t = self.tuples
        old = getattr(self, "tuple_count", None)
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
        for p in self._sets():
            tc = np.zeros((cc,) + (cv,) * t)
            tf = np.zeros((cc,) + (cv,) * (t - 1) + (cf,))
            if old is not None:
                tc[(slice(0, C),) + (slice(0, V),) * t] = getattr(self, p + "tuple_count")[(slice(0, C),) + (slice(0, V),) * t]
                tf[(slice(0, C),) + (slice(0, V),) * (t - 1) + (slice(0, F),)] = getattr(self, p + "tuple_feat")[
                    (slice(0, C),) + (slice(0, V),) * (t - 1) + (slice(0, F),)
                ]
            setattr(self, p + "tuple_count", tc)
            setattr(self, p + "tuple_feat", tf)

    def _sets(self) -> tuple:
        """Name prefixes of the count sets kept: the counts, and with ``observed`` their observed-only twin."""
        return ("", "obs_") if self.keeps_observed else ("",)

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
        self.keeps_observed = True
        for k in TWINNED:
            if hasattr(self, k):
                setattr(self, "obs_" + k, getattr(self, k).copy())
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
        cc, cv, cf, cg = self._cap
        need = (len(self.classes) + c, len(self.value_keys) + v, len(self.features) + f, self.n_gauss + g)
        if need[0] <= cc and need[1] <= cv and need[2] <= cf and need[3] <= cg:
            if self.pairs and not self.pairs_sparse and not self.pairs_blocks and (  # dense pair tables without spare room: grown here
                    need[0] > self.pair_count.shape[0] or need[1] > self.pair_count.shape[1]
                    or need[2] > self.pair_feat.shape[2]):
                self._alloc_pairs(cc, cv, cf, need[:3])
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

    def _kind_for(self, name, v) -> int:
        declared = self.types.get(name)
        if declared == "categorical":
            return CAT
        if self.counts_by_value(name, v):
            return CAT
        if declared == "numeric" or (declared is None and isinstance(v, (float, np.floating))):
            return GAUSS if self.numeric == "gaussian" else BINNED
        return CAT

    def counts_by_value(self, name, v) -> bool:
        """Whether a new feature ``name`` whose first value is ``v`` is counted by value while it has few
        values (:attr:`few`): a float, its type not declared, no ``bin_edges`` of its own, in a discretising
        store. A numeric feature of a few values (0, 0.5 and 1) keeps each in a bin of its own from its first
        event; one more value than ``few_max`` turns it binned (:meth:`promote`)."""
        return (self.numeric == "bins" and self.few_max > 0 and isinstance(v, (float, np.floating))
                and name not in self.types and name not in self.bin_edges)

    def bin_floats_at_once(self) -> None:
        """Count no float feature by value (:meth:`counts_by_value`): each is binned from its first value.
        A model that forgets (a window, decay, a drift detector) asks it before it learns: its captures and
        scaled counts would not follow a promotion's moves."""
        self.few_max = 0
        fine = getattr(self, "fine", None)
        if fine is not None:
            fine.few_max = 0

    def _add_feature(self, name, kind, from_int: bool = False, few: bool = False) -> int:
        self._reserve(f=1, g=1 if kind == GAUSS else 0)
        f = len(self.features)
        self.features.append(name)
        self.feature_index[name] = f
        self.kinds.append(kind)
        self.values.append({} if kind != GAUSS else None)
        self.value_types.add_feature()
        if kind == GAUSS:
            self.gslot.append(self.n_gauss)
            self.gauss_feature.append(f)
            self.n_gauss += 1
        else:
            self.gslot.append(-1)
        if kind == BINNED:
            self.disc.append(Discretiser(self.bins, self.warmup, self.bin_edges.get(name)))
        else:
            self.disc.append(None)
        self._lookup[name] = (kind, f, self.values[f], self.gslot[f], self.disc[f])
        if kind == CAT and (from_int or few):
            self.from_int.add(f)
        if kind == CAT and few:
            self.few.add(f)
        self.epoch += 1
        return f

    def _set_discretiser(self, f: int, d: Discretiser) -> None:
        self.disc[f] = d
        kind, _, vals, g, _ = self._lookup[self.features[f]]
        self._lookup[self.features[f]] = (kind, f, vals, g, d)

    def _add_value(self, f, v) -> int:
        if self.vtypes[f] is None and self.kinds[f] == CAT:
            self._set_vtype(f, self._vtype_of(self.features[f], v))
        self._reserve(v=1)
        col = len(self.value_keys)
        self.value_keys.append(v)
        self.values[f][v] = col
        self.value_feature[col] = f
        self.n_values[f] += 1
        self.epoch += 1
        return col

    def _set_vtype(self, f: int, vt: str | None) -> None:
        """Fix the type of categorical feature ``f``'s values (None: none, e.g. it turned numeric)."""
        self.value_types.set(f, self.features[f], vt, self.values[f])
        self.epoch += 1

    def _vtype_of(self, name, v) -> str:
        """The value type a categorical feature takes from its first value ``v``."""
        return ValueTypes.first(v, self.types.get(name))

    def _check_value(self, f: int, name, v) -> None:
        """Raise FeatureTypeError unless ``v`` (a categorical value, not missing) is of feature ``f``'s value type."""
        self.value_types.check(f, name, v, self.feature_index.get(name) in self.few, self.types.get(name))

    def _value_error(self, name, vt: str, v, where: str = "") -> FeatureTypeError:
        """The error for categorical value ``v`` of feature ``name``, whose values are of type ``vt``."""
        return ValueTypes.error(name, vt, v, where, self.feature_index.get(name) in self.few, self.types.get(name))

    def _add_class(self, y) -> int:
        self._reserve(c=1)
        c = self.labels.add(y)
        self.epoch += 1
        return c

    def class_of(self, y) -> int:
        """The index of class ``y``, registering it if new (:meth:`check_label` first)."""
        c = self.class_index.get(y)
        if c is None:
            self.check_label(y)
            c = self._add_class(validate_label(y))  # the class the label stands for: 2.0 is the class 2
        return c

    def discrete_features(self) -> np.ndarray:
        """Features counted by value (categorical, or binned with edges) that have values, ascending."""
        cache = self._cache.get("discrete")
        if cache is None or cache[0] != self.epoch:
            F = len(self.features)
            fs = np.array([f for f in range(F) if self.kinds[f] != GAUSS and self.n_values[f] > 0], dtype=np.int64)
            cache = self._cache["discrete"] = (self.epoch, fs)
        return cache[1]

    def columns_of(self, f: int) -> np.ndarray:
        """The value columns of feature ``f``, in order of first appearance."""
        cache = self._cache.get(("cols", f))
        if cache is None or cache[0] != self.epoch:
            cols = np.fromiter(self.values[f].values(), dtype=np.int64, count=len(self.values[f]))
            cache = self._cache[("cols", f)] = (self.epoch, cols)
        return cache[1]

    def missing_of(self, enc: Encoded) -> np.ndarray:
        """Discrete features with values that ``enc`` does not observe."""
        known = self.discrete_features()
        if len(enc.feats) == len(known):
            return EMPTY_INT
        return np.setdiff1d(known, enc.feats, assume_unique=True)


class ObservedView:
    """A store seen through its observed-only twin (see :meth:`Stats.observed`); read-only by convention."""

    __slots__ = ("_stats",)

    def __init__(self, stats: Schema):
        self._stats = stats

    def __getattr__(self, name):
        if name in TWINNED:
            return getattr(self._stats, "obs_" + name)
        return getattr(self._stats, name)
