"""How tt's command line reads and refuses: flags that take no value, and usage errors as one line.

Typer's defaults are a 5-line boxed error and `<bool>` beside every flag, which invites
`--greedy true "Le chat"` (and then translates "true"). Every tt app is a `Typer` from here, so
every command and group gets these classes; tests/cli/test_usage.py walks the tree to hold that.
"""

from __future__ import annotations

import re
import shlex
import sys
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup

try:  # recent typer carries its own copy of click; older ones use click itself
    from typer._click import exceptions as click_errors
except ImportError:  # pragma: no cover - typer < 0.20
    from click import exceptions as click_errors

from tt_cli.errors import EXIT_USAGE

# What a user may think a flag takes: `--greedy true`, `--json yes`, `--align 1`.
FLAG_WORDS = {"true", "false", "yes", "no", "on", "off", "1", "0", "y", "n", "t", "f"}


def _quiet_flags(params: list[Any]) -> list[Any]:
    """No `<bool>` beside a flag in --help: a flag takes no value."""
    for param in params:
        if param.param_type_name == "option" and param.is_flag and not param.count:
            param.metavar = ""
    return params


def _flags(command: Any) -> set[str]:
    return {
        name
        for p in command.params
        if p.param_type_name == "option" and p.is_flag
        for name in (*p.opts, *p.secondary_opts)
    }


def _takes_text(command: Any) -> bool:
    """Whether the command reads free text (sentences) as its arguments."""
    return any(p.param_type_name == "argument" and p.nargs == -1 for p in command.params)


class TTCommand(TyperCommand):
    def get_params(self, ctx: Any) -> list[Any]:  # --help and the completion options are added here
        return _quiet_flags(super().get_params(ctx))

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        flags = _flags(self)
        words = args[: args.index("--")] if "--" in args else list(args)  # the parser consumes args
        for given, after in zip(words, words[1:]):
            if given in flags and after.lower() in FLAG_WORDS:
                hint = f" (a sentence that is only {after!r} goes after --)" if _takes_text(self) else ""
                raise click_errors.UsageError(f"{given} is a flag and takes no value: drop {after!r}{hint}", ctx=ctx)
        try:
            return super().parse_args(ctx, args)
        except click_errors.NoSuchOption:
            text = next((w for w in words if _sentence_like(w, self)), None)
            if text is None or not _takes_text(self):
                raise
            raise click_errors.UsageError(
                f"no such option: {text}; a sentence that starts with a dash goes after --: "
                f"{ctx.command_path} -- {shlex.quote(text)}",
                ctx=ctx,
            ) from None


def _sentence_like(word: str, command: Any) -> bool:
    """Whether `word` starts with a dash but reads as text: not one of the command's options (nor
    -xVALUE of a short one), and not a mistyped long option such as --bem."""
    names = {n for p in command.params for n in (*p.opts, *p.secondary_opts) if n.startswith("-")}
    names |= {"-h", "--help"}
    if not word.startswith("-") or word.split("=", 1)[0] in names or word[:2] in names:
        return False
    return re.fullmatch(r"--[\w-]+(=.*)?", word) is None


class TTGroup(TyperGroup):
    def get_params(self, ctx: Any) -> list[Any]:  # --help and the completion options are added here
        return _quiet_flags(super().get_params(ctx))

    def main(self, args: Any = None, prog_name: Any = None, complete_var: Any = None, **extra: Any) -> Any:
        """As click's, but a usage error is one line on stderr, `tt: error: …`, and exit 2."""
        standalone = extra.pop("standalone_mode", True)
        try:
            result = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click_errors.UsageError as exc:
            if not standalone:
                raise
            if type(exc).__name__ != "NoArgsIsHelpError":  # `tt` alone: the help was the answer
                message = " ".join(exc.format_message().split())
                where = f" (see {exc.ctx.command_path} -h)" if exc.ctx is not None else ""
                print(f"tt: error: {message}{where}", file=sys.stderr)
            sys.exit(EXIT_USAGE)
        except click_errors.ClickException as exc:
            if not standalone:
                raise
            print(f"tt: error: {' '.join(exc.format_message().split())}", file=sys.stderr)
            sys.exit(exc.exit_code)
        except typer.Abort:
            if not standalone:
                raise
            print("tt: interrupted", file=sys.stderr)
            sys.exit(130)
        if not standalone:
            return result
        sys.exit(result if isinstance(result, int) else 0)


class Typer(typer.Typer):
    """typer.Typer whose groups and commands are tt's: every app of tt is one of these."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("cls", TTGroup)
        super().__init__(**kwargs)

    def command(self, *args: Any, cls: type[TyperCommand] | None = None, **kwargs: Any) -> Any:
        return super().command(*args, cls=cls or TTCommand, **kwargs)


class DefaultGroup(TTGroup):
    """A group whose first word, when it is none of its commands, goes to `default_command`:
    `tt runs DIR` is `tt runs list DIR`, while `tt runs show RUN` stays `show`."""

    default_command = ""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if not args or (args[0] not in self.commands and args[0] not in ctx.help_option_names):
            args = [self.default_command, *args]
        return super().parse_args(ctx, args)
