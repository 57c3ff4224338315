"""Properties that must hold for any stream: hypothesis draws the streams."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stream_nb import AODE, EM, MDL, TAN, Ignore, NaiveBayes, SuperParents, Tree

MODELS = [
    lambda: NaiveBayes(),
    lambda: NaiveBayes(alpha=0.3, loss={"b": {"a": 5.0}}),
    lambda: AODE(numeric=MDL(bins=3, warmup=5), search=SuperParents(m=2)),
    lambda: TAN(numeric=MDL(bins=3, warmup=5), search=Tree(rebuild_every=7)),
]

values = {
    "colour": st.one_of(st.none(), st.sampled_from(["red", "green", "blue"])),
    "size": st.one_of(st.none(), st.integers(0, 3)),
    "flag": st.one_of(st.none(), st.booleans()),
    "weight": st.one_of(st.none(), st.just(float("nan")), st.floats(-1e6, 1e6, allow_nan=False)),
}
events = st.lists(
    st.tuples(
        st.fixed_dictionaries({}, optional=values),
        st.sampled_from(["a", "b", "c"]),
    ),
    min_size=1,
    max_size=60,
)
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("make", MODELS, ids=["nb", "nb-loss", "aode", "tan"])
@SETTINGS
@given(stream=events, query=st.fixed_dictionaries({}, optional=values))
def test_posterior_is_a_finite_distribution_over_seen_classes(make, stream, query):
    model = make()
    for x, y in stream:
        p = model.predict_proba_one(x)
        assert all(math.isfinite(v) and 0.0 <= v <= 1.0 for v in p.values())
        model.learn_one(x, y)
    p = model.predict_proba_one(query)
    assert set(p) == {y for _, y in stream}
    assert sum(p.values()) == pytest.approx(1.0, abs=1e-9)
    assert model.predict_one(query) in p


@pytest.mark.parametrize("make", MODELS, ids=["nb", "nb-loss", "aode", "tan"])
@SETTINGS
@given(stream=events, seed=st.integers(0, 2**32 - 1))
def test_categorical_counts_do_not_depend_on_order(make, stream, seed):
    # numeric bins are chosen from the first values, so order matters there by design
    stream = [({k: v for k, v in x.items() if k != "weight"}, y) for x, y in stream]
    # EM's expected counts depend on what was learned before, so this is a property of "ignore"
    a, b = make().clone({"missing": Ignore()}), make().clone({"missing": Ignore()})
    for x, y in stream:
        a.learn_one(x, y)
    for i in np.random.default_rng(seed).permutation(len(stream)):
        b.learn_one(*stream[i])
    ca, cb = a._stats.counts(), b._stats.counts()
    assert ca["class_count"] == cb["class_count"]
    assert ca["value_count"] == cb["value_count"]


@pytest.mark.parametrize("make", MODELS, ids=["nb", "nb-loss", "aode", "tan"])
@SETTINGS
@given(stream=events, cut=st.integers(0, 60))
def test_learn_many_in_any_batches_equals_learn_one(make, stream, cut):
    # pandas turns an int column with missing values into floats, so the types are declared
    # (as learn_many's docstring asks) for the two paths to see the same features
    types = {"size": "categorical", "colour": "categorical", "flag": "categorical", "weight": "numeric"}
    one, many = make().clone({"types": types}), make().clone({"types": types})
    for x, y in stream:
        one.learn_one(x, y)
    cut = min(cut, len(stream))
    for part in (stream[:cut], stream[cut:]):
        if part:
            many.learn_many(pd.DataFrame([x for x, _ in part]), pd.Series([y for _, y in part]))
    for x, _ in stream[:10]:
        p1, p2 = one.predict_proba_one(x), many.predict_proba_one(x)
        assert p1.keys() == p2.keys()
        for c in p1:
            assert p2[c] == pytest.approx(p1[c], rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("make", MODELS, ids=["nb", "nb-loss", "aode", "tan"])
@SETTINGS
@given(stream=events)
def test_em_keeps_beside_its_counts_exactly_what_ignore_counts(make, stream):
    """The observed-only counts EM's E-step reads are, whatever the stream, the counts of the same
    model with missing="ignore"; with nothing missing, they are EM's counts too."""
    em, ignore = make().clone({"missing": EM()}), make().clone({"missing": Ignore()})
    for x, y in stream:
        em.learn_one(x, y)
        ignore.learn_one(x, y)
    got, want = em._stats.state()[0], ignore._stats.state()[0]
    np.testing.assert_array_equal(got["class_count"], want["class_count"])
    if "obs_value_count" not in got:  # no expected counts yet: the counts are the observed ones
        assert got.keys() == want.keys()
    for k in [k for k in want if k.rpartition(".")[2] not in ("class_count", "g_n", "g_mean", "g_m2")]:
        # a two-layer store's fine layer keeps its own twin: "fine.value_count" -> "fine.obs_value_count"
        layer, _, name = k.rpartition(".")
        twin = f"{layer}.obs_{name}" if layer else f"obs_{name}"
        np.testing.assert_array_equal(got.get(twin, got[k]), want[k], err_msg=k)
