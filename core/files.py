"""Writing files so that a crash never leaves a half-written one: one temporary file, one rename.

Only regular files are replaced that way. Anything else a user may name as an output is written in
place, never renamed onto: `-` (stdout), /dev/stdout and the like, /dev/null, a FIFO, a terminal. A
target that cannot be written (a directory, a missing parent, a read-only file) is an OutputError
naming it, raised before anything is created.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from core.errors import DataError, OutputError

STDOUT = "-"  # as an output path: standard output


def cache_home() -> Path:
    """Where tt keeps what it can make again (corpora, the compiled decoder step): $XDG_CACHE_HOME/tt, else
    ~/.cache/tt. $TT_CACHE, where a cache honours it, is read by its owner."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tt"


def check_output(path: str | Path) -> Path:
    """The file to write for `path`, checked: OutputError if it cannot be written.

    A command calls it before its work, so a bad output path costs nothing. A symlink to a regular
    file resolves to that file (written through the link, the link kept)."""
    if str(path) == STDOUT:
        return Path(STDOUT)
    path = Path(path)
    try:
        st = path.stat()
    except (FileNotFoundError, NotADirectoryError):  # no such file, or a parent is missing or a file
        st = None
    except OSError as exc:
        raise OutputError(f"{path}: cannot write ({exc.strerror or exc})") from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise OutputError(f"{path}: is a directory; give a file name")
    if (st is not None and not stat.S_ISREG(st.st_mode)) or _in_place(path):  # a device, FIFO, /dev/stdout …
        if st is not None and not os.access(path, os.W_OK):
            raise OutputError(f"{path}: not writable")
        return path  # written in place
    if st is not None and (not st.st_mode & 0o222 or not os.access(path, os.W_OK)):
        raise OutputError(f"{path}: read-only; not replaced")
    target = Path(os.path.realpath(path))
    parent = target.parent
    if not parent.is_dir():
        what = f"{parent} is not a directory" if parent.exists() else f"no such directory {parent}"
        raise OutputError(f"{path}: cannot write: {what}")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(f"{path}: cannot write: {parent} is not writable")
    return target


def make_dir(path: str | Path) -> Path:
    """Create the directory `path` (and its parents) to write into: OutputError naming it when a file
    stands in the way or it cannot be created or written."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise OutputError(f"{path}: not a directory (a file of that name exists)")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"{path}: cannot create the directory ({exc.strerror or exc})") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise OutputError(f"{path}: directory not writable")
    return path


def _in_place(path: Path) -> bool:
    """Paths under /dev and /proc are streams or links to open files (/dev/stdout → a file the shell
    opened), never files to rename onto, even when they resolve to a regular file."""
    return Path(os.path.abspath(path)).parts[1:2] in (("dev",), ("proc",))


def _stream(path: Path) -> IO | None:
    """sys.stdout or sys.stderr when `path` is "-" or names the same file: writing through the open
    stream keeps its offset, its append mode and its order with what else the command prints."""
    if str(path) == STDOUT:
        return sys.stdout
    try:
        st = path.stat()
    except OSError:
        return None
    for stream in (sys.stdout, sys.stderr):
        try:
            if os.path.samestat(st, os.fstat(stream.fileno())):
                return stream
        except (OSError, ValueError, AttributeError):  # a stream without a file descriptor (tests, notebooks)
            continue
    return None


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside `path`; on success it replaces `path` in one rename.

    A crash or Ctrl-C part-way leaves the old file (or none), never a truncated one. A target that
    is not a regular file (see the module's docstring) is yielded itself, to be written in place;
    "-" yields /dev/stdout (open_output writes through sys.stdout instead: prefer it).
    """
    target = check_output(path)
    if str(target) == STDOUT:
        sys.stdout.flush()
        yield Path("/dev/stdout")
        return
    if _in_place(target) or (target.exists() and not target.is_file()):
        yield target
        return
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise OutputError(f"{path}: cannot write ({exc.strerror or exc})") from None
    os.close(fd)
    try:
        yield Path(tmp)
        # mkstemp creates the file private (0600); give it the permissions a plain open() would.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@contextmanager
def open_output(path: str | Path, binary: bool = False) -> Iterator[IO]:
    """An open file for `path`: "-" or the file stdout/stderr already points at is written through
    that stream (left open); any other special file is opened in place; a regular file is written
    atomically (atomic_path)."""
    target = check_output(path)
    stream = _stream(target)
    if stream is not None:
        stream.flush()
        yield stream.buffer if binary else stream
        stream.flush()
        return
    mode = "wb" if binary else "w"
    try:
        with (
            atomic_path(target) as tmp,
            open(tmp, mode, **({} if binary else {"encoding": "utf-8", "newline": "\n"})) as f,
        ):
            yield f
    except OSError as exc:
        if isinstance(exc, OutputError) or exc.errno is None:
            raise
        raise write_error(path, exc) from None  # the temporary file is gone (atomic_path): nothing half-written


def write_error(path: str | Path, exc: OSError) -> OutputError:
    """One line for a failed write: `/dev/full: no space left on device`."""
    reason = exc.strerror or str(exc)
    return OutputError(f"{path}: {reason[:1].lower()}{reason[1:]}")


def stream_name(stream: IO) -> str:
    """What a user called the file behind `stream` (`> /dev/full` opened it as stdout): the path its
    descriptor points at where the system says, else <stdout>."""
    try:
        return os.readlink(f"/proc/self/fd/{stream.fileno()}")
    except (OSError, ValueError, AttributeError):
        return "<stdout>" if stream is sys.stdout else "<stderr>"


def open_input(path: str | Path) -> IO[bytes]:
    """A file a user named, opened to read (binary): DataError naming it when it is missing, a
    directory or unreadable."""
    path = Path(path)
    if path.is_dir():
        raise DataError(f"{path}: not a file (a directory)")
    try:
        return open(path, "rb")  # noqa: SIM115 - the caller closes it
    except FileNotFoundError:
        raise DataError(f"{path}: no such file") from None
    except OSError as exc:
        raise DataError(f"{path}: cannot open ({exc.strerror or exc})") from None


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    with open_output(path, binary=True) as f:
        f.write(data)


def read_jsonl(path: str | Path) -> tuple[list[tuple[int, dict]], bool]:
    """The records of a JSON-lines file that a process appends to, each with its line number, and whether its last
    line was cut short (the writer stopped part-way: that line is dropped). A broken line before the last is a
    DataError naming file:line."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    records = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            records.append((number, json.loads(line)))
        except json.JSONDecodeError:
            if number == len(lines):
                return records, True
            raise DataError(f"{path}:{number}: not a JSON record") from None
    return records, False
