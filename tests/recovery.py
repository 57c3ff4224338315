"""Helpers of the crash-recovery tests: the daemon as a subprocess, streams, reference counts."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import stream_nb

CATEGORIES = {"color": ["red", "green", "blue"], "shape": ["round", "square", "flat", "long"],
              "size": ["s", "m", "l"], "grip": ["soft", "hard"]}

# (raw event, dead-letter reason)
POISON = [
    (b'{"id": "p-json", "color": "red", ', "invalid_json"),
    (b'[1, 2, 3]', "not_an_object"),
    (b'{"id": "p-nested", "color": {"r": 1}, "label": "yes"}', "nested_value"),
    (b'{"id": "p-label", "color": "red", "label": 0.5}', "bad_label"),
    (b'\xff\xfe{"id": "p-utf8"}', "invalid_utf8"),
]


def make_events(n: int, seed: int, poison_every: int = 0) -> list[dict]:
    """Events ``{"raw": bytes, "obj": dict | None, "reason": str | None}``: categorical, complete, some unlabeled.

    Complete categorical events make the counts independent of the order the
    events are learned in, so a model trained across any interleaving and any
    number of restarts can be compared with one trained once.
    """
    rng = random.Random(seed)
    out = []
    for i in range(n):
        if poison_every and i % poison_every == poison_every - 1:
            raw, reason = POISON[(i // poison_every) % len(POISON)]
            out.append({"raw": raw, "obj": None, "reason": reason})
            continue
        obj = {"id": f"e{i}", **{k: rng.choice(v) for k, v in CATEGORIES.items()}}
        truth = "yes" if (obj["color"] == "red") ^ (obj["shape"] == "flat") ^ (rng.random() < 0.15) else "no"
        if rng.random() < 0.9:
            obj["label"] = truth
        out.append({"raw": json.dumps(obj).encode(), "obj": obj, "reason": None})
    return out


def features(obj: dict) -> dict:
    return {k: v for k, v in obj.items() if k not in ("id", "label") and v is not None}


def reference(cls, events: list[dict]):
    """The model trained once on the labeled valid events, in the given order."""
    model = cls()
    for e in events:
        obj = e["obj"]
        if obj is not None and obj.get("label") is not None:
            model.learn_one(features(obj), obj["label"])
    return model


def named_counts(model) -> dict:
    """Every count of the model's store keyed by names (pairs too), so column order does not matter."""
    out = model._stats.counts()
    arrays, meta = model.state()
    if "pair_count" in arrays:
        stats = meta["stats"]
        names = [f["name"] for f in stats["features"]]
        columns = [None] + [(names[f], v) for f, v in stats["columns"]]
        pairs = {}
        P = arrays["pair_count"]
        for c, label in enumerate(stats["classes"]):
            for i, j in zip(*P[c].nonzero()):
                if i and j:
                    pairs[(label, columns[i], columns[j])] = float(P[c, i, j])
        out["pairs"] = pairs
    return out


def snapshots(directory: Path) -> list[Path]:
    """Snapshot files, oldest first."""
    return sorted(Path(directory).glob("snapshot-*.snb"))


def restored(log: str) -> list[str]:
    """The snapshots a daemon's log says it restored, in order (its checkpoint's line, not a sink's mention)."""
    return re.findall(r"restored snapshot (\S+\.snb) \(written ", log)


def newest_model(directory: Path):
    return stream_nb.load(snapshots(directory)[-1])


def cli() -> list[str]:
    script = Path(sys.executable).with_name("stream-nb")
    return [str(script)] if script.exists() else [sys.executable, "-m", "stream_nb.cli"]


#: ``stream-nb`` with fault hooks installed (see tests/fault_launcher.py).
FAULT_LAUNCHER = Path(__file__).with_name("fault_launcher.py")


def cli_with_faults(faults: dict[str, float]) -> list[str]:
    """The command of ``stream-nb`` pausing in the fault windows, e.g. ``{"pause_snapshot_write": 30}``."""
    options = [f"--{name.replace('_', '-')}={seconds}" for name, seconds in faults.items()]
    return [sys.executable, str(FAULT_LAUNCHER), *options, "--"]


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAM_NB_") or k == "STREAM_NB_KAFKA_CLIENT"}
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


#: Every Daemon started, so that one a failed test left running is killed after it (conftest).
STARTED: list = []


def kill_leftovers() -> int:
    """Kill -9 every daemon still running (a test that failed before stopping it); how many there were."""
    left = [d for d in STARTED if d.proc.poll() is None]
    for d in left:
        d.proc.kill()
        d.proc.wait(timeout=30)
    STARTED.clear()
    return len(left)


class Daemon:
    """``stream-nb run`` as a subprocess; stderr to a file (appended across runs of one name).

    ``faults`` (e.g. ``{"pause_snapshot_write": 30}``) runs it through the fault launcher.
    """

    def __init__(self, directory: Path, args: list[str], name: str, env: dict | None = None, stdin=None,
                 faults: dict[str, float] | None = None):
        self.log_path = Path(directory) / f"{name}.stderr"
        self._offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        with open(self.log_path, "ab") as err:
            self.proc = subprocess.Popen(
                (cli_with_faults(faults) if faults else cli()) + ["run", *args], stdout=subprocess.DEVNULL if stdin is None else subprocess.DEVNULL,
                stderr=err, stdin=stdin if stdin is not None else subprocess.DEVNULL, env=env or clean_env(),
            )
        STARTED.append(self)

    def log(self) -> str:
        """This run's log."""
        with open(self.log_path, "rb") as f:
            f.seek(self._offset)
            return f.read().decode(errors="replace")

    def kill9(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)

    def terminate(self, timeout: float = 60.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"the daemon ignored SIGTERM for {timeout} s; log:\n{self.log()[-4000:]}") from None

    def wait(self, timeout: float = 120.0) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"the daemon did not finish in {timeout} s; log:\n{self.log()[-4000:]}") from None

    def final_metrics(self) -> dict:
        matches = re.findall(r"; metrics (\{.*\})\s*$", self.log(), flags=re.M)
        assert matches, f"no final metrics line:\n{self.log()[-4000:]}"
        return json.loads(matches[-1])


def wait_until(predicate, timeout: float, what: str, daemon: Daemon | None = None, step: float = 0.005):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        if daemon is not None and daemon.proc.poll() is not None:
            raise AssertionError(f"the daemon exited ({daemon.proc.returncode}) while waiting for {what}:\n"
                                 f"{daemon.log()[-4000:]}")
        time.sleep(step)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}"
                         + (f"; log:\n{daemon.log()[-4000:]}" if daemon is not None else ""))


def count_lines(path: Path) -> int:
    try:
        with open(path, "rb") as f:
            return f.read().count(b"\n")
    except FileNotFoundError:
        return 0
