"""Java peers (MOA, Weka) on exactly the events stream_nb's learners see.

``bench/learners.py --part peers`` and ``bench/holdout.py`` use this package.
The Python side materialises a stream once, writes it to an ARFF file
(:func:`write_arff`, with the nominal and numeric declarations :func:`declare`
chooses) and runs a small Java harness on that file:

- ``MoaPeers.java``: a MOA learner (``bayes.NaiveBayes``) test-then-train,
  ``getVotesForInstance`` then ``trainOnInstance``;
- ``WekaPeers.java``: a Weka ``UpdateableClassifier`` test-then-train
  (``buildClassifier`` on the empty header, then ``classifyInstance``,
  ``updateClassifier``), a holdout (``buildClassifier`` on the first N events,
  ``classifyInstance`` on the rest), or the cut points of Weka's supervised
  ``Discretize``;
- ``Harness.java``: what both share (the ARFF reader, the CPU clock, the output).

CapyMOA (MOA through JPype) runs in a venv of its own: ``capymoa_host.py`` makes the venv
and writes the events for ``capymoa_peer.py``, the worker that runs there.
``protocol.py`` holds how stream_nb's learners and CapyMOA are timed (process CPU time, a
warm-up run, the median of the timed runs, the first call on its own).

How the peers are timed: the harness reads the ARFF file once into
``weka.core.Instances`` (MOA: converted once to its own instances) and keeps
the events in memory, so neither parsing nor JVM start-up is timed. It then
runs ``repeats`` fresh learners over the same events in one JVM, timing each
test-then-train loop by the learner thread's CPU clock (``ThreadMXBean``);
the first ``warmup`` repeats let the JIT compile the hot paths and are left
out, and the best and the median of the remaining repeats are reported.
MOA's own ``EvaluatePrequential`` timer would include ARFF parsing and
JIT warm-up.

Jars come from Maven Central through ``mvn dependency:copy-dependencies`` with
the poms beside this file (MOA 2024.07.0 with the weka-dev 3.9.6 it declares;
Weka 3.8.7; Weka 3.6.14, whose core still holds ``weka.classifiers.bayes.AODE``),
cached under ``~/.cache/stream_nb/peers-<digest>/`` (``STREAM_NB_PEERS_CACHE``
overrides), like the Kafka jars of ``deploy/kafka/kafka_local.py``. The three
sets define the same ``weka.*`` classes, so each gets a JVM of its own and its
own compiled copy of the harness (``javac`` at run time, cached by a digest of
the sources). Without a JDK, or without Maven and no cached jars, or when Maven
cannot resolve the jars, :func:`ready` says why in one line and the callers
skip the peers.

ARFF declarations (:func:`declare`): a feature whose values are all ``int``,
``str`` or ``bool`` is nominal, one with a ``float`` numeric, unless the stream
names its nominal features (``NOMINAL``: Agrawal's ``elevel``, ``car`` and
``zipcode``, as MOA's own generator declares them, the other six numeric although
river yields ``age``, ``hvalue`` and ``hyears`` as ints). Nominal values and the
classes are declared in the order they first occur in the stream: MOA's
nominal estimator sizes its Laplace correction by the highest value index seen
so far in the class, and the peers break ties towards the lower index, so the
first-seen order is the one closest to stream_nb, which numbers values and
classes as they arrive.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: Peer sets: the pom resolving the jars, the Java sources compiled against them, the main class.
SETS = {
    "moa": ("pom-moa.xml", ("Harness.java", "MoaPeers.java"), "MoaPeers"),
    "weka-3.8": ("pom-weka-3.8.xml", ("Harness.java", "WekaPeers.java"), "WekaPeers"),
    "weka-3.6": ("pom-weka-3.6.xml", ("Harness.java", "WekaPeers.java"), "WekaPeers"),
}

#: Streams whose nominal features are declared by name (every other feature numeric), as MOA declares them.
NOMINAL = {"Agrawal": ("elevel", "car", "zipcode")}

COMPLETE_MARKER = ".stream_nb_complete"
JVM_OPTIONS = ("-Xms256m", "-Xmx1g")

__all__ = [
    "Attribute",
    "PeersUnavailable",
    "bin_events",
    "cache_dir",
    "declare",
    "equal_frequency_edges",
    "fetch",
    "holdout",
    "model_types",
    "prequential",
    "cut_points",
    "ready",
    "unavailable",
    "write_arff",
]


class PeersUnavailable(RuntimeError):
    """The Java peers cannot run here (no JDK, no Maven and no cached jars, or Maven failed)."""


# --------------------------------------------------------------------------- ARFF


@dataclass(frozen=True)
class Attribute:
    """One ARFF attribute: ``kind`` is ``"nominal"`` (with ``values``, in first-seen order) or ``"numeric"``."""

    name: object
    kind: str
    values: tuple = ()


def _is_nominal_value(v) -> bool:
    return isinstance(v, (str, bool, int)) and not isinstance(v, float)


def declare(events, nominal=None) -> tuple[list[Attribute], Attribute]:
    """The ARFF attributes of ``events`` (``(x, y)`` pairs) and the class attribute.

    Parameters
    ----------
    events
        The materialised stream; every event's features in the order of the first event
        (features first seen later are appended).
    nominal
        Names of the nominal features; every other feature is numeric. ``None``: a feature
        is nominal when every observed value is an ``int``, ``str`` or ``bool``, numeric as
        soon as one value is a ``float``.

    Returns
    -------
    The feature attributes and the class attribute (nominal, classes in first-seen order).
    """
    names: dict = {}
    seen: dict = {}
    classes: dict = {}
    for x, y in events:
        for name, v in x.items():
            if name not in names:
                names[name] = True
                seen[name] = {}
            if v is None or (isinstance(v, float) and math.isnan(v)):
                continue
            if not isinstance(v, (str, bool, int, float)):
                raise TypeError(f"feature {name!r}: expected str, bool, int or float, got {type(v).__name__} {v!r}")
            seen[name].setdefault(v, None)
        if y is None:
            raise ValueError("declare: every event needs a label (got None)")
        classes.setdefault(y, None)
    if nominal is not None:
        unknown = set(nominal) - set(names)
        if unknown:
            raise ValueError(f"nominal: features {sorted(map(str, unknown))} do not occur in the events")
    attrs = []
    for name in names:
        values = seen[name]
        is_nominal = name in nominal if nominal is not None else all(_is_nominal_value(v) for v in values)
        if is_nominal:
            attrs.append(Attribute(name, "nominal", tuple(values)))
        else:
            bad = [v for v in values if isinstance(v, (str, bool))]
            if bad:
                raise ValueError(f"feature {name!r}: declared numeric but has the value {bad[0]!r}")
            attrs.append(Attribute(name, "numeric"))
    return attrs, Attribute("class", "nominal", tuple(classes))


_ESCAPES = {"\\": "\\\\", "'": "\\'", '"': '\\"', "%": "\\%", "\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _arff_name(v) -> str:
    """An ARFF name or nominal value, quoted as Weka's ``Utils.quote`` does.

    Single quotes around a string that is empty, ``?``, or holds a space, comma, brace or a
    character that needs a backslash (``\\ ' " %``, tab, newline, carriage return).
    """
    s = str(v)
    if s == "" or s == "?" or any(ch in s for ch in " ,{}") or any(ch in s for ch in _ESCAPES):
        return "'" + "".join(_ESCAPES.get(ch, ch) for ch in s) + "'"
    return s


def _arff_number(v) -> str:
    # repr is the shortest string that reads back as the same double (Java parses it exactly too)
    return repr(int(v)) if isinstance(v, int) else repr(float(v))


def write_arff(path, events, attrs, target, relation="stream") -> Path:
    """Write ``events`` to ``path`` as ARFF under the declaration ``attrs``, ``target`` (see :func:`declare`).

    Missing values (``None``, NaN or an absent feature) are written as ``?``.
    """
    path = Path(path)
    cls_name = "class"
    taken = {str(a.name) for a in attrs}
    while cls_name in taken:
        cls_name = "_" + cls_name
    lines = [f"@relation {_arff_name(relation)}", ""]
    for a in attrs:
        if a.kind == "numeric":
            lines.append(f"@attribute {_arff_name(a.name)} numeric")
        elif a.kind == "nominal":
            lines.append(f"@attribute {_arff_name(a.name)} {{{','.join(_arff_name(v) for v in a.values)}}}")
        else:
            raise ValueError(f"attribute {a.name!r}: kind expected 'nominal' or 'numeric', got {a.kind!r}")
    lines.append(f"@attribute {_arff_name(cls_name)} {{{','.join(_arff_name(v) for v in target.values)}}}")
    lines += ["", "@data"]
    fmt = [(_arff_number if a.kind == "numeric" else _arff_name) for a in attrs]
    with open(path, "w", encoding="utf-8") as out:
        out.write("\n".join(lines) + "\n")
        for x, y in events:
            row = []
            for a, f in zip(attrs, fmt):
                v = x.get(a.name)
                missing = v is None or (isinstance(v, float) and math.isnan(v))
                row.append("?" if missing else f(v))
            row.append(_arff_name(y))
            out.write(",".join(row) + "\n")
    return path


def model_types(attrs) -> dict:
    """The ``types=`` argument that gives a stream_nb model the ARFF file's declaration."""
    return {a.name: ("numeric" if a.kind == "numeric" else "categorical") for a in attrs}


def equal_frequency_edges(values, bins=5) -> list[float]:
    """Interior edges of ``bins`` equal-frequency bins of ``values`` (duplicates and an edge at the minimum dropped).

    The rule stream_nb's discretising models apply by default to the first ``warmup`` values
    of a numeric feature (``bins=5, warmup=100``).
    """
    import numpy as np

    v = np.asarray(values, dtype=float)
    qs = np.linspace(0.0, 1.0, bins + 1)[1:-1]
    edges = np.unique(np.quantile(v, qs)) if len(qs) else np.empty(0)
    return edges[edges > v.min()].tolist()


def bin_events(events, attrs, edges):
    """The events with each numeric feature replaced by its bin label, and the matching declaration.

    A value ``x`` falls in bin ``searchsorted(edges, x, side="right")`` (bin 0 is
    ``x < edges[0]``), as in stream_nb, labelled ``"b0"``, ``"b1"``, ...; every bin is declared.
    """
    import bisect

    numeric = {a.name for a in attrs if a.kind == "numeric"}
    missing = numeric - set(edges)
    if missing:
        raise ValueError(f"edges: no edges for the numeric features {sorted(map(str, missing))}")
    out = []
    for x, y in events:
        z = dict(x)
        for name in numeric:
            v = z.get(name)
            if v is not None and not (isinstance(v, float) and math.isnan(v)):
                z[name] = f"b{bisect.bisect_right(edges[name], v)}"
        out.append((z, y))
    new_attrs = [
        Attribute(a.name, "nominal", tuple(f"b{i}" for i in range(len(edges[a.name]) + 1))) if a.name in numeric else a
        for a in attrs
    ]
    return out, new_attrs


# --------------------------------------------------------------------------- jars and classes


def _digest(paths) -> str:
    h = hashlib.sha256()
    for p in paths:
        h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def cache_dir() -> Path:
    """Where the jars and compiled harnesses live (``STREAM_NB_PEERS_CACHE`` overrides)."""
    env = os.environ.get("STREAM_NB_PEERS_CACHE")
    if env:
        return Path(env).expanduser()
    poms = sorted(HERE / pom for pom, _, _ in SETS.values())
    return Path.home() / ".cache" / "stream_nb" / f"peers-{_digest(poms)}"


def _jars_ready(d: Path) -> bool:
    return (d / COMPLETE_MARKER).is_file() and any(d.glob("*.jar"))


def unavailable() -> str | None:
    """``None`` when the peers can run here, else one line saying what is missing."""
    for tool in ("java", "javac"):
        if not shutil.which(tool):
            return f"Java peers skipped: `{tool}` not found on PATH (install a JDK, 11 or newer)"
    if not all(_jars_ready(cache_dir() / name) for name in SETS) and not shutil.which("mvn"):
        return (f"Java peers skipped: the MOA and Weka jars are not cached in {cache_dir()} "
                "and `mvn` is not on PATH to fetch them from Maven Central")
    return None


def ready() -> str | None:
    """Fetch and compile every peer set now; ``None`` when they can run, else one line saying why not.

    What went wrong in detail (Maven's or javac's output) goes to stderr.
    """
    reason = unavailable()
    if reason:
        return reason
    try:
        for name in SETS:
            _compile(name, fetch(name))
    except PeersUnavailable as exc:
        first, _, rest = str(exc).partition("\n")
        if rest:
            _log(rest)
            first = first.rstrip(":") + " (its output is on stderr)"
        return f"Java peers skipped: {first}"
    return None


@contextlib.contextmanager
def _file_lock(path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        import fcntl

        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _log(msg: str) -> None:
    print(f"peers: {msg}", file=sys.stderr, flush=True)


def fetch(name: str) -> Path:
    """The directory holding peer set ``name``'s jars, resolved with Maven the first time."""
    pom, _, _ = SETS[name]
    dest = cache_dir() / name
    if _jars_ready(dest):
        return dest
    mvn = shutil.which("mvn")
    if not mvn:
        raise PeersUnavailable(f"`mvn` not on PATH: cannot fetch the {name} jars into {dest}")
    with _file_lock(dest.parent / f".{name}.lock"):
        if _jars_ready(dest):
            return dest
        tmp = Path(tempfile.mkdtemp(prefix=f".{name}.tmp-", dir=dest.parent))
        try:
            cmd = [mvn, "-B", "-q", "-Dstyle.color=never", "-f", str(HERE / pom),
                   "dependency:copy-dependencies", "-DincludeScope=runtime", f"-DoutputDirectory={tmp}"]
            _log(f"resolving the {name} jars with Maven into {dest} ...")
            t0 = time.monotonic()
            proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True)
            if proc.returncode != 0:
                raise PeersUnavailable(f"Maven failed (exit {proc.returncode}) resolving {pom}:\n{proc.stdout[-3000:]}")
            if not any(tmp.glob("*.jar")):
                raise PeersUnavailable(f"Maven finished but copied no jar for {pom} into {tmp}")
            (tmp / COMPLETE_MARKER).write_text(pom + "\n")
            if dest.exists():
                shutil.rmtree(dest)
            os.replace(tmp, dest)
            _log(f"{name}: {len(list(dest.glob('*.jar')))} jars in {time.monotonic() - t0:.1f}s")
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
    return dest


def _compile(name: str, jars: Path) -> Path:
    _, sources, _ = SETS[name]
    paths = [HERE / s for s in sources]
    out = cache_dir() / f"classes-{name}-{_digest(paths)}"
    if (out / COMPLETE_MARKER).is_file():
        return out
    with _file_lock(out.parent / f".classes-{name}.lock"):
        if (out / COMPLETE_MARKER).is_file():
            return out
        tmp = Path(tempfile.mkdtemp(prefix=f".classes-{name}.tmp-", dir=out.parent))
        try:
            cmd = ["javac", "-nowarn", "-encoding", "UTF-8", "-d", str(tmp), "-cp", str(jars / "*"), *map(str, paths)]
            proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True)
            if proc.returncode != 0:
                raise PeersUnavailable(f"javac failed (exit {proc.returncode}) on {', '.join(sources)} "
                                       f"against the {name} jars:\n{proc.stdout[-3000:]}")
            (tmp / COMPLETE_MARKER).write_text("\n")
            if out.exists():
                shutil.rmtree(out)
            os.replace(tmp, out)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
    return out


def _run(name: str, args, timeout=1800) -> list[tuple[str, dict]]:
    """Run peer set ``name``'s harness with ``args``; its ``KIND {json}`` lines, parsed."""
    jars = fetch(name)
    classes = _compile(name, jars)
    _, _, main = SETS[name]
    cp = os.pathsep.join([str(classes), str(jars / "*")])
    cmd = ["java", *JVM_OPTIONS, "-cp", cp, main, *map(str, args)]
    # Weka 3.8's package manager makes a WEKA_HOME (default ~/wekafiles): keep it in the cache
    env = dict(os.environ, WEKA_HOME=str(cache_dir() / "wekafiles"))
    proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=timeout, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"{main} ({name}) exited {proc.returncode}: {' '.join(map(str, args[:2]))}\n"
                           f"{proc.stderr[-3000:]}")
    results = []
    for line in proc.stdout.splitlines():
        kind, _, rest = line.partition(" ")
        if kind in ("RESULT", "HOLDOUT", "CUTPOINTS"):
            results.append((kind, json.loads(rest)))
    if not results:
        raise RuntimeError(f"{main} ({name}) printed no result:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return results


def _read_predictions(path: Path, target: Attribute) -> list:
    labels = target.values
    return [None if int(s) < 0 else labels[int(s)] for s in path.read_text().split()]


# --------------------------------------------------------------------------- runs


@dataclass
class PeerResult:
    """One peer's run: events/s of the best and of the median warm repeat, accuracy, its predictions."""

    learner: str
    events: int
    best_eps: float | None
    median_eps: float | None
    accuracy: float
    correct: int
    predictions: list
    detail: dict


def prequential(name: str, arff: Path, target: Attribute, label: str, learner: str, options=(),
                repeats: int = 15, warmup: int = 5) -> PeerResult:
    """A test-then-train run of one peer (see the module docstring for the timing).

    ``name`` is the peer set (``"moa"``, ``"weka-3.8"``, ``"weka-3.6"``); ``learner`` a MOA
    command-line string (MOA) or a Weka class name followed by ``options``.
    """
    if name == "moa" and options:
        raise ValueError("prequential: MOA takes its options inside the learner string, not options=")
    with tempfile.TemporaryDirectory(prefix="peers-") as tmp:
        pred = Path(tmp) / "predictions.txt"
        args = ["prequential", arff, repeats, warmup, pred, label, learner, *options]
        (_, res), = _run(name, args)
        predictions = _read_predictions(pred, target)
    n = res["events"]
    return PeerResult(res["learner"], n, n / res["best_seconds"] if res["best_seconds"] else None,
                      n / res["median_seconds"] if res["median_seconds"] else None,
                      res["correct"] / n, res["correct"], predictions, res)


def holdout(name: str, arff: Path, n_train: int, target: Attribute, label: str, learner: str, options=()):
    """Weka ``learner`` built on the first ``n_train`` events of ``arff``, tested on the rest."""
    with tempfile.TemporaryDirectory(prefix="peers-") as tmp:
        pred = Path(tmp) / "predictions.txt"
        (_, res), = _run(name, ["holdout", arff, n_train, pred, label, learner, *options])
        predictions = _read_predictions(pred, target)
    return PeerResult(res["learner"], res["test"], None, None, res["correct"] / res["test"], res["correct"],
                      predictions, res)


def cut_points(arff: Path, n_train: int, name: str = "weka-3.8") -> dict:
    """The cut points of Weka's supervised ``Discretize`` (defaults: MDL) on the first ``n_train`` events,
    per numeric attribute name (as written in the ARFF file)."""
    (_, res), = _run(name, ["cutpoints", arff, n_train])
    return res
