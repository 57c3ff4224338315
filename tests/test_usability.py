"""What a new user expects in the first hour: the public namespace, ``python -m stream_nb``, river's
bundled data sets in ``evaluate``, a structure on short streams, a dead-letter summary that counts
only this run's dead letters, and ``evaluate`` keeping what it measured when interrupted."""

from __future__ import annotations

import json
import logging
import math
import os
import pathlib
import random
import signal
import socket
import subprocess
import sys
import types
import urllib.request

import orjson
import pytest

import stream_nb
from stream_nb import KDB, MDL, SPODE, TAN, EqualFrequency, NaiveBayes, Tree
from stream_nb.engine import Engine, PrequentialMetrics, Record
from stream_nb.exceptions import ConfigError
from stream_nb.ops import Operations
from stream_nb.tools.evaluate import BadRow, evaluate, make_model, open_events

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "events.jsonl"


# ------------------------------------------------------------------------- the package


def test_every_public_name_of_the_package_is_in_all():
    public = [n for n in dir(stream_nb) if not n.startswith("_")]
    assert "annotations" not in public  # a __future__ import would leak as stream_nb.annotations
    for name in public:
        value = getattr(stream_nb, name)
        if isinstance(value, types.ModuleType) and value.__name__ == f"stream_nb.{name}":
            continue  # a submodule: the import system binds it on the package
        assert name in stream_nb.__all__, name
    assert all(hasattr(stream_nb, n) for n in stream_nb.__all__)


def test_python_dash_m_stream_nb_runs_the_command():
    proc = subprocess.run([sys.executable, "-m", "stream_nb", "evaluate", "--input", "river:STAGGER", "--events",
                           "50", "--models", "nb"], capture_output=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout.decode().startswith("river:STAGGER (50 events, seed 1): 50 events")


def test_the_command_starts_without_the_libraries_only_some_options_need():
    """Each ``stream-nb`` call pays for its imports: scipy.special (TAN's ``tree_score="bayes"``),
    matplotlib (``--report``, ``--plot``), pandas and scikit-learn load only when an option uses them."""
    code = ("import sys, stream_nb.cli, stream_nb.daemon._main, connectors.jsonl, connectors.kafka\n"
            "print(' '.join(m for m in ('scipy.special', 'matplotlib', 'pandas', 'sklearn') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, cwd=ROOT, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout.decode().split() == []
    model = TAN(search=Tree())  # and the option that needs scipy still has it
    for i in range(60):
        model.learn_one({"a": i % 3, "b": (i // 3) % 2}, i % 2)
    model.rebuild()
    assert model.predict_one({"a": 1, "b": 0}) in (0, 1)


def test_the_daemon_keeps_blas_on_one_thread(tmp_path):
    """``stream-nb run`` runs numpy's BLAS on one thread (its worker threads spin between the models' small
    products); a process that asks for two, as an operator's environment may, gets one once the run starts."""
    code = ("import sys, threadpoolctl, stream_nb.cli\n"
            "before = {i['num_threads'] for i in threadpoolctl.threadpool_info() if i['user_api'] == 'blas'}\n"
            "status = stream_nb.cli.main(['run', '--input', sys.argv[1], '--output', sys.argv[2], '--dead-letter', sys.argv[3],"
            " '--model', 'kdb', '--log-level', 'WARNING'])\n"
            "after = {i['num_threads'] for i in threadpoolctl.threadpool_info() if i['user_api'] == 'blas'}\n"
            "print(status, sorted(before), sorted(after))")
    proc = subprocess.run([sys.executable, "-c", code, str(ROOT / "examples" / "events.jsonl"), str(tmp_path / "out"),
                           str(tmp_path / "dead")],
                          capture_output=True, cwd=ROOT, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "2", "OMP_NUM_THREADS": "2"})
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout.decode().split() == ["0", "[2]", "[1]"], proc.stdout.decode()


# ------------------------------------------------------------------------- evaluate: river's data sets


@pytest.fixture
def no_network(monkeypatch):
    """Every way out to the network fails, as on a machine without one."""

    def refuse(*args, **kwargs):
        raise OSError("the network is unreachable in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(urllib.request, "urlopen", refuse)


def bundled_classification_datasets() -> list[str]:
    """River's real data sets that ship in its wheel and are single-label classification (found here
    independently of the code under test)."""
    from river import datasets
    from river.datasets import base

    out = []
    for name in datasets.__all__:
        cls = getattr(datasets, name)
        if isinstance(cls, type) and issubclass(cls, base.FileDataset) and not issubclass(cls, base.RemoteDataset):
            if cls().task in ("Binary classification", "Multi-class classification"):
                out.append(name)
    return out


def test_river_ships_the_data_sets_this_test_expects():
    assert {"Phishing", "Bananas"} <= set(bundled_classification_datasets())


@pytest.mark.parametrize("name", bundled_classification_datasets())
def test_evaluate_reads_every_bundled_river_data_set_without_the_network(name, no_network):
    from river import datasets

    dataset = getattr(datasets, name)()
    src = open_events(f"river:{name}", events=40)
    items = list(src)
    assert src.describe == f"river:{name} (40 of its {dataset.n_samples:,} events)"
    assert len(items) == 40 and not any(isinstance(i, BadRow) for i in items)
    expected = list(dataset.take(40))
    assert [y for _, y, _ in items] == [y.item() if hasattr(y, "item") else y for _, y in expected]
    assert [set(x) for x, _, _ in items] == [{str(k) for k in x} for x, _ in expected]
    whole = open_events(f"river:{name.lower()}")  # case-insensitive; all of it by default
    assert whole.total == dataset.n_samples


def test_evaluate_on_a_bundled_data_set_end_to_end(no_network):
    result = evaluate(open_events("river:Phishing"), {"nb": make_model("nb"), "tan": make_model("tan")})
    assert result.n_events == result.n_labeled == 1250
    assert all(r.accuracy > 0.8 for r in result.models)


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("Friedman", "river's Friedman is a regression stream"),  # synthetic, regression
        ("TrumpApproval", "river's TrumpApproval is a regression stream"),  # bundled, regression
        ("Yeast", "river's Yeast is a multi-output binary classification stream"),  # bundled, multi-label
        ("Elec2", "river's Elec2 is downloaded on first use"),  # classification, but a download
        ("NoSuchStream", "no such river classification stream"),
    ],
)
def test_the_river_choices_are_classification_streams_only(name, why, no_network):
    from river.datasets import synth

    with pytest.raises(ConfigError) as info:
        open_events(f"river:{name}")
    message = str(info.value)
    assert why in message
    choices = message.split("expected one of ")[1].split(", ")
    assert {"LED", "SEA", "Agrawal", "Phishing", "Bananas"} <= set(choices)
    for choice in choices:
        if hasattr(synth, choice):
            assert "classification" in getattr(synth, choice)().task.lower()
    assert not {"Friedman", "Mv", "Planes2D", "FriedmanDrift", "TrumpApproval", "Yeast", "Elec2", "Logical"} & set(
        choices)


# ------------------------------------------------------------------------- the rebuild schedule


def learn_example(model):
    for item in open_events(str(EXAMPLE)):
        if isinstance(item, BadRow) or item[1] is None:
            continue
        try:
            model.learn_one(item[0], item[1])
        except stream_nb.exceptions.InvalidEventError:
            pass
    return model


@pytest.mark.parametrize("make", [TAN, SPODE, lambda: KDB(k=1), KDB], ids=["tan", "spode", "kdb1", "kdb2"])
def test_the_shipped_example_gets_a_structure_with_the_defaults(make):
    model = learn_example(make())
    assert model.n_learned < model.rebuild_every  # 347 events: fewer than one rebuild_every
    assert model.n_rebuilds == 2  # after 100 and 200 learned events
    if isinstance(model, TAN):
        assert len(model.tree) == 3  # a tree over the 4 attributes
    elif isinstance(model, SPODE):
        assert model.predict_proba_one({"outlook": "rain"}) != NaiveBayes().predict_proba_one({"outlook": "rain"})
        assert model._chosen is not None
    else:
        assert any(parents for parents in model.structure.values())


def test_tan_beats_naive_bayes_over_bins_on_the_shipped_example():
    """Before its first tree TAN is naive Bayes over the same binned counts; with it, it does better."""
    src = open_events(str(EXAMPLE))
    result = evaluate(src, {"tan": TAN(), "flat": TAN(search=Tree(rebuild_every=0))})
    tan, flat = result.models
    assert tan.accuracy > flat.accuracy and tan.log_loss < flat.log_loss


def test_the_rebuilds_come_after_warmup_and_each_doubling_then_every_rebuild_every():
    model = TAN(numeric=MDL(), search=Tree())
    when = []
    for i in range(1, 4001):
        model.learn_one({"a": i % 3, "b": i % 3 == 0, "c": i % 5}, i % 2)  # b depends on a given the class
        if model.n_rebuilds > len(when):
            when.append(i)
            assert model.tree  # every rebuild built one
    assert when == [100, 200, 400, 800, 1000, 2000, 3000, 4000]
    short = TAN(numeric=MDL(), search=Tree(rebuild_every=40))  # a rebuild_every below warmup: every 40 from the start
    for i in range(1, 201):
        short.learn_one({"a": i % 3}, i % 2)
    assert short.n_rebuilds == 5
    never = TAN(search=Tree(rebuild_every=0))
    for i in range(1, 401):
        never.learn_one({"a": i % 3}, i % 2)
    assert never.n_rebuilds == 0


@pytest.mark.parametrize("make", [TAN, SPODE, KDB], ids=["tan", "spode", "kdb"])
def test_the_schedule_is_the_same_through_learn_many_prequential_many_and_a_snapshot(make):
    import pandas as pd

    xs = [{"a": i % 3, "b": (i // 3) % 4, "c": float(i % 11)} for i in range(1600)]
    ys = [(i % 3 == 0) ^ (i % 7 == 0) for i in range(1600)]
    one = make()
    for x, y in zip(xs, ys):
        one.learn_one(x, y)
    many = make()
    for lo in range(0, 1600, 230):
        many.learn_many(pd.DataFrame(xs[lo:lo + 230]), pd.Series(ys[lo:lo + 230]))
    preq = make()
    for lo in range(0, 1600, 500):
        preq.prequential_many(xs[lo:lo + 500], ys[lo:lo + 500])
    split = make()
    for x, y in zip(xs[:500], ys[:500]):
        split.learn_one(x, y)
    arrays, meta = split.state()  # what a snapshot holds: copies of the arrays, the metadata through JSON
    split = type(split).from_state({k: v.copy() for k, v in arrays.items()},
                                   orjson.loads(orjson.dumps(meta, option=orjson.OPT_NON_STR_KEYS)))
    for x, y in zip(xs[500:], ys[500:]):
        split.learn_one(x, y)
    assert one.n_rebuilds == 5  # after 100, 200, 400, 800 and 1000
    for other in (many, preq, split):
        assert other.n_rebuilds == one.n_rebuilds
        assert other.predict_proba_one(xs[7]) == pytest.approx(one.predict_proba_one(xs[7]))


def led(n: int) -> list:
    from river.datasets import synth

    return [({str(k): v for k, v in x.items()}, y)
            for x, y in synth.LED(seed=1, noise_percentage=0.1, irrelevant_features=True).take(n)]


@pytest.mark.parametrize("make, numeric", [(TAN, MDL(warmup=1000)), (SPODE, MDL(warmup=1000)), (KDB, EqualFrequency(warmup=1000))],
                         ids=["tan", "spode", "kdb"])
def test_no_early_structure_on_attributes_independent_given_the_class(make, numeric):
    """LED's attributes are independent given the digit: the early rebuilds find nothing to build on,
    and the model is, event for event, the one that waits for rebuild_every."""
    events = led(2500)
    early, late = make(), make(numeric=numeric)  # warmup = rebuild_every: no early rebuild at all
    for x, y in events:
        assert early.predict_proba_one(x) == late.predict_proba_one(x)
        early.learn_one(x, y)
        late.learn_one(x, y)
    assert early.n_rebuilds == late.n_rebuilds + 4  # 4 early checks, then the same regular rebuilds


def test_dependence_is_shown_only_beyond_its_parameter_cost():
    from stream_nb.learners._structure import dependence_shown

    events = led(800)
    model = TAN(search=Tree(rebuild_every=0))
    for x, y in events:
        model.learn_one(x, y)
    assert not dependence_shown(model._stats)
    for x, y in events:  # a copy of attribute "1" under a new name: dependent on it, given any class
        model.learn_one({**x, "copy": x["1"]}, y)
    assert dependence_shown(model._stats)


def _g_by_hand(events) -> float:
    """2 Σ n(c,a,b) ln(n(c,a,b) n(c) / (n(c,a) n(c,b))) over the events: the G statistic of a and b
    independent given the class, counted again from the events."""
    from collections import Counter

    cab = Counter((y, x["a"], x["b"]) for x, y in events)
    ca, cb = Counter((y, x["a"]) for x, y in events), Counter((y, x["b"]) for x, y in events)
    c = Counter(y for _, y in events)
    return 2 * sum(n * math.log(n * c[y] / (ca[y, a] * cb[y, b])) for (y, a, b), n in cab.items())


def test_the_g_rule_is_the_textbook_test_and_the_bic_the_textbook_trade():
    """Two binary attributes, a binary class, a weak dependence: the G rule says True exactly when the G
    statistic counted from the events passes the table's chi-square quantile (0.99, 2 degrees of freedom:
    9.210; one pair, so no Bonferroni division), the BIC when G / 2 passes ln n (2 parameters' cost).
    Among the streams tried are some the test finds dependent and the BIC does not."""
    from stream_nb.learners._structure import dependence_shown

    verdicts = set()
    for seed in range(40):
        rng = random.Random(seed)
        model = TAN(search=Tree(rebuild_every=0))
        events = []
        for _ in range(200):
            y = rng.random() < 0.5
            a = rng.random() < 0.5
            b = a if rng.random() < 0.1 + 0.004 * seed else rng.random() < 0.5
            events.append(({"a": a, "b": b}, y))
            model.learn_one(*events[-1])
        g = _g_by_hand(events)
        if abs(g - 9.210) < 0.05:  # too near the threshold for the approximate quantile
            continue
        shown = (dependence_shown(model._stats, "g"), dependence_shown(model._stats, "bic"))
        assert shown == (g > 9.210, g / 2 > math.log(200)), (seed, g)
        verdicts.add(shown)
    assert verdicts == {(False, False), (True, False), (True, True)}


def test_an_early_rebuild_waits_for_the_test_its_structure_asks():
    """A weak dependence of b on a, 200 events: the G-test finds it (G = 10.36 > 9.21), the BIC does not
    (G / 2 < ln 200): TAN with its Bayesian tree score and SPODE build at 200 events; TAN with CMI and
    KDB, whose structure choice charges nothing for cells, wait."""
    rng = random.Random(3)
    events = []
    for _ in range(200):
        y = rng.random() < 0.5
        a = rng.random() < 0.5
        b = a if rng.random() < 0.112 else rng.random() < 0.5
        events.append(({"a": a, "b": b}, y))
    assert 10.3 < _g_by_hand(events) < 2 * math.log(200) and _g_by_hand(events[:100]) < 2 * math.log(100)
    tan, cmi, spode, kdb = TAN(), TAN(search=Tree(score="cmi")), SPODE(), KDB(k=1)
    for x, y in events:
        for model in (tan, cmi, spode, kdb):
            model.learn_one(x, y)
    assert len(tan.tree) == 1 and spode.super_parent is not None
    assert cmi.tree == [] and not any(kdb.structure.values())


# ------------------------------------------------------------------------- dead-letter summaries


class ListSource:
    exhausted = False

    def __init__(self, values: list[bytes]):
        self.partition = "demo"
        self.records = [Record(v, None, "demo", {"line": i + 1}, i + 1) for i, v in enumerate(values)]

    def poll(self, max_records, timeout):
        batch, self.records = self.records[:max_records], self.records[max_records:]
        self.exhausted = not batch
        return batch

    def commit(self, positions):
        pass

    def seek(self, positions):
        pass

    def close(self):
        pass


class ListSink:
    def send(self, value, key=None):
        pass

    def flush(self):
        pass

    def close(self):
        pass


GOOD = [orjson.dumps({"a": ("x", "y")[i % 2], "label": ("p", "q")[i % 3 == 0]}) for i in range(20)]


def metrics_state(dead: dict[str, int]) -> dict:
    m = PrequentialMetrics()
    for reason, n in dead.items():
        for _ in range(n):
            m.update_dead_letter(reason)
    return m.state()


def summaries(caplog) -> list[dict]:
    return [r.by_reason for r in caplog.records if getattr(r, "event", None) == "dead_letters"]


def test_the_first_summary_after_a_restore_counts_only_new_dead_letters(caplog):
    engine = Engine(NaiveBayes(), ListSource(GOOD[:5] + [b"{nope"] + GOOD[5:]), ListSink(), ListSink())
    engine.restore(NaiveBayes(), metrics_state({"invalid_json": 5, "nested_value": 2}), {})  # as at start-up
    ops = Operations(model_name="nb", mode="jsonl", host="127.0.0.1", port=None, summary_interval=0)
    caplog.set_level(logging.INFO, logger="stream_nb.ops")
    try:
        ops.attach(engine)
        engine.run()
    finally:
        ops.detach()
        ops.close()
    assert engine.metrics.dead_letters_by_reason == {"invalid_json": 6, "nested_value": 2}
    assert summaries(caplog) == [{"invalid_json": 1}]


def test_a_rewind_to_a_snapshot_neither_loses_nor_repeats_dead_letters_in_the_summary(caplog):
    engine = Engine(NaiveBayes(), ListSource(GOOD[:5] + [b"{nope", b"{nope"] + GOOD[5:]), ListSink(), ListSink())
    ops = Operations(model_name="nb", mode="jsonl", host="127.0.0.1", port=None, summary_interval=0)
    caplog.set_level(logging.INFO, logger="stream_nb.ops")
    try:
        ops.attach(engine)
        engine.run()  # 2 dead letters, not yet summarised
        engine.restore(NaiveBayes(), metrics_state({"invalid_json": 1}), {})  # a rewind (exactly-once abort)
        engine.source = ListSource([b"[1]"] + GOOD)
        engine.run()  # 1 more
    finally:
        ops.detach()
        ops.close()
    assert summaries(caplog) == [{"invalid_json": 2, "not_an_object": 1}]


def test_a_daemon_restarted_from_its_snapshot_reports_only_its_own_dead_letters(tmp_path):
    data = tmp_path / "in.jsonl"
    data.write_bytes(EXAMPLE.read_bytes())  # 7 dead letters of 7 reasons
    args = [sys.executable, "-m", "stream_nb", "run", "--input", str(data), "--output", str(tmp_path / "out.jsonl"),
            "--dead-letter", str(tmp_path / "dead.jsonl"), "--snapshot-dir", str(tmp_path / "snaps"),
            "--log-format", "json"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAM_NB_")}
    first = subprocess.run(args, capture_output=True, cwd=ROOT, env=env, timeout=300)
    assert first.returncode == 0, first.stderr.decode()
    with open(data, "ab") as f:
        f.write(b'{"outlook": "rain", "label": "yes"}\n{broken\n[2]\n{broken\n')
    again = subprocess.run(args, capture_output=True, cwd=ROOT, env=env, timeout=300)
    assert again.returncode == 0, again.stderr.decode()
    logs = [json.loads(line) for line in again.stderr.splitlines() if line.startswith(b"{")]
    assert any(e.get("event") == "dead_letters" for e in logs)
    assert [e["by_reason"] for e in logs if e.get("event") == "dead_letters"] == [{"invalid_json": 2,
                                                                                    "not_an_object": 1}]
    shutdown = next(e for e in logs if e.get("event") == "shutdown")
    assert shutdown["metrics"]["dead_letters"] == 10  # the totals go on across the restart
    assert shutdown["position"]["line"] == 404


# ------------------------------------------------------------------------- evaluate interrupted


def stream_then(interrupt, n: int = 50):
    for i in range(n):
        yield {"a": ("x", "y")[i % 2]}, ("p", "q")[i % 3 == 0], f"event {i + 1}"
        if i == 29:
            interrupt()


def test_evaluate_keeps_what_it_measured_when_a_keyboard_interrupt_comes():
    def interrupt():
        raise KeyboardInterrupt

    result = evaluate(stream_then(interrupt), {"nb": NaiveBayes(), "tan": TAN()})
    assert result.interrupted
    assert result.n_events == 30
    assert [r.metrics.predicted for r in result.models] == [30, 30]
    assert [len(r.correct) for r in result.models] == [30, 30]
    assert [row["model"] for row in result.table()] == ["nb", "tan"]


def test_evaluate_stops_between_two_events_on_sigint():
    result = evaluate(stream_then(lambda: os.kill(os.getpid(), signal.SIGINT)), {"nb": NaiveBayes()})
    assert result.interrupted and result.n_events == 30
    assert result.models[0].model.n_learned == 30  # the model learned exactly the events measured
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    whole = evaluate(stream_then(lambda: None), {"nb": NaiveBayes()})
    assert not whole.interrupted and whole.n_events == 50
