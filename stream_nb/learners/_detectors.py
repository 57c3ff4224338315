"""Drift detectors: river's, by name, their compiled twins, and their state as JSON.

:func:`make_detector` makes river's detector from what ``drift_detector=`` takes; :func:`compiled_detector`
its :class:`CompiledDetector` twin (None for a class without one: the model keeps river's), fed by a
model's kernel through its arrays (``kind``, ``params``, ``state``, ``fbuf``, ``ibuf``);
:func:`watched_detector` the one a model watches; :func:`encode_object` and :func:`decode_object` keep
either in a snapshot.
"""

from __future__ import annotations

import collections
import importlib
import math
import random
import warnings

import numpy as np

from ..kernels import DETECTOR_KINDS, compiled
from ..exceptions import ConfigError

__all__ = ["DETECTORS", "CompiledDetector", "compiled_detector", "decode_object", "detector_spec", "encode_object",
           "from_river", "make_detector", "watched_detector"]


class CompiledDetector:
    """A compiled twin of river's detector ``name`` (a key of :data:`DETECTOR_KINDS`) with the kernel
    parameters ``params``; :func:`from_river` makes one."""

    def __init__(self, name: str, params: np.ndarray):
        self.name = name
        self.kind = DETECTOR_KINDS[name]
        self.params = np.ascontiguousarray(params, dtype=np.float64)
        k = compiled()
        self._update, self._feed = k.detector_update, k.detector_feed
        self.state, self.fbuf, self.ibuf = k.detector_new(self.kind, self.params)

    def update(self, x) -> None:
        """Feed one value (river's ``update``: an error 0/1, or a number for ADWIN, PageHinkley, KSWIN)."""
        self._update(self.kind, self.params, self.state, self.fbuf, self.ibuf, float(x))

    def feed(self, xs) -> int:
        """Feed the values ``xs`` in order up to the first drift and return its index (-1: none, all fed)."""
        xs = np.ascontiguousarray(xs, dtype=np.float64)
        return int(self._feed(self.kind, self.params, self.state, self.fbuf, self.ibuf, xs))

    @property
    def drift_detected(self) -> bool:
        """Whether the last update detected a drift (the next one starts afresh, as in river)."""
        return bool(self.state[0])

    @property
    def warning_detected(self) -> bool:
        """Whether the last update raised a warning (always False for ADWIN, PageHinkley, KSWIN, FHDDM)."""
        return bool(self.state[1])

    @property
    def width(self) -> int:
        """ADWIN's window width."""
        if self.name != "adwin":
            raise AttributeError(f"a {self.name} detector has no width")
        return int(self.state[4])

    @property
    def p_value(self) -> float:
        """KSWIN's last p-value (0 before its window first fills)."""
        if self.name != "kswin":
            raise AttributeError(f"a {self.name} detector has no p_value")
        return float(self.state[5])

    def clone(self) -> CompiledDetector:
        """A fresh twin with the same parameters (an unseeded KSWIN draws a new generator state)."""
        params = self.params.copy()
        if self.name == "kswin" and params[3] == 0.0:
            params[-625:] = random.Random().getstate()[1]
        return CompiledDetector(self.name, params)

    def __repr__(self) -> str:
        return f"CompiledDetector({self.name!r})"

    def __getstate__(self) -> dict:
        return {"name": self.name, "params": self.params, "state": self.state, "fbuf": self.fbuf, "ibuf": self.ibuf}

    def __setstate__(self, data: dict) -> None:
        self.__init__(data["name"], data["params"])
        self.state, self.fbuf, self.ibuf = data["state"], data["fbuf"], data["ibuf"]


def watched_detector(spec):
    """The detector a model with ``drift_detector=spec`` watches: the compiled twin of the river detector
    :func:`make_detector` makes, where it has one, else that detector; None for no detector."""
    detector = make_detector(spec)
    twin = None if detector is None else from_river(detector)
    return detector if twin is None else twin


def compiled_detector(spec) -> CompiledDetector | None:
    """The twin of the detector ``spec`` names, as ``drift_detector=`` takes it (ConfigError for a spec it
    refuses); None for no detector and for a detector with no twin (see the module notes)."""
    detector = make_detector(spec)
    return None if detector is None else from_river(detector)


def from_river(detector) -> CompiledDetector | None:
    """The twin of a fresh river ``detector`` (ValueError if it has seen data), or None if it has none."""
    name = _name_of(detector)
    if name is None:
        return None
    if not _FRESH[name](detector) or detector.drift_detected:
        raise ValueError(f"from_river: expected a fresh {type(detector).__name__} (a twin starts empty), got "
                         "one that has seen data")
    params = _PARAMS[name](detector)
    return None if params is None else CompiledDetector(name, np.array(params, dtype=np.float64))


def _name_of(detector) -> str | None:
    """The name of ``detector``'s class among river's named detectors (exactly that class), else None."""
    cls = type(detector)
    if not cls.__module__.startswith("river."):
        return None
    for name, (module, qualname) in DETECTORS.items():
        if cls is getattr(importlib.import_module(module), qualname):
            return name
    return None


_FRESH = {
    "adwin": lambda d: d.width == 0,
    "ddm": lambda d: d._p.n == 0,
    "eddm": lambda d: d._n == 0,
    "hddm_a": lambda d: d._z.n == 0,
    "hddm_w": lambda d: not d._total.is_init,
    "fhddm": lambda d: len(d._sliding_window) == 0,
    "page_hinkley": lambda d: d._x_mean.n == 0,
    "kswin": lambda d: d.n == 0,
}


def _adwin(d):
    if d.clock < 1 or d.max_buckets < 1:
        return None  # river's Rust helper panics on these
    return [d.delta, d.clock, d.max_buckets, d.min_window_length, d.grace_period]


def _hddm_w(d):
    s = d._total  # river's SampleInfo holds lambda**2 and (1 - lambda)**2 as it computes them
    return [float(d.two_sided_test), d.lambda_val, 1.0 - d.lambda_val, s._lambd_sq, s._c_lambd_sq,
            math.log(1 / d.drift_confidence), math.log(1 / d.warning_confidence)]


def _fhddm(d):
    short = d.short_window_size
    if short is not None and not 1 <= short <= d.sliding_window_size:
        return None  # river fails on these at the first full window
    return [d.sliding_window_size, d._epsilon, short or 0, d._epsilon_s if short else 0.0]


def _kswin(d):
    W, r = d.window_size, d.stat_size
    if len(d.window) or not 1 <= r < W or (W - r).bit_length() > 32:
        return None  # an initial window, or sizes river fails on (or sizes random.sample draws otherwise)
    # scipy is river's dependency; imported here, when a KSWIN twin is made
    from scipy import stats

    pvalues = []
    with warnings.catch_warnings():  # as river calls it
        warnings.simplefilter("ignore", category=RuntimeWarning)
        for h in range(r + 1):  # samples whose statistic is h / r: the p-value depends on h alone
            pvalues.append(float(stats.ks_2samp([0.0] * h + [1.0] * (r - h), [1.0] * r, method="auto").pvalue))
    n, setsize = W - r, 21  # random.sample's choice between its pool and its set
    if r > 5:
        setsize += 4 ** math.ceil(math.log(r * 3, 4))
    return [d.alpha, W, r, float(d.seed is not None), float(n <= setsize), *pvalues, *d._rng.getstate()[1]]


_PARAMS = {
    "adwin": _adwin,
    "ddm": lambda d: [d.warm_start, d.warning_threshold, d.drift_threshold],
    "eddm": lambda d: [d.warm_start, d.alpha, d.beta, 0.5],
    "hddm_a": lambda d: [float(d.two_sided_test), math.log(1.0 / d.drift_confidence),
                         math.log(2.0 / d.drift_confidence), math.log(2.0 / d.warning_confidence)],
    "hddm_w": _hddm_w,
    "fhddm": _fhddm,
    "page_hinkley": lambda d: [d.min_instances, d.delta, d.threshold, d.alpha,
                               {"both": 0.0, "up": 1.0, "down": 2.0}[d.mode]],
    "kswin": _kswin,
}


#: Drift detectors by name (``drift_detector="ddm"``, ``--drift-detector ddm``): module and class in river.
DETECTORS = {
    "adwin": ("river.drift", "ADWIN"),
    "ddm": ("river.drift.binary", "DDM"),
    "eddm": ("river.drift.binary", "EDDM"),
    "hddm_a": ("river.drift.binary", "HDDMA"),
    "hddm_w": ("river.drift.binary", "HDDMW"),
    "fhddm": ("river.drift.binary", "FHDDM"),
    "page_hinkley": ("river.drift", "PageHinkley"),
    "kswin": ("river.drift", "KSWIN"),
}


def _river_class(path: str):
    """The class ``module:qualname`` (or ``module.Class``) of river (ValueError for anything else)."""
    module, _, name = path.rpartition(":") if ":" in path else path.rpartition(".")
    if not (module == "river" or module.startswith("river.")) or not name.isidentifier():
        raise ValueError(f"not a river class: {path!r:.80}")
    return getattr(importlib.import_module(module), name)


def make_detector(spec):
    """A fresh drift detector from ``spec``: None, a name of :data:`DETECTORS`, a river detector
    (cloned), or ``{"class": "river.drift.binary.DDM", "params": {...}}`` (what :func:`detector_spec` gives)."""
    if spec is None:
        return None
    if isinstance(spec, str):
        key = spec.strip().lower().replace("-", "_")
        if key in ("", "none"):
            return None
        if key not in DETECTORS:
            raise ConfigError(f"drift_detector: expected one of {', '.join(sorted(DETECTORS))} or a river drift "
                              f"detector, got {spec!r}")
        module, name = DETECTORS[key]
        return getattr(importlib.import_module(module), name)()
    if isinstance(spec, dict):
        try:
            cls = _river_class(str(spec["class"]))
            return cls(**dict(spec.get("params") or {}))
        except (KeyError, ValueError, TypeError, AttributeError, ImportError) as exc:
            raise ConfigError(f"drift_detector: cannot build {spec!r:.80}: {exc}") from None
    if callable(getattr(spec, "update", None)) and hasattr(spec, "drift_detected") and hasattr(spec, "clone"):
        return spec.clone()
    raise ConfigError(f"drift_detector: expected a river drift detector (e.g. river.drift.ADWIN()) or one of "
                      f"{', '.join(sorted(DETECTORS))}, got {spec!r:.80}")


def detector_spec(spec):
    """``spec`` as JSON-able data that :func:`make_detector` takes back (names and dicts as they are)."""
    if spec is None or isinstance(spec, (str, dict)):
        return spec
    cls = type(spec)
    # plain parameters only: a parameter holding data (KSWIN's initial window) starts empty again
    params = {k: v for k, v in spec._get_params().items() if v is None or isinstance(v, (bool, int, float, str))}
    return {"class": f"{cls.__module__}:{cls.__qualname__}", "params": params}


# ---------------------------------------------------------------------- a detector's state as JSON


def encode_object(obj, owner=None):
    """A river object's state as JSON-able data, floats as exact hex strings (:func:`decode_object` inverts it).

    Handles what river's drift detectors hold: numbers, strings, lists, tuples, deques, dicts,
    ``random.Random``, river objects (their ``__dict__``), river's native helpers (their pickled
    state bytes) and bound methods of the object being encoded.
    """
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return {"f": float(obj).hex()}
    if isinstance(obj, collections.deque):
        return {"dq": [encode_object(v) for v in obj], "maxlen": obj.maxlen}
    if isinstance(obj, list):
        return {"l": [encode_object(v) for v in obj]}
    if isinstance(obj, tuple):
        return {"t": [encode_object(v) for v in obj]}
    if isinstance(obj, dict):
        return {"d": [[encode_object(k), encode_object(v)] for k, v in obj.items()]}
    if isinstance(obj, bytes):
        return {"b": obj.hex()}
    if isinstance(obj, random.Random):
        return {"rng": encode_object(obj.getstate())}
    if isinstance(obj, CompiledDetector):
        return {"twin": obj.name, "arrays": {k: [str(a.dtype), a.tobytes().hex()] for k, a in obj.__getstate__().items()
                                             if k != "name"}}
    if owner is not None and getattr(obj, "__self__", None) is owner and hasattr(obj, "__func__"):
        return {"m": obj.__func__.__name__}
    cls = type(obj)
    path = f"{cls.__module__}:{cls.__qualname__}"
    if cls.__module__.split(".")[0] == "river":
        if hasattr(obj, "__dict__"):
            return {"o": path, "a": {k: encode_object(v, obj) for k, v in vars(obj).items()}}
        reduced = obj.__reduce_ex__(4)
        if len(reduced) >= 3 and isinstance(reduced[2], bytes) and reduced[1] and reduced[1][0] is cls:
            return {"n": path, "args": encode_object(tuple(reduced[1][1:])), "s": reduced[2].hex()}
    raise ValueError(f"cannot save a drift detector holding a {path}")


def decode_object(data):
    """The object :func:`encode_object` described (river classes only; ValueError otherwise)."""
    if data is None or isinstance(data, (bool, str, int)):
        return data
    if not isinstance(data, dict) or len(data) == 0:
        raise ValueError(f"drift detector state: unexpected {data!r:.60}")
    if "f" in data:
        return float.fromhex(data["f"])
    if "dq" in data:
        return collections.deque([decode_object(v) for v in data["dq"]], data.get("maxlen"))
    if "l" in data:
        return [decode_object(v) for v in data["l"]]
    if "t" in data:
        return tuple(decode_object(v) for v in data["t"])
    if "d" in data:
        return {decode_object(k): decode_object(v) for k, v in data["d"]}
    if "b" in data:
        return bytes.fromhex(data["b"])
    if "rng" in data:
        rng = random.Random()
        rng.setstate(decode_object(data["rng"]))
        return rng
    if "twin" in data:
        if data["twin"] not in DETECTOR_KINDS:
            raise ValueError(f"drift detector state: no compiled detector {data['twin']!r:.40}")
        arrays = {k: np.frombuffer(bytes.fromhex(b), dtype=np.dtype(dt)).copy() for k, (dt, b) in data["arrays"].items()}
        twin = CompiledDetector.__new__(CompiledDetector)
        twin.__setstate__({"name": data["twin"], **arrays})
        return twin
    if "o" in data:
        cls = _river_class(data["o"])
        obj = cls.__new__(cls)
        for k, v in data["a"].items():
            obj.__dict__[k] = getattr(obj, v["m"]) if isinstance(v, dict) and "m" in v else decode_object(v)
        return obj
    if "n" in data:
        cls = _river_class(data["n"])
        obj = cls.__new__(cls, *decode_object(data["args"]))
        obj.__setstate__(bytes.fromhex(data["s"]))
        return obj
    raise ValueError(f"drift detector state: unexpected {data!r:.60}")
