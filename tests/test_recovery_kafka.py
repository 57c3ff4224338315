"""Crash recovery of ``stream-nb run --snapshot-dir`` in Kafka mode, against the real broker.

Faults: kill -9 at random points (at-least-once and --exactly-once outputs),
kill -9 between a snapshot and its transaction's commit, a broker restart
mid-stream, a damaged newest snapshot, an unwritable snapshot directory, and a
second daemon joining the group (a rebalance). After each: the counts of the
model in the newest snapshot equal those of a model trained once on the same
labeled events; every valid event has an output and every poison message a
dead letter; with --exactly-once a read_committed consumer sees each exactly once.
"""

from __future__ import annotations

import collections
import json
import os
import random
import threading
import time
from pathlib import Path

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer

import stream_nb
from conftest import KAFKA_CLIENTS
from recovery import Daemon, make_events, named_counts, newest_model, reference, restored, snapshots, wait_until
from stream_nb import TAN

PARTITIONS = 3


def produce(bootstrap: str, topic: str, events: list[dict], start: int = 0) -> None:
    """Send the events round-robin over the partitions; record each one's (partition, offset)."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    try:
        futures = [producer.send(topic, value=e["raw"], key=f"k{start + i}".encode(), partition=(start + i) % PARTITIONS)
                   for i, e in enumerate(events)]
        producer.flush()
        for e, f in zip(events, futures):
            meta = f.get(timeout=30)
            e["at"] = (meta.partition, meta.offset)
    finally:
        producer.close()


class Collector:
    """Reads topics from their start on a thread; ``records[topic]`` grows as outputs arrive."""

    def __init__(self, bootstrap: str, topics: list[str], isolation: str = "read_committed"):
        self.records: dict[str, list] = {t: [] for t in topics}
        self._stop = threading.Event()
        self._consumer = KafkaConsumer(*topics, bootstrap_servers=bootstrap, group_id=None,
                                       auto_offset_reset="earliest", enable_auto_commit=False,
                                       isolation_level=isolation, metadata_max_age_ms=1000)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.is_set():
            try:
                for tp, batch in self._consumer.poll(timeout_ms=100).items():
                    self.records[tp.topic].extend(batch)
            except Exception:  # noqa: BLE001 - the broker may be restarting
                time.sleep(0.2)

    def count(self, topic: str) -> int:
        return len(self.records[topic])

    def distinct(self, topic: str) -> int:
        return len(set(positions_of(list(self.records[topic]))))

    def close(self) -> None:
        time.sleep(1.0)  # anything still on its way
        self._stop.set()
        self._thread.join(timeout=10)
        self._consumer.close()


def positions_of(records) -> list[tuple[int, int]]:
    out = []
    for r in records:
        source = json.loads(r.value)["source"]
        out.append((source["partition"], source["offset"]))
    return out


def group_offsets(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        offsets = admin.list_group_offsets(group)[group]
    finally:
        admin.close()
    return {tp.partition: om.offset for tp, om in offsets.items() if tp.topic == topic and om.offset >= 0}


class Setup:
    def __init__(self, tmp_path: Path, bootstrap: str, topic_factory, name: str, extra: list[str] = ()):
        self.tmp = tmp_path
        self.bootstrap = bootstrap
        self.input = topic_factory(partitions=PARTITIONS, prefix="in")
        self.output = topic_factory(partitions=PARTITIONS, prefix="out")
        self.dlq = topic_factory(partitions=PARTITIONS, prefix="dlq")
        self.group = f"recovery-{name}-{os.getpid()}-{time.monotonic_ns()}"
        self.snaps = tmp_path / "snaps"
        self.events: list[dict] = []
        self.args = [
            "--model", "tan", "--rebuild-every", "150",
            "--bootstrap-servers", bootstrap, "--input-topic", self.input, "--output-topic", self.output,
            "--dead-letter-topic", self.dlq, "--group-id", self.group,
            "--snapshot-dir", str(self.snaps), "--snapshot-every", "60", "--snapshot-interval", "0.2",
            "--commit-interval", "0.2", "--metrics-interval", "0",
            # static membership: a restarted daemon takes its partitions back at once
            "--kafka-config", f"group_instance_id={name}-0", "session_timeout_ms=10000", "linger_ms=2",
            *extra,
        ]

    def add(self, events: list[dict]) -> None:
        produce(self.bootstrap, self.input, events, start=len(self.events))
        self.events.extend(events)

    def start(self, name: str = "daemon", env: dict | None = None, args: list[str] | None = None,
              faults: dict[str, float] | None = None) -> Daemon:
        return Daemon(self.tmp, args or self.args, name, env=env, faults=faults)

    @property
    def valid(self) -> list[dict]:
        return [e for e in self.events if e["obj"] is not None]

    @property
    def poison(self) -> list[dict]:
        return [e for e in self.events if e["obj"] is None]

    def end_offsets(self) -> dict[int, int]:
        ends: dict[int, int] = {}
        for e in self.events:
            p, o = e["at"]
            ends[p] = max(ends.get(p, 0), o + 1)
        return ends

    def check_model(self, model=None) -> None:
        model = model if model is not None else newest_model(self.snaps)
        expected = reference(TAN, self.events)
        assert named_counts(model) == named_counts(expected)
        assert model.n_learned == expected.n_learned

    def check_outputs(self, collector: Collector, exactly_once: bool) -> None:
        outputs = positions_of(collector.records[self.output])
        letters = positions_of(collector.records[self.dlq])
        assert set(outputs) == {e["at"] for e in self.valid}  # every valid event, nothing else
        assert set(letters) == {e["at"] for e in self.poison}
        if exactly_once:
            assert len(outputs) == len(self.valid), collections.Counter(outputs).most_common(3)
            assert len(letters) == len(self.poison)
        by_at = {e["at"]: e for e in self.events}
        for r in collector.records[self.dlq]:
            letter = json.loads(r.value)
            assert letter["reason"] == by_at[(letter["source"]["partition"], letter["source"]["offset"])]["reason"]


def kill_points(kills: int, seed: int, kafka_client: str) -> list[tuple[int, float]]:
    """This client's share of ``kills`` random kill points: (outputs past the last kill, extra delay in s).

    The points are drawn once per seed for all clients, and client ``i`` of
    ``KAFKA_CLIENTS`` takes every ``len(KAFKA_CLIENTS)``-th one from ``i``: the
    clients together are killed at the same points one client alone was before,
    each at its own share of them. The windows a kill lands in (mid-batch, between
    outputs and the offset commit, mid-snapshot, in a transaction) are the
    engine's and come round every checkpoint, so each client still meets them all.
    """
    rng = random.Random(seed)
    points = [(rng.randint(15, 90), rng.random() * 0.02) for _ in range(kills)]
    return points[KAFKA_CLIENTS.index(kafka_client)::len(KAFKA_CLIENTS)]


def _kill_at_random_points(setup: Setup, collector: Collector, points: list[tuple[int, float]], env=None) -> int:
    done = 0
    for ahead, delay in points:
        if collector.distinct(setup.output) >= len(setup.valid) - 100:
            break
        target = collector.count(setup.output) + ahead
        daemon = setup.start(env=env)
        wait_until(lambda: collector.count(setup.output) >= target, 90, f"{target} outputs", daemon, step=0.01)
        time.sleep(delay)  # within 20 ms of the target: on a quiet machine 0.2 s is ~1,000 events
        daemon.kill9()
        done += 1
    return done


def _finish(setup: Setup, collector: Collector, exactly_once: bool) -> Daemon:
    daemon = setup.start()
    wait_until(lambda: collector.count(setup.output) >= len(setup.valid) and setup.end_offsets() == group_offsets(
        setup.bootstrap, setup.group, setup.input), 120, "every output and the final commit", daemon, step=0.2)
    assert daemon.terminate() == 0, daemon.log()[-4000:]
    return daemon


@pytest.mark.kafka
def test_kafka_kill_9_at_random_points_at_least_once(kafka_client, kafka_bootstrap_servers, kafka_topic_factory, tmp_path):
    setup = Setup(tmp_path, kafka_bootstrap_servers, kafka_topic_factory, "alo")
    setup.add(make_events(8000, seed=11, poison_every=61))
    collector = Collector(kafka_bootstrap_servers, [setup.output, setup.dlq], isolation="read_uncommitted")
    try:
        points = kill_points(20, seed=1, kafka_client=kafka_client)
        assert _kill_at_random_points(setup, collector, points) >= len(points) - 1
        final = _finish(setup, collector, exactly_once=False)
    finally:
        collector.close()
    assert restored(final.log())
    setup.check_model()
    setup.check_outputs(collector, exactly_once=False)
    assert final.final_metrics()["events"] == len(setup.events)  # metrics continue, each event once


@pytest.mark.kafka
def test_kafka_exactly_once_survives_kill_9_at_random_points(kafka_client, kafka_bootstrap_servers, kafka_topic_factory, tmp_path):
    setup = Setup(tmp_path, kafka_bootstrap_servers, kafka_topic_factory, "eos",
                  extra=["--exactly-once", "--commit-every", "30", "--poll-max-records", "30"])
    setup.add(make_events(8000, seed=12, poison_every=53))
    collector = Collector(kafka_bootstrap_servers, [setup.output, setup.dlq])
    try:
        points = kill_points(20, seed=2, kafka_client=kafka_client)
        assert _kill_at_random_points(setup, collector, points) >= len(points) - 1
        # one kill right between a snapshot and the commit of its transaction
        daemon = setup.start(faults={"pause_before_commit": 30})
        wait_until(lambda: "pausing 30.0 s between snapshot" in daemon.log(), 90, "the pause before a commit", daemon)
        ahead = snapshots(setup.snaps)[-1]
        daemon.kill9()
        final = _finish(setup, collector, exactly_once=True)
    finally:
        collector.close()
    log = final.log()
    assert f"snapshot {ahead} not restored: it is ahead of the committed offsets" in log
    assert f"deleting {ahead}: its transaction never committed" in log
    setup.check_model()
    setup.check_outputs(collector, exactly_once=True)


#: The daemon's client bounds in the broker-restart test, in ms (the outage lasts three times as long).
BOUND_MS = 3000


@pytest.mark.kafka
def test_kafka_exactly_once_through_a_broker_restart(kafka_client, kafka_broker, kafka_bootstrap_servers, kafka_topic_factory,
                                                     tmp_path):
    """The broker stays down for longer than the daemon's own bounds (``max_block_ms``,
    ``bootstrap_timeout_ms``) whatever the machine's load: the daemon rides it out."""
    setup = Setup(tmp_path, kafka_bootstrap_servers, kafka_topic_factory, "restart",
                  extra=["--exactly-once", "--kafka-config", f"max_block_ms={BOUND_MS}", f"bootstrap_timeout_ms={BOUND_MS}"])
    setup.add(make_events(600, seed=13, poison_every=47))
    collector = Collector(kafka_bootstrap_servers, [setup.output, setup.dlq])
    daemon = setup.start()
    try:
        wait_until(lambda: collector.count(setup.output) >= 300, 90, "300 outputs", daemon, step=0.05)
        kafka_broker.stop()
        time.sleep(3 * BOUND_MS / 1000)  # longer than a transactional call and a reconnection together
        assert daemon.proc.poll() is None, daemon.log()[-4000:]
        kafka_broker.start()
        setup.add(make_events(600, seed=14, poison_every=47))
        wait_until(lambda: collector.count(setup.output) >= len(setup.valid) and setup.end_offsets() == group_offsets(
            setup.bootstrap, setup.group, setup.input), 180, "every output after the restart", daemon, step=0.5)
        assert daemon.terminate() == 0, daemon.log()[-4000:]
    finally:
        if daemon.proc.poll() is None:
            daemon.kill9()
        collector.close()
    setup.check_model()
    setup.check_outputs(collector, exactly_once=True)


@pytest.mark.kafka
def test_kafka_damaged_newest_snapshot_resumes_from_the_previous_one(kafka_client, kafka_bootstrap_servers, kafka_topic_factory,
                                                                      tmp_path):
    setup = Setup(tmp_path, kafka_bootstrap_servers, kafka_topic_factory, "damaged")
    setup.add(make_events(900, seed=15, poison_every=71))
    collector = Collector(kafka_bootstrap_servers, [setup.output, setup.dlq], isolation="read_uncommitted")
    try:
        daemon = setup.start()
        wait_until(lambda: collector.count(setup.output) >= 400 and len(snapshots(setup.snaps)) >= 3, 90,
                   "400 outputs and 3 snapshots", daemon, step=0.02)
        assert daemon.terminate() == 0
        newest, previous = snapshots(setup.snaps)[-1], snapshots(setup.snaps)[-2]
        data = bytearray(newest.read_bytes())
        data[len(data) // 2] ^= 0x01
        newest.write_bytes(bytes(data))
        final = _finish(setup, collector, exactly_once=False)
    finally:
        collector.close()
    log = final.log()
    assert f"unusable snapshot, trying the previous one: {newest}: checksum mismatch" in log
    assert f"restored snapshot {previous}" in log
    # the group's offsets (committed with the damaged snapshot) were ahead: this daemon's own, so it re-processed
    assert "behind the offset" in log and "this daemon committed" in log
    setup.check_model()
    setup.check_outputs(collector, exactly_once=False)


@pytest.mark.kafka
def test_kafka_offsets_wait_for_a_good_snapshot(kafka_client, kafka_bootstrap_servers, kafka_topic_factory, tmp_path):
    setup = Setup(tmp_path, kafka_bootstrap_servers, kafka_topic_factory, "unwritable")
    setup.add(make_events(300, seed=16))
    collector = Collector(kafka_bootstrap_servers, [setup.output, setup.dlq], isolation="read_uncommitted")
    daemon = setup.start()
    try:
        wait_until(lambda: collector.count(setup.output) >= len(setup.valid) and group_offsets(
            setup.bootstrap, setup.group, setup.input) == setup.end_offsets(), 90, "the first 300", daemon, step=0.1)
        away = tmp_path / "away"
        os.rename(setup.snaps, away)
        setup.snaps.write_text("not a directory")
        committed_before = group_offsets(setup.bootstrap, setup.group, setup.input)
        last_good = stream_nb.snapshots.read(snapshots(away)[-1]).daemon["positions"]
        assert {int(k.rsplit("-", 1)[1]): v for k, v in last_good.items()} == committed_before
        setup.add(make_events(300, seed=17))
        wait_until(lambda: collector.count(setup.output) >= len(setup.valid) and "snapshot failed" in daemon.log(),
                   90, "outputs while snapshots fail", daemon, step=0.05)
        time.sleep(1.0)  # several checkpoints
        assert group_offsets(setup.bootstrap, setup.group, setup.input) == committed_before  # not one further
        setup.snaps.unlink()
        os.rename(away, setup.snaps)
        wait_until(lambda: "snapshots work again" in daemon.log() and group_offsets(
            setup.bootstrap, setup.group, setup.input) == setup.end_offsets(), 60, "recovery", daemon, step=0.1)
        assert daemon.terminate() == 0
    finally:
        if daemon.proc.poll() is None:
            daemon.kill9()
        collector.close()
    summary = daemon.final_metrics()
    assert summary["healthy"] is True and summary["snapshot_failures"] >= 1
    setup.check_model()


@pytest.mark.kafka
def test_kafka_rebalance_snapshots_and_commits_before_partitions_go(kafka_client, kafka_bootstrap_servers, kafka_topic_factory,
                                                                    tmp_path):
    """A second daemon joins the group: the first hands over partitions with everything committed.

    Each daemon's model learns the events of the partitions it owned; together (merged) they
    hold each labeled event once.
    """
    setup = Setup(tmp_path, kafka_bootstrap_servers, kafka_topic_factory, "rebalance")
    setup.add(make_events(600, seed=18, poison_every=59))
    collector = Collector(kafka_bootstrap_servers, [setup.output, setup.dlq], isolation="read_uncommitted")
    # the first daemon would not snapshot (nor commit) for an hour: only the revocation makes it
    args_a = list(setup.args)
    args_a[args_a.index("--snapshot-every") + 1] = "100000"
    args_a[args_a.index("--snapshot-interval") + 1] = "3600"
    first = setup.start("first", args=args_a)
    other_snaps = tmp_path / "snaps-b"
    args_b = list(setup.args)
    args_b[args_b.index(str(setup.snaps))] = str(other_snaps)
    args_b[args_b.index("group_instance_id=rebalance-0")] = "group_instance_id=rebalance-1"
    second = None
    try:
        wait_until(lambda: collector.count(setup.output) >= len(setup.valid), 90, "the first 600", first, step=0.05)
        assert not snapshots(setup.snaps) and group_offsets(setup.bootstrap, setup.group, setup.input) == {}
        second = setup.start("second", args=args_b)
        wait_until(lambda: "before the partitions went" in first.log(), 90, "the revocation commit", first, step=0.05)
        assert "Kafka source: committed " in first.log()
        wait_until(lambda: "resumes at offset" in second.log(), 90, "the second daemon's assignment", second,
                   step=0.05)
        setup.add(make_events(600, seed=19, poison_every=59))
        wait_until(lambda: collector.count(setup.output) >= len(setup.valid), 120, "all outputs", second, step=0.1)
        assert second.terminate() == 0
        assert first.terminate() == 0
        assert group_offsets(setup.bootstrap, setup.group, setup.input) == setup.end_offsets()
    finally:
        for d in (first, second):
            if d is not None and d.proc.poll() is None:
                d.kill9()
        collector.close()
    a, b = newest_model(setup.snaps), newest_model(other_snaps)
    assert a.n_learned > 0 and b.n_learned > 0  # both learned
    setup.check_model(a.merge(b))
    setup.check_outputs(collector, exactly_once=False)
