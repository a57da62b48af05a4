"""The server's log: one JSON object per line on stderr (`tt serve 2> log.jsonl`, then jq or pandas).

Every line has "time" (UTC, ISO 8601) and "event": "request" (the access log: method, path, status,
ms, bytes, client, and for a translation its sentences and decode call), "disconnect" (a request
whose client hung up before its answer: the same fields but status; nothing was sent), "timeout" (a
connection whose request head did not arrive within the read timeout: 408), "listening", "stopped",
"error" (an unexpected failure, with its traceback as a string), or "server" (uvicorn's own warnings).
API keys are never written.
"""

from __future__ import annotations

import datetime
import json
import logging
import sys
import threading
import time
from typing import TextIO

from tt_cli.serve.presence import GONE


class JsonLog:
    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream
        self._lock = threading.Lock()

    def __call__(self, event: str, **fields) -> None:
        line = json.dumps({"time": _now(), "event": event, **fields}, ensure_ascii=False)
        stream = self.stream or sys.stderr
        with self._lock:
            stream.write(line + "\n")
            stream.flush()


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class AccessLog:
    """ASGI middleware: one "request" line per HTTP request, written when its answer has gone out.
    A handler adds fields through request.state.log (a dict)."""

    def __init__(self, app, log: JsonLog) -> None:
        self.app = app
        self.log = log

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        seen = {"status": 500, "bytes": 0}

        async def watch(message) -> None:
            if message["type"] == "http.response.start":
                seen["status"] = message["status"]
            elif message["type"] == "http.response.body":
                seen["bytes"] += len(message.get("body", b""))
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            client = scope.get("client")
            state = scope.get("state", {})
            gone = state.get(GONE, False)
            self.log(
                "disconnect" if gone else "request",
                method=scope["method"],
                path=scope["path"],
                **({} if gone else {"status": seen["status"]}),
                ms=round((time.perf_counter() - start) * 1000, 2),
                bytes=0 if gone else seen["bytes"],
                client=f"{client[0]}:{client[1]}" if client else None,
                **state.get("log", {}),
            )


class JsonFormatter(logging.Formatter):
    """uvicorn's own messages (a bad HTTP request line, a shutdown timeout) as log lines like the rest."""

    def format(self, record: logging.LogRecord) -> str:
        fields = {"time": _now(), "event": "server", "level": record.levelname.lower(), "message": record.getMessage()}
        if record.exc_info:
            fields["traceback"] = self.formatException(record.exc_info)
        return json.dumps(fields, ensure_ascii=False)


def uvicorn_log_config() -> dict:
    """A logging config for uvicorn: warnings and errors as JSON lines on stderr; no access log of its own."""
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": f"{__name__}.JsonFormatter"}},
        "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "json", "stream": "ext://sys.stderr"}},
        "loggers": {
            "uvicorn": {"handlers": ["stderr"], "level": "WARNING", "propagate": False},
            "uvicorn.access": {"handlers": [], "level": "WARNING", "propagate": False},
        },
    }
