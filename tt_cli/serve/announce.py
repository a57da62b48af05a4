"""Where a running `tt serve` tells this user's other `tt` commands that it is there.

`tt serve` writes one small JSON file per server while it runs — its URL, its process id and which
models it serves, one per direction — and removes it when it stops; `tt translate` reads them to send its lines to a
warm model instead of loading one. A server killed without its shutdown leaves its file behind: a
file whose process is gone is stale, ignored and removed by the next reader.

The files live in a directory only this user can write ($XDG_RUNTIME_DIR/tt, else
<tmp>/tt-<uid>): another user must not be able to point our translations at their server.
Standard library only: the client side of warm calls never imports torch.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from core.files import atomic_write_bytes

WEIGHTS_FILE = "model.safetensors"  # core.checkpoint's name for it (that module imports torch)


def runtime_dir() -> Path:
    """$XDG_RUNTIME_DIR/tt (a per-user directory the login session owns), else <tmp>/tt-<uid>."""
    base = os.environ.get("XDG_RUNTIME_DIR")
    if base:
        return Path(base) / "tt"
    return Path(tempfile.gettempdir()) / f"tt-{os.getuid()}"


def model_id(directory: Path) -> str | None:
    """What tells two model directories apart, or one directory before and after a retraining: its
    resolved path and the size and modification time of its weights. None: no weights there."""
    try:
        info = (directory / WEIGHTS_FILE).stat()
    except OSError:
        return None
    return f"{directory.resolve()}|{info.st_size}|{info.st_mtime_ns}"


def served_id(directory: Path, quantize: str | None) -> str | None:
    """The model_id a server announces: a quantized model (tt serve --quantize) is another model, so a
    warm `tt translate`, which asks for the fp32 one, never takes its outputs."""
    found = model_id(directory)
    return found if found is None or quantize is None else f"{found}|{quantize}"


def local_url(url: str) -> str:
    """The address this machine's clients reach a server by: a wildcard host becomes loopback."""
    parts = urlsplit(url)
    host = {"0.0.0.0": "127.0.0.1", "::": "[::1]"}.get(parts.hostname or "", None)
    if host is None:
        return url
    return urlunsplit(parts._replace(netloc=f"{host}:{parts.port}"))


@contextlib.contextmanager
def announced(
    url: str, model_dirs: list[Path], *, api_keys: bool, quantize: str | None | list[str | None] = None
) -> Iterator[Path | None]:
    """While the block runs, a file in runtime_dir() says a server at `url` serves the models of `model_dirs`
    (one per direction; model_id: the first's, model_ids: all of them), each in its `quantize` mode (one for
    all, or a list in the order of `model_dirs`). A directory that cannot be made private leaves the server
    unannounced (None), not stopped."""
    directory = _private_dir(create=True)
    if directory is None:
        yield None
        return
    path = directory / f"server-{os.getpid()}-{urlsplit(url).port}.json"
    modes = quantize if isinstance(quantize, list) else [quantize] * len(model_dirs)
    ids = [served_id(model_dir, mode) for model_dir, mode in zip(model_dirs, modes)]
    info = {"url": local_url(url), "pid": os.getpid(), "model_id": ids[0], "model_ids": ids, "api_keys": api_keys}
    atomic_write_bytes(path, json.dumps(info).encode("utf-8"))
    try:
        yield path
    finally:
        path.unlink(missing_ok=True)


def servers() -> list[dict]:
    """The announcements of this user's running servers, newest first; stale ones are removed."""
    directory = _private_dir(create=False)
    if directory is None:
        return []
    found = []
    for path in directory.glob("server-*.json"):
        try:
            info = json.loads(path.read_text(encoding="utf-8"))
            mtime = path.stat().st_mtime
        except (OSError, ValueError):
            continue
        if not isinstance(info, dict) or not isinstance(info.get("pid"), int) or not isinstance(info.get("url"), str):
            continue
        if not _alive(info["pid"]):
            path.unlink(missing_ok=True)
            continue
        found.append((mtime, info))
    return [info for _, info in sorted(found, key=lambda x: x[0], reverse=True)]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process now holds the number: not our server
        return False
    return True


def _private_dir(create: bool) -> Path | None:
    """runtime_dir(), made if asked, when this user owns it and no one else may write in it."""
    directory = runtime_dir()
    if create:
        with contextlib.suppress(OSError):
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        info = directory.lstat()
    except OSError:
        return None
    private = stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o022
    return directory if private else None
