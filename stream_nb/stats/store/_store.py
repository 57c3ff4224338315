"""The :class:`Stats` class: the count store (see :mod:`stream_nb.stats`).

It holds its parts -- the schema and encoder (:class:`~stream_nb.stats.schema.Schema`: the classes,
features and values as indices, a :class:`~stream_nb.stats.Discretiser` per binned feature, the type of
each categorical feature's values, events encoded to codes), the Gaussian moments
(:class:`~stream_nb.stats.tables.GaussianMoments`), the pair selection
(:class:`~stream_nb.stats.selection.PairSelection`: which attribute pairs the pair tables count) and the
tuple selection (:class:`~stream_nb.stats.selection.TupleSelection`: KDB's candidate parents), the memory budget
(:class:`~stream_nb.stats.budget.Budget`, asked whether dense tables fit and whether the next event does,
given the store's arrays), the tables' room and layout (:class:`~stream_nb.stats.budget.Layout`), its count tables (:class:`~stream_nb.stats.tables.CountTables`: the numpy arrays or
:class:`~stream_nb.stats.SparseTable` by name, their observed-only twins, their room) -- and gives each what it
needs as arguments. The schema asks the tables for room before it grows
(``grow``: :meth:`Stats.reserve`), and the tables give it their capacity when they reallocate
(:meth:`Schema.make_room <stream_nb.stats.schema.Schema.make_room>`); learning an event, the store lets
the schema register it with two calls of its own (``room``: refuse before anything changes; ``promote``:
move a promoted feature's counts). The names learners and kernels read (``classes``, ``features``,
``value_feature``, ``g_n``, ``vtypes``, ``memory_budget``, ``pairs_sparse``, ``value_count``, ``pair_count``,
...) stay the store's: the schema's and the count tables' are read-only properties here. The tables' room and
layout (dense, pair blocks or sparse, under the budget) is decided by a part of its own
(:class:`~stream_nb.stats.budget.Layout`, ``layout``), which the store hands itself to; what one event adds
is its own methods (:meth:`Stats.add`, :meth:`Stats.add_many`, ...); what it takes back, the functions of
:mod:`stream_nb.stats.store._removing`; both change the parts through their methods. Its state as plain data
(:meth:`Stats.state`, :meth:`Stats.from_state`) is written and read by a codec of its own
(:mod:`stream_nb.stats.store._state`), which reads the store through its public names and fills a new one
through its schema's and parts' methods.
"""

from __future__ import annotations

from functools import partial
from operator import attrgetter

import copy
import typing

import numpy as np

from ..budget import DEFAULT_MEMORY_BUDGET, Budget, Layout
from ..selection import PairSelection, edge_supported, widen_to_either, widen_tuples_to_either, refresh_selection
from ..selection import TupleSelection, add_selected_tuples, selected_cells
from ...exceptions import MergeError
from ..values import CAT, GAUSS, TWINNED, Encoded, validate_label
from ..selection import revision_due
from . import _removing
from ..schema import Schema, align, check_feature, check_labels, few_overflow, new_entries, turned_numeric
from ._state import check_state, counts_of, read_state, store_options, write_state
from ..tables import CountTables, GaussianMoments, PairBlocks, SparseTable, selected_room

__all__ = ["ObservedView", "Stats"]


class Stats:
    """Additive sufficient statistics over a stream of (x, y) events.

    Parameters
    ----------
    pairs
        Keep class-conditional pair counts (AODE, TAN).
    numeric
        ``"gaussian"``: numeric features keep per-class Gaussian moments (naive
        Bayes). ``"bins"``: numeric features are discretised (see
        :mod:`stream_nb.stats.discretiser._discretise`) and counted like categories.
    types
        Optional ``{feature: "categorical" | "numeric"}`` overriding the
        inference from the first value (str, bool, int: categorical; float: numeric).
    bins, warmup, bin_edges
        Discretiser settings for ``numeric="bins"``.
    tuples
        t >= 3: also keep the t-way class-conditional counts (KDB with k = t - 1 parents); 0: none.
    max_table_cells
        Optional hard bound on the cells of the t-way table (each copy of it, with ``observed``):
        learning past it raises :class:`~stream_nb.exceptions.CapacityError`. None: no bound.
    memory_budget
        Bytes the counts may take while dense (default 256 MiB): beyond it the t-way tables
        turn sparse (see :mod:`stream_nb.stats.budget._budget`). None: always dense.
    observed
        Keep the observed-only twin of the counts (see the module notes) from
        the first expected counts on, for EM's E-step.

    Types: every label has a JSON type (:func:`~stream_nb.stats.json_type`: string, number or
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
        memory_budget: int | None = DEFAULT_MEMORY_BUDGET,
    ):
        # the schema and encoder: it asks the tables for room before it grows (reserve)
        self.schema = Schema(numeric=numeric, types=types, bins=bins, warmup=warmup, bin_edges=bin_edges,
                             grow=self.reserve)
        self.pairs = bool(pairs)
        # tuples = t >= 3: also keep t-way class-conditional counts (KDB with k = t - 1 parents)
        self.tuples = int(tuples)
        self.max_table_cells = max_table_cells
        self.budget = Budget(memory_budget)  # the memory budget (see _budget.py)
        self.selection = PairSelection()  # the pairs counted: all, until a pair rule drops some for the budget
        self.tuple_selection = TupleSelection()  # the t-tuples counted: all, until KDB's rule drops some
        # observed=True: an observed-only twin of every count EM adds to (the E-step's parameters),
        # allocated with the first expected counts (keeps_observed); until then the counts are observed only
        self.wants_observed = bool(observed)
        # bumped by every change of a count: (epoch, version) keys anything derived from the counts
        self.version = 0
        self._cache: dict = {}  # derived lookups, each tagged with the epoch it was computed at
        # the count tables (a part of their own: CountTables), allocated with spare capacity
        self.tables = CountTables()
        self.moments = GaussianMoments(4, 4)  # the Gaussian moments (a part of their own), given room as the tables are
        # the tables' room and layout (a part of its own: Layout), which allocates them with spare capacity
        self.layout = Layout()
        self.layout.alloc(self, 4, 16, 8, 4)

    # one clock for the schema and the tables: the schema's changes advance it, and so do the tables' (a
    # reallocation, another layout) through this setter, so that an encoding holds while nothing changed
    epoch = property(attrgetter("schema.epoch"), lambda s, value: s.schema.advance(value - 1),
                     doc="Bumped by every change other than :meth:`add` (of the schema, or of the tables' layout): "
                         "views tell by it when cached tables are stale.")

    # ------------------------------------------------------------------ the schema's names, read-only

    numeric = property(attrgetter("schema.numeric"), doc="How numeric features are counted: 'gaussian' or 'bins'.")
    types = property(attrgetter("schema.types"), doc="``{feature: kind}`` declared.")
    bins = property(attrgetter("schema.bins"), doc="Bins of each discretised feature.")
    warmup = property(attrgetter("schema.warmup"), doc="Values a discretiser takes its edges from.")
    bin_edges = property(attrgetter("schema.bin_edges"), doc="``{feature: edges}`` declared.")
    labels = property(attrgetter("schema.labels"), doc="The classes (:class:`~stream_nb.stats.values.Labels`).")
    features = property(attrgetter("schema.features"), doc="The features, in order of first appearance.")
    feature_index = property(attrgetter("schema.feature_index"), doc="``{feature: index}``.")
    kinds = property(attrgetter("schema.kinds"), doc="Per feature: CAT, GAUSS or BINNED.")
    values = property(attrgetter("schema.values"), doc="Per feature: ``{value: column}`` (None: Gaussian).")
    gslot = property(attrgetter("schema.gslot"), doc="Per feature: its Gaussian slot, else -1.")
    value_types = property(attrgetter("schema.value_types"), doc="The value types of categorical features.")
    disc = property(attrgetter("schema.disc"), doc="Per feature: its discretiser, else None.")
    value_keys = property(attrgetter("schema.value_keys"), doc="Per column: its value (column 0: none).")
    value_feature = property(attrgetter("schema.value_feature"), doc="Per column: its feature (-1: none).")
    n_values = property(attrgetter("schema.n_values"), doc="Per feature: its values.")
    n_gauss = property(attrgetter("schema.n_gauss"), doc="Gaussian slots.")
    gauss_feature = property(attrgetter("schema.gauss_feature"), doc="Per Gaussian slot: its feature.")
    from_int = property(attrgetter("schema.from_int"), doc="Features of integers a fraction may turn numeric.")
    few = property(attrgetter("schema.few"), doc="Numeric features counted by value for now.")
    few_max = property(attrgetter("schema.few_max"), doc="Values a feature of :attr:`few` may have.")
    promoted = property(attrgetter("schema.promoted"), doc="``{feature: rule}`` of each promotion.")
    classes = property(attrgetter("schema.labels.classes"), doc="The classes, in order of first appearance.")
    class_index = property(attrgetter("schema.labels.index"), doc="``{class: index}``.")
    label_type = property(attrgetter("schema.labels.type"),
                          doc="JSON type of the labels, fixed by the first class; None before it.")
    vtypes = property(attrgetter("schema.value_types.types"),
                      doc="Per feature: the type of its values, None if numeric or none yet.")
    n_classes = property(lambda s: len(s.schema.labels.classes), doc="How many classes.")
    run_new = property(attrgetter("schema.runs.run_new"), lambda s, new: s.schema.runs.set_run_values(new),
                       doc="The values the last run met first (:meth:`encode_run`).")

    def check_label(self, y, where: str | None = None) -> None:
        """Raise unless ``y`` can be learned as a label (:meth:`Labels.check`)."""
        self.schema.labels.check(y, where)

    def check_labels(self, labels: list) -> None:
        """Raise for the first label of a batch that :meth:`check_label` would refuse (:meth:`Labels.check_many`)."""
        self.schema.labels.check_many(labels)

    # ------------------------------------------------------------------ the schema's growth, through the store

    def _add_class(self, y) -> int:
        return self.schema.add_class(y)

    def class_of(self, y) -> int:
        """The index of class ``y``, registering it if new (:meth:`check_label` first)."""
        c = self.schema.labels.index.get(y)
        if c is None:
            self.check_label(y)
            c = self._add_class(validate_label(y))  # the class the label stands for: 2.0 is the class 2
        return c

    def _set_discretiser(self, f: int, d) -> None:
        self.schema.set_discretiser(f, d)

    def bin_floats_at_once(self) -> None:
        """Count no float feature by value (:meth:`counts_by_value`): each is binned from its first value.
        A model that forgets (a window, decay, a drift detector) asks it before it learns: its captures and
        scaled counts would not follow a promotion's moves."""
        self.schema.set_few_max(0)

    def counts_by_value(self, name, v) -> bool:
        """:meth:`Schema.counts_by_value <stream_nb.stats.schema.Schema.counts_by_value>`."""
        return self.schema.counts_by_value(name, v)

    def discrete_features(self) -> np.ndarray:
        """Features counted by value (categorical, or binned with edges) that have values, ascending."""
        return self.schema.discrete_features()

    def columns_of(self, f: int) -> np.ndarray:
        """The value columns of feature ``f``, in order of first appearance."""
        return self.schema.columns_of(f)

    def missing_of(self, enc: Encoded) -> np.ndarray:
        """Discrete features with values that ``enc`` does not observe."""
        return self.schema.missing_of(enc)

    # ------------------------------------------------------------------ promotion: the counts' side

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
        whose next ones are ``1234.5`` is numeric. The schema turns it numeric
        (:meth:`Schema.promote <stream_nb.stats.schema.Schema.promote>`) and says how its counts move; here
        they move. Naive Bayes' Gaussian
        moments per class are computed from the per-value counts; the
        discretising models choose bin edges from the values seen so far
        (weighted by their counts) and add every value's counts, pairs and
        tuples into its bin, or drop them when its values so far become warm-up values of its
        discretiser. The old value columns stay, empty and detached.
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

    # ------------------------------------------------------------------ adding: one event, EM's expected counts, batches
    # Every count is additive. An event adds its weight to its class, to each observed value, feature, pair and
    # t-tuple of values, in every count set kept (the counts and, from the first expected counts on, their
    # observed-only twin). A two-layer store extends each of these methods (it counts in its fine layer too).

    #: a list while a learner records what one event adds (its receipt, see :mod:`stream_nb.stats.store._removing`)
    journal: list | None = None

    def add(self, enc: Encoded, c: int, w: float = 1.0) -> None:
        """Add one (encoded) event of class index ``c`` with weight ``w`` (its observed values, to every count set)."""
        self.layout.check_event(self, len(enc.cols))
        if self.journal is not None:
            self.journal.append(("count", enc, c, w))
        self.version += 1
        self.tables.add_class(c, w)
        if len(enc.cols):
            for p in self._sets():
                self.count_values(p, enc.cols, enc.feats, c, w)
        self.add_gaussian(c, w, enc.gslots, enc.gx)

    def counted_one(self, c: int, w: float, twin: bool = False) -> None:
        """A kernel has counted the event just encoded for learning (class ``c``, weight ``w``) into these
        arrays (``twin``: and into :meth:`counted_twin`'s): a second layer counts it in its own (here, there
        is none)."""

    def counted_twin(self, enc: Encoded):
        """The address table (:class:`~stream_nb.kernels.Addresses`) of a second layer's class, value,
        feature and pair counts, when a kernel counting the event just encoded for learning (``enc``, of
        weight 1) may count it there too, in the same columns; else None (here, there is none)."""
        return None

    def mark_counted(self, many: bool) -> None:
        """A compiled kernel has added events to the counts in place: mark them changed, as :meth:`add` does
        (``many``: as :meth:`add_many` does, which also tells the views to derive their tables again)."""
        self.version += 1
        if many:
            self.epoch += 1

    def add_observed(self, enc: Encoded, c: int, w: float = 1.0) -> None:
        """Count the observed values of ``enc`` in the observed-only twin alone (nothing without one).

        EM's M-step adds an incomplete event to the counts with
        :meth:`add_expected` and to the twin with this: the twin then holds what
        ``missing="ignore"`` would have counted.
        """
        if self.keeps_observed and len(enc.cols):
            self.layout.check_event(self, len(enc.cols))
            if self.journal is not None:
                self.journal.append(("observed", enc, c, w))
            self.version += 1
            self.count_values("obs_", enc.cols, enc.feats, c, w)

    def count_values(self, p: str, cols: np.ndarray, feats: np.ndarray, c: int, w: float) -> None:
        """Add weight ``w`` to the values ``cols`` (of features ``feats``) of class ``c`` in count set ``p``."""
        tables = self.tables
        tables.add_values(p, c, cols, w, feats, w)
        self.sync_pairs()  # (pair blocks grown to the event's columns, or sparse past the budget)
        if self.pairs:  # (a selection's sparse tables add the candidate pairs alone: _candidates.py)
            tables.add_pair_rows(p, cols[None, :], feats, np.array([c]), np.array([float(w)]),
                                 selected_cells(self, len(cols)) if self.pairs_sparse else 0)
        if self.tuples and self.tuples_selected:  # the candidate parents' tuples alone (_tuple_candidates.py)
            self._count_selected_tuples(p, cols[None, :], feats, np.array([c]), np.array([float(w)]))
        elif self.tuples:
            tables.add_event_tuples(p, self.tuples, cols, feats, c, w)

    def _count_selected_tuples(self, p: str, D, dfeats, yc, w, mask=None) -> None:
        """The kept t-tuples of rows ``D`` (of features ``dfeats``; ``mask``, where given, is ``D >= 0``) into
        the selected tables, in row order, in compiled code."""
        add_selected_tuples(self, p, D, dfeats, yc, w)

    def tuple_run_room(self, k: int, dfeats: np.ndarray) -> tuple:
        """Before a compiled run counts its next event (``k`` values, of features ``dfeats``) into selected t-way
        tables: the room check :meth:`add` makes before an event (which may narrow the candidates), then each
        table given room for one event's kept tuples (:meth:`CountTables.reserve_tuples`). Returns ``(lists,
        room, tuple_count, tuple_feat, held)``: the candidate parents (:meth:`tuple_lists`), the most cells an
        event adds to a table, the tables, and the cells they hold, which the run updates and gives back to
        :meth:`tuple_run_held`."""
        self.layout.check_event(self, k)
        lists = self.tuple_lists()
        room = selected_room(self.tuples, lists, np.asarray(dfeats, dtype=np.int64))
        return (lists, room, *self.tables.reserve_tuples(room))

    def tuple_run_held(self, held: np.ndarray) -> None:
        """A compiled run has added cells to the selected t-way tables' hash arrays in place: record the cells
        they hold (``held`` of :meth:`tuple_run_room`)."""
        self.tables.tuples_held(held)

    def learn_one(self, x: dict, y, w: float = 1.0) -> None:
        """Count one labeled event's observed values."""
        enc, c = self.encode_labeled(x, y)
        self.add(enc, c, w)

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
        self.layout.check_event(self, len(u))
        self.blocks_to_sparse()  # expected pairs have no place in pair blocks
        if self.wants_observed:
            self.keep_observed()
        if self.journal is not None:
            self.journal.append(("expected", c, w, u, m, feats_u, J))
        self.version += 1
        self.tables.add_class(c, w)
        starts = np.flatnonzero(np.r_[True, feats_u[1:] != feats_u[:-1]])
        fs = feats_u[starts]
        self.tables.add_values("", c, u, w * m, fs, w)
        if self.pairs:
            self.tables.add_expected_pairs(c, u, fs, w * J, w * np.add.reduceat(J, starts, axis=1))

    def add_many(self, D, dfeats, G, gslots, yc, w=None, observed: bool = True) -> None:
        """Add a batch of encoded events (rows of ``D``, ``G`` as :meth:`encode_run` gives them).

        ``observed=False``: the rows are completions of one incomplete event
        (KDB's M-step), so they go to the counts and not to the observed-only
        twin (started here, if wanted and not yet kept, as in :meth:`add_expected`).
        """
        if w is None or np.all(np.asarray(w) >= 0):  # removing (negative weights) needs no room
            self.layout.check_event(self, D.shape[1])
        if not observed and self.wants_observed:
            self.keep_observed()
        self.sync_pairs()
        if self.journal is not None:
            self.journal.append(("many", D, dfeats, G, gslots, yc, w, observed))
        n = len(yc)
        self.epoch += 1
        w = np.ones(n) if w is None else np.asarray(w, dtype=float)
        C = len(self.classes)
        self.tables.add_class(slice(0, C), np.bincount(yc, weights=w, minlength=C))
        if D.shape[1]:
            mask = D >= 0
            rr, jj = np.nonzero(mask)
            cc = yc[rr]
            for p in self._sets() if observed else ("",):
                self.tables.add_value_rows(p, cc, D[rr, jj], dfeats[jj], w[rr])
                if self.pairs:
                    self.tables.add_pair_rows(p, D, dfeats, yc, w, selected_cells(self, D.shape[1]))
                if self.tuples and self.tuples_selected:
                    self._count_selected_tuples(p, D, dfeats, yc, w, mask)
                elif self.tuples:
                    self.tables.add_tuple_rows(p, self.tuples, D, dfeats, yc, w, mask)
        self.add_gaussian_rows(G, gslots, yc, w)

    # ------------------------------------------------------------------ merging

    def merge(self, other: typing.Self) -> None:
        """Add ``other``'s counts into this store (exactly: as if its stream came next).

        The schemas are aligned by name (:mod:`stream_nb.stats.schema._alignment`: what a sequential run
        would refuse raises :class:`~stream_nb.exceptions.MergeError`), then each part adds the other's:
        the selections widen to every pair and tuple either counts, the count tables add, and Gaussian
        moments merge by Chan's formula. The observed-only twins add too. A store without one holds
        observed values only: its counts are what it adds to this store's twin. When this store keeps
        no twin and the other does, this store starts one if it wants one (EM), and otherwise
        (``missing=Ignore()``) takes the other's observed-only counts, so that it stays what ``Ignore()``
        would have counted from both streams.
        """
        if (self.pairs, self.numeric, self.tuples) != (other.pairs, other.numeric, other.tuples):
            raise MergeError(
                f"cannot merge statistics kept differently: pairs={self.pairs}, numeric={self.numeric!r} "
                f"here, pairs={other.pairs}, numeric={other.numeric!r} in the other model"
            )
        check_labels(self.schema, other.schema)
        over = few_overflow(self.schema, other.schema)
        stale = turned_numeric(self.schema, other.schema)
        if stale or over:  # this model saw the feature turn numeric, or the two saw too many values: so
            other = copy.deepcopy(other)  # would a sequential run
            for f in stale + [theirs for _, theirs in over]:
                other.promote(f)
            for mine, _ in over:
                self.promote(mine)
        for name, f in other.feature_index.items():
            mine = self.feature_index.get(name)
            if mine is not None and mine in self.from_int and other.kinds[f] != CAT:
                self.promote(mine)  # the other model saw it turn numeric: so would a sequential run
            check_feature(self.schema, other.schema, name)
        self.epoch += 1
        if self.tuples:
            self.layout.check_cells(self, *new_entries(self.schema, other.schema))
        cmap, fmap, vmap = align(self.schema, other.schema, self.class_of)
        if self.pairs_selected or other.pairs_selected:
            widen_to_either(self, other, fmap)  # every pair either store counts, holding the sum of both's counts
        widen_tuples_to_either(self, other, fmap)  # every candidate parent either store counts the tuples of
        C = len(other.classes)
        self.tables.add_class(cmap, other.class_count[:C])
        if other.keeps_observed and self.wants_observed:
            self.keep_observed()
        if self.pairs and (self.pairs_sparse or other.pairs_sparse or self.pairs_blocks or other.pairs_blocks):
            self.sync_pairs()  # pair blocks grown to the columns, features and classes aligned, before their cells
        self.tables.merge(other.tables, (cmap, vmap, fmap), (C, len(other.value_keys), len(other.features)),
                          self.pairs, self.tuples)
        for f_other, f in enumerate(fmap):
            if other.kinds[f_other] != GAUSS:
                continue
            go, g = other.gslot[f_other], self.gslot[f]
            nb = other.g_n[:C, go]
            present = nb > 0
            if present.any():
                self.moments.merge(cmap[present], g, nb[present], other.g_mean[:C, go][present], other.g_m2[:C, go][present])

    # ------------------------------------------------------------------ taking back: the functions of _removing.py

    def remove(self, entries) -> None:
        """Take back ``entries`` (a journal: :mod:`stream_nb.stats.store._removing`), last first;
        :class:`~stream_nb.exceptions.UnlearnError` and no change at all when some count would fall below zero."""
        _removing.remove_entries(self, entries)

    def check_entry(self, e) -> None:
        """:class:`~stream_nb.exceptions.UnlearnError` unless the counts hold what journal entry ``e`` added."""
        _removing.check_entry(self, e)

    def remove_rows(self, D: np.ndarray, G: np.ndarray, yc: np.ndarray) -> None:
        """Take back rows of events learned by plain counting, weight 1 each, as :meth:`encode_run` encodes them
        (:func:`~stream_nb.stats.store._removing.remove_rows`: checked first, all at once)."""
        _removing.remove_rows(self, D, G, yc)

    # ------------------------------------------------------------------ state: plain data, the codec of _state.py

    def counts(self) -> dict:
        """The counts as nested dicts keyed by names (for people and tests)."""
        return counts_of(self)

    def state(self) -> tuple[dict, dict]:
        """``(arrays, meta)``: numpy arrays and JSON-able metadata, the whole store
        (:func:`~stream_nb.stats.store._state.write_state`)."""
        return write_state(self)

    @classmethod
    def from_state(cls, arrays: dict, meta: dict) -> typing.Self:
        """The store :meth:`state` describes (:func:`~stream_nb.stats.store._state.read_state`); ValueError
        naming what does not fit. Everything is checked before anything is allocated
        (:func:`~stream_nb.stats.store._state.check_state`), so a state that announces more than its arrays
        hold costs nothing."""
        check_state(arrays, meta)
        s = cls(**store_options(meta))
        read_state(s, arrays, meta)
        return s

    # ------------------------------------------------------------------ encoding, through the store

    def encode(self, x: dict) -> Encoded:
        """Indices of ``x`` for prediction (:meth:`Schema.encode <stream_nb.stats.schema.Schema.encode>`);
        never changes anything."""
        return self.schema.encode(x)

    def reusable(self, x: dict, known: Encoded | None = None) -> Encoded | None:
        """:meth:`Schema.reusable <stream_nb.stats.schema.Schema.reusable>`."""
        return self.schema.reusable(x, known)

    def encode_learn(self, x: dict, y=None, known: Encoded | None = None) -> Encoded:
        """Indices of ``x`` for learning: validates all of ``x`` first, then registers new features and
        values and feeds the discretisers (:meth:`Schema.register <stream_nb.stats.schema.Schema.register>`).

        ``y``, when given, is the event's label: a t-way table checks it has
        room for a new class as well before anything changes. ``known`` is
        ``x``'s encoding for prediction (:meth:`encode`) when the caller has
        it: when learning ``x`` needs nothing new (``known.epoch`` is the
        schema's epoch), it is the learning encoding too and ``x`` is not read again.
        """
        schema = self.schema
        enc = schema.reusable(x, known)
        if enc is not None:
            if y is not None and self.tuples:
                self.layout.check_cells(self, 0, y not in schema.labels.index)
            return enc
        return schema.register(x, partial(self._learn_room, y), self.promote)

    def _learn_room(self, y, k: int, new: int) -> None:
        """Refuse an event of ``k`` observed values, ``new`` of them to register, and label ``y`` before
        anything changes: a store past its memory budget takes nothing new; a t-way table checks its bound."""
        self.layout.check_event(self, k)
        if self.tuples:
            self.layout.check_cells(self, new, y is not None and y not in self.schema.labels.index)

    def encode_labeled(self, x: dict, y, known: Encoded | None = None) -> tuple[Encoded, int]:
        """Check the label ``y`` (:meth:`check_label`), encode ``x`` for learning
        (:meth:`encode_learn`, with ``known`` as there), then register the class if it is new.

        Returns ``(encoding, class index)``; a bad label or value raises before anything changes.
        """
        self.check_label(y)
        enc = self.encode_learn(x, y, known)
        return enc, self.class_of(y)

    def encode_run(self, xs: list, ys: list, start: int, complete: bool, limit: int, unseen: bool = False,
                   new_values: bool = False):
        """:meth:`RunEncoder.encode_run <stream_nb.stats.schema.RunEncoder.encode_run>`, with room for as many new
        values (``new_values``) as the tables hold without growing."""
        return self.schema.runs.encode_run(xs, ys, start, complete, limit, unseen, new_values,
                                      self._run_value_room() if new_values else 0)

    def registers_in_runs(self) -> bool:
        """Whether runs may take labeled events with new categorical values (``encode_run(new_values=True)``):
        the store is the one it counts in (no second layer), keeps no t-way tables and its pair tables,
        if any, are dense (sparse ones answer to the memory budget event by event)."""
        return not self.tuples and not self.pairs_sparse and self.count_layer() is self

    def _run_value_room(self) -> int:
        """How many new values the arrays (and dense pair tables) hold without growing: a run registers no
        more, so that no table is reallocated, or turned sparse, between a run's scores and its counts."""
        room = self.tables.capacity[1] - len(self.value_keys)
        if self.pairs:
            room = min(room, self.pair_count.shape[1] - len(self.value_keys))
        return room

    def run_more(self, n: int) -> np.ndarray | None:
        """:meth:`RunEncoder.run_more <stream_nb.stats.schema.RunEncoder.run_more>`."""
        return self.schema.runs.run_more(n)

    def register_run_values(self, n: int) -> None:
        """:meth:`RunEncoder.register_run_values <stream_nb.stats.schema.RunEncoder.register_run_values>`."""
        self.schema.runs.register_run_values(n)

    def encode_frame(self, X):
        """:meth:`RunEncoder.encode_frame <stream_nb.stats.schema.RunEncoder.encode_frame>`: a DataFrame's codes, to predict."""
        return self.schema.runs.encode_frame(X)

    def validate_frame(self, X, labels: list = ()) -> None:
        """Raise ``FeatureTypeError`` for any value of ``X`` that learning would refuse, and ``CapacityError``
        when its new categorical values and new classes (of ``labels``) would take the t-way table past
        ``max_table_cells``; change nothing."""
        bounded = bool(self.tuples) and self.max_table_cells is not None
        new = self.schema.runs.validate_frame(X, labels, count_new=bounded)
        if bounded:
            self.layout.check_cells(self, *new)

    # the count tables are a part of their own (CountTables); the names learners and kernels read stay the store's,
    # read-only (an AttributeError while a table is not held, as before)
    class_count = property(attrgetter("tables.held.class_count"), doc="(C,): the weight of each class.")
    value_count = property(attrgetter("tables.held.value_count"), doc="(C, V): the weight of each class and value column.")
    feat_count = property(attrgetter("tables.held.feat_count"), doc="(C, F): the weight of each class and feature observed.")
    pair_count = property(attrgetter("tables.held.pair_count"), doc="(C, V, V): the pair counts (with ``pairs``).")
    pair_feat = property(attrgetter("tables.held.pair_feat"), doc="(C, V, F): the pair counts by feature (with ``pairs``).")
    tuple_count = property(attrgetter("tables.held.tuple_count"), doc="(C, V^t): the t-way counts (with ``tuples``).")
    tuple_feat = property(attrgetter("tables.held.tuple_feat"), doc="(C, V^(t-1), F): the t-way counts by feature.")
    obs_value_count = property(attrgetter("tables.held.obs_value_count"), doc="The observed-only twin of value_count.")
    obs_feat_count = property(attrgetter("tables.held.obs_feat_count"), doc="The observed-only twin of feat_count.")
    obs_pair_count = property(attrgetter("tables.held.obs_pair_count"), doc="The observed-only twin of pair_count.")
    obs_pair_feat = property(attrgetter("tables.held.obs_pair_feat"), doc="The observed-only twin of pair_feat.")
    obs_tuple_count = property(attrgetter("tables.held.obs_tuple_count"), doc="The observed-only twin of tuple_count.")
    obs_tuple_feat = property(attrgetter("tables.held.obs_tuple_feat"), doc="The observed-only twin of tuple_feat.")
    keeps_observed = property(attrgetter("tables.observed"),
                              doc="Whether the observed-only twin of the counts is kept (:meth:`keep_observed`).")

    # the Gaussian moments are a part of their own (GaussianMoments); their arrays keep their names here
    g_n = property(lambda s: s.moments.n, lambda s, a: setattr(s.moments, "n", a))
    g_mean = property(lambda s: s.moments.mean, lambda s, a: setattr(s.moments, "mean", a))
    g_m2 = property(lambda s: s.moments.m2, lambda s, a: setattr(s.moments, "m2", a))

    def add_gaussian(self, c: int, w: float, gs: np.ndarray, gx: np.ndarray) -> None:
        """Weighted Welford update of the Gaussian moments of class ``c`` (:meth:`GaussianMoments.add`)."""
        self.version += 1
        if len(gs):
            if self.journal is not None:
                self.journal.append(("gauss", c, w, gs, gx))
            self.moments.add(c, w, gs, gx)

    def add_gaussian_rows(self, G: np.ndarray, gslots, yc: np.ndarray, w: np.ndarray, remove: bool = False) -> None:
        """Add (``remove``: take back) rows of numeric values at once (:meth:`GaussianMoments.add_rows`)."""
        self.moments.add_rows(len(self.classes), G, gslots, yc, w, remove)
        self.version += 1

    def gaussian_mixture(self, g: int, weights: np.ndarray) -> tuple[float, float]:
        """Mean and standard deviation of Σ_c weights[c] N(μ_c, σ²_c) for Gaussian slot ``g``."""
        return self.moments.mixture(len(self.classes), g, weights)

    def gaussian_loglik(self, gslots: np.ndarray, gx: np.ndarray, var_smoothing: float) -> np.ndarray:
        """Per-class Gaussian log-density of numeric values (:meth:`GaussianMoments.loglik`)."""
        return self.moments.loglik(len(self.classes), gslots, gx, var_smoothing)

    def cut_points(self) -> dict:
        """``{feature: [cut points]}`` of every discretised feature whose bin edges exist (bin 0 is
        below the first, the last bin at or above the last)."""
        return {name: self.disc[f].edges.tolist() for f, name in enumerate(self.features)
                if self.disc[f] is not None and self.disc[f].edges is not None}

    def learn_limit(self) -> int:
        """How many events may be learned in one batch or run before the store must look at its
        counts again (a two-layer store chooses its cut points; a selection of pairs is revised,
        :mod:`stream_nb.stats.selection._revision`); otherwise no limit."""
        return revision_due(self)

    def count_layer(self) -> "Stats":
        """The store whose counts are the truth that forgetting subtracts and scales
        (:mod:`stream_nb.stats.forgetting._forgetting`): this one; a two-layer store's fine layer."""
        return self

    def counts_changed(self) -> None:
        """Called after forgetting changed the counts of :meth:`count_layer` from outside (a
        two-layer store derives its coarse layer again); here, nothing."""

    def scale_waiting(self, factor: float) -> None:
        """Decay renormalised the counts by ``factor``: scale the weights of events learned but not
        counted yet (a two-layer store's warm-up backlog) the same way; here, none wait."""

    def cut_run(self, n: int) -> None:
        """The run :meth:`encode_run` gave is cut to its first ``n`` rows before it is learned (a
        forgetting model stops it where a drift detector acts); a two-layer store drops the fine
        rows past it. Here, nothing."""

    def add_fine_run(self, yc: np.ndarray, w=None) -> None:
        """Count a run's labelled rows (classes ``yc``) in a second layer once a compiled kernel counted
        them in this one (a two-layer store's fine layer); here, there is none."""

    def recut_due(self) -> bool:
        """Whether :meth:`settle` will choose cut points from the counts now; here, never."""
        return False

    def settle(self) -> None:
        """Called when a learning step is over (a two-layer store may choose its cut points); here, nothing."""

    # the pair selection is a part of its own (PairSelection); the names learners and kernels read stay the store's
    pair_rule = property(attrgetter("selection.rule"), doc="The pair rule (:data:`~stream_nb.stats.selection.PAIR_RULES`).")
    pair_allowed = property(attrgetter("selection.allowed"), doc="(F,): the super-parents whose rows are counted "
                            "(None: every pair counted).")
    pair_edges = property(attrgetter("selection.edges"), doc="(F, F): the pairs counted both ways (None: every pair).")
    pair_cursor = property(attrgetter("selection.cursor"), doc="The rotation's place (stats/selection/_revision.py).")
    pair_revised = property(attrgetter("selection.revised"), doc="The events learned at the last revision.")
    pairs_partial = property(attrgetter("selection.partial"),
                             doc="Whether some kept pair holds fewer events than the store (unlearning is refused).")
    pairs_selected = property(attrgetter("selection.selected"),
                              doc="Whether the pair tables keep only candidate pairs (some were dropped for the budget).")
    #: the other layer of a two-layer store, which takes the same selection (:func:`~stream_nb.stats.set_pair_rule`)
    selection_peer = None

    def check_pairs_whole(self) -> None:
        """:meth:`PairSelection.check_whole <stream_nb.stats.selection.PairSelection.check_whole>`."""
        self.selection.check_whole()

    def parent_ok(self, feats: np.ndarray) -> np.ndarray:
        """Per feature of ``feats``, whether its pairs as a super-parent are counted (all, without a selection)."""
        return self.selection.parent_ok(feats)

    def pair_mask(self, feats: np.ndarray) -> np.ndarray:
        """(k, k): whether the pair (feats[r], feats[q]) is counted, the first the row (under a selection)."""
        return self.selection.pair_mask(feats)

    def edge_ok(self) -> np.ndarray | None:
        """(F, F): the attribute pairs whose counts are kept (None: all of them)."""
        return self.selection.edge_ok(len(self.features))

    def edge_supported(self) -> np.ndarray | None:
        """(F, F): the kept pairs whose own counts support a dependence (None: no selection, every pair
        counted); see :func:`~stream_nb.stats.selection._candidates.edge_supported`."""
        return edge_supported(self)

    def refresh_selection(self) -> None:
        """Give the selected tables the current column -> feature map and feature count
        (:func:`~stream_nb.stats.selection.refresh_selection`)."""
        refresh_selection(self)

    def selection_summary(self) -> dict | None:
        """What :meth:`memory_used` shows of the selection: the rule, the parents and edges kept."""
        return self.selection.summary(self.features)

    # the tuple selection is a part of its own (TupleSelection); the names learners and kernels read stay the store's
    tuple_rule = property(attrgetter("tuple_selection.rule"), doc="Whether KDB's tuples are selected past the budget.")
    tuple_cand = property(attrgetter("tuple_selection.cand"), doc="(F, F): ``[f, g]`` whether g is a candidate "
                          "parent of f (None: every tuple counted).")
    tuple_pending = property(attrgetter("tuple_selection.pending"), doc="The choice waits for the model's first rebuild.")
    tuple_from = property(attrgetter("tuple_selection.start"),
                          doc="Events learned before the t-way tables of the choice started counting.")
    tuple_ready = property(attrgetter("tuple_selection.ready"), doc="The model has a structure to rank candidates by.")
    tuple_score = property(attrgetter("tuple_selection.score"), doc="(F, F): what candidates are ranked by.")
    tuples_selected = property(attrgetter("tuple_selection.selected"),
                               doc="Whether the t-way tables keep only the tuples of candidate parents.")

    def tuple_lists(self) -> np.ndarray:
        """(F, m): each feature's candidate parents, padded with -1 (:meth:`TupleSelection.lists`)."""
        return self.tuple_selection.lists()

    def tuple_summary(self) -> dict | None:
        """What :meth:`memory_used` shows of the candidate parents (:meth:`TupleSelection.summary`)."""
        return self.tuple_selection.summary()

    def tuple_limit(self) -> int:
        """Bytes the sparse t-way tables may take under a tuple rule: half of the sparse limit (the pair
        tables take the other half)."""
        return self.sparse_limit() // 2

    # ------------------------------------------------------------------ the tables' room and layout: the Layout part
    # The store holds its layout (:class:`~stream_nb.stats.budget.Layout`, ``layout``): the count arrays' room,
    # and whether the pair and t-way tables are dense, pair blocks or sparse under the budget
    # (``stats/budget/_layout.py``). It hands itself to the layout's methods; these are the store's names for them.

    def reserve(self, c=0, v=0, f=0, g=0):
        """Make room for ``c`` more classes, ``v`` columns, ``f`` features, ``g`` slots (the schema asks before it
        grows; a state read asks for all of them at once): :meth:`Layout.reserve`."""
        self.layout.reserve(self, c, v, f, g)

    def table_cells(self, extra_values: int = 0, extra_classes: int = 0) -> int:
        """Cells of the t-way count table with that many more values and classes (0 without one)."""
        return self.layout.table_cells(self, extra_values, extra_classes)

    def sync_pairs(self, within_budget: bool = True) -> None:
        """Grow pair blocks to the columns, features and classes the store has now, or turn them sparse past
        the budget (:meth:`Layout.sync_pairs`). Nothing for other layouts."""
        self.layout.sync_pairs(self, within_budget)

    def blocks_to_sparse(self) -> None:
        """Pair blocks to sparse tables, the same counts (before anything blocks cannot hold: EM's expected
        pairs, a promotion's moved columns). Nothing for other layouts."""
        self.layout.blocks_to_sparse(self)

    pair_blocks_ok = property(attrgetter("layout.blocks_ok"), lambda s, ok: s.layout.allow_blocks(ok),
                              doc="Whether the pair counts may be held in pair blocks past the budget (set by a "
                                  "model that reads them: TAN; KDB with k >= 2).")

    def _sets(self) -> tuple:
        """Name prefixes of the count sets kept: the counts, and with ``observed`` their observed-only twin."""
        return self.tables.sets()

    def observed(self):
        """The store as EM's E-step reads it: the observed-only counts under the usual names.

        Returns a read-only view whose ``value_count``, ``feat_count``,
        ``pair_count``, ``pair_feat``, ``tuple_count`` and ``tuple_feat`` are
        the observed-only twins and whose every other attribute (classes,
        values, class counts, ...) is this store's; without a twin, the
        store itself.
        """
        return ObservedView(self) if self.keeps_observed else self

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
        self.blocks_to_sparse()  # EM's expected pairs have no place in pair blocks
        self.tables.keep_observed()
        self.epoch += 1

    @property
    def n_seen(self) -> float:
        """Total weight learned (the number of events, with EM's fractions)."""
        return float(self.class_count[: self.n_classes].sum())

    # the memory budget is a part of its own (Budget): the store asks it, passing its arrays and table shapes
    memory_budget = property(lambda s: s.budget.limit, doc="Bytes the counts may take while dense (None: no bound).")
    # the layout of the tables, as the count tables record it when a table is replaced (read with every event)
    tuples_sparse = property(attrgetter("tables.tuples_sparse"),
                             doc="Whether the t-way tables are kept sparse (they are once dense ones would pass the budget).")
    pairs_sparse = property(attrgetter("tables.pairs_sparse"),
                            doc="Whether the pair tables are kept sparse (they are once dense ones would pass the budget).")
    pairs_blocks = property(attrgetter("tables.pairs_blocks"),
                            doc="Whether the pair counts are held in pair blocks (:meth:`Layout.take_blocks`).")

    def count_arrays(self) -> dict:
        """Every count array held, by name (the observed-only twin's too, and the Gaussian moments): what the
        budget weighs."""
        arrays = self.tables.arrays()  # and any other array the store holds (a two-layer store's waiting rows), as always
        arrays |= {k: v for k, v in vars(self).items() if isinstance(v, (np.ndarray, SparseTable, PairBlocks))}
        if self.selection.selected:  # the pairs kept, (F,) and (F, F): what the budget has always counted of them
            arrays |= {"pair_allowed": self.selection.allowed, "pair_edges": self.selection.edges}
        for name, a in (("tuple_cand", self.tuple_selection.cand), ("tuple_score", self.tuple_selection.score)):
            if a is not None:  # the candidate parents and their scores, likewise
                arrays[name] = a
        return arrays | {"value_feature": self.value_feature, "n_values": self.n_values,  # (the schema's, as large)
                         "g_n": self.g_n, "g_mean": self.g_mean, "g_m2": self.g_m2}

    def memory_used(self) -> dict:
        """What the counts take (:meth:`Budget.memory_used` of every array held), and what the selections of
        pairs and of candidate parents keep (``pairs_selected``, ``tuples_selected``)."""
        return self.budget.memory_used(self.count_arrays()) | {"pairs_selected": self.selection_summary(),
                                                               "tuples_selected": self.tuple_summary()}

    def sparse_limit(self) -> int:
        """Bytes the sparse pair tables may take (:meth:`Budget.sparse_limit`)."""
        return self.budget.sparse_limit()

    def pair_limit(self) -> int:
        """Bytes the sparse pair tables of this layer may take (:meth:`Layout.pair_limit`)."""
        return self.layout.pair_limit(self)

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_cache"] = {}
        return state


class ObservedView:
    """A store seen through its observed-only twin (see :meth:`Stats.observed`); read-only by convention."""

    __slots__ = ("_stats",)

    def __init__(self, stats: Stats):
        self._stats = stats

    def __getattr__(self, name):
        if name in TWINNED:
            return getattr(self._stats, "obs_" + name)
        return getattr(self._stats, name)
