"""Averaged one-dependence estimators (AODE), and the SPODE terms it shares with SPODE."""

from __future__ import annotations

import numpy as np

from ..stats import DEFAULT_MEMORY_BUDGET
from ..options import BINNED, EM, MDL, EqualFrequency, Option, SuperParents
from ..kernels import NO_DETECTOR, Addresses, compiled
from ..stats import set_pair_rule
from ._keywords import takes_options
from ._em import add_estep, mixture_posterior, one_dependence_estep
from ._selection import informative_parents
from ._spode_kernel import EVERY_CHILD, NO_LOSS, NO_MORE, NO_TABLE, NO_WEIGHTS, OneDependenceKernel
from ._structure import dependent_pairs
from ._structured import StructuredClassifier

__all__ = ["AODE"]

_EVERY = np.zeros(0, dtype=np.int8)  # no selection: every feature a super-parent and a child


class AODE(OneDependenceKernel, StructuredClassifier):
    """Averaged one-dependence estimators, learned incrementally.

    Every attribute value seen in at least ``m`` events becomes in turn the super-parent of all the
    others, and the one-dependence models (SPODEs) are averaged; with no such parent it predicts as
    naive Bayes. Numeric features are discretised online.

    Parameters
    ----------
    alpha
        Lidstone smoothing, > 0.
    search
        :class:`~stream_nb.SuperParents` (default): ``m``, the frequency limit of a parent value; ``select``,
        the level of selective AODE's G-test (None: every attribute a super-parent); ``drop``, leave the
        others out altogether; ``children``, the level of the pair tests that choose each SPODE's children
        (None: every attribute).
    numeric
        How numeric features are binned: :class:`~stream_nb.MDL` (default),
        :class:`~stream_nb.EqualFrequency` or :class:`~stream_nb.Edges`.
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
    >>> from stream_nb import AODE
    >>> model = AODE()
    >>> stream = [
    ...     ({"colour": "green", "root": "curled", "sound": "dull"}, "good"),
    ...     ({"colour": "dark", "root": "curled", "sound": "dull"}, "good"),
    ...     ({"colour": "dark", "root": "stiff", "sound": "crisp"}, "bad"),
    ...     ({"colour": "light", "root": "stiff", "sound": "crisp"}, "bad"),
    ...     ({"colour": "green", "root": "slightly", "sound": "dull"}, "bad"),
    ... ]
    >>> for x, y in stream:
    ...     model.learn_one(x, y)
    >>> model.predict_proba_one({"colour": "green", "root": "curled", "sound": "dull"})
    {'good': 0.7525, 'bad': 0.2475}

    Notes
    -----
    The docs' *The models* page gives the estimates, *Options* selective AODE, and *Numeric features*
    the discretiser.

    References
    ----------
    Webb, G. I., Boughton, J. R., Wang, Z. (2005). Not so naive Bayes: aggregating one-dependence
    estimators. Machine Learning, 58, 5-24.

    """

    #: The option each of these parameters is when it is None (river keeps a signature's defaults immutable).
    _option_defaults = {"search": SuperParents(), "numeric": MDL(), "missing": EM()}

    _accepts = {"numeric": BINNED, "search": (SuperParents,)}

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
            # past the budget: keep the best super-parents' pairs, or with chosen children the pairs of the
            # strongest dependence (TAN's candidate edges), every attribute staying a super-parent
            set_pair_rule(self._stats, "parents" if self.search.children is None else "edges")
        # under a selection, after its first choice, per feature: 2 a super-parent, 1 a child only, 0 left out
        self._keep = _EVERY
        # with SuperParents(children=...), after its first choice: [p, i] whether i is a child of p's SPODE
        self._children = EVERY_CHILD

    @classmethod
    def _unit_test_params(cls):
        yield {}
        yield {"search": SuperParents(m=5), "numeric": EqualFrequency(bins=3, warmup=20)}  # both discretisers checked
        yield {"search": SuperParents(select=0.05, rebuild_every=50)}
        yield {"search": SuperParents(children=0.05, rebuild_every=50)}

    @property
    def m(self) -> int:
        """The frequency limit of a super-parent value: the :class:`~stream_nb.SuperParents`' ``m``."""
        return self.search.m

    @property
    def rebuild_every(self) -> int:
        """Learned events between two choices of the super-parents (or their children): the
        :class:`~stream_nb.SuperParents`' ``rebuild_every`` under a choice, else 0 (nothing to choose)."""
        chooses = self.search.select is not None or self.search.children is not None
        return self.search.rebuild_every if chooses else 0

    def _early_rebuilds(self) -> int:
        return 0  # the first choice after rebuild_every events: until then, every attribute

    def rebuild(self) -> None:
        """Choose the super-parents now from the current counts (with ``SuperParents(select=...)``; without,
        every attribute is one and nothing changes), and with ``SuperParents(children=...)`` each one's
        children (:func:`~stream_nb.learners._structure.dependent_pairs`)."""
        if self.search.select is not None:
            kept = informative_parents(self._stats.observed(), self.search.select)
            self._keep = np.where(kept, 2, 0 if self.search.drop else 1).astype(np.int8)
        if self.search.children is not None:
            self._children = dependent_pairs(self._stats, self.search.children).astype(np.int8)
        self._rebuilt()

    @property
    def super_parents(self) -> list | None:
        """The features the last choice of selective AODE kept as super-parents, in the store's order
        (None: every feature, without ``SuperParents(select=...)`` or before its first choice)."""
        if not len(self._keep):
            return None
        return [self._stats.features[f] for f in np.flatnonzero(self._keep == 2).tolist()]

    @property
    def children(self) -> dict | None:
        """``{super-parent: [its children]}`` of the last choice of ``SuperParents(children=...)``, the features by
        name in the store's order (None: every attribute a child of every super-parent, without the option or
        before its first choice). A feature new since the choice is a child of every one."""
        if not len(self._children):
            return None
        names = self._stats.features
        return {names[p]: [names[i] for i in np.flatnonzero(row).tolist()] for p, row in enumerate(self._children)}

    def _jll(self, enc):
        s = self._stats
        C = len(s.schema.labels.classes)
        if len(enc.cols) == 0 or not C:
            return self._naive_jll(enc)
        if not s.pairs_sparse:  # (_kernel_dense)
            out = np.empty((1, C))
            self._kernel_one(enc, -1, out, True)
            return out[0]
        return self._sparse_jll(enc.cols[None, :], enc.feats)[0]  # sparse (or selected) pair tables

    def _posterior(self, enc):
        s = self._stats
        if len(enc.cols) == 0 or not self._kernel_dense():
            return super()._posterior(enc)
        out = np.empty((1, s.n_classes))  # normalised as the kernel normalises a run's rows
        self._kernel_one(enc, -1, out)
        return out[0]

    _kernel_modules = ("_spodes", "_aode", "_one")

    def _kernel_block(self, D, dfeats, G, gslots, yc, more, out, learn: bool, decay=None) -> int:
        """Score each row of an encoded block into ``out`` (log posteriors) and, with ``learn``, count each
        labelled row after scoring it, feeding the drift detector first; return the rows done
        (:func:`~stream_nb.kernels._aode.aode_block`; a store that bins its numeric features has no Gaussian
        slot). ``decay``: the rows' weights and smoothing (:func:`~stream_nb.learners._decay_runs.decay_run`)."""
        return self._aode_kernel(D, dfeats, yc, more, out, learn, False, decay)

    def _kernel_one(self, enc, c: int, out: np.ndarray, joint: bool = False) -> bool:
        """``out`` (1, C): log P(c | x) of one encoded event (``joint``: log P(c, x)) by the block kernel on a
        block of one, its arrays by address (:func:`~stream_nb.kernels._one.aode_one`); or, ``c`` >= 0, the
        event counted in class ``c``: a complete one as the block counts it, without scoring it again (its
        prediction did: ``out`` is left as it was), and in the store's
        :meth:`~stream_nb.stats.Stats.counted_twin` if it has one (returned: whether it did). A complete event
        is scored from the kept denominators while they hold, to the last digit as without them
        (:func:`~stream_nb.kernels._spodes.rooted_kept`): a model restored from its state keeps none."""
        s, f = self._stats, self._forget  # (each name read once: river's loop comes here twice an event)
        schema = s.schema
        F = len(schema.features)
        a = self._alpha_given if f is None else self._alpha
        held = self.__dict__.get("_aone")
        current = held is not None and held[1] is s and held[2] == schema.epoch  # addresses hold within an epoch
        cached = current and self._dens_hold(enc.feats, a) is held[0]
        # a complete event learned with no kept denominators in the table: _kernel_arguments makes them
        if not cached and (not current or c >= 0 and len(enc.cols) == F):
            arrays = self._kernel_arguments(enc.cols[None, :], enc.feats, c >= 0)
            dens, cached = arrays[-2:]
            if held is None or held[0] is not dens or held[1] is not s or held[2] != s.epoch:  # (arrays: a new epoch)
                held = self._aone = (dens, s, s.epoch, Addresses(None, tuple(
                    x.reshape(-1, x.shape[-1]) if x.ndim == 3 else x for x in arrays[:-1])).table, arrays)
        if c < 0 or len(enc.cols) != F:
            m = float(self.search.m if f is None else self.search.m * f.inflation)  # (the m of _inflation)
            compiled().aode_one(held[3], enc.cols, enc.feats, c, len(schema.labels.classes), a, m, self._keep,
                                self._children, cached and c < 0, joint, out)
            fine = None
        else:  # complete: counted as the block counts a row it scored
            fine = s.counted_twin(enc)
            compiled().aode_count(held[3], enc.cols, enc.feats, c, a, cached, NO_TABLE if fine is None else fine)
        if c >= 0:
            self._kernel_learned(enc.cols[None, :], enc.feats, self._one_class(c), cached)
        return fine is not None

    def _aode_kernel(self, D, dfeats, yc, more, out, learn: bool, joint: bool, decay=None) -> int:
        """:meth:`_kernel_block`, writing each row's joint log-likelihood with ``joint``."""
        s = self._stats
        *counts, dens, cached = self._kernel_arguments(D, dfeats, learn, decay)
        watch = self._kernel_detector() if learn else NO_DETECTOR
        loss = NO_LOSS if self._decision is None or not watch[0] else np.ascontiguousarray(
            self._decision.matrix(s.classes))
        # under decay each row's smoothing and parent threshold: the given ones times its inflation
        weights, infl, a, m = (NO_WEIGHTS, NO_WEIGHTS, self._alpha, self.m * self._inflation) if decay is None else (
            decay.weight, decay.inflation, self._alpha_given, self.m)
        done = compiled().aode_block(D, dfeats, NO_MORE if more is None else more, yc, weights, infl, learn,
                                     s.n_classes, a, float(m), self._keep, self._children, *counts, dens, cached,
                                     joint, out, loss,
                                     *watch)
        if learn:
            self._kernel_learned(D[:done], dfeats, yc[:done], cached, decay)
        return done

    # ------------------------------------------------------------------ runs

    _run_complete = True  # complete events: every attribute is a parent and a child of every other

    def _run_ready(self) -> bool:
        # under a pair selection the one-event path reads the candidate parents' pairs alone
        return not self.learn_unlabeled and not self._stats.pairs_selected

    def _add_expected(self, enc, c, w, miss):
        s = self._stats
        if s.pairs_selected:  # the E-step would read pairs no longer counted: counted as missing="ignore"
            s.add(enc, c, w)
            return
        add_estep(s, enc, c, w, one_dependence_estep(s.observed(), self._alpha, enc, c, miss))

    def _children_in_use(self) -> np.ndarray:
        """The chosen children (every attribute before the first choice), and under a pair selection only
        those whose pairs the tables count: a pair dropped since the choice has no counts to read."""
        s = self._stats
        if not s.pairs_selected or self.search.children is None:
            return self._children
        held = self.__dict__.get("_in_use")
        if held is not None and held[0] is self._children and held[1] is s.pair_allowed and held[2] is s.pair_edges:
            return held[3]
        F = len(s.features)
        counted = s.pair_mask(np.arange(F))
        K = min(len(self._children), F)
        if len(self._children):
            counted[:K, :K] &= self._children[:K, :K] > 0
        in_use = np.ascontiguousarray(counted, dtype=np.int8)
        self._in_use = (self._children, s.pair_allowed, s.pair_edges, in_use)
        return in_use

    def _sparse_parents(self) -> tuple[bool, np.ndarray]:
        if self.search.children is not None and self._stats.pair_rule == "edges":  # every attribute a super-parent
            selected, allowed = False, np.zeros(0, dtype=bool)
        else:
            selected, allowed = super()._sparse_parents()
        if not len(self._keep):
            return selected, allowed
        keep = self._keep == 2
        if selected:  # and whose pairs the budget's selection counts
            n = min(len(keep), len(allowed))
            keep[:n] &= allowed[:n]
            keep[n:] = False
        return True, keep

    def _scored(self, dfeats: np.ndarray) -> np.ndarray | None:
        """The positions of ``dfeats`` a selection with ``drop`` leaves in the score (None: every one)."""
        K = len(self._keep)
        if not K or not self.search.drop:
            return None
        inside = dfeats < K
        return np.flatnonzero(~inside | (self._keep[np.where(inside, dfeats, 0)] > 0))

    def _sparse_jll(self, D: np.ndarray, dfeats: np.ndarray) -> np.ndarray:
        scored = self._scored(np.asarray(dfeats))
        if scored is None:
            return super()._sparse_jll(D, dfeats)
        return super()._sparse_jll(D[:, scored], np.asarray(dfeats)[scored])

    def _missing_posterior(self, enc, c, miss):
        s = self._stats
        scored = self._scored(enc.feats)
        if scored is not None:  # the attributes left out are no child either
            enc = enc._replace(cols=enc.cols[scored], feats=enc.feats[scored], epoch=-1)
        selected, allowed = self._sparse_parents()
        allowed = np.flatnonzero(allowed).tolist() if selected else None
        return mixture_posterior(s, self._alpha, enc, c, miss, self.m * self._inflation, allowed, self._naive_jll(enc),
                                 self._children_in_use())

    def _jll_many(self, D, dfeats, G, gslots):
        s = self._stats
        if not D.shape[1] or not s.n_classes:
            return self._naive_jll_many(D, dfeats, G, gslots)
        if not self._kernel_dense():  # sparse pair tables
            return self._sparse_jll(D, dfeats)
        out = np.empty((len(D), s.n_classes))
        self._aode_kernel(np.ascontiguousarray(D), dfeats, np.full(len(D), -1), None, out, False, True)
        return out

    # ------------------------------------------------------------------ state

    def _extra_state(self):
        if self.search.select is None and self.search.children is None:  # the layout it always had
            return super()._extra_state()
        arrays = {"super_parents": self._keep.copy()} if self.search.select is not None else {}
        if self.search.children is not None:
            arrays["children"] = self._children.copy()
        return arrays, {"since_rebuild": self._since_rebuild, "n_rebuilds": self.n_rebuilds}

    def _load_extra_state(self, arrays, meta):
        if "super_parents" in arrays:
            self._keep = np.asarray(arrays["super_parents"])
        if "children" in arrays:
            self._children = np.ascontiguousarray(arrays["children"])
        if "super_parents" in arrays or "children" in arrays:
            self._since_rebuild, self.n_rebuilds = meta.get("since_rebuild"), meta.get("n_rebuilds")

    def _check_loaded(self):
        """A selection's state: whether each feature is a super-parent, one per feature at most, and only under
        ``SuperParents(select=...)``."""
        keep = self._keep
        if len(keep) and (keep.dtype != np.int8 or keep.ndim != 1 or len(keep) > len(self._stats.features)
                          or not np.isin(keep, (0, 2) if self.search.drop else (1, 2)).all()
                          or self.search.select is None):
            raise ValueError(f"super_parents: expected per feature (at most {len(self._stats.features)}) 2 (kept) or "
                             f"{0 if self.search.drop else 1} (not), and only under a selection, got {keep!r:.80} with "
                             f"search={self.search!r}")
        ch, F = self._children, len(self._stats.features)
        if len(ch) and (ch.dtype != np.int8 or ch.ndim != 2 or ch.shape[0] != ch.shape[1] or ch.shape[0] > F
                        or not np.isin(ch, (0, 1)).all() or (ch != ch.T).any() or self.search.children is None):
            raise ValueError(f"children: expected a symmetric (K, K) int8 matrix of 0 and 1 with K at most {F}, and "
                             f"only with SuperParents(children=...), got {ch!r:.80} with search={self.search!r}")
        super()._check_loaded()

