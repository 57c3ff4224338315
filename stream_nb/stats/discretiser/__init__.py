"""Numeric features into bins: online equal-frequency bins, MDL cut points, the coarse layer as sums of
fine cells, events waiting for their bins."""

from ._discretise import Discretiser
from ._mdl import mdl_cuts
from ._joint import ALPHA, chi2_quantile, g_statistic
from ._coarse import coarse_edges, coarse_state
from ._waiting import Waiting, check_backlog, entry_json

__all__ = ["Discretiser", "mdl_cuts", "ALPHA", "chi2_quantile", "g_statistic", "coarse_edges", "coarse_state",
    "Waiting", "check_backlog", "entry_json"]
