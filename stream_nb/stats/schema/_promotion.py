"""Promotion: a categorical feature inferred from integers turns numeric at its first fraction.

JSON has one number type, so a feature whose first value was ``0`` and whose
next ones are ``1234.5`` is numeric. :meth:`Promotion.promote` converts its
counts exactly: Gaussian moments from the per-value counts (naive Bayes), or
bins chosen from the values seen so far (the discretising models).
"""

from __future__ import annotations

import numpy as np

from ..discretiser import Discretiser
from ..values import BINNED, GAUSS

__all__ = ["Promotion"]


class Promotion:
    """Promotion of features of a :class:`~stream_nb.stats.Stats` (a part of it, not used alone)."""

    def _promotes(self, f: int, v) -> bool:
        """True when value ``v`` turns categorical feature ``f`` numeric: ``f`` was inferred
        (not declared) from an integer, every value so far is a number, and ``v`` is not a whole number;
        or ``f`` is a numeric feature counted by value (:attr:`few`) and ``v`` is one value more than
        ``few_max``."""
        if f in self.few:
            return v not in self.values[f] and len(self.values[f]) >= self.few_max
        if f not in self.from_int or not isinstance(v, float) or v.is_integer():
            return False
        return all(isinstance(k, (int, float)) and not isinstance(k, bool) for k in self.values[f])

    def promotion_drops(self, f: int) -> bool:
        """Whether promoting feature ``f`` now would drop its counts (its values becoming warm-up values, see
        :meth:`promote`): a discretising store, no edges of its own, fewer than ``warmup`` values seen."""
        if self.numeric == "gaussian" or f not in self.from_int or self.features[f] in self.bin_edges:
            return False
        return int(self.times_seen(self.columns_of(f)).sum()) < self.warmup

    def times_seen(self, cols: np.ndarray) -> np.ndarray:
        """How many times each value of columns ``cols`` was seen, as warm-up values count them (at least
        once each): from the observed-only counts when the store keeps them (EM's expected counts are no
        values seen, and would make warm-up values of imputations)."""
        counts = self.obs_value_count if self.keeps_observed else self.value_count
        return np.maximum(np.rint(counts[: self.n_classes, cols].sum(0)), 1).astype(int)

    def promote(self, f: int) -> None:
        """Turn categorical feature ``f`` numeric, converting its counts exactly.

        JSON has one number type: a feature whose first value was ``0`` and
        whose next ones are ``1234.5`` is numeric. Naive Bayes' Gaussian
        moments per class are computed from the per-value counts; the
        discretising models choose bin edges from the values seen so far
        (weighted by their counts) and add every value's counts, pairs and
        tuples into its bin. The old value columns stay, empty and detached.
        """
        self.blocks_to_sparse()  # pair blocks keep each column's feature: its counts move in sparse tables
        name = self.features[f]
        old = self.columns_of(f)
        keys = np.array([float(self.value_keys[c]) for c in old.tolist()])
        C = self.n_classes
        counts = self.value_count[:C, old]
        self.from_int.discard(f)
        self.few.discard(f)
        self._set_vtype(f, None)
        if self.numeric == "gaussian":
            self._reserve(g=1)
            g = self.n_gauss
            self.n_gauss += 1
            self.gauss_feature.append(f)
            self.kinds[f], self.values[f], self.gslot[f] = GAUSS, None, g
            self.moments.set_from_counts(g, counts, keys)
            for p in self._sets():
                getattr(self, p + "feat_count")[:C, f] = 0.0
            self.n_values[f] = 0
            self.promoted[f] = "gauss"
        else:
            d = Discretiser(self.bins, self.warmup, self.bin_edges.get(name))
            seen = np.repeat(keys, self.times_seen(old))
            self.kinds[f], self.values[f], self.disc[f] = BINNED, {}, d
            self.n_values[f] = 0
            if d.edges is None and len(seen) < self.warmup:
                # as if it had been numeric all along: its values so far are warm-up values,
                # which teach the bin edges only and are not counted
                d.buffer = seen.tolist()
                self._drop_columns(f, old)
                self.promoted[f] = "drop"
            else:
                if d.edges is None:  # enough values: the edges come from all of them
                    d.buffer = seen.tolist()
                    d._choose()
                new = np.array([self.values[f].get(b) or self._add_value(f, b) for b in d.bin_many(keys).tolist()])
                self._merge_columns(old, new)
                self.promoted[f] = "bins"
        for p in self._sets():
            getattr(self, p + "value_count")[:, old] = 0.0
        self.value_feature[old] = -1
        self._lookup[name] = (self.kinds[f], f, self.values[f], self.gslot[f], self.disc[f])
        self.epoch += 1

    def _drop_columns(self, f: int, old: np.ndarray) -> None:
        """Forget every count of feature ``f``'s columns ``old``, as if its values had been missing."""
        for p in self._sets():
            getattr(self, p + "feat_count")[:, f] = 0.0
            if self.pairs and self.pairs_sparse:
                self._remap_sparse(p, ("pair_count", "pair_feat"), 2, old, np.full(len(old), -1), f)
            elif self.pairs:
                pair_count, pair_feat = getattr(self, p + "pair_count"), getattr(self, p + "pair_feat")
                pair_feat[:, :, f] -= pair_count[:, :, old].sum(2)
                pair_count[:, old, :] = 0.0
                pair_count[:, :, old] = 0.0
                pair_feat[:, old, :] = 0.0
            if self.tuples and self.tuples_sparse:
                self._remap_sparse_tuples(p, old, np.full(len(old), -1), f)
            elif self.tuples:
                t = self.tuples
                tuple_count, tuple_feat = getattr(self, p + "tuple_count"), getattr(self, p + "tuple_feat")
                lead = (slice(None),) * t
                tuple_feat[lead + (f,)] -= tuple_count[lead + (old,)].sum(-1)
                for axis in range(1, t + 1):
                    idx = [slice(None)] * (t + 1)
                    idx[axis] = old
                    tuple_count[tuple(idx)] = 0.0
                for axis in range(1, t):
                    idx = [slice(None)] * (t + 1)
                    idx[axis] = old
                    tuple_feat[tuple(idx)] = 0.0

    def _merge_columns(self, old: np.ndarray, new: np.ndarray) -> None:
        """Add the counts of columns ``old`` into ``new`` (pairwise) along every value axis."""
        for p in self._sets():
            self._merge_columns_of(p, old, new)

    def _remap_sparse_tuples(self, p: str, old: np.ndarray, new: np.ndarray, drop_feature: int = -1) -> None:
        self._remap_sparse(p, ("tuple_count", "tuple_feat"), self.tuples, old, new, drop_feature)

    def _remap_sparse(self, p: str, family: tuple, t: int, old: np.ndarray, new: np.ndarray, drop_feature: int = -1) -> None:
        """Sparse t-way tables ``family`` (the pairs': t = 2) of count set ``p``: the counts of columns
        ``old`` moved to ``new`` along every value axis (-1: dropped), and with ``drop_feature`` >= 0
        that feature's cells dropped."""
        for k, n_value_axes in zip(family, (t, t - 1)):
            table = getattr(self, p + k)
            cmap = np.arange(table.shape[1])
            cmap[old] = new
            maps = [None] + [cmap] * n_value_axes
            if k == family[1]:
                fmap = np.arange(table.shape[-1])
                if drop_feature >= 0:
                    fmap[drop_feature] = -1
                maps.append(fmap)
            setattr(self, p + k, table.remap(maps))

    def _merge_columns_of(self, p: str, old: np.ndarray, new: np.ndarray) -> None:
        if self.tuples and self.tuples_sparse:
            self._remap_sparse_tuples(p, old, new)
        if self.pairs and self.pairs_sparse:
            self._remap_sparse(p, ("pair_count", "pair_feat"), 2, old, new)
        value_count = getattr(self, p + "value_count")
        pair_count, pair_feat = getattr(self, p + "pair_count", None), getattr(self, p + "pair_feat", None)
        tuple_count, tuple_feat = getattr(self, p + "tuple_count", None), getattr(self, p + "tuple_feat", None)
        for o, n in zip(old.tolist(), new.tolist()):
            value_count[:, n] += value_count[:, o]
            if self.pairs and not self.pairs_sparse:
                pair_count[:, n, :] += pair_count[:, o, :]
                pair_count[:, o, :] = 0.0
                pair_count[:, :, n] += pair_count[:, :, o]
                pair_count[:, :, o] = 0.0
                pair_feat[:, n, :] += pair_feat[:, o, :]
                pair_feat[:, o, :] = 0.0
            if self.tuples and not self.tuples_sparse:
                for axis in range(1, self.tuples + 1):
                    src = [slice(None)] * (self.tuples + 1)
                    dst = list(src)
                    src[axis], dst[axis] = o, n
                    tuple_count[tuple(dst)] += tuple_count[tuple(src)]
                    tuple_count[tuple(src)] = 0.0
                for axis in range(1, self.tuples):
                    src = [slice(None)] * (self.tuples + 1)
                    dst = list(src)
                    src[axis], dst[axis] = o, n
                    tuple_feat[tuple(dst)] += tuple_feat[tuple(src)]
                    tuple_feat[tuple(src)] = 0.0
