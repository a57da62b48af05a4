"""A small client of `tt serve` on the standard library alone (no Starlette, no torch): one keep-alive
connection, JSON in and out. The benchmark and the tests use it; so can a program that wants the
--json record of a running server without loading a model."""

from __future__ import annotations

import http.client
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit


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
        self._conn: http.client.HTTPConnection | None = None

    def request(
        self, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None
    ) -> Reply:
        """One request; a connection the server closed in between is opened again once."""
        sent = dict(headers or {})
        if self.api_key is not None:
            sent.setdefault("Authorization", f"Bearer {self.api_key}")
        for attempt in (1, 2):
            if self._conn is None:
                self._conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            try:
                self._conn.request(method, path, body=body, headers=sent)
                response = self._conn.getresponse()
                data = response.read()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                self.close()
                if attempt == 2:
                    raise
                continue
            if response.getheader("connection", "").lower() == "close":
                self.close()
            return Reply(response.status, {k.lower(): v for k, v in response.getheaders()}, data)
        raise AssertionError("unreachable")

    def get(self, path: str) -> Reply:
        return self.request("GET", path)

    def post(self, path: str, obj: Any) -> Reply:
        body = json.dumps(obj, ensure_ascii=False).encode("utf-8")
        return self.request("POST", path, body, {"Content-Type": "application/json"})

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
