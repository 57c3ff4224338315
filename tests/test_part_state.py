"""The state codec alone (:mod:`stream_nb.stats.store._state`): its functions take a store as an argument.
The counts it reads are checked against counts made by hand from the events; a state it writes is read
into a new store made from the keywords it reads, and that store writes the same state, holds the same
counts and learns on as the first; a state that does not fit is refused before a store is made."""

from collections import Counter

import numpy as np
import pytest

from stream_nb.stats import Stats
from stream_nb.stats.store._state import check_state, counts_of, read_state, store_options, write_state


def events(n, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        y = ["no", "yes"][int(rng.integers(0, 2))]
        x = {"outlook": ["sunny", "rain", "cloudy"][int(rng.integers(0, 3))], "wind": bool(rng.integers(0, 2))}
        if rng.random() < 0.3:
            x["temp"] = float(rng.normal(20 if y == "yes" else 25, 3))
        if rng.random() < 0.2:
            del x["wind"]
        out.append((x, y))
    return out


def same_state(a, b):
    (aa, am), (ba, bm) = a, b
    assert am == bm and list(aa) == list(ba)
    for k in aa:
        np.testing.assert_array_equal(aa[k], ba[k], err_msg=k)


@pytest.mark.parametrize("numeric, pairs", [("gaussian", False), ("bins", True)])
def test_counts_are_the_events_counted_by_hand(numeric, pairs):
    s = Stats(pairs=pairs, numeric=numeric, warmup=5)
    stream = events(60)
    for x, y in stream:
        s.learn_one(x, y)
    counts = counts_of(s)
    assert counts == s.counts()
    assert counts["class_count"] == {y: float(n) for y, n in Counter(y for _, y in stream).items()}
    for name in ("outlook", "wind"):
        by_hand = Counter((x[name], y) for x, y in stream if name in x)
        assert {(v, y): n for v, row in counts["value_count"][name].items() for y, n in row.items() if n} == by_hand
    if numeric == "gaussian":
        for y, (n, mean, m2) in counts["gaussian"]["temp"].items():
            values = np.array([x["temp"] for x, yy in stream if yy == y and "temp" in x])
            assert n == len(values) and mean == pytest.approx(values.mean()) and m2 == pytest.approx(
                ((values - values.mean()) ** 2).sum())


@pytest.mark.parametrize("numeric, pairs, observed", [("gaussian", False, False), ("bins", True, False),
                                                      ("bins", True, True)])
def test_a_state_read_into_a_new_store_is_written_again_the_same(numeric, pairs, observed):
    s = Stats(pairs=pairs, numeric=numeric, warmup=5, observed=observed)
    for x, y in events(80):
        s.learn_one(x, y)
    if observed:
        s.keep_observed()
    arrays, meta = write_state(s)
    assert (arrays.keys(), meta) == (s.state()[0].keys(), s.state()[1])
    check_state(arrays, meta)
    t = Stats(**store_options(meta))
    read_state(t, arrays, meta)
    same_state(write_state(t), (arrays, meta))
    assert counts_of(t) == counts_of(s) and t.keeps_observed == observed
    # both learn on alike
    for x, y in events(30, seed=1):
        s.learn_one(x, y)
        t.learn_one(x, y)
    same_state(write_state(t), write_state(s))


def test_a_state_that_does_not_fit_is_refused_before_a_store_is_made():
    s = Stats(pairs=True, numeric="bins", warmup=5)
    for x, y in events(20):
        s.learn_one(x, y)
    arrays, meta = write_state(s)
    with pytest.raises(ValueError, match="value_count"):
        check_state({**arrays, "value_count": arrays["value_count"][:, :-1]}, meta)
    with pytest.raises(ValueError, match="classes"):
        check_state(arrays, {**meta, "classes": meta["classes"] + meta["classes"][:1]})
    with pytest.raises(ValueError, match="missing"):
        check_state(arrays, {k: v for k, v in meta.items() if k != "features"})
