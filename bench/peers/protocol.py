"""How ``bench/learners.py --part peers`` times stream_nb's learners (and CapyMOA's worker times its loops).

- The clock is the CPU time of the whole process (``time.process_time``): a helper thread, such
  as a BLAS worker a model's matrix products wake, counts.
- The environment is the one a user has: nothing limits a thread pool, and
  :func:`thread_variables` names any thread variable set in the environment so that the
  report can say so.
- Every model runs ``warmup`` untimed runs, then ``repeats`` timed ones; the runs of the
  different models are interleaved (background load hits them alike) and the median of the
  timed runs counts (:func:`measure`).
- The first call of a process (compiling kernels or loading them from a cache) is timed on its
  own (:func:`first_call`) and left out of the rates: it comes before the warm-up run.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

#: Environment variables that set how many threads a numeric library starts (or pin its kernels).
THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "NUMBA_NUM_THREADS",
    "GOTO_NUM_THREADS",
)

__all__ = ["THREAD_VARIABLES", "FirstCall", "Timing", "batches", "first_call", "frame_batches", "measure",
           "thread_variables"]


def thread_variables(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The thread variables (:data:`THREAD_VARIABLES`) set in ``environ`` (default ``os.environ``), by name."""
    environ = os.environ if environ is None else environ
    return {name: environ[name] for name in THREAD_VARIABLES if name in environ}


def batches(n: int, size: int = 500) -> Iterator[slice]:
    """Slices of ``range(n)`` of ``size`` events each (the last may be shorter), in order."""
    if size < 1:
        raise ValueError(f"size: expected a positive number of events per batch, got {size!r}")
    for lo in range(0, n, size):
        yield slice(lo, min(lo + size, n))


def frame_batches(frame, ys, size: int = 500):
    """``(frame.iloc[lo:hi], ys[lo:hi])`` for each batch of ``size`` rows, in order (the rows keep their index)."""
    if len(frame) != len(ys):
        raise ValueError(f"frame_batches: {len(frame)} rows but {len(ys)} labels")
    for s in batches(len(frame), size):
        yield frame.iloc[s], ys[s]


@dataclass
class Timing:
    """The timed runs of one model: seconds of each (warm-up left out), and the last run's result."""

    seconds: list
    result: object

    def median_rate(self, n: int) -> float:
        """Events per second of the median run."""
        return n / statistics.median(self.seconds)

    def best_rate(self, n: int) -> float:
        """Events per second of the fastest run."""
        return n / min(self.seconds)


def measure(runs: Mapping[str, tuple[Callable, Callable]], repeats: int = 5, warmup: int = 1,
            clock: Callable[[], float] = time.process_time) -> dict[str, Timing]:
    """Time each ``(make, loop)`` of ``runs``: ``warmup`` untimed rounds, then ``repeats`` timed ones.

    A round runs every entry once, in order: ``model = make()`` (not timed), then ``loop(model)``
    between two readings of ``clock``. Returns per name the :class:`Timing` of the ``repeats`` timed
    runs and the result of the last ``loop``.
    """
    if repeats < 1:
        raise ValueError(f"repeats: expected at least one timed run, got {repeats!r}")
    if warmup < 0:
        raise ValueError(f"warmup: expected zero or more untimed runs, got {warmup!r}")
    seconds: dict = {name: [] for name in runs}
    results: dict = {}
    for r in range(warmup + repeats):
        for name, (make, loop) in runs.items():
            model = make()
            start = clock()
            results[name] = loop(model)
            elapsed = clock() - start
            if r >= warmup:
                seconds[name].append(elapsed)
    return {name: Timing(seconds[name], results[name]) for name in runs}


@dataclass
class FirstCall:
    """One first call: process CPU seconds and wall seconds, its result, or the error it raised."""

    cpu: float
    wall: float
    result: object = None
    error: BaseException | None = None


def first_call(call: Callable[[], object]) -> FirstCall:
    """Run ``call()`` once, timed by the process's CPU clock and by the wall clock; an exception is kept."""
    cpu0, wall0 = time.process_time(), time.perf_counter()
    try:
        result, error = call(), None
    except Exception as exc:  # the caller reports it (e.g. an input type the call does not take)
        result, error = None, exc
    return FirstCall(time.process_time() - cpu0, time.perf_counter() - wall0, result, error)
