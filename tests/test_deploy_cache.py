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
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from stream_nb.kernels._cache import NO_CACHE_WARNING
from stream_nb.settings import MODELS
from test_deploy import (EXAMPLE, cache_files, clean_env, docker_env, example_events, exec_start, final_metrics,
                         image_kernels, pod_specs, rewrite, stream_nb_script, systemd_unit)

__all__ = ["image_kernels"]  # the fixture: the Dockerfile's build step, run once per session

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


def base_env(**extra: str) -> dict[str, str]:
    """The test's environment without numba's or stream-nb's settings; this tree first on the path."""
    env = {k: v for k, v in clean_env().items() if not k.startswith("NUMBA_")}
    env["PYTHONPATH"] = str(ROOT)
    env.update(extra)
    return env


def check_run(r: subprocess.CompletedProcess, out: Path) -> dict:
    """The quick start ran every event of the example, wrote its outputs, and needed no warning."""
    stderr = r.stderr.decode()
    assert r.returncode == 0, stderr
    assert "Traceback" not in stderr and "WARNING" not in stderr, stderr
    summary = final_metrics(stderr)
    assert summary["events"] == example_events() and summary["predicted"] > 0
    assert len((out / "out.jsonl").read_bytes().splitlines()) == summary["predicted"]
    return summary


class Pod:
    """The StatefulSet's pod on this machine: each volume a directory, the image's paths mapped to them."""

    def __init__(self, tmp_path: Path, image_cache: Path) -> None:
        self.spec = pod_specs()["statefulset"]
        (self.init,) = self.spec["initContainers"]
        (self.daemon,) = self.spec["containers"]
        self.image_cache = image_cache
        self.volumes = {}
        for m in self.daemon["volumeMounts"] + self.init["volumeMounts"]:
            if not m.get("readOnly"):
                self.volumes[m["name"]] = tmp_path / "volumes" / m["name"]
                self.volumes[m["name"]].mkdir(parents=True, exist_ok=True)

    def path(self, text: str, container: dict) -> str:
        """A path of the container's file system, on this machine."""
        if text.startswith(docker_env()["NUMBA_CACHE_DIR"]) and container is self.init:
            return str(self.image_cache) + text[len(docker_env()["NUMBA_CACHE_DIR"]):]
        for m in container["volumeMounts"]:
            if m["name"] in self.volumes and (text + "/").startswith(m["mountPath"].rstrip("/") + "/"):
                return str(self.volumes[m["name"]]) + text[len(m["mountPath"].rstrip("/")):]
        return text

    def start_init(self) -> None:
        argv = [self.path(a, self.init) for a in self.init["command"]]
        r = read_only_root(argv, list(self.volumes.values()), env=base_env())
        assert r.returncode == 0, r.stderr.decode()

    def daemon_env(self) -> dict[str, str]:
        """The daemon's numba settings: the image's, overridden by the pod's (its paths on this machine)."""
        env = {k: v for k, v in docker_env().items() if k.startswith("NUMBA_")}
        env.update({e["name"]: self.path(e["value"], self.daemon) for e in self.daemon["env"] if "value" in e})
        return env


@needs_namespaces
def test_a_pod_loads_the_kernels_compiled_into_the_image_on_its_read_only_root(tmp_path, image_kernels):
    """The init container copies the image's kernels into the pod's emptyDir, and the daemon, on a read-only
    root, runs the quick start from them with every model: the cache's files are the image's, byte for byte,
    after the runs (a compile at start would have added or rewritten some: the build step must compile every
    kernel a model calls, for the types it passes)."""
    pod = Pod(tmp_path, image_kernels)
    pod.start_init()
    env = pod.daemon_env()
    kernels = Path(env["NUMBA_CACHE_DIR"])
    assert cache_files(kernels).keys() == cache_files(image_kernels).keys()
    before = cache_files(kernels)
    for model in MODELS:
        snapshots = pod.volumes["snapshots"] / model
        out = tmp_path / "out" / model
        snapshots.mkdir()
        out.mkdir(parents=True)
        argv = quick_start(out, "--model", model, "--snapshot-dir", str(snapshots))
        r = read_only_root(argv, [*pod.volumes.values(), out], env=base_env(TMPDIR=str(pod.volumes["tmp"]), **env))
        check_run(r, out)
        assert any(p.suffix == ".snb" for p in snapshots.iterdir())
        assert cache_files(kernels) == before, f"--model {model} compiled at start"


@pytest.mark.slow  # two compiles, to show what the manifests avoid
@needs_namespaces
def test_why_the_pod_copies_the_kernels_and_keeps_the_generic_cpu_name(tmp_path, image_kernels):
    """The two ways a pod would compile at every start. Without NUMBA_CPU_NAME the cache key is the node's
    CPU model: the run compiles (here into the writable copy, which then holds more than the image gave).
    With NUMBA_CACHE_DIR on the image's own, read-only, directory numba passes it over: no cache at all."""
    pod = Pod(tmp_path, image_kernels)
    pod.start_init()
    env = pod.daemon_env()
    kernels = Path(env["NUMBA_CACHE_DIR"])
    before = cache_files(kernels)
    out = tmp_path / "out"
    out.mkdir()
    host_cpu = {k: v for k, v in env.items() if k != "NUMBA_CPU_NAME"}
    check_run(read_only_root(quick_start(out), [*pod.volumes.values(), out], env=base_env(**host_cpu)), out)
    after = cache_files(kernels)
    assert after.keys() > before.keys()  # the host's code, beside the generic code
    # the image's directory, read-only as the pod's root file system is
    image = cache_files(image_kernels)
    r = read_only_root(quick_start(out), [out], env=base_env(**{**env, "NUMBA_CACHE_DIR": str(image_kernels)}))
    assert r.returncode == 0 and r.stderr.decode().count(NO_CACHE_WARNING) == 1, r.stderr.decode()
    assert cache_files(image_kernels) == image


@needs_namespaces
def test_the_systemd_unit_runs_on_a_read_only_root_and_keeps_its_kernels(tmp_path):
    """The unit's ExecStart and Environment on a root read-only but for its StateDirectory= and
    CacheDirectory= (ProtectSystem=strict): the first start compiles the kernels into the cache directory,
    the next (state cleared, so it learns every event again) loads them."""
    service = systemd_unit()["Service"]
    env = {k: rewrite(v, tmp_path) for k, v in
           (item.split("=", 1) for item in shlex.split(service["Environment"]))}
    writable = [Path(rewrite(f"/var/lib/{d}", tmp_path)) for d in service["StateDirectory"].split()]
    writable += [Path(rewrite(f"/var/cache/{d}", tmp_path)) for d in service["CacheDirectory"].split()]
    writable.append(tmp_path / "private-tmp")  # PrivateTmp=yes
    for d in writable:
        d.mkdir(parents=True, exist_ok=True)
    state = writable[0]
    config = Path(rewrite(f"/etc/{service['ConfigurationDirectory']}", tmp_path))
    config.mkdir(parents=True)
    argv = [rewrite(a, tmp_path) for a in exec_start()]
    Path(argv[argv.index("--config") + 1]).write_text(
        f'[run]\ninput = "{EXAMPLE}"\noutput = "{state / "out.jsonl"}"\ndead_letter = "{state / "dead.jsonl"}"\n')
    argv = stream_nb_script() + argv[1:]
    kernels = Path(env["NUMBA_CACHE_DIR"])
    runs = []
    for _ in range(2):
        for p in [state / "out.jsonl", state / "dead.jsonl", *Path(argv[argv.index("--snapshot-dir") + 1]).iterdir()]:
            p.unlink(missing_ok=True)
        r = read_only_root(argv, writable, env=base_env(TMPDIR=str(tmp_path / "private-tmp"), **env))
        check_run(r, state)
        runs.append(cache_files(kernels))
    assert runs[0] and runs[1] == runs[0]


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
