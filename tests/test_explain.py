"""``explain_one`` and ``stream-nb explain``: Shapley values of the log-odds between the top two classes."""

from __future__ import annotations

import itertools
import math
import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

import stream_nb
from stream_nb import AODE, MDL, TAN, NaiveBayes, Tree
from stream_nb.tools.explain import explain_one, log_odds

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def make_stream(n=300, seed=7):
    """Complete events (no missing value): 3 classes, 4 categorical attributes (two tied), 1 numeric."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        y = ["red", "green", "blue"][rng.integers(3)]
        a = ["p", "q", "r"][(rng.integers(3) + (y == "red")) % 3]
        b = a if rng.random() < 0.7 else ["p", "q", "r"][rng.integers(3)]
        c = int(rng.integers(4)) + (2 if y == "blue" else 0)
        d = bool(rng.random() < (0.8 if y == "green" else 0.3))
        t = float(np.round(rng.normal({"red": 1.0, "green": 2.0, "blue": 3.0}[y], 0.8), 2))
        out.append(({"a": a, "b": b, "c": c, "d": d, "t": t}, y))
    return out


STREAM = make_stream()


def trained(make, stream=STREAM):
    model = make()
    for x, y in stream:
        model.learn_one(x, y)
    if isinstance(model, TAN):
        model.rebuild()
    return model


MAKERS = {
    "nb": NaiveBayes,
    "aode": lambda: AODE(numeric=MDL(warmup=50)),
    "tan": lambda: TAN(numeric=MDL(warmup=50), search=Tree(rebuild_every=0)),
}

EVENTS = [
    {"a": "p", "b": "p", "c": 3, "d": True, "t": 2.5},
    {"a": "r", "b": "q", "c": 0, "d": False, "t": 0.4},
    {"a": "q", "b": None, "c": 5, "t": 3.3},           # b missing, d absent
    {"a": "zzz", "b": "p", "c": 1, "d": True, "t": 1.7},  # a value never seen
    {"a": "q", "b": "r", "c": 2, "d": False, "t": 2.0, "e": "never seen feature"},
]


# ----------------------------------------------------------------------------- naive Bayes: the LLR


def nb_log_likelihood_ratio(stream, name, value, c1, c2, alpha=1.0, var_smoothing=1e-9):
    """ln P(x_i | c1) / P(x_i | c2) from the raw events, written out (no model involved)."""
    if name not in stream[0][0]:
        return 0.0
    if isinstance(value, float):
        def logpdf(c):
            vals = np.array([x[name] for x, y in stream if y == c])
            # the floor: var_smoothing times the smallest positive variance within one class
            spread = min(v for v in (np.var([x[name] for x, y in stream if y == k]) for k in {y for _, y in stream})
                         if v > 0)
            var = max(vals.var(), var_smoothing * spread)
            return -0.5 * math.log(2 * math.pi * var) - (value - vals.mean()) ** 2 / (2 * var)

        return logpdf(c1) - logpdf(c2)
    values = {x[name] for x, _ in stream}
    n_values = len(values) + (value not in values)

    def logp(c):
        n_c = sum(1 for x, y in stream if y == c)
        n_cv = sum(1 for x, y in stream if y == c and x[name] == value and type(x[name]) is type(value))
        return math.log((n_cv + alpha) / (n_c + alpha * n_values))

    return logp(c1) - logp(c2)


@pytest.mark.parametrize("x", EVENTS)
def test_naive_bayes_shapley_is_the_log_likelihood_ratio(x):
    model = trained(NaiveBayes)
    e = explain_one(model, x)
    c1, c2 = e.classes
    proba = model.predict_proba_one(x)
    ranked = sorted(proba, key=proba.get, reverse=True)
    assert [c1, c2] == ranked[:2]
    counts = {c: sum(1 for _, y in STREAM if y == c) for c in ("red", "green", "blue")}
    assert e.prior == pytest.approx(math.log((counts[c1] + 1) / (counts[c2] + 1)), abs=1e-12)
    present = {k: v for k, v in x.items() if v is not None}
    assert {c.attribute for c in e.contributions} == set(present)
    for c in e.contributions:
        assert c.value == present[c.attribute]
        assert c.shapley == pytest.approx(nb_log_likelihood_ratio(STREAM, c.attribute, c.value, c1, c2),
                                          abs=1e-9), c.attribute
    assert e.log_odds == pytest.approx(math.log(proba[c1] / proba[c2]), abs=1e-9)
    assert e.total == pytest.approx(e.log_odds, abs=1e-12)
    # sampled: in an additive game every order gives each attribute its LLR
    s = explain_one(model, x, exact_max=0, permutations=25, seed=3)
    for c in s.contributions:
        assert c.shapley == pytest.approx(nb_log_likelihood_ratio(STREAM, c.attribute, c.value, c1, c2), abs=1e-9)
        assert c.stderr < 1e-9


def test_contributions_are_sorted_by_size():
    e = explain_one(trained(MAKERS["tan"]), EVENTS[0])
    sizes = [abs(c.shapley) for c in e.contributions]
    assert sizes == sorted(sizes, reverse=True)


# ----------------------------------------------------------------------------- every model: they add up


@pytest.mark.parametrize("name", MAKERS)
@pytest.mark.parametrize("x", EVENTS)
def test_prior_plus_contributions_is_the_log_odds_exact_and_sampled(name, x):
    model = trained(MAKERS[name])
    exact = explain_one(model, x)
    assert exact.method == "exact" and exact.permutations is None
    n = sum(v is not None for v in x.values())
    assert exact.coalitions == 2 ** n and len(exact.contributions) == n
    c1, c2 = exact.classes
    proba = model.predict_proba_one(x)
    assert exact.log_odds == pytest.approx(math.log(proba[c1] / proba[c2]), abs=1e-9)
    assert exact.prior == pytest.approx(log_odds(model, {}, c1, c2), abs=1e-12)
    assert exact.prior + sum(c.shapley for c in exact.contributions) == pytest.approx(exact.log_odds, abs=1e-10)
    sampled = explain_one(model, x, exact_max=2, permutations=15, seed=11)
    assert sampled.method == "sampled" and sampled.permutations == 15 and sampled.seed == 11
    assert sampled.classes == exact.classes and sampled.log_odds == exact.log_odds
    assert sampled.prior + sum(c.shapley for c in sampled.contributions) == pytest.approx(sampled.log_odds,
                                                                                          abs=1e-10)
    # an attribute the model never saw changes nothing: its value is exactly 0
    for c in exact.contributions + sampled.contributions:
        if c.attribute == "e":
            assert c.shapley == 0.0


@pytest.mark.parametrize("name", ["aode", "tan"])
def test_exact_values_equal_the_average_over_all_orders(name):
    """Shapley's definition, by brute force over all n! orders, straight from predict_proba_one."""
    model = trained(MAKERS[name])
    x = {"a": "q", "b": "r", "c": 4, "t": 1.1}
    e = explain_one(model, x)
    c1, c2 = e.classes

    def v(keys):
        p = model.predict_proba_one({k: x[k] for k in keys})
        return math.log(p[c1] / p[c2])

    phi = dict.fromkeys(x, 0.0)
    orders = list(itertools.permutations(x))
    for order in orders:
        for i, k in enumerate(order):
            phi[k] += (v(order[: i + 1]) - v(order[:i])) / len(orders)
    assert {c.attribute: c.shapley for c in e.contributions} == pytest.approx(phi, abs=1e-9)
    # and the model is not additive here: the values differ from one-at-a-time effects
    alone = {k: v([k]) - v([]) for k in x}
    assert max(abs(alone[k] - phi[k]) for k in x) > 1e-3


def test_sampling_converges_to_the_exact_values_and_is_seeded():
    model = trained(MAKERS["tan"])
    x = EVENTS[0]
    exact = {c.attribute: c.shapley for c in explain_one(model, x).contributions}
    s = explain_one(model, x, exact_max=0, permutations=3000, seed=5)
    for c in s.contributions:
        assert abs(c.shapley - exact[c.attribute]) <= 4 * c.stderr + 1e-12, c
    assert max(c.stderr for c in s.contributions) > 0
    again = explain_one(model, x, exact_max=0, permutations=40, seed=5)
    same = explain_one(model, x, exact_max=0, permutations=40, seed=5)
    other = explain_one(model, x, exact_max=0, permutations=40, seed=6)
    assert again == same
    assert [c.shapley for c in again.contributions] != [c.shapley for c in other.contributions]


def test_more_than_twelve_attributes_are_sampled_by_default():
    from river.datasets import synth

    events = [({str(k): v for k, v in x.items()}, y)
              for x, y in synth.LED(seed=1, noise_percentage=0.1, irrelevant_features=True).take(800)]
    for make in (NaiveBayes, lambda: TAN(search=Tree(rebuild_every=400))):
        model = trained(make, events)
        x = events[-1][0]
        e = explain_one(model, x, permutations=30)
        assert e.method == "sampled" and len(e.contributions) == 24 and e.permutations == 30 and e.seed == 0
        assert e.total == pytest.approx(e.log_odds, abs=1e-10)
        assert e.coalitions <= 30 * 23 + 2


def test_chosen_classes_and_errors():
    model = trained(NaiveBayes)
    e = explain_one(model, EVENTS[0], classes=("blue", "red"))
    assert e.classes == ("blue", "red")
    assert e.total == pytest.approx(log_odds(model, EVENTS[0], "blue", "red"), abs=1e-10)
    with pytest.raises(ValueError, match=r"expected two different classes among \['blue', 'red', 'green'\], got \('blue', 'purple'\)"):
        explain_one(model, EVENTS[0], classes=("blue", "purple"))
    one = NaiveBayes()
    one.learn_one({"a": 1}, "only")
    with pytest.raises(ValueError, match=r"at least two classes, got 1: \['only'\]"):
        explain_one(one, {"a": 1})
    with pytest.raises(ValueError, match="permutations: expected a positive integer, got 0"):
        explain_one(model, EVENTS[0], permutations=0)


def test_table_and_dict():
    e = explain_one(trained(NaiveBayes), EVENTS[1])
    lines = e.table().splitlines()
    assert lines[0].split() == ["attribute", "value", "contribution"]
    assert [line.split()[0] for line in lines[1:1 + len(e.contributions)]] == [c.attribute for c in e.contributions]
    assert lines[-2].split() == ["prior", f"{e.prior:+.4f}"]
    assert lines[-1].split()[-1] == f"{e.log_odds:+.4f}"
    d = e.as_dict()
    assert d["classes"] == list(e.classes) and len(d["contributions"]) == 5 and d["method"] == "exact"


def test_plot_explanation(tmp_path):
    import matplotlib.image

    from stream_nb.tools.report import plot_explanation

    model = trained(MAKERS["tan"])
    for i, e in enumerate([explain_one(model, EVENTS[0]), explain_one(model, EVENTS[0], exact_max=0, permutations=50)]):
        path = tmp_path / f"e{i}.png"
        plot_explanation(e, str(path), subtitle="tan on a test stream")
        data = path.read_bytes()
        assert data[:8] == PNG_SIGNATURE and len(data) > 8_000
        image = matplotlib.image.imread(str(path))
        assert image.shape[0] >= 250 and image.shape[1] >= 600 and image.std() > 0.01


# ----------------------------------------------------------------------------- the command

CSV_HEADER = "a,b,c,d,t,label\n"


def write_csv(tmp_path, stream=STREAM) -> pathlib.Path:
    path = tmp_path / "train.csv"
    rows = [f"{x['a']},{x['b']},{x['c']},{str(x['d']).lower()},{x['t']!r},{y}" for x, y in stream]
    path.write_text(CSV_HEADER + "\n".join(rows) + "\nbad,row\n")
    return path


def cli(*args):
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAM_NB_")}
    return subprocess.run([sys.executable, "-m", "stream_nb.cli", "explain", *args], capture_output=True, env=env,
                          timeout=300)


def contributions(stdout: str) -> dict[str, tuple[str, float]]:
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:3] == ["attribute", "value", "contribution"])
    out = {}
    for line in lines[start + 1:]:
        if line.startswith("---"):
            break
        parts = line.split()
        out[parts[0]] = (parts[1], float(parts[2]))
    return out


def test_cli_nb_on_our_csv_shows_the_log_likelihood_ratios(tmp_path):
    path = write_csv(tmp_path)
    # the CSV holds d as "true"/"false" strings: the same model over strings
    stream = [({**x, "d": str(x["d"]).lower()}, y) for x, y in STREAM]
    event_file = tmp_path / "event.json"
    event_file.write_text('{"a": "p", "b": "q", "c": 3, "d": "true", "t": 2.5, "label": "green", "id": 17}\n')
    plot = tmp_path / "why.png"
    out = cli("--input", str(path), "--model", "nb", "--event-file", str(event_file), "--plot", str(plot))
    assert out.returncode == 0, out.stderr.decode()
    stdout = out.stdout.decode()
    assert "1 bad rows skipped" in stdout and "line 302: wrong_cell_count" in out.stderr.decode()
    assert "the event's label: green" in stdout
    assert "exact Shapley values over 5 attributes (32 coalitions)" in stdout
    model = trained(NaiveBayes, stream)
    x = {"a": "p", "b": "q", "c": 3, "d": "true", "t": 2.5}
    e = explain_one(model, x)
    c1, c2 = e.classes
    assert f"ln P({c1}|x)/P({c2}|x) = {e.log_odds:+.4f}" in stdout
    got = contributions(stdout)
    assert set(got) == set(x)
    for name, (shown, value) in got.items():
        assert value == pytest.approx(nb_log_likelihood_ratio(stream, name, x[name], c1, c2), abs=6e-5)
    assert re.search(rf"^prior +{re.escape(f'{e.prior:+.4f}')}$", stdout, re.M)
    assert re.search(rf"^total = log-odds +{re.escape(f'{e.log_odds:+.4f}')}$", stdout, re.M)
    data = plot.read_bytes()
    assert data[:8] == PNG_SIGNATURE and len(data) > 8_000


@pytest.mark.slow
def test_cli_tan_on_river_led_samples_permutations(tmp_path):
    event = '{"0":1,"1":0,"2":1,"3":1,"4":0,"5":1,"6":1,"7":0,"8":1,"9":0,"10":0,"11":1,' \
            '"12":0,"13":1,"14":0,"15":0,"16":1,"17":0,"18":1,"19":0,"20":0,"21":1,"22":0,"23":1}'
    plot = tmp_path / "led.png"
    out = cli("--input", "river:LED", "--events", "1200", "--model", "tan:rebuild_every=600", "--event", event,
              "--permutations", "40", "--permutation-seed", "3", "--plot", str(plot))
    assert out.returncode == 0, out.stderr.decode()
    stdout = out.stdout.decode()
    assert "tan:rebuild_every=600 trained on river:LED (1,200 events, seed 1): 1,200 events learned" in stdout
    assert "Shapley values estimated from 40 random permutations (seed 3) over 24 attributes" in stdout
    from river.datasets import synth

    events = [({str(k): v for k, v in x.items()}, y)
              for x, y in synth.LED(seed=1, noise_percentage=0.1, irrelevant_features=True).take(1200)]
    model = TAN(search=Tree(rebuild_every=600))
    for x, y in events:
        model.learn_one(x, y)
    import json

    e = explain_one(model, json.loads(event), permutations=40, seed=3)
    got = contributions(stdout)
    assert {k: v for k, (_, v) in got.items()} == pytest.approx(
        {str(c.attribute): round(c.shapley, 4) for c in e.contributions}, abs=1e-12)
    assert plot.read_bytes()[:8] == PNG_SIGNATURE


@pytest.mark.parametrize("args, status, message", [
    (["--event", '{"a": 1}'], 2, "expected --input SRC (with --model) or --snapshot PATH"),
    (["--event", '{"a": [1]}', "--input", "river:LED"], 2, "--event: expected one JSON object of scalar fields"),
    (["--event", "not json", "--input", "river:LED"], 2, "--event: expected one JSON object"),
    (["--event", "{}", "--input", "river:LED", "--model", "nb,tan"], 2, "--model: expected one model, got 2"),
    (["--event", "{}", "--input", "river:LED", "--permutations", "0"], 2, "--permutations: expected a positive"),
    (["--event-file", "/nonexistent/event.json", "--input", "river:LED"], 2, "cannot read it"),
])
def test_cli_errors(args, status, message):
    out = cli(*args)
    assert out.returncode == status, out.stderr.decode()
    assert message in out.stderr.decode()


def test_cli_one_class_cannot_be_explained(tmp_path):
    path = tmp_path / "one.csv"
    path.write_text("a,label\n1,x\n2,x\n")
    out = cli("--input", str(path), "--event", '{"a": 1}')
    assert out.returncode == 1
    assert "at least two classes, got 1: ['x']" in out.stderr.decode()


def test_cli_snapshot(tmp_path):
    """``--snapshot`` loads with ``stream_nb.load`` when this installation has it, and says so when not."""
    snapshot = tmp_path / "model.snapshot"
    event = '{"a": "p", "b": "q", "c": 3, "d": true, "t": 2.5}'
    if not hasattr(stream_nb, "load"):
        out = cli("--snapshot", str(snapshot), "--event", event)
        assert out.returncode == 2
        assert "--snapshot needs stream_nb.load, which this installation of stream_nb does not have" in \
            out.stderr.decode()
        return
    model = trained(MAKERS["tan"])
    stream_nb.save(model, str(snapshot))
    out = cli("--snapshot", str(snapshot), "--event", event)
    assert out.returncode == 0, out.stderr.decode()
    e = explain_one(model, {"a": "p", "b": "q", "c": 3, "d": True, "t": 2.5})
    assert {k: v for k, (_, v) in contributions(out.stdout.decode()).items()} == pytest.approx(
        {c.attribute: round(c.shapley, 4) for c in e.contributions}, abs=1e-12)
    both = cli("--snapshot", str(snapshot), "--input", "river:LED", "--event", event)
    assert both.returncode == 2 and "either --snapshot or --input" in both.stderr.decode()
    damaged = tmp_path / "damaged.snapshot"
    damaged.write_bytes(snapshot.read_bytes()[:-10])
    out = cli("--snapshot", str(damaged), "--event", event)
    assert out.returncode == 1 and str(damaged) in out.stderr.decode()
