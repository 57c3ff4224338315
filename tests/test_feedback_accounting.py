"""What the daemon counts when labels come from ``--feedback``: ``learned``, ``n_learned`` and ``labeled`` as the
event contract defines them, the same in the final metrics line, ``/metrics`` and ``snapshot inspect``; and
where a bad feedback record goes: to the dead letters as the feedback record it is (never as the event it
names), counted as feedback (``labels_rejected``), not as an event."""

from __future__ import annotations

import json
import random
import re
import socket
import subprocess
import sys
import time
import urllib.request

import orjson
import pytest
from prometheus_client.parser import text_string_to_metric_families

from join_helpers import ListSink, ListSource, assert_same_counts
from stream_nb import NaiveBayes
from stream_nb.engine import Engine, Joiner

CHUNK = 500  # the daemon's poll of events (--poll-max-records) and its read of feedback (500 records)
CLOCK = 10**6  # the time of the last event: every event and label held before it is past the TTL then
TTL = 5000.0


def run_daemon(tmp_path, events_file, labels_file, *flags, stdin=None):
    """``stream-nb run`` on the files as a user runs it: (exit status, output records, dead letters, final metrics)."""
    out, dead = tmp_path / "out.jsonl", tmp_path / "dead.jsonl"
    for f in (out, dead):
        f.unlink(missing_ok=True)
    run = subprocess.run([sys.executable, "-m", "stream_nb", "run", "--model", "nb", "--input", str(events_file),
                          "--feedback", str(labels_file), "--output", str(out), "--dead-letter", str(dead), *flags],
                         capture_output=True, text=True, timeout=300)
    outputs = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    letters = [json.loads(line) for line in dead.read_text().splitlines()] if dead.exists() else []
    return run, outputs, letters, final_metrics(run.stderr)


def final_metrics(stderr: str) -> dict | None:
    """The metrics of the daemon's last log line ("input exhausted after ...; metrics {...}")."""
    found = re.findall(r"metrics (\{.*\})\s*$", stderr, flags=re.M)
    return json.loads(found[-1]) if found else None


# ---------------------------------------------------------------------------------------------- a bad early label


def test_a_label_of_another_type_read_before_its_event_is_dead_lettered_as_feedback(tmp_path):
    """The issue's case: the label of ``b`` (a number, where the model's labels are strings) is read before
    ``b`` comes. ``b`` is predicted as usual, and the dead letter is the feedback record, ``lb.jsonl`` line 1,
    as when the same label comes after its event."""
    (tmp_path / "ev.jsonl").write_text('{"id":"a","x":"u","label":"p"}\n{"id":"b","x":"v"}\n')
    (tmp_path / "lb.jsonl").write_text('{"id":"b","label":1}\n')
    run, outputs, letters, metrics = run_daemon(tmp_path, tmp_path / "ev.jsonl", tmp_path / "lb.jsonl")
    assert run.returncode == 0, run.stderr
    assert [o["id"] for o in outputs] == ["a", "b"] and outputs[1]["prediction"] == "p"
    assert len(letters) == 1, letters
    letter = letters[0]
    assert letter["reason"] == "label_type_conflict" and letter["field"] == "label"
    assert letter["source"] == {"file": str(tmp_path / "lb.jsonl"), "line": 1, "byte": 0}
    assert json.loads(letter["value"]) == {"id": "b", "label": 1}
    assert "expected a string" in letter["error"] and "got a number, 1" in letter["error"]
    # two events, both predicted, none dead-lettered; the feedback record is counted by the join
    assert (metrics["events"], metrics["predicted"], metrics["dead_letters"]) == (2, 2, 0)
    assert metrics["join"]["labels_rejected"] == 1 and metrics["join"]["pending_events"] == 1  # b waits on
    # the shutdown summary says so as feedback; no event was dead-lettered
    assert "feedback records dead-lettered in the last 0 s: rejected 1" in run.stderr
    assert "dead letters in the last" not in run.stderr


def engine_with(events_first, labels, **config):
    out, dlq = ListSink(), ListSink()
    engine = Engine(NaiveBayes(), ListSource(events_first), out, dlq)
    engine.joiner = Joiner(engine, ListSource([], "labels"), config)
    engine.run()
    engine.joiner.feedback = ListSource(labels, "labels")
    return engine, out, dlq


@pytest.mark.parametrize("columns", [True, False])
def test_a_bad_early_label_is_refused_when_read_once_the_model_has_a_label_type(columns, monkeypatch):
    """The model knows its labels' type: a label of another type is dead-lettered as it is read (not held to
    wait for its event); its event comes, is predicted and held, and a good label joins it later."""
    if not columns:  # every poll event by event
        monkeypatch.setattr(Joiner, "prepare_columns", lambda self, ids, xs, ys: None)
    engine, out, dlq = engine_with([{"id": 0, "a": "p", "label": "yes"}], [{"id": 1, "label": True}])
    engine.joiner.tick(False)
    assert [d["reason"] for d in dlq.values] == ["label_type_conflict"] and dlq.values[0]["source"] == {"line": 1}
    assert engine.joiner.status()["pending_labels"] == 0 and engine.joiner.counts["rejected"] == 1
    engine.source = ListSource([{"id": 1, "a": "q"}])
    engine.run()
    assert out.values[-1]["id"] == 1 and out.values[-1]["learned"] is False
    assert engine.joiner.status()["pending_events"] == 1
    engine.joiner.feedback = ListSource([{"id": 1, "label": "no"}], "labels")
    engine.joiner.tick(False)
    assert engine.joiner.status()["labels_joined"] == 1 and engine.metrics.learned == 2
    model = NaiveBayes()
    model.learn_one({"a": "p"}, "yes")
    model.learn_one({"a": "q"}, "no")
    assert_same_counts(engine.model, model)
    assert engine.metrics.events == 2 and engine.metrics.dead_letters == 0


@pytest.mark.parametrize("columns", [True, False])
def test_a_bad_early_label_is_refused_when_matched_before_the_model_has_a_label_type(columns, monkeypatch):
    """The model has no labels when the label is read: it waits, and is checked when its event comes, against
    the first label of that poll (the model learns it first). Refused, it goes as feedback; the event is
    predicted and held; an event whose early label fits is learned with it as usual."""
    if not columns:
        monkeypatch.setattr(Joiner, "prepare_columns", lambda self, ids, xs, ys: None)
    out, dlq = ListSink(), ListSink()
    labels = [{"id": 2, "label": 7}, {"id": 3, "label": "no"}]
    engine = Engine(NaiveBayes(), ListSource([]), out, dlq)
    engine.joiner = Joiner(engine, ListSource(labels, "labels"))
    engine.joiner.tick(False)
    assert engine.joiner.status()["pending_labels"] == 2 and not dlq.values  # no type to check them against yet
    engine.source = ListSource([{"id": 1, "a": "p", "label": "yes"}, {"id": 2, "a": "q"}, {"id": 3, "a": "q"}])
    engine.run()
    assert [o["id"] for o in out.values] == [1, 2, 3]
    assert [o["learned"] for o in out.values] == [True, False, True]
    assert [d["reason"] for d in dlq.values] == ["label_type_conflict"]
    assert orjson.loads(dlq.values[0]["value"]) == {"id": 2, "label": 7}
    assert "expected a string" in dlq.values[0]["error"]
    status = engine.joiner.status()
    assert (status["pending_events"], status["pending_labels"], status["labels_rejected"]) == (1, 0, 1)
    assert (engine.metrics.events, engine.metrics.labeled, engine.metrics.learned) == (3, 2, 2)


def test_a_refused_early_label_leaves_its_id_to_the_next_label_as_a_refused_late_one_does():
    """The first label of an id wins, of the labels the model takes: after a refused one, the next is the
    id's label, read before its event as after it."""
    labels = [{"id": 1, "label": 5}, {"id": 1, "label": "no"}, {"id": 2, "label": 5}, {"id": 2, "label": "yes"}]
    engine, out, dlq = engine_with([{"id": 0, "a": "p", "label": "yes"}, {"id": 2, "a": "q"}], labels)
    engine.joiner.tick(False)  # id 1 early, id 2 late
    assert [d["reason"] for d in dlq.values] == ["label_type_conflict"] * 2
    status = engine.joiner.status()
    assert (status["pending_labels"], status["labels_joined"], status["labels_duplicate"]) == (1, 1, 0)
    engine.source = ListSource([{"id": 1, "a": "q"}])
    engine.run()
    assert out.values[-1]["learned"] is True and engine.metrics.learned == 3
    model = NaiveBayes()
    for x, y in [({"a": "p"}, "yes"), ({"a": "q"}, "yes"), ({"a": "q"}, "no")]:
        model.learn_one(x, y)
    assert_same_counts(engine.model, model)


def test_a_feedback_id_that_is_an_object_or_an_array_is_dead_lettered_not_held():
    """No event has such an id (``bad_id``): held, the label would wait out its TTL for nothing."""
    engine, out, dlq = engine_with([], [{"id": {"order": 7}, "label": "yes"}, {"id": [7], "label": "yes"},
                                        {"id": 7, "label": "yes"}])
    engine.joiner.tick(False)
    assert [d["reason"] for d in dlq.values] == ["bad_id", "bad_id"]
    assert all(d["field"] == "id" for d in dlq.values)
    assert "id 'id' (--id-field) must be a string, a number or a boolean" in dlq.values[0]["error"]
    assert dlq.values[0]["error"].endswith("got an object") and dlq.values[1]["error"].endswith("got an array")
    status = engine.joiner.status()
    assert status["pending_labels"] == 1 and status["labels_rejected"] == 2
    assert engine.metrics.events == 0 and engine.metrics.dead_letters == 0  # feedback, not events


# ---------------------------------------------------------------------------------------------- what is counted


def stream(seed: int = 3):
    """1,000 events (``ts`` = their index, every tenth labeled, the last at :data:`CLOCK`), and 1,000 feedback
    records in two reads of :data:`CHUNK`: a label for most unlabeled events, some read before their event
    (early), some after (late: the second read, for an event of the first poll); some of a number type
    (refused), some twice (the second a duplicate), some for ids that never come, and a few bad records."""
    rng = random.Random(seed)
    events, truth = [], {}
    for i in range(999):
        y = rng.choice(["yes", "no"])
        event = {"id": f"e{i}", "ts": i, "a": y[0] if rng.random() < 0.8 else rng.choice("yn"),
                 "b": rng.choice("uvw")}
        if i % 10 == 0:
            event["label"] = y
        events.append(event)
        truth[f"e{i}"] = y
    events.append({"id": "clock", "ts": CLOCK, "a": "y", "b": "u", "label": "yes"})
    reads: list[list] = [[], []]
    for event in events:
        if "label" in event:
            continue
        kind = rng.random()
        if kind < 0.15:  # no label ever
            continue
        read = reads[rng.random() < 0.5]
        if kind < 0.19:  # a label of another type than the model's strings: its event gets no label
            read.append({"id": event["id"], "label": 1})
            continue
        read.append({"id": event["id"], "label": truth[event["id"]]})
        if kind > 0.96:  # a second, contradicting label: a duplicate
            reads[1].append({"id": event["id"], "label": "no" if truth[event["id"]] == "yes" else "yes"})
    bad = [b'{"id": {"order": 1}, "label": "yes"}', b'[1, 2]', b'{"id": "e1"}', b'not json']
    for r in (0, 1):
        rng.shuffle(reads[r])
    lines = [[orjson.dumps(r) for r in read] for read in reads]
    lines[0][10:10] = bad[:2]
    lines[1][20:20] = bad[2:]
    for r in (0, 1):  # exactly one read each: filled up with labels for ids that never come
        assert len(lines[r]) <= CHUNK
        lines[r] += [orjson.dumps({"id": f"ghost{r}.{k}", "label": "yes"}) for k in range(CHUNK - len(lines[r]))]
    return events, lines


def expected_counts(events, lines, *, provisional: bool, on_expire: bool) -> dict:
    """The contract's counts, worked out from the two files alone: which label is each event's (the first
    record of its id), in which read it comes (early: in a read before its event's poll is taken, else late)."""
    first: dict = {}
    for k, line in enumerate(lines[0] + lines[1]):
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(record, dict) and isinstance(record.get("id"), str) and "label" in record:
            first.setdefault(record["id"], (record["label"], k // CHUNK))
    own = early = late = unlabeled = 0
    for i, event in enumerate(events):
        poll = i // CHUNK  # the read of feedback before this poll is taken: the same index
        if "label" in event:
            own += 1
        elif event["id"] in first and isinstance(first[event["id"]][0], str):
            if first[event["id"]][1] <= poll:
                early += 1
            else:
                late += 1
        else:
            unlabeled += 1
    rejected = sum(1 for line in lines[0] + lines[1] if b'"label":1}' in line) + 4
    held_first_poll = sum(1 for event in events[:CHUNK] if "label" not in event and not (
        event["id"] in first and isinstance(first[event["id"]][0], str) and first[event["id"]][1] == 0))
    return {
        "labeled": own + early,
        "delayed_labeled": late,
        "learned": own + early + late + (unlabeled if provisional or on_expire else 0),
        "rejected": rejected,
        # the last output's n_learned: every event learned before it, the last poll's provisional labels not yet
        "last_n_learned": own + early + late + (held_first_poll - late if provisional else 0),
    }


POLICIES = {
    "drop": [],
    "provisional": ["--provisional-label", "no"],
    "on-expire": ["--on-expire", "label:no"],
    "provisional and on-expire": ["--provisional-label", "no", "--on-expire", "label:yes"],
}


@pytest.mark.parametrize("policy", list(POLICIES))
def test_learned_and_labeled_agree_with_the_contract_in_the_metrics_line_and_the_snapshot(tmp_path, policy):
    """Labels in the events, early and late labels from --feedback, provisional labels and their retraction,
    expiry with --on-expire label:V: the final metrics line, every output's n_learned and ``snapshot
    inspect`` (the metrics and the model's own count) agree with the counts worked out from the files."""
    events, lines = stream()
    (tmp_path / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    (tmp_path / "labels.jsonl").write_bytes(b"".join(line + b"\n" for line in lines[0] + lines[1]))
    flags = POLICIES[policy]
    run, outputs, letters, metrics = run_daemon(
        tmp_path, tmp_path / "events.jsonl", tmp_path / "labels.jsonl", "--time-field", "ts", "--label-ttl",
        str(TTL), "--poll-max-records", str(CHUNK), "--snapshot-dir", str(tmp_path / "snap"), *flags)
    assert run.returncode == 0, run.stderr
    want = expected_counts(events, lines, provisional="--provisional-label" in flags,
                           on_expire="--on-expire" in flags)
    assert len(outputs) == len(events)
    assert metrics["learned"] == want["learned"], (metrics, want)
    assert metrics["labeled"] == want["labeled"] and metrics["join"]["delayed_labeled"] == want["delayed_labeled"]
    assert metrics["events"] == metrics["predicted"] == len(events) and metrics["dead_letters"] == 0
    join = metrics["join"]
    assert join["labels_rejected"] == want["rejected"] and join["labels_unmatched"] > 0
    assert len(letters) == join["labels_rejected"] + join["labels_unmatched"]  # feedback records only
    assert all(d["source"]["file"].endswith("labels.jsonl") for d in letters)
    # n_learned: the count once each output's event was counted; never down; the last one exactly
    n = [o["n_learned"] for o in outputs]
    assert n == sorted(n) and n[-1] == want["last_n_learned"], (n[-1], want)
    assert sum(o["learned"] for o in outputs) == want["labeled"]  # learned as it arrived, with its label
    # snapshot inspect: the metrics of the newest snapshot and the model's own count of events learned
    inspect = subprocess.run([sys.executable, "-m", "stream_nb", "snapshot", "inspect", "--json",
                              str(tmp_path / "snap")], capture_output=True, text=True, timeout=120)
    assert inspect.returncode == 0, inspect.stderr
    info = json.loads(inspect.stdout)
    assert info["daemon"]["metrics"]["learned"] == want["learned"]
    assert info["model"]["events_learned"] == want["learned"]  # a model without forgetting: the same count
    text = subprocess.run([sys.executable, "-m", "stream_nb", "snapshot", "inspect", str(tmp_path / "snap")],
                          capture_output=True, text=True, timeout=120).stdout
    assert f"learned    {want['learned']:,} events" in text and f"learned {want['learned']}," in text


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape(port: int) -> dict:
    body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(body) for s in family.samples}


@pytest.mark.parametrize("policy", ["drop", "provisional and on-expire"])
def test_metrics_endpoint_counts_what_the_final_line_counts(tmp_path, policy):
    """A daemon fed on stdin, kept open: ``/metrics`` once every event is in, then the final metrics line once
    stdin closes; both say what the files say (``learned`` does not depend on which labels came early)."""
    events, lines = stream(seed=4)
    (tmp_path / "labels.jsonl").write_bytes(b"".join(line + b"\n" for line in lines[0] + lines[1]))
    port = free_port()
    flags = POLICIES[policy]
    daemon = subprocess.Popen([sys.executable, "-m", "stream_nb", "run", "--model", "nb", "--input", "-",
                               "--feedback", str(tmp_path / "labels.jsonl"), "--output", str(tmp_path / "out.jsonl"),
                               "--dead-letter", str(tmp_path / "dead.jsonl"), "--time-field", "ts", "--label-ttl",
                               str(TTL), "--metrics-port", str(port), *flags],
                              stdin=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        daemon.stdin.write("".join(json.dumps(e) + "\n" for e in events))
        daemon.stdin.flush()
        want = expected_counts(events, lines, provisional="--provisional-label" in flags,
                               on_expire="--on-expire" in flags)
        deadline, samples = time.monotonic() + 120, {}
        while time.monotonic() < deadline:
            try:
                samples = scrape(port)
            except OSError:  # not listening yet
                samples = {}
            if samples.get(("stream_nb_predictions_total", ())) == len(events) and \
                    samples.get(("stream_nb_pending_events", ())) == 0:
                break
            time.sleep(0.2)
        assert samples.get(("stream_nb_events_learned_total", ())) == want["learned"], samples
        assert samples[("stream_nb_events_consumed_total", ())] == len(events)
        assert samples[("stream_nb_labels_total", (("outcome", "rejected"),))] == want["rejected"]
        assert not [k for k in samples if k[0] == "stream_nb_dead_letters_total"]  # no event was dead-lettered
        daemon.stdin.close()
        stderr = daemon.stderr.read()
        assert daemon.wait(timeout=60) == 0, stderr
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()
    metrics = final_metrics(stderr)
    assert metrics["learned"] == want["learned"] and metrics["join"]["labels_rejected"] == want["rejected"]
    assert metrics["labeled"] + metrics["join"]["delayed_labeled"] == want["labeled"] + want["delayed_labeled"]
