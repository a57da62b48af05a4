"""A small client of `tt serve` on the standard library alone (no Starlette, no torch): one keep-alive
connection, JSON in and out. The benchmark and the tests use it; so can a program that wants the
--json record of a running server without loading a model.

It speaks HTTP/1.1 over a socket itself: http.client would import the e-mail parser and ssl, which
cost a warm `tt translate` about as much as the rest of its start-up (GET /health and one POST to a
server on this machine need none of it).
"""

from __future__ import annotations

import json
import socket
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit


class Disconnected(ConnectionError):
    """The server closed the connection before answering (an idle keep-alive it let go)."""


@dataclass(frozen=True)
class Reply:
    status: int
    headers: dict[str, str]  # names in lower case
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class Client:
    def __init__(self, url: str, *, api_key: str | None = None, timeout: float = 60.0) -> None:
        parts = urlsplit(url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.api_key = api_key
        self.timeout = timeout
        self._sock: socket.socket | None = None
        self._buffer = b""  # read from the socket and not yet used
        self._answered = False  # whether the request in flight got any byte back

    def request(
        self, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None
    ) -> Reply:
        """One request; a connection the server closed in between is opened again once."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        sent = {"Host": f"{host}:{self.port}", **(headers or {})}
        if self.api_key is not None:
            sent.setdefault("Authorization", f"Bearer {self.api_key}")
        if body is not None:
            sent["Content-Length"] = str(len(body))
        head = f"{method} {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in sent.items()) + "\r\n"
        message = head.encode("utf-8") + (body or b"")
        for attempt in (1, 2):
            if self._sock is None:
                self._sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
                self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                self._buffer = b""
            self._answered = False
            try:
                self._sock.sendall(message)
                reply = self._read_reply(method)
            except (Disconnected, BrokenPipeError, ConnectionResetError):
                self.close()
                if attempt == 2 or self._answered:  # an answer cut short is not sent again
                    raise
                continue
            if reply.headers.get("connection", "").lower() == "close":
                self.close()
            return reply
        raise AssertionError("unreachable")

    def _read_reply(self, method: str) -> Reply:
        head = self._read_until(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        try:
            status = int(lines[0].split(" ", 2)[1])
        except (IndexError, ValueError):
            raise ConnectionError(f"not an HTTP answer: {lines[0][:80]!r}") from None
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
            data = b""
        elif "chunked" in headers.get("transfer-encoding", "").lower():
            data = self._read_chunks()
        elif "content-length" in headers:
            data = self._read_exactly(int(headers["content-length"]))
        else:  # the body runs to the end of the connection
            data, self._buffer = self._buffer + self._read_to_end(), b""
            headers["connection"] = "close"
        return Reply(status, headers, data)

    def _fill(self) -> bytes:
        chunk = self._sock.recv(65536)
        if not chunk:
            raise Disconnected("the server closed the connection")
        self._answered = True
        self._buffer += chunk
        return chunk

    def _read_until(self, mark: bytes) -> bytes:
        while mark not in self._buffer:
            self._fill()
        found, _, self._buffer = self._buffer.partition(mark)
        return found

    def _read_exactly(self, n: int) -> bytes:
        while len(self._buffer) < n:
            self._fill()
        data, self._buffer = self._buffer[:n], self._buffer[n:]
        return data

    def _read_chunks(self) -> bytes:
        data = b""
        while True:
            size = int(self._read_until(b"\r\n").split(b";")[0], 16)
            if size == 0:
                self._read_until(b"\r\n")  # no trailers are sent to this client
                return data
            data += self._read_exactly(size)
            self._read_exactly(2)

    def _read_to_end(self) -> bytes:
        data = b""
        while chunk := self._sock.recv(65536):
            data += chunk
        return data

    def get(self, path: str) -> Reply:
        return self.request("GET", path)

    def post(self, path: str, obj: Any) -> Reply:
        body = json.dumps(obj, ensure_ascii=False).encode("utf-8")
        return self.request("POST", path, body, {"Content-Type": "application/json"})

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        self._buffer = b""

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
