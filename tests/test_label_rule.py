"""One label rule and one event rule for the Python API and the daemon.

A label is a string, an integer or a boolean; a float only when it is an
integer below 2**53 in magnitude (it is then that integer, as JSON's ``1.0``
is ``1``). The learners and the daemon (events and ``--feedback`` labels)
take and refuse the same labels; an event that is no dict raises a
``TypeError`` naming what was expected, on every method that takes one.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import orjson
import pandas as pd
import pytest

import stream_nb
from stream_nb import AODE, KDB, SPODE, TAN, Decay, NaiveBayes, Parents, Tree, Window
from stream_nb.exceptions import EventTypeError, InvalidEventError

MODELS = {
    "nb": NaiveBayes,
    "nb-decay": lambda: NaiveBayes(forgetting=Decay(half_life=5.0)),
    "nb-time": lambda: NaiveBayes(forgetting=Decay(half_life=5.0, time_field="t")),
    "nb-window": lambda: NaiveBayes(forgetting=Window(size=10)),
    "aode": AODE,
    "tan": lambda: TAN(search=Tree(rebuild_every=5)),
    "spode": SPODE,
    "kdb": lambda: KDB(k=2, search=Parents(5)),
}

#: (label as Python gives it, its JSON text, the class it is; None: refused with bad_label)
LABELS = [
    (3, b"3", 3),
    (3.0, b"3.0", 3),
    (-7.0, b"-7.0", -7),
    (np.int64(3), None, 3),
    (np.float64(4.0), None, 4),
    (2**53 - 1.0, b"9007199254740991.0", 2**53 - 1),
    (2**53 + 1, b"9007199254740993", 2**53 + 1),  # an integer is exact at any size
    (1.5, b"1.5", None),
    (9007199254740993.0, b"9007199254740993.0", None),  # reads as 2**53: maybe not the integer written
    (float(2**60), b"1152921504606846976.0", None),
    (("a", 1), b'["a", 1]', None),
    (frozenset({1}), b'{"a": 1}', None),
]


def state_of(model) -> tuple:
    arrays, meta = model.state()
    return {k: v.tolist() for k, v in arrays.items()}, orjson.dumps(stream_nb.snapshots.encode_meta(meta))


def warm(name):
    model = MODELS[name]()
    for i in range(8):
        model.learn_one({"a": "xy"[i % 2], "n": float(i)}, 1 + i % 2)
    return model


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("label, text, cls", LABELS, ids=[repr(v[0]) for v in LABELS])
def test_every_method_takes_or_refuses_a_label_alike(name, label, cls, text):
    x = {"a": "x", "n": 1.0}
    results = {}
    for how in ("learn_one", "learn_many", "prequential_one", "prequential_many"):
        model = warm(name)
        before = state_of(model)
        try:
            if how == "learn_one":
                model.learn_one(x, label)
            elif how == "prequential_one":
                model.prequential_one(x, label)
            elif how == "learn_many":
                model.learn_many(pd.DataFrame([x]), pd.Series([label], dtype=object))
            else:
                (out,) = model.prequential_many([x], [label])
                if isinstance(out, Exception):
                    raise out
        except InvalidEventError as exc:
            assert exc.reason == "bad_label", (how, exc)
            assert "must be a string, an integer or a boolean (or a float that is an integer)" in str(exc)
            assert state_of(model) == before, how  # refused: nothing changed
            results[how] = None
        else:
            classes = model._stats.classes
            assert classes[-1] == cls and type(classes[-1]) is type(cls), (how, classes)
            results[how] = classes[-1]
    assert set(results.values()) == {cls}, results


@pytest.mark.parametrize("label, text, cls", [v for v in LABELS if v[1] is not None],
                         ids=[repr(v[0]) for v in LABELS if v[1] is not None])
def test_the_daemon_takes_the_labels_the_python_api_takes(label, text, cls, tmp_path):
    dead = tmp_path / "dead.jsonl"
    events = b'{"a":"x","label":1}\n{"a":"y","label":%s}\n{"a":"y"}\n' % text
    proc = subprocess.run([sys.executable, "-m", "stream_nb.cli", "run", "--dead-letter", str(dead)], input=events,
                          capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    last = orjson.loads(proc.stdout.splitlines()[-1])
    letters = [orjson.loads(line) for line in dead.read_bytes().splitlines()]
    if cls is None:
        (letter,) = letters
        assert (letter["reason"], letter["field"], letter["source"]["line"]) == ("bad_label", "label", 2)
        assert last["proba"] == {"1": 1.0}
    else:
        assert letters == [] and set(last["proba"]) == {"1", str(cls)}
    model = NaiveBayes()
    model.learn_one({"a": "x"}, 1)
    try:
        model.learn_one({"a": "y"}, label)
    except InvalidEventError:
        assert cls is None
    else:
        assert [str(c) for c in model._stats.classes] == list(last["proba"])


def test_a_feedback_label_follows_the_same_rule(tmp_path):
    events, labels, dead = tmp_path / "ev.jsonl", tmp_path / "lb.jsonl", tmp_path / "dead.jsonl"
    events.write_bytes(b'{"id":"a","x":"u","label":2}\n{"id":"b","x":"v"}\n{"id":"c","x":"v"}\n{"id":"d","x":"v"}\n')
    labels.write_bytes(b'{"id":"b","label":1.5}\n{"id":"c","label":3.0}\n{"id":"d","label":9007199254740993.0}\n')
    proc = subprocess.run([sys.executable, "-m", "stream_nb.cli", "run", "--input", str(events), "--feedback",
                           str(labels), "--dead-letter", str(dead)], capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    letters = [orjson.loads(line) for line in dead.read_bytes().splitlines()]
    assert [(d["reason"], d["source"]["file"], d["source"]["line"]) for d in letters] == [
        ("bad_label", str(labels), 1), ("bad_label", str(labels), 3)]
    assert "may not be the integer it was written as" in letters[1]["error"]
    last = orjson.loads(proc.stdout.splitlines()[-1])
    assert set(last["proba"]) == {"2", "3"}  # 3.0 learned as the class 3


NOT_EVENTS = [[("a", "x")], None, "a=x", 3, ("a",)]


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("bad", NOT_EVENTS, ids=repr)
def test_an_event_that_is_no_dict_is_a_type_error_naming_what_was_expected(name, bad):
    model = warm(name)
    before = state_of(model)
    calls = {
        "learn_one": lambda: model.learn_one(bad, 1),
        "predict_one": lambda: model.predict_one(bad),
        "predict_proba_one": lambda: model.predict_proba_one(bad),
        "predict_and_proba_one": lambda: model.predict_and_proba_one(bad),
        "risk_one": lambda: model.risk_one(bad),
        "prequential_one": lambda: model.prequential_one(bad, 1),
        "impute_one": lambda: model.impute_one(bad),
        "impute_proba_one": lambda: model.impute_proba_one(bad),
        "learn_one_receipt": lambda: model.learn_one_receipt(bad, 1),
        "unlearn_one": lambda: model.unlearn_one(bad, 1),
    }
    for how, call in calls.items():
        with pytest.raises(TypeError) as err:
            call()
        assert isinstance(err.value, EventTypeError) and err.value.reason == "not_an_object", how
        got = "None" if bad is None else f"{type(bad).__name__} {bad!r}"
        assert str(err.value) == f"x: expected a dict of feature name -> value, got {got}", how
        assert state_of(model) == before, how
    # a batch: that event is refused in its place, the others learned
    other = warm(name)
    out = model.prequential_many([{"a": "x"}, bad, {"a": "y"}], [1, 1, 2])
    assert isinstance(out[1], EventTypeError)
    assert out[:1] + out[2:] == other.prequential_many([{"a": "x"}, {"a": "y"}], [1, 2])
    assert state_of(model) == state_of(other)


def test_a_null_line_is_dead_lettered_as_null_not_nonetype(tmp_path):
    dead = tmp_path / "dead.jsonl"
    lines = b'null\n[1]\n"s"\n2.5\ntrue\n{"a":"x","label":"p"}\n'
    proc = subprocess.run([sys.executable, "-m", "stream_nb.cli", "run", "--dead-letter", str(dead)], input=lines,
                          capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    letters = [orjson.loads(line) for line in dead.read_bytes().splitlines()]
    assert [(d["reason"], d["error"]) for d in letters] == [
        ("not_an_object", f"event must be a JSON object, got {what}")
        for what in ("null", "an array", "a string", "a number", "true")]


@pytest.mark.parametrize("bad", [[{"a": "x"}], {"a": ["x"]}, None], ids=repr)
def test_the_batch_methods_name_the_dataframe_they_expect(bad):
    model = warm("nb")
    before = state_of(model)
    for call in (lambda: model.learn_many(bad, pd.Series([1])), lambda: model.predict_proba_many(bad),
                 lambda: model.predict_many(bad)):
        expected = f"X: expected a pandas DataFrame of feature columns, got {type(bad).__name__} "
        with pytest.raises(TypeError, match=expected):
            call()
    assert state_of(model) == before


def test_unlearn_one_follows_the_rule():
    model = warm("nb")
    before = state_of(model)
    model.learn_one({"a": "x"}, 2.0)  # the class 2
    model.unlearn_one({"a": "x"}, 2.0)
    assert state_of(model) == before
    for bad in (1.5, (2,), 9007199254740993.0):
        with pytest.raises(InvalidEventError, match="must be a string, an integer or a boolean") as err:
            model.unlearn_one({"a": "x"}, bad)
        assert err.value.reason == "bad_label" and state_of(model) == before


@pytest.mark.parametrize("name", ["nb", "aode", "kdb"])
def test_numpy_and_whole_float_labels_are_the_integer_classes_in_the_vectorised_runs(name):
    rng = np.random.default_rng(3)
    xs = [{"a": str(int(v) % 5), "n": float(v)} for v in rng.integers(0, 20, 300)]
    ints = [int(x["n"]) % 3 for x in xs]
    reference = MODELS[name]()
    want = reference.prequential_many(xs, ints)
    for ys in ([np.int64(y) for y in ints], [float(y) for y in ints], list(np.array(ints, dtype=np.int32))):
        model = MODELS[name]()
        got = model.prequential_many(xs, ys)  # float labels go one at a time: the same up to rounding
        assert [p for p, _ in got] == [p for p, _ in want]
        for (_, g), (_, w) in zip(got, want):
            assert g.keys() == w.keys() and all(g[c] == pytest.approx(w[c], rel=1e-9, abs=1e-12) for c in w)
        assert model._stats.classes == reference._stats.classes and {type(c) for c in model._stats.classes} == {int}
