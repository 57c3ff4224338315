"""``--output`` and ``--dead-letter`` files hold each record exactly once, however often a command runs.

With ``--snapshot-dir`` each snapshot commits the lines sent since the last one
(staged beside the file, appended once the snapshot is durable), so kill -9 at
any point and a restart leave one output per valid event, in input order, and
a reader tailing the file never sees a line that is later taken back or
written again. Without a snapshot directory a run starts from the start of its
input and replaces its files, so running a command twice gives the same files.
The windows of the commit are checked on :class:`StagedFile` directly, and the
one between a snapshot and its commit also on the daemon, through a fault hook.
"""

from __future__ import annotations

import json
import logging
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from connectors._committed_file import StagedFile, aside_path
from connectors.jsonl import make_sink
from recovery import Daemon, clean_env, cli, count_lines, make_events, restored, wait_until

ROOT = Path(__file__).resolve().parents[1]


# ----------------------------------------------------------------------- running a command twice


def test_the_readme_quick_start_runs_twice_with_the_same_result(tmp_path):
    readme = (ROOT / "README.md").read_text()
    command = re.search(r"python -m pip install -e \. && (stream-nb run [^\n]+)", readme).group(1)
    assert "--dead-letter dead.jsonl" in command
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    results = []
    for _ in range(2):
        proc = subprocess.run([*cli(), *shlex.split(command)[1:]], cwd=tmp_path, capture_output=True,
                              env=clean_env(), timeout=120)
        assert proc.returncode == 0, proc.stderr.decode()
        results.append((proc.stdout, (tmp_path / "dead.jsonl").read_bytes()))
    assert results[0] == results[1]
    assert len(results[0][0].splitlines()) == 392 and len(results[0][1].splitlines()) == 7
    assert not list(tmp_path.glob(".*inprogress"))


def test_the_docs_snapshot_example_runs_twice_without_a_second_copy(tmp_path):
    page = (ROOT / "docs" / "operations.md").read_text()
    command = re.search(r"^\$ (stream-nb run [^\n]*--snapshot-dir[^\n]*)$", page, flags=re.M).group(1)
    assert "--output out.jsonl" in command and "--dead-letter dead.jsonl" in command
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    files = []
    for _ in range(2):
        proc = subprocess.run([*cli(), *shlex.split(command)[1:]], cwd=tmp_path, capture_output=True,
                              env=clean_env(), timeout=120)
        assert proc.returncode == 0, proc.stderr.decode()
        files.append(((tmp_path / "out.jsonl").read_bytes(), (tmp_path / "dead.jsonl").read_bytes()))
    assert files[0] == files[1]  # the second run resumes after the last event: nothing to add
    assert len(files[0][0].splitlines()) == 392 and len(files[0][1].splitlines()) == 7


def test_the_docs_feedback_example_runs_twice_without_a_second_copy(tmp_path):
    page = (ROOT / "docs" / "guide" / "delayed-labels.md").read_text()
    block = re.search(r"^cat > events.jsonl <<'END'$.*?^sleep 1; kill -TERM \$!; wait$", page,
                      flags=re.M | re.S).group(0)
    # exec: the block runs the command in the background and signals $!, which must be the daemon itself
    script = f'stream-nb() {{ exec {shlex.quote(sys.executable)} -m stream_nb "$@"; }}\n{block}\n'
    files = []
    for _ in range(2):
        proc = subprocess.run(["bash", "-e", "-c", script], cwd=tmp_path, capture_output=True, env=clean_env(),
                              timeout=120)
        assert proc.returncode == 0, proc.stderr.decode()
        files.append((tmp_path / "out.jsonl").read_bytes())
    assert files[0] == files[1] and [json.loads(line)["id"] for line in files[0].splitlines()] == [
        "t1", "t2", "t3", "t4"]


# ----------------------------------------------------------------------- the commit's windows, one by one


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines()


def _crash(f: StagedFile) -> None:
    """What kill -9 leaves: the bytes written so far, nothing flushed from memory, no clean-up."""
    os.close(f._staging_fd)
    if f._target_fd >= 0:
        os.close(f._target_fd)


def _write(f: StagedFile, *lines: str) -> None:
    for line in lines:
        f.write(line.encode() + b"\n")


def _committed(path: Path, *lines: str) -> tuple[StagedFile, dict]:
    """A fresh file whose first snapshot covers ``lines`` and whose commit ran: the file and that state."""
    f = StagedFile(str(path))
    f.recover(None)
    _write(f, *lines)
    state = f.precommit()
    f.commit()
    return f, state


def test_lines_a_crash_leaves_before_their_snapshot_are_dropped_and_replayed_once(tmp_path):
    path = tmp_path / "out.jsonl"
    f, state = _committed(path, "a", "b")
    _write(f, "c")
    f.flush()  # staged durably, but no snapshot covers it
    assert _lines(path) == [b"a", b"b"]
    _crash(f)
    again = StagedFile(str(path))
    again.recover(state)
    _write(again, "c", "d")  # the replay from the snapshot's positions
    again.precommit()
    again.commit()
    again.close()
    assert _lines(path) == [b"a", b"b", b"c", b"d"]
    assert not Path(aside_path(str(path))).exists()


def test_a_crash_after_the_snapshot_and_before_the_append_is_finished_by_the_restart(tmp_path):
    path = tmp_path / "out.jsonl"
    f = StagedFile(str(path))
    f.recover(None)
    _write(f, "a", "b")
    state = f.precommit()  # the snapshot holding this is durable; the crash comes before commit()
    _crash(f)
    assert path.read_bytes() == b""
    again = StagedFile(str(path))
    again.recover(state)
    assert _lines(path) == [b"a", b"b"]
    _write(again, "c")
    again.precommit()
    again.commit()
    assert _lines(path) == [b"a", b"b", b"c"]


@pytest.mark.parametrize("cut", [1, 5, 9])
def test_an_append_cut_short_is_finished_from_where_it_stopped(tmp_path, cut):
    path = tmp_path / "out.jsonl"
    f, _ = _committed(path, "first")
    _write(f, "second", "third")  # 13 bytes staged
    state = f.precommit()
    with open(path, "ab") as target:  # the crash came after `cut` bytes of the append
        target.write(Path(aside_path(str(path))).read_bytes()[:cut])
    _crash(f)
    again = StagedFile(str(path))
    again.recover(state)
    assert _lines(path) == [b"first", b"second", b"third"]


def test_a_restore_of_an_older_snapshot_does_not_write_the_newer_lines_again(tmp_path, caplog):
    path = tmp_path / "out.jsonl"
    f, older = _committed(path, "a")
    _write(f, "b", "c")
    f.precommit()  # a newer snapshot, damaged later
    f.commit()
    _crash(f)
    again = StagedFile(str(path))
    with caplog.at_level(logging.WARNING, logger="connectors.jsonl"):
        again.recover(older)
    assert "holds 2 lines committed after the restored snapshot" in caplog.text
    _write(again, "b")  # the replay: the target has it already
    state = again.precommit()  # a snapshot while the replay still catches up keeps what is left to drop
    assert state["skip"] == 1
    _crash(again)
    third = StagedFile(str(path))
    third.recover(state)
    _write(third, "c", "d")
    third.precommit()
    third.commit()
    assert _lines(path) == [b"a", b"b", b"c", b"d"]


def test_a_file_moved_away_since_the_snapshot_is_started_again_with_a_warning(tmp_path, caplog):
    path = tmp_path / "out.jsonl"
    f, state = _committed(path, "a")
    f.close()
    path.rename(tmp_path / "old.jsonl")
    again = StagedFile(str(path))
    with caplog.at_level(logging.WARNING, logger="connectors.jsonl"):
        again.recover(state)
    assert "not the file the snapshot committed to" in caplog.text
    _write(again, "b")
    again.precommit()
    again.commit()
    assert _lines(path) == [b"b"] and _lines(tmp_path / "old.jsonl") == [b"a"]


def test_a_fresh_start_replaces_the_file_and_a_reader_keeps_the_old_one(tmp_path):
    path = tmp_path / "out.jsonl"
    path.write_bytes(b"old\n")
    path.chmod(0o640)
    with open(path, "rb") as reader:
        sink = make_sink({"path": str(path), "mode": "snapshots"})
        sink.recover(None)
        assert path.read_bytes() == b"" and reader.read() == b"old\n"
    assert path.stat().st_mode & 0o777 == 0o640
    sink.send(b"new")
    assert sink.staged == 4
    sink.precommit()
    sink.commit()
    sink.close()
    assert path.read_bytes() == b"new\n"


def test_stdout_and_devices_stay_plain_sinks_in_snapshot_mode(tmp_path):
    from stream_nb.engine import TwoPhaseSink

    assert not isinstance(make_sink({"mode": "snapshots"}), TwoPhaseSink)
    assert not isinstance(make_sink({"path": os.devnull, "mode": "snapshots"}), TwoPhaseSink)
    assert isinstance(make_sink({"path": str(tmp_path / "o.jsonl"), "mode": "snapshots"}), TwoPhaseSink)


# ----------------------------------------------------------------------- the daemon, killed


class Tailer(threading.Thread):
    """A reader of a file as it grows, as ``tail -F`` is: every complete line seen, in order.

    ``replaced_after_lines`` counts the times the file was replaced after lines
    of it had been seen (those lines would be lost to the reader).
    """

    def __init__(self, path: Path):
        super().__init__(daemon=True)
        self.path = path
        self.lines: list[bytes] = []
        self.replaced_after_lines = 0
        self.done = threading.Event()

    def run(self) -> None:
        f, inode, rest, seen = None, None, b"", 0
        while True:
            last = self.done.is_set()
            try:
                now = os.stat(self.path).st_ino
            except FileNotFoundError:
                now = None
            if now is not None and now != inode:
                if f is not None:
                    f.close()
                    self.replaced_after_lines += seen > 0
                f, inode, rest, seen = open(self.path, "rb"), now, b"", 0
            if f is not None:
                *complete, rest = (rest + f.read()).split(b"\n")
                self.lines.extend(complete)
                seen += len(complete)
            if last:
                break
            time.sleep(0.001)
        if f is not None:
            f.close()


class Run:
    """One input processed by successive daemons sharing a snapshot directory, output and dead letters."""

    def __init__(self, tmp_path: Path, events: list[dict]):
        tmp_path.mkdir(exist_ok=True)
        self.dir = tmp_path
        self.events = events
        self.input = tmp_path / "in.jsonl"
        self.input.write_bytes(b"".join(e["raw"] + b"\n" for e in events))
        self.output, self.dead = tmp_path / "out.jsonl", tmp_path / "dead.jsonl"
        self.args = ["--model", "tan", "--rebuild-every", "200", "--input", str(self.input),
                     "--output", str(self.output), "--dead-letter", str(self.dead),
                     "--snapshot-dir", str(tmp_path / "snaps"), "--snapshot-every", "40",
                     "--snapshot-interval", "0.05", "--metrics-interval", "0"]

    def start(self, faults: dict | None = None) -> Daemon:
        return Daemon(self.dir, self.args, "daemon", faults=faults)

    def finish(self) -> Daemon:
        daemon = self.start()
        assert daemon.wait() == 0, daemon.log()[-4000:]
        return daemon

    def check(self) -> list[dict]:
        """One output per valid event in input order, one dead letter per bad line in line order."""
        outputs = [json.loads(line) for line in _lines(self.output)]  # every line whole: json.loads takes each
        assert [o["id"] for o in outputs] == [e["obj"]["id"] for e in self.events if e["obj"] is not None]
        letters = [json.loads(line) for line in _lines(self.dead)]
        bad = [(i + 1, e["reason"]) for i, e in enumerate(self.events) if e["obj"] is None]
        assert [(d["source"]["line"], d["reason"]) for d in letters] == bad
        assert not Path(aside_path(str(self.output))).exists()  # the last run committed everything
        return outputs


def _clean_outputs(tmp_path: Path, events: list[dict]) -> list[dict]:
    run = Run(tmp_path, events)
    run.finish()
    return run.check()


def test_kill_9_at_random_points_then_a_restart_writes_each_output_and_dead_letter_once(tmp_path):
    # enough events that ten kills at random points come before the stream's end (the learners compiled)
    events = make_events(10000, seed=31, poison_every=89)
    clean = _clean_outputs(tmp_path / "clean", events)
    run = Run(tmp_path / "killed", events)
    reader, dead_reader = Tailer(run.output), Tailer(run.dead)
    reader.start()
    dead_reader.start()
    rng = random.Random(34)
    kills = 0
    while kills < 10:
        daemon = run.start()
        if rng.random() < 0.5:  # when the file has grown by some lines ...
            target = count_lines(run.output) + rng.randint(20, 200)
            try:
                wait_until(lambda: count_lines(run.output) >= target, 60, f"{target} output lines", daemon,
                           step=0.002)
            except AssertionError:
                if daemon.proc.poll() == 0:  # finished the stream before the kill point
                    break
                raise
            time.sleep(rng.random() * 0.01)
        else:  # ... or at any moment: while it polls, stages, snapshots or appends
            wait_until(lambda: "running model" in daemon.log(), 60, "the start", daemon)
            time.sleep(rng.random() * 0.3)
        if daemon.proc.poll() == 0:
            break
        daemon.kill9()
        kills += 1
    assert kills >= 8
    final = run.finish()
    reader.done.set()
    dead_reader.done.set()
    reader.join(10)
    dead_reader.join(10)
    assert restored(final.log())
    outputs = run.check()
    # each output is the very record a run without faults writes for that event
    def anywhere(output: dict) -> dict:  # the clean run read its own copy of the input
        return {**output, "source": {**output["source"], "file": None}}

    assert list(map(anywhere, outputs)) == list(map(anywhere, clean))
    # the readers saw exactly the lines of the final files: none later lost, none repeated
    assert reader.lines == _lines(run.output) and reader.replaced_after_lines == 0
    assert dead_reader.lines == _lines(run.dead) and dead_reader.replaced_after_lines == 0


def test_kill_9_between_a_snapshot_and_the_append_of_its_lines(tmp_path):
    events = make_events(600, seed=8, poison_every=50)
    run = Run(tmp_path, events)
    daemon = run.start(faults={"pause_before_sink_commit": 30})
    wait_until(lambda: "between snapshot" in daemon.log(), 60, "the pause before the commit", daemon)
    staged = Path(aside_path(str(run.output))).stat().st_size
    assert staged > 0 and run.output.stat().st_size == 0  # durable in the snapshot, not yet in the file
    daemon.kill9()
    final = run.finish()
    assert f"{run.output}: finished the commit a crash cut short: {staged} bytes appended" in final.log()
    run.check()
