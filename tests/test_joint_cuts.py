"""The coarse layer keeps a feature's quantile cuts only when they tell more of the class (stats/_joint.py).

The statistic is checked against the textbook formula summed over raw events,
the chi-square quantile against the table, and the rule on streams whose
answer is known: two coordinates that decide the class only together (XOR)
keep their cuts, a feature of noise loses them.
"""

from __future__ import annotations

import math
import random
from collections import Counter

import numpy as np
import pytest

from stream_nb import AODE, MDL, TAN
from stream_nb.stats.discretiser import chi2_quantile, g_statistic


def _brute_cmi_g(triples) -> float:
    """2 N I(C; X | Z) in nats, summed event by event from the textbook definition."""
    n = len(triples)
    cxz = Counter(triples)
    cz = Counter((c, z) for c, _, z in triples)
    xz = Counter((x, z) for _, x, z in triples)
    z_ = Counter(z for _, _, z in triples)
    return 2 * n * sum(k / n * math.log(k * z_[z] / (cz[c, z] * xz[x, z])) for (c, x, z), k in cxz.items())


def _table(triples, C, X, Z) -> np.ndarray:
    n = np.zeros((C, X, Z))
    for c, x, z in triples:
        n[c, x, z] += 1
    return n


@pytest.mark.parametrize("seed", range(4))
def test_g_statistic_is_the_conditional_mutual_information_of_the_events(seed):
    rng = random.Random(seed)
    triples = [(rng.randrange(3), rng.randrange(5), rng.randrange(4)) for _ in range(400)]
    # a dependence of C on X within some strata of Z
    triples += [(x % 3, x, 1) for x in (rng.randrange(5) for _ in range(100))]
    assert g_statistic(_table(triples, 3, 5, 4)) == pytest.approx(_brute_cmi_g(triples), rel=1e-12)


def test_the_gain_of_finer_cells_is_the_statistic_given_the_coarser_cell():
    """G(B) - G(A) = 2 N I(C; X_B | X_A, Z) when A's cells are unions of B's: what the rule tests."""
    rng = random.Random(7)
    coarse_of = [0, 0, 1, 1, 1, 2]  # six fine cells in three coarse ones
    triples = []
    for _ in range(600):
        x, z = rng.randrange(6), rng.randrange(3)
        c = (x + z) % 2 if rng.random() < 0.6 else rng.randrange(2)
        triples.append((c, x, z))
    g_b = g_statistic(_table(triples, 2, 6, 3))
    g_a = g_statistic(_table([(c, coarse_of[x], z) for c, x, z in triples], 2, 3, 3))
    given_both = _brute_cmi_g([(c, x, (coarse_of[x], z)) for c, x, z in triples])
    assert g_b - g_a == pytest.approx(given_both, rel=1e-12)


@pytest.mark.parametrize("p, df, table", [(0.99, 1, 6.635), (0.99, 5, 15.086), (0.999, 10, 29.588),
                                          (0.99, 30, 50.892), (0.999, 100, 149.449)])
def test_chi2_quantile_is_within_one_percent_of_the_table(p, df, table):
    assert chi2_quantile(p, df) == pytest.approx(table, rel=0.01)


def _xor_with_noise(n: int, seed: int):
    rng = random.Random(seed)
    for _ in range(n):
        a, b, noise = rng.random(), rng.random(), rng.random()
        y = "yes" if (a > 0.5) != (b > 0.5) else "no"
        if rng.random() < 0.05:
            y = "no" if y == "yes" else "yes"
        yield {"a": a, "b": b, "noise": noise}, y


@pytest.mark.parametrize("make", [TAN, AODE])
def test_cuts_that_inform_only_jointly_are_kept_and_those_of_noise_dropped(make):
    model = make()
    for x, y in _xor_with_noise(4000, 1):
        model.learn_one(x, y)
    cuts = model.cut_points()
    # alone, neither coordinate tells the class (MDL cuts neither); together they decide it
    assert cuts["a"] and cuts["b"]
    assert cuts["noise"] == []
    # and they are what the model learns the class from: with MDL's cuts alone (bins=1) it cannot
    test = list(_xor_with_noise(2000, 2))
    alone = make(numeric=MDL(bins=1))
    for x, y in _xor_with_noise(4000, 1):
        alone.learn_one(x, y)
    assert alone.cut_points() == {"a": [], "b": [], "noise": []}
    assert sum(model.predict_one(x) == y for x, y in test) / len(test) > 0.75
    assert sum(alone.predict_one(x) == y for x, y in test) / len(test) < 0.6


def test_without_a_partner_quantile_cuts_go_where_the_feature_alone_tells_nothing():
    """A store without pair counts (naive Bayes with numeric="bins") tests each feature alone."""
    from stream_nb import NaiveBayes

    model = NaiveBayes(numeric=MDL())
    for x, y in _xor_with_noise(4000, 3):
        model.learn_one(x, y)
    assert model.cut_points() == {"a": [], "b": [], "noise": []}


@pytest.mark.slow
@pytest.mark.parametrize("make", [TAN, AODE])
def test_under_a_memory_budget_the_pairs_kept_are_the_ones_tested(make):
    """Sparse pair tables that keep only some pairs (a selection under the budget): the test reads the
    pairs the store counts, and still tells the XOR coordinates from thirty features of noise."""
    rng = random.Random(0)
    model = make(memory_budget=3_000_000)
    for _ in range(3000):
        a, b = rng.random(), rng.random()
        model.learn_one({"a": a, "b": b, **{f"n{k}": rng.random() for k in range(30)}},
                        "yes" if (a > 0.5) != (b > 0.5) else "no")
    fine = model._stats.fine
    assert fine.pairs_sparse and fine.pair_allowed is not None  # the path this test is about
    cuts = model.cut_points()
    assert len(cuts["a"]) == len(cuts["b"]) == 4
    assert all(cuts[f"n{k}"] == [] for k in range(30))
