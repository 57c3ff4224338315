"""``learn_many`` learns a DataFrame as ``learn_one`` learns its rows in order, through the models' kernels.

Each model, as users configure it (EM for missing values by default, Gaussian or two-layer MDL numerics,
a memory budget, a window), on a stream whose values and classes keep appearing inside batches: the state
after ``learn_many`` over batches equals the state after the ``learn_one`` loop, and a batch with one bad row
is refused whole, the model left as it was.
"""

import numpy as np
import pandas as pd
import pytest

from stream_nb import AODE, KDB, MDL, SPODE, TAN, EqualFrequency, Gaussian, NaiveBayes, Window
from stream_nb.exceptions import InvalidEventError

#: (name, constructor): each model as a user writes it, with the options that change how counts are kept.
CASES = {
    "nb": lambda: NaiveBayes(),
    "nb-mdl": lambda: NaiveBayes(numeric=MDL()),
    "nb-window": lambda: NaiveBayes(forgetting=Window(120)),
    "aode": lambda: AODE(),
    "aode-budget": lambda: AODE(memory_budget=0),
    "tan": lambda: TAN(),
    "tan-equal-frequency": lambda: TAN(numeric=EqualFrequency(bins=3, warmup=30)),
    "spode": lambda: SPODE(),
    "spode-window": lambda: SPODE(forgetting=Window(120)),
    "kdb": lambda: KDB(k=2),
    "kdb-budget": lambda: KDB(k=2, memory_budget=0),
}


def events(n: int, seed: int) -> list:
    """``(x, y)`` pairs: a categorical feature whose values keep growing, a number that depends on the class,
    a boolean and a small integer; about one event in six misses ``cat``, one in ten ``num``. Class ``"z"``
    first appears at event 130, inside a batch of 64."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        y = ["x", "y", "z"][int(rng.integers(3 if i >= 130 else 2))] if i != 130 else "z"
        x = {"cat": f"c{int(rng.integers(1 + i // 40))}", "num": float(rng.normal({"x": 0, "y": 2, "z": 4}[y])),
             "flag": bool(rng.integers(2)), "n": int(rng.integers(4))}
        if rng.random() < 0.16:
            del x["cat"]
        if rng.random() < 0.1:
            x["num"] = None
        out.append((x, y))
    return out


def frame(rows: list) -> pd.DataFrame:
    return pd.DataFrame([x for x, _ in rows])


def assert_same_state(a, b) -> None:
    """The two models' (or states') arrays equal to rel 1e-12, and their metadata equal."""
    (arrays_a, meta_a), (arrays_b, meta_b) = (m if isinstance(m, tuple) else m.state() for m in (a, b))
    assert arrays_a.keys() == arrays_b.keys()
    for key in arrays_a:
        assert np.allclose(arrays_a[key], arrays_b[key], rtol=1e-12, atol=1e-12), key
    assert meta_a == meta_b


@pytest.mark.parametrize("name", list(CASES))
def test_learn_many_equals_learn_one_row_by_row(name):
    data = events(300, seed=3)
    one, many = CASES[name](), CASES[name]()
    for x, y in data:
        one.learn_one(x, y)
    rows = []  # the kernel's blocks of rows learned, as learn_many hands them over
    kernel = many._kernel_block
    many._kernel_block = lambda D, *args, **kw: rows.append(len(D)) or kernel(D, *args, **kw)
    for lo in range(0, len(data), 64):
        chunk = data[lo: lo + 64]
        many.learn_many(frame(chunk), pd.Series([y for _, y in chunk]))
    assert_same_state(one, many)
    if "budget" not in name:  # (sparse tables take each row the one-event way)
        assert max(rows) > 1  # runs of rows through the kernel
    queries = [x for x, _ in events(40, seed=4)]
    assert np.allclose(many.predict_proba_many(frame([(x, None) for x in queries])).to_numpy(),
                       one.predict_proba_many(frame([(x, None) for x in queries])).to_numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", ["nb", "aode", "tan", "spode", "kdb"])
@pytest.mark.parametrize("bad", ["value type", "infinite number", "missing label", "label type", "new feature type"])
def test_a_bad_row_refuses_the_whole_batch(name, bad):
    data = events(160, seed=5)
    model = CASES[name]()
    model.learn_many(frame(data[:100]), pd.Series([y for _, y in data[:100]]))
    before = model.state()
    rows, ys = [dict(x) for x, _ in data[100:]], [y for _, y in data[100:]]
    if bad == "value type":
        rows[40]["flag"] = "yes"  # a boolean feature
    elif bad == "infinite number":
        rows[40]["num"] = float("inf")
    elif bad == "missing label":
        ys[40] = None
    elif bad == "label type":
        ys[40] = 7
    else:  # a feature the model does not know yet, a string then a list
        rows[30]["new"], rows[40]["new"] = "a", ["b"]
    with pytest.raises(InvalidEventError):
        model.learn_many(frame(list(zip(rows, ys))), pd.Series(ys, dtype=object))
    assert_same_state(model, before)
    model.learn_many(frame(data[100:]), pd.Series([y for _, y in data[100:]]))  # the good batch is learned
    reference = CASES[name]()
    for x, y in data:
        reference.learn_one(x, y)
    assert_same_state(model, reference)


def test_learn_many_with_gaussian_numbers_and_no_missing_values_is_the_river_loop():
    """The plain case, as river's own mini-batch loop drives it: the same posteriors as ``learn_one``."""
    data = [({k: v for k, v in x.items() if v is not None}, y) for x, y in events(200, seed=6)]
    one, many = NaiveBayes(numeric=Gaussian()), NaiveBayes(numeric=Gaussian())
    for x, y in data:
        one.learn_one(x, y)
    for lo in range(0, len(data), 50):
        many.learn_many(frame(data[lo: lo + 50]), pd.Series([y for _, y in data[lo: lo + 50]]))
    assert_same_state(one, many)
    for x, _ in data[:20]:
        p, q = one.predict_proba_one(x), many.predict_proba_one(x)
        assert p.keys() == q.keys() and all(abs(p[k] - q[k]) <= 1e-12 * max(1.0, abs(p[k])) for k in p)


@pytest.mark.parametrize("new", ["value", "class"])
def test_a_batch_past_the_t_way_tables_room_is_refused_whole(new):
    """KDB's ``max_table_cells``: a batch whose new value (or class), late in it, would take the 3-way table past
    its cells raises ``CapacityError`` before any of its rows is learned, as a whole batch is checked first."""
    from stream_nb.exceptions import CapacityError

    model = KDB(k=2, max_table_cells=2 * 10**3)  # 2 classes x (9 values and column 0)^3
    model.learn_many(pd.DataFrame({f: [f + str(i % 3) for i in range(30)] for f in "abc"}), pd.Series([0, 1] * 15))
    before = model.state()
    rows = pd.DataFrame({f: [f + "0"] * 30 for f in "abc"})
    ys = pd.Series([0] * 30)
    if new == "value":
        rows.loc[25, "a"] = "a9"
    else:
        ys[25] = 2
    with pytest.raises(CapacityError):
        model.learn_many(rows, ys)
    assert_same_state(model, before)
