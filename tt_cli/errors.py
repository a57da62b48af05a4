"""One error policy for every command: a user's mistake is one line on stderr and exit code 1.

Exit codes: 0 success · 1 bad input, data, model or option (a TTError) · 2 bad command-line usage
· 130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import errno
import functools
import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import typer

from core.errors import TTError

F = TypeVar("F", bound=Callable[..., Any])

EXIT_USER_ERROR = 1
EXIT_USAGE = 2  # a command line that cannot run as typed (click uses 2 for its own usage errors)
EXIT_INTERRUPTED = 130
# A write that failed for want of room or a device (disk full, quota, file too large, I/O error):
# one line naming the file, never a traceback.
WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EROFS})


def fail(message: str, code: int = EXIT_USER_ERROR) -> typer.Exit:
    """Print `tt: error: message` on stderr; return the Exit to raise."""
    print(f"tt: error: {message}", file=sys.stderr)
    return typer.Exit(code)


def guard(command: F) -> F:
    """Wrap a command so known errors become one line on stderr and a non-zero exit."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            result = command(*args, **kwargs)
            sys.stdout.flush()  # here, not at exit, so a full disk behind `> file` is reported like any error
            return result
        except TTError as exc:
            raise fail(str(exc)) from None
        except KeyboardInterrupt:
            print("tt: interrupted", file=sys.stderr)
            raise typer.Exit(EXIT_INTERRUPTED) from None
        except BrokenPipeError:
            # The reader went away (`tt translate … | head`): stop quietly, as Unix tools do.
            try:
                sys.stdout = open("/dev/null", "w")  # noqa: SIM115 - silence the flush at exit
            except OSError:
                pass
            raise typer.Exit(0) from None
        except OSError as exc:
            if exc.errno not in WRITE_ERRNOS:
                raise
            from core.files import stream_name, write_error

            name = exc.filename or stream_name(sys.stdout)
            _silence_stdout()
            raise fail(str(write_error(name, exc))) from None

    return wrapper  # type: ignore[return-value]


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so what is left in its buffer cannot fail again at exit."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, ValueError, AttributeError):  # a stream without a descriptor (tests)
        pass
