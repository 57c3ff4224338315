"""The compiled kernels where the deploy files run the daemon: a read-only root, a writable cache volume.

numba keeps compiled kernels only in a directory it can write to (see :mod:`stream_nb.kernels._cache`).
These tests run the real ``stream-nb`` commands under a read-only root file system, as a pod with
``readOnlyRootFilesystem: true`` or a unit with ``ProtectSystem=strict`` has it: in a user and mount
namespace (``unshare -rm``), every file system is remounted read-only but the directories the deploy
files give the daemon as volumes. The tests run as root, and root ignores file permissions, so a
``chmod`` would prove nothing: a read-only mount stops root too.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from stream_nb.kernels._cache import NO_CACHE_WARNING
from test_deploy import EXAMPLE, clean_env, example_events, final_metrics, stream_nb_script

ROOT = Path(__file__).resolve().parent.parent

# bind each writable directory onto itself, then remount read-only every other mount the command may write to
READ_ONLY = """
set -e
for dir in $WRITABLE; do mount --bind "$dir" "$dir"; done
for mnt in $MOUNTS; do mount -o remount,bind,ro "$mnt"; done
exec "$@"
"""


def mount_point(path: Path) -> Path:
    path = path.resolve()
    while not os.path.ismount(path):
        path = path.parent
    return path


def can_make_read_only_roots() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", "mount -o remount,bind,ro / && true"],
                           capture_output=True, timeout=30)
    return probe.returncode == 0


needs_namespaces = pytest.mark.skipif(not can_make_read_only_roots(),
                                      reason="needs `unshare -rm` (user and mount namespaces) for a read-only root")


def read_only_root(argv: list[str], writable: list[Path], **kwargs) -> subprocess.CompletedProcess:
    """Run ``argv`` with every file system read-only but the ``writable`` directories (which must exist)."""
    paths = [Path("/"), ROOT, Path(sys.prefix), Path.home(), *writable]
    mounts = sorted({str(mount_point(p)) for p in paths})
    env = dict(kwargs.pop("env"), WRITABLE=" ".join(str(w) for w in writable), MOUNTS=" ".join(mounts))
    assert all(" " not in p for p in env["WRITABLE"].split() + mounts)
    return subprocess.run(["unshare", "-rm", "sh", "-c", READ_ONLY, "sh", *argv], env=env, capture_output=True,
                          timeout=600, **kwargs)


def quick_start(tmp: Path, *extra: str) -> list[str]:
    """The README's quick-start command (the default model over the example stream), outputs into ``tmp``."""
    return [*stream_nb_script(), "run", "--input", str(EXAMPLE), "--output", str(tmp / "out.jsonl"),
            "--dead-letter", str(tmp / "dead.jsonl"), *extra]


@needs_namespaces
def test_with_no_writable_cache_directory_the_kernels_compile_in_memory_with_one_warning(tmp_path):
    """A read-only root without NUMBA_CACHE_DIR: numba has nowhere to keep the kernels. The daemon still runs
    every event (compiling in memory) and says once, in its log, how to keep them."""
    out = tmp_path / "out"
    out.mkdir()
    env = {k: v for k, v in clean_env().items() if not k.startswith("NUMBA_")}
    env["PYTHONPATH"] = str(ROOT)
    r = read_only_root(quick_start(out), [out], env=env, cwd=out)
    stderr = r.stderr.decode()
    assert r.returncode == 0, stderr
    assert "Traceback" not in stderr and stderr.count(NO_CACHE_WARNING) == 1
    summary = final_metrics(stderr)
    assert summary["events"] == example_events() and summary["predicted"] > 0
    assert len((out / "out.jsonl").read_bytes().splitlines()) == summary["predicted"]
