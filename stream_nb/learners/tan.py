"""Tree-augmented naive Bayes (TAN), its tree rebuilt from the running pair counts."""

from __future__ import annotations

import numpy as np

from .._checks import is_integer
from ..options import BINNED, EM, MDL, EqualFrequency, Option, Tree
from ..kernels import NO_DETECTOR, Addresses, compiled
from ..stats import DEFAULT_MEMORY_BUDGET, GAUSS, set_pair_rule
from ._keywords import takes_options
from ._decision import logsumexp
from ._em import add_estep, naive_bayes_blocks, one_dependence_estep
from ._structure import conditional_mutual_information, maximum_spanning_tree, mutual_information_with_class
from ._structured import StructuredClassifier
from ._backoff import log_child, target
from ._tree_score import bayesian_edge_weights

__all__ = ["TAN", "TREE_SCORES"]

_NO_MORE = np.zeros((0, 0), dtype=np.int64)
_NO_LOSS = np.zeros((0, 0))
_NO_TABLE = np.zeros(0, dtype=np.int64)  # no second count set (kernels/_one.py)
_NONE = np.zeros(0)  # no decay: every row weighs 1, scored with the model's smoothing

#: How a rebuild weighs the candidate edges of the tree (``tree_score``).
TREE_SCORES = Tree.PARAMS[0].choices


class TAN(StructuredClassifier):
    """Tree-augmented naive Bayes whose tree is rebuilt from running counts.

    Every attribute has the class and at most one other attribute as parents: the maximum spanning tree
    of edge weights read off the pair counts, rooted at the attribute most informative about the class.
    The estimates always come from the current counts; only the tree waits for a rebuild (naive Bayes
    before the first). Missing attributes are summed out along the tree.

    Parameters
    ----------
    alpha
        Lidstone smoothing, > 0.
    search
        :class:`~stream_nb.Tree` (default): ``rebuild_every``, learned events between rebuilds (0: only on
        :meth:`rebuild`); ``score``, an edge's weight: ``"bayes"`` (Weka's Bayesian score gain) or
        ``"cmi"`` (conditional mutual information); ``backoff`` and ``backoff_to``, back-off estimates.
    numeric
        How numeric features are binned: :class:`~stream_nb.MDL` (default),
        :class:`~stream_nb.EqualFrequency` or :class:`~stream_nb.Edges`; its ``warmup`` is also the
        events learned before the first rebuild.
    types
        ``{feature: "categorical" | "numeric" | "time"}`` overriding type inference (``"time"``: the
        event's time, not a feature).
    loss
        Loss matrix ``{truth: {prediction: cost}}`` for a Bayes decision.
    missing
        :class:`~stream_nb.EM` (default) or :class:`~stream_nb.Ignore` (see :class:`~stream_nb.NaiveBayes`).
    forgetting, drift_detector
        :class:`~stream_nb.Window`, :class:`~stream_nb.Decay` or None; a river drift detector.
    memory_budget
        Bytes the counts may take (default 256 MiB; None: no bound); tables beyond it turn sparse.

    Examples
    --------
    >>> from stream_nb import TAN, Tree
    >>> model = TAN(search=Tree(rebuild_every=4))
    >>> stream = [
    ...     ({"a": "x", "b": "x", "c": "p"}, True),
    ...     ({"a": "y", "b": "y", "c": "q"}, True),
    ...     ({"a": "x", "b": "y", "c": "p"}, False),
    ...     ({"a": "y", "b": "x", "c": "q"}, False),
    ... ]
    >>> for x, y in stream:
    ...     model.learn_one(x, y)
    >>> model.root, [(p, c) for p, c, _ in model.tree]
    ('a', [('a', 'b'), ('a', 'c')])
    >>> model.predict_proba_one({"a": "x", "b": "x"})
    {True: 0.6, False: 0.4}

    Notes
    -----
    The docs' *The models* page gives the estimates, the edge weights, the back-off and the schedule of
    rebuilds; *Missing values and EM* how EM fills the pair counts.

    References
    ----------
    Friedman, N., Geiger, D., Goldszmidt, M. (1997). Bayesian network classifiers. Machine Learning, 29,
    131-163.

    """

    @property
    def tree_score(self) -> str:
        """How a rebuild weighs an edge: the :class:`~stream_nb.Tree`'s ``score``."""
        return self.search.score

    @property
    def backoff(self) -> float | None:
        """The :class:`~stream_nb.Tree`'s ``backoff``: m of the back-off estimates, or None (Lidstone's)."""
        return self.search.backoff

    @property
    def _backoff(self) -> float | None:
        """The back-off's m as the stored counts need it: times the decay's inflation, as ``alpha`` is."""
        m = self.backoff
        return m * self._inflation if m else m

    @property
    def rebuild_every(self) -> int:
        """Learned events between two rebuilds: the :class:`~stream_nb.Tree`'s ``rebuild_every``."""
        return self.search.rebuild_every

    _accepts = {"numeric": BINNED, "search": (Tree,)}

    #: The option each of these parameters is when it is None (river keeps a signature's defaults immutable).
    _option_defaults = {"search": Tree(), "numeric": MDL(), "missing": EM()}

    @takes_options
    def __init__(
        self,
        alpha: float = 1.0,
        search: Option | None = None,
        numeric: Option | None = None,
        types: dict | None = None,
        loss: dict | None = None,
        missing: Option | None = None,
        forgetting: Option | None = None,
        drift_detector=None,
        memory_budget: int | None = DEFAULT_MEMORY_BUDGET,
    ):
        self.alpha = alpha
        self.search = search
        self.numeric = numeric
        self.types = types
        self.loss = loss
        self.missing = missing
        self.forgetting = forgetting
        self.drift_detector = drift_detector
        self.memory_budget = memory_budget
        self._setup(pairs=True)
        self._setup_rebuilds()
        if forgetting is None and drift_detector is None:
            set_pair_rule(self._stats, "edges")  # past the budget: keep the candidate edges' pairs
            self._stats.pair_blocks_ok = True  # where they fit and dense tables do not: every pair, in pair blocks
        self._parent = np.full(0, -1, dtype=np.int64)
        self._cmi = np.zeros((0, 0))
        self._root = -1

    @property
    def _early_rule(self) -> str:
        """The test an early rebuild waits for: the G-test when the tree is weighed by the Bayesian score,
        which charges an edge for its cells; the BIC under CMI, which charges nothing (see
        :class:`~stream_nb.learners.StructuredClassifier`)."""
        return "g" if self.tree_score == "bayes" else "bic"

    @classmethod
    def _unit_test_params(cls):
        yield {}
        yield {"search": Tree(rebuild_every=25), "numeric": EqualFrequency(bins=3, warmup=20)}  # both discretisers checked
        yield {"search": Tree(score="bayes", rebuild_every=25)}

    # ------------------------------------------------------------------ structure

    def rebuild(self) -> None:
        """Rebuild the tree now from the current pair counts."""
        s = self._stats
        F = len(s.features)
        if self.tree_score == "cmi":
            cmi = weights = conditional_mutual_information(s)
        else:  # on pair blocks (wide data) only the edges' CMI, which :attr:`tree` reports, is computed
            weights = bayesian_edge_weights(s, self._alpha)
            cmi = None if s.pairs_blocks else conditional_mutual_information(s)
        nodes = [f for f in range(F) if s.kinds[f] != GAUSS and s.n_values[f] > 0]
        parent = np.full(F, -1, dtype=np.int64)
        # Nothing may depend on the order in which features arrived: the root is the
        # attribute most informative about the class, and ties go by name.
        rank = {f: r for r, f in enumerate(sorted(nodes, key=lambda f: str(s.features[f])))}
        mi = mutual_information_with_class(s)
        root = max(nodes, key=lambda f: (mi[f], -rank[f])) if nodes else -1
        kept = s.edge_supported()  # None, or the pairs counted whose counts support a dependence: a forest over them
        if kept is not None:
            weights = np.where(kept, weights, weights.min(initial=0.0) - 1.0)
        for child, par in maximum_spanning_tree(weights, nodes, root, rank).items():
            if kept is None or kept[par, child]:
                parent[child] = par
        if cmi is None:
            children = np.flatnonzero(parent >= 0)
            cmi = s.pair_count.cmi((parent[children], children))
        self._parent, self._cmi, self._root = parent, cmi, root
        self._rebuilt()

    @property
    def root(self):
        """Name of the tree's root attribute (None before the first build)."""
        return self._stats.features[self._root] if self._root >= 0 else None

    @property
    def tree(self) -> list:
        """The directed edges ``(parent, child, cmi)`` of the current tree, breadth-first
        from the root with siblings by name."""
        names = self._stats.features
        parent = self._parent.tolist()
        out, frontier = [], [self._root] if self._root >= 0 else []
        while frontier:
            nxt = []
            for p in frontier:
                kids = sorted((c for c, q in enumerate(parent) if q == p), key=lambda c: str(names[c]))
                out.extend((names[p], names[c], float(self._cmi[p, c])) for c in kids)
                nxt.extend(kids)
            frontier = nxt
        return out

    def _parents(self) -> np.ndarray:
        F = len(self._stats.features)
        if len(self._parent) < F:
            self._parent = np.concatenate([self._parent, np.full(F - len(self._parent), -1, dtype=np.int64)])
        return self._parent

    # ------------------------------------------------------------------ inference

    def _parent_columns(self, dfeats: np.ndarray) -> np.ndarray:
        """For each feature of ``dfeats``, the position in ``dfeats`` of its parent: -1 for a root (before
        the first build every attribute is one), -2 for a parent not among ``dfeats``; remembered for the
        last array asked about under the tree as it stands (the events of one shape share theirs)."""
        parent = self._parents()
        held = self.__dict__.get("_ppos")
        if held is not None and held[0] is dfeats and held[1] is parent and held[2] == self._root:
            return held[3]
        if self._root < 0:
            ppos = np.full(len(dfeats), -1, dtype=np.int64)
        else:
            pos = np.full(len(parent) + 1, -2, dtype=np.int64)
            pos[-1] = -1  # parent -1: a root
            pos[dfeats] = np.arange(len(dfeats))
            ppos = pos[parent[dfeats]]
        self._ppos = (dfeats, parent, self._root, ppos, bool((ppos < -1).any()))
        return ppos

    _kernel_modules = ("_tree", "_one")

    def _tree_arguments(self) -> tuple:
        """The store's arrays as :func:`~stream_nb.kernels._tree.tree_block` takes them (from ``C`` to
        ``g_m2``, the smoothing as it stands: decay inflates it), and as one table of their addresses
        (:func:`~stream_nb.kernels._one.tree_one`); taken again when the arrays may have changed."""
        s = self._stats
        key = (s.epoch, s.keeps_observed, id(s.value_count), id(s.pair_count), id(s.g_n))
        held = self.__dict__.get("_targs")
        if held is None or held[0] != key:
            twin = s.keeps_observed
            o = "obs_" if twin else ""
            arrays = (s.class_count, s.value_count, s.feat_count, s.pair_count, s.pair_feat, s.n_values,
                      getattr(s, o + "value_count"), getattr(s, o + "feat_count"), getattr(s, o + "pair_count"),
                      getattr(s, o + "pair_feat"), s.g_n, s.g_mean, s.g_m2)
            flat = tuple(x.reshape(-1, x.shape[-1]) if x.ndim == 3 else x for x in arrays)
            held = self._targs = (key, (s.n_classes, float(self.backoff or 0.0), self.search.backoff_to == "parent",
                                        float(self._var_smoothing), twin),
                                  arrays, Addresses(key, flat).table)
        return held

    def _kernel_one(self, enc, c: int, out: np.ndarray, joint: bool = False, ppos=None) -> bool:
        """``out`` (1, C): log P(c | x) of one event (``joint``: log P(c, x)), every observed attribute's
        parent observed, by the block kernel on a block of one (:func:`~stream_nb.kernels._one.tree_one`);
        or, ``c`` >= 0, the complete event counted in class ``c`` without scoring it again (its prediction did:
        :func:`~stream_nb.kernels._one.tree_count`), and in the store's
        :meth:`~stream_nb.stats.Stats.counted_twin` if it has one (returned: whether it did). ``ppos``:
        :meth:`_parent_columns` of its features."""
        s = self._stats
        if s.pairs_blocks or c < 0:
            ppos = self._parent_columns(enc.feats) if ppos is None else ppos
        if s.pairs_blocks:  # a block of one on the pair blocks (one layer: no twin to count in)
            s.sync_pairs(within_budget=False)  # (the caller chose this path for the layout as it stands)
            self._kernel_block(enc.cols[None, :], enc.feats, enc.gx[None, :], enc.gslots, np.array([c], dtype=np.int64),
                               None, out, c >= 0, ppos, joint)
            return False
        _, (C, backoff, to_parent, smoothing, twin), _, table = self._tree_arguments()
        if c >= 0:  # counted without scoring it again: its prediction did (``out`` is left as it was)
            fine = s.counted_twin(enc)
            compiled().tree_count(table, enc.cols, enc.feats, enc.gx, enc.gslots, c, twin,
                                  _NO_TABLE if fine is None else fine)
            s.mark_counted(False)  # counts changed in place, as Stats.add marks them
            return fine is not None
        f = self._forget
        compiled().tree_one(table, enc.cols, enc.feats, ppos, enc.gx, enc.gslots, C,
                            float(self._alpha_given if f is None else self._alpha),
                            backoff if f is None else backoff * self._inflation, to_parent, smoothing, joint, out)
        return False

    def _kernel_block(self, D, dfeats, G, gslots, yc, more, out, learn: bool, ppos=None, joint: bool = False,
                      decay=None) -> int:
        """Score each row of an encoded block along the tree into ``out`` (log posteriors; with ``joint``,
        log P(c, x)) and, with ``learn``, count each labelled row after scoring it
        (:func:`~stream_nb.kernels._tree.tree_block`); ``ppos``: :meth:`_parent_columns` of ``dfeats`` (every
        observed attribute's parent observed). ``decay``: the rows' weights and smoothing
        (:func:`~stream_nb.learners._decay_runs.decay_run`)."""
        s = self._stats
        ppos = self._parent_columns(dfeats) if ppos is None else ppos
        watch = self._kernel_detector() if learn else NO_DETECTOR  # fed the error of each row before its count
        loss = _NO_LOSS if self._decision is None or not watch[0] else np.ascontiguousarray(
            self._decision.matrix(s.classes))
        s.sync_pairs(within_budget=False)  # pair blocks grown to hold every column of D before the kernel reads them
        if s.pairs_blocks:
            C, backoff, to_parent, smoothing = (s.n_classes, float(self.backoff or 0.0),
                                                self.search.backoff_to == "parent", float(self._var_smoothing))
        else:
            _, (C, backoff, to_parent, smoothing, twin), arrays, _ = self._tree_arguments()
        # under decay each row's smoothing and back-off: the given ones times its inflation
        weights, infl, a, m = (_NONE, _NONE, self._alpha, backoff * self._inflation) if decay is None else (
            decay.weight, decay.inflation, self._alpha_given, backoff)
        if s.pairs_blocks:  # (kernels/_pair_blocks.py: the same scores and counts on each pair's block)
            done = compiled().tree_block_pairs(D, dfeats, ppos, _NO_MORE if more is None else more, G, gslots, yc,
                                               weights, infl, learn, C, float(a), m, to_parent, smoothing,
                                               s.class_count, s.value_count, s.feat_count, s.n_values,
                                               *s.pair_count.arrays(), s.g_n, s.g_mean, s.g_m2, out, joint, loss,
                                               *watch)
        else:
            done = compiled().tree_block(D, dfeats, ppos, _NO_MORE if more is None else more, G, gslots, yc, weights,
                                         infl, learn, C, float(a), m, to_parent, smoothing, *arrays[:6], twin,
                                         *arrays[6:], out, joint, loss, *watch)
        if learn and (yc[0] >= 0 if done == 1 else (yc[:done] >= 0).any()):
            s.mark_counted(len(yc) > 1)  # counts changed in place, as Stats.add or add_many marks them
        return done

    def _kernel_ready(self) -> bool:
        """The kernel's condition (:meth:`~stream_nb.learners._runs.VectorisedRuns._kernel_ready`), asked of
        the pair layout as it stands: pair blocks past the budget turn sparse here, before a run, never
        while a kernel reads them."""
        self._stats.sync_pairs()
        return super()._kernel_ready()

    def _count(self, enc, c: int, w: float) -> None:
        self._stats.sync_pairs()  # (as _kernel_ready: the layout settled before the path is chosen)
        super()._count(enc, c, w)

    def _jll(self, enc):
        s = self._stats
        s.sync_pairs()  # (as _kernel_ready: the layout settled before the path is chosen)
        if not len(enc.cols) or not s.n_classes:
            return self._naive_jll(enc)
        ppos = self._parent_columns(enc.feats)
        if self._ppos[4]:  # an observed attribute's parent is missing: summed out along the tree
            colmap = np.full(len(s.features), -1, dtype=np.int64)
            colmap[enc.feats] = enc.cols
            return self._exact_jll(colmap, self._parents())
        if s.pairs_sparse:  # sparse (or selected) pair tables (before the first build, naive Bayes: every ppos is -1)
            return self._tree_jll(enc.cols[None, :], enc.feats, ppos)[0]
        out = np.empty((1, s.n_classes))
        self._kernel_one(enc, -1, out, True, ppos)
        return out[0]

    def _tree_jll(self, D, feats, ppos) -> np.ndarray:
        """(rows, C) log P(c) Π P(x_i | c, x_pa) for sparse pair tables: ``D`` (rows, k) columns of the
        attributes ``feats`` (-1: missing, none of its children observed), ``ppos`` their parents' positions in
        ``D`` (-1: none). Read in compiled code (:func:`~stream_nb.kernels._sparse_scores.tree_sparse`), with
        the back-off estimate where the model has one."""
        s = self._stats
        out = np.empty((len(D), s.n_classes))
        pc, pf = s.pair_count, s.pair_feat
        compiled().tree_sparse(np.ascontiguousarray(D, dtype=np.int64), np.asarray(feats, dtype=np.int64),
                               np.asarray(ppos, dtype=np.int64), s.n_classes, float(self._alpha),
                               float(self._backoff or 0.0), self.search.backoff_to == "parent", s.class_count,
                               s.value_count, s.feat_count, s.n_values, np.array(pc.shape), np.array(pf.shape),
                               *pc.arrays(), *pf.arrays(), True, out)
        return out

    # a run of events (prequential_many): complete events scored along the tree, whatever `missing` says
    _run_complete = True

    def _run_ready(self) -> bool:
        return not self.learn_unlabeled

    def _exact_jll(self, colmap: np.ndarray, parent: np.ndarray) -> np.ndarray:
        """log P(c, x_observed), summing the missing attributes out along the forest."""
        s, a = self._stats, self._alpha
        C = s.n_classes
        jll = self._log_prior()
        F = len(parent)
        # A parent without a single value (its columns detached when it turned numeric, its bins not
        # chosen yet) cannot be summed out: until the next rebuild its children are read as roots.
        parent = np.where(parent >= 0, np.where(s.n_values[np.maximum(parent, 0)] > 0, parent, -1), parent)
        children = [[] for _ in range(F)]
        for f in range(F):
            if parent[f] >= 0:
                children[parent[f]].append(f)
        # post-order over the nodes whose subtree holds an observed attribute
        needed = np.zeros(F, dtype=bool)
        order = []
        stack = [(f, False) for f in range(F) if parent[f] < 0 and s.kinds[f] != GAUSS]
        while stack:
            f, done = stack.pop()
            if done:
                needed[f] = colmap[f] >= 0 or any(needed[k] for k in children[f])
                if needed[f]:
                    order.append(f)
                continue
            stack.append((f, True))
            stack.extend((k, False) for k in children[f])
        msg = {}
        for f in order:
            if colmap[f] >= 0:
                dom = colmap[f : f + 1]
                n_vals = s.n_values[f] + (dom[0] == 0)
            else:
                dom = np.fromiter(s.values[f].values(), dtype=np.int64, count=len(s.values[f]))
                n_vals = s.n_values[f]
            inner = msg.pop(f, 0.0)  # (C, |dom|): Σ over children of their messages
            p = parent[f]
            if p < 0:
                t = np.log(s.value_count[:C, dom] + a) - np.log(s.feat_count[:C, f] + a * n_vals)[:, None]
                jll = jll + logsumexp(t + inner, axis=1)
                continue
            pdom = colmap[p : p + 1] if colmap[p] >= 0 else np.fromiter(s.values[p].values(), dtype=np.int64, count=len(s.values[p]))
            # t[c, u, v] = log P(x_f = v | c, x_p = u)
            pc, pf = s.pair_count[:C, pdom[:, None], dom[None, :]], s.pair_feat[:C, pdom, f][:, :, None]
            m = self._backoff
            t = log_child(pc, pf, a, a * n_vals, m, m and target(
                self.search.backoff_to, pc, pf, s.value_count[:C, dom][:, None, :], s.feat_count[:C, f][:, None, None],
                a, a * n_vals))
            beta = logsumexp(t + (inner[:, None, :] if np.ndim(inner) else 0.0), axis=2)  # (C, |pdom|)
            msg[p] = msg.get(p, 0.0) + beta
        return jll

    def _jll_many(self, D, dfeats, G, gslots):
        s = self._stats
        s.sync_pairs()  # (as _kernel_ready: the layout settled before the path is chosen)
        if not D.shape[1] or not s.n_classes:
            return self._naive_jll_many(D, dfeats, G, gslots)
        ppos = self._parent_columns(dfeats)
        P = np.where(ppos[None, :] >= 0, D[:, np.maximum(ppos, 0)], ppos[None, :] + 1)  # -1: parent missing
        slow = ((D >= 0) & (P < 0)).any(1)
        out = np.empty((len(D), s.n_classes))
        fast = np.flatnonzero(~slow)
        if len(fast) and s.pairs_sparse:  # (before the first build, naive Bayes: every ppos is -1)
            out[fast] = self._tree_jll(D[fast], dfeats, np.maximum(ppos, -1))
        elif len(fast):
            post = np.empty((len(fast), s.n_classes))
            self._kernel_block(D[fast], dfeats, G[fast], gslots, np.full(len(fast), -1, dtype=np.int64), None, post,
                               False, np.maximum(ppos, -1), joint=True)  # a parent not among dfeats: its child is missing
            out[fast] = post
        parent = self._parents()
        for r in np.flatnonzero(slow):
            colmap = np.full(len(parent), -1, dtype=np.int64)
            colmap[dfeats] = D[r]
            out[r] = self._exact_jll(colmap, parent)
        return out

    # ------------------------------------------------------------------ EM

    def _add_expected(self, enc, c, w, miss):
        s = self._stats
        if s.pairs_selected:  # the E-step would read pairs no longer counted: counted as missing="ignore"
            s.add(enc, c, w)
            return
        add_estep(s, enc, c, w, one_dependence_estep(s.observed(), self._alpha, enc, c, miss))

    def _missing_posterior(self, enc, c, miss):
        """P(x_m | x_o, c) of each missing attribute on the tree: belief propagation on the
        forest (an upward and a downward pass), exact."""
        if self._root < 0:  # before the first build: naive Bayes
            return naive_bayes_blocks(self._stats, self._alpha, miss, c)
        s = self._stats
        parent = self._parents()
        dom = {f: np.array([col], dtype=np.int64) for f, col in zip(enc.feats.tolist(), enc.cols.tolist())}
        miss_l = miss.tolist()
        for f in miss_l:
            dom[f] = s.columns_of(f)
        children = {f: [] for f in dom}
        for f in dom:
            p = int(parent[f])
            if p >= 0 and p in dom:
                children[p].append(f)
        roots = [f for f in dom if parent[f] < 0 or int(parent[f]) not in dom]
        order = []  # post-order: children before parents
        stack = [(r, False) for r in roots]
        while stack:
            f, done = stack.pop()
            if done:
                order.append(f)
            else:
                stack.append((f, True))
                stack.extend((k, False) for k in children[f])
        marg = self._propagate(dom, self._cpts(c, dom, parent, roots), parent, children, order, roots)
        return [(f, dom[f], marg[f]) for f in miss_l]

    def _cpts(self, c, dom, parent, roots):
        """P(x_f | c, x_pa(f)) over the domains: (|dom pa| x |dom f|), or P(x_f | c) for roots."""
        s, a = self._stats, self._alpha
        rootset = set(roots)
        out = {}
        for f in dom:
            n = s.n_values[f]
            if f in rootset:
                out[f] = (s.value_count[c, dom[f]] + a) / (s.feat_count[c, f] + a * n)
            else:
                pd_ = dom[int(parent[f])]
                C, m = s.n_classes, self._backoff
                pc, pf = s.pair_count[:C, pd_[:, None], dom[f][None, :]], s.pair_feat[:C, pd_, f][:, :, None]
                prior = m and target(self.search.backoff_to, pc, pf, s.value_count[:C, dom[f]][:, None, :],
                                     s.feat_count[:C, f][:, None, None], a, a * n)
                out[f] = np.exp(log_child(pc[c], pf[c], a, a * n, m, m and prior[min(c, len(prior) - 1)]))
        return out

    @staticmethod
    def _propagate(dom, cpt, parent, children, order, roots):
        """Sum-product on the forest; returns the normalised marginal of every node."""
        rootset = set(roots)
        lam, up = {}, {}
        for f in order:
            lv = np.ones(len(dom[f]))
            for k in children[f]:
                lv = lv * up[k]
            lv = lv / lv.max()
            lam[f] = lv
            if f not in rootset:
                m = cpt[f] @ lv
                up[f] = m / m.sum()
        marg, pi = {}, {}
        for f in reversed(order):
            if f in rootset:
                pi[f] = cpt[f]
            else:
                p = int(parent[f])
                pi[f] = (pi[p] * lam[p] / up[f]) @ cpt[f]
                pi[f] = pi[f] / pi[f].sum()
            b = pi[f] * lam[f]
            marg[f] = b / b.sum()
        return marg

    # ------------------------------------------------------------------ state

    def _extra_state(self):
        return (
            {"parent": self._parents().copy(), "cmi": self._cmi.copy()},
            {"root": int(self._root), "since_rebuild": int(self._since_rebuild), "n_rebuilds": int(self.n_rebuilds)},
        )

    def _load_extra_state(self, arrays, meta):
        self._parent = np.asarray(arrays["parent"], dtype=np.int64)
        self._cmi = np.asarray(arrays["cmi"], dtype=float)
        self._root = meta["root"]
        self._since_rebuild = meta["since_rebuild"]
        self.n_rebuilds = meta["n_rebuilds"]

    def _check_loaded(self):
        """The tree of a state: parents that are features or -1, no cycle, the root a parentless
        feature (or -1 and no edge), and an edge's CMI inside the matrix."""
        super()._check_loaded()
        F = len(self._stats.features)
        parent, cmi, root = self._parent, self._cmi, self._root
        if parent.ndim != 1 or len(parent) > F or ((parent < -1) | (parent >= len(parent))).any():
            raise ValueError(f"tree: expected at most {F} parents, each a feature index or -1, got {parent.tolist()!r:.80}")
        if not is_integer(root) or not -1 <= root < F:
            raise ValueError(f"tree: the root must be a feature index or -1, got {root!r:.60}")
        edges = np.flatnonzero(parent >= 0)
        if root < 0 and len(edges):
            raise ValueError("tree: edges without a root")
        if 0 <= root < len(parent) and parent[root] != -1:
            raise ValueError(f"tree: the root {root} has a parent")
        ends = np.zeros(len(parent), dtype=bool)  # every chain of parents must end (no cycle): each node once
        for child in edges.tolist():
            path, node = [], child
            while node >= 0 and not ends[node]:
                if len(path) > len(parent):
                    raise ValueError(f"tree: feature {child}'s chain of parents is a cycle")
                path.append(node)
                node = int(parent[node])
            ends[path] = True
        n = max([int(parent.max()) + 1, int(edges.max()) + 1] if len(edges) else [0])
        if cmi.ndim != 2 or cmi.shape[0] != cmi.shape[1] or cmi.shape[0] < n or cmi.shape[0] > F:
            raise ValueError(f"tree: the CMI matrix has shape {list(cmi.shape)}, expected a square of {n} to {F} "
                             f"features")
