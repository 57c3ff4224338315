"""Merging two stores: align classes, features and values by name, then add.

Counts are additive, so merging the store of stream A with that of stream B
gives the store of A then B, exactly; Gaussian moments merge by Chan's formula.
"""

from __future__ import annotations

import copy
import typing

import numpy as np

from ...exceptions import MergeError
from ..selection import widen_to_either, widen_tuples_to_either
from ..discretiser import Discretiser
from ..values import BINNED, CAT, GAUSS, KIND_NAMES, VALUE_GROUPS, a_noun, json_type

__all__ = ["Merging"]


class Merging:
    """Merging of a :class:`~stream_nb.stats.Stats` (a part of it, not used alone)."""

    def merge(self, other: typing.Self) -> None:
        """Add ``other``'s counts into this store (exactly: as if its stream came next).

        The observed-only twins add too. A store without one holds observed
        values only: its counts are what it adds to this store's twin. When
        this store keeps no twin and the other does, this store starts one if
        it wants one (EM), and otherwise (``missing="ignore"``) takes the
        other's observed-only counts, so that it stays what ``"ignore"`` would
        have counted from both streams.
        """
        if (self.pairs, self.numeric, self.tuples) != (other.pairs, other.numeric, other.tuples):
            raise MergeError(
                f"cannot merge statistics kept differently: pairs={self.pairs}, numeric={self.numeric!r} "
                f"here, pairs={other.pairs}, numeric={other.numeric!r} in the other model"
            )
        label_type = self.label_type or other.label_type
        odd = next((y for y in other.classes if json_type(y) != label_type), None)
        if odd is not None:
            mine = f"this model's labels are {label_type}s" + (f" (its first: {self.classes[0]!r})" if self.classes else "")
            raise MergeError(
                f"cannot merge: {mine} but the other model has {a_noun(json_type(odd))} label, {odd!r}; "
                f"labels of two types would merge classes (True == 1) or give two classes one key (1 and '1')"
            )
        over = self.few_overflow(other)
        stale = [f for name, f in other.feature_index.items() if f in other.from_int
                 and name in self.feature_index and self.kinds[self.feature_index[name]] != CAT]
        if stale or over:  # this model saw the feature turn numeric, or the two saw too many values: so
            other = copy.deepcopy(other)  # would a sequential run
            for f in stale + [theirs for _, theirs in over]:
                other.promote(f)
            for mine, _ in over:
                self.promote(mine)
        for name, f in other.feature_index.items():
            mine = self.feature_index.get(name)
            if mine is not None and mine in self.from_int and other.kinds[f] != CAT:
                self.promote(mine)  # the other model saw it turn numeric: so would a sequential run
            if mine is not None and KIND_NAMES[self.kinds[mine]] != KIND_NAMES[other.kinds[f]]:
                raise MergeError(
                    f"feature {name!r} is {KIND_NAMES[self.kinds[mine]]} here but "
                    f"{KIND_NAMES[other.kinds[f]]} in the other model"
                )
            if mine is not None and self.vtypes[mine] is not None and other.vtypes[f] is not None and not (
                set(VALUE_GROUPS[other.vtypes[f]]) <= set(VALUE_GROUPS[self.vtypes[mine]])
            ):
                raise MergeError(
                    f"feature {name!r} is categorical with {self.vtypes[mine]} values here but "
                    f"{other.vtypes[f]} values in the other model"
                )
            if other.kinds[f] == BINNED and mine is not None:
                a, b = self.disc[mine], other.disc[f]
                # both still in warm-up with room for both buffers: concatenating them
                # is exactly what a sequential run would have buffered
                both_warm = a.edges is None and b.edges is None and len(a.buffer) + len(b.buffer) < a.warmup
                if not a.same_as(b) and not both_warm and (b.edges is not None or b.buffer):
                    raise MergeError(
                        f"feature {name!r}: the two models discretised it with different bin edges "
                        f"({None if a.edges is None else a.edges.tolist()} vs "
                        f"{None if b.edges is None else b.edges.tolist()}); declare the edges with "
                        f"bin_edges={{{name!r}: [...]}} in both models to merge them exactly"
                    )

        # align classes, features, values (in the other store's order, as a sequential run would)
        self.epoch += 1
        if self.tuples:
            new_v = sum(
                1 for col in range(1, len(other.value_keys))
                if other.value_feature[col] >= 0 and (other.features[other.value_feature[col]] not in self.feature_index
                or other.value_keys[col] not in (self.values[self.feature_index[other.features[other.value_feature[col]]]] or {}))
            )
            self._check_room(new_v, sum(1 for y in other.classes if y not in self.class_index))
        cmap = np.array([self.class_of(y) for y in other.classes], dtype=np.int64)
        fmap = np.empty(len(other.features), dtype=np.int64)
        for name, f in other.feature_index.items():
            mine = self.feature_index.get(name)
            if mine is None:
                mine = self._add_feature(name, other.kinds[f], few=f in other.few)
                if other.kinds[f] == BINNED:
                    self._set_discretiser(mine, Discretiser.from_state(other.disc[f].state()))
            elif other.kinds[f] == BINNED and self.disc[mine].edges is None and other.disc[f].edges is None:
                self.disc[mine].buffer.extend(other.disc[f].buffer)
            fmap[f] = mine
        vmap = np.zeros(len(other.value_keys), dtype=np.int64)
        for col in range(1, len(other.value_keys)):
            if other.value_feature[col] < 0:
                continue  # detached by a promotion: empty
            f = fmap[other.value_feature[col]]
            v = other.value_keys[col]
            mine = self.values[f].get(v)
            vmap[col] = mine if mine is not None else self.schema.add_value(f, v)
        if self.pairs_selected or other.pairs_selected:
            # every pair either store counts is counted, holding the sum of both stores' counts of it
            # (see _candidates.py: widen_to_either)
            widen_to_either(self, other, fmap)
        # every candidate parent either store counts the tuples of, likewise (_tuple_candidates.py)
        widen_tuples_to_either(self, other, fmap)
        C = len(other.classes)
        self.tables.add_class(cmap, other.class_count[:C])
        if other.keeps_observed and self.wants_observed:
            self.keep_observed()
        if self.pairs and (self.pairs_sparse or other.pairs_sparse or self.pairs_blocks or other.pairs_blocks):
            self.sync_pairs()  # pair blocks grown to the columns, features and classes aligned, before their cells
        self.tables.merge(other.tables, (cmap, vmap, fmap), (C, len(other.value_keys), len(other.features)),
                          self.pairs, self.tuples)
        for f_other, f in enumerate(fmap):
            if other.kinds[f_other] != GAUSS:
                continue
            go, g = other.gslot[f_other], self.gslot[f]
            nb = other.g_n[:C, go]
            present = nb > 0
            if present.any():
                self.moments.merge(cmap[present], g, nb[present], other.g_mean[:C, go][present], other.g_m2[:C, go][present])

    def few_overflow(self, other: typing.Self) -> list[tuple[int, int]]:
        """``(feature here, feature there)`` of each numeric feature both stores count by value
        (:attr:`few`) whose values together are more than ``few_max``: a sequential run would have turned it
        binned at the value that made them so many."""
        return [(mine, theirs) for name, theirs in other.feature_index.items()
                if theirs in other.few and (mine := self.feature_index.get(name)) in self.few
                and len(self.values[mine].keys() | other.values[theirs].keys()) > self.few_max]
