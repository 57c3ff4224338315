"""A drift detector is fed once per labeled event, the same errors whichever way the model learns.

river's own evaluation loop (``evaluate.progressive_val_score``: ``predict_one``, then ``learn_one``,
with or without ``delay``) and every other entry point (``learn_one``, ``learn_one_receipt``,
``learn_many``, ``prequential_one``, ``prequential_many``, ``learn_events``, the engine's polls and its
one-event path, the join of labels that come later, the ``stream-nb run`` command with ``--feedback``)
are compared with an independent loop: a plain model without detector predicts each event with
``predict_one``, the 0/1 errors go to a fresh detector, and a drift is mirrored by taking back
(``unlearn_one``) every event learned before the warning, as the switch to the counts since the warning
does. The drift positions and the detector's final state must be the same.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys

import orjson
import pytest
from river import datasets, drift, evaluate, metrics

from join_helpers import ListSink, ListSource, assert_same_counts
from stream_nb import AODE, KDB, SPODE, TAN, NaiveBayes, Window, load
from stream_nb.engine import Engine, Joiner
from stream_nb.learners._detectors import CompiledDetector, compiled_detector, encode_object
from stream_nb.snapshots import SnapshotStore

N = 2000  # events per concept: three abrupt changes, at 2000, 4000 and 6000


def stagger(n=N):
    """STAGGER with three abrupt changes: concepts 0, 1, 2, then 0 again, ``n`` events each."""
    return list(itertools.chain(*(itertools.islice(datasets.synth.STAGGER(classification_function=f, seed=10 + i), n)
                                  for i, f in enumerate([0, 1, 2, 0]))))


EVENTS = stagger()


def state(detector) -> dict:
    return encode_object(detector)


def reference(events):
    """The independent loop: ``(drift positions, the detector's final state, the model)``."""
    model, det, twin = NaiveBayes(), drift.binary.DDM(), compiled_detector("ddm")
    learned: list = []  # the events the counts hold, in order
    since = None  # of those, the ones learned since the detector's warning began (None: no warning)
    drifts = []
    for seen, (x, y) in enumerate(events, 1):
        p = model.predict_one(x)
        if p is not None:
            det.update(int(p != y))
            twin.update(int(p != y))
            if det.drift_detected:
                drifts.append(seen)
                keep = since or []
                for old in learned[: len(learned) - len(keep)]:
                    model.unlearn_one(*old)  # the counts since the warning are left (none without one)
                learned, since = list(keep), None
            elif det.warning_detected:
                since = [] if since is None else since
            else:
                since = None
        model.learn_one(x, y)
        learned.append((x, y))
        if since is not None:
            since.append((x, y))
    return drifts, {"river": state(det), "twin": state(twin)}, model


REFERENCE = reference(EVENTS)


def ddm_model(**kw):
    return NaiveBayes(drift_detector=drift.binary.DDM(), **kw)


def check(model, ref=REFERENCE):
    drifts, det, plain = ref
    assert model.drifts == drifts
    # a model watches the compiled twin of a named detector (fed the same values, in the same state)
    assert state(model._forget.detector) == det["twin" if isinstance(model._forget.detector, CompiledDetector) else "river"]
    assert model._forget.seen == len(EVENTS)
    assert_same_counts(model, plain)


def test_the_reference_finds_the_three_changes():
    drifts = REFERENCE[0]
    assert len(drifts) == 3 and all(0 < d - c < 60 for d, c in zip(drifts, (N, 2 * N, 3 * N))), drifts


# ---------------------------------------------------------------------- river's own loop


@pytest.mark.parametrize("delay", [None, 1, 50])
def test_river_progressive_val_score_feeds_the_detector(delay):
    """As a river user runs it. With a delay each label is learned (and its error scored) when it comes, by the
    model as it stands then: the labels come in the events' order, so the errors are the same."""
    model = ddm_model()
    accuracy = evaluate.progressive_val_score(EVENTS, model, metrics.Accuracy(), delay=delay)
    check(model)
    plain = evaluate.progressive_val_score(EVENTS, NaiveBayes(), metrics.Accuracy(), delay=delay)
    assert accuracy.get() > 0.97 > 0.75 > plain.get()  # the resets pay off


def test_river_loop_reaches_prequential_one_on_the_issue_stream():
    """The issue's stream (4 x 25,000 events): river's loop, with and without delay, as prequential_one."""
    events = stagger(25_000)
    one = ddm_model()
    correct = sum(one.prequential_one(x, y).prediction == y for x, y in events)
    assert correct / len(events) >= 0.99
    assert len(one.drifts) == 3 and all(0 < d - c < 60 for d, c in zip(one.drifts, (25_000, 50_000, 75_000)))
    for delay in (None, 100):
        model = ddm_model()
        accuracy = evaluate.progressive_val_score(events, model, metrics.Accuracy(), delay=delay)
        assert accuracy.get() >= 0.99 and model.drifts == one.drifts, (delay, accuracy, model.drifts)


# ---------------------------------------------------------------------- every learning path


def learn_one(model):
    for x, y in EVENTS:
        model.learn_one(x, y)


def learn_one_receipt(model):
    for x, y in EVENTS:
        model.learn_one_receipt(x, y)


def learn_many(model, events=None):
    events = EVENTS if events is None else events
    pd = pytest.importorskip("pandas")
    for lo in range(0, len(events), 250):
        part = events[lo: lo + 250]
        model.learn_many(pd.DataFrame([x for x, _ in part]), pd.Series([y for _, y in part]))


def prequential_one(model, events=None):
    events = EVENTS if events is None else events
    for x, y in events:
        model.prequential_one(x, y)


def prequential_many(model):
    for lo in range(0, len(EVENTS), 333):
        model.prequential_many([x for x, _ in EVENTS[lo: lo + 333]], [y for _, y in EVENTS[lo: lo + 333]])


def learn_events(model, events=None):
    events = EVENTS if events is None else events
    for lo in range(0, len(events), 333):
        assert model.learn_events([x for x, _ in events[lo: lo + 333]], [y for _, y in events[lo: lo + 333]]) == []


def engine_polls(model):
    Engine(model, ListSource([{**x, "label": y} for x, y in EVENTS]), ListSink(), ListSink(),
           config={"poll_max_records": 97}).run()


def engine_one_at_a_time(model):
    Engine(model, ListSource([{**x, "label": y} for x, y in EVENTS]), ListSink(), ListSink(),
           config={"emit_imputed": True}).run()


def feedback_join(model):
    """The labels come through the feedback, in the events' order, nearly all after their event (fewer read per
    turn than events polled): learned when they are read."""
    engine = Engine(model, ListSource([{"id": str(i), **x} for i, (x, _) in enumerate(EVENTS)]), ListSink(),
                    ListSink(), config={"poll_max_records": 97})
    engine.joiner = Joiner(engine, ListSource([{"id": str(i), "label": y} for i, (_, y) in enumerate(EVENTS)],
                                              "labels"), {"feedback_max_records": 61})
    engine.run()
    status = engine.joiner.status()
    assert status["labels_joined"] == len(EVENTS) and status["delayed_labeled"] > 0.95 * len(EVENTS)


class OverridingLearnOne(NaiveBayes):
    """A subclass whose learn_one prequential_one still calls for every event (fed once, not twice)."""

    def learn_one(self, x, y, w=1.0):
        super().learn_one(x, y, w)


def prequential_one_overridden(_):
    model = OverridingLearnOne(drift_detector=drift.binary.DDM())
    prequential_one(model)
    return model


PATHS = [learn_one, learn_one_receipt, learn_many, prequential_one, prequential_many, learn_events, engine_polls,
         engine_one_at_a_time, feedback_join, prequential_one_overridden]


@pytest.mark.parametrize("path", PATHS, ids=lambda f: f.__name__)
def test_every_entry_point_feeds_the_errors_of_the_independent_loop(path):
    model = ddm_model()
    model = path(model) or model
    check(model)


def test_without_a_detector_learn_one_predicts_nothing(monkeypatch):
    """The cost of the prediction falls on models with a detector only."""
    decided = []
    real = NaiveBayes._decided
    monkeypatch.setattr(NaiveBayes, "_decided", lambda self, enc: decided.append(1) or real(self, enc))
    learn_one(NaiveBayes())
    assert decided == []
    model = ddm_model()
    learn_one(model)
    assert len(decided) == len(EVENTS) - 1  # every labeled event but the first (no class known yet)
    decided.clear()
    prequential_one(ddm_model())  # its own prediction is handed over: not made again
    assert decided == []


def test_a_refused_label_feeds_the_detector_nothing():
    from stream_nb.exceptions import LabelTypeError

    model = ddm_model()
    model.learn_one({"a": "x"}, "p")
    model.learn_one({"a": "y"}, "q")
    with pytest.raises(LabelTypeError):
        model.learn_one({"a": "x"}, 1)
    det = compiled_detector("ddm")  # what the model watches: river's DDM's compiled twin
    det.update(1)  # the second event, predicted "p" (the first had nothing to judge)
    assert model._forget.seen == 2 and state(model._forget.detector) == state(det)


# ---------------------------------------------------------------------- provisional labels


def test_a_provisional_label_feeds_nothing_and_the_true_label_its_prediction_on_arrival():
    """With --provisional-label every held event is learned at once with that label: no true label, so the
    detector is fed nothing then (nor when it is taken back); the true label, when it comes, feeds it the
    error of the prediction the event got when it arrived, once."""
    events = EVENTS[:N] + EVENTS[2 * N: 3 * N]  # concept 0, then 2: one change, at N
    model = NaiveBayes(drift_detector=drift.binary.DDM(), forgetting=Window(size=400))
    out = ListSink()
    engine = Engine(model, ListSource([{"id": str(i), **x} for i, (x, _) in enumerate(events)]), out,
                    ListSink(), config={"poll_max_records": 97})
    engine.joiner = Joiner(engine, ListSource([{"id": str(i), "label": y} for i, (_, y) in enumerate(events)],
                                              "labels"), {"feedback_max_records": 61, "provisional_label": 0})
    engine.run()
    assert engine.joiner.status()["labels_retractions"] > 0
    det, drifts = compiled_detector("ddm"), []  # what the model watches: river's DDM's compiled twin
    for seen, (record, (_, y)) in enumerate(zip(out.values, events), 1):
        p = record["prediction"]
        if p is not None:
            det.update(int(p != y))
            drifts.append(seen) if det.drift_detected else None
    assert model._forget.seen == len(events)
    assert model.drifts == drifts and any(N < d < N + 200 for d in drifts), drifts
    assert state(model._forget.detector) == state(det)


# ---------------------------------------------------------------------- the other learners


LEARNERS = {
    "aode": lambda **kw: AODE(**kw),
    "tan": lambda **kw: TAN(**kw),
    "spode": lambda **kw: SPODE(**kw),
    "kdb": lambda **kw: KDB(k=2, **kw),
}


@pytest.mark.parametrize("name", list(LEARNERS))
def test_every_learner_detects_the_changes_in_river_loop_as_prequential_one(name):
    make, n = LEARNERS[name], N // 2
    events = stagger(n)
    one = make(drift_detector="ddm")
    prequential_one(one, events)
    assert len(one.drifts) == 3 and all(0 < d - c < 60 for d, c in zip(one.drifts, (n, 2 * n, 3 * n))), one.drifts
    for delay in (None, 25):
        model = make(drift_detector="ddm")
        accuracy = evaluate.progressive_val_score(events, model, metrics.Accuracy(), delay=delay)
        assert model.drifts == one.drifts and accuracy.get() > 0.95, (delay, model.drifts, accuracy)
    for path in (learn_many, learn_events):
        batched = make(drift_detector="ddm")
        path(batched, events)
        assert batched.drifts == one.drifts, path.__name__


# ---------------------------------------------------------------------- the daemon


def test_stream_nb_run_with_feedback_feeds_the_detector(tmp_path):
    """``stream-nb run --drift-detector ddm --feedback``: the snapshot's model has the reference's drifts."""
    (tmp_path / "events.jsonl").write_bytes(b"".join(orjson.dumps({"id": str(i), **x}) + b"\n"
                                                     for i, (x, _) in enumerate(EVENTS)))
    (tmp_path / "labels.jsonl").write_text("".join(json.dumps({"id": str(i), "label": y}) + "\n"
                                                   for i, (_, y) in enumerate(EVENTS)))
    run = subprocess.run([sys.executable, "-m", "stream_nb", "run", "--model", "nb", "--drift-detector", "ddm",
                          "--input", str(tmp_path / "events.jsonl"), "--feedback", str(tmp_path / "labels.jsonl"),
                          "--output", str(tmp_path / "out.jsonl"), "--snapshot-dir", str(tmp_path / "snap")],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    store = SnapshotStore(str(tmp_path / "snap"))
    model = load(store.path(max(store.sequences())))
    check(model)


def test_stream_nb_evaluate_with_delay_resets_on_drift(tmp_path):
    """``stream-nb evaluate --delay``: each label learned when due (learn_one) feeds the detector."""
    (tmp_path / "stagger.jsonl").write_bytes(b"".join(orjson.dumps({**x, "label": y}) + b"\n" for x, y in EVENTS))
    run = subprocess.run([sys.executable, "-m", "stream_nb", "evaluate", "--input", str(tmp_path / "stagger.jsonl"),
                          "--models", "nb,nb:drift_detector=ddm", "--delay", "50"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    accuracy = {line.split()[0]: float(line.split()[1]) for line in run.stdout.splitlines()
                if line.startswith("nb")}
    assert accuracy["nb:drift_detector=ddm"] > 0.97 > 0.75 > accuracy["nb"], run.stdout


def test_stream_nb_run_refuses_provisional_labels_a_detector_without_window_cannot_take_back(tmp_path):
    """Without a window a drift's switch drops counts by time, so a provisional label could not be taken back:
    refused at start (it failed at the first retraction), with a window it runs and is fed true labels only."""
    events = EVENTS[: N // 2]
    (tmp_path / "e.jsonl").write_bytes(b"".join(orjson.dumps({"id": str(i), **x}) + b"\n"
                                                for i, (x, _) in enumerate(events)))
    (tmp_path / "l.jsonl").write_bytes(b"".join(orjson.dumps({"id": str(i), "label": y}) + b"\n"
                                                for i, (_, y) in enumerate(events)))

    def run(*flags):
        return subprocess.run([sys.executable, "-m", "stream_nb", "run", "--input", str(tmp_path / "e.jsonl"),
                               "--feedback", str(tmp_path / "l.jsonl"), "--output", str(tmp_path / "o.jsonl"),
                               "--drift-detector", "ddm", "--provisional-label", "0", *flags],
                              capture_output=True, text=True, timeout=120)

    refused = run()
    assert refused.returncode == 2 and "Traceback" not in refused.stderr, refused.stderr
    assert "--provisional-label with --drift-detector needs --window" in refused.stderr
    windowed = run("--window", "400", "--snapshot-dir", str(tmp_path / "snap"))
    assert windowed.returncode == 0, windowed.stderr
    store = SnapshotStore(str(tmp_path / "snap"))
    assert load(store.path(max(store.sequences())))._forget.seen == len(events)
