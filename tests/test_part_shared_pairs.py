"""The shared pair tables alone (:class:`~stream_nb.stats.budget.SharedPairs`, no two-layer store): two plain
:class:`~stream_nb.stats.Stats` stand for the coarse and the fine layer, learning the same events as a
two-layer store's layers do (the fine one without pair tables while they are shared). Checked against a
third store that learned every event with pair tables of its own all along."""

import numpy as np
import pytest

from stream_nb.stats import Stats
from stream_nb.stats.budget import SharedPairs


def events(n, seed=0, floats=False):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        y = int(rng.integers(0, 3))
        x = {f"f{j}": str(int(rng.integers(0, 4)) ^ (y if j < 2 else 0)) for j in range(4)}
        if rng.random() < 0.2:
            x.pop("f3")
        if floats:
            x["t"] = float(rng.normal(y, 1.0))
        out.append((x, y))
    return out


def layers(**kwargs):
    """A coarse layer, a fine layer and the reference (a fine layer that keeps its own pair tables)."""
    make = lambda bins: Stats(pairs=True, numeric="bins", bins=bins, warmup=10, **kwargs)  # noqa: E731
    coarse, fine, reference = make(3), make(8), make(8)
    for s in (fine, reference):  # as a two-layer store's fine layer: a float feature counted by value as long
        s.schema.set_few_max(coarse.bins)  # as in the coarse one
    return coarse, fine, reference


def learn(stream, *stores):
    for x, y in stream:
        for s in stores:
            s.learn_one(x, y)


def assert_same_state(a, b):
    (aa, am), (ba, bm) = a.state(), b.state()
    assert am == bm and sorted(aa) == sorted(ba)
    for k in aa:
        np.testing.assert_array_equal(aa[k], ba[k], err_msg=k)


def test_shared_tables_are_dropped_lent_and_owned_with_the_counts_of_a_layer_that_kept_its_own():
    coarse, fine, reference = layers()
    learn(events(50), coarse, fine, reference)
    part = SharedPairs()
    assert part.one_layer(coarse, fine) and not part.shared
    epoch = fine.epoch
    part.share(coarse, fine)
    assert part.shared and not fine.pairs and fine.tables.get("pair_count") is None and fine.epoch == epoch + 1
    assert coarse.pairs and coarse.tables.get("pair_count") is not None  # the coarse layer keeps its own
    part.share(coarse, fine)  # already shared: nothing changes
    assert fine.epoch == epoch + 1
    # while shared, the fine layer counts classes, values and features; its pair counts are the coarse ones
    learn(events(40, seed=1), coarse, fine, reference)
    with part.lent(coarse, fine):
        assert fine.pairs and fine.pair_count is coarse.pair_count
        assert_same_state(fine, reference)  # what a snapshot writes: the format of a layer that owns its tables
    assert not fine.pairs and fine.tables.get("pair_count") is None and part.shared
    part.own(coarse, fine)
    assert not part.shared and fine.pairs and fine.pair_count is not coarse.pair_count
    assert_same_state(fine, reference)
    # a copy of its own: the two layers' pair counts part from here
    before = coarse.pair_count.copy()
    learn(events(10, seed=2), fine, reference)
    np.testing.assert_array_equal(coarse.pair_count, before)
    assert_same_state(fine, reference)
    part.own(coarse, fine)  # owned already: nothing changes
    assert_same_state(fine, reference)


def test_the_layers_share_nothing_unless_they_are_one():
    # a binned feature in the fine layer: its columns are no longer the coarse layer's
    coarse, fine, _ = layers()
    learn(events(30, floats=True), coarse, fine)
    part = SharedPairs()
    assert not part.one_layer(coarse, fine)
    part.share(coarse, fine)
    assert not part.shared and fine.pairs
    # a float feature still in its warm-up: no column of it yet in either layer, but binned it will be
    coarse, fine, _ = layers()
    learn(events(5, floats=True), coarse, fine)
    assert fine.value_keys == coarse.value_keys and not part.one_layer(coarse, fine)
    # a value only one layer has seen
    coarse, fine, _ = layers()
    learn(events(30), coarse, fine)
    learn([({"f0": "new"}, 0)], fine)
    assert not part.one_layer(coarse, fine)
    # t-way tables (KDB) are kept by both layers
    coarse, fine, _ = layers(tuples=3)
    learn(events(30), coarse, fine)
    assert not part.one_layer(coarse, fine)
    # a store that forgets keeps both layers' tables, for good
    coarse, fine, _ = layers()
    learn(events(30), coarse, fine)
    assert not SharedPairs(forgets=True).one_layer(coarse, fine)
    part = SharedPairs()
    part.share(coarse, fine)
    part.own(coarse, fine, for_good=True)
    part.share(coarse, fine)
    assert part.forgets and not part.shared and fine.pairs


@pytest.mark.parametrize("observed", [False, True])
def test_the_observed_twin_is_shared_and_owned_with_the_counts(observed):
    coarse, fine, reference = layers(observed=observed)
    stores = (coarse, fine, reference)
    learn(events(30), *stores)
    if observed:
        for s in stores:
            s.keep_observed()
    part = SharedPairs()
    part.share(coarse, fine)
    assert part.shared and fine.tables.get("obs_pair_count" if observed else "pair_count") is None
    learn(events(20, seed=3), *stores)
    part.own(coarse, fine)
    assert_same_state(fine, reference)
