"""deploy/: the Dockerfile, the compose file, the Kubernetes manifests and the systemd unit agree with the code.

No Docker engine or cluster is needed: every file is parsed, every
``stream-nb`` command line in it goes through the real argument parser and
settings resolution (flags, environment, TOML file), every TOML key must be a
known setting, and ports and paths must agree across the files. Two tests run
the exact command lines of the image and of the systemd unit (paths and ports
rewritten to a temporary directory) to show that they start and work, and the
image's HEALTHCHECK command against the running daemon.
"""

from __future__ import annotations

import configparser
import contextlib
import hashlib
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path, PurePosixPath

import pytest
import yaml

from stream_nb.cli import build_parser
from stream_nb.daemon import build_model, connector_plan, engine_config
from stream_nb.settings import SETTINGS, resolve_settings
from stream_nb.settings import read_config_file as _read_config_file
from stream_nb.engine import check_config

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
EXAMPLE = ROOT / "examples" / "events.jsonl"
IMAGE_CONFIG = DEPLOY / "stream-nb.toml"


# ----------------------------------------------------------------------- parsing the files


def dockerfile() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of deploy/Dockerfile, continuation lines joined, comments dropped."""
    out: list[tuple[str, str]] = []
    pending = ""
    for raw in (DEPLOY / "Dockerfile").read_text().splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line, pending = pending + line, ""
        instruction, _, rest = line.partition(" ")
        out.append((instruction.upper(), rest.strip()))
    return out


def instructions(name: str) -> list[str]:
    return [rest for instruction, rest in dockerfile() if instruction == name]


def final_stage() -> list[tuple[str, str]]:
    lines = dockerfile()
    last_from = max(i for i, (instruction, _) in enumerate(lines) if instruction == "FROM")
    return lines[last_from:]


def docker_env() -> dict[str, str]:
    env: dict[str, str] = {}
    for instruction, rest in final_stage():
        if instruction == "ENV":
            for item in shlex.split(rest):
                key, _, value = item.partition("=")
                env[key] = value
    return env


def docker_json(name: str) -> list[str]:
    (value,) = [rest for instruction, rest in final_stage() if instruction == name]
    return json.loads(value)


def healthcheck() -> tuple[dict[str, str], list[str]]:
    (rest,) = instructions("HEALTHCHECK")
    options, _, command = rest.partition("CMD ")
    return dict(o.lstrip("-").split("=", 1) for o in options.split()), json.loads(command)


def docker_volumes() -> list[str]:
    (volume,) = instructions("VOLUME")
    return json.loads(volume)


def compose() -> dict:
    return yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())


def k8s() -> dict[str, dict]:
    docs = {}
    for path in sorted((DEPLOY / "k8s").glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc is not None:
                docs[doc["kind"]] = doc
    return docs


def systemd_unit() -> configparser.ConfigParser:
    unit = configparser.ConfigParser(interpolation=None, strict=True, delimiters=("=",))
    unit.optionxform = str  # systemd keys are case-sensitive
    unit.read_string((DEPLOY / "systemd" / "stream-nb.service").read_text())
    return unit


def configmap_toml() -> str:
    return k8s()["ConfigMap"]["data"]["stream-nb.toml"]


def toml_settings(text: str, tmp_path: Path, name: str) -> dict:
    """The settings of a TOML text, read by the daemon's own config loader (unknown keys fail)."""
    path = tmp_path / name
    path.write_text(text)
    return _read_config_file(str(path))


def run_help() -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        build_parser().parse_args(["run", "--help"])
    return out.getvalue()


def run_argv(argv: list[str]) -> list[str]:
    """The arguments after `stream-nb`, checked: `run`, flags listed by `stream-nb run --help`, a valid parse."""
    assert argv and argv[0] == "run", argv
    listed = set(re.findall(r"(--[a-z][a-z-]*)", run_help()))
    unknown = flags(argv) - listed
    assert not unknown, f"not flags of stream-nb run: {sorted(unknown)}"
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            build_parser().parse_args(argv)
        except SystemExit:
            pytest.fail(f"stream-nb {' '.join(argv)}: {err.getvalue()}")
    return argv


def flags(argv: list[str]) -> set[str]:
    return {a.split("=", 1)[0] for a in argv if a.startswith("--")}


RUN_FLAGS = {s.flag for s in SETTINGS} | {"--config", "--print-config", "--help"}


def container(ss: dict) -> dict:
    (c,) = ss["spec"]["template"]["spec"]["containers"]
    return c


def check_resolves(argv: list[str], env: dict[str, str]) -> dict:
    """Resolve flags + environment + config file as `stream-nb run` does, and build every piece."""
    settings = resolve_settings(build_parser().parse_args(argv), env=env)
    plan = connector_plan(settings)
    check_config(engine_config(settings))
    build_model(settings)
    return {"settings": settings, "plan": plan}


# ----------------------------------------------------------------------- each file parses


def test_every_file_parses():
    assert dockerfile()
    assert set(compose()["services"]) == {"kafka", "topics", "stream-nb", "producer"}
    assert set(k8s()) == {"ConfigMap", "Service", "StatefulSet", "Kustomization"}
    kustomization = yaml.safe_load((DEPLOY / "k8s" / "kustomization.yaml").read_text())
    assert all((DEPLOY / "k8s" / r).is_file() for r in kustomization["resources"])
    tomllib.loads(configmap_toml())
    tomllib.loads(IMAGE_CONFIG.read_text())
    assert systemd_unit().sections() == ["Unit", "Service", "Install"]


# ----------------------------------------------------------------------- the image


def test_dockerfile_is_multi_stage_slim_non_root_with_a_healthcheck():
    froms = instructions("FROM")
    (arg,) = [a for a in instructions("ARG") if a.startswith("PYTHON_IMAGE=")]
    assert arg == "PYTHON_IMAGE=python:3.11-slim"
    assert len(froms) == 2 and froms[0] == "${PYTHON_IMAGE} AS build" and froms[1] == "${PYTHON_IMAGE}"
    (user,) = [rest for instruction, rest in final_stage() if instruction == "USER"]
    assert user.split(":")[0] not in ("root", "0")
    assert docker_json("ENTRYPOINT") == ["stream-nb"]
    options, command = healthcheck()
    assert command[:2] == ["python", "-c"]  # slim has no curl
    assert "/healthz" in command[2]
    assert {"interval", "timeout", "retries"} <= options.keys()
    # every file the image copies from the build context exists
    for instruction, rest in dockerfile():
        if instruction == "COPY" and not rest.startswith("--from"):
            for src in shlex.split(rest)[:-1]:
                assert (ROOT / src).exists(), src


def test_the_image_reads_its_defaults_file_and_agrees_on_port_and_snapshot_volume(tmp_path):
    env = docker_env()
    (copy,) = [rest for instruction, rest in final_stage() if instruction == "COPY" and "stream-nb.toml" in rest]
    src, dest = shlex.split(copy)
    assert (ROOT / src) == IMAGE_CONFIG and env["STREAM_NB_CONFIG"] == dest
    defaults = _read_config_file(str(IMAGE_CONFIG))
    assert defaults["metrics_host"] == "0.0.0.0"  # reachable from outside the container
    (expose,) = instructions("EXPOSE")
    assert int(expose) == defaults["metrics_port"]
    _, command = healthcheck()
    assert f"'{defaults['metrics_port']}'" in command[2]  # the HEALTHCHECK's default port
    assert defaults["snapshot_dir"] in docker_volumes()
    argv = run_argv(docker_json("CMD"))
    resolved = check_resolves(argv, {"STREAM_NB_CONFIG": str(IMAGE_CONFIG)})
    assert resolved["settings"]["metrics_port"] == defaults["metrics_port"]
    assert resolved["plan"].module == "connectors.jsonl"  # no broker configured: JSON lines on stdin


# ----------------------------------------------------------------------- compose


def test_compose_runs_kraft_kafka_the_daemon_and_a_replaying_producer():
    services = compose()["services"]
    kafka = services["kafka"]
    assert kafka["image"].startswith("apache/kafka:")
    assert "controller" in kafka["environment"]["KAFKA_PROCESS_ROLES"]  # KRaft: no ZooKeeper
    assert "kafka:9092" in kafka["environment"]["KAFKA_ADVERTISED_LISTENERS"]
    daemon = services["stream-nb"]
    build = daemon["build"]
    assert (DEPLOY / build["context"] / build["dockerfile"]).resolve() == (DEPLOY / "Dockerfile").resolve()
    argv = run_argv(daemon["command"])
    assert flags(argv) <= RUN_FLAGS
    settings = check_resolves(argv, {"STREAM_NB_CONFIG": str(IMAGE_CONFIG)})["settings"]
    assert settings["bootstrap_servers"] == ["kafka:9092"]
    # the topics service creates the input topic the daemon reads
    topics = services["topics"]["command"]
    assert topics[topics.index("--topic") + 1] == settings["input_topic"]
    # the producer replays the example file into that topic
    producer = services["producer"]
    (mount,) = producer["volumes"]
    host, inside, *_ = mount.split(":")
    assert (DEPLOY / host).resolve() == EXAMPLE
    script = " ".join(producer["command"])
    assert f"--topic {settings['input_topic']}" in script and f"< {inside}" in script
    assert "--bootstrap-server kafka:9092" in script
    # the metrics port is published, the snapshot volume mounted where the image keeps snapshots
    defaults = _read_config_file(str(IMAGE_CONFIG))
    assert [p.split(":")[-1] for p in daemon["ports"]] == [str(defaults["metrics_port"])]
    volumes = dict(reversed(v.split(":")[:2]) for v in daemon["volumes"])
    assert volumes.keys() == {defaults["snapshot_dir"], docker_env()["NUMBA_CACHE_DIR"]}
    assert set(volumes.values()) <= compose()["volumes"].keys()  # named: Docker fills them from the image


# ----------------------------------------------------------------------- Kubernetes


def test_configmap_holds_only_known_settings_and_the_pod_runs_it(tmp_path):
    manifests = k8s()
    settings = toml_settings(configmap_toml(), tmp_path, "configmap.toml")
    assert settings.keys() <= {s.name for s in SETTINGS}
    c = container(manifests["StatefulSet"])
    argv = run_argv(c["args"])
    config_path = PurePosixPath(argv[argv.index("--config") + 1])
    (config_mount,) = [m for m in c["volumeMounts"] if m["name"] == "config"]
    assert PurePosixPath(config_mount["mountPath"]) == config_path.parent
    (config_volume,) = [v for v in manifests["StatefulSet"]["spec"]["template"]["spec"]["volumes"]
                        if v["name"] == "config"]
    assert config_volume["configMap"]["name"] == manifests["ConfigMap"]["metadata"]["name"]
    assert config_path.name in manifests["ConfigMap"]["data"]
    local = tmp_path / "etc" / config_path.name
    local.parent.mkdir()
    local.write_text(configmap_toml())
    argv = [str(local) if a == str(config_path) else a for a in argv]
    resolved = check_resolves(argv, {})
    assert resolved["plan"].module == "connectors.kafka"
    assert resolved["settings"]["metrics_host"] == "0.0.0.0"


def test_kubernetes_ports_probes_and_snapshot_volume_agree(tmp_path):
    manifests = k8s()
    settings = toml_settings(configmap_toml(), tmp_path, "configmap.toml")
    port = settings["metrics_port"]
    ss = manifests["StatefulSet"]
    c = container(ss)
    (named,) = c["ports"]
    assert named["containerPort"] == port
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": named["name"]}
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": named["name"]}
    assert {"cpu", "memory"} <= c["resources"]["requests"].keys() <= c["resources"]["limits"].keys() | {"cpu"}
    assert {"cpu", "memory"} <= c["resources"]["limits"].keys()
    # the Service selects the pods and exposes the metrics port
    service = manifests["Service"]
    assert ss["spec"]["serviceName"] == service["metadata"]["name"]
    assert service["spec"]["selector"].items() <= ss["spec"]["template"]["metadata"]["labels"].items()
    assert ss["spec"]["selector"]["matchLabels"].items() <= ss["spec"]["template"]["metadata"]["labels"].items()
    (service_port,) = service["spec"]["ports"]
    assert service_port["port"] == port and service_port["targetPort"] == named["name"]
    assert service["metadata"]["annotations"]["prometheus.io/port"] == str(port)
    # snapshots on the persistent volume claim, where the settings put them
    (claim,) = ss["spec"]["volumeClaimTemplates"]
    (mount,) = [m for m in c["volumeMounts"] if m["name"] == claim["metadata"]["name"]]
    assert mount["mountPath"] == settings["snapshot_dir"]
    # the pod runs as the image's user, so the snapshot volume is writable
    pod_security = ss["spec"]["template"]["spec"]["securityContext"]
    (useradd,) = [r for i, r in final_stage() if i == "RUN" and "useradd" in r]
    uid = re.search(r"--uid (\d+)", useradd).group(1)
    assert str(pod_security["runAsUser"]) == uid and str(pod_security["fsGroup"]) == re.search(
        r"--gid (\d+)", useradd).group(1)
    # the grace period covers a flush (delivery_timeout_ms, 120 s)
    assert ss["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] > 120


# ----------------------------------------------------------------------- systemd


def exec_start() -> list[str]:
    return shlex.split(systemd_unit()["Service"]["ExecStart"])


def test_systemd_unit_has_what_a_daemon_needs(tmp_path):
    unit = systemd_unit()
    service = unit["Service"]
    assert service["Restart"] == "on-failure"
    assert service["KillSignal"] == "SIGTERM"
    assert int(service["TimeoutStopSec"]) > 120  # a flush may take delivery_timeout_ms
    assert "2" in service["RestartPreventExitStatus"].split()  # invalid settings: do not loop
    assert unit["Install"]["WantedBy"] == "multi-user.target"
    argv = exec_start()
    assert PurePosixPath(argv[0]).name == "stream-nb"
    argv = run_argv(argv[1:])
    assert flags(argv) <= RUN_FLAGS
    config = PurePosixPath(argv[argv.index("--config") + 1])
    assert config.parent == PurePosixPath("/etc") / service["ConfigurationDirectory"]
    snapshots = argv[argv.index("--snapshot-dir") + 1]
    state_dirs = ["/var/lib/" + d for d in service["StateDirectory"].split()]
    assert snapshots in state_dirs  # systemd creates it, owned by the service's user
    (tmp_path / "empty.toml").write_text("[run]\n")
    settings = check_resolves([str(tmp_path / "empty.toml") if a == str(config) else a for a in argv], {})
    assert settings["settings"]["metrics_host"] == "127.0.0.1"  # a host service: local scraping by default


# ----------------------------------------------------------------------- read-only, non-root, the kernels' cache


KERNELS_BUILD = "python -m stream_nb.kernels"


def image_user() -> tuple[str, str]:
    """The uid and gid the image's user is created with."""
    (useradd,) = [r for i, r in final_stage() if i == "RUN" and "useradd" in r]
    return re.search(r"--uid (\d+)", useradd).group(1), re.search(r"--gid (\d+)", useradd).group(1)


def test_the_image_compiles_the_kernels_for_a_generic_cpu_into_a_volume_its_user_owns():
    stage = final_stage()
    at = {line: i for i, line in enumerate(stage)}
    build = ("RUN", KERNELS_BUILD)
    assert build in at
    # after the package is installed, as the image's (non-root) user, so that the cache belongs to it
    (install,) = [i for i, (instruction, rest) in enumerate(stage) if instruction == "RUN" and "pip install" in rest]
    (user,) = [i for i, (instruction, _) in enumerate(stage) if instruction == "USER"]
    assert install < user < at[build]
    # with the run time's environment: a CPU name that every node shares, the cache where the volume is
    env_before = {}
    for instruction, rest in stage[:at[build]]:
        if instruction == "ENV":
            env_before.update(item.partition("=")[::2] for item in shlex.split(rest))
    assert env_before["NUMBA_CPU_NAME"] == docker_env()["NUMBA_CPU_NAME"] == "generic"
    cache = env_before["NUMBA_CACHE_DIR"]
    assert cache == docker_env()["NUMBA_CACHE_DIR"]
    # a volume (a writable copy: numba passes over a cache directory it cannot write to), declared after the
    # build step (Docker discards what a later step writes into a volume), created and owned by the user
    (volume,) = [i for i, (instruction, _) in enumerate(stage) if instruction == "VOLUME"]
    assert cache in docker_volumes() and volume > at[build]
    (useradd,) = [r for i, r in stage if i == "RUN" and "useradd" in r]
    created = shlex.split(useradd.split("mkdir -p", 1)[1].split("&&")[0])
    owned = shlex.split(useradd.split("chown -R stream-nb:stream-nb", 1)[1].split("&&")[0])
    assert cache in created and any(PurePosixPath(cache).is_relative_to(o) for o in owned)


def pod_specs() -> dict[str, dict]:
    group = yaml.safe_load((DEPLOY / "k8s" / "group" / "deployment.yaml").read_text())
    return {"statefulset": k8s()["StatefulSet"]["spec"]["template"]["spec"], "group": group["spec"]["template"]["spec"]}


@pytest.mark.parametrize("name", ["statefulset", "group"])
def test_pods_run_read_only_and_non_root_with_the_image_kernels_copied_to_a_writable_volume(name):
    spec = pod_specs()[name]
    uid, gid = image_user()
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert (str(spec["securityContext"]["runAsUser"]), str(spec["securityContext"]["runAsGroup"])) == (uid, gid)
    (init,) = spec["initContainers"]
    (daemon,) = spec["containers"]
    for c in (init, daemon):
        assert c["image"] == daemon["image"]  # the init container copies from the daemon's own image
        assert c["securityContext"]["readOnlyRootFilesystem"] is True
        assert c["securityContext"]["allowPrivilegeEscalation"] is False
        assert c["securityContext"]["capabilities"]["drop"] == ["ALL"]
    volumes = {v["name"]: v for v in spec["volumes"]}
    writable = {m["mountPath"]: m["name"] for m in daemon["volumeMounts"] if not m.get("readOnly")}
    # each a pod volume (not in volumes: the StatefulSet's claim template); no configMap or secret is writable
    assert all(n not in volumes or "emptyDir" in volumes[n] for n in writable.values())
    assert "/tmp" in writable
    # the daemon's numba cache: the image's, on an emptyDir that the init container filled from the image
    env = {e["name"]: e.get("value") for e in daemon["env"]}
    image = docker_env()
    assert env["NUMBA_CACHE_DIR"] == image["NUMBA_CACHE_DIR"] and env["NUMBA_CPU_NAME"] == image["NUMBA_CPU_NAME"]
    kernels = writable[env["NUMBA_CACHE_DIR"]]
    assert volumes[kernels] == {"name": kernels, "emptyDir": {}}
    (init_mount,) = init["volumeMounts"]
    assert init_mount["name"] == kernels
    assert init["command"] == ["cp", "-R", image["NUMBA_CACHE_DIR"] + "/.", init_mount["mountPath"] + "/"]


def test_compose_runs_the_daemon_read_only_with_its_writable_volumes():
    daemon = compose()["services"]["stream-nb"]
    assert daemon["read_only"] is True and "/tmp" in daemon["tmpfs"]
    assert "user" not in daemon  # the image's non-root user
    (user,) = [rest for instruction, rest in final_stage() if instruction == "USER"]
    assert user.split(":")[0] not in ("root", "0")


def test_the_systemd_unit_is_read_only_but_for_its_state_and_kernel_cache():
    service = systemd_unit()["Service"]
    assert service["DynamicUser"] == "yes" and "User" not in service  # a non-root user of its own
    assert service["ProtectSystem"] == "strict"
    env = dict(item.split("=", 1) for item in shlex.split(service["Environment"]))
    cache = PurePosixPath(env["NUMBA_CACHE_DIR"])
    assert any(cache.is_relative_to(PurePosixPath("/var/cache") / d) for d in service["CacheDirectory"].split())
    snapshots = exec_start()[exec_start().index("--snapshot-dir") + 1]
    assert any(PurePosixPath(snapshots).is_relative_to(PurePosixPath("/var/lib") / d)
               for d in service["StateDirectory"].split())


# ----------------------------------------------------------------------- the command lines start


def stream_nb_script() -> list[str]:
    script = Path(sys.executable).with_name("stream-nb")
    return [str(script)] if script.exists() else [sys.executable, "-m", "stream_nb.cli"]


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAM_NB_")}
    env.update(extra)
    return env


def rewrite(text: str, tmp_path: Path) -> str:
    """Container and host paths into the temporary directory; the fixed port to 0 (any free port)."""
    return (text.replace("/etc/stream-nb", str(tmp_path / "etc"))
            .replace("/var/lib/stream-nb", str(tmp_path / "var"))
            .replace("/var/cache/stream-nb", str(tmp_path / "cache"))
            .replace("9477", "0"))


def example_events() -> int:
    """Events in the example file (its blank lines are not events)."""
    return sum(1 for line in EXAMPLE.read_bytes().splitlines() if line.strip())


def final_metrics(stderr: str) -> dict:
    for line in reversed(stderr.splitlines()):
        if line.startswith("{"):  # --log-format json
            if json.loads(line).get("event") == "shutdown":
                return json.loads(line)["metrics"]
            continue
        found = re.search(r"; metrics (\{.*\})", line)
        if found:
            return json.loads(found.group(1))
    raise AssertionError(f"no final metrics line:\n{stderr}")


def cache_files(root: Path) -> dict[str, tuple[int, int, str]]:
    """Each file under a numba cache directory: size, modification time, digest (a compile changes them)."""
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
            for p in sorted(root.rglob("*")) if p.is_file()}


_IMAGE_KERNELS: list[Path] = []  # built once per session, for this module and tests/test_deploy_cache.py


@pytest.fixture
def image_kernels(tmp_path_factory) -> Path:
    """The image's numba cache: the Dockerfile's build step, run with the image's environment (its paths in a
    temporary directory) as ``docker build`` runs it."""
    if not _IMAGE_KERNELS:
        _IMAGE_KERNELS.append(build_image_kernels(tmp_path_factory.mktemp("image")))
    return _IMAGE_KERNELS[0]


def build_image_kernels(base: Path) -> Path:
    env = {k: rewrite(v, base) for k, v in docker_env().items()}
    cache = Path(env["NUMBA_CACHE_DIR"])
    cache.mkdir(parents=True)
    python, *args = shlex.split(KERNELS_BUILD)
    assert python == "python"
    r = subprocess.run([sys.executable, *args], env=clean_env(**env), capture_output=True, timeout=900, cwd=base)
    assert r.returncode == 0 and "stream_nb kernels compiled in" in r.stdout.decode(), r.stderr.decode()
    assert cache_files(cache)
    return cache


def test_the_image_command_starts_and_its_healthcheck_passes(tmp_path, image_kernels):
    (tmp_path / "etc").mkdir()
    (tmp_path / "var" / "snapshots").mkdir(parents=True)
    env = {k: rewrite(v, tmp_path) for k, v in docker_env().items()}
    # the container's kernel volume, which Docker fills from the image
    cache = Path(env["NUMBA_CACHE_DIR"])
    shutil.copytree(image_kernels, cache)
    kernels = cache_files(cache)
    (copy,) = [rest for instruction, rest in final_stage() if instruction == "COPY" and "stream-nb.toml" in rest]
    src, dest = shlex.split(copy)
    Path(rewrite(dest, tmp_path)).write_text(rewrite((ROOT / src).read_text(), tmp_path))
    argv = stream_nb_script() + docker_json("CMD")  # ENTRYPOINT ["stream-nb"] + CMD
    out = tmp_path / "stdout"
    with open(out, "wb") as stdout:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=stdout, stderr=subprocess.PIPE,
                                env=clean_env(**env), cwd=tmp_path)
    try:
        lines = []
        while not lines or lines[-1].get("event") != "http":
            line = proc.stderr.readline()
            assert line, f"the daemon exited: {proc.wait()}"
            lines.append(json.loads(line))  # the image logs JSON
        port = lines[-1]["port"]
        proc.stdin.write(EXAMPLE.read_bytes())
        proc.stdin.flush()
        _, command = healthcheck()
        check = [sys.executable if command[0] == "python" else command[0], command[1],
                 command[2].replace("'9477'", f"'{port}'")]
        assert subprocess.run(check, env=clean_env(), timeout=30).returncode == 0
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0
        summary = final_metrics(proc.stderr.read().decode())
        assert summary["events"] == example_events() and summary["dead_letters"] > 0
        assert len(out.read_bytes().splitlines()) == summary["predicted"] == example_events() - summary["dead_letters"]
        assert any(p.suffix == ".snb" for p in (tmp_path / "var" / "snapshots").iterdir())
        assert cache_files(cache) == kernels  # loaded from the image's cache, not compiled again
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # and once the daemon is gone, the same healthcheck fails
    assert subprocess.run(check, env=clean_env(), capture_output=True, timeout=30).returncode != 0


def test_the_systemd_command_starts_and_runs_over_a_small_file(tmp_path):
    (tmp_path / "etc").mkdir()
    (tmp_path / "var" / "snapshots").mkdir(parents=True)
    (tmp_path / "etc" / "stream-nb.toml").write_text(
        f'[run]\ninput = "{EXAMPLE}"\noutput = "{tmp_path / "out.jsonl"}"\n'
        f'dead_letter = "{tmp_path / "dead.jsonl"}"\nmodel = "tan"\n')
    argv = [rewrite(a, tmp_path) for a in exec_start()]
    argv = stream_nb_script() + argv[1:]
    r = subprocess.run(argv, capture_output=True, env=clean_env(), timeout=120, cwd=tmp_path)
    assert r.returncode == 0, r.stderr.decode()
    assert "serving /metrics, /healthz and /readyz on http://127.0.0.1:" in r.stderr.decode()
    summary = final_metrics(r.stderr.decode())
    assert summary["events"] == example_events()
    assert len((tmp_path / "out.jsonl").read_bytes().splitlines()) == summary["predicted"]
    assert len((tmp_path / "dead.jsonl").read_bytes().splitlines()) == summary["dead_letters"] > 0
    assert any(p.suffix == ".snb" for p in (tmp_path / "var" / "snapshots").iterdir())
