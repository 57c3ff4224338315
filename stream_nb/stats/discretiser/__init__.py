"""Numeric features into bins: online equal-frequency bins, MDL cut points, the coarse layer as sums of fine cells, events waiting for their bins."""

from ._discretise import Discretiser
from ._mdl import entropy_bits, mdl_cuts
from ._joint import ALPHA, chi2_quantile, g_statistic, quantiles_inform
from ._coarse import check_backlog, coarse_edges, coarse_state, load_waiting, waiting_state
from ._waiting import WaitingEvents, check_exp, count_later, entry, entry_json, exp_json, follow_promotion, map_entry
from ._fine_runs import FineRuns

__all__ = [
    "Discretiser",
    "entropy_bits",
    "mdl_cuts",
    "ALPHA",
    "chi2_quantile",
    "g_statistic",
    "quantiles_inform",
    "check_backlog",
    "coarse_edges",
    "coarse_state",
    "load_waiting",
    "waiting_state",
    "WaitingEvents",
    "check_exp",
    "count_later",
    "entry",
    "entry_json",
    "exp_json",
    "follow_promotion",
    "map_entry",
    "FineRuns",
]
