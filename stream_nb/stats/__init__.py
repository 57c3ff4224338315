"""The count store: the additive sufficient statistics every model is a view of."""

from ._discretise import Discretiser
from ._running import exclusive_counts, grouped_exclusive_counts, naive_terms, running_moments, tree_terms
from ._store import BINNED, CAT, GAUSS, Encoded, Stats, gaussian_loglik

__all__ = [
    "BINNED", "CAT", "GAUSS", "Discretiser", "Encoded", "Stats", "exclusive_counts", "gaussian_loglik",
    "grouped_exclusive_counts", "naive_terms", "running_moments", "tree_terms",
]
