"""The daemon's HTTP endpoint: ``/metrics``, ``/healthz``, ``/readyz`` on one port.

A small threaded WSGI server (the standard library's wsgiref) in a daemon
thread: ``/metrics`` is prometheus_client's WSGI app over the process's own
registry; ``/healthz`` and ``/readyz`` answer 200 or 503 with a JSON body that
says why. Requests are not logged (a scrape every few seconds would flood the
log).
"""

from __future__ import annotations

import logging
import socket
import socketserver
import threading
import typing
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import orjson
from prometheus_client import make_wsgi_app

from ..exceptions import ConfigError
from ._observer import DaemonObserver
from ._prometheus import make_registry

__all__ = ["MetricsServer"]

log = logging.getLogger("stream_nb.ops")

_INDEX = b"stream-nb: /metrics (Prometheus), /healthz (liveness), /readyz (readiness)\n"


class _Server(socketserver.ThreadingMixIn, WSGIServer):
    daemon_threads = True

    def server_bind(self) -> None:
        # HTTPServer.server_bind would resolve the host's FQDN (a DNS lookup that can hang)
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name, self.server_port = str(host), port
        self.setup_environ()


class _Server6(_Server):
    address_family = socket.AF_INET6


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: typing.Any) -> None:  # noqa: A002 - the base class's name
        """No access log: a scrape every few seconds would drown the daemon's own lines."""


class MetricsServer:
    """Bind ``host:port`` (port 0: any free port) and serve the observer's metrics and health.

    Raises :class:`~stream_nb.exceptions.ConfigError` when the address cannot be bound.
    """

    def __init__(self, observer: DaemonObserver, host: str, port: int):
        self.observer = observer
        self.registry = make_registry(observer)
        self._metrics_app = make_wsgi_app(self.registry)
        server_class = _Server6 if ":" in host else _Server
        try:
            self._server = make_server(host, port, self._app, server_class=server_class,
                                       handler_class=_QuietHandler)
        except (OSError, OverflowError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise ConfigError(f"--metrics-host {host} --metrics-port {port}: cannot listen there: {reason}") from None
        self.host = host
        self.port: int = self._server.server_port
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.5},
                                        name="stream-nb-http", daemon=True)

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def start(self) -> None:
        self._thread.start()
        log.info("serving /metrics, /healthz and /readyz on %s", self.url,
                 extra={"event": "http", "host": self.host, "port": self.port})

    def close(self) -> None:
        """Stop serving and release the port."""
        if self._thread.is_alive():
            self._server.shutdown()
            self._thread.join(timeout=5)
        self._server.server_close()

    # -- WSGI -------------------------------------------------------------------

    def _app(self, environ: dict, start_response: typing.Callable) -> list[bytes]:
        method = environ.get("REQUEST_METHOD", "GET")
        path = environ.get("PATH_INFO") or "/"
        if method not in ("GET", "HEAD"):
            return self._reply(start_response, "405 Method Not Allowed", b"only GET and HEAD\n", "text/plain",
                               method, [("Allow", "GET, HEAD")])
        if path == "/metrics":
            return self._metrics_app(environ, start_response)
        if path in ("/healthz", "/readyz"):
            ok, body = self.observer.health() if path == "/healthz" else self.observer.readiness()
            status = "200 OK" if ok else "503 Service Unavailable"
            return self._reply(start_response, status, orjson.dumps(body) + b"\n", "application/json", method)
        if path == "/":
            return self._reply(start_response, "200 OK", _INDEX, "text/plain", method)
        return self._reply(start_response, "404 Not Found", b"not found; try /metrics, /healthz, /readyz\n",
                           "text/plain", method)

    @staticmethod
    def _reply(start_response: typing.Callable, status: str, body: bytes, content_type: str, method: str,
               headers: list | None = None) -> list[bytes]:
        start_response(status, [("Content-Type", f"{content_type}; charset=utf-8"),
                                ("Content-Length", str(len(body))), ("Cache-Control", "no-store"),
                                *(headers or [])])
        return [] if method == "HEAD" else [body]
