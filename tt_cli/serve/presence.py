"""Whether a request's client is still there, so that no sentence is decoded for nobody.

Once a request's body is read, the only thing its ASGI receive channel can still say is
`http.disconnect`: the client closed the connection (or the answer went out, by which time the
watch is over). A task waits for that; when it comes, `gone` turns true and each callback runs
(the batcher drops the request's queued sentences and stops a decode that holds only sentences of
requests whose clients are gone). The decode worker reads `gone` between steps, from its own thread:
a plain attribute, written once. A callback may be added from any thread (the text pipeline submits its
jobs from its own): a lock makes sure each runs once, then or when the client goes.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any

GONE = "tt.gone"  # in the request's scope state once its client has gone: the access log says "disconnect"


class ClientGone(Exception):
    """The client hung up before its answer was ready: there is nobody to answer."""


class Presence:
    def __init__(self, scope: dict) -> None:
        self.gone = False
        self._state = scope.setdefault("state", {})
        self._callbacks: list[Callable[[], Any]] = []
        self._lock = threading.Lock()
        self._task: asyncio.Task | None = None

    @classmethod
    def watch(cls, scope: dict, receive: Callable[[], Awaitable[dict]]) -> Presence:
        """Start watching (call it once the body has been read whole)."""
        presence = cls(scope)
        presence._task = asyncio.get_running_loop().create_task(presence._wait(receive))
        return presence

    async def _wait(self, receive) -> None:
        while (await receive())["type"] != "http.disconnect":
            pass  # nothing else can come after the body; read on
        self.left()

    def left(self) -> None:
        """The client is gone (seen here, or by whoever read its body)."""
        with self._lock:
            if self.gone:
                return
            self.gone = True
            callbacks, self._callbacks = self._callbacks, []
        self._state[GONE] = True
        for callback in callbacks:
            callback()

    def on_gone(self, callback: Callable[[], Any]) -> None:
        """Run `callback` when the client goes (in the event loop's thread), or now if it has (in this one)."""
        with self._lock:
            if not self.gone:
                self._callbacks.append(callback)
                return
        callback()

    def close(self) -> None:
        """Stop watching: the answer is about to go out."""
        if self._task is not None:
            self._task.cancel()
            self._task = None
        with self._lock:
            self._callbacks.clear()


class Always:
    """The presence of a caller that never leaves (a request decoded outside an HTTP connection)."""

    gone = False

    def on_gone(self, callback) -> None:
        pass
