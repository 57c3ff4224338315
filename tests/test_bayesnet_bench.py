"""bench/bayesnet.py's exact computations against brute force and against sampling."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from scripts import load_script


bn = load_script("bench/bayesnet.py", "bench_bayesnet")

# A 2-attribute network small enough to work out by hand: class y in {0, 1},
# a0 in {0, 1} (parent: y), a1 in {0, 1, 2} (parents: y and a0).
PRIOR = [0.6, 0.4]
A0 = [[[0.8, 0.2]], [[0.3, 0.7]]]  # P(a0 | y)
A1 = [  # P(a1 | y, a0)
    [[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]],
    [[0.2, 0.2, 0.6], [0.5, 0.4, 0.1]],
]


def tiny():
    return bn.TreeBayesNet(PRIOR, [-1, 0], [A0, A1])


def brute_joint(y, a0, a1):
    return PRIOR[y] * A0[y][0][a0] * A1[y][a0][a1]


def test_joint_is_the_product_of_the_tables():
    net = tiny()
    J = net.joint()
    assert J.shape == (2, 2, 3)
    for y, a0, a1 in itertools.product(range(2), range(2), range(3)):
        assert J[y, a0, a1] == pytest.approx(brute_joint(y, a0, a1), abs=1e-15)
    assert J.sum() == pytest.approx(1.0)


def test_optimal_accuracy_complete_by_hand():
    # Σ_x max_y P(y, x), written out over the 6 attribute combinations
    by_hand = sum(max(brute_joint(0, a0, a1), brute_joint(1, a0, a1)) for a0 in range(2) for a1 in range(3))
    # the same numbers, worked out on paper:
    # a0=0: y0: .6*.8*(.7,.2,.1) = (.336,.096,.048); y1: .4*.3*(.2,.2,.6) = (.024,.024,.072)
    # a0=1: y0: .6*.2*(.1,.3,.6) = (.012,.036,.072); y1: .4*.7*(.5,.4,.1) = (.14,.112,.028)
    paper = 0.336 + 0.096 + 0.072 + 0.14 + 0.112 + 0.072
    assert by_hand == pytest.approx(paper)
    assert tiny().optimal_accuracy(0.0) == pytest.approx(paper, abs=1e-12)


@pytest.mark.parametrize("r", [0.1, 0.3, 0.5, 0.9, 1.0])
def test_optimal_accuracy_under_mcar_by_enumeration(r):
    # every missingness pattern with its probability; the classifier sees only the observed attributes
    total = 0.0
    for m0, m1 in itertools.product([False, True], repeat=2):
        weight = (r if m0 else 1 - r) * (r if m1 else 1 - r)
        vals0 = [None] if m0 else range(2)
        vals1 = [None] if m1 else range(3)
        acc = 0.0
        for v0 in vals0:
            for v1 in vals1:
                acc += max(
                    sum(
                        brute_joint(y, a0, a1)
                        for a0 in range(2)
                        for a1 in range(3)
                        if (v0 is None or a0 == v0) and (v1 is None or a1 == v1)
                    )
                    for y in range(2)
                )
        total += weight * acc
    assert tiny().optimal_accuracy(r) == pytest.approx(total, abs=1e-12)
    if r == 1.0:
        assert total == pytest.approx(max(PRIOR))  # nothing observed: guess the likeliest class


def test_posterior_by_hand_for_every_pattern():
    net = tiny()
    X = np.array([[a0, a1] for a0 in range(2) for a1 in range(3)] * 4)
    obs = np.repeat(np.array(list(itertools.product([True, False], repeat=2))), 6, axis=0)
    P = net.posterior(X, obs)
    for (a0, a1), (o0, o1), p in zip(X, obs, P):
        joint = [
            sum(brute_joint(y, u, v) for u in range(2) for v in range(3) if (not o0 or u == a0) and (not o1 or v == a1))
            for y in range(2)
        ]
        assert p == pytest.approx([j / sum(joint) for j in joint], abs=1e-12)
    # the optimal classifier's expected accuracy on events is the mean of its max posterior
    assert net.optimal_accuracy_on(X, obs) == pytest.approx(P.max(1).mean())


def test_sampling_frequencies_converge_to_the_joint():
    net = tiny()
    n = 200_000
    X, y = net.sample(n, seed=7)
    freq = np.zeros((2, 2, 3))
    np.add.at(freq, (y, X[:, 0], X[:, 1]), 1.0)
    freq /= n
    J = net.joint()
    # each cell is a binomial proportion: within 5 standard errors
    assert (np.abs(freq - J) <= 5 * np.sqrt(J * (1 - J) / n) + 1e-12).all()
    # and the sampled events are seeded: same seed, same events; another seed, other events
    X2, y2 = net.sample(n, seed=7)
    assert (X == X2).all() and (y == y2).all()
    X3, _ = net.sample(n, seed=8)
    assert not (X == X3).all()


def test_random_network_is_a_tan_and_its_optimal_accuracy_matches_sampling():
    net = bn.TreeBayesNet.random(seed=0)
    F = len(net.n_values)
    assert F == 8 and net.n_classes == 3 and set(net.n_values) <= {3, 4}
    # a tree over the attributes: one root, every other attribute has exactly one earlier attribute parent
    assert net.parents[0] == -1 and all(0 <= p < i for i, p in enumerate(net.parents) if i > 0)
    assert len(net.edges) == F - 1
    J = net.joint()
    assert J.shape == (3,) + tuple(net.n_values) and J.sum() == pytest.approx(1.0)
    # the same network from the same seed
    other = bn.TreeBayesNet.random(seed=0)
    assert other.parents == net.parents and all(np.array_equal(a, b) for a, b in zip(other.cpts, net.cpts))

    n = 60_000
    X, y = net.sample(n, seed=3)
    # the true posterior's decisions on sampled events: their accuracy estimates the exact optimum
    for r in (0.0, 0.3):
        obs = np.random.default_rng(11).random(X.shape) >= r
        exact = net.optimal_accuracy(r)
        post = net.posterior(X, obs)
        realised = (post.argmax(1) == y).mean()
        assert abs(realised - exact) <= 5 * math.sqrt(exact * (1 - exact) / n)
        # the mean max posterior is unbiased for the same quantity (and less noisy)
        assert abs(net.optimal_accuracy_on(X, obs) - exact) <= 5 * math.sqrt(exact * (1 - exact) / n)
    # missing values never help
    accs = [net.optimal_accuracy(r) for r in (0.0, 0.1, 0.3, 0.5, 1.0)]
    assert all(a >= b for a, b in zip(accs, accs[1:]))
    assert accs[-1] == pytest.approx(net.prior.max())


def test_tables_are_validated():
    with pytest.raises(ValueError, match="before it"):
        bn.TreeBayesNet(PRIOR, [-1, 1], [A0, A1])
    with pytest.raises(ValueError, match="distribution"):
        bn.TreeBayesNet(PRIOR, [-1, 0], [A0, [[[0.7, 0.2, 0.2], [0.1, 0.3, 0.6]], A1[1]]])
    with pytest.raises(ValueError, match="too big"):
        bn.TreeBayesNet.random(n_values=(4,) * 12, seed=0)
