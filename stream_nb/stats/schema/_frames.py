"""Many events at once: runs of plain events (prequential_many, learn_many) and DataFrames to predict.

A run registers new values in the order a row-by-row loop would, so the runs
build the same store as ``learn_one`` over the rows.
"""

from __future__ import annotations

import math
import numbers
from itertools import chain, repeat
from operator import itemgetter, methodcaller

import numpy as np

from ..._pandas import pd
from ...exceptions import FeatureTypeError
from ..values import Columns
from ..values import (
    BINNED, CAT, GAUSS, NONE_TYPE, NUMERIC_LIMIT, PLAIN_TYPES, VALUE_GROUPS, categorical_value, hashable, is_nan,
    json_type, number_column, numeric_value, short_repr,
)

__all__ = ["Frames"]

_DICTS = frozenset({dict}).issuperset
#: The value types of events of integers alone (no missing value).
_INTS = {int}


class Frames:
    """Batch encoding of a :class:`~stream_nb.stats.schema.Schema` (one of its seams: the state it reads is
    the schema's)."""

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
            names = self.features
            order = list(xs.columns) if isinstance(xs, Columns) else None
            news.sort(key=lambda item: (item[0], (order if order is not None else list(xs[start + item[0]])).index(
                names[item[1]])))
        else:  # met feature by feature: in row order
            news.sort(key=itemgetter(0))
        V = len(self.value_keys)
        for k, (_, _, _, code) in enumerate(news):
            lut[self._NEW_CODE - code] = V + k
        temp = D <= self._NEW_CODE
        D[temp] = lut[self._NEW_CODE - D[temp]]
        more = np.zeros((n, F), dtype=np.int64)
        np.add.at(more, ([item[0] for item in news], [item[1] for item in news]), 1)
        self.run_new = (np.array([item[0] for item in news]), [item[1:3] for item in news], np.cumsum(more, axis=0))
        return D

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
            self.add_value(f, v)

    def _encode_window(self, xs: list, ys: list, start: int, complete: bool, limit: int, unseen: bool = False,
                       fresh: tuple | None = None, base: int = 0):
        """:meth:`encode_run` of at most ``limit`` events, in one piece (``fresh``: the run's new values so
        far, ``base`` this window's first row in the run)."""
        end = min(len(xs), start + limit)
        F = len(self.features)
        stop = end - start
        # labels: a known class (of a type checked to be the labels' type: True finds the class 1), or None
        classes, label_ok, labels = self.class_index, self.labels.checked, ys[start:end]
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
            return start + stop, D, np.full((stop, self.n_gauss), np.nan), np.array(yc[:stop], dtype=np.int64)
        column_of, stop = self._window_columns(xs, start, stop)
        known = xs.types if isinstance(xs, Columns) else {}  # each column's value types, when its maker knows them
        D = np.full((stop, F), -1, dtype=np.int64)
        G = np.full((stop, self.n_gauss), np.nan)
        for f, name in enumerate(self.features):
            if not stop:
                break
            kind = self.kinds[f]
            vals = column_of(f, name)[:stop]
            if kind == CAT:
                ok = self._vt_ok[f] | {NONE_TYPE}
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
                vmap = self.values[f]
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
                    d, missing = self.disc[f], np.isnan(col)
                    if d.edges is None:
                        bad |= ~missing  # learning it would feed the discretiser's warm-up
                    else:
                        keys = d.bin_many(np.where(missing | bad, 0.0, col))
                        lut = np.full(len(d.edges) + 1, -3, dtype=np.int64)  # -3: a bin not seen yet
                        for key, c in self.values[f].items():
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
                    G[:, self.gslot[f]] = col[:stop]
                elif stop and self.disc[f].edges is not None:
                    D[:, f] = cols[:stop]
        return start + stop, D, G, np.array(yc[:stop], dtype=np.int64)

    def _window_matrix(self, xs, start: int, stop: int) -> np.ndarray | None:
        """The value columns (stop, F) of events ``xs[start:start + stop]`` when each is a dict of exactly the
        store's features, all categorical, and every value is a Python int already known: the events read
        into one integer matrix and encoded through one table (:meth:`_matrix_codes`). Else None."""
        F = len(self.features)
        if F < 2 or not stop or isinstance(xs, Columns) or not all(k == CAT for k in self.kinds):
            return None
        sub = xs[start : start + stop]
        if not _DICTS(map(type, sub)) or set(map(len, sub)) != {F}:
            return None
        try:
            rows = list(map(itemgetter(*self.features), sub))
        except KeyError:
            return None
        if set(map(type, chain.from_iterable(rows))) != _INTS:
            return None
        try:
            A = np.fromiter(chain.from_iterable(rows), dtype=np.int64, count=stop * F).reshape(stop, F)
        except OverflowError:  # an int beyond int64
            return None
        held = self._matrix_codes(A, tuple(self.features), list(range(F)))
        if held is None or (held[1] and held[0].min() < 1):  # a value never seen (no column): value by value
            return None
        return held[0]

    def _new_in_run(self, f: int, v) -> bool:
        """Whether a run may learn ``v``, a categorical value of feature ``f`` of an accepted type never seen,
        as ``learn_one`` would register it: not a number that turns ``f`` numeric, not an infinity; not a
        value of a numeric feature counted by value (:attr:`few`: a run's new values may turn it binned)."""
        if f in self.few:
            return False
        return not (type(v) is float and (math.isinf(v) or self._promotes(f, v)))

    def _window_columns(self, xs, start: int, stop: int):
        """``(column_of, stop)`` of events ``xs[start:start + stop]``: ``column_of(f, name)`` gives feature
        ``f``'s values (None where an event lacks it), and ``stop`` is cut at the first event with a value
        of a feature the store does not know (learning it would change the schema)."""
        lookup = self._lookup
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
        F = len(self.features)
        if F > 1 and stop and set(map(len, sub)) == {F}:
            # every event holding every feature, and no other (the usual stream): all the columns in one
            # transposition
            try:
                columns = list(zip(*map(itemgetter(*self.features), sub)))
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
        return first is not None and self.counts_by_value(name, _kind_value(s, first))

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
                known = self.values[f] if f is not None else {}
                uniques = payload[1] if payload is not None else pd.unique(X[name]).tolist()
                new += sum(1 for u in uniques if u is not None and u not in known)
        return new, sum(1 for y in set(labels) if y not in self.class_index)

    def _prepare_frame(self, X: pd.DataFrame, learn: bool, check: bool = False) -> list:
        prepared = []  # (position, name, f, kind, payload)
        for pos, (name, dtype) in enumerate(X.dtypes.items()):
            f = self.feature_index.get(name)
            if check and f is not None and self.kinds[f] == CAT and f not in self.few and (
                    _dtype_type(dtype) in self._vt_ok[f]):
                prepared.append((pos, name, f, CAT, None))  # integers (or booleans) it takes as they are: nothing
                continue  # to refuse
            s = X[name]
            if f is not None:
                kind = self.kinds[f]
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
                kind = self.kind_for(name, _kind_value(s, first))
            if kind == CAT:
                by_value = f in self.few if f is not None else self._frame_by_value(name, s)
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
        vt = self.vtypes[f] if f is not None else None
        if vt is None:
            first = next((u for u in uniques if u is not None), None)
            if first is None:
                return
            vt = self.vtype_of(name, first)
        allowed = self._vt_ok[f] if f is not None and self.vtypes[f] is not None else set(PLAIN_TYPES[vt])
        mixed = s.dtype == object
        values = s.tolist() if mixed else uniques
        extra = set(map(type, values)) - allowed - {NONE_TYPE}
        if not extra or (extra == {float} and not any(json_type(u) in ("number", "boolean") for u in uniques)):
            return  # floats neither among the uniques nor merged into one (1.0 == True) are NaN: missing
        for i, v in enumerate(values):
            if not (v is None or is_nan(v) or v is pd.NA or v is pd.NaT or json_type(v) in VALUE_GROUPS[vt]):
                raise self._value_error(name, vt, v, f" (row {i} of the batch)" if mixed else "")

    def _encode_prepared(self, prepared, n):
        dcols, dfeats, gcols, gslots = [], [], [], []
        for pos, name, f, kind, payload in prepared:
            f = self.feature_index.get(name)
            if f is None:
                continue
            if kind == CAT:
                codes, uniques = payload
                d = self.values[f]
                lut = np.array([d.get(u, 0) if u is not None else -1 for u in uniques] + [-1], dtype=np.int64)
                dcols.append(lut[codes])  # code -1 picks the trailing -1
                dfeats.append(f)
            elif kind == GAUSS:
                gcols.append(payload)
                gslots.append(self.gslot[f])
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
        d = self.disc[f]
        out = np.full(len(xs), -1, dtype=np.int64)
        valid = np.flatnonzero(~np.isnan(xs))
        if d.edges is None or not len(valid):
            return out
        lut = np.zeros(len(d.edges) + 1, dtype=np.int64)
        for key, col in self.values[f].items():
            lut[key] = col
        out[valid] = lut[d.bin_many(xs[valid])]
        return out


def _dtype_type(dtype) -> type | None:
    """The Python type of every value of a column of numpy ``dtype``: int or bool (None: another dtype)."""
    kind = dtype.kind if isinstance(dtype, np.dtype) else None
    return int if kind in ("i", "u") else bool if kind == "b" else None


def _kind_value(s: pd.Series, first) -> object:
    """The value a new feature's kind is taken from: a float for a float column (numeric), else the
    column's first valid value (at ``first``)."""
    return 0.0 if isinstance(s.dtype, np.dtype) and s.dtype.kind == "f" else s.loc[first]
