"""The one store of sufficient statistics that every model is a view of.

Everything a model knows is in these additive counts (float64, so that the
fractional counts of EM fit the same arrays):

=================  ====================  ==========================================
array              shape                 meaning
=================  ====================  ==========================================
``class_count``    (C,)                  |D_c|, events of class c
``value_count``    (C, V)                |D_c,v|, events of class c whose feature
                                         of column v took that value
``feat_count``     (C, F)                events of class c in which feature f was
                                         observed (|D_c| when nothing is missing)
``pair_count``     (C, V, V)             |D_c,v,w|, both values seen together
                                         (only when ``pairs=True``)
``pair_feat``      (C, V, F)             sum of ``pair_count[c, v, w]`` over the
                                         values w of feature f: the events of
                                         class c with value v where f was observed
``g_n``, ``g_mean``, (C, G)              Gaussian moments of each numeric feature
``g_m2``                                 per class (weight, mean, sum of squared
                                         deviations), only in ``numeric="gaussian"``
=================  ====================  ==========================================

Every categorical value (and every bin of a discretised numeric feature) is a
*column* v of one global value axis; ``value_feature[v]`` is its feature.
Column 0 is reserved: it never counts anything, and stands for a value that
was never seen when a model is asked to predict.

Counts are additive, so two stores merge exactly by aligning classes, features
and values by name and adding; the Gaussian moments merge with the exact
pairwise formula of Chan, Golub and LeVeque.

Missing values (``None``, NaN, an absent key) are never counted: every estimate
is made from the events in which the features it involves were observed,
which is why the denominators are ``feat_count`` and ``pair_feat`` rather than
``class_count``. With no missing values they are equal.

EM (``missing="em"``) adds expected, fractional counts for the missing values
to these arrays. A store made with ``observed=True`` then also keeps an
*observed-only twin* of every count array that EM adds to (``obs_value_count``,
``obs_feat_count``, ``obs_pair_count``, ``obs_pair_feat``, ``obs_tuple_count``,
``obs_tuple_feat``): the counts ``missing="ignore"`` would have, which EM's
E-step reads its parameters from (:meth:`Stats.observed`), so that imputed
counts never feed the imputations that follow. The twin starts, as a copy of
the counts, with the first expected counts (until then the two are equal):
from there on it doubles the memory of those arrays and the work of counting
an event, and a stream without missing values never pays for it. The class
counts and the Gaussian moments have no twin: labels are observed (an
unlabeled event is spread over the classes the same way in both), and EM
never imputes a Gaussian feature.
"""

from __future__ import annotations

import copy
import math
import numbers
import typing

import numpy as np
import pandas as pd

from ._discretise import Discretiser
from .exceptions import CapacityError, ConfigError, FeatureTypeError, InvalidEventError, LabelTypeError, MergeError

__all__ = ["Stats", "Encoded", "CAT", "GAUSS", "BINNED", "gaussian_loglik", "json_type", "check_state"]

#: the count arrays that EM adds expected counts to, and that ``observed=True`` keeps twice
_TWINNED = ("value_count", "feat_count", "pair_count", "pair_feat", "tuple_count", "tuple_feat")

CAT, GAUSS, BINNED = 0, 1, 2
PROMOTE = 3  # a learning step: a categorical feature turns numeric
_KIND_NAMES = {CAT: "categorical", GAUSS: "numeric", BINNED: "numeric"}
_EMPTY_INT = np.empty(0, dtype=np.int64)
_EMPTY_FLOAT = np.empty(0, dtype=float)

_JSON_TYPES = {str: "string", bool: "boolean", int: "number", float: "number"}
#: the JSON types a categorical feature of each value type takes ("string or number": declared categorical)
_VALUE_GROUPS = {
    "string": ("string",),
    "number": ("number",),
    "boolean": ("boolean",),
    "string or number": ("string", "number"),
}
#: the Python types whose values the fast lookups of each value type may take as they are
_PLAIN_TYPES = {"string": (str,), "number": (int, float), "boolean": (bool,), "string or number": (str, int, float)}
_NONE_TYPE = type(None)


def json_type(v) -> str:
    """The JSON type a label or a value stands for: ``"string"``, ``"number"`` or ``"boolean"``
    (numpy scalars and subclasses included); the name of its Python type for anything else.

    Python holds ``True == 1`` and ``1 == 1.0``: values of one JSON type never collide with
    values of another only because the model never lets two types meet (see :class:`Stats`).

    >>> json_type("1"), json_type(1), json_type(1.5), json_type(True), json_type(np.int64(3)), json_type((1,))
    ('string', 'number', 'number', 'boolean', 'number', 'tuple')
    """
    t = _JSON_TYPES.get(type(v))
    if t is not None:
        return t
    if isinstance(v, (bool, np.bool_)):
        return "boolean"
    if isinstance(v, str):
        return "string"
    if isinstance(v, numbers.Number):
        return "number"
    return type(v).__name__


def _a(noun: str) -> str:
    return ("an " if noun[:1] in "aeiou" else "a ") + noun


class Encoded(typing.NamedTuple):
    """One event as indices into the store."""

    cols: np.ndarray  # value column of each observed discrete feature (0: a value never seen)
    feats: np.ndarray  # the feature of each of those columns
    gslots: np.ndarray  # Gaussian slot of each observed numeric feature
    gx: np.ndarray  # its value
    unseen: bool = False  # some value was never seen (column 0)


def _is_int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _is_nan(v) -> bool:
    return isinstance(v, (float, np.floating)) and v != v


def _check_categorical(name, v):
    """A usable category, as a plain Python value, or None when missing."""
    t = type(v)
    if t is str or t is int or t is bool:
        return v
    if v is None:
        return None
    if t is float or isinstance(v, np.floating):
        if v != v:
            return None
        if math.isinf(v):
            raise FeatureTypeError(
                f"feature {name!r}: expected a category (str, int, bool) or a finite number, got {v!r}",
                field=name,
            )
        return float(v)
    if isinstance(v, (np.integer, np.bool_, np.str_)):
        return v.item()
    if isinstance(v, (str, int)):  # subclasses (e.g. enums over str)
        return v
    raise FeatureTypeError(
        f"feature {name!r}: expected a categorical value (str, int or bool), "
        f"got {type(v).__name__} {_short(v)}",
        field=name,
    )


def _check_numeric(name, v):
    """A finite float, or None when missing."""
    t = type(v)
    if t is float:
        if v != v:
            return None
        if v in (math.inf, -math.inf):
            raise FeatureTypeError(f"feature {name!r}: expected a finite number, got {v!r}", field=name)
        return v
    if v is None:
        return None
    if t is int or (isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))):
        f = float(v)
        if f != f:
            return None
        if math.isinf(f):
            raise FeatureTypeError(f"feature {name!r}: expected a finite number, got {v!r}", field=name)
        return f
    raise FeatureTypeError(
        f"feature {name!r} is numeric: expected a number, got {type(v).__name__} {_short(v)}",
        field=name,
    )


def _number_column(vals: list) -> np.ndarray:
    """Floats of a feature's values across events: NaN where missing, inf where not a plain finite number."""
    if all(type(v) is float for v in vals):
        return np.array(vals)
    col = np.empty(len(vals))
    for i, v in enumerate(vals):
        t = type(v)
        if t is float:
            col[i] = v
        elif v is None:
            col[i] = np.nan
        elif t is int and -1e308 < v < 1e308:
            col[i] = v
        else:
            col[i] = np.inf
    return col


def _hashable(v) -> bool:
    try:
        hash(v)
    except TypeError:
        return False
    return True


def _short(v) -> str:
    r = repr(v)
    return r if len(r) <= 60 else r[:57] + "..."


def _check_types(types) -> dict:
    if types is None:
        return {}
    if not isinstance(types, dict):
        raise ConfigError(f"types: expected a dict of feature -> 'categorical' | 'numeric', got {type(types).__name__}")
    for k, v in types.items():
        if v not in ("categorical", "numeric"):
            raise ConfigError(f"types[{k!r}]: expected 'categorical' or 'numeric', got {v!r}")
    return dict(types)


def gaussian_loglik(n, mean, m2, x, var_smoothing: float) -> np.ndarray:
    """Per-class Gaussian log-density of numeric values from their moments.

    ``n``, ``mean``, ``m2`` are the count, mean and sum of squared deviations
    per class and feature, shape (..., C, slots); ``x`` the values, (..., slots),
    NaN where missing; the result is (..., C) summed over the slots.

    The variance of feature i in class c is the maximum-likelihood variance,
    floored at ``var_smoothing`` times the feature's variance over all
    classes (and at the smallest normal float, so that an underflowing variance
    stays positive). A class that never saw the feature uses the all-class Gaussian. A
    feature whose values have all been equal so far carries no information and
    contributes nothing, as does a missing value.

    Returned values are log-densities up to a constant per event (the same for
    every class), which is all a posterior needs: the quadratic term is shifted
    by its minimum over classes, so that a value far out in the tails leaves
    the closest class finite instead of overflowing every class to -inf.
    """
    tot = n.sum(-2)
    safe_tot = np.where(tot > 0, tot, 1.0)
    pooled_mean = (n * mean).sum(-2) / safe_tot
    pooled_var = (m2 + n * (mean - pooled_mean[..., None, :]) ** 2).sum(-2) / safe_tot
    seen = n > 0
    var = np.where(seen, m2 / np.where(seen, n, 1.0), pooled_var[..., None, :])
    # floored at the smallest normal float too: variances of values around 1e-150 underflow to 0,
    # and 0/0 in one class would turn the whole posterior into NaN
    var = np.maximum(var, np.maximum(var_smoothing * pooled_var[..., None, :], np.finfo(float).tiny))
    mu = np.where(seen, mean, pooled_mean[..., None, :])
    use = (pooled_var > 0) & ~np.isnan(x)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        q = (x[..., None, :] - mu) ** 2 / var
        q = q - q.min(-2, keepdims=True)
        ll = -0.5 * (np.log(2 * np.pi * var) + q)
    return np.where(use[..., None, :], ll, 0.0).sum(-1)


class Stats:
    """Additive sufficient statistics over a stream of (x, y) events.

    Parameters
    ----------
    pairs
        Keep class-conditional pair counts (AODE, TAN).
    numeric
        ``"gaussian"``: numeric features keep per-class Gaussian moments (naive
        Bayes). ``"bins"``: numeric features are discretised (see
        :mod:`stream_nb._discretise`) and counted like categories.
    types
        Optional ``{feature: "categorical" | "numeric"}`` overriding the
        inference from the first value (str, bool, int: categorical; float: numeric).
    bins, warmup, bin_edges
        Discretiser settings for ``numeric="bins"``.
    tuples
        t >= 3: also keep the t-way class-conditional counts (KDB with k = t - 1 parents); 0: none.
    max_table_cells
        Bound on the cells of the t-way table (each copy of it, with ``observed``).
    observed
        Keep the observed-only twin of the counts (see the module notes) from
        the first expected counts on, for EM's E-step.

    Types: every label has a JSON type (:func:`json_type`: string, number or
    boolean), and the first label fixes the type of all of them
    (:attr:`label_type`); a label of another type raises
    :class:`~stream_nb.exceptions.LabelTypeError`. Likewise a categorical
    feature's first value fixes the type of its values (``vtypes``): strings,
    numbers (an integer first; a fraction later turns it numeric, see
    :meth:`promote`) or booleans; a feature declared categorical in ``types``
    takes strings and numbers alike (codes such as ``"02134"`` and ``94110``)
    unless its first value is a boolean. A value of another type raises
    :class:`~stream_nb.exceptions.FeatureTypeError`, as a string does for a
    numeric feature. Within one type, equal values are one class or one
    category (``1`` and ``1.0``); across types Python would merge ``True`` and
    ``1`` silently, and JSON would write ``1`` and ``"1"`` as the same key.

    Examples
    --------
    >>> s = Stats(pairs=False, numeric="gaussian")
    >>> s.learn_one({"outlook": "sunny", "temp": 30.0}, "no")
    >>> s.learn_one({"outlook": "rain", "temp": 20.0}, "yes")
    >>> s.classes, s.features
    (['no', 'yes'], ['outlook', 'temp'])
    >>> s.counts()["value_count"]["outlook"]
    {'sunny': {'no': 1.0, 'yes': 0.0}, 'rain': {'no': 0.0, 'yes': 1.0}}
    """

    def __init__(
        self,
        *,
        pairs: bool,
        numeric: str,
        types=None,
        bins: int = 5,
        warmup: int = 100,
        bin_edges=None,
        tuples: int = 0,
        max_table_cells: int | None = None,
        observed: bool = False,
    ):
        if numeric not in ("gaussian", "bins"):
            raise ConfigError(f"numeric: expected 'gaussian' or 'bins', got {numeric!r}")
        self.pairs = bool(pairs)
        # tuples = t >= 3: also keep t-way class-conditional counts (KDB with k = t - 1 parents)
        self.tuples = int(tuples)
        self.max_table_cells = max_table_cells
        # observed=True: an observed-only twin of every count EM adds to (the E-step's parameters),
        # allocated with the first expected counts (keeps_observed); until then the counts are observed only
        self.wants_observed = bool(observed)
        self.keeps_observed = False
        self.numeric = numeric
        self.types = _check_types(types)
        self.bins = bins
        self.warmup = warmup
        self.bin_edges = dict(bin_edges or {})
        # classes
        self.classes: list = []
        self.class_index: dict = {}
        #: JSON type of the labels (json_type), fixed by the first class; None before it
        self.label_type: str | None = None
        self._label_ok: set = set()  # Python types checked to be of label_type
        # features
        self.features: list = []
        self.feature_index: dict = {}
        self.kinds: list[int] = []
        self.values: list[dict | None] = []  # per feature: value -> column (CAT, BINNED)
        self.gslot: list[int] = []  # per feature: Gaussian slot (GAUSS), else -1
        # per feature: the type of a categorical feature's values (a key of _VALUE_GROUPS), fixed by
        # its first value; None for a numeric feature or one without a value yet
        self.vtypes: list[str | None] = []
        self._vt_ok: list[set] = []  # per feature: Python types checked to be of its vtype
        self.disc: list[Discretiser | None] = []
        self.value_keys: list = [None]  # column -> value; column 0 is the unseen-value sentinel
        self.n_gauss = 0
        self.gauss_feature: list[int] = []
        # name -> (kind, feature, value dict, Gaussian slot, discretiser): one lookup per value on the hot path
        self._lookup: dict = {}
        # Python type -> name -> value dict, categorical features only, each under the plain Python
        # types of its values (_PLAIN_TYPES): the fast path of encode(), which a value of another type misses
        self._cat_values: dict = {}
        # categorical features inferred from an integer: a later fractional number turns them numeric
        self.from_int: set = set()
        # bumped by every change other than Stats.add, so views can tell when cached tables are stale
        self.epoch = 0
        # bumped by every change of a count: (epoch, version) keys anything derived from the counts
        self.version = 0
        # (items of x, encoding) of the last event encoded for prediction, when learning it
        # would need no new feature or value: the prequential loop then encodes each event once
        self._last = None
        self._cache: dict = {}  # derived lookups, each tagged with the epoch it was computed at
        # arrays, allocated with spare capacity
        self._cap = (0, 0, 0, 0)
        self._alloc(4, 16, 8, 4)

    # ------------------------------------------------------------------ capacity

    def _alloc(self, cc, cv, cf, cg):
        old = getattr(self, "class_count", None)
        C, V, F, G = (len(self.classes), len(self.value_keys), len(self.features), self.n_gauss)
        new = {
            "class_count": np.zeros(cc),
            "value_feature": np.full(cv, -1, dtype=np.int64),
            "n_values": np.zeros(cf, dtype=np.int64),
            "value_count": np.zeros((cc, cv)),
            "feat_count": np.zeros((cc, cf)),
            "g_n": np.zeros((cc, cg)),
            "g_mean": np.zeros((cc, cg)),
            "g_m2": np.zeros((cc, cg)),
        }
        if self.pairs:
            new["pair_count"] = np.zeros((cc, cv, cv))
            new["pair_feat"] = np.zeros((cc, cv, cf))
        used = {"value_count": (C, V), "feat_count": (C, F), "pair_count": (C, V, V), "pair_feat": (C, V, F)}
        for p in self._sets()[1:]:
            for k in used:
                if k in new:
                    new[p + k] = np.zeros_like(new[k])
        if old is not None:
            new["class_count"][:C] = self.class_count[:C]
            new["value_feature"][:V] = self.value_feature[:V]
            new["n_values"][:F] = self.n_values[:F]
            for k in ("g_n", "g_mean", "g_m2"):
                new[k][:C, :G] = getattr(self, k)[:C, :G]
            for p in self._sets():
                for k, dims in used.items():
                    if p + k in new:
                        part = tuple(slice(0, d) for d in dims)
                        new[p + k][part] = getattr(self, p + k)[part]
        for k, v in new.items():
            setattr(self, k, v)
        self._cap = (cc, cv, cf, cg)
        if self.tuples:
            self._alloc_tuples(cc, cv, cf)
        self.epoch += 1

    def _alloc_tuples(self, cc, cv, cf):
        """The t-way tensors grow as V^t, so they get no spare capacity beyond the base arrays'."""
        t = self.tuples
        old = getattr(self, "tuple_count", None)
        if old is not None and old.shape[0] >= cc and old.shape[1] >= cv and self.tuple_feat.shape[-1] >= cf:
            return
        C, V, F = len(self.classes), len(self.value_keys), len(self.features)
        cc, cv, cf = min(cc, C + 2), min(cv, V + 8), min(cf, F + 4)
        # Spare room only while it costs little: with many dimensions even 8 spare values multiply
        # the table (KDB(k=8) would take 9 GB before its first event). Otherwise no more than asked
        # for, which is at most one class, value and feature beyond those in use.
        if cc * cv**t > max(8 * max(C, 1) * max(V, 1) ** t, 1 << 16):
            cc, cv, cf = min(cc, C + 1), min(cv, V + 1), min(cf, F + 1)
        for p in self._sets():
            tc = np.zeros((cc,) + (cv,) * t)
            tf = np.zeros((cc,) + (cv,) * (t - 1) + (cf,))
            if old is not None:
                tc[(slice(0, C),) + (slice(0, V),) * t] = getattr(self, p + "tuple_count")[(slice(0, C),) + (slice(0, V),) * t]
                tf[(slice(0, C),) + (slice(0, V),) * (t - 1) + (slice(0, F),)] = getattr(self, p + "tuple_feat")[
                    (slice(0, C),) + (slice(0, V),) * (t - 1) + (slice(0, F),)
                ]
            setattr(self, p + "tuple_count", tc)
            setattr(self, p + "tuple_feat", tf)

    def _sets(self) -> tuple:
        """Name prefixes of the count sets kept: the counts, and with ``observed`` their observed-only twin."""
        return ("", "obs_") if self.keeps_observed else ("",)

    def observed(self):
        """The store as EM's E-step reads it: the observed-only counts under the usual names.

        Returns a read-only view whose ``value_count``, ``feat_count``,
        ``pair_count``, ``pair_feat``, ``tuple_count`` and ``tuple_feat`` are
        the observed-only twins and whose every other attribute (classes,
        values, class counts, ...) is this store's; without a twin, the
        store itself.
        """
        return _ObservedView(self) if self.keeps_observed else self

    def keep_observed(self) -> None:
        """Start keeping the observed-only twin, as a copy of the current counts.

        Called with the first expected counts (see :meth:`add_expected`): the
        counts are then all observed, so the copy is exact. (A store written
        by a stream_nb that kept no twin and already holds expected counts
        starts it the same way: the best start there is.)
        """
        self.wants_observed = True
        if self.keeps_observed:
            return
        self.keeps_observed = True
        for k in _TWINNED:
            if hasattr(self, k):
                setattr(self, "obs_" + k, getattr(self, k).copy())
        self.epoch += 1

    def table_cells(self, extra_values: int = 0, extra_classes: int = 0) -> int:
        """Cells of the t-way count table with that many more values and classes (0 without one)."""
        if not self.tuples:
            return 0
        return (len(self.classes) + extra_classes) * (len(self.value_keys) + extra_values) ** self.tuples

    def _check_room(self, extra_values: int, extra_classes: int) -> None:
        if not self.tuples or self.max_table_cells is None:
            return
        cells = self.table_cells(extra_values, extra_classes)
        if cells > self.max_table_cells:
            raise CapacityError(
                f"the {self.tuples}-way count table would need {cells:,} cells "
                f"({len(self.classes) + extra_classes} classes x {len(self.value_keys) + extra_values} values^{self.tuples}), "
                f"more than max_table_cells={self.max_table_cells:,}; lower k or the number of bins, "
                f"or raise max_table_cells"
            )

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_last"] = None
        state["_cache"] = {}
        return state

    def _reserve(self, c=0, v=0, f=0, g=0):
        """Make room for ``c`` more classes, ``v`` columns, ``f`` features, ``g`` slots."""
        cc, cv, cf, cg = self._cap
        need = (len(self.classes) + c, len(self.value_keys) + v, len(self.features) + f, self.n_gauss + g)
        if need[0] <= cc and need[1] <= cv and need[2] <= cf and need[3] <= cg:
            if self.tuples:
                self._alloc_tuples(*need[:3])
            return

        def grow(cap, n):
            while cap < n:
                cap *= 2
            return cap

        self._alloc(grow(cc, need[0]), grow(cv, need[1]), grow(cf, need[2]), grow(cg, need[3]))

    # ------------------------------------------------------------------ schema

    @property
    def n_classes(self) -> int:
        return len(self.classes)

    @property
    def n_seen(self) -> float:
        """Total weight learned (the number of events, with EM's fractions)."""
        return float(self.class_count[: self.n_classes].sum())

    def _kind_for(self, name, v) -> int:
        declared = self.types.get(name)
        if declared == "categorical":
            return CAT
        if declared == "numeric" or (declared is None and isinstance(v, (float, np.floating))):
            return GAUSS if self.numeric == "gaussian" else BINNED
        return CAT

    def _promotes(self, f: int, v) -> bool:
        """True when value ``v`` turns categorical feature ``f`` numeric: ``f`` was inferred
        (not declared) from an integer, every value so far is a number, and ``v`` is not a whole number."""
        if f not in self.from_int or not isinstance(v, float) or v.is_integer():
            return False
        return all(isinstance(k, (int, float)) and not isinstance(k, bool) for k in self.values[f])

    def promote(self, f: int) -> None:
        """Turn categorical feature ``f`` numeric, converting its counts exactly.

        JSON has one number type: a feature whose first value was ``0`` and
        whose next ones are ``1234.5`` is numeric. Naive Bayes' Gaussian
        moments per class are computed from the per-value counts; the
        discretising models choose bin edges from the values seen so far
        (weighted by their counts) and add every value's counts, pairs and
        tuples into its bin. The old value columns stay, empty and detached.
        """
        name = self.features[f]
        old = self.columns_of(f)
        keys = np.array([float(self.value_keys[c]) for c in old.tolist()])
        C = self.n_classes
        counts = self.value_count[:C, old]
        self.from_int.discard(f)
        self._set_vtype(f, None)
        if self.numeric == "gaussian":
            self._reserve(g=1)
            g = self.n_gauss
            self.n_gauss += 1
            self.gauss_feature.append(f)
            self.kinds[f], self.values[f], self.gslot[f] = GAUSS, None, g
            n = counts.sum(1)
            mean = np.where(n > 0, counts @ keys / np.where(n > 0, n, 1.0), 0.0)
            self.g_n[:C, g], self.g_mean[:C, g] = n, mean
            self.g_m2[:C, g] = (counts * (keys[None, :] - mean[:, None]) ** 2).sum(1)
            for p in self._sets():
                getattr(self, p + "feat_count")[:C, f] = 0.0
            self.n_values[f] = 0
        else:
            d = Discretiser(self.bins, self.warmup, self.bin_edges.get(name))
            seen = np.repeat(keys, np.maximum(np.rint(counts.sum(0)), 1).astype(int))
            self.kinds[f], self.values[f], self.disc[f] = BINNED, {}, d
            self.n_values[f] = 0
            if d.edges is None and len(seen) < self.warmup:
                # as if it had been numeric all along: its values so far are warm-up values,
                # which teach the bin edges only and are not counted
                d.buffer = seen.tolist()
                self._drop_columns(f, old)
            else:
                if d.edges is None:  # enough values: the edges come from all of them
                    d.buffer = seen.tolist()
                    d._choose()
                new = np.array([self.values[f].get(b) or self._add_value(f, b) for b in d.bin_many(keys).tolist()])
                self._merge_columns(old, new)
        for p in self._sets():
            getattr(self, p + "value_count")[:, old] = 0.0
        self.value_feature[old] = -1
        self._lookup[name] = (self.kinds[f], f, self.values[f], self.gslot[f], self.disc[f])
        self.epoch += 1

    def _drop_columns(self, f: int, old: np.ndarray) -> None:
        """Forget every count of feature ``f``'s columns ``old``, as if its values had been missing."""
        for p in self._sets():
            getattr(self, p + "feat_count")[:, f] = 0.0
            if self.pairs:
                pair_count, pair_feat = getattr(self, p + "pair_count"), getattr(self, p + "pair_feat")
                pair_feat[:, :, f] -= pair_count[:, :, old].sum(2)
                pair_count[:, old, :] = 0.0
                pair_count[:, :, old] = 0.0
                pair_feat[:, old, :] = 0.0
            if self.tuples:
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

    def _merge_columns_of(self, p: str, old: np.ndarray, new: np.ndarray) -> None:
        value_count = getattr(self, p + "value_count")
        pair_count, pair_feat = getattr(self, p + "pair_count", None), getattr(self, p + "pair_feat", None)
        tuple_count, tuple_feat = getattr(self, p + "tuple_count", None), getattr(self, p + "tuple_feat", None)
        for o, n in zip(old.tolist(), new.tolist()):
            value_count[:, n] += value_count[:, o]
            if self.pairs:
                pair_count[:, n, :] += pair_count[:, o, :]
                pair_count[:, o, :] = 0.0
                pair_count[:, :, n] += pair_count[:, :, o]
                pair_count[:, :, o] = 0.0
                pair_feat[:, n, :] += pair_feat[:, o, :]
                pair_feat[:, o, :] = 0.0
            if self.tuples:
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

    def _add_feature(self, name, kind, from_int: bool = False) -> int:
        self._reserve(f=1, g=1 if kind == GAUSS else 0)
        f = len(self.features)
        self.features.append(name)
        self.feature_index[name] = f
        self.kinds.append(kind)
        self.values.append({} if kind != GAUSS else None)
        self.vtypes.append(None)
        self._vt_ok.append(set())
        if kind == GAUSS:
            self.gslot.append(self.n_gauss)
            self.gauss_feature.append(f)
            self.n_gauss += 1
        else:
            self.gslot.append(-1)
        if kind == BINNED:
            self.disc.append(Discretiser(self.bins, self.warmup, self.bin_edges.get(name)))
        else:
            self.disc.append(None)
        self._lookup[name] = (kind, f, self.values[f], self.gslot[f], self.disc[f])
        if kind == CAT and from_int:
            self.from_int.add(f)
        self.epoch += 1
        return f

    def _set_discretiser(self, f: int, d: Discretiser) -> None:
        self.disc[f] = d
        kind, _, vals, g, _ = self._lookup[self.features[f]]
        self._lookup[self.features[f]] = (kind, f, vals, g, d)

    def _add_value(self, f, v) -> int:
        if self.vtypes[f] is None and self.kinds[f] == CAT:
            self._set_vtype(f, self._vtype_of(self.features[f], v))
        self._reserve(v=1)
        col = len(self.value_keys)
        self.value_keys.append(v)
        self.values[f][v] = col
        self.value_feature[col] = f
        self.n_values[f] += 1
        self.epoch += 1
        return col

    def _set_vtype(self, f: int, vt: str | None) -> None:
        """Fix the type of categorical feature ``f``'s values (None: none, e.g. it turned numeric)."""
        name = self.features[f]
        for table in self._cat_values.values():
            table.pop(name, None)
        self.vtypes[f] = vt
        self._vt_ok[f] = set(_PLAIN_TYPES[vt]) if vt is not None else set()
        if vt is not None:
            for t in _PLAIN_TYPES[vt]:
                self._cat_values.setdefault(t, {})[name] = self.values[f]
        self.epoch += 1

    def _vtype_of(self, name, v) -> str:
        """The value type a categorical feature takes from its first value ``v``."""
        t = json_type(v)
        if self.types.get(name) == "categorical" and t in ("string", "number"):
            return "string or number"
        return t

    def _check_value(self, f: int, name, v) -> None:
        """Raise FeatureTypeError unless ``v`` (a categorical value, not missing) is of feature ``f``'s value type."""
        vt = self.vtypes[f]
        if vt is None:
            return
        if json_type(v) in _VALUE_GROUPS[vt]:
            self._vt_ok[f].add(type(v))
            return
        raise self._value_error(name, vt, v)

    def _value_error(self, name, vt: str, v, where: str = "") -> FeatureTypeError:
        """The error for categorical value ``v`` of feature ``name``, whose values are of type ``vt``."""
        t = json_type(v)
        origin = "declared categorical in types" if self.types.get(name) == "categorical" else "the type of its first value"
        hint = ""
        if vt in ("string", "number") and t in ("string", "number"):
            hint = f"; declare it categorical (types={{{name!r}: 'categorical'}}, --types {name}=categorical) to take both"
        return FeatureTypeError(
            f"feature {name!r} is categorical with {vt} values ({origin}): expected {_a(vt)}, "
            f"got {_a(t)} {_short(v)}{where}{hint}",
            field=name,
        )

    def _add_class(self, y) -> int:
        if self.label_type is None:
            self.label_type = json_type(y)
            self._label_ok = {type(y)}
        self._reserve(c=1)
        c = len(self.classes)
        self.classes.append(y)
        self.class_index[y] = c
        self.epoch += 1
        return c

    # ------------------------------------------------------------------ encoding

    def encode(self, x: dict) -> Encoded:
        """Indices of ``x`` for prediction; never changes the counts.

        Features never learned are ignored; a value never seen maps to column 0.
        """
        # Fast path: every value categorical and already known; the features
        # are then read off the columns. Anything else takes the full loop.
        cat = self._cat_values
        cols = []
        try:
            for name, v in x.items():
                cols.append(cat[type(v)][name][v])  # a value of another type than the feature's misses
        except (KeyError, TypeError):
            return self._encode(x)
        if cols:
            c = np.array(cols, dtype=np.int64)
            enc = Encoded(c, self.value_feature[c], _EMPTY_INT, _EMPTY_FLOAT, False)
        else:
            enc = Encoded(_EMPTY_INT, _EMPTY_INT, _EMPTY_INT, _EMPTY_FLOAT, False)
        self._last = (tuple(x.items()), tuple(map(type, x.values())), enc)
        return enc

    def _encode(self, x: dict) -> Encoded:
        lookup = self._lookup
        cols, feats, gs, gx = [], [], [], []
        reusable = True  # learning x would need nothing new
        unseen = False
        for name, v in x.items():
            e = lookup.get(name)
            if e is None:
                if v is not None and not _is_nan(v):
                    reusable = False
                continue
            kind, f, vals, g, d = e
            if kind == CAT:
                try:
                    col = vals.get(v)
                except TypeError:
                    _check_categorical(name, v)
                    raise
                if col is None:
                    v = _check_categorical(name, v)
                    if v is None:
                        continue
                    col, unseen = 0, True
                if type(v) not in self._vt_ok[f]:
                    self._check_value(f, name, v)
                cols.append(col)
                feats.append(f)
                continue
            fv = _check_numeric(name, v)
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
        enc = Encoded(
            np.array(cols, dtype=np.int64) if cols else _EMPTY_INT,
            np.array(feats, dtype=np.int64) if feats else _EMPTY_INT,
            np.array(gs, dtype=np.int64) if gs else _EMPTY_INT,
            np.array(gx, dtype=float) if gx else _EMPTY_FLOAT,
            unseen,
        )
        self._last = (tuple(x.items()), tuple(map(type, x.values())), enc) if reusable and not unseen else None
        return enc

    def _plan(self, x: dict):
        """Validate ``x`` completely, without changing anything.

        Returns the known columns and the work still to do (new features, new
        values, numeric values to bin) so that a bad value anywhere in ``x``
        leaves the store untouched.
        """
        lookup = self._lookup
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
                        _check_categorical(name, v)
                        raise
                    if col is not None:
                        if type(v) not in self._vt_ok[f]:
                            self._check_value(f, name, v)
                        cols.append(col)
                        feats.append(f)
                        continue
                    v = _check_categorical(name, v)
                    if v is not None:
                        if type(v) not in self._vt_ok[f]:
                            self._check_value(f, name, v)
                        todo.append((name, f, PROMOTE if self._promotes(f, v) else CAT, v))
                    continue
                fv = _check_numeric(name, v)
                if fv is None:
                    continue
                if kind == GAUSS:
                    gs.append(g)
                    gx.append(fv)
                else:
                    todo.append((name, f, BINNED, fv))
                continue
            if v is None or _is_nan(v):
                continue
            k = self._kind_for(name, v)
            v = _check_categorical(name, v) if k == CAT else _check_numeric(name, v)
            if v is not None:
                todo.append((name, None, k, v))
        return cols, feats, gs, gx, todo

    def _check_label(self, y, where: str | None = None):
        """Raise unless ``y`` can be learned as a label: present, hashable, and of :attr:`label_type`."""
        if type(y) in self._label_ok and y == y:  # the usual case: a type already checked (y == y: not NaN)
            return
        if y is None or _is_nan(y):
            raise InvalidEventError("the label is missing (None or NaN)", reason="bad_label")
        try:
            hash(y)
        except TypeError:
            raise InvalidEventError(
                f"the label must be a hashable class (str, int, bool), got {type(y).__name__}",
                reason="bad_label",
            ) from None
        if self.label_type is not None:
            t = json_type(y)
            if t != self.label_type:
                raise LabelTypeError(y, t, self.label_type, self.classes[0], where=where)
            self._label_ok.add(type(y))

    def check_labels(self, labels: list) -> None:
        """Raise for the first label of a batch that :meth:`_check_label` would refuse after the
        ones before it were learned (the first label of a fresh store fixes the type); change nothing.

        Missing labels (None, NaN) are skipped: the caller decides about them.
        """
        if set(map(type, labels)) <= self._label_ok | {_NONE_TYPE}:
            return  # every label of a checked type (NaN included: the caller's business)
        expected, first = self.label_type, self.classes[0] if self.classes else None
        for i, y in enumerate(labels):
            if y is None or _is_nan(y):
                continue
            if expected is None:
                self._check_label(y)
                expected, first = json_type(y), y
                continue
            t = json_type(y)
            if t != expected:
                raise LabelTypeError(y, t, expected, first, where=f"row {i} of the batch")
            self._check_label(y, where=f"row {i} of the batch")

    def encode_learn(self, x: dict, y=None) -> Encoded:
        """Indices of ``x`` for learning: validates all of ``x`` first, then
        registers new features and values and feeds the discretisers.

        ``y``, when given, is the event's label: a t-way table checks it has
        room for a new class as well before anything changes.
        """
        last = self._last
        if last is not None:
            self._last = None
            # equal values of other types (True == 1) are not the same event: the types must match too
            if last[0] == tuple(x.items()) and last[1] == tuple(map(type, x.values())):
                if y is not None and self.tuples:
                    self._check_room(0, y not in self.class_index)
                return last[2]
        cols, feats, gs, gx, todo = self._plan(x)
        if self.tuples:
            self._check_room(len(todo), y is not None and y not in self.class_index)
        for name, f, k, v in todo:
            if k == PROMOTE:
                self.promote(f)
                k = self.kinds[f]
                if k == GAUSS:
                    gs.append(self.gslot[f])
                    gx.append(v)
                    continue
            if f is None:
                f = self._add_feature(name, k, from_int=k == CAT and name not in self.types and _is_int(v))
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
                col = self._add_value(f, v)
            cols.append(col)
            feats.append(f)
        return Encoded(
            np.array(cols, dtype=np.int64) if cols else _EMPTY_INT,
            np.array(feats, dtype=np.int64) if feats else _EMPTY_INT,
            np.array(gs, dtype=np.int64) if gs else _EMPTY_INT,
            np.array(gx, dtype=float) if gx else _EMPTY_FLOAT,
        )

    def class_of(self, y) -> int:
        c = self.class_index.get(y)
        if c is None:
            self._check_label(y)
            c = self._add_class(y)
        return c

    # ------------------------------------------------------------------ learning

    def add(self, enc: Encoded, c: int, w: float = 1.0) -> None:
        """Add one (encoded) event of class index ``c`` with weight ``w`` (its observed values, to every count set)."""
        self.version += 1
        self.class_count[c] += w
        if len(enc.cols):
            for p in self._sets():
                self._count(p, enc.cols, enc.feats, c, w)
        self.add_gaussian(c, w, enc.gslots, enc.gx)

    def add_observed(self, enc: Encoded, c: int, w: float = 1.0) -> None:
        """Count the observed values of ``enc`` in the observed-only twin alone (nothing without one).

        EM's M-step adds an incomplete event to the counts with
        :meth:`add_expected` and to the twin with this: the twin then holds what
        ``missing="ignore"`` would have counted.
        """
        if self.keeps_observed and len(enc.cols):
            self.version += 1
            self._count("obs_", enc.cols, enc.feats, c, w)

    def _count(self, p: str, cols: np.ndarray, feats: np.ndarray, c: int, w: float) -> None:
        """Add weight ``w`` to the values ``cols`` (of features ``feats``) of class ``c`` in count set ``p``."""
        getattr(self, p + "value_count")[c, cols] += w
        getattr(self, p + "feat_count")[c, feats] += w
        if self.pairs:
            rows = cols[:, None]
            getattr(self, p + "pair_count")[c][rows, cols] += w
            getattr(self, p + "pair_feat")[c][rows, feats] += w
        if self.tuples:
            # flat indices into the class's contiguous block: 3x faster than np.ix_
            tc, tf = getattr(self, p + "tuple_count")[c], getattr(self, p + "tuple_feat")[c]
            idx = cols
            for _ in range(self.tuples - 2):
                idx = (idx[:, None] * tc.shape[-1] + cols[None, :]).ravel()
            head = idx
            idx = (head[:, None] * tc.shape[-1] + cols[None, :]).ravel()
            tc.reshape(-1)[idx] += w
            tf.reshape(-1)[(head[:, None] * tf.shape[-1] + feats[None, :]).ravel()] += w

    def add_gaussian(self, c: int, w: float, gs: np.ndarray, gx: np.ndarray) -> None:
        """Weighted Welford update of the Gaussian moments of class ``c``."""
        self.version += 1
        if len(gs):
            n = self.g_n[c, gs] + w
            mean = self.g_mean[c, gs]
            d = gx - mean
            new_mean = mean + d * (w / n)
            self.g_m2[c, gs] += w * d * (gx - new_mean)
            self.g_mean[c, gs] = new_mean
            self.g_n[c, gs] = n

    def gaussian_mixture(self, g: int, weights: np.ndarray) -> tuple[float, float]:
        """Mean and standard deviation of Σ_c weights[c] N(μ_c, σ²_c) for Gaussian slot ``g``."""
        C = self.n_classes
        n, mean, m2 = self.g_n[:C, g], self.g_mean[:C, g], self.g_m2[:C, g]
        tot = n.sum()
        if tot == 0:
            return float("nan"), float("nan")
        pooled_mean = (n * mean).sum() / tot
        pooled_var = (m2 + n * (mean - pooled_mean) ** 2).sum() / tot
        seen = n > 0
        mu = np.where(seen, mean, pooled_mean)
        var = np.where(seen, m2 / np.where(seen, n, 1.0), pooled_var)
        mix_mean = float((weights * mu).sum())
        mix_var = float((weights * (var + (mu - mix_mean) ** 2)).sum())
        return mix_mean, math.sqrt(max(mix_var, 0.0))

    def learn_one(self, x: dict, y, w: float = 1.0) -> None:
        """Count one labeled event's observed values."""
        self._check_label(y)
        enc = self.encode_learn(x)
        self.add(enc, self.class_of(y), w)

    def add_expected(self, c: int, w: float, u: np.ndarray, m: np.ndarray, feats_u: np.ndarray, J=None) -> None:
        """Add one event of class ``c`` whose values are known only in expectation (EM's M-step).

        ``u`` are the columns the event may take (an observed feature: its one
        column; a missing one: all its values), grouped by feature in
        contiguous blocks (``feats_u``); ``m`` is the expected indicator of
        each column and ``J`` the expected pair indicators over ``u`` (needed
        when pair counts are kept): ``J[r, s]`` is added to
        ``pair_count[c, u[r], u[s]]``, the row being the value conditioned on.
        ``J`` need not be symmetric (EM fills the rows of each feature under
        its own one-dependence model), but each row block of a feature must
        sum to ``m`` over every other feature's columns. Each feature's block
        of ``m`` sums to 1, so the event adds exactly weight ``w`` everywhere.
        Only the counts receive it; the observed-only twin (started here, if
        wanted and not yet kept) takes the event's observed values through
        :meth:`add_observed`.
        """
        if self.wants_observed:
            self.keep_observed()
        self.version += 1
        self.class_count[c] += w
        self.value_count[c, u] += w * m
        starts = np.flatnonzero(np.r_[True, feats_u[1:] != feats_u[:-1]])
        fs = feats_u[starts]
        self.feat_count[c, fs] += w
        if self.pairs:
            self.pair_count[c][u[:, None], u] += w * J
            self.pair_feat[c][u[:, None], fs] += w * np.add.reduceat(J, starts, axis=1)

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
            return _EMPTY_INT
        return np.setdiff1d(known, enc.feats, assume_unique=True)

    # ------------------------------------------------------------------ batches

    def encode_run(self, xs: list, ys: list, start: int, complete: bool, limit: int):
        """Encode events ``xs[start:]`` while each is *plain*; stop at the first that is not.

        Plain: the event has a known class or no label, and every value it
        observes is already known (a known categorical value, a finite
        number for a Gaussian feature, or one that falls in a bin already
        seen for a discretised feature whose edges are fixed), so learning it
        changes no schema, only counts; with ``complete`` every discrete
        feature is observed too.
        A run of plain events can therefore be scored and learned with
        running counts (see :mod:`stream_nb._running`). The first event that
        is not plain (a new feature, value or class, a missing value under
        EM, a bad value) ends the run; the caller handles it one at a time,
        where the usual checks raise the usual errors.

        Returns ``(stop, D, G, yc)``: the run is ``xs[start:stop]`` (at most
        ``limit`` events), ``D`` its columns (rows, features) with -1 where
        missing or Gaussian, ``G`` its Gaussian values (rows, slots) with NaN
        where missing, ``yc`` its class indices (-1: unlabeled).
        """
        end = min(len(xs), start + limit)
        F, lookup = len(self.features), self._lookup
        sub = xs[start:end]
        stop = len(sub)
        # labels: a known class (of a type checked to be the labels' type: True finds the class 1), or None
        classes, label_ok, yc = self.class_index, self._label_ok, []
        for i, y in enumerate(ys[start:end]):
            c = -1 if y is None else classes.get(y) if type(y) in label_ok else None
            if c is None:
                stop = i
                break
            yc.append(c)
        # keys: known features, or null values
        known = lookup.keys()
        for i in range(stop):
            x = sub[i]
            if not x.keys() <= known and any(
                not (v is None or (type(v) is float and v != v)) for k, v in x.items() if k not in lookup
            ):
                stop = i
                break
        sub = sub[:stop]
        D = np.full((stop, F), -1, dtype=np.int64)
        G = np.full((stop, self.n_gauss), np.nan)
        for f, name in enumerate(self.features):
            if not sub:
                break
            kind = self.kinds[f]
            vals = [x.get(name) for x in sub]
            if kind == CAT:
                ok = self._vt_ok[f]
                if not set(map(type, vals)) <= ok | {_NONE_TYPE}:
                    # a value of another type (True finds the column of 1): the run stops there
                    bad = next((i for i, v in enumerate(vals) if not (v is None or type(v) in ok or _is_nan(v))), stop)
                    if bad < stop:
                        stop = bad
                        del sub[stop:], vals[stop:]
                        D, G = D[:stop], G[:stop]
                        if not stop:
                            break
                vmap = self.values[f]
                try:
                    cols = list(map(vmap.get, vals))
                except TypeError:  # an unhashable value: find it
                    cols = [vmap.get(v) if _hashable(v) else -2 for v in vals]
                if None in cols or -2 in cols:
                    for i, (col, v) in enumerate(zip(cols, vals)):
                        if col is None and (v is None or (type(v) is float and v != v)):
                            if complete:  # a missing value, learned by EM one at a time
                                stop = min(stop, i)
                                break
                            cols[i] = -1
                        elif col is None or col == -2:
                            stop = min(stop, i)
                            break
                    cols = cols[:stop]
                    del sub[stop:]
                    D = D[:stop]
                    G = G[:stop]
                if stop:
                    D[:, f] = cols[:stop]
            else:
                col = _number_column(vals)  # NaN: missing; inf: not a plain number
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
                        bad |= cols == -3
                    if complete:
                        bad |= missing
                if bad.any():
                    stop = min(stop, int(bad.argmax()))
                    del sub[stop:]
                    D, G = D[:stop], G[:stop]
                if kind == GAUSS:
                    G[:, self.gslot[f]] = col[:stop]
                elif stop and self.disc[f].edges is not None:
                    D[:, f] = cols[:stop]
        return start + stop, D, G, np.array(yc[:stop], dtype=np.int64)

    def encode_frame(self, X: pd.DataFrame, learn: bool):
        """Encode a DataFrame column by column.

        Returns ``(D, dfeats, G, gslots)``: ``D`` (rows, k) value columns of the
        discrete features ``dfeats`` (-1 missing, 0 unseen), ``G`` (rows, g) the
        numeric values of Gaussian ``gslots`` (NaN missing).

        When ``learn`` is true, new features and values are registered in the
        order a row-by-row ``learn_one`` loop would register them, so both paths
        build identical stores.
        """
        n = len(X)
        prepared = self._prepare_frame(X, learn)
        if learn:
            self._register_frame(prepared, n)
        return self._encode_prepared(prepared, n, learn)

    def frame_promotes(self, X: pd.DataFrame) -> bool:
        """True when learning ``X`` would turn a categorical feature numeric (see :meth:`promote`):
        a feature inferred from integers (known, or new with an integer first) meets a fraction."""
        for name in X.columns:
            f = self.feature_index.get(name)
            if f is not None and f not in self.from_int:
                continue
            s = X[name]
            if s.dtype.kind in "iub":  # integer and boolean columns hold no fraction
                continue
            if f is None:
                if name in self.types or s.dtype.kind == "f":
                    continue
                first = s.first_valid_index()
                if first is None or not _is_int(s.loc[first]):
                    continue
            col = pd.to_numeric(s, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
            col = col[~np.isnan(col)]
            if len(col) and not np.all(col == np.round(col)):
                return True
        return False

    def validate_frame(self, X: pd.DataFrame) -> None:
        """Raise ``FeatureTypeError`` for any value of ``X`` that learning would refuse; change nothing."""
        self._prepare_frame(X, learn=True)

    def _prepare_frame(self, X: pd.DataFrame, learn: bool) -> list:
        prepared = []  # (position, name, f, kind, payload)
        for pos, name in enumerate(X.columns):
            s = X[name]
            f = self.feature_index.get(name)
            if f is not None:
                kind = self.kinds[f]
            else:
                first = s.first_valid_index()
                if first is None:
                    continue
                if not learn:
                    continue
                # A new feature's type follows the column's dtype: a float column is numeric.
                # (pandas stores an int column with missing values as float: declare ``types``
                # or use the nullable "Int64" dtype to keep such a column categorical.)
                is_float = isinstance(s.dtype, np.dtype) and s.dtype.kind == "f"
                kind = self._kind_for(name, 0.0 if is_float else s.loc[first])
            if kind == CAT:
                codes, uniques = pd.factorize(s, use_na_sentinel=True)
                uniques = [_check_categorical(name, u) for u in uniques.tolist()]
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
            vt = self._vtype_of(name, first)
        allowed = self._vt_ok[f] if f is not None and self.vtypes[f] is not None else set(_PLAIN_TYPES[vt])
        mixed = s.dtype == object
        values = s.tolist() if mixed else uniques
        extra = set(map(type, values)) - allowed - {_NONE_TYPE}
        if not extra or (extra == {float} and not any(json_type(u) in ("number", "boolean") for u in uniques)):
            return  # floats neither among the uniques nor merged into one (1.0 == True) are NaN: missing
        for i, v in enumerate(values):
            if not (v is None or _is_nan(v) or v is pd.NA or v is pd.NaT or json_type(v) in _VALUE_GROUPS[vt]):
                raise self._value_error(name, vt, v, f" (row {i} of the batch)" if mixed else "")

    def _encode_prepared(self, prepared, n, learn):
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
                dcols.append(self._bin_column(f, payload, learn))
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
            bad = next(v for v in s if v is not None and not _is_nan(v) and not isinstance(v, numbers.Real))
            raise FeatureTypeError(
                f"feature {name!r} is numeric: expected a number, got {type(bad).__name__} {_short(bad)}",
                field=name,
            ) from None
        if np.isinf(a).any():
            raise FeatureTypeError(f"feature {name!r}: expected finite numbers, got an infinity", field=name)
        return a

    def _register_frame(self, prepared, n):
        """Register new features and categorical values in row-major order of first appearance."""
        events = []  # (row, position, 0 feature / 1 value, name, kind, value)
        for pos, name, f, kind, payload in prepared:
            if kind == CAT:
                codes, uniques = payload
                valid = codes >= 0
                if not valid.any():
                    continue
                if f is None:
                    first_row = int(np.argmax(valid))
                    events.append((first_row, pos, 0, name, kind, _is_int(uniques[codes[first_row]])))
                known = self.values[f] if f is not None else {}
                new = [i for i, u in enumerate(uniques) if u is not None and u not in known]
                if new:
                    first = np.full(len(uniques), n, dtype=np.int64)
                    rows = np.flatnonzero(valid)
                    np.minimum.at(first, codes[rows], rows)
                    for i in new:
                        events.append((int(first[i]), pos, 1, name, kind, uniques[i]))
            elif f is None:
                valid = ~np.isnan(payload)
                if valid.any():
                    events.append((int(np.argmax(valid)), pos, 0, name, kind, False))
        events.sort(key=lambda e: (e[0], e[1], e[2]))
        if self.tuples:  # binned values may add a few more: they are checked as they come
            self._check_room(sum(1 for e in events if e[2] == 1), 0)
        for _, _, what, name, kind, v in events:
            if what == 0:
                self._add_feature(name, kind, from_int=kind == CAT and name not in self.types and v)
            else:
                self._add_value(self.feature_index[name], v)

    def _bin_column(self, f, xs: np.ndarray, learn: bool) -> np.ndarray:
        d = self.disc[f]
        out = np.full(len(xs), -1, dtype=np.int64)
        valid = np.flatnonzero(~np.isnan(xs))
        if learn and d.edges is None:
            taken = d.buffer_many(xs[valid])
            valid = valid[taken:]
        if d.edges is None or not len(valid):
            return out
        b = d.bin_many(xs[valid])
        vals = self.values[f]
        if learn:
            for i in np.unique(b, return_index=True)[1][np.argsort(np.unique(b, return_index=True)[1])]:
                key = int(b[i])
                if key not in vals:
                    self._add_value(f, key)
        lut = np.zeros(len(d.edges) + 1, dtype=np.int64)
        for key, col in vals.items():
            lut[key] = col
        out[valid] = lut[b]
        return out

    def classes_from_codes(self, codes: np.ndarray, labels: list) -> np.ndarray:
        """Class indices of factorised labels, registering new classes in order of first appearance."""
        present, first = np.unique(codes, return_index=True)
        if self.tuples:
            self._check_room(0, sum(1 for code in present if labels[code] not in self.class_index))
        for code in present[np.argsort(first)]:
            if labels[code] not in self.class_index:
                self._add_class(labels[code])
        lut = np.array([self.class_index.get(v, -1) for v in labels], dtype=np.int64)
        return lut[codes]

    def add_many(self, D, dfeats, G, gslots, yc, w=None, observed: bool = True) -> None:
        """Add a batch of encoded events (see :meth:`encode_frame`).

        ``observed=False``: the rows are completions of one incomplete event
        (KDB's M-step), so they go to the counts and not to the observed-only
        twin (started here, if wanted and not yet kept, as in :meth:`add_expected`).
        """
        if not observed and self.wants_observed:
            self.keep_observed()
        n = len(yc)
        self.epoch += 1
        w = np.ones(n) if w is None else np.asarray(w, dtype=float)
        C = len(self.classes)
        self.class_count[:C] += np.bincount(yc, weights=w, minlength=C)
        if D.shape[1]:
            mask = D >= 0
            rr, jj = np.nonzero(mask)
            cc = yc[rr]
            if self.pairs:
                M = mask[:, :, None] & mask[:, None, :]
                r3, a3, b3 = np.nonzero(M)
            for p in self._sets() if observed else ("",):
                np.add.at(getattr(self, p + "value_count"), (cc, D[rr, jj]), w[rr])
                np.add.at(getattr(self, p + "feat_count"), (cc, dfeats[jj]), w[rr])
                if self.pairs:
                    np.add.at(getattr(self, p + "pair_count"), (yc[r3], D[r3, a3], D[r3, b3]), w[r3])
                    np.add.at(getattr(self, p + "pair_feat"), (yc[r3], D[r3, a3], dfeats[b3]), w[r3])
                if self.tuples:
                    self._add_tuples_many(p, D, dfeats, yc, w, mask)
        for j, g in enumerate(gslots):
            x = G[:, j]
            ok = ~np.isnan(x)
            if not ok.any():
                continue
            c, xv, wv = yc[ok], x[ok], w[ok]
            nb = np.bincount(c, weights=wv, minlength=C)
            present = nb > 0
            mb = np.zeros(C)
            mb[present] = np.bincount(c, weights=wv * xv, minlength=C)[present] / nb[present]
            m2b = np.bincount(c, weights=wv * (xv - mb[c]) ** 2, minlength=C)
            idx = np.flatnonzero(present)
            self._merge_moments(idx, g, nb[idx], mb[idx], m2b[idx])

    def _add_tuples_many(self, p, D, dfeats, yc, w, mask):
        t = self.tuples
        tuple_count, tuple_feat = getattr(self, p + "tuple_count"), getattr(self, p + "tuple_feat")
        k = D.shape[1]
        grid = np.indices((k,) * t).reshape(t, -1)  # every t-tuple of column positions
        for lo in range(0, len(D), 64):
            Dm, mk = D[lo : lo + 64], mask[lo : lo + 64]
            ok = np.logical_and.reduce([mk[:, g] for g in grid])  # (rows, k^t)
            r, j = np.nonzero(ok)
            cols = tuple(Dm[r, grid[a][j]] for a in range(t))
            ww = w[lo : lo + 64][r]
            np.add.at(tuple_count, (yc[lo : lo + 64][r],) + cols, ww)
            np.add.at(tuple_feat, (yc[lo : lo + 64][r],) + cols[:-1] + (dfeats[grid[-1][j]],), ww)

    def _merge_moments(self, cls, g, nb, mb, m2b):
        na, ma, m2a = self.g_n[cls, g], self.g_mean[cls, g], self.g_m2[cls, g]
        n = na + nb
        delta = mb - ma
        self.g_mean[cls, g] = ma + delta * (nb / n)
        # delta * (delta * w), not delta² * w: with an empty side (w = 0) a huge delta adds 0, not inf * 0
        self.g_m2[cls, g] = m2a + m2b + delta * (delta * (na * nb / n))
        self.g_n[cls, g] = n

    # ------------------------------------------------------------------ merging

    def merge(self, other: "Stats") -> None:
        """Add ``other``'s counts into this store (exactly: as if its stream came next).

        The observed-only twins add too. A store without one holds observed
        values only: its counts are what it adds to this store's twin. When
        this store keeps no twin and the other does, this store starts one if
        it wants one (EM), and otherwise (``missing="ignore"``) takes the
        other's observed-only counts, so that it stays what ``"ignore"`` would
        have counted from both streams.
        """
        if (self.pairs, self.numeric, self.tuples) != (other.pairs, other.numeric, other.tuples):
            raise MergeError(
                f"cannot merge statistics kept differently: pairs={self.pairs}, numeric={self.numeric!r} "
                f"here, pairs={other.pairs}, numeric={other.numeric!r} in the other model"
            )
        label_type = self.label_type or other.label_type
        odd = next((y for y in other.classes if json_type(y) != label_type), None)
        if odd is not None:
            mine = f"this model's labels are {label_type}s" + (f" (its first: {self.classes[0]!r})" if self.classes else "")
            raise MergeError(
                f"cannot merge: {mine} but the other model has {_a(json_type(odd))} label, {odd!r}; "
                f"labels of two types would merge classes (True == 1) or give two classes one key (1 and '1')"
            )
        stale = [f for name, f in other.feature_index.items() if f in other.from_int
                 and name in self.feature_index and self.kinds[self.feature_index[name]] != CAT]
        if stale:  # this model saw the feature turn numeric: so would a sequential run
            other = copy.deepcopy(other)
            for f in stale:
                other.promote(f)
        for name, f in other.feature_index.items():
            mine = self.feature_index.get(name)
            if mine is not None and mine in self.from_int and other.kinds[f] != CAT:
                self.promote(mine)  # the other model saw it turn numeric: so would a sequential run
            if mine is not None and _KIND_NAMES[self.kinds[mine]] != _KIND_NAMES[other.kinds[f]]:
                raise MergeError(
                    f"feature {name!r} is {_KIND_NAMES[self.kinds[mine]]} here but "
                    f"{_KIND_NAMES[other.kinds[f]]} in the other model"
                )
            if mine is not None and self.vtypes[mine] is not None and other.vtypes[f] is not None and not (
                set(_VALUE_GROUPS[other.vtypes[f]]) <= set(_VALUE_GROUPS[self.vtypes[mine]])
            ):
                raise MergeError(
                    f"feature {name!r} is categorical with {self.vtypes[mine]} values here but "
                    f"{other.vtypes[f]} values in the other model"
                )
            if other.kinds[f] == BINNED and mine is not None:
                a, b = self.disc[mine], other.disc[f]
                # both still in warm-up with room for both buffers: concatenating them
                # is exactly what a sequential run would have buffered
                both_warm = a.edges is None and b.edges is None and len(a.buffer) + len(b.buffer) < a.warmup
                if not a.same_as(b) and not both_warm and (b.edges is not None or b.buffer):
                    raise MergeError(
                        f"feature {name!r}: the two models discretised it with different bin edges "
                        f"({None if a.edges is None else a.edges.tolist()} vs "
                        f"{None if b.edges is None else b.edges.tolist()}); declare the edges with "
                        f"bin_edges={{{name!r}: [...]}} in both models to merge them exactly"
                    )

        # align classes, features, values (in the other store's order, as a sequential run would)
        self.epoch += 1
        if self.tuples:
            new_v = sum(
                1 for col in range(1, len(other.value_keys))
                if other.value_feature[col] >= 0 and (other.features[other.value_feature[col]] not in self.feature_index
                or other.value_keys[col] not in (self.values[self.feature_index[other.features[other.value_feature[col]]]] or {}))
            )
            self._check_room(new_v, sum(1 for y in other.classes if y not in self.class_index))
        cmap = np.array([self.class_of(y) for y in other.classes], dtype=np.int64)
        fmap = np.empty(len(other.features), dtype=np.int64)
        for name, f in other.feature_index.items():
            mine = self.feature_index.get(name)
            if mine is None:
                mine = self._add_feature(name, other.kinds[f])
                if other.kinds[f] == BINNED:
                    self._set_discretiser(mine, Discretiser.from_state(other.disc[f].state()))
            elif other.kinds[f] == BINNED and self.disc[mine].edges is None and other.disc[f].edges is None:
                self.disc[mine].buffer.extend(other.disc[f].buffer)
            fmap[f] = mine
        vmap = np.zeros(len(other.value_keys), dtype=np.int64)
        for col in range(1, len(other.value_keys)):
            if other.value_feature[col] < 0:
                continue  # detached by a promotion: empty
            f = fmap[other.value_feature[col]]
            v = other.value_keys[col]
            mine = self.values[f].get(v)
            vmap[col] = mine if mine is not None else self._add_value(f, v)
        C = len(other.classes)
        self.class_count[cmap] += other.class_count[:C]
        if other.keeps_observed and self.wants_observed:
            self.keep_observed()
        for p in self._sets():
            # without a twin, a store's counts are all observed
            q = "obs_" if other.keeps_observed and (p or not self.keeps_observed) else ""
            self._add_aligned(p, other, q, cmap, vmap, fmap)
        for f_other, f in enumerate(fmap):
            if other.kinds[f_other] != GAUSS:
                continue
            go, g = other.gslot[f_other], self.gslot[f]
            nb = other.g_n[:C, go]
            present = nb > 0
            if present.any():
                self._merge_moments(cmap[present], g, nb[present], other.g_mean[:C, go][present], other.g_m2[:C, go][present])

    def _add_aligned(self, p: str, other: "Stats", q: str, cmap, vmap, fmap) -> None:
        """Add count set ``q`` of ``other`` into this store's count set ``p`` (classes, values and
        features mapped by ``cmap``, ``vmap``, ``fmap``)."""
        C, V, F = len(other.classes), len(other.value_keys), len(other.features)
        getattr(self, p + "value_count")[np.ix_(cmap, vmap[1:])] += getattr(other, q + "value_count")[:C, 1:V]
        getattr(self, p + "feat_count")[np.ix_(cmap, fmap)] += getattr(other, q + "feat_count")[:C, :F]
        if self.pairs:
            getattr(self, p + "pair_count")[np.ix_(cmap, vmap[1:], vmap[1:])] += getattr(other, q + "pair_count")[:C, 1:V, 1:V]
            getattr(self, p + "pair_feat")[np.ix_(cmap, vmap[1:], fmap)] += getattr(other, q + "pair_feat")[:C, 1:V, :F]
        if self.tuples:
            t, vv = self.tuples, vmap[1:]
            getattr(self, p + "tuple_count")[np.ix_(cmap, *([vv] * t))] += getattr(other, q + "tuple_count")[
                (slice(0, C),) + (slice(1, V),) * t
            ]
            getattr(self, p + "tuple_feat")[np.ix_(cmap, *([vv] * (t - 1)), fmap)] += getattr(other, q + "tuple_feat")[
                (slice(0, C),) + (slice(1, V),) * (t - 1) + (slice(0, F),)
            ]

    # ------------------------------------------------------------------ views

    def gaussian_loglik(self, gslots: np.ndarray, gx: np.ndarray, var_smoothing: float) -> np.ndarray:
        """Per-class Gaussian log-density of numeric values: ``gx`` (slots,) gives (C,), a batch
        ``gx`` (rows, slots) with NaN for missing gives (rows, C). See :func:`gaussian_loglik`."""
        C = len(self.classes)
        return gaussian_loglik(
            self.g_n[:C, gslots], self.g_mean[:C, gslots], self.g_m2[:C, gslots], gx, var_smoothing
        )

    def counts(self) -> dict:
        """The counts as nested dicts keyed by names (for people and tests)."""
        out = {
            "class_count": {y: float(self.class_count[c]) for c, y in enumerate(self.classes)},
            "value_count": {},
            "gaussian": {},
        }
        for f, name in enumerate(self.features):
            if self.kinds[f] == GAUSS:
                g = self.gslot[f]
                out["gaussian"][name] = {
                    y: (float(self.g_n[c, g]), float(self.g_mean[c, g]), float(self.g_m2[c, g]))
                    for c, y in enumerate(self.classes)
                }
            else:
                out["value_count"][name] = {
                    v: {y: float(self.value_count[c, col]) for c, y in enumerate(self.classes)}
                    for v, col in self.values[f].items()
                }
        return out

    # ------------------------------------------------------------------ plain-data state

    def state(self) -> tuple[dict, dict]:
        """``(arrays, meta)``: numpy arrays and JSON-able metadata, the whole store."""
        C, V, F, G = len(self.classes), len(self.value_keys), len(self.features), self.n_gauss
        arrays = {
            "class_count": self.class_count[:C].copy(),
            "value_count": self.value_count[:C, :V].copy(),
            "feat_count": self.feat_count[:C, :F].copy(),
            "g_n": self.g_n[:C, :G].copy(),
            "g_mean": self.g_mean[:C, :G].copy(),
            "g_m2": self.g_m2[:C, :G].copy(),
        }
        for p in self._sets():
            if p:
                arrays[p + "value_count"] = getattr(self, p + "value_count")[:C, :V].copy()
                arrays[p + "feat_count"] = getattr(self, p + "feat_count")[:C, :F].copy()
            if self.pairs:
                arrays[p + "pair_count"] = getattr(self, p + "pair_count")[:C, :V, :V].copy()
                arrays[p + "pair_feat"] = getattr(self, p + "pair_feat")[:C, :V, :F].copy()
            if self.tuples:
                t = self.tuples
                arrays[p + "tuple_count"] = getattr(self, p + "tuple_count")[(slice(0, C),) + (slice(0, V),) * t].copy()
                arrays[p + "tuple_feat"] = getattr(self, p + "tuple_feat")[
                    (slice(0, C),) + (slice(0, V),) * (t - 1) + (slice(0, F),)
                ].copy()
        meta = {
            "pairs": self.pairs,
            "observed": self.wants_observed,
            "tuples": self.tuples,
            "max_table_cells": self.max_table_cells,
            "numeric": self.numeric,
            "types": dict(self.types),
            "bins": self.bins,
            "warmup": self.warmup,
            "bin_edges": {k: list(map(float, v)) for k, v in self.bin_edges.items()},
            "classes": list(self.classes),
            "label_type": self.label_type,
            "features": [
                {
                    "name": name,
                    "kind": ["categorical", "gaussian", "binned"][self.kinds[f]],
                    "value_type": self.vtypes[f],
                    "values": list(self.values[f]) if self.values[f] is not None else None,
                    "discretiser": self.disc[f].state() if self.disc[f] is not None else None,
                }
                for f, name in enumerate(self.features)
            ],
            # [feature, value] per column; [-1, null] for the columns a promotion detached
            "columns": [
                [int(self.value_feature[col]), self.value_keys[col] if self.value_feature[col] >= 0 else None]
                for col in range(1, V)
            ],
            "from_int": sorted(self.from_int),
        }
        return arrays, meta

    @classmethod
    def from_state(cls, arrays: dict, meta: dict) -> "Stats":
        """The store :meth:`state` describes; ValueError naming what does not fit.

        Everything is checked before anything is allocated (see :func:`check_state`),
        so a state that announces more than its arrays hold costs nothing.
        """
        check_state(arrays, meta)
        s = cls(
            pairs=meta["pairs"], numeric=meta["numeric"], types=meta["types"],
            bins=meta["bins"], warmup=meta["warmup"], bin_edges=meta["bin_edges"],
            tuples=meta.get("tuples", 0), max_table_cells=meta.get("max_table_cells"),
            observed=meta.get("observed", False),
        )
        kinds = {"categorical": CAT, "gaussian": GAUSS, "binned": BINNED}
        for y in meta["classes"]:
            s._add_class(y)
        for feat in meta["features"]:
            f = s._add_feature(feat["name"], kinds[feat["kind"]])
            if feat["discretiser"] is not None:
                s._set_discretiser(f, Discretiser.from_state(feat["discretiser"]))
        for f, v in meta["columns"]:
            if f >= 0:
                s._add_value(f, v)
            else:  # a detached column: kept so that the later ones keep their place
                s._reserve(v=1)
                s.value_keys.append(None)
        s.from_int = set(meta.get("from_int", []))
        # the types of the labels and of each categorical feature's values; a state written before
        # they were kept has them from its first class and each feature's first value (_add_class, _add_value)
        if meta.get("label_type") is not None:
            if not isinstance(meta["label_type"], str):
                raise ValueError(f"label_type: expected a JSON type name, got {meta['label_type']!r}")
            s.label_type = meta["label_type"]
            s._label_ok = {type(y) for y in s.classes if json_type(y) == s.label_type}
        for f, feat in enumerate(meta["features"]):
            vt = feat.get("value_type")
            if vt is not None and s.kinds[f] == CAT:
                if vt not in _VALUE_GROUPS:
                    raise ValueError(f"feature {feat['name']!r}: unknown value type {vt!r}")
                s._set_vtype(f, vt)
        C, V, F, G = len(s.classes), len(s.value_keys), len(s.features), s.n_gauss
        s.class_count[:C] = arrays["class_count"]
        if "obs_value_count" in arrays:
            s.keep_observed()
        for k in ("g_n", "g_mean", "g_m2"):
            getattr(s, k)[:C, :G] = arrays[k]
        for p in s._sets():
            getattr(s, p + "value_count")[:C, :V] = arrays[p + "value_count"]
            getattr(s, p + "feat_count")[:C, :F] = arrays[p + "feat_count"]
            if s.pairs:
                getattr(s, p + "pair_count")[:C, :V, :V] = arrays[p + "pair_count"]
                getattr(s, p + "pair_feat")[:C, :V, :F] = arrays[p + "pair_feat"]
            if s.tuples:
                t = s.tuples
                getattr(s, p + "tuple_count")[(slice(0, C),) + (slice(0, V),) * t] = arrays[p + "tuple_count"]
                getattr(s, p + "tuple_feat")[(slice(0, C),) + (slice(0, V),) * (t - 1) + (slice(0, F),)] = arrays[
                    p + "tuple_feat"
                ]
        return s


#: Largest count a state may hold: far beyond any stream's, and small enough that no sum, square or
#: product of counts a model computes overflows a float.
MAX_COUNT = 1e100


def _kind(value) -> str:
    r = " ".join(repr(value).split())  # one line, whatever the value (a numpy array's repr has several)
    return f"{type(value).__name__} {r if len(r) <= 40 else r[:37] + '...'}"


def _check_int(where: str, value, low: int = 0) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{where}: expected an integer >= {low}, got {_kind(value)}")


def _check_hashable(where: str, value) -> None:
    if value is None or _is_nan(value) or not _hashable(value):
        raise ValueError(f"{where}: expected a str, int, bool or float (not null or NaN), got {_kind(value)}")


def _check_edges(where: str, edges) -> None:
    try:
        e = np.asarray(edges, dtype=float) if isinstance(edges, (list, tuple, np.ndarray)) else None
    except (TypeError, ValueError):
        e = None
    if e is None or e.ndim != 1 or np.isnan(e).any() or (np.diff(e) < 0).any():
        raise ValueError(f"{where}: expected a list of numbers in increasing order, got {_kind(edges)}")


def _check_discretiser(where: str, d) -> None:
    if not isinstance(d, dict) or set(d) != {"bins", "warmup", "edges", "buffer"}:
        raise ValueError(f"{where}: expected an object with bins, warmup, edges and buffer, got {_kind(d)}")
    _check_int(f"{where}.bins", d["bins"], 1)
    _check_int(f"{where}.warmup", d["warmup"], 1)
    if d["edges"] is not None:
        _check_edges(f"{where}.edges", d["edges"])
    buffer = d["buffer"]
    if not isinstance(buffer, list) or not all(
            type(v) in (int, float) and math.isfinite(v) for v in buffer) or (
            d["edges"] is None and len(buffer) >= d["warmup"]):
        raise ValueError(f"{where}.buffer: expected a list of fewer than warmup={d['warmup']} finite numbers, "
                         f"got {_kind(buffer)}")


def check_state(arrays: dict, meta: dict) -> None:
    """Check that ``(arrays, meta)`` is a state :meth:`Stats.state` could have written; ValueError if not.

    The metadata's every field must have its type and range, and every array
    exactly the shape the metadata gives it (no broadcasting: a count array of
    one class does not fill three), a numeric dtype, and counts that are finite,
    >= 0 (up to rounding) and at most :data:`MAX_COUNT`. A state that passes
    builds a store that learns and predicts like any other.
    """
    if not isinstance(meta, dict):
        raise ValueError(f"stats: expected an object, got {_kind(meta)}")
    if not isinstance(arrays, dict):
        raise ValueError(f"arrays: expected a dict of arrays, got {_kind(arrays)}")
    required = {"pairs", "numeric", "types", "bins", "warmup", "bin_edges", "classes", "features", "columns"}
    missing = sorted(required - set(meta))
    if missing:
        raise ValueError(f"stats: missing {', '.join(missing)}")
    for name in ("pairs", "observed"):
        if not isinstance(meta.get(name, False), bool):
            raise ValueError(f"stats.{name}: expected true or false, got {_kind(meta[name])}")
    numeric = meta["numeric"]
    if numeric not in ("gaussian", "bins"):
        raise ValueError(f"stats.numeric: expected 'gaussian' or 'bins', got {_kind(numeric)}")
    tuples = meta.get("tuples", 0)
    _check_int("stats.tuples", tuples)
    if tuples in (1, 2) or (tuples and not meta["pairs"]):
        raise ValueError(f"stats.tuples: expected 0, or 3 or more with pairs, got {tuples}")
    if meta.get("max_table_cells") is not None:
        _check_int("stats.max_table_cells", meta["max_table_cells"], 1)
    try:
        _check_types(meta["types"])
    except ConfigError as exc:
        raise ValueError(f"stats.{exc}") from None
    _check_int("stats.bins", meta["bins"], 1)
    _check_int("stats.warmup", meta["warmup"], 1)
    edges = meta["bin_edges"]
    if not isinstance(edges, dict):
        raise ValueError(f"stats.bin_edges: expected an object, got {_kind(edges)}")
    for name, e in edges.items():
        _check_edges(f"stats.bin_edges[{name!r}]", e)

    classes = meta["classes"]
    if not isinstance(classes, list):
        raise ValueError(f"stats.classes: expected a list, got {_kind(classes)}")
    for i, y in enumerate(classes):
        _check_hashable(f"stats.classes[{i}]", y)
    if len(set(classes)) != len(classes):
        raise ValueError("stats.classes: a class appears twice (or two classes are equal in Python, like 1 and True)")
    label_type = meta.get("label_type")
    if label_type is not None and (not isinstance(label_type, str) or any(json_type(y) != label_type for y in classes)):
        raise ValueError(f"stats.label_type: expected the JSON type of every class, got {_kind(label_type)} for "
                         f"classes {_kind(classes)}")

    features = meta["features"]
    if not isinstance(features, list):
        raise ValueError(f"stats.features: expected a list, got {_kind(features)}")
    kinds, names = [], []
    allowed = {"categorical", "gaussian" if numeric == "gaussian" else "binned"}
    for i, feat in enumerate(features):
        where = f"stats.features[{i}]"
        if not isinstance(feat, dict) or not {"name", "kind", "discretiser"} <= set(feat):
            raise ValueError(f"{where}: expected an object with name, kind and discretiser, got {_kind(feat)}")
        _check_hashable(f"{where}.name", feat["name"])
        if feat["kind"] not in allowed:
            raise ValueError(f"{where}.kind: expected one of {', '.join(sorted(allowed))} (numeric={numeric!r}), "
                             f"got {_kind(feat['kind'])}")
        if feat["kind"] == "binned":
            _check_discretiser(f"{where}.discretiser", feat["discretiser"])
        elif feat["discretiser"] is not None:
            raise ValueError(f"{where}.discretiser: a {feat['kind']} feature has none, got {_kind(feat['discretiser'])}")
        kinds.append(feat["kind"])
        names.append(feat["name"])
    if len(set(names)) != len(names):
        raise ValueError("stats.features: a feature name appears twice")

    columns = meta["columns"]
    if not isinstance(columns, list):
        raise ValueError(f"stats.columns: expected a list, got {_kind(columns)}")
    seen: set = set()
    for i, column in enumerate(columns):
        where = f"stats.columns[{i}]"
        if not isinstance(column, list) or len(column) != 2:
            raise ValueError(f"{where}: expected a [feature, value] pair, got {_kind(column)}")
        f, v = column
        if isinstance(f, bool) or not isinstance(f, int) or not -1 <= f < len(features):
            raise ValueError(f"{where}: feature index {_kind(f)} is not -1 or one of the {len(features)} features")
        if f == -1:
            if v is not None:
                raise ValueError(f"{where}: a detached column has no value, got {_kind(v)}")
            continue
        if kinds[f] == "gaussian":
            raise ValueError(f"{where}: feature {names[f]!r} is gaussian and has no value columns")
        _check_hashable(f"{where}", v)
        if kinds[f] == "binned" and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
            raise ValueError(f"{where}: a bin of binned feature {names[f]!r} is an integer >= 0, got {_kind(v)}")
        if (f, v) in seen:
            raise ValueError(f"{where}: value {v!r} of feature {names[f]!r} appears twice")
        seen.add((f, v))
    from_int = meta.get("from_int", [])
    if not isinstance(from_int, list) or not all(
            isinstance(f, int) and not isinstance(f, bool) and 0 <= f < len(features) and kinds[f] == "categorical"
            for f in from_int):
        raise ValueError(f"stats.from_int: expected a list of categorical feature indices, got {_kind(from_int)}")

    C, V, F = len(classes), len(columns) + 1, len(features)
    G = kinds.count("gaussian")
    shapes = {"class_count": (C,), "value_count": (C, V), "feat_count": (C, F),
              "g_n": (C, G), "g_mean": (C, G), "g_m2": (C, G)}
    twinned = {"value_count": (C, V), "feat_count": (C, F)}
    if meta["pairs"]:
        twinned.update(pair_count=(C, V, V), pair_feat=(C, V, F))
    if tuples:
        twinned.update(tuple_count=(C,) + (V,) * tuples, tuple_feat=(C,) + (V,) * (tuples - 1) + (F,))
    shapes.update(twinned)
    if "obs_value_count" in arrays:  # the observed-only twin: all of it or none
        shapes.update({"obs_" + k: v for k, v in twinned.items()})
    unexpected = sorted(map(str, set(arrays) - set(shapes)))
    if unexpected:
        raise ValueError(f"unexpected arrays {', '.join(unexpected)} (expected {', '.join(shapes)})")
    scale = None
    for name, shape in shapes.items():
        if name not in arrays:
            raise ValueError(f"array {name!r} is missing")
        a = arrays[name]
        if not isinstance(a, np.ndarray) or a.dtype.kind not in "biuf":
            raise ValueError(f"array {name!r}: expected a numeric array, got {_kind(a)}")
        if a.shape != shape:
            raise ValueError(f"array {name!r} has shape {list(a.shape)}; the metadata ({C} classes, {V} value "
                             f"columns, {F} features, {G} Gaussian) gives it {list(shape)}")
        if name in ("g_mean", "g_m2"):
            continue  # moments: extreme values learned may have overflowed them, and the model copes
        if scale is None:
            scale = 1e-6 * max(1.0, float(np.abs(arrays["class_count"]).sum()))
        if a.size and not (np.isfinite(a).all() and float(a.min()) >= -scale and float(a.max()) <= MAX_COUNT):
            raise ValueError(f"array {name!r}: counts must be finite, >= 0 and at most {MAX_COUNT:g}")


class _ObservedView:
    """A store seen through its observed-only twin (see :meth:`Stats.observed`); read-only by convention."""

    __slots__ = ("_stats",)

    def __init__(self, stats: Stats):
        self._stats = stats

    def __getattr__(self, name):
        if name in _TWINNED:
            return getattr(self._stats, "obs_" + name)
        return getattr(self._stats, name)
