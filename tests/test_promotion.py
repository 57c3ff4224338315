"""A feature first seen as an integer turns numeric at its first fractional value, counts converted exactly."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from stream_nb import AODE, KDB, MDL, SPODE, TAN, Decay, EqualFrequency, Ignore, NaiveBayes, Parents, SuperParent, Tree
from test_learners import assert_proba_close, learn


def commission_stream(n=400, seed=3):
    """Like river's Agrawal: commission is the integer 0 for high salaries, a float otherwise."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        y = int(rng.integers(2))
        salary_high = rng.random() < (0.7 if y else 0.3)
        commission = 0 if salary_high else float(np.round(rng.normal(20000 + 15000 * y, 5000), 2))
        if i < 5:
            commission = 0  # the first values are integers: the feature starts categorical
        out.append(({"commission": commission, "k": f"k{int(rng.integers(3)) + y}"}, y))
    return out


def test_naive_bayes_converts_its_counts_to_the_same_gaussian_moments():
    events = commission_stream()
    model = learn(NaiveBayes(), events)
    s = model._stats
    assert set(s.counts()["gaussian"]) == {"commission"} and "commission" not in s.counts()["value_count"]
    for y in (0, 1):
        v = np.array([float(x["commission"]) for x, yy in events if yy == y])
        n, mean, m2 = s.counts()["gaussian"]["commission"][y]
        assert (n, mean, m2) == pytest.approx((len(v), v.mean(), ((v - v.mean()) ** 2).sum()), rel=1e-10)
    declared = learn(NaiveBayes(types={"commission": "numeric"}), events)
    for x, _ in events[:30]:
        assert_proba_close(model.predict_proba_one(x), declared.predict_proba_one(x), 1e-9)


@pytest.mark.parametrize("cls", [AODE, TAN, SPODE, KDB])
def test_discretising_models_move_every_count_into_its_bin(cls):
    events = commission_stream()
    # SPODE's parent is "k": chosen from the stream, the scores would differ while commission was a category
    search = {TAN: Tree(rebuild_every=100), SPODE: SuperParent(parent="k", rebuild_every=100), KDB: Parents(rebuild_every=100)}
    params = {"search": search[cls]} if cls in search else {}
    model = learn(cls(**params, missing=Ignore()), events)
    s = model._stats
    f = s.feature_index["commission"]
    edges = s.disc[f].edges
    assert s.kinds[f] == 2 and edges is not None and len(s.values[f]) >= 2
    # the same events with the feature declared numeric from the start give the same counts: its
    # first integers were warm-up values there too, and the same first values chose the same edges
    ref = learn(cls(**params, missing=Ignore(), types={"commission": "numeric"}), events)
    assert ref._stats.disc[ref._stats.feature_index["commission"]].edges.tolist() == edges.tolist()
    got, want = s.counts(), ref._stats.counts()
    assert got["class_count"] == want["class_count"]
    assert got["value_count"]["commission"] == want["value_count"]["commission"]
    assert got["value_count"]["k"] == want["value_count"]["k"]
    # pair counts by feature values, and pair_feat still the block sums of pair_count
    def pairs(m):
        st = m._stats
        return {(st.features[st.value_feature[a]], st.value_keys[a], st.features[st.value_feature[b]], st.value_keys[b]):
                st.pair_count[:st.n_classes, a, b].tolist()
                for a in range(1, len(st.value_keys)) for b in range(1, len(st.value_keys))
                if st.value_feature[a] >= 0 and st.value_feature[b] >= 0}
    assert pairs(model) == pairs(ref)
    for g in range(len(s.features)):
        np.testing.assert_allclose(s.pair_feat[:, :, g], s.pair_count[:, :, s.columns_of(g)].sum(2), atol=1e-9)
    for x, _ in events[:30]:
        assert_proba_close(model.predict_proba_one(x), ref.predict_proba_one(x), 1e-9)


@pytest.mark.parametrize("cls", [NaiveBayes, TAN, KDB])
def test_promoted_models_round_trip_merge_and_batch(cls):
    events = commission_stream(300)
    params = {TAN: {"search": Tree(rebuild_every=0)}, KDB: {"search": Parents(rebuild_every=0)}}.get(cls, {})
    model = learn(cls(**params), events)
    back = cls.from_state(model.state()[0], json.loads(json.dumps(model.state()[1])))
    for x, _ in events[:10]:
        assert back.predict_proba_one(x) == model.predict_proba_one(x)
    many = cls(**params)
    for lo in range(0, len(events), 70):
        chunk = events[lo : lo + 70]
        many.learn_many(pd.DataFrame([x for x, _ in chunk]), pd.Series([y for _, y in chunk]))
    for x, _ in events[:20]:
        assert_proba_close(many.predict_proba_one(x), model.predict_proba_one(x), 1e-9)
    # a model that never saw a fraction merges into one that did: it is promoted first
    ints = [({"commission": 0, "k": x["k"]}, y) for x, y in events[:50]]
    a = learn(cls(**params, missing=Ignore()), ints)
    b = learn(cls(**params, missing=Ignore()), events[50:100])
    if cls is NaiveBayes:
        before = a._stats.counts()
        b.merge(a)
        assert "commission" in b._stats.counts()["gaussian"]
        assert a._stats.counts() == before  # the merged-in model is left as it was
        ref = learn(cls(**params, missing=Ignore()), events[50:100] + ints)
        for y in (0, 1):
            assert b._stats.counts()["gaussian"]["commission"][y] == pytest.approx(
                ref._stats.counts()["gaussian"]["commission"][y], rel=1e-10)


def test_strings_or_declared_types_never_promote():
    # a feature declared categorical takes strings and numbers alike, all of them categories
    model = learn(NaiveBayes(types={"z": "categorical"}), [({"z": 1}, "a"), ({"z": "x"}, "b"), ({"z": 2.5}, "a")])
    assert set(model._stats.counts()["value_count"]["z"]) == {1, "x", 2.5}
    declared = learn(NaiveBayes(types={"z": "categorical"}), [({"z": 1}, "a"), ({"z": 2.5}, "b")])
    assert set(declared._stats.counts()["value_count"]["z"]) == {1, 2.5}
    whole = learn(NaiveBayes(), [({"z": 1}, "a"), ({"z": 2.0}, "b")])  # 2.0 is a whole number: still a category
    assert "z" in whole._stats.counts()["value_count"]


@pytest.mark.parametrize("cls", [NaiveBayes, AODE, TAN, KDB])
def test_a_promotion_converts_ems_observed_counts_like_ignores_counts(cls):
    """EM's observed-only counts go through a promotion as the counts do: they stay what missing=Ignore() counts."""
    rng = np.random.default_rng(4)
    events = [({k: (None if rng.random() < 0.2 else v) for k, v in x.items()}, y) for x, y in commission_stream()]
    params = {TAN: {"search": Tree(rebuild_every=100)}, KDB: {"search": Parents(rebuild_every=100)}}.get(cls, {})
    em, ignore = learn(cls(**params), events), learn(cls(**params, missing=Ignore()), events)
    assert em._stats.kinds[em._stats.feature_index["commission"]] != 0  # promoted
    got, want = em._stats.state()[0], ignore._stats.state()[0]
    twinned = [k for k in want if f"obs_{k}" in got]
    assert "value_count" in twinned
    for k in twinned:
        np.testing.assert_allclose(got[f"obs_{k}"], want[k], rtol=0, atol=1e-9, err_msg=k)


def test_a_promotion_keeps_the_receipt_keys_of_the_waiting_events():
    """An event kept by the two-layer store is known by its receipt's key, or by none: a promotion rewrote the
    key with the moved value (0.0, 33046.0, ...), so events learned without a receipt were kept for ever as if
    one could take them back, and two with the same value took one key."""
    events = commission_stream()
    plain, receipted = TAN(search=Tree(rebuild_every=100)), TAN(search=Tree(rebuild_every=100))
    receipted.learn_one_receipt(*events[0])
    for x, y in events[1:]:
        plain.learn_one(x, y)
    for x, y in events[1:]:
        receipted.learn_one(x, y)
    assert plain._stats.kinds[plain._stats.feature_index["commission"]] != 0  # promoted
    assert plain._stats.waiting.counted == {}
    assert {e[6] for e in plain._stats.waiting.backlog + plain._stats.waiting.candidates} <= {None}
    assert set(receipted._stats.waiting.counted) | {e[6] for e in receipted._stats.waiting.backlog + receipted._stats.waiting.candidates} \
        <= {1, None}


def test_a_restored_naive_bayes_keeps_the_moments_of_a_feature_promoted_after_another_numeric_one():
    """A promotion makes its Gaussian slot after the numeric features seen before it; the state wrote the moments
    slot by slot and a restore made the slots again in feature order, so the moments of the two features
    swapped (the restored model predicted 0.99999 where the original said 0.557)."""
    events = [({"commission": x["commission"], "n": float(i % 7) + 0.5 * y, **x}, y)
              for i, (x, y) in enumerate(commission_stream())]
    model = learn(NaiveBayes(), events)
    s = model._stats
    assert s.gslot[s.feature_index["commission"]] > s.gslot[s.feature_index["n"]]  # made after n's
    restored = NaiveBayes.from_state(*json_state(model))
    assert restored._stats.counts()["gaussian"] == s.counts()["gaussian"]
    for x, _ in events[:30]:
        assert_proba_close(restored.predict_proba_one(x), model.predict_proba_one(x), 1e-12)


def json_state(model):
    arrays, meta = model.state()
    return arrays, json.loads(json.dumps(meta))


@pytest.mark.parametrize("cls", [AODE, TAN, KDB, SPODE])
def test_a_promotion_while_the_counts_decay_keeps_learning(cls):
    """A feature of integers turned numeric by its first fraction in a model whose counts decay: the recut
    the promotion makes due first renormalises the decayed counts, which derives the coarse layer again;
    that took the old cut points, no longer fine edges, and raised. Now it takes MDL's until the recut, and
    the decayed count of every event is the textbook sum Σ 2^(-age/H)."""
    H = 4.0
    stream = [({"weight": 1}, 0), ({}, 0), ({}, 1), ({"weight": 0}, 0), ({"weight": 0.01}, 1)]
    stream += commission_stream(n=60, seed=4)
    numeric = EqualFrequency(bins=3, warmup=5) if cls is KDB else MDL(bins=3, warmup=5)  # the model's default discretiser
    model = cls(forgetting=Decay(half_life=H), numeric=numeric)
    for x, y in stream:
        model.learn_one(x, y)
    assert model.n_learned == pytest.approx(sum(2.0 ** (-age / H) for age in range(len(stream))), rel=1e-12)
    proba = model.predict_proba_one({"weight": 0.5, "commission": 20000.0, "k": "k1"})
    assert sum(proba.values()) == pytest.approx(1.0) and min(proba.values()) >= 0.0
