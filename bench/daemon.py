#!/usr/bin/env python
"""End-to-end benchmark of ``stream-nb run`` in Kafka mode, beside two hand-written loops.

Run it by hand (it is not a test)::

    python bench/daemon.py                      # ~100k events, every contender
    python bench/daemon.py --events 20000 --contenders nb,handwritten,raw
    python bench/daemon.py --profile nb         # also cProfile the daemon's drain
    python bench/daemon.py --contenders nb,nb-confluent,raw,raw-confluent --profile nb-confluent
    python bench/daemon.py --engine --events 60000   # no broker: the engine's CPU per event over a poll
    python bench/daemon.py --engine --events 60000 --runs 12   # more runs: each poll's least, steadier under load

Broker: ``KAFKA_BOOTSTRAP_SERVERS`` if set, else a local single-node broker
started with ``deploy/kafka/kafka_local.py`` in a temporary directory (stopped
at the end). Everything below runs against that one broker, in one run.

Events: river's Agrawal generator (seed 42) as JSON objects
``{"id", salary, commission, age, hvalue, hyears, loan (floats), elevel, car,
zipcode (ints: categorical for stream_nb), "label"}``, keyed by the id, over a
3-partition input topic.

Contenders, each a separate process reading the same events:

* ``nb``, ``aode``, ``tan``: ``stream-nb run --model ...`` with default settings
  (kafka-python); ``nb-confluent``, ``aode-confluent``, ``tan-confluent``: the
  same with ``--kafka-client confluent`` (confluent-kafka, librdkafka);
  ``nb-eo``, ``nb-confluent-eo``, ...: the same with ``--exactly-once`` (outputs,
  dead letters and input offsets in one transaction per checkpoint; not with ``--cpu``).
* ``handwritten``: what a user would write: a ``KafkaConsumer`` iterator,
  ``orjson``, river's ``GaussianNB`` (predict_proba_one, then learn_one), a
  default ``KafkaProducer``; auto-commit.
* ``raw``: the ceiling: ``poll()`` batches re-sent unchanged by a producer tuned
  like stream_nb's sink, flush then commit every 10,000 records; no decoding, no model.
* ``raw-confluent``: the same ceiling with confluent-kafka (``consume()``
  batches re-sent by a producer configured like stream_nb's confluent sink).
* ``noop``, ``noop-confluent`` (diagnostic): stream_nb's engine and Kafka
  connectors in-process around a constant river model (``predict_proba_one``,
  ``learn_one``): what a model that is not stream_nb's pays in the daemon, whose
  engine then takes each event on its own (``Engine.process``), where a stream_nb
  model takes a poll's runs through its kernel.

kafka-python validates and computes CRC32C of every record batch, in pure Python
unless the ``crc32c`` package is importable; the table says which one ran.

Two measurements, kept apart:

* **Throughput (drain rate)**: all events are in the input topic before the
  contender starts. Rate = outputs / (broker append time of the last output -
  that of the first output), so process start-up and the group join are not
  counted.
* **Latency (paced)**: a fresh input topic; a warm-up until outputs flow, then
  a producer paced at ``--rate`` events/s. Latency of an event = broker append
  time of its output (the output topics use ``LogAppendTime``) - the create
  time the bench's producer stamped on the input; p50/p99 over the paced events.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import pstats
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from _null import Null  # bench/ is the script's directory, first on sys.path

REPO = Path(__file__).resolve().parent.parent
PARTITIONS = 3
MODELS = ("nb", "aode", "tan")
_AT_LEAST_ONCE = (*MODELS, *(f"{m}-confluent" for m in MODELS))
#: ``stream-nb run`` contenders; a ``-eo`` suffix runs it with ``--exactly-once`` (a snapshot directory of its own)
STREAM_NB_MODELS = (*_AT_LEAST_ONCE, *(f"{m}-eo" for m in _AT_LEAST_ONCE))
ALL_CONTENDERS = (*STREAM_NB_MODELS, "handwritten", "raw", "raw-confluent", "noop", "noop-confluent")
WORKERS = ("handwritten", "raw", "raw-confluent", "noop", "noop-confluent")
FLOAT_FEATURES = ("salary", "commission", "age", "hvalue", "hyears", "loan")


# ----------------------------------------------------------------- workers
# Both baselines run as `python bench/daemon.py --worker <kind> ...` so that every
# contender is a process of its own, like the daemon.


def _stop_on_sigterm():
    def handler(signum, frame):
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, handler)


def worker_handwritten(bootstrap: str, input_topic: str, output_topic: str, group: str) -> None:
    """The loop a user would write with kafka-python, orjson and river."""
    import orjson
    from kafka import KafkaConsumer, KafkaProducer
    from river.naive_bayes import GaussianNB

    _stop_on_sigterm()
    consumer = KafkaConsumer(input_topic, bootstrap_servers=bootstrap, group_id=group,
                             auto_offset_reset="earliest")
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    model = GaussianNB()
    try:
        for message in consumer:
            event = orjson.loads(message.value)
            event_id = event.pop("id", None)
            label = event.pop("label", None)
            proba = model.predict_proba_one(event)
            prediction = max(proba, key=proba.get) if proba else None
            if label is not None:
                model.learn_one(event, label)
            output = {"id": event_id, "prediction": prediction,
                      "proba": {str(k): v for k, v in proba.items()},
                      "source": {"partition": message.partition, "offset": message.offset}}
            producer.send(output_topic, orjson.dumps(output), key=message.key)
    except SystemExit:
        pass
    finally:
        producer.flush()
        producer.close()
        consumer.close()


def worker_raw(bootstrap: str, input_topic: str, output_topic: str, group: str) -> None:
    """Consume and re-produce unchanged: the ceiling of any loop on this client and broker."""
    from kafka import KafkaConsumer, KafkaProducer

    _stop_on_sigterm()
    consumer = KafkaConsumer(input_topic, bootstrap_servers=bootstrap, group_id=group,
                             auto_offset_reset="earliest", enable_auto_commit=False,
                             metrics_enabled=False)
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True,
                             linger_ms=5, batch_size=262_144, metrics_enabled=False)
    since_commit, last_commit = 0, time.monotonic()
    try:
        while True:
            batches = consumer.poll(timeout_ms=200, max_records=500)
            for messages in batches.values():
                for m in messages:
                    producer.send(output_topic, m.value, key=m.key)
                since_commit += len(messages)
            if since_commit >= 10_000 or (since_commit and time.monotonic() - last_commit >= 5.0):
                producer.flush()
                consumer.commit()
                since_commit, last_commit = 0, time.monotonic()
    except SystemExit:
        pass
    finally:
        producer.flush()
        consumer.close()
        producer.close()


def worker_raw_confluent(bootstrap: str, input_topic: str, output_topic: str, group: str) -> None:
    """The ceiling with confluent-kafka: consume() batches re-sent, flush then commit every 10,000 records."""
    from confluent_kafka import Consumer, Producer

    _stop_on_sigterm()
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                         "linger.ms": 5, "batch.size": 262_144, "delivery.report.only.error": True})
    consumer.subscribe([input_topic])
    since_commit, last_commit = 0, time.monotonic()
    try:
        while True:
            messages = consumer.consume(500, 0)  # what is there; else wait for one (like kafka-python's poll)
            if not messages:
                first = consumer.poll(0.2)
                messages = [first, *consumer.consume(499, 0)] if first is not None else []
            for m in messages:
                if m.error() is None:
                    try:
                        producer.produce(output_topic, m.value(), m.key())
                    except BufferError:
                        producer.poll(0.05)
                        producer.produce(output_topic, m.value(), m.key())
            since_commit += len(messages)
            if since_commit >= 10_000 or (since_commit and time.monotonic() - last_commit >= 5.0):
                producer.flush()
                consumer.commit(asynchronous=False)
                since_commit, last_commit = 0, time.monotonic()
    except SystemExit:
        pass
    finally:
        producer.flush()
        consumer.close()


def worker_engine_noop(bootstrap: str, input_topic: str, output_topic: str, group: str,
                       client: str = "kafka-python") -> None:
    """stream_nb's engine and Kafka connectors around a constant river model, which the engine takes an event
    at a time (``Engine.process``): the daemon's cost for a model that is not stream_nb's."""
    from connectors import kafka as connector
    from stream_nb.engine import Engine

    class Constant:
        def predict_proba_one(self, x):
            return {0: 0.5, 1: 0.5}

        def predict_one(self, x):
            return 0

        def learn_one(self, x, y):
            pass

    config = {"bootstrap_servers": bootstrap, "input_topic": input_topic, "output_topic": output_topic,
              "dead_letter_topic": f"{input_topic}.dlq", "group_id": group, "kafka_client": client}
    engine = Engine(Constant(), connector.make_source(config), connector.make_sink(config),
                    connector.make_dead_letter_sink(config), config={"model_name": "constant"})
    signal.signal(signal.SIGTERM, lambda signum, frame: engine.stop())
    try:
        engine.run()
    finally:
        for part in (engine.source, engine.sink, engine.dead_letters):
            part.close()


def worker_cpu(kind: str, bootstrap: str, input_topic: str, n: str) -> None:
    """CPU time per event of draining ``n`` events in this process: its main thread, and all its threads.

    ``raw``/``raw-confluent``: consume -> produce; ``nb``/``nb-confluent`` (any
    model contender): stream_nb's engine and connectors around the model. Wall
    time on a loaded machine measures the other jobs as much as the contender;
    CPU time per event measures the contender's own work. Prints one JSON line.
    """
    import json
    import threading

    n = int(n)
    group = f"bench-cpu-{uuid.uuid4().hex[:8]}"
    output_topic = f"bench-cpu-out-{uuid.uuid4().hex[:8]}"
    model, _, client = kind.partition("-")
    client = client or "kafka-python"
    done, clock = 0, {}

    def start():
        clock.update(wall=time.perf_counter(), cpu=time.process_time(), main=time.thread_time())

    if model == "raw" and client == "confluent":
        from confluent_kafka import Consumer, Producer

        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                             "enable.auto.commit": False})
        producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                             "linger.ms": 5, "batch.size": 262_144, "delivery.report.only.error": True})
        consumer.subscribe([input_topic])
        while done < n:
            messages = consumer.consume(500, 0) or consumer.consume(1, 0.5)
            if messages and not clock:
                start()
            for m in messages:
                producer.produce(output_topic, m.value(), m.key())
            done += len(messages)
        producer.flush()
    elif model == "raw":
        from kafka import KafkaConsumer, KafkaProducer

        consumer = KafkaConsumer(input_topic, bootstrap_servers=bootstrap, group_id=group,
                                 auto_offset_reset="earliest", enable_auto_commit=False, metrics_enabled=False)
        producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True,
                                 linger_ms=5, batch_size=262_144, metrics_enabled=False)
        while done < n:
            batches = consumer.poll(timeout_ms=500, max_records=500)
            if batches and not clock:
                start()
            for messages in batches.values():
                for m in messages:
                    producer.send(output_topic, m.value, key=m.key)
                done += len(messages)
        producer.flush()
    else:
        import stream_nb
        from connectors import kafka as connector
        from stream_nb.daemon import prepare_process
        from stream_nb.engine import Engine

        learner = {"nb": stream_nb.NaiveBayes, "tan": stream_nb.TAN, "aode": stream_nb.AODE}[model]()
        prepare_process(learner)  # as stream-nb run does before its first poll
        config = {"bootstrap_servers": bootstrap, "input_topic": input_topic, "output_topic": output_topic,
                  "dead_letter_topic": f"{output_topic}.dlq", "group_id": group, "kafka_client": client}
        engine = Engine(learner, connector.make_source(config), connector.make_sink(config),
                        connector.make_dead_letter_sink(config), config={"model_name": model})
        while done < n:
            records = engine.source.poll(500, 0.5)
            if records and not clock:
                start()
            if records:
                engine.process_many(records, time.monotonic())
            done += len(records)
        engine.flush()
    wall = time.perf_counter() - clock["wall"]
    print(json.dumps({"events": done, "wall_s": wall, "main_us": (time.thread_time() - clock["main"]) / done * 1e6,
                      "process_us": (time.process_time() - clock["cpu"]) / done * 1e6,
                      "threads": threading.active_count()}))
    os._exit(0)  # the clients' background threads are not worth a clean shutdown here


def cpu_cost(kind: str, kafka: Kafka, input_topic: str, n: int) -> dict:
    """Run :func:`worker_cpu` in a process of its own; its JSON result."""
    import json

    done = subprocess.run([sys.executable, __file__, "--cpu-worker", kind, kafka.bootstrap, input_topic, str(n)],
                          capture_output=True, text=True, cwd=REPO, timeout=1800, stdin=subprocess.DEVNULL)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"cpu worker {kind} failed: {done.stderr[-2000:]}")
    return json.loads(lines[-1])


def engine_cpu(n: int, runs: int = 5, profile: bool = False) -> None:
    """Main-thread CPU per event of ``Engine.process_many`` alone (NaiveBayes, polls of 500), over the bench's
    events as records built as the Kafka source builds them, sent to a sink that keeps nothing: the daemon's
    own work without the Kafka client's. The median of ``runs`` runs, each a fresh model, and the sum of each
    poll's least time over the runs (steadier on a loaded machine); with ``profile`` also a cProfile of one
    run, timed by the main thread's CPU clock."""
    import cProfile

    import stream_nb
    from stream_nb.daemon import prepare_process
    from stream_nb.engine import Engine, PositionColumns, RecordColumns

    events = make_events(n)
    polls = []
    for start in range(0, n, 500):
        offsets = list(range(start // PARTITIONS, start // PARTITIONS + len(events[start:start + 500])))
        parts = [i % PARTITIONS for i in range(len(offsets))]
        polls.append(RecordColumns([v for _, v in events[start:start + 500]], [k for k, _ in events[start:start + 500]],
                                   [f"in-{p}" for p in parts],
                                   PositionColumns({"topic": "in"}, {"partition": parts, "offset": offsets}),
                                   [o + 1 for o in offsets]))

    def run(profiler=None) -> list[float]:
        """Each poll's main-thread CPU seconds, on a fresh model."""
        model = stream_nb.NaiveBayes()
        prepare_process(model)
        engine = Engine(model, Null(), Null(), Null(), config={"model_name": "nb"})
        clock, spent = time.thread_time, []
        if profiler is not None:
            profiler.enable()
        for records in polls:
            start = clock()
            engine.process_many(records, time.monotonic())
            spent.append(clock() - start)
        if profiler is not None:
            profiler.disable()
        return spent

    polled = [run() for _ in range(runs)]
    times = [sum(spent) / n * 1e6 for spent in polled]
    # each poll at its least over the runs: the work of the poll with little of other jobs' interference
    least = sum(map(min, zip(*polled))) / n * 1e6
    print(f"engine alone (process_many, NaiveBayes, {n:,} events in polls of 500): main-thread CPU "
          f"{statistics.median(times):.2f} us/event, median of {runs} ({', '.join(f'{t:.2f}' for t in times)}); "
          f"each poll at its least over the runs: {least:.2f}")
    if profile:
        profiler = cProfile.Profile(time.thread_time)  # main-thread CPU, as the runs are timed (not wall time)
        run(profiler)
        print("```")
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(30)
        print("```")


# ----------------------------------------------------------------- broker & data


@contextlib.contextmanager
def broker():
    env = os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "").strip()
    if env:
        print(f"broker: KAFKA_BOOTSTRAP_SERVERS={env}", file=sys.stderr)
        yield env
        return
    sys.path.insert(0, str(REPO / "deploy" / "kafka"))
    import kafka_local

    with tempfile.TemporaryDirectory(prefix="stream-nb-bench-") as d:
        bootstrap = kafka_local.start(d)
        print(f"broker: local Kafka {kafka_local.kafka_version()} at {bootstrap} ({d})", file=sys.stderr)
        try:
            yield bootstrap
        finally:
            kafka_local.stop(d)


def make_events(n: int, start_id: int = 0) -> list[tuple[bytes, bytes]]:
    """(key, value) pairs of Agrawal events as JSON."""
    import orjson
    from river.datasets import synth

    out = []
    for i, (x, y) in enumerate(synth.Agrawal(seed=42).take(start_id + n)):
        if i < start_id:
            continue
        event = {"id": i}
        for name, value in x.items():
            event[name] = float(value) if name in FLOAT_FEATURES else int(value)
        event["label"] = int(y)
        out.append((str(i).encode(), orjson.dumps(event)))
    return out


class Kafka:
    """The bench's own admin, producer and readers."""

    def __init__(self, bootstrap: str):
        from kafka import KafkaAdminClient

        self.bootstrap = bootstrap
        self.admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        self.topics: list[str] = []

    def topic(self, prefix: str, log_append_time: bool = False) -> str:
        name = f"bench-{prefix}-{uuid.uuid4().hex[:8]}"
        configs = {"message.timestamp.type": "LogAppendTime"} if log_append_time else {}
        self.admin.create_topics({name: {"num_partitions": PARTITIONS, "replication_factor": 1,
                                         "configs": configs}}, wait_for_metadata=True)
        self.topics.append(name)
        return name

    def produce(self, topic: str, events, rate: float | None = None) -> None:
        """Send keyed events, spread over the partitions by key; paced when rate is given."""
        from kafka import KafkaProducer

        producer = KafkaProducer(bootstrap_servers=self.bootstrap, acks="all", linger_ms=0 if rate else 20,
                                 batch_size=262_144, metrics_enabled=False)
        try:
            start = time.monotonic()
            for i, (key, value) in enumerate(events):
                if rate:
                    wait = start + i / rate - time.monotonic()
                    if wait > 0:
                        time.sleep(wait)
                producer.send(topic, value=value, key=key, partition=int(key) % PARTITIONS,
                              timestamp_ms=int(time.time() * 1000) if rate else None)
            producer.flush()
        finally:
            producer.close()

    def count(self, topic: str) -> int:
        from kafka import KafkaConsumer
        from kafka.structs import TopicPartition

        consumer = KafkaConsumer(bootstrap_servers=self.bootstrap, metrics_enabled=False)
        try:
            ends = consumer.end_offsets([TopicPartition(topic, p) for p in range(PARTITIONS)])
        finally:
            consumer.close()
        return sum(ends.values())

    def read(self, topic: str, n: int, timeout: float = 120.0) -> list:
        from kafka import KafkaConsumer

        consumer = KafkaConsumer(topic, bootstrap_servers=self.bootstrap, group_id=None,
                                 auto_offset_reset="earliest", enable_auto_commit=False,
                                 metrics_enabled=False, max_partition_fetch_bytes=8 << 20)
        out: list = []
        try:
            deadline = time.monotonic() + timeout
            while len(out) < n and time.monotonic() < deadline:
                for batch in consumer.poll(timeout_ms=200, max_records=10_000).values():
                    out.extend(batch)
        finally:
            consumer.close()
        return out

    def wait_for(self, topic: str, n: int, proc: subprocess.Popen, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while self.count(topic) < n:
            if proc.poll() is not None:
                raise RuntimeError(f"contender exited with status {proc.returncode} before {n} outputs")
            if time.monotonic() > deadline:
                raise RuntimeError(f"only {self.count(topic)} of {n} outputs after {timeout:.0f} s")
            time.sleep(0.2)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.admin.delete_topics(self.topics, raise_errors=False)
        self.admin.close()


# ----------------------------------------------------------------- contenders


def contender_cmd(kind: str, bootstrap: str, input_topic: str, output_topic: str, group: str,
                  profile: Path | None = None) -> list[str]:
    if kind in STREAM_NB_MODELS:
        model, _, client = kind.removesuffix("-eo").partition("-")
        head = [sys.executable, "-m", "cProfile", "-o", str(profile), "-m", "stream_nb.cli"] if profile else \
            [sys.executable, "-m", "stream_nb.cli"]
        once = ["--exactly-once", "--snapshot-dir", tempfile.mkdtemp(prefix="stream-nb-bench-snaps-")] \
            if kind.endswith("-eo") else []
        return head + ["run", "--model", model, "--bootstrap-servers", bootstrap, "--input-topic", input_topic,
                       "--output-topic", output_topic, "--group-id", group, "--metrics-interval", "0",
                       "--log-level", "WARNING", "--kafka-client", client or "kafka-python", *once]
    return [sys.executable, __file__, "--worker", kind, bootstrap, input_topic, output_topic, group]


def start(kind: str, kafka: Kafka, input_topic: str, output_topic: str, log_dir: Path,
          profile: Path | None = None) -> subprocess.Popen:
    group = f"bench-{kind}-{uuid.uuid4().hex[:8]}"
    log = open(log_dir / f"{kind}-{output_topic}.log", "wb")
    return subprocess.Popen(contender_cmd(kind, kafka.bootstrap, input_topic, output_topic, group, profile),
                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=REPO)


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    if proc.returncode != 0:
        print(f"warning: contender exited with status {proc.returncode}", file=sys.stderr)


def throughput(kind: str, kafka: Kafka, input_topic: str, n: int, log_dir: Path,
               profile: Path | None = None, timeout: float | None = None) -> float:
    """Drain rate in events/s over the pre-produced input topic."""
    output_topic = kafka.topic(f"out-{kind}", log_append_time=True)
    proc = start(kind, kafka, input_topic, output_topic, log_dir, profile)
    try:
        kafka.wait_for(output_topic, n, proc, timeout=timeout or max(120.0, n / 200))
    finally:
        stop(proc)
    stamps = [r.timestamp for r in kafka.read(output_topic, n)]
    first, last = min(stamps), max(stamps)
    return (len(stamps) - 1) / max((last - first) / 1000, 1e-3)


def latency(kind: str, kafka: Kafka, rate: float, seconds: float, log_dir: Path) -> tuple[float, float, int]:
    """(p50 ms, p99 ms, events) of produce -> output append, paced at `rate` events/s."""
    input_topic = kafka.topic(f"lat-in-{kind}")
    output_topic = kafka.topic(f"lat-out-{kind}", log_append_time=True)
    proc = start(kind, kafka, input_topic, output_topic, log_dir)
    warm = 0
    try:
        # warm-up: until the contender has joined its group and answers
        deadline = time.monotonic() + 120
        while kafka.count(output_topic) == 0:
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError(f"{kind} produced no output during warm-up")
            kafka.produce(input_topic, make_events(50, start_id=warm))
            warm += 50
            time.sleep(0.2)
        kafka.produce(input_topic, make_events(500, start_id=warm))
        warm += 500
        kafka.wait_for(output_topic, warm, proc, timeout=120)
        n = int(rate * seconds)
        kafka.produce(input_topic, make_events(n, start_id=warm), rate=rate)
        kafka.wait_for(output_topic, warm + n, proc, timeout=120)
    finally:
        stop(proc)
    sent = {r.key: r.timestamp for r in kafka.read(input_topic, warm + n) if int(r.key) >= warm}
    delays = sorted(r.timestamp - sent[r.key] for r in kafka.read(output_topic, warm + n) if r.key in sent)
    q = statistics.quantiles(delays, n=100, method="inclusive")
    return q[49], q[98], len(delays)


# ----------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=100_000, help="events in the throughput topic")
    parser.add_argument("--rate", type=float, default=1000.0, help="paced events/s for the latency run")
    parser.add_argument("--seconds", type=float, default=10.0, help="length of the paced latency run")
    parser.add_argument("--contenders", default=",".join(ALL_CONTENDERS),
                        help=f"comma-separated subset of {','.join(ALL_CONTENDERS)}")
    parser.add_argument("--no-latency", action="store_true", help="measure throughput only")
    parser.add_argument("--drain-timeout", type=float, default=None,
                        help="seconds a contender may take to drain the topic (default: max(120, events/200))")
    parser.add_argument("--profile", metavar="CONTENDER", choices=STREAM_NB_MODELS,
                        help="also run the daemon with this model under cProfile and print the top functions")
    parser.add_argument("--cpu", action="store_true",
                        help="also measure the CPU time per event of each contender (and raw, raw-confluent) "
                             "draining the same events in-process: robust on a loaded machine")
    parser.add_argument("--engine", action="store_true",
                        help="no broker: only the main-thread CPU per event of the engine's process_many over the "
                             "events (NaiveBayes; with --profile, its cProfile)")
    parser.add_argument("--runs", type=int, default=5,
                        help="with --engine: runs on fresh models (the median, and each poll's least over the runs, "
                             "summed: the steadier figure under load)")
    parser.add_argument("--worker", nargs=5, metavar=("KIND", "BOOTSTRAP", "IN", "OUT", "GROUP"),
                        help=argparse.SUPPRESS)
    parser.add_argument("--cpu-worker", nargs=4, metavar=("KIND", "BOOTSTRAP", "IN", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.cpu_worker:
        worker_cpu(*args.cpu_worker)
        return 0
    if args.engine:
        engine_cpu(args.events, args.runs, profile=args.profile is not None)
        return 0
    if args.worker:
        kind, *rest = args.worker
        {"handwritten": worker_handwritten, "raw": worker_raw, "raw-confluent": worker_raw_confluent,
         "noop": worker_engine_noop,
         "noop-confluent": lambda *a: worker_engine_noop(*a, client="confluent")}[kind](*rest)
        return 0

    contenders = [c.strip() for c in args.contenders.split(",") if c.strip()]
    unknown = sorted(set(contenders) - set(ALL_CONTENDERS))
    if unknown:
        parser.error(f"unknown contenders {unknown}; choose from {ALL_CONTENDERS}")

    log_dir = Path(tempfile.mkdtemp(prefix="stream-nb-bench-logs-"))
    print(f"contender logs in {log_dir}", file=sys.stderr)
    with broker() as bootstrap:
        kafka = Kafka(bootstrap)
        try:
            t0 = time.monotonic()
            events = make_events(args.events)
            input_topic = kafka.topic("in")
            kafka.produce(input_topic, events)
            print(f"pre-produced {len(events)} events to {input_topic} in {time.monotonic() - t0:.1f} s",
                  file=sys.stderr)
            results: dict[str, dict] = {}
            for kind in contenders:
                rate = throughput(kind, kafka, input_topic, len(events), log_dir, timeout=args.drain_timeout)
                results[kind] = {"throughput": rate}
                print(f"{kind}: drain {rate:,.0f} events/s", file=sys.stderr)
            if not args.no_latency:
                for kind in contenders:
                    p50, p99, n = latency(kind, kafka, args.rate, args.seconds, log_dir)
                    results[kind].update(p50=p50, p99=p99, paced=n)
                    print(f"{kind}: latency p50 {p50:.1f} ms, p99 {p99:.1f} ms over {n} events",
                          file=sys.stderr)
            if args.cpu:
                for kind in dict.fromkeys([k for k in contenders if k in _AT_LEAST_ONCE or k.startswith("raw")]
                                          + ["raw", "raw-confluent"]):
                    cost = cpu_cost(kind, kafka, input_topic, len(events))
                    results.setdefault(kind, {}).update(cpu=cost)
                    print(f"{kind}: cpu {cost['main_us']:.1f} us/event on its main thread, "
                          f"{cost['process_us']:.1f} us/event in all its threads", file=sys.stderr)
            if args.profile:
                prof = log_dir / f"{args.profile}.prof"
                throughput(args.profile, kafka, input_topic, len(events), log_dir, profile=prof)
        finally:
            kafka.close()

    print(table(results, args, len(events)))
    for model in MODELS:  # the confluent client's gain, in this run
        kp, cf = results.get(model, {}), results.get(f"{model}-confluent", {})
        if "cpu" in kp and "cpu" in cf:
            print(f"{model}-confluent / {model}: {kp['cpu']['main_us'] / cf['cpu']['main_us']:.2f}x less CPU per "
                  f"event on the main thread ({cf['cpu']['main_us']:.1f} vs {kp['cpu']['main_us']:.1f} us)")
        if "throughput" in kp and "throughput" in cf:
            line = f"{model}-confluent / {model}: {cf['throughput'] / kp['throughput']:.2f}x drain"
            if "raw-confluent" in results:
                line += f", {cf['throughput'] / results['raw-confluent']['throughput']:.0%} of raw-confluent"
            if "p99" in cf and "p99" in kp:
                line += f"; p99 {cf['p99']:.0f} ms vs {kp['p99']:.0f} ms"
            print(line)
    if args.profile:
        print(f"\n### cProfile of `stream-nb run --model {args.profile}` draining {len(events)} events\n")
        print("```")
        stats = pstats.Stats(str(prof))
        stats.sort_stats("tottime").print_stats(25)
        print("```")
    return 0


def crc_impl() -> str:
    from kafka.record import util

    return "C extension (crc32c package)" if util.crc32c_c is not None else "pure Python (no crc32c package)"


def table(results: dict[str, dict], args, n: int) -> str:
    labels = {"nb": "stream_nb NaiveBayes", "aode": "stream_nb AODE", "tan": "stream_nb TAN",
              "nb-confluent": "stream_nb NaiveBayes, confluent-kafka", "aode-confluent": "stream_nb AODE, confluent-kafka",
              "tan-confluent": "stream_nb TAN, confluent-kafka",
              "handwritten": "(a) hand-written kafka-python + orjson + river GaussianNB",
              "raw": "(b) raw consume -> produce, no model (ceiling)",
              "raw-confluent": "(c) raw consume -> produce with confluent-kafka (its ceiling)",
              "noop": "diagnostic: stream_nb engine + connectors, constant river model, event by event",
              "noop-confluent": "diagnostic: stream_nb engine + confluent connectors, constant river model, event by event"}
    labels.update({f"{kind}-eo": f"{labels[kind]}, --exactly-once" for kind in _AT_LEAST_ONCE})
    hand = results.get("handwritten", {}).get("throughput")
    lat = not args.no_latency
    head = "| contender | drain events/s | vs (a) | vs its client's raw ceiling |" + (
        " p50 ms | p99 ms |" if lat else "")
    rule = "|---|---:|---:|---:|" + ("---:|---:|" if lat else "")
    cpu = any("cpu" in r for r in results.values())
    if cpu:
        head += " CPU us/event, main thread | CPU us/event, all threads |"
        rule += "---:|---:|"
    rows = [head, rule]
    for kind, r in results.items():
        if "throughput" not in r:  # measured with --cpu only
            rows.append(f"| {labels[kind]} | - | - | - |" + (" - | - |" if lat else "")
                        + f" {r['cpu']['main_us']:.1f} | {r['cpu']['process_us']:.1f} |")
            continue
        t = r["throughput"]
        raw = results.get("raw-confluent" if "-confluent" in kind else "raw", {}).get("throughput")
        row = f"| {labels[kind]} | {t:,.0f} | {t / hand:.2f}x |" if hand else f"| {labels[kind]} | {t:,.0f} | - |"
        row += f" {t / raw:.0%} |" if raw else " - |"
        if lat:
            row += f" {r.get('p50', float('nan')):.0f} | {r.get('p99', float('nan')):.0f} |"
        if cpu:
            row += (f" {r['cpu']['main_us']:.1f} | {r['cpu']['process_us']:.1f} |" if "cpu" in r else " - | - |")
        rows.append(row)
    notes = [
        "",
        f"Drain: {n:,} Agrawal events already in a {PARTITIONS}-partition topic; outputs / broker append-time "
        f"span of the outputs (start-up and group join excluded).",
    ]
    if lat:
        notes.append(
            f"Latency: producer paced at {args.rate:,.0f} events/s for {args.seconds:.0f} s after a warm-up; "
            f"input create time -> output broker append time (LogAppendTime), ms resolution."
        )
    if cpu:
        notes.append("CPU us/event: the same events drained in-process by the contender's engine and client "
                     "(bench/daemon.py --cpu), thread_time of its main thread and process_time of all its threads.")
    notes.append(f"Machine: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}; broker on the same machine; "
                 f"kafka-python CRC32C: {crc_impl()}.")
    return "\n".join(rows + notes)


if __name__ == "__main__":
    sys.exit(main())
