"""What ``stream-nb`` pays for at start: commands that never learn nor predict never import numba.

numba takes most of a second to import (and compiling the kernels more, the first time). The kernels are
compiled on the first learning or predicting call (:func:`stream_nb.kernels.compiled`), so ``--help`` and
``snapshot inspect`` start as fast as before. The commands run one after the other in a fresh interpreter
through the ``stream-nb`` entry point (``stream_nb.cli.main``), which reports after each whether numba has
been imported (once imported it stays: the first command that imports it is the one named).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import stream_nb
from stream_nb.exceptions import InvalidEventError
from stream_nb.settings import MODELS

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "events.jsonl"

# runs `stream-nb ARGS...` as the console script does, for each ARGS in turn; after each, one line on stderr:
# its exit status and whether numba is loaded
PROBE = """
import json, sys
from stream_nb.cli import main
for args in json.loads(sys.argv[1]):
    try:
        status = main(args)
    except SystemExit as exit:
        status = exit.code
    print(json.dumps({"args": args, "status": status, "numba": "numba" in sys.modules}), file=sys.stderr)
"""


def probe(*commands: list[str], cwd: Path) -> list[dict]:
    """For each command, in one fresh interpreter: its arguments, exit status, and numba's presence after it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAM_NB_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    proc = subprocess.run([sys.executable, "-c", PROBE, json.dumps(commands)], stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, cwd=cwd, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode()
    lines = [json.loads(line) for line in proc.stderr.decode().splitlines() if line.startswith('{"args"')]
    assert [line["args"] for line in lines] == list(commands), proc.stderr.decode()
    return lines


def example_events() -> list[tuple[dict, object]]:
    events = []
    for line in EXAMPLE.read_bytes().splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue  # the example holds bad lines on purpose
        if isinstance(event, dict):
            event.pop("id", None)
            events.append((event, event.pop("label", None)))
    return events


def test_help_and_snapshot_inspect_do_not_import_numba(tmp_path):
    # the control: the quick-start command learns, so it loads numba (and leaves a daemon snapshot)
    (run,) = probe(["run", "--input", str(EXAMPLE), "--output", str(tmp_path / "out.jsonl"), "--dead-letter",
                    str(tmp_path / "dead.jsonl"), "--snapshot-dir", str(tmp_path / "snapshots")], cwd=tmp_path)
    assert (run["status"], run["numba"]) == (0, True)
    # a snapshot of every model, saved after a river loop over the example's events
    saved = []
    for name, (class_name, _) in MODELS.items():
        model = getattr(stream_nb, class_name)()
        for x, y in example_events():
            try:
                model.predict_one(x)
                if y is not None:
                    model.learn_one(x, y)
            except InvalidEventError:
                continue  # the example holds wrongly typed events on purpose, as the daemon's dead letters show
        saved.append(tmp_path / f"{name}.snb")
        stream_nb.save(model, saved[-1])
    commands = [["--help"], ["run", "--help"], ["snapshot", "inspect", "--help"],
                ["snapshot", "inspect", str(tmp_path / "snapshots")],
                *(["snapshot", "inspect", "--json", str(path)] for path in saved)]
    for line in probe(*commands, cwd=tmp_path):
        assert (line["status"], line["numba"]) == (0, False), line["args"]
