"""Back-off estimates of a child given its parent value: thin pair cells shrunk toward a coarser estimate.

TAN's ``Tree(backoff=m)``: P̂(x_i | c, x_j) = (n_{c x_j x_i} + m P̂_0) / (n_{c x_j} + m), with P̂_0 the
class-conditional estimate P̂(x_i | c) (``"class"``) or the estimate given the parent over all classes,
P̂(x_i | x_j) (``"parent"``). The docs' *The models* page gives the estimates and their sources.
"""

from __future__ import annotations

import numpy as np

__all__ = ["log_child", "target"]


def target(to: str, pair, pair_total, value, value_total, a: float, an) -> np.ndarray:
    """P̂_0 of the back-off: ``"class"``, (``value`` + a) / (``value_total`` + an) (n_c,x_i and n_c,i);
    ``"parent"``, the pair counts ``pair`` (n_c,x_j,x_i) and ``pair_total`` (n_c,x_j) summed over the
    classes (axis 0) the same way. Arrays broadcast together; the result keeps the class axis."""
    if to == "parent":
        return (pair.sum(0, keepdims=True) + a) / (pair_total.sum(0, keepdims=True) + an)
    return (value + a) / (value_total + an)


def log_child(pair, pair_total, a: float, an, backoff: float | None, prior=None) -> np.ndarray:
    """log P̂(x_i | c, x_j) from the pair count ``pair`` (n_c,x_j,x_i) and its parent's ``pair_total``
    (n_c,x_j, over the events that observed x_i), ``a`` (alpha) and ``an`` (alpha N_i): with ``backoff``
    m > 0 the m-estimate toward ``prior`` (:func:`target`), else Lidstone's. Arrays broadcast together."""
    if backoff:
        return np.log(pair + backoff * prior) - np.log(pair_total + backoff)
    return np.log(pair + a) - np.log(pair_total + an)
