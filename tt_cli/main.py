"""The `tt` command: a root Typer app that only wires the commands together.

Each command lives in tt_cli/commands/<name>.py and imports torch and core inside its function, so
`tt --help` is instant and `tt translate` pays only for what it uses.
"""

from __future__ import annotations

import importlib
from typing import Annotated

import typer

from tt_cli.errors import guard

app = typer.Typer(
    name="tt",
    help="Train, run and open up the Transformer of 'Attention Is All You Need' (French→English by default).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

# (command name, module in tt_cli.commands, function) — one module per command.
COMMANDS = [
    ("translate", "translate", "translate"),
    ("eval", "eval", "evaluate"),
    ("inspect", "inspect", "inspect"),
    ("train", "train", "train"),
    ("average", "average", "average"),
    ("align", "align", "align"),
]
SUBAPPS = [("data", "data", "app"), ("analyze", "analyze", "app")]


def _version(value: bool) -> None:
    if value:
        from core import __version__

        typer.echo(f"tt {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: Annotated[
        bool, typer.Option("--version", "-V", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Exit codes: 0 ok · 1 bad input, data, model or option · 2 bad usage · 130 interrupted."""


def _register() -> None:
    for name, module_name, attr in COMMANDS:
        try:
            module = importlib.import_module(f"tt_cli.commands.{module_name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"tt_cli.commands.{module_name}":
                raise
            continue  # a command not written yet
        function = getattr(module, attr)
        app.command(name, help=function.__doc__)(guard(function))
    for name, module_name, attr in SUBAPPS:
        try:
            module = importlib.import_module(f"tt_cli.commands.{module_name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"tt_cli.commands.{module_name}":
                raise
            continue
        app.add_typer(getattr(module, attr), name=name)


_register()


def main() -> None:
    app()


if __name__ == "__main__":
    main()
