#!/usr/bin/env python
"""Peak memory of ``stream-nb run`` under a burst of queued events, with and without back-pressure.

Run it by hand (it is not a test; ``tests/test_backpressure.py`` is the small version)::

    python bench/burst.py                          # 1,000,000 events, the default set-ups
    python bench/burst.py --events 200000 --setups default,slow
    python bench/burst.py --setups slow-unbounded --duration 60 --rss-cap-mb 2000

Broker: ``KAFKA_BOOTSTRAP_SERVERS`` if set, else a local single-node broker
started with ``deploy/kafka/kafka_local.py`` in a temporary directory.

All events are produced to a 3-partition input topic *before* the daemon
starts (a bulk producer: 1 MiB batches, lz4 if available, else none), so the
daemon faces the whole backlog at once. Set-ups (``--setups``):

* ``default``: ``stream-nb run`` with default settings. The output keeps up
  with the input on one machine, so this is the common case.
* ``slow``: the output producer made slower than the engine
  (``--kafka-config batch_size=1 max_in_flight_requests_per_connection=1``:
  one record per batch, one request at a time), with checkpoints far apart
  (``--commit-every 100000000 --commit-interval 3600``) so that only the
  back-pressure bounds what waits for the broker (``--max-in-flight``, default 5000).
* ``slow-unbounded``: the same without back-pressure (``--max-in-flight 0``):
  what a daemon without it does. Stopped at ``--rss-cap-mb`` to protect the machine.

Each set-up runs until every event has its output, or ``--duration`` seconds,
or the RSS cap; then SIGTERM. Reported: peak RSS of the daemon process
(``ru_maxrss`` of the reaped child, i.e. the kernel's high-water mark),
outputs delivered, back-pressure pauses (from ``/metrics``), wall time.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PARTITIONS = 3
SLOW_OUTPUT = ["--kafka-config", "batch_size=1", "max_in_flight_requests_per_connection=1"]
NO_CHECKPOINT_BOUND = ["--commit-every", "100000000", "--commit-interval", "3600"]
SETUPS = {
    "default": [],
    "slow": SLOW_OUTPUT + NO_CHECKPOINT_BOUND,
    "slow-unbounded": SLOW_OUTPUT + NO_CHECKPOINT_BOUND + ["--max-in-flight", "0"],
}


@contextlib.contextmanager
def broker():
    env = os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "").strip()
    if env:
        yield env
        return
    sys.path.insert(0, str(REPO / "deploy" / "kafka"))
    import kafka_local

    with tempfile.TemporaryDirectory(prefix="stream-nb-burst-") as d:
        bootstrap = kafka_local.start(d)
        print(f"broker: local Kafka {kafka_local.kafka_version()} at {bootstrap}", file=sys.stderr)
        try:
            yield bootstrap
        finally:
            kafka_local.stop(d)


def event(i: int) -> bytes:
    """A small event (about 90 bytes): two categorical features, one numeric, a label on 3 in 4."""
    color = ("red", "green", "blue")[i % 3]
    shape = ("round", "flat")[(i // 3) % 2]
    label = "" if i % 4 == 3 else f', "label": "{"yes" if (color == "red") ^ (shape == "flat") else "no"}"'
    return f'{{"id": {i}, "color": "{color}", "shape": "{shape}", "size": {(i % 97) / 10.0}{label}}}'.encode()


def produce_bulk(bootstrap: str, topic: str, n: int) -> float:
    """Produce n events round-robin over the partitions as fast as kafka-python goes; return seconds."""
    from kafka import KafkaProducer

    try:
        import lz4  # noqa: F401

        compression = "lz4"
    except ImportError:
        compression = None
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks=1, linger_ms=50, batch_size=1 << 20,
                             compression_type=compression, metrics_enabled=False)
    start = time.monotonic()
    try:
        send = producer.send
        for i in range(n):
            send(topic, value=event(i), partition=i % PARTITIONS)
            if i % 200_000 == 199_999:
                producer.flush()  # kafka-python queues without bound: keep the producer itself small
        producer.flush()
    finally:
        producer.close()
    return time.monotonic() - start


def count(bootstrap: str, topic: str) -> int:
    from kafka import KafkaConsumer
    from kafka.structs import TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, metrics_enabled=False)
    try:
        parts = consumer.partitions_for_topic(topic) or set()
        ends = consumer.end_offsets([TopicPartition(topic, p) for p in parts]) if parts else {}
    finally:
        consumer.close()
    return sum(ends.values())


def scrape(port: int) -> dict[str, float]:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            out[name] = float(value)
    return out


def vm_rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def run(setup: str, bootstrap: str, input_topic: str, n: int, args, log_dir: Path) -> dict:
    from kafka import KafkaAdminClient

    output_topic = f"burst-out-{setup}-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics({output_topic: {"num_partitions": PARTITIONS, "replication_factor": 1}},
                            wait_for_metadata=True)
    finally:
        admin.close()
    log_path = log_dir / f"{setup}.log"
    cmd = [sys.executable, "-m", "stream_nb.cli", "run", "--bootstrap-servers", bootstrap,
           "--input-topic", input_topic, "--output-topic", output_topic,
           "--group-id", f"burst-{setup}-{uuid.uuid4().hex[:8]}", "--metrics-port", "0",
           "--metrics-interval", "0", *SETUPS[setup]]
    if args.max_in_flight is not None and setup == "slow":
        cmd += ["--max-in-flight", str(args.max_in_flight)]
    start = time.monotonic()
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log, stdin=subprocess.DEVNULL, cwd=REPO)
    port = None
    stopped_by = "all outputs delivered"
    metrics: dict[str, float] = {}
    peak_seen = 0.0
    try:
        while True:
            time.sleep(1.0)
            if proc.poll() is not None:
                raise RuntimeError(f"{setup}: the daemon exited with {proc.returncode}; see {log_path}")
            if port is None:
                found = re.search(rb"on http://127\.0\.0\.1:(\d+)", log_path.read_bytes())
                port = int(found.group(1)) if found else None
                continue
            metrics = scrape(port)
            rss = vm_rss_mb(proc.pid)
            peak_seen = max(peak_seen, rss)
            predicted = metrics.get("stream_nb_predictions_total", 0)
            in_flight = metrics.get("stream_nb_output_in_flight", 0)
            consumed = metrics.get("stream_nb_events_consumed_total", 0)
            print(f"  {setup}: {time.monotonic() - start:5.0f} s  consumed {consumed:>9,.0f}  "
                  f"in flight {in_flight:>9,.0f}  rss {rss:7.1f} MB", file=sys.stderr)
            if consumed >= n and in_flight == 0:
                break
            if args.duration and time.monotonic() - start >= args.duration:
                stopped_by = f"--duration {args.duration:g} s"
                break
            if args.rss_cap_mb and rss >= args.rss_cap_mb:
                stopped_by = f"RSS cap {args.rss_cap_mb} MB"
                break
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM if stopped_by == "all outputs delivered" else signal.SIGKILL)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    return {
        "setup": setup, "peak_rss_mb": usage.ru_maxrss / 1024, "stopped_by": stopped_by,
        "consumed": metrics.get("stream_nb_events_consumed_total", 0),
        "delivered": count(bootstrap, output_topic),
        "pauses": metrics.get("stream_nb_backpressure_pauses_total", 0),
        "seconds": time.monotonic() - start, "exit": proc.returncode, "peak_seen_mb": peak_seen,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--setups", default="default,slow,slow-unbounded",
                        help=f"comma-separated subset of {','.join(SETUPS)}")
    parser.add_argument("--duration", type=float, default=120.0,
                        help="stop a set-up after this many seconds (0: only when done)")
    parser.add_argument("--rss-cap-mb", type=float, default=2000.0, help="stop a set-up at this RSS (0: never)")
    parser.add_argument("--max-in-flight", type=int, default=None, help="--max-in-flight of the slow set-up")
    args = parser.parse_args(argv)
    setups = [s.strip() for s in args.setups.split(",") if s.strip()]
    unknown = sorted(set(setups) - set(SETUPS))
    if unknown:
        parser.error(f"unknown set-ups {unknown}; choose from {list(SETUPS)}")
    log_dir = Path(tempfile.mkdtemp(prefix="stream-nb-burst-logs-"))
    results = []
    with broker() as bootstrap:
        from kafka import KafkaAdminClient

        input_topic = f"burst-in-{uuid.uuid4().hex[:8]}"
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        admin.create_topics({input_topic: {"num_partitions": PARTITIONS, "replication_factor": 1}},
                            wait_for_metadata=True)
        admin.close()
        seconds = produce_bulk(bootstrap, input_topic, args.events)
        print(f"produced {args.events:,} events in {seconds:.1f} s ({args.events / seconds:,.0f}/s); "
              f"daemon logs in {log_dir}", file=sys.stderr)
        for setup in setups:
            results.append(run(setup, bootstrap, input_topic, args.events, args, log_dir))
    print(f"| set-up | peak RSS (MB) | events consumed | outputs delivered | back-pressure pauses | "
          f"stopped by | seconds |")
    print("|---|---:|---:|---:|---:|---|---:|")
    for r in results:
        print(f"| {r['setup']} | {r['peak_rss_mb']:.0f} | {r['consumed']:,.0f} | {r['delivered']:,} | "
              f"{r['pauses']:,.0f} | {r['stopped_by']} | {r['seconds']:.0f} |")
    print(f"\n{args.events:,} events (~90 bytes) queued in a {PARTITIONS}-partition topic before the daemon "
          f"started; peak RSS = ru_maxrss of the daemon process; events consumed as last scraped; a set-up "
          f"stopped early is killed (SIGKILL), so outputs delivered counts what the broker had acknowledged; "
          f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
