"""Models with a structure (TAN's tree, SPODE's super-parent, KDB's parents) rebuilt from running counts."""

from __future__ import annotations

import abc

from .._checks import is_integer

from ._base import BayesClassifier
from ._structure import dependence_shown

__all__ = ["StructuredClassifier"]


class StructuredClassifier(BayesClassifier):
    """A classifier whose structure is rebuilt from the running counts on a schedule of
    learned events and on :meth:`rebuild`.

    The schedule starts early and settles at ``rebuild_every`` (see :meth:`rebuild_interval`):
    *early* rebuilds after ``warmup`` learned events and then each time the count doubles
    while it stays below ``rebuild_every``, then *regular* ones every ``rebuild_every``
    events. With the defaults (warmup 100, rebuild_every 1000): after 100, 200, 400, 800
    events, then 1000, 2000, 3000, ... So a short stream gets a structure too.

    An early rebuild takes place only when the counts show a dependence the structure can
    use (:func:`~stream_nb.learners._structure.dependence_shown` by the subclass's
    ``_early_rule``); otherwise it keeps the structure as it is (naive Bayes before the first
    one) and still counts in ``n_rebuilds``, so the schedule goes on. TAN with its default
    Bayesian tree score, and SPODE, ask the G-test (``"g"``): is some pair of attributes
    dependent given the class, at level 0.01 shared among the pairs? Their structure choice then
    weighs what an edge costs (the Bayesian score charges an edge for its cells; SPODE picks its
    super-parent by prequential log loss). KDB, and TAN with ``tree_score="cmi"``, whose choice
    charges nothing for cells, ask the BIC (``"bic"``): is some such dependence worth its
    parameters? Measured prequentially (``bench/discretise.py --part early_rebuilds``), the
    test lifts TAN and SPODE by 1.2 points on river's Bananas, whose dependence it finds at 200
    events where the BIC waits until 800, and by 0.4 to 0.7 on RandomTree and ImageSegments,
    and costs them nothing anywhere (with equal-frequency bins, 0.4 points on Hyperplane,
    ``--part tree_score``); under it KDB (k=2) would lose 10.0 points on ImageSegments (19
    attributes, 7 classes) and TAN with CMI 11.8, their early structures hung on sparse tables.
    On a stream whose attributes are independent given the class (naive Bayes' own
    assumption, as in LED) no early rebuild takes place, and from ``rebuild_every`` on
    everything is as if there had been no early one. ``rebuild_every=0`` rebuilds only on
    ``rebuild()``.

    A subclass provides, beyond :class:`~stream_nb.learners.BayesClassifier`'s hooks:

    - :meth:`rebuild`: choose the structure from the current counts, then call
      :meth:`_rebuilt`;
    - a ``rebuild_every`` parameter, checked by calling :meth:`_setup_rebuilds`
      from ``__init__``;
    - optionally ``_early_rule``, the test an early rebuild waits for (``"g"``, or ``"bic"``).

    Learning then rebuilds on that schedule (a batch stops at the
    next rebuild, so ``learn_many`` rebuilds where ``learn_one`` would), and a
    merge rebuilds from the merged counts when the model had been built (unless
    ``_rebuild_after_merge`` is False).
    """

    #: Rebuild after a merge (when the model had been built), from the merged counts.
    _rebuild_after_merge = True
    #: the test an early rebuild waits for (:func:`~stream_nb.learners._structure.dependence_shown`)
    _early_rule = "g"
    #: ``n_rebuilds`` when the schedule last started (0; after a switch to fresh counts, see ``_switched``).
    _rebuild_origin = 0

    def _setup_rebuilds(self) -> None:
        """Start counting learned events toward the next rebuild (``rebuild_every`` is checked where it is declared)."""
        self._since_rebuild = 0
        self.n_rebuilds = 0

    @abc.abstractmethod
    def rebuild(self) -> None:
        """Rebuild the structure now from the current counts (then call :meth:`_rebuilt`)."""

    def _rebuilt(self) -> None:
        """Record a rebuild: the count toward the next one starts again."""
        self._since_rebuild = 0
        self.n_rebuilds += 1

    def _early_rebuilds(self) -> int:
        """How many early rebuilds the schedule has: the doublings of ``warmup`` below ``rebuild_every``."""
        w, r = self.warmup, self.rebuild_every
        cached = getattr(self, "_early_cache", None)
        if cached is None or cached[:2] != (w, r):
            k = 0
            while r and (w << k) < r:
                k += 1
            cached = self._early_cache = (w, r, k)
        return cached[2]

    def rebuild_interval(self) -> int:
        """Learned events from the last rebuild (or the start) to the next one; 0: no automatic rebuild.

        It depends on the number of rebuilds so far only, so a restored or merged model keeps its
        place in the schedule (see the class docstring).

        >>> from stream_nb import MDL, TAN, Tree
        >>> model = TAN(numeric=MDL(warmup=100), search=Tree(rebuild_every=1000))
        >>> intervals = []
        >>> for model.n_rebuilds in range(7):
        ...     intervals.append(model.rebuild_interval())
        >>> intervals   # rebuilds after 100, 200, 400, 800 (early), 1000, 2000, 3000 learned events
        [100, 100, 200, 400, 200, 1000, 1000]
        """
        r, w, k = self.rebuild_every, self.warmup, self.n_rebuilds - self._rebuild_origin
        early = self._early_rebuilds()
        if k < early:
            return w if k == 0 else w << (k - 1)
        if k == early:
            return r - (w << (early - 1)) if early else r
        return r

    def _learned(self, n: int) -> None:
        super()._learned(n)  # forgetting first: the structure is built from the counts that remain
        self._since_rebuild += n
        key = (self.n_rebuilds, self._rebuild_origin)  # what the interval depends on, the options aside (frozen)
        held = self.__dict__.get("_interval")
        if held is None or held[0] != key:
            held = self._interval = (key, self.rebuild_interval() if self.rebuild_every else 0)
        if held[1] and self._since_rebuild >= held[1]:
            self._settle()  # decayed counts renormalised: a structure reads counts, not only ratios
            if (self.n_rebuilds - self._rebuild_origin < self._early_rebuilds()
                    and not dependence_shown(self._stats, self._early_rule)):
                self._since_rebuild = 0  # an early rebuild with nothing to build on: keep the structure
                self.n_rebuilds += 1
            else:
                self.rebuild()

    def _batch_limit(self) -> int:
        # a batch stops at the next rebuild, so that learn_many rebuilds where learn_one would
        own = max(1, self.rebuild_interval() - self._since_rebuild) if self.rebuild_every else 1 << 62
        return min(own, super()._batch_limit())

    def _switched(self) -> None:
        # new counts after a detected drift: rebuild from them, and restart the early rebuilds
        if self.n_rebuilds:
            self._settle()
            self.rebuild()
        self._rebuild_origin, self._since_rebuild = self.n_rebuilds, 0

    def _merged(self) -> None:
        if self._rebuild_after_merge and self.n_rebuilds:
            self._settle()
            self.rebuild()

    def _check_loaded(self) -> None:
        super()._check_loaded()
        since, n = self._since_rebuild, self.n_rebuilds
        if not is_integer(since) or since < 0 or (
                self.rebuild_every and since > self.rebuild_every):
            raise ValueError(f"since_rebuild: expected an integer from 0 to rebuild_every={self.rebuild_every}, "
                             f"got {since!r:.60}")
        if not is_integer(n) or n < 0:
            raise ValueError(f"n_rebuilds: expected an integer >= 0, got {n!r:.60}")
