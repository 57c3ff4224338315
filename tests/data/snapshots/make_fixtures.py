"""Write the snapshot fixtures of ``tests/test_snapshot_compat.py`` with the code of this checkout.

Run from the repository root::

    PYTHONPATH=$PWD python tests/data/snapshots/make_fixtures.py

It writes, next to this script:

* ``models/<name>.snb``: one snapshot (``stream_nb.save``) per model of
  :data:`MODELS`, trained on seeded events with categorical (``str``, ``bool``,
  ``int``) and numeric features, some values missing (``None`` or an absent key);
* ``group/records.json``: the records a member of a ``--model-topic`` group
  publishes for two input partitions, the bytes as published (base64), one
  state in one record and one split into pieces and a manifest;
* ``daemon/``: what ``stream-nb run --snapshot-dir`` left after reading
  ``events.jsonl`` (the snapshot directory ``snaps/``, the output and
  dead-letter files), and ``more.jsonl``, the events a resumed run reads next;
* ``expected.json``: what this code answers on them: ``predict_proba_one`` and
  ``predict_one`` of fixed probe events per model, then the same after the
  loaded model learned the next 50 events; the group's partition models and
  merged view; the resumed daemon's outputs.

The fixtures are the compatibility promise of the snapshot format: they are
written once and committed, and the tests load them with later code. Rerun
this script only when the format version is bumped on purpose (and keep the
files of the older version for the converter's test). Everything is seeded;
the files differ from run to run only in times, store ids and the group's
record versions.
"""

from __future__ import annotations

import base64
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import stream_nb
from stream_nb import AODE, KDB, SPODE, TAN, NaiveBayes
from stream_nb.engine import GroupCheckpointer
from stream_nb.snapshots import FORMAT_VERSION

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent.parent

#: Features of the events; the pair models see fewer, to keep their dense tables small.
ALL = ("color", "flag", "level", "x", "y")
PAIRS = ("color", "flag", "level", "x")
TRIPLES = ("color", "flag", "x")

#: Probability significant digits kept in expected.json.
DIGITS = 12


def events(n: int, seed: int, *, features=ALL, labels: str = "str", missing: float = 0.08,
           unlabeled: float = 0.0, shift_at: int | None = None) -> list[list]:
    """``n`` seeded ``[x, y]`` pairs.

    Three classes; ``color`` (str) and ``flag`` (bool) depend on the class,
    ``level`` (int, categorical) on the colour, ``x`` (float) on the class and
    the flag, ``y`` (float) on the class (so TAN, SPODE and KDB find
    dependences to build on). A value is missing with probability
    ``missing``: half ``None``, half an absent key. ``labels="int"`` names the
    classes 0, 1, 2; ``unlabeled`` is the share of events whose label is
    ``None``; from event ``shift_at`` on, the classes' roles rotate (a drift).
    """
    rng = random.Random(seed)
    names = ["a", "b", "c"] if labels == "str" else [0, 1, 2]
    colors = ["red", "green", "blue"]
    out = []
    for i in range(n):
        k = rng.choices([0, 1, 2], weights=[5, 3, 2])[0]
        role = (k + 1) % 3 if shift_at is not None and i >= shift_at else k
        color = colors[role] if rng.random() < 0.6 else rng.choice(colors)
        flag = rng.random() < (0.2, 0.5, 0.8)[role]
        level = colors.index(color) if rng.random() < 0.7 else rng.choice([0, 1, 2])
        x = {"color": color, "flag": flag, "level": level,
             "x": round(rng.gauss((0.0, 1.5, 3.0)[role] + 1.5 * flag, 1.0), 6),
             "y": round(rng.uniform(0.0, 10.0) + 2.0 * role, 6)}
        x = {f: v for f, v in x.items() if f in features}
        for f in list(x):
            r = rng.random()
            if r < missing / 2:
                x[f] = None
            elif r < missing:
                del x[f]
        y = None if unlabeled and rng.random() < unlabeled else names[k]
        out.append([x, y])
    return out


def probes(features) -> list[dict]:
    """The probe events: seeded ones with more values missing, one with values never seen, one empty."""
    xs = [x for x, _ in events(20, seed=99, features=features, missing=0.2)]
    unseen = {"color": "purple", "flag": True, "level": 7, "x": 2.5, "y": 4.0}
    return xs + [{f: v for f, v in unseen.items() if f in features}, {}]


#: The training streams: name -> (features, options of :func:`events`). Each trains on 360 events (seed 1);
#: its continuation is the next 50 events (seed 2) with values missing, so that every model meets EM there,
#: and, after a drift, of the new concept.
STREAMS = {
    "mixed": (ALL, {}),
    "int_labels": (ALL, {"labels": "int"}),
    "unlabeled": (ALL, {"unlabeled": 0.3}),
    "drift": (ALL, {"shift_at": 200}),
    "pairs": (PAIRS, {}),
    "pairs_complete": (PAIRS, {"missing": 0.0}),
    "triples_complete": (TRIPLES, {"missing": 0.0}),
}

#: name -> (constructor, training stream). The constructors keep the keywords of the release that wrote
#: the committed fixtures (format version 1: ``window=``, ``fine_bins=``, ``missing="em"``, ...), on
#: purpose: they record what made the files. This release still takes them, with a DeprecationWarning,
#: and writes version 2; the option objects (``docs/guide/options.md``) are how new code spells them.
MODELS = {
    "nb_gaussian": (lambda: NaiveBayes(), "mixed"),
    "nb_bins_mdl": (lambda: NaiveBayes(numeric="bins", discretiser="mdl"), "mixed"),
    "nb_ignore_int_labels_loss": (lambda: NaiveBayes(missing="ignore", loss={2: {0: 4.0}}), "int_labels"),
    "aode": (lambda: AODE(fine_bins=8), "pairs_complete"),
    "tan": (lambda: TAN(fine_bins=8), "pairs_complete"),
    "spode": (lambda: SPODE(fine_bins=8), "pairs_complete"),
    "kdb2": (lambda: KDB(k=2, bins=3), "triples_complete"),
    "tan_em": (lambda: TAN(fine_bins=8, missing="em"), "pairs"),
    "nb_window": (lambda: NaiveBayes(window=200, panes=4), "mixed"),
    "aode_half_life": (lambda: AODE(fine_bins=8, half_life=150), "pairs_complete"),
    "kdb2_sparse": (lambda: KDB(k=2, bins=3, memory_budget=0), "triples_complete"),
    "nb_unlabeled": (lambda: NaiveBayes(learn_unlabeled=True), "unlabeled"),
    "nb_ddm": (lambda: NaiveBayes(drift_detector="ddm"), "drift"),
}
TRAIN, CONTINUE = 360, 50
GROUP_EDGES = {"x": [0.0, 1.0, 2.0, 3.0]}


def rounded(p: float) -> float:
    return float(f"{p:.{DIGITS}g}")


def answers(model, xs: list[dict]) -> dict:
    """``predict_proba_one`` (as ``[label, p]`` pairs: labels keep their type) and ``predict_one`` of ``xs``."""
    return {"proba": [[[c, rounded(p)] for c, p in model.predict_proba_one(x).items()] for x in xs],
            "predict": [model.predict_one(x) for x in xs]}


def continuation(opts: dict) -> dict:
    """The continuation's options: the training stream's labels and unlabeled share, values missing, and
    after a drift the new concept."""
    return {**{k: v for k, v in opts.items() if k != "missing"}, **({"shift_at": 0} if "shift_at" in opts else {})}


def make_streams() -> dict:
    return {name: {"probes": probes(features), "continue": events(CONTINUE, seed=2, features=features,
                                                                  **continuation(opts))}
            for name, (features, opts) in STREAMS.items()}


def make_models(out: Path, streams: dict) -> dict:
    (out / "models").mkdir(exist_ok=True)
    expected = {}
    for name, (build, stream) in MODELS.items():
        features, opts = STREAMS[stream]
        model = build()
        for x, y in events(TRAIN, seed=1, features=features, **opts):
            model.learn_one(x, y)
        path = out / "models" / f"{name}.snb"
        stream_nb.save(model, path)
        model = stream_nb.load(path)  # what the test starts from
        learned = int(model.n_learned)  # (the events a window still holds, the labeled ones)
        xs = streams[stream]["probes"]
        before = answers(model, xs)
        for x, y in streams[stream]["continue"]:
            model.learn_one(x, y)
        expected[name] = {"file": f"models/{name}.snb", "model": type(model).__name__, "stream": stream,
                          "n_learned": learned, "answers": before, "n_learned_after": int(model.n_learned),
                          "answers_after": answers(model, xs)}
    return expected


class _Topic:
    """A model topic in memory: the records in the order they are published."""

    topic = "model"

    def __init__(self) -> None:
        self.max_record_bytes = 1_000_000
        self.records: list[tuple[str, bytes | None]] = []

    def publish(self, key, value):
        self.records.append((key, value))

    def flush(self):
        return None

    def poll(self, timeout):
        return []

    def catch_up(self, timeout):
        return []

    def close(self):
        return None


def make_group(out: Path) -> dict:
    """Two partitions' TAN states, published by the group checkpointer itself (no broker needed: the
    channel is the only part that talks to Kafka, and it sends the bytes it is given). A group merges
    its states, so the numeric feature's bin edges are declared (merging needs the same edges)."""
    (out / "group").mkdir(exist_ok=True)
    topic = _Topic()
    member = GroupCheckpointer(topic, TAN(bin_edges=GROUP_EDGES), member="member-1")
    partitions = {"events-0": (180, 3), "events-1": (150, 4)}  # partition -> (events, seed)
    for p, (n, seed) in partitions.items():
        model = TAN(bin_edges=GROUP_EDGES)
        for x, y in events(n, seed=seed, features=PAIRS):
            model.learn_one(x, y)
        member.live[p] = model
    member._publish({"events-0": 180})  # one record
    topic.max_record_bytes = 2048  # the second state does not fit: pieces, then a manifest
    member._publish({"events-1": 150})
    kinds = [value[4:5].decode() for _, value in topic.records]
    assert kinds[0] == "S" and kinds[-1] == "M" and set(kinds[1:-1]) == {"C"}, kinds
    records = [{"key": key, "value": base64.b64encode(value).decode()} for key, value in topic.records]
    (out / "group" / "records.json").write_text(json.dumps({"topic": topic.topic, "records": records}, indent=1) + "\n")
    xs = probes(PAIRS)
    view = member.build_view()
    return {"file": "group/records.json", "partitions": {p: {"offset": n, "learned": n} for p, (n, _) in
                                                         partitions.items()},
            "probes": xs, "parts": {p: answers(member.live[p], xs) for p in partitions},
            "view": answers(view, xs), "view_learned": int(view.n_learned)}


#: ``stream-nb run`` flags of the daemon fixture (the resumed run must use the same model settings).
DAEMON_ARGS = ["run", "--model", "nb", "--input", "events.jsonl", "--output", "out.jsonl", "--dead-letter",
               "dead.jsonl", "--snapshot-dir", "snaps", "--snapshot-every", "40", "--id-field", "id"]


def jsonl(pairs: list[list], start: int) -> bytes:
    lines = []
    for i, (x, y) in enumerate(pairs, start):
        event = {"id": i, **x}
        if y is not None:
            event["label"] = y
        lines.append(json.dumps(event, separators=(",", ":")).encode())
    return b"".join(line + b"\n" for line in lines)


def _run(cwd: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAM_NB_")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run([sys.executable, "-m", "stream_nb.cli", *DAEMON_ARGS], cwd=cwd, env=env,
                          capture_output=True, timeout=300)
    if proc.returncode != 0 or b"Traceback" in proc.stderr:
        raise SystemExit(f"stream-nb run failed ({proc.returncode}):\n{proc.stderr.decode(errors='replace')}")


def make_daemon(out: Path) -> dict:
    """Run the daemon on 120 events (two bad lines, some unlabeled), keep what it left; then resume it on 30
    more events in the same place (the same files) and record those outputs."""
    target = out / "daemon"
    if target.exists():
        shutil.rmtree(target)
    first = jsonl(events(120, seed=5, unlabeled=0.1), 0)
    lines = first.split(b"\n")
    lines.insert(50, b'{"id": "bad-json", "color": ')  # dead letters: invalid JSON, a wrong type
    lines.insert(90, b'{"id": "bad-type", "color": "red", "x": [1, 2], "label": "a"}')
    first = b"\n".join(lines)
    more = jsonl(events(30, seed=6, unlabeled=0.1), 120)
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "events.jsonl").write_bytes(first)
        _run(tmp)
        shutil.copytree(tmp, target, ignore=shutil.ignore_patterns(".lock", ".*staging*"))
        outputs = len((Path(tmp) / "out.jsonl").read_bytes().splitlines())
        with open(Path(tmp) / "events.jsonl", "ab") as f:
            f.write(more)
        _run(tmp)
        resumed = (Path(tmp) / "out.jsonl").read_bytes().splitlines()[outputs:]
    (target / "more.jsonl").write_bytes(more)
    keep = ("id", "prediction", "proba", "learned", "n_learned", "source")
    records = []
    for raw in resumed:
        record = {k: v for k, v in json.loads(raw).items() if k in keep}
        record["proba"] = {c: rounded(p) for c, p in record["proba"].items()}
        records.append(record)
    return {"args": DAEMON_ARGS, "outputs": outputs, "resumed": records}


def dump(value, depth: int = 0) -> str:
    """JSON of ``value``: objects down to the third level one key a line, anything deeper on one line."""
    if isinstance(value, dict) and depth < 3 and value:
        pad = " " * (depth + 1)
        items = [f"{pad}{json.dumps(k)}: {dump(v, depth + 1)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + " " * depth + "}"
    return json.dumps(value, separators=(",", ":"), allow_nan=False)


def main() -> None:
    streams = make_streams()
    expected = {"stream_nb": stream_nb.__version__, "format_version": FORMAT_VERSION, "digits": DIGITS,
                "streams": streams, "models": make_models(HERE, streams), "group": make_group(HERE),
                "daemon": make_daemon(HERE)}
    (HERE / "expected.json").write_text(dump(expected) + "\n")
    total = sum(p.stat().st_size for p in HERE.rglob("*") if p.is_file())
    print(f"fixtures written to {HERE}: {total:,} bytes")


if __name__ == "__main__":
    main()
