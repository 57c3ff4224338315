"""``stream-nb snapshot inspect``: describe one snapshot file.

``stream-nb snapshot inspect PATH [--json]`` describes one snapshot file (PATH
a daemon's ``--snapshot-dir``: its newest valid snapshot, the one a restart
would try first; each newer damaged file is named on stderr):
model type and parameters, classes, events learned, features, the TAN tree
with each edge's conditional mutual information, the cells and bytes its counts
take (``memory``: see :meth:`~stream_nb.NaiveBayes.memory_used`), and for a daemon snapshot its
positions, metrics and sequence number; always the size, the format version
and when it was written. A file that fails a check prints
``stream-nb: error: PATH: reason`` on stderr and exits 2.

>>> import os, tempfile, stream_nb
>>> model = stream_nb.TAN(search=stream_nb.Tree(rebuild_every=2))
>>> for x, y in [({"a": "x", "b": "u"}, "yes"), ({"a": "y", "b": "v"}, "no")]:
...     model.learn_one(x, y)
>>> path = os.path.join(tempfile.mkdtemp(), "tan.snb")
>>> _ = stream_nb.save(model, path)
>>> info = describe(stream_nb.snapshots.read(path))
>>> info["model"]["type"], info["model"]["classes"], info["model"]["events_learned"]
('TAN', ['yes', 'no'], 2.0)
>>> info["model"]["tree"]
[{'parent': 'a', 'child': 'b', 'cmi': 0.0}]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import typing

import orjson

from .. import snapshots
from ..engine import join_summary
from ..exceptions import SnapshotError
from ..options import decode_params
from .._console import pipe_safe

__all__ = ["describe", "read_snapshot", "run_inspect", "add_subcommand"]


def describe(snap: snapshots.SnapshotFile) -> dict[str, typing.Any]:
    """What ``stream-nb snapshot inspect --json`` prints for a verified snapshot."""
    model = snap.model()
    meta = snap.meta
    # the features as the rebuilt model holds them (its from_state checked them), not as the file says
    features = [{**f, "name": _plain(f["name"])} for f in model.feature_summary()]
    counts = model.class_counts()
    info: dict[str, typing.Any] = {
        "path": snap.path,
        "size": snap.size,
        "format_version": snap.version,
        "created": snap.created,
        "stream_nb_version": snap.header.get("stream_nb"),
        "model": {
            "type": meta.get("model"),
            "params": _plain(meta.get("params")),
            "classes": _plain(list(model.classes)),
            "class_counts": [[_plain(c), n] for c, n in counts.items()],
            "events_learned": float(getattr(model, "n_learned", 0.0)),
            "features": features,
            "memory": model.memory_used() if hasattr(model, "memory_used") else None,
        },
        "daemon": None,
    }
    if hasattr(model, "cut_points"):
        info["model"]["cut_points"] = _plain(model.cut_points())
    if hasattr(model, "tree") and hasattr(model, "root"):
        info["model"]["root"] = _plain(model.root)
        info["model"]["tree"] = [{"parent": _plain(p), "child": _plain(c), "cmi": cmi} for p, c, cmi in model.tree]
    daemon = snap.daemon
    if daemon is not None:
        info["daemon"] = {
            "sequence": daemon.get("sequence"),
            "store_id": daemon.get("store_id"),
            "source": daemon.get("source"),
            "positions": daemon.get("positions"),
            "metrics": daemon.get("metrics"),
            "exactly_once": daemon.get("exactly_once"),
            "model_name": daemon.get("model_name"),
            "join": _plain(join_summary(daemon.get("join"), snap.arrays)),
        }
    return info


def _plain(value: typing.Any) -> typing.Any:
    """JSON-able: tuples as lists, non-string keys as their text."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k if isinstance(k, str) else _json(_plain(k)): _plain(v) for k, v in value.items()}
    return value


def _json(value: typing.Any, indent: bool = False) -> str:
    """``value`` as JSON text: orjson's, or the standard library's for an integer beyond 64 bits
    (a label or a parameter a model was given in Python), which orjson does not take."""
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2 if indent else 0).decode()
    except TypeError:
        return json.dumps(value, indent=2 if indent else None, separators=None if indent else (",", ":"),
                          ensure_ascii=False)


def _weight(n: float) -> str:
    """A model's weight of events: a whole number in full (as the metrics count it), else 6 digits.

    >>> _weight(1234567.0), _weight(2.5), _weight(1e20)
    ('1,234,567', '2.5', '1e+20')
    """
    return f"{n:,.0f}" if float(n).is_integer() and abs(n) < 2**53 else f"{n:,.6g}"


def _text(info: dict[str, typing.Any]) -> str:
    m = info["model"]
    lines = [
        f"snapshot   {info['path']}",
        f"format     version {info['format_version']}, {info['size']:,} bytes, written {info['created']} "
        f"by stream_nb {info['stream_nb_version']}, checksum ok",
        # the options as the user writes them (Tree(...), not the JSON they are stored as)
        f"model      {m['type']}(" + ", ".join(f"{k}={v!r}" for k, v in decode_params(m["params"] or {}).items()) + ")",
        f"classes    {len(m['classes'])}: " + ", ".join(f"{c!r} ({n:g})" for c, n in m["class_counts"]),
        # the weight of events in the model's counts: the daemon's metrics' learned without forgetting
        f"learned    {_weight(m['events_learned'])} events",
        f"features   {len(m['features'])}: " + ", ".join(
            f"{f['name']} ({f['kind']}" + (f", {f['values']} values)" if f["values"] is not None else ")")
            for f in m["features"]
        ),
    ]
    for name, cuts in (m.get("cut_points") or {}).items():
        lines.append(f"cuts       {name}: " + (", ".join(f"{c:.6g}" for c in cuts) or "none (one bin)"))
    if m.get("memory"):
        u = m["memory"]
        budget = "none" if u["budget"] is None else f"{u['budget']:,} bytes"
        table = (f"; t-way tables {'sparse' if u['sparse'] else 'dense'}, {u['table_cells']:,} cells, "
                 f"{u['table_bytes']:,} bytes" if u["table_cells"] else "")
        layout = "sparse" if u["pairs_sparse"] else "in blocks" if u.get("pairs_blocks") else "dense"
        pairs = (f"; pair tables {layout}, {u['pair_cells']:,} cells, "
                 f"{u['pair_bytes']:,} bytes" if u.get("pair_cells") else "")
        lines.append(f"counts     {u['cells']:,} cells, {u['bytes']:,} bytes{table}{pairs} (memory budget {budget})")
        chosen = u.get("pairs_selected")
        if chosen:  # pairs dropped for the budget (stats/selection/_candidates.py)
            kept = (f"super-parents {', '.join(map(repr, chosen['parents']))}" if chosen["rule"] == "parents"
                    else f"{len(chosen['edges'])} attribute pairs")
            lines.append(f"candidates only the pairs of {kept} are counted (the rest dropped for the memory budget)")
        chosen = u.get("tuples_selected")
        if chosen:  # t-way tables of candidate parents only (stats/selection/_tuple_candidates.py)
            lines.append("candidates " + ("t-way tables wait for the first rebuild to choose candidate parents" if chosen["pending"]
                         else f"t-way tables count {chosen['candidates']:,} candidate parents (at most "
                              f"{chosen['most_per_feature']} per attribute, {chosen['features_with_candidates']} attributes "
                              f"with any) from event {chosen['counted_from_event']:,.0f} on; the rest dropped for the "
                              f"memory budget"))
    if "tree" in m:
        if m["root"] is None:
            lines.append("tree       not built yet (naive Bayes until the first rebuild)")
        else:
            lines.append(f"tree       root {m['root']!r}, {len(m['tree'])} edges (parent -> child, CMI in nats):")
            lines.extend(f"             {e['parent']!r} -> {e['child']!r}  {e['cmi']:.6f}" for e in m["tree"])
    d = info["daemon"]
    if d is None:
        lines.append("daemon     none (saved with stream_nb.save)")
    else:
        lines.append(f"daemon     snapshot {d['sequence']} of store {d['store_id']}, "
                     f"{'exactly-once' if d['exactly_once'] else 'at-least-once'} outputs, model name "
                     f"{d['model_name']!r}, source {d['source']}")
        positions = d["positions"] or {}
        lines.append("positions  " + (", ".join(f"{k}: {v}" for k, v in sorted(positions.items())) or "none"))
        metrics = d["metrics"] or {}
        if metrics:
            labeled = metrics.get("labeled") or 0
            accuracy = f"{metrics['correct'] / labeled:.4f}" if labeled else "n/a"
            lines.append(
                f"metrics    events {metrics.get('events')}, predicted {metrics.get('predicted')}, learned "
                f"{metrics.get('learned')}, labeled {labeled}, accuracy {accuracy}, dead letters "
                f"{sum((metrics.get('dead_letters_by_reason') or {}).values())}"
            )
        j = d.get("join")
        if j is not None:
            counts = j["counts"] or {}
            lines.append(
                f"join       waiting events {j['pending_events']} (provisional {j['provisional']}), early labels "
                f"{j['early_labels']}, joined ids kept {j['joined_ids']}; "
                + ", ".join(f"{k} {v}" for k, v in counts.items() if not k.startswith("delayed"))
            )
            feedback = j["feedback_positions"] or {}
            lines.append("feedback   " + (", ".join(f"{k}: {v}" for k, v in sorted(feedback.items())) or "none read"))
    return "\n".join(lines) + "\n"


def run_inspect(args: argparse.Namespace) -> int:
    """``stream-nb snapshot inspect``: 0, or 2 with one error line naming the file and the reason."""
    try:
        info = describe(read_snapshot(args.path))
    except SnapshotError as exc:
        print(f"stream-nb: error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        sys.stdout.write(_json(info, indent=True) + "\n")
    else:
        sys.stdout.write(_text(info))
    return 0


def read_snapshot(path: str, use: str = "described") -> snapshots.SnapshotFile:
    """The snapshot of ``path``: a file, or a snapshot directory's newest valid one (as a restart takes it).

    Each damaged newer one is named on stderr, with the words ``an older snapshot is <use>``.

    Examples
    --------
    >>> import os, tempfile, stream_nb
    >>> model = stream_nb.NaiveBayes()
    >>> model.learn_one({"sky": "sun"}, "play")
    >>> path = os.path.join(tempfile.mkdtemp(), "model.snb")
    >>> stream_nb.save(model, path) > 0   # bytes written
    True
    >>> info = describe(read_snapshot(path))
    >>> info["model"]["type"], info["model"]["classes"], info["model"]["events_learned"]
    ('NaiveBayes', ['play'], 1.0)
    """
    if not os.path.isdir(path):
        return snapshots.read(path)
    store = snapshots.SnapshotStore(path)  # read only: not opened, so a running daemon's lock stays its own
    seqs = store.sequences()
    if not seqs:
        raise SnapshotError(f"{path}: no snapshot in this directory (expected snapshot-<12 digits>.snb files)")
    for seq in seqs:
        try:
            return store.read(seq)
        except SnapshotError as exc:  # a restart would skip it too
            print(f"stream-nb: warning: {exc}; an older snapshot is {use}", file=sys.stderr)
    raise SnapshotError(f"{path}: none of its {len(seqs)} snapshot(s) is valid (each named above)")


_INSPECT_DESCRIPTION = """\
Describe a snapshot written by stream-nb run --snapshot-dir (give the directory
for its newest valid snapshot) or stream_nb.save():
the model (type, parameters, classes, events learned, features, TAN tree with
the conditional mutual information of each edge), the daemon's positions and
metrics, the file's size, format version and time written. The file is fully
verified (checksum included) first."""


def add_subcommand(commands: argparse._SubParsersAction) -> None:
    """Register ``snapshot inspect`` on the ``stream-nb`` sub-command parser."""
    snapshot = commands.add_parser("snapshot", help="work with snapshot files (inspect)",
                                   description="Work with snapshot files.")
    actions = snapshot.add_subparsers(dest="snapshot_command", metavar="ACTION", required=True)
    inspect = actions.add_parser("inspect", help="describe one snapshot file", description=_INSPECT_DESCRIPTION,
                                 epilog="exit status: 0 done, 1 stdout closed or failing, 2 not a valid snapshot "
                                        "(the reason on stderr), 130 interrupted (Ctrl-C).",
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    inspect.add_argument("path", metavar="PATH", help="the snapshot file, or a --snapshot-dir (its newest valid one)")
    inspect.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    inspect.set_defaults(handler=pipe_safe(run_inspect))
