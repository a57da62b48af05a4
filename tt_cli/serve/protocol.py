"""uvicorn's HTTP/1.1 protocol (h11) with what a server facing any client needs and uvicorn leaves out:

- a read timeout for a request's head: a connection that has not sent a whole request line and headers
  within `read_timeout` of opening (or of its previous answer) gets 408 and is closed, so a client that
  sends a byte a second cannot hold a connection for ever (the body's deadline is the app's: body.py);
- shutdown that waits for decoding in flight, not for uploads: a request whose body is still arriving
  when the server begins to stop is told so (the app answers 503 and closes), the others finish;
- every error it sends itself in JSON, as the app's are (a malformed request: 400).

The app's log is written here too for what never reaches the app (a head that timed out).
"""

from __future__ import annotations

import json

from uvicorn.protocols.http.h11_impl import H11Protocol

from tt_cli.serve.body import DRAINING


def timed_protocol(read_timeout: float, log) -> type[H11Protocol]:
    """The protocol class for uvicorn.Config(http=...), with its read timeout and the server's log."""
    return type("TimedH11Protocol", (TimedH11Protocol,), {"read_timeout": read_timeout, "log": log})


def _error(status: int, reason: str, message: str) -> bytes:
    body = json.dumps({"error": message}).encode("utf-8")
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
        "connection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


class TimedH11Protocol(H11Protocol):
    read_timeout: float = 30.0
    log = None

    def connection_made(self, transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._head_timer = None
        self._arm()

    def connection_lost(self, exc) -> None:
        self._disarm()
        super().connection_lost(exc)

    def handle_events(self) -> None:
        cycle = self.cycle
        super().handle_events()
        if self.cycle is not cycle:  # a new request's head is in: the app takes it from here
            self._disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()  # the next request's head, on this kept-alive connection

    def _arm(self) -> None:
        self._disarm()
        self._head_timer = self.loop.call_later(self.read_timeout, self._head_timed_out)

    def _disarm(self) -> None:
        if getattr(self, "_head_timer", None) is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self.transport.is_closing() or (self.cycle is not None and not self.cycle.response_complete):
            return
        message = f"the request head did not arrive within the server's read timeout of {self.read_timeout:g} s"
        self.transport.write(_error(408, "Request Timeout", message))
        self.transport.close()
        if self.log is not None:
            client = self.client
            self.log("timeout", status=408, client=f"{client[0]}:{client[1]}" if client else None, error=message)

    def send_400_response(self, msg: str) -> None:
        self.transport.write(_error(400, "Bad Request", f"not an HTTP/1.1 request the server can read: {msg}"))
        self.transport.close()

    def shutdown(self) -> None:
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete and cycle.more_body and not cycle.response_started:
            cycle.scope.setdefault("state", {})[DRAINING] = True  # the app answers 503 and closes
            cycle.message_event.set()
        super().shutdown()
