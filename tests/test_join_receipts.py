"""Provisional labels taken back exactly after a restart: their receipts are part of the join's snapshot state.

The reference is a single pass over the joined pairs. Under EM the expected
counts an incomplete event adds depend on the counts of its time, so the
streams here are built for the reference to be exact: the held events are
learned provisionally as 0; only events of class 1 have missing values (an
event whose label is known takes its E-step from its own class's counts, and
naive Bayes' and a fixed-parent SPODE's read no other class), and their labels
come in the order of the events, so class 1 learns the same events in the same
order on every path (at once, waiting, across a restart); the events of class 0
are complete (integer counts, in any order the same).
"""

from __future__ import annotations

import json
import logging
import random

import numpy as np
import pytest

from join_helpers import ListSink, ListSource, assert_same_counts
from stream_nb import EM, SPODE, NaiveBayes, SuperParent, Window
from stream_nb.engine import Engine, Joiner, join_state, load_join_state
from stream_nb.engine.join._join_state import rewind_join
from stream_nb.snapshots import SnapshotStore

MAKERS = {
    "nb-em": lambda: NaiveBayes(missing=EM()),
    "spode-em": lambda: SPODE(missing=EM(), search=SuperParent(parent="a")),  # its receipts hold its running scores' increments
    "nb-window": lambda: NaiveBayes(forgetting=Window(size=100000)),  # a forgetting model's receipt names the event's pane
}


def em_streams(n=600, seed=0, promote=0):
    """Events (a labeled prefix of class 0 that shows every value; then unlabeled ones, the class-1 ones with
    missing values) and their labels in the events' order (every class-1 event's; most class-0 ones'). With
    ``promote``, a feature ``n`` whose first ``promote`` values are integers, then fractions (a promotion)."""
    rng = random.Random(seed)
    events, labels = [], []
    for i in range(12):
        events.append({"id": f"p{i}", "a": "pqr"[i % 3], "b": "uvw"[i % 3], "c": "xyz"[(i // 3) % 3], "label": 0})
    for i in range(n):
        y = int(rng.random() < 0.45)
        x = {"a": ("p" if y else "q") if rng.random() < 0.7 else rng.choice("pqr"),
             "b": ("u" if y else "w") if rng.random() < 0.6 else rng.choice("uvw"), "c": rng.choice("xyz")}
        if promote:
            x["n"] = rng.randrange(3) if i < promote else round(rng.gauss(2.0 * y, 1.0), 3)
        if y == 1 and rng.random() < 0.5:
            x.pop(rng.choice("bc"))  # EM adds expected counts for it
        events.append({"id": f"e{i}", **x})
        if y == 1 or rng.random() < 0.8:
            labels.append({"id": f"e{i}", "label": y})
    return events, labels


def joined_pairs(events, labels, provisional=0):
    label = {r["id"]: r["label"] for r in labels}
    return [({k: v for k, v in e.items() if k not in ("id", "label")}, e.get("label", label.get(e["id"], provisional)))
            for e in events]


def reference(make, pairs):
    model = make()
    for x, y in pairs:
        model.learn_one(x, y)
    return model


def engine_with(model, events, labels):
    engine = Engine(model, ListSource(events), ListSink(), ListSink(), config={"poll_max_records": 37})
    engine.joiner = Joiner(engine, ListSource(labels, "labels"), {"feedback_max_records": 23, "provisional_label": 0})
    return engine


def snapshot_and_restore(engine, directory, labels):
    """Write the engine's model and join to a snapshot store in ``directory`` (as a checkpoint does), read
    them back into a new engine reading ``labels``, as a restarted daemon does."""
    arrays, meta = engine.model.state()
    join_arrays, join_meta = join_state(engine.joiner)
    store = SnapshotStore(str(directory))
    store.open()
    try:
        seq, _, _ = store.write({**arrays, **join_arrays}, meta, {"join": join_meta})
        snap = store.read(seq)
    finally:
        store.close()
    restored = engine_with(snap.model(), [], labels)
    load_join_state(restored.joiner, snap.arrays, snap.daemon["join"])
    return restored


@pytest.mark.parametrize("name", MAKERS)
def test_a_provisional_label_is_retracted_exactly_after_a_restart(name, tmp_path):
    make = MAKERS[name]
    events, labels = em_streams()
    cut = len(labels) // 3  # labels read before the restart; the rest after
    engine = engine_with(make(), events, labels[:cut])
    engine.run()
    assert len(engine.joiner.receipts) > 50  # held provisional labels that only a receipt takes back
    restored = snapshot_and_restore(engine, tmp_path / "snap", labels[cut:])
    assert len(restored.joiner.receipts) == len(engine.joiner.receipts)
    restored.run()
    assert restored.joiner.counts["retractions"] > 50
    want = reference(make, joined_pairs(events, labels))
    assert_same_counts(restored.model, want)
    # and the same as the daemon that was never restarted
    once = engine_with(make(), events, labels)
    once.run()
    assert_same_counts(restored.model, once.model)


def test_a_provisional_label_learned_before_a_promotion_is_retracted_exactly_after_it(tmp_path):
    """Held events learned provisionally while ``n`` was a feature of integers, a promotion (its first fraction)
    and a restart before their labels come: each receipt follows the promotion (its columns' counts are
    Gaussian moments now), and the model ends as the single pass over the joined pairs."""
    events, labels = em_streams(promote=150)
    cut = sum(int(r["id"][1:]) < 80 for r in labels)  # the labels of events 80 on come after the restart
    engine = engine_with(NaiveBayes(missing=EM()), events[:170], labels[:cut])
    engine.run()
    assert engine.model._stats.promoted and len(engine.joiner.receipts) > 10  # EM ones: issued before it
    restored = snapshot_and_restore(engine, tmp_path / "snap", labels[cut:])
    restored.source = ListSource(events[170:])
    restored.run()
    assert restored.joiner.counts["retractions"] > 50
    assert_same_counts(restored.model, reference(lambda: NaiveBayes(missing=EM()), joined_pairs(events, labels)))


def test_an_exactly_once_rewind_restores_the_receipts():
    engine, arrays, meta, events, labels = held_with_receipts(n=200, seed=1)
    model_arrays, model_meta = engine.model.state()
    kept = {engine.joiner.store.id_of(row): r for row, r in engine.joiner.receipts.items()}
    engine.joiner.feedback = ListSource(labels, "labels")
    engine.run()  # labels joined, provisional labels retracted: then the transaction aborts
    assert not engine.joiner.receipts
    engine.restore(type(engine.model).from_state(model_arrays, model_meta), None, {})
    rewind_join(engine.joiner, arrays, meta)
    back = {engine.joiner.store.id_of(row): r for row, r in engine.joiner.receipts.items()}
    assert back.keys() == kept.keys() and len(back) > 20
    for key, r in kept.items():  # each receipt as it was, array for array
        (a_got, m_got), (a_want, m_want) = engine.model.receipts_state([back[key]]), engine.model.receipts_state([r])
        assert m_got == m_want and all(np.array_equal(a_got[k], a_want[k]) for k in a_want)
    engine.joiner.feedback = ListSource(labels, "labels")
    engine.run()
    assert_same_counts(engine.model, reference(lambda: NaiveBayes(missing=EM()), joined_pairs(events, labels)))


def held_with_receipts(n: int = 120, seed: int = 2):
    """An engine that holds EM events with provisional labels (no label read yet), its join's state as a
    snapshot has it (arrays copied, meta through JSON), and the stream."""
    events, labels = em_streams(n=n, seed=seed)
    engine = engine_with(NaiveBayes(missing=EM()), events, [])
    engine.run()
    arrays, meta = join_state(engine.joiner)
    assert meta["receipts"]
    return engine, {k: v.copy() for k, v in arrays.items()}, json.loads(json.dumps(meta)), events, labels


@pytest.mark.parametrize("damage, message", [
    (lambda a, m: m["receipts"][0]["entries"][0].__setitem__(1, 99), r"join\.receipts\[0\]\.entries\[0\]: expected a class index in \[0, 1\)"),
    (lambda a, m: m["receipts"][0]["entries"][0].__setitem__(0, "bogus"), r"join\.receipts\[0\]\.entries\[0\]: expected a journal entry \[kind, \.\.\.\], kind one of count"),
    (lambda a, m: a.__setitem__("join.receipt_int", a["join.receipt_int"] + 10_000), r"join\.receipts\[0\]\.entries\[0\]\[3\]: expected indices in \[0, \d+\)"),
    (lambda a, m: a.__setitem__("join.receipt_float", a["join.receipt_float"][:3]), r"refers past the end of the floats"),
    (lambda a, m: a.pop("join.receipt_int"), r"join\.receipts: expected the array 'int' the receipts refer to"),
    (lambda a, m: m["receipts"][0].__setitem__("stamp", ["x", 1]), r"join\.receipts\[0\]\.stamp: expected null or \[pane, halvings\]"),
    (lambda a, m: m["receipts"][0].__setitem__("extra", []), r"join\.receipts\[0\]\.extra: expected null \(NaiveBayes records nothing"),
    (lambda a, m: m["receipt_events"].__setitem__(0, 10_000), r"join\.receipt_events\[0\]: expected the index of a held event"),
    (lambda a, m: m["receipt_events"].pop(), r"join\.receipts, join\.receipt_events: expected two lists"),
])
def test_a_malformed_receipt_is_refused_at_load_naming_what_was_expected(damage, message):
    engine, arrays, meta, _, _ = held_with_receipts()
    arrays = dict(arrays)
    damage(arrays, meta)
    fresh = engine_with(type(engine.model).from_state(*engine.model.state()), [], [])
    with pytest.raises(ValueError, match=message):
        load_join_state(fresh.joiner, arrays, meta)


class _Lines(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def _logged_run(engine) -> "_Lines":
    """Run ``engine``, its warnings and errors captured by a handler of their own (another test may stop the
    daemon's loggers from propagating, or raise their level)."""
    logger, lines = logging.getLogger("stream_nb.engine"), _Lines()
    logger.addHandler(lines)
    level, disabled = logger.level, logger.disabled
    logger.setLevel(logging.WARNING)
    logger.disabled = False
    try:
        engine.run()
    finally:
        logger.removeHandler(lines)
        logger.setLevel(level)
        logger.disabled = disabled
    return lines


def test_a_snapshot_of_an_older_version_without_receipts_keeps_those_provisional_labels(tmp_path):
    """A join written before receipts were kept has none: a provisional label learned with expected counts
    stays (logged), its true label is not learned, and the daemon goes on (it raised here once: the true label,
    learned with expected counts too, was taken back without its receipt)."""
    engine, arrays, meta, _, _ = held_with_receipts()
    for k in ("receipts", "receipt_events"):
        meta.pop(k)
    arrays = {k: v for k, v in arrays.items() if not k.startswith("join.receipt_")}
    model = type(engine.model).from_state(*engine.model.state())
    fresh = engine_with(model, [], [{"id": k.decode().strip('"'), "label": 1}
                                    for k in map(engine.joiner.store.id_of, engine.joiner.receipts)])
    load_join_state(fresh.joiner, arrays, meta)
    lines = _logged_run(fresh)
    assert sum("its provisional label stays" in line for line in lines.lines) == len(engine.joiner.receipts)
    assert fresh.joiner.counts["retractions"] == 0
    assert fresh.joiner.counts["kept_provisional"] == len(engine.joiner.receipts) > 0
    assert_same_counts(fresh.model, engine.model)  # as before (class 1 is known now, with no count)


def test_the_daemon_refuses_a_snapshot_with_a_malformed_receipt_with_a_clear_error(tmp_path):
    import subprocess
    import sys

    events, _ = em_streams(n=150, seed=3)
    (tmp_path / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    (tmp_path / "labels.jsonl").write_text("")  # no label comes: every held event keeps its provisional one
    cmd = [sys.executable, "-m", "stream_nb", "run", "--model", "nb", "--missing", "em", "--provisional-label", "0",
           "--input", str(tmp_path / "events.jsonl"), "--feedback", str(tmp_path / "labels.jsonl"),
           "--output", str(tmp_path / "out.jsonl"), "--snapshot-dir", str(tmp_path / "snap")]
    first = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    store = SnapshotStore(str(tmp_path / "snap"))
    store.open()
    try:
        snap = store.read(max(store.sequences()))
        join = snap.daemon["join"]
        assert join["receipts"]
        join["receipts"][0]["entries"][0][1] = 7  # a class the model does not have
        store.write(snap.arrays, snap.meta, snap.daemon)
    finally:
        store.close()
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert again.returncode == 1
    assert "join.receipts[0].entries[0]: expected a class index in [0, 1), got 7" in again.stderr
    assert "Traceback" not in again.stderr


def test_a_model_that_can_no_longer_unlearn_keeps_both_labels_and_says_so():
    """A store whose candidate pairs came back (``pairs_partial``) refuses every unlearning: the retraction
    and its fallback both fail, and the join keeps the true label beside the provisional one, logged as an
    error, instead of stopping the daemon."""
    engine, arrays, meta, _, _ = held_with_receipts()
    model = type(engine.model).from_state(*engine.model.state())
    for layer in (model._stats, getattr(model._stats, "fine", None)):
        if layer is not None:
            layer.selection.mark_partial()  # as after a revision of a budget's pairs (tests/test_pair_revision.py)
    held = [k.decode().strip('"') for k in map(engine.joiner.store.id_of, engine.joiner.receipts)][:5]
    fresh = engine_with(model, [], [{"id": i, "label": 1} for i in held])
    load_join_state(fresh.joiner, arrays, meta)
    before = float(model._stats.class_count.sum())
    lines = _logged_run(fresh)
    assert sum("cannot take back" in line for line in lines.lines) == 5, lines.lines
    assert fresh.joiner.counts["retractions"] == 0
    assert fresh.joiner.counts["kept_both"] == 5 and fresh.joiner.counts["kept_provisional"] == 0
    from stream_nb.ops._join_metrics import join_families
    kept = next(f for f in join_families(fresh.joiner, "nb") if f.name == "stream_nb_provisional_kept")
    assert {s.labels["kept"]: s.value for s in kept.samples} == {"provisional": 0, "both": 5}
    assert float(model._stats.class_count.sum()) == before + 5  # each true label learned, each provisional kept
