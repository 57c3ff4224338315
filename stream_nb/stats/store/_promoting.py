"""Promotion, the tables' side: a feature's counts move when it turns numeric.

The schema turns the feature numeric (:meth:`Schema.promote <stream_nb.stats.schema.Schema.promote>`) and
says how its counts move; the tables move them exactly: Gaussian moments from the per-value counts (naive
Bayes), or every value's counts, pairs and tuples into its bin (the discretising models), or dropped when
its values so far become warm-up values of its discretiser.
"""

from __future__ import annotations

import numpy as np

__all__ = ["Promoting"]


class Promoting:
    """The counts' side of a promotion in a :class:`~stream_nb.stats.Stats` (a part of it, not used alone)."""

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
        schema, C = self.schema, self.n_classes
        old = schema.columns_of(f)
        counts = self.value_count[:C, old]
        moved = schema.promote(f, self.times_seen(old) if self.numeric == "bins" else None)
        if moved.rule == "gauss":
            self.moments.set_from_counts(int(moved.new[0]), counts, moved.keys)
            for p in self._sets():
                getattr(self, p + "feat_count")[:C, f] = 0.0
        elif moved.rule == "drop":
            self._drop_columns(f, moved.old)
        else:
            self._merge_columns(moved.old, moved.new)
        for p in self._sets():
            getattr(self, p + "value_count")[:, moved.old] = 0.0
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
            self.tables.replace(p + k, table.remap(maps))

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
