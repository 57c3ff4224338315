"""The join of labels that come later: the model ends equal to a single pass over the joined pairs."""

from __future__ import annotations

import json
import random
import subprocess
import sys

import pytest

from join_helpers import ListSink, ListSource, assert_same_counts
from stream_nb import AODE, MDL, TAN, Edges, EqualFrequency, NaiveBayes, Tree, load
from stream_nb.engine import Engine, Joiner
from stream_nb.snapshots import SnapshotStore


def streams(n=1500, seed=0, labeled_every=10, missing=0.1, duplicated=0.05, unknown=20):
    """Events (some labeled in place), and their labels in shuffled order: some missing, some twice
    (the second one contradicting), some for ids that never come."""
    rng = random.Random(seed)
    events, labels = [], []
    for i in range(n):
        y = int(rng.random() < 0.4)
        x = {"a": ("p" if y else "q") if rng.random() < 0.7 else rng.choice("pqr"), "b": rng.choice("uvw"),
             "t": round(rng.gauss(y, 1.0), 4)}
        if i % labeled_every == 0:
            events.append({"id": f"e{i}", **x, "label": y})
            continue
        events.append({"id": f"e{i}", **x})
        if rng.random() >= missing:
            labels.append({"id": f"e{i}", "label": y})
        if rng.random() < duplicated:
            labels.append({"id": f"e{i}", "label": 1 - y})
    labels += [{"id": f"ghost{k}", "label": 1} for k in range(unknown)]
    rng.shuffle(labels)
    return events, labels


def joined_pairs(events, labels, *, provisional=None):
    """What a single pass over the joined pairs learns: labeled events, and each held event with the first
    label its id got (with a provisional label: that label when none came)."""
    first = {}
    for r in labels:
        first.setdefault(r["id"], r["label"])
    pairs = []
    for e in events:
        x = {k: v for k, v in e.items() if k not in ("id", "label")}
        if "label" in e:
            pairs.append((x, e["label"]))
        elif e["id"] in first:
            pairs.append((x, first[e["id"]]))
        elif provisional is not None:
            pairs.append((x, provisional))
    return pairs


def reference(make, pairs):
    model = make()
    for x, y in pairs:
        model.learn_one(x, y)
    return model


def run_engine(model, events, labels, **config):
    out, dlq = ListSink(), ListSink()
    engine = Engine(model, ListSource(events), out, dlq, config={"poll_max_records": 97})
    engine.joiner = Joiner(engine, ListSource(labels, "labels"), {"feedback_max_records": 61, **config})
    engine.run()
    return engine, out, dlq


EDGES = {"t": [-0.5, 0.5, 1.5]}  # fixed bins: edges chosen from the first values would depend on the order of learning


def aode():
    return AODE(numeric=Edges(EDGES, rest=MDL()))


@pytest.mark.parametrize("make", [NaiveBayes, aode, lambda: TAN(numeric=Edges(EDGES, rest=MDL()), search=Tree(rebuild_every=100))])
def test_the_model_equals_a_single_pass_over_the_joined_pairs(make):
    events, labels = streams()
    engine, out, dlq = run_engine(make(), events, labels)
    assert_same_counts(engine.model, reference(make, joined_pairs(events, labels)))
    status = engine.joiner.status()
    n_dup = len(labels) - len({r["id"] for r in labels})
    assert status["labels_duplicate"] == n_dup
    assert status["labels_joined"] == len({r["id"] for r in labels if not r["id"].startswith("ghost")})
    assert status["pending_labels"] == 20 and status["pending_events"] == sum(
        1 for e in events if "label" not in e and e["id"] not in {r["id"] for r in labels})
    assert len(out.values) == len(events) and not dlq.values  # the ghosts' TTL has not passed


def one_layer_aode():
    return AODE(numeric=Edges(EDGES, rest=EqualFrequency()))  # no fine layer: provisional labels go together


@pytest.mark.parametrize("make", [NaiveBayes, aode, one_layer_aode])
def test_provisional_labels_are_retracted_exactly(make):
    """Provisional labels learned and taken back together (naive Bayes, a one-layer AODE) or one at a time
    (AODE's fine layer: each needs its receipt): the model of the joined pairs."""
    events, labels = streams(seed=1)
    engine, _, _ = run_engine(make(), events, labels, provisional_label=0)
    assert engine.model.unlearns_plainly() == (make is not aode)
    assert_same_counts(engine.model, reference(make, joined_pairs(events, labels, provisional=0)))
    first = {}
    for r in labels:
        first.setdefault(r["id"], r["label"])
    held = {e["id"] for e in events if "label" not in e}
    # retractions: held events whose first label was 1 and came after the event was held (early labels
    # are learned with the event, nothing provisional about them)
    assert 0 < engine.joiner.counts["retractions"] <= sum(1 for i, y in first.items() if i in held and y == 1)


def test_provisional_label_with_em_and_missing_values_is_retracted_through_its_receipt():
    events, labels = streams(seed=2)
    rng = random.Random(3)
    for e in events:  # a missing value in a third of the events: EM adds expected counts for them
        if rng.random() < 0.33:
            e.pop("b")
    engine, _, _ = run_engine(NaiveBayes(), events, labels, provisional_label=0)
    assert engine.joiner.counts["retractions"] > 0
    # EM's fractions depend on the order of learning, so the reference is the same run where every held
    # event gets its final label at once: the provisional ones must have left no trace
    want = reference(NaiveBayes, joined_pairs(events, labels, provisional=0))
    assert engine.model._stats.counts()["class_count"] == want._stats.counts()["class_count"]


def events_at(ts, ids, label=None):
    return [{"id": i, "ts": t, "a": "pq"[k % 2], **({"label": label} if label is not None else {})}
            for k, (i, t) in enumerate(zip(ids, ts))]


class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


@pytest.mark.parametrize("policy", ["drop", "label:0"])
def test_expiry_by_event_time_and_by_the_wall_clock_when_idle(policy):
    clock = FakeClock()
    out, dlq = ListSink(), ListSink()
    model = NaiveBayes()
    engine = Engine(model, ListSource([]), out, dlq)
    joiner = Joiner(engine, ListSource([]), {"time_field": "ts", "label_ttl": 50.0, "on_expire": policy}, clock=clock)
    engine.joiner = joiner
    first = ListSource(events_at(range(10), range(10)) + [{"id": "L", "ts": 10, "a": "p", "label": 1}])
    engine.process_many(first.poll(100, 0), 0.0)
    assert "ts" not in model._stats.feature_index  # the time is not a feature
    joiner.feedback = ListSource([{"id": 3, "label": 1}, {"id": 4, "label": 1}, {"id": 4, "label": 0}])
    joiner.tick(True)
    assert joiner.counts["joined"] == 2 and joiner.counts["duplicate"] == 1
    engine.process_many(ListSource(events_at([58.5], [100])).poll(10, 0), 0.0)  # stream time 58.5: 0..8 are due
    joiner.tick(True)
    assert joiner.counts["expired"] == 7  # 0-2, 5-8 (3 and 4 were joined)
    joiner.feedback = ListSource([{"id": 1, "label": 1}])  # too late: its event expired
    joiner.tick(True)
    assert joiner.status()["pending_labels"] == 1
    clock.now += 49.0  # idle for 49 s of wall clock: event 9 (ts 9) and event 100 (ts 58.5) come due in turn
    joiner.tick(False)
    assert joiner.counts["expired"] == 8 and joiner.counts["unmatched"] == 0
    clock.now += 10.0
    joiner.tick(False)
    assert joiner.counts["expired"] == 9 and joiner.counts["unmatched"] == 1
    assert [d["reason"] for d in dlq.values] == ["unmatched_label"] and json.loads(dlq.values[0]["value"])["id"] == 1
    ref = NaiveBayes()
    ref.learn_one({"a": "p"}, 1)  # L
    ref.learn_one({"a": "q"}, 1)  # 3
    ref.learn_one({"a": "p"}, 1)  # 4
    if policy == "label:0":
        for k in [0, 1, 2, 5, 6, 7, 8, 9, 0]:  # the nine expired events (the last is event 100, "p")
            ref.learn_one({"a": "pq"[k % 2]}, 0)
    assert_same_counts(model, ref)


def test_pending_max_expires_the_oldest_first():
    out, dlq = ListSink(), ListSink()
    engine = Engine(NaiveBayes(), ListSource([]), out, dlq)
    engine.joiner = joiner = Joiner(engine, ListSource([]), {"pending_max": 5, "on_expire": "label:0"})
    engine.process_many(ListSource([{"id": 0, "a": "p", "label": 1}] + [{"id": i, "a": "q"} for i in range(1, 9)]).poll(100, 0), 0.0)
    assert joiner.status()["pending_events"] == 5 and joiner.counts["evicted"] == 3
    assert engine.model.n_learned == 1 + 3  # the three oldest learned with the default label


def test_the_daemon_joins_two_json_lines_files(tmp_path):
    events, labels = streams(n=800, seed=5)
    (tmp_path / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    (tmp_path / "labels.jsonl").write_text("".join(json.dumps(r) + "\n" for r in labels))
    run = subprocess.run([sys.executable, "-m", "stream_nb", "run", "--model", "nb",
                          "--input", str(tmp_path / "events.jsonl"), "--feedback", str(tmp_path / "labels.jsonl"),
                          "--output", str(tmp_path / "out.jsonl"), "--snapshot-dir", str(tmp_path / "snap")],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    store = SnapshotStore(str(tmp_path / "snap"))
    restored = load(store.path(max(store.sequences())))
    assert_same_counts(restored, reference(NaiveBayes, joined_pairs(events, labels)))

    # `snapshot inspect DIR`: the directory's newest valid snapshot, and what its join held
    status, out, err = inspect_snapshot(tmp_path / "snap")
    assert status == 0 and err == "", err
    info = json.loads(out)
    assert info["path"] == store.path(max(store.sequences()))
    got = {e["id"] for e in events if "label" not in e} & {r["id"] for r in labels}
    waiting = sum(1 for e in events if "label" not in e and e["id"] not in got)
    ghosts = {r["id"] for r in labels if r["id"].startswith("ghost")}
    assert info["daemon"]["join"]["pending_events"] == waiting  # none expired: the TTL is an hour
    assert info["daemon"]["join"]["counts"]["joined"] == len(got)
    assert info["daemon"]["join"]["early_labels"] == len(ghosts)  # labels whose event never came, still waiting
    assert info["daemon"]["join"]["feedback_positions"]
    newer = store.path(max(store.sequences()) + 1)
    with open(newer, "wb") as f:  # a damaged newer file: named on stderr, the older one described
        f.write(b"not a snapshot")
    status, out, err = inspect_snapshot(tmp_path / "snap")
    assert status == 0 and json.loads(out)["path"] == info["path"] and newer in err
    (tmp_path / "empty").mkdir()
    status, out, err = inspect_snapshot(tmp_path / "empty")
    assert status == 2 and out == "" and "no snapshot in this directory" in err


def inspect_snapshot(path) -> tuple[int, str, str]:
    """``stream-nb snapshot inspect --json PATH`` in-process: (exit status, stdout, stderr)."""
    import contextlib
    import io

    from stream_nb import cli
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = cli.main(["snapshot", "inspect", "--json", str(path)])
    return status, out.getvalue(), err.getvalue()


def test_metrics_of_the_join():
    from prometheus_client import CollectorRegistry, generate_latest
    from prometheus_client.parser import text_string_to_metric_families

    from stream_nb.ops._join_metrics import join_families

    events, labels = streams(n=400, seed=8)
    engine, _, _ = run_engine(NaiveBayes(), events, labels, provisional_label=0)

    class Collector:
        def collect(self):
            return join_families(engine.joiner, "nb")

    registry = CollectorRegistry()
    registry.register(Collector())
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for f in text_string_to_metric_families(generate_latest(registry).decode()) for s in f.samples}
    c = engine.joiner.counts
    assert samples[("stream_nb_labels_total", (("outcome", "joined"),))] == c["joined"] > 0
    assert samples[("stream_nb_labels_total", (("outcome", "duplicate"),))] == c["duplicate"] > 0
    assert samples[("stream_nb_provisional_retractions_total", ())] == c["retractions"] > 0
    assert samples[("stream_nb_pending_events", ())] == engine.joiner.status()["pending_events"] > 0
    assert samples[("stream_nb_label_delay_seconds_count", ())] == c["joined"]
    assert samples[("stream_nb_delayed_accuracy", (("model", "nb"),))] == c["delayed_correct"] / c["delayed_labeled"]


@pytest.mark.parametrize("flags, message", [
    (["--provisional-label", "0"], "--provisional-label needs --feedback"),
    (["--feedback", "LABELS", "--on-expire", "later"], "--on-expire: expected drop or label:VALUE, got 'later'"),
    (["--feedback", "LABELS", "--label-ttl", "0"], "--label-ttl: expected a positive number of seconds, got 0"),
    (["--feedback", "LABELS", "--learn-unlabeled"], "learned again when its label comes"),
])
def test_join_settings_are_checked_before_any_work(tmp_path, flags, message):
    (tmp_path / "e.jsonl").write_text('{"id": 1, "a": "x"}\n')
    (tmp_path / "l.jsonl").write_text('{"id": 1, "label": 1}\n')
    flags = [str(tmp_path / "l.jsonl") if f == "LABELS" else f for f in flags]
    run = subprocess.run([sys.executable, "-m", "stream_nb", "run", "--input", str(tmp_path / "e.jsonl"),
                          "--output", str(tmp_path / "o.jsonl"), *flags], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and message in run.stderr and "Traceback" not in run.stderr, run.stderr


class _TransactedSource(ListSource):
    """A source an exactly-once checkpointer takes: committed offsets read back, repositioned on a rewind."""

    def committed(self, partitions=None):
        return {k: None for k in partitions or ()}

    def reposition(self):
        self.repositioned = True


class _FailingOnce:
    """A transaction whose second commit fails (the broker refused it)."""

    def __init__(self):
        self.commits = 0

    def commit(self, positions, metadata=""):
        self.commits += 1
        if self.commits == 2:
            raise RuntimeError("transaction refused")

    def abort(self):
        pass


def test_an_aborted_transaction_returns_the_join_to_its_snapshot(tmp_path):
    """The rewind after an aborted transaction restores the held events and early labels of the snapshot the
    model returns to: labels joined in the aborted transaction wait again (else they would be lost)."""
    from stream_nb.engine import ExactlyOnceCheckpointer

    events, labels = streams(n=300, seed=4)
    store = SnapshotStore(str(tmp_path / "snap"))
    store.open()
    try:
        checkpointer = ExactlyOnceCheckpointer(store, _FailingOnce())
        engine = Engine(NaiveBayes(), _TransactedSource(events[:150]), ListSink(), ListSink(),
                        config={"poll_max_records": 150}, checkpointer=checkpointer)
        checkpointer.recover()
        engine.joiner = Joiner(engine, ListSource([], "labels"))
        engine.run()  # the first transaction: 150 events, most of them held
        held = engine.joiner.status()
        assert held["pending_events"] > 100 and held["labels_joined"] == 0
        engine.joiner.feedback = ListSource(labels, "labels")
        engine.source = _TransactedSource(events[150:], "in2")
        engine.run()  # the second transaction aborts: model and join go back to the first
        assert checkpointer.aborts == 1 and engine.source.repositioned
        assert engine.joiner.status() == held
        assert engine.model.n_learned == store.read(store.sequences()[-1]).model().n_learned
    finally:
        store.close()


def test_a_label_of_another_type_is_dead_lettered_and_the_event_waits_on():
    """Joined pairs are learned together at the end of each read: a label the model would refuse (another
    JSON type than its labels', or than the first one of the read on a model that has none yet) is
    dead-lettered when it is read, and its event waits for a good one."""
    events = [{"id": i, "a": "pq"[i % 2]} for i in range(6)]
    labels = [{"id": 0, "label": 1}, {"id": 1, "label": "yes"}, {"id": 2, "label": 0}, {"id": 1, "label": 0}]
    engine, out, dlq = run_engine(NaiveBayes(), events, [])
    engine.joiner.feedback = ListSource(labels, "labels")
    engine.joiner.tick(False)
    assert [d["reason"] for d in dlq.values] == ["label_type_conflict"]
    assert "expected a number" in dlq.values[0]["error"] and dlq.values[0]["field"] == "label"
    assert engine.model.n_learned == 3 and engine.joiner.status()["labels_joined"] == 3
    assert_same_counts(engine.model, reference(NaiveBayes, [({"a": "p"}, 1), ({"a": "p"}, 0), ({"a": "q"}, 0)]))


def timed(events, labels, seed):
    """The stream with event times (field ``ts``): rising with jumps back, some absent, a few refused (a
    string, a boolean); a label in ten timed about when its event is, the others untimed."""
    rng = random.Random(seed)
    events = [dict(e) for e in events]
    at = {}
    refused = {150: "soon", 151: True, 600: "12"}  # two in one poll, one in another
    for i, e in enumerate(events):
        kind = rng.random()
        if i in refused:
            e["ts"] = refused[i]
        elif kind >= 0.1:  # else no time: the stream's
            e["ts"] = float(i) - (30.0 if kind > 0.95 else 0.0) + (0 if kind < 0.5 else 0.5)
        at[e["id"]] = float(i)
    # a label in ten timed (after its event or a little before: mostly no later than the events read with
    # it), the others taking the stream's time: the events' times move the clock
    labels = [{**r, "ts": at.get(r["id"], 0.0) + rng.uniform(-5.0, 5.0)} if rng.random() < 0.1 else r
              for r in labels]
    return events, labels


@pytest.mark.parametrize("make", [NaiveBayes, lambda: TAN(numeric=Edges(EDGES, rest=MDL()), search=Tree(rebuild_every=100))])
@pytest.mark.parametrize("provisional", [None, 0])
@pytest.mark.parametrize("time_field", [None, "ts"])
def test_a_poll_taken_as_columns_joins_as_events_one_by_one(make, provisional, time_field, monkeypatch):
    """The whole-poll path (prepare_columns, hold_sent) against the event-by-event one (prepare, hold):
    the same outputs, dead letters, held events, counters and model, with early labels, duplicates,
    provisional labels and a few events the decoder rejects; and in event time (``time_field``), with times
    absent (the stream's), going back, and refused (a poll holding one goes event by event)."""
    events, labels = streams(n=900, seed=13)
    events = events[:300] + [{"id": "bad", "a": ["not", "a", "value"]}] + events[300:]
    config = {} if provisional is None else {"provisional_label": provisional}
    if time_field is not None:
        events, labels = timed(events, labels, seed=13)
        config.update(time_field=time_field, label_ttl=300.0, on_expire="label:0")  # expiry learns: when counts
    runs = []
    for columns in (True, False):
        if not columns:  # every poll event by event
            monkeypatch.setattr(Joiner, "prepare_columns", lambda self, ids, xs, ys: None)
        engine, out, dlq = run_engine(make(), events, labels, **config)
        runs.append((engine, out.values, dlq.values))
    (a, out_a, dlq_a), (b, out_b, dlq_b) = runs
    assert out_a == out_b and dlq_a == dlq_b and len(dlq_a) >= 1
    # in wall-clock time (no time_field) the delays, and so their buckets, depend on how fast the run went
    clock = {"label_delay_sum"} | (set() if time_field else {"label_delay_buckets"})
    status = lambda e: {k: v for k, v in e.joiner.status().items() if k not in clock}
    assert status(a) == status(b) and a.joiner.status()["labels_joined"] > (100 if time_field else 300)
    if time_field is not None:  # expired in event time; the refused times dead-lettered by either path
        assert a.joiner.status()["labels_expired"] > 0 and [d["reason"] for d in dlq_a].count("bad_time") == 3
    assert a.joiner.status()["pending_events"] > 0
    held = lambda e: sorted((e.joiner.store.id_of(r), e.joiner.store.predicted(r), tuple(sorted(
        e.joiner.store.features(r).items()))) for r in e.joiner.store.due(float("inf")).tolist())
    assert held(a) == held(b)
    assert_same_counts(a.model, b.model)


@pytest.mark.parametrize("provisional", [None, 0])
def test_a_read_of_labels_in_event_time_is_taken_whole_as_record_by_record(provisional, monkeypatch):
    """In event time a read of plain label records is parsed at once and its times checked together (each
    record's own, else the stream's as it stands after the records before it); against every read taken
    record by record: the same outputs, dead letters (the labels whose time is refused: a string, a null,
    a boolean), counters, stream time and model."""
    from stream_nb.engine.join import _join_reads

    events, labels = timed(*streams(n=900, seed=19), seed=19)
    labels = list(labels)
    for i, bad in ((40, "late"), (41, None), (300, True)):  # two in one read, one in another
        labels[i] = {**labels[i], "ts": bad}
    config = {"time_field": "ts", "label_ttl": 300.0, "on_expire": "label:0"}
    if provisional is not None:
        config["provisional_label"] = provisional
    runs = []
    for whole in (True, False):
        if not whole:
            monkeypatch.setattr(_join_reads, "read_whole", lambda *args: None)
        engine, out, dlq = run_engine(NaiveBayes(), events, labels, **config)
        runs.append((engine, out.values, dlq.values))
    (a, out_a, dlq_a), (b, out_b, dlq_b) = runs
    assert out_a == out_b and dlq_a == dlq_b and [d["reason"] for d in dlq_a].count("bad_time") == 3 + 3
    status = lambda e: {k: v for k, v in e.joiner.status().items() if k != "label_delay_sum"}
    assert status(a) == status(b) and a.joiner.status()["labels_joined"] > 100
    assert a.joiner.stream_time == b.joiner.stream_time
    assert_same_counts(a.model, b.model)


@pytest.mark.parametrize("pending_max", [10**6, 300])
def test_an_expired_event_leaves_no_receipt_behind(pending_max):
    """``--provisional-label 0 --on-expire label:0`` (no click in the window: a negative) with a model that
    keeps receipts (TAN's two layers): an expired or evicted event keeps the provisional label it was
    learned with, and its receipt goes with it. Every receipt left is a held event's; once every event has
    expired none is (a receipt left behind grew without bound, went into every snapshot, and could be taken
    for the receipt of the next event held in its row)."""
    from stream_nb.engine.join._join_state import join_state
    from stream_nb.engine.join._pending import PENDING

    events, labels = timed(*streams(n=900, seed=23), seed=23)
    engine, _, _ = run_engine(TAN(search=Tree(rebuild_every=100)), events, labels, time_field="ts", label_ttl=60.0,
                              on_expire="label:0", provisional_label=0, pending_max=pending_max)
    joiner, store = engine.joiner, engine.joiner.store
    assert joiner.status()["labels_expired"] > 300 and (joiner.receipts or pending_max < 10**6)
    assert all(store.state[row] == PENDING and store.provisional[row] for row in joiner.receipts)
    joiner.stream_time = 10.0**9  # every event's time has come
    joiner.expire()
    assert joiner.status()["pending_events"] == 0 and joiner.receipts == {}
    arrays, meta = join_state(joiner)  # (a receipt left on a freed row had no held event to be written with)
    assert meta["receipts"] == [] and meta["receipt_events"] == []


@pytest.mark.parametrize("pending_max", [10**6, 150])
def test_events_expired_with_the_default_label_are_learned_together_as_one_by_one(pending_max, monkeypatch):
    """``--on-expire label:0`` without provisional labels learns a batch of expired (or evicted) events in one
    ``learn_events``; against the one-at-a-time expiry it replaced (``_expire`` per row): the same outputs, dead
    letters, counters and model, TAN's tree (rebuilt every 100 learned events) included."""
    from stream_nb.engine.join._pending import LABEL, PENDING

    def one_by_one(self, rows, evicted=False):
        for row in rows:
            if self.store.state[row] in (PENDING, LABEL):
                self.counts["evicted"] += evicted
                (self._expire if self.store.state[row] == PENDING else self._unmatched)(row)
            self.store.remove(row)

    events, labels = timed(*streams(n=900, seed=17), seed=17)
    config = {"time_field": "ts", "label_ttl": 120.0, "on_expire": "label:0", "pending_max": pending_max}
    runs = []
    for together in (True, False):
        if not together:
            monkeypatch.setattr(Joiner, "_expire_rows", one_by_one)
        engine, out, dlq = run_engine(TAN(numeric=Edges(EDGES, rest=MDL()), search=Tree(rebuild_every=100)), events, labels, **config)
        runs.append((engine, out.values, dlq.values))
    (a, out_a, dlq_a), (b, out_b, dlq_b) = runs
    assert out_a == out_b and dlq_a == dlq_b
    status = lambda e: {k: v for k, v in e.joiner.status().items() if k != "label_delay_sum"}
    assert status(a) == status(b) and a.joiner.status()["labels_expired"] > 200
    assert (a.joiner.status()["labels_evicted"] > 0) == (pending_max < 10**6)
    assert_same_counts(a.model, b.model)
    assert a.model.n_rebuilds == b.model.n_rebuilds > 5


def test_a_read_of_feedback_taken_whole_equals_one_taken_record_by_record():
    from stream_nb.engine import Record
    from stream_nb.engine.join._label_reads import read_labels
    objs = [{"id": 3, "label": "p"}, {"id": "3", "label": 1}, {"id": -7, "label": True, "extra": [1]},
            {"label": "q", "id": "é"}, {"id": 3, "label": "p"}]
    records = [Record(json.dumps(o).encode(), None, "fb", i, i + 1) for i, o in enumerate(objs)]
    whole = read_labels(records, "id", "label", None)
    bad = Record(b'{"id": 9}', None, "fb", 5, 6)  # no label: the read goes record by record
    each = read_labels(records + [bad], "id", "label", None)
    assert whole == each[:-1] and [p[1:3] for p in whole] == [
        (b"3", "p"), (b'"3"', 1), (b"-7", True), ('"é"'.encode(), "q"), (b"3", "p")]
    assert each[-1][1].reason == "missing_label"


@pytest.mark.parametrize("provisional, pending_max", [(None, 10**6), (0, 10**6), (None, 400), (0, 400)])
def test_labels_counted_together_count_as_labels_joined_one_at_a_time(provisional, pending_max, monkeypatch):
    """A read's plain joins are counted at once (delays, histogram, delayed accuracy); the same stream
    joined label by label (:meth:`Joiner._join`) gives the same counters to the last bit and the same model,
    also with a ``pending_max`` small enough that reads evict while they join."""
    events, labels = streams(n=900, seed=21)
    runs = []
    for together in (True, False):
        if not together:
            monkeypatch.setattr(Joiner, "_labels_fit", lambda self, ys: False)
        ticks = iter(range(10**6))
        out, dlq = ListSink(), ListSink()
        engine = Engine(NaiveBayes(), ListSource(events), out, dlq, config={"poll_max_records": 97})
        config = {"feedback_max_records": 61, "label_ttl": 10**7, "pending_max": pending_max}
        if provisional is not None:
            config["provisional_label"] = provisional
        engine.joiner = Joiner(engine, ListSource(labels, "labels"), config,
                               clock=lambda: 1000.0 + 3.7 * next(ticks))  # delays from 0 to hours
        engine.run()
        runs.append((engine, out.values, dlq.values))
    (a, out_a, dlq_a), (b, out_b, dlq_b) = runs
    assert a.joiner.status() == b.joiner.status() and dlq_a == dlq_b
    if provisional is None:
        assert out_a == out_b
    else:  # provisional labels taken back together: the Gaussian moments within rounding of one at a time
        assert outputs_within_rounding(out_a, out_b)
    buckets = a.joiner.status()["label_delay_buckets"]
    assert sum(v > 0 for v in buckets.values()) >= 3 and a.joiner.status()["labels_joined"] > 300
    assert_same_counts(a.model, b.model)
    assert (a.joiner.status()["labels_evicted"] > 0) == (pending_max < len(events))


def outputs_within_rounding(got: list, want: list) -> bool:
    """The same outputs, probabilities within floating-point rounding."""
    a, b = [dict(v) for v in got], [dict(v) for v in want]
    for x, y in zip(a, b):
        px, py = x.pop("proba"), y.pop("proba")
        assert x == y and px.keys() == py.keys() and all(px[k] == pytest.approx(py[k], rel=1e-9) for k in py), (x, y)
    return len(a) == len(b)


def test_a_label_given_as_another_number_type_scores_its_prediction_as_the_same_label(monkeypatch):
    """Labels sent as integral floats (``1.0``) for a model that learned ints: ``1.0`` is the label ``1``, so
    the delayed accuracy (a read counted at once by label codes, or label by label) is that of the same labels
    sent as ints."""
    events, labels = streams(n=900, seed=4)
    as_floats = [{**r, "label": float(r["label"])} for r in labels]
    runs = {}
    for name, feedback, together in (("ints", labels, True), ("floats", as_floats, True),
                                     ("floats one by one", as_floats, False)):
        if not together:
            monkeypatch.setattr(Joiner, "_labels_fit", lambda self, ys: False)
        engine, _, dlq = run_engine(NaiveBayes(), events, feedback, label_ttl=10**7)
        assert not dlq.values
        runs[name] = engine.joiner.status()
    counted = [(s["labels_joined"], s["delayed_accuracy"]) for s in runs.values()]
    assert counted[0] == counted[1] == counted[2] and counted[0][0] > 500 and 0.5 < counted[0][1] < 1.0


def test_a_label_for_an_id_too_long_to_hold_is_unmatched_at_once_and_its_read_goes_on():
    """An id longer than the store holds (its JSON text over 65,535 bytes) can never be joined: its event is
    not held, so its label is dead-lettered as ``unmatched_label`` as it comes; the other labels of its read
    (joins, early labels, in a read taken whole and in one taken label by label) go on as usual."""
    from stream_nb.engine.join._pending import MAX_ID_BYTES
    long_id = "x" * MAX_ID_BYTES
    for labels in ([{"id": "e1", "label": 1}, {"id": long_id, "label": 0}, {"id": "later", "label": 0}],
                   [{"id": "e1", "label": 1}, {"id": long_id, "label": 0}, {"id": "later", "label": 0}, b"[1]"]):
        engine, out, dlq = run_engine(NaiveBayes(), [{"id": "e0", "a": "p", "label": 0}, {"id": "e1", "a": "q"}],
                                      [], label_ttl=10**6)
        engine.joiner.feedback = ListSource(labels, "labels")
        engine.joiner.tick(False)
        status = engine.joiner.status()
        assert (status["labels_joined"], status["labels_unmatched"], status["pending_labels"]) == (1, 1, 1)
        reasons = sorted(d["reason"] for d in dlq.values)
        assert reasons == (["not_an_object"] if len(labels) == 4 else []) + ["unmatched_label"]
        assert engine.model.n_learned == 2


def test_early_labels_share_the_bound_and_make_room_after_held_events():
    """Labels that come before their event are rows of the same store as held events, under the one
    ``pending_max``: making room frees joined ids first, then the oldest held events, then the oldest early
    labels (dead-lettered as ``unmatched_label``); an early label left in place still joins its event."""
    ticks = iter(range(10**6))
    out, dlq = ListSink(), ListSink()
    engine = Engine(NaiveBayes(), ListSource([]), out, dlq)
    feedback = ListSource([], "labels")
    joiner = engine.joiner = Joiner(engine, feedback, {"pending_max": 6, "label_ttl": 10**6},
                                    clock=lambda: float(next(ticks)))
    engine.process_many(ListSource([{"id": f"e{i}", "a": "q"} for i in range(4)]).poll(100, 0), 0.0)
    feedback.records = ListSource([{"id": f"L{i}", "label": 1} for i in range(3)], "labels").records
    joiner.tick(True)  # three labels whose events have not come: e0 makes room
    status = joiner.status()
    assert (status["pending_events"], status["pending_labels"], status["labels_evicted"]) == (3, 3, 1)
    assert len(joiner.store) == 6 and not dlq.values
    feedback.records = ListSource([{"id": f"M{i}", "label": 0} for i in range(4)], "labels").records
    joiner.tick(True)  # four more labels: e1, e2, e3 make room, then the oldest label, L0
    status = joiner.status()
    assert (status["pending_events"], status["pending_labels"], status["labels_evicted"]) == (0, 6, 5)
    assert [json.loads(d["value"])["id"] for d in dlq.values] == ["L0"]
    assert {d["reason"] for d in dlq.values} == {"unmatched_label"} and status["labels_unmatched"] == 1
    engine.process_many(ListSource([{"id": "L2", "a": "p"}, {"id": "L2", "a": "p"}]).poll(100, 0), 0.0)
    status = joiner.status()  # L2 joined at once (the second event of that id: a duplicate, not held)
    assert (status["labels_joined"], status["labels_duplicate"], status["pending_labels"]) == (1, 1, 5)
    assert engine.model.n_learned == 1 and [o["learned"] for o in out.values[-2:]] == [True, False]


def test_a_snapshot_keeps_the_early_labels_under_the_bound():
    """Early labels go into a snapshot (under ``"waiting"``, as before they were rows of the store) and come
    back as rows; one with its event held too (an older version could keep both) is joined at load."""
    from stream_nb.engine.join._join_state import join_state, load_join_state
    events, labels = streams(n=400, seed=8)
    engine, _, _ = run_engine(NaiveBayes(), events, labels[: len(labels) // 2])
    arrays, meta = join_state(engine.joiner)
    early = engine.joiner.status()["pending_labels"]
    assert early > 0 and len(meta["waiting"]) == early
    fresh = Engine(NaiveBayes(), ListSource([]), ListSink(), ListSink())
    fresh.joiner = Joiner(fresh, ListSource([], "labels"), {})
    load_join_state(fresh.joiner, arrays, meta)
    assert fresh.joiner.status() == engine.joiner.status() and fresh.joiner.progress() == engine.joiner.progress()
    held = next(r for r in range(len(arrays["join.state"])) if arrays["join.state"][r] == 1)  # a held event
    ends = arrays["join.id_len"].cumsum().tolist()
    key = arrays["join.ids"][ends[held] - arrays["join.id_len"][held] : ends[held]].tobytes().decode()
    meta = {**meta, "waiting": meta["waiting"] + [[key, 1, 0.0, '{"id": 1}', "labels", {"line": 1}, 1]]}
    again = Engine(NaiveBayes(), ListSource([]), ListSink(), ListSink())
    again.joiner = Joiner(again, ListSource([], "labels"), {})
    load_join_state(again.joiner, arrays, meta)
    status = again.joiner.status()
    assert status["labels_joined"] == engine.joiner.status()["labels_joined"] + 1
    assert status["pending_events"] == engine.joiner.status()["pending_events"] - 1 and again.model.n_learned == 1
    with pytest.raises(ValueError, match="early labels, more than --pending-max"):
        small = Engine(NaiveBayes(), ListSource([]), ListSink(), ListSink())
        small.joiner = Joiner(small, ListSource([], "labels"), {"pending_max": len(arrays["join.state"])})
        load_join_state(small.joiner, arrays, meta)
