"""`tt learn`: the notes' lesson on the live model — in the terminal UI, or as plain text."""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from tt_cli.errors import fail
from tt_cli.options import ModelOpt, load_model_for


def learn(
    step: Annotated[
        Optional[str],
        typer.Option("--step", "-s", help="Start at step N (1–24) or at a step's key (tt learn --list shows both)."),
    ] = None,
    list_steps: Annotated[
        bool, typer.Option("--list", help="List the steps (number, key, title) and exit; loads no model.")
    ] = False,
    plain: Annotated[
        bool,
        typer.Option(
            "--plain",
            help="Print the lesson as text on stdout (every step, or only --step's), for a pipe or a screen reader.",
        ),
    ] = False,
    sentence: Annotated[
        Optional[str],
        typer.Option(
            "--sentence",
            help='Your own French sentence for the live steps ("French | English" also gives the steps that '
            "compare with a reference, BLEU among them, your reference).",
        ),
    ] = None,
    model: ModelOpt = None,
) -> None:
    """A guided lesson in the order of the course notes: each step's idea and formula, the notes'
    example computed by tt, then the same step on the live model. Keys: → next, ← back, tab a panel and
    ↑/↓ to scroll it (on the attention table the arrows move the cell), l list, i open the step in tt
    inspect (q there comes back to the step), ? every key, q quit."""
    from core.learn.lesson import own_step, parse_pair
    from core.learn.steps import STEPS, render_plain
    from core.learn.steps import step as find_step

    if sentence is not None:
        try:
            parse_pair(sentence)
        except ValueError as exc:
            raise fail(f"--sentence: {exc}") from None
    try:
        start = find_step(step) if step is not None else None
    except ValueError as exc:
        raise fail(f"--step: {exc}") from None
    if list_steps:
        for number, s in enumerate(STEPS, 1):
            typer.echo(f"{number:>2}  {s.key:<16} {s.title}")
        return
    if not plain and not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise fail("tt learn is interactive and needs a terminal; for text use tt learn --plain")

    loaded = load_model_for(model, "cpu")
    if plain:
        from core.learn.lesson import live_numbers

        for s in [start] if start is not None else STEPS:
            s = own_step(s, sentence)
            typer.echo(render_plain(s, live_numbers(s, loaded)))
        return
    from tt_cli.tui.learn.app import run_lesson

    run_lesson(loaded, start=STEPS.index(start) + 1 if start is not None else 1, sentence=sentence)
