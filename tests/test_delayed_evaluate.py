"""``stream-nb evaluate --delay N / --delay-field F`` against river's progressive_val_score(..., delay=...)."""

from __future__ import annotations

import copy
import json
import random
import subprocess
import sys

import pytest
from river import compose, evaluate as river_evaluate, metrics, naive_bayes

from stream_nb import AODE, NaiveBayes
from stream_nb.tools.evaluate import evaluate


def stream(n=1500, seed=0):
    rng = random.Random(seed)
    out = []
    for i in range(n):
        y = int(rng.random() < 0.4 + 0.3 * (i > n // 2))  # the class balance drifts half-way
        x = {"a": ("p" if y else "q") if rng.random() < 0.7 else rng.choice("pqr"),
             "b": rng.gauss(1.0 if y else 0.0, 1.0), "d": rng.randrange(60)}
        out.append((x, y))
    return out


def river_accuracy(events, model, delay):
    metric = metrics.Accuracy()
    river_evaluate.progressive_val_score(events, model, metric, delay=delay)
    return metric


def trained(model, events):
    for x, y in events:
        model.learn_one(x, y)
    return model


@pytest.mark.parametrize("delay", [0, 1, 37, 400])
@pytest.mark.parametrize("make", [NaiveBayes, AODE])
def test_constant_delay_gives_rivers_accuracy(make, delay):
    events = [({k: v for k, v in x.items() if k != "d"}, y) for x, y in stream()]
    model = trained(make(), events[:5])  # a class known from the start: every prediction counts in river too
    ours = evaluate(events[5:], {"m": copy.deepcopy(model)}, delay=delay).models[0]
    theirs = river_accuracy(events[5:], copy.deepcopy(model), delay)
    assert ours.accuracy == theirs.get()
    assert ours.metrics.labeled == theirs.cm.total_weight == len(events) - 5


def test_delay_field_gives_rivers_accuracy():
    events = stream(seed=2)
    model = trained(NaiveBayes(), [({k: v for k, v in x.items() if k != "d"}, y) for x, y in events[:5]])
    ours = evaluate(events[5:], {"m": copy.deepcopy(model)}, delay_field="d").models[0]
    # river reads the delay from the features; the model must not see it
    theirs = river_accuracy(events[5:], compose.Discard("d") | copy.deepcopy(model), "d")
    assert ours.accuracy == theirs.get()
    assert "d" not in model.__dict__["_stats"].feature_index


def test_a_river_model_and_fresh_models():
    """A river model through our loop; from an empty model, the predictions made before any class was known
    are not scored, as river leaves them out: the accuracies are equal."""
    events = [({"b": x["b"]}, y) for x, y in stream(seed=3)]
    ours = evaluate(events, {"g": naive_bayes.GaussianNB(), "nb": NaiveBayes()}, delay=25).models
    for r, model in zip(ours, (naive_bayes.GaussianNB(), NaiveBayes())):
        theirs = river_accuracy(events, model, 25)
        assert r.accuracy == theirs.get()
        assert r.metrics.correct == theirs.cm.total_true_positives
        assert r.metrics.labeled == len(events)
        assert theirs.cm.total_weight == len(events) - 25  # events 0-24 predicted before the first label (due at 25)
        assert sum(row["scored"] for row in r.rows) == len(events) - 25


def test_bad_delays_are_bad_rows(tmp_path):
    path = tmp_path / "e.jsonl"
    rows = [{"a": "p", "d": 0, "label": 1}, {"a": "q", "d": -1, "label": 0}, {"a": "q", "d": "x", "label": 0},
            {"a": "q", "label": 0}, {"a": "p", "d": 2, "label": 1}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run = subprocess.run([sys.executable, "-m", "stream_nb", "evaluate", "--input", str(path), "--models", "nb",
                          "--delay-field", "d"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "2 events (2 labeled" in run.stdout and "3 bad rows skipped (bad_delay: 3)" in run.stdout
    assert "expected a number of events >= 0, got -1" in run.stderr
    run = subprocess.run([sys.executable, "-m", "stream_nb", "evaluate", "--input", str(path), "--models", "nb",
                          "--delay", "-2"], capture_output=True, text=True)
    assert run.returncode == 2 and "--delay: expected a number of events >= 0, got -2" in run.stderr
