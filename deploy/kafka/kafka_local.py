"""Run a real single-node Apache Kafka 4.x broker (KRaft) from Maven Central jars.

No Docker needed: only a JDK (17+) and Maven.  Stdlib only, so it works before
``pip install``; kafka-python is used for the readiness check when it is importable.

Python API (what tests/conftest.py uses)::

    fetch(cache_dir=None) -> Path        # resolve the jars (cached; no-op when complete)
    start(dir, timeout=90) -> str        # start (or restart) the broker, return "127.0.0.1:PORT"
    stop(dir, timeout=30) -> bool        # SIGTERM (controlled shutdown), SIGKILL after timeout
    status(dir) -> dict

Restart semantics: ``start(dir)`` on a directory that already holds a formatted
broker (``DIR/state.json`` + ``DIR/data/meta.properties``) reuses the same ports,
cluster id and data, so a test can ``stop(dir)`` and ``start(dir)`` mid-stream and
clients keep the same bootstrap address.  Use a fresh directory for a fresh broker.

Files in DIR: server.properties, state.json (ports, cluster id), data/ (log.dirs),
broker.log (appended across restarts), broker.pid, bootstrap.

The CLI is deploy/kafka/kafka-local (``fetch``, ``start``, ``stop``, ``status``, ...).
"""

from __future__ import annotations

import argparse
import atexit
import base64
import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
POM = HERE / "pom.xml"
LOG4J_CONFIG = HERE / "log4j2.properties"
REPO_ROOT = HERE.parent.parent

HOST = "127.0.0.1"
NODE_ID = 1
HEAP_OPTS = ["-Xms512m", "-Xmx1G"]
DEFAULT_START_TIMEOUT = 90.0
DEFAULT_STOP_TIMEOUT = 30.0
COMPLETE_MARKER = ".stream_nb_complete"
READY_LOG_LINE = "Kafka Server started"

__all__ = [
    "KafkaLocalError",
    "kafka_version",
    "default_cache_dir",
    "default_broker_dir",
    "fetch",
    "is_fetched",
    "start",
    "stop",
    "status",
    "stop_all_started",
]


class KafkaLocalError(RuntimeError):
    """The broker could not be fetched, started or stopped (message says why)."""


def _log(msg: str) -> None:
    print(f"kafka-local: {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- fetch


def kafka_version() -> str:
    """The Kafka version pinned in deploy/kafka/pom.xml (property ``kafka.version``)."""
    m = re.search(r"<kafka\.version>\s*([^<\s]+)\s*</kafka\.version>", POM.read_text())
    if not m:
        raise KafkaLocalError(f"no <kafka.version> property in {POM}")
    return m.group(1)


def default_cache_dir() -> Path:
    env = os.environ.get("STREAM_NB_KAFKA_CACHE")
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "stream_nb" / f"kafka-{kafka_version()}"


def default_broker_dir() -> Path:
    env = os.environ.get("STREAM_NB_KAFKA_DIR")
    return Path(env).expanduser() if env else REPO_ROOT / ".kafka"


def _pom_digest() -> str:
    return hashlib.sha256(POM.read_bytes()).hexdigest()


def is_fetched(cache_dir: Path | str | None = None) -> bool:
    """True when cache_dir holds a complete copy resolved from the current pom.xml."""
    cache = Path(cache_dir) if cache_dir else default_cache_dir()
    marker = cache / COMPLETE_MARKER
    try:
        return marker.read_text().strip() == _pom_digest()
    except OSError:
        return False


@contextlib.contextmanager
def _file_lock(path: Path):
    """Exclusive inter-process lock (so parallel test workers don't fetch twice)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - non-POSIX
            yield
            return
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _require_tool(name: str, why: str) -> str:
    exe = shutil.which(name)
    if not exe:
        raise KafkaLocalError(f"`{name}` not found on PATH ({why})")
    return exe


def fetch(cache_dir: Path | str | None = None, *, verbose: bool = False) -> Path:
    """Resolve kafka_2.13 + runtime deps + logging backend into cache_dir; return it.

    Skips when the cache is already complete for the current pom.xml.  Maven's own
    ~/.m2 cache makes a re-resolve cheap too.  verbose=True streams Maven's output
    (so CI logs show the downloads); otherwise it is shown only on failure.
    """
    cache = Path(cache_dir).expanduser() if cache_dir else default_cache_dir()
    if is_fetched(cache):
        if verbose:
            _log(f"jars already in {cache}")
        return cache
    mvn = _require_tool("mvn", "Maven resolves the Kafka jars from Maven Central")
    with _file_lock(cache.parent / f".{cache.name}.lock"):
        if is_fetched(cache):
            return cache
        tmp = Path(tempfile.mkdtemp(prefix=f".{cache.name}.tmp-", dir=cache.parent))
        try:
            cmd = [
                mvn, "-B", "-Dstyle.color=never", "-f", str(POM),
                "dependency:copy-dependencies",
                "-DincludeScope=runtime",
                f"-DoutputDirectory={tmp}",
            ]
            if not verbose:
                cmd.insert(2, "-q")
            _log(f"resolving Kafka {kafka_version()} jars with Maven into {cache} ...")
            t0 = time.monotonic()
            if verbose:
                proc = subprocess.run(cmd, stdin=subprocess.DEVNULL)
                out = ""
            else:
                proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True)
                out = proc.stdout
            if proc.returncode != 0:
                raise KafkaLocalError(
                    f"Maven failed (exit {proc.returncode}) resolving {POM}:\n{out[-4000:]}")
            broker_jar = tmp / f"kafka_2.13-{kafka_version()}.jar"
            if not broker_jar.is_file():
                raise KafkaLocalError(f"Maven finished but {broker_jar.name} is missing in {tmp}")
            (tmp / COMPLETE_MARKER).write_text(_pom_digest() + "\n")
            if cache.exists():
                shutil.rmtree(cache)
            os.replace(tmp, cache)
            _log(f"fetched {len(list(cache.glob('*.jar')))} jars in {time.monotonic() - t0:.1f}s")
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
    return cache


# --------------------------------------------------------------------------- processes

# Broker processes started by this Python process (pid -> Popen), so they get reaped.
_children: dict[int, subprocess.Popen] = {}


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def _port_open(port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=timeout):
            return True
    except OSError:
        return False


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except FileNotFoundError:
        if Path("/proc/self").exists():
            return ""
    except OSError:
        return ""
    try:  # no procfs (macOS)
        return subprocess.run(["ps", "-o", "command=", "-p", str(pid)], capture_output=True,
                              text=True).stdout
    except OSError:
        return ""


def _alive(pid: int) -> bool:
    proc = _children.get(pid)
    if proc is not None:  # a broker this process started: poll() reaps it once exited
        return proc.poll() is None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        if fields[0] == "Z":
            return False
    except (OSError, IndexError):
        pass
    return True


def _read_pid(d: Path) -> int | None:
    try:
        return int((d / "broker.pid").read_text().strip())
    except (OSError, ValueError):
        return None


def _broker_pid(d: Path) -> int | None:
    """PID of the live broker of directory d, or None (stale pid files are ignored)."""
    pid = _read_pid(d)
    if pid is None or not _alive(pid):
        return None
    cmd = _cmdline(pid)
    if "kafka.Kafka" not in cmd or str(d / "server.properties") not in cmd:
        return None  # pid reused by something else
    return pid


def _log_tail(d: Path, n: int = 40, since: int = 0) -> str:
    try:
        with open(d / "broker.log", "rb") as fh:
            fh.seek(since)
            lines = fh.read().decode(errors="replace").splitlines()
    except OSError:
        return "(no broker.log)"
    return "\n".join(lines[-n:])


def _pdeathsig_preexec():
    """Linux: the broker gets SIGTERM if the process that started it dies (no orphans
    after a killed pytest).  Resolved before fork so the child only makes one call."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    PR_SET_PDEATHSIG = 1
    sig = int(signal.SIGTERM)

    def _preexec():
        prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0)

    return _preexec


# --------------------------------------------------------------------------- start/stop


def _cluster_id() -> str:
    """A Kafka Uuid string (URL-safe base64, no padding), as `StorageTool random-uuid`.

    Like Kafka's Uuid.randomUuid(), never one starting with "-": StorageTool's argument
    parser would take it for an option (format then fails, 1 start in 64).
    """
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


def _server_properties(d: Path, state: dict) -> str:
    b, c = state["broker_port"], state["controller_port"]
    props = {
        "process.roles": "broker,controller",
        "node.id": NODE_ID,
        "controller.quorum.voters": f"{NODE_ID}@{HOST}:{c}",
        "listeners": f"PLAINTEXT://{HOST}:{b},CONTROLLER://{HOST}:{c}",
        "advertised.listeners": f"PLAINTEXT://{HOST}:{b}",
        "inter.broker.listener.name": "PLAINTEXT",
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "log.dirs": str(d / "data"),
        "num.partitions": 1,
        "default.replication.factor": 1,
        "min.insync.replicas": 1,
        "auto.create.topics.enable": "true",
        "delete.topic.enable": "true",
        "offsets.topic.replication.factor": 1,
        "offsets.topic.num.partitions": 1,
        "transaction.state.log.replication.factor": 1,
        "transaction.state.log.min.isr": 1,
        "transaction.state.log.num.partitions": 1,
        "share.coordinator.state.topic.replication.factor": 1,
        "share.coordinator.state.topic.min.isr": 1,
        "group.initial.rebalance.delay.ms": 0,
        "num.network.threads": 2,
        "num.io.threads": 4,
        "num.recovery.threads.per.data.dir": 1,
        "log.segment.bytes": 64 * 1024 * 1024,
    }
    lines = ["# Written by deploy/kafka/kafka_local.py; regenerated on every start."]
    lines += [f"{k}={v}" for k, v in props.items()]
    return "\n".join(lines) + "\n"


def _load_or_create_state(d: Path) -> dict:
    """Ports + cluster id; reused when DIR holds formatted storage (restart)."""
    state_file = d / "state.json"
    formatted = (d / "data" / "meta.properties").is_file()
    if formatted and state_file.is_file():
        return json.loads(state_file.read_text())
    if formatted:
        raise KafkaLocalError(
            f"{d}/data is formatted but {state_file} is missing; use a fresh --dir")
    broker_port = _free_port()
    controller_port = _free_port()
    while controller_port == broker_port:
        controller_port = _free_port()
    state = {"broker_port": broker_port, "controller_port": controller_port,
             "cluster_id": _cluster_id(), "kafka_version": kafka_version()}
    state_file.write_text(json.dumps(state, indent=2) + "\n")
    return state


def _java_cmd(cache: Path, *args: str) -> list[str]:
    java = _require_tool("java", "Kafka 4.x needs a JDK/JRE 17+")
    return [java, f"-Dlog4j2.configurationFile={LOG4J_CONFIG}", "-Djava.awt.headless=true",
            "-cp", str(cache / "*"), *args]


def _format_storage(d: Path, cache: Path, state: dict) -> None:
    cmd = _java_cmd(cache, "-Xmx256m", "kafka.tools.StorageTool", "format",
                    "-t", state["cluster_id"], "-c", str(d / "server.properties"))
    proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if proc.returncode != 0 or not (d / "data" / "meta.properties").is_file():
        raise KafkaLocalError(
            f"formatting KRaft storage failed (exit {proc.returncode}):\n"
            f"{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")


def _admin_ready(bootstrap: str) -> tuple[bool, str]:
    """(ready, why-not): a metadata request answers and our broker is unfenced."""
    try:
        from kafka import KafkaAdminClient
    except ImportError:
        return True, ""  # no kafka-python: port + log line are all we can check
    admin = None
    try:
        admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="kafka-local-ready",
                                 request_timeout_ms=5000)
        cluster = admin.describe_cluster()
        brokers = [b for b in cluster.get("brokers", []) if b.get("broker_id") == NODE_ID]
        if not brokers:
            return False, f"broker {NODE_ID} not in metadata yet"
        if brokers[0].get("is_fenced"):
            return False, "broker still fenced"
        return True, ""
    except Exception as exc:  # noqa: BLE001 - any failure just means "not yet"
        return False, f"{type(exc).__name__}: {exc}"
    finally:
        if admin is not None:
            with contextlib.suppress(Exception):
                admin.close()


# Brokers this process started with stop_at_exit=True, stopped by the atexit hook.
_started_dirs: set[Path] = set()


def start(d: Path | str | None = None, *, timeout: float = DEFAULT_START_TIMEOUT,
          cache_dir: Path | str | None = None, stop_at_exit: bool = True,
          die_with_parent: bool | None = None) -> str:
    """Start the broker of directory d (creating/formatting it if new); return bootstrap.

    Idempotent: if the broker of d already runs, waits for readiness and returns its
    bootstrap.  On an existing formatted d, reuses the same ports and data (restart).
    stop_at_exit: stop it from an atexit hook of this Python process (the CLI passes
    False).  die_with_parent (Linux, default = stop_at_exit): the kernel SIGTERMs the
    broker if this process dies without running atexit hooks.
    """
    d = Path(d).expanduser().resolve() if d else default_broker_dir().resolve()
    d.mkdir(parents=True, exist_ok=True)
    cache = fetch(cache_dir)
    state = _load_or_create_state(d)
    bootstrap = f"{HOST}:{state['broker_port']}"
    if die_with_parent is None:
        die_with_parent = stop_at_exit

    pid = _broker_pid(d)
    log_offset = 0
    if pid is None:
        (d / "server.properties").write_text(_server_properties(d, state))
        if not (d / "data" / "meta.properties").is_file():
            _format_storage(d, cache, state)
        for port in (state["broker_port"], state["controller_port"]):
            if _port_open(port):
                raise KafkaLocalError(
                    f"port {port} (from {d}/state.json) is already in use by another process;"
                    " stop it or use a fresh --dir")
        log_path = d / "broker.log"
        log_offset = log_path.stat().st_size if log_path.exists() else 0
        cmd = _java_cmd(cache, *HEAP_OPTS, "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
                        "-XX:+ExitOnOutOfMemoryError", "kafka.Kafka", str(d / "server.properties"))
        with open(log_path, "ab") as log:
            log.write(f"\n===== kafka-local start {time.strftime('%Y-%m-%d %H:%M:%S')} =====\n"
                      .encode())
            log.flush()
            proc = subprocess.Popen(cmd, cwd=d, stdin=subprocess.DEVNULL, stdout=log,
                                    stderr=subprocess.STDOUT, start_new_session=True,
                                    preexec_fn=_pdeathsig_preexec() if die_with_parent else None)
        pid = proc.pid
        _children[pid] = proc
        (d / "broker.pid").write_text(f"{pid}\n")
    if stop_at_exit:
        _started_dirs.add(d)

    deadline = time.monotonic() + timeout
    why = "port not answering"
    while True:
        if not _alive(pid):
            _children.pop(pid, None)
            with contextlib.suppress(OSError):
                (d / "broker.pid").unlink()
            raise KafkaLocalError(
                f"Kafka broker exited during startup; tail of {d / 'broker.log'}:\n"
                f"{_log_tail(d, since=log_offset)}")
        if _port_open(state["broker_port"]):
            ok, why = _admin_ready(bootstrap)
            if ok:
                break
        else:
            why = "port not answering"
        if time.monotonic() > deadline:
            tail = _log_tail(d, since=log_offset)
            stop(d)
            raise KafkaLocalError(
                f"Kafka broker not ready within {timeout:.0f}s ({why}); stopped it. "
                f"Tail of {d / 'broker.log'}:\n{tail}")
        time.sleep(0.25)
    (d / "bootstrap").write_text(bootstrap + "\n")
    return bootstrap


def stop(d: Path | str | None = None, *, timeout: float = DEFAULT_STOP_TIMEOUT) -> bool:
    """SIGTERM the broker of d (controlled shutdown), SIGKILL after timeout.

    Returns True if a broker was running.  Data and ports stay, so start(d) restarts it.
    """
    d = Path(d).expanduser().resolve() if d else default_broker_dir().resolve()
    _started_dirs.discard(d)
    pid = _broker_pid(d)
    if pid is None:
        with contextlib.suppress(OSError):
            (d / "broker.pid").unlink()
        return False

    def _signal(sig: int) -> None:
        try:
            os.killpg(pid, sig)  # its own process group (start_new_session)
        except (ProcessLookupError, PermissionError):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)

    _signal(signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if _alive(pid):
        _log(f"broker {pid} still alive after {timeout:.0f}s; SIGKILL")
        _signal(signal.SIGKILL)
        kill_deadline = time.monotonic() + 10
        while _alive(pid) and time.monotonic() < kill_deadline:
            time.sleep(0.05)
    proc = _children.pop(pid, None)
    if proc is not None:
        with contextlib.suppress(Exception):
            proc.wait(timeout=1)
    with contextlib.suppress(OSError):
        (d / "broker.pid").unlink()
    return True


def status(d: Path | str | None = None) -> dict:
    d = Path(d).expanduser().resolve() if d else default_broker_dir().resolve()
    pid = _broker_pid(d)
    info: dict = {"dir": str(d), "running": pid is not None, "pid": pid}
    state_file = d / "state.json"
    if state_file.is_file():
        state = json.loads(state_file.read_text())
        info["bootstrap"] = f"{HOST}:{state['broker_port']}"
        info["controller"] = f"{HOST}:{state['controller_port']}"
        info["kafka_version"] = state.get("kafka_version")
    return info


@atexit.register
def stop_all_started() -> None:
    """Stop every broker this process started with stop_at_exit=True."""
    for d in list(_started_dirs):
        with contextlib.suppress(Exception):
            stop(d)


# --------------------------------------------------------------------------- CLI


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="kafka-local",
        description="Run a single-node Apache Kafka (KRaft) broker from Maven Central jars.")
    sub = p.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("fetch", help="resolve the broker jars into the cache (no-op if complete)")
    f.add_argument("--cache", help="cache dir (default $STREAM_NB_KAFKA_CACHE or "
                                   "~/.cache/stream_nb/kafka-<version>)")
    dir_help = "broker dir (default $STREAM_NB_KAFKA_DIR or <repo>/.kafka)"
    s = sub.add_parser("start", help="start (or restart, same ports+data) the broker; "
                                     "prints the bootstrap address last")
    s.add_argument("--dir", help=dir_help)
    s.add_argument("--cache", help="jar cache dir")
    s.add_argument("--timeout", type=float, default=DEFAULT_START_TIMEOUT)
    t = sub.add_parser("stop", help="controlled shutdown (SIGTERM, SIGKILL after --timeout)")
    t.add_argument("--dir", help=dir_help)
    t.add_argument("--timeout", type=float, default=DEFAULT_STOP_TIMEOUT)
    st = sub.add_parser("status", help="show whether the broker of --dir runs, and where")
    st.add_argument("--dir", help=dir_help)
    sub.add_parser("version", help="print the pinned Kafka version")
    sub.add_parser("cache-dir", help="print the jar cache dir")
    a = p.parse_args(argv)
    try:
        if a.cmd == "fetch":
            print(fetch(a.cache, verbose=True))
        elif a.cmd == "start":
            t0 = time.monotonic()
            bootstrap = start(a.dir, timeout=a.timeout, cache_dir=a.cache, stop_at_exit=False)
            _log(f"broker ready in {time.monotonic() - t0:.1f}s "
                 f"(dir {Path(a.dir or default_broker_dir()).resolve()})")
            print(bootstrap)
        elif a.cmd == "stop":
            if not stop(a.dir, timeout=a.timeout):
                _log("no broker running")
        elif a.cmd == "status":
            info = status(a.dir)
            print(json.dumps(info, indent=2))
            return 0 if info["running"] else 3
        elif a.cmd == "version":
            print(kafka_version())
        elif a.cmd == "cache-dir":
            print(default_cache_dir())
    except KafkaLocalError as exc:
        _log(f"error: {exc}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
