"""`tt runs`: the training runs of a directory, and `tt runs show`: their learning curves side by side."""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from tt_cli.errors import EXIT_USAGE, fail, guard
from tt_cli.usage import DefaultGroup, Typer


class RunsGroup(DefaultGroup):
    default_command = "list"


app = Typer(
    cls=RunsGroup,
    help="Training runs: `tt runs [DIR]` lists the runs in DIR (default: runs) with their last validation, best "
    "step, hours and machine; `tt runs show RUN [RUN…]` draws their learning curves side by side.",
    context_settings={"help_option_names": ["-h", "--help"]},
)


class XChoice(str, Enum):
    step = "step"
    hours = "hours"
    wall = "wall"


PLOT_SIZE = (100, 20)  # columns × rows when stdout is not a terminal
JsonOpt = Annotated[bool, typer.Option("--json", help="One JSON document (a list of runs) instead of text.")]


def list_runs(
    directory: Annotated[
        Path, typer.Argument(help="A directory of run directories (each made by tt train --out), or one run.")
    ] = Path("runs"),
    json_out: JsonOpt = False,
) -> None:
    """List the runs in DIR: step, CPU/GPU hours, last validation (loss, BLEU, each held-out set), best step
    (the run's model), how it ended, the machine it ran on."""
    from core.train.runs import find_runs
    from tt_cli.runs_output import write_json, write_list

    runs = find_runs(directory)
    if not runs:
        raise fail(f"{directory}: no runs here (a run is a directory that tt train --out wrote, with metrics.jsonl)")
    (write_json(runs, sys.stdout, curve=False) if json_out else write_list(runs, sys.stdout))


def show(
    runs: Annotated[list[Path], typer.Argument(help="Run directories (tt train --out).")],
    x: Annotated[
        XChoice,
        typer.Option(
            "--x",
            help="The x axis: step, hours (CPU-hours of the training process, or GPU-hours: wall time × "
            "processes; runs compare fairly on a shared machine) or wall (wall-clock hours).",
        ),
    ] = XChoice.step,
    json_out: JsonOpt = False,
    table: Annotated[
        bool, typer.Option("--table", help="Every validation as a Markdown table instead of the curves.")
    ] = False,
    png: Annotated[
        Optional[Path],
        typer.Option(
            "--png",
            help="Write the figure to FILE with matplotlib instead (.png; .svg and .pdf too). "
            "Needs the figures extra: pip install 'tt[figures]'.",
        ),
    ] = None,
) -> None:
    """Draw the learning curves of RUN…, side by side: loss (training, validation) and BLEU, one line per
    run (per held-out set for one run), against steps, CPU/GPU hours or wall hours."""
    if sum((json_out, table, png is not None)) > 1:
        raise fail("--json, --table and --png each choose the output: give one", EXIT_USAGE)
    if png is not None:
        from tt_cli.figures import require

        require("--png", png)
    from core.train.runs import read_run

    read = [read_run(r) for r in runs]
    _write(read, x.value, json_out, table, png)


def _write(runs, x, json_out: bool, table: bool, png: Path | None) -> None:
    from tt_cli import runs_output

    if json_out:
        return runs_output.write_json(runs, sys.stdout, curve=True)
    if table:
        return runs_output.write_table(runs, sys.stdout)
    if png is not None:
        from core.train.runs import panels
        from tt_cli.figures import curves_figure, save

        save(curves_figure(panels(runs, x), x), png, "--png")
        print(f"tt: wrote {png}", file=sys.stderr)
        return
    from rich.console import Console

    console = Console()
    width, height = (console.width, min(console.height - 2, 24)) if console.is_terminal else PLOT_SIZE
    runs_output.write_curves(
        runs, sys.stdout, x, width, max(height, 10), colour=console.is_terminal and console.color_system is not None
    )


app.command("list", help=list_runs.__doc__)(guard(list_runs))
app.command("show", help=show.__doc__)(guard(show))
