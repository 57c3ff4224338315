"""Following files as ``tail -F`` does: ``stream-nb run --follow`` and ``--feedback``, as a real subprocess.

Lines appended to ``--input`` while the daemon runs are predicted; a line is
read only once its newline has come; labels appended to ``--feedback`` are
joined to the events they label (``delayed_accuracy`` then counts them); a
file rotated while the daemon runs (renamed, a new file at the path) is read
to its end and the new one from its start, with no line lost or read twice;
a restart with ``--snapshot-dir`` resumes in the file the snapshot's position
lies in; SIGTERM ends it all with exit status 0 and a final snapshot. Each
wait polls the files with a deadline.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import pytest

from connectors.jsonl import JsonLinesSource
from recovery import Daemon, clean_env, snapshots, wait_until
from stream_nb.daemon import connector_plan
from stream_nb.exceptions import ConfigError
from stream_nb.settings import add_arguments, resolve_settings
from stream_nb.snapshots import read as read_snapshot

WAIT_S = 60.0


def event(i: int, label: bool = True) -> bytes:
    """Event ``e<i>``: its label (``yes`` for ``color == red``) when ``label``, else only its id."""
    color = ("red", "green", "blue")[i % 3]
    obj = {"id": f"e{i}", "color": color, "size": ("s", "m")[i % 2]}
    if label:
        obj["label"] = "yes" if color == "red" else "no"
    return json.dumps(obj).encode() + b"\n"


def append(path: Path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


def outputs(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_bytes().splitlines()] if path.exists() else []


def wait_outputs(path: Path, n: int, daemon: Daemon) -> list[dict]:
    """The outputs once there are ``n`` of them (failing when the daemon exits or the deadline passes)."""
    return wait_until(lambda: (lambda out: out if len(out) >= n else None)(outputs(path)), WAIT_S,
                      f"{n} outputs in {path}", daemon, step=0.02)


def newest_daemon_part(snaps: Path) -> dict:
    return read_snapshot(snapshots(snaps)[-1]).daemon


class Follow:
    """A directory with an input, outputs and snapshots, and the daemon that follows the input."""

    def __init__(self, tmp_path: Path, *extra: str):
        self.dir = tmp_path
        self.input, self.output, self.dead = tmp_path / "in.jsonl", tmp_path / "out.jsonl", tmp_path / "dead.jsonl"
        self.snaps = tmp_path / "snaps"
        self.input.touch()
        # output files show the lines each snapshot commits: snapshots every 0.2 s keep the waits short
        self.args = ["--input", str(self.input), "--follow", "--output", str(self.output), "--dead-letter",
                     str(self.dead), "--snapshot-dir", str(self.snaps), "--metrics-interval", "0",
                     "--poll-timeout", "0.05", "--snapshot-interval", "0.2", *extra]

    def start(self) -> Daemon:
        return Daemon(self.dir, self.args, "daemon", env=clean_env())

    def stop(self, daemon: Daemon) -> None:
        """SIGTERM: exit status 0, a last log line saying so, and a final snapshot covering every output."""
        assert daemon.terminate() == 0, daemon.log()[-4000:]
        assert "stopped by SIGTERM" in daemon.log()
        assert newest_daemon_part(self.snaps)["metrics"]["events"] == len(outputs(self.output))


def test_lines_appended_to_a_followed_input_are_predicted_and_a_partial_line_waits_for_its_newline(tmp_path):
    run = Follow(tmp_path)
    append(run.input, b"".join(event(i) for i in range(20)))
    daemon = run.start()
    wait_outputs(run.output, 20, daemon)
    for start in (20, 50):  # appended while the daemon waits at the end of the file
        append(run.input, b"".join(event(i) for i in range(start, start + 30)))
        wait_outputs(run.output, start + 30, daemon)
    line = event(80, label=False)
    append(run.input, line[:15])  # no newline yet: not an event, nor a dead letter
    time.sleep(0.5)  # a few polls (every 0.05 s) over the partial line
    assert len(outputs(run.output)) == 80 and not run.dead.read_bytes()
    append(run.input, line[15:])
    out = wait_outputs(run.output, 81, daemon)
    run.stop(daemon)
    assert [o["id"] for o in out] == [f"e{i}" for i in range(81)]  # each once, in order
    assert out[-1]["source"] == {"file": str(run.input), "line": 81, "byte": run.input.stat().st_size - len(line)}
    assert out[-1]["prediction"] == "no" and not run.dead.read_bytes()  # learned: green is "no"
    assert newest_daemon_part(run.snaps)["positions"] == {str(run.input): run.input.stat().st_size}


def test_labels_appended_to_the_feedback_file_are_joined_also_across_its_rotation(tmp_path):
    labels = tmp_path / "labels.jsonl"
    labels.touch()
    run = Follow(tmp_path, "--feedback", str(labels), "--metrics-interval", "0.1", "--snapshot-interval", "0.2")
    # 60 labeled events to learn from, then 40 that wait for their labels
    append(run.input, b"".join(event(i) for i in range(60)) + b"".join(event(i, False) for i in range(60, 100)))
    daemon = run.start()
    out = wait_outputs(run.output, 100, daemon)
    size = run.input.stat().st_size
    wait_until(lambda: snapshots(run.snaps) and newest_daemon_part(run.snaps)["positions"][str(run.input)] == size,
               WAIT_S, "a snapshot of the 100 events", daemon, step=0.05)
    truth = {f"e{i}": json.loads(event(i))["label"] for i in range(60, 100)}
    # a wrong label now and then, so that the delayed accuracy is not trivially 1
    given = {k: (v if int(k[1:]) % 7 else {"yes": "no", "no": "yes"}[v]) for k, v in truth.items()}
    records = [json.dumps({"id": k, "label": v}).encode() + b"\n" for k, v in given.items()]
    append(labels, b"".join(records[:25]))
    os.rename(labels, tmp_path / "labels.jsonl.1")  # rotated: the rest goes to a new file at the path
    append(tmp_path / "labels.jsonl.1", records[25])  # written by a writer that still had the old file open
    labels.write_bytes(b"".join(records[26:]))

    def joined():
        lines = [line for line in daemon.log().splitlines() if " metrics {" in line]
        metrics = json.loads(lines[-1].split(" metrics ", 1)[1]) if lines else None
        return metrics if metrics and metrics["join"]["delayed_labeled"] == 40 else None

    metrics = wait_until(joined, WAIT_S, "the 40 labels joined", daemon, step=0.05)
    predicted = {o["id"]: o["prediction"] for o in out}
    expected = sum(predicted[k] == v for k, v in given.items()) / len(given)  # scored from the outputs
    assert metrics["join"]["delayed_accuracy"] == pytest.approx(expected)
    assert metrics["join"]["pending_events"] == 0 and metrics["join"]["labels_duplicate"] == 0
    assert 0 < expected < 1
    # the input idles, and the join's labels still reach a snapshot (the idle loop checkpoints them)
    wait_until(lambda: snapshots(run.snaps) and newest_daemon_part(run.snaps)["join"]["counts"]["delayed_labeled"]
               == 40, WAIT_S,
               "a snapshot of the joined labels", daemon, step=0.05)
    run.stop(daemon)
    final = daemon.final_metrics()["join"]
    assert final["delayed_labeled"] == 40 and final["delayed_accuracy"] == pytest.approx(expected)
    part = newest_daemon_part(run.snaps)
    assert part["join"]["positions"] == {str(labels): labels.stat().st_size + len(b"".join(records[:26]))}
    assert part["files"][str(labels)]["ino"] == labels.stat().st_ino  # the position lies in the new file
    assert part["files"][str(labels)]["byte"] == labels.stat().st_size


def test_an_input_rotated_while_the_daemon_runs_is_followed_without_loss_or_duplicates(tmp_path):
    run = Follow(tmp_path, "--snapshot-interval", "0.1")
    append(run.input, b"".join(event(i) for i in range(40)))
    daemon = run.start()
    wait_outputs(run.output, 40, daemon)
    old = tmp_path / "in.jsonl.1"
    with open(run.input, "ab") as writer:  # a writer that keeps its file open across the rename
        writer.write(b"".join(event(i) for i in range(40, 60)))
        writer.flush()
        os.rename(run.input, old)
        writer.write(b"".join(event(i) for i in range(60, 70)))
    run.input.write_bytes(b"".join(event(i) for i in range(70, 100)))
    wait_outputs(run.output, 100, daemon)
    append(run.input, b"".join(event(i) for i in range(100, 110)))
    out = wait_outputs(run.output, 110, daemon)
    run.stop(daemon)
    assert [o["id"] for o in out] == [f"e{i}" for i in range(110)]
    assert out[69]["source"]["line"] == 70 and out[70]["source"] == {"file": str(run.input), "line": 1, "byte": 0}
    part = newest_daemon_part(run.snaps)
    entry = part["files"][str(run.input)]
    assert (entry["ino"], entry["byte"]) == (run.input.stat().st_ino, run.input.stat().st_size)
    assert part["positions"][str(run.input)] == old.stat().st_size + run.input.stat().st_size
    assert "was rotated" in daemon.log()
    assert f"stopped by SIGTERM after {run.input} line 40 (next byte {run.input.stat().st_size})" in daemon.log()


@pytest.mark.parametrize("old_file", ["kept", "deleted"])
def test_a_restart_after_a_rotation_resumes_in_the_file_the_snapshot_read(tmp_path, old_file):
    run = Follow(tmp_path)
    append(run.input, b"".join(event(i) for i in range(30)))
    daemon = run.start()
    wait_outputs(run.output, 30, daemon)
    run.stop(daemon)
    # while the daemon is down: the file gets 10 more lines, is rotated, and a new one gets 20
    append(run.input, b"".join(event(i) for i in range(30, 40)))
    old = tmp_path / "in.jsonl.1"
    os.rename(run.input, old)
    run.input.write_bytes(b"".join(event(i) for i in range(40, 60)))
    if old_file == "deleted":
        old.unlink()
    daemon = run.start()
    expected = list(range(60)) if old_file == "kept" else [*range(30), *range(40, 60)]
    out = wait_outputs(run.output, len(expected), daemon)
    append(run.input, event(60))  # and it follows the new file on
    out = wait_outputs(run.output, len(expected) + 1, daemon)
    run.stop(daemon)
    assert [o["id"] for o in out] == [f"e{i}" for i in [*expected, 60]]
    if old_file == "kept":
        assert out[30]["source"] == {"file": str(run.input), "line": 31, "byte": out[29]["source"]["byte"]
                                     + len(event(29))}
        assert f"reading the rest of {old}" in daemon.log()
    else:
        assert "names another file than the snapshot's" in daemon.log()
    assert out[-21]["source"] == {"file": str(run.input), "line": 1, "byte": 0}
    assert not run.dead.read_bytes()


def test_a_source_resumes_a_position_by_the_file_it_lies_in(tmp_path):
    """The three cases of a restart (same file, rotated file still there, gone), and a position without
    its file (a snapshot of an older version): a byte of the file at the path, as before."""
    path = tmp_path / "in.jsonl"
    path.write_bytes(event(0) + event(1))
    source = JsonLinesSource(path=str(path))
    position = source.poll(10, 0.1)[0].next_position
    files = source.file_positions({str(path): position})
    source.close()
    assert files[str(path)]["byte"] == position

    def resumed(recall: bool) -> list[bytes]:
        source = JsonLinesSource(path=str(path))
        if recall:
            source.recall_files(files)
        source.seek({str(path): position})
        try:
            return [json.loads(r.value)["id"] for r in source.poll(10, 0.1)]
        finally:
            source.close()

    assert resumed(True) == resumed(False) == ["e1"]  # the same file
    os.rename(path, tmp_path / "in.jsonl.1")
    path.write_bytes(event(2) + event(3) + event(4))
    assert resumed(True) == ["e1", "e2", "e3", "e4"]  # the rest of the rotated file, then the new one
    assert resumed(False) == ["e3", "e4"]  # no file named: the byte of the file at the path
    (tmp_path / "in.jsonl.1").unlink()
    assert resumed(True) == ["e2", "e3", "e4"]  # the rotated file is gone: the new one from its start


def test_follow_is_a_setting_like_the_others(tmp_path):
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    toml = tmp_path / "run.toml"
    toml.write_text('[run]\nfollow = true\ninput = "in.jsonl"\n')
    assert resolve_settings(parser.parse_args(["--follow"]), env={})["follow"] is True
    assert resolve_settings(parser.parse_args([]), env={"STREAM_NB_FOLLOW": "true"})["follow"] is True
    assert resolve_settings(parser.parse_args(["--config", str(toml)]), env={})["follow"] is True
    assert resolve_settings(parser.parse_args([]), env={})["follow"] is False
    with pytest.raises(ConfigError, match="--follow needs --input FILE"):
        connector_plan(resolve_settings(parser.parse_args(["--follow"]), env={}))
    with pytest.raises(ConfigError, match=r"follow \(from STREAM_NB_FOLLOW\).*cannot be combined"):
        connector_plan(resolve_settings(parser.parse_args(["--input-topic", "t", "--output-topic", "o"]),
                                        env={"STREAM_NB_FOLLOW": "1"}))
    with pytest.raises(ConfigError, match=f"cannot follow '{os.devnull}': it is not a regular file"):
        JsonLinesSource(path=os.devnull, follow=True)


def test_the_daemon_waits_at_the_end_of_a_followed_file_without_spinning(tmp_path):
    """An idle daemon sleeps between looks at the file: a second of waiting takes a small part of a CPU."""
    run = Follow(tmp_path)
    daemon = run.start()
    wait_until(lambda: snapshots(run.snaps) or "running model" in daemon.log(), WAIT_S, "the start", daemon)
    ticks = os.sysconf("SC_CLK_TCK")

    def cpu() -> float:
        fields = Path(f"/proc/{daemon.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / ticks

    before, start = cpu(), time.monotonic()
    wait_until(lambda: time.monotonic() - start > 2.0, 5.0, "two idle seconds", daemon, step=0.2)
    assert cpu() - before < 0.2 * (time.monotonic() - start)
    append(run.input, event(0))
    wait_outputs(run.output, 1, daemon)
    run.stop(daemon)


def test_a_followed_file_truncated_in_place_is_read_again_from_its_start(tmp_path):
    """``copytruncate``: the file keeps its inode and shrinks; its new lines are read from byte 0."""
    path = tmp_path / "in.jsonl"
    path.write_bytes(event(0) + event(1))
    source = JsonLinesSource(path=str(path), follow=True)
    try:
        first = source.poll(10, 0.1)
        assert [r.position["line"] for r in first] == [1, 2] and not source.exhausted
        with open(path, "r+b") as f:
            f.truncate(0)
            f.write(b'{"id": "t"}\n')
        records = source.poll(10, 1.0)
        assert [(r.value, r.position["line"], r.position["byte"]) for r in records] == [(b'{"id": "t"}', 1, 0)]
        end = records[0].next_position
        assert end == first[-1].next_position + 12  # positions go on counting
        assert source.file_positions({str(path): end})[str(path)]["byte"] == 12
        assert source.poll(10, 0.1) == [] and not source.exhausted
    finally:
        source.close()
