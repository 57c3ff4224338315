"""The count store: the additive sufficient statistics that every model is a view of.

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

The pair tables (and KDB's t-way ``tuple_count``, ``tuple_feat``) are dense
arrays while they fit the store's ``memory_budget`` and a :class:`SparseTable`
of the cells that occur beyond it, with the same counts (see ``_budget.py``).

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

Where things live
-----------------
:class:`Stats` (``_store.py``) is composed of one part per seam, each a class in
its own module whose methods work on the one store's arrays:

=================  ==================================================================
module             what it holds
=================  ==================================================================
``_values.py``     kinds of feature, :class:`Encoded`, the checks on one value
``_labels.py``     the label rule (:func:`validate_label`, :meth:`Stats.check_label`)
``_schema.py``     classes, features, values, capacity; the observed-only view
``_promotion.py``  a categorical feature turning numeric, its counts converted
``_encoding.py``   one event as indices: for prediction, and for learning
``_frames.py``     many events: runs of plain events, DataFrames
``_frame_runs.py`` runs of events given as numpy columns (a DataFrame's), encoded with numpy
``_adding.py``     adding events, expected counts (EM) and batches to the counts
``_gaussian.py``   Gaussian moments and their log-density
``_merging.py``    merging two stores
``_state.py``      the store as plain data (``state``, ``from_state``)
``_budget.py``     the memory budget: dense tables while they fit, sparse beyond
``_sparse.py``     sparse count tables (the cells that occur, hashed in numpy arrays)
``_discretise.py`` online equal-frequency bins of numeric features
``_forgetting.py`` captures of the counts, their differences, subtracting and scaling (forgetting)
``_mdl.py``        Fayyad and Irani's MDL cut points from class counts
``_fine.py``       the two-layer store: fine bins kept, MDL cut points read
``_coarse.py``     the coarse layer as exact sums of the fine cells
``_promoted.py``   a receipt's journal after a promotion, in the columns of now
``_journal.py``    journals (what events added, kept by receipts) as plain data, checked on reading
=================  ==================================================================
"""

from ._budget import DEFAULT_MEMORY_BUDGET
from ._columns import Columns
from ._candidates import cmi_from_cells, mutual_information_with_class, set_pair_rule
from ._joint import ALPHA as G_TEST_ALPHA, chi2_quantile
from ._tuple_candidates import choose_tuples
from ._discretise import Discretiser
from ._forgetting import (capture, capture_difference, capture_nbytes, count_difference, replace_counts, scale_counts,
                          subtract_counts)
from ._fine import TwoLayerStats
from ._frame_runs import frame_events
from ._journal import JournalReader, JournalWriter
from ._mdl import mdl_cuts
from ._gaussian import gaussian_loglik, variance_floor
from ._labels import is_missing_label, validate_label
from ._sparse import SparseTable
from ._store import Stats
from ._values import BINNED, CAT, GAUSS, NUMERIC_LIMIT, VALUE_GROUPS, Encoded, check_event, describe_type, json_type

__all__ = [
    "BINNED", "CAT", "DEFAULT_MEMORY_BUDGET", "GAUSS", "VALUE_GROUPS", "Columns", "Discretiser", "SparseTable", "Encoded", "Stats",
    "TwoLayerStats", "JournalReader", "JournalWriter", "gaussian_loglik", "mdl_cuts", "variance_floor", "NUMERIC_LIMIT",
    "check_event", "describe_type", "is_missing_label", "json_type", "validate_label",
    "capture", "capture_difference", "capture_nbytes", "count_difference", "replace_counts", "scale_counts",
    "subtract_counts", "G_TEST_ALPHA", "chi2_quantile", "cmi_from_cells", "mutual_information_with_class",
    "set_pair_rule", "choose_tuples", "frame_events",
]
