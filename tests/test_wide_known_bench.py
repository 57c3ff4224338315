"""bench/wide_known.py's ``--asymptote`` oracle: its exact tables against brute-force enumeration of every event."""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from scripts import load_script

ROOT = Path(__file__).resolve().parent.parent
V, C = 6, 4


wk = load_script("bench/wide_known.py", "bench_wide_known")

# a forest of two trees given the class: a0 -> a1 -> (a3, a4), and a2 alone
PARENTS = [(), (0,), (), (1,), (1,)]


def _tables(parents, seed=5):
    rng = np.random.default_rng(seed)
    return [rng.dirichlet(np.ones(V), size=(C,) + (V,) * len(pa)) for pa in parents]


def _enumerate(parents, tables):
    """Every event of the network, (V^F, F), and its exact P(x | c) for each class, (C, V^F)."""
    X = np.array(list(itertools.product(range(V), repeat=len(parents))))
    joint = np.ones((C, len(X)))
    for c in range(C):
        for i, pa in enumerate(parents):
            joint[c] *= tables[i][(c, *(X[:, q] for q in pa), X[:, i])]
    return X, joint


def test_marginals_and_pair_tables_equal_the_sums_over_every_event():
    tables = _tables(PARENTS)
    X, joint = _enumerate(PARENTS, tables)
    assert joint.sum(1) == pytest.approx(np.ones(C), abs=1e-12)
    marg = wk.class_marginals(PARENTS, tables)
    for c in range(C):
        Q = wk.pair_tables(PARENTS, tables, c, marg)
        for i in range(len(PARENTS)):
            counted = np.bincount(X[:, i], weights=joint[c], minlength=V)
            np.testing.assert_allclose(marg[c, i], counted, atol=1e-14)
            for j in range(len(PARENTS)):
                pair = np.zeros((V, V))
                np.add.at(pair, (X[:, i], X[:, j]), joint[c])
                np.testing.assert_allclose(Q[i, j], pair, atol=1e-14, err_msg=f"class {c}, pair ({i}, {j})")


def test_spode_scores_are_the_textbook_product_over_every_event():
    tables = _tables(PARENTS, seed=7)
    X, joint = _enumerate(PARENTS, tables)
    prior = np.array([0.1, 0.2, 0.3, 0.4])
    rows = X[[0, 1234, 5000, 7775]]
    S = wk.spode_scores(PARENTS, tables, rows, prior)
    for n, x in enumerate(rows):
        for c in range(C):
            for p in range(len(PARENTS)):
                given = X[:, p] == x[p]
                expected = np.log(prior[c] * joint[c, given].sum())
                for i in range(len(PARENTS)):
                    if i != p:
                        expected += np.log(joint[c, given & (X[:, i] == x[i])].sum() / joint[c, given].sum())
                assert S[n, c, p] == pytest.approx(expected, abs=1e-10)


def test_the_oracle_finds_the_optimum_where_a_family_represents_the_network():
    # a star (every attribute's parent is a0): the SPODE on a0 is the network itself, naive Bayes is not
    parents = [()] + [(0,)] * 5
    tables = _tables(parents, seed=3)
    X, y = wk.sample(parents, tables, 2000, 11)
    rows = {name: (accuracy, expected) for name, accuracy, expected in wk.asymptote(parents, tables, X, y, tops=(1,))}
    optimum = rows["Bayes optimum = TAN with the planted tree"]
    assert optimum[1] == pytest.approx(wk.posterior(parents, tables, X).max(1).mean())
    assert rows["one SPODE, the best super-parent"] == pytest.approx(optimum)
    assert rows["NaiveBayes"][1] < optimum[1] - 0.01
    assert rows["NaiveBayes"][1] <= rows["AODE (all 6 super-parents)"][1] <= optimum[1] + 1e-12


def test_a_network_with_two_attribute_parents_is_refused_by_name():
    with pytest.raises(ValueError, match=r"attribute 2 has parents \(0, 1\)"):
        wk.class_marginals([(), (0,), (0, 1)], _tables([(), (0,), (0, 1)]))


def test_the_command_prints_the_table_and_says_why_k2_is_not_computed():
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "wide_known.py"), "--asymptote", "--widths", "8",
         "--structures", "tree,k2", "--holdout", "300", "--optimum-events", "1000", "--top", "2"],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    tree = [line for line in lines if line.startswith("| tree F=8 |")]
    assert [line.split(" | ")[1] for line in tree] == [
        "Bayes optimum, mean of max P(y given x) over 1,000 fresh events (se "
        + tree[0].split("(se ")[1].split(")")[0] + ")",
        "Bayes optimum = TAN with the planted tree", "NaiveBayes", "AODE (all 8 super-parents)",
        "AODE, the 2 super-parents of highest I(X_p; C)",
        tree[5].split(" | ")[1],
        "one SPODE, mean over its super-parent", "one SPODE, the best super-parent",
    ]
    assert "chosen greedily on the holdout itself" in tree[5]
    assert any(line.startswith("| k2 F=8 | not computed") for line in lines)


def test_the_expected_accuracy_and_its_paired_difference_are_the_sums_by_hand():
    post = np.array([[0.7, 0.1, 0.1, 0.1], [0.2, 0.5, 0.2, 0.1], [0.25, 0.25, 0.4, 0.1]])
    first = {}
    text = wk.expected_cell(post, [0, 1, 2], first, "20000", "Bayes")
    assert text == f"expected {(0.7 + 0.5 + 0.4) / 3:.4f}"
    # against the first: each event's difference of exact probabilities, then their mean and its error
    text = wk.expected_cell(post, [1, 1, 0], first, "20000", "other")
    d = np.array([0.1 - 0.7, 0.0, 0.25 - 0.4])
    assert text == (f"expected {(0.1 + 0.5 + 0.25) / 3:.4f}, {d.mean():+.4f} ± {d.std(ddof=1) / np.sqrt(3):.4f} "
                    "against Bayes")
    assert wk.expected_cell(post, [0, 1, 2], first, "100000", "third") == f"expected {1.6 / 3:.4f}"


def test_the_models_table_gives_each_models_expected_accuracy_against_the_first():
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "wide_known.py"), "--widths", "8", "--structures", "tree",
         "--checkpoints", "500", "--holdout", "300", "--optimum-events", "1000", "--models", "NaiveBayes,TAN"],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    rows = {line.split(" | ")[1]: line for line in proc.stdout.splitlines() if line.startswith("| tree F=8 |")}
    assert "against" not in rows["NaiveBayes"] and "expected 0." in rows["NaiveBayes"]
    assert " against NaiveBayes" in rows["TAN"]
