"""The schema and encoder of a count store: classes, features and values as indices, and events as codes.

:class:`Schema` is a part of :class:`~stream_nb.stats.Stats` that can be built and used alone. It owns

- the classes (:class:`~stream_nb.stats.values.Labels`), in order of first appearance;
- the features: their names and indices, kinds (categorical, Gaussian, binned), the value type of each
  categorical one (:class:`~stream_nb.stats.schema.ValueTypes`), the :class:`~stream_nb.stats.Discretiser`
  of each binned one, the Gaussian slot of each Gaussian one, which features of integers a fraction may
  still turn numeric (``from_int``), which numeric ones are counted by value for now (``few``), and how each
  promotion moved its counts (``promoted``);
- the value axis: ``value_keys[v]`` and ``value_feature[v]`` of each column ``v`` (column 0 stands for a
  value never seen), ``n_values[f]`` of each feature;
- its ``epoch``, bumped by every change of the above (and by the store holding it, :meth:`advance`, for a
  change of its tables' layout): an encoding made at one epoch holds while it lasts.

It encodes one event (:meth:`encode`, :meth:`register`); the part it holds, ``runs`` (a
:class:`~stream_nb.stats.schema.RunEncoder`, ``_runs.py``), encodes runs of events given as dicts, lists or
columns (``runs.encode_run``) and DataFrames (``runs.encode_frame``). The schema checks
values against their feature's type, and turns a feature of integers numeric at its first fraction
(:meth:`promote`). It holds no count.

The count tables are the store's. The schema and the tables talk through three narrow calls:

- ``grow(c, v, f, g)``, given to the schema (:meth:`attach`): called before the schema takes ``c`` more
  classes, ``v`` columns, ``f`` features or ``g`` Gaussian slots, so that the tables make room first;
- :meth:`make_room`, called by the tables when they reallocate: the per-column and per-feature arrays
  of the schema (``value_feature``, ``n_values``) keep the tables' capacity, which compiled kernels rely on;
- the arguments of :meth:`register`: ``room(k, new)``, where the tables refuse an event (over the memory
  budget, a t-way table past ``max_table_cells``) before anything changes, and ``promote(f)``, where the
  tables move a promoted feature's counts (they call back :meth:`promote` for the schema's side).

Examples
--------
>>> s = Schema(numeric="gaussian")
>>> enc = s.register({"outlook": "sunny", "temp": 30.0})
>>> enc.cols.tolist(), enc.gslots.tolist(), enc.gx.tolist()
([1], [0], [30.0])
>>> s.features, s.value_keys, s.add_class("no")
(['outlook', 'temp'], [None, 'sunny'], 0)
>>> s.encode({"outlook": "rain", "temp": 20.0}).cols.tolist()  # a value never seen: column 0
[0]
"""

from __future__ import annotations

import typing

import numpy as np

from ..._checks import check_choice, is_integer
from ...exceptions import FeatureTypeError
from ..discretiser import Discretiser
from ..values import (
    BINNED, CAT, EMPTY_FLOAT, EMPTY_INT, GAUSS, PROMOTE, Encoded, Labels, categorical_value, check_event, check_types,
    is_nan, numeric_value,
)
from ._runs import RunEncoder
from ._shapes import shape_of
from ._value_types import ValueTypes

__all__ = ["Promoted", "Schema"]


def _no_tables(c: int = 0, v: int = 0, f: int = 0, g: int = 0) -> None:
    """The ``grow`` of a schema used alone: no tables to make room in."""


def _numeric_check(name, v) -> None:
    """Refuse a number beyond :data:`~stream_nb.stats.NUMERIC_LIMIT` as a category of a feature inferred from
    integers: a fraction later turns that feature numeric, and its moments could not hold the value."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        numeric_value(name, v)


class Promoted(typing.NamedTuple):
    """How a promotion moves a feature's counts (:meth:`Schema.promote`)."""

    #: ``"gauss"``: into Gaussian slot ``new[0]`` (naive Bayes); ``"drop"``: dropped, its values being
    #: warm-up values of its new discretiser; ``"bins"``: the counts of each ``old`` column into bin column ``new``
    rule: str
    old: np.ndarray  # the feature's value columns until now, detached
    new: np.ndarray
    keys: np.ndarray  # the value of each old column, as a float


class Schema:
    """Classes, features and values of a stream, and its events as indices (see the module notes).

    Parameters
    ----------
    numeric
        ``"gaussian"``: a numeric feature keeps Gaussian moments (a slot). ``"bins"``: it is discretised and
        its bins are columns.
    types
        Optional ``{feature: "categorical" | "numeric"}`` overriding the inference from the first value.
    bins, warmup, bin_edges
        Discretiser settings for ``numeric="bins"``.
    grow
        Called as ``grow(c, v, f, g)`` before ``c`` classes, ``v`` columns, ``f`` features and ``g`` Gaussian
        slots are added (the store's tables make room); by default nothing.
    """

    def __init__(self, *, numeric: str, types=None, bins: int = 5, warmup: int = 100, bin_edges=None, grow=None):
        check_choice("numeric", numeric, ("gaussian", "bins"))
        self.numeric = numeric
        self.types = check_types(types)
        self.bins = bins
        self.warmup = warmup
        self.bin_edges = dict(bin_edges or {})
        self._grow = grow or _no_tables
        #: the discretiser of a new binned feature without edges of its own (a coarse layer's: edges from
        #: its fine layer, see :meth:`bin_with`)
        self._binner = Discretiser
        self.labels = Labels()  # the classes
        self.features: list = []
        self.feature_index: dict = {}
        self.kinds: list[int] = []
        self.values: list[dict | None] = []  # per feature: value -> column (CAT, BINNED)
        self.gslot: list[int] = []  # per feature: Gaussian slot (GAUSS), else -1
        self.value_types = ValueTypes()  # per feature: the type of a categorical feature's values
        self.disc: list[Discretiser | None] = []
        self.value_keys: list = [None]  # column -> value; column 0 is the unseen-value sentinel
        self.value_feature = np.full(16, -1, dtype=np.int64)  # column -> feature (-1: none, detached)
        self.n_values = np.zeros(8, dtype=np.int64)  # feature -> its values (columns)
        self.n_gauss = 0
        self.gauss_feature: list[int] = []
        # name -> (kind, feature, value dict, Gaussian slot, discretiser): one lookup per value on the hot path
        self.lookup: dict = {}
        # categorical features inferred from an integer: a later fractional number turns them numeric
        # (and the features of self.few: a value beyond their few turns them numeric)
        self.from_int: set = set()
        # numeric features inferred from a float in a discretising schema, counted by value (each value its
        # own bin) while they have at most few_max values; one more turns them binned, as a fraction turns a
        # feature of integers numeric (see :meth:`promote`). Each is in from_int too
        self.few: set = set()
        self.few_max = bins
        self.promoted: dict = {}  # feature -> how its promotion moved its counts (see _promoted.py)
        self.epoch = 0  # bumped by every change of the schema
        self._cache: dict = {}  # derived lookups, each tagged with the epoch it was computed at
        #: the encoder of many events at once (:class:`~stream_nb.stats.schema.RunEncoder`)
        self.runs = RunEncoder(self)

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_cache"] = {}
        return state

    # ------------------------------------------------------------------ the calls of the tables

    def attach(self, grow) -> None:
        """Make room through ``grow(c, v, f, g)`` from now on (the store that holds this schema)."""
        self._grow = grow

    def make_room(self, columns: int, features: int) -> None:
        """Keep room for ``columns`` columns and ``features`` features in the per-column and per-feature
        arrays (``value_feature``, ``n_values``): the tables' capacity, given when they reallocate."""
        if len(self.value_feature) != columns:
            vf = np.full(columns, -1, dtype=np.int64)
            V = min(columns, len(self.value_keys))
            vf[:V] = self.value_feature[:V]
            self.value_feature = vf
        if len(self.n_values) != features:
            nv = np.zeros(features, dtype=np.int64)
            F = min(features, len(self.features))
            nv[:F] = self.n_values[:F]
            self.n_values = nv

    def advance(self, past: int) -> None:
        """Take an epoch beyond ``past``: the store's tables changed their layout at epoch ``past``, or this
        schema replaces one of that epoch (the encodings made before must not pass for new ones)."""
        self.epoch = max(self.epoch, past) + 1

    def bin_with(self, binner: type) -> None:
        """Give each new binned feature without edges of its own a ``binner(bins, warmup)`` (a coarse layer's
        discretiser)."""
        self._binner = binner

    def set_few_max(self, n: int) -> None:
        """Count a float feature by value while it has at most ``n`` values (0: bin every float feature from
        its first value, :meth:`counts_by_value`)."""
        self.few_max = n

    def restore(self, from_int, few, few_max: int, promoted: dict) -> None:
        """Set what a written state says of promotions (:meth:`~stream_nb.stats.Stats.from_state`): the
        features a fraction may still turn numeric, those counted by value, their bound, and the promotions
        made."""
        self.from_int, self.few, self.few_max, self.promoted = set(from_int), set(few), few_max, dict(promoted)
        self.epoch += 1

    # ------------------------------------------------------------------ classes

    classes = property(lambda s: s.labels.classes, doc="The classes, in order of first appearance.")
    class_index = property(lambda s: s.labels.index, doc="``{class: index}``.")
    label_type = property(lambda s: s.labels.type, doc="JSON type of the labels, fixed by the first class; None before it.")
    vtypes = property(lambda s: s.value_types.types, doc="Per feature: the type of its values, None if numeric or none yet.")
    vt_ok = property(lambda s: s.value_types.ok)

    @property
    def n_classes(self) -> int:
        return len(self.labels.classes)

    def add_class(self, y) -> int:
        """Register class ``y`` (checked and validated by the caller); its index."""
        self._grow(c=1)
        c = self.labels.add(y)
        self.epoch += 1
        return c

    # ------------------------------------------------------------------ features and values

    def kind_for(self, name, v) -> int:
        """The kind a new feature ``name`` takes from its first value ``v`` (and ``types``)."""
        declared = self.types.get(name)
        if declared == "categorical":
            return CAT
        if self.counts_by_value(name, v):
            return CAT
        if declared == "numeric" or (declared is None and isinstance(v, (float, np.floating))):
            return GAUSS if self.numeric == "gaussian" else BINNED
        return CAT

    def counts_by_value(self, name, v) -> bool:
        """Whether a new feature ``name`` whose first value is ``v`` is counted by value while it has few
        values (:attr:`few`): a float, its type not declared, no ``bin_edges`` of its own, in a discretising
        schema. A numeric feature of a few values (0, 0.5 and 1) keeps each in a bin of its own from its first
        event; one more value than ``few_max`` turns it binned (:meth:`promote`)."""
        return (self.numeric == "bins" and self.few_max > 0 and isinstance(v, (float, np.floating))
                and name not in self.types and name not in self.bin_edges)

    def add_feature(self, name, kind, from_int: bool = False, few: bool = False) -> int:
        """Register feature ``name`` of ``kind``; its index."""
        self._grow(f=1, g=1 if kind == GAUSS else 0)
        f = len(self.features)
        if f >= len(self.n_values):  # used alone: no tables keep the room
            self.make_room(len(self.value_feature), 2 * len(self.n_values))
        self.features.append(name)
        self.feature_index[name] = f
        self.kinds.append(kind)
        self.values.append({} if kind != GAUSS else None)
        self.value_types.add_feature()
        if kind == GAUSS:
            self.gslot.append(self.n_gauss)
            self.gauss_feature.append(f)
            self.n_gauss += 1
        else:
            self.gslot.append(-1)
        if kind == BINNED:
            edges = self.bin_edges.get(name)
            binner = Discretiser if edges is not None else self._binner
            self.disc.append(binner(self.bins, self.warmup, edges))
        else:
            self.disc.append(None)
        self.lookup[name] = (kind, f, self.values[f], self.gslot[f], self.disc[f])
        if kind == CAT and (from_int or few):
            self.from_int.add(f)
        if kind == CAT and few:
            self.few.add(f)
        self.epoch += 1
        return f

    def set_discretiser(self, f: int, d: Discretiser) -> None:
        """Bin feature ``f`` with ``d``."""
        self.disc[f] = d
        kind, _, vals, g, _ = self.lookup[self.features[f]]
        self.lookup[self.features[f]] = (kind, f, vals, g, d)

    def add_value(self, f, v) -> int:
        """Register value ``v`` of feature ``f`` (a category, or a bin); its column."""
        if self.value_types.types[f] is None and self.kinds[f] == CAT:
            self.set_vtype(f, self.vtype_of(self.features[f], v))
        self._grow(v=1)
        col = len(self.value_keys)
        if col >= len(self.value_feature):  # used alone: no tables keep the room
            self.make_room(2 * len(self.value_feature), len(self.n_values))
        self.value_keys.append(v)
        self.values[f][v] = col
        self.value_feature[col] = f
        self.n_values[f] += 1
        self.epoch += 1
        return col

    def add_column(self, v) -> int:
        """A column of no feature (one a promotion detached, in a written state): kept so that the later
        columns keep their place."""
        self._grow(v=1)
        if len(self.value_keys) >= len(self.value_feature):  # used alone: no tables keep the room
            self.make_room(2 * len(self.value_feature), len(self.n_values))
        self.value_keys.append(v)
        self.epoch += 1
        return len(self.value_keys) - 1

    def set_vtype(self, f: int, vt: str | None) -> None:
        """Fix the type of categorical feature ``f``'s values (None: none, e.g. it turned numeric)."""
        self.value_types.set(f, self.features[f], vt, self.values[f])
        self.epoch += 1

    def vtype_of(self, name, v) -> str:
        """The value type a categorical feature takes from its first value ``v``."""
        return ValueTypes.first(v, self.types.get(name))

    def _check_value(self, f: int, name, v) -> None:
        """Raise FeatureTypeError unless ``v`` (a categorical value, not missing) is of feature ``f``'s value type."""
        self.value_types.check(f, name, v, self.feature_index.get(name) in self.few, self.types.get(name))

    def value_error(self, name, vt: str, v, where: str = "") -> FeatureTypeError:
        """The error for categorical value ``v`` of feature ``name``, whose values are of type ``vt``."""
        return ValueTypes.error(name, vt, v, where, self.feature_index.get(name) in self.few, self.types.get(name))

    # ------------------------------------------------------------------ what the views read

    def discrete_features(self) -> np.ndarray:
        """Features counted by value (categorical, or binned with edges) that have values, ascending."""
        cache = self._cache.get("discrete")
        if cache is None or cache[0] != self.epoch:
            F = len(self.features)
            fs = np.array([f for f in range(F) if self.kinds[f] != GAUSS and self.n_values[f] > 0], dtype=np.int64)
            cache = self._cache["discrete"] = (self.epoch, fs)
        return cache[1]

    def columns_of(self, f: int) -> np.ndarray:
        """The value columns of feature ``f``, in order of first appearance."""
        cache = self._cache.get(("cols", f))
        if cache is None or cache[0] != self.epoch:
            cols = np.fromiter(self.values[f].values(), dtype=np.int64, count=len(self.values[f]))
            cache = self._cache[("cols", f)] = (self.epoch, cols)
        return cache[1]

    def missing_of(self, enc: Encoded) -> np.ndarray:
        """Discrete features with values that ``enc`` does not observe."""
        known = self.discrete_features()
        if len(enc.feats) == len(known):
            return EMPTY_INT
        return np.setdiff1d(known, enc.feats, assume_unique=True)

    # ------------------------------------------------------------------ one event: to predict, and to learn

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
        lookup, ok = self.lookup, self.value_types.ok
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
        lookup, ok = self.lookup, self.value_types.ok
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
                        todo.append((name, f, PROMOTE if self.promotes(f, v) else CAT, v))
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


    # ------------------------------------------------------------------ promotion: the schema's side

    def promotes(self, f: int, v) -> bool:
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
        self.lookup[name] = (self.kinds[f], f, self.values[f], self.gslot[f], self.disc[f])
        self.epoch += 1
        return moved
