"""What a user meets in the first week, through the real ``stream-nb`` command in a subprocess.

* ``run`` over a file with records and not one valid event exits 1, with the
  rejections counted by reason on its last line.
* ``--feedback`` without an id field is refused at start (exit 2).
* ``model export --timeout`` bounds the whole command, also the wait for a broker.
* ``explain`` takes a snapshot directory, warns about a feature the model never
  saw (naming the closest one it knows), and exits 2 for any bad event.
* ``--top-k N`` and ``--no-proba`` keep outputs small with many classes.
* The periodic log line and ``/metrics`` show the accuracy of the last 1,000
  labeled events beside the one since the start.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
import time

import orjson
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


def stream_nb(*args: str, input: bytes | None = None, cwd=None, timeout: float = 120) -> subprocess.CompletedProcess:
    """``stream-nb ARGS`` (``python -m stream_nb`` is the same command), with no STREAM_NB_* variable set."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAM_NB_")}
    return subprocess.run([sys.executable, "-m", "stream_nb", *args], input=input, capture_output=True, env=env,
                          cwd=cwd or ROOT, timeout=timeout)


def jsonl(rows) -> bytes:
    return b"".join(orjson.dumps(r) + b"\n" for r in rows)


WEATHER = [{"id": i, "outlook": ("sunny", "rain", "overcast")[i % 3], "temperature": 15.0 + i % 7,
            "label": ("no", "yes")[i % 3 != 0]} for i in range(30)]


# ----------------------------------------------------------------------- 7. nothing useful happened


def test_run_over_a_csv_file_exits_1_with_the_rejections_counted_by_reason(tmp_path):
    path = tmp_path / "data.csv"
    path.write_bytes(b"outlook,temperature,label\nsunny,28,no\nrain,18,yes\n")
    proc = stream_nb("run", "--input", str(path), "--dead-letter", str(tmp_path / "dead.jsonl"))
    err = proc.stderr.decode()
    assert proc.returncode == 1, err
    last = err.strip().splitlines()[-1]
    assert " ERROR stream_nb.daemon: input exhausted after " in last
    assert "with no valid event: all 3 records read were dead-lettered (invalid_json 3)" in last
    assert proc.stdout == b""


def test_the_reasons_are_counted_each_and_a_json_log_says_the_exit_status(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_bytes(b'[1]\n{"a": {"b": 1}}\n{"a": [2]}\nnot json\n\n')
    proc = stream_nb("run", "--input", str(path), "--dead-letter", os.devnull, "--log-format", "json")
    assert proc.returncode == 1
    lines = [orjson.loads(x) for x in proc.stderr.splitlines()]
    shutdown = lines[-1]
    assert shutdown["event"] == "shutdown" and shutdown["exit_status"] == 1 and shutdown["level"] == "ERROR"
    assert shutdown["how"] == ("input exhausted with no valid event: all 4 records read were dead-lettered "
                               "(invalid_json 1, nested_value 2, not_an_object 1)")


def test_one_valid_event_or_an_empty_input_exits_0(tmp_path):
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_bytes(b"not json\n" + jsonl(WEATHER[:1]))
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"\n\n")
    for path in (mixed, empty):
        proc = stream_nb("run", "--input", str(path), "--dead-letter", os.devnull,
                         "--output", str(tmp_path / "out.jsonl"))
        assert proc.returncode == 0, proc.stderr.decode()
    # stdin is a finite input too
    proc = stream_nb("run", "--dead-letter", os.devnull, input=b"a,b\n1,2\n")
    assert proc.returncode == 1 and b"with no valid event: all 2 records read" in proc.stderr


# ----------------------------------------------------------------------- 11. --feedback needs an id


def test_feedback_with_an_empty_id_field_is_a_settings_error_at_start(tmp_path):
    events, labels, out = tmp_path / "ev.jsonl", tmp_path / "lb.jsonl", tmp_path / "out.jsonl"
    events.write_bytes(jsonl([{"id": "a", "x": "u"}]))
    labels.write_bytes(jsonl([{"id": "a", "label": "p"}]))
    proc = stream_nb("run", "--input", str(events), "--feedback", str(labels), "--id-field", "",
                     "--output", str(out))
    err = proc.stderr.decode()
    assert proc.returncode == 2, err
    assert "--feedback joins each label to its event by the id, and --id-field is empty (no id)" in err
    assert "running model" not in err and not out.exists()  # refused before anything started
    # from the environment, the setting is named with its origin
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAM_NB_")}
    proc = subprocess.run([sys.executable, "-m", "stream_nb", "run", "--input", str(events), "--feedback",
                           str(labels)], capture_output=True, env={**env, "STREAM_NB_ID_FIELD": ""}, timeout=120)
    assert proc.returncode == 2 and b"id_field (from STREAM_NB_ID_FIELD) is empty" in proc.stderr


# ----------------------------------------------------------------------- 10. model export --timeout


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_model_export_gives_up_within_its_timeout_when_no_broker_answers(tmp_path):
    port = free_port()  # nothing listens there
    for client in ("kafka-python", "confluent"):
        started = time.monotonic()
        proc = stream_nb("model", "export", "--bootstrap-servers", f"127.0.0.1:{port}", "--model-topic", "m",
                         "--output", str(tmp_path / "m.snb"), "--timeout", "1", "--kafka-client", client)
        took = time.monotonic() - started
        err = proc.stderr.decode()
        assert proc.returncode == 1, err
        assert f"no broker reachable at 127.0.0.1:{port} within 1000 ms" in err
        assert took < 13, (client, took)  # 1 s, and the interpreter's start; kafka-python's own default was 30 s
        assert not (tmp_path / "m.snb").exists()


def test_model_export_refuses_a_timeout_that_is_not_positive(tmp_path):
    proc = stream_nb("model", "export", "--bootstrap-servers", "127.0.0.1:9", "--model-topic", "m",
                     "--output", str(tmp_path / "m.snb"), "--timeout", "0")
    assert proc.returncode == 2 and b"--timeout: expected a number of seconds > 0, got 0.0" in proc.stderr


# ----------------------------------------------------------------------- 12. explain


@pytest.fixture(scope="module")
def weather_snapshots(tmp_path_factory) -> pathlib.Path:
    """A --snapshot-dir written by ``stream-nb run`` over the weather events, once for the module's tests."""
    tmp_path = tmp_path_factory.mktemp("weather")
    events, snaps = tmp_path / "weather.jsonl", tmp_path / "snaps"
    events.write_bytes(jsonl(WEATHER))
    proc = stream_nb("run", "--input", str(events), "--snapshot-dir", str(snaps), "--output", os.devnull)
    assert proc.returncode == 0, proc.stderr.decode()
    return snaps


@pytest.fixture
def trained_snapshot_dir(tmp_path, weather_snapshots) -> pathlib.Path:
    """A test's own copy of that snapshot directory (a test may damage it)."""
    return pathlib.Path(shutil.copytree(weather_snapshots, tmp_path / "snaps"))


def test_explain_takes_a_snapshot_directory_as_snapshot_inspect_does(tmp_path, trained_snapshot_dir):
    snaps = trained_snapshot_dir
    (newest,) = sorted(snaps.glob("snapshot-*.snb"))
    event = '{"outlook": "rain", "temperature": 17.0}'
    from_dir = stream_nb("explain", "--snapshot", str(snaps), "--event", event)
    assert from_dir.returncode == 0, from_dir.stderr.decode()
    from_file = stream_nb("explain", "--snapshot", str(newest), "--event", event)
    assert from_file.returncode == 0, from_file.stderr.decode()
    assert from_dir.stdout.decode().splitlines()[0] == f"model: NaiveBayes from snapshot {newest} (30 events learned)"
    assert from_dir.stdout == from_file.stdout
    # a damaged newest snapshot: named, and the one before it explains (as a restart would take it)
    (snaps / "snapshot-999999999999.snb").write_bytes(b"not a snapshot")
    proc = stream_nb("explain", "--snapshot", str(snaps), "--event", event)
    assert proc.returncode == 0, proc.stderr.decode()
    assert b"snapshot-999999999999.snb" in proc.stderr and b"an older snapshot is explained" in proc.stderr
    assert proc.stdout == from_file.stdout
    # a directory with no snapshot: one error line, exit 1 as for a damaged snapshot
    proc = stream_nb("explain", "--snapshot", str(tmp_path), "--event", event)
    assert proc.returncode == 1 and b"no snapshot in this directory" in proc.stderr
    assert b"Is a directory" not in proc.stderr and b"Traceback" not in proc.stderr


def test_explain_warns_about_a_feature_the_model_never_saw_naming_the_closest(tmp_path, trained_snapshot_dir):
    snaps = trained_snapshot_dir
    proc = stream_nb("explain", "--snapshot", str(snaps), "--event", '{"outlook": "rain", "temprature": 17.0}')
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stderr.decode().splitlines() == [
        "stream-nb explain: warning: --event: the model has never seen feature 'temprature' (it contributes 0); "
        "did you mean 'temperature'?"]
    assert "temprature        17.0        +0.0000" in proc.stdout.decode()
    # no close name: the known features are listed
    path = tmp_path / "event.json"
    path.write_bytes(b'{"outlook": "rain", "zzz": 1}')
    proc = stream_nb("explain", "--snapshot", str(snaps), "--event-file", str(path))
    assert proc.returncode == 0
    assert proc.stderr.decode().strip() == (
        f"stream-nb explain: warning: --event-file {path}: the model has never seen feature 'zzz' (it contributes "
        "0); it knows 'outlook', 'temperature'")
    # every feature known: no warning at all
    proc = stream_nb("explain", "--snapshot", str(snaps), "--event", '{"outlook": "rain", "temperature": 17.0}')
    assert proc.returncode == 0 and proc.stderr == b""


def test_explain_exits_2_for_a_bad_event_whether_its_json_or_a_type_is_wrong(trained_snapshot_dir):
    snaps = trained_snapshot_dir
    bad_json = stream_nb("explain", "--snapshot", str(snaps), "--event", '{"outlook": ')
    bad_type = stream_nb("explain", "--snapshot", str(snaps), "--event", '{"outlook": "rain", "temperature": "hot"}')
    assert bad_json.returncode == bad_type.returncode == 2, (bad_json.stderr, bad_type.stderr)
    assert bad_type.stderr.decode().strip() == (
        "stream-nb explain: error: --event: feature 'temperature' is numeric: expected a number, got str 'hot'")
    assert bad_json.stdout == bad_type.stdout == b""


# ----------------------------------------------------------------------- 8. many classes


def many_classes(n_events: int = 600, n_classes: int = 200) -> bytes:
    """Events of ``n_classes`` classes whose features tell the class apart only in part (ties happen early)."""
    import random

    r = random.Random(7)
    rows = []
    for i in range(n_events):
        c = r.randrange(n_classes)
        rows.append({"id": i, "x": f"v{c % 25}", "y": f"w{c // 25}", "z": float(c % 7) + r.random(),
                     "label": f"c{c}"})
    return jsonl(rows)


def outputs_of(proc: subprocess.CompletedProcess) -> list[dict]:
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    return [orjson.loads(line) for line in proc.stdout.splitlines()]


def top(proba: dict, k: int, prediction) -> dict:
    """Brute force: the k most probable classes (ties in the given order) and the prediction's."""
    ranked = sorted(proba.items(), key=lambda item: -item[1])
    shown = dict(ranked[:k])
    key = prediction if isinstance(prediction, str) else orjson.dumps(prediction).decode()
    if prediction is not None and key not in shown:
        shown[key] = proba[key]
    return shown


def test_top_k_keeps_the_k_most_probable_classes_in_order_and_no_proba_none(tmp_path):
    path = tmp_path / "many.jsonl"
    path.write_bytes(many_classes())
    full = outputs_of(stream_nb("run", "--input", str(path), "--dead-letter", os.devnull))
    for k in (1, 3, 250):  # 250: more than the classes, every class in decreasing probability
        cut = outputs_of(stream_nb("run", "--input", str(path), "--dead-letter", os.devnull, "--top-k", str(k)))
        assert len(cut) == len(full) == 600
        for whole, part in zip(full, cut):
            expected = top(whole["proba"], k, whole["prediction"])
            assert list(part["proba"].items()) == list(expected.items())
            assert {**part, "proba": None} == {**whole, "proba": None}
    none = outputs_of(stream_nb("run", "--input", str(path), "--dead-letter", os.devnull, "--no-proba"))
    assert [o for o in none if "proba" in o] == []
    assert none == [{k: v for k, v in o.items() if k != "proba"} for o in full]
    size = lambda outputs: sum(len(orjson.dumps(o)) for o in outputs)  # noqa: E731
    assert size(none) * 10 < size(full)


def test_top_k_is_the_same_event_by_event_and_keeps_a_prediction_chosen_by_a_loss_matrix(tmp_path):
    rows = [{"id": i, "x": "abc"[i % 3], "label": "a" if i % 10 < 6 else "b" if i % 10 < 9 else "c"}
            for i in range(300)]
    path, loss = tmp_path / "in.jsonl", tmp_path / "loss.json"
    path.write_bytes(jsonl(rows))
    loss.write_bytes(orjson.dumps({"c": {"a": 100, "b": 100}}))  # missing a c is dear: c predicted though least likely
    args = ("run", "--input", str(path), "--dead-letter", os.devnull, "--loss", str(loss))
    full = outputs_of(stream_nb(*args))
    cut = outputs_of(stream_nb(*args, "--top-k", "1"))
    # --emit-imputed takes the engine's event-by-event path (the one above takes each poll at once)
    each = [{k: v for k, v in o.items() if k != "imputed"} for o in outputs_of(stream_nb(*args, "--top-k", "1",
                                                                                         "--emit-imputed"))]
    assert cut == each
    unlikely = [o for o in full if o["proba"] and o["prediction"] != max(o["proba"], key=o["proba"].get)]
    assert len(unlikely) > 100  # the loss matrix did choose a less probable class
    for whole, part in zip(full, cut):
        assert list(part["proba"].items()) == list(top(whole["proba"], 1, whole["prediction"]).items())
        if whole in unlikely:
            assert len(part["proba"]) == 2 and whole["prediction"] in part["proba"]


def test_top_k_and_no_proba_are_settings_like_the_others(tmp_path):
    config = tmp_path / "run.toml"
    config.write_text("[run]\ntop_k = 2\n")
    events = jsonl([{"x": "abcd"[i % 4], "label": "pqrs"[i % 4]} for i in range(20)])
    from_file = outputs_of(stream_nb("run", "--config", str(config), input=events))
    assert all(len(o["proba"]) == 2 for o in from_file[4:])
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAM_NB_")}
    proc = subprocess.run([sys.executable, "-m", "stream_nb", "run"], input=events, capture_output=True,
                          env={**env, "STREAM_NB_NO_PROBA": "true"}, timeout=120)
    assert all("proba" not in o for o in outputs_of(proc))
    for args, needle in ((("--top-k", "0"), "--top-k must be an integer >= 1"),
                         (("--top-k", "2", "--no-proba"), "--top-k and --no-proba exclude each other")):
        proc = stream_nb("run", *args, input=events)
        assert proc.returncode == 2 and needle in proc.stderr.decode() and proc.stdout == b""


# ----------------------------------------------------------------------- 9. the recent accuracy


def test_recent_hits_agree_with_rivers_rolling_accuracy_run_by_run():
    import random

    import numpy as np
    from river import metrics, utils

    from stream_nb.engine.loop._recent import RecentHits

    r = random.Random(3)
    for window in (1, 7, 1000):
        ours, theirs = RecentHits(window), utils.Rolling(metrics.Accuracy, window_size=window)
        for _ in range(300):
            run = [r.random() < 0.7 for _ in range(r.choice([0, 1, 2, 5, 40, window + 3]))]
            ours.add(np.array(run, dtype=bool))
            for hit in run:
                theirs.update(True, hit)
            if ours.count:
                assert ours.accuracy == pytest.approx(theirs.get(), abs=1e-12)
                assert ours.count == min(window, len(theirs.window))


def test_the_periodic_line_shows_the_accuracy_of_the_last_1000_labeled_events(tmp_path):
    # 4,000 events whose label is the feature's, then 2,000 whose label is the other one: the model gets worse
    rows = [{"id": i, "x": "ab"[i % 2], "label": "ab"[(i % 2) ^ (i >= 4000)]} for i in range(6000)]
    path, out = tmp_path / "drift.jsonl", tmp_path / "out.jsonl"
    path.write_bytes(jsonl(rows))
    proc = stream_nb("run", "--input", str(path), "--output", str(out), "--log-format", "json",
                     "--metrics-interval", "0.000001", "--poll-max-records", "250")
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    outputs = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    periodic = [line for line in map(orjson.loads, proc.stderr.splitlines()) if line.get("event") == "metrics"]
    assert periodic
    for line in periodic:
        m = line["metrics"]
        n = m["labeled"]
        hits = [o["prediction"] == rows[o["id"]]["label"] for o in outputs[:n]]  # brute force, from the outputs
        recent = hits[-1000:]
        assert m["recent_window"] == 1000 and m["recent_labeled"] == len(recent)
        assert m["recent_accuracy"] == pytest.approx(sum(recent) / len(recent), abs=1e-12)
        assert m["accuracy"] == pytest.approx(sum(hits) / n, abs=1e-12)
        assert line["message"].startswith(f"accuracy {m['accuracy']:.4f} (last {len(recent):,} labeled: "
                                          f"{m['recent_accuracy']:.4f}); metrics {{")
    last = periodic[-1]["metrics"]
    assert last["labeled"] > 5000
    assert last["recent_accuracy"] < 0.5 < last["accuracy"]  # the window sees the drift, the whole run hides it



def test_metrics_endpoint_serves_the_recent_accuracy_with_its_window(tmp_path):
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families

    from connectors.jsonl import JsonLinesSink, JsonLinesSource
    from stream_nb import NaiveBayes
    from stream_nb.engine import Engine
    from stream_nb.ops import Operations

    rows = [{"x": "ab"[i % 2], "label": "ab"[(i % 2) ^ (i >= 1500)]} for i in range(1800)]
    path = tmp_path / "in.jsonl"
    path.write_bytes(jsonl(rows))
    sinks = [JsonLinesSink(path=str(tmp_path / name)) for name in ("out.jsonl", "dead.jsonl")]
    engine = Engine(NaiveBayes(), JsonLinesSource(path=str(path)), *sinks)
    ops = Operations(model_name="nb", mode="jsonl", host="127.0.0.1", port=0)
    try:
        ops.attach(engine)
        engine.run()
        with urllib.request.urlopen(ops.server.url + "/metrics", timeout=10) as response:
            body = response.read().decode()
    finally:
        ops.detach()
        ops.close()
        for sink in sinks:
            sink.close()
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for family in text_string_to_metric_families(body) for s in family.samples}
    recent = samples[("stream_nb_recent_accuracy", (("model", "nb"), ("window", "1000")))]
    assert recent == pytest.approx(engine.metrics.recent.accuracy) and engine.metrics.recent.count == 1000
    # the window's last 300 come after the flip, all wrong (the 1,500 before it outweigh them), its first 700 right
    assert recent == pytest.approx(700 / 1000, abs=1e-12)
    assert samples[("stream_nb_prequential_accuracy", (("model", "nb"),))] > recent
