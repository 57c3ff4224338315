"""Options as objects: each declared once, checked with errors that name what was expected and received;
the keywords of earlier releases still work, with a warning saying what to write; the command line's
settings are read off the same declarations, and its flags, variables and TOML keys still build the model."""

from __future__ import annotations

import inspect
import json
import os
import random
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from river import drift

import stream_nb
from stream_nb import (AODE, EM, KDB, MDL, SPODE, TAN, Decay, Edges, EqualFrequency, Gaussian, Ignore, NaiveBayes,
                       Parents, SuperParent, Tree, Window)
from stream_nb.exceptions import ConfigError
from stream_nb.learners import flat_settings
from stream_nb.options import FLAT, OPTIONS, Option
from stream_nb.settings import BY_NAME, MODELS

ROOT = Path(__file__).resolve().parent.parent
ALL = (NaiveBayes, AODE, TAN, SPODE, KDB)


def params_of(cls) -> list[str]:
    return list(inspect.signature(cls.__init__).parameters)[1:]


def test_no_learner_takes_more_than_nine_parameters_and_kdb_twelve():
    counts = {cls.__name__: len(params_of(cls)) for cls in ALL}
    assert counts == {"NaiveBayes": 8, "AODE": 9, "TAN": 9, "SPODE": 9, "KDB": 12}
    for cls in ALL:  # river reads a model's parameters off its signature: none is hidden in **kwargs
        assert all(p.kind is p.POSITIONAL_OR_KEYWORD for p in inspect.signature(cls.__init__).parameters.values())


def test_the_shared_options_are_the_same_parameters_with_the_same_defaults_everywhere():
    for name in ("types", "loss", "missing", "forgetting", "drift_detector", "memory_budget", "alpha"):
        defaults = {inspect.signature(cls.__init__).parameters[name].default for cls in ALL}
        assert len(defaults) == 1, name
    # an option's default is None in the signature (river wants immutable defaults) and the object on the model
    assert [cls().numeric for cls in ALL] == [Gaussian(), MDL(), MDL(), MDL(), EqualFrequency()]
    assert {cls().missing for cls in ALL} == {EM()} and (TAN().search, SPODE().search) == (Tree(), SuperParent())


@pytest.mark.parametrize("make, message", [
    (lambda: Window(0), "Window(size=...): expected an integer >= 1, got 0"),
    (lambda: Window(10, panes=0), "Window(panes=...): expected an integer >= 1, got 0"),
    (lambda: Window(3, panes=4), "Window(panes=...): expected at most size=3 panes, got 4"),
    (lambda: Window(2.5), "Window(size=...): expected an integer >= 1, got 2.5"),
    (lambda: Decay(0), "Decay(half_life=...): expected a finite number > 0, got 0"),
    (lambda: Decay(float("inf")), "Decay(half_life=...): expected a finite number > 0, got inf"),
    (lambda: Decay(5, time_field=""), "Decay(time_field=...): expected a non-empty string or None, got ''"),
    (lambda: Gaussian(-1.0), "Gaussian(var_smoothing=...): expected a finite number >= 0, got -1.0"),
    (lambda: EqualFrequency(bins=0), "EqualFrequency(bins=...): expected an integer >= 1, got 0"),
    (lambda: MDL(fine_bins=1), "MDL(fine_bins=...): expected an integer >= 2, got 1"),
    (lambda: MDL(warmup=True), "MDL(warmup=...): expected an integer >= 1, got True"),
    (lambda: Edges([1.0]), "Edges(edges=...): expected a dict, got [1.0]"),
    (lambda: Edges({"t": [1.0]}, rest=Gaussian()),
     "Edges(rest=...): expected EqualFrequency or MDL or None, got Gaussian()"),
    (lambda: EM(unlabeled="yes"), "EM(unlabeled=...): expected True or False, got 'yes'"),
    (lambda: EM(unlabeled_weight=-1), "EM(unlabeled_weight=...): expected a finite number >= 0, got -1"),
    (lambda: Tree(score="gain"), "Tree(score=...): expected one of 'cmi', 'bayes', got 'gain'"),
    (lambda: SuperParent(rebuild_every=-1), "SuperParent(rebuild_every=...): expected an integer >= 0, got -1"),
    (lambda: NaiveBayes(alpha=0), "alpha: expected a finite number > 0, got 0"),
    (lambda: KDB(k=-1), "k: expected an integer >= 0, got -1"),
    (lambda: NaiveBayes(memory_budget=-1), "memory_budget: expected an integer >= 0 or None, got -1"),
])
def test_a_bad_value_names_the_option_its_parameter_what_was_expected_and_what_came(make, message):
    with pytest.raises(ConfigError) as raised:
        make()
    assert str(raised.value) == message


@pytest.mark.parametrize("make, message", [
    (lambda: NaiveBayes(forgetting=1000), "NaiveBayes(forgetting=...): expected Window or Decay or None, got 1000; "
                                          "write forgetting=Window(1000) or Decay(half_life=500)"),
    (lambda: AODE(numeric=Gaussian()), "AODE(numeric=...): expected EqualFrequency or MDL or Edges, got Gaussian(); "
                                       "write numeric=EqualFrequency(bins=5) or MDL() or Edges({...})"),
    (lambda: NaiveBayes(missing=0), "NaiveBayes(missing=...): expected EM or Ignore, got 0; "
                                    "write missing=EM() or Ignore()"),
    (lambda: TAN(search=SuperParent()), "TAN(search=...): expected Tree, got SuperParent(); write search=Tree(...)"),
])
def test_a_value_of_the_wrong_kind_is_a_type_error_saying_what_to_write(make, message):
    with pytest.raises(TypeError) as raised:
        make()
    assert str(raised.value) == message


def stream(n: int = 400, seed: int = 3) -> list[tuple[dict, str]]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        y = rng.choice("ab") if i < n // 2 else rng.choice("bc")  # the classes change half way
        x = {"c": rng.choice("xyz") if y != "b" else "y", "t": rng.gauss(2.0 if y == "a" else 5.0, 1.0)}
        if rng.random() < 0.1:
            x["c"] = None
        out.append((x, y))
    return out


OLD_AND_NEW = [
    (NaiveBayes, {"window": 60, "panes": 3}, {"forgetting": Window(60, panes=3)}),
    (NaiveBayes, {"half_life": 40.0}, {"forgetting": Decay(half_life=40.0)}),
    (NaiveBayes, {"numeric": "bins", "bins": 3, "discretiser": "equal_frequency", "warmup": 20},
     {"numeric": EqualFrequency(bins=3, warmup=20)}),
    (NaiveBayes, {"var_smoothing": 1e-3, "missing": "ignore"}, {"numeric": Gaussian(1e-3), "missing": Ignore()}),
    (NaiveBayes, {"learn_unlabeled": True, "unlabeled_weight": 0.5}, {"missing": EM(unlabeled=True,
                                                                                    unlabeled_weight=0.5)}),
    (AODE, {"bins": 4, "warmup": 30, "fine_bins": 8, "bin_edges": {"t": [3.5]}},
     {"numeric": Edges({"t": [3.5]}, MDL(bins=4, fine_bins=8, warmup=30))}),
    (TAN, {"rebuild_every": 50, "tree_score": "cmi", "window": 100}, {"search": Tree("cmi", 50),
                                                                      "forgetting": Window(100)}),
    (SPODE, {"parent": "c", "rebuild_every": 40}, {"search": SuperParent("c", 40)}),
    (KDB, {"discretiser": "mdl", "k": 1, "rebuild_every": 30}, {"numeric": MDL(fine_bins=16), "k": 1,
                                                                 "search": Parents(rebuild_every=30)}),
]


@pytest.mark.parametrize("cls, given, message", [
    (AODE, {"numeric": MDL(fine_bins=8), "bins": 3},
     "AODE() got numeric=MDL(fine_bins=8) and the deprecated bins: give one; write AODE(numeric=MDL(bins=3))"),
    (NaiveBayes, {"forgetting": Window(100), "half_life": 5.0},
     "NaiveBayes() got forgetting=Window(size=100) and the deprecated half_life: give one; "
     "write NaiveBayes(forgetting=Decay(half_life=5.0))"),
    (TAN, {"search": Tree(rebuild_every=10), "tree_score": "cmi"}, "TAN() got search=Tree(rebuild_every=10) and "
     "the deprecated tree_score: give one"),
])
def test_an_option_and_an_old_keyword_of_its_family_are_refused_together(cls, given, message):
    """Which of the two the user meant is a guess (one of them would be dropped): neither wins."""
    with pytest.raises(TypeError) as caught:
        cls(**given)
    assert str(caught.value).startswith(message)


@pytest.mark.parametrize("cls, old, new", OLD_AND_NEW, ids=lambda v: getattr(v, "__name__", None) or repr(v)[:40])
def test_an_old_keyword_still_works_with_a_deprecation_warning_and_builds_the_same_model(cls, old, new):
    with pytest.warns(DeprecationWarning) as caught:
        before = cls(**old)
    text = str(caught[0].message)
    assert text.startswith(f"{cls.__name__}(") and "is deprecated and will be removed in the next release; write" in text
    for name, value in new.items():
        assert f"{name}={value!r}" in text or not isinstance(value, Option)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the new spelling warns of nothing
        after = cls(**new)
    assert before.state_params() == after.state_params()
    # and learns alike: the prequential predictions of the old spelling are the new one's
    for x, y in stream():
        assert before.predict_proba_one(x) == after.predict_proba_one(x)
        before.learn_one(x, y)
        after.learn_one(x, y)
    # the values under the old names still read as before (the learning code and users read them)
    for name, value in old.items():
        if name not in ("numeric", "missing", "discretiser", "bin_edges", "fine_bins", "bins"):
            assert getattr(before, name) == value, name


def test_a_kdb_state_with_rebuild_every_as_its_own_parameter_loads_into_its_search_without_a_warning():
    """KDB's states written while rebuild_every was a parameter of its own (not in ``search``) load as before."""
    model = KDB(k=1, search=Parents(30))
    for x, y in stream():
        model.learn_one(x, y)
    arrays, meta = model.state()
    meta["params"].pop("search")
    meta["params"]["rebuild_every"] = 30
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        back = KDB.from_state(arrays, meta)
    assert back.search == Parents(30) and back.rebuild_every == 30 and back.structure == model.structure
    assert back.state_params() == model.state_params()


def test_an_unknown_keyword_is_still_a_type_error():
    with pytest.raises(TypeError, match="unexpected keyword argument 'windows'"):
        NaiveBayes(windows=10)
    with pytest.raises(TypeError, match=r"AODE.__init__\(\) got an unexpected keyword argument 'tree_score'"):
        AODE(tree_score="cmi")


@pytest.mark.parametrize("cls", ALL)
def test_river_clones_a_model_with_options_to_an_equal_fresh_model(cls):
    extra = {"search": Tree("cmi", 7)} if cls is TAN else {"search": SuperParent("c", 9)} if cls is SPODE else \
        {"search": Parents(11, select=0.05)} if cls is KDB else {}
    numeric = {"numeric": Gaussian(1e-4)} if cls is NaiveBayes else {"numeric": EqualFrequency(bins=3, warmup=10)}
    model = cls(forgetting=Window(50, panes=5), missing=EM(unlabeled=True), drift_detector=drift.ADWIN(),
                **numeric, **extra)
    for x, y in stream(60):
        model.learn_one(x, y)
    clone = model.clone()
    assert clone.state_params() == model.state_params()
    assert clone.n_learned == 0 and model.n_learned > 0
    changed = model.clone({"forgetting": Decay(10.0)})
    assert changed.forgetting == Decay(10.0) and changed.half_life == 10.0 and changed.window is None


def test_a_model_with_options_is_saved_and_loaded_with_them(tmp_path):
    model = AODE(numeric=Edges({"t": [3.0]}, EqualFrequency(bins=2, warmup=10)), forgetting=Decay(20.0, "ts"),
                 missing=EM(unlabeled=True, unlabeled_weight=0.25))
    for i, (x, y) in enumerate(stream(80)):
        model.learn_one({**x, "ts": float(i)}, y)
    stream_nb.save(model, tmp_path / "m.snb")
    again = stream_nb.load(tmp_path / "m.snb")
    assert (again.numeric, again.forgetting, again.missing) == (model.numeric, model.forgetting, model.missing)
    assert again.predict_proba_one({"c": "x", "t": 2.0}) == model.predict_proba_one({"c": "x", "t": 2.0})


# ---------------------------------------------------------------- the settings, derived


def test_the_settings_rows_and_models_are_read_off_the_declarations():
    for choice, (class_name, names) in MODELS.items():
        cls = getattr(stream_nb, class_name)
        assert names == tuple(flat_settings(cls))
    # every model setting's row takes what its declaration takes, and its help is the declaration's
    for name in ("alpha", "k", "m", "bins", "fine_bins", "warmup", "window", "panes", "half_life", "missing",
                 "numeric", "discretiser", "tree_score", "parent", "rebuild_every", "unlabeled_weight",
                 "var_smoothing", "learn_unlabeled", "memory_budget", "max_table_cells", "max_completions"):
        row, p = BY_NAME[name], FLAT[name]
        assert p.help in row.help, name
        assert row.choices == tuple(p.choices), name
        assert row.kind == p.kind, name
    # the defaults shown are each model's own
    assert "(model default mdl; KDB equal_frequency)" in BY_NAME["discretiser"].help
    assert "(model default 64; KDB 16)" in BY_NAME["fine_bins"].help
    assert BY_NAME["tree_score"].help.startswith("TAN: ") and BY_NAME["m"].help.startswith("AODE: ")
    # and the options a setting names exist: one declaration per parameter of each option class
    for classes in OPTIONS.values():
        for cls in classes:
            for p in cls.PARAMS:
                assert p.setting_name == "" or p.setting_name in FLAT


def run_daemon(args: list[str], tmp_path: Path, env: dict | None = None, config: str | None = None):
    tmp_path.mkdir(parents=True)
    events = tmp_path / "events.jsonl"
    events.write_text("".join(json.dumps({**x, "label": y}) + "\n" for x, y in stream(50) if x["c"] is not None))
    cmd = [sys.executable, "-m", "stream_nb.cli", "run", "--input", str(events), "--output", str(tmp_path / "o"),
           "--snapshot-dir", str(tmp_path / "snaps"), *args]
    if config is not None:
        (tmp_path / "c.toml").write_text(config)
        cmd += ["--config", str(tmp_path / "c.toml")]
    base = {k: v for k, v in os.environ.items() if not k.startswith("STREAM_NB_")}
    base["PYTHONPATH"] = str(ROOT) + os.pathsep + base.get("PYTHONPATH", "")
    proc = subprocess.run(cmd, env={**base, **(env or {})}, capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode()
    assert b"DeprecationWarning" not in proc.stderr  # today's flags are not deprecated
    store = stream_nb.snapshots.SnapshotStore(tmp_path / "snaps")
    return store.read(store.sequences()[0]).model()


def test_todays_flags_variables_and_toml_keys_build_the_model_with_its_options(tmp_path):
    model = run_daemon(["--model", "tan", "--window", "40", "--panes", "2", "--tree-score", "cmi",
                        "--rebuild-every", "25", "--discretiser", "equal_frequency", "--bins", "3"], tmp_path / "f")
    assert (model.forgetting, model.search, model.numeric) == (Window(40, panes=2), Tree("cmi", 25),
                                                               EqualFrequency(bins=3))
    model = run_daemon(["--model", "nb"], tmp_path / "e", env={"STREAM_NB_HALF_LIFE": "30", "STREAM_NB_MISSING":
                                                                 "ignore", "STREAM_NB_NUMERIC": "bins"})
    assert (model.forgetting, model.missing, model.numeric) == (Decay(30.0), Ignore(), MDL())
    model = run_daemon([], tmp_path / "t", config='model = "spode"\nparent = "c"\nrebuild_every = 9\n'
                                                  'learn_unlabeled = true\nunlabeled_weight = 0.5\n')
    assert (model.search, model.missing) == (SuperParent("c", 9), EM(unlabeled=True, unlabeled_weight=0.5))


def test_a_bad_setting_is_named_as_the_user_gave_it(tmp_path):
    events = tmp_path / "e.jsonl"
    events.write_text('{"a": "x", "label": "p"}\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAM_NB_")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    for args, extra, message in [
        (["--window", "4"], {"STREAM_NB_PANES": "5"}, "panes (from STREAM_NB_PANES): expected at most window=4 "
                                                      "panes, got 5"),
        (["--window", "4"], {"STREAM_NB_HALF_LIFE": "3"}, "half_life (from STREAM_NB_HALF_LIFE): a model forgets by "
                                                         "a window or by decay, not both"),
        (["--model", "aode", "--bins", "0"], {}, "--model aode: bins: expected an integer >= 1, got 0"),
    ]:
        proc = subprocess.run([sys.executable, "-m", "stream_nb.cli", "run", "--input", str(events), *args],
                              env={**env, **extra}, capture_output=True, timeout=120)
        assert proc.returncode == 2, proc.stderr.decode()
        assert message in proc.stderr.decode(), proc.stderr.decode()
        assert b"Traceback" not in proc.stderr
