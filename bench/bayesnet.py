"""A known tree-augmented Bayesian network: sample streams from it, and compute its Bayes-optimal accuracy exactly.

The network has a class ``y`` and categorical attributes ``a0, a1, ...``.
Every attribute's parents are the class and at most one other attribute, and
the attribute edges form one tree rooted at ``a0``: the true model is a TAN.
:meth:`TreeBayesNet.random` draws the tree (each attribute ``a_i``, i > 0,
hangs under a uniformly chosen earlier attribute) and the tables once from a
seeded generator: the class prior from Dirichlet(``prior_concentration``) and
each row P(a_i | y, a_pa(i)) from a symmetric Dirichlet(``concentration``).
A concentration below 1 makes the rows peaked, so the attributes depend
strongly on the class *and* on their parent attribute; every row is a separate
draw, so the dependence on the parent differs per class (what TAN models and
naive Bayes cannot).

Everything is exact, by enumeration of the full joint table P(y, a0, ..., a_{F-1})
(C × Π N_i entries; the constructor refuses tables above ``MAX_JOINT``):

- :meth:`~TreeBayesNet.optimal_accuracy` ``(r)``: the accuracy of the
  Bayes-optimal classifier when each attribute is missing completely at random
  (MCAR) with probability ``r``, independently, and the classifier sees only
  the observed attributes:

  .. math::

      \\sum_{m \\subseteq A} r^{|m|} (1-r)^{F-|m|} \\sum_{x_o} \\max_c P(c, x_o)

  over every missingness pattern m (2^F of them), with P(c, x_o) the joint
  with the missing attributes summed out. With r = 0 it is Σ_x max_c P(c, x).
- :meth:`~TreeBayesNet.posterior` : P(c | x_o) for given events and masks,
  so :meth:`~TreeBayesNet.optimal_accuracy_on` can give the optimal
  classifier's expected accuracy on a particular set of masked events (the mean
  of max_c P(c | x_o) over them: exact given those events, and an unbiased
  estimate of ``optimal_accuracy(r)``).

Forward sampling (:meth:`~TreeBayesNet.sample`) draws y from the prior, then
the attributes in order (a parent always precedes its children), each from
its row given y and the parent's value. Values are the integers 0..N_i-1,
which stream_nb treats as categories; classes are 0..C-1.
"""

from __future__ import annotations

import itertools

import numpy as np

__all__ = ["TreeBayesNet", "MAX_JOINT"]

#: largest joint table (entries) the exact computations will build
MAX_JOINT = 5_000_000


class TreeBayesNet:
    """A Bayesian network over a class and categorical attributes whose attribute edges form a forest.

    Parameters
    ----------
    prior
        P(y), shape (C,).
    parents
        ``parents[i]``: the attribute parent of attribute i, or -1 (only the
        class). Every parent must come before its child.
    cpts
        ``cpts[i]``: P(a_i | y, a_parent), shape (C, N_parent, N_i); for an
        attribute without an attribute parent, shape (C, 1, N_i).
    """

    def __init__(self, prior, parents, cpts):
        self.prior = np.asarray(prior, dtype=float)
        self.parents = [int(p) for p in parents]
        self.cpts = [np.asarray(t, dtype=float) for t in cpts]
        C = len(self.prior)
        if len(self.cpts) != len(self.parents):
            raise ValueError("one table per attribute")
        if not np.isclose(self.prior.sum(), 1.0) or (self.prior < 0).any():
            raise ValueError("prior must be a distribution")
        for i, (p, t) in enumerate(zip(self.parents, self.cpts)):
            if p >= i:
                raise ValueError(f"attribute {i}: its parent {p} must come before it")
            n_pa = 1 if p < 0 else self.cpts[p].shape[2]
            if t.ndim != 3 or t.shape[:2] != (C, n_pa):
                raise ValueError(f"attribute {i}: table shape {t.shape}, expected ({C}, {n_pa}, N_{i})")
            if not np.allclose(t.sum(2), 1.0) or (t < 0).any():
                raise ValueError(f"attribute {i}: every row must be a distribution")
        self.n_classes = C
        self.n_values = [t.shape[2] for t in self.cpts]
        self.attributes = [f"a{i}" for i in range(len(self.cpts))]
        size = C * int(np.prod(self.n_values, dtype=np.int64))
        if size > MAX_JOINT:
            raise ValueError(f"the joint table would have {size} entries (more than {MAX_JOINT}): too big to be exact")
        self._joint = None
        self._marginals = {}

    @classmethod
    def random(
        cls,
        n_values=(3, 4, 3, 4, 3, 4, 3, 3),
        n_classes: int = 3,
        concentration: float = 0.5,
        prior_concentration: float = 10.0,
        seed: int = 0,
    ) -> "TreeBayesNet":
        """A random tree-shaped network: attribute i > 0 hangs under a uniformly chosen earlier one; Dirichlet tables."""
        rng = np.random.default_rng(seed)
        prior = rng.dirichlet(np.full(n_classes, prior_concentration))
        parents, cpts = [], []
        for i, n in enumerate(n_values):
            p = -1 if i == 0 else int(rng.integers(0, i))
            n_pa = 1 if p < 0 else n_values[p]
            parents.append(p)
            cpts.append(rng.dirichlet(np.full(n, concentration), size=(n_classes, n_pa)))
        return cls(prior, parents, cpts)

    # ------------------------------------------------------------------ exact tables

    @property
    def edges(self) -> list:
        """The attribute tree as ``(parent, child)`` names."""
        return [(self.attributes[p], self.attributes[i]) for i, p in enumerate(self.parents) if p >= 0]

    def joint(self) -> np.ndarray:
        """P(y, a0, ..., a_{F-1}) as an array of shape (C, N_0, ..., N_{F-1})."""
        if self._joint is None:
            F = len(self.cpts)
            J = self.prior.reshape((-1,) + (1,) * F)
            for i, (p, t) in enumerate(zip(self.parents, self.cpts)):
                shape = [1] * (F + 1)
                shape[0] = self.n_classes
                shape[1 + i] = self.n_values[i]
                if p < 0:
                    J = J * t[:, 0, :].reshape(shape)
                else:
                    shape[1 + p] = self.n_values[p]
                    # t is (C, N_p, N_i); p < i, so its axes are already in the joint's order
                    J = J * t.reshape(shape)
            self._joint = J
        return self._joint

    def marginal(self, observed) -> np.ndarray:
        """P(y, x_o): the joint with every attribute not in ``observed`` summed out; axes (y, observed in order)."""
        key = tuple(sorted(int(i) for i in observed))
        if key not in self._marginals:
            missing = tuple(1 + i for i in range(len(self.cpts)) if i not in key)
            self._marginals[key] = self.joint().sum(axis=missing) if missing else self.joint()
        return self._marginals[key]

    def optimal_accuracy(self, missing_rate: float = 0.0) -> float:
        """Exact accuracy of the Bayes-optimal classifier under MCAR missingness at ``missing_rate`` (see the module doc)."""
        r = float(missing_rate)
        F = len(self.cpts)
        if r == 0.0:
            return float(self.joint().max(axis=0).sum())
        total = 0.0
        for k in range(F + 1):
            weight = r**k * (1.0 - r) ** (F - k)
            if weight == 0.0:
                continue
            for miss in itertools.combinations(range(F), k):
                observed = [i for i in range(F) if i not in miss]
                total += weight * float(self.marginal(observed).max(axis=0).sum())
        return total

    def posterior(self, X: np.ndarray, observed: np.ndarray | None = None) -> np.ndarray:
        """P(y | x_o) per row, shape (n, C): ``X`` (n, F) integer values, ``observed`` (n, F) booleans (default all)."""
        X = np.asarray(X, dtype=np.int64)
        n, F = X.shape
        observed = np.ones((n, F), dtype=bool) if observed is None else np.asarray(observed, dtype=bool)
        out = np.empty((n, self.n_classes))
        patterns, inverse = np.unique(observed, axis=0, return_inverse=True)
        for k, pat in enumerate(patterns):
            rows = np.flatnonzero(inverse.ravel() == k)
            cols = np.flatnonzero(pat)
            M = self.marginal(cols)
            if len(cols):
                joint = M[(slice(None),) + tuple(X[rows][:, cols].T)]  # (C, rows)
            else:
                joint = np.repeat(M[:, None], len(rows), axis=1)
            out[rows] = (joint / joint.sum(0, keepdims=True)).T
        return out

    def optimal_accuracy_on(self, X: np.ndarray, observed: np.ndarray | None = None) -> float:
        """Expected accuracy of the Bayes-optimal classifier on these (masked) events: mean of max_c P(c | x_o)."""
        return float(self.posterior(X, observed).max(1).mean())

    # ------------------------------------------------------------------ sampling

    def sample(self, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
        """Forward sampling: ``(X, y)`` with X of shape (n, F) (attribute values) and y of shape (n,)."""
        rng = np.random.default_rng(seed)
        y = _draw(rng, np.broadcast_to(self.prior, (n, self.n_classes)))
        X = np.empty((n, len(self.cpts)), dtype=np.int64)
        for i, (p, t) in enumerate(zip(self.parents, self.cpts)):
            pa = np.zeros(n, dtype=np.int64) if p < 0 else X[:, p]
            X[:, i] = _draw(rng, t[y, pa])
        return X, y

    def events(self, n: int, seed: int) -> list:
        """``n`` sampled events as river-style ``(x, y)`` pairs: ``({"a0": 2, ...}, 1)``."""
        X, y = self.sample(n, seed)
        names = self.attributes
        return [(dict(zip(names, row)), int(c)) for row, c in zip(X.tolist(), y.tolist())]


def _draw(rng, P: np.ndarray) -> np.ndarray:
    """One categorical draw per row of the probability matrix ``P`` (n, K)."""
    cdf = np.cumsum(P, axis=1)
    u = rng.random(len(P))[:, None] * cdf[:, -1:]
    return np.minimum((u >= cdf).sum(1), P.shape[1] - 1).astype(np.int64)
