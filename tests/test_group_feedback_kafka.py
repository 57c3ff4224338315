"""Delayed labels in a consumer group (``run --feedback-topic --model-topic``), against the real broker.

Three members on six-partition input and feedback topics; about 15% of the
events never get a label, the others get theirs up to 300 events late (a few
before their event, a few twice: the first wins). One run kills a member with
kill -9 twice (it comes back each time) and then another one for good, inside
a transaction that sent its states: it holds the model topic's last stable
offset until the broker aborts it, and the members taking partitions over wait
for that instead of resuming older states and repeating outputs. The other
run scales the group down from three members to one, restarts the broker (the
local one; others cannot be restarted) under the member left, and scales back
up to three, while events wait for their labels. After the stream goes quiet,
the model ``stream-nb model export`` writes equals one process that learned exactly the
joined pairs (and the events labeled in place), ``n_learned`` is their number,
every member's view says so, and every event has its output: exactly once with
``--exactly-once`` (a ``read_committed`` reader), at least once without.

Each scenario runs in both modes, each mode with the other client: the kills
in exactly-once mode with confluent-kafka, where a lost checkpoint must
neither lose nor repeat an output (and two of a member's transactions abort,
rewinding its partitions), and in at-least-once mode with kafka-python, where
publishing and committing are two steps; the scale-down and -up the other way
round. The crossed runs stream half the events (CI time). The kills of ``b``
(and, at least once, of ``c``) come at random moments, not aligned to
checkpoints: their seed is new each run, printed with every failure, and
``STREAM_NB_FAULT_SEED=N`` replays it.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import threading
import time

import pytest
from kafka import KafkaConsumer, KafkaProducer

from join_helpers import named_counts
from recovery import Daemon, newest_model, wait_until
from stream_nb import NaiveBayes
from test_group_kafka import export

PARTITIONS = 6


def fault_seed() -> int:
    """The seed of a run's kill moments: ``STREAM_NB_FAULT_SEED`` when set, else a new one."""
    given = os.environ.get("STREAM_NB_FAULT_SEED", "").strip()
    return int(given) if given else random.SystemRandom().randrange(2**31)


def timeline(n: int, seed: int) -> tuple[list, list, list]:
    """``(records, events, labels)``: the events ``e0..`` and their labels in the order they are produced, each
    ``(topic kind, record)``: a label comes 300 events late at most (a few before their event), 15% of the
    events never get one, 5% are labeled in place and 3% get a second, contradicting label after the first."""
    rng = random.Random(seed)
    events, timed = [], []
    for i in range(n):
        y = "yes" if rng.random() < 0.4 else "no"
        x = {"a": ("p" if y == "yes" else "q") if rng.random() < 0.7 else rng.choice("pqr"), "b": rng.choice("uvw"),
             "t": round(rng.gauss(1.0 if y == "yes" else 0.0, 1.0), 4)}
        event = {"id": f"e{i}", **x}
        if rng.random() < 0.05:
            event["label"] = y
        elif rng.random() >= 0.15:
            at = i + rng.randint(-20, 300)
            timed.append((at + 0.5, {"id": f"e{i}", "label": y}))
            if rng.random() < 0.03:
                timed.append((at + 1.5 + rng.randint(0, 50), {"id": f"e{i}", "label": "no" if y == "yes" else "yes"}))
        events.append(event)
        timed.append((i, event))
    timed.sort(key=lambda item: item[0])
    records = [("label" if "label" in r and len(r) == 2 else "event", r) for _, r in timed]
    return records, events, [r for kind, r in records if kind == "label"]


def reference(events: list, labels: list) -> NaiveBayes:
    """One process learning each event labeled in place and each held event with the first label of its id."""
    first: dict = {}
    for r in labels:
        first.setdefault(r["id"], r["label"])
    model = NaiveBayes()
    for e in events:
        y = e.get("label", first.get(e["id"]))
        if y is not None:
            model.learn_one({k: v for k, v in e.items() if k not in ("id", "label")}, y)
    return model


def max_difference(got, want) -> float:
    """The largest absolute difference between two models' counts (inf when they count different things)."""
    a, b = named_counts(got), named_counts(want)
    if set(a) != set(b):
        return float("inf")
    flat = lambda v: v if isinstance(v, tuple) else (v,)  # noqa: E731
    return max((abs(p - q) for k in b for p, q in zip(flat(a[k]), flat(b[k]))), default=0.0)


def produce(bootstrap: str, topics: dict, records: list, batches: int, pause: float) -> None:
    """Send ``records`` in ``batches`` with ``pause`` s between them, each keyed and partitioned by its id."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5, reconnect_backoff_max_ms=1000)
    try:
        size = -(-len(records) // batches)
        for b in range(batches):
            for kind, r in records[b * size:(b + 1) * size]:
                producer.send(topics[kind], value=json.dumps(r).encode(), key=r["id"].encode(),
                              partition=int(r["id"][1:]) % PARTITIONS)
            producer.flush()
            time.sleep(pause)
    finally:
        producer.close()


def committed_outputs(bootstrap: str, topic: str, expect: int, idle: float = 1.0) -> list[tuple[int, int]]:
    """The ``(partition, offset)`` of the input event of every committed output: read until ``expect`` distinct
    ones came (60 s at most), then until ``idle`` s pass quietly (a duplicate would come by then)."""
    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=None, auto_offset_reset="earliest",
                             enable_auto_commit=False, isolation_level="read_committed")
    out, last, deadline = [], time.monotonic(), time.monotonic() + 60
    try:
        while time.monotonic() < deadline and (len(set(out)) < expect or time.monotonic() - last < idle):
            for batch in consumer.poll(timeout_ms=200).values():
                out.extend((json.loads(r.value)["source"]["partition"], json.loads(r.value)["source"]["offset"])
                           for r in batch)
                last = time.monotonic()
    finally:
        consumer.close()
    return out


def owned(daemon: Daemon) -> int:
    """The input and feedback partitions ``daemon`` owns, by the last assignment it logged."""
    found = re.findall(r"Kafka source: partitions assigned: (.*)", daemon.log())
    return len([p for p in found[-1].split(",") if p.strip() and p.strip() != "none"]) if found else 0


class Group:
    def __init__(self, tmp_path, bootstrap: str, topic_factory, seed: int, exactly_once: bool, events: int = 2400,
                 kills: int | None = None):
        self.tmp, self.bootstrap = tmp_path, bootstrap
        # every failure names the seed of the kill moments, to replay them
        self.why = "" if kills is None else f" [kill moments: STREAM_NB_FAULT_SEED={kills}]"
        self.topics = {"event": topic_factory(partitions=PARTITIONS, prefix="gbin"),
                       "label": topic_factory(partitions=PARTITIONS, prefix="gblab")}
        self.output = topic_factory(partitions=PARTITIONS, prefix="gbout")
        self.model_topic = f"gbmodel-{os.getpid()}-{time.monotonic_ns()}"
        self.records, self.events, self.labels = timeline(events, seed)
        self.args = [
            "--model", "nb", "--bootstrap-servers", bootstrap, "--input-topic", self.topics["event"],
            "--feedback-topic", self.topics["label"], "--output-topic", self.output,
            "--group-id", f"gbgroup-{os.getpid()}-{time.monotonic_ns()}", "--model-topic", self.model_topic,
            "--sync-interval", "0.3", "--commit-interval", "0.3", "--metrics-interval", "0",
            "--poll-max-records", "50", "--kafka-config", "session_timeout_ms=6000", "heartbeat_interval_ms=1000",
            # back within a second of a broker restart (kafka-python's reconnect backoff grows to 30 s)
            "linger_ms=2", "reconnect_backoff_max_ms=1000",
            # (a transactional call librdkafka never returns after a broker restart replaces the producer after
            # max_block_ms: 60 s by default)
            *(["--exactly-once", "--kafka-config", "transaction_timeout_ms=10000", "max_block_ms=10000"]
              if exactly_once else []),
        ]
        self.exactly_once = exactly_once

    def start(self, *names: str, faults: dict | None = None) -> dict[str, Daemon]:
        """Members ``names`` (``faults``: run through the fault launcher), once each logged that it runs."""
        started = {n: Daemon(self.tmp, [*self.args, "--instance-id", n, "--snapshot-dir", str(self.tmp / n),
                                        "--snapshot-interval", "0.5"], n, faults=faults) for n in names}
        for n, d in started.items():
            wait_until(lambda d=d: "running model" in d.log(), 60, f"member {n} to start{self.why}", d, step=0.1)
        return started

    def feeder(self, batches: int, pause: float) -> threading.Thread:
        thread = threading.Thread(target=produce, args=(self.bootstrap, self.topics, self.records, batches, pause))
        thread.start()
        return thread

    def check_quiet(self, members: dict[str, Daemon]) -> None:
        ref = reference(self.events, self.labels)

        def quiet():
            try:
                model = export(self.bootstrap, self.model_topic, self.tmp / "export.snb")
            except AssertionError as exc:  # nothing published yet
                if "holds no model state" not in str(exc):
                    raise
                return None
            return model if model.n_learned == ref.n_learned and max_difference(model, ref) < 1e-9 else None

        try:
            exported = wait_until(quiet, 120, f"the group's model to cover every joined pair{self.why}", step=1.0)
            time.sleep(1.5)  # a few sync intervals: every member applies the last states
        finally:
            for d in members.values():  # all at once: each publishes and commits what it holds as it stops
                d.proc.send_signal(signal.SIGTERM)
            codes = {name: d.wait(60) for name, d in members.items()}  # (a second SIGTERM stops at once)
        assert codes == {name: 0 for name in codes}, (self.why, {n: d.log()[-3000:] for n, d in members.items()})
        joined = {r["id"] for r in self.labels}
        learned = sum(1 for e in self.events if "label" in e or e["id"] in joined)
        assert exported.n_learned == ref.n_learned == learned, self.why
        for name, daemon in members.items():
            assert daemon.final_metrics()["group_events_learned"] == ref.n_learned, name + self.why
            # its view, cached at the stop
            assert max_difference(newest_model(self.tmp / name), ref) < 1e-9, name + self.why
            assert "Traceback" not in daemon.log(), name + self.why
        outputs = committed_outputs(self.bootstrap, self.output, expect=len(self.events))
        assert len(set(outputs)) == len(self.events), self.why  # every event has its prediction ...
        if self.exactly_once:
            assert len(outputs) == len(self.events), self.why  # ... once


@pytest.mark.kafka
@pytest.mark.parametrize(("kafka_client", "exactly_once", "events"), [
    pytest.param("confluent", True, 2400, id="confluent-exactly-once"),
    pytest.param("kafka-python", False, 1200, id="kafka-python-at-least-once"),
], indirect=["kafka_client"])
def test_kill_9_twice_and_a_member_lost_for_good_learn_each_joined_pair_once(
        tmp_path, kafka_bootstrap_servers, kafka_topic_factory, kafka_client, exactly_once, events):
    seed = fault_seed()
    group = Group(tmp_path, kafka_bootstrap_servers, kafka_topic_factory, seed=381, exactly_once=exactly_once,
                  events=events, kills=seed)
    rng = random.Random(seed)
    if exactly_once:
        # a's second and fourth transactions fail: it aborts them and rewinds its partitions, held events
        # included; c stops inside its second transaction, its states sent, until it is killed
        members = {**group.start("a", faults={"fail_before_commit": "2,4"}), **group.start("b"),
                   **group.start("c", faults={"pause_before_commit": 60, "pause_from_commit": 2})}
        # the feed lasts long enough for c to reach its second transaction on a loaded machine
        feeder = group.feeder(batches=18, pause=0.8)
    else:
        members = group.start("a", "b", "c")
        feeder = group.feeder(batches=12, pause=0.8)
    try:
        for last in (False, True):  # b killed at a random moment, then back with what the topic holds
            if last and exactly_once:
                wait_until(lambda: "test hook: pausing" in members["c"].log(), 60,
                           f"c to stop inside a transaction{group.why}", members["c"], step=0.1)
                time.sleep(rng.uniform(1.0, 2.0))  # the others commit newer states after c's open transaction
            else:
                time.sleep(rng.uniform(0.2, 2.5))
            members["b"].kill9()
            if last:  # with c, which never comes back: its held events and early labels are in its states; with
                # --exactly-once its open transaction holds the model topic's last stable offset until the broker
                # aborts it, else c goes at another random moment
                if not exactly_once:
                    time.sleep(rng.uniform(0.0, 1.5))
                members.pop("c").kill9()
            members.update(group.start("b"))
    finally:
        feeder.join()
    group.check_quiet(members)
    if exactly_once:
        assert len(re.findall(r"transaction aborted \(InjectedFault", members["a"].log())) == 2, \
            members["a"].log()[-3000:] + group.why


@pytest.mark.kafka
@pytest.mark.parametrize(("kafka_client", "exactly_once", "events"), [
    pytest.param("kafka-python", False, 2400, id="kafka-python-at-least-once"),
    pytest.param("confluent", True, 1200, id="confluent-exactly-once"),
], indirect=["kafka_client"])
def test_scale_down_to_one_and_up_to_three_moves_held_events_with_their_partitions(
        tmp_path, kafka_broker, kafka_bootstrap_servers, kafka_topic_factory, kafka_client, exactly_once, events):
    group = Group(tmp_path, kafka_bootstrap_servers, kafka_topic_factory, seed=383, exactly_once=exactly_once,
                  events=events)
    members = group.start("a", "b", "c")
    feeder = group.feeder(batches=16 if events >= 2400 else 12, pause=0.5)
    try:
        time.sleep(2.0)
        for name in ("b", "c"):  # scale down to one: a takes every partition and what waits in it
            assert members.pop(name).terminate() == 0
        if kafka_broker.restartable:  # the broker restarts under a, with events held and labels on their way
            wait_until(lambda: owned(members["a"]) == 2 * PARTITIONS, 60, "a to own every partition", members["a"],
                       step=0.1)
            kafka_broker.restart()
        else:
            time.sleep(2.0)
        members.update(group.start("b", "c"))  # and up to three again
    finally:
        feeder.join()
    group.check_quiet(members)
