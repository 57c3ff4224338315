"""CapyMOA (MOA through JPype) beside stream_nb: its venv, its input files and its worker.

CapyMOA needs Python 3.11 or later and pins its own pandas and numpy, so it gets a venv of its
own, made on first use under the peers' cache (``~/.cache/stream_nb/capymoa-<version>-py<X.Y>``,
or under ``STREAM_NB_PEERS_CACHE`` when that is set) with ``pip install capymoa==<version>``.
The worker (``capymoa_peer.py``) runs in that venv as a subprocess, reads the events from two
files written here (the ARFF file the MOA peer reads, and the same events as JSON lines) and
prints its timings as JSON. :func:`unavailable` says in one line why CapyMOA cannot run here
(no JDK, no Python 3.11 or later, or the venv could not be made), and the callers skip it.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: The CapyMOA release the venv holds (its moa.jar is MOA's own build of that release).
VERSION = "0.15.1"
WORKER = HERE / "capymoa_peer.py"
COMPLETE_MARKER = ".stream_nb_complete"
#: The loops the worker times, in its order.
LOOPS = ("python values", "ready instances", "prequential_evaluation")

__all__ = ["LOOPS", "VERSION", "CapyResult", "interpreter", "prequential", "unavailable", "venv_dir", "write_events"]


def _python_at_least_311() -> str | None:
    """An interpreter of Python 3.11 or later: this one, else the first ``python3.1x`` on PATH."""
    if sys.version_info >= (3, 11):
        return sys.executable
    for minor in range(14, 10, -1):
        found = shutil.which(f"python3.{minor}")
        if found:
            return found
    return None


def venv_dir(python: str | None = None) -> Path:
    """Where CapyMOA's venv lives (beside the Java peers' jars)."""
    python = python or _python_at_least_311() or sys.executable
    tag = subprocess.run([python, "-c", "import sys; print(f'{sys.version_info[0]}.{sys.version_info[1]}')"],
                         stdin=subprocess.DEVNULL, capture_output=True, text=True).stdout.strip() or "unknown"
    env = os.environ.get("STREAM_NB_PEERS_CACHE")
    base = Path(env).expanduser() if env else Path.home() / ".cache" / "stream_nb"
    return base / f"capymoa-{VERSION}-py{tag}"


def interpreter(venv: Path) -> Path:
    return venv / "bin" / "python"


@contextlib.contextmanager
def _file_lock(path: Path):
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _log(msg: str) -> None:
    print(f"peers: {msg}", file=sys.stderr, flush=True)


def unavailable() -> str | None:
    """Make CapyMOA's venv if it is not there yet; ``None`` when CapyMOA can run, else one line saying why not.

    pip's output, when it fails, goes to stderr.
    """
    if not shutil.which("java"):
        return "CapyMOA skipped: `java` not found on PATH (install a JDK, 11 or newer)"
    python = _python_at_least_311()
    if python is None:
        return "CapyMOA skipped: it needs Python 3.11 or later, and none is on PATH"
    venv = venv_dir(python)
    if (venv / COMPLETE_MARKER).is_file():
        return None
    with _file_lock(venv.parent / f".{venv.name}.lock"):
        if (venv / COMPLETE_MARKER).is_file():
            return None
        if venv.exists():
            shutil.rmtree(venv)
        _log(f"making CapyMOA's venv in {venv} (pip install capymoa=={VERSION}) ...")
        t0 = time.monotonic()
        steps = ([python, "-m", "venv", str(venv)],
                 [str(interpreter(venv)), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                  f"capymoa=={VERSION}"])
        for cmd in steps:
            proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True)
            if proc.returncode != 0:
                _log(proc.stdout[-3000:])
                shutil.rmtree(venv, ignore_errors=True)
                return (f"CapyMOA skipped: `{' '.join(cmd[1:4])} ...` failed (exit {proc.returncode}) making its venv "
                        f"in {venv} (its output is on stderr)")
        (venv / COMPLETE_MARKER).write_text(f"capymoa=={VERSION}\n")
        _log(f"CapyMOA's venv ready in {time.monotonic() - t0:.1f}s")
    return None


def _json_value(v):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    return v


def write_events(path, events, attrs, target) -> Path:
    """The events as JSON lines for the worker: a declaration line, then ``[x, y]`` per event.

    The declaration is ``{"attributes": [[name, values or null], ...], "classes": [...]}``
    with each nominal attribute's values (and the classes) in the order of the ARFF file
    (:func:`peers.declare`), so that a value's index there is its index in CapyMOA's schema.
    Names are written as strings (JSON keys are strings); a missing value as ``null``.
    """
    path = Path(path)
    decl = {"attributes": [[str(a.name), list(a.values) if a.kind == "nominal" else None] for a in attrs],
            "classes": list(target.values)}
    with open(path, "w", encoding="utf-8") as out:
        out.write(json.dumps(decl) + "\n")
        for x, y in events:
            out.write(json.dumps([{str(k): _json_value(v) for k, v in x.items()}, y]) + "\n")
    return path


@dataclass
class CapyResult:
    """The worker's runs: per loop the timed seconds and correct predictions, and its predictions."""

    version: str
    events: int
    seconds: dict
    correct: dict
    predictions: list


def prequential(arff: Path, jsonl: Path, target, repeats: int, warmup: int, timeout: float = 1800) -> CapyResult:
    """Run the worker in CapyMOA's venv on the events of ``arff`` and ``jsonl`` (see ``capymoa_peer.py``).

    Call :func:`unavailable` first (it makes the venv). ``target`` is the class attribute of
    the ARFF file, whose values turn the predicted indexes back into labels.
    """
    python = interpreter(venv_dir())
    cmd = [str(python), "-I", str(WORKER), str(arff), str(jsonl), str(repeats), str(warmup)]
    # -I: the venv's own packages only (no PYTHONPATH, no user site); CapyMOA's datasets
    # directory defaults to ./data, so the worker runs beside its input files
    proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout,
                          cwd=Path(arff).parent)
    if proc.returncode != 0:
        raise RuntimeError(f"capymoa_peer.py exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    labels = target.values
    return CapyResult(out["capymoa"], out["events"], {k: v["seconds"] for k, v in out["runs"].items()},
                      {k: v["correct"] for k, v in out["runs"].items()},
                      [None if p < 0 else labels[p] for p in out["predictions"]])
