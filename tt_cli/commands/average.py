"""`tt average`: one model from the last N checkpoints of a run (§6.1: "averaging the last 5 checkpoints")."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def average(
    run: Annotated[Path | None, typer.Option("--run", "-r", help="A run directory written by `tt train`.")] = None,
    last: Annotated[
        int, typer.Option("--last", "-n", min=1, help="Average this many of the run's latest checkpoints.")
    ] = 5,
    checkpoint: Annotated[
        list[Path] | None,
        typer.Option("--checkpoint", "-c", help="Average these checkpoint dirs instead of --run's latest (repeat)."),
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="The model directory to write (default: RUN/averaged).")
    ] = None,
    weight: Annotated[
        list[float] | None,
        typer.Option(
            "--weight",
            "-w",
            help="One weight per checkpoint, in order (repeat; normalised): a weighted mean, e.g. -c weights "
            "-c runs/c2/averaged -w 0.2 -w 0.8 interpolates a model with its continuation (docs/model.md).",
        ),
    ] = None,
) -> None:
    """Average checkpoint weights into a model directory that `tt translate --model` loads; print its path."""
    from rich.console import Console

    from core.errors import CheckpointError, ConfigError
    from core.train.state import average_checkpoints, list_checkpoints

    if checkpoint:
        paths = list(checkpoint)
    elif run is not None:
        if not run.is_dir():
            raise CheckpointError(f"{run}: no such run directory")
        found = list_checkpoints(run)
        if not found:
            raise CheckpointError(f"{run}: no checkpoints (a run keeps them in {run / 'checkpoints'})")
        if len(found) < last:
            raise CheckpointError(
                f"{run}: --last {last} asks for more checkpoints than the run kept ({len(found)}); "
                f"use --last {len(found)} or train with a larger --keep-last"
            )
        paths = found[-last:]
    else:
        raise ConfigError("say what to average: --run RUN_DIR (its last --last N checkpoints) or --checkpoint DIR …")
    target = out if out is not None else (run / "averaged" if run is not None else None)
    if target is None:
        raise ConfigError("--out DIR is needed with --checkpoint")
    if target.resolve() in {p.resolve() for p in paths}:
        raise ConfigError(f"--out {target} is one of the checkpoints being averaged; choose another directory")
    average_checkpoints(paths, target, weight)
    shares = f", weights {' '.join(f'{w:g}' for w in weight)}" if weight else ""
    Console(stderr=True).print(
        f"averaged {len(paths)} checkpoints ({paths[0].name} … {paths[-1].name}){shares}",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )
    print(target)
