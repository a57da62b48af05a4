"""`tt inspect`: step through the decoding of one sentence in a terminal UI."""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from tt_cli.errors import EXIT_USAGE, fail
from tt_cli.options import ModelOpt, SourceOpt, TargetOpt, load_model_for, model_of_direction


class FigureFormat(str, Enum):
    png = "png"
    svg = "svg"
    pdf = "pdf"


def inspect(
    text: Annotated[
        Optional[str], typer.Argument(help="The French sentence to inspect (asked for when left out).")
    ] = None,
    model: ModelOpt = None,
    source: SourceOpt = None,
    target: TargetOpt = None,
    top_k: Annotated[int, typer.Option(help="Candidates shown for the next piece.", min=1, max=50)] = 10,
    beam: Annotated[
        Optional[int], typer.Option(help="Beam size for beam mode (key b). Default: 4.", min=1, max=16)
    ] = None,
    alpha: Annotated[
        Optional[float], typer.Option(help="Length penalty α for beam mode's re-ranking. Default: 0.6.", min=0.0)
    ] = None,
    svg_dir: Annotated[
        Optional[Path],
        typer.Option(help="Where key s saves screenshots (SVG) and key S figures. Default: the current directory."),
    ] = None,
    figure_format: Annotated[
        FigureFormat,
        typer.Option(
            help="Key S saves the attention map shown and the step's distribution as figures in this format "
            "(matplotlib: pip install 'tt[figures]')."
        ),
    ] = FigureFormat.png,
    trace: Annotated[
        Optional[Path],
        typer.Option(
            "--trace",
            help="Open a saved trace (tt translate --trace FILE) without loading the model: "
            "steps, attention and the distribution; what-if, beam and explain need the model.",
        ),
    ] = None,
    run: Annotated[
        Optional[Path],
        typer.Option(
            "--run",
            help="A training run directory: the sentence at each of its checkpoints, "
            "keys [ and ] move across them (translation, distribution, attention of each).",
        ),
    ] = None,
    ref: Annotated[
        Optional[str],
        typer.Option(
            "--ref",
            help="A reference translation: teacher-forced, each step shows its piece's rank "
            "and probability next to the model's choice, the first divergence highlighted (key c).",
        ),
    ] = None,
) -> None:
    """Step through decoding token by token: attention (cross, masked self, encoder), the next-piece
    distribution, what-if branches, beam search and Eq. 1 explained on the live model. Press ? inside."""
    usage_problem = _usage_problem(text, model, trace, run, ref, beam, alpha)
    if usage_problem:
        raise fail(usage_problem, EXIT_USAGE)
    if text is not None and not text.strip():
        raise fail('the sentence is empty; give a French sentence, e.g. tt inspect "Je suis étudiant."')
    if ref is not None and not ref.strip():
        raise fail('the reference is empty; give an English translation, e.g. --ref "I am a student."')
    if svg_dir is not None and not svg_dir.is_dir():
        raise fail(f"{svg_dir}: not a directory (--svg-dir)")
    if trace is not None:
        from core.analysis.tracefile import load_trace

        replay = load_trace(trace)  # a bad, truncated or newer file: one DataError line, before the terminal check
    if run is not None:
        from core.analysis.scrub import run_checkpoints

        checkpoints = run_checkpoints(run)  # no run or no checkpoint: one line, before the terminal check
    if trace is None and run is None:
        # a bad --model, direction or $TT_MODEL: one line, before the terminal check
        loaded = load_model_for(model_of_direction(model, source, target), "cpu")
    if trace is None and text is None and not sys.stdin.isatty():
        raise fail('no sentence given and stdin is not a terminal; pass one: tt inspect "Je suis étudiant."')
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise fail("tt inspect is interactive and needs a terminal; for a script use tt translate --json")

    from tt_cli.tui.app import make_app

    if run is not None:
        from core.analysis.scrub import scrub

        points = list(
            scrub(run, text, top_k=top_k, checkpoints=checkpoints)
        )  # every checkpoint once, before the terminal opens
        make_app(
            None, top_k=top_k, svg_dir=svg_dir, figure_format=figure_format.value, scrub=points, run_name=run.name
        ).run()
        return
    if trace is not None:
        make_app(
            None, top_k=top_k, svg_dir=svg_dir, figure_format=figure_format.value, trace=replay, trace_name=trace.name
        ).run()
        return
    beam_options = {"beam_size": beam or 4, "alpha": 0.6 if alpha is None else alpha}
    make_app(
        loaded, text, top_k=top_k, svg_dir=svg_dir, figure_format=figure_format.value, reference=ref, **beam_options
    ).run()


def _usage_problem(text, model, trace, run, ref, beam, alpha) -> str:
    """What cannot go together on the command line (exit 2), or ""."""
    if run is not None and (trace is not None or model is not None or ref is not None or text is None):
        return "--run replays a run's checkpoints: give the sentence, and no --trace, --model or --ref with it"
    if trace is not None and (text is not None or model is not None):
        return "--trace replays a saved trace without the model: give no sentence and no --model with it"
    if trace is not None and ref is not None:
        return "--ref teacher-forces the reference on the model: it cannot go with --trace"
    if (trace is not None or run is not None) and (beam is not None or alpha is not None):
        return "--beam and --alpha set beam mode (key b), which needs the model: not with --trace or --run"
    return ""
