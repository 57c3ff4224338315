"""One event as indices into the store: for prediction (never changes anything) and for learning.

Learning (:meth:`Encoding.register`) validates the whole event first, then registers its new features and
values and feeds the discretisers, so a bad value anywhere leaves the store
untouched.
"""

from __future__ import annotations

import numpy as np

from ..._checks import is_integer
from ._shapes import shape_of
from ..values import (
    BINNED, CAT, EMPTY_FLOAT, EMPTY_INT, GAUSS, PROMOTE, Encoded, categorical_value, check_event, is_nan, numeric_value,
)

__all__ = ["Encoding"]


class Encoding:
    """Event encoding of a :class:`~stream_nb.stats.schema.Schema` (one of its seams: the state it reads is
    the schema's)."""

    def encode(self, x: dict) -> Encoded:
        """Indices of ``x`` for prediction; never changes the counts.

        Features never learned are ignored; a value never seen maps to column 0.
        When learning ``x`` would need nothing new, the encoding carries the
        schema's ``epoch``: :meth:`register` need not read it again.
        """
        if type(x) is not dict:
            check_event(x)
        enc = self._encode_known(x)
        if enc is None:
            return self._encode(x)
        # river's loop predicts x, then learns it: learning finds x's encoding here (the copy tells whether
        # x changed in between)
        self._cache["last"] = (x, dict(x), enc)
        return enc

    @property
    def usual_shape(self):
        """The :class:`~._shapes.EventShape` of the last event :meth:`encode` read by shape (None: none yet); it
        may be of an earlier epoch, which its keys and value types still describe."""
        return self._cache.get("shape")

    def _encode_known(self, x: dict) -> Encoded | None:
        """The fast paths of :meth:`encode`: an event of the usual shape (:mod:`._shapes`), or every value
        categorical and already known, the features then read off the columns (an encoding learning can
        take as is); None for anything else."""
        shape = self._cache.get("shape")
        if shape is None or shape.epoch != self.epoch:
            shape = self._cache["shape"] = shape_of(self, x)
        if shape is not None:
            enc = shape.encode(x)
            if enc is not None:
                return enc
        cat = self.value_types.by_python
        cols = []
        try:
            for name, v in x.items():
                cols.append(cat[type(v)][name][v])  # a value of another type than the feature's misses
        except (KeyError, TypeError):
            return None
        if cols:
            c = np.array(cols, dtype=np.int64)
            return Encoded(c, self.value_feature[c], EMPTY_INT, EMPTY_FLOAT, False, self.epoch)
        return Encoded(EMPTY_INT, EMPTY_INT, EMPTY_INT, EMPTY_FLOAT, False, self.epoch)

    def _encode(self, x: dict) -> Encoded:
        lookup, ok = self._lookup, self.value_types.ok
        cols, feats, gs, gx = [], [], [], []
        reusable = True  # learning x would need nothing new
        unseen = False
        for name, v in x.items():
            e = lookup.get(name)
            if e is None:
                if v is not None and not is_nan(v):
                    reusable = False
                continue
            kind, f, vals, g, d = e
            if kind == CAT:
                try:
                    col = vals.get(v)
                except TypeError:
                    categorical_value(name, v)
                    raise
                if col is None:
                    v = categorical_value(name, v)
                    if v is None:
                        continue
                    col, unseen = 0, True
                if type(v) not in ok[f]:
                    self._check_value(f, name, v)
                cols.append(col)
                feats.append(f)
                continue
            fv = numeric_value(name, v)
            if fv is None:
                continue
            if kind == GAUSS:
                gs.append(g)
                gx.append(fv)
                continue
            if d.edges is None:
                reusable = False
                continue
            col = vals.get(d.bin(fv))
            if col is None:
                col, unseen = 0, True
            cols.append(col)
            feats.append(f)
        return Encoded(
            np.array(cols, dtype=np.int64) if cols else EMPTY_INT,
            np.array(feats, dtype=np.int64) if feats else EMPTY_INT,
            np.array(gs, dtype=np.int64) if gs else EMPTY_INT,
            np.array(gx, dtype=float) if gx else EMPTY_FLOAT,
            unseen,
            self.epoch if reusable and not unseen else -1,
        )

    def reusable(self, x: dict, known: Encoded | None = None) -> Encoded | None:
        """``x``'s encoding for prediction when learning ``x`` needs nothing new (its ``epoch`` is the
        schema's), else None: ``known`` when the caller has it, the one :meth:`encode` made when it was
        given this same dict, unchanged since (river's loop predicts ``x``, then learns it), or one read now."""
        if type(x) is not dict:
            check_event(x)
        if known is None:
            last = self._cache.get("last")
            if last is not None and last[0] is x and last[2].epoch == self.epoch and x == last[1]:
                return last[2]  # predicted just before, and unchanged since
            known = self._encode_known(x)  # every value a known category: nothing to register
        return known if known is not None and known.epoch == self.epoch else None

    def _plan(self, x: dict):
        """Validate ``x`` completely, without changing anything.

        Returns the known columns and the work still to do (new features, new
        values, numeric values to bin) so that a bad value anywhere in ``x``
        leaves the store untouched.
        """
        lookup, ok = self._lookup, self.value_types.ok
        cols, feats, gs, gx = [], [], [], []
        todo = []  # (name, f or None, kind, value) still needing allocation or binning
        for name, v in x.items():
            e = lookup.get(name)
            if e is not None:
                kind, f, vals, g, d = e
                if kind == CAT:
                    try:
                        col = vals.get(v)
                    except TypeError:
                        categorical_value(name, v)
                        raise
                    if col is not None:
                        if type(v) not in ok[f]:
                            self._check_value(f, name, v)
                        cols.append(col)
                        feats.append(f)
                        continue
                    v = numeric_value(name, v) if f in self.few else categorical_value(name, v)
                    if f in self.from_int:  # a number it may turn numeric with: within NUMERIC_LIMIT
                        _numeric_check(name, v)
                    if v is not None:
                        if type(v) not in ok[f]:
                            self._check_value(f, name, v)
                        todo.append((name, f, PROMOTE if self._promotes(f, v) else CAT, v))
                    continue
                fv = numeric_value(name, v)
                if fv is None:
                    continue
                if kind == GAUSS:
                    gs.append(g)
                    gx.append(fv)
                else:
                    todo.append((name, f, BINNED, fv))
                continue
            if v is None or is_nan(v):
                continue
            k = self.kind_for(name, v)
            v = categorical_value(name, v) if k == CAT and not self.counts_by_value(name, v) else numeric_value(name, v)
            if k == CAT and name not in self.types:  # inferred from a number: it may turn numeric
                _numeric_check(name, v)
            if v is not None:
                todo.append((name, None, k, v))
        return cols, feats, gs, gx, todo

    def register(self, x: dict, room=None, promote=None) -> Encoded:
        """Indices of ``x`` for learning: validates all of ``x`` first, then registers its new features and
        values and feeds the discretisers.

        ``room(k, new)``, when given, is asked before anything changes, with ``k`` the values ``x``
        observes and ``new`` those still to register: the tables refuse an event there (the memory
        budget, a t-way table's bound). ``promote(f)`` turns feature ``f`` numeric where a value of ``x``
        does (:meth:`promote` when not given: the tables move the counts and call it).
        """
        cols, feats, gs, gx, todo = self._plan(x)
        if room is not None:
            room(len(cols) + len(todo), len(todo))
        for name, f, k, v in todo:
            if k == PROMOTE:
                (promote or self.promote)(f)
                k = self.kinds[f]
                if k == GAUSS:
                    gs.append(self.gslot[f])
                    gx.append(v)
                    continue
            if f is None:
                f = self.add_feature(name, k, from_int=k == CAT and name not in self.types and is_integer(v),
                                     few=k == CAT and self.counts_by_value(name, v))
                if k == GAUSS:
                    gs.append(self.gslot[f])
                    gx.append(v)
                    continue
            if k == BINNED:
                v = self.disc[f].bin_or_buffer(v)
                if v is None:
                    continue
            col = self.values[f].get(v)
            if col is None:
                col = self.add_value(f, v)
            cols.append(col)
            feats.append(f)
        return Encoded(
            np.array(cols, dtype=np.int64) if cols else EMPTY_INT,
            np.array(feats, dtype=np.int64) if feats else EMPTY_INT,
            np.array(gs, dtype=np.int64) if gs else EMPTY_INT,
            np.array(gx, dtype=float) if gx else EMPTY_FLOAT,
        )


def _numeric_check(name, v) -> None:
    """Refuse a number beyond :data:`~stream_nb.stats.NUMERIC_LIMIT` as a category of a feature inferred from
    integers: a fraction later turns that feature numeric, and its moments could not hold the value."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        numeric_value(name, v)
