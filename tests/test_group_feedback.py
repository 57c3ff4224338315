"""Delayed labels in a group (``--feedback-topic`` with ``--model-topic``) without a broker.

Members run the real engine, join and group checkpointer over an in-memory
consumer group: input partitions ``in-p`` and their feedback partitions
``lab-p``, a model topic as one ordered log. A member that dies (kill -9)
loses everything it did after a given poll (its records never reach the log,
its commits never land); a rebalance revokes a partition through the
checkpointer's handler as Kafka does. The model merged from the newest state
of each partition on the log must equal one process that learned exactly the
joined pairs (and, with a provisional label, every event still waiting with
it), whatever the members lost.
"""

from __future__ import annotations

import numpy as np
import orjson
import pytest

from join_helpers import ListSink, assert_same_counts
from test_join import joined_pairs, reference, streams
from connectors.kafka._feedback_topic import FeedbackTap
import stream_nb
from stream_nb import NaiveBayes
from stream_nb.engine import Engine, GroupCheckpointer, Joiner, Record, StateLog, merge_states, state_order
from stream_nb.snapshots import decode_state
from stream_nb.tools.model_export import export_model

N = 3  # partitions of each topic


class Broker:
    """The topics: ``in-p`` and ``lab-p`` logs of JSON values, the committed offsets, the model topic's log."""

    def __init__(self, events: list, labels: list):
        self.logs = {f"{t}-{p}": [] for t in ("in", "lab") for p in range(N)}
        for topic, records in (("in", events), ("lab", labels)):
            for r in records:
                self.logs[f"{topic}-{int(''.join(c for c in r['id'] if c.isdigit())) % N}"].append(r)
        self.committed: dict = {}
        self.model: list = []

    def export(self) -> NaiveBayes:
        """What ``stream-nb model export`` writes: the newest state of each partition, merged."""
        reader, newest = StateLog(), {}
        for key, value in self.model:
            for partition, payload, info in reader.feed(key, value):
                if partition not in newest or state_order(info) > state_order(newest[partition][1]):
                    newest[partition] = (payload, info)
        return merge_states(NaiveBayes(), [(p, decode_state(payload)[0]) for p, (payload, _) in newest.items()])


class Channel:
    """A member's handle on the model topic; a dead member's records are lost."""

    topic = "model"
    max_record_bytes = 900_000

    def __init__(self, broker: Broker):
        self.broker, self.read, self.dead = broker, 0, False

    def publish(self, key, value):
        if not self.dead:
            self.broker.model.append((key, value))

    def flush(self):
        pass

    def poll(self, timeout):
        out, self.read = self.broker.model[self.read:], len(self.broker.model)
        return out

    catch_up = poll

    def end_offsets(self, partitions):
        return {p: len(self.broker.logs[p]) for p in partitions}

    def close(self):
        pass


class Source:
    """A member's consumer of ``in-*`` and ``lab-*``: assigned and revoked by the test, polled by the engine
    (``rate`` records of each partition per poll); it stops the engine after ``polls`` polls, and dies (its
    records and commits lost from then on) after ``dies_after``."""

    exhausted = False

    def __init__(self, broker: Broker, channel: Channel, rate: int = 7):
        self.broker, self.channel, self.rate = broker, channel, rate
        self.feedback = FeedbackTap("lab", "in")
        self.assignment: frozenset = frozenset()
        self.position: dict = {}
        self.to_settle: set = set()
        self.callbacks: list = []
        self.engine = self.policy = self.handler = None
        self.polls, self.dies_after = 0, None

    def set_resume_policy(self, policy):
        self.policy = policy

    def set_revocation_handler(self, handler):
        self.handler = handler

    def add_rebalance_callback(self, callback):
        self.callbacks.append(callback)

    def assign(self, partitions: list) -> None:
        self.assignment |= set(partitions)
        self.to_settle |= set(partitions)

    def revoke(self, partitions: list) -> None:
        result = self.handler(partitions)
        if result:
            positions, _, done = result
            self.commit(positions)
            done(True)
        self.assignment -= set(partitions)

    def poll(self, max_records, timeout):
        for p in sorted(self.to_settle):
            target = self.policy(p, self.broker.committed.get(p), None)
            self.position[p] = target if target is not None else self.broker.committed.get(p, 0)
        self.to_settle = set()
        out, aside = [], []
        for p in sorted(self.assignment):
            at = self.position[p]
            for offset, value in enumerate(self.broker.logs[p][at:at + self.rate], start=at):
                (aside if p.startswith("lab") else out).append(Record(orjson.dumps(value), None, p, offset, offset + 1))
            self.position[p] = min(len(self.broker.logs[p]), at + self.rate)
        self.feedback.put(aside)
        self.polls += 1
        if self.dies_after is not None and self.polls >= self.dies_after:
            self.channel.dead = True
        if self.polls >= self.budget or (not out and not aside and self.budget == np.inf):
            self.engine.stop()
        return out

    def commit(self, positions, metadata=None):
        if not self.channel.dead:
            self.broker.committed.update(positions)

    def seek(self, positions):
        pass

    def close(self):
        pass


def member(broker: Broker, provisional=None) -> Source:
    channel = Channel(broker)
    source = Source(broker, channel)
    group = GroupCheckpointer(channel, NaiveBayes(), sync_interval=60.0, sync_every=25)
    engine = Engine(NaiveBayes(), source, ListSink(), ListSink(), checkpointer=group)
    group.recover()
    engine.joiner = Joiner(engine, source.feedback, {"provisional_label": provisional})
    engine.joiner.sharing = group
    source.engine = engine
    return source


def run(source: Source, polls: float = np.inf, dies_after: int | None = None) -> None:
    """Let the member's engine run ``polls`` polls (to the ends of its partitions by default), as one process."""
    source.budget, source.polls, source.dies_after = polls, 0, dies_after
    source.engine._stop_requested = False  # the same process going on after the last run's stop
    source.engine.run()


def pairs(p: int) -> list[str]:
    return [f"in-{p}", f"lab-{p}"]


@pytest.mark.parametrize("provisional", [None, 0], ids=["plain", "provisional-label"])
def test_kills_a_member_lost_for_good_and_rebalances_learn_each_joined_pair_once(provisional):
    events, labels = streams(n=900, seed=38)
    broker = Broker(events, labels)
    a, b = member(broker, provisional), member(broker, provisional)
    a.assign(pairs(0) + pairs(1))
    b.assign(pairs(2))
    run(a, polls=12, dies_after=8)  # a dies: its last polls (and checkpoints) never reach the group
    run(b, polls=10)
    b.revoke(pairs(2))  # a rebalance: b gives partition 2 up, publishing what it holds for it
    c = member(broker, provisional)  # takes over a's partitions and b's, from their states alone
    c.assign(pairs(0) + pairs(1) + pairs(2))
    run(c, polls=8, dies_after=5)  # and dies too, for good: what it did after its fifth poll is lost
    d = member(broker, provisional)
    d.assign(pairs(0) + pairs(2))
    b.assign(pairs(1))
    run(d, polls=6)
    run(b)
    run(d)
    ids = [r["id"] for r in labels]
    status = d.engine.joiner.status()
    assert status["pending_events"] + b.engine.joiner.status()["pending_events"] == sum(
        1 for e in events if "label" not in e and e["id"] not in ids)  # every event waiting is held by its owner
    want = reference(NaiveBayes, joined_pairs(events, labels, provisional=provisional))
    assert_same_counts(broker.export(), want)
    for source in (b, d):  # each member's view, rebuilt from the states: the group's model
        source.engine.checkpointer.sync()  # what the others published
        source.engine.checkpointer.build_view()
        assert_same_counts(source.engine.model, want)


def test_a_state_that_moved_only_its_feedback_offset_supersedes_the_one_before(tmp_path):
    events, labels = streams(n=300, seed=39, labeled_every=1000)  # no event labeled in place
    broker = Broker(events, [])
    a = member(broker)
    a.assign(pairs(0) + pairs(1) + pairs(2))
    run(a)  # every event read and held; only those labeled in place learned
    assert broker.export().n_learned == sum("label" in e for e in events)
    mark = len(broker.model)
    for r in labels:  # then only labels come
        broker.logs[f"lab-{int(''.join(c for c in r['id'] if c.isdigit())) % N}"].append(r)
    run(a)
    want = reference(NaiveBayes, joined_pairs(events, labels))
    assert want.n_learned > 0
    assert_same_counts(broker.export(), want)
    export_model(Channel(broker), str(tmp_path / "export.snb"))  # stream-nb model export
    assert_same_counts(stream_nb.load(tmp_path / "export.snb"), want)
    assert_same_counts(member(broker).engine.model, want)  # a new member's view
    # the states it published: each newer than the one before; those of the labels alone at the same input
    # offsets as the last before them, with a feedback offset further on
    reader, orders = StateLog(), {}
    for i, (key, value) in enumerate(broker.model):
        for partition, _, info in reader.feed(key, value):
            orders.setdefault(partition, []).append((i >= mark, state_order(info)))
    for partition, order in orders.items():
        states = [o for _, o in order]
        assert states == sorted(states) and len(set(states)) == len(states), partition
        before, after = [o for late, o in order if not late], [o for late, o in order if late]
        assert after and all(o[0] == before[-1][0] and o[1] > before[-1][1] for o in after), partition


def test_the_join_part_of_a_state_is_a_copy_and_adopting_it_replaces_what_was_held():
    events, labels = streams(n=200, seed=40, labeled_every=1000)
    broker = Broker(events, labels[: len(labels) // 2])
    a = member(broker, provisional=0)
    a.assign(pairs(0) + pairs(1) + pairs(2))
    run(a)
    joiner = a.engine.joiner
    part = joiner.part("in-1", "lab-1")
    held = len(joiner.store)
    assert part["events"] and len(joiner.part("in-1", "lab-1")["events"]) == len(part["events"])
    assert len(joiner.store) == held  # nothing removed
    assert all(e[6] == 1 for e in part["events"] if e[1] == 1)  # each waiting event with its provisional flag
    dropped = joiner.drop("in-1", "lab-1")
    assert dropped == len(part["events"]) + len(part["labels"]) and len(joiner.store) == held - dropped
    learned = a.engine.model.n_learned
    joiner.adopt("in-1", part, counted=True)
    assert a.engine.model.n_learned == learned  # the state's counts hold its provisional labels: none learned again
    again = joiner.part("in-1", "lab-1")
    assert sorted(again["events"]) == sorted(part["events"]) and sorted(again["labels"]) == sorted(part["labels"])


def test_a_partition_lost_without_a_revocation_is_redone_from_its_state():
    events, labels = streams(n=600, seed=41)
    broker = Broker(events, labels)
    a = member(broker)
    a.assign(pairs(0) + pairs(1) + pairs(2))
    run(a, polls=10, dies_after=6)  # what it publishes after its sixth poll is lost (a stalled member) ...
    assert a.engine.joiner.part("in-1", "lab-1")["events"]
    for callback in a.callbacks:  # ... and Kafka takes in-1 away without asking (a session timeout)
        callback("lost", pairs(1))
    a.assignment -= set(pairs(1))
    a.channel.dead = False
    run(a, polls=1)  # its next turn forgets what the join held for in-1: its next owner holds it
    assert a.engine.joiner.part("in-1", "lab-1") == {"events": [], "labels": []}
    # it gets in-1 back, from the state it last published: the ids it joined since (early labels whose event
    # came after them) went with the partition, or their labels would now count as duplicates
    a.assign(pairs(1))
    run(a)
    assert_same_counts(broker.export(), reference(NaiveBayes, joined_pairs(events, labels)))
