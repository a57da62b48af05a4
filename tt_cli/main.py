"""The `tt` command: a root Typer app that only wires the commands together.

Each command lives in tt_cli/commands/<name>.py and imports torch and core inside its function, so
`tt --help` is instant and `tt translate` pays only for what it uses.
"""

from __future__ import annotations

from typing import Annotated

import typer

from tt_cli.commands.align import align
from tt_cli.commands.analyze import app as analyze_app
from tt_cli.commands.average import average
from tt_cli.commands.data import app as data_app
from tt_cli.commands.eval import evaluate
from tt_cli.commands.inspect import inspect
from tt_cli.commands.learn import learn
from tt_cli.commands.runs import app as runs_app
from tt_cli.commands.serve import serve
from tt_cli.commands.train import train
from tt_cli.commands.translate import translate
from tt_cli.errors import guard
from tt_cli.usage import Typer

app = Typer(
    name="tt",
    help="Train, run and open up the Transformer of 'Attention Is All You Need' (French→English by default).",
    no_args_is_help=True,
    add_completion=True,  # --install-completion / --show-completion, as users of Typer CLIs expect
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


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


for name, function in [
    ("translate", translate),
    ("eval", evaluate),
    ("inspect", inspect),
    ("learn", learn),
    ("train", train),
    ("average", average),
    ("align", align),
    ("serve", serve),
]:
    app.command(name, help=function.__doc__)(guard(function))
app.add_typer(data_app, name="data")
app.add_typer(analyze_app, name="analyze")
app.add_typer(runs_app, name="runs")


def main() -> None:
    app(prog_name="tt")  # the same name in messages under `python -m tt_cli.main` and torchrun


if __name__ == "__main__":
    main()
