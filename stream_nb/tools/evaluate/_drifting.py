"""Drifting streams built from river's generators, with no download: ``river:STAGGER-abrupt`` and the like.

An abrupt change is a concatenation of streams (river's ``ConceptDriftStream``
with ``width=1`` overflows); a gradual one is river's ``ConceptDriftStream``
with a wide sigmoid. Each stream places its changes at fixed fractions of the
number of events taken, so ``take(n)`` gives the same concepts at any length.

=========================  ==============================================================  ================
name                       concepts                                                        changes
=========================  ==============================================================  ================
``STAGGER-abrupt``         STAGGER functions 0, 1, 2, 0                                    abrupt at 1/4, 1/2, 3/4
``SEA-abrupt``             SEA variants 0, 1, 2, 3, 10% label noise                         abrupt at 1/4, 1/2, 3/4
``Agrawal-abrupt``         Agrawal functions 1 then 4 (perturbation 0.05)                   abrupt at 1/2
``Agrawal-gradual``        the same, mixed by a sigmoid of width 1/10 of the stream          gradual around 1/2
``Hyperplane-rotating``    Hyperplane, 10 features, 5 drifting by 0.001 per event, 5% noise  continuous
=========================  ==============================================================  ================

river's Agrawal yields integers for ``age``, ``hvalue`` and ``hyears``, which
would be categories with thousands of values; they are given as floats here,
numeric as MOA declares them.
"""

from __future__ import annotations

import itertools
import typing

__all__ = ["DRIFT_STREAMS", "DriftingStream"]


def _synth():
    # river's synthetic streams are imported on first use only: most runs read a file
    from river.datasets import synth

    return synth


def _agrawal(function: int, seed: int):
    return _synth().Agrawal(classification_function=function, perturbation=0.05, seed=seed)


def _numeric_agrawal(x: dict) -> dict:
    return {k: float(v) if k in ("age", "hvalue", "hyears") else v for k, v in x.items()}


class DriftingStream:
    """A stream whose concept changes at fixed fractions of its length (see the module notes).

    Parameters
    ----------
    segments
        Functions of a seed, one per concept, each building a river stream (abrupt changes
        between them, at equal fractions); or None with ``build``.
    seed
        Seed of the first segment (the k-th takes ``seed + k``).
    build
        A function ``(seed, n)`` building the whole stream of ``n`` events (gradual changes).
    changes
        Fractions of the length where the concept changes (default: the segments' boundaries).
    abrupt
        Whether the changes are abrupt (recovery is measured after them).
    transform
        A function applied to every ``x``.

    Examples
    --------
    >>> s = DRIFT_STREAMS["STAGGER-abrupt"](1)
    >>> s.change_points(1000), len(list(s.take(1000)))
    ([250, 500, 750], 1000)
    """

    n_samples = None  # a synthetic stream: as long as asked

    def __init__(self, segments=None, seed: int = 1, build=None, changes=None, abrupt: bool = True,
                 transform: typing.Callable[[dict], dict] | None = None):
        self.segments, self.seed, self.build, self.abrupt, self.transform = segments, seed, build, abrupt, transform
        if changes is None:
            k = len(segments)
            changes = [i / k for i in range(1, k)]
        self.changes = list(changes)

    def change_points(self, n: int) -> list[int]:
        """Positions (0-based index of the first event of the new concept) of the changes in ``n`` events."""
        return [int(round(f * n)) for f in self.changes]

    def take(self, n: int) -> typing.Iterator:
        """The first ``n`` events ``(x, y)``."""
        if self.build is not None:
            events = self.build(self.seed, n).take(n)
        else:
            bounds = [0, *self.change_points(n), n]
            events = itertools.chain.from_iterable(
                make(self.seed + k).take(bounds[k + 1] - bounds[k]) for k, make in enumerate(self.segments))
        for x, y in events:
            yield (self.transform(x) if self.transform else x), y


def _agrawal_gradual(seed: int, n: int):
    synth = _synth()
    return synth.ConceptDriftStream(stream=_agrawal(1, seed), drift_stream=_agrawal(4, seed + 1),
                                    position=n // 2, width=max(1, n // 10), seed=seed)


#: ``river:NAME`` of each drifting stream -> a function of the seed building it.
DRIFT_STREAMS: dict[str, typing.Callable[[int], DriftingStream]] = {
    "STAGGER-abrupt": lambda seed: DriftingStream(
        [lambda s, f=f: _synth().STAGGER(classification_function=f, seed=s, balance_classes=False)
         for f in (0, 1, 2, 0)], seed),
    "SEA-abrupt": lambda seed: DriftingStream(
        [lambda s, v=v: _synth().SEA(variant=v, noise=0.1, seed=s) for v in (0, 1, 2, 3)], seed),
    "Agrawal-abrupt": lambda seed: DriftingStream(
        [lambda s, f=f: _agrawal(f, s) for f in (1, 4)], seed, transform=_numeric_agrawal),
    "Agrawal-gradual": lambda seed: DriftingStream(
        seed=seed, build=_agrawal_gradual, changes=[0.5], abrupt=False, transform=_numeric_agrawal),
    "Hyperplane-rotating": lambda seed: DriftingStream(
        seed=seed, build=lambda s, n: _synth().Hyperplane(seed=s, n_features=10, n_drift_features=5, mag_change=0.001,
                                                          noise_percentage=0.05, sigma=0.1),
        changes=[], abrupt=False),
}
