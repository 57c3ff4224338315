"""Decay in vectorised runs: the weight and smoothing of each row, as the one-event path gives them.

:func:`decay_run` walks a run's rows in order with the one-event path's arithmetic (each row scored with
the inflation the rows before it left, learned with the one after its step), and says where the run must
stop: after a renormalisation of the store, or before a jump in event time too long for the inflation.
"""

from __future__ import annotations

import math
import typing

import numpy as np

__all__ = ["RENORMALISE_AT", "DecayRun", "decay_run"]

#: The inflation of decayed counts at which the store is renormalised (every cell divided by it).
RENORMALISE_AT = 2.0**16


class DecayRun(typing.NamedTuple):
    """:func:`decay_run`'s answer for a run of rows."""

    stop: int  # the rows the run may take (those before it)
    inflation: np.ndarray  # (stop,): the inflation each row is scored with
    weight: np.ndarray  # (stop,): the stored weight each row is learned with (0: unlabeled)
    after: list  # (stop,): (inflation, halvings, clock) once each row is learned


def decay_run(f, yc: np.ndarray, times: list | None, timed: bool) -> DecayRun:
    """Walk the rows of classes ``yc`` (-1: unlabeled, not learned) with the decay state ``f``
    (inflation, halvings, clock, step, half_life) unchanged: event-count decay (``timed`` False), or
    decay in event time with each row's time in ``times`` (None, or None for a row: learned at the clock).

    >>> class State: inflation, halvings, clock, step, half_life = 1.0, 0.0, None, 2.0, 1.0
    >>> run = decay_run(State, np.array([0, -1, 1]), None, timed=False)
    >>> run.stop, run.inflation.tolist(), run.weight.tolist(), run.after[-1]
    (3, [1.0, 2.0, 2.0], [2.0, 0.0, 4.0], (4.0, 2.0, None))
    """
    inflation, halvings, clock = f.inflation, f.halvings, f.clock
    scored, weight, after = [], [], []
    limit = math.log2(RENORMALISE_AT)
    for i, c in enumerate(yc.tolist()):
        scored.append(inflation)
        if c >= 0:
            if not timed:
                inflation *= f.step
                halvings += 1.0 / f.half_life
            else:
                t = None if times is None else times[i]
                if t is not None:
                    if clock is not None and t > clock:
                        step = (t - clock) / f.half_life
                        if math.log2(inflation) + step >= limit:  # the cells themselves decay: not in a run
                            scored.pop()
                            break
                        halvings += step
                        inflation *= 2.0**step
                    clock = t if clock is None else max(clock, t)
            weight.append(inflation)
        else:
            weight.append(0.0)
        after.append((inflation, halvings, clock))
        if inflation >= RENORMALISE_AT:  # the store is renormalised once this row is learned
            break
    return DecayRun(len(after), np.array(scored), np.array(weight), after)
