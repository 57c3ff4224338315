"""Back-off estimates of a child given its parent value: thin pair cells shrunk toward a coarser estimate.

With Lidstone smoothing TAN's estimate of an attribute given the class and its tree parent is

.. math::

    \\hat P(x_i \\mid c, x_j) = \\frac{n_{c x_j x_i} + \\alpha}{n_{c x_j} + \\alpha N_i},

pulled toward the uniform 1 / N_i where the cell is thin. The back-off estimate (the m-estimate of
Cestnik, 1990, whose prior is an estimate one level up, as the hierarchical Dirichlet estimates of
Petitjean et al., 2018, back off from a context to a smaller one, here with a fixed concentration m)
pulls it toward a coarser estimate instead:

.. math::

    \\hat P(x_i \\mid c, x_j) = \\frac{n_{c x_j x_i} + m \\hat P_0}{n_{c x_j} + m},

with :math:`\\hat P_0` either the attribute's class-conditional estimate (``"class"``)

.. math::

    \\hat P(x_i \\mid c) = \\frac{n_{c x_i} + \\alpha}{n_{c i} + \\alpha N_i},

or its estimate given the parent over all classes (``"parent"``)

.. math::

    \\hat P(x_i \\mid x_j) = \\frac{n_{x_j x_i} + \\alpha}{n_{x_j} + \\alpha N_i}.

A cell seen in many events keeps its own distribution; a thin one says what the coarser context
says. Both sum to 1 over x_i. Which is better depends on the data: where attributes depend
strongly on each other and weakly on the class (the wide networks of ``bench/wide_known.py``),
the parent's distribution is the closer one; where the class dominates, the class's.
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
