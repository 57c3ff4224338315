"""Import one of the repository's scripts (bench/, examples/, docs/ are not packages) as a module, for a test."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def load_script(path: str, name: str):
    """The script at ``path`` (relative to the repository's root) imported as module ``name``, its own
    directory on ``sys.path`` while it loads (a bench script imports its neighbours, such as ``_settings``)."""
    script = ROOT / path
    sys.path.insert(0, str(script.parent))
    try:
        spec = importlib.util.spec_from_file_location(name, script)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(script.parent))
    return module
