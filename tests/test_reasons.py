"""The dead letters' reason codes are one list: the codes the package raises, ``run --help`` and the table of
the documentation's page of reason codes (docs/daemon/reasons.md).

``stream_nb.engine.DEAD_LETTER_REASONS`` is the registry; every ``reason="..."``
given to an error the daemon dead-letters must be in it, and the help and that
page must list exactly its codes.
"""

from __future__ import annotations

import ast
import os
import pathlib
import re
import subprocess
import sys

from stream_nb.engine import DEAD_LETTER_REASONS

ROOT = pathlib.Path(__file__).resolve().parent.parent
#: Not dead letters: ``unlearn_one``'s refusals (``UnlearnError``), and ``stream-nb evaluate``'s skipped rows
#: (``stream_nb/tools``: its ``bad_delay`` is a row of a file, never a record of the daemon).
NOT_DEAD_LETTERS = ("UnlearnError",)


def _name(call: ast.Call) -> str | None:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def raised_reasons() -> dict[str, list[str]]:
    """Every constant ``reason=`` keyword of a call in stream_nb (but its tools) and connectors: code -> places."""
    found: dict[str, list[str]] = {}
    files = [p for p in (ROOT / "stream_nb").rglob("*.py") if "tools" not in p.relative_to(ROOT).parts]
    files += list((ROOT / "connectors").rglob("*.py"))
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call) or _name(node) in NOT_DEAD_LETTERS:
                continue
            for keyword in node.keywords:
                if keyword.arg == "reason" and isinstance(keyword.value, ast.Constant):
                    where = f"{path.relative_to(ROOT)}:{node.lineno}"
                    found.setdefault(keyword.value.value, []).append(where)
    return found


def test_every_reason_the_package_raises_is_in_the_registry():
    found = raised_reasons()
    assert {"invalid_json", "label_type_conflict", "table_full", "bad_time", "unmatched_label"} <= set(found)
    unknown = {code: places for code, places in found.items() if code not in DEAD_LETTER_REASONS}
    assert not unknown, f"reason codes raised but not in stream_nb/engine/contract/_reasons.py: {unknown}"
    unused = set(DEAD_LETTER_REASONS) - set(found)
    assert not unused, f"codes in the registry that nothing raises: {unused}"


def test_every_invalid_event_error_names_its_reason():
    """The class's default reason (``invalid_event``) is in no list: every raise must give one."""
    missing = []
    for path in (ROOT / "stream_nb").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and _name(node) == "InvalidEventError" and not any(
                    k.arg == "reason" for k in node.keywords):
                missing.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not missing


def test_run_help_lists_every_reason_code_with_its_meaning():
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAM_NB_")}
    proc = subprocess.run([sys.executable, "-m", "stream_nb", "run", "--help"], capture_output=True, env=env,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr.decode()
    text = proc.stdout.decode()
    start = text.index("one of these reason codes:")
    block = text[start:text.index("\n\n", start)]
    listed = re.findall(r"^  ([a-z0-9_]+) {2,}", block, flags=re.M)
    assert listed == list(DEAD_LETTER_REASONS)
    for code, meaning in DEAD_LETTER_REASONS.items():
        line = block[block.index(f"  {code} "):]
        assert " ".join(line.split()[1:len(meaning.split()) + 1]) == meaning


def test_the_docs_table_lists_exactly_the_registry():
    page = (ROOT / "docs" / "daemon" / "reasons.md").read_text(encoding="utf-8")
    table = page[page.index("| reason | meaning |"):]
    table = table[:table.index("\n\n")]
    codes = re.findall(r"^\| `([a-z0-9_]+)` \|", table, flags=re.M)
    assert codes == list(DEAD_LETTER_REASONS)
