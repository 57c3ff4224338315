"""Many events at once, encoded against a schema: runs of plain events (prequential_many, learn_many) and
DataFrames to predict.

:class:`RunEncoder` is the part of a :class:`~stream_nb.stats.schema.Schema` that encodes many events in one
pass; the schema holds one (``runs``) and hands it its calls. It reads the schema's features, values and
classes through the schema's public names, and changes the schema only by registering values the way one
event at a time does (:meth:`Schema.add_value <stream_nb.stats.schema.Schema.add_value>`), so a run
registers new values in the order a row-by-row loop would, and the runs build the same store as
``learn_one`` over the rows. Its own state is the length of the next run's first window, the values the
last run met first (:attr:`RunEncoder.run_new`) and a cache of derived tables.

**Runs of dicts, lists or columns of Python values** are encoded in windows of growing length
(:meth:`RunEncoder.encode_run`).

**Runs of numpy columns** (a DataFrame's, :meth:`Columns.from_frame`) are encoded with numpy. Each column is
encoded at once for all the events from the run's start: a categorical feature's values become
value columns through a table over the column's distinct values (a table over
the range for integers and booleans, ``np.unique`` for floats, a dict of the
first row of each for Python objects), so the only Python step is per distinct value; a numeric
feature's floats are taken as they are, a discretised one's binned by
``bin_many``. Each event is then *plain* or not, as ``encode_run`` defines it,
by the same rules of value types as one event at a time (:data:`PLAIN_TYPES`:
a boolean column holds no number, an integer column no string).

What is encoded is kept with the events, per encoder: the next run reads it
again, and after an event taken one at a time has changed the store (a new
value, class or feature, bin edges, a promotion), only the columns whose
feature changed are encoded again, from that event on.
"""

from __future__ import annotations

import math
import numbers
import sys
from itertools import chain, count, repeat
from operator import itemgetter, methodcaller

import numpy as np

from ..._pandas import pd
from ...exceptions import FeatureTypeError
from ...kernels import compiled
from ..values import (
    BINNED, CAT, GAUSS, NONE_TYPE, NUMERIC_LIMIT, PLAIN_TYPES, VALUE_GROUPS, Columns, categorical_value, hashable,
    is_nan, json_type, number_column, numeric_value, short_repr,
)

__all__ = ["RunEncoder", "frame_events"]

_DICTS = frozenset({dict}).issuperset
#: The value types of events of integers alone (no missing value).
_INTS = {int}
_FLOATS_OR_NONE = frozenset({float, NONE_TYPE}).issuperset


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
        #: the columns encoded together from the matrix (:meth:`RunEncoder._encode_block`), ``block_unknown`` the
        #: events with a value never seen among them (None: none); valid while ``block_key`` is the store's
        self.block: dict = {}
        self.block_unknown = self.block_key = None


class RunEncoder:
    """The encoder of many events of a :class:`~stream_nb.stats.schema.Schema` (see the module notes).

    Parameters
    ----------
    schema
        The schema whose features, values and classes the events are encoded in.
    """

    def __init__(self, schema):
        self.schema = schema
        #: derived tables, each under the key of what it was derived from
        self._cache: dict = {}

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_cache"] = {}
        return state

    #: Fewest events encoded by the first window of a run; each next window is twice as long.
    _RUN_WINDOW = 32
    #: The first window of the next run: twice the last run's length (at least ``_RUN_WINDOW``), so runs
    #: that end early stay cheap and full runs go in one window.
    _window = _RUN_WINDOW
    #: The values the last run met first in a labeled row (``new_values``): ``(rows, [(f, v), ...], more)``
    #: in the order learning them one at a time registers them, ``more`` (rows, F) how many of each feature's
    #: the run has registered by each row (its own included); None when none. :meth:`register_run_values`
    #: registers them once the run is learned.
    run_new = None
    #: Temporary codes of new values while a run is encoded (-10, -11, ...): below -1 (missing).
    _NEW_CODE = -10

    def encode_run(self, xs: list, ys: list, start: int, complete: bool, limit: int, unseen: bool = False,
                   new_values: bool = False, room: int = 0):
        """Encode events ``xs[start:]`` while each is *plain*; stop at the first that is not.

        Whether an event is plain depends on the store alone, which encoding
        does not change, so a run is encoded in windows of growing length,
        joined end to end, the first twice as long as the last run: a run that
        stops early (an unlabeled event with a value no label has taught yet is
        common when labels come later) costs about its own length, not the rest
        of the batch, and a stream of full runs encodes each in one window.

        Plain: the event has a known class or no label, and every value it
        observes is already known (a known categorical value, a finite
        number for a Gaussian feature, or one that falls in a bin already
        seen for a discretised feature whose edges are fixed), so learning it
        changes no schema, only counts; with ``complete`` every discrete
        feature is observed too.
        A run of plain events can therefore be scored and learned by a
        model's compiled kernel without leaving it.

        With ``unseen``, an unlabeled event is plain with values never seen too
        (a categorical value, or a bin of a discretised feature with edges): each
        is column 0, as :meth:`encode` gives it to predict, which reads no count
        there and one more value of its feature; nothing is learned from the event.
        With ``new_values`` (a store that ``registers_in_runs``), a labeled event is
        plain with a categorical value never seen too, for the first ``room`` such
        values (as many as the tables hold without growing): the value gets the column
        learning it would give, later rows of the run find it there, and
        :attr:`run_new` says how many values each feature has gained by each row;
        :meth:`register_run_values` registers the values of the rows learned.

        The first event that
        is not plain (a new feature, value or class, a missing value under
        EM, a bad value) ends the run; the caller handles it one at a time,
        where the usual checks raise the usual errors.

        Returns ``(stop, D, G, yc)``: the run is ``xs[start:stop]`` (at most
        ``limit`` events), ``D`` its columns (rows, features) with -1 where
        missing or Gaussian, ``G`` its Gaussian values (rows, slots) with NaN
        where missing, ``yc`` its class indices (-1: unlabeled).
        """
        if isinstance(xs, Columns) and xs.arrays:  # numpy columns (a DataFrame's): encoded with numpy
            return self.encode_array_run(xs, ys, start, complete, limit, unseen)
        end = min(len(xs), start + limit)
        at, size, parts = start, self._window, []
        self.run_new = None
        # (f, v) -> temporary code; (run row, f, v, code) of each; how many the arrays have room for
        fresh = ({}, [], room) if new_values else None
        while True:
            width = min(size, end - at)
            stop, D, G, yc = self._encode_window(xs, ys, at, complete, width, unseen, fresh, at - start)
            parts.append((D, G, yc))
            done, at, size = stop < at + width, stop, size * 2
            if done or at >= end:
                break
        self._window = max(self._RUN_WINDOW, 2 * (at - start))
        if len(parts) == 1:
            D, G, yc = parts[0]
        else:
            D, G, yc = (np.concatenate(part) for part in zip(*parts))
        if fresh is not None and fresh[1]:
            D = self._place_new_values(D, xs, start, fresh[1])
        return at, D, G, yc

    def _place_new_values(self, D: np.ndarray, xs, start: int, news: list) -> np.ndarray:
        """Give the values a run met first (``news``: run row, feature, value, temporary code) the columns
        learning the run's rows one at a time gives them: in row order, and within a row in the order of
        the event's features; set :attr:`run_new` (the arrays have room for them: zero counts until learned)."""
        n, F = D.shape
        lut = np.empty(len(news), dtype=np.int64)  # temporary code -> column
        news = [item for item in news if item[0] < n]  # of the rows the run kept (the others' codes are not in D)
        if not news:
            return D
        if len({row for row, *_ in news}) < len(news):  # a row with two: the event's order of features
            names = self.schema.features
            order = list(xs.columns) if isinstance(xs, Columns) else None
            news.sort(key=lambda item: (item[0], (order if order is not None else list(xs[start + item[0]])).index(
                names[item[1]])))
        else:  # met feature by feature: in row order
            news.sort(key=itemgetter(0))
        V = len(self.schema.value_keys)
        for k, (_, _, _, code) in enumerate(news):
            lut[self._NEW_CODE - code] = V + k
        temp = D <= self._NEW_CODE
        D[temp] = lut[self._NEW_CODE - D[temp]]
        more = np.zeros((n, F), dtype=np.int64)
        np.add.at(more, ([item[0] for item in news], [item[1] for item in news]), 1)
        self.run_new = (np.array([item[0] for item in news]), [item[1:3] for item in news], np.cumsum(more, axis=0))
        return D

    def set_run_values(self, new) -> None:
        """Take ``new`` as the values the last run met first (:attr:`run_new`), or None: none."""
        self.run_new = new

    def run_more(self, n: int) -> np.ndarray | None:
        """(n, F): the values of each feature the last run registers by each of its first ``n`` rows (see
        :attr:`run_new`); None when it registers none."""
        return None if self.run_new is None else self.run_new[2][:n]

    def register_run_values(self, n: int) -> None:
        """Register the values the last run met first in its first ``n`` rows (the rows learned), in
        order: the columns :meth:`encode_run` gave them."""
        new, self.run_new = self.run_new, None
        if new is None:
            return
        rows, values, _ = new
        for row, (f, v) in zip(rows.tolist(), values):
            if row >= n:
                break
            self.schema.add_value(f, v)

    def _encode_window(self, xs: list, ys: list, start: int, complete: bool, limit: int, unseen: bool = False,
                       fresh: tuple | None = None, base: int = 0):
        """:meth:`encode_run` of at most ``limit`` events, in one piece (``fresh``: the run's new values so
        far, ``base`` this window's first row in the run)."""
        end = min(len(xs), start + limit)
        F = len(self.schema.features)
        stop = end - start
        # labels: a known class (of a type checked to be the labels' type: True finds the class 1), or None
        classes, label_ok, labels = self.schema.class_index, self.schema.labels.checked, ys[start:end]
        types = set(map(type, labels))
        unlabeled = labels.count(None) if NONE_TYPE in types else 0
        yc = list(map(classes.get, labels)) if label_ok.issuperset(types - {NONE_TYPE}) else None
        if yc is not None and unlabeled and yc.count(None) == unlabeled:  # known classes, and unlabeled events
            yc = [-1 if c is None else c for c in yc]
        if yc is None or None in yc:  # a label not known yet, or of another type: event by event
            yc = []
            for i, y in enumerate(labels):
                c = -1 if y is None else classes.get(y) if type(y) in label_ok else None
                if c is None:
                    stop = i
                    break
                yc.append(c)
        D = self._window_matrix(xs, start, stop)
        if D is not None:
            return start + stop, D, np.full((stop, self.schema.n_gauss), np.nan), np.array(yc[:stop], dtype=np.int64)
        column_of, stop = self._window_columns(xs, start, stop)
        known = xs.types if isinstance(xs, Columns) else {}  # each column's value types, when its maker knows them
        D = np.full((stop, F), -1, dtype=np.int64)
        G = np.full((stop, self.schema.n_gauss), np.nan)
        floats, M, first_bad, codes = self._bulk_columns(column_of, known, stop) if known else ({}, None, None, {})
        for f, name in enumerate(self.schema.features):
            if not stop:
                break
            if f in floats:  # read with the others already: the run stops where this one's values would stop it
                if first_bad[floats[f]] < stop:
                    stop = int(first_bad[floats[f]])
                    D, G = D[:stop], G[:stop]
                continue
            if f in codes:
                D[:, f] = codes[f][:stop]
                continue
            kind = self.schema.kinds[f]
            vals = column_of(f, name)[:stop]
            if kind == CAT:
                ok = self.schema.vt_ok[f] | {NONE_TYPE}
                types = known.get(name)
                if types is None or not types <= ok:
                    types = set(map(type, vals))
                if not types <= ok:
                    # a value of another type (True finds the column of 1): the run stops there
                    bad = next((i for i, v in enumerate(vals) if not (v is None or type(v) in ok or is_nan(v))), stop)
                    if bad < stop:
                        stop = bad
                        vals = vals[:stop]
                        D, G = D[:stop], G[:stop]
                        if not stop:
                            break
                vmap = self.schema.values[f]
                try:  # the usual window: every value known (a column, never 0), read into an array at once
                    cols = np.fromiter(map(vmap.get, vals, repeat(0)), dtype=np.int64, count=len(vals))
                except TypeError:  # an unhashable value: found below
                    cols = None
                if cols is None or not cols.all():  # a value not known (or unhashable): the list, value by value
                    try:
                        cols = list(map(vmap.get, vals))
                    except TypeError:  # an unhashable value: find it
                        cols = [vmap.get(v) if hashable(v) else -2 for v in vals]
                if type(cols) is list and (None in cols or -2 in cols):
                    for i, (col, v) in enumerate(zip(cols, vals)):
                        if col is None and (v is None or (type(v) is float and v != v)):
                            if complete:  # a missing value, learned by EM one at a time
                                stop = min(stop, i)
                                break
                            cols[i] = -1
                        elif col is None and fresh is not None and (code := fresh[0].get((f, v))) is not None:
                            cols[i] = code  # met first in an earlier labeled row of the run: known from there
                        elif col is None and unseen and yc[i] < 0 and not (isinstance(v, float) and math.isinf(v)):
                            cols[i] = 0  # a value never seen, only predicted: column 0, as encode() gives it
                        elif (col is None and fresh is not None and yc[i] >= 0 and len(fresh[1]) < fresh[2]
                              and self._new_in_run(f, v)):
                            code = cols[i] = fresh[0][(f, v)] = self._NEW_CODE - len(fresh[1])
                            fresh[1].append((base + i, f, v, code))
                        elif col is None or col == -2:
                            stop = min(stop, i)
                            break
                    cols = cols[:stop]
                    D = D[:stop]
                    G = G[:stop]
                if stop:
                    D[:, f] = cols[:stop]
            else:
                col = number_column(vals, known.get(name))  # NaN: missing; inf: not a plain number
                bad = np.isinf(col)
                if kind == BINNED:
                    d, missing = self.schema.disc[f], np.isnan(col)
                    if d.edges is None:
                        bad |= ~missing  # learning it would feed the discretiser's warm-up
                    else:
                        keys = d.bin_many(np.where(missing | bad, 0.0, col))
                        lut = np.full(len(d.edges) + 1, -3, dtype=np.int64)  # -3: a bin not seen yet
                        for key, c in self.schema.values[f].items():
                            lut[key] = c
                        cols = np.where(missing, -1, lut[keys])
                        new = cols == -3
                        if unseen and new.any():  # a bin never seen, only predicted: column 0, as encode()
                            predicted = np.asarray(yc[: len(cols)]) < 0
                            cols = np.where(new & predicted, 0, cols)
                            new &= ~predicted
                        bad |= new
                    if complete:
                        bad |= missing
                if bad.any():
                    stop = min(stop, int(bad.argmax()))
                    D, G = D[:stop], G[:stop]
                if kind == GAUSS:
                    G[:, self.schema.gslot[f]] = col[:stop]
                elif stop and self.schema.disc[f].edges is not None:
                    D[:, f] = cols[:stop]
        if floats and stop:
            G[:, [self.schema.gslot[f] for f in floats]] = M[:, :stop].T
        return start + stop, D, G, np.array(yc[:stop], dtype=np.int64)

    def _bulk_columns(self, column_of, known: dict, n: int) -> tuple:
        """The columns of a window of :class:`Columns` that :meth:`_encode_window` reads together rather than
        one by one, where their maker knows their value types: the Gaussian features of floats (None:
        missing) in one array, as :func:`number_column` reads each; the categorical features of integers in one
        integer matrix through one table (:meth:`_matrix_codes`), when each value has a column.

        Returns ``(floats, M, first_bad, codes)``: ``floats`` maps each Gaussian feature read to its row of
        ``M`` (features, n), the floats as :func:`number_column` gives them, and ``first_bad[row]`` is where
        that feature's values would stop the run (its first infinite or too large number; ``n``: none);
        ``codes`` maps each categorical feature read to its value columns."""
        schema = self.schema
        kinds, ok = schema.kinds, schema.vt_ok  # (vt_ok: a property, read once)
        gauss, ints = [], []
        for f, name in enumerate(schema.features):
            types = known.get(name)
            if types is None:
                continue
            if kinds[f] == GAUSS and _FLOATS_OR_NONE(types):
                gauss.append(f)
            elif kinds[f] == CAT and types == _INTS and int in ok[f]:
                ints.append(f)
        names = schema.features
        floats, M, first_bad, codes = {}, None, None, {}
        if len(gauss) > 1 and n:
            M = np.array([column_of(f, names[f])[:n] for f in gauss], dtype=float)  # None: NaN (missing)
            M = np.where(np.abs(M) > NUMERIC_LIMIT, np.inf, M)
            bad = np.isinf(M)
            first_bad = np.where(bad.any(axis=1), bad.argmax(axis=1), n)
            floats = {f: i for i, f in enumerate(gauss)}
        if len(ints) > 1 and n:
            try:
                A = np.array([column_of(f, names[f])[:n] for f in ints], dtype=np.int64).T
            except OverflowError:  # an int beyond 64 bits
                A = None
            held = None if A is None else self._matrix_codes(A, tuple(names[f] for f in ints), ints)
            if held is not None and (not held[1] or held[0].min() >= 1):  # every value has a column
                codes = {f: held[0][:, j] for j, f in enumerate(ints)}
        return floats, M, first_bad, codes

    def _window_matrix(self, xs, start: int, stop: int) -> np.ndarray | None:
        """The value columns (stop, F) of events ``xs[start:start + stop]`` when each is a dict of exactly the
        store's features, all categorical, and every value is a Python int already known: the events read
        into one integer matrix and encoded through one table (:meth:`_matrix_codes`). Else None."""
        F = len(self.schema.features)
        if F < 2 or not stop or isinstance(xs, Columns) or not all(k == CAT for k in self.schema.kinds):
            return None
        sub = xs[start : start + stop]
        if not _DICTS(map(type, sub)) or set(map(len, sub)) != {F}:
            return None
        try:
            rows = list(map(itemgetter(*self.schema.features), sub))
        except KeyError:
            return None
        if set(map(type, chain.from_iterable(rows))) != _INTS:
            return None
        try:
            A = np.fromiter(chain.from_iterable(rows), dtype=np.int64, count=stop * F).reshape(stop, F)
        except OverflowError:  # an int beyond int64
            return None
        held = self._matrix_codes(A, tuple(self.schema.features), list(range(F)))
        if held is None or (held[1] and held[0].min() < 1):  # a value never seen (no column): value by value
            return None
        return held[0]

    def _new_in_run(self, f: int, v) -> bool:
        """Whether a run may learn ``v``, a categorical value of feature ``f`` of an accepted type never seen,
        as ``learn_one`` would register it: not a number that turns ``f`` numeric, not an infinity; not a
        value of a numeric feature counted by value (:attr:`few`: a run's new values may turn it binned)."""
        if f in self.schema.few:
            return False
        return not (type(v) is float and (math.isinf(v) or self.schema.promotes(f, v)))

    def _window_columns(self, xs, start: int, stop: int):
        """``(column_of, stop)`` of events ``xs[start:start + stop]``: ``column_of(f, name)`` gives feature
        ``f``'s values (None where an event lacks it), and ``stop`` is cut at the first event with a value
        of a feature the store does not know (learning it would change the schema)."""
        lookup = self.schema.lookup
        if isinstance(xs, Columns):  # the values are in columns already
            window = xs.window(start, start + stop)
            for name, values in window.items():
                if name not in lookup:
                    stop = next((i for i, v in enumerate(values[:stop]) if not (v is None or is_nan(v))), stop)
            absent = [None] * stop
            return (lambda f, name: window.get(name, absent)), stop
        sub = xs[start : start + stop]
        if not _DICTS(map(type, sub)):  # an event that is no dict: the run ends before it (encode names it)
            stop = next(i for i, x in enumerate(sub) if type(x) is not dict)
            sub = sub[:stop]
        F = len(self.schema.features)
        if F > 1 and stop and set(map(len, sub)) == {F}:
            # every event holding every feature, and no other (the usual stream): all the columns in one
            # transposition
            try:
                columns = list(zip(*map(itemgetter(*self.schema.features), sub)))
            except KeyError:  # an event lacks a feature, so it holds one the store does not know
                columns = None
            if columns is not None:
                return (lambda f, name: columns[f]), stop
        known = lookup.keys()
        every_known = known >= set().union(*sub)
        if not every_known:
            for i, x in enumerate(sub):
                if not x.keys() <= known and any(not (v is None or is_nan(v)) for k, v in x.items() if k not in lookup):
                    stop = i
                    break
        sub = sub[:stop]
        return (lambda f, name: list(map(methodcaller("get", name), sub))), stop

    def encode_frame(self, X: pd.DataFrame):
        """Encode a DataFrame column by column, to predict (nothing is registered).

        Returns ``(D, dfeats, G, gslots)``: ``D`` (rows, k) value columns of the
        discrete features ``dfeats`` (-1 missing, 0 unseen), ``G`` (rows, g) the
        numeric values of Gaussian ``gslots`` (NaN missing).
        """
        return self._encode_prepared(self._prepare_frame(X, learn=False), len(X))

    def _frame_by_value(self, name, s: pd.Series) -> bool:
        """Whether column ``s`` of a feature ``name`` the store does not know yet is counted by value
        (:meth:`counts_by_value`), its kind taken as :meth:`_prepare_frame` takes it."""
        first = s.first_valid_index()
        return first is not None and self.schema.counts_by_value(name, _kind_value(s, first))

    def validate_frame(self, X: pd.DataFrame, labels: list = (), count_new: bool = False) -> tuple[int, int]:
        """Raise ``FeatureTypeError`` for any value of ``X`` that learning would refuse; change nothing.

        Returns ``(values, classes)``: with ``count_new``, how many new categorical values ``X`` holds and
        how many new classes ``labels`` (a t-way table checks its room for them); else ``(0, 0)``."""
        prepared = self._prepare_frame(X, learn=True, check=True)
        if not count_new:
            return 0, 0
        new = 0
        for _, name, f, kind, payload in prepared:
            if kind == CAT:
                known = self.schema.values[f] if f is not None else {}
                uniques = payload[1] if payload is not None else pd.unique(X[name]).tolist()
                new += sum(1 for u in uniques if u is not None and u not in known)
        return new, sum(1 for y in set(labels) if y not in self.schema.class_index)

    def _prepare_frame(self, X: pd.DataFrame, learn: bool, check: bool = False) -> list:
        prepared = []  # (position, name, f, kind, payload)
        for pos, (name, dtype) in enumerate(X.dtypes.items()):
            f = self.schema.feature_index.get(name)
            if check and f is not None and self.schema.kinds[f] == CAT and f not in self.schema.few and (
                    _dtype_type(dtype) in self.schema.vt_ok[f]):
                prepared.append((pos, name, f, CAT, None))  # integers (or booleans) it takes as they are: nothing
                continue  # to refuse
            s = X[name]
            if f is not None:
                kind = self.schema.kinds[f]
            else:
                first = s.first_valid_index()
                if first is None:
                    continue
                if not learn:
                    continue
                # A new feature's type follows the column's dtype: a float column is numeric (counted by
                # value while it has few values, in a discretising store: counts_by_value).
                # (pandas stores an int column with missing values as float: declare ``types``
                # or use the nullable "Int64" dtype to keep such a column categorical.)
                kind = self.schema.kind_for(name, _kind_value(s, first))
            if kind == CAT:
                by_value = f in self.schema.few if f is not None else self._frame_by_value(name, s)
                value = numeric_value if by_value else categorical_value
                try:
                    codes, uniques = pd.factorize(s, use_na_sentinel=True)
                except TypeError:  # an unhashable value (a list, a dict): refused as learn_one refuses it
                    for v in s.tolist():
                        value(name, v)
                    raise
                uniques = [value(name, u) for u in uniques.tolist()]
                self._check_column(name, f, s, uniques)
                prepared.append((pos, name, f, kind, (codes, uniques)))
            else:
                prepared.append((pos, name, f, kind, self._numeric_column(name, s)))
        return prepared

    def _check_column(self, name, f, s: pd.Series, uniques: list) -> None:
        """Raise FeatureTypeError at the first value of categorical column ``s`` that is not of the
        feature's value type (a new feature's: that of its first value), as ``learn_one`` row by row would.

        pandas factorises ``True`` and ``1`` into one code, so a column of Python objects is checked
        value by value; any other dtype holds values of one type, and its ``uniques`` tell.
        """
        vt = self.schema.vtypes[f] if f is not None else None
        if vt is None:
            first = next((u for u in uniques if u is not None), None)
            if first is None:
                return
            vt = self.schema.vtype_of(name, first)
        allowed = self.schema.vt_ok[f] if f is not None and self.schema.vtypes[f] is not None else set(PLAIN_TYPES[vt])
        mixed = s.dtype == object
        values = s.tolist() if mixed else uniques
        extra = set(map(type, values)) - allowed - {NONE_TYPE}
        if not extra or (extra == {float} and not any(json_type(u) in ("number", "boolean") for u in uniques)):
            return  # floats neither among the uniques nor merged into one (1.0 == True) are NaN: missing
        for i, v in enumerate(values):
            if not (v is None or is_nan(v) or v is pd.NA or v is pd.NaT or json_type(v) in VALUE_GROUPS[vt]):
                raise self.schema.value_error(name, vt, v, f" (row {i} of the batch)" if mixed else "")

    def _encode_prepared(self, prepared, n):
        dcols, dfeats, gcols, gslots = [], [], [], []
        for pos, name, f, kind, payload in prepared:
            f = self.schema.feature_index.get(name)
            if f is None:
                continue
            if kind == CAT:
                codes, uniques = payload
                d = self.schema.values[f]
                lut = np.array([d.get(u, 0) if u is not None else -1 for u in uniques] + [-1], dtype=np.int64)
                dcols.append(lut[codes])  # code -1 picks the trailing -1
                dfeats.append(f)
            elif kind == GAUSS:
                gcols.append(payload)
                gslots.append(self.schema.gslot[f])
            else:
                dcols.append(self._bin_column(f, payload))
                dfeats.append(f)
        D = np.stack(dcols, axis=1) if dcols else np.empty((n, 0), dtype=np.int64)
        G = np.stack(gcols, axis=1) if gcols else np.empty((n, 0))
        return D, np.array(dfeats, dtype=np.int64), G, np.array(gslots, dtype=np.int64)

    @staticmethod
    def _numeric_column(name, s: pd.Series) -> np.ndarray:
        if s.dtype == bool or (s.dtype == object and s.map(lambda v: isinstance(v, (bool, np.bool_))).any()):
            raise FeatureTypeError(f"feature {name!r} is numeric: expected numbers, got booleans", field=name)
        try:
            a = pd.to_numeric(s, errors="raise").to_numpy(dtype=float, na_value=np.nan)
        except (ValueError, TypeError):
            bad = next(v for v in s if v is not None and not is_nan(v) and not isinstance(v, numbers.Real))
            raise FeatureTypeError(
                f"feature {name!r} is numeric: expected a number, got {type(bad).__name__} {short_repr(bad)}",
                field=name,
            ) from None
        big = np.abs(a) > NUMERIC_LIMIT  # an infinity too
        if big.any():
            numeric_value(name, float(a[big.argmax()]))  # raises, naming the value
        return a

    def _bin_column(self, f, xs: np.ndarray) -> np.ndarray:
        d = self.schema.disc[f]
        out = np.full(len(xs), -1, dtype=np.int64)
        valid = np.flatnonzero(~np.isnan(xs))
        if d.edges is None or not len(valid):
            return out
        lut = np.zeros(len(d.edges) + 1, dtype=np.int64)
        for key, col in self.schema.values[f].items():
            lut[key] = col
        out[valid] = lut[d.bin_many(xs[valid])]
        return out

    # ------------------------------------------------------------------ runs of numpy columns

    def encode_array_run(self, xs: Columns, ys: list, start: int, complete: bool, limit: int, unseen: bool):
        """:meth:`encode_run` of :class:`Columns` of arrays (no values registered within a run): events
        ``xs[start:]`` while each is plain, at most ``limit``; the same ``(stop, D, G, yc)``."""
        self.run_new = None
        n = len(xs)
        y = ys[start] if start < n else None
        if y is not None and not (hashable(y) and y in self.schema.class_index):
            # a class not known yet (its code would be -2): no run starts here, and the columns are not encoded
            # again for it (a stream's first events each bring a class, after each of which the schema changed)
            return (start, np.empty((0, len(self.schema.features)), dtype=np.int64), np.empty((0, self.schema.n_gauss)),
                    np.empty(0, dtype=np.int64))
        end = min(n, start + limit)
        state = self._array_state(xs)
        if state.epoch != self.schema.epoch or state.flags != (complete, unseen):
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
        kind = self.schema.kinds[f]
        if kind == GAUSS:
            return (GAUSS,), ()
        vals, d = self.schema.values[f], self.schema.disc[f]
        edges = None if d is None else d.edges
        return (kind, id(vals), len(vals), self.schema.vtypes[f], len(self.schema.vt_ok[f]), id(d), id(edges)), (vals, d, edges)

    def _refresh(self, xs: Columns, ys: list, state: _State, start: int, complete: bool, unseen: bool) -> None:
        """Bring ``state`` up to the store from event ``start`` on: encode again the columns whose feature
        changed (all of them when the flags or the store's shape did), the labels when the classes did."""
        n, F, Gs = len(xs), len(self.schema.features), self.schema.n_gauss
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
            f = self.schema.feature_index.get(name)
            key, refs = self._column_key(f) if f is not None else ((None,), ())
            if state.keys.get(name) == key:
                continue
            state.keys[name], state.refs[name], changed = key, refs, True
            state.bad[name], state.unknown[name] = self._encode_array(name, f, values, start, state, complete)
        if state.names != tuple(self.schema.features) or changed:  # features the events lack: missing in every event
            features = self.schema.features
            lacking = complete and not all(map(columns.__contains__, features)) and any(
                self.schema.kinds[f] != GAUSS for f, name in enumerate(features) if name not in columns)
            state.bad[_ABSENT] = np.ones(n, dtype=bool) if lacking else None
            state.names = tuple(self.schema.features)
        label_key = (len(self.schema.classes), len(self.schema.labels.checked))
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
        state.epoch, state.flags = self.schema.epoch, flags

    def _block_key(self) -> tuple:
        """What the block's table depends on: the store's values (only ever appended to, by ``add_value``,
        until a two-layer store derives a new coarse layer) and its promotions (a feature turning numeric)."""
        return id(self.schema.values), len(self.schema.value_keys), len(self.schema.promoted), len(self.schema.features)

    def _encode_block(self, xs: Columns, state: _State, start: int) -> bool:
        """Encode the columns of an integer (or boolean) matrix at once, when each is a categorical feature
        that takes its values as they are and they span few values: one table (columns, range) of value
        columns, one gather. Returns whether it did (else each column is encoded alone)."""
        A = xs.matrix
        if len(A) <= start:
            return False
        names = tuple(xs.columns)
        fs = list(map(self.schema.feature_index.get, names))
        into = state.D[start:] if fs == list(range(state.D.shape[1])) else None  # (gathered there, compiled)
        held = self._matrix_codes(A[start:], names, fs, into)
        if held is None:
            return False
        codes, unseen = held
        state.block_unknown = None
        if unseen:
            unknown = codes == _UNKNOWN
            codes[unknown] = 0  # a value never seen: column 0, as encode() gives it
            state.block_unknown = np.zeros(len(A), dtype=bool)
            state.block_unknown[start:] = unknown.any(axis=1)
        if codes is not into:
            state.D[start:, fs] = codes
        state.block = dict.fromkeys(names)
        state.block_key, state.refs[_BLOCK] = self._block_key(), self.schema.values  # (kept: its id stays its own)
        return True

    def _matrix_codes(self, A: np.ndarray, names: tuple, fs: list, out: np.ndarray | None = None):
        """``(codes, unseen)``: the value columns of integer (or boolean) matrix ``A`` (rows, features ``fs``
        named ``names``), :data:`_UNKNOWN` where a value was never seen (``unseen``: one was), through one table
        (columns, range) and one gather (of int64 values compiled, :mod:`stream_nb.kernels._codes`, into ``out``
        if given); None unless each feature is categorical and takes the values as they are, and they span few
        values."""
        if A.dtype.kind not in "iub" or A.dtype == np.uint64:  # (uint64 + int64: floats)
            return None
        t = bool if A.dtype.kind == "b" else int
        kinds, ok = self.schema.kinds, self.schema.vt_ok  # (vt_ok: a property, read once)
        if None in fs or not all(kinds[f] == CAT and t in ok[f] for f in fs):
            return None
        sub = A.view(np.uint8) if t is bool else A
        if sub.dtype == np.int64 and len(sub):
            k = compiled()
            lo, hi = np.empty(sub.shape[1], dtype=np.int64), np.empty(sub.shape[1], dtype=np.int64)
            k.column_ranges(sub, lo, hi)
        else:
            k = None
            lo, hi = sub.min(axis=0), sub.max(axis=0)
        key = (self._block_key(), names, lo.tobytes(), hi.tobytes())
        held = self._cache.get("block_table")
        if held is None or held[0] != key:  # the table of the last frame serves the next one of the same values
            width = int((hi - lo).max()) + 1
            if width > _RANGE + 2 * len(sub):
                return None
            table = np.zeros((len(fs), width), dtype=np.int64)  # (beyond a column's range: never read)
            for j, (f, low, high) in enumerate(zip(fs, lo.tolist(), hi.tolist())):
                get = self.schema.values[f].get
                table[j, : high - low + 1] = [get(t(v), _UNKNOWN) for v in range(low, high + 1)]
            unseen = bool((table == _UNKNOWN).any())
            held = self._cache["block_table"] = (key, table.ravel(), np.arange(len(fs)) * width - lo, unseen,
                                                 self.schema.values)
        _, flat, offset, unseen, _ = held
        if k is None:
            return flat[sub + offset], unseen  # each value's entry in its column's row of the table
        codes = np.empty(sub.shape, dtype=np.int64) if out is None else out
        k.gather_codes(sub, flat, offset, codes)
        return codes, unseen

    def _label_codes(self, ys: list, state: _State) -> np.ndarray:
        """Each label's class index: -1 unlabeled (None), -2 a label no run takes (a class not known yet,
        or of a type not checked to be the labels' type)."""
        n, classes = len(ys), self.schema.class_index
        try:
            yc = np.fromiter(map(classes.get, ys, repeat(-2, n)), dtype=np.int64, count=n)
        except TypeError:  # an unhashable label: no run takes it (the one-event path names it)
            yc = np.array([classes.get(y, -2) if hashable(y) else -2 for y in ys], dtype=np.int64)
        types = set(map(type, ys))
        if NONE_TYPE in types:
            if state.labels is None:
                state.labels = np.array(ys, dtype=object) if n else np.empty(0, dtype=object)
            yc[np.equal(state.labels, None)] = -1
        if not types - {NONE_TYPE} <= self.schema.labels.checked:  # a type not checked yet: the one-event path checks it
            ok = self.schema.labels.checked | {NONE_TYPE}
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
        k = self.schema.kinds[f]
        if k == CAT:
            cols = self._categorical_codes(f, a, missing)
        else:
            x = self._numbers(a, missing)
            ok = np.abs(x) <= NUMERIC_LIMIT  # NaN (missing) and the numbers no run takes are not
            if k == GAUSS:
                state.D[start:, f] = -1
                state.G[start:, self.schema.gslot[f]] = np.where(ok, x, np.nan)
                bad[start:] = ~ok & ~np.isnan(x)
                return bad, None
            d = self.schema.disc[f]
            if d.edges is None:  # learning a value feeds the discretiser's warm-up
                cols = np.where(np.isnan(x), -1, _BAD)
            else:
                lut = np.full(len(d.edges) + 1, _UNKNOWN, dtype=np.int64)
                for key, col in self.schema.values[f].items():
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
        ok, vals, kind = self.schema.vt_ok[f], self.schema.values[f], a.dtype.kind
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


def _dtype_type(dtype) -> type | None:
    """The Python type of every value of a column of numpy ``dtype``: int or bool (None: another dtype)."""
    kind = dtype.kind if isinstance(dtype, np.dtype) else None
    return int if kind in ("i", "u") else bool if kind == "b" else None


def _kind_value(s: pd.Series, first) -> object:
    """The value a new feature's kind is taken from: a float for a float column (numeric), else the
    column's first valid value (at ``first``)."""
    return 0.0 if isinstance(s.dtype, np.dtype) and s.dtype.kind == "f" else s.loc[first]


#: The key of the mask that marks every event bad when a feature the events lack is missing under ``complete``.
_ABSENT = object()
#: The key under which the state keeps the object the block's key names by id.
_BLOCK = object()
