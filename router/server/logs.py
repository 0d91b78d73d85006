"""Structured logging: one JSON object per line on stderr, quiet by default.

Every line logged while a request is served carries its ``request_id``.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from contextvars import ContextVar
from typing import Any, TextIO

REQUEST_ID: ContextVar[str | None] = ContextVar("request_id", default=None)

_RESERVED = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime", "color_message"}


class JsonFormatter(logging.Formatter):
    """Renders the message, level, logger and every ``extra`` field as JSON."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": round(record.created, 3),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        entry.update({k: v for k, v in vars(record).items() if k not in _RESERVED})
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


class TextFormatter(logging.Formatter):
    """``level logger: message key=value ...`` for people reading a terminal."""

    def format(self, record: logging.LogRecord) -> str:
        extra = " ".join(f"{k}={v}" for k, v in vars(record).items() if k not in _RESERVED)
        line = f"{record.levelname.lower():7} {record.name}: {record.getMessage()} {extra}".rstrip()
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


class RequestIdFilter(logging.Filter):
    """Adds the id of the request being served (if any) to each record as ``request_id``."""

    def filter(self, record: logging.LogRecord) -> bool:
        request_id = REQUEST_ID.get()
        if request_id is not None and not hasattr(record, "request_id"):
            record.request_id = request_id
        return True


class StartupFailure(logging.Filter):
    """Says a failed start in one line: the web server logs the whole traceback of its cause.

    The last line of a traceback names the exception and its reason ("EmbeddingUnavailable:
    embedding service ... cannot be reached ...; set ROUTER_EMBEDDING_DIMENSIONS to start
    without the service"); the rest is code an operator cannot act on (``--log-level debug``
    keeps it).
    """

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if record.name == "uvicorn.error" and message.startswith("Traceback (most recent call last):"):
            cause = message.strip().splitlines()[-1]
            record.msg, record.args = f"start-up failed: {cause}", ()
        return True


def handler(fmt: str = "json", stream: TextIO | None = None) -> logging.Handler:
    """A handler writing ``fmt`` lines (with request ids) to ``stream`` (stderr by default)."""
    made = logging.StreamHandler(stream or sys.stderr)
    made.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    made.addFilter(RequestIdFilter())
    return made


def add_flags(container: argparse._ActionsContainer) -> None:
    """Add ``--log-level`` and ``--log-format`` to a command's flags."""
    container.add_argument("--log-level", choices=["debug", "info", "warning", "error"])
    container.add_argument("--log-format", choices=["json", "text"])


def configure(level: str = "info", fmt: str = "json") -> None:
    """Route the router's logs to stderr; libraries stay at warning."""
    root = logging.getLogger()
    root.handlers[:] = [handler(fmt)]
    if level != "debug":
        root.handlers[0].addFilter(StartupFailure())
    root.setLevel(logging.WARNING)
    for name in ("router", "sync"):
        logging.getLogger(name).setLevel(level.upper())
