"""One error policy for every command: a user's mistake is one line on stderr and exit code 1.

Exit codes: 0 success · 1 bad input, data, model or option (a TTError) · 2 bad command-line usage
· 130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import typer

from core.errors import TTError

F = TypeVar("F", bound=Callable[..., Any])

EXIT_USER_ERROR = 1
EXIT_USAGE = 2  # a command line that cannot run as typed (click uses 2 for its own usage errors)
EXIT_INTERRUPTED = 130


def fail(message: str, code: int = EXIT_USER_ERROR) -> typer.Exit:
    """Print `tt: error: message` on stderr; return the Exit to raise."""
    print(f"tt: error: {message}", file=sys.stderr)
    return typer.Exit(code)


def guard(command: F) -> F:
    """Wrap a command so known errors become one line on stderr and a non-zero exit."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
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

    return wrapper  # type: ignore[return-value]
