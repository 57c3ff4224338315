"""Taking back what learning added: the exact inverse of the additions of one event.

While :attr:`Stats.journal <stream_nb.stats.Stats.journal>` is a list, every
addition appends an entry saying exactly what it added:

==============================================  ==========================================
entry                                           added by
==============================================  ==========================================
``("count", enc, c, w)``                        :meth:`Stats.add` (class and discrete counts)
``("gauss", c, w, gslots, gx)``                 :meth:`Stats.add_gaussian` (Welford)
``("observed", enc, c, w)``                     :meth:`Stats.add_observed` (the observed-only twin)
``("expected", c, w, u, m, feats_u, J)``        :meth:`Stats.add_expected` (EM's M-step)
``("many", D, dfeats, G, gslots, yc, w, obs)``  :meth:`Stats.add_many` (KDB's M-step)
==============================================  ==========================================

:meth:`Removing.remove` takes such entries back, last first: the counts are
subtracted (integer counts come back exactly; EM's fractional ones within
floating-point rounding), and the Gaussian moments follow the reverse of the
weighted Welford update, back to exactly zero when a class loses its last
value. Everything is checked first: a count that would fall below zero means
the event was never learned (or was already taken back), and then nothing changes.
"""

from __future__ import annotations

import numpy as np

from ...exceptions import UnlearnError
from ..forgetting import follow_promotions
from ..selection import selected_tuple_cells

__all__ = ["Removing"]

# a count may be short of the weight to remove by this much (relative) and still be taken: EM's
# fractional counts are sums of floats; integer counts are exact either way
_SLACK = 1e-9


class Removing:
    """Removal of learned events from a :class:`~stream_nb.stats.Stats` (a part of it, not used alone)."""

    def remove(self, entries) -> None:
        """Take back ``entries`` (a journal, see the module notes), last first; :class:`UnlearnError` and no
        change at all when some count would fall below zero."""
        self.check_pairs_whole()
        entries = follow_promotions(self, entries)  # a receipt of before a promotion names old columns
        for e in entries:
            self._check_entry(e)
        for e in reversed(entries):
            kind = e[0]
            if kind == "count":
                _, enc, c, w = e
                self.tables.add_class(c, -w)
                if len(enc.cols):
                    for p in self._sets():
                        self._count(p, enc.cols, enc.feats, c, -w)
            elif kind == "gauss":
                self.moments.remove(*e[1:])
            elif kind == "observed":
                _, enc, c, w = e
                self._count("obs_", enc.cols, enc.feats, c, -w)
            elif kind == "expected":
                self._remove_expected(*e[1:])
            else:
                self._remove_many(*e[1:])
        self.version += 1

    # ------------------------------------------------------------------ checks

    def _short(self, have, w, what: str) -> None:
        have = np.asarray(have, dtype=float)
        need = np.asarray(w, dtype=float)
        bad = have < need - _SLACK * np.maximum(1.0, np.abs(need))
        if np.any(bad):
            got = float(np.broadcast_to(have, bad.shape)[bad].flat[0])
            raise UnlearnError(f"{what}: the counts hold {got:g}, less than the weight to unlearn; "
                               f"this event was never learned (or was unlearned already); nothing was changed")

    def _class_name(self, c: int) -> str:
        return f"class {self.classes[c]!r}"

    def _value_name(self, col: int) -> str:
        f = int(self.value_feature[col])
        return f"feature {self.features[f]!r} value {self.value_keys[col]!r}"

    def _check_count(self, p: str, enc, c: int, w: float) -> None:
        cols, feats = enc.cols, enc.feats
        vc = getattr(self, p + "value_count")[c, cols]
        for j, col in enumerate(cols.tolist()):
            self._short(vc[j], w, f"{self._value_name(col)} in {self._class_name(c)}")
        self._short(getattr(self, p + "feat_count")[c, feats], w, f"the features of the event in {self._class_name(c)}")
        if self.pairs:
            held = getattr(self, p + "pair_count")[c, cols[:, None], cols[None, :]]
            if self.pairs_selected:  # the pairs still counted (stats/selection/_candidates.py)
                held = held[self.pair_mask(feats)]
            self._short(held, w, f"the value pairs of the event in {self._class_name(c)}")
        if self.tuples and self.tuples_selected:  # the candidate parents' tuples still counted
            r, cells, _ = selected_tuple_cells(self, cols[None, :], feats, np.ones((1, len(cols)), dtype=bool))
            held = getattr(self, p + "tuple_count")[(c, *cells)] if len(r) else np.empty(0)
            self._short(np.ravel(held), w, f"the value tuples of the event in {self._class_name(c)}")
        elif self.tuples:
            # every t-tuple of the event's values, gathered alike from a dense or a sparse table
            tuples = getattr(self, p + "tuple_count")[(c, *np.ix_(*([cols] * self.tuples)))]
            self._short(np.ravel(tuples), w, f"the value tuples of the event in {self._class_name(c)}")

    def _check_entry(self, e) -> None:
        kind = e[0]
        if kind == "count":
            _, enc, c, w = e
            self._short(self.class_count[c], w, self._class_name(c))
            if len(enc.cols):
                for p in self._sets():
                    self._check_count(p, enc, c, w)
        elif kind == "gauss":
            _, c, w, gs, _gx = e
            self._short(self.g_n[c, gs], w, f"the numeric features of the event in {self._class_name(c)}")
        elif kind == "observed":
            _, enc, c, w = e
            if len(enc.cols):
                self._check_count("obs_", enc, c, w)
        elif kind == "expected":
            _, c, w, u, m, _f, _J = e
            self._short(self.class_count[c], w, self._class_name(c))
            self._short(self.value_count[c, u], w * m, f"the expected counts of the event in {self._class_name(c)}")
        elif kind == "many":
            yc, w = e[5], e[6]
            C = len(self.classes)
            w = np.ones(len(yc)) if w is None else np.asarray(w, dtype=float)
            self._short(self.class_count[:C], np.bincount(yc, weights=w, minlength=C), "the class counts")
        else:
            raise ValueError(f"unknown journal entry {kind!r}")

    # ------------------------------------------------------------------ the reverse updates

    def _remove_expected(self, c, w, u, m, feats_u, J) -> None:
        """The reverse of :meth:`add_expected`."""
        self.tables.add_class(c, -w)
        starts = np.flatnonzero(np.r_[True, feats_u[1:] != feats_u[:-1]])
        fs = feats_u[starts]
        self.tables.add_values("", c, u, -(w * m), fs, -w)
        if self.pairs:
            self.tables.add_expected_pairs(c, u, fs, -(w * J), -(w * np.add.reduceat(J, starts, axis=1)))

    def _remove_many(self, D, dfeats, G, gslots, yc, w, observed) -> None:
        """The reverse of :meth:`add_many`: the discrete counts with negated weights, the Gaussian
        moments by the inverse of the pairwise merge."""
        w = np.ones(len(yc)) if w is None else np.asarray(w, dtype=float)
        empty = np.empty((len(yc), 0))
        self.add_many(D, dfeats, empty, np.empty(0, dtype=np.int64), yc, -w, observed=observed)
        self.add_gaussian_rows(G, gslots, yc, w, remove=True)

    def remove_rows(self, D: np.ndarray, G: np.ndarray, yc: np.ndarray) -> None:
        """Take back rows of events learned by plain counting, weight 1 each, as :meth:`encode_run` encodes
        them (``D`` a column per feature, -1 where missing or numeric; ``G`` a column per Gaussian slot, NaN
        where missing; ``yc`` their classes): the reverse of adding them (:meth:`add_many`).

        Checked first, all at once: the counts of each class, of each (class, value) and (class, feature),
        and the Gaussian weights, must hold the rows (UnlearnError naming the first that does not, and
        nothing changed). The pair and tuple cells are those of the same rows."""
        self.check_pairs_whole()
        need = np.bincount(yc)
        short = np.flatnonzero(self.class_count[: len(need)] < need - _SLACK * need)
        if len(short):
            self._too_few(self._class_name(int(short[0])), self.class_count[short[0]], need[short[0]])
        rr, jj = np.nonzero(D >= 0)
        cc = yc[rr]
        for p in self._sets():
            for what, idx, name in (("value_count", D[rr, jj], self._value_name),
                                    ("feat_count", jj, lambda f: f"feature {self.features[f]!r}")):
                self._hold_cells(getattr(self, p + what), cc, idx, name)
        r, j = np.nonzero(~np.isnan(G))
        self._hold_cells(self.g_n, yc[r], j, lambda g: f"the numeric feature in slot {g}")
        self._remove_many(D, np.arange(D.shape[1]), G, np.arange(G.shape[1]), yc, None, True)
        self.version += 1

    def _hold_cells(self, table: np.ndarray, cc: np.ndarray, idx: np.ndarray, name) -> None:
        """UnlearnError unless ``table[c, i]`` holds as many as the pairs ``(cc, idx)`` name each cell."""
        if not len(cc):
            return
        width = table.shape[1]
        cells, need = np.unique(cc * width + idx, return_counts=True)
        have = table[cells // width, cells % width]
        short = np.flatnonzero(have < need - _SLACK * need)
        if len(short):
            k = int(short[0])
            c, i = divmod(int(cells[k]), width)
            self._too_few(f"{name(i)} in {self._class_name(c)}", have[k], need[k])

    @staticmethod
    def _too_few(what: str, have, need) -> None:
        raise UnlearnError(f"{what}: the counts hold {float(have):g}, less than the {int(need)} events to unlearn; "
                           "they were never learned (or were unlearned already); nothing was changed")
