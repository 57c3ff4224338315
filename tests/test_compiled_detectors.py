"""The compiled drift detectors (``stream_nb.kernels._detectors``) side by side with river's.

Each named detector, with its defaults and other parameters, is fed the same
sequences as river's: seeded 0/1 errors (stationary, abrupt and gradual changes
of the error rate), the prequential errors of a stream_nb NaiveBayes on river's
SEA and Agrawal streams with a concept drift, and real values for the detectors
that take them (ADWIN, PageHinkley, KSWIN). ``drift_detected`` and
``warning_detected`` must be river's after every value, so every drift and the
resets after it agree; the kernel that feeds a block must stop at river's drifts.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from river import drift
from river.datasets import synth
from river.drift import binary

from stream_nb import NaiveBayes
from stream_nb.exceptions import ConfigError
from stream_nb.learners._detectors import CompiledDetector, compiled_detector, from_river
from stream_nb.learners._detectors import DETECTORS, detector_spec, make_detector

RIVER = {
    "adwin": drift.ADWIN, "ddm": binary.DDM, "eddm": binary.EDDM, "hddm_a": binary.HDDMA, "hddm_w": binary.HDDMW,
    "fhddm": binary.FHDDM, "page_hinkley": drift.PageHinkley, "kswin": drift.KSWIN,
}

SETTINGS = {
    "adwin": [{}, {"delta": 0.05, "clock": 1}, {"clock": 4, "max_buckets": 2, "min_window_length": 2,
                                                  "grace_period": 20}],
    "ddm": [{}, {"warm_start": 10, "warning_threshold": 1.5, "drift_threshold": 2.5}],
    "eddm": [{}, {"warm_start": 10, "alpha": 0.97, "beta": 0.93}],
    "hddm_a": [{}, {"two_sided_test": True, "drift_confidence": 0.01, "warning_confidence": 0.05}],
    "hddm_w": [{}, {"two_sided_test": True, "lambda_val": 0.1},
               {"drift_confidence": 0.01, "warning_confidence": 0.02, "lambda_val": 0.02}],
    "fhddm": [{}, {"sliding_window_size": 50, "short_window_size": 20}, {"confidence_level": 0.001}],
    "page_hinkley": [{}, {"threshold": 10.0, "mode": "up"},
                     {"threshold": 5.0, "delta": 0.01, "mode": "down", "alpha": 0.999, "min_instances": 10}],
    # random.sample's pool (default sizes; 100 of 150) and its set (5 of 55, 10 of 290)
    "kswin": [{"seed": 1}, {"seed": 5, "window_size": 150, "stat_size": 50, "alpha": 0.001},
              {"seed": 7, "window_size": 60, "stat_size": 5, "alpha": 0.01},
              {"seed": 3, "window_size": 300, "stat_size": 10, "alpha": 0.01}],
}

CASES = [(name, params) for name, settings in SETTINGS.items() for params in settings]


def _rates(rates, length, seed):
    """0/1 errors in segments of ``length`` with the error ``rates`` in turn."""
    rng = np.random.default_rng(seed)
    return np.concatenate([(rng.random(length) < p) for p in rates]).astype(int)


def _prequential_errors(stream, n):
    """The 0/1 errors of a NaiveBayes predicting, then learning, each of the first ``n`` events."""
    data = list(itertools.islice(stream, n))
    ys = [y for _, y in data]
    return np.array([int(p != y) for (p, _), y in zip(NaiveBayes().prequential_many([x for x, _ in data], ys), ys)])


@pytest.fixture(scope="module")
def errors():
    """The 0/1 sequences every detector is fed (KSWIN, slow in river, its shorter ones)."""
    rng = np.random.default_rng(7)
    sea = synth.ConceptDriftStream(synth.SEA(variant=0, seed=1), synth.SEA(variant=3, seed=2), position=4000,
                                   width=500, seed=3)
    agrawal = synth.ConceptDriftStream(synth.Agrawal(classification_function=0, seed=1),
                                       synth.Agrawal(classification_function=4, seed=2), position=4000, width=50,
                                       seed=4)
    long = {
        "stationary": (rng.random(8000) < 0.2).astype(int),
        "abrupt": _rates([0.1, 0.4, 0.05, 0.3, 0.6, 0.1], 1500, seed=1),
        "gradual": (rng.random(8000) < np.concatenate([np.linspace(0.05, 0.5, 5000),
                                                        np.linspace(0.5, 0.1, 3000)])).astype(int),
        "rare": (rng.random(8000) < 0.01).astype(int),
        "sea": _prequential_errors(sea, 8000),
        "agrawal": _prequential_errors(agrawal, 8000),
    }
    short = {
        "abrupt": _rates([0.05, 0.7, 0.1, 0.9, 0.0], 300, seed=2),
        "sea": long["sea"][3500:5000],
        "agrawal": long["agrawal"][3700:5200],
    }
    return long, short


@pytest.fixture(scope="module")
def reals():
    """Real values with shifts in mean and spread, and repeated values (for ADWIN, PageHinkley, KSWIN)."""
    rng = np.random.default_rng(11)
    return np.concatenate([rng.normal(0, 1, 800), rng.normal(1.5, 1, 800), rng.normal(0.5, 3, 800),
                           np.round(rng.normal(-1, 1, 800), 1), rng.exponential(2.0, 800)])


#: The numbers each detector compares with its thresholds: (the twin's ``state`` index, river's), equal to
#: the last bit after every value (so a change in the order of operations shows before it moves a drift).
INTERNALS = {
    "adwin": [(2, lambda d: d.total), (3, lambda d: d.variance), (4, lambda d: d.width)],
    "ddm": [(3, lambda d: d._p.get()), (6, lambda d: d._ps_min)],
    "eddm": [(6, lambda d: d._error_distances.mean.get()), (7, lambda d: d._error_distances._S),
             (8, lambda d: d._p2s_prime_max)],
    "hddm_a": [(3, lambda d: d._z.get()), (5, lambda d: d._x_min.get()), (7, lambda d: d._x_max.get())],
    "hddm_w": [(2, lambda d: d._incr_cutpoint), (3, lambda d: d._decr_cutpoint), (4, lambda d: d._total.ewma),
               (10, lambda d: d._s2_incr.ewma), (16, lambda d: d._s2_decr.ewma), (18, lambda d: d._s2_decr.ibc)],
    "fhddm": [(2, lambda d: d.n_one), (3, lambda d: d._u_max), (4, lambda d: getattr(d, "_u_short_max", 0))],
    "page_hinkley": [(4, lambda d: d._sum_increase), (5, lambda d: d._sum_decrease)],
    "kswin": [(5, lambda d: d.p_value)],
}


def _side_by_side(river_detector, twin, xs):
    """Feed both every value; assert equal flags and numbers after each, and return river's drift positions."""
    drifts, internals, state = [], INTERNALS[twin.name], twin.state
    for i, x in enumerate(xs.tolist()):
        river_detector.update(x)
        twin.update(x)
        seen = (river_detector.drift_detected, bool(getattr(river_detector, "warning_detected", False)))
        assert (twin.drift_detected, twin.warning_detected) == seen, f"value {i}: river {seen}"
        for k, read in internals:
            got, want = float(state[k]), float(read(river_detector))
            assert got == want or (got != got and want != want), f"value {i}, state[{k}]: {got!r}, river {want!r}"
        if seen[0]:
            drifts.append(i)
    return drifts


def _feed_all(twin, xs):
    """Every drift position, from the block kernel restarted after each drift it stops at."""
    out, start = [], 0
    while (i := twin.feed(xs[start:])) >= 0:
        out.append(start + i)
        start += i + 1
    return out


@pytest.mark.parametrize("name, params", CASES, ids=[f"{n}-{i}" for n, s in SETTINGS.items() for i in range(len(s))])
def test_twin_equals_river_on_errors(name, params, errors):
    long, short = errors
    for label, xs in (short if name == "kswin" else long).items():
        drifts = _side_by_side(RIVER[name](**params), from_river(RIVER[name](**params)), xs)
        assert _feed_all(from_river(RIVER[name](**params)), xs) == drifts, label
        assert from_river(RIVER[name](**params)).feed(xs) == (drifts[0] if drifts else -1), label


def test_the_sequences_make_detectors_drift(errors):
    """The sequences are hard enough: river's defaults find drifts in the changing ones, and none of
    the sequences leaves every detector silent."""
    long, short = errors
    for label in ("abrupt", "gradual", "sea", "agrawal"):
        found = [name for name in RIVER if name != "kswin" and
                 _side_by_side(RIVER[name](), from_river(RIVER[name]()), long[label])]
        assert len(found) >= 4, (label, found)
    assert _side_by_side(drift.KSWIN(seed=1), from_river(drift.KSWIN(seed=1)), short["abrupt"])


@pytest.mark.parametrize("name", ["adwin", "page_hinkley", "kswin"])
def test_twin_equals_river_on_real_values(name, reals):
    xs = reals[:2400] if name == "kswin" else reals
    found = 0
    for params in SETTINGS[name]:
        drifts = _side_by_side(RIVER[name](**params), from_river(RIVER[name](**params)), xs)
        assert _feed_all(from_river(RIVER[name](**params)), xs) == drifts
        found += len(drifts)
    assert found > 0


def test_unseeded_kswin_follows_its_own_generator(errors):
    """Without a seed the twin draws what that very river object draws, up to its first drift."""
    xs = errors[1]["abrupt"]
    river_detector = drift.KSWIN()
    twin = from_river(river_detector)
    for x in xs.tolist():
        river_detector.update(x)
        twin.update(x)
        assert twin.p_value == river_detector.p_value and twin.drift_detected == river_detector.drift_detected
        if river_detector.drift_detected:
            break
    else:
        pytest.fail("no drift in the sequence")


def test_names_and_specs_map_to_twins(errors):
    xs = errors[0]["abrupt"]
    for name in DETECTORS:
        twin = compiled_detector(name)
        assert isinstance(twin, CompiledDetector) and twin.name == name
        fresh = make_detector(name)
        if name != "kswin":  # unseeded KSWIN: each has its own generator
            np.testing.assert_array_equal(twin.params, from_river(fresh).params)
    configured = binary.DDM(warm_start=10, drift_threshold=2.5)
    configured.update(1)  # a detector given to a model is cloned: what it saw does not count
    for spec in (configured, detector_spec(configured), {"class": "river.drift.binary.DDM",
                                                         "params": {"warm_start": 10, "drift_threshold": 2.5}}):
        twin = compiled_detector(spec)
        assert _side_by_side(binary.DDM(warm_start=10, drift_threshold=2.5), twin, xs)
    seeded = compiled_detector(drift.KSWIN(seed=4, window_size=50, stat_size=20))
    assert _side_by_side(drift.KSWIN(seed=4, window_size=50, stat_size=20), seeded.clone(), errors[1]["abrupt"])


class _MyDDM(binary.DDM):
    """A user's detector: no twin, even though it derives from one that has."""


def test_detectors_without_twin_keep_river():
    assert compiled_detector(None) is None and compiled_detector("none") is None
    assert compiled_detector(drift.NoDrift()) is None
    assert compiled_detector(_MyDDM()) is None
    assert compiled_detector(drift.KSWIN(window=[0, 1, 0, 1], seed=1)) is None  # an initial window
    assert compiled_detector(binary.FHDDM(sliding_window_size=10, short_window_size=20)) is None
    with pytest.raises(ConfigError, match="drift_detector"):
        compiled_detector("cusum")
    used = drift.ADWIN()
    used.update(1.0)
    with pytest.raises(ValueError, match="fresh ADWIN"):
        from_river(used)


def test_kswin_with_values_that_are_not_finite():
    """A NaN in either sample gives scipy's NaN p-value (no drift); infinities are values like others."""
    rng = np.random.default_rng(3)
    xs = np.concatenate([rng.normal(0, 1, 300), [np.nan], rng.normal(3, 1, 400), [np.inf, -np.inf],
                         rng.normal(0, 1, 300)])
    for params in ({"seed": 1}, {"seed": 2, "window_size": 60, "stat_size": 5, "alpha": 0.01}):
        drifts = _side_by_side(drift.KSWIN(**params), from_river(drift.KSWIN(**params)), xs)
        assert drifts and _feed_all(from_river(drift.KSWIN(**params)), xs) == drifts
