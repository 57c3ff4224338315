"""Numeric features into bins: online equal-frequency bins, MDL cut points, the coarse layer as sums of
fine cells, events waiting for their bins."""

from ._discretise import Discretiser
from ._mdl import mdl_cuts
from ._joint import ALPHA, chi2_quantile, g_statistic
from ._coarse import check_backlog, coarse_edges, coarse_state, load_waiting, waiting_state
from ._waiting import WaitingEvents, count_later, entry, entry_json, map_entry
from ._fine_runs import FineRuns

__all__ = ["Discretiser", "mdl_cuts", "ALPHA", "chi2_quantile", "g_statistic", "check_backlog",
    "coarse_edges", "coarse_state", "load_waiting", "waiting_state", "WaitingEvents", "count_later", "entry",
    "entry_json", "map_entry", "FineRuns"]
