#!/usr/bin/env python
"""Snapshot cost and crash recovery time (a script, not a test).

Run it by hand::

    python bench/snapshot.py                  # both parts
    python bench/snapshot.py --part size      # snapshot write/load time and size only (no broker)
    python bench/snapshot.py --part recovery  # kill -9 -> first new prediction, Kafka mode
    python bench/snapshot.py --profile        # also cProfile saving the largest TAN

Part 1, **size**: NaiveBayes, AODE and TAN trained on synthetic categorical
events (``--events`` per model, default 50 per value of an attribute, so every
value appears) over A attributes x V values x C classes, up to 50 x 20 x 10.
For each: the snapshot's size, ``model.state()`` alone, ``stream_nb.save``
(state, one write of every array, fsync, rename, directory fsync) and
``stream_nb.load`` (one read, SHA-256 check, rebuild), best of ``--repeat``.
The files go to ``--dir`` (default: a temporary directory on the same disk as
the repository, so fsync means the real disk).

Part 2, **recovery**: a Kafka broker (``KAFKA_BOOTSTRAP_SERVERS``, or a local
one started with ``deploy/kafka/kafka_local.py`` and stopped at the end), a
3-partition input topic, ``stream-nb run --model tan --snapshot-dir``. Once
half the events have outputs and a snapshot exists, the daemon is killed with
SIGKILL; new events are produced and the daemon restarted at once. Recovery
time = from the kill to the first output of a new event, as seen by a consumer
of the output topic (it includes the process start, the snapshot restore, the
group join and re-processing what followed the last snapshot). Variants:
``static`` (``group_instance_id`` set: the restarted member takes its
partitions back at once), ``dynamic`` (no static membership,
``session_timeout_ms=6000``: the group waits for the killed member's session to
expire before it reassigns the partitions) and, with ``--variants default``,
kafka-python's defaults (``session_timeout_ms=45000``).
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import os
import pstats
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import stream_nb  # noqa: E402
from stream_nb import AODE, TAN, NaiveBayes, Tree, snapshots  # noqa: E402

SIZES = [(10, 5, 2), (20, 10, 5), (50, 20, 10)]


# ------------------------------------------------------------------- part 1


def train(cls, attributes: int, values: int, classes: int, events: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, values, size=(events, attributes))
    X = pd.DataFrame({f"a{j}": pd.Series([f"v{c}" for c in codes[:, j]], dtype=object) for j in range(attributes)})
    # every value of every attribute appears: the first `values` rows walk through them
    for j in range(attributes):
        X.iloc[:values, j] = [f"v{c}" for c in range(values)]
    y = pd.Series([f"c{c}" for c in rng.integers(0, classes, size=events)])
    y.iloc[:classes] = [f"c{c}" for c in range(classes)]
    model = cls(search=Tree(rebuild_every=0)) if cls is TAN else cls()
    for start in range(0, events, 1000):
        model.learn_many(X.iloc[start:start + 1000], y.iloc[start:start + 1000])
    if cls is TAN:
        model.rebuild()
    return model


def timed(fn, repeat: int) -> tuple[float, float]:
    """(best, worst) wall time of ``repeat`` calls."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times), max(times)


def part_size(args) -> None:
    directory = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix=".bench-snapshot-", dir=REPO))
    directory.mkdir(parents=True, exist_ok=True)
    rows = []
    try:
        for attributes, values, classes in SIZES:
            for cls in (NaiveBayes, AODE, TAN):
                events = args.events or values * 50
                model = train(cls, attributes, values, classes, events)
                path = directory / f"{cls.__name__}-{attributes}x{values}x{classes}.snb"
                state_s = timed(model.state, args.repeat)
                save_s = timed(lambda: stream_nb.save(model, path), args.repeat)
                load_s = timed(lambda: stream_nb.load(path), args.repeat)
                verify_s = timed(lambda: snapshots.read(path), args.repeat)
                again = stream_nb.load(path)
                assert again._stats.counts() == model._stats.counts()
                arrays, _ = model.state()
                rows.append((cls.__name__, f"{attributes} x {values} x {classes}", events,
                             path.stat().st_size, sum(a.nbytes for a in arrays.values()),
                             state_s, save_s, verify_s, load_s))
                if args.profile and cls is TAN and (attributes, values, classes) == SIZES[-1]:
                    profile = cProfile.Profile()
                    profile.enable()
                    stream_nb.save(model, path)
                    profile.disable()
                    pstats.Stats(profile, stream=sys.stderr).sort_stats("cumulative").print_stats(15)
                print(f"  {rows[-1][0]} {rows[-1][1]}: {rows[-1][3]:,} bytes, save {save_s[0]:.3f} s, "
                      f"load {load_s[0]:.3f} s", file=sys.stderr)
    finally:
        if not args.dir:
            shutil.rmtree(directory, ignore_errors=True)
    print(f"\n(seconds: best / worst of {args.repeat})\n")
    print("| model | attributes x values x classes | events | file bytes | array bytes | state() s | "
          "save s | read+verify s | load s |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, shape, events, size, nbytes, state_s, save_s, verify_s, load_s in rows:
        cells = " | ".join(f"{a:.4f} / {b:.4f}" for a, b in (state_s, save_s, verify_s, load_s))
        print(f"| {name} | {shape} | {events:,} | {size:,} | {nbytes:,} | {cells} |")


# ------------------------------------------------------------------- part 2


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


def events_json(n: int, attributes: int, values: int, classes: int, prefix: str, seed: int) -> list[bytes]:
    import orjson

    rng = np.random.default_rng(seed)
    codes = rng.integers(0, values, size=(n, attributes))
    labels = rng.integers(0, classes, size=n)
    out = []
    for i in range(n):
        event = {"id": f"{prefix}{i}", **{f"a{j}": f"v{codes[i, j]}" for j in range(attributes)},
                 "label": f"c{labels[i]}"}
        out.append(orjson.dumps(event))
    return out


def produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=20, batch_size=1 << 20)
    for i, v in enumerate(values):
        producer.send(topic, value=v, partition=i % 3)
    producer.flush()
    producer.close()


class Outputs:
    def __init__(self, bootstrap: str, topic: str):
        from kafka import KafkaConsumer

        self.count = 0
        self.first_new: float | None = None
        self._stop = threading.Event()
        self._consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=None,
                                       auto_offset_reset="earliest", enable_auto_commit=False)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            for batch in self._consumer.poll(timeout_ms=50).values():
                for record in batch:
                    self.count += 1
                    if self.first_new is None and b'"id":"new-' in record.value:
                        self.first_new = time.time()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self._consumer.close()


def wait(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.005)


def recovery_once(bootstrap: str, shape: tuple[int, int, int], events: int, variant: str, workdir: Path) -> dict:
    from kafka import KafkaAdminClient

    attributes, values, classes = shape
    name = uuid.uuid4().hex[:8]
    topic_in, topic_out = f"bench-rec-in-{name}", f"bench-rec-out-{name}"
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics({topic_in: {"num_partitions": 3, "replication_factor": 1},
                         topic_out: {"num_partitions": 3, "replication_factor": 1}})
    admin.close()
    produce(bootstrap, topic_in, events_json(events, attributes, values, classes, "old-", 1))
    snaps = workdir / f"snaps-{name}"
    kafka_config = ["linger_ms=2"]
    if variant == "static":
        kafka_config += [f"group_instance_id=bench-{name}", "session_timeout_ms=10000"]
    elif variant == "dynamic":
        kafka_config += ["session_timeout_ms=6000", "heartbeat_interval_ms=2000"]
    elif variant != "default":
        raise ValueError(f"unknown variant {variant!r}: expected static, dynamic or default")
    cmd = [sys.executable, "-m", "stream_nb.cli", "run", "--model", "tan", "--bootstrap-servers", bootstrap,
           "--input-topic", topic_in, "--output-topic", topic_out, "--group-id", f"bench-{name}",
           "--snapshot-dir", str(snaps), "--snapshot-interval", "2", "--metrics-interval", "0",
           "--kafka-config", *kafka_config]
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAM_NB_")}
    log = open(workdir / f"daemon-{name}.log", "wb")
    outputs = Outputs(bootstrap, topic_out)
    daemon = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log, env=env, cwd=REPO)
    try:
        wait(lambda: outputs.count >= events // 2 and any(snaps.glob("snapshot-*.snb")), 600,
             "half the outputs and a snapshot")
        daemon.send_signal(signal.SIGKILL)
        killed = time.time()
        daemon.wait()
        snapshot = sorted(snaps.glob("snapshot-*.snb"))[-1]
        size = snapshot.stat().st_size
        done_before = outputs.count
        daemon = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log, env=env, cwd=REPO)
        produce(bootstrap, topic_in, events_json(20, attributes, values, classes, "new-", 2))
        wait(lambda: outputs.first_new is not None, 600, "the first new prediction")
        recovered = outputs.first_new - killed
    finally:
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon.wait(timeout=60)
        except subprocess.TimeoutExpired:
            daemon.kill()
        outputs.close()
        log.close()
        shutil.rmtree(snaps, ignore_errors=True)
    return {"shape": shape, "variant": variant, "events": events, "snapshot_bytes": size,
            "outputs_before_kill": done_before, "recovery_s": recovered}


def part_recovery(args) -> None:
    rows = []
    workdir = Path(tempfile.mkdtemp(prefix="stream-nb-bench-recovery-"))
    with broker() as bootstrap:
        for shape, events in (((4, 3, 2), 20_000), (SIZES[-1], 4_000)):
            for variant in args.variants.split(","):
                row = recovery_once(bootstrap, shape, events, variant, workdir)
                print(f"  {row}", file=sys.stderr)
                rows.append(row)
    shutil.rmtree(workdir, ignore_errors=True)
    print("\n| TAN attributes x values x classes | variant | events | snapshot bytes | kill -9 -> first new "
          "prediction, s |")
    print("|---|---|---:|---:|---:|")
    for r in rows:
        a, v, c = r["shape"]
        print(f"| {a} x {v} x {c} | {r['variant']} | {r['events']:,} | {r['snapshot_bytes']:,} | "
              f"{r['recovery_s']:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("size", "recovery", "both"), default="both")
    parser.add_argument("--events", type=int, default=0, help="events per model in part 1 (default: 50 per value)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", default=None, help="where part 1 writes its files")
    parser.add_argument("--profile", action="store_true", help="cProfile saving the largest TAN")
    parser.add_argument("--variants", default="static,dynamic",
                        help="recovery variants, comma-separated: static, dynamic, default")
    args = parser.parse_args()
    if args.part in ("size", "both"):
        part_size(args)
    if args.part in ("recovery", "both"):
        part_recovery(args)


if __name__ == "__main__":
    main()
