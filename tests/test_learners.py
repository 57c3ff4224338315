"""The learners against independent references: textbook formulas, brute force, river's checks."""

from __future__ import annotations

import copy
import math
import pickle
import random

import numpy as np
import pandas as pd
import pytest
from river import checks

import reference as ref
from stream_nb import AODE, EM, KDB, MDL, TAN, Edges, Gaussian, Ignore, NaiveBayes, Parents, SuperParents, Tree
from stream_nb.exceptions import ConfigError, FeatureTypeError, InvalidEventError, MergeError
from stream_nb.learners import conditional_mutual_information, maximum_spanning_tree

MODELS = [NaiveBayes, AODE, TAN]

# Zhou's watermelon data set 2.0 (the seeds' running example): 17 melons, 6 attributes.
WATERMELON = [
    ("green", "curled", "dull", "clear", "hollow", "hard", True),
    ("dark", "curled", "muffled", "clear", "hollow", "hard", True),
    ("dark", "curled", "dull", "clear", "hollow", "hard", True),
    ("green", "curled", "muffled", "clear", "hollow", "hard", True),
    ("light", "curled", "dull", "clear", "hollow", "hard", True),
    ("green", "slightly", "dull", "clear", "slightly", "soft", True),
    ("dark", "slightly", "dull", "slightly", "slightly", "soft", True),
    ("dark", "slightly", "dull", "clear", "slightly", "hard", True),
    ("dark", "slightly", "muffled", "slightly", "slightly", "hard", False),
    ("green", "stiff", "crisp", "clear", "flat", "soft", False),
    ("light", "stiff", "crisp", "blurry", "flat", "hard", False),
    ("light", "curled", "dull", "blurry", "flat", "soft", False),
    ("green", "slightly", "dull", "slightly", "hollow", "hard", False),
    ("light", "slightly", "muffled", "slightly", "hollow", "hard", False),
    ("dark", "slightly", "dull", "clear", "slightly", "soft", False),
    ("light", "curled", "dull", "blurry", "flat", "hard", False),
    ("green", "curled", "muffled", "slightly", "slightly", "hard", False),
]
ATTRS = ["colour", "root", "knock", "texture", "navel", "touch"]
MELONS = [(dict(zip(ATTRS, row[:-1])), row[-1]) for row in WATERMELON]
TEST_MELON = {"colour": "green", "root": "curled", "knock": "dull", "texture": "clear", "navel": "hollow", "touch": "hard"}


def learn(model, events):
    for x, y in events:
        model.learn_one(x, y)
    return model


def random_events(n, n_feats=4, n_vals=3, n_classes=3, missing=0.0, seed=0):
    rng = random.Random(seed)
    events = []
    for _ in range(n):
        y = rng.randrange(n_classes)
        x = {}
        for f in range(n_feats):
            if rng.random() < missing:
                continue
            # values correlated with the class and with the previous feature
            v = (y + rng.randrange(n_vals) * (rng.random() < 0.4) + (x.get(f"f{f-1}", "v0") == "v1")) % n_vals
            x[f"f{f}"] = f"v{v}"
        events.append((x, f"c{y}"))
    return events


def assert_proba_close(got, want, tol=1e-12):
    assert set(got) == set(want)
    for c in want:
        assert got[c] == pytest.approx(want[c], rel=tol, abs=tol), (c, got, want)


# ---------------------------------------------------------------- textbook values


def test_naive_bayes_watermelon_laplace_by_hand():
    """Zhou eq. 7.19-7.20 on watermelon 2.0, with the book's Laplace-corrected estimates:
    P(good) = (8+1)/(17+2), P(green|good) = (3+1)/(8+3), P(curled|good) = (5+1)/(8+3), ..."""
    model = learn(NaiveBayes(), MELONS)
    good = 9 / 19 * 4 / 11 * 6 / 11 * 7 / 11 * 8 / 11 * 6 / 11 * 7 / 10
    bad = 10 / 19 * 4 / 12 * 4 / 12 * 5 / 12 * 3 / 12 * 3 / 12 * 7 / 11
    p = model.predict_proba_one(TEST_MELON)
    assert p[True] == pytest.approx(good / (good + bad), rel=1e-12)
    assert model.predict_one(TEST_MELON) is True


@pytest.mark.parametrize("alpha", [1.0, 0.5, 2.0])
def test_naive_bayes_equals_brute_force(alpha):
    events = random_events(200, missing=0.2, seed=1)
    model = learn(NaiveBayes(alpha=alpha, missing=Ignore()), events)
    for x, _ in random_events(30, missing=0.3, seed=2) + [({"f0": "new"}, None), ({}, None)]:
        assert_proba_close(model.predict_proba_one(x), ref.naive_bayes_posterior(events, x, alpha))


def test_gaussian_naive_bayes_matches_the_formula():
    rng = np.random.default_rng(3)
    events = [({"a": float(rng.normal(y, 1 + y)), "b": float(rng.normal(-y, 2))}, y) for y in rng.integers(0, 3, 300)]
    model = learn(NaiveBayes(numeric=Gaussian(var_smoothing=0.0)), events)
    x = {"a": 0.7, "b": -1.2}
    score = {}
    for c in (0, 1, 2):
        rows = [z for z, y in events if y == c]
        p = (len(rows) + 1) / (len(events) + 3)
        for f in "ab":
            v = np.array([z[f] for z in rows])
            mu, var = v.mean(), v.var()
            p *= math.exp(-((x[f] - mu) ** 2) / (2 * var)) / math.sqrt(2 * math.pi * var)
        score[c] = p
    z = sum(score.values())
    assert_proba_close(model.predict_proba_one(x), {c: s / z for c, s in score.items()}, tol=1e-9)


@pytest.mark.parametrize("m", [1, 3, 30])
def test_aode_equals_the_seeds_formula(m):
    events = random_events(150, n_feats=4, missing=0.15, seed=4)
    model = learn(AODE(missing=Ignore(), search=SuperParents(m=m)), events)
    for x, _ in random_events(25, n_feats=4, missing=0.3, seed=5) + [({"f0": "zzz", "f1": "v1"}, None)]:
        assert_proba_close(model.predict_proba_one(x), ref.aode_posterior(events, x, 1.0, m))


def test_aode_watermelon_textbook_example():
    model = learn(AODE(), MELONS)
    assert_proba_close(model.predict_proba_one(TEST_MELON), ref.aode_posterior(MELONS, TEST_MELON, 1.0, 1))
    # Zhou: P(c=good, colour=green) = (3 + 1) / (17 + 3)
    s = model._stats
    col = s.values[s.feature_index["colour"]]["green"]
    assert (s.value_count[s.class_index[True], col] + 1) / (s.n_seen + 3) == pytest.approx(4 / 20)


def test_aode_without_any_qualifying_parent_is_naive_bayes():
    events = random_events(60, seed=6)
    aode, nb = learn(AODE(search=SuperParents(m=10000)), events), learn(NaiveBayes(), events)
    x = events[0][0]
    assert_proba_close(aode.predict_proba_one(x), nb.predict_proba_one(x))


# ---------------------------------------------------------------- TAN


def test_cmi_equals_brute_force_with_missing_values():
    events = random_events(300, n_feats=5, missing=0.2, seed=7)
    model = learn(TAN(missing=Ignore(), search=Tree(rebuild_every=0)), events)
    got = conditional_mutual_information(model._stats)
    names = model._stats.features
    for i, a in enumerate(names):
        for j, b in enumerate(names):
            want = 0.0 if i == j else ref.cmi(events, a, b)
            assert got[i, j] == pytest.approx(want, abs=1e-12)


def test_spanning_tree_is_maximal_by_enumeration():
    rng = np.random.default_rng(8)
    for _ in range(20):
        n = int(rng.integers(2, 7))
        w = rng.random((n, n))
        w = (w + w.T) / 2
        tree = maximum_spanning_tree(w, range(n), root=int(rng.integers(n)))
        assert len(tree) == n - 1
        assert sum(w[c, p] for c, p in tree.items()) == pytest.approx(ref.best_spanning_tree_weight(w, range(n)))


def textbook_prim(w, nodes, root, rank):
    """Prim's algorithm written out: the next node the one of highest weight to the tree, ties to the lower
    rank; a node's link to the tree changes for a strictly higher weight only."""
    best = {n: (w[root, n], root) for n in nodes if n != root}
    parent = {}
    while best:
        nxt = max(best, key=lambda n: (best[n][0], -rank[n]))
        parent[nxt] = best.pop(nxt)[1]
        for n in best:
            if w[nxt, n] > best[n][0]:
                best[n] = (w[nxt, n], nxt)
    return parent


def test_spanning_tree_breaks_ties_by_rank():
    # integer weights in 0..2: many ties, decided by a rank that is not the index order; some indices left out
    rng = np.random.default_rng(11)
    for _ in range(30):
        n = int(rng.integers(3, 12))
        w = rng.integers(0, 3, size=(n, n)).astype(float)
        w = w + w.T
        nodes = sorted(rng.choice(n, size=int(rng.integers(2, n + 1)), replace=False).tolist())
        rank = dict(zip(nodes, rng.permutation(len(nodes)).tolist()))
        root = nodes[int(rng.integers(len(nodes)))]
        assert maximum_spanning_tree(w, nodes, root, rank) == textbook_prim(w, nodes, root, rank)


def test_tan_tree_recovers_a_chain_and_predicts_by_the_formula():
    rng = random.Random(9)
    events = []
    for _ in range(2000):
        y = rng.randrange(2)
        a = y if rng.random() < 0.8 else 1 - y
        b = a if rng.random() < 0.9 else 1 - a  # b depends on a
        c = b if rng.random() < 0.9 else 1 - b  # c depends on b
        d = rng.randrange(2)
        events.append(({"a": f"a{a}", "b": f"b{b}", "c": f"c{c}", "d": f"d{d}"}, y))
    model = learn(TAN(search=Tree(rebuild_every=500)), events)
    edges = {frozenset((p, c)) for p, c, _ in model.tree}
    assert frozenset(("a", "b")) in edges and frozenset(("b", "c")) in edges
    assert model.root == "a"  # the attribute with the most information about the class
    tree = {c: p for p, c, _ in model.tree}
    for x in ({"a": "a0", "b": "b1", "c": "c1", "d": "d0"}, {"a": "a1", "b": "b0", "c": "c1", "d": "d1"}):
        assert_proba_close(model.predict_proba_one(x), ref.tan_posterior(events, x, tree, 1.0, ["a", "b", "c", "d"]), 1e-10)


def test_tan_sums_missing_values_out_exactly():
    events = random_events(250, n_feats=4, n_vals=3, missing=0.1, seed=10)
    model = learn(TAN(missing=Ignore(), search=Tree(rebuild_every=0)), events)
    model.rebuild()
    tree = {c: p for p, c, _ in model.tree}
    feats = model._stats.features
    queries = [
        {"f0": "v1", "f2": "v2"},
        {"f1": "v0"},
        {"f3": "v2", "f0": "v0"},
        {"f2": "v1", "f3": "v0", "f1": "v2"},
        {},
        {"f1": "unseen", "f3": "v1"},
    ]
    for x in queries:
        assert_proba_close(model.predict_proba_one(x), ref.tan_posterior(events, x, tree, 1.0, feats), 1e-10)
    # and predict_proba_many takes the same path
    got = model.predict_proba_many(pd.DataFrame(queries))
    for i, x in enumerate(queries):
        assert_proba_close(got.iloc[i].to_dict(), model.predict_proba_one(x), 1e-12)


def test_tan_before_the_first_build_is_naive_bayes_and_rebuild_keeps_counts():
    events = random_events(100, seed=11)
    tan, nb = learn(TAN(search=Tree(rebuild_every=0)), events), learn(NaiveBayes(), events)
    assert tan.tree == [] and tan.root is None
    assert_proba_close(tan.predict_proba_one(events[0][0]), nb.predict_proba_one(events[0][0]))
    before = tan._stats.counts()
    tan.rebuild()
    assert tan._stats.counts() == before and len(tan.tree) == 3
    assert all(w >= 0 for _, _, w in tan.tree)


def test_tan_rebuilds_every_n_events():
    model = learn(TAN(search=Tree(rebuild_every=40)), random_events(130, seed=12))
    assert model.n_rebuilds == 3


# ---------------------------------------------------------------- decision theory


def test_bayes_decision_minimises_conditional_risk():
    loss = {"c0": {"c1": 1.0, "c2": 10.0}, "c1": {"c0": 4.0, "c2": 1.0}, "c2": {"c0": 1.0, "c1": 0.5}}
    events = random_events(200, seed=13)
    for cls in MODELS:
        model = learn(cls(loss=loss), events)
        for x, _ in random_events(40, seed=14):
            p = model.predict_proba_one(x)
            risk = {j: sum(loss.get(i, {}).get(j, 0.0 if i == j else 1.0) * p[i] for i in p) for j in p}
            assert model.predict_one(x) == min(risk, key=risk.get)
            assert model.risk_one(x) == pytest.approx(risk)
            assert model.predict_and_proba_one(x) == (model.predict_one(x), p)
        X = pd.DataFrame([x for x, _ in random_events(40, seed=14)])
        assert list(model.predict_many(X)) == [model.predict_one(x) for x, _ in random_events(40, seed=14)]


def test_without_loss_the_decision_is_the_map_class():
    model = learn(NaiveBayes(), MELONS)
    for x, _ in MELONS:
        p = model.predict_proba_one(x)
        assert model.predict_one(x) == max(p, key=p.get)


@pytest.mark.parametrize("bad", [{"a": {"b": -1}}, {"a": {"b": float("inf")}}, {"a": 3}, [[0, 1]]])
def test_bad_loss_matrix_is_rejected(bad):
    with pytest.raises(ConfigError, match="loss"):
        NaiveBayes(loss=bad)


# ---------------------------------------------------------------- batches and merging


def mixed_events(n, seed):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        y = ["x", "y", "z"][int(rng.integers(3))]
        x = {"cat": ["p", "q", "r"][int(rng.integers(3))], "num": float(rng.normal({"x": 0, "y": 2, "z": 4}[y])), "flag": bool(rng.integers(2))}
        if rng.random() < 0.2:
            del x["cat"]
        if rng.random() < 0.1:
            x["num"] = None
        out.append((x, y))
    return out


def by_name(model, key):
    """A count array of the store as ``{(class, feature, value, ...): count}``, zeros left out."""
    s = model._stats
    arr = s.state()[0][key]
    name = {col: (s.features[s.value_feature[col]], s.value_keys[col])
            for col in range(1, len(s.value_keys)) if s.value_feature[col] >= 0}
    return {(s.classes[idx[0]],) + tuple(i for col in idx[1:] for i in name[int(col)]): float(arr[idx])
            for idx in zip(*np.nonzero(arr))}


@pytest.mark.parametrize("cls", MODELS)
def test_learn_many_equals_learn_one(cls):
    events = mixed_events(700, seed=15)
    params = {TAN: {"numeric": MDL(warmup=50), "search": Tree(rebuild_every=100)}, AODE: {"numeric": MDL(warmup=50)}}.get(cls, {})
    one = learn(cls(**params), events)
    many = cls(**params)
    for lo in range(0, len(events), 64):
        chunk = events[lo : lo + 64]
        many.learn_many(pd.DataFrame([x for x, _ in chunk]), pd.Series([y for _, y in chunk]))
    c1, c2 = one._stats.counts(), many._stats.counts()
    assert c1["class_count"] == c2["class_count"] and c1["value_count"] == c2["value_count"]
    # EM's observed-only counts too, by feature and value (the two paths may number the columns differently)
    for key in ("obs_value_count", "obs_pair_count") if one._stats.pairs else ("obs_value_count",):
        assert by_name(many, key) == pytest.approx(by_name(one, key), abs=1e-9), key
    for f in c1["gaussian"]:
        for y in c1["gaussian"][f]:
            assert c2["gaussian"][f][y] == pytest.approx(c1["gaussian"][f][y], rel=1e-10)
    queries = [x for x, _ in mixed_events(50, seed=16)]
    batch = one.predict_proba_many(pd.DataFrame(queries))
    for i, x in enumerate(queries):
        assert_proba_close(many.predict_proba_one(x), one.predict_proba_one(x), 1e-9)
        assert_proba_close(batch.iloc[i].to_dict(), one.predict_proba_one(x), 1e-9)


@pytest.mark.parametrize("cls", MODELS)
def test_merge_equals_training_on_both_streams(cls):
    a, b = random_events(300, missing=0.1, seed=17), random_events(200, n_classes=4, n_vals=4, missing=0.1, seed=18)
    # EM's expected counts depend on the model that learned each event, so exact merging is
    # a property of counted (observed) values: missing=Ignore()
    params = {"missing": Ignore(), **({"search": Tree(rebuild_every=0)} if cls is TAN else {})}
    merged = learn(cls(**params), a).merge(learn(cls(**params), b))
    sequential = learn(cls(**params), a + b)
    sa, ma = sequential._stats.state()[0], merged._stats.state()[0]
    assert sa.keys() == ma.keys()
    for k in sa:
        np.testing.assert_array_equal(sa[k], ma[k], err_msg=k)
    if cls is TAN:
        merged.rebuild(), sequential.rebuild()
        assert merged.tree == sequential.tree
    for x, _ in random_events(20, seed=19):
        assert_proba_close(merged.predict_proba_one(x), sequential.predict_proba_one(x))


@pytest.mark.parametrize("cls", [NaiveBayes, AODE, TAN, KDB])
def test_merged_em_models_keep_exactly_the_observed_counts_of_both_streams(cls):
    """EM's counts depend on the model that learned each event; its observed-only counts do not,
    so they merge exactly, whatever the other model's missing setting."""
    a, b = random_events(300, missing=0.2, seed=17), random_events(200, n_classes=4, n_vals=4, missing=0.2, seed=18)
    params = {TAN: {"search": Tree(rebuild_every=0)}, KDB: {"search": Parents(rebuild_every=0)}}.get(cls, {})
    observed_both = learn(cls(missing=Ignore(), **params), a + b)._stats.state()[0]
    for b_missing in (EM(), Ignore()):
        em_a, other = learn(cls(**params), a), learn(cls(missing=b_missing, **params), b)
        counts_a, counts_b = em_a._stats.counts(), other._stats.counts()
        merged = em_a.merge(other)._stats.state()[0]
        for k, v in observed_both.items():
            if f"obs_{k}" in merged:
                np.testing.assert_array_equal(merged[f"obs_{k}"], v, err_msg=f"{b_missing}: obs_{k}")
        # the counts add as they are
        for f, by_value in em_a._stats.counts()["value_count"].items():
            for v, by_class in by_value.items():
                for y, n in by_class.items():
                    want = counts_a["value_count"].get(f, {}).get(v, {}).get(y, 0.0)
                    want += counts_b["value_count"].get(f, {}).get(v, {}).get(y, 0.0)
                    assert n == pytest.approx(want, abs=1e-9)
    # an Ignore() model takes an EM model's observed counts: still what Ignore() counts from both
    ignore = learn(cls(missing=Ignore(), **params), a).merge(learn(cls(**params), b))._stats.state()[0]
    assert not any(k.startswith("obs_") for k in ignore)
    for k, v in observed_both.items():
        np.testing.assert_array_equal(ignore[k], v, err_msg=k)


def test_merge_of_gaussian_moments_is_exact():
    a, b = mixed_events(400, seed=20), mixed_events(300, seed=21)
    merged = learn(NaiveBayes(), a).merge(learn(NaiveBayes(), b))
    want = {}
    for y in "xyz":
        v = np.array([x["num"] for x, yy in a + b if yy == y and x["num"] is not None])
        want[y] = (len(v), v.mean(), ((v - v.mean()) ** 2).sum())
    got = merged._stats.counts()["gaussian"]["num"]
    for y in "xyz":
        assert got[y] == pytest.approx(want[y], rel=1e-12)


def test_merge_refuses_what_cannot_be_exact():
    with pytest.raises(MergeError, match="NaiveBayes into a TAN"):
        TAN().merge(NaiveBayes())
    a = learn(AODE(numeric=MDL(warmup=10)), mixed_events(50, seed=22))
    b = learn(AODE(numeric=MDL(warmup=10)), mixed_events(50, seed=23))
    with pytest.raises(MergeError, match="'num'.*bin edges"):
        a.merge(b)
    # both still choosing their edges, with room for both buffers: exact
    a = learn(AODE(numeric=MDL(), missing=Ignore()), mixed_events(30, seed=22))
    b = learn(AODE(numeric=MDL(), missing=Ignore()), mixed_events(30, seed=23))
    seq = learn(AODE(numeric=MDL(), missing=Ignore()), mixed_events(30, seed=22) + mixed_events(30, seed=23))

    def live(meta):  # the columns a promotion detached (num's values, counted by value until its sixth) aside:
        return {**meta, "columns": [c for c in meta["columns"] if c[0] >= 0]}  # a merge derives the layer anew

    assert live(a.merge(b)._stats.state()[1]) == live(seq._stats.state()[1])
    assert a._stats.counts() == seq._stats.counts()
    edges = {"num": [0.0, 1.0, 2.0, 3.0]}
    a = learn(AODE(numeric=Edges(edges, rest=MDL()), missing=Ignore()), mixed_events(50, seed=22))
    b = learn(AODE(numeric=Edges(edges, rest=MDL()), missing=Ignore()), mixed_events(50, seed=23))
    seq = learn(AODE(numeric=Edges(edges, rest=MDL()), missing=Ignore()), mixed_events(50, seed=22) + mixed_events(50, seed=23))
    assert a.merge(b)._stats.counts() == seq._stats.counts()


# ---------------------------------------------------------------- properties


@pytest.mark.parametrize("cls", MODELS)
def test_probabilities_are_finite_and_sum_to_one_for_any_input(cls):
    model = cls()
    assert model.predict_proba_one({}) == {} and model.predict_one({}) is None
    events = mixed_events(300, seed=24)
    learn(model, events)
    odd = [{}, {"cat": None}, {"num": float("nan")}, {"cat": "never"}, {"unknown": 1}, {"num": 1e100},
           {"num": -1e100, "flag": True}, {"num": 5e-324}]
    for x in odd + [x for x, _ in events[:50]]:
        p = model.predict_proba_one(x)
        assert set(p) == {"x", "y", "z"}
        assert all(0.0 <= v <= 1.0 and math.isfinite(v) for v in p.values())
        assert sum(p.values()) == pytest.approx(1.0, abs=1e-12)
    for beyond in (1.7e308, -1e300, 1e101, 10**200):  # beyond the largest numeric value: refused, naming it
        with pytest.raises(FeatureTypeError, match="feature 'num': expected a number of magnitude at most 1e"):
            model.predict_proba_one({"num": beyond})


@pytest.mark.parametrize("cls", MODELS)
def test_counts_do_not_depend_on_event_order(cls):
    events = random_events(200, missing=0.2, seed=25)
    shuffled = events[:]
    random.Random(0).shuffle(shuffled)
    a, b = learn(cls(missing=Ignore()), events), learn(cls(missing=Ignore()), shuffled)
    assert a._stats.counts() == b._stats.counts()
    if cls is TAN:
        a.rebuild(), b.rebuild()
        assert [e[:2] for e in a.tree] == [e[:2] for e in b.tree]
        assert [e[2] for e in a.tree] == pytest.approx([e[2] for e in b.tree], rel=1e-12)
    for x, _ in events[:20]:
        assert_proba_close(a.predict_proba_one(x), b.predict_proba_one(x), 1e-12)


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize("cls", MODELS)
def test_a_bad_value_names_the_field_and_changes_nothing(cls):
    model = learn(cls(), mixed_events(100, seed=26))
    before = pickle.dumps(model)
    with pytest.raises(FeatureTypeError, match="'num'.*expected a number, got str 'hot'") as e:
        model.learn_one({"cat": "new-value", "num": "hot"}, "new-class")
    assert e.value.field == "num" and e.value.reason == "bad_feature_type"
    with pytest.raises(FeatureTypeError, match="'cat'.*got list"):
        model.learn_one({"extra": "v", "cat": [1, 2]}, "x")
    with pytest.raises(FeatureTypeError, match="'num'.*finite"):
        model.learn_one({"num": float("inf")}, "x")
    with pytest.raises(InvalidEventError, match="label"):
        model.learn_one({"cat": "p"}, None)
    with pytest.raises(FeatureTypeError, match="'num'"):
        model.learn_many(pd.DataFrame([{"num": 1.0}, {"num": "hot"}]), pd.Series(["x", "y"]))
    assert pickle.dumps(model) == before
    with pytest.raises(FeatureTypeError, match="'num'"):
        model.predict_proba_one({"num": "hot"})


@pytest.mark.parametrize("kwargs", [{"alpha": 0}, {"alpha": -1.0}, {"alpha": float("nan")}, {"types": {"a": "text"}}])
def test_bad_parameters_are_rejected(kwargs):
    with pytest.raises(ConfigError):
        NaiveBayes(**kwargs)


def test_declared_types_override_inference():
    model = NaiveBayes(types={"zip": "categorical", "age": "numeric"})
    learn(model, [({"zip": 1.5, "age": 30}, "a"), ({"zip": 2.5, "age": 40}, "b")])
    assert model._stats.counts()["value_count"]["zip"] == {1.5: {"a": 1.0, "b": 0.0}, 2.5: {"a": 0.0, "b": 1.0}}
    assert set(model._stats.counts()["gaussian"]) == {"age"}


# ---------------------------------------------------------------- state


@pytest.mark.parametrize("cls", MODELS)
def test_state_is_plain_data_and_round_trips(cls):
    import json

    model = learn(cls(**({"search": Tree(rebuild_every=50)} if cls is TAN else {})), mixed_events(200, seed=27))
    arrays, meta = model.state()
    assert all(isinstance(v, np.ndarray) for v in arrays.values())
    restored = cls.from_state(arrays, json.loads(json.dumps(meta)))
    for x, _ in mixed_events(30, seed=28):
        assert restored.predict_proba_one(x) == model.predict_proba_one(x)
    clone = copy.deepcopy(model)
    learn(clone, mixed_events(10, seed=29))
    assert pickle.loads(pickle.dumps(model)).predict_proba_one({"cat": "p"}) == model.predict_proba_one({"cat": "p"})
    assert model.clone().n_learned == 0


@pytest.mark.parametrize("cls", [NaiveBayes, AODE, TAN, KDB])
def test_em_state_carries_the_observed_counts_and_ignore_keeps_none(cls):
    import json

    params = {TAN: {"search": Tree(rebuild_every=50)}, KDB: {"search": Parents(rebuild_every=50)}}.get(cls, {})
    events = random_events(200, missing=0.3, seed=30)
    em = learn(cls(**params), events)
    arrays, meta = em.state()
    observed = [k for k in arrays if k.startswith("obs_")]
    assert "obs_value_count" in observed and meta["stats"]["observed"] is True
    back = cls.from_state(arrays, json.loads(json.dumps(meta)))
    assert back.state()[0].keys() == arrays.keys()
    for k, v in back.state()[0].items():
        np.testing.assert_array_equal(v, arrays[k], err_msg=k)
    more = random_events(60, missing=0.3, seed=31)
    learn(em, more), learn(back, more)  # the restored model keeps learning exactly like the original
    for k, v in back.state()[0].items():
        np.testing.assert_array_equal(v, em.state()[0][k], err_msg=k)
    # missing=Ignore() keeps no second copy, in memory or in its state
    ignore = learn(cls(missing=Ignore(), **params), events)
    assert not any(k.startswith("obs_") for k in ignore.state()[0]) and not hasattr(ignore._stats, "obs_value_count")
    # a state written before the observed counts existed: they start from the counts at the next incomplete event
    legacy_meta = json.loads(json.dumps(meta))
    del legacy_meta["stats"]["observed"]
    legacy = cls.from_state({k: v for k, v in arrays.items() if not k.startswith("obs_")}, legacy_meta)
    assert "obs_value_count" not in legacy._stats.state()[0]
    x = {"f0": "v1", "f2": "v0"}
    learn(legacy, [(x, "c0")])
    restored = legacy._stats.state()[0]
    s = legacy._stats
    step = np.zeros_like(arrays["value_count"])
    step[s.class_index["c0"], [s.values[s.feature_index[f]][v] for f, v in x.items()]] = 1.0
    np.testing.assert_array_equal(restored["obs_value_count"], arrays["value_count"] + step)


# ---------------------------------------------------------------- river


@pytest.mark.slow
@pytest.mark.parametrize(
    "model",
    [cls(**params) for cls in MODELS for params in cls._unit_test_params()],
    ids=lambda m: repr(m),
)
def test_river_check_estimator(model):
    checks.check_estimator(model)


def test_values_whose_variance_underflows_still_give_a_distribution():
    # found by tests/test_running.py: heights around 1e-150 have a variance that underflows to 0;
    # 0/0 in one class's Gaussian made every probability NaN
    model = NaiveBayes()
    for x, y in [({}, "b"), ({"height": 2.2370305185042227e-158}, "a"), ({"height": 0.0}, "c")]:
        model.learn_one(x, y)
    p = model.predict_proba_one({"height": 3.3179783819040973e-124})
    assert set(p) == {"a", "b", "c"}
    assert all(math.isfinite(v) for v in p.values()) and sum(p.values()) == pytest.approx(1.0)
