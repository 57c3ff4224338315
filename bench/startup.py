#!/usr/bin/env python
"""First-call cost: time to the first output of the README's quick-start command (a script, not a test).

Run it by hand from the repository root::

    python bench/startup.py              # 5 cold and 5 warm runs, medians
    python bench/startup.py --runs 9

The command is the quick start, ``stream-nb run --input examples/events.jsonl
--dead-letter dead.jsonl`` (the default model, naive Bayes, over the example
stream; predictions on stdout). Each run is a fresh process; the time is from
its start to the first prediction line on its stdout, and to its exit, and the
process's CPU time (user + system: less sensitive than the wall clock to other
load on the machine, whose load average is printed).

- **cold**: ``NUMBA_CACHE_DIR`` an empty directory, so the kernels the run
  calls are compiled (a first start, or a container whose cache is empty);
- **warm**: ``NUMBA_CACHE_DIR`` filled by one earlier run, so they are loaded
  from numba's cache (every later start, and the Docker image, which compiles
  them at build time).

The difference is the compile time of those kernels; it grows with them.
``python -m stream_nb.kernels`` prints the time to compile all of them.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
COMMAND = ["stream-nb", "run", "--input", "examples/events.jsonl", "--dead-letter", "dead.jsonl"]


def stream_nb() -> list[str]:
    script = Path(sys.executable).with_name("stream-nb")
    return [str(script)] if script.exists() else [sys.executable, "-m", "stream_nb"]


def one_run(cache: Path, workdir: Path) -> tuple[float, float, float]:
    """Seconds from the process's start to its first output line and to its exit; its CPU seconds."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STREAM_NB_", "NUMBA_"))}
    env["NUMBA_CACHE_DIR"] = str(cache)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    argv = stream_nb() + COMMAND[1:]
    argv[argv.index("examples/events.jsonl")] = str(REPO / "examples" / "events.jsonl")
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=workdir)
    first = proc.stdout.readline()
    first_at = time.perf_counter() - start
    proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    exit_at = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0 or not first:
        raise SystemExit(f"{' '.join(COMMAND)} failed (exit {proc.returncode}) in {workdir}")
    return first_at, exit_at, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs of each kind (default 5)")
    args = parser.parse_args()
    results: dict[str, list[tuple[float, float, float]]] = {"cold": [], "warm": []}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        warm = tmp / "warm-cache"
        one_run(warm, tmp)  # fills the warm cache
        for i in range(args.runs):
            cold = tmp / f"cold-cache-{i}"
            results["cold"].append(one_run(cold, tmp))
            shutil.rmtree(cold)
            results["warm"].append(one_run(warm, tmp))
    print(f"$ {' '.join(COMMAND)}   ({args.runs} runs each, Python {sys.version.split()[0]}, "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f})")
    for kind, runs in results.items():
        first, total, cpu = (statistics.median(r[i] for r in runs) for i in range(3))
        print(f"{kind}: first output after {first:.2f} s, exit after {total:.2f} s, {cpu:.2f} s of CPU (medians)")


if __name__ == "__main__":
    main()
