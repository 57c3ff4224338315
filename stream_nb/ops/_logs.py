"""Log output of the daemon: text lines, or one JSON object per line (``--log-format json``).

A JSON line holds ``time`` (ISO 8601, UTC, milliseconds), ``level``,
``logger``, ``message`` and every structured field the call passed through
``extra=`` (``event`` names the kind of line: ``start``, ``http``,
``rebalance``, ``snapshot``, ``rebuilds``, ``dead_letters``, ``backpressure``,
``metrics``, ``input_check``, ``shutdown``), plus ``exception`` when there is a traceback.

A client library's own error records (kafka-python logs some races of its
network thread with their traceback, and recovers) come out as one line: the
exception's type and message follow the message, the traceback is dropped
(:class:`OneLineExceptions`). Set ``--log-level DEBUG`` to keep it. The
daemon's own unexpected errors keep theirs: that is what a bug report needs.

>>> import io, json
>>> record = logging.LogRecord("stream_nb.daemon", logging.INFO, __file__, 1, "running %s", ("nb",), None)
>>> record.event, record.model = "start", "nb"
>>> line = json.loads(JsonFormatter().format(record))
>>> line["level"], line["logger"], line["message"], line["event"], line["model"]
('INFO', 'stream_nb.daemon', 'running nb', 'start', 'nb')
"""

from __future__ import annotations

import datetime
import logging
import sys
import typing

import orjson

__all__ = ["JsonFormatter", "OneLineExceptions", "TEXT_FORMAT", "configure_logging"]

#: The ``--log-format text`` layout.
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

# Attributes every LogRecord has; anything else came from ``extra=``.
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime", "taskName"}


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, message, then the ``extra`` fields."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, typing.Any] = {
            "time": datetime.datetime.fromtimestamp(record.created, datetime.timezone.utc).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in _STANDARD and not key.startswith("_") and key not in out:
                out[key] = value
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            out["exception"] = record.exc_text
        if record.stack_info:
            out["stack"] = self.formatStack(record.stack_info)
        return orjson.dumps(out, default=repr, option=orjson.OPT_NON_STR_KEYS).decode()


class OneLineExceptions(logging.Filter):
    """Handler filter: records of the loggers ``names`` (and their children) carry no traceback.

    The exception's type and message are appended to the message instead, so the
    line still says what went wrong.

    >>> import io
    >>> out = io.StringIO()
    >>> handler = logging.StreamHandler(out)
    >>> handler.addFilter(OneLineExceptions(("kafka",)))
    >>> try:
    ...     None.recv(4096)
    ... except AttributeError:
    ...     record = logging.LogRecord("kafka.net", logging.ERROR, __file__, 1, "receiving failed", (), sys.exc_info())
    >>> handler.handle(record)
    True
    >>> out.getvalue()
    "receiving failed (AttributeError: 'NoneType' object has no attribute 'recv')\\n"
    """

    def __init__(self, names: typing.Iterable[str]) -> None:
        super().__init__()
        self.names = tuple(names)

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and any(record.name == n or record.name.startswith(n + ".") for n in self.names):
            exc = record.exc_info[1]
            if exc is not None:
                record.msg = f"{record.getMessage()} ({type(exc).__name__}: {exc})"
                record.args = ()
            record.exc_info = record.exc_text = None
        return True


def configure_logging(level: str, fmt: str = "text", stream: typing.TextIO | None = None,
                      brief: typing.Iterable[str] = ()) -> None:
    """Send every log record at ``level`` and above to ``stream`` (stderr) as ``fmt`` (text or json).

    Records of the loggers named in ``brief`` come without their traceback (:class:`OneLineExceptions`).
    """
    if fmt not in ("text", "json"):
        raise ValueError(f"log format must be 'text' or 'json', got {fmt!r}")
    handler = logging.StreamHandler(sys.stderr if stream is None else stream)
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(TEXT_FORMAT))
    if brief:
        handler.addFilter(OneLineExceptions(brief))
    logging.basicConfig(level=level, handlers=[handler], force=True)
