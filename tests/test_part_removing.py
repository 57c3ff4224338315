"""Taking back alone (:mod:`stream_nb.stats.store._removing`): its functions take the store as an argument.
An event taken back by its journal leaves the counts a store that never learned it holds; an entry the
counts cannot hold is refused and nothing changes; rows taken back leave the counts of the other events."""

import numpy as np
import pytest

from stream_nb.exceptions import UnlearnError
from stream_nb.stats import Stats
from stream_nb.stats.store._removing import check_entry, remove_entries, remove_rows


def events(n, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        y = int(rng.integers(0, 3))
        x = {f"f{j}": str(int(rng.integers(0, 3)) ^ (y if j == 0 else 0)) for j in range(4)}
        if rng.random() < 0.25:
            x.pop("f2")
        out.append((x, y))
    return out


def make(**kwargs):
    return Stats(pairs=True, numeric="bins", **kwargs)


def same_counts(a, b):
    (aa, am), (ba, bm) = a.state(), b.state()
    assert am["classes"] == bm["classes"] and am["features"] == bm["features"]
    for k in ("class_count", "value_count", "feat_count", "pair_count", "pair_feat", "tuple_count"):
        if k in aa or k in ba:
            np.testing.assert_array_equal(aa[k], ba[k], err_msg=k)


@pytest.mark.parametrize("tuples", [0, 3])
def test_an_event_taken_back_leaves_the_counts_of_a_store_that_never_learned_it(tuples):
    stream = events(60)
    s, without = make(tuples=tuples), make(tuples=tuples)
    for i, (x, y) in enumerate(stream):
        if i == 17:
            s.journal = []
        s.learn_one(x, y)
        if i == 17:
            journal, s.journal = s.journal, None
        else:
            without.learn_one(x, y)
    assert journal and journal[0][0] == "count"
    for e in journal:
        check_entry(s, e)
    remove_entries(s, journal)
    same_counts(s, without)
    # taken back once more: the counts no longer hold it, and nothing changes
    before = s.state()
    with pytest.raises(UnlearnError, match="never learned"):
        remove_entries(s, journal)
    with pytest.raises(UnlearnError):
        check_entry(s, journal[0])
    after = s.state()
    assert before[1] == after[1] and all(np.array_equal(before[0][k], after[0][k]) for k in before[0])


def test_an_unknown_entry_is_refused():
    s = make()
    s.learn_one({"f0": "a"}, 1)
    with pytest.raises(ValueError, match="unknown journal entry"):
        check_entry(s, ("nothing", 1))


def test_rows_taken_back_leave_the_counts_of_the_other_events():
    stream = events(50, seed=1)
    s, rest = make(), make()
    for x, y in stream:
        s.learn_one(x, y)
    for x, y in stream[:30]:
        rest.learn_one(x, y)
    xs, ys = [x for x, _ in stream[30:]], [y for _, y in stream[30:]]
    stop, D, G, yc = s.encode_run(xs, ys, 0, False, len(xs))
    assert stop == len(xs)
    remove_rows(s, D, G, yc)
    same_counts(s, rest)
    with pytest.raises(UnlearnError, match="never learned"):  # (the rows are no longer in the counts)
        remove_rows(s, D, G, yc)
    same_counts(s, rest)
