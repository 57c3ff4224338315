"""Operating the daemon: Prometheus metrics, health endpoints, structured logs.

:class:`Operations` is what ``stream-nb run`` builds from its settings
(:func:`stream_nb.daemon.make_operations` checks them):

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

from ._logs import JsonFormatter, OneLineExceptions, configure_logging
from ._observer import DaemonObserver
from ._prometheus import METRICS, make_registry
from ._server import MetricsServer

__all__ = [
    "DaemonObserver",
    "JsonFormatter",
    "METRICS",
    "MetricsServer",
    "OneLineExceptions",
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
