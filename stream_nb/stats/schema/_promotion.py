"""Promotion, the schema's side: a categorical feature inferred from integers turns numeric at its first fraction.

JSON has one number type, so a feature whose first value was ``0`` and whose
next ones are ``1234.5`` is numeric. :meth:`Promotion.promote` changes the
feature's kind, gives it a Gaussian slot or a discretiser and bins, detaches
its old value columns, and says how its counts move; the tables move them
(:meth:`Stats.promote <stream_nb.stats.Stats.promote>`).
"""

from __future__ import annotations

import typing

import numpy as np

from ..discretiser import Discretiser
from ..values import BINNED, EMPTY_INT, GAUSS

__all__ = ["Promoted", "Promotion"]


class Promoted(typing.NamedTuple):
    """How a promotion moves a feature's counts (:meth:`Promotion.promote`)."""

    #: ``"gauss"``: into Gaussian slot ``new[0]`` (naive Bayes); ``"drop"``: dropped, its values being
    #: warm-up values of its new discretiser; ``"bins"``: the counts of each ``old`` column into bin column ``new``
    rule: str
    old: np.ndarray  # the feature's value columns until now, detached
    new: np.ndarray
    keys: np.ndarray  # the value of each old column, as a float


class Promotion:
    """Promotion of features of a :class:`~stream_nb.stats.schema.Schema` (one of its seams: the state it
    reads is the schema's)."""

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

    def promote(self, f: int, times: np.ndarray | None = None) -> Promoted:
        """Turn categorical feature ``f`` numeric; how its counts move.

        A Gaussian schema gives it a Gaussian slot. A discretising one gives it a discretiser whose
        warm-up values are its values so far, each as many times as ``times`` says (in the order of
        :meth:`columns_of`; once each by default): fewer than ``warmup`` of them, and no edges declared,
        they teach the edges only, as if the feature had been numeric all along, and its counts are
        dropped; otherwise the edges come from them and each value's counts go into its bin (a column,
        registered here). The old value columns stay, detached.
        """
        name = self.features[f]
        old = self.columns_of(f)
        keys = np.array([float(self.value_keys[c]) for c in old.tolist()])
        self.from_int.discard(f)
        self.few.discard(f)
        self.set_vtype(f, None)
        if self.numeric == "gaussian":
            self._grow(g=1)
            g = self.n_gauss
            self.n_gauss += 1
            self.gauss_feature.append(f)
            self.kinds[f], self.values[f], self.gslot[f] = GAUSS, None, g
            self.n_values[f] = 0
            moved = Promoted("gauss", old, np.array([g]), keys)
        else:
            d = Discretiser(self.bins, self.warmup, self.bin_edges.get(name))
            seen = np.repeat(keys, 1 if times is None else times)
            self.kinds[f], self.values[f], self.disc[f] = BINNED, {}, d
            self.n_values[f] = 0
            if d.edges is None and len(seen) < self.warmup:
                d.buffer = seen.tolist()
                moved = Promoted("drop", old, EMPTY_INT, keys)
            else:
                if d.edges is None:  # enough values: the edges come from all of them
                    d.buffer = seen.tolist()
                    d._choose()
                new = np.array([self.values[f].get(b) or self.add_value(f, b) for b in d.bin_many(keys).tolist()])
                moved = Promoted("bins", old, new, keys)
        self.promoted[f] = moved.rule
        self.value_feature[old] = -1
        self._lookup[name] = (self.kinds[f], f, self.values[f], self.gslot[f], self.disc[f])
        self.epoch += 1
        return moved
