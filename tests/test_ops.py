"""Operations without a broker: /metrics, /healthz, /readyz, back-pressure, JSON logs, the flags.

The endpoint is always scraped over real HTTP; the metric families are parsed
with prometheus_client's own parser and compared with what the engine counted.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest
from prometheus_client.parser import text_string_to_metric_families

from stream_nb import TAN, NaiveBayes, Tree
from stream_nb.engine import Engine, FlowControl, Record
from stream_nb.ops import METRICS, Operations

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "events.jsonl"


# ----------------------------------------------------------------------- helpers


class ListSource:
    exhausted = False

    def __init__(self, values: list[bytes], partition: str = "demo"):
        self.partition = partition
        self.records = [Record(v, None, partition, {"line": i + 1}, i + 1) for i, v in enumerate(values)]

    def poll(self, max_records, timeout):
        batch, self.records = self.records[:max_records], self.records[max_records:]
        self.exhausted = not batch
        return batch

    def commit(self, positions):
        pass

    def seek(self, positions):
        pass

    def close(self):
        pass


class ListSink:
    def __init__(self, fail_flush: int = 0):
        self.values: list[bytes] = []
        self.fail_flush = fail_flush  # this many flushes raise, then they succeed

    def send(self, value, key=None):
        self.values.append(value)

    def flush(self):
        if self.fail_flush:
            self.fail_flush -= 1
            raise OSError("disk full")

    def close(self):
        pass


def get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def scrape(url: str) -> dict[tuple[str, tuple], float]:
    """{(sample name, sorted labels): value} of one /metrics scrape, parsed by prometheus_client."""
    status, body = get(url + "/metrics")
    assert status == 200
    out = {}
    for family in text_string_to_metric_families(body.decode()):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def events(n_labeled: int, n_unlabeled: int, bad: list[bytes]) -> list[bytes]:
    out = []
    for i in range(n_labeled + n_unlabeled):
        color = ("red", "green", "blue")[i % 3]
        obj = {"id": i, "color": color, "size": float(i % 7)}
        if i < n_labeled:
            obj["label"] = "yes" if color == "red" else "no"
        out.append(json.dumps(obj).encode())
    return out[:5] + bad + out[5:]


BAD = [b"{nope", b"[1]", b'{"color": {"r": 1}}', b"\xff\xfe", b"{also nope"]


# ----------------------------------------------------------------------- /metrics in process


def test_metrics_equal_what_the_engine_counted():
    values = events(30, 12, BAD)
    engine = Engine(TAN(search=Tree(rebuild_every=5)), ListSource(values), ListSink(), ListSink(),
                    config={"model_name": "tan-demo", "poll_max_records": 7})
    ops = Operations(model_name="tan-demo", mode="jsonl", host="127.0.0.1", port=0, summary_interval=0)
    try:
        ops.attach(engine)
        engine.run()
        m = scrape(ops.server.url)
    finally:
        ops.detach()
        ops.close()
    metrics = engine.metrics
    assert m[("stream_nb_events_consumed_total", ())] == len(values) == metrics.events
    assert m[("stream_nb_predictions_total", ())] == 42
    assert m[("stream_nb_events_labeled_total", ())] == m[("stream_nb_events_learned_total", ())] == 30
    assert m[("stream_nb_predictions_correct_total", ())] == metrics.correct
    dead = {dict(k[1])["reason"]: v for k, v in m.items() if k[0] == "stream_nb_dead_letters_total"}
    assert dead == {"invalid_json": 2, "not_an_object": 1, "nested_value": 1, "invalid_utf8": 1}
    assert m[("stream_nb_prequential_accuracy", (("model", "tan-demo"),))] == metrics.accuracy
    assert m[("stream_nb_prequential_log_loss", (("model", "tan-demo"),))] == pytest.approx(metrics.log_loss)
    # one latency observation per record, cumulative buckets ending at +Inf
    assert m[("stream_nb_processing_latency_seconds_count", ())] == len(values)
    buckets = sorted((float(dict(k[1])["le"]), v) for k, v in m.items()
                     if k[0] == "stream_nb_processing_latency_seconds_bucket")
    assert buckets[-1] == (float("inf"), len(values))
    assert [v for _, v in buckets] == sorted(v for _, v in buckets)
    # structure rebuilds: the model's own counter, one duration per rebuild
    assert engine.model.n_rebuilds == 30 // 5
    assert m[("stream_nb_model_rebuilds_total", (("model", "tan-demo"),))] == 6
    assert m[("stream_nb_model_rebuild_seconds_count", (("model", "tan-demo"),))] == 6
    assert m[("stream_nb_output_flushes_total", (("result", "ok"),))] >= 1
    assert m[("stream_nb_output_flushes_total", (("result", "failed"),))] == 0
    # the counts' memory: TAN's arrays are all dense, so cells and bytes are their sizes
    s = engine.model._stats
    arrays = list(s.tables.arrays().values())  # the count tables (the part that holds them), and any other array
    arrays += [a for a in vars(s).values() if isinstance(a, np.ndarray)] + [s.g_n, s.g_mean, s.g_m2]
    arrays += [s.value_feature, s.n_values]  # the schema's arrays, as large as the tables' room
    assert m[("stream_nb_model_count_cells", (("model", "tan-demo"),))] == sum(a.size for a in arrays)
    assert m[("stream_nb_model_count_bytes", (("model", "tan-demo"),))] == sum(a.nbytes for a in arrays)
    assert m[("stream_nb_model_memory_budget_bytes", (("model", "tan-demo"),))] == 256 * 1024 * 1024
    assert m[("stream_nb_info", (("mode", "jsonl"), ("model", "tan-demo"), ("version", "0.1.0")))] == 1
    assert ("process_resident_memory_bytes", ()) in m


def test_every_exposed_family_is_documented_in_the_metric_table():
    engine = Engine(TAN(search=Tree(rebuild_every=2)), ListSource(events(6, 0, [b"x"])), ListSink(), ListSink())
    ops = Operations(model_name="tan", mode="kafka", host="127.0.0.1", port=0)
    try:
        ops.attach(engine)
        engine.run()
        ops.observer.snapshot_done(0.25, True)
        ops.observer.lag, ops.observer.lag_updated_at = {"t-0": 3}, time.time()
        status, body = get(ops.server.url + "/metrics")
    finally:
        ops.close()
    names = {f.name for f in text_string_to_metric_families(body.decode())}
    documented = {name.removesuffix("_total") for name, *_ in METRICS}
    undocumented = {n for n in names if n not in documented and not n.startswith("process_")}
    assert not undocumented
    assert "stream_nb_snapshot_age_seconds" in names and "stream_nb_consumer_lag_records" in names


def test_input_remaining_bytes_of_a_file_goes_to_zero(tmp_path):
    from connectors.jsonl import JsonLinesSource

    path = tmp_path / "in.jsonl"
    path.write_bytes(b"\n".join(events(20, 0, [])) + b"\n")
    source = JsonLinesSource(path=str(path))
    engine = Engine(NaiveBayes(), source, ListSink(), ListSink(), config={"poll_max_records": 3})
    ops = Operations(model_name="nb", mode="jsonl", host="127.0.0.1", port=0, lag_interval=1e-9)
    try:
        ops.attach(engine)
        ops.observer.loop()
        before = scrape(ops.server.url)[("stream_nb_input_remaining_bytes", (("partition", str(path)),))]
        engine.run()
        after = scrape(ops.server.url)[("stream_nb_input_remaining_bytes", (("partition", str(path)),))]
    finally:
        ops.close()
        source.close()
    assert before == path.stat().st_size
    assert after == 0


# ----------------------------------------------------------------------- /healthz and /readyz


def test_health_and_readiness_follow_the_daemon_state():
    sink = ListSink(fail_flush=1)
    engine = Engine(NaiveBayes(), ListSource(events(3, 0, [])), sink, ListSink())
    ops = Operations(model_name="nb", mode="jsonl", host="127.0.0.1", port=0, liveness_timeout=30)
    url = ops.server.url
    try:
        # starting: alive, not ready
        assert get(url + "/healthz")[0] == 200
        status, body = get(url + "/readyz")
        assert status == 503 and json.loads(body)["checks"]["running"] == {"ok": False, "detail": "starting"}
        ops.attach(engine)
        assert get(url + "/readyz")[0] == 200
        # a failed flush makes it unready until a flush succeeds
        with pytest.raises(OSError):
            engine.checkpoint()
        status, body = get(url + "/readyz")
        assert status == 503
        assert json.loads(body)["checks"]["output"] == {"ok": False, "detail": "OSError: disk full"}
        engine.checkpoint()
        assert get(url + "/readyz")[0] == 200
        # snapshots: a failed one makes it unready, the next good one ready again
        ops.observer.snapshot_done(0.5, False)
        assert get(url + "/readyz")[0] == 503
        ops.observer.snapshot_done(0.2, True)
        assert get(url + "/readyz")[0] == 200
        m = scrape(url)
        assert m[("stream_nb_snapshots_total", (("result", "failed"),))] == 1
        assert m[("stream_nb_snapshots_total", (("result", "ok"),))] == 1
        assert m[("stream_nb_snapshot_duration_seconds", ())] == 0.2
        assert 0 <= m[("stream_nb_snapshot_age_seconds", ())] < 60
        # a loop that stopped coming round: not alive, not ready
        ops.observer.last_loop = time.monotonic() - 31
        status, body = get(url + "/healthz")
        assert status == 503 and json.loads(body)["status"] == "stalled"
        assert get(url + "/readyz")[0] == 503
        ops.observer.loop()
        assert get(url + "/healthz")[0] == 200
        # a stop request: still alive, no longer ready
        engine.stop()
        status, body = get(url + "/readyz")
        assert status == 503 and json.loads(body)["checks"]["running"]["detail"] == "stopping"
        assert get(url + "/healthz")[0] == 200
        assert get(url + "/nothing-here")[0] == 404
    finally:
        ops.close()
    with pytest.raises(OSError):
        urllib.request.urlopen(url + "/healthz", timeout=2)  # the port is released


# ----------------------------------------------------------------------- back-pressure


class SlowOutputSink(ListSink):
    """A sink whose records wait for an acknowledgement; ``ack(n)`` plays the broker."""

    def __init__(self):
        super().__init__()
        self.acked = 0
        self.peak = 0

    @property
    def in_flight(self) -> int:
        return len(self.values) - self.acked

    def send(self, value, key=None):
        super().send(value, key)
        self.peak = max(self.peak, self.in_flight)

    def ack(self, n: int) -> None:
        self.acked = min(len(self.values), self.acked + n)

    def flush(self):
        self.acked = len(self.values)


class PausableSource(ListSource):
    """Acknowledges 100 outputs per poll (the broker is slower than the engine); records pauses."""

    def __init__(self, values, sink: SlowOutputSink):
        super().__init__(values)
        self.sink = sink
        self.paused = False
        self.pause_calls = 0
        self.polls_while_paused = 0

    def pause(self):
        self.paused = True
        self.pause_calls += 1

    def resume(self):
        self.paused = False

    def poll(self, max_records, timeout):
        self.sink.ack(100)
        if self.paused:
            self.polls_while_paused += 1
            return []
        return super().poll(max_records, timeout)


def test_back_pressure_bounds_the_unacknowledged_outputs():
    sink = SlowOutputSink()
    values = events(5000, 0, [])
    source = PausableSource(values, sink)
    engine = Engine(NaiveBayes(), source, sink, ListSink(),
                    config={"max_in_flight": 1000, "poll_max_records": 400, "commit_every_records": 10**9,
                            "commit_interval_s": 3600.0, "poll_timeout": 0.0, "max_in_flight_wait_s": 0.0})
    checkpoints = []
    engine.observer.flush_done = lambda seconds, error: checkpoints.append(len(sink.values))
    engine.run()
    assert len(sink.values) == len(values)  # nothing lost
    assert sink.peak <= 1000 + 400  # at most the limit plus one poll
    assert engine.flow.pauses > 0 and source.polls_while_paused > 0
    assert engine.flow.source_pauses == engine.flow.pauses  # no wait: every hold paused the source
    assert not engine.flow.paused and not source.paused
    assert checkpoints == [len(values)]  # no checkpoint (a blocking flush) while the input was held


class AckingSink(SlowOutputSink):
    """The broker acknowledges ``per_look`` records each time the engine looks at what is in flight (as
    librdkafka's acknowledgements arrive while the engine waits, whether or not it polls its consumer)."""

    def __init__(self, per_look: int):
        super().__init__()
        self.per_look = per_look

    @property
    def in_flight(self) -> int:
        self.ack(self.per_look)
        return len(self.values) - self.acked

    def send(self, value, key=None):
        ListSink.send(self, value, key)
        self.peak = max(self.peak, len(self.values) - self.acked)  # (a look that acknowledges nothing)


def test_a_backlog_that_clears_within_the_wait_holds_the_input_without_pausing_the_source():
    # (a paused librdkafka consumer drops what it fetched ahead: a short backlog must not pause it)
    sink = AckingSink(per_look=50)
    values = events(5000, 0, [])
    source = PausableSource(values, sink)
    engine = Engine(NaiveBayes(), source, sink, ListSink(),
                    config={"max_in_flight": 1000, "poll_max_records": 400, "commit_every_records": 10**9,
                            "commit_interval_s": 3600.0, "poll_timeout": 0.0, "max_in_flight_wait_s": 60.0})
    engine.run()
    assert len(sink.values) == len(values)  # nothing lost
    assert sink.peak <= 1000 + 400  # the same bound: nothing is read while the input is held
    assert engine.flow.pauses > 0  # the input was held ...
    assert engine.flow.source_pauses == 0 and source.pause_calls == 0  # ... and the source never paused
    assert not engine.flow.paused


def test_a_stop_ends_the_wait_for_acknowledgements():
    sink = SlowOutputSink()  # nothing is ever acknowledged
    source = PausableSource(events(2000, 0, []), sink)
    engine = Engine(NaiveBayes(), source, sink, ListSink(),
                    config={"max_in_flight": 100, "poll_max_records": 400, "poll_timeout": 0.0,
                            "max_in_flight_wait_s": 3600.0})
    sink.ack = lambda n: None  # the source's polls acknowledge nothing either
    threading.Timer(0.5, engine.stop).start()
    started = time.monotonic()
    engine.run()
    assert time.monotonic() - started < 60  # not the hour's wait
    assert engine.flow.pauses == 1 and sink.peak == 400


def test_without_back_pressure_the_outputs_pile_up():
    sink = SlowOutputSink()
    values = events(5000, 0, [])
    engine = Engine(NaiveBayes(), PausableSource(values, sink), sink, ListSink(),
                    config={"max_in_flight": 0, "poll_max_records": 400, "commit_every_records": 10**9,
                            "commit_interval_s": 3600.0})
    engine.run()
    assert sink.peak > 3500 and engine.flow.pauses == 0


def test_flow_control_needs_a_pausable_source_and_a_counting_sink():
    assert not FlowControl(ListSource([]), [SlowOutputSink()], 10).active  # the source cannot pause
    assert not FlowControl(PausableSource([], SlowOutputSink()), [ListSink()], 10).active  # nothing counted
    assert not FlowControl(PausableSource([], SlowOutputSink()), [SlowOutputSink()], 0).active  # disabled
    assert FlowControl(PausableSource([], SlowOutputSink()), [SlowOutputSink()], 10).active


# ----------------------------------------------------------------------- the daemon: logs and flags


def cli(*args: str, input: bytes | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAM_NB_")}
    return subprocess.run([sys.executable, "-m", "stream_nb.cli", "run", *args], input=input,
                          capture_output=True, env=env, timeout=timeout)


def test_json_logs_one_object_per_line_with_structured_events(tmp_path):
    out = tmp_path / "out.jsonl"
    dead = tmp_path / "dead.jsonl"
    r = cli("--input", str(EXAMPLE), "--output", str(out), "--dead-letter", str(dead), "--log-format", "json",
            "--model", "tan", "--rebuild-every", "50", "--metrics-port", "0")
    assert r.returncode == 0, r.stderr.decode()
    lines = [json.loads(line) for line in r.stderr.decode().splitlines()]
    assert all({"time", "level", "logger", "message"} <= line.keys() for line in lines)
    by_event = {}
    for line in lines:
        by_event.setdefault(line.get("event"), []).append(line)
    assert by_event["http"][0]["port"] > 0
    assert by_event["start"][0]["model"] == "tan"
    shutdown = by_event["shutdown"][-1]
    assert shutdown["exit_status"] == 0 and shutdown["how"] == "input exhausted"
    n_dead = sum(1 for _ in dead.open())
    assert shutdown["metrics"]["dead_letters"] == n_dead > 0
    # the last summary, logged at shutdown, counts every dead letter by reason
    assert by_event["dead_letters"][-1]["total"] == n_dead
    assert sum(by_event["dead_letters"][-1]["by_reason"].values()) == n_dead
    assert by_event["rebuild"][0]["n_rebuilds"] == 1  # the first rebuild; later ones go to DEBUG
    rebuilds = by_event["rebuilds"][-1]
    assert rebuilds["n_rebuilds"] == rebuilds["count"] == shutdown["metrics"]["learned"] // 50
    # no line per event in steady state
    assert len(lines) < 20


def test_text_logs_keep_their_layout(tmp_path):
    r = cli("--input", str(EXAMPLE), "--output", str(tmp_path / "o"), "--dead-letter", str(tmp_path / "d"))
    assert r.returncode == 0
    last = r.stderr.decode().splitlines()[-1]
    assert re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ INFO stream_nb\.daemon: input exhausted after "
                    + re.escape(str(EXAMPLE)) + r" line 400 \(next byte 42005\); metrics \{", last)


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_a_client_library_error_is_one_line_and_the_daemons_own_keeps_its_traceback(fmt):
    """kafka-python logs some races of its network thread (a socket closed under a read) with a traceback and
    recovers: the daemon prints the error's type and message on one line; its own unexpected errors keep the
    traceback a bug report needs, and ``--log-level DEBUG`` keeps every traceback."""
    code = f"""
import logging, sys
from stream_nb.daemon._main import _configure_logging
_configure_logging(sys.argv[1], {fmt!r})
for name in ("kafka.net.transport", "stream_nb.daemon"):
    try:
        None.recv(4096)
    except AttributeError:
        logging.getLogger(name).exception("receiving failed")
"""
    lines = {}
    for level in ("INFO", "DEBUG"):
        r = subprocess.run([sys.executable, "-c", code, level], capture_output=True, timeout=60)
        assert r.returncode == 0, r.stderr.decode()
        lines[level] = r.stderr.decode()
    library, own = lines["INFO"].split("receiving failed")[1:]
    assert "Traceback" not in library and "AttributeError: 'NoneType' object has no attribute 'recv'" in library
    assert library.count("\n") == 1 if fmt == "text" else "exception" not in json.loads(
        lines["INFO"].splitlines()[0])
    assert "Traceback" in own
    assert lines["DEBUG"].count("Traceback") == 2


@pytest.mark.parametrize("args, message", [
    (["--metrics-port", "70000"], "--metrics-port must be between 0 and 65535, got 70000"),
    (["--metrics-port", "0", "--liveness-timeout", "0"], "--liveness-timeout must be > 0, got 0.0"),
    (["--metrics-port", "0", "--lag-interval", "-1"], "--lag-interval must be > 0, got -1.0"),
    (["--max-in-flight", "-1"], "--max-in-flight must be a non-negative integer, got -1"),
    (["--max-in-flight-wait", "-1"], "--max-in-flight-wait must be a non-negative number, got -1.0"),
    (["--log-format", "xml"], "invalid choice: 'xml'"),
])
def test_bad_operations_settings_exit_2(args, message):
    r = cli(*args, input=b"")
    assert r.returncode == 2
    assert message in r.stderr.decode()


def test_a_busy_metrics_port_is_a_clear_error():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = cli("--metrics-port", str(port), input=b"")
    assert r.returncode == 2
    assert f"--metrics-host 127.0.0.1 --metrics-port {port}: cannot listen there" in r.stderr.decode()


def test_the_daemon_serves_its_endpoints_while_it_reads_a_pipe():
    proc = subprocess.Popen([sys.executable, "-m", "stream_nb.cli", "run", "--metrics-port", "0",
                             "--metrics-interval", "0"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        port_line = proc.stderr.readline().decode()
        port = int(re.search(r"http://127\.0\.0\.1:(\d+)", port_line).group(1))
        url = f"http://127.0.0.1:{port}"
        values = events(10, 4, [b"{nope"])
        proc.stdin.write(b"\n".join(values) + b"\n")
        proc.stdin.flush()
        outputs = [proc.stdout.readline() for _ in range(14)]  # every prediction is out
        assert all(json.loads(o)["model"] == "nb" for o in outputs)
        deadline = time.monotonic() + 30
        while scrape(url)[("stream_nb_events_consumed_total", ())] < 15 and time.monotonic() < deadline:
            time.sleep(0.05)
        m = scrape(url)
        assert m[("stream_nb_events_consumed_total", ())] == 15
        assert m[("stream_nb_predictions_total", ())] == 14
        assert m[("stream_nb_events_learned_total", ())] == 10
        assert m[("stream_nb_dead_letters_total", (("reason", "invalid_json"),))] == 1
        assert get(url + "/healthz")[0] == 200
        assert get(url + "/readyz")[0] == 200
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0
        final = json.loads(re.search(rb"metrics (\{.*\})\s*$", proc.stderr.read()).group(1))
        assert m[("stream_nb_prequential_accuracy", (("model", "nb"),))] == final["accuracy"]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_snapshots_feed_the_metrics_and_the_readiness(tmp_path):
    snapshots = tmp_path / "snapshots"
    proc = subprocess.Popen([sys.executable, "-m", "stream_nb.cli", "run", "--metrics-port", "0",
                             "--metrics-interval", "0", "--snapshot-dir", str(snapshots), "--snapshot-every", "10",
                             "--log-format", "json", "--output", str(tmp_path / "out.jsonl"),
                             "--dead-letter", str(tmp_path / "dead.jsonl")],
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        lines = []
        while not any(line.get("event") == "http" for line in lines):
            lines.append(json.loads(proc.stderr.readline()))
        url = f"http://127.0.0.1:{lines[-1]['port']}"
        proc.stdin.write(b"\n".join(events(30, 0, [])) + b"\n")
        proc.stdin.flush()
        deadline = time.monotonic() + 60
        while scrape(url)[("stream_nb_snapshots_total", (("result", "ok"),))] < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        m = scrape(url)
        assert m[("stream_nb_snapshots_total", (("result", "ok"),))] >= 3  # one per 10 events
        assert m[("stream_nb_snapshots_total", (("result", "failed"),))] == 0
        assert m[("stream_nb_snapshot_duration_seconds", ())] > 0
        assert m[("stream_nb_snapshot_age_seconds", ())] >= 0
        status, body = get(url + "/readyz")
        assert status == 200
        assert json.loads(body)["checks"]["snapshot"] == {"ok": True, "detail": "the last snapshot succeeded"}
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0
        rest = [json.loads(line) for line in proc.stderr.read().splitlines()]
        written = [line for line in lines + rest if line.get("event") == "snapshot"]
        assert len(written) >= 3 and all(line["ok"] for line in written)
        assert len(list(snapshots.iterdir())) >= 1
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
