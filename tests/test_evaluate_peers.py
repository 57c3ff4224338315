"""``stream-nb evaluate``'s metrics, peers, results and drifts, against river, MOA's definitions and hand counts."""

from __future__ import annotations

import copy
import importlib.util
import math
import os
import random
import subprocess
import sys

import pandas as pd
import pytest
from river import evaluate as river_evaluate, metrics, naive_bayes, tree

from stream_nb import MDL, Decay, NaiveBayes
from stream_nb.exceptions import ConfigError
from stream_nb.tools.evaluate import (
    RESULT_COLUMNS,
    KappaM,
    KappaT,
    Scorer,
    check_results_path,
    evaluate,
    make_model,
    open_events,
    parse_model_specs,
)


def cli(*args, cwd=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAM_NB_")}
    return subprocess.run(["stream-nb", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=600)


def river_events(name: str, n: int, seed: int = 1) -> list:
    return [(x, y) for x, y, _ in open_events(name, events=n, seed=seed)]


def river_score(events, model, metric, delay=None):
    river_evaluate.progressive_val_score(events, model, metric, delay=delay)
    return metric.get()


# ----------------------------------------------------------------------------- kappa_t and kappa_m


def moa_kappas(pairs):
    """MOA's BasicClassificationPerformanceEvaluator.addResult and its getters, written out over class
    indices (order of first appearance), weight 1; the no-change classifier has no class before the first
    label (MOA's starts at class index 0). Returns (kappa, kappa_t, kappa_m)."""
    index: dict = {}
    for t, p in pairs:
        index.setdefault(t, len(index))
    for t, p in pairs:
        index.setdefault(p, len(index))
    k = len(index)
    n = correct = no_change = majority_right = 0
    row, col = [0] * k, [0] * k
    last = None
    for t, p in pairs:
        ti, pi = index[t], index[p]
        n += 1
        correct += pi == ti
        row[pi] += 1
        col[ti] += 1
        no_change += last == ti
        majority, top = 0, 0.0
        for i in range(k):  # getMajorityClass: the first index of strictly larger count
            if col[i] / n > top:
                majority, top = i, col[i] / n
        majority_right += majority == ti
        last = ti
    p0 = correct / n
    pc = sum(row[i] / n * col[i] / n for i in range(k))

    def kappa(pe):
        return math.nan if pe == 1 else (p0 - pe) / (1 - pe)  # MOA divides by zero

    return kappa(pc), kappa(no_change / n), kappa(majority_right / n)


@pytest.mark.parametrize("pairs, p0, pe_t, pe_m", [
    # true, predicted. no-change predictions: -, a, a, b; majority after counting: a, a, a, a (2-2: a first)
    ([("a", "a"), ("a", "a"), ("b", "a"), ("b", "b")], 3 / 4, 2 / 4, 2 / 4),
    # a stream that never changes: the no-change classifier is right from the second event on
    ([(1, 1), (1, 0), (1, 1), (1, 1), (1, 1)], 4 / 5, 4 / 5, 5 / 5),
    # alternating labels: the no-change classifier is always wrong, the majority right half the time
    ([(0, 0), (1, 1), (0, 0), (1, 0), (0, 0), (1, 1)], 5 / 6, 0 / 6, 3 / 6),
    # three classes; majority after counting: x, x (1-1: x first), x, x (2-1-1), x (2-1-2: x first)
    ([("x", "y"), ("y", "y"), ("x", "x"), ("z", "z"), ("z", "x")], 3 / 5, 1 / 5, 2 / 5),
])
def test_kappa_t_and_kappa_m_on_hand_counted_cases(pairs, p0, pe_t, pe_m):
    kt, km = KappaT(), KappaM()
    for t, p in pairs:
        kt.update(t, p)
        km.update(t, p)
    assert (kt.p0, kt.pe) == pytest.approx((p0, pe_t))
    assert (km.p0, km.pe) == pytest.approx((p0, pe_m))
    for metric, pe in ((kt, pe_t), (km, pe_m)):
        assert metric.get() == (0.0 if pe == 1 else pytest.approx((p0 - pe) / (1 - pe)))


def test_kappas_equal_moas_evaluator_written_out():
    rng = random.Random(7)
    for trial in range(200):
        k = rng.randint(1, 4)
        n = rng.randint(1, 60)
        labels = [rng.randrange(k) if rng.random() < 0.7 else 0 for _ in range(n)]  # skewed, with runs
        preds = [y if rng.random() < 0.6 else rng.randrange(k) for y in labels]
        pairs = list(zip(labels, preds))
        kt, km, kappa = KappaT(), KappaM(), metrics.CohenKappa()
        for t, p in pairs:
            kt.update(t, p)
            km.update(t, p)
            kappa.update(t, p)
        want = moa_kappas(pairs)
        got = (kappa.get(), kt.get(), km.get())
        for g, w in zip(got, want):
            if math.isfinite(w):
                assert g == pytest.approx(w, abs=1e-12), (pairs, got, want)
            else:  # pe = 1: MOA divides by zero, river's CohenKappa and ours say 0.0
                assert g == 0.0


def test_kappa_t_carries_the_last_label_into_a_window_and_refuses_rolling():
    kt = KappaT(last="a")
    kt.update("a", "b")
    assert kt.pe == 1.0 and kt.get() == 0.0  # undefined (pe = 1): 0.0, as river's CohenKappa
    with pytest.raises(TypeError, match="fresh one per window"):
        kt.revert("a", "b")


# ----------------------------------------------------------------------------- peers against river


@pytest.mark.parametrize("make", [naive_bayes.GaussianNB, lambda: tree.HoeffdingTreeClassifier(grace_period=50),
                                  NaiveBayes])
def test_every_metric_equals_rivers_progressive_val_score(make):
    events = river_events("river:Agrawal", 1500)
    result = evaluate(events, {"m": make()}, window=400)
    r = result.models[0]
    for name, metric in (("accuracy", metrics.Accuracy()), ("kappa", metrics.CohenKappa()),
                         ("macro_f1", metrics.MacroF1()), ("kappa_t", KappaT()), ("kappa_m", KappaM())):
        assert r.figures[name] == pytest.approx(river_score(events, make(), metric), abs=1e-12), name
    # the log loss: river's CrossEntropy, the true class given 0 when the model does not name it
    model, loss = make(), metrics.CrossEntropy()
    for x, y in events:
        proba = model.predict_proba_one(x)
        if proba:
            loss.update(y, {**proba, y: proba.get(y, 0.0)})
        model.learn_one(x, y)
    assert r.log_loss == pytest.approx(loss.get(), rel=1e-12)


@pytest.mark.parametrize("delay", [1, 30, 400])
def test_a_peers_accuracy_with_delay_equals_progressive_val_score_with_delay(delay):
    events = river_events("river:Agrawal", 1200, seed=3)
    result = evaluate(events, {"g": naive_bayes.GaussianNB(), "nb": NaiveBayes()}, delay=delay, window=300)
    for r, make in zip(result.models, (naive_bayes.GaussianNB, NaiveBayes)):
        assert r.accuracy == pytest.approx(river_score(events, make(), metrics.Accuracy(), delay=delay), abs=1e-12)
        assert r.figures["kappa"] == pytest.approx(river_score(events, make(), metrics.CohenKappa(), delay=delay),
                                                   abs=1e-12)


def test_windows_are_fresh_river_metrics_over_their_events_and_cumulative_runs_on():
    events = river_events("river:SEA-abrupt", 1000)
    window = 300
    result = evaluate(events, {"g": naive_bayes.GaussianNB()}, window=window)
    rows = result.models[0].rows
    assert [(r["first"], r["last"], r["labeled"]) for r in rows] == [(1, 300, 300), (301, 600, 300),
                                                                      (601, 900, 300), (901, 1000, 100)]
    model = naive_bayes.GaussianNB()
    preds = []
    for x, y in events:
        preds.append((y, model.predict_one(x)))
        model.learn_one(x, y)
    last = None
    for row in rows:
        part = [(y, p) for y, p in preds[row["first"] - 1: row["last"]] if p is not None]
        assert row["scored"] == len(part)
        acc, f1, kt = metrics.Accuracy(), metrics.MacroF1(), KappaT(last=last)
        for y, p in part:
            acc.update(y, p)
            f1.update(y, p)
            kt.update(y, p)
        assert (row["accuracy"], row["macro_f1"], row["kappa_t"]) == pytest.approx((acc.get(), f1.get(), kt.get()))
        last = kt.last
        upto = [(y, p) for y, p in preds[: row["last"]] if p is not None]
        assert row["cumulative_accuracy"] == pytest.approx(sum(y == p for y, p in upto) / len(upto))
    assert rows[-1]["cumulative_accuracy"] == result.models[0].accuracy


def test_peers_see_the_same_events_in_the_same_order_and_are_timed_apart():
    seen: dict[str, list] = {"ours": [], "peer": []}

    class Watched(naive_bayes.GaussianNB):
        def learn_one(self, x, y):
            seen["peer"].append((x, y))
            return super().learn_one(x, y)

    class WatchedNB(NaiveBayes):
        def prequential_one(self, x, y, **kwargs):
            seen["ours"].append((x, y))
            return super().prequential_one(x, y, **kwargs)

    events = river_events("river:Agrawal", 500)
    result = evaluate(events, {"ours": WatchedNB(), "peer": Watched()}, window=100)
    assert seen["ours"] == seen["peer"] == events
    for r in result.models:
        assert r.seconds > 0
        assert sum(row["seconds"] for row in r.rows) == pytest.approx(r.seconds, rel=1e-9)
    assert result.models[1].memory_bytes is None  # a river model has no state() to measure


def test_peer_specs_and_their_errors(tmp_path, monkeypatch):
    (tmp_path / "strict_peer.py").write_text(
        "from river import naive_bayes\n"
        "class Strict(naive_bayes.GaussianNB):\n"
        "    def __init__(self, level=1):\n"
        "        if level < 0:\n"
        "            raise ValueError(f'level must be >= 0, got {level}')\n"
        "        self.level = level\n"
        "        super().__init__()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = parse_model_specs("nb,river.tree.HoeffdingTreeClassifier:grace_period=100:split_criterion=gini")[1]
    model = make_model(spec.model, spec.params)
    assert type(model) is tree.HoeffdingTreeClassifier
    assert (model.grace_period, model.split_criterion) == (100, "gini")
    for path, params, message in [
        ("river.no_such_module.X", {}, "cannot import the module 'river.no_such_module'"),
        ("river.naive_bayes.GausianNB", {}, "expected a class 'GausianNB' in the module river.naive_bayes, got nothing"),
        ("river.metrics.Accuracy", {}, "expected a classifier with predict_one, predict_proba_one and learn_one"),
        ("river.tree.HoeffdingTreeClassifier", {"grace": 1}, "HoeffdingTreeClassifier takes grace_period"),
        ("strict_peer.Strict", {"level": -1}, "Strict(level=-1) failed: ValueError: level must be >= 0, got -1"),
    ]:
        with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
            make_model(path, params)


# ----------------------------------------------------------------------------- drifts and results


def test_drifts_are_the_models_own_and_land_in_their_windows():
    events = river_events("river:STAGGER-abrupt", 4000)
    model = NaiveBayes(drift_detector="ddm")
    result = evaluate(events, {"ddm": model, "plain": NaiveBayes()}, window=500)
    ddm, plain = result.models
    assert ddm.drifts == model.drifts and len(ddm.drifts) >= 2 and plain.drifts == []
    for row in ddm.rows:
        inside = [d for d in ddm.drifts if row["first"] <= d <= row["last"]]
        assert row["drifts"] == len(inside)
        assert row["drift_positions"] == " ".join(map(str, inside))
    assert result.table()[0]["drifts"] == len(model.drifts)
    frame = result.results()
    assert list(frame.columns) == list(RESULT_COLUMNS) and len(frame) == 2 * 8


def test_results_path_is_checked_first(monkeypatch):
    with pytest.raises(ConfigError, match="expected a file name ending in .csv or .parquet, got .txt"):
        check_results_path("r.txt")
    with pytest.raises(ConfigError, match="cannot write there"):
        check_results_path("/proc/no-such-dir/r.csv")
    if importlib.util.find_spec("pyarrow") is not None:
        assert check_results_path("r.parquet") == "parquet"
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # what a machine without pyarrow gives: ImportError
    with pytest.raises(ConfigError, match="writing Parquet needs pyarrow, which is not installed"):
        check_results_path("r.parquet")


def test_parquet_results_hold_the_same_rows_as_csv(tmp_path):
    """Where pyarrow is installed, ``--results r.parquet`` holds what ``r.csv`` holds, row for row."""
    pytest.importorskip("pyarrow")
    from stream_nb.tools.evaluate import write_results

    result = evaluate(river_events("river:STAGGER-abrupt", 1500), {"nb": NaiveBayes(drift_detector="ddm")},
                      window=500)
    csv = pd.read_csv(write_results(result, str(tmp_path / "r.csv")), keep_default_na=False)
    parquet = pd.read_parquet(write_results(result, str(tmp_path / "r.parquet")))
    assert list(parquet.columns) == list(RESULT_COLUMNS) and len(parquet) == len(csv) == 3
    pd.testing.assert_frame_equal(parquet, result.results())
    assert parquet["accuracy"].tolist() == pytest.approx(csv["accuracy"].tolist())


def test_done_when_command(tmp_path):
    """The command of the issue, as a user runs it: kappas for all three models, r.csv in pandas with one
    row per window and model, the river model's accuracy equal to progressive_val_score, drifts in the report."""
    models = "nb,nb:drift_detector=ddm,river.naive_bayes.GaussianNB"
    run = cli("evaluate", "--input", "river:STAGGER", "--events", "10000", "--models", models,
              "--report", "DIR", "--results", "r.csv", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    header = next(line for line in run.stdout.splitlines() if line.startswith("model "))
    assert header.split()[:5] == ["model", "accuracy", "kappa", "kappa_t", "kappa_m"]
    table = {line.split()[0]: line.split() for line in run.stdout.splitlines()
             if line.split() and line.split()[0] in models.split(",")}
    assert set(table) == set(models.split(","))
    frame = pd.read_csv(tmp_path / "r.csv")
    assert list(frame.columns) == list(RESULT_COLUMNS)
    assert len(frame) == 3 * 20 and sorted(frame.groupby("model").size().tolist()) == [20, 20, 20]
    assert (frame.groupby("model")["labeled"].sum() == 10_000).all()
    events = river_events("river:STAGGER", 10_000)
    last = frame[frame["window"] == 19].set_index("model")
    for name, make in (("river.naive_bayes.GaussianNB", naive_bayes.GaussianNB), ("nb", NaiveBayes)):
        want = river_score(events, make(), metrics.Accuracy())
        assert last.loc[name, "cumulative_accuracy"] == pytest.approx(want, abs=1e-12)
        for k, metric in enumerate(("accuracy", "kappa", "kappa_t", "kappa_m"), 1):
            assert table[name][k] == f"{last.loc[name, f'cumulative_{metric}']:.4f}"
    report = (tmp_path / "DIR" / "report.md").read_text()
    assert "## Drifts" in report
    for name in models.split(","):
        assert f"- {name}: " in report


def test_drifts_listed_by_the_command(tmp_path):
    run = cli("evaluate", "--input", "river:STAGGER-abrupt", "--events", "4000", "--models", "nb:drift_detector=ddm",
              "--report", "DIR", "--results", "r.csv", "--window", "1000", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    model = NaiveBayes(drift_detector="ddm")
    for x, y in river_events("river:STAGGER-abrupt", 4000):
        model.predict_one(x)
        model.learn_one(x, y)
    listed = ", ".join(f"{d:,}" for d in model.drifts)
    assert model.drifts and f"drifts of nb:drift_detector=ddm (after labeled event): {listed}" in run.stdout
    assert f"- nb:drift_detector=ddm: {listed}" in (tmp_path / "DIR" / "report.md").read_text()
    frame = pd.read_csv(tmp_path / "r.csv", keep_default_na=False)
    found = [int(p) for text in frame["drift_positions"] for p in str(text).split()]
    assert found == model.drifts and frame["drifts"].sum() == len(model.drifts)


@pytest.mark.parametrize("args, message", [
    (["--results", "r.txt"], "--results r.txt: expected a file name ending in .csv or .parquet, got .txt"),
    (["--models", "river.naive_bayes.GaussianNB:alpha=1"], "GaussianNB takes no parameters, not 'alpha'"),
    (["--models", "river.naive_bayes.GaussianNB", "--alpha", "2"],
     "none of which is in --models river.naive_bayes.GaussianNB"),
])
def test_command_refuses_bad_settings_before_any_work(tmp_path, args, message):
    run = cli("evaluate", "--input", "river:STAGGER", "--models", "nb", *args, cwd=tmp_path)
    assert run.returncode == 2
    assert message in run.stderr and "Traceback" not in run.stderr
    assert not (tmp_path / "r.txt").exists()


# ----------------------------------------------------------------------------- public views


def test_no_tool_reads_a_private_name_of_another_object():
    """explain, inspect, evaluate and the report read models through documented methods only: no
    ``obj._name`` (nor ``getattr(obj, "_name")``) in stream_nb/tools but on ``self``."""
    import ast
    import pathlib

    import stream_nb.tools

    found = []
    for path in sorted(pathlib.Path(stream_nb.tools.__file__).parent.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            name = None
            # self's own names, and argparse's _SubParsersAction in the sub-commands' annotations, are fine
            if isinstance(node, ast.Attribute) and not (isinstance(node.value, ast.Name)
                                                        and node.value.id in ("self", "argparse")):
                name = node.attr
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr")
                  and len(node.args) > 1 and isinstance(node.args[1], ast.Constant)):
                name = node.args[1].value
            if isinstance(name, str) and name.startswith("_") and not name.startswith("__"):
                found.append(f"{path.name}:{node.lineno}: {name}")
    assert found == []


def test_the_public_views_give_what_the_tools_read():
    from stream_nb import TAN

    model = TAN(numeric=MDL(bins=3, warmup=4))
    for i in range(12):
        model.learn_one({"a": "xy"[i % 2], "t": float(i), "k": i % 3}, "pq"[i % 3 == 0])
    assert [f["name"] for f in model.feature_summary()] == ["a", "t", "k"]
    assert model.class_counts() == {"p": 8.0, "q": 4.0}
    assert sum(model.class_counts().values()) == model.n_learned
    proba = model.predict_proba_one({"a": "x", "t": 3.0})
    assert [math.exp(v) for v in model.log_posterior_one({"a": "x", "t": 3.0})] == pytest.approx(
        [proba[c] for c in model.classes], rel=1e-12)
    decayed = NaiveBayes(forgetting=Decay(half_life=2.0, time_field="ts"))
    for ts in range(6):
        decayed.learn_one({"a": "x", "ts": float(ts)}, "p")
    assert decayed.class_counts()["p"] == pytest.approx(decayed.n_learned, rel=1e-12)  # the decayed weight


# ----------------------------------------------------------------------------- rejections and failures


def test_an_event_stream_nb_rejects_is_a_bad_row_the_peers_never_learn():
    learned = []

    class Watched(naive_bayes.GaussianNB):
        def learn_one(self, x, y):
            learned.append(y)
            return super().learn_one(x, y)

    events = [({"t": 1.0}, "a"), ({"t": 2.0}, "b"), ({"t": 3.0}, 1), ({"t": 1.5}, "a")]  # 1: a label of another type
    for delay in (None, 1):
        learned.clear()
        result = evaluate(events, {"peer": Watched(), "nb": NaiveBayes()}, delay=delay)
        assert result.bad_by_reason == {"label_type_conflict": 1} and result.bad_rows[0].error.startswith("nb: ")
        assert learned == ["a", "b", "a"]
        assert [r.metrics.labeled for r in result.models] == [3, 3]


def test_a_peer_that_cannot_take_a_value_stops_the_command_with_the_event_named(tmp_path):
    path = tmp_path / "cat.csv"
    path.write_text("a,b,label\nx,1,p\ny,2,q\nx,3,p\n")
    for extra in ([], ["--delay", "1"]):
        run = cli("evaluate", "--input", str(path), "--models", "nb,river.naive_bayes.GaussianNB", *extra)
        assert run.returncode == 1
        assert (f"stream-nb evaluate: error: {path} line 2: river.naive_bayes.GaussianNB failed: TypeError: "
                in run.stderr)
        assert "Traceback" not in run.stderr
