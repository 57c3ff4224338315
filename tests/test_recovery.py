"""Crash recovery of ``stream-nb run --snapshot-dir`` over a JSON-lines file, as a real subprocess.

After every fault (kill -9 at random points, kill -9 while a snapshot is being
written, damaged snapshots, SIGTERM, an unwritable snapshot directory) the
model in the newest snapshot must hold exactly the counts of a model trained
once on the same labeled events, every valid event must have an output, every
poison line a dead letter, and each output must be the very line a run without
faults writes for that event (the same input gives the same outputs).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import time
from pathlib import Path

import pytest

import stream_nb
from recovery import (
    Daemon,
    clean_env,
    cli,
    count_lines,
    make_events,
    named_counts,
    newest_model,
    reference,
    restored,
    snapshots,
    wait_until,
)
from stream_nb import TAN


def write_input(path: Path, events: list[dict]) -> None:
    path.write_bytes(b"".join(e["raw"] + b"\n" for e in events))


class Run:
    """One JSON-lines stream processed by successive daemons sharing a snapshot directory."""

    def __init__(self, tmp_path: Path, events: list[dict], name: str = "run", extra: list[str] = ()):
        self.dir = tmp_path / name
        self.dir.mkdir()
        self.events = events
        self.input = self.dir / "in.jsonl"
        write_input(self.input, events)
        self.output = self.dir / "out.jsonl"
        self.dead = self.dir / "dead.jsonl"
        self.snaps = self.dir / "snaps"
        self.args = [
            "--model", "tan", "--rebuild-every", "200",
            "--input", str(self.input), "--output", str(self.output), "--dead-letter", str(self.dead),
            "--snapshot-dir", str(self.snaps), "--snapshot-every", "40", "--snapshot-interval", "0.05",
            "--metrics-interval", "0", *extra,
        ]
        self.runs = 0

    def start(self, env: dict | None = None, faults: dict[str, float] | None = None) -> Daemon:
        self.runs += 1
        return Daemon(self.dir, self.args, "daemon", env=env, faults=faults)

    def finish(self) -> Daemon:
        daemon = self.start()
        assert daemon.wait() == 0, daemon.log()[-4000:]
        return daemon

    def outputs(self) -> list[dict]:
        """Parsed output lines; a line a kill cut short (and the daemon ended with a newline) is skipped."""
        out = []
        for line in self.output.read_bytes().splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
        return out

    def check(self, clean_outputs: dict[str, bytes] | None = None) -> list[dict]:
        """The guarantees; returns the outputs."""
        model = newest_model(self.snaps)
        expected = reference(TAN, self.events)
        assert named_counts(model) == named_counts(expected)
        assert model.n_learned == expected.n_learned
        outputs = self.outputs()
        valid = [e for e in self.events if e["obj"] is not None]
        seen = {o["id"] for o in outputs}
        assert seen == {e["obj"]["id"] for e in valid}  # every valid event has an output, nothing else does
        letters = [json.loads(line) for line in self.dead.read_bytes().splitlines() if line.startswith(b"{")]
        poison_lines = {i + 1 for i, e in enumerate(self.events) if e["obj"] is None}
        assert {d["source"]["line"] for d in letters} == poison_lines
        for d in letters:
            assert d["reason"] == self.events[d["source"]["line"] - 1]["reason"]
        if clean_outputs is not None:
            for line in self.output.read_bytes().splitlines():
                try:
                    o = json.loads(line)
                except ValueError:
                    continue
                same = json.loads(clean_outputs[o["id"]])
                same["source"]["file"] = str(self.input)  # the clean run read its own copy
                assert o == same, o["id"]
        return outputs


@pytest.fixture(scope="module")
def stream():
    return make_events(3000, seed=7, poison_every=97)


@pytest.fixture(scope="module")
def clean(tmp_path_factory, stream):
    """The outputs of one run without faults, by event id; and that run's checks."""
    run = Run(tmp_path_factory.mktemp("clean"), stream)
    daemon = run.finish()
    outputs = run.check()
    assert len(outputs) == sum(e["obj"] is not None for e in stream)  # no fault: each output exactly once
    summary = daemon.final_metrics()
    assert summary["healthy"] is True and summary["snapshots_written"] >= 3000 // 40 // 2
    return {json.loads(line)["id"]: line for line in run.output.read_bytes().splitlines()}


@pytest.mark.slow
def test_kill_9_at_random_points_loses_nothing_and_counts_nothing_twice(tmp_path, stream, clean):
    run = Run(tmp_path, stream)
    rng = random.Random(2024)
    kills = 0
    while kills < 22:
        before = count_lines(run.output)
        target = before + rng.randint(10, 80)
        daemon = run.start()
        try:
            wait_until(lambda: count_lines(run.output) >= target, 60, f"{target} output lines", daemon, step=0.002)
        except AssertionError:
            if daemon.proc.poll() == 0:  # finished the stream before the kill point
                break
            raise
        time.sleep(rng.random() * 0.005)
        daemon.kill9()
        kills += 1
    assert kills >= 20
    final = run.finish()
    assert restored(final.log())
    outputs = run.check(clean_outputs=clean)
    # the --output file commits its lines with the snapshots: the kills repeat none (they used to repeat some)
    assert len(outputs) == sum(e["obj"] is not None for e in stream)
    # the metrics continue across restarts: they count each event once
    summary = final.final_metrics()
    assert summary["learned"] == reference(TAN, stream).n_learned
    assert summary["events"] == len(stream)


@pytest.mark.slow
def test_kill_9_while_a_snapshot_is_written_keeps_the_previous_one(tmp_path, stream, clean):
    run = Run(tmp_path, stream)
    # the first daemon pauses 30 s between writing a snapshot's temporary file and renaming it
    daemon = run.start(faults={"pause_snapshot_write": 30})
    temporary = wait_until(lambda: list(run.snaps.glob(".snapshot-*.tmp-*")), 60, "a temporary snapshot", daemon)
    assert not snapshots(run.snaps)  # the first snapshot is still being written
    daemon.kill9()
    assert temporary[0].exists() and temporary[0].stat().st_size > 0
    # the second one is killed while writing a later snapshot: the earlier ones stay intact
    daemon = run.start(faults={"pause_snapshot_write": 0.2})
    assert "a snapshot a crash left half-written" in wait_until(
        lambda: "half-written" in daemon.log() and daemon.log(), 60, "the clean-up log line", daemon)
    assert not temporary[0].exists()
    wait_until(lambda: len(snapshots(run.snaps)) >= 2 and list(run.snaps.glob(".snapshot-*.tmp-*")), 60,
               "a second snapshot being written", daemon)
    daemon.kill9()
    good = snapshots(run.snaps)
    final = run.finish()
    assert f"restored snapshot {good[-1]}" in final.log()
    run.check(clean_outputs=clean)


def _flip(path: Path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x40
    path.write_bytes(bytes(data))


def _kill_after(run: Run, lines: int) -> None:
    daemon = run.start()
    target = count_lines(run.output) + lines
    wait_until(lambda: count_lines(run.output) >= target and len(snapshots(run.snaps)) >= 3, 60,
               f"{target} output lines and 3 snapshots", daemon)
    daemon.kill9()


@pytest.mark.slow
def test_damaged_snapshots_fall_back_to_the_previous_good_one(tmp_path, stream, clean):
    run = Run(tmp_path, stream)
    # truncated newest
    _kill_after(run, 400)
    newest = snapshots(run.snaps)[-1]
    newest.write_bytes(newest.read_bytes()[: newest.stat().st_size // 2])
    previous = snapshots(run.snaps)[-2]
    daemon = run.start()
    wait_until(lambda: restored(daemon.log()), 60, "the restore", daemon)
    log = daemon.log()
    assert f"unusable snapshot, trying the previous one: {newest}: truncated:" in log, log
    assert restored(log) == [str(previous)], (log, sorted(p.name for p in run.snaps.iterdir()))
    wait_until(lambda: count_lines(run.output) >= 900 and len(snapshots(run.snaps)) >= 3, 60, "progress", daemon)
    daemon.kill9()
    # a flipped bit in the newest
    newest = snapshots(run.snaps)[-1]
    _flip(newest, newest.stat().st_size // 3)
    # an unknown format version in the one before (as if written by a newer stream_nb)
    older, oldest = snapshots(run.snaps)[-2], snapshots(run.snaps)[-3]
    data = bytearray(older.read_bytes())
    data[8] = 9
    older.write_bytes(bytes(data))
    final = run.finish()
    log = final.log()
    assert f"unusable snapshot, trying the previous one: {newest}: checksum mismatch" in log
    assert f"unusable snapshot, trying the previous one: {older}: unknown snapshot format version 9" in log
    assert restored(log)[-1] == str(oldest), log
    run.check(clean_outputs=clean)
    # damaged files were never counted as good ones: pruning deleted them, the newest three are valid
    for path in snapshots(run.snaps):
        stream_nb.load(path)


def test_sigterm_writes_a_last_snapshot_and_the_restart_repeats_nothing(tmp_path, stream, clean):
    run = Run(tmp_path, stream)
    daemon = run.start()
    wait_until(lambda: count_lines(run.output) >= 700, 60, "700 outputs", daemon)
    assert daemon.terminate() == 0, daemon.log()[-4000:]
    summary = daemon.final_metrics()
    newest = stream_nb.snapshots.read(snapshots(run.snaps)[-1])
    assert newest.daemon["metrics"]["events"] == summary["events"]
    assert newest.daemon["positions"][str(run.input)] == sum(
        len(e["raw"]) + 1 for e in stream[: summary["events"]])
    run.finish()
    outputs = run.check(clean_outputs=clean)
    assert len(outputs) == sum(e["obj"] is not None for e in stream)  # nothing repeated


def test_a_file_resumes_under_another_spelling_of_its_path(tmp_path, stream):
    run = Run(tmp_path, stream[:300])
    run.finish()
    lines = count_lines(run.output)
    relative = [a if a != str(run.input) else "in.jsonl" for a in run.args]
    again = subprocess.run([*cli(), "run", *relative], cwd=run.dir, capture_output=True, env=clean_env(), timeout=60)
    assert again.returncode == 0, again.stderr.decode()
    assert "in.jsonl is " in again.stderr.decode() and "(same file): resuming its position" in again.stderr.decode()
    assert count_lines(run.output) == lines  # nothing processed twice
    run.check()


def test_an_unwritable_snapshot_directory_keeps_the_daemon_serving_and_unhealthy(tmp_path):
    """Over a pipe: the directory breaks and comes back while events flow."""
    events = make_events(300, seed=3)
    snaps = tmp_path / "snaps"
    output = tmp_path / "out.jsonl"
    args = ["--model", "nb", "--output", str(output), "--snapshot-dir", str(snaps), "--snapshot-every", "10",
            "--snapshot-interval", "0.05", "--commit-interval", "0.05", "--metrics-interval", "0"]
    with open(tmp_path / "daemon.stderr", "wb"):
        pass
    pipe_r, pipe_w = os.pipe()
    daemon = Daemon(tmp_path, args, "daemon", stdin=pipe_r)
    os.close(pipe_r)
    feed = os.fdopen(pipe_w, "wb", buffering=0)
    try:
        feed.write(b"".join(e["raw"] + b"\n" for e in events[:100]))
        wait_until(lambda: count_lines(output) >= 100 and snapshots(snaps), 60, "100 outputs", daemon)
        good = snapshots(snaps)[-1]
        os.rename(snaps, tmp_path / "away")
        snaps.write_text("not a directory")
        feed.write(b"".join(e["raw"] + b"\n" for e in events[100:200]))
        # the daemon serves on: the outputs are written, but aside, as the --output file gets only the lines a
        # snapshot covers (it used to get them at once, at least once)
        staging = tmp_path / ".out.jsonl.inprogress"
        wait_until(lambda: count_lines(staging) >= 100 and "snapshot failed" in daemon.log(), 60,
                   "100 outputs staged and a failed snapshot", daemon)
        assert "cannot create the snapshot directory" in daemon.log()
        assert count_lines(output) == 100
        snaps.unlink()
        os.rename(tmp_path / "away", snaps)
        feed.write(b"".join(e["raw"] + b"\n" for e in events[200:]))
        wait_until(lambda: "snapshots work again" in daemon.log(), 60, "a good snapshot again", daemon)
    finally:
        feed.close()
    assert daemon.wait() == 0, daemon.log()[-4000:]
    summary = daemon.final_metrics()
    assert summary["healthy"] is True and summary["snapshot_failures"] >= 1 and summary["snapshot_error"] is None
    assert snapshots(snaps)[0] != good or len(snapshots(snaps)) > 1
    from stream_nb import NaiveBayes

    assert named_counts(newest_model(snaps)) == named_counts(reference(NaiveBayes, events))
    assert count_lines(output) == 300


def test_snapshot_inspect_describes_a_daemon_snapshot(tmp_path, stream):
    run = Run(tmp_path, stream[:300])
    run.finish()
    newest = snapshots(run.snaps)[-1]
    text = subprocess.run([*cli(), "snapshot", "inspect", str(newest)], capture_output=True, env=clean_env(),
                          timeout=60)
    assert text.returncode == 0, text.stderr.decode()
    out = text.stdout.decode()
    assert f"snapshot   {newest}" in out and "model      TAN(alpha=1.0, search=Tree(rebuild_every=200)" in out
    assert "tree       root " in out and "positions  " in out and "checksum ok" in out
    as_json = subprocess.run([*cli(), "snapshot", "inspect", "--json", str(newest)], capture_output=True,
                             env=clean_env(), timeout=60)
    info = json.loads(as_json.stdout)
    model = stream_nb.load(newest)
    assert info["model"]["type"] == "TAN" and info["model"]["classes"] == model.classes
    assert info["model"]["events_learned"] == model.n_learned
    assert info["model"]["tree"] == [{"parent": p, "child": c, "cmi": cmi} for p, c, cmi in model.tree]
    assert info["daemon"]["positions"] == {str(run.input): run.input.stat().st_size}
    assert info["size"] == newest.stat().st_size and info["format_version"] == stream_nb.snapshots.FORMAT_VERSION == 2
    newest.write_bytes(newest.read_bytes()[:100])
    bad = subprocess.run([*cli(), "snapshot", "inspect", str(newest)], capture_output=True, env=clean_env(),
                         timeout=60)
    assert bad.returncode == 2
    assert bad.stderr.decode().strip().startswith(f"stream-nb: error: {newest}: truncated: 100 bytes")


def test_two_daemons_cannot_share_a_snapshot_directory(tmp_path):
    snaps = tmp_path / "snaps"
    pipe_r, pipe_w = os.pipe()
    first = Daemon(tmp_path, ["--snapshot-dir", str(snaps), "--output", os.devnull], "first", stdin=pipe_r)
    os.close(pipe_r)
    try:
        wait_until(lambda: "running model" in first.log(), 60, "the first daemon", first)
        second = subprocess.run([*cli(), "run", "--snapshot-dir", str(snaps), "--input", os.devnull],
                                capture_output=True, env=clean_env(), timeout=60)
        assert second.returncode == 2
        assert f"snapshot directory {snaps} is in use by another stream-nb process" in second.stderr.decode()
    finally:
        os.close(pipe_w)
    assert first.wait() == 0


def test_exactly_once_needs_kafka_and_a_snapshot_directory(tmp_path):
    for args, message in [
        (["--exactly-once", "--snapshot-dir", str(tmp_path)], "--exactly-once needs Kafka mode"),
        (["--exactly-once", "--bootstrap-servers", "127.0.0.1:1", "--input-topic", "a", "--output-topic", "b"],
         "--exactly-once needs --snapshot-dir"),
        (["--snapshot-dir", str(tmp_path), "--snapshot-keep", "0"], "--snapshot-keep must be an integer >= 1"),
    ]:
        proc = subprocess.run([*cli(), "run", *args], capture_output=True, env=clean_env(), timeout=60,
                              stdin=subprocess.DEVNULL)
        assert proc.returncode == 2, proc.stderr.decode()
        assert message in proc.stderr.decode()
