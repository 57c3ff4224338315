"""Two-layer supervised discretisation that keeps learning (in the spirit of PiD, Gama and Pinto 2006).

:class:`TwoLayerStats` is a :class:`~stream_nb.stats.Stats` (the *coarse* layer,
the one the models read, encode with and learn into) that also keeps a second,
*fine* store (``fine``) of the same kind over the same events:

- **fine layer**: every numeric feature in ``fine_bins`` equal-frequency bins
  whose edges are chosen from its first ``warmup`` values and then never move,
  so its counts keep their meaning: class counts, pair counts (and t-way
  counts for KDB), the observed-only twin under EM, all as the store keeps them;
- **coarse layer**: the cut points Fayyad and Irani's MDL criterion
  (:func:`~stream_nb.stats.discretiser._mdl.mdl_cuts`) keeps over the fine bins' observed
  class counts, and the fine boundaries nearest the ``bins`` equal-frequency
  quantiles where they tell more of the class, alone or with another feature
  (a G-test on the fine counts, :mod:`stream_nb.stats.discretiser._joint`). MDL alone judges
  each feature by itself, and can leave one that informs only jointly with
  another, as in river's Bananas, in one bin: holdout TAN there 0.7551 with
  MDL's cuts alone, 0.8596 with the quantiles kept too (``bench/holdout.py``);
  kept where they tell nothing, the quantiles cost AODE 6 points on Agrawal
  (0.7564 beside 0.8184). Every coarse edge is a fine edge, so every coarse count is the
  exact sum of fine cells; whenever the chosen cut points change, the coarse
  store is derived again from the fine one (:meth:`TwoLayerStats.rediscretise`).

The cut points are chosen again every ``max(warmup, n / 8)`` learned events
(and after a merge), always before the event that follows, whichever path
learns the events (one at a time, or in runs through the kernels): the model is
then the same function of the stream on every path.

Nothing learned during a feature's warm-up is lost: an event whose numeric
value could not be binned yet (its feature's fine edges did not exist) is kept
in a backlog, and once the edges exist its value is counted after all: its
counts without the value are taken back and its counts with it added, so the
store holds what it would hold had the edges existed from the start. (The
backlog keeps at most ``10 * warmup`` events.) An event EM learned with
expected counts waits too: once counted, its value joins each completion with
the completion's weight, and the observed-only twin takes it exactly as
``missing="ignore"`` does. The store holds these events in a part of its own,
``waiting`` (a :class:`~stream_nb.stats.discretiser.Waiting`, see
:mod:`stream_nb.stats.discretiser._waiting`).

A feature of integers that a fraction turns numeric (a promotion) enters the
fine layer as it would have had it been numeric from the start: while it has
fewer than ``warmup`` values the store logs the events holding one (the
``candidates``, learned one at a time), and a promotion makes them backlog
entries whose values wait for the fine edges, its values so far being the
edges' first warm-up values; with ``warmup`` values or more, a promotion cuts
the fine bins from all of them and moves every count into its bin, exactly.

Under EM the expected counts of a missing coarse value go, in the fine layer,
to one fine bin of that coarse bin (the most frequent): the coarse sums stay
exact, only the place inside the coarse bin is a choice.

Features with ``bin_edges`` keep exactly those edges in both layers.

A run of events (the vectorised path) is encoded in both layers, each in its own
columns (:meth:`TwoLayerStats.encode_run`); the fine rows wait until the run is
learned (:meth:`TwoLayerStats.add_fine_run`). While no feature is binned the
layers are one and the fine layer keeps no pair tables of its own: the store
holds a part, ``sharing`` (a :class:`~stream_nb.stats.budget.SharedPairs`), that
gives it a copy when it may need one (:meth:`TwoLayerStats.own_pairs`).
"""

from __future__ import annotations

import copy
from itertools import repeat
from operator import attrgetter

import numpy as np

from ..._checks import is_integer
from ...exceptions import ConfigError, MergeError, UnlearnError
from ...kernels import Addresses, compiled
from ..discretiser import Waiting, coarse_edges, coarse_state
from ..discretiser import Discretiser
from ..forgetting import follow_promotions, follow_waiting
from ..budget import SharedPairs
from ..schema import few_overflow, index_maps
from ._store import Stats
from ..values import BINNED, Encoded, numeric_value

__all__ = ["CoarseDiscretiser", "TwoLayerStats"]

#: what a store keeps of its own when the coarse layer is derived again
_OWN = ("fine", "fine_bins", "waiting", "n_events", "next_choice", "stale", "_pending",
        "_pending_exp", "_pending_rows", "_pending_labeled", "_run_mirrored", "journal", "selection",
        "selection_peer", "sharing")

#: Empty pair tables: a fine layer whose pair counts are its coarse layer's counts no pairs (count_rows).
_NO_PAIRS = np.zeros((0, 0, 0))



class CoarseDiscretiser(Discretiser):
    """A coarse layer's discretiser: its edges come from the fine layer, never from a warm-up of its own."""

    __slots__ = ()

    def bin_or_buffer(self, x: float) -> int | None:
        return None if self.edges is None else self.bin(x)


class TwoLayerStats(Stats):
    """A count store whose numeric features are cut by MDL over a fine layer it also keeps.

    Parameters are :class:`~stream_nb.stats.Stats`'s (``numeric="bins"``),
    plus ``fine_bins``, the fine layer's bins per numeric feature. ``bins``:
    the coarse layer also keeps the fine boundaries nearest the ``bins``
    equal-frequency quantiles (1: MDL's cuts alone) where a G-test finds them
    informative alone or with another feature, so that a feature whose class
    information lies in its interactions (which a univariate criterion cannot
    see) keeps some bins, and one of noise does not.

    Examples
    --------
    >>> s = TwoLayerStats(pairs=False, numeric="bins", bins=1, warmup=20, fine_bins=8)
    >>> for i in range(40):
    ...     x = float(7 * i % 40)
    ...     s.learn_one({"x": x}, "low" if x < 20 else "high")
    >>> s.fine.cut_points()
    {'x': [4.75, 8.5, 13.125, 17.0, 22.75, 28.5, 33.875]}
    >>> s.cut_points()
    {'x': [17.0]}

    All 40 values are counted, the warm-up's 20 too, once the fine edges existed (the class
    boundary, 20, falls inside the fine bin [17, 22.75): the nearest cut MDL can make is 17):

    >>> s.counts()["value_count"]["x"]
    {1: {'low': 3.0, 'high': 20.0}, 0: {'low': 17.0, 'high': 0.0}}
    """

    def __init__(self, *, fine_bins: int = 64, **kwargs):
        super().__init__(**kwargs)
        if self.numeric != "bins":
            raise ConfigError(f"numeric: a two-layer store discretises, expected 'bins', got {self.numeric!r}")
        if not is_integer(fine_bins) or fine_bins < 2:
            raise ConfigError(f"fine_bins: expected an integer >= 2, got {fine_bins!r}")
        self.fine_bins = int(fine_bins)
        # the fine layer's t-way table is the larger one: its bound is the one that binds (it learns
        # each event first, so an event it refuses changes neither layer)
        self.fine = Stats(**{**kwargs, "bins": self.fine_bins})
        self.fine.schema.set_few_max(self.bins)  # both layers count a float feature by value while it has few values
        self.schema.bin_with(CoarseDiscretiser)  # its binned features take their edges from the fine layer
        # events with values to count once the fine edges exist, or that a promotion could make wait
        self.waiting = Waiting(self.warmup)
        self._pending_exp = None  # what EM added to the fine layer for the event being learned
        self.n_events = 0  # events learned (the schedule of the cut points)
        self.next_choice = 0  # choose the cut points again before the event that reaches this count
        self.stale = False  # the coarse layer must be derived again (new fine edges, a merge)
        self._pending = None  # (fine encoding, values not binned yet) of the event being learned
        self._pending_rows = None  # (fine add_many arguments, rows) of the run being learned or unlearned
        self._pending_labeled = None  # of a run: the labeled rows up to each of its rows (cut_run)
        self._fine_warm = True  # some fine feature may still be in warm-up
        self.sharing = SharedPairs()  # whether the fine layer holds pair tables of its own (a part, _shared_pairs.py)
        self.share_pairs()  # no feature binned yet: the fine pair counts are the coarse ones

    # ------------------------------------------------------------------ the pair tables, held once while the layers are one

    shared_pairs = property(attrgetter("sharing.shared"),
                            doc="Whether the fine layer holds no pair tables: its pair counts are this layer's.")

    def share_pairs(self) -> None:
        """Drop the fine layer's pair tables if the layers are one (:meth:`SharedPairs.share`)."""
        self.sharing.share(self, self.fine)

    def own_pairs(self, for_good: bool = False) -> None:
        """Give the fine layer its own copy of the pair tables it shares (:meth:`SharedPairs.own`);
        ``for_good``: never share them again (a store that forgets)."""
        self.sharing.own(self, self.fine, for_good)

    def lent_pairs(self):
        """The fine layer reads this layer's pair tables as its own for a while (:meth:`SharedPairs.lent`)."""
        return self.sharing.lent(self, self.fine)

    def may_bin(self, x: dict) -> bool:
        """Whether learning event ``x`` may bin a feature in the fine layer (a float value, a value of a numeric
        feature counted by value, which may promote it, or a new feature of a declared type or with
        ``bin_edges``): its pair tables must then be its own first.

        The answer depends on ``x``'s keys and the types of its values alone (and on the fine layer's schema,
        which bumps its epoch when it changes): kept for the usual event's shape (``schema/_shapes.py``),
        so that an event of that shape is not read value by value again."""
        shape = self.schema.usual_shape
        if shape is not None and shape.values_of(x) is not None:
            held = self._cache.get("may_bin")
            if held is None or held[0] is not shape or held[1] != self.fine.epoch:
                held = self._cache["may_bin"] = (shape, self.fine.epoch, self._may_bin(x))
            return held[2]
        return self._may_bin(x)

    def _may_bin(self, x: dict) -> bool:
        """:meth:`may_bin`, reading ``x``."""
        if any(map(isinstance, x.values(), repeat(float))):  # a loop in C: no Python frame per value
            return True
        index, few = self.fine.feature_index, self.fine.few
        if few and any(index.get(k, -1) in few for k in x):
            return True
        if not (self.types or self.bin_edges) or x.keys() <= index.keys():  # no feature new to the fine layer
            return False
        return any(k not in index and (k in self.types or k in self.bin_edges) for k in x)

    # ------------------------------------------------------------------ schema mirrored

    def _add_class(self, y) -> int:
        c = super()._add_class(y)
        if y not in self.fine.class_index:
            self.fine.class_of(y)
        return c

    # ------------------------------------------------------------------ encoding

    def encode_learn(self, x: dict, y=None, known: Encoded | None = None) -> Encoded:
        fine = self.fine
        if self.shared_pairs and self.may_bin(x):
            self.own_pairs()
        enc = self.reusable(x, known) if self._mirrors() else None
        if enc is not None:  # nothing new in either layer, and the fine columns are the coarse ones
            self._pending = (enc, self._unbinned(x, enc) if self._fine_warm else (),
                             bool(fine.from_int) and self.waiting.young(fine, enc))
            self._pending_exp = None
            self.n_events += 1
            return enc
        epoch = fine.epoch
        # the fine layer first: it checks x as the coarse one does, and a t-way table too large
        # there is refused before either layer changes (the coarse one has fewer values)
        ints = set(fine.from_int)
        fenc = fine.encode_learn(x, y)
        enc = super().encode_learn(x, y, known)
        unready = ()
        if self._fine_warm or fine.epoch != epoch:
            unready = self._unbinned(x, fenc)
        if fine.epoch != epoch:
            if ints - fine.from_int:
                self.waiting.follow_promotion(fine)
            self._fine_changed()
        self._pending = (fenc, unready, bool(fine.from_int) and self.waiting.young(fine, fenc))
        self._pending_exp = None
        self.n_events += 1
        return enc

    def _mirrors(self) -> bool:
        """Whether the fine layer numbers every feature, value and class as this one does and keeps no
        t-way table (:meth:`_mirrored`): an event's encoding is then the same in both."""
        held = self._cache.get("mirrors")
        key = (self.epoch, self.fine.epoch)
        if held is None or held[0] != key:
            held = self._cache["mirrors"] = (key, not self.fine.tuples and self._mirrored())
        return held[1]

    def _unbinned(self, x: dict, fenc: Encoded) -> list:
        """The numeric values of ``x`` the fine layer could not bin yet (its warm-up), as (feature, value)."""
        fine, out = self.fine, []
        seen = set(fenc.feats.tolist())
        for name, v in x.items():
            f = fine.feature_index.get(name)
            if f is None or fine.kinds[f] != BINNED or f in seen:
                continue
            fv = numeric_value(name, v)
            if fv is not None:
                out.append((f, fv))
        return out

    def _fine_changed(self) -> None:
        """The fine schema changed: new fine edges make the coarse layer stale; coarse
        discretisers a promotion made are turned into coarse ones."""
        fine = self.fine
        warm = False
        for f, d in enumerate(fine.disc):
            if d is None:
                continue
            if d.edges is None:
                warm = True
            elif f < len(self.disc) and self.kinds[f] == BINNED and self.disc[f].edges is None:
                self.stale = True
        for f, d in enumerate(self.disc):
            if d is not None and type(d) is Discretiser and self.features[f] not in self.bin_edges:
                # a promotion: still in warm-up (no edges), the coarse layer already dropped what the
                # fine one dropped; with edges, the cut points are chosen from the fine counts
                self._set_discretiser(f, CoarseDiscretiser(self.bins, self.warmup, d.edges))
                self.stale = self.stale or d.edges is not None
        self._fine_warm = warm or self.stale

    def bin_floats_at_once(self) -> None:
        super().bin_floats_at_once()
        self.fine.bin_floats_at_once()
        self.own_pairs(for_good=True)  # its captures and scaled counts are the fine layer's: its own pair tables

    def count_layer(self) -> Stats:
        return self.fine  # the coarse counts are sums of its cells, derived again after a change

    def counts_changed(self) -> None:
        self._derive(self._current_edges())

    def scale_waiting(self, factor: float) -> None:
        self.waiting.scale(factor)

    def learn_limit(self) -> int:
        if self.waiting.has_young(self.fine):
            return 1  # events holding a young feature of integers are logged one by one (candidates)
        if self.next_choice > self.n_events and self._choice_idle():
            return super().learn_limit()  # a run passes the choices, made on their schedule (add_fine_run)
        return min(max(1, self.next_choice - self.n_events), super().learn_limit())

    def _choice_idle(self) -> bool:
        """Whether choosing the cut points would only move the schedule on while a run of plain events is
        learned: the fine layer bins no feature (no edges to choose from), nothing waits for its edges, the
        coarse layer is not stale, and the layers share their pair tables already (the choice's
        :meth:`share_pairs` does nothing). A plain event changes none of these (a run stops at a new feature
        or a value to bin), nor does a store that forgets share its tables, so the model's own settling
        (:meth:`~stream_nb.learners.BayesClassifier._settle`) does nothing there either."""
        return (self.sharing.shared and not self.stale and not self.waiting.backlog and not self.waiting.candidates
                and all(d is None for d in self.fine.disc))

    def _choice_after(self, n: int) -> int:
        """When the cut points are chosen next after a choice at ``n`` events: ever more rarely."""
        return n + max(self.warmup, n // 8)

    def _pass_idle_choices(self, before: int) -> None:
        """The choices a run learned from ``before`` events on passed (:meth:`learn_limit`), made as
        :meth:`rediscretise` makes each at the event that reaches ``next_choice``: their schedule is all they
        change, so the store is the one that runs cut at each choice leave."""
        if before < self.next_choice <= self.n_events and self._choice_idle():
            while self.next_choice <= self.n_events:
                self.next_choice = self._choice_after(self.next_choice)

    # ------------------------------------------------------------------ runs, encoded in both layers
    # The models score a run on this layer's columns; the fine layer, whose cells this layer's counts are
    # sums of, learns the same rows in its own columns. A labeled event with a categorical value never seen
    # stays in its run when both layers hold the value without growing a table: each layer registers it, in
    # the order one event at a time would, once the run is learned (:meth:`register_run_values`).

    #: Whether the last run's fine rows are its coarse rows (:meth:`_mirrored` when it was encoded).
    _run_mirrored = False

    def encode_run(self, xs: list, ys: list, start: int, complete: bool, limit: int, unseen: bool = False,
                   new_values: bool = False):
        limit = min(limit, self.learn_limit())
        self.fine.run_new = None
        stop, D, G, yc = super().encode_run(xs, ys, start, complete, limit, unseen, new_values)
        self._pending_rows = None
        self._run_mirrored = False
        if stop > start:  # (a run of one: a compiled kernel takes it)
            if self._mirrored():  # the fine layer would encode the run as this one did
                fD, fG, fyc = D, G, yc
                self._run_mirrored = True
            else:
                fstop, fD, fG, fyc = self.fine.encode_run(xs, ys, start, complete, stop - start, unseen, new_values)
                if fstop < stop:  # a fine bin never seen yet (or no room for a new value): the run stops there
                    stop, D, G, yc = fstop, D[: fstop - start], G[: fstop - start], yc[: fstop - start]
            keep = fyc >= 0
            self._pending_rows = (fD[keep], np.arange(fD.shape[1]), fG[keep], np.arange(fG.shape[1]))
            self._pending_labeled = np.cumsum(keep)  # labeled rows up to each row of the run
        return stop, D, G, yc

    def _mirrored(self) -> bool:
        """Whether the two layers are one: no feature is binned (a categorical stream) and both number the
        same features, values and classes alike, so an event's columns are the same in both."""
        fine = self.fine
        return (BINNED not in self.kinds and fine.features == self.features and fine.kinds == self.kinds
                and fine.value_keys == self.value_keys and fine.classes == self.classes)

    def cut_run(self, n: int) -> None:
        if self._pending_rows is None:
            return
        m = int(self._pending_labeled[n - 1]) if n > 0 else 0
        fD, fdfeats, fG, fgslots = self._pending_rows
        self._pending_rows = (fD[:m], fdfeats, fG[:m], fgslots)

    def add_fine_run(self, yc: np.ndarray, w=None, rows: tuple | None = None) -> None:
        """Count in the fine layer the rows set aside for it (by :meth:`encode_run`),
        of classes ``yc`` and weights ``w``: :meth:`add_many`'s second half, and all that is left to do
        once a compiled kernel counted a run in this layer."""
        if rows is not None:  # one event's fine columns and features (counted_one), no Gaussian
            fD, fdfeats, fG, fgslots = rows[0], rows[1], np.empty((1, 0)), rows[1][:0]
        else:
            fD, fdfeats, fG, fgslots = self._pending_rows
            self._pending_rows = None
        fine = self.fine
        shared = self.shared_pairs  # (its pair counts are this layer's, which the kernel counted: no pairs)
        if (w is None and self.journal is None and (fine.pairs or shared) and not fine.tuples
                and not fine.pairs_sparse and not fine.keeps_observed and not fG.shape[1]):
            # what fine.add_many adds, row by row in compiled code (whole weights: exact in any order), with
            # no matrix product for a BLAS thread to spin on
            pairs = (_NO_PAIRS, _NO_PAIRS) if shared else (fine.pair_count, fine.pair_feat)
            compiled().count_rows(fD, fdfeats, yc, True, fine.class_count, fine.value_count, fine.feat_count, *pairs)
            fine.epoch += rows is None  # (one event: as Stats.add, its version alone)
        else:
            self._journal_fine(fine.add_many, fD, fdfeats, fG, fgslots, yc, w)
        if rows is None:
            before, self.n_events = self.n_events, self.n_events + len(yc)
            self._pass_idle_choices(before)

    def registers_in_runs(self) -> bool:
        # both layers hold the new values: neither keeps a t-way table or sparse pair tables
        fine = self.fine
        return not (self.tuples or fine.tuples or self.pairs_sparse or fine.pairs_sparse)

    def _run_value_room(self) -> int:
        return min(super()._run_value_room(), self.fine._run_value_room())

    def register_run_values(self, n: int) -> None:
        """Register the new values of the run's first ``n`` rows in both layers, each in its order (a
        mirrored run's fine layer takes the coarse layer's values, in the same columns)."""
        new = self.run_new
        fine = self.fine
        if self._run_mirrored:
            fine.run_new = new
        registered = fine.run_new is not None
        fine.register_run_values(n)
        super().register_run_values(n)
        if registered:
            self._fine_changed()

    # ------------------------------------------------------------------ adding, mirrored to the fine layer

    def learn_one(self, x: dict, y, w: float = 1.0) -> None:
        super().learn_one(x, y, w)
        self.settle()

    def add(self, enc: Encoded, c: int, w: float = 1.0) -> None:
        super().add(enc, c, w)
        self._journal_fine(self.fine.add, self._pending[0], c, w)
        self._wait(c, w, None)

    def counted_one(self, c: int, w: float, twin: bool = False) -> None:
        fenc, fine = self._pending[0], self.fine
        if twin:  # the kernel counted it here too (counted_twin)
            fine.version += 1
        elif self._counted_in_kernel(fenc, w):
            self.add_fine_run(np.array([c]), rows=(fenc.cols[None, :], fenc.feats))  # the compiled row count
            fine.version += 1
        else:
            self._journal_fine(fine.add, fenc, c, w)
        self._wait(c, w, None)

    def _counted_in_kernel(self, fenc: Encoded, w: float, shared: bool = False) -> bool:
        """Whether the fine layer may count event ``fenc`` (weight ``w``) with a compiled row count: pair
        tables kept dense (``shared``: or its coarse layer's, which the kernel counts once), nothing else
        (t-way tables, the observed-only twin, Gaussians, a journal)."""
        fine = self.fine
        return w == 1.0 and (fine.pairs or (shared and self.shared_pairs)) and not (fine.pairs_sparse or fine.tuples or fine.keeps_observed
                                                or len(fenc.gslots) or self.journal is not None)

    def counted_twin(self, enc: Encoded):
        fine = self.fine
        if self._pending is None or self._pending[0] is not enc:
            return None  # (the fine columns are the coarse ones only when encode_learn found them so)
        held = self._cache.get("twin")
        if held is None or held[0] is not fine or held[1] != fine.epoch:  # (its arrays: a new epoch)
            # the pair tables shared with this layer (_shared_pairs.py) are counted once, by the kernel's own
            none = np.zeros((0, 0))
            pairs = (none, none) if self.shared_pairs else (fine.pair_count, fine.pair_feat)
            arrays = (fine.class_count, fine.value_count, fine.feat_count) + pairs
            held = self._cache["twin"] = (fine, fine.epoch, Addresses(None, tuple(
                x.reshape(-1, x.shape[-1]) if x.ndim == 3 else x for x in arrays)).table, arrays)
        return held[2] if self._counted_in_kernel(enc, 1.0, shared=True) else None

    def add_observed(self, enc: Encoded, c: int, w: float = 1.0) -> None:
        super().add_observed(enc, c, w)
        self._journal_fine(self.fine.add_observed, self._pending[0], c, w)
        exp, self._pending_exp = self._pending_exp, None
        if exp is not None:  # the M-step's last call: the event's expected counts are known
            if exp[0] == "many":
                exp = ("many", exp[1], exp[2], exp[3] / w if w else exp[3])
            self._wait(c, w, exp)

    def add_expected(self, c: int, w: float, u, m, feats_u, J=None) -> None:
        super().add_expected(c, w, u, m, feats_u, J)
        fu = self._fine_columns(u, feats_u)
        self._journal_fine(self.fine.add_expected, c, w, fu, m, feats_u, J)
        self._pending_exp = ("expected", fu, np.asarray(m, dtype=float), np.asarray(feats_u, dtype=np.int64))

    def add_many(self, D, dfeats, G, gslots, yc, w=None, observed: bool = True) -> None:
        super().add_many(D, dfeats, G, gslots, yc, w, observed)
        if not observed:  # completions of the event being learned (KDB's M-step)
            fD = np.stack([self._fine_columns(row, dfeats) for row in D]) if len(D) else D
            self._journal_fine(self.fine.add_many, fD, dfeats, G, gslots, yc, w, observed=False)
            self._pending_exp = ("many", fD, np.asarray(dfeats, dtype=np.int64),
                                 np.ones(len(yc)) if w is None else np.asarray(w, dtype=float))
            return
        self.add_fine_run(yc, w)

    def _wait(self, c: int, w: float, exp) -> None:
        """The event being learned (of class ``c``, weight ``w``, EM part ``exp``) waits if a value of it
        must (:meth:`Waiting.wait`); a receipt journals the entry by its key."""
        fenc, unready, young = self._pending
        if not (unready or young):
            return  # nothing of it can wait (the usual event, once the stream is warm)
        e = self.waiting.wait(fenc, unready, young, c, w, exp, keyed=self.journal is not None)
        if e is not None:
            self.journal.append(("waiting", e))

    def _fine_columns(self, u: np.ndarray, feats_u: np.ndarray) -> np.ndarray:
        """The fine columns standing for coarse columns ``u`` (of features ``feats_u``) of the event
        being learned: its own fine column for an observed feature, else the coarse bin's most
        frequent fine bin (a categorical value is its own column in both layers)."""
        fu = self._representatives()[u]
        fenc = self._pending[0]
        for col, f in zip(fenc.cols.tolist(), fenc.feats.tolist()):
            at = np.flatnonzero(feats_u == f)
            if len(at) == 1:
                fu[at] = col
        return fu

    def _representatives(self) -> np.ndarray:
        key = (self.epoch, self.fine.epoch, self.fine.version)
        cache = self._cache.get("representatives")
        if cache is not None and cache[0] == key:
            return cache[1]
        fine, V = self.fine, len(self.value_keys)
        rep = np.zeros(V, dtype=np.int64)
        total = fine.value_count[: fine.n_classes].sum(0)
        for f in range(len(self.features)):
            vals = self.values[f]
            if not vals:
                continue
            if self.kinds[f] != BINNED:
                for key, col in vals.items():
                    rep[col] = fine.values[f].get(key, 0)
                continue
            bounds = self._boundaries(f)
            best: dict = {}
            for key, fcol in fine.values[f].items():
                ckey = int(np.searchsorted(bounds, key, side="right"))
                if ckey not in best or total[fcol] > total[best[ckey]]:
                    best[ckey] = fcol
            for key, col in vals.items():
                rep[col] = best.get(key, 0)
        self._cache["representatives"] = (key, rep)
        return rep

    def _boundaries(self, f: int) -> np.ndarray:
        """Fine-bin boundaries of feature ``f``'s coarse bins: fine bin ``k`` is in coarse bin
        ``searchsorted(boundaries, k, side="right")``."""
        fe, ce = self.fine.disc[f].edges, self.disc[f].edges
        if ce is None or fe is None or not len(ce):
            return np.empty(0, dtype=np.int64)
        return np.searchsorted(fe, ce, side="left") + 1

    # ------------------------------------------------------------------ choosing the cut points

    def recut_due(self) -> bool:
        return self.n_events >= self.next_choice or self.stale

    def settle(self) -> None:
        """Called when a learning step is over: choose the cut points again when they are due
        (every ``max(warmup, n / 8)`` events) or when new fine edges exist."""
        if not self.recut_due():
            return
        self.rediscretise(force=self.stale)

    def rediscretise(self, force: bool = True) -> bool:
        """Count the backlog the fine edges now allow, choose the cut points again, and derive the
        coarse layer from the fine one if they changed (always, with ``force``). Returns whether it derived."""
        self._replay()
        force = force or self.stale
        edges, changed = {}, False
        for f, d in enumerate(self.fine.disc):
            if d is None or d.edges is None:
                continue
            e = d.edges if self.features[f] in self.bin_edges else self._mdl_edges(f)
            edges[f] = e
            mine = self.disc[f].edges if f < len(self.disc) and self.disc[f] is not None else None
            changed |= mine is None or mine.shape != e.shape or bool(np.any(mine != e))
        self.next_choice = self._choice_after(self.n_events)
        self.stale = False
        if changed or force:
            self._derive(edges)
            return True
        self.share_pairs()
        return False

    def _mdl_edges(self, f: int) -> np.ndarray:
        return coarse_edges(self.fine, f, self.bins)

    def _replay(self) -> None:
        """Count the backlog's values whose fine edges now exist (see the module notes)."""
        if self.waiting.count_ready(self.fine):
            self.stale = True

    def _derive(self, edges: dict) -> None:
        """Make this store the coarse image of the fine one under ``edges`` ({feature: coarse edges})."""
        self.own_pairs()
        arrays, meta = coarse_state(self.fine, edges, self.bins, self.warmup, self.max_table_cells)
        new = Stats.from_state(arrays, meta)
        keep = {k: getattr(self, k) for k in _OWN}
        epoch, version, run_new = self.epoch, self.version, self.run_new
        self.__dict__.clear()
        self.__dict__.update(new.__dict__)
        self.__dict__.update(keep)
        self.selection.adopt_partial(new.selection)  # the derived counts hold what the fine layer's hold
        self.schema.attach(self.reserve)  # the new schema's tables are this store's
        self.schema.bin_with(CoarseDiscretiser)
        self.schema.runs.set_run_values(run_new)
        self.wants_observed = self.fine.wants_observed
        for f, d in enumerate(self.disc):
            if d is not None and self.features[f] not in self.bin_edges:
                self._set_discretiser(f, CoarseDiscretiser(self.bins, self.warmup, d.edges))
        # every cache keyed by the epoch must see a new one
        self.epoch = epoch + new.epoch + 1
        self.version = version + 1
        self._cache = {}
        self._fine_warm = any(d is not None and d.edges is None for d in self.fine.disc)
        self.share_pairs()

    # ------------------------------------------------------------------ unlearning

    def remove(self, entries) -> None:
        """Take back a journal of counted events (``unlearn_one``): from the fine layer, then the
        coarse layer is derived from it again (its columns may have moved since).

        A receipt (``learn_one_receipt``) journals the fine layer's own entries too: those are taken
        back, exactly, EM's expected counts included, and so is what counting the event's warm-up
        values added later (or the event leaves the backlog, still waiting). A journal without them (``unlearn_one``
        without a receipt) reaches the fine layer through the fine column behind each coarse
        column: exact where there is one (every categorical value; a coarse bin of one fine bin);
        otherwise :class:`~stream_nb.exceptions.UnlearnError` before anything changes.
        """
        self.own_pairs()  # the fine layer's counts are taken back, then the coarse layer derived from them
        fine_entries = [e[1] for e in entries if e[0] == "fine"]
        if not fine_entries:
            fine_entries = [self._fine_entry(e) for e in entries]
        fine = self.fine
        fine_entries = follow_promotions(fine, fine_entries)  # a receipt of before a promotion: see _promoted
        for e in fine_entries:
            fine.check_entry(e)
        for e in entries:
            if e[0] == "waiting":  # the event waited for its fine edges (see _waiting)
                self.waiting.unwait(fine, follow_waiting(fine, e[1]))
        fine.remove(fine_entries)
        self._derive(self._current_edges())

    def _journal_fine(self, call, *args, **kwargs) -> None:
        """Run ``call`` on the fine layer, journaling its entries as ``("fine", entry)`` when a receipt is kept."""
        if self.journal is None:
            call(*args, **kwargs)
            return
        self.fine.journal = []
        try:
            call(*args, **kwargs)
            self.journal.extend(("fine", e) for e in self.fine.journal)
        finally:
            self.fine.journal = None

    def _fine_entry(self, e) -> tuple:
        kind = e[0]
        if kind in ("count", "observed"):
            enc = e[1]
            return (kind, enc._replace(cols=self._unique_fine(enc.cols, enc.feats)), *e[2:])
        if kind == "gauss":
            return e
        raise UnlearnError(
            "unlearning: with numeric=MDL() an event learned with EM's expected counts is taken back "
            "with the receipt learn_one_receipt returned; nothing was changed", reason="needs_receipt")

    def _unique_fine(self, cols: np.ndarray, feats: np.ndarray) -> np.ndarray:
        """The one fine column behind each coarse column; UnlearnError where a coarse bin holds several."""
        out = self._representatives()[cols].copy()
        for i, (col, f) in enumerate(zip(cols.tolist(), feats.tolist())):
            if self.kinds[f] != BINNED:
                continue
            bounds = self._boundaries(f)
            key = self.value_keys[col]
            inside = [fc for k, fc in self.fine.values[f].items()
                      if int(np.searchsorted(bounds, k, side="right")) == key]
            if len(inside) != 1:
                raise UnlearnError(
                    f"unlearning: feature {self.features[f]!r}: its coarse bin holds {len(inside)} fine bins of "
                    "the MDL discretiser and only the receipt learn_one_receipt returned names the one this event "
                    "fell in; nothing was changed", reason="needs_receipt")
            out[i] = inside[0]
        return out

    # ------------------------------------------------------------------ merging and state

    def merge(self, other: "TwoLayerStats") -> None:
        """Merge the fine layers exactly (:meth:`Stats.merge`: the same fine edges, or both still
        in warm-up), the other's backlog with them, and derive the coarse layer again.

        The cut points stay this store's (a feature new here gets its MDL ones) until the next
        choice; :meth:`rediscretise` chooses them from the merged counts at once.
        """
        if not isinstance(other, TwoLayerStats):
            raise MergeError("cannot merge a store discretised by MDL (two layers) with one that is not")
        self.own_pairs()  # the fine layers merge, then the coarse layer is derived from them
        other.own_pairs()
        over = few_overflow(self.fine.schema, other.fine.schema)
        if over:  # too many values together: binned on both sides first, the waiting events following
            other = copy.deepcopy(other)
            for mine, theirs in over:
                other.fine.promote(theirs)
                self.fine.promote(mine)
            other.waiting.follow_promotion(other.fine)
            self.waiting.follow_promotion(self.fine)
        fine, theirs = self.fine, other.fine
        fine.merge(theirs)
        cmap, fmap, vmap = index_maps(fine.schema, theirs.schema)
        self.waiting.absorb(other.waiting, fine, vmap, fmap, cmap.tolist())
        self.n_events += other.n_events
        self._derive(self._current_edges())

    def _current_edges(self) -> dict:
        """The coarse edges of every feature with fine edges: this store's, or MDL's for a feature without
        (or whose edges are no longer fine ones: its fine edges came since, a promotion's, and the cut
        points are due again, see :meth:`settle`)."""
        fine, edges = self.fine, {}
        for f, d in enumerate(fine.disc):
            if d is None or d.edges is None:
                continue
            mine = self.disc[f].edges if f < len(self.disc) and self.disc[f] is not None else None
            if fine.features[f] in self.bin_edges:
                edges[f] = d.edges
            elif mine is not None and np.isin(mine, d.edges).all():
                edges[f] = mine
            else:
                edges[f] = self._mdl_edges(f)
        return edges

    def state(self) -> tuple[dict, dict]:
        arrays, meta = super().state()
        with self.lent_pairs():  # written as the fine layer's own (the format does not change)
            fa, fm = self.fine.state()
        arrays.update({"fine." + k: v for k, v in fa.items()})
        meta["fine"] = fm
        meta["two_layer"] = {
            "fine_bins": self.fine_bins,
            "n_events": self.n_events,
            "next_choice": self.next_choice,
            "stale": self.stale,
            **self.waiting.state(),
        }
        return arrays, meta

    @classmethod
    def from_state(cls, arrays: dict, meta: dict) -> "TwoLayerStats":
        if not isinstance(meta, dict) or not isinstance(meta.get("two_layer"), dict) or not isinstance(meta.get("fine"), dict):
            raise ValueError("stats: a store discretised by MDL needs its fine layer (fine, two_layer)")
        if not isinstance(arrays, dict):
            raise ValueError("arrays: expected a dict of arrays")
        tl = meta["two_layer"]
        s = super().from_state({k: v for k, v in arrays.items() if not k.startswith("fine.")}, meta)
        s.fine = Stats.from_state({k[5:]: v for k, v in arrays.items() if k.startswith("fine.")}, meta["fine"])
        s.fine.schema.set_few_max(s.few_max)
        if s.fine.features != s.features or s.fine.classes != s.classes:
            raise ValueError("stats.fine: its features and classes must be the coarse layer's, in the same order")
        for name in ("fine_bins", "n_events", "next_choice"):
            if not is_integer(tl.get(name)) or tl[name] < 0:
                raise ValueError(f"stats.two_layer.{name}: expected an integer >= 0, got {tl.get(name)!r:.60}")
        if not isinstance(tl.get("stale"), bool):
            raise ValueError(f"stats.two_layer.stale: expected true or false, got {tl.get('stale')!r:.60}")
        s.fine_bins, s.n_events, s.next_choice, s.stale = tl["fine_bins"], tl["n_events"], tl["next_choice"], tl["stale"]
        s.waiting = Waiting.from_state(tl, s.fine, s.warmup)
        s._pending_exp = None
        for f, d in enumerate(s.disc):
            if d is not None and s.features[f] not in s.bin_edges:
                s._set_discretiser(f, CoarseDiscretiser(s.bins, s.warmup, d.edges))
        s._fine_warm = True
        # the fine layer read holds its own tables (a new store's shared none); few_max 0: a store that forgets
        s.sharing = SharedPairs(forgets=s.fine.few_max == 0)  # (bin_floats_at_once)
        s.share_pairs()
        return s

