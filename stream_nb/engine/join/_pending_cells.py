"""The features of the pending store's rows, as cells of numpy matrices.

Cells: a categorical column holds ``code + 1`` of the value in the intern
table (0: absent); a numeric column holds the float's 64 bits plus one (0:
absent). A column takes its kind from its first value (a float: numeric;
anything else: categorical); a value of the other kind (an int in a numeric
column, a float in a categorical one) goes to a small side table, so every
value comes back exactly as it came, type included.
"""

from __future__ import annotations

import contextlib
from operator import itemgetter

import numpy as np

from ...stats import Columns

__all__ = ["FeatureCells", "intern"]

NONE_TYPE = type(None)
_FLOAT = {float}


def intern(codes: dict, values: list, v) -> int:
    """The code of ``v``: its index in ``values``, appended now if new; ``codes`` maps type -> value -> code,
    so that ``True`` and ``1`` are two values.

    >>> codes, values = {}, []
    >>> [intern(codes, values, v) for v in ("a", 1, True, "a")], values
    ([0, 1, 2, 0], ['a', 1, True])
    """
    table = codes.setdefault(type(v), {})
    code = table.get(v)
    if code is None:
        code = table[v] = len(values)
        values.append(v)
    return code


class FeatureCells:
    """The cells of :class:`~stream_nb.engine.join._pending.PendingStore`: each row's features, one column per name.

    The store provides ``capacity`` and ``_live_rows()`` (the rows in use), and calls :meth:`_start_cells`.
    """

    def _start_cells(self, cat_names: list, num_names: list, values: list) -> None:
        """No cell written, these columns (categorical, numeric) and these values interned, coded in order."""
        n = self.capacity
        self.cat_names: dict[str, int] = {name: j for j, name in enumerate(cat_names)}  # column of each name
        self.num_names: dict[str, int] = {name: j for j, name in enumerate(num_names)}
        self.cat = np.zeros((n, len(cat_names)), dtype=np.int32)
        self.num = np.zeros((n, len(num_names)), dtype=np.uint64)
        self.values: list = []  # interned categorical values
        self._value_array = np.zeros(0, dtype=object)  # the same as an array (_values_by_code)
        self.codes: dict[type, dict] = {}  # type -> value -> code (True and 1 are two values)
        self.odd: dict = {}  # row -> {name: value} of the values of the other kind than their column's
        for v in values:
            self._intern(v)

    def _put(self, row: int, x: dict) -> None:
        cj, cv, nj, nv = [], [], [], []
        for name, v in x.items():
            cell = self._cell(row, name, v)
            if cell is None:
                continue
            if cell[0]:
                nj.append(cell[1])
                nv.append(v)
            else:
                cj.append(cell[1])
                cv.append(cell[2])
        if cj:
            self.cat[row, cj] = cv
        if nj:
            self.num[row, nj] = np.array(nv, dtype=np.float64).view(np.uint64) + np.uint64(1)

    def _cell(self, row: int, name: str, v):
        """Where value ``v`` of feature ``name`` of ``row`` goes: ``(True, column)`` a numeric cell,
        ``(False, column, code + 1)`` a categorical one, None absent or kept in the side table (done here)."""
        if v is None:
            return None
        numeric = type(v) is float
        names, others = (self.num_names, self.cat_names) if numeric else (self.cat_names, self.num_names)
        j = names.get(name)
        if j is None:
            if name in others:  # a column of the other kind: the side table keeps it
                self.odd.setdefault(row, {})[name] = v
                return None
            j = names[name] = self._widen("num" if numeric else "cat")
        return (True, j) if numeric else (False, j, self._intern(v) + 1)

    def _intern(self, v) -> int:
        """The code of categorical value ``v`` (interned now if new)."""
        return intern(self.codes, self.values, v)

    def _put_many(self, rows: np.ndarray, xs: list[dict]) -> None:
        """:meth:`_put` for many rows: a column at a time where every event has the same features and a
        feature's values all fit its column; value by value, in order, otherwise (the same cells either way)."""
        names, columns = tuple(xs[0]), None
        if len(set(map(len, xs))) == 1:  # as many features each: the same ones when each has the first's
            with contextlib.suppress(KeyError):  # another feature somewhere: columns stays None
                columns = list(zip(*map(itemgetter(*names), xs))) if len(names) > 1 else \
                    [list(map(itemgetter(*names), xs))] if names else []
        if columns is None:  # not the same features: event by event
            for row, x in zip(rows.tolist(), xs):
                self._put(row, x)
            return
        nums: tuple = ([], [])  # the usual columns (names and cells), written together at the end
        cats: tuple = ([], [])
        for name, vals in zip(names, columns):
            j = self.num_names.get(name)
            if j is not None and set(map(type, vals)) == _FLOAT:
                nums[0].append(j)
                nums[1].append(vals)
                continue
            j = self.cat_names.get(name)
            types = set(map(type, vals))
            if j is not None and not (NONE_TYPE in types or float in types):
                one = self.codes.get(next(iter(types))) if len(types) == 1 else None  # the usual column: one type
                col = list(map(one.get, vals)) if one is not None else [None] * len(vals)
                if None in col:
                    col = [self._intern(v) if c is None else c for c, v in zip(col, vals)]  # in order: new ones
                cats[0].append(j)
                cats[1].append(col)
                continue
            for row, v in zip(rows.tolist(), vals):  # a new feature, or values of mixed kinds: one by one
                cell = self._cell(row, name, v)
                if cell is None:
                    continue
                if cell[0]:
                    self.num[row, cell[1]] = np.array(v, dtype=np.float64).view(np.uint64) + np.uint64(1)
                else:
                    self.cat[row, cell[1]] = cell[2]
        if nums[0]:  # (after any new column: the matrices hold every column by now)
            self.num[rows[:, None], nums[0]] = np.array(nums[1], dtype=np.float64).T.view(np.uint64) + np.uint64(1)
        if cats[0]:
            self.cat[rows[:, None], cats[0]] = np.array(cats[1], dtype=np.int32).T + 1

    def _widen(self, which: str) -> int:
        """One more column in matrix ``which`` ("cat" or "num"); its index. Only the rows in use are copied
        (a free row's cells are all zero), so the new matrix's untouched pages stay unallocated."""
        old = getattr(self, which)
        new = np.zeros((old.shape[0], old.shape[1] + 1), dtype=old.dtype)
        live = self._live_rows()
        new[live, : old.shape[1]] = old[live]
        setattr(self, which, new)
        return old.shape[1]

    def features(self, row: int) -> dict:
        """The features of ``row``, as they came (categorical ones first, then numeric ones, then others)."""
        x = {}
        values = self.values
        crow = self.cat[row]
        for name, j in self.cat_names.items():
            c = int(crow[j])
            if c:
                x[name] = values[c - 1]
        nrow = self.num[row]
        present = nrow != 0
        if present.any():
            floats = (nrow - np.uint64(1)).view(np.float64).tolist()
            for name, j in self.num_names.items():
                if present[j]:
                    x[name] = floats[j]
        if row in self.odd:
            x.update(self.odd[row])
        return x

    def features_many(self, rows) -> list[dict]:
        """:meth:`features` of each row of ``rows``."""
        rows = np.asarray(rows, dtype=np.int64)
        values, odd = self.values, self.odd
        cat_items, num_items = list(self.cat_names.items()), list(self.num_names.items())
        cat, num = self.cat[rows], self.num[rows]
        if cat.all() and num.all() and (not odd or odd.keys().isdisjoint(rows.tolist())):
            # every row holds every feature (the usual stream): no cell to skip, one dict per row from its values
            names = [name for name, _ in cat_items + num_items]
            cells = np.empty((len(rows), len(names)), dtype=object)
            cells[:, : cat.shape[1]] = self._values_by_code()[cat - 1]
            cells[:, cat.shape[1] :] = (num - np.uint64(1)).view(np.float64)
            return [dict(zip(names, row)) for row in cells.tolist()]
        cats = cat.tolist()
        present = (num != 0).tolist()
        floats = (num - np.uint64(1)).view(np.float64).tolist()  # an absent cell wraps: never read
        out = []
        for i, row in enumerate(rows.tolist()):
            crow = cats[i]
            x = {name: values[crow[j] - 1] for name, j in cat_items if crow[j]}
            if num_items:
                prow, frow = present[i], floats[i]
                for name, j in num_items:
                    if prow[j]:
                        x[name] = frow[j]
            if row in odd:
                x.update(odd[row])
            out.append(x)
        return out

    def _values_by_code(self) -> np.ndarray:
        """The interned values as an object array, ``[cell - 1]`` of a categorical cell its value (the last
        entry, None, that of an empty cell); rebuilt only when values were interned since."""
        if len(self._value_array) != len(self.values) + 1:  # values only grow (appended as interned)
            self._value_array = np.empty(len(self.values) + 1, dtype=object)
            self._value_array[:-1] = self.values
        return self._value_array

    def columns_many(self, rows) -> Columns | None:
        """The events of ``rows`` as :class:`~stream_nb.stats.Columns` (the same events as
        :meth:`features_many`, features in the same order), read out a column at a time; None when one of
        them has a value in the side table (:meth:`features_many` gives those).

        >>> from stream_nb.engine.join._pending import PendingStore
        >>> store = PendingStore(4)
        >>> rows = store.add_many([b"1", b"2"], [{"sky": "sun", "t": 1.5}, {"sky": "rain"}], t=[0.0, 0.0],
        ...                       predictions=[None, None])
        >>> list(store.columns_many(rows)) == store.features_many(rows)
        True
        """
        rows = np.asarray(rows, dtype=np.int64)
        if self.odd and not self.odd.keys().isdisjoint(rows.tolist()):
            return None
        by_code = self._values_by_code()
        columns = {}
        cat = self.cat[rows]
        for name, j in self.cat_names.items():
            columns[name] = by_code[cat[:, j] - 1]  # Python values, None where empty
        num = self.num[rows]
        floats = (num - np.uint64(1)).view(np.float64)  # an absent cell wraps to a NaN: missing
        for name, j in self.num_names.items():
            columns[name] = floats[:, j]
        return Columns(columns, len(rows))  # numpy columns: the runs encode them with numpy

    def forget_features(self, row: int) -> None:
        """Clear the cells of ``row`` (its id, time and state stay)."""
        self.cat[row] = 0
        self.num[row] = 0
        self.odd.pop(row, None)

    def forget_features_many(self, rows) -> None:
        """:meth:`forget_features` of each row of ``rows``."""
        rows = np.asarray(rows, dtype=np.int64)
        self.cat[rows] = 0
        self.num[rows] = 0
        if self.odd:
            for row in rows.tolist():
                self.odd.pop(row, None)
