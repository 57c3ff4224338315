"""What every stream_nb classifier shares: the template around one store of counts.

A model is a view of a :class:`~stream_nb.stats.Stats`, and says only how the counts are kept and read.
:class:`BayesClassifier` holds the rest once: learning (EM included), the posterior, the loss-matrix
decision, the prequential step, merging and the plain-data state.

What a subclass provides
------------------------
An ``__init__`` wrapped by :func:`~stream_nb.learners._keywords.takes_options` that sets each parameter
as an attribute (the shared options of :mod:`stream_nb.options` and its own), then calls
:meth:`BayesClassifier._setup` with how the store keeps its counts (``pairs``, ``tuples``).

====================================  ================================================================
``_jll(enc)``                         log P(c, x) (C,) of one encoded event
``_jll_many(D, dfeats, G, gslots)``   the same for a batch (rows, C)
``_add_expected(enc, c, w, miss)``    EM for one incomplete event of class ``c``: E-step and M-step
``_missing_posterior(enc, c, miss)``  P(x_m | x_o, c) of the missing attributes, as the model predicts
``_run_ready()``, ``_kernel_block``   whether runs may go through the compiled kernel now, and that kernel
                                      (:class:`~stream_nb.learners._runs.VectorisedRuns`)
====================================  ================================================================

Optional hooks, each with a documented default: ``_added(c)``, ``_learned(n)``, ``_merged()``,
``_batch_limit()``, ``_extra_state()``, ``_load_extra_state()``. :meth:`_naive_jll` and
:meth:`_naive_jll_many` read the counts as naive Bayes does, every model's fallback before its structure.
``prequential_one`` (and river's ``predict_one`` then ``learn_one`` of the same dict) encodes an event
once, scores it, then learns it from that encoding; a complete event is scored and counted in the model's
compiled kernel (a block of one), and sparse tables are read in compiled code too. numpy computes what no
kernel covers: EM's E-steps, summing a missing parent out (TAN, SPODE, KDB), and naive Bayes's one-event scores
under decay, whose smoothing changes every event (the kernel reads tables of logs).
"""

from __future__ import annotations

import abc
import contextlib
import copy
import math
import sys
import typing

import numpy as np
from river import base

from ..exceptions import InvalidEventError, MergeError
from ..kernels import NO_DETECTOR
from ..options import BINNED, EM, MDL, Decay, Gaussian, Window, binned, decode_params, encode_params, options_from_flat
from ..stats import Encoded, Stats, TwoLayerStats, check_event, frame_events, is_missing_label
from ._decision import LossMatrix, decide, log_prior, normalise
from ._batches import MiniBatches
from ._detectors import detector_spec, watched_detector
from ._forgetting import UNSCORED, Forgetting, prepare_merge, split_time
from ._impute import fill_in, missing_posterior
from ._keywords import check_options, defaults_of, model_defaults
from ._results import PrequentialResults
from ._runs import VectorisedRuns
from ._unlearn import Unlearning

__all__ = ["BayesClassifier", "Step"]

_NONE = np.empty(0, dtype=np.int64)


class Step(typing.NamedTuple):
    """The outcome of one prequential step: the prediction made before learning, and what was done.

    Examples
    --------
    >>> from stream_nb import NaiveBayes
    >>> model = NaiveBayes()
    >>> _ = model.prequential_one({"sky": "sun"}, "play")
    >>> model.prequential_one({"sky": "sun"}, "play")
    Step(prediction='play', proba={'play': 1.0}, learned=True, imputed=None)
    """

    prediction: typing.Any  # the decided class, None before any class is known
    proba: dict  # P(c | x) over the classes known before learning; {} before any
    learned: bool  # the event was learned (labeled, or unlabeled with learn_unlabeled=True and a class known)
    imputed: dict | None = None  # with impute=True: the filled-in value of each missing attribute


class BayesClassifier(VectorisedRuns, MiniBatches, Unlearning, base.MiniBatchClassifier):
    """Base class of stream_nb's classifiers, a river classifier over one count store (not used directly).

    The module notes list what a subclass provides.

    Examples
    --------
    >>> from stream_nb import NaiveBayes
    >>> from stream_nb.learners import BayesClassifier
    >>> issubclass(NaiveBayes, BayesClassifier), sorted(BayesClassifier.__abstractmethods__)
    (True, ['_add_expected', '_jll', '_jll_many', '_missing_posterior', '_run_ready'])
    """

    #: The option classes each family parameter takes, where a model takes fewer than all
    #: (:data:`stream_nb.options.OPTIONS`): the models other than naive Bayes count numeric features in bins.
    _accepts: dict = {"numeric": BINNED}
    #: The fine bins of an :class:`~stream_nb.options.MDL` made from the flat ``discretiser="mdl"``.
    _mdl_fine_bins = 64
    #: The option each of these parameters is when it is None (river keeps a signature's defaults immutable).
    _option_defaults: dict = {"numeric": MDL(), "missing": EM()}
    #: What cuts the features an :class:`~stream_nb.options.Edges` gives no edges when its ``rest`` is None.
    _default_cut = MDL()
    #: The ``forgetting`` and ``drift_detector`` parameters of a model that takes none (every model here takes both).
    forgetting = None
    drift_detector = None
    #: The part that forgets (:class:`~stream_nb.learners._forgetting.Forgetting`), None when nothing forgets;
    #: and the field of the event's time, not a feature (None: none): both set by :meth:`_setup`.
    _forget: Forgetting | None = None
    _time_name: str | None = None
    #: ``n_rebuilds`` when a structured model's rebuild schedule last started (0; after a switch to fresh counts,
    #: see :class:`~stream_nb.learners.StructuredClassifier`): a snapshot keeps it with forgetting's state.
    _rebuild_origin = 0

    def _setup(self, *, pairs: bool, tuples: int = 0, max_table_cells: int | None = None) -> None:
        """Check every parameter against its declaration and create the empty store (``__init__`` calls it
        last); ``pairs``, ``tuples`` and ``max_table_cells`` say how the store keeps its counts (an
        :class:`~stream_nb.options.MDL` discretiser: a :class:`~stream_nb.stats.TwoLayerStats`)."""
        check_options(self)
        self._alpha = self.alpha
        self._decision = None if self.loss is None else LossMatrix(self.loss)
        self._var_smoothing = self.var_smoothing
        self._prior: tuple | None = None  # ((epoch, version) of the store, log prior)
        cut, edges = self._discretisation()
        two_layer = isinstance(cut, MDL)
        types = None if self.types is None else {k: v for k, v in self.types.items() if v != "time"}
        self._stats = (TwoLayerStats if two_layer else Stats)(
            **({"fine_bins": cut.fine_bins} if two_layer else {}),
            memory_budget=self.memory_budget,
            pairs=pairs,
            observed=self.missing.attributes,  # EM's E-step reads the observed-only counts
            tuples=tuples,
            max_table_cells=max_table_cells,
            numeric="gaussian" if cut is None else "bins",
            types=types,
            bins=5 if cut is None else cut.bins,
            warmup=100 if cut is None else cut.warmup,
            bin_edges=edges,
        )
        # forgetting and drift_detector (their values are checked where they are declared, stream_nb.options)
        self._time_name = self.time_field
        detector = watched_detector(self.drift_detector)
        if self.window is None and self.half_life is None and detector is None:
            self._forget = None
        else:
            self._forget = Forgetting(self.window, self.panes, self.half_life, detector, self._time_name is not None)
            self._stats.bin_floats_at_once()

    def _discretisation(self) -> tuple:
        """``(discretiser, edges)`` of the ``numeric`` option: the :class:`~stream_nb.options.MDL` or
        :class:`~stream_nb.options.EqualFrequency` of the features without fixed edges, and those edges;
        ``(None, None)`` for :class:`~stream_nb.options.Gaussian`."""
        numeric = self.numeric
        held = self.__dict__.get("_cut")
        if held is None or held[0] is not numeric:  # (an option is frozen: remembered while it is the one set)
            held = self._cut = (numeric, (None, None) if isinstance(numeric, Gaussian) else binned(numeric,
                                                                                                  self._default_cut))
        return held[1]

    # -- what the options say, under the names of the flat parameters the learning code reads

    @property
    def window(self) -> int | None:
        """The :class:`~stream_nb.options.Window`'s size (None: no window)."""
        f = self.forgetting
        return f.size if isinstance(f, Window) else None

    @property
    def panes(self) -> int:
        """The :class:`~stream_nb.options.Window`'s panes (4 without a window)."""
        f = self.forgetting
        return f.panes if isinstance(f, Window) else 4

    @property
    def half_life(self) -> float | None:
        """The :class:`~stream_nb.options.Decay`'s half-life (None: no decay)."""
        f = self.forgetting
        return f.half_life if isinstance(f, Decay) else None

    @property
    def time_field(self) -> str | None:
        """The field of the event's time, not a feature: the decay's, or one declared ``"time"`` in ``types``."""
        f = self.forgetting
        if isinstance(f, Decay) and f.time_field is not None:
            return f.time_field
        return next((k for k, v in (self.types or {}).items() if v == "time"), None)

    @property
    def var_smoothing(self) -> float:
        """The :class:`~stream_nb.options.Gaussian`'s relative variance floor (0 when features are binned)."""
        return self.numeric.var_smoothing if isinstance(self.numeric, Gaussian) else 0.0

    @property
    def warmup(self) -> int:
        """Values of a numeric feature read before its bin edges are placed (and, for TAN, SPODE and KDB,
        learned events before the first rebuild): the discretiser's (100 for Gaussian features)."""
        cut = self._discretisation()[0]
        return 100 if cut is None else cut.warmup

    @property
    def discretiser(self) -> str | None:
        """``"mdl"`` or ``"equal_frequency"``: what cuts the numeric features without fixed edges (None: Gaussian)."""
        cut = self._discretisation()[0]
        return None if cut is None else cut.CHOICE

    @property
    def bins(self) -> int | None:
        """The discretiser's ``bins`` (None: Gaussian features)."""
        cut = self._discretisation()[0]
        return None if cut is None else cut.bins

    @property
    def fine_bins(self) -> int | None:
        """The :class:`~stream_nb.options.MDL` discretiser's ``fine_bins`` (None: no fine layer)."""
        return getattr(self._discretisation()[0], "fine_bins", None)

    @property
    def bin_edges(self) -> dict | None:
        """The fixed edges of an :class:`~stream_nb.options.Edges` (None: none)."""
        return self._discretisation()[1] or None

    @property
    def learn_unlabeled(self) -> bool:
        """Whether unlabeled events are learned (:class:`~stream_nb.options.EM`'s ``unlabeled``)."""
        return self.missing.unlabeled

    @property
    def unlabeled_weight(self) -> float:
        """Weight of an unlabeled event (:class:`~stream_nb.options.EM`'s ``unlabeled_weight``)."""
        return self.missing.unlabeled_weight

    @property
    def _multiclass(self):
        return True

    @property
    def classes(self) -> list:
        """Every class seen so far, in order of first appearance."""
        return list(self._stats.classes)

    def memory_used(self) -> dict:
        """What the counts take: ``cells`` and ``bytes`` of all of them, ``table_cells`` and
        ``table_bytes`` of KDB's t-way tables, whether those are ``sparse``, the same of the pair
        tables (``pair_cells``, ``pair_bytes``, ``pairs_sparse``), and the ``budget``
        (see :mod:`stream_nb.stats.budget._budget`).

        >>> from stream_nb import KDB
        >>> model = KDB(memory_budget=0)  # no room for dense t-way tables: sparse from the start
        >>> model.learn_one({"a": "x", "b": "y", "c": "z"}, True)
        >>> used = model.memory_used()
        >>> used["sparse"], used["table_cells"]   # 3^3 value triples, and 3^2 x 3 with a feature last
        (True, 54)
        """
        return self._stats.memory_used()

    @property
    def label_type(self) -> str | None:
        """The JSON type of every label, ``"string"``, ``"number"`` or ``"boolean"``, fixed by the first one
        (``None`` before it); a label of another type raises :class:`~stream_nb.exceptions.LabelTypeError`.

        >>> from stream_nb import NaiveBayes
        >>> model = NaiveBayes()
        >>> model.learn_one({"sky": "sun"}, 1)
        >>> model.label_type
        'number'
        >>> model.learn_one({"sky": "sun"}, True)
        Traceback (most recent call last):
        ...
        stream_nb.exceptions.LabelTypeError: label: expected a number, the type of this model's labels (set by its first label, 1), got a boolean, true; one stream's labels must share one JSON type
        """
        return self._stats.label_type

    def cut_points(self) -> dict:
        """``{feature: [cut points]}``: where each discretised numeric feature is cut now.

        >>> from stream_nb import AODE, MDL
        >>> model = AODE(numeric=MDL(bins=1, warmup=4, fine_bins=4))
        >>> for v, y in [(1.0, "a"), (2.0, "a"), (3.0, "a"), (4.0, "b"), (5.0, "b"), (6.0, "b")] * 5:
        ...     model.learn_one({"t": v}, y)
        >>> model.cut_points()
        {'t': [3.25]}
        """
        return self._stats.cut_points()

    @property
    def n_learned(self) -> float:
        """Number of events learned (fractional with EM's weights; the decayed weight with ``half_life``)."""
        return self._stats.n_seen / self._inflation

    # ------------------------------------------------------------------ public views (explain, inspect)

    def log_posterior_one(self, x: dict) -> np.ndarray:
        """ln P(c | x) of every class, in the order of :attr:`classes` (absent attributes marginalised);
        empty before any class. ``exp`` of it is :meth:`predict_proba_one` as an array.

        >>> from stream_nb import NaiveBayes
        >>> model = NaiveBayes()
        >>> model.learn_one({"a": 1}, "p"); model.learn_one({"a": 2}, "q")
        >>> model.classes, model.log_posterior_one({"a": 1}).round(4).tolist()   # ln 2/3, ln 1/3
        (['p', 'q'], [-0.4055, -1.0986])
        """
        if not self._stats.n_classes:
            return np.empty(0)
        return self._log_posterior(x)

    def class_counts(self) -> dict:
        """``{class: weight}``: the weight of the labeled events counted for each class (an event's weight, EM's
        fractions, the decayed weight with ``half_life``), in the order of :attr:`classes`.

        >>> from stream_nb import NaiveBayes
        >>> model = NaiveBayes()
        >>> for y in ["p", "q", "p"]:
        ...     model.learn_one({"a": 1}, y)
        >>> model.class_counts()
        {'p': 2.0, 'q': 1.0}
        """
        s = self._stats
        return {y: float(s.class_count[c]) / self._inflation for c, y in enumerate(s.classes)}

    def feature_summary(self) -> list[dict]:
        """One dict per feature, in the order first seen: ``name``; ``kind``, how its counts are kept
        (``"categorical"``, ``"gaussian"``, ``"binned"``, or ``"numeric by value"``: a float feature of a few
        values counted by value until one more turns it binned); ``values``, how many values or bins its
        counts hold (``None`` for a Gaussian).

        >>> from stream_nb import NaiveBayes
        >>> model = NaiveBayes()
        >>> model.learn_one({"sky": "sun", "t": 21.5}, "play")
        >>> model.feature_summary()
        [{'name': 'sky', 'kind': 'categorical', 'values': 1}, {'name': 't', 'kind': 'gaussian', 'values': None}]
        """
        s = self._stats
        kinds = ("categorical", "gaussian", "binned")
        few = getattr(s, "few", ())
        return [{"name": name, "kind": "numeric by value" if f in few else kinds[s.kinds[f]],
                 "values": len(s.values[f]) if s.values[f] is not None else None}
                for f, name in enumerate(s.features)]

    # ------------------------------------------------------------------ forgetting (the part it holds: _forget)

    @property
    def _alpha(self) -> float:
        """The smoothing as the stored counts need it: ``alpha`` times the decay's inflation."""
        f = self._forget
        return self._alpha_given if f is None or f.inflation == 1.0 else self._alpha_given * f.inflation

    @_alpha.setter
    def _alpha(self, value: float) -> None:
        self._alpha_given = value

    @property
    def _inflation(self) -> float:
        """The decay's inflation of the stored counts (1.0 without decay)."""
        return 1.0 if self._forget is None else self._forget.inflation

    def _forget_time(self, x: dict) -> tuple[dict, float | None]:
        """``x`` without its ``time_field`` and that time (:func:`~stream_nb.learners._forgetting.split_time`)."""
        return split_time(x, self._time_name)

    def _check_times(self, X) -> None:
        """Check every time of a batch's ``time_field`` column (if any) before anything is learned, so that
        a bad one leaves no trace."""
        name = self._time_name
        if name is not None and name in X.columns:
            for t in X[name].tolist():
                split_time({name: t}, name)

    def _settle(self) -> None:
        """Renormalise decayed counts (inflation back to 1): the stored counts are then the true ones."""
        if self._forget is not None:
            self._forget.settle(self._stats)

    @property
    def forgetting_nbytes(self) -> int:
        """Bytes of counts forgetting keeps beside the store (panes, captures)."""
        return 0 if self._forget is None else self._forget.nbytes

    @property
    def expired_unlearns(self) -> int:
        """Events ``unlearn_one`` found expired from the window (nothing taken back); 0 without forgetting."""
        return 0 if self._forget is None else self._forget.expired_unlearns

    @property
    def drifts(self) -> list:
        """Positions of the drifts the detector found: the number of labeled events predicted up to and
        including the one whose error raised it (the switch comes before that event is learned); [] without one."""
        return [] if self._forget is None else list(self._forget.drifts)

    def _watch(self, x: dict, y, known: Encoded | None = None, prediction=UNSCORED) -> Encoded | None:
        """Before labeled event ``(x, y)`` is learned: feed the drift detector the 0/1 error of ``prediction``,
        or (:data:`~stream_nb.learners._forgetting.UNSCORED`) of the model's decision made now; act on a
        warning or drift. The error is fed once per event, whichever way it is learned: ``learn_one`` predicts
        here, ``prequential_one`` hands its prediction over, and runs feed a compiled twin in the kernel.

        Returns the encoding of ``x`` for prediction (``known``, or the one made here) for learning to reuse.
        Nothing is done without a detector, while it is paused, or for an unlabeled event; a label or time
        that learning would refuse raises before the detector sees anything.
        """
        f = self._forget
        if f is None or f.detector is None or f.paused or is_missing_label(y):
            return known
        s = self._stats
        x, _ = self._forget_time(x)  # a time the model refuses: refused here, as learning would
        s.check_label(y)
        if prediction is UNSCORED:
            prediction = None
            if s.n_classes:
                known = s.encode(x) if known is None else known
                prediction = self._decided(known)
        if f.observe(s, prediction, y):
            self._switched()
        return known

    @contextlib.contextmanager
    def drift_paused(self):
        """Within the ``with`` block, learn without feeding the drift detector (nothing changes without one).

        The daemon learns a provisional label so: it is no true label, and its error says nothing
        of the concept; the true label, when it comes, is fed with :meth:`observe_error`.
        """
        if self._forget is None:
            yield self
            return
        with self._forget.pause():
            yield self

    def observe_error(self, prediction, y) -> None:
        """Feed the drift detector the 0/1 error of ``prediction`` for the true label ``y``, a prediction made
        before the event was learned (``None``: none made), and act on a warning or drift as learning does.
        Nothing without a detector or with ``y`` missing; the event itself is not learned."""
        f = self._forget
        if f is not None and f.detector is not None and not is_missing_label(y) and f.observe(self._stats, prediction, y):
            self._switched()

    def _forget_act(self) -> None:
        """Act on what the drift detector says after its last update (a kernel fed it): a switch to fresh counts
        lets the structure follow (:meth:`_switched`)."""
        if self._forget.act(self._stats):
            self._switched()

    def _kernel_detector(self) -> tuple:
        """The detector arguments of a kernel (:meth:`Forgetting.kernel_detector
        <stream_nb.learners._forgetting.Forgetting.kernel_detector>`), :data:`~stream_nb.kernels.NO_DETECTOR`
        without one."""
        return NO_DETECTOR if self._forget is None else self._forget.kernel_detector()

    def _kernel_watches(self) -> bool:
        """Whether a kernel can run this model's prequential loop with its detector: none watched, or the
        compiled twin of one (a river detector without a twin is fed in Python, one event at a time)."""
        return self._forget is None or self._forget.kernel_watches()

    def _switched(self) -> None:
        """Hook run after a drift switched to fresh counts (structured models rebuild); default: nothing."""

    # ------------------------------------------------------------------ what a subclass defines

    @abc.abstractmethod
    def _jll(self, enc: Encoded) -> np.ndarray:
        """Joint log-likelihood log P(c, x) of one encoded event, shape (C,), up to a constant."""

    @abc.abstractmethod
    def _jll_many(self, D: np.ndarray, dfeats: np.ndarray, G: np.ndarray, gslots: np.ndarray) -> np.ndarray:
        """Batch :meth:`_jll` over encoded rows (see :meth:`Stats.encode_frame`): shape (rows, C)."""

    @abc.abstractmethod
    def _add_expected(self, enc: Encoded, c: int, w: float, miss: np.ndarray) -> None:
        """EM for one event of class ``c`` whose discrete features ``miss`` are missing: the E-step
        (under the observed-only counts, :meth:`Stats.observed`), then the M-step (add the expected
        counts, e.g. with :func:`~stream_nb.learners._em.add_estep`)."""

    @abc.abstractmethod
    def _missing_posterior(self, enc: Encoded, c: int, miss: np.ndarray) -> list:
        """``(feature, columns, P(x_f = v | x_o, c))`` of each missing feature ``miss`` under the
        model as it predicts (its counts): what :meth:`impute_proba_one` mixes over the classes."""

    def _added(self, c: int) -> None:
        """Hook run after one event of class index ``c`` was added (views refresh caches here); default: nothing."""

    def _learned(self, n: int) -> None:
        """Hook run after ``n`` events were learned (structured models rebuild here, after calling this);
        default: forgetting's (the window's panes, the decay's renormalisation)."""
        if self._forget is not None:
            self._forget.learned(self._stats, n)

    def _merged(self) -> None:
        """Hook run after a merge; default: nothing."""

    def _batch_limit(self) -> int:
        """How many events may be learned before the model must look at its counts again; default: the end
        of the window's pane (no limit without a window)."""
        return 1 << 62 if self._forget is None else self._forget.limit()

    def _extra_state(self) -> tuple[dict, dict]:
        """Model-specific state beyond the counts (TAN's tree, SPODE's scores, KDB's structure); default: none."""
        return {}, {}

    def _load_extra_state(self, arrays: dict, meta: dict) -> None:
        """Restore what :meth:`_extra_state` saved; default: nothing."""

    def _check_loaded(self) -> None:
        """ValueError unless the model :meth:`from_state` built is consistent; default: nothing to check
        (models with a structure check it against their store)."""

    # ------------------------------------------------------------------ learning

    def learn_one(self, x: dict, y, w: float = 1.0) -> None:
        """Learn one event (``y=None`` with ``EM(unlabeled=True)``: semi-supervised EM).

        A label or value of the wrong type raises :class:`~stream_nb.exceptions.LabelTypeError` or
        :class:`~stream_nb.exceptions.FeatureTypeError` and changes nothing. With a ``drift_detector``
        the event is predicted first and its error fed to it.
        """
        self._learn(x, y, w, None if self._forget is None else self._watch(x, y))  # (no detector: nothing to feed)

    def _learn(self, x: dict, y, w: float, known: Encoded | None) -> None:
        """Learn one event; ``known`` is ``x``'s encoding for prediction when the caller has it
        (the prequential step), which spares encoding ``x`` again."""
        s, missing, f = self._stats, self.missing, self._forget  # (each read once: river's loop comes here per event)
        if missing.unlabeled and is_missing_label(y):
            self._learn_unlabeled(x, w * self.unlabeled_weight, known)
            return
        if self._time_name is None and type(x) is dict:
            t = None  # no time field to take out (what _forget_time checks first)
        else:
            x, t = self._forget_time(x)
        enc, c = s.encode_labeled(x, y, known)
        if f is not None:
            w = f.weight(s, w, t)
        miss = s.missing_of(enc) if missing.attributes else _NONE
        if len(miss):
            self._add_expected(enc, c, w, miss)
        else:
            self._count(enc, c, w)
        self._added(c)
        self._settle_store()
        self._learned(1)

    #: The kernel modules (:mod:`stream_nb.kernels`) this model's kernels live in.
    _kernel_modules: tuple = ()

    def kernel_modules(self) -> tuple:
        """The names of the kernel modules this model calls (its own, and the drift detectors' when it
        watches a compiled twin): what ``stream-nb run`` loads before its first poll."""
        return self._kernel_modules + (("_detectors",) if self._kernel_detector()[0] else ())

    def _learn_unlabeled(self, x: dict, w: float, known: Encoded | None) -> None:
        """Semi-supervised EM (Nigam et al., 2000): spread the event over the classes by posterior."""
        s = self._stats
        if not s.n_classes:
            return  # no class to spread the event over yet
        x, t = self._forget_time(x)
        enc = s.encode_learn(x, known=known)
        post = np.exp(normalise(self._jll(enc)[None, :], self._log_prior())[0])
        if self._forget is not None:
            w = self._forget.weight(s, w, t)
        miss = s.missing_of(enc) if self.missing.attributes else _NONE
        for c, p in enumerate(post.tolist()):
            if w * p == 0.0:
                continue
            if len(miss):
                self._add_expected(enc, c, w * p, miss)
            else:
                s.add(enc, c, w * p)
            self._added(c)
        self._settle_store()
        self._learned(1)

    def _settle_store(self) -> None:
        """End a learning step in the store (:meth:`Stats.settle`). A two-layer store may choose its
        cut points now, from the counts' absolute sizes (MDL): decayed counts are renormalised first,
        so the cuts do not depend on when the decay's scale was last reset."""
        if self._stats.recut_due():
            self._settle()
        self._stats.settle()

    # ------------------------------------------------------------------ inference

    def _naive_jll(self, enc: Encoded) -> np.ndarray:
        """log P(c) + Σ_i log P(x_i | c) over the discrete and Gaussian features of ``enc`` (naive Bayes)."""
        s, a = self._stats, self._alpha
        C = s.n_classes
        jll = self._log_prior()
        cols, feats = enc.cols, enc.feats
        if len(cols):
            n_vals = s.n_values[feats] + (cols == 0)
            jll = jll + (np.log(s.value_count[:C, cols] + a) - np.log(s.feat_count[:C, feats] + a * n_vals)).sum(1)
        if len(enc.gslots):
            jll = jll + s.gaussian_loglik(enc.gslots, enc.gx, self._var_smoothing)
        return jll

    def _naive_jll_many(self, D, dfeats, G, gslots) -> np.ndarray:
        """Batch :meth:`_naive_jll`: shape (rows, C)."""
        s, a = self._stats, self._alpha
        C = s.n_classes
        jll = np.broadcast_to(self._log_prior(), (len(D), C)).copy()
        if D.shape[1]:
            miss = D < 0
            Dc = np.where(miss, 0, D)
            n_vals = np.maximum(s.n_values[dfeats][None, :] + (D == 0), 1)  # masked entries may have none
            num = np.log(s.value_count[:C][:, Dc] + a)  # (C, R, k)
            den = np.log(s.feat_count[:C, dfeats][:, None, :] + a * n_vals[None])
            term = np.where(miss[None], 0.0, num - den)
            jll += term.sum(2).T
        if G.shape[1]:
            jll += s.gaussian_loglik(gslots, G, self._var_smoothing)
        return jll

    def _log_prior(self) -> np.ndarray:
        """log P̂(c) of the current counts (:func:`~stream_nb.learners._decision.log_prior`), cached."""
        s = self._stats
        key = (s.epoch, s.version)
        if self._prior is None or self._prior[0] != key:
            prior = log_prior(s.class_count[: s.n_classes], self._alpha)
            prior.flags.writeable = False  # shared by every caller until the counts change
            self._prior = (key, prior)
        return self._prior[1]

    def _posterior(self, enc: Encoded) -> np.ndarray:
        """log P(c | x) of one encoded event."""
        return normalise(self._jll(enc)[None, :], self._log_prior())[0]

    def _log_posterior(self, x: dict) -> np.ndarray:
        return self._posterior(self._stats.encode(x))

    def _decide(self, log_post: np.ndarray) -> np.ndarray:
        """Index of the decided class per row of ``log_post`` (rows, C): see
        :func:`~stream_nb.learners._decision.decide`."""
        return decide(log_post, self._decision, self._stats.classes)

    def _outcome(self, log_post: np.ndarray) -> tuple:
        """``(prediction, proba)`` of one event's log posterior."""
        classes = self._stats.classes
        return classes[self._decide(log_post[None, :])[0]], dict(zip(classes, np.exp(log_post).tolist()))

    def predict_proba_one(self, x: dict) -> dict:
        """The posterior P(c | x) over every class seen so far (empty before any learning)."""
        if not self._stats.n_classes:
            return {}
        p = np.exp(self._log_posterior(x))
        return dict(zip(self._stats.classes, p.tolist()))

    def predict_one(self, x: dict):
        """The Bayes decision: the most probable class, or with ``loss`` the class of least risk."""
        schema = self._stats.schema  # (read once: river's loop comes here per event)
        return self._decided(schema.encode(x)) if schema.labels.classes else None

    def _decided(self, enc: Encoded):
        """:meth:`predict_one` of an encoded event (a class must be known)."""
        if self._decision is None:
            jll = self._jll(enc)  # the most probable class: an argmax, which needs no normalisation
            i = int(jll.argmax())
            if jll[i] == -math.inf:
                i = int(self._log_prior().argmax())
            return self._stats.classes[i]
        return self._outcome(self._posterior(enc))[0]

    def predict_and_proba_one(self, x: dict) -> tuple:
        """``(predict_one(x), predict_proba_one(x))`` from one pass over the counts.

        >>> from stream_nb import NaiveBayes
        >>> model = NaiveBayes()
        >>> model.learn_one({"sky": "sunny"}, "play")
        >>> model.predict_and_proba_one({"sky": "sunny"})
        ('play', {'play': 1.0})
        """
        if not self._stats.n_classes:
            return None, {}
        return self._outcome(self._log_posterior(x))

    def risk_one(self, x: dict) -> dict:
        """The conditional risk R(c | x) of predicting each class (needs ``loss``; else the 0-1 risk)."""
        s = self._stats
        if not s.n_classes:
            return {}
        p = np.exp(self._log_posterior(x))
        lam = self._decision.matrix(s.classes) if self._decision is not None else 1.0 - np.eye(s.n_classes)
        return dict(zip(s.classes, (p @ lam).tolist()))

    # ------------------------------------------------------------------ imputation (learners/_impute.py)

    def impute_proba_one(self, x: dict) -> dict:
        """The posterior P(x_m | x_o) of every missing attribute, given the observed ones.

        Missing: a known feature that is absent, ``None`` or NaN. The class is
        summed out: Σ_c P(c | x_o) P(x_m | x_o, c). Categorical features give
        ``{value: p}``; a discretised numeric feature ``{"[lo, hi)": p}`` over its
        bins; a Gaussian feature ``{"mean": μ, "std": σ}`` of its mixture.
        """
        s = self._stats
        if not s.n_classes:
            return {}
        return missing_posterior(s, s.encode(x), np.exp(self._log_posterior(x)), self._missing_posterior)

    def impute_one(self, x: dict) -> dict:
        """``x`` with every missing attribute filled in: its most probable value
        (a discretised numeric feature: the middle of its most probable bin; a
        Gaussian one: the posterior mean). Features never learned stay out.

        >>> from stream_nb import NaiveBayes
        >>> model = NaiveBayes()
        >>> for x, y in [({"sky": "sunny", "wind": "weak"}, "play"), ({"sky": "rain", "wind": "strong"}, "stay")] * 3:
        ...     model.learn_one(x, y)
        >>> model.impute_one({"sky": "sunny"})
        {'sky': 'sunny', 'wind': 'weak'}
        """
        check_event(x)
        return fill_in(self._stats, x, self.impute_proba_one(x))

    # ------------------------------------------------------------------ the prequential step

    def prequential_one(self, x: dict, y, *, impute: bool = False) -> Step:
        """Predict ``x``, then learn it as :meth:`learn_one` would: one prequential ("test then train") step.

        ``x`` is encoded once for both. With ``impute``, the step also gives :meth:`impute_one`'s values of
        the missing attributes, taken before learning. A rejected event raises
        :class:`~stream_nb.exceptions.InvalidEventError` and leaves the model as it was.

        >>> from stream_nb import NaiveBayes
        >>> model = NaiveBayes()
        >>> model.prequential_one({"sky": "sun"}, "play")
        Step(prediction=None, proba={}, learned=True, imputed=None)
        >>> model.prequential_one({"sky": "sun"}, None)
        Step(prediction='play', proba={'play': 1.0}, learned=False, imputed=None)
        """
        s, enc = self._stats, None
        if s.n_classes:
            enc = s.encode(x)
            prediction, proba = self._outcome(self._posterior(enc))
        else:
            prediction, proba = None, {}
        imputed = None
        if impute:
            imputed = {k: v for k, v in self.impute_one(x).items() if k not in x or x[k] is None}
        labeled = not is_missing_label(y)
        if not (labeled or self.learn_unlabeled):
            return Step(prediction, proba, False, imputed)
        learned = labeled or bool(s.n_classes)  # an unlabeled event is spread over the classes known
        enc = self._watch(x, y, enc, prediction)  # a drift detector is fed this prediction's error
        if type(self).learn_one is BayesClassifier.learn_one:
            self._learn(x, y, 1.0, enc)
        else:  # a subclass that overrides learn_one is still called for every event it learns (fed once)
            with self.drift_paused():
                self.learn_one(x, y)
        return Step(prediction, proba, learned, imputed)

    def prequential_many(self, xs: list, ys: list) -> list | PrequentialResults:
        """Predict each event, then learn it, in order: :meth:`prequential_one` over a batch, runs of events
        that only change counts going through the compiled kernel.

        ``xs`` may be a DataFrame. Returns one ``(prediction, proba)`` per event, or the
        :class:`~stream_nb.exceptions.InvalidEventError` of an event either step rejected (not learned).

        >>> from stream_nb import NaiveBayes
        >>> model = NaiveBayes()
        >>> xs = [{"sky": "sun"}, {"sky": "rain"}, {"sky": ["?"]}, {"sky": "sun"}, {"sky": "sun"}]
        >>> for result in model.prequential_many(xs, ["play", "stay", "play", "play", None]):
        ...     print(result)
        (None, {})
        ('play', {'play': 1.0})
        feature 'sky': expected a categorical value (str, int or bool), got list ['?']
        ('play', {'play': 0.6667, 'stay': 0.3333})
        ('play', {'play': 0.7714, 'stay': 0.2286})

        Given a DataFrame, the results come as a :class:`~stream_nb.learners.PrequentialResults`: the
        same results, equal to that list, each built when first read, and its ``predictions`` read without
        building the dicts of probabilities.
        """
        pandas = sys.modules.get("pandas")  # (a DataFrame's caller has imported pandas)
        if pandas is not None and isinstance(xs, pandas.DataFrame):
            return PrequentialResults(self._prequential_parts(xs, ys, "prequential_many"))
        return list(self.prequential_iter(xs, ys))

    def prequential_iter(self, xs: list, ys: list):
        """:meth:`prequential_many`, yielding each result as soon as its event is learned: a consumer that acts
        on each (the daemon sends it) has acted on exactly the events learned, even if an error escapes."""
        return self._prequential_items(xs, ys, list, "prequential_many")

    def _prequential_items(self, xs: list, ys: list, make_run: type, name: str):
        """:meth:`prequential_iter`'s results, each run in a ``make_run()`` (``prequential_blocks``: whole)."""
        if len(xs) != len(ys):
            raise ValueError(f"{name}: {len(xs)} events but {len(ys)} labels")
        xs, ys = frame_events(xs, ys)  # a DataFrame: numpy columns (stream_nb.stats.schema._runs)
        i, n, runs = 0, len(xs), self._run_events(xs)  # the events as runs read them
        while i < n:
            run, limited = make_run(), False
            if runs is not None:
                i, limited = self._prequential_run(runs, ys, i, run)
            yield from run
            if i < n and not limited:  # (a run that stopped at its length: the next event may start another)
                try:
                    step = self.prequential_one(xs[i], ys[i])
                except InvalidEventError as exc:
                    yield exc
                else:
                    yield step.prediction, step.proba
                i += 1

    # ------------------------------------------------------------------ merging and state

    def merge(self, other: BayesClassifier) -> BayesClassifier:
        """Add the counts of ``other`` (same model type) into this model; return self.

        Counts are additive: a model of stream A merged with one of stream B is the model of A then B.

        >>> from stream_nb import NaiveBayes
        >>> a, b = NaiveBayes(), NaiveBayes()
        >>> a.learn_one({"sky": "sun"}, "play"); b.learn_one({"sky": "rain"}, "stay")
        >>> a.merge(b).class_counts()
        {'play': 1.0, 'stay': 1.0}
        """
        if type(other) is not type(self):
            raise MergeError(f"cannot merge a {type(other).__name__} into a {type(self).__name__}")
        for model, which in ((self, "this model"), (other, "the other model")):
            if model.window is not None:
                raise MergeError(f"cannot merge: {which} forgets by a window (window={model.window}); the panes of "
                                 f"two models hold different events, so no merged window is exact. Merge models "
                                 f"without window (decayed counts merge exactly)")
        prepare_merge(self._forget, self._stats, other._forget, other._stats)
        self._stats.merge(other._stats)
        self._merged()
        return self

    def state_params(self) -> dict:
        """The constructor's parameters as plain data, as :meth:`state` stores them: each option object as
        its :meth:`~stream_nb.options.Option.to_dict`, a drift detector as its spec.

        >>> from stream_nb import NaiveBayes, Window
        >>> NaiveBayes(forgetting=Window(100)).state_params()["forgetting"]
        {'option': 'Window', 'size': 100, 'panes': 4}
        """
        # the parameters are the model's own objects (a loss matrix, bin edges): the state gets copies
        params = copy.deepcopy(encode_params({name: getattr(self, name) for name in defaults_of(type(self).__init__)}))
        if "drift_detector" in params:
            params["drift_detector"] = detector_spec(self.drift_detector)
        return params

    def state(self) -> tuple[dict, dict]:
        """The model's full state as ``(arrays, meta)``: numpy arrays and JSON-able metadata.

        ``type(model).from_state(*model.state())`` rebuilds an equal model; no pickle is involved.
        """
        arrays, meta = self._stats.state()
        extra_arrays, extra_meta = self._extra_state()
        arrays.update({f"model.{k}": v for k, v in extra_arrays.items()})
        params = self.state_params()
        meta = {"model": type(self).__name__, "params": params, "stats": meta, "extra": extra_meta}
        if self._forget is not None:
            forget_arrays, meta["forget"] = self._forget.state(self._rebuild_origin)
            arrays.update({f"model.{k}": v for k, v in forget_arrays.items()})
        return arrays, meta

    @classmethod
    def from_state(cls, arrays: dict, meta: dict) -> BayesClassifier:
        """Rebuild the model :meth:`state` describes, as copies: no array, dict or list is shared with
        ``arrays`` or ``meta`` (which may be read-only views of a file's bytes).
        """
        if not isinstance(meta, dict) or meta.get("model") != cls.__name__:
            got = meta.get("model") if isinstance(meta, dict) else meta
            raise ValueError(f"state is of a {got!r:.60} model, not {cls.__name__!r}")
        for key in ("params", "stats", "extra"):
            if not isinstance(meta.get(key), dict):
                raise ValueError(f"state: {key!r} must be an object, got {meta.get(key)!r:.60}")
        meta = copy.deepcopy(meta)
        model = cls(**cls.params_from_state(meta["params"]))
        model._check_fits(meta["stats"])
        # the store copies the counts into arrays of its own (with room to grow)
        model._stats = type(model._stats).from_state({k: v for k, v in arrays.items() if not k.startswith("model.")}, meta["stats"])
        model._prior = None
        # EM's E-step wants the observed-only counts (a state written before they existed does not say so)
        model._stats.wants_observed = model.missing.attributes
        # a model's own arrays (SPODE's running scores, TAN's tree, ...) may be kept as they come: copy them
        extra = {k[6:]: np.array(v, copy=True) for k, v in arrays.items() if k.startswith("model.")}
        forget_arrays, forget_meta = {k: extra.pop(k) for k in list(extra) if k.startswith("forget.")}, meta.get("forget")
        if (model._forget is None) != (forget_meta is None):
            raise ValueError("forget: the state's forgetting does not match the model's window, half_life "
                             "and drift_detector")
        if model._forget is not None:
            origin = model._forget.load(forget_arrays, forget_meta)
            if origin:
                model._rebuild_origin = origin
        model._load_extra_state(extra, meta["extra"])
        model._check_loaded()
        return model

    @classmethod
    def from_flat(cls, params: dict) -> BayesClassifier:
        """A model from flat settings, as ``stream-nb run`` gives them (``{"window": 1000, "bins": 7}``):
        each family's settings become its option object (:meth:`params_from_state`), without a warning.

        >>> from stream_nb import AODE
        >>> AODE.from_flat({"discretiser": "equal_frequency", "bins": 3, "half_life": 50.0}).numeric
        EqualFrequency(bins=3)
        """
        return cls(**cls.params_from_state(params))

    @classmethod
    def params_from_state(cls, params: dict) -> dict:
        """The constructor's keywords of a state's ``params``: option objects from their plain data
        (:func:`~stream_nb.options.decode_params`), and the flat parameters of a state written before
        the options (``{"window": 1000, "bins": 7}``) mapped to them as their keywords are, without a warning.

        >>> from stream_nb import NaiveBayes
        >>> NaiveBayes.params_from_state({"alpha": 1.0, "window": 100, "panes": 4, "half_life": None})
        {'alpha': 1.0, 'forgetting': Window(size=100)}
        """
        defaults = model_defaults(cls)
        old = {k: v for k, v in params.items() if k not in defaults or isinstance(v, str) and k in ("missing", "numeric")}
        new = decode_params({k: v for k, v in params.items() if k not in old})
        if old:
            new.update(options_from_flat(old, {**defaults, **new}, cls._mdl_fine_bins))
        return new

    def _check_fits(self, stats: dict) -> None:
        """ValueError unless the state's store is the kind this model keeps (pair counts, numeric
        handling, t-way table): a store of another kind lacks tables the model reads."""
        s = self._stats
        for name, want in (("pairs", s.pairs), ("numeric", s.numeric), ("tuples", s.tuples)):
            got = stats.get(name, 0 if name == "tuples" else None)
            if got != want or type(got) is not type(want):
                raise ValueError(f"stats.{name} is {got!r:.60}; a {type(self).__name__} with these parameters "
                                 f"keeps {want!r}")
