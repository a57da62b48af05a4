"""Options that several commands share, written once so that their names, defaults and help agree.

Each is an `Annotated` type a command uses as a parameter's annotation (`model: ModelOpt = None`).
Only typer and the standard library are imported here: `tt --help` must stay instant.
"""

from __future__ import annotations

import copy
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

from tt_cli.errors import fail

# -- the model and where it runs ---------------------------------------------------------------------
ModelOpt = Annotated[
    Path | None, typer.Option("--model", "-m", help="Model directory (default: $TT_MODEL, else the shipped model).")
]
DeviceOpt = Annotated[str, typer.Option(help="auto, cpu, cuda, cuda:N or mps.")]
SourceOpt = Annotated[
    str | None,
    typer.Option("--from", "-s", help="Source language (fr, en): the shipped model of that direction. Default: fr."),
]
TargetOpt = Annotated[
    str | None, typer.Option("--to", "-t", help="Target language (en, fr), as --from; either one names the direction.")
]


def model_of_direction(model: Path | None, source: str | None, target: str | None) -> Path | None:
    """--model, or the shipped model of --from/--to (core.checkpoint.model_for), as one clear line on a mistake."""
    if source is None and target is None:
        return model  # torch stays unloaded: a warm `tt translate` never needs it
    from core.checkpoint import model_for
    from core.errors import ConfigError

    try:
        return model_for(model, source, target)
    except ConfigError as exc:
        raise fail(str(exc)) from None


class QuantizeChoice(str, Enum):
    fp32 = "fp32"
    int8 = "int8"
    bf16 = "bf16"


QuantizeOpt = Annotated[
    QuantizeChoice | None,
    typer.Option(
        "--precision",
        "--quantize",
        help="fp32 (exact), int8 (dynamic int8 Linear layers with a scale per row, CPU; 1.4-1.6x the fp32 speed) "
        "or bf16 weights. Default: the model card's choice (docs/precision.md): int8 for a model whose test sets "
        "all stayed within 0.3 BLEU of fp32 in int8 when it shipped, else fp32; fp32 wherever exact "
        "numbers are shown (--trace, --attribution, --show-attention, the figures, -I).",
    ),
]
EvalQuantizeOpt = Annotated[
    QuantizeChoice | None,
    typer.Option(
        "--precision",
        "--quantize",
        help="The precision to score: fp32 (the default: the cards' figures), int8 or bf16 (docs/precision.md).",
    ),
]
ThreadsOpt = Annotated[
    int,
    typer.Option(
        help="CPU threads for torch. 0 = auto: torch's default, but 1 for sentences given as arguments "
        "(a few short sentences decode fastest on one thread, and start-up stays low).",
    ),
]


def load_model_for(model: Path | None, device: str = "auto", *, packed: bool = True):
    """The model a command runs on: --model (else $TT_MODEL, else the shipped model) on --device.
    packed: oneDNN-packed Linear layers for CPU inference (False when the weights will be quantized)."""
    import os

    from core.checkpoint import load_model
    from core.device import resolve_device
    from core.errors import CheckpointError

    try:
        return load_model(model, device=resolve_device(device), packed=packed)
    except CheckpointError as exc:
        if model is None and os.environ.get("TT_MODEL"):  # a path the user did not type here
            raise CheckpointError(f"{exc} (the path is $TT_MODEL's; unset it for the shipped model)") from None
        raise


def default_mode(model: Path | None, device: str) -> str | None:
    """The fast_model mode `tt translate` and `tt serve` run a model in when --precision is not given: its card's
    default precision (core.card.default_precision: int8 where int8 kept every test set within 0.3 BLEU), where the model runs on
    the CPU (int8 runs nowhere else); None: fp32."""
    from core.card import default_model_dir, quantize_mode

    mode = quantize_mode(None, model if model is not None else default_model_dir())
    if mode == "int8":
        from core.device import resolve_device  # imports torch: called where a model loads

        return mode if resolve_device(device).type == "cpu" else None
    return mode


def load_model_in(model: Path | None, device: str, mode: str | None, *, reverse: bool = False):
    """`load_model_for`, converted to a fast_model `mode` ("int8", "bf16"; None: the fp32 model, packed); with
    `reverse`, the shipped model of the other direction beside it (--rerank: core.decode.rerank.with_reverse)."""
    loaded = load_model_for(model, device, packed=mode is None)
    if mode is not None:
        import dataclasses

        from core.model.fast import fast_model

        loaded = dataclasses.replace(loaded, model=fast_model(loaded.model, mode))  # int8: CPU only
    if reverse:
        from core.decode.rerank import with_reverse

        loaded = with_reverse(loaded)
    return loaded


def layer_head_indices(layer: int, head: int | None, prefix: str = "") -> tuple[int, int | None]:
    """--layer and --head as a person counts them (from 1; -1 = the last layer) → 0-based indices.
    Whether they exist is checked once the model is loaded (core.model.attention.layer_index)."""
    if layer == 0 or head is not None and head < 1:
        option = f"--{prefix}{'layer' if layer == 0 else 'head'}"
        raise fail(f"{option} counts from 1 (the first is 1; -1 = the last layer)")
    return (layer - 1 if layer > 0 else layer), (None if head is None else head - 1)


def step_index(step: int) -> int:
    """--step as a person counts decoding steps (from 1, as tt inspect shows them; -1 = the last) → an index."""
    if step == 0:
        raise fail("--step counts from 1 (the first piece is step 1; -1 = the last)")
    return step - 1 if step > 0 else step


def check_sampling(sample: bool, *, temperature: float, top_k: int, top_p: float) -> None:
    """--temperature, --top-k and --top-p shape sampling only: given without --sample they would be
    silently ignored, so they are an error instead (the defaults are 1.0, 0 and 1.0)."""
    from core.errors import ConfigError

    given = [
        name
        for name, off in [("--temperature", temperature == 1.0), ("--top-k", top_k == 0), ("--top-p", top_p == 1.0)]
        if not off
    ]
    if given and not sample:
        raise ConfigError(f"{' and '.join(given)} shape sampling only: add --sample (or leave them out)")


def set_threads(threads: int, few: bool) -> None:
    """Apply --threads. Thread start-up and synchronisation cost more than they save on the
    small matrices of a few sentences, and much more when other work shares the cores."""
    import torch

    if threads < 0:
        raise fail(f"--threads must be 0 (auto) or positive, got {threads}")
    if threads or few:
        torch.set_num_threads(threads or 1)


# -- decoding (translate, eval) ------------------------------------------------------------------------
BeamOpt = Annotated[int, typer.Option(help="Beam size (the paper's §6.1 value).")]
AlphaOpt = Annotated[float, typer.Option(help="Length penalty α for beam scores (the paper's value).")]
GreedyOpt = Annotated[bool, typer.Option("--greedy", help="Greedy search: fastest, a little worse than beam 4.")]
RerankOpt = Annotated[
    bool,
    typer.Option(
        "--rerank",
        help="Rerank the beam's finished translations with the shipped model of the other direction, by how well "
        "each explains the source back: +0.1 to +1.0 BLEU on every dev and test set of both shipped directions, "
        "about twice the time (docs/model.md).",
    ),
]
BatchOpt = Annotated[int, typer.Option(help="Sentences per batch; lines are length-sorted within batches.")]


# -- reading text -------------------------------------------------------------------------------------
class AttributionChoice(str, Enum):
    """Gradient attribution methods (core.analysis.attribute): tt translate --attribution, tt analyze attribute."""

    ixg = "ixg"  # input × gradient
    ig = "ig"  # integrated gradients


class ErrorsChoice(str, Enum):
    strict = "strict"
    replace = "replace"


ErrorsOpt = Annotated[
    ErrorsChoice, typer.Option(help="Invalid UTF-8 input: strict = stop with file:line; replace = use U+FFFD.")
]

# -- corpora (tt data) --------------------------------------------------------------------------------
CacheDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--cache-dir",
        envvar="TT_CACHE",
        show_envvar=True,
        help="Where the corpora go (default: $XDG_CACHE_HOME/tt/data, that is ~/.cache/tt/data).",
    ),
]


def in_panel(option: Any, panel: str) -> Any:
    """The same option listed under `panel` in --help (tt train groups its many options so)."""
    info = copy.copy(option.__metadata__[0])
    info.rich_help_panel = panel
    return Annotated[option.__origin__, info]
