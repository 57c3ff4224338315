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
One folder per concept; each offers the others only the names of its
``__init__``, and imports only the folders above it in this list
(``tests/test_architecture.py`` checks both):

=================  ==================================================================
folder             what it holds
=================  ==================================================================
``values/``        kinds of feature, :class:`Encoded`, the checks on one value; the label rule; :class:`Columns`
``discretiser/``   online equal-frequency bins; Fayyad and Irani's MDL cut points; the G-tests of
                   joint cuts; the coarse layer as sums of fine cells; events waiting for their bins
``tables/``        sparse count tables, Gaussian moments, work in bounded chunks
``schema/``        the schema and encoder (:class:`~stream_nb.stats.schema.Schema`, ``stats.schema``): classes,
                   features, values; promotions; one event, runs and frames as indices
``selection/``     the pair and tuple cells kept by candidate selection
``budget/``        the memory budget: dense tables while they fit, sparse beyond; shared pair tables
``forgetting/``    captures of the counts, their differences, subtracting and scaling; journals of
                   what events added (kept by receipts), after promotions too
``store/``         :class:`Stats` and :class:`TwoLayerStats`: the count tables' capacity, adding, removing,
                   merging, state, the counts a promotion moves
=================  ==================================================================
"""

from .budget import DEFAULT_MEMORY_BUDGET
from .values import Columns
from .selection import cmi_from_cells, mutual_information_with_class, pair_evidence, set_pair_rule
from .discretiser import ALPHA as G_TEST_ALPHA, chi2_quantile
from .selection import choose_tuples, pair_tests, revise_tuples
from .discretiser import Discretiser
from .forgetting import (capture, capture_difference, capture_nbytes, count_difference, replace_counts, scale_counts,
                          subtract_counts)
from .store import TwoLayerStats
from .schema import frame_events
from .forgetting import JournalReader, JournalWriter
from .discretiser import mdl_cuts
from .tables import gaussian_loglik, variance_floor
from .values import is_missing_label, validate_label
from .tables import SparseTable
from .store import Stats
from .values import BINNED, CAT, GAUSS, NUMERIC_LIMIT, VALUE_GROUPS, Encoded, check_event, describe_type, json_type

__all__ = [
    "BINNED", "CAT", "DEFAULT_MEMORY_BUDGET", "GAUSS", "VALUE_GROUPS", "Columns", "Discretiser", "SparseTable", "Encoded", "Stats",
    "TwoLayerStats", "JournalReader", "JournalWriter", "gaussian_loglik", "mdl_cuts", "variance_floor", "NUMERIC_LIMIT",
    "check_event", "describe_type", "is_missing_label", "json_type", "validate_label",
    "capture", "capture_difference", "capture_nbytes", "count_difference", "replace_counts", "scale_counts",
    "subtract_counts", "G_TEST_ALPHA", "chi2_quantile", "cmi_from_cells", "mutual_information_with_class",
    "pair_evidence", "set_pair_rule", "choose_tuples", "pair_tests", "revise_tuples", "frame_events",
]
