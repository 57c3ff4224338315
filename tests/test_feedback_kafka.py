"""``--feedback-topic``: labels that come later on a Kafka topic, against the real broker (both clients).

The model in the newest snapshot is compared with a single pass over the joined pairs
(``test_join.reference``): labels shuffled, early (read before their event), duplicated (the first
wins), missing (never learned) and for ids that never come (they wait); across kill -9 at random
points in at-least-once and exactly-once modes, every joined pair is learned once.
"""

from __future__ import annotations

import json
import os
import random
import signal
import time

import pytest
from kafka import KafkaProducer
from kafka.errors import KafkaError

from recovery import Daemon, newest_model, restored, snapshots, wait_until
from join_helpers import assert_same_counts
from stream_nb import NaiveBayes
from test_join import joined_pairs, reference, streams
from test_recovery_kafka import Collector, group_offsets

PARTITIONS = 3


def partition_of(event_id: str) -> int:
    """Events and their labels share a key and so a partition number (``e17`` -> 17 % P)."""
    digits = "".join(c for c in event_id if c.isdigit())
    return int(digits) % PARTITIONS


def produce(bootstrap: str, topic: str, records: list[dict], ends: dict[int, int]) -> None:
    """Send ``records`` keyed (and partitioned) by their id, in order; ``ends`` gets each partition's end."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5, max_in_flight_requests_per_connection=1)
    try:
        futures = [producer.send(topic, value=json.dumps(r).encode(), key=r["id"].encode(),
                                 partition=partition_of(r["id"])) for r in records]
        producer.flush()
        for f in futures:
            meta = f.get(timeout=30)
            ends[meta.partition] = max(ends.get(meta.partition, 0), meta.offset + 1)
    finally:
        producer.close()


class Setup:
    def __init__(self, tmp_path, bootstrap, topic_factory, name, extra=()):
        self.tmp, self.bootstrap = tmp_path, bootstrap
        self.input = topic_factory(partitions=PARTITIONS, prefix="in")
        self.labels = topic_factory(partitions=PARTITIONS, prefix="labels")
        self.output = topic_factory(partitions=PARTITIONS, prefix="out")
        self.dlq = topic_factory(partitions=PARTITIONS, prefix="dlq")
        self.group = f"feedback-{name}-{os.getpid()}-{time.monotonic_ns()}"
        self.snaps = tmp_path / "snaps"
        self.input_ends: dict[int, int] = {}
        self.label_ends: dict[int, int] = {}
        self.args = [
            "--bootstrap-servers", bootstrap, "--input-topic", self.input, "--output-topic", self.output,
            "--dead-letter-topic", self.dlq, "--group-id", self.group, "--feedback-topic", self.labels,
            "--snapshot-dir", str(self.snaps), "--snapshot-every", "100", "--snapshot-interval", "0.2",
            "--commit-interval", "0.2", "--metrics-interval", "0", "--poll-max-records", "50",
            "--kafka-config", f"group_instance_id={name}-0", "session_timeout_ms=10000", "linger_ms=2",
            *extra,
        ]

    def start(self, name="daemon"):
        return Daemon(self.tmp, self.args, name)

    def committed(self, topic: str, ends: dict[int, int]) -> bool:
        try:
            return group_offsets(self.bootstrap, self.group, topic) == ends
        except KafkaError:  # the group's coordinator is not there yet
            return False

    def committed_all(self) -> bool:
        return self.committed(self.input, self.input_ends) and self.committed(self.labels, self.label_ends)


def finish(setup: Setup, collector: Collector, n_events: int) -> Daemon:
    daemon = setup.start()
    wait_until(lambda: collector.distinct(setup.output) >= n_events and setup.committed_all(), 120,
               "every output and the final commits of both topics", daemon, step=0.2)
    assert daemon.terminate() == 0, daemon.log()[-4000:]
    return daemon


@pytest.mark.kafka
def test_feedback_topic_with_another_partition_count_is_refused(kafka_client, kafka_bootstrap_servers,
                                                                 kafka_topic_factory, tmp_path):
    setup = Setup(tmp_path, kafka_bootstrap_servers, kafka_topic_factory, "copart")
    other = kafka_topic_factory(partitions=PARTITIONS - 1, prefix="labels2")
    setup.args[setup.args.index(setup.labels)] = other
    daemon = setup.start()
    assert daemon.wait(60) == 2
    assert (f"--feedback-topic {other} has {PARTITIONS - 1} partitions and --input-topic {setup.input} has "
            f"{PARTITIONS}") in daemon.log()
    assert "Traceback" not in daemon.log()


@pytest.mark.kafka
def test_kafka_labels_early_late_shuffled_duplicate_and_missing(kafka_client, kafka_bootstrap_servers,
                                                                kafka_topic_factory, tmp_path):
    setup = Setup(tmp_path, kafka_bootstrap_servers, kafka_topic_factory, "join")
    events, labels = streams(n=1200, seed=21)
    early, late = labels[: len(labels) // 3], labels[len(labels) // 3:]
    collector = Collector(kafka_bootstrap_servers, [setup.output, setup.dlq], isolation="read_uncommitted")
    daemon = None
    try:
        produce(setup.bootstrap, setup.labels, early, setup.label_ends)
        daemon = setup.start()
        # every early label read (its offset committed with a snapshot) before any event is there
        wait_until(lambda: setup.committed(setup.labels, setup.label_ends), 90, "the early labels", daemon, step=0.1)
        produce(setup.bootstrap, setup.input, events, setup.input_ends)
        wait_until(lambda: collector.distinct(setup.output) >= len(events), 90, "every output", daemon, step=0.1)
        produce(setup.bootstrap, setup.labels, late, setup.label_ends)
        wait_until(setup.committed_all, 90, "the late labels", daemon, step=0.1)
        assert daemon.terminate() == 0, daemon.log()[-4000:]
    finally:
        collector.close()
        if daemon is not None and daemon.proc.poll() is None:  # a failure above: never leave it running
            daemon.kill9()
    assert_same_counts(newest_model(setup.snaps), reference(NaiveBayes, joined_pairs(events, labels)))
    join = daemon.final_metrics()["join"]
    ids = [r["id"] for r in labels]
    assert join["labels_duplicate"] == len(ids) - len(set(ids))
    assert join["labels_joined"] == len({i for i in ids if not i.startswith("ghost")})
    # what waits at the stop (labels for ids that never came, their TTL not passed; events whose label never
    # came) is handed over through the pending topic, for whoever gets the partitions next
    assert join["pending_labels"] == 0 and join["pending_events"] == 0
    assert join["handed_over_labels_out"] == sum(1 for i in set(ids) if i.startswith("ghost"))
    assert join["handed_over_events_out"] == sum(1 for e in events if "label" not in e and e["id"] not in set(ids))
    assert not collector.records[setup.dlq]


def kill_at_random_points(setup: Setup, kills: int, seed: int) -> int:
    """Start, wait for a new snapshot and a random moment more, kill -9; ``kills`` times."""
    rng = random.Random(seed)
    done = 0
    for _ in range(kills):
        before = len(snapshots(setup.snaps)) and snapshots(setup.snaps)[-1]
        daemon = setup.start()
        try:
            wait_until(lambda: snapshots(setup.snaps) and snapshots(setup.snaps)[-1] != before, 90,
                       "a new snapshot", daemon, step=0.02)
        except AssertionError:
            if setup.committed_all():  # it finished first: nothing left to cut
                daemon.kill9()
                break
            raise
        time.sleep(rng.uniform(0.0, 0.3))
        daemon.kill9()
        done += 1
    return done


@pytest.mark.kafka
@pytest.mark.parametrize("mode", ["at-least-once", "exactly-once"])
def test_kafka_kill_9_with_labels_flowing_learns_every_joined_pair_once(mode, kafka_client, kafka_bootstrap_servers,
                                                                         kafka_topic_factory, tmp_path):
    exactly_once = mode == "exactly-once"
    setup = Setup(tmp_path, kafka_bootstrap_servers, kafka_topic_factory, f"kill-{mode}",
                  extra=["--exactly-once", "--commit-every", "40"] if exactly_once else [])
    events, labels = streams(n=1500, seed=22 + exactly_once)
    # labels and events interleaved in time: a third of the labels first, then events and labels in turns
    produce(setup.bootstrap, setup.labels, labels[: len(labels) // 3], setup.label_ends)
    rest = labels[len(labels) // 3:]
    for k in range(3):
        produce(setup.bootstrap, setup.input, events[k * 500:(k + 1) * 500], setup.input_ends)
        produce(setup.bootstrap, setup.labels, rest[k * len(rest) // 3:(k + 1) * len(rest) // 3], setup.label_ends)
    collector = Collector(kafka_bootstrap_servers, [setup.output, setup.dlq],
                          isolation="read_committed" if exactly_once else "read_uncommitted")
    try:
        assert kill_at_random_points(setup, kills=3, seed=7 + exactly_once) >= 2
        final = finish(setup, collector, len(events))
    finally:
        collector.close()
    assert restored(final.log())
    assert_same_counts(newest_model(setup.snaps), reference(NaiveBayes, joined_pairs(events, labels)))
    outputs = collector.records[setup.output]
    assert collector.distinct(setup.output) == len(events)
    if exactly_once:
        assert len(outputs) == len(events)


def held_partitions(log: str) -> set:
    """The partitions a daemon's log shows it holds the waiting events of: taken over since last handed over."""
    held: dict[str, bool] = {}
    for line in log.splitlines():
        for marker, holds in (("handing over ", False), ("took over ", True)):
            if marker in line:
                held[line.split(marker, 1)[1].split(":", 1)[0]] = holds
    return {p for p, holds in held.items() if holds}


@pytest.mark.kafka
@pytest.mark.parametrize("mode", ["at-least-once", "exactly-once"])
def test_kafka_rebalance_and_scale_down_move_held_events_and_early_labels_with_their_partition(
        mode, kafka_client, kafka_bootstrap_servers, kafka_topic_factory, tmp_path):
    """A second daemon joins while events wait for their labels: the partitions it gets bring their held
    events and early labels along (the pending topic). Then the first daemon stops alone (scale-down): its
    stop hands its partitions' held events over like a revocation, so the labels that come after it stopped
    are joined by the second. The two models together learn each joined pair once; the provisional labels of
    the events that moved are taken back where they were learned, and those of the events still held at the
    last stop are taken back too (they wait in the pending topic for the next owner)."""
    setup = Setup(tmp_path, kafka_bootstrap_servers, kafka_topic_factory, "rebalance",
                  extra=["--provisional-label", "0"] + (["--exactly-once"] if mode == "exactly-once" else []))
    events, labels = streams(n=1500, seed=24)
    before, after = events[:1000], events[1000:]
    ids_before = {e["id"] for e in before}
    now = [r for r in labels if r["id"] in ids_before][:300]  # some labels of the first events
    early = [r for r in labels if r["id"] not in ids_before and not r["id"].startswith("ghost")][:100]
    rest = [r for r in labels if r not in now and r not in early]
    labels = now + early + rest  # the order they are produced in, per partition: the first label wins
    produce(setup.bootstrap, setup.input, before, setup.input_ends)
    produce(setup.bootstrap, setup.labels, now + early, setup.label_ends)
    args_b = list(setup.args)
    args_b[args_b.index(str(setup.snaps))] = str(tmp_path / "snaps-b")
    args_b[args_b.index("group_instance_id=rebalance-0")] = "group_instance_id=rebalance-1"
    args_b += ["--instance-id", "1"]  # its own transactional id
    first, second = setup.start("first"), None
    try:
        wait_until(setup.committed_all, 90, "the first events and labels", first, step=0.1)
        second = Daemon(setup.tmp, args_b, "second")
        wait_until(lambda: "took over" in second.log(), 90, "the hand-over", second, step=0.1)
        assert "handing over" in first.log()
        # an eager rebalance hands every partition over before the new assignment: the first must have taken
        # its own back before it stops, or it has nothing to hand over at its stop
        wait_until(lambda: held_partitions(first.log()), 90, "the first's partitions after the rebalance", first,
                   step=0.1)
        # scale-down: the first stops alone while the second runs on
        seen_first, seen_second = len(first.log()), len(second.log())
        first.proc.send_signal(signal.SIGTERM)
        assert first.wait(60) == 0, first.log()[-4000:]
        handed = {line.split("handing over ", 1)[1].split(":", 1)[0]
                  for line in first.log()[seen_first:].splitlines() if "handing over " in line}
        assert handed, first.log()[-4000:]

        def taken() -> bool:
            lines = [line for line in second.log()[seen_second:].splitlines() if "took over " in line]
            return all(any(f"took over {p}:" in line for line in lines) for p in handed)

        wait_until(taken, 90, f"the hand-over of {sorted(handed)} at the first's stop", second, step=0.1)
        produce(setup.bootstrap, setup.input, after, setup.input_ends)
        produce(setup.bootstrap, setup.labels, rest, setup.label_ends)
        wait_until(setup.committed_all, 120, "every event and label", second, step=0.2)
        second.proc.send_signal(signal.SIGTERM)  # once: a second SIGTERM stops a daemon at once, unsaved
        assert second.wait(60) == 0, second.log()[-4000:]
    finally:
        for d in (first, second):
            if d is not None and d.proc.poll() is None:
                d.kill9()
    moved = [line for line in second.log().splitlines() if "took over" in line]
    assert any(" 0 held events" not in line for line in moved), moved
    a, b = newest_model(setup.snaps), newest_model(tmp_path / "snaps-b")
    assert a.n_learned > 0 and b.n_learned > 0
    # every label joined once, by whichever member held the event when it came; no provisional label left
    assert_same_counts(a.merge(b), reference(NaiveBayes, joined_pairs(events, labels)))
