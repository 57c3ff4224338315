"""Operating the daemon: Prometheus metrics, health endpoints, structured logs.

:class:`Operations` is what ``stream-nb run`` builds from its settings:

* a :class:`DaemonObserver` that becomes the engine's observer (counters and
  health state, periodic summary log lines);
* with ``--metrics-port``, a :class:`MetricsServer` serving ``/metrics``,
  ``/healthz`` and ``/readyz`` from a daemon thread, started *before* the
  connectors so probes answer while the daemon waits for its broker.

Lifecycle: ``Operations(...)`` (binds the port) -> :meth:`Operations.attach`
(the engine exists) -> ``engine.run()`` -> :meth:`Operations.detach` ->
:meth:`Operations.close` (releases the port).

The snapshot code reports each snapshot with
``engine.observer.snapshot_done(duration_s, ok)``.
"""

from __future__ import annotations

import typing

from ..exceptions import ConfigError
from ._logs import JsonFormatter, configure_logging
from ._observer import DaemonObserver
from ._prometheus import METRICS, make_registry
from ._server import MetricsServer

__all__ = [
    "DaemonObserver",
    "JsonFormatter",
    "METRICS",
    "MetricsServer",
    "Operations",
    "configure_logging",
    "make_registry",
]


class Operations:
    """The daemon's observer and, when ``port`` is not None, its HTTP endpoint (bound at once).

    >>> ops = Operations(model_name="nb", mode="jsonl", host="127.0.0.1", port=0)
    >>> ops.server.port > 0, ops.observer.health()[0], ops.observer.readiness()[0]
    (True, True, False)
    >>> ops.close()
    """

    def __init__(
        self,
        *,
        model_name: str,
        mode: str,
        host: str = "127.0.0.1",
        port: int | None = None,
        liveness_timeout: float = 120.0,
        lag_interval: float = 10.0,
        summary_interval: float = 60.0,
    ):
        self.observer = DaemonObserver(model_name=model_name, mode=mode, liveness_timeout=liveness_timeout,
                                       lag_interval=lag_interval, summary_interval=summary_interval)
        self.server = MetricsServer(self.observer, host, port) if port is not None else None
        if self.server is not None:
            self.server.start()

    @classmethod
    def from_settings(cls, settings: dict[str, typing.Any], *, model_name: str, kafka: bool) -> Operations:
        """Check the operations settings of ``stream-nb run`` and build (and bind) from them.

        >>> Operations.from_settings({"metrics_port": 70000, "metrics_host": "127.0.0.1", "liveness_timeout": 1.0,
        ...                           "lag_interval": 1.0, "metrics_interval": 0.0}, model_name="nb", kafka=False)
        Traceback (most recent call last):
        ...
        stream_nb.exceptions.ConfigError: --metrics-port must be between 0 and 65535, got 70000
        """
        from ..cli import describe_setting  # the flag, or where a setting from a variable or file came from

        port = settings["metrics_port"]
        if port is not None and not 0 <= port <= 65535:
            raise ConfigError(f"{describe_setting(settings, 'metrics_port')} must be between 0 and 65535, got {port}")
        if not settings["metrics_host"]:
            raise ConfigError(f"{describe_setting(settings, 'metrics_host')} must not be empty "
                              "(0.0.0.0: every interface)")
        for name in ("liveness_timeout", "lag_interval"):
            if not settings[name] > 0:
                raise ConfigError(f"{describe_setting(settings, name)} must be > 0, got {settings[name]}")
        return cls(model_name=model_name, mode="kafka" if kafka else "jsonl", host=settings["metrics_host"],
                   port=port, liveness_timeout=settings["liveness_timeout"],
                   lag_interval=settings["lag_interval"], summary_interval=settings["metrics_interval"])

    def attach(self, engine: typing.Any) -> None:
        """Observe ``engine`` (call before its ``run()``)."""
        self.observer.attach(engine)

    def detach(self) -> None:
        """The engine returned: final summaries; ``/readyz`` answers 503 from now on."""
        self.observer.detach()

    def close(self) -> None:
        """Stop the HTTP endpoint."""
        self.observer.state = "stopped"
        if self.server is not None:
            self.server.close()
