"""Back-pressure against the real broker: a burst of queued events and an output slower than the engine.

The output producer is made slower than the engine (one record per batch, one
request at a time) and checkpoints are spread out so that nothing but the
back-pressure limits what waits for the broker. A burst of ``N_EVENTS`` events
is produced while the daemon runs. Without back-pressure kafka-python queues
every output it is handed: measured with ``STREAM_NB_TEST_MAX_IN_FLIGHT=0``
(which runs this test with the back-pressure off), the daemon's resident
memory grows by far more than ``CEILING_MB``. With it, growth stays well below.
``bench/burst.py`` is the 1,000,000-event version.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from kafka import KafkaConsumer, KafkaProducer
from kafka.structs import TopicPartition

N_EVENTS = 50_000
PARTITIONS = 3
#: Outputs allowed to wait for their acknowledgement before the input pauses.
MAX_IN_FLIGHT = int(os.environ.get("STREAM_NB_TEST_MAX_IN_FLIGHT", "2000"))
#: Allowed growth of the daemon's resident memory over the burst, in MB.
CEILING_MB = 50


def event(i: int) -> bytes:
    color = ("red", "green", "blue")[i % 3]
    label = "" if i % 4 == 3 else f', "label": "{"yes" if color == "red" else "no"}"'
    return f'{{"id": {i}, "color": "{color}", "size": {(i % 97) / 10.0}{label}}}'.encode()


def status_kb(pid: int, field: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/{pid}/status")


def scrape(base: str) -> dict[str, float]:
    text = urllib.request.urlopen(base + "/metrics", timeout=10).read().decode()
    return {name: float(value) for name, _, value in
            (line.rpartition(" ") for line in text.splitlines() if line and not line.startswith("#"))}


def end_offsets(bootstrap: str, topic: str) -> int:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap)
    try:
        return sum(consumer.end_offsets([TopicPartition(topic, p) for p in range(PARTITIONS)]).values())
    finally:
        consumer.close()


@pytest.mark.kafka
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the daemon's memory from /proc")
def test_a_burst_with_a_slow_output_keeps_memory_bounded(kafka_client, kafka_bootstrap_servers, kafka_topic_factory, tmp_path):
    bootstrap = kafka_bootstrap_servers
    input_topic = kafka_topic_factory(partitions=PARTITIONS, prefix="bp-in")
    output_topic = kafka_topic_factory(partitions=PARTITIONS, prefix="bp-out")
    log_path = tmp_path / "daemon.stderr"
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAM_NB_") or k == "STREAM_NB_KAFKA_CLIENT"}
    with open(log_path, "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "stream_nb.cli", "run", "--bootstrap-servers", bootstrap,
             "--input-topic", input_topic, "--output-topic", output_topic, "--dead-letter-topic", output_topic,
             "--group-id", f"bp-{os.getpid()}-{time.monotonic_ns()}", "--metrics-port", "0",
             "--metrics-interval", "0", "--max-in-flight", str(MAX_IN_FLIGHT),
             "--commit-every", "100000000", "--commit-interval", "3600",
             "--kafka-config", "batch_size=1", "max_in_flight_requests_per_connection=1"],
            stdout=subprocess.DEVNULL, stderr=err, stdin=subprocess.DEVNULL, env=env)

    def log() -> str:
        return log_path.read_text(errors="replace")

    def wait_for(what, condition, timeout):
        deadline = time.monotonic() + timeout
        while not (value := condition()):
            assert proc.poll() is None, f"the daemon exited with {proc.returncode}:\n{log()[-3000:]}"
            assert time.monotonic() < deadline, f"timed out waiting for {what}:\n{log()[-3000:]}"
            time.sleep(0.5)
        return value

    try:
        port = wait_for("the HTTP endpoint", lambda: re.search(r"http://127\.0\.0\.1:(\d+)", log()), 60).group(1)
        base = f"http://127.0.0.1:{port}"
        wait_for("readiness", lambda: urllib.request.urlopen(base + "/healthz", timeout=10).status == 200
                 and scrape(base)["stream_nb_ready"] == 1, 120)
        baseline_kb = status_kb(proc.pid, "VmRSS")

        producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=20, batch_size=1 << 20)
        try:
            for i in range(N_EVENTS):
                producer.send(input_topic, value=event(i), partition=i % PARTITIONS)
            producer.flush()
        finally:
            producer.close()

        def drained():
            m = scrape(base)
            return m["stream_nb_events_consumed_total"] == N_EVENTS and m["stream_nb_output_in_flight"] == 0 and m

        m = wait_for("every output acknowledged", drained, 600)
        peak_kb = status_kb(proc.pid, "VmHWM")
        growth_mb = (peak_kb - baseline_kb) / 1024
        print(f"\nmax in flight {MAX_IN_FLIGHT}: baseline RSS {baseline_kb / 1024:.1f} MB, peak {peak_kb / 1024:.1f} MB, "
              f"growth {growth_mb:.1f} MB, {m['stream_nb_backpressure_pauses_total']:.0f} pauses")
        assert end_offsets(bootstrap, output_topic) == N_EVENTS  # every event has its output, none twice
        if MAX_IN_FLIGHT:
            assert m["stream_nb_backpressure_pauses_total"] > 0  # the output really was the slower side
        assert growth_mb < CEILING_MB
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=120) == 0, log()[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
