"""Every subcommand, as a user runs it: bad paths, bad values and Ctrl-C give one error line and a
documented exit status, never a Python traceback.

The exit statuses are the table of the documentation's page "Exit status" (docs/daemon/exit-codes.md): 0 done, 1 runtime failure,
2 invalid settings or unusable paths (checked before any work), 130 interrupted. ``run`` stops
on SIGINT by itself once started, so it exits 0 and says where it stopped.

Each command runs as ``python -m stream_nb`` (the same command as the ``stream-nb`` script).
"""

from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import orjson
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "events.jsonl"
EXIT_STATUS_PAGE = (ROOT / "docs" / "daemon" / "exit-codes.md").read_text(encoding="utf-8")

#: An unwritable place: /proc takes no new file, for root too.
NOWHERE = "/proc/stream-nb-no-such-dir"


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAM_NB_")}
    env.update(extra)
    return env


def stream_nb(*args: str, env: dict | None = None, input: bytes | None = b"", cwd=None,
              timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "stream_nb", *args], input=input, capture_output=True,
                          env=clean_env() if env is None else env, cwd=cwd or ROOT, timeout=timeout)


def check(proc: subprocess.CompletedProcess, status: int, *needles: str) -> str:
    """The exit status is ``status``, no traceback anywhere, and stderr holds every needle; returns stderr."""
    out, err = proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace")
    assert "Traceback" not in out + err, err[-3000:]
    assert proc.returncode == status, (proc.returncode, err[-3000:])
    for needle in needles:
        assert needle in err, (needle, err[-3000:])
    return err


def error_lines(err: str) -> list[str]:
    """The lines of stderr that are errors (log lines at ERROR, or ``stream-nb ...: error:``)."""
    return [line for line in err.splitlines() if " ERROR " in line or ": error:" in line]


# ------------------------------------------------------------------------- the documented statuses


def test_the_docs_document_every_exit_status_these_tests_check():
    table = EXIT_STATUS_PAGE[EXIT_STATUS_PAGE.index("# Exit status"):]
    for status in ("| 0 |", "| 1 |", "| 2 |", "| 130 |"):
        assert status in table
    for command in ("`run`", "`evaluate`, `explain`", "`snapshot inspect`"):
        assert command in table


def test_python_dash_m_stream_nb_is_the_stream_nb_command():
    proc = stream_nb("--version")
    assert proc.returncode == 0 and proc.stdout.decode().startswith("stream-nb "), proc.stderr.decode()
    proc = stream_nb("run", "--dead-letter", os.devnull, input=EXAMPLE.read_bytes())
    check(proc, 0, "input exhausted")
    assert len(proc.stdout.splitlines()) > 300  # one prediction per valid event of the example


# ------------------------------------------------------------------------- bad paths


@pytest.mark.parametrize(
    ("args", "status", "needles"),
    [
        # outputs: checked before the work starts, with the path and the operating system's reason
        (["evaluate", "--input", "river:SEA", "--events", "100", "--models", "nb", "--report", NOWHERE], 2,
         [f"--report {NOWHERE}: cannot create the directory: No such file or directory"]),
        (["evaluate", "--input", "river:SEA", "--events", "100", "--models", "nb", "--report", str(EXAMPLE)], 2,
         [f"--report {EXAMPLE}: exists and is not a directory"]),
        (["explain", "--input", str(EXAMPLE), "--event", '{"outlook": "rain"}', "--plot", f"{NOWHERE}/e.png"], 2,
         [f"--plot {NOWHERE}/e.png: cannot write there: No such file or directory"]),
        (["explain", "--input", str(EXAMPLE), "--event", '{"outlook": "rain"}', "--plot", str(ROOT / "examples")], 2,
         ["is a directory"]),
        (["run", "--input", str(EXAMPLE), "--output", f"{NOWHERE}/out.jsonl"], 2,
         [f"--output {NOWHERE}/out.jsonl: cannot write there: No such file or directory"]),
        (["run", "--input", str(EXAMPLE), "--dead-letter", f"{NOWHERE}/dead.jsonl"], 2,
         [f"--dead-letter {NOWHERE}/dead.jsonl: cannot write there: No such file or directory"]),
        (["run", "--input", str(EXAMPLE), "--snapshot-dir", NOWHERE], 2,
         [f"--snapshot-dir {NOWHERE}: cannot create the directory: No such file or directory"]),
        (["run", "--input", str(EXAMPLE), "--snapshot-dir", str(EXAMPLE)], 2,
         [f"--snapshot-dir {EXAMPLE}: exists and is not a directory"]),
        # inputs that are directories, or missing
        (["run", "--input", str(ROOT / "examples")], 2, [f"{ROOT / 'examples'}", "it is a directory"]),
        (["evaluate", "--input", str(ROOT / "examples")], 2, [f"--input {ROOT / 'examples'}", "it is a directory"]),
        (["explain", "--input", str(ROOT / "examples"), "--event", "{}"], 2,
         [f"--input {ROOT / 'examples'}", "it is a directory"]),
        (["run", "--input", "no-such-file.jsonl"], 2, ["cannot open input 'no-such-file.jsonl': No such file"]),
        (["evaluate", "--input", "no-such-file.csv"], 2, ["--input no-such-file.csv", "no such file"]),
        (["explain", "--snapshot", str(ROOT / "examples"), "--event", "{}"], 1,
         ["examples: no snapshot in this directory"]),
        (["explain", "--snapshot", str(EXAMPLE), "--event", "{}"], 1, ["not a stream_nb snapshot"]),
        (["explain", "--input", str(EXAMPLE), "--event-file", str(ROOT / "examples")], 2, ["--event-file"]),
        (["snapshot", "inspect", str(ROOT / "examples")], 2, ["examples: no snapshot in this directory"]),
        (["snapshot", "inspect", "no-such.snb"], 2, ["no-such.snb: cannot read it: No such file or directory"]),
        (["snapshot", "inspect", str(EXAMPLE)], 2, ["not a stream_nb snapshot"]),
        (["run", "--config", str(ROOT / "examples")], 2, ["config file", "Is a directory"]),
        (["run", "--loss", "no-such-loss.json"], 2, ["loss file no-such-loss.json: cannot read it"]),
        (["evaluate", "--input", str(EXAMPLE), "--loss", str(ROOT / "examples")], 2, ["Is a directory"]),
    ],
)
def test_bad_paths_are_one_error_line(args, status, needles):
    err = check(stream_nb(*args), status, *needles)
    assert len(error_lines(err)) == 1, err


@pytest.mark.slow
def test_an_unwritable_report_fails_before_the_computation(tmp_path):
    proc = stream_nb("evaluate", "--input", "river:SEA", "--events", "200000", "--models", "nb,aode,tan",
                     "--report", NOWHERE)
    check(proc, 2, f"--report {NOWHERE}")
    assert proc.stdout == b""  # nothing was computed: no counts line, no table


def test_an_unsupported_plot_format_lists_the_supported_ones():
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    err = check(stream_nb("explain", "--input", str(EXAMPLE), "--event", '{"outlook": "rain"}', "--plot", "out.txt"),
                2, "--plot out.txt: cannot draw a .txt file; expected one of")
    for ext in FigureCanvasAgg(Figure()).get_supported_filetypes():
        assert f".{ext}" in err
    assert not (ROOT / "out.txt").exists()


def test_a_plot_without_extension_is_a_png_at_that_very_path(tmp_path):
    proc = stream_nb("explain", "--input", str(EXAMPLE), "--event", '{"outlook": "rain"}', "--plot",
                     str(tmp_path / "bars"))
    check(proc, 0)
    assert (tmp_path / "bars").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_a_full_output_names_it_and_exits_1():
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    err = check(stream_nb("run", "--input", str(EXAMPLE), "--output", "/dev/full", "--dead-letter", os.devnull), 1,
                "on error: [Errno 28] No space left on device: '/dev/full'")
    assert f"stopped after {EXAMPLE} line 400" in err
    with open("/dev/full", "wb") as full:
        proc = subprocess.run([sys.executable, "-m", "stream_nb", "evaluate", "--input", "river:SEA", "--events",
                               "50", "--models", "nb"], stdout=full, stderr=subprocess.PIPE, env=clean_env(),
                              cwd=ROOT, timeout=300)
    assert proc.returncode == 1
    assert proc.stderr.decode().strip().endswith(
        "stream-nb evaluate: error: cannot write to standard output: No space left on device")
    assert b"Traceback" not in proc.stderr


# ------------------------------------------------------------------------- bad values


@pytest.mark.parametrize(
    ("args", "env", "needle"),
    [
        (["run", "--model", "nb"], {"STREAM_NB_REBUILD_EVERY": "5"},
         "rebuild_every (from STREAM_NB_REBUILD_EVERY) does not apply to --model nb"),
        (["run"], {"STREAM_NB_MODEL": "aode", "STREAM_NB_TREE_SCORE": "cmi"},
         "tree_score (from STREAM_NB_TREE_SCORE) does not apply to model aode (from STREAM_NB_MODEL)"),
        (["run", "--model", "tan"], {"STREAM_NB_BINS": "0"},
         "--model tan: bins (from STREAM_NB_BINS): expected an integer >= 1, got 0"),
        (["run"], {"STREAM_NB_COMMIT_EVERY": "0"}, "commit_every (from STREAM_NB_COMMIT_EVERY) must be a positive"),
        (["run", "--commit-every", "0"], {}, "--commit-every must be a positive integer, got 0"),
        (["run"], {"STREAM_NB_ID_FIELD": "label"}, "id_field (from STREAM_NB_ID_FIELD) and --label-field must differ"),
        (["run"], {"STREAM_NB_SNAPSHOT_EVERY": "0"}, "snapshot_every (from STREAM_NB_SNAPSHOT_EVERY) must be"),
        (["run"], {"STREAM_NB_METRICS_PORT": "70000"}, "metrics_port (from STREAM_NB_METRICS_PORT) must be between"),
        (["run"], {"STREAM_NB_LAG_INTERVAL": "0"}, "lag_interval (from STREAM_NB_LAG_INTERVAL) must be > 0"),
        (["run"], {"STREAM_NB_CONNECT_ATTEMPTS": "-1"}, "connect_attempts (from STREAM_NB_CONNECT_ATTEMPTS) must be"),
        (["run", "--input", "x.jsonl"], {"STREAM_NB_INPUT_TOPIC": "t"},
         "--input (JSON-lines mode) cannot be combined with input_topic (from STREAM_NB_INPUT_TOPIC)"),
        (["run"], {"STREAM_NB_BINS": "seven"}, "STREAM_NB_BINS: expected an integer, got 'seven'"),
        (["run", "--alpha", "0"], {}, "alpha: expected a finite number > 0"),
        (["evaluate", "--input", str(EXAMPLE), "--events", "0"], {}, "--events: expected a positive integer"),
        (["evaluate", "--input", str(EXAMPLE), "--models", "nb,svm"], {}, "unknown model 'svm'"),
        (["evaluate", "--input", "river:Friedman"], {}, "river's Friedman is a regression stream"),
        (["evaluate", "--input", str(EXAMPLE), "--window", "0"], {}, "--window: expected a positive integer"),
        (["explain", "--input", str(EXAMPLE), "--event", "[1]"], {}, "--event: expected one JSON object"),
        (["explain", "--input", str(EXAMPLE), "--event", "{}", "--permutations", "0"], {},
         "--permutations: expected a positive integer"),
        (["explain", "--input", str(EXAMPLE), "--event", "{}", "--model", "kdb:k=x"], {}, "k: expected an integer"),
        (["evaluate", "--input", str(EXAMPLE), "--no-such-flag"], {}, "unrecognized arguments: --no-such-flag"),
        (["snapshot"], {}, "the following arguments are required"),
        (["no-such-command"], {}, "invalid choice: 'no-such-command'"),
    ],
)
def test_bad_values_are_one_error_line_with_exit_2(args, env, needle):
    err = check(stream_nb(*args, env=clean_env(**env)), 2, needle)
    assert len([line for line in err.splitlines() if "error" in line.lower()]) == 1, err


def test_a_setting_from_the_config_file_is_named_with_the_file(tmp_path):
    config = tmp_path / "settings.toml"
    config.write_text('[run]\nmodel = "nb"\nrebuild_every = 4\n')
    check(stream_nb("run", "--config", str(config)), 2,
          f"rebuild_every (from config file {config}) does not apply to model nb (from config file {config})")


# ------------------------------------------------------------------------- Ctrl-C


def big_file(path: pathlib.Path, copies: int) -> pathlib.Path:
    """300 valid labeled events, a bad line (a command reports it when its loop gets there), then ``copies``
    times those 300 events again."""
    good = b"".join(orjson.dumps({"id": i, "outlook": ("sunny", "rain", "overcast")[i % 3], "windy": i % 4 == 0,
                                  "temperature": float(i % 17), "label": ("yes", "no")[i % 5 == 0]}) + b"\n"
                    for i in range(300))
    with open(path, "wb") as f:
        f.write(good + b"[not an event]\n" + good * copies)
    return path


def interrupt_when(proc: subprocess.Popen, needle: bytes, timeout: float = 300) -> bytes:
    """Read stderr until ``needle`` shows (the command is in its loop), then send SIGINT; the stderr read."""
    seen = b""
    deadline = time.monotonic() + timeout
    while needle not in seen:
        line = proc.stderr.readline()
        assert line, f"the command ended before {needle!r}: {seen.decode(errors='replace')}"
        seen += line
        assert time.monotonic() < deadline, seen.decode(errors="replace")
    proc.send_signal(signal.SIGINT)
    return seen


def test_ctrl_c_in_evaluate_prints_what_was_measured_and_exits_130(tmp_path):
    data = big_file(tmp_path / "big.jsonl", 200)  # 60,000 events: seconds of work at least
    proc = subprocess.Popen([sys.executable, "-m", "stream_nb", "evaluate", "--input", str(data), "--models",
                             "nb,tan"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env(), cwd=ROOT)
    try:
        before = interrupt_when(proc, b"skipped bad row")
        out, rest = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    err = (before + rest).decode()
    assert proc.returncode == 130, err
    assert "Traceback" not in err + out.decode()
    assert "stream-nb evaluate: interrupted: the figures below cover the first" in err
    counted = int(err.split("cover the first ")[1].split(" events")[0].replace(",", ""))
    assert 300 <= counted < 60_300
    text = out.decode()
    assert f"{counted:,} events" in text.splitlines()[0]  # the counts line
    table = text[text.index("model  accuracy"):].splitlines()
    assert [row.split()[0] for row in table[1:]] == ["nb", "tan"]


def test_ctrl_c_in_explain_while_training_exits_130(tmp_path):
    data = big_file(tmp_path / "big.jsonl", 200)
    proc = subprocess.Popen([sys.executable, "-m", "stream_nb", "explain", "--input", str(data), "--model", "kdb",
                             "--event", '{"outlook": "rain"}'], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=clean_env(), cwd=ROOT)
    try:
        before = interrupt_when(proc, b"skipped bad row")
        out, rest = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    err = (before + rest).decode()
    assert proc.returncode == 130, err
    assert "Traceback" not in err + out.decode()
    assert err.rstrip().endswith("stream-nb explain: interrupted")


def test_ctrl_c_in_run_stops_it_saying_where_and_exits_0(tmp_path):
    data = big_file(tmp_path / "big.jsonl", 600)  # 180,000 events
    output = tmp_path / "out.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "stream_nb", "run", "--model", "tan", "--input", str(data),
                             "--output", str(output), "--log-format", "json", "--commit-every", "100"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env(), cwd=ROOT)
    try:
        interrupt_when(proc, b'"reason":"invalid_json"')  # line 301's dead letter, flushed: it is running
        _, rest = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, rest.decode()[-3000:]
    assert b"Traceback" not in rest
    shutdown = [json.loads(line) for line in rest.splitlines() if b'"event":"shutdown"' in line]
    assert len(shutdown) == 1
    last = shutdown[0]
    assert last["how"] == "stopped by SIGINT"
    source = orjson.loads(output.read_bytes().splitlines()[-1])["source"]
    # where it stopped: the file and the last line processed, which is the last output's
    line = data.read_bytes().split(b"\n")[source["line"] - 1]
    assert last["position"] == {"file": str(data), "line": source["line"], "byte": source["byte"] + len(line) + 1}
    assert last["message"].startswith(f"stopped by SIGINT after {data} line {source['line']} (next byte ")
    assert source["line"] < 180_301  # it stopped before the end


def blocked_reading_a_pipe(pid: int) -> bool:
    """True while the process sleeps in a read of a pipe (Linux: /proc/PID/wchan)."""
    try:
        with open(f"/proc/{pid}/wchan") as f:
            return "pipe_read" in f.read()
    except OSError:
        pytest.skip("no /proc/PID/wchan here")


def test_ctrl_c_while_evaluate_reads_stdin_exits_130():
    # `evaluate -` reads stdin whole before the first event: the interrupt lands in that read
    proc = subprocess.Popen([sys.executable, "-m", "stream_nb", "evaluate", "--input", "-", "--models", "nb"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env(),
                            cwd=ROOT)
    try:
        proc.stdin.write(b'{"a": "x", "label": "p"}\n')
        proc.stdin.flush()
        deadline = time.monotonic() + 300
        while not blocked_reading_a_pipe(proc.pid):
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read().decode()
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err.decode()
    assert b"Traceback" not in out + err
    assert err.decode().rstrip().endswith("stream-nb evaluate: interrupted")


@pytest.mark.slow
def test_ctrl_c_while_run_waits_for_a_broker_exits_0():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: nothing listens there
    proc = subprocess.Popen([sys.executable, "-m", "stream_nb", "run", "--bootstrap-servers", f"127.0.0.1:{port}",
                             "--input-topic", "in", "--output-topic", "out", "--connect-backoff-max", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env(), cwd=ROOT)
    try:
        before = interrupt_when(proc, b"start-up attempt 1 failed")
        _, rest = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    err = (before + rest).decode()
    assert proc.returncode == 0, err
    assert "Traceback" not in err and "stopped by SIGINT before start-up finished" in err
