"""Input that real producers write: byte order marks, NaN and Infinity, huge lines, the wrong format.

And what the daemon says when its input or settings are plainly wrong, and
why a second run never silently doubles the outputs.
"""

from __future__ import annotations

import io
import json
import logging
import math
import os
import pathlib
import subprocess
import sys

import orjson
import pytest

from stream_nb import NaiveBayes
from stream_nb.cli import main
from stream_nb.engine import Engine, Record
from stream_nb.tools.evaluate import open_events

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "events.jsonl"
BOM = b"\xef\xbb\xbf"
EVENTS = [b'{"id": 1, "outlook": "sunny", "temp": 28.0, "label": "no"}',
          b'{"id": 2, "outlook": "rain", "temp": 18.5, "label": "yes"}',
          b'{"id": 3, "outlook": "sunny", "temp": 27.0}']


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("STREAM_NB_")}


def cli(*args: str, input: bytes | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "stream_nb.cli", *args], input=input, capture_output=True,
                          env=clean_env(), timeout=timeout)


def run_in_process(tmp_path, data: bytes, *args: str, name: str = "in.jsonl") -> tuple[list, list]:
    """``stream-nb run`` over ``data`` in a file; the outputs and dead letters, parsed."""
    src, out, dead = tmp_path / name, tmp_path / "out.jsonl", tmp_path / "dead.jsonl"
    src.write_bytes(data)
    for path in (out, dead):
        path.unlink(missing_ok=True)
    assert main(["run", "--input", str(src), "--output", str(out), "--dead-letter", str(dead),
                 "--log-level", "ERROR", *args]) == 0
    return ([orjson.loads(x) for x in out.read_bytes().splitlines()],
            [orjson.loads(x) for x in dead.read_bytes().splitlines()])


@pytest.fixture(autouse=True)
def _no_stream_nb_env(monkeypatch):
    for key in [k for k in os.environ if k.startswith("STREAM_NB_")]:
        monkeypatch.delenv(key)


# ----------------------------------------------------------------------- byte order marks


def test_run_ignores_a_byte_order_mark_at_the_start_of_a_file_and_of_a_joined_file(tmp_path):
    joined = BOM + b"\r\n".join(EVENTS[:2]) + b"\r\n" + BOM + EVENTS[2]  # `cat a b` of two files saved on Windows
    outputs, letters = run_in_process(tmp_path, joined)
    assert letters == []
    assert [o["id"] for o in outputs] == [1, 2, 3]
    assert [o["learned"] for o in outputs] == [True, True, False]
    assert outputs[2]["prediction"] == "no"


def test_run_ignores_a_byte_order_mark_on_stdin():
    proc = cli("run", "--log-level", "WARNING", input=BOM + b"\n".join(EVENTS) + b"\n")
    assert proc.returncode == 0, proc.stderr.decode()
    assert [orjson.loads(x)["id"] for x in proc.stdout.splitlines()] == [1, 2, 3]
    assert b"invalid_json" not in proc.stderr and b"WARNING" not in proc.stderr


def test_evaluate_reads_a_csv_header_after_a_byte_order_mark(tmp_path):
    path = tmp_path / "weather.csv"
    path.write_bytes(BOM + b"label,outlook\r\nno,sunny\r\nyes,rain\r\nno,sunny\r\n")
    events = list(open_events(str(path)))
    assert events[0][:2] == ({"outlook": "sunny"}, "no")
    assert [y for _, y, _ in events] == ["no", "yes", "no"]
    proc = cli("evaluate", "--input", str(path), "--models", "nb")
    assert proc.returncode == 0, proc.stderr.decode()
    assert "3 events (3 labeled, 0 unlabeled" in proc.stdout.decode()


def test_evaluate_sniffs_json_lines_on_stdin_after_a_byte_order_mark():
    source = open_events("-", stdin=io.BytesIO(BOM + b"\n".join(EVENTS)))
    assert source.describe == "stdin (jsonl)"
    assert [y for _, y, _ in source] == ["no", "yes", None]
    csv = open_events("-", stdin=io.BytesIO(BOM + b"label,outlook\nno,sunny\n"))
    assert [(x, y) for x, y, _ in csv] == [({"outlook": "sunny"}, "no")]
    proc = cli("evaluate", "--input", "-", "--models", "nb", input=BOM + b"\n".join(EVENTS) + b"\n")
    assert proc.returncode == 0, proc.stderr.decode()
    assert "3 events (2 labeled, 1 unlabeled" in proc.stdout.decode()


def test_explain_trains_on_an_input_with_a_byte_order_mark(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_bytes(BOM + b"\n".join(EVENTS) + b"\n" + BOM + b"\n")
    proc = cli("explain", "--input", str(path), "--model", "nb", "--event", '{"outlook": "rain"}')
    assert proc.returncode == 0, proc.stderr.decode()
    assert "2 events learned, 0 bad rows skipped" in proc.stdout.decode()


def test_settings_files_may_start_with_a_byte_order_mark(tmp_path):
    config, loss = tmp_path / "run.toml", tmp_path / "loss.json"
    config.write_bytes(BOM + b'model = "aode"\n')
    loss.write_bytes(BOM + b'{"yes": {"no": 10}}')
    proc = cli("run", "--config", str(config), "--loss", str(loss), "--print-config")
    assert proc.returncode == 0, proc.stderr.decode()
    assert orjson.loads(proc.stdout)["model"] == "aode"
    config.write_bytes(b'model = "\xe9"\n')
    proc = cli("run", "--config", str(config))
    assert proc.returncode == 2
    assert proc.stderr.decode().strip() == f"stream-nb: error: config file {config}: not UTF-8 text: " \
                                           "invalid continuation byte at byte 9"


# ----------------------------------------------------------------------- NaN and Infinity


def test_run_reads_what_pythons_json_dumps_writes(tmp_path):
    rows = [{"id": 1, "outlook": "sunny", "temp": 28.0, "label": "no"},
            {"id": 2, "outlook": "rain", "temp": math.nan, "label": "yes"},
            {"id": 3, "outlook": "rain", "temp": math.inf, "label": "yes"},
            {"id": 4, "outlook": "rain", "temp": 17.0, "label": math.nan}]
    outputs, letters = run_in_process(tmp_path, "".join(json.dumps(r) + "\n" for r in rows).encode())
    assert [(o["id"], o["learned"]) for o in outputs] == [(1, True), (2, True), (4, False)]
    assert [(d["reason"], d["field"], d["source"]["line"]) for d in letters] == [("bad_feature_type", "temp", 3)]
    assert letters[0]["error"] == "feature 'temp': expected a finite number, got inf"


# ----------------------------------------------------------------------- oversize


def test_a_ten_megabyte_line_is_dead_lettered_with_its_real_size():
    line = b'{"a": "' + b"x" * (10 * 1024 * 1024) + b'"}'
    proc = cli("run", "--log-level", "WARNING", input=line + b"\n" + EVENTS[0] + b"\n")
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    letter = orjson.loads(next(x for x in proc.stderr.splitlines() if x.startswith(b'{"reason"')))
    assert letter["reason"] == "oversize"
    assert letter["size"] == len(line)
    assert letter["error"] == f"event is {len(line)} bytes, more than max_event_bytes=1048576"
    assert letter["truncated"] is True
    assert [orjson.loads(x)["id"] for x in proc.stdout.splitlines()] == [1]


# ----------------------------------------------------------------------- plainly wrong input


def warnings_of(stderr: bytes) -> list[dict]:
    """The input_check lines of a --log-format json run."""
    lines = [orjson.loads(x) for x in stderr.splitlines() if x.startswith(b'{"time"')]
    return [x for x in lines if x.get("event") == "input_check"]


def test_run_says_once_that_a_csv_file_is_not_json_lines_and_that_nothing_was_valid(tmp_path):
    path = tmp_path / "weather.csv"
    path.write_bytes(b"outlook,temperature,label\n" + b"".join(b"sunny,%d,no\n" % i for i in range(60)))
    proc = cli("run", "--input", str(path), "--dead-letter", os.devnull, "--log-format", "json")
    assert proc.returncode == 1  # nothing useful happened: not a success
    found = warnings_of(proc.stderr)
    assert [w["cause"] for w in found] == ["not_json_lines", "no_valid_event"]
    assert all(w["level"] == "WARNING" for w in found)
    assert "the first 20 records were all rejected (invalid_json 20): the input looks like CSV" in found[0]["message"]
    assert f"'stream-nb evaluate --input {path}'" in found[0]["message"]
    assert found[1]["message"].startswith("no valid event: all 61 records read were dead-lettered (invalid_json 61); "
                                          f"{path} line 1: event is not valid JSON")


@pytest.mark.parametrize(("data", "looks_like"), [
    (json.dumps([{"a": 1}, {"a": 2}], indent=2).encode(), "looks like one JSON document rather than JSON lines"),
    (b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03" + bytes(range(128, 256)), "looks like gzip-compressed data"),
    ('{"a": 1}\n{"a": 2}\n'.encode("utf-16"), "looks like UTF-16 text"),
    (b"hello\nworld\n", "is not JSON lines"),
])
def test_run_says_what_input_that_is_not_json_lines_looks_like(tmp_path, data, looks_like):
    path = tmp_path / "input"
    path.write_bytes(data)
    proc = cli("run", "--input", str(path), "--dead-letter", os.devnull, "--log-format", "json")
    found = warnings_of(proc.stderr)
    assert [w["cause"] for w in found] == ["not_json_lines", "no_valid_event"]
    assert looks_like in found[0]["message"]


def test_run_warns_when_no_event_carries_the_label_field_and_a_listed_feature_never_appears(tmp_path):
    proc = cli("run", "--input", str(EXAMPLE), "--output", os.devnull, "--dead-letter", str(tmp_path / "d"),
               "--label-field", "Label", "--features", "outlook,tempreature,windy", "--log-format", "json")
    assert proc.returncode == 0
    found = warnings_of(proc.stderr)
    assert [w["cause"] for w in found] == ["no_label", "feature_never_seen"]
    assert found[0]["message"].startswith("none of the first 394 events has a value in the label field 'Label' "
                                          "(--label-field): they are predicted but never learned")
    assert "did you mean 'label' for 'Label'?" in found[0]["message"]
    assert found[1]["message"].startswith("--features names 'tempreature', which none of the first 394 events")
    assert "did you mean 'temperature' for 'tempreature'?" in found[1]["message"]


def test_a_sound_run_says_nothing_about_its_input(tmp_path):
    proc = cli("run", "--input", str(EXAMPLE), "--output", os.devnull, "--dead-letter", str(tmp_path / "d"),
               "--log-format", "json")
    assert proc.returncode == 0
    assert warnings_of(proc.stderr) == []


class ListSource:
    exhausted = False

    def __init__(self, values):
        self.records = [Record(v, None, "demo", {"line": i + 1}, i + 1) for i, v in enumerate(values)]

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


class NullSink:
    def send(self, value, key=None):
        pass

    def flush(self):
        pass

    def close(self):
        pass


def test_the_check_looks_at_the_first_thousand_records_only(caplog):
    # the label comes at event 1001: too late, so the warning stands; and no record after the window is decoded again
    values = [b'{"a": "x"}'] * 1000 + [b'{"a": "x", "label": "p"}'] * 500
    engine = Engine(NaiveBayes(), ListSource(values), NullSink(), NullSink(), config={"poll_max_records": 300})
    with caplog.at_level(logging.WARNING, logger="stream_nb.input"):
        engine.run()
    assert engine.input_check.warned == ["no_label"]
    assert engine.input_check._seen == 1000 and not engine.input_check.active
    assert engine.metrics.learned == 500
    assert [r.getMessage()[:45] for r in caplog.records] == ["none of the first 1000 events has a value in "]


def test_a_restored_model_serving_unlabeled_events_is_no_mistake(caplog):
    model = NaiveBayes()
    model.learn_one({"a": "x"}, "p")
    engine = Engine(model, ListSource([b'{"a": "x"}'] * 50), NullSink(), NullSink())
    engine.metrics.learned = 1  # as restored from a snapshot
    with caplog.at_level(logging.WARNING, logger="stream_nb.input"):
        engine.run()
    assert engine.input_check.warned == [] and caplog.records == []


# ----------------------------------------------------------------------- running again


def test_a_second_run_without_snapshots_replaces_its_files_as_a_whole(tmp_path):
    # Before: the second run refused to start (exit 2) unless --output-mode said append or truncate. Now every
    # run without --snapshot-dir starts from the start of its input, and its files start afresh with it.
    out, dead = tmp_path / "out.jsonl", tmp_path / "dead.jsonl"
    args = ["run", "--input", str(EXAMPLE), "--output", str(out), "--dead-letter", str(dead), "--log-level", "ERROR"]
    assert main(args) == 0
    first, first_dead = out.read_bytes(), dead.read_bytes()
    assert len(first.splitlines()) == 392 and len(first_dead.splitlines()) == 7
    with open(out, "rb") as reader:  # a reader of the first run's file keeps it whole
        proc = cli(*args)
        assert proc.returncode == 0, proc.stderr.decode()
        assert reader.read() == first
    assert out.read_bytes() == first and dead.read_bytes() == first_dead  # the same files, never a second copy
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dead.jsonl", "out.jsonl"]  # nothing left aside


def test_a_restart_with_a_snapshot_directory_resumes_without_doubling(tmp_path):
    out, snaps = tmp_path / "out.jsonl", tmp_path / "snaps"
    args = ["run", "--input", str(EXAMPLE), "--output", str(out), "--dead-letter", str(tmp_path / "d.jsonl"),
            "--snapshot-dir", str(snaps), "--log-level", "ERROR"]
    assert main(args) == 0
    first = out.read_bytes()
    assert len(first.splitlines()) == 392
    assert main(args) == 0  # resumes after the last event: nothing to add
    assert out.read_bytes() == first
    # a snapshot directory never used before is a fresh run from the start: it replaces the file (before, exit 2)
    assert main([a if a != str(snaps) else str(tmp_path / "fresh") for a in args]) == 0
    assert out.read_bytes() == first


def test_output_mode_was_removed_and_says_what_replaced_it(tmp_path):
    config = tmp_path / "run.toml"
    config.write_text('output_mode = "append"\n')
    for given, env, named in ((["--output-mode", "append"], {}, "--output-mode"),
                              ([], {"STREAM_NB_OUTPUT_MODE": "truncate"}, "STREAM_NB_OUTPUT_MODE"),
                              (["--config", str(config)], {}, f"config file {config}: setting 'output_mode'")):
        proc = subprocess.run([sys.executable, "-m", "stream_nb", "run", "--input", str(EXAMPLE), *given],
                              capture_output=True, env={**os.environ, **env}, timeout=60)
        message = proc.stderr.decode()
        assert proc.returncode == 2 and proc.stdout == b"", message
        assert f"{named} was removed: --output and --dead-letter files hold each record once" in message
        assert "Traceback" not in message


def test_events_whose_labels_come_on_the_feedback_input_are_no_mistake(tmp_path):
    # with --feedback the events carry no label on purpose: no "no_label" warning
    events, labels = tmp_path / "events.jsonl", tmp_path / "labels.jsonl"
    events.write_text("".join(json.dumps({"id": i, "a": "xy"[i % 2]}) + "\n" for i in range(40)))
    labels.write_text("".join(json.dumps({"id": i, "label": "pq"[i % 2]}) + "\n" for i in range(40)))
    proc = cli("run", "--input", str(events), "--feedback", str(labels), "--output", os.devnull,
               "--dead-letter", str(tmp_path / "d"), "--log-format", "json")
    assert proc.returncode == 0
    assert warnings_of(proc.stderr) == []
    assert json.loads(proc.stderr.splitlines()[-1])["metrics"]["join"]["labels_joined"] == 40
