"""Sahami's k-dependence Bayesian classifier (KDB), its structure rebuilt from the running counts."""

from __future__ import annotations

import itertools
import math

import numpy as np

from ..kernels import compiled
from ..stats import DEFAULT_MEMORY_BUDGET, SparseTable
from .._checks import is_integer

from ..stats import TwoLayerStats, choose_tuples, pair_tests, revise_tuples, set_pair_rule
from ..options import EM, EqualFrequency, Option, Parents
from ._keywords import check_options, takes_options
from ._decision import logsumexp
from ._em import naive_bayes_blocks
from ._kdb_kernel import KDBKernel
from ._selection import selective_structure
from ._structure import conditional_mutual_information, mutual_information_with_class
from ._structured import StructuredClassifier

__all__ = ["KDB"]

_UNLABELED = np.full(1, -1, dtype=np.int64)


class KDB(KDBKernel, StructuredClassifier):
    """Sahami's k-dependence Bayesian classifier, its structure rebuilt from running counts.

    Attributes are ordered by their mutual information with the class, and each takes as parents the
    class and the (up to) ``k`` earlier attributes of highest I(x_i; x_j | y). The class-conditional
    counts of every (k+1)-tuple of values are kept, dense while they fit ``memory_budget``, sparse
    beyond. Missing attributes are summed out by enumeration.

    Parameters
    ----------
    k
        Most attribute parents per attribute (0: naive Bayes).
    alpha
        Lidstone smoothing, > 0.
    search
        :class:`~stream_nb.Parents` (default): ``rebuild_every``, learned events between rebuilds (0: only
        on :meth:`rebuild`); ``select``, the level of selective KDB's G-tests (None: every attribute).
    max_table_cells
        Hard bound on the cells of the (k+1)-way table: past it learning raises
        :class:`~stream_nb.exceptions.CapacityError` (None: the budget decides).
    max_completions
        Most joint values of missing attributes enumerated per event.
    numeric
        How numeric features are binned: :class:`~stream_nb.EqualFrequency` (default),
        :class:`~stream_nb.MDL` (slower: a fine (k+1)-way table too) or :class:`~stream_nb.Edges`; its
        ``warmup`` is also the events learned before the first rebuild.
    types
        ``{feature: "categorical" | "numeric" | "time"}`` overriding type inference.
    loss
        Loss matrix ``{truth: {prediction: cost}}`` for a Bayes decision.
    missing, forgetting, drift_detector
        As for :class:`~stream_nb.NaiveBayes`.
    memory_budget
        Bytes the counts may take (default 256 MiB; None: no bound); tables beyond it turn sparse.

    Examples
    --------
    >>> from stream_nb import KDB, Parents
    >>> model = KDB(k=2, search=Parents(rebuild_every=8))
    >>> stream = [
    ...     ({"a": "x", "b": "x", "c": "x"}, "same"),
    ...     ({"a": "y", "b": "y", "c": "y"}, "same"),
    ...     ({"a": "x", "b": "y", "c": "x"}, "mixed"),
    ...     ({"a": "y", "b": "x", "c": "x"}, "mixed"),
    ... ] * 2
    >>> for x, y in stream:
    ...     model.learn_one(x, y)
    >>> model.structure   # c alone says something about the class, so it comes first
    {'c': [], 'a': ['c'], 'b': ['a', 'c']}
    >>> model.predict_proba_one({"a": "x", "b": "x", "c": "x"})
    {'same': 0.7297, 'mixed': 0.2703}

    Notes
    -----
    The docs' *The models* page gives the estimates and the counts kept, *Numeric features* (Memory
    budget) the candidate parents past the budget, *Missing values and EM* the E-step, and *Options*
    selective KDB.

    References
    ----------
    Sahami, M. (1996). Learning limited dependence Bayesian classifiers. KDD-96, 335-338.
    Martinez, A. M., Webb, G. I., Chen, S., Zaidi, N. A. (2016). Scalable learning of Bayesian network
    classifiers. JMLR, 17(44), 1-35 (selective KDB).

    """

    _early_rule = "bic"  # k parents chosen by a rule that charges nothing: early ones must be worth their cells

    _default_cut = EqualFrequency()  # the (k+1)-way table over fine bins took several times longer (see numeric)
    _mdl_fine_bins = 16

    @property
    def rebuild_every(self) -> int:
        """Learned events between two rebuilds: the :class:`~stream_nb.Parents`' ``rebuild_every``."""
        return self.search.rebuild_every

    @property
    def select(self) -> float | None:
        """The level of selective KDB's G-tests, or None (every attribute): the :class:`~stream_nb.Parents`' ``select``."""
        return self.search.select

    _accepts = {"search": (Parents,)}

    #: The option each of these parameters is when it is None (river keeps a signature's defaults immutable).
    _option_defaults = {"search": Parents(), "numeric": EqualFrequency(), "missing": EM()}
    #: Caches, None until first made: the store's state the parents were last checked against
    #: (:meth:`_sync_parents`), and the parent groups and lists of :meth:`_parent_groups` and :meth:`_parent_lists`.
    _synced: tuple | None = None
    _groups: tuple | None = None
    _lists: tuple | None = None

    @takes_options
    def __init__(
        self,
        k: int = 2,
        alpha: float = 1.0,
        search: Option | None = None,
        max_table_cells: int | None = None,
        max_completions: int = 4096,
        numeric: Option | None = None,
        types: dict | None = None,
        loss: dict | None = None,
        missing: Option | None = None,
        forgetting: Option | None = None,
        drift_detector=None,
        memory_budget: int | None = DEFAULT_MEMORY_BUDGET,
    ):
        self.k = k
        self.alpha = alpha
        self.search = search
        self.max_table_cells = max_table_cells
        self.max_completions = max_completions
        self.numeric = numeric
        self.types = types
        self.loss = loss
        self.missing = missing
        self.forgetting = forgetting
        self.drift_detector = drift_detector
        self.memory_budget = memory_budget
        check_options(self)  # k first: the store's tables depend on it
        self._setup_rebuilds()
        # k >= 2 keeps the class-conditional counts of every (k+1)-tuple of values; k = 1 reads the pairs
        self._setup(pairs=True, tuples=k + 1 if k >= 2 else 0, max_table_cells=max_table_cells)
        if forgetting is None and drift_detector is None:
            set_pair_rule(self._stats, "informative")  # past the budget: the pairs among class-informative attributes
            # past the budget: keep the (k+1)-tuples of each attribute's candidate parents (selective KDB)
            self._stats.tuple_selection.set_rule(k >= 2 and not isinstance(self._stats, TwoLayerStats))
            # where they fit and dense pair tables do not, every pair in pair blocks: the parents are chosen on
            # exact counts (k = 1 scores its pairs, which its kernels read dense or sparse only)
            self._stats.pair_blocks_ok = k >= 2
        self._parents: dict[int, tuple[int, ...]] = {}
        self._order: list[int] = []
        self._dropped: frozenset[int] = frozenset()  # under a selection: the attributes left out of the product
        self.n_em_skipped = 0

    @classmethod
    def _unit_test_params(cls):
        yield {}
        # the two-layer discretiser is checked through AODE's, TAN's and SPODE's defaults: KDB over it on
        # ImageSegments, river's check stream, takes minutes (see the discretiser parameter)
        yield {"k": 1, "search": Parents(rebuild_every=25), "numeric": EqualFrequency(bins=3, warmup=20)}

    # ------------------------------------------------------------------ structure

    def rebuild(self, order=None) -> None:
        """Rebuild the structure from the current counts.

        ``order`` (feature names) replaces the mutual-information order, for
        comparisons with other structure learners.
        """
        s = self._stats.observed()  # not the imputed counts: they lean toward the current structure
        cmi = conditional_mutual_information(s) if self.k else None
        if cmi is not None and s.pairs_selected:
            # candidate pairs hold the events since each one's admission: the plug-in CMI of an independent pair
            # that holds a few hundred events over thousands of cells passes that of a planted one counted from
            # the start. Less its bias, (G - df) / 2n, the pairs compare
            cmi = pair_tests(s)[3] / 2.0
        if self._stats.tuple_rule and not self._stats.tuples_selected:
            # what candidate parents would be ranked by, if the budget needs them (under candidate pairs, whose
            # counts hold different events, the pairs' evidence, read when they are chosen)
            self._stats.tuple_selection.set_score(None if self._stats.pairs_selected else cmi)
        revise = self._stats.tuples_selected and not self._stats.tuple_pending
        if self._stats.tuple_pending:  # the t-way tables wait for their candidate parents: chosen now
            choose_tuples(self._stats, self.k, cmi)
        allowed = self._allowed_parents()
        names = s.features
        nodes = s.discrete_features().tolist()
        if order is None:
            mi = mutual_information_with_class(s)
            order_idx = sorted(nodes, key=lambda f: (-mi[f], str(names[f])))
        else:
            order_idx = [s.feature_index[n] for n in order]
        before = self._dropped  # the attributes the last rebuild left out
        if self.select is not None:  # the attributes and parents the G-tests keep
            parents, dropped = selective_structure(s, order_idx, self.k, self.select, cmi, allowed)
            self._parents, self._order, self._dropped = parents, order_idx, frozenset(dropped)
        else:
            parents = {}
            for pos, f in enumerate(order_idx):
                earlier = [g for g in order_idx[:pos] if allowed is None or allowed[f, g]]
                earlier = sorted(earlier, key=lambda g: (-cmi[f, g], str(names[g]))) if self.k else []
                parents[f] = tuple(earlier[: self.k])
            self._parents, self._order = parents, order_idx
        if revise:  # candidates that rank better now start counting: possible parents from the next rebuild
            uses = None
            if self.select is not None:  # the attributes selective KDB left out at two rebuilds running need
                uses = np.ones(len(self._stats.features), dtype=bool)  # no tuples (one out once keeps them)
                uses[list(self._dropped & before)] = False
            revise_tuples(self._stats, cmi, uses)
        self._stats.tuple_selection.set_ready(True)  # candidate parents, when the budget needs them, can be ranked now
        self._rebuilt()

    def _allowed_parents(self) -> np.ndarray | None:
        """(F, F) ``[f, g]``: whether g may be a parent of f, the counts it needs being kept (None: any):
        under candidate parents (k >= 2) or candidate pairs (k = 1) the memory budget chose."""
        s = self._stats
        F = len(s.features)
        if s.tuples and s.tuples_selected:
            have = s.tuple_cand
        elif not s.tuples and s.pairs_selected:
            have = s.edge_ok()
        else:
            return None
        out = np.zeros((F, F), dtype=bool)
        n = min(len(have), F)
        out[:n, :n] = have[:n, :n]
        return out

    def _sync_parents(self) -> None:
        """Drop from the structure any parent whose counts the budget stopped keeping since it was built
        (a narrowed selection between rebuilds): its cells would read as zeros."""
        s = self._stats
        key = (s.epoch, id(s.tuple_cand), id(s.pair_edges))
        if self._synced == key:
            return
        self._synced = key
        allowed = self._allowed_parents() if self._parents else None
        if allowed is not None:
            parents = {f: tuple(p for p in pa if allowed[f, p]) for f, pa in self._parents.items()}
            if parents != self._parents:
                self._parents = parents

    @property
    def structure(self) -> dict:
        """``{attribute: [its attribute parents]}`` in the current order (under a selection: the attributes kept)."""
        names = self._stats.features
        return {names[f]: [names[p] for p in self._parents[f]] for f in self._order if f not in self._dropped}

    @property
    def dropped(self) -> list:
        """The attributes the last rebuild's selection left out of the model, in the order of I(x; y)
        (empty without a selection, ``Parents(select=...)``)."""
        names = self._stats.features
        return [names[f] for f in self._order if f in self._dropped]


    # ------------------------------------------------------------------ inference

    def _terms(self, D: np.ndarray, s=None, drop: bool = True) -> np.ndarray:
        """(rows, C) log P(c) + Σ_f log P̂(x_f | c, x_pa(f)) for rows of columns by feature index
        (``D[:, f]``; -1 where f is missing: its factor is left out, so its parents must be observed),
        read off store ``s`` (default: the model's counts); ``drop``: without the attributes a selection
        left out (else with them, as roots)."""
        s, a = s if s is not None else self._stats, self._alpha
        C = s.n_classes
        t = s.tuples
        tables = tuple(getattr(s, name, None) for name in (("tuple_count", "tuple_feat") if t else ("pair_count", "pair_feat")))
        if C and self.k and all(isinstance(table, SparseTable) for table in tables):  # a budget's: in compiled code
            return self._sparse_terms(D, s, tables, drop)
        out = np.broadcast_to(self._log_prior(), (len(D), C)).copy()  # the class counts have no observed-only twin
        # the features by how many parents they have, each group read with one gather per table
        # (a loop over the features made a round of numpy calls per feature and event)
        for fs, pas in self._parent_groups(D.shape[1], drop):
            V = D[:, fs]  # (rows, g)
            # a term needs its parents' values too: one not known here (a numeric value kept until its bin
            # edges exist, during EM's enumeration) leaves the term out, as a missing value does
            parents = [D[:, q] for q in pas] if pas is not None else []
            obs = (V >= 0) & np.logical_and.reduce([u >= 0 for u in parents]) if parents else V >= 0
            if not obs.any():
                continue
            v = np.where(obs, V, 0)
            n_vals = s.n_values[fs] + (v == 0)
            if pas is None:
                num = s.value_count[:C][:, v]  # (C, rows, g)
                den = np.broadcast_to(s.feat_count[:C, fs][:, None, :], num.shape)
            elif t == 0:  # k = 1: the pair counts, the parent's row
                u = np.where(obs, parents[0], 0)
                num = s.pair_count[:C, u, v]
                den = s.pair_feat[:C, u, np.broadcast_to(fs, v.shape)]
            else:
                us = [np.where(obs, u, 0) for u in parents]
                us += [us[-1]] * (t - 1 - len(us))  # fewer parents: a diagonal of the table
                num = s.tuple_count[(slice(0, C), v, *us)]  # a dense array or a SparseTable
                den = s.tuple_feat[(slice(0, C), *us, np.broadcast_to(fs, v.shape))]
            terms = np.log((num + a) / (den + a * n_vals))
            out += np.where(obs, terms, 0.0).sum(2).T
        return out

    def _sparse_terms(self, D: np.ndarray, s, tables: tuple, drop: bool) -> np.ndarray:
        """:meth:`_terms` over sparse tables: each term's ratio read off the hash tables in the compiled loop
        (``kernels/_sparse_scores.py: kdb_sparse``), in place of numpy's gathers, then logged and summed in
        numpy as :meth:`_terms` logs and sums them, group by group: the same numbers, to the last digit."""
        feats, groups, npar, par = self._parent_lists(D.shape[1], drop)
        (tk, tv), (fk, fv) = tables[0].arrays(), tables[1].arrays()
        C, R = s.n_classes, len(D)
        ratios = np.empty(C * R * len(feats))
        compiled().kdb_sparse(np.ascontiguousarray(D, dtype=np.int64), feats, groups, npar, par, C,
                              float(self._alpha), s.value_count, s.feat_count, np.asarray(s.n_values, dtype=np.int64),
                              not s.tuples, np.array(tables[0].shape, dtype=np.int64),
                              np.array(tables[1].shape, dtype=np.int64), tk, tv, fk, fv, ratios)
        out = np.broadcast_to(self._log_prior(), (R, C)).copy()
        for lo, hi in zip(groups[:-1].tolist(), groups[1:].tolist()):
            out += np.log(ratios[C * R * lo : C * R * hi].reshape(C, R, hi - lo)).sum(2).T
        return out

    def _parent_lists(self, F: int, drop: bool) -> tuple:
        """:meth:`_parent_groups` as the compiled loop reads them: the features in group order, where each
        group starts (and the end), each feature's number of parents and its parents (a row of ``max(k, 1)``)."""
        groups = self._parent_groups(F, drop)
        cached = self._lists
        if cached is not None and cached[0] is groups:
            return cached[1]
        width = max(self.k, 1)
        feats, npar, par = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int64)], [np.zeros((0, width), dtype=np.int64)]
        for fs, pas in groups:
            block = np.zeros((len(fs), width), dtype=np.int64)
            for j, p in enumerate(pas or ()):
                block[:, j] = p
            feats.append(fs)
            npar.append(np.full(len(fs), len(pas or ()), dtype=np.int64))
            par.append(block)
        starts = np.cumsum([0] + [len(fs) for fs, _ in groups]).astype(np.int64)
        feats, npar, par = np.concatenate(feats), np.concatenate(npar), np.concatenate(par)
        lists = (np.ascontiguousarray(feats, dtype=np.int64), starts, npar, par)
        self._lists = (groups, lists)
        return lists

    def _parent_groups(self, F: int, drop: bool = True) -> list:
        """``[(features, parents)]``: the features below ``F`` grouped by their number of parents,
        ``parents`` a list of arrays (the j-th parent of each feature; None for the roots), with
        ``drop`` those a selection left out omitted; cached for the current ``_parents`` dict."""
        cached = self._groups
        if cached is not None and cached[0] is self._parents and cached[1] == (F, drop):
            return cached[2]
        by_count: dict[int, list[int]] = {}
        for f in range(F):
            if not (drop and f in self._dropped):
                by_count.setdefault(len(self._parents.get(f, ())), []).append(f)
        groups = []
        for n, fs in sorted(by_count.items()):
            pas = [np.array([self._parents[f][j] for f in fs], dtype=np.int64) for j in range(n)] if n else None
            groups.append((np.array(fs, dtype=np.int64), pas))
        self._groups = (self._parents, (F, drop), groups)
        return groups

    def _dense(self, enc) -> np.ndarray:
        D = np.full(len(self._stats.features), -1, dtype=np.int64)
        D[enc.feats] = enc.cols
        return D

    def _jll(self, enc):
        self._sync_parents()
        s = self._stats
        if len(enc.cols) and self._kernel_takes(enc.cols[None, :], enc.feats)[0]:
            out = np.empty((1, s.n_classes))
            self._kernel_block(enc.cols[None, :], enc.feats, enc.gx[None, :], enc.gslots, _UNLABELED, None, out, False,
                               joint=True)
            return out[0]
        if not self._parents or not len(enc.cols) or not s.n_classes:
            return self._naive_jll(enc)
        return self._marginal_jll(self._dense(enc))

    def _needed_missing(self, D: np.ndarray) -> list[int]:
        """Missing attributes with an observed descendant: they must be summed out."""
        if not len(D) or D.min() >= 0:  # a complete event: nothing missing
            return []
        children: dict[int, list[int]] = {}
        for f, pa in self._parents.items():
            for p in pa:
                children.setdefault(p, []).append(f)
        needed = set()
        for f in reversed(self._order):
            if D[f] < 0 and any(D[g] >= 0 or g in needed for g in children.get(f, [])):
                needed.add(f)
        return sorted(needed)

    def _marginal_jll(self, D: np.ndarray) -> np.ndarray:
        s = self._stats
        needed = self._needed_missing(D)
        if not needed:
            return self._terms(D[None, :])[0]
        doms = [s.columns_of(f) for f in needed]
        size = math.prod(len(d) for d in doms)
        # no completion at all: a needed parent that has no value yet (a numeric one still warming
        # up its bins); beyond max_completions: too many. Either way, condition on what was observed
        if size == 0 or size > self.max_completions:
            return self._available_case_jll(D)
        rows = self._completions(D, needed, doms)
        # the needed attributes' descendants that are missing too drop out (they sum to one)
        return logsumexp(self._terms(rows), axis=0)

    def _completions(self, D, fs, doms) -> np.ndarray:
        combos = np.array(list(itertools.product(*doms)), dtype=np.int64)
        rows = np.repeat(D[None, :], len(combos), axis=0)
        rows[:, fs] = combos
        return rows

    def _available_case_jll(self, D: np.ndarray) -> np.ndarray:
        """Beyond max_completions: each observed attribute given its observed parents only."""
        saved = self._parents
        self._parents = {f: tuple(p for p in pa if D[p] >= 0) for f, pa in saved.items()}
        try:
            return self._terms(D[None, :])[0]
        finally:
            self._parents = saved

    def _jll_many(self, D, dfeats, G, gslots):
        self._sync_parents()
        s = self._stats
        if not D.shape[1] or not s.n_classes:
            return self._naive_jll_many(D, dfeats, G, gslots)
        takes = self._kernel_takes(D, dfeats)
        out = np.empty((len(D), s.n_classes))
        fast = np.flatnonzero(takes)
        if len(fast):
            post = np.empty((len(fast), s.n_classes))
            self._kernel_block(D[fast], dfeats, G[fast], gslots, np.full(len(fast), -1, dtype=np.int64), None, post,
                               False, joint=True)
            out[fast] = post
        slow = np.flatnonzero(~takes)
        if len(slow):  # a missing parent (or sparse tables): the enumeration (the counts' own terms unbuilt)
            full = np.full((len(slow), len(s.features)), -1, dtype=np.int64)
            full[:, dfeats] = D[slow]
            out[slow] = np.stack([self._marginal_jll(row) for row in full])
        return out

    # ------------------------------------------------------------------ runs

    _run_complete = True  # complete events: no attribute to sum out

    def _run_ready(self) -> bool:
        return not self.learn_unlabeled and not self._stats.pairs_selected

    # ------------------------------------------------------------------ EM

    def _completion_weights(self, enc, c, miss, s):
        """The completions of the missing attributes and their posterior given x_o and c, under this
        KDB (naive Bayes before the first build) with the parameters of store ``s``."""
        self._sync_parents()
        doms = [s.columns_of(f) for f in miss.tolist()]
        if math.prod(len(d) for d in doms) > self.max_completions:
            return None, None
        base = self._dense(enc)
        rows = self._completions(base, miss.tolist(), doms)
        if self._parents:  # every attribute's own factor: a selection chooses what predicts, not what is learned
            jll = self._terms(rows, s, drop=False)[:, c]
        else:  # naive Bayes until the first build
            a = self._alpha
            feats = np.flatnonzero(rows[0] >= 0)  # every row observes the same features
            v = rows[:, feats]
            n_vals = s.n_values[feats] + (v == 0)
            jll = (np.log(s.value_count[c, v] + a) - np.log(s.feat_count[c, feats] + a * n_vals)).sum(1)
        return rows, np.exp(jll - logsumexp(jll))

    def _add_expected(self, enc, c: int, w: float, miss: np.ndarray) -> None:
        """E-step by enumeration (exact, under the observed-only counts), M-step: every completion
        added to the counts with its posterior weight, the observed values to the observed-only ones."""
        s = self._stats
        if s.tuples_selected or s.pairs_selected:  # the E-step would need tuples no longer counted: as "ignore"
            s.add(enc, c, w)
            return
        rows, p = self._completion_weights(enc, c, miss, s.observed())
        if rows is None:
            self.n_em_skipped += 1
            s.add(enc, c, w)
            return
        feats = np.flatnonzero(rows[0] >= 0)
        s.add_many(rows[:, feats], feats, np.empty((len(rows), 0)), np.empty(0, dtype=np.int64),
                   np.full(len(rows), c, dtype=np.int64), w * p, observed=False)
        s.add_observed(enc, c, w)
        s.add_gaussian(c, w, enc.gslots, enc.gx)

    def _missing_posterior(self, enc, c, miss):
        """Each missing attribute's marginal over the completions, by enumeration under the model."""
        rows, p = self._completion_weights(enc, c, miss, self._stats)
        if rows is None:  # beyond max_completions: naive Bayes
            return naive_bayes_blocks(self._stats, self._alpha, miss, c)
        s = self._stats
        return [(f, s.columns_of(f), np.array([p[rows[:, f] == col].sum() for col in s.columns_of(f).tolist()]))
                for f in miss.tolist()]

    # ------------------------------------------------------------------ state

    def _extra_state(self):
        arrays = {"order": np.array(self._order, dtype=np.int64),
                  "parents": np.array([list(self._parents[f]) + [-1] * (self.k - len(self._parents[f]))
                                       for f in self._order], dtype=np.int64).reshape(len(self._order), self.k)}
        if self.select is not None:  # a model without a selection keeps the layout it always had
            arrays["dropped"] = np.array(sorted(self._dropped), dtype=np.int64)
        return arrays, {"since_rebuild": self._since_rebuild, "n_rebuilds": self.n_rebuilds,
                        "n_em_skipped": self.n_em_skipped}

    def _load_extra_state(self, arrays, meta):
        self._order = [int(f) for f in arrays["order"]]
        self._parents = {f: tuple(int(p) for p in row if p >= 0) for f, row in zip(self._order, arrays["parents"])}
        # a state written before selections: nothing left out
        self._dropped = frozenset(int(f) for f in np.asarray(arrays.get("dropped", np.zeros(0)), dtype=np.int64))
        self._stats.tuple_selection.set_ready(bool(self._order))
        self._since_rebuild = meta["since_rebuild"]
        self.n_rebuilds = meta["n_rebuilds"]
        self.n_em_skipped = meta["n_em_skipped"]

    def _check_loaded(self):
        """The structure of a state: an order of distinct features, and for each at most ``k``
        parents that come before it in the order (so that no chain of parents is a cycle)."""
        super()._check_loaded()
        F = len(self._stats.features)
        order = self._order
        if len(set(order)) != len(order) or not all(0 <= f < F for f in order):
            raise ValueError(f"structure: the order must list distinct features of the {F}, got {order!r:.80}")
        if set(self._parents) != set(order):
            raise ValueError("structure: expected one row of parents per feature in the order")
        position = {f: i for i, f in enumerate(order)}
        for f, pa in self._parents.items():
            if len(pa) > self.k or len(set(pa)) != len(pa) or not all(position.get(p, F) < position[f] for p in pa):
                raise ValueError(f"structure: feature {f}'s parents {list(pa)} are not at most k={self.k} distinct "
                                 f"features before it in the order")
        dropped = self._dropped
        if dropped and (self.select is None or not dropped <= set(order)
                        or any(p in dropped for f, pa in self._parents.items() for p in pa)):
            raise ValueError(f"dropped: expected features of the order that are no parent, and only under a selection, "
                             f"got {sorted(dropped)!r:.80} with search={self.search!r}")
        skipped = self.n_em_skipped
        if not is_integer(skipped) or skipped < 0:
            raise ValueError(f"n_em_skipped: expected an integer >= 0, got {skipped!r:.60}")
