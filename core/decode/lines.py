"""Reading the lines to translate: decoded one at a time, and gathered into chunks as they arrive.

Standard library only (no torch): `tt translate` reads its input with these whether it decodes
here or sends the lines to a running `tt serve`, so both see the same chunks.
"""

from __future__ import annotations

import queue
import sys
import threading
from collections.abc import Iterable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import BinaryIO

from core.errors import ConfigError, DataError


def read_lines(stream: BinaryIO, name: str, errors: str = "strict") -> Iterator[str]:
    """Lines of a binary stream decoded as UTF-8, one at a time (no whole-file read).

    errors="strict" turns a bad byte into a DataError naming `name:line`; "replace" puts U+FFFD there.
    """
    if errors not in ("strict", "replace"):
        raise ConfigError(f"--errors must be 'strict' or 'replace', got {errors!r}")
    for lineno, raw in enumerate(stream, start=1):
        if raw.endswith(b"\n"):
            raw = raw[:-1]
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        try:
            yield raw.decode("utf-8", errors=errors)
        except UnicodeDecodeError as exc:
            raise DataError(
                f"{name}:{lineno}: invalid UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1}); "
                "use --errors replace to translate it anyway"
            ) from None


def lines_of(stack: ExitStack, input_file: Path | None, args: list[str] | None, errors: str) -> Iterator[str]:
    """The lines to translate: of `input_file` (opened on `stack`), else `args`, else stdin (args None)."""
    if input_file is not None:
        return read_lines(stack.enter_context(open(input_file, "rb")), str(input_file), errors)
    if args is None:
        return read_lines(sys.stdin.buffer, "<stdin>", errors)
    return iter(args)


# How long a chunk waits for the next line once it has one: a fast pipe or a file delivers thousands
# of lines in this time (full batches); a person or a slow producer waits this much, not for EOF.
LINE_GRACE_S = 0.01
_END = object()


def _read_ahead(lines: Iterable[str], limit: int) -> queue.Queue:
    """A daemon thread reads `lines` into a bounded queue (at most `limit` lines, and one more waiting
    to go in, ahead of the consumer, so memory stays flat); a reading error is queued in the line's
    place, then the end marker."""
    buffered: queue.Queue = queue.Queue(maxsize=limit)

    def run() -> None:
        try:
            for line in lines:
                buffered.put(line)
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer, raised there
            buffered.put(exc)
        buffered.put(_END)

    threading.Thread(target=run, name="tt-read-lines", daemon=True).start()
    return buffered


def chunks(lines: Iterable[str], size: int) -> Iterator[list[str]]:
    """Lists of up to `size` lines: as many as are already available, never waiting for more.

    A list comes in full chunks. Any other iterable (a file, stdin) is read by a thread: a chunk
    starts with the next line (waiting for it) and takes every line that follows within
    LINE_GRACE_S of the previous one, so a slow pipe gets each line answered as it arrives while
    a file or a fast pipe still fills whole batches.
    """
    if isinstance(lines, (list, tuple)):
        for start in range(0, len(lines), size):
            yield list(lines[start : start + size])
        return
    buffered = _read_ahead(lines, size)
    while True:
        item = buffered.get()
        chunk: list[str] = []
        while item is not _END and not isinstance(item, BaseException):
            chunk.append(item)
            if len(chunk) == size:
                break
            try:
                item = buffered.get(timeout=LINE_GRACE_S)
            except queue.Empty:
                break
        if chunk:
            yield chunk
        if item is _END:
            return
        if isinstance(item, BaseException):
            raise item
