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
                self.tables.clear_feature(p, f, C)
        elif moved.rule == "drop":
            for p in self._sets():  # every count of its columns forgotten, as if its values had been missing
                self.tables.drop_columns(p, f, moved.old, self.pairs, self.tuples)
        else:
            for p in self._sets():  # every value's counts, pairs and tuples into its bin
                self.tables.move_columns(p, moved.old, moved.new, self.pairs, self.tuples)
        for p in self._sets():
            self.tables.clear_columns(p, moved.old)
        self.epoch += 1
