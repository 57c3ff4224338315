"""Held events follow their input partition to another member: the join's release and adoption, and the
hand-over records, against a single engine that held every partition."""

from __future__ import annotations

import random

import pytest

from join_helpers import ListSink, ListSource, assert_same_counts
from stream_nb import NaiveBayes
from stream_nb.engine import Engine, Joiner, PartitionHandoff
from stream_nb.engine.group._handoff import CHUNK_BYTES
from test_join import joined_pairs, reference, streams


class Topic:
    """A compacted topic in memory: the newest value of each key, read once each."""

    def __init__(self):
        self.records, self.read, self.flushed = [], 0, 0

    def publish(self, key, value):
        self.records.append((key, value))

    def flush(self):
        self.flushed = len(self.records)

    def catch_up(self, timeout):
        out, self.read = self.records[self.read:self.flushed], self.flushed
        return out


def partner(key):
    topic, _, n = key.rpartition("-")
    return f"labels-{n}" if topic == "in" else None


def member(events, labels, provisional=None):
    engine = Engine(NaiveBayes(), ListSource(events, "in-0"), ListSink(), ListSink(),
                    config={"poll_max_records": 50})
    config = {} if provisional is None else {"provisional_label": provisional}
    engine.joiner = Joiner(engine, ListSource(labels, "labels-0"), config)
    return engine


@pytest.mark.parametrize("provisional", [None, 0])
def test_held_events_and_early_labels_move_to_the_new_owner(provisional):
    events, labels = streams(n=1200, seed=31)
    first, rest = labels[:200], labels[200:]
    a = member(events, first, provisional)
    a.run()  # every event read, the first labels joined or waiting (early)
    held = a.joiner.status()
    assert held["pending_events"] > 500 and held["pending_labels"] > 0
    topic = Topic()
    out = PartitionHandoff(a.joiner, topic, partner)
    assert out.release(["in-0", "labels-0"], {"in-0": 1200, "labels-0": 200}, "store-a")
    assert a.joiner.status()["pending_events"] == 0 and a.joiner.status()["pending_labels"] == 0
    b = member([], rest, provisional)
    into = PartitionHandoff(b.joiner, topic, partner)
    into.adopt("in-0", 1199, "store-a", "store-b", {})  # another commit: stale, not taken
    assert b.joiner.status()["pending_events"] == 0
    into.adopt("in-0", 1200, "store-a", "store-b", {})
    assert b.joiner.status()["pending_events"] == held["pending_events"]
    assert b.joiner.status()["pending_labels"] == held["pending_labels"]
    b.run()  # the rest of the labels, at the new owner
    # the two models together: one pass over the joined pairs (a's provisional labels taken back, b's learned)
    assert_same_counts(a.model.merge(b.model), reference(NaiveBayes, joined_pairs(events, labels,
                                                                                   provisional=provisional)))
    after = b.joiner.status()
    into.adopt("in-0", 1200, "store-a", "store-b", {})  # never twice
    assert b.joiner.status() == after


def test_a_large_hand_over_goes_in_chunks_and_an_own_one_waits_for_its_feedback_position():
    rng = random.Random(0)
    events = [{"id": f"e{i}", "text": rng.randbytes(1000).hex()} for i in range(1000)]  # 2 MB held, 1 MB zipped
    a = member(events, [])
    a.run()
    topic = Topic()
    PartitionHandoff(a.joiner, topic, partner).release(["in-0"], {"in-0": 1000, "labels-0": 7}, "a")
    assert sum(1 for k, _ in topic.records if k.startswith("in-0#")) == 1_000_000 // CHUNK_BYTES
    own = PartitionHandoff(a.joiner, topic, partner)
    own.adopt("in-0", 1000, "a", "a", {"labels-0": 9})  # its own, but the labels moved on since: stale
    assert a.joiner.status()["pending_events"] == 0
    own.adopt("in-0", 1000, "a", "a", {"labels-0": 7})
    assert a.joiner.status()["pending_events"] == 1000
    assert a.joiner.store.features(a.joiner.store.find(b'"e5"')) == {"text": events[5]["text"]}


def test_a_partition_revoked_again_before_it_comes_back_keeps_its_hand_over():
    """A stopping consumer revokes its last assignment again on close: the hand-over already published for a
    partition that was not assigned here since must not be overwritten by an empty one (its events would be
    lost to the next owner); once the partition is assigned here again, it is this member's to hand over."""
    events, labels = streams(n=300, seed=5)
    a = member(events, labels[:50])
    a.run()
    held = a.joiner.status()["pending_events"]
    assert held > 0
    topic = Topic()
    out = PartitionHandoff(a.joiner, topic, partner)
    assert out.release(["in-0"], {"in-0": 300}, "store-a")
    assert not out.release(["in-0"], {"in-0": 300}, "store-a")  # revoked again on close: nothing published
    assert len(topic.records) == 1
    b = member([], [])
    PartitionHandoff(b.joiner, topic, partner).adopt("in-0", 300, "store-a", "store-b", {})
    assert b.joiner.status()["pending_events"] == held
    assert b.joiner.status()["handed_over_events_in"] == held and a.joiner.status()["handed_over_events_out"] == held
    out.assigned("in-0")  # the partition is back here: its (now empty) part is handed over again
    assert out.release(["in-0"], {"in-0": 300}, "store-a") and len(topic.records) == 2


def test_a_label_taken_over_joins_the_event_held_here_and_an_event_taken_over_its_label_held_here():
    """What another member hands over meets what this one holds: a label for an event held here, and an event
    whose label came here first, are joined at once (each learned once), a second label counted a duplicate."""
    events = [{"id": f"e{i}", "a": "pq"[i % 2]} for i in range(4)]
    a = member(events[:2], [])
    a.run()  # e0, e1 held at a
    b = member(events[2:], [{"id": "e0", "label": 1}, {"id": "e3", "label": 0}])
    b.run()  # e2, e3 held at b; e3 joined there; e0's label waits at b (its event is held at a)
    assert b.joiner.status()["pending_labels"] == 1 and b.joiner.status()["labels_joined"] == 1
    released = a.joiner.release("in-0", None)
    b.joiner.adopt("in-0", released)
    status = b.joiner.status()
    assert (status["labels_joined"], status["pending_labels"], status["pending_events"]) == (2, 0, 2)
    c = member([], [{"id": "e2", "label": 1}])
    c.run()  # e2's label waits at c
    d = member([], [])
    d.joiner.adopt("in-0", c.joiner.release("in-0", "labels-0"))  # the label first, then its event
    d.joiner.adopt("in-0", b.joiner.release("in-0", None))
    status = d.joiner.status()
    assert (status["labels_joined"], status["pending_labels"], status["pending_events"]) == (1, 0, 1)
    d.joiner.adopt("in-0", {"events": [], "labels": [["\"e2\"", 0, 0.0, "{}", "labels-0", {}, 1]]})
    assert d.joiner.status()["labels_duplicate"] == 1
    ref = reference(NaiveBayes, [({"a": "p"}, 1), ({"a": "q"}, 0), ({"a": "p"}, 1)])
    assert_same_counts(b.model.merge(d.model), ref)
