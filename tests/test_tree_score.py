"""TAN's ``tree_score="bayes"``: the edge gains against Weka's formula computed by brute force from the
events, the tree against Weka's TAN search run literally on those gains, the sparse path against the
dense one, and the parameter through checks and snapshots."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

import stream_nb
from stream_nb import TAN, Ignore, Tree
from stream_nb.exceptions import ConfigError
from stream_nb.learners._tree_score import bayesian_edge_gains, bayesian_edge_weights


def weka_local_score(table, alpha):
    """Weka's ``calcScoreOfCounts`` (score type BAYES) of ``{parent config: {value: count}}`` over
    ``n_values`` values, written out as in LocalScoreSearchAlgorithm.java."""
    rows, n_values = table
    score = 0.0
    for counts in rows.values():
        total = 0.0
        for v in range(n_values):
            n = counts.get(v, 0)
            score += math.lgamma(alpha + n)
            total += alpha + n
        score -= math.lgamma(total)
        score -= n_values * math.lgamma(alpha)
        score += math.lgamma(n_values * alpha)
    return score


def brute_gains(events, names, alpha, w=1.0):
    """``{(parent, head): gain}`` by counting the events again for every ordered pair, each with weight ``w``."""
    values = {f: sorted({x[f] for x, _ in events}, key=str) for f in names}
    out = {}
    for head in names:
        index = {v: k for k, v in enumerate(values[head])}
        base = {}
        for x, y in events:
            base.setdefault(y, {}).setdefault(index[x[head]], 0)
            base[y][index[x[head]]] += w
        base_score = weka_local_score((base, len(index)), alpha)
        for parent in names:
            if parent == head:
                continue
            rows = {}
            for x, y in events:
                row = rows.setdefault((y, x[parent]), {})
                row[index[x[head]]] = row.get(index[x[head]], 0) + w
            out[parent, head] = weka_local_score((rows, len(index)), alpha) - base_score
    return out


def events_of(n, seed):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        y = rng.choice("pqr")
        a = rng.choice("uvw")
        b = a if rng.random() < 0.6 else rng.choice("uvwz")  # b follows a
        c = rng.choice([0, 1]) if y != "p" else 1
        d = rng.choice(["s", "t"])  # independent of everything
        out.append(({"a": a, "b": b, "c": c, "d": d}, y))
    return out


def learned(events, score="bayes", **kwargs):
    model = TAN(search=Tree(score=score, rebuild_every=0), **kwargs)
    for x, y in events:
        model.learn_one(x, y)
    return model


def test_a_gain_by_hand():
    # one class, a binary head h and a binary parent j, four events: (j, h) = (0, 0), (0, 0), (1, 1), (1, 0)
    events = [({"h": h, "j": j}, "c") for j, h in ((0, 0), (0, 0), (1, 1), (1, 0))]
    model = learned(events)
    s = model._stats
    g = bayesian_edge_gains(s, 1.0)
    lg = math.lgamma
    # with alpha 1: base h | c: counts (3, 1); with j: (2, 0) and (1, 1)
    base = lg(1 + 3) + lg(1 + 1) - lg(2 + 4) + lg(2)
    with_j = (lg(1 + 2) + lg(1) - lg(2 + 2) + lg(2)) + (lg(1 + 1) + lg(1 + 1) - lg(2 + 2) + lg(2))
    h, j = s.feature_index["h"], s.feature_index["j"]
    assert g[j, h] == pytest.approx(with_j - base, rel=1e-12)
    # K2 by hand: base 3! 1! 1! / 5! = 1/20; with j: (2! 0! 1! / 3!) (1! 1! 1! / 3!) = 1/18
    assert g[j, h] == pytest.approx(math.log(20 / 18), rel=1e-12)


@pytest.mark.parametrize("alpha", [1.0, 0.5])
def test_gains_are_wekas_score_on_the_counts(alpha):
    events = events_of(300, seed=1)
    model = learned(events, alpha=alpha)
    s = model._stats
    g = bayesian_edge_gains(s, alpha)
    names = ["a", "b", "c", "d"]
    for (parent, head), want in brute_gains(events, names, alpha).items():
        assert g[s.feature_index[parent], s.feature_index[head]] == pytest.approx(want, rel=1e-10, abs=1e-9)
    w = bayesian_edge_weights(s, alpha)
    assert np.array_equal(w, np.maximum(g, g.T))


@pytest.mark.parametrize("w", [0.5, 3.0])
def test_gains_of_weighted_counts_are_wekas_score(w):
    # weighted events: counts that are no whole numbers (0.5: lgamma computed) or whole multiples of 3 (read
    # from the compiled gains' table of lgamma at whole counts)
    events = events_of(120, seed=6)
    model = TAN(search=stream_nb.Tree(rebuild_every=0), missing=stream_nb.Ignore())
    for x, y in events:
        model.learn_one(x, y, w=w)
    g = bayesian_edge_gains(model._stats, 1.0)
    s = model._stats
    for (parent, head), want in brute_gains(events, ["a", "b", "c", "d"], 1.0, w).items():
        assert g[s.feature_index[parent], s.feature_index[head]] == pytest.approx(want, rel=1e-10, abs=1e-9)


def test_sparse_pairs_give_the_dense_gains():
    events = events_of(200, seed=2)
    dense, sparse = learned(events, memory_budget=None), learned(events, memory_budget=0)
    assert sparse._stats.pairs_sparse and not dense._stats.pairs_sparse
    np.testing.assert_allclose(bayesian_edge_gains(sparse._stats, 1.0), bayesian_edge_gains(dense._stats, 1.0),
                               rtol=1e-12, atol=1e-9)


def weka_tan_edges(W, feats):
    """Weka's TAN.buildStructure on the gains ``W[head, tail]`` (the Java loop, literally): its undirected edges."""
    linked, edges = set(), set()

    def best(allowed):
        found = None
        for h in feats:
            for t in feats:
                if h != t and allowed(h, t) and (found is None or W[h, t] > found[0]):
                    found = (W[h, t], t, h)
        return found

    for k in range(len(feats) - 1):
        _, n1, n2 = best((lambda h, t: True) if k == 0 else (lambda h, t: (h in linked) != (t in linked)))
        edges.add(frozenset((n1, n2)))
        linked |= {n1, n2}
    return edges


@pytest.mark.parametrize("seed", [3, 4, 5])
def test_the_tree_is_wekas_tan_search(seed):
    rng = random.Random(seed)
    events = []
    for _ in range(400):
        y = rng.random() < 0.5
        x = {"f0": rng.choice("abc")}
        for k in range(1, 6):  # a random chain of dependences, each feature on an earlier one
            prev = x[f"f{rng.randrange(k)}"]
            x[f"f{k}"] = prev if rng.random() < 0.5 else rng.choice("abcd")
        events.append((x, y))
    model = learned(events, score="bayes")
    model.rebuild()
    s = model._stats
    g = bayesian_edge_gains(s, model._alpha)
    ours = {frozenset((s.feature_index[p], s.feature_index[c])) for p, c, _ in model.tree}
    assert ours == weka_tan_edges(g.T, list(range(len(s.features))))  # W[head, tail] = g[tail, head]
    # tree still reports each edge's CMI
    cmi = stream_nb.learners._structure.conditional_mutual_information(s)
    assert [e[2] for e in model.tree] == [cmi[s.feature_index[p], s.feature_index[c]] for p, c, _ in model.tree]


def test_a_sparse_table_of_many_values_loses_to_a_real_dependence():
    # "many" takes 150 values over 300 events: its CMI with a (or b) is nearly H(a | y), larger than the
    # real I(a; b | y), so the CMI tree hangs a and b on it; its score gains are negative, so Bayes' tree links a, b
    rng = random.Random(6)
    events = []
    for i in range(300):
        a = rng.choice("uv")
        events.append(({"a": a, "b": a if rng.random() < 0.8 else rng.choice("uv"), "many": f"m{i % 150}"},
                       rng.random() < 0.5))
    edges = {}
    for score in ("cmi", "bayes"):
        model = learned(events, score=score)
        model.rebuild()
        edges[score] = {frozenset(e[:2]) for e in model.tree}
    assert frozenset(("a", "b")) not in edges["cmi"]
    assert frozenset(("a", "b")) in edges["bayes"]


def test_tree_score_is_checked_and_survives_a_snapshot(tmp_path):
    with pytest.raises(ConfigError, match="tree_score"):
        TAN(tree_score="bic")
    events = events_of(120, seed=7)
    model = TAN(search=Tree(rebuild_every=50))
    for x, y in events:
        model.learn_one(x, y)
    path = tmp_path / "tan.snb"
    stream_nb.save(model, path)
    back = stream_nb.load(path)
    assert back.tree_score == "bayes" and back.tree == model.tree
    for x, y in events_of(60, seed=8):
        model.learn_one(x, y), back.learn_one(x, y)
    assert back.tree == model.tree
    assert back.predict_proba_one(events[0][0]) == model.predict_proba_one(events[0][0])


def test_the_command_line_setting_reaches_the_model():
    from stream_nb.daemon._build import build_model  # noqa: PLC0415 (the daemon's wiring, tested here only)
    from stream_nb.settings import SETTINGS

    settings = {s.name: s.default for s in SETTINGS}
    settings.update(model="tan", tree_score="bayes")
    assert build_model(settings).tree_score == "bayes"
    settings.update(model="aode")
    with pytest.raises(ConfigError, match="--tree-score .*does not apply to --model aode"):
        build_model(settings)


def test_the_vectorised_path_and_a_merge_give_the_one_event_tree():
    events = events_of(400, seed=9)
    one = TAN(missing=Ignore(), search=Tree(rebuild_every=50))
    outcomes = [one.prequential_one(x, y) for x, y in events]
    many = TAN(missing=Ignore(), search=Tree(rebuild_every=50))
    runs = many.prequential_many([x for x, _ in events], [y for _, y in events])
    assert [r[0] for r in runs] == [o[0] for o in outcomes]
    assert many.tree == one.tree and many.n_rebuilds == one.n_rebuilds
    left, right = (TAN(missing=Ignore(), search=Tree(rebuild_every=50)) for _ in range(2))
    for x, y in events[:200]:
        left.learn_one(x, y)
    for x, y in events[200:]:
        right.learn_one(x, y)
    whole = TAN(missing=Ignore(), search=Tree(rebuild_every=0))
    for x, y in events:
        whole.learn_one(x, y)
    whole.rebuild()
    merged = left.merge(right)
    assert [e[:2] for e in merged.tree] == [e[:2] for e in whole.tree]
