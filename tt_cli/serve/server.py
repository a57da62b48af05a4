"""A listening socket, uvicorn, and the app: in the foreground (`tt serve`) or in a thread (tests,
benchmarks). The socket is bound before the model loads (a port in use fails at once) and before uvicorn
starts, so port 0 works and the port is known. SIGTERM and SIGINT stop the server after a drain (what is
being decoded is answered; uploads still under way are refused), and `tt serve` then exits 0."""

from __future__ import annotations

import contextlib
import signal
import socket
import threading
from dataclasses import replace

import uvicorn

from core.errors import TTError
from tt_cli.serve.app import make_app
from tt_cli.serve.logs import JsonLog, uvicorn_log_config
from tt_cli.serve.protocol import timed_protocol
from tt_cli.serve.settings import ServeSettings


def listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        raise TTError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.set_inheritable(True)
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def make_server(translators, settings: ServeSettings, sock: socket.socket, *, own_logging: bool) -> uvicorn.Server:
    settings = replace(settings, url=url_of(sock))
    config = uvicorn.Config(
        make_app(translators, settings),
        http=timed_protocol(settings.read_timeout_s, JsonLog(settings.log)),
        lifespan="on",
        log_config=uvicorn_log_config() if own_logging else None,
        log_level="warning",
        access_log=False,  # the app writes its own, as JSON (logs.AccessLog)
        server_header=False,
        # Requests in flight finish before the server stops; none can take longer than the timeout.
        timeout_graceful_shutdown=int(settings.timeout_s) + 5,
    )
    return uvicorn.Server(config)


def run(translators, settings: ServeSettings, sock: socket.socket) -> None:
    """Serve until SIGINT or SIGTERM, then finish what is in flight and return."""
    with _stop_quietly():
        make_server(translators, settings, sock, own_logging=True).run(sockets=[sock])


@contextlib.contextmanager
def _stop_quietly():
    """uvicorn catches SIGTERM and SIGINT while it serves, and once it has drained raises the signal again
    under the handlers it found: here, ones that do nothing, so that a server stopped as asked returns (and
    `tt serve` exits 0) instead of dying of the signal (143) after a clean stop."""
    signals = (signal.SIGTERM, signal.SIGINT)
    before = {sig: signal.signal(sig, lambda *_: None) for sig in signals}
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


class Background:
    """A server in a thread of this process: `with Background(translators, settings) as url: ...` (one
    Translator, or one per direction, as make_app takes them)."""

    def __init__(self, translators, settings: ServeSettings, host: str = "127.0.0.1", port: int = 0) -> None:
        self.sock = listen(host, port)
        self.server = make_server(translators, settings, self.sock, own_logging=False)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)
        self.url = url_of(self.sock)

    def __enter__(self) -> str:
        self.thread.start()
        while not self.server.started:
            if not self.thread.is_alive():
                raise RuntimeError("the server thread stopped while starting")
            threading.Event().wait(0.01)
        return self.url

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join()
        self.sock.close()
