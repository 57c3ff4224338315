"""Runs of events given as numpy columns (a DataFrame's, :meth:`Columns.from_frame`): encoded with numpy.

:meth:`Frames.encode_run <stream_nb.stats.schema._frames.Frames.encode_run>` hands
:class:`~stream_nb.stats.Columns` of arrays here. Each column is encoded at once
for all the events from the run's start: a categorical feature's values become
value columns through a table over the column's distinct values (a table over
the range for integers and booleans, ``np.unique`` for floats, a dict of the
first row of each for Python objects), so the only Python step is per distinct value; a numeric
feature's floats are taken as they are, a discretised one's binned by
``bin_many``. Each event is then *plain* or not, as ``encode_run`` defines it,
by the same rules of value types as one event at a time (:data:`PLAIN_TYPES`:
a boolean column holds no number, an integer column no string).

What is encoded is kept with the events, per store: the next run reads it
again, and after an event taken one at a time has changed the store (a new
value, class or feature, bin edges, a promotion), only the columns whose
feature changed are encoded again, from that event on.
"""

from __future__ import annotations

import math
import sys
from itertools import count, repeat

import numpy as np

from ..values import Columns
from ..values import CAT, GAUSS, NONE_TYPE, NUMERIC_LIMIT, hashable, number_column

__all__ = ["ArrayRuns", "frame_events"]

#: A value column's stand-ins while a column is encoded: a value not seen yet, and one no run takes.
_UNKNOWN, _BAD = -3, -4
#: Integer columns whose values span at most this many (plus twice their length) take a table over their
#: range; others np.unique.
_RANGE = 64


def frame_events(xs, ys):
    """``(xs, ys)`` as the runs read them: a pandas DataFrame as :class:`Columns` of arrays (its labels
    a list, NaN and None unlabeled); labels given as an array or a Series as a list; anything else as is.
    Called once by each method that takes many events, before it reads them."""
    pandas = sys.modules.get("pandas")  # a DataFrame's caller has imported pandas: no import here
    if pandas is not None and isinstance(xs, pandas.DataFrame):
        xs = Columns.from_frame(xs)
    elif isinstance(xs, Columns):
        xs.encodings.clear()  # encoded afresh in each call: its arrays or the labels may have changed since
    if type(ys) is not list and (isinstance(ys, np.ndarray) or (pandas is not None and isinstance(ys, pandas.Series))):
        values = ys.to_numpy(dtype=object, na_value=None) if not isinstance(ys, np.ndarray) else ys
        ys = values.tolist()
        if values.dtype.kind in "fO" and float in set(map(type, ys)):
            ys = [None if type(y) is float and y != y else y for y in ys]
    elif isinstance(xs, Columns) and xs.arrays and float in set(map(type, ys)):
        ys = [None if type(y) is float and y != y else y for y in ys]
    return xs, ys


class _State:
    """What one store has encoded of one :class:`Columns` of arrays (see the module notes)."""

    __slots__ = ("epoch", "flags", "keys", "refs", "D", "G", "bad", "unknown", "yc", "label_key", "labels",
                 "nonplain", "names", "block", "block_unknown", "block_key")

    def __init__(self):
        self.epoch = self.flags = self.label_key = self.D = self.G = self.yc = self.labels = None
        self.keys, self.refs, self.bad, self.unknown = {}, {}, {}, {}
        self.nonplain = None
        self.names = ()
        #: the columns encoded together from the matrix (:meth:`ArrayRuns._encode_block`), ``block_unknown`` the
        #: events with a value never seen among them (None: none); valid while ``block_key`` is the store's
        self.block: dict = {}
        self.block_unknown = self.block_key = None


class ArrayRuns:
    """The array runs of a :class:`~stream_nb.stats.schema.Schema` (one of its seams: the state it reads is
    the schema's)."""

    def encode_array_run(self, xs: Columns, ys: list, start: int, complete: bool, limit: int, unseen: bool):
        """:meth:`encode_run` of :class:`Columns` of arrays (no values registered within a run): events
        ``xs[start:]`` while each is plain, at most ``limit``; the same ``(stop, D, G, yc)``."""
        self.run_new = None
        n = len(xs)
        end = min(n, start + limit)
        state = self._array_state(xs)
        if state.epoch != self.epoch or state.flags != (complete, unseen):
            self._refresh(xs, ys, state, start, complete, unseen)
        window = state.nonplain[start:end]
        stop = start + int(window.argmax()) if window.any() else end
        return stop, state.D[start:stop].copy(), state.G[start:stop].copy(), state.yc[start:stop].copy()

    def _array_state(self, xs: Columns) -> _State:
        held = xs.encodings.get(id(self))
        if held is None or held[0] is not self:
            held = xs.encodings[id(self)] = (self, _State())
        return held[1]

    def _column_key(self, f: int):
        """What feature ``f``'s encoding depends on (ids of objects the state keeps, so none is reused)."""
        kind = self.kinds[f]
        if kind == GAUSS:
            return (GAUSS,), ()
        vals, d = self.values[f], self.disc[f]
        edges = None if d is None else d.edges
        return (kind, id(vals), len(vals), self.vtypes[f], len(self._vt_ok[f]), id(d), id(edges)), (vals, d, edges)

    def _refresh(self, xs: Columns, ys: list, state: _State, start: int, complete: bool, unseen: bool) -> None:
        """Bring ``state`` up to the store from event ``start`` on: encode again the columns whose feature
        changed (all of them when the flags or the store's shape did), the labels when the classes did."""
        n, F, Gs = len(xs), len(self.features), self.n_gauss
        flags = (complete, unseen)
        fresh = state.flags != flags or state.D is None or state.D.shape[1] != F or state.G.shape[1] != Gs
        if fresh:
            D, G = np.full((n, F), -1, dtype=np.int64), np.full((n, Gs), np.nan)
            if state.D is not None:  # the columns kept: those of the features known then
                m, g = min(F, state.D.shape[1]), min(Gs, state.G.shape[1])
                D[:, :m], G[:, :g] = state.D[:, :m], state.G[:, :g]
            state.D, state.G = D, G
            if state.flags != flags:
                state.keys.clear()
        columns, changed = xs.columns, False
        if xs.matrix is not None and (fresh or state.block_key != self._block_key()):
            state.block, state.block_key, changed = {}, None, True
            if self._encode_block(xs, state, start) and state.keys:
                for name in columns:  # the block's columns are its now
                    state.keys.pop(name, None)
                    state.bad.pop(name, None)
                    state.unknown.pop(name, None)
        for name, values in columns.items() if len(state.block) < len(columns) else ():
            if name in state.block:
                continue
            f = self.feature_index.get(name)
            key, refs = self._column_key(f) if f is not None else ((None,), ())
            if state.keys.get(name) == key:
                continue
            state.keys[name], state.refs[name], changed = key, refs, True
            state.bad[name], state.unknown[name] = self._encode_array(name, f, values, start, state, complete)
        if state.names != tuple(self.features) or changed:  # features the events lack: missing in every event
            lacking = complete and any(self.kinds[f] != GAUSS for f, name in enumerate(self.features)
                                       if name not in columns)
            state.bad[_ABSENT] = np.ones(n, dtype=bool) if lacking else None
            state.names = tuple(self.features)
        label_key = (len(self.classes), len(self.labels.checked))
        if state.label_key != label_key:
            state.label_key, state.yc = label_key, self._label_codes(ys, state)
        bad = [b for b in state.bad.values() if b is not None]
        nonplain = np.logical_or.reduce(bad)[start:] if bad else np.zeros(n - start, dtype=bool)
        unknown = [u for name, u in state.unknown.items() if u is not None and name not in state.block]
        if state.block and state.block_unknown is not None:
            unknown.append(state.block_unknown)
        if unknown:
            unknown = np.logical_or.reduce(unknown)[start:]
            nonplain |= unknown & (state.yc[start:] >= 0) if unseen else unknown
        nonplain |= state.yc[start:] == -2
        state.nonplain = np.empty(n, dtype=bool)
        state.nonplain[start:] = nonplain
        state.epoch, state.flags = self.epoch, flags

    def _block_key(self) -> tuple:
        """What the block's table depends on: the store's values (only ever appended to, by ``add_value``,
        until a two-layer store derives a new coarse layer) and its promotions (a feature turning numeric)."""
        return id(self.values), len(self.value_keys), len(self.promoted), len(self.features)

    def _encode_block(self, xs: Columns, state: _State, start: int) -> bool:
        """Encode the columns of an integer (or boolean) matrix at once, when each is a categorical feature
        that takes its values as they are and they span few values: one table (columns, range) of value
        columns, one gather. Returns whether it did (else each column is encoded alone)."""
        A = xs.matrix
        if len(A) <= start:
            return False
        names = tuple(xs.columns)
        fs = [self.feature_index.get(name) for name in names]
        held = self._matrix_codes(A[start:], names, fs)
        if held is None:
            return False
        codes, unseen = held
        state.block_unknown = None
        if unseen:
            unknown = codes == _UNKNOWN
            codes[unknown] = 0  # a value never seen: column 0, as encode() gives it
            state.block_unknown = np.zeros(len(A), dtype=bool)
            state.block_unknown[start:] = unknown.any(axis=1)
        if fs == list(range(state.D.shape[1])):
            state.D[start:] = codes
        else:
            state.D[start:, fs] = codes
        state.block = dict.fromkeys(names)
        state.block_key, state.refs[_BLOCK] = self._block_key(), self.values  # (kept: its id stays its own)
        return True

    def _matrix_codes(self, A: np.ndarray, names: tuple, fs: list):
        """``(codes, unseen)``: the value columns of integer (or boolean) matrix ``A`` (rows, features ``fs``
        named ``names``), :data:`_UNKNOWN` where a value was never seen (``unseen``: one was), through one table
        (columns, range) and one gather; None unless each feature is categorical and takes the values as they
        are, and they span few values."""
        if A.dtype.kind not in "iub" or A.dtype == np.uint64:  # (uint64 + int64: floats)
            return None
        t = bool if A.dtype.kind == "b" else int
        if None in fs or not all(self.kinds[f] == CAT and t in self._vt_ok[f] for f in fs):
            return None
        sub = A.view(np.uint8) if t is bool else A
        lo, hi = sub.min(axis=0), sub.max(axis=0)
        key = (self._block_key(), names, lo.tobytes(), hi.tobytes())
        held = self._cache.get("block_table")
        if held is None or held[0] != key:  # the table of the last frame serves the next one of the same values
            width = int((hi - lo).max()) + 1
            if width > _RANGE + 2 * len(sub):
                return None
            table = np.zeros((len(fs), width), dtype=np.int64)  # (beyond a column's range: never read)
            for j, (f, low, high) in enumerate(zip(fs, lo.tolist(), hi.tolist())):
                get = self.values[f].get
                table[j, : high - low + 1] = [get(t(v), _UNKNOWN) for v in range(low, high + 1)]
            unseen = bool((table == _UNKNOWN).any())
            held = self._cache["block_table"] = (key, table.ravel(), np.arange(len(fs)) * width - lo, unseen,
                                                 self.values)
        _, flat, offset, unseen, _ = held
        return flat[sub + offset], unseen  # each value's entry in its column's row of the table

    def _label_codes(self, ys: list, state: _State) -> np.ndarray:
        """Each label's class index: -1 unlabeled (None), -2 a label no run takes (a class not known yet,
        or of a type not checked to be the labels' type)."""
        n, classes = len(ys), self.class_index
        try:
            yc = np.fromiter(map(classes.get, ys, repeat(-2, n)), dtype=np.int64, count=n)
        except TypeError:  # an unhashable label: no run takes it (the one-event path names it)
            yc = np.array([classes.get(y, -2) if hashable(y) else -2 for y in ys], dtype=np.int64)
        types = set(map(type, ys))
        if NONE_TYPE in types:
            if state.labels is None:
                state.labels = np.array(ys, dtype=object) if n else np.empty(0, dtype=object)
            yc[np.equal(state.labels, None)] = -1
        if not types - {NONE_TYPE} <= self.labels.checked:  # a type not checked yet: the one-event path checks it
            ok = self.labels.checked | {NONE_TYPE}
            yc[~np.fromiter(map(ok.__contains__, map(type, ys)), dtype=bool, count=n)] = -2
        return yc

    def _encode_array(self, name, f: int | None, values: np.ndarray, start: int, state: _State, complete: bool):
        """Encode array column ``values`` of feature ``f`` (None: a feature the store does not know) from
        event ``start`` into ``state.D``/``state.G``; return ``(bad, unknown)`` (n,) masks (or None): the
        events no run takes for this column, and those with a value never seen (a run takes them unlabeled)."""
        a = values[start:]
        n, kind = len(values), a.dtype.kind
        if kind == "O":
            missing = np.equal(a, None)
            if float in set(map(type, a.tolist())):  # NaN among the objects: missing too
                missing |= np.fromiter((type(v) is float and v != v for v in a.tolist()), dtype=bool, count=len(a))
        elif kind == "f":
            missing = np.isnan(a)
        else:
            missing = None  # integers and booleans hold no missing value
        bad = np.zeros(n, dtype=bool)
        if f is None:  # a value of a feature not known yet: learning it adds the feature
            bad[start:] = True if missing is None else ~missing
            return bad, None
        k = self.kinds[f]
        if k == CAT:
            cols = self._categorical_codes(f, a, missing)
        else:
            x = self._numbers(a, missing)
            ok = np.abs(x) <= NUMERIC_LIMIT  # NaN (missing) and the numbers no run takes are not
            if k == GAUSS:
                state.D[start:, f] = -1
                state.G[start:, self.gslot[f]] = np.where(ok, x, np.nan)
                bad[start:] = ~ok & ~np.isnan(x)
                return bad, None
            d = self.disc[f]
            if d.edges is None:  # learning a value feeds the discretiser's warm-up
                cols = np.where(np.isnan(x), -1, _BAD)
            else:
                lut = np.full(len(d.edges) + 1, _UNKNOWN, dtype=np.int64)
                for key, col in self.values[f].items():
                    lut[key] = col
                cols = np.where(ok, lut[d.bin_many(np.where(ok, x, 0.0))], np.where(np.isnan(x), -1, _BAD))
        unknown = np.zeros(n, dtype=bool)
        unknown[start:] = cols == _UNKNOWN
        bad[start:] = (cols == _BAD) | (cols == -1) if complete else cols == _BAD  # complete: EM's E-step
        state.D[start:, f] = np.where(cols < -1, 0, cols)  # a value never seen: column 0, as encode() gives it
        return bad, unknown

    def _numbers(self, a: np.ndarray, missing) -> np.ndarray:
        """Floats of a numeric feature's values: NaN where missing, inf where not a number a run takes
        (a boolean, a string, a number beyond :data:`NUMERIC_LIMIT`)."""
        kind = a.dtype.kind
        if kind == "b":
            return np.full(len(a), np.inf)
        if kind in "iu":
            return a.astype(float)
        if kind == "f":
            return a.astype(float, copy=False)
        x = number_column(a.tolist())
        x[missing] = np.nan
        return x

    def _categorical_codes(self, f: int, a: np.ndarray, missing) -> np.ndarray:
        """Value columns of categorical feature ``f``'s values ``a``: -1 missing, :data:`_UNKNOWN` a value
        never seen, :data:`_BAD` a value of a type the feature does not take as it is (the one-event
        path checks it) or an infinite number."""
        ok, vals, kind = self._vt_ok[f], self.values[f], a.dtype.kind
        if kind == "b":
            if bool not in ok:
                return np.full(len(a), _BAD, dtype=np.int64)
            lut = np.array([vals.get(False, _UNKNOWN), vals.get(True, _UNKNOWN)], dtype=np.int64)
            return lut[a.view(np.uint8)]
        if kind in "iu":
            if int not in ok:
                return np.full(len(a), _BAD, dtype=np.int64)
            lo, hi = (int(a.min()), int(a.max())) if len(a) else (0, 0)
            if hi - lo <= _RANGE + 2 * len(a):
                lut = np.array([vals.get(v, _UNKNOWN) for v in range(lo, hi + 1)], dtype=np.int64)
                return lut[a - lo]
            uniques, inverse = np.unique(a, return_inverse=True)
            return np.array([vals.get(v, _UNKNOWN) for v in uniques.tolist()], dtype=np.int64)[inverse.reshape(-1)]
        if kind == "f":
            if float not in ok:
                return np.where(missing, -1, _BAD)
            uniques, inverse = np.unique(a, return_inverse=True)  # NaN last, missing
            lut = [_BAD if math.isinf(v) else vals.get(v, _UNKNOWN) for v in uniques.tolist()]
            return np.where(missing, -1, np.array(lut, dtype=np.int64)[inverse.reshape(-1)])
        # Python objects: each value of a type the feature takes as it is, then a table over the distinct ones
        values = a.tolist()
        types = set(map(type, values)) - {NONE_TYPE}
        taken = ~missing
        if not types <= ok:
            taken &= np.fromiter(map(ok.__contains__, map(type, values)), dtype=bool, count=len(a))
        out = np.where(missing, -1, _BAD)
        if taken.any():
            # each distinct value, keyed by the row it first occurs in (True and 1 would be one key: the values
            # taken are of the feature's JSON type)
            taken_values = a[taken].tolist() if not taken.all() else values
            first: dict = {}
            codes = np.fromiter(map(first.setdefault, taken_values, count()), dtype=np.int64, count=len(taken_values))
            lut = np.empty(len(taken_values), dtype=np.int64)
            for v, row in first.items():
                lut[row] = _BAD if isinstance(v, (float, np.floating)) and math.isinf(v) else vals.get(v, _UNKNOWN)
            out[taken] = lut[codes]
        return out


#: The key of the mask that marks every event bad when a feature the events lack is missing under ``complete``.
_ABSENT = object()
#: The key under which the state keeps the object the block's key names by id.
_BLOCK = object()
