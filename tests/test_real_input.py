"""Input that real producers write: byte order marks, NaN and Infinity, huge lines, the wrong format.

And what the daemon says when its input or settings are plainly wrong, and
why a second run never silently doubles the outputs.
"""

from __future__ import annotations

import io
import json
import math
import os
import pathlib
import subprocess
import sys

import orjson
import pytest

from stream_nb.cli import main
from stream_nb.evaluate import open_events

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
