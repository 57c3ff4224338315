"""One JSON type per model's labels and per categorical feature's values.

Python holds ``True == 1`` and ``False == 0``, and JSON writes the labels ``1``
and ``"1"`` with the same key, so labels (and values) of two types would
silently merge into one class (category) or give two classes one ``proba``
key. The first label fixes the type of a model's labels, a categorical
feature's first value the type of its values; anything else is rejected and
changes nothing, on every path: learn_one, learn_many, the vectorised
prequential runs, prediction, merge, snapshots, the daemon and evaluate.
"""

from __future__ import annotations

import copy
import pathlib
import subprocess
import sys

import numpy as np
import orjson
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import stream_nb
from stream_nb import AODE, EM, KDB, SPODE, TAN, Ignore, NaiveBayes, Parents, Tree
from stream_nb.daemon import load_loss
from stream_nb.engine import Engine, label_key, validate_label
from stream_nb.exceptions import FeatureTypeError, InvalidEventError, LabelTypeError, MergeError
from stream_nb.tools.evaluate import evaluate, make_model, open_events
from test_engine import ListSink, ListSource

MODELS = {
    "nb": NaiveBayes,
    "aode": AODE,
    "tan": lambda: TAN(search=Tree(rebuild_every=5)),
    "spode": SPODE,
    "kdb": lambda: KDB(k=2, search=Parents(5)),
}

#: (first label, a later label of another JSON type)
CONFLICTS = [(1, "1"), ("1", 1), (1, True), (True, 1), (0, False), (False, 0), ("true", True), (2, "two")]


def state_of(model) -> tuple:
    """Everything a model is, comparable with ==."""
    arrays, meta = model.state()
    return {k: v.tolist() for k, v in arrays.items()}, orjson.dumps(stream_nb.snapshots.encode_meta(meta))


def trained(make, first):
    model = make()
    for i in range(6):
        model.learn_one({"a": "x" if i % 2 else "y", "b": "u"}, first)
    return model


# ----------------------------------------------------------------------- labels: Python API


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("first,second", CONFLICTS)
def test_a_label_of_another_type_is_rejected_and_changes_nothing(name, first, second):
    model = trained(MODELS[name], first)
    before = state_of(model)
    with pytest.raises(LabelTypeError) as info:
        model.learn_one({"a": "x", "b": "u"}, second)
    exc = info.value
    assert exc.reason == "label_type_conflict"
    assert (exc.expected, exc.received) == (stream_nb.stats.json_type(first), stream_nb.stats.json_type(second))
    assert exc.expected in str(exc) and exc.received in str(exc)
    assert state_of(model) == before
    assert model.classes == [first] and type(model.classes[0]) is type(first)


@pytest.mark.parametrize("name", MODELS)
def test_labels_of_one_type_are_classes_and_a_whole_float_is_the_integer(name):
    model = MODELS[name]()
    for y in (1, 0, 1.0, 2, np.int64(2)):
        model.learn_one({"a": "x"}, y)
    assert model.classes == [1, 0, 2] and model.label_type == "number"
    assert model._stats.counts()["class_count"] == {1: 2.0, 0: 1.0, 2: 2.0}


def test_the_error_names_both_types_and_the_first_label():
    model = NaiveBayes()
    model.learn_one({"a": "x"}, True)
    with pytest.raises(LabelTypeError, match=r"expected a boolean, .*first label, true\), got a number, 1;"):
        model.learn_one({"a": "x"}, 1)


@pytest.mark.parametrize("name", MODELS)
def test_learn_many_rejects_a_batch_that_mixes_label_types_before_learning_any_of_it(name):
    model = MODELS[name]()
    X = pd.DataFrame({"a": ["x", "y", "x", "y"]})
    # pandas factorises True and 1 as one label: the batch is checked value by value
    for y in (pd.Series([1, 1, True, 0], dtype=object), [1, "1", 1, 0], pd.Series([False, 0, 1, True], dtype=object)):
        with pytest.raises(LabelTypeError, match="row"):
            model.learn_many(X, y)
        assert model.classes == [] and model.n_learned == 0
    model.learn_many(X, pd.Series([1, 0, 1, 0]))
    before = state_of(model)
    for y in (pd.Series([True, False, True, True]), pd.Series(["1", "0", "1", "0"]), [0, 1, True, 0]):
        with pytest.raises(LabelTypeError):
            model.learn_many(X, y)
        assert state_of(model) == before
    assert model.classes == [1, 0]


@pytest.mark.parametrize("name", ["nb", "tan", "aode"])
def test_prequential_many_rejects_each_conflicting_label_as_the_loop_does(name):
    """NaiveBayes and TAN score runs of known classes at once: True must not pass for the class 1 there."""
    rng = np.random.default_rng(0)
    xs = [{"a": str(rng.integers(3)), "b": str(rng.integers(2))} for _ in range(300)]
    ys = [int(rng.integers(2)) for _ in range(300)]
    for i in range(40, 300, 23):
        ys[i] = [True, "1", False, "0"][i % 4]
    batch, loop = MODELS[name](), MODELS[name]()
    got = batch.prequential_many(xs, ys)
    for i, (x, y) in enumerate(zip(xs, ys)):
        if isinstance(y, (bool, str)):
            assert isinstance(got[i], LabelTypeError), (i, y, got[i])
            with pytest.raises(LabelTypeError):
                loop.learn_one(x, y)
            continue
        prediction, proba = loop.predict_and_proba_one(x)
        loop.learn_one(x, y)
        assert got[i][0] == prediction and got[i][1] == pytest.approx(proba, rel=1e-9, abs=1e-12)
    assert batch.classes == loop.classes and sorted(batch.classes) == [0, 1]
    got_arrays, want_arrays = batch.state()[0], loop.state()[0]
    assert set(got_arrays) == set(want_arrays)
    for k in want_arrays:
        np.testing.assert_allclose(got_arrays[k], want_arrays[k], rtol=1e-12, err_msg=k)
    assert batch.n_learned == sum(not isinstance(y, (bool, str)) for y in ys)


@pytest.mark.parametrize("missing", [Ignore(), EM()], ids=["ignore", "em"])
def test_a_missing_value_nan_in_a_vectorised_run_is_no_value_of_another_type(missing):
    xs = [{"a": "x" if i % 2 else "y", "b": float("nan") if i % 3 == 0 else "u", "n": None if i % 5 else i % 2}
          for i in range(60)]
    ys = ["p" if i % 4 else "q" for i in range(60)]
    batch, loop = NaiveBayes(missing=missing), NaiveBayes(missing=missing)
    got = batch.prequential_many(xs, ys)
    for (x, y), result in zip(zip(xs, ys), got):
        prediction, proba = loop.predict_and_proba_one(x)
        loop.learn_one(x, y)
        assert result[0] == prediction and result[1] == pytest.approx(proba, rel=1e-9, abs=1e-12)
    assert batch.n_learned == loop.n_learned == 60


@pytest.mark.parametrize("name", MODELS)
def test_merging_models_with_labels_of_two_types_is_an_error_and_changes_neither(name):
    a, b = trained(MODELS[name], 1), trained(MODELS[name], True)
    before_a, before_b = state_of(a), state_of(b)
    with pytest.raises(MergeError, match="number.*boolean|boolean.*number"):
        a.merge(b)
    with pytest.raises(MergeError):
        b.merge(a)
    assert state_of(a) == before_a and state_of(b) == before_b
    fresh = MODELS[name]()
    fresh.merge(trained(MODELS[name], "1"))  # an empty model takes the other's type
    with pytest.raises(LabelTypeError):
        fresh.learn_one({"a": "x"}, 1)


# ----------------------------------------------------------------------- labels: snapshots


@pytest.mark.parametrize("name", [m for m in MODELS if m != "spode"])  # a loaded SPODE that learns: issue 12 item 1
@pytest.mark.parametrize("first,second", [(1, "1"), (True, 1), ("a", 0)])
def test_the_label_type_survives_a_snapshot(name, first, second, tmp_path):
    model = trained(MODELS[name], first)
    stream_nb.save(model, tmp_path / "m.snb")
    again = stream_nb.load(tmp_path / "m.snb")
    assert again.label_type == model.label_type == stream_nb.stats.json_type(first)
    before = state_of(again)
    with pytest.raises(LabelTypeError):
        again.learn_one({"a": "x", "b": "u"}, second)
    assert state_of(again) == before
    again.learn_one({"a": "x", "b": "u"}, first)  # and it keeps learning its own type


def test_a_state_written_before_types_were_kept_infers_them_from_its_classes_and_values():
    model = NaiveBayes()
    model.learn_one({"flag": True, "n": 3, "s": "x"}, 1)
    model.learn_one({"flag": False, "n": 4, "s": "y"}, 0)
    arrays, meta = model.state()
    old = copy.deepcopy(meta)
    del old["stats"]["label_type"]
    for feature in old["stats"]["features"]:
        del feature["value_type"]
    again = NaiveBayes.from_state(arrays, old)
    assert again.label_type == "number"
    assert again._stats.vtypes == ["boolean", "number", "string"]
    for y, x, error in [(True, {"s": "x"}, LabelTypeError), (1, {"flag": 1}, FeatureTypeError),
                        (1, {"n": True}, FeatureTypeError), (1, {"s": 2.5}, FeatureTypeError)]:
        with pytest.raises(error):
            again.learn_one(x, y)
    assert state_of(again) == state_of(NaiveBayes.from_state(arrays, meta))


# ----------------------------------------------------------------------- features


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("first,second", [
    ("x", 2.5),   # a float where strings were learned (the opposite was always rejected)
    ("x", 7),     # a number where strings were learned
    (1, "x"),     # a string where numbers were learned
    (1, True),    # True == 1: it would have counted as the category 1
    (True, 1),
    (False, 0.0),
])
def test_a_categorical_value_of_another_type_is_rejected_when_learning_and_predicting(name, first, second):
    model = MODELS[name]()
    for i in range(4):
        model.learn_one({"f": first, "g": "u"}, "p" if i % 2 else "q")
    before = state_of(model)
    x = {"f": second, "g": "u"}
    for call in (lambda: model.learn_one(x, "p"), lambda: model.predict_proba_one(x),
                 lambda: model.predict_one(x), lambda: model.learn_many(pd.DataFrame([x]), pd.Series(["p"]))):
        with pytest.raises(FeatureTypeError, match=r"feature 'f' is categorical with \w+ values") as info:
            call()
        assert info.value.reason == "bad_feature_type" and info.value.field == "f"
    assert state_of(model) == before
    # the prequential path (NaiveBayes and TAN: a vectorised run) rejects it as the loop does
    results = model.prequential_many([{"f": first, "g": "u"}] * 3 + [x] + [{"f": first, "g": "u"}] * 3, ["p"] * 7)
    assert [type(r).__name__ for r in results] == ["tuple"] * 3 + ["FeatureTypeError"] + ["tuple"] * 3


def test_the_predicted_event_is_not_reused_for_a_learned_one_of_other_types():
    """The prequential loop reuses the encoding of the event it just predicted; True == 1 must not pass for it."""
    model = NaiveBayes()
    model.learn_one({"n": 1}, "p")
    model.learn_one({"n": 2}, "q")
    model.predict_one({"n": 1})
    with pytest.raises(FeatureTypeError):
        model.learn_one({"n": True}, "p")
    assert model._stats.counts()["value_count"]["n"] == {1: {"p": 1.0, "q": 0.0}, 2: {"p": 0.0, "q": 1.0}}


def test_a_feature_declared_categorical_takes_strings_and_numbers_but_not_booleans():
    model = NaiveBayes(types={"zip": "categorical"})
    for z in ("02134", 94110, 2.5, "x"):
        model.learn_one({"zip": z}, "a")
    assert set(model._stats.counts()["value_count"]["zip"]) == {"02134", 94110, 2.5, "x"}
    with pytest.raises(FeatureTypeError, match="expected a string or number, got a boolean"):
        model.learn_one({"zip": True}, "a")
    flags = NaiveBayes(types={"on": "categorical"})
    flags.learn_one({"on": True}, "a")
    with pytest.raises(FeatureTypeError, match="expected a boolean, got a number"):
        flags.learn_one({"on": 1}, "a")


def test_learn_many_rejects_an_object_column_that_mixes_booleans_and_numbers():
    """pandas factorises True and 1 as one value: the column is checked value by value."""
    model = NaiveBayes()
    X = pd.DataFrame({"n": pd.Series([1, 2, True, 1], dtype=object), "s": ["a", "b", "a", np.nan]})
    with pytest.raises(FeatureTypeError, match=r"feature 'n' .* got a boolean True \(row 2 of the batch\)"):
        model.learn_many(X, pd.Series(["p", "q", "p", "q"]))
    assert model.classes == [] and model._stats.features == []
    X["n"] = pd.Series([1, 2, 3, 1], dtype=object)
    model.learn_many(X, pd.Series(["p", "q", "p", "q"]))  # a missing string (NaN) is no number
    assert model._stats.vtypes == ["number", "string"]


def test_a_rejected_event_leaves_spodes_scores_as_they_were():
    model = SPODE()
    model.learn_one({"a": "x", "c": "u"}, "p")
    model.learn_one({"a": "y", "c": "v"}, "q")
    before = state_of(model)
    for x, y in [({"a": "x", "c": "u", "b": [1]}, "p"), ({"a": "x", "c": 3}, "p"), ({"a": "x", "c": "u"}, 1)]:
        with pytest.raises(InvalidEventError):
            model.learn_one(x, y)
        assert state_of(model) == before


# ----------------------------------------------------------------------- loss matrices


def test_a_loss_file_row_applies_to_the_label_whose_json_text_it_is(tmp_path):
    """"1" and "true" in one file: True == 1 in Python, yet class 1 takes the "1" row, not the "true" one."""
    path = tmp_path / "loss.json"
    path.write_text('{"1": {"0": 1000}, "true": {"false": 0.001}}')
    for labels, want in (((1, 0), 1), ((True, False), False)):
        model = NaiveBayes(loss=load_loss(str(path)))
        for i in range(30):
            model.learn_one({"x": "a" if i % 3 else "b"}, labels[0] if i % 3 == 0 else labels[1])
        assert model.predict_one({"x": "a"}) == want
    typed = NaiveBayes(loss={True: {False: 1000.0}})  # a boolean key is no number's row
    for i in range(30):
        typed.learn_one({"x": "a" if i % 3 else "b"}, int(i % 3 == 0))
    assert typed.predict_one({"x": "a"}) == 0


# ----------------------------------------------------------------------- the daemon


def run(*args, input: bytes, cwd=None):
    proc = subprocess.run([sys.executable, "-m", "stream_nb.cli", "run", *args], input=input,
                          capture_output=True, cwd=cwd, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    return [orjson.loads(line) for line in proc.stdout.splitlines()]


def test_run_dead_letters_a_label_of_another_type(tmp_path):
    """After an integer label: a string and a boolean label are dead-lettered (a dead letter leaves the model
    as it was, so each meets the integer classes alone), a whole float is that integer: the same class."""
    dead = tmp_path / "dead.jsonl"
    events = b'{"a":"x","label":1}\n{"a":"x","label":"1"}\n{"a":"x","label":true}\n{"a":"x","label":1.0}\n{"a":"x"}\n'
    out = run("--dead-letter", str(dead), input=events)
    letters = [orjson.loads(line) for line in dead.read_bytes().splitlines()]
    assert [o["source"]["line"] for o in out] == [1, 4, 5] and out[-1]["proba"] == {"1": 1.0}
    assert [(d["reason"], d["field"], d["source"]["line"]) for d in letters] == [
        ("label_type_conflict", "label", 2), ("label_type_conflict", "label", 3)]
    assert "expected a number" in letters[0]["error"] and "a string" in letters[0]["error"]
    assert "expected a number" in letters[1]["error"] and "a boolean" in letters[1]["error"]


def test_run_names_the_label_field_and_rejects_features_of_another_type(tmp_path):
    dead = tmp_path / "dead.jsonl"
    events = b'{"a":"x","n":1,"y":true}\n{"a":"x","y":1}\n{"a":2.5,"y":false}\n{"n":true,"y":false}\n{"a":"x"}\n'
    out = run("--label-field", "y", "--dead-letter", str(dead), input=events)
    letters = [orjson.loads(line) for line in dead.read_bytes().splitlines()]
    assert [(d["reason"], d["field"]) for d in letters] == [
        ("label_type_conflict", "y"), ("bad_feature_type", "a"), ("bad_feature_type", "n")]
    assert letters[0]["error"].startswith("label 'y': expected a boolean")
    assert "expected a string, got a number 2.5" in letters[1]["error"]
    assert "expected a number, got a boolean True" in letters[2]["error"]
    assert out[-1]["proba"] == {"true": 1.0}


def test_run_keeps_the_label_type_across_a_restart_from_its_snapshot(tmp_path):
    data, dead, snaps = tmp_path / "in.jsonl", tmp_path / "dead.jsonl", tmp_path / "snaps"
    data.write_bytes(b'{"a":"x","label":1}\n{"a":"y","label":0}\n')
    args = ("--input", str(data), "--dead-letter", str(dead), "--snapshot-dir", str(snaps))
    run(*args, "--output", str(tmp_path / "out1.jsonl"), input=b"")
    with open(data, "ab") as f:
        f.write(b'{"a":"x","label":"1"}\n{"a":"x","label":true}\n{"a":"x","label":1}\n{"a":"x"}\n')
    run(*args, "--output", str(tmp_path / "out2.jsonl"), input=b"")
    letters = [orjson.loads(line) for line in dead.read_bytes().splitlines()]
    assert [(d["reason"], d["source"]["line"]) for d in letters] == [("label_type_conflict", 3), ("label_type_conflict", 4)]
    outputs = [orjson.loads(line) for line in (tmp_path / "out2.jsonl").read_bytes().splitlines()]
    assert [o["source"]["line"] for o in outputs] == [5, 6] and set(outputs[-1]["proba"]) == {"1", "0"}


def test_the_engine_checks_label_types_for_a_river_model_that_does_not():
    from river.naive_bayes import MultinomialNB

    source = ListSource([b'{"w": 2, "label": 1}', b'{"w": 1, "label": "1"}', b'{"w": 1, "label": true}',
                         b'{"w": 3, "label": 0}', b'{"w": 1}'])
    out, dlq = ListSink(), ListSink()
    Engine(MultinomialNB(), source, out, dlq).run()
    letters = [orjson.loads(v) for v, _ in dlq.sent]
    assert [(d["reason"], d["field"]) for d in letters] == [("label_type_conflict", "label")] * 2
    assert set(orjson.loads(out.sent[-1][0])["proba"]) == {"1", "0"}


# ----------------------------------------------------------------------- evaluate


def test_evaluate_counts_a_label_of_another_type_as_a_bad_row_naming_the_field(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("a,y\nx,1\nx,yes\ny,0\n1.5,1\nx,\n")
    result = evaluate(open_events(str(path), label_field="y"), {"nb": make_model("nb"), "tan": make_model("tan")})
    assert (result.n_events, result.n_labeled) == (3, 2)
    assert [(b.reason, b.where.split()[-1]) for b in result.bad_rows] == [
        ("label_type_conflict", "3"), ("bad_feature_type", "5")]
    assert "label 'y': expected a number" in result.bad_rows[0].error
    assert [m.model.classes for m in result.models] == [[1, 0], [1, 0]]
    proc = subprocess.run([sys.executable, "-m", "stream_nb.cli", "evaluate", "--input", str(path), "--label-field",
                           "y", "--models", "nb"], capture_output=True, timeout=120)
    assert proc.returncode == 0 and b"label_type_conflict: 1" in proc.stderr, proc.stderr.decode()


# ----------------------------------------------------------------------- property


labels = st.one_of(st.integers(-2, 2), st.booleans(), st.sampled_from(["0", "1", "true", "false", "a"]),
                   st.sampled_from([0.0, 1.0, 2.0]), st.none())
values = st.one_of(st.integers(0, 2), st.booleans(), st.sampled_from(["0", "1", "x"]), st.sampled_from([1.0, 0.5]),
                   st.none())
streams = st.lists(st.tuples(st.dictionaries(st.sampled_from(["a", "b"]), values, max_size=2), labels),
                   min_size=1, max_size=40)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stream=streams, model=st.sampled_from(["nb", "aode", "tan"]))
def test_no_two_classes_share_a_key_and_every_class_has_its_probability(stream, model):
    """Random streams of mixed-type labels and values through the engine: every output has one proba key
    per class the model knew before the event, the classes' keys are distinct, and each record gives
    exactly one output or one dead letter."""
    raw = [orjson.dumps({**x, "label": y}) for x, y in stream]
    built = {"nb": NaiveBayes, "aode": AODE, "tan": lambda: TAN(search=Tree(rebuild_every=3))}[model]()
    source, out, dlq = ListSource(raw, batch=7), ListSink(), ListSink()
    engine = Engine(built, source, out, dlq)
    engine.run()
    assert len(out.sent) + len(dlq.sent) == len(raw)
    keys = [label_key(c) for c in built.classes]
    assert len(set(keys)) == len(keys) == len(built.classes)
    assert len({stream_nb.stats.json_type(c) for c in built.classes}) <= 1
    for f, vt in enumerate(built._stats.vtypes):
        kinds = {stream_nb.stats.json_type(v) for v in built._stats.values[f] or ()}
        assert vt is None and not kinds or kinds <= set(stream_nb.stats.VALUE_GROUPS.get(vt, ()))
    # the model as it stood before each event: replay the accepted ones one at a time
    replay = {"nb": NaiveBayes, "aode": AODE, "tan": lambda: TAN(search=Tree(rebuild_every=3))}[model]()
    outputs = iter(orjson.loads(v) for v, _ in out.sent)
    letters = iter(orjson.loads(v) for v, _ in dlq.sent)
    for x, y in stream:
        x = {k: v for k, v in x.items() if v is not None}
        y = validate_label(y)  # as the daemon decodes it: a whole float is that integer
        n_classes = len(replay.classes)
        try:
            replay.predict_one(x)
            if y is not None:
                replay.learn_one(x, y)
        except InvalidEventError as exc:
            assert next(letters)["reason"] == exc.reason
            continue
        proba = next(outputs)["proba"]
        assert len(proba) == n_classes
    assert replay.classes == built.classes


def test_explain_one_takes_no_class_of_another_type_for_one_of_the_models():
    from stream_nb.tools.explain import explain_one

    model = NaiveBayes()
    for i in range(20):
        model.learn_one({"a": "x" if i % 2 else "y", "b": "u" if i % 3 else "v"}, i % 2)
    assert explain_one(model, {"a": "x", "b": "u"}, classes=(0, 1)).classes == (0, 1)
    for classes in ((True, 0), (1, False), ("1", 0)):
        with pytest.raises(ValueError, match="expected two different classes"):
            explain_one(model, {"a": "x", "b": "u"}, classes=classes)
