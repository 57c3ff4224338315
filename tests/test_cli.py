"""``stream-nb run`` as a real subprocess: the example stream, signals, settings, Kafka start-up."""

from __future__ import annotations

import importlib.util
import os
import pathlib
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

import orjson
import pytest

from connectors.kafka._client import coerce
from stream_nb.cli import build_parser, main
from stream_nb.exceptions import ConfigError
from stream_nb.settings import BY_NAME, MODELS, REMOVED, SETTINGS, convert

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "events.jsonl"


def load_example_generator():
    spec = importlib.util.spec_from_file_location("make_events", ROOT / "examples" / "make_events.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without any STREAM_NB_* setting a developer or CI may have set."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAM_NB_")}
    env.update(extra)
    return env


def cli(*args: str, env: dict | None = None, input: bytes | None = None, cwd=None, timeout: float = 120):
    return subprocess.run(
        [sys.executable, "-m", "stream_nb.cli", *args],
        input=input,
        capture_output=True,
        env=clean_env() if env is None else env,
        cwd=cwd,
        timeout=timeout,
    )


def summary(stderr: bytes) -> dict:
    """The metrics of the final log line."""
    match = re.search(rb"; metrics (\{.*\})\s*$", stderr)
    assert match, stderr.decode(errors="replace")
    return orjson.loads(match.group(1))


# ----------------------------------------------------------------------- the example stream


def test_example_file_is_what_the_generator_writes():
    lines = load_example_generator().generate()
    assert EXAMPLE.read_bytes() == b"".join(raw + b"\n" for raw, _ in lines)
    assert len(lines) >= 300


def test_example_file_end_to_end_with_the_console_script(tmp_path):
    exe = shutil.which("stream-nb")
    assert exe, "the package is installed editable, so the console script exists"
    lines = load_example_generator().generate()
    dead = tmp_path / "dead.jsonl"
    proc = subprocess.run(
        [exe, "run", "--input", str(EXAMPLE), "--dead-letter", str(dead)],
        capture_output=True, env=clean_env(), timeout=120,
    )
    assert proc.returncode == 0, proc.stderr.decode()

    outputs = [orjson.loads(line) for line in proc.stdout.splitlines()]  # stdout is predictions only
    valid = [(i + 1, raw) for i, (raw, reason) in enumerate(lines) if reason is None]
    assert len(outputs) == len(valid)
    assert [o["source"]["line"] for o in outputs] == [n for n, _ in valid]
    assert [o["id"] for o in outputs] == [orjson.loads(raw)["id"] for _, raw in valid]
    assert {o["model"] for o in outputs} == {"nb"}
    labeled = [orjson.loads(raw).get("label") is not None for _, raw in valid]
    assert [o["learned"] for o in outputs] == labeled
    assert outputs[-1]["n_learned"] == sum(labeled)

    letters = [orjson.loads(line) for line in dead.read_bytes().splitlines()]
    expected = [(i + 1, reason) for i, (_, reason) in enumerate(lines) if reason not in (None, "blank")]
    assert [(d["source"]["line"], d["reason"]) for d in letters] == expected
    assert len(letters) == 7

    metrics = summary(proc.stderr)
    assert metrics["predicted"] == len(outputs)
    assert metrics["dead_letters"] == len(letters)
    assert metrics["blank_lines"] == 1
    assert b"input exhausted" in proc.stderr


def test_stdin_to_stdout_with_dead_letters_on_stderr():
    data = b'{"id": 1, "x": "a", "label": "p"}\n{"id": 2, "x": [1]}\n{"id": 3, "x": "a"}\n'
    proc = cli("run", "--log-level", "WARNING", input=data)
    assert proc.returncode == 0, proc.stderr.decode()
    assert [orjson.loads(line)["id"] for line in proc.stdout.splitlines()] == [1, 3]
    letters = [orjson.loads(line) for line in proc.stderr.splitlines() if line.startswith(b"{")]
    assert [(d["reason"], d["field"], d["source"]) for d in letters] == [
        ("nested_value", "x", {"file": "stdin", "line": 2, "byte": data.index(b"\n") + 1})
    ]


@pytest.mark.parametrize("model", sorted(MODELS))
def test_every_model_runs_on_the_example(model, tmp_path):
    proc = cli("run", "--model", model, "--input", str(EXAMPLE), "--dead-letter", str(tmp_path / "d.jsonl"))
    assert proc.returncode == 0, proc.stderr.decode()
    metrics = summary(proc.stderr)
    assert metrics["predicted"] == len(proc.stdout.splitlines()) == 392
    assert metrics["accuracy"] > 0.6


def test_features_label_and_id_fields(tmp_path):
    data = b'{"key": 5, "a": "x", "b": {"ignored": 1}, "play": "no"}\n{"key": 6, "a": "x"}\n'
    proc = cli("run", "--features", "a", "--label-field", "play", "--id-field", "key", "--model-name", "mine", input=data)
    assert proc.returncode == 0, proc.stderr.decode()
    first, second = (orjson.loads(line) for line in proc.stdout.splitlines())
    assert (first["id"], first["learned"], first["model"]) == (5, True, "mine")
    assert (second["id"], second["prediction"]) == (6, "no")
    proc = cli("run", "--id-field", "", input=b'{"id": "a", "label": "y"}\n{"id": "a"}\n')
    assert [orjson.loads(line)["id"] for line in proc.stdout.splitlines()] == [None, None]
    assert orjson.loads(proc.stdout.splitlines()[1])["prediction"] == "y"  # "id" was a feature


@pytest.mark.slow
def test_loss_file_changes_the_decision(tmp_path):
    loss = tmp_path / "loss.json"
    loss.write_text('{"yes": {"no": 50}}')
    plain = cli("run", "--input", str(EXAMPLE), "--dead-letter", os.devnull)
    costly = cli("run", "--input", str(EXAMPLE), "--dead-letter", os.devnull, "--loss", str(loss))
    assert plain.returncode == costly.returncode == 0, costly.stderr.decode()

    def yes(proc):
        return sum(orjson.loads(line)["prediction"] == "yes" for line in proc.stdout.splitlines())

    assert yes(costly) > yes(plain)


def test_loss_file_keys_also_stand_for_integer_labels(tmp_path):
    loss = tmp_path / "loss.json"
    loss.write_text('{"1": {"0": 1000}}')
    events = b"".join(orjson.dumps({"x": "a" if i % 3 else "b", "label": int(i % 3 == 0)}) + b"\n" for i in range(60))
    proc = cli("run", "--loss", str(loss), input=events + b'{"x": "a"}\n')
    assert proc.returncode == 0, proc.stderr.decode()
    assert orjson.loads(proc.stdout.splitlines()[-1])["prediction"] == 1


# ----------------------------------------------------------------------- signals


class LineReader:
    """Read a pipe's lines on a thread so the test can wait with a timeout."""

    def __init__(self, pipe):
        self.lines: queue.Queue = queue.Queue()
        self.thread = threading.Thread(target=self._run, args=(pipe,), daemon=True)
        self.thread.start()

    def _run(self, pipe):
        for line in pipe:
            self.lines.put(line)
        self.lines.put(None)

    def take(self, n: int, timeout: float = 30) -> list[bytes]:
        out = []
        deadline = time.monotonic() + timeout
        while len(out) < n:
            line = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
            assert line is not None, f"EOF after {len(out)} of {n} lines"
            out.append(line)
        return out

    def rest(self, timeout: float = 30) -> list[bytes]:
        self.thread.join(timeout)
        out = []
        while True:
            line = self.lines.get_nowait()
            if line is None:
                return out
            out.append(line)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_on_a_slow_pipe_flushes_every_output_and_exits_0(sig):
    events = [orjson.dumps({"id": i, "x": "ab"[i % 2], "label": "yn"[i % 3 == 0]}) + b"\n" for i in range(60)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "stream_nb.cli", "run", "--commit-interval", "3600"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env(),
    )
    try:
        out = LineReader(proc.stdout)
        err = LineReader(proc.stderr)
        # a trickle: the outputs show up while the input is still open (flushed when the input goes idle)
        for line in events[:20]:
            proc.stdin.write(line)
            proc.stdin.flush()
            time.sleep(0.005)
        first = out.take(20)
        assert [orjson.loads(line)["id"] for line in first] == list(range(20))
        # more events, then the signal while stdin is still open
        for line in events[20:]:
            proc.stdin.write(line)
        proc.stdin.flush()
        time.sleep(0.3)
        proc.send_signal(sig)
        assert proc.wait(timeout=30) == 0
        rest = out.rest()
        stderr = b"".join(err.rest())
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdin.close()
    ids = [orjson.loads(line)["id"] for line in first + rest]
    assert ids == list(range(len(ids)))  # in order, none lost, none twice
    assert summary(stderr)["predicted"] == len(ids)  # every processed event reached stdout
    assert len(ids) == 60  # they had 0.3 s to arrive; a poll takes at most 0.2 s
    assert f"stopped by {sig.name}".encode() in stderr
    assert b"Traceback" not in stderr


# ----------------------------------------------------------------------- settings


def resolved(*args: str, env: dict | None = None, cwd=None) -> dict:
    proc = cli("run", "--print-config", *args, env=env, cwd=cwd)
    assert proc.returncode == 0, proc.stderr.decode()
    return orjson.loads(proc.stdout)


def test_precedence_flag_over_env_over_file_over_default(tmp_path):
    config = tmp_path / "stream-nb.toml"
    config.write_text(
        '[run]\nmodel = "aode"\nbins = 3\nalpha = 0.5\nlabel_field = "file_label"\n'
        '[run.types]\na = "numeric"\nb = "numeric"\n'
    )
    env = clean_env(STREAM_NB_MODEL="tan", STREAM_NB_BINS="4", STREAM_NB_TYPES="b=categorical,c=numeric")
    settings = resolved("--config", str(config), "--model", "nb", "--types", "c=categorical", env=env)
    assert settings["model"] == "nb"  # flag beats env and file
    assert settings["bins"] == 4  # env beats file
    assert settings["alpha"] == 0.5  # file beats default
    assert settings["label_field"] == "file_label"
    assert settings["warmup"] is None and settings["poll_max_records"] == 500  # defaults
    assert settings["types"] == {"a": "numeric", "b": "categorical", "c": "categorical"}  # merged key by key


def test_config_file_from_env_and_flat_keys(tmp_path):
    config = tmp_path / "flat.toml"
    config.write_text('model = "tan"\nrebuild-every = 50\nfeatures = ["a", "b"]\n[kafka_config]\nsecurity_protocol = "SSL"\n')
    settings = resolved(env=clean_env(STREAM_NB_CONFIG=str(config)))
    assert settings["model"] == "tan"
    assert settings["rebuild_every"] == 50
    assert settings["features"] == ["a", "b"]
    assert settings["kafka_config"] == {"security_protocol": "SSL"}


def test_precedence_takes_effect_in_a_run(tmp_path):
    config = tmp_path / "c.toml"
    config.write_text('label_field = "from_file"\n')
    data = b'{"from_file": "f", "from_env": "e", "from_flag": "g", "x": 1}\n'
    for extra, env, expected_absent in [
        ((), {}, "from_file"),
        ((), {"STREAM_NB_LABEL_FIELD": "from_env"}, "from_env"),
        (("--label-field", "from_flag"), {"STREAM_NB_LABEL_FIELD": "from_env"}, "from_flag"),
    ]:
        proc = cli("run", "--config", str(config), *extra, env=clean_env(**env), input=data)
        assert proc.returncode == 0, proc.stderr.decode()
        assert orjson.loads(proc.stdout)["learned"] is True
        assert summary(proc.stderr)["learned"] == 1, expected_absent


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ('modle = "nb"\n', "unknown setting 'modle'; expected one of:"),
        ('[run]\nmodel = "nb"\n[kafka]\nx = 1\n', "keys 'kafka' are outside the [run] table"),
        ('alpha = "much"\n', "alpha: expected a number, got 'much'"),
        ('model = "svm"\n', "model: expected one of nb, aode, tan, spode, kdb, got 'svm'"),
        ("model = \n", "not valid TOML"),
    ],
)
def test_bad_config_file_is_rejected_with_a_clear_message(tmp_path, toml, message):
    config = tmp_path / "bad.toml"
    config.write_text(toml)
    proc = cli("run", "--config", str(config))
    assert proc.returncode == 2
    stderr = proc.stderr.decode()
    assert message in stderr
    assert str(config) in stderr
    assert "Traceback" not in stderr


def test_bad_env_value_names_the_variable_and_other_stream_nb_variables_are_ignored():
    proc = cli("run", "--print-config", env=clean_env(STREAM_NB_POLL_TIMEOUT="soon"))
    assert proc.returncode == 2
    assert "STREAM_NB_POLL_TIMEOUT: expected a number, got 'soon'" in proc.stderr.decode()
    # e.g. the test suite's own STREAM_NB_REQUIRE_KAFKA must not break the daemon
    assert cli("run", "--print-config", env=clean_env(STREAM_NB_REQUIRE_KAFKA="1")).returncode == 0


@pytest.mark.parametrize("text", [" On", "YES", "true", "1", "off", "No", "FALSE", "0", "maybe", "", "2", "1.0"])
def test_true_and_false_are_read_by_one_rule_for_settings_and_kafka_config(text):
    """--emit-imputed=TEXT and --kafka-config enable_auto_commit=TEXT accept and refuse the same words."""

    def outcome(read):
        try:
            return read()
        except ConfigError:
            return "refused"

    setting = outcome(lambda: convert(BY_NAME["emit_imputed"], text, "STREAM_NB_EMIT_IMPUTED"))
    kafka = outcome(lambda: coerce("KafkaSource", "enable_auto_commit", text, True))
    assert setting == kafka
    assert setting in ({True, False} if text.strip().lower() not in ("maybe", "", "2", "1.0") else {"refused"})


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--model", "aode", "--var-smoothing", "1e-6"), "--var-smoothing (var_smoothing) does not apply to --model aode"),
        (("--model", "nb", "--rebuild-every", "5"), "--rebuild-every (rebuild_every) does not apply to --model nb"),
        (("--alpha", "0"), "alpha: expected a finite number > 0"),
        (("--types", "a=text"), "expected 'categorical' or 'numeric'"),
        (("--types", "a"), "--types: expected KEY=VALUE, got 'a'"),
        (("--poll-max-records", "0"), "--poll-max-records must be a positive integer"),
        (("--label-field", "id"), "--id-field and --label-field must differ"),
        (("--input", "no-such-file.jsonl"), "cannot open input 'no-such-file.jsonl'"),
        (("--loss", "no-such-loss.json"), "loss file no-such-loss.json: cannot read it"),
        (("--input-topic", "events", "--input", "x.jsonl"), "--input (JSON-lines mode) cannot be combined with --input-topic"),
        (("--input-topic", "events"), "Kafka mode needs --output-topic (or STREAM_NB_OUTPUT_TOPIC)"),
        (("--input-topic", "a", "--output-topic", "b", "--kafka-config", "group_id=g"), "use --group-id"),
        (("--connect-attempts", "-1"), "--connect-attempts must be >= 0"),
    ],
)
def test_invalid_settings_exit_2_with_one_clear_line(args, message):
    proc = cli("run", *args, input=b"")
    assert proc.returncode == 2
    stderr = proc.stderr.decode()
    assert message in stderr
    assert "Traceback" not in stderr


def test_output_and_dead_letter_must_be_different_files(tmp_path):
    proc = cli("run", "--output", str(tmp_path / "o.jsonl"), "--dead-letter", str(tmp_path / "o.jsonl"), input=b"")
    assert proc.returncode == 2
    assert "--output and --dead-letter are the same file" in proc.stderr.decode()


def test_help_lists_every_flag_with_its_env_variable_and_the_precedence():
    proc = cli("run", "--help")
    assert proc.returncode == 0
    text = proc.stdout.decode()
    flags = [s.flag for s in SETTINGS] + ["--config", "--print-config", "--help"]
    for flag in flags:
        assert re.search(rf"^\s+(-h, )?{re.escape(flag)}\b", text, re.MULTILINE), flag
    for setting in SETTINGS:
        assert f"{setting.env}]" in text, setting.env
    parser_flags = {a for action in build_parser()._subparsers._group_actions[0].choices["run"]._actions
                    for a in action.option_strings}
    # a removed setting keeps a hidden flag, so that giving it is an error saying what replaced it
    removed = {"--" + name.replace("_", "-") for name in REMOVED}
    assert parser_flags == set(flags) | {"-h"} | removed
    assert not any(re.search(rf"^\s+{re.escape(flag)}\b", text, re.MULTILINE) for flag in removed)
    assert "1. command-line flags" in text and "2. environment variables" in text and "3. the TOML file" in text
    for reason in ("oversize", "invalid_utf8", "invalid_json", "not_an_object", "bad_id", "bad_label",
                   "nested_value", "bad_feature_type"):
        assert reason in text


def test_no_command_prints_usage_and_exits_2(capsys):
    assert main([]) == 2
    assert "run" in capsys.readouterr().err


def test_main_in_process_returns_0(tmp_path, monkeypatch):
    for key in [k for k in os.environ if k.startswith("STREAM_NB_")]:
        monkeypatch.delenv(key)
    out = tmp_path / "o.jsonl"
    assert main(["run", "--input", str(EXAMPLE), "--output", str(out), "--dead-letter", str(tmp_path / "d.jsonl"),
                 "--log-level", "ERROR"]) == 0
    assert len(out.read_bytes().splitlines()) == 392
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # handlers restored


def test_closed_output_pipe_exits_1_without_traceback():
    data = EXAMPLE.read_bytes() * 10
    proc = subprocess.Popen(
        [sys.executable, "-m", "stream_nb.cli", "run", "--dead-letter", os.devnull],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env(),
    )
    def feed():
        try:
            proc.stdin.write(data)
            proc.stdin.close()
        except BrokenPipeError:
            pass  # it may stop reading before the end

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    try:
        assert proc.stdout.readline().startswith(b"{")
        proc.stdout.close()  # like `| head -1`
        stderr = proc.stderr.read()
        assert proc.wait(timeout=60) == 1
    finally:
        if proc.poll() is None:
            proc.kill()
    # where it stopped: after the last poll whose outputs were all written, or before line 1 when the pipe
    # closed while the first poll's were (a first read that took in more outputs than the pipe buffers)
    assert re.search(rb"stopped (after stdin line \d+ \(next byte \d+\)|before stdin line 1): the output pipe "
                     rb"was closed; metrics", stderr), stderr[-300:]
    assert b"Traceback" not in stderr


# ----------------------------------------------------------------------- Kafka start-up


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def kafka_args(port: int) -> list[str]:
    return ["run", "--bootstrap-servers", f"127.0.0.1:{port}", "--input-topic", "events", "--output-topic", "preds",
            "--kafka-config", "bootstrap_timeout_ms=300", "--connect-backoff-max", "0.2"]


def test_broker_down_at_start_retries_with_one_line_per_attempt_then_gives_up():
    proc = cli(*kafka_args(closed_port()), "--connect-attempts", "3", timeout=60)
    stderr = proc.stderr.decode()
    assert proc.returncode == 1, stderr
    lines = stderr.splitlines()
    attempts = [line for line in lines if "failed" in line]
    assert [re.search(r"start-up attempt (\d+) failed", line).group(1) for line in attempts] == ["1", "2"]
    assert all("retrying in" in line and "no broker reachable" in line for line in attempts)
    assert "gave up after 3 start-up attempts" in lines[-1]
    assert len(lines) == 3, stderr  # one line per attempt, nothing from kafka-python
    assert "Traceback" not in stderr


def test_sigterm_while_waiting_for_the_broker_exits_0():
    proc = subprocess.Popen(
        [sys.executable, "-m", "stream_nb.cli", *kafka_args(closed_port())],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env(),
    )
    err = LineReader(proc.stderr)
    try:
        deadline = time.monotonic() + 30
        while not any(b"start-up attempt 1 failed" in line for line in list(err.lines.queue)):
            assert time.monotonic() < deadline, "no retry line"
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    stderr = b"".join(err.rest())
    assert b"stopped by SIGTERM before start-up finished" in stderr
    assert b"Traceback" not in stderr


# ----------------------------------------------------------------------- Kafka end to end


def read_topic(bootstrap: str, topic: str, expected: int, timeout: float = 60) -> list:
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                             enable_auto_commit=False, group_id=None)
    messages: list = []
    deadline = time.monotonic() + timeout
    try:
        while len(messages) < expected and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=500).values():
                messages.extend(batch)
        # anything beyond the expected count would be a duplicate
        for batch in consumer.poll(timeout_ms=1000).values():
            messages.extend(batch)
    finally:
        consumer.close()
    return messages


@pytest.mark.kafka
def test_kafka_mode_end_to_end_with_sigterm_and_resume(kafka_bootstrap_servers, kafka_topic_factory, kafka_client):
    from kafka import KafkaAdminClient, KafkaProducer

    events_topic = kafka_topic_factory(3, prefix="events")
    preds_topic = kafka_topic_factory(3, prefix="preds")
    group = f"stream-nb-cli-{time.monotonic_ns()}"
    lines = [(raw, reason) for raw, reason in load_example_generator().generate() if reason != "blank"]
    producer = KafkaProducer(bootstrap_servers=kafka_bootstrap_servers)
    for i, (raw, _) in enumerate(lines):
        producer.send(events_topic, value=raw, key=f"k{i}".encode())
    producer.flush()

    args = [sys.executable, "-m", "stream_nb.cli", "run", "--bootstrap-servers", kafka_bootstrap_servers,
            "--input-topic", events_topic, "--output-topic", preds_topic, "--group-id", group,
            "--kafka-client", kafka_client]

    def run_until(n_outputs: int) -> tuple[list, list, bytes]:
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env())
        err = LineReader(proc.stderr)
        try:
            outputs = read_topic(kafka_bootstrap_servers, preds_topic, n_outputs)
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=60) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
        return outputs, proc.stdout.read(), b"".join(err.rest())

    valid = [raw for raw, reason in lines if reason is None]
    outputs, stdout, stderr = run_until(len(valid))
    assert stdout == b""
    assert len(outputs) == len(valid), stderr.decode()
    assert b"stopped by SIGTERM" in stderr and b"Traceback" not in stderr
    by_key = {m.key: orjson.loads(m.value) for m in outputs}
    assert len(by_key) == len(valid)  # one output per valid event, keyed like its input
    for m in outputs:
        assert m.value and orjson.loads(m.value)["source"]["topic"] == events_topic
    letters = read_topic(kafka_bootstrap_servers, f"{events_topic}.dlq", 7)
    assert sorted(orjson.loads(m.value)["reason"] for m in letters) == sorted(
        r for _, r in lines if r is not None
    )

    admin = KafkaAdminClient(bootstrap_servers=kafka_bootstrap_servers)
    try:
        committed = admin.list_group_offsets(group)[group]
    finally:
        admin.close()
    assert sum(meta.offset for tp, meta in committed.items() if tp.topic == events_topic) == len(lines)

    # a restart resumes after the committed offsets: only new events give outputs
    producer.send(events_topic, value=b'{"id": "new", "outlook": "rain", "windy": true}', key=b"new")
    producer.flush()
    producer.close()
    outputs, _, stderr = run_until(len(valid) + 1)
    assert len(outputs) == len(valid) + 1, stderr.decode()
    assert [orjson.loads(m.value)["id"] for m in outputs if m.key == b"new"] == ["new"]
    assert summary(stderr)["predicted"] == 1  # nothing before the committed offsets was replayed


@pytest.mark.parametrize("how", ["flag", "env"])
def test_log_level_in_any_case(how):
    """``--log-level debug`` (and STREAM_NB_LOG_LEVEL=debug) mean DEBUG, as operators type them."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    args = [sys.executable, "-m", "stream_nb", "run", "--print-config"]
    if how == "flag":
        args += ["--log-level", "debug"]
    else:
        env["STREAM_NB_LOG_LEVEL"] = "debug"
    proc = subprocess.run(args, capture_output=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr.decode()
    assert orjson.loads(proc.stdout)["log_level"] == "DEBUG"
