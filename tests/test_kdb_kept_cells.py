"""KDB's long runs (t = 3) take the packed cells the store's last run left when nothing has written to its
t-way table since (:data:`stream_nb.learners._kdb_kernel._KEPT`): interleaved with every other writer of the
counts (one event learned or unlearned, a merge, decay, a copy, a rebuild) they count and score exactly as a
model that copies the cells from the table before every run."""

from __future__ import annotations

import copy
import random

import numpy as np
import pandas as pd
import pytest

from stream_nb import KDB, Decay, Parents
from stream_nb.kernels import compiled
from stream_nb.learners import _kdb_kernel

_COUNTS = ("class_count", "value_count", "feat_count", "pair_count", "pair_feat", "tuple_count", "tuple_feat")


def _binary_stream(n: int, seed: int) -> list:
    """Twelve attributes of two values each, some copying the class or each other: long runs over the same
    values, counted packed."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        y = rng.choice("ab")
        x = {f"b{i}": str(rng.randint(0, 1)) for i in range(12)}
        x["b0"] = y if rng.random() < 0.8 else "a"
        x["b1"] = x["b0"] if rng.random() < 0.7 else x["b1"]
        out.append((x, y))
    return out


class _NeverKept(dict):
    """A store of kept cells that keeps none: every run copies its cells from the table."""

    def __setitem__(self, key, value) -> None:
        pass


@pytest.mark.parametrize("options", [{}, {"forgetting": Decay(half_life=60)}], ids=["plain", "decay"])
def test_runs_that_take_the_kept_cells_count_and_score_as_runs_that_copy_them(options, monkeypatch):
    stream = _binary_stream(1400, seed=3)
    other = KDB(k=2, alpha=0.5, search=Parents(0), **options)
    for x, y in _binary_stream(150, seed=4):
        other.learn_one(x, y)
    kept, fresh = (KDB(k=2, alpha=0.5, search=Parents(0), **options) for _ in range(2))
    for model in (kept, fresh):
        for x, y in stream[:80]:
            model.learn_one(x, y)
        model.rebuild()
    taken = []  # per kernel call: whether it was given kept cells
    kernel = compiled().kdb_block

    def spying(*args):
        taken.append(len(args[-1]) > 0)
        return kernel(*args)

    monkeypatch.setattr(compiled(), "kdb_block", spying)
    pos, reused = 80, []

    def run(models, n=120):
        """The next ``n`` events through ``prequential_many`` of each of ``models`` (the second without kept
        cells): the same predictions and probabilities, bit for bit."""
        nonlocal pos
        xs, ys = [x for x, _ in stream[pos:pos + n]], [y for _, y in stream[pos:pos + n]]
        pos += n
        (a, b), calls = models, len(taken)
        got_a = a.prequential_many(xs, ys)
        reused.append(any(taken[calls:]))
        calls = len(taken)
        with monkeypatch.context() as m:
            m.setattr(_kdb_kernel, "_KEPT", _NeverKept())
            got_b = b.prequential_many(xs, ys)
        assert not any(taken[calls:])
        assert [p for p, _ in got_a] == [p for p, _ in got_b]
        assert [proba for _, proba in got_a] == [proba for _, proba in got_b]

    def same(a, b):
        for name in _COUNTS:
            np.testing.assert_array_equal(getattr(a._stats, name), getattr(b._stats, name), err_msg=name)

    pair = (kept, fresh)
    run(pair)
    run(pair)
    assert reused == [False, True]  # the second run took the first's cells
    rows = stream[1300:1320]
    frame = pd.DataFrame([x for x, _ in rows])
    writes = [
        lambda model: model.learn_one(*stream[1320]),  # an event counted one at a time, between two runs
        lambda model: model.learn_many(frame, pd.Series([y for _, y in rows])),  # a block counted
        lambda model: model.merge(copy.deepcopy(other)),
        lambda model: model.rebuild(),
        lambda model: model.state(),  # a reader: the cells stay kept
    ]
    if not options:
        writes.append(lambda model: model.unlearn_one(*stream[10]))
    for write in writes:
        for model in pair:
            write(model)
        same(kept, fresh)
        run(pair)
        run(pair)
        same(kept, fresh)
    assert sum(reused) >= len(writes)  # (the run after each write's next one at least)
    # a copy (or a pickle) does not take the kept cells with it, and both go on as the model without them
    twin = copy.deepcopy(kept)
    before = pos
    run((twin, copy.deepcopy(fresh)))
    assert not reused[-1]
    pos = before
    run(pair)
    same(kept, fresh)
    same(twin, fresh)
