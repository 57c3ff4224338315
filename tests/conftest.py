"""Shared pytest fixtures: a real Apache Kafka broker for ``@pytest.mark.kafka`` tests.

Fixtures
--------
``kafka_broker`` (session)
    A :class:`KafkaBroker`. Where it comes from, first match wins:

    1. env ``KAFKA_BOOTSTRAP_SERVERS`` (an external broker; checked to answer);
    2. a testcontainers ``KafkaContainer`` when a Docker engine answers a ping
       (image: env ``STREAM_NB_KAFKA_IMAGE``, default ``confluentinc/cp-kafka:8.0.0``);
    3. a local broker from Maven Central jars, run by ``deploy/kafka/kafka_local.py``
       in a session temp dir and stopped at session end (needs ``java`` 17+ and ``mvn``).

    env ``STREAM_NB_KAFKA_BACKEND=local`` skips the Docker probe (``docker`` forces
    testcontainers). If no broker can be had the tests **skip** with the reason,
    unless env ``STREAM_NB_REQUIRE_KAFKA=1`` (set by CI): then they **fail**.

    ``kafka_broker.stop()`` / ``.start()`` / ``.restart()`` stop and restart the *same*
    broker (same bootstrap address, same data) for fault tests, and ``.freeze()`` /
    ``.thaw()`` suspend it (SIGSTOP: requests sent to it are never answered) and let it
    go on; only the local broker supports them (``.restartable``), elsewhere these calls
    skip the test. A test that
    stops the broker must start it again (it is also restarted automatically after
    that test, so later tests still get a broker).

``kafka_bootstrap_servers`` (session)
    The bootstrap string, e.g. ``"127.0.0.1:40123"``.

``kafka_topic_factory`` (function)
    ``make(partitions=1, *, prefix="t", configs=None) -> str`` creates a uniquely
    named topic (replication factor 1), waits until every partition has a leader,
    and deletes the topics it made after the test.

Tests using these fixtures are marked ``kafka`` automatically; mark them explicitly
anyway (``@pytest.mark.kafka``) so ``-m "not kafka"`` reads right in the file.

The ``slow`` marker (``@pytest.mark.slow``) is on the long fault, fuzz and
benchmark tests that need no broker; ``python -m pytest -m "not kafka and not
slow"`` is the quick local subset (the README's *Tests* section says how long it
takes). CI runs everything.
"""

from __future__ import annotations

import importlib.util
import os
import re
import signal
import sys
import time
import uuid
import warnings
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
KAFKA_LOCAL_PATH = REPO_ROOT / "deploy" / "kafka" / "kafka_local.py"
KAFKA_FIXTURES = ("kafka_broker", "kafka_bootstrap_servers", "kafka_topic_factory")


def load_kafka_local():
    """Import deploy/kafka/kafka_local.py (deploy/ is not a package) as ``kafka_local``."""
    mod = sys.modules.get("kafka_local")
    if mod is not None:
        return mod
    spec = importlib.util.spec_from_file_location("kafka_local", KAFKA_LOCAL_PATH)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["kafka_local"] = mod
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        sys.modules.pop("kafka_local", None)
        raise
    return mod


def _kafka_required() -> bool:
    return os.environ.get("STREAM_NB_REQUIRE_KAFKA", "").strip().lower() in ("1", "true", "yes")


def _unavailable(reason: str):
    if _kafka_required():
        pytest.fail(f"Kafka broker required (STREAM_NB_REQUIRE_KAFKA=1) but unavailable: {reason}",
                    pytrace=False)
    pytest.skip(f"no Kafka broker: {reason} (set STREAM_NB_REQUIRE_KAFKA=1 to fail instead)")


def _check_bootstrap(bootstrap: str, timeout: float = 30.0) -> str | None:
    """None if a metadata request to bootstrap succeeds within timeout, else why not."""
    from kafka import KafkaAdminClient

    deadline = time.monotonic() + timeout
    why = "no answer"
    while time.monotonic() < deadline:
        admin = None
        try:
            admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="stream_nb-tests-probe",
                                     request_timeout_ms=5000)
            if admin.describe_cluster().get("brokers"):
                return None
            why = "metadata lists no brokers"
        except Exception as exc:  # noqa: BLE001
            why = f"{type(exc).__name__}: {exc}"
        finally:
            if admin is not None:
                try:
                    admin.close()
                except Exception:  # noqa: BLE001
                    pass
        time.sleep(0.5)
    return why


def _docker_answers(timeout: float = 3.0) -> bool:
    """Cheap, bounded probe for a Docker engine (never hangs longer than ~timeout)."""
    try:
        import docker
    except ImportError:
        return False
    client = None
    try:
        client = docker.from_env(timeout=timeout)
        return bool(client.ping())
    except Exception:  # noqa: BLE001 - no engine, no socket, no permission, ...
        return False
    finally:
        if client is not None:
            try:
                client.close()
            except Exception:  # noqa: BLE001
                pass


class KafkaBroker:
    """The session's broker. ``kind`` is "env", "testcontainers" or "local"."""

    def __init__(self, kind: str, bootstrap_servers: str, *, directory: Path | None = None,
                 container=None):
        self.kind = kind
        self.bootstrap_servers = bootstrap_servers
        self.dir = directory
        self._container = container
        self._stopped = self._frozen = False

    @property
    def restartable(self) -> bool:
        return self.kind == "local"

    def _require_restartable(self) -> None:
        if not self.restartable:
            pytest.skip(f"stopping/restarting the broker needs the local broker, "
                        f"this session uses the {self.kind} broker")

    def is_running(self) -> bool:
        if self.kind != "local":
            return True
        return bool(load_kafka_local().status(self.dir)["running"])

    def stop(self, timeout: float = 30.0) -> None:
        """Controlled shutdown (SIGTERM); data and ports are kept for start()."""
        self._require_restartable()
        load_kafka_local().stop(self.dir, timeout=timeout)
        self._stopped = True

    def start(self, timeout: float = 90.0) -> str:
        """(Re)start the same broker: same bootstrap address, same data."""
        self._require_restartable()
        bootstrap = load_kafka_local().start(self.dir, timeout=timeout)
        assert bootstrap == self.bootstrap_servers, (bootstrap, self.bootstrap_servers)
        self._stopped = False
        return bootstrap

    def restart(self) -> str:
        self.stop()
        return self.start()

    def freeze(self) -> None:
        """Suspend the broker (SIGSTOP): connections stay open and no request is answered until :meth:`thaw`."""
        self._require_restartable()
        os.kill(load_kafka_local().status(self.dir)["pid"], signal.SIGSTOP)
        self._frozen = True

    def thaw(self) -> None:
        """Let a frozen broker go on (SIGCONT)."""
        self._require_restartable()
        os.kill(load_kafka_local().status(self.dir)["pid"], signal.SIGCONT)
        self._frozen = False

    def ensure_running(self) -> None:
        if self._frozen:
            self.thaw()
        if self.kind == "local" and (self._stopped or not self.is_running()):
            self.start()

    def close(self) -> None:
        if self._frozen:
            self.thaw()
        if self.kind == "local":
            load_kafka_local().stop(self.dir)
        elif self._container is not None:
            self._container.stop()

    def __repr__(self) -> str:
        return f"KafkaBroker(kind={self.kind!r}, bootstrap_servers={self.bootstrap_servers!r})"


def _testcontainers_broker() -> KafkaBroker:
    try:
        from testcontainers.community.kafka import KafkaContainer
    except ImportError:
        from testcontainers.kafka import KafkaContainer
    image = os.environ.get("STREAM_NB_KAFKA_IMAGE", "confluentinc/cp-kafka:8.0.0")
    container = (
        KafkaContainer(image)
        .with_kraft()
        .with_env("KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR", "1")
        .with_env("KAFKA_TRANSACTION_STATE_LOG_MIN_ISR", "1")
        .with_env("KAFKA_AUTO_CREATE_TOPICS_ENABLE", "true")
    )
    container.start(timeout=180)
    return KafkaBroker("testcontainers", container.get_bootstrap_server(), container=container)


def _local_broker(tmp_path_factory) -> KafkaBroker:
    kl = load_kafka_local()
    directory = tmp_path_factory.mktemp("kafka-broker")
    bootstrap = kl.start(directory)  # fetches the jars first if needed
    return KafkaBroker("local", bootstrap, directory=directory)


@pytest.fixture(scope="session")
def kafka_broker(request, tmp_path_factory) -> KafkaBroker:
    env = os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "").strip()
    backend = os.environ.get("STREAM_NB_KAFKA_BACKEND", "auto").strip().lower() or "auto"
    if env:
        why = _check_bootstrap(env)
        if why:
            _unavailable(f"KAFKA_BOOTSTRAP_SERVERS={env} does not answer: {why}")
        return KafkaBroker("env", env)

    broker = None
    errors = []
    if backend in ("auto", "docker"):
        if _docker_answers():
            try:
                broker = _testcontainers_broker()
            except Exception as exc:  # noqa: BLE001
                errors.append(f"testcontainers KafkaContainer failed: {type(exc).__name__}: {exc}")
        else:
            errors.append("no Docker engine answers")
        if broker is None and backend == "docker":
            _unavailable("; ".join(errors))
    if broker is None:
        try:
            broker = _local_broker(tmp_path_factory)
        except Exception as exc:  # noqa: BLE001 - KafkaLocalError, OSError, ...
            errors.append(f"local broker (deploy/kafka/kafka-local) failed: {exc}")
            _unavailable("; ".join(errors))
    request.addfinalizer(broker.close)
    return broker


#: The Kafka client libraries of ``stream-nb run --kafka-client``: a test taking the
#: ``kafka_client`` fixture runs once with each, against the same broker.
KAFKA_CLIENTS = ("kafka-python", "confluent")


def pytest_generate_tests(metafunc):
    """Every client for a test taking ``kafka_client``, unless its own ``parametrize`` pairs it with other values."""
    if "kafka_client" in metafunc.fixturenames and not any(
            "kafka_client" in str(marker.args[0]) for marker in metafunc.definition.iter_markers("parametrize")):
        metafunc.parametrize("kafka_client", KAFKA_CLIENTS, indirect=True)


@pytest.fixture
def kafka_client(request, monkeypatch) -> str:
    """``"kafka-python"`` or ``"confluent"``; daemons started by the test inherit it (``STREAM_NB_KAFKA_CLIENT``)."""
    name = request.param
    if name == "confluent" and importlib.util.find_spec("confluent_kafka") is None and not _kafka_required():
        pytest.skip("confluent-kafka is not installed (pip install 'stream-nb[confluent]')")
    monkeypatch.setenv("STREAM_NB_KAFKA_CLIENT", name)
    return name


@pytest.fixture(scope="session")
def kafka_bootstrap_servers(kafka_broker) -> str:
    return kafka_broker.bootstrap_servers


@pytest.fixture(autouse=True)
def _no_daemon_left_running():
    """A test that fails before stopping its daemons must not leave them running for the rest of the suite."""
    yield
    recovery = sys.modules.get("recovery")  # imported by the tests that start daemons
    if recovery is not None:
        recovery.kill_leftovers()


@pytest.fixture(autouse=True)
def _kafka_broker_restored(request):
    """After a test that stopped the session broker, start it again for the next tests."""
    yield
    broker = request.node.funcargs.get("kafka_broker") if hasattr(request.node, "funcargs") else None
    if broker is not None:
        broker.ensure_running()


def _slug(text: str, limit: int = 60) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")[:limit] or "test"


@pytest.fixture
def kafka_topic_factory(request, kafka_broker):
    from kafka import KafkaAdminClient

    created: list[str] = []
    admin_box: list = []

    def admin():
        if not admin_box:
            admin_box.append(KafkaAdminClient(bootstrap_servers=kafka_broker.bootstrap_servers,
                                              client_id="stream_nb-tests",
                                              request_timeout_ms=30000))
        return admin_box[0]

    def make(partitions: int = 1, *, prefix: str = "t", configs: dict | None = None) -> str:
        name = f"{_slug(prefix, 20)}-{_slug(request.node.name)}-{uuid.uuid4().hex[:8]}"
        spec = {"num_partitions": partitions, "replication_factor": 1,
                "configs": {k: str(v) for k, v in (configs or {}).items()}}
        a = admin()
        a.create_topics({name: spec}, timeout_ms=30000)
        created.append(name)
        a.wait_for_topics([name], timeout_ms=30000)
        return name

    yield make

    try:
        if created:
            kafka_broker.ensure_running()  # the test may have left the broker stopped
            admin().delete_topics(created, timeout_ms=30000, raise_errors=False)
    except Exception as exc:  # noqa: BLE001 - cleanup must not fail the test
        warnings.warn(f"could not delete test topics {created}: {exc}", stacklevel=1)
    finally:
        for a in admin_box:
            try:
                a.close()
            except Exception:  # noqa: BLE001
                pass


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config, items):
    """Mark the tests that take a broker ``kafka``, and put them all in one xdist group: with
    ``-n 2 --dist loadgroup`` (the README's command) one worker runs them against one broker
    while the other runs the rest."""
    for item in items:
        if any(name in getattr(item, "fixturenames", ()) for name in KAFKA_FIXTURES):
            item.add_marker(pytest.mark.kafka)
        if item.get_closest_marker("kafka") is not None:
            item.add_marker(pytest.mark.xdist_group("kafka"))
