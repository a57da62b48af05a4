"""`tt translate`: French in, English out — one output line per input line, always."""

from __future__ import annotations

import sys
from contextlib import ExitStack
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from tt_cli.errors import EXIT_USAGE, fail
from tt_cli.options import (
    AlphaOpt,
    AttributionChoice,
    BatchOpt,
    BeamOpt,
    DeviceOpt,
    ErrorsChoice,
    ErrorsOpt,
    GreedyOpt,
    ModelOpt,
    QuantizeChoice,
    QuantizeOpt,
    ThreadsOpt,
    check_sampling,
    layer_head_indices,
    load_model_for,
    method_of,
    set_threads,
)
from tt_cli.output import MAX_WARNINGS, JsonWriter, Writer, show_attention, write_n_best, write_plain

if TYPE_CHECKING:
    from tt_cli.figures import DecodingFigures


class AttentionChoice(str, Enum):
    none = "none"
    cross = "cross"
    all = "all"


class FamilyChoice(str, Enum):
    cross = "cross"
    decoder_self = "decoder_self"
    encoder_self = "encoder_self"


class FormatChoice(str, Enum):
    text = "text"
    srt = "srt"
    md = "md"


# Options that show what the model itself does with a line: they hand it the line as given (no
# splitting, protection or case), so their output is the model's own.
MODEL_VIEW = (
    "--raw, --n-best, --attention, --align, --attribution, --trace, --show-attention, --attention-figure "
    "and --distribution-figure"
)


def translate(
    text: Annotated[
        Optional[list[str]],
        typer.Argument(help="Sentences to translate, one output line each. None or '-': read stdin line by line."),
    ] = None,
    input_file: Annotated[Optional[Path], typer.Option("--input", "-i", help="Read lines from FILE (UTF-8).")] = None,
    output: Annotated[
        Optional[Path],
        typer.Option("--output", "-o", help="Write to FILE (atomically: all of it or nothing; - = stdout)."),
    ] = None,
    model: ModelOpt = None,
    device: DeviceOpt = "auto",
    beam: BeamOpt = 4,
    alpha: AlphaOpt = 0.6,
    n_best: Annotated[
        int,
        typer.Option(
            help="Keep N hypotheses per sentence. Plain output becomes Moses n-best lines 'i ||| text ||| score'."
        ),
    ] = 1,
    greedy: GreedyOpt = False,
    sample: Annotated[
        bool, typer.Option("--sample", help="Sample instead of searching (see --temperature, --top-k, --top-p).")
    ] = False,
    temperature: Annotated[float, typer.Option(help="Sampling temperature.")] = 1.0,
    top_k: Annotated[int, typer.Option(help="Sample among the K most probable pieces (0 = all).")] = 0,
    top_p: Annotated[float, typer.Option(help="Nucleus sampling: the smallest set with this much probability.")] = 1.0,
    seed: Annotated[Optional[int], typer.Option(help="Random seed for --sample (same seed, same output).")] = None,
    batch_size: BatchOpt = 32,
    threads: ThreadsOpt = 0,
    json_out: Annotated[
        bool,
        typer.Option(
            "--json",
            help="One JSON object per line: source, translation, confidence, coverage, and its sentences with "
            "their protected spans, glossary terms, word confidences and pieces (README: JSON output). With "
            f"{MODEL_VIEW}: the model's own record of the line (tokens, token_logprobs, score, …).",
        ),
    ] = False,
    attention: Annotated[
        AttentionChoice,
        typer.Option(
            help="With --json: add attention matrices (cross, or all = also encoder/decoder self), rounded to 4 places."
        ),
    ] = AttentionChoice.none,
    align: Annotated[
        bool,
        typer.Option(
            "--align",
            help="With --json: word alignments — each output word to the source word it gives the most "
            "cross-attention mass under the model's alignment rule (alignment.json beside the weights, "
            "found by `tt align --find-heads`; else the mean of the last layer's heads).",
        ),
    ] = False,
    show_attention: Annotated[
        bool,
        typer.Option(
            "--show-attention",
            help="Draw a cross-attention heatmap after each translation (stderr if stdout is not a terminal).",
        ),
    ] = False,
    layer: Annotated[
        int, typer.Option(help="Layer for --show-attention and --attention-figure, counted from 1 (-1 = the last).")
    ] = -1,
    head: Annotated[
        Optional[int],
        typer.Option(help="Head for --show-attention and --attention-figure, from 1 (default: the mean of the heads)."),
    ] = None,
    attention_figure: Annotated[
        Optional[Path],
        typer.Option(
            "--attention-figure",
            help="Write one attention map of the one sentence given to FILE (.png, .svg or .pdf): --family, "
            "--layer, --head, the source and output pieces on the axes. Needs matplotlib: pip install 'tt[figures]'.",
        ),
    ] = None,
    distribution_figure: Annotated[
        Optional[Path],
        typer.Option(
            "--distribution-figure",
            help="Write the next-piece distribution of output step --step (its 10 most probable pieces) as a bar "
            "chart to FILE (.png, .svg or .pdf). Needs matplotlib.",
        ),
    ] = None,
    family: Annotated[
        FamilyChoice,
        typer.Option(help="Attention for --attention-figure: cross, decoder_self (masked) or encoder_self."),
    ] = FamilyChoice.cross,
    step: Annotated[
        int, typer.Option(help="The output step of --distribution-figure (0 = the first piece, -1 = the last).")
    ] = 0,
    errors: ErrorsOpt = ErrorsChoice.strict,
    interactive: Annotated[
        bool,
        typer.Option(
            "--interactive",
            "-I",
            help="A prompt with line editing and history ($XDG_STATE_HOME/tt/history): each line is translated on "
            "Enter; :beam N, :greedy, :sample T, :json on|off, :attention, :inspect, :help, :quit. Ctrl-C cancels "
            "the line, Ctrl-D quits. Needs a terminal (exit 2 without one: pipe lines instead).",
        ),
    ] = False,
    quantize: QuantizeOpt = None,
    attribution: Annotated[
        Optional[AttributionChoice],
        typer.Option(
            help="With --json or --trace: attribute each output piece to the source pieces and the output "
            "prefix (ixg = input×gradient, ig = integrated gradients; see docs/analysis.md)."
        ),
    ] = None,
    ig_steps: Annotated[int, typer.Option(help="Integration steps for --attribution ig.", min=1)] = 32,
    trace_file: Annotated[
        Optional[Path],
        typer.Option(
            "--trace",
            help="Write everything tt inspect shows for the one sentence given (all steps, all "
            "attention, candidates, attribution when asked) to FILE (safetensors), to replay without the model.",
        ),
    ] = None,
    split: Annotated[
        bool,
        typer.Option(
            "--split/--no-split",
            help="Split a line into sentences, translate them in one batch and join them with the line's spacing.",
        ),
    ] = True,
    protect: Annotated[
        bool,
        typer.Option(
            "--protect/--no-protect",
            help="Copy numbers, times, dates, URLs, e-mail, emoji, inline code and markup instead of translating them, "
            "and spell a currency symbol against a number for the model (12,50 € → 12,50 euros).",
        ),
    ] = True,
    names: Annotated[
        bool,
        typer.Option(
            "--names/--no-names",
            help="With --protect: keep people's names (two or more capitalised words inside a sentence: "
            "Angela Merkel) as written; a name the model mangles is translated again with a placeholder.",
        ),
    ] = True,
    accents: Annotated[
        bool,
        typer.Option(
            "--accents/--no-accents",
            help="Give French typed without accents ('je suis etudiant') its accents back where the model's "
            "vocabulary knows the word; a sentence with any accent is left as it is.",
        ),
    ] = True,
    doc_format: Annotated[
        Optional[FormatChoice],
        typer.Option(
            "--format",
            help="text: one output line per input line · srt: subtitles (numbers and timestamps kept) · md: "
            "Markdown (code, URLs and link targets kept). Default: from the --input extension (.srt, .md), else text.",
        ),
    ] = None,
    glossary: Annotated[
        Optional[Path],
        typer.Option(help="A French<TAB>English TSV of terms to force (a term that cannot be placed is reported)."),
    ] = None,
    raw: Annotated[
        bool,
        typer.Option(
            "--raw",
            help="The model alone on each line as given: no splitting, protection or case; --json writes the "
            "model's own record (tokens, token_ids, token_logprobs, score), as tt serve's /v1/translate does.",
        ),
    ] = False,
    flag_below: Annotated[
        Optional[float],
        typer.Option(
            help="Name on stderr each line whose confidence (0–1: the geometric-mean probability of the "
            "output pieces of its weakest sentence) is below X.",
            min=0.0,
            max=1.0,
        ),
    ] = None,
    local: Annotated[
        bool,
        typer.Option(
            "--local",
            help="Translate in this process even when a `tt serve` of the same model is running "
            "(by default the lines go to it: no model to load; TT_SERVER=URL names one, TT_SERVER= is --local).",
        ),
    ] = False,
) -> None:
    """Translate French to English. Defaults: beam search, beam 4, length penalty α 0.6 (the paper's).

    Input: arguments, --input FILE, or stdin: one line in, one line out, in order; an empty line gives an empty line. Lines longer than the model's max length are truncated, with a warning on stderr.

    Exit codes: 0 ok · 1 bad input, model or option · 2 usage · 130 interrupted.
    """
    if not interactive:  # the prompt's :sample may use them later
        check_sampling(sample, temperature=temperature, top_k=top_k, top_p=top_p)
    # How to decode; the prompt takes these as its starting mode, the rest apply to a run over lines.
    decoding = dict(
        beam=beam,
        alpha=alpha,
        method=method_of(greedy, sample),
        temperature=temperature,
        top_k=top_k,
        top_p=top_p,
        seed=seed,
    )
    # what core/text does around the model
    settings = dict(split=split, protect=protect, names=names, accents=accents, glossary=glossary)
    if interactive:
        other_input = bool(text) or input_file is not None or output is not None
        return _interactive(model, device, decoding, quantize, json_out, threads, other_input, settings)
    # Usage checks first: they need neither torch nor the model, so a mistake is reported at once.
    layer, head = layer_head_indices(layer, head)  # counted from 1 on the command line, 0-based from here
    figures = _figures(attention_figure, distribution_figure, family, layer, head, step, text)
    model_view = (
        raw
        or n_best > 1
        or attention != AttentionChoice.none
        or align
        or attribution
        or trace_file
        or show_attention
        or figures
    )
    fmt = _check_text_usage(model_view, input_file, doc_format, glossary, flag_below)
    if (attention != AttentionChoice.none or align) and not json_out:
        raise fail("--attention and --align need --json", EXIT_USAGE)
    if attribution is not None and not (json_out or trace_file):
        raise fail("--attribution needs --json or --trace", EXIT_USAGE)
    if trace_file is not None and len(text or []) != 1:
        raise fail("--trace writes one sentence's trace: give exactly one sentence as an argument", EXIT_USAGE)
    args = list(text or [])
    from_stdin = not args or args == ["-"]
    if input_file is not None and not from_stdin:
        raise fail("give sentences as arguments or --input FILE, not both", EXIT_USAGE)
    if input_file is None and from_stdin and sys.stdin.isatty():
        raise fail(
            'nothing to translate: pass a sentence (tt translate "Je suis étudiant"), --input FILE, '
            "or pipe lines on stdin",
            EXIT_USAGE,
        )
    if input_file is not None and not input_file.is_file():
        raise fail(f"{input_file}: no such file" if not input_file.exists() else f"{input_file}: not a file")
    from tt_cli import bulk, remote, textrun  # the standard library only, until one of them is used

    few = not from_stdin and input_file is None
    request = remote.Request(
        model, decoding, n_best, batch_size, attention.value, align, json_out, threads, few, device
    )
    here = {
        "--trace": trace_file,
        "--attribution": attribution,
        "--show-attention": show_attention,
        "--attention-figure": attention_figure,
        "--distribution-figure": distribution_figure,
        "--quantize": quantize,
    }
    # torchrun's shares run the model alone on each line (--raw and the other model views); the text
    # pipeline — sentences, protected spans, case, glossary — runs in one process.
    if bulk.distributed() and not model_view:
        raise fail(
            "under torchrun, tt translate shares out lines with --raw (the text pipeline runs in one process)",
            EXIT_USAGE,
        )
    if bulk.distributed():  # under torchrun: the lines shared out among the processes, one output
        lines = lambda stack: _lines(stack, input_file, None if from_stdin else args, errors.value)  # noqa: E731
        return bulk.run(request, lines, output, refused=here)
    # --layer and --head are checked against the model, which a warm call does not load
    here_only = local or any(here.values()) or device != "auto" or layer != -1 or head is not None
    warm = None if here_only else remote.connect(request)
    if warm is not None and model_view:
        return remote.run(warm, request, None if from_stdin else args, input_file, output, errors.value)
    job = textrun.TextJob(
        input_file, None if from_stdin else args, output, fmt, settings, json_out, flag_below, errors.value
    )
    if warm is not None:  # the server runs the pipeline: neither torch nor the model here
        from tt_cli import remote_text

        return remote_text.run(warm, request, job)

    from core.decode.translate import TranslateOptions

    options = TranslateOptions(
        **decoding,
        n_best=n_best,
        batch_size=batch_size,
        with_attention=show_attention
        or align
        or attention != AttentionChoice.none
        or trace_file is not None
        or attribution is not None
        or figures is not None,
        **({"n_candidates": 10} if distribution_figure is not None else {}),
    ).validate()
    from core.files import check_output

    for path in (p for p in (output, trace_file, attention_figure, distribution_figure) if p is not None):
        check_output(path)  # a bad output path fails before the model loads
    set_threads(threads, few=not from_stdin and input_file is None)
    if not model_view:
        return textrun.run(
            job,
            lambda: textrun.local(lambda: _load(model, device, quantize, layer, head, family.value), options, json_out),
        )
    loaded = _load(model, device, quantize, layer, head, family.value)
    job = Job(
        writer=_writer(loaded, json_out, n_best, attention, align, attribution),
        attribution=attribution.value if attribution else None,
        ig_steps=ig_steps,
        trace_file=trace_file,
        show_attention=(layer, head) if show_attention else None,
        figures=figures,
    )
    with ExitStack() as stack:
        lines = _lines(stack, input_file, args if not from_stdin else None, errors.value)
        out = _output(stack, output)
        run(loaded, lines, options, out, job, to_terminal=output is None and sys.stdout.isatty())


def _interactive(model, device, decoding: dict, quantize, json_out: bool, threads: int, other_input: bool, settings):
    """`tt translate -I`: the prompt, starting with these decoding options and text settings."""
    if quantize is not None:
        raise fail("--quantize is not available with -I yet", EXIT_USAGE)
    from core.decode.translate import TranslateOptions
    from tt_cli.repl import interactive as repl
    from tt_cli.textrun import text_options

    options = TranslateOptions(**decoding)
    text = text_options(**settings)
    return repl(model, device, options, json_out=json_out, threads=threads, other_input=other_input, text=text)


def _check_text_usage(model_view, input_file, doc_format, glossary, flag_below) -> str:
    """The text format of this run (text, srt, md); the model-view options cannot mix with the text ones."""
    from tt_cli.textrun import document_format

    fmt = document_format(input_file, doc_format.value if doc_format else None)
    if model_view and (glossary is not None or flag_below is not None or fmt != "text"):
        raise fail(f"--glossary, --flag-below and --format srt|md cannot be used with {MODEL_VIEW}", EXIT_USAGE)
    return fmt


def _figures(attention_figure, distribution_figure, family, layer, head, step, text):
    """What --attention-figure and --distribution-figure ask for (None without them), checked before any work."""
    if attention_figure is None and distribution_figure is None:
        return None
    from tt_cli.figures import DecodingFigures, require

    if len(text or []) != 1 or text == ["-"]:
        raise fail(
            "--attention-figure and --distribution-figure draw one sentence: give exactly one as an argument",
            EXIT_USAGE,
        )
    for option, path in (("--attention-figure", attention_figure), ("--distribution-figure", distribution_figure)):
        if path is not None:
            require(option, path)  # matplotlib there, a format it writes: one line, before the model loads
    return DecodingFigures(attention_figure, distribution_figure, family.value, layer, head, step)


def _load(model: Path | None, device: str, quantize: QuantizeChoice | None, layer: int, head: int | None, family: str):
    """The model, quantized when asked, after checking that --layer (of `family`) and --head exist in it."""
    loaded = load_model_for(model, device, packed=quantize is None)
    if quantize is not None:
        import dataclasses

        from core.model.fast import fast_model

        loaded = dataclasses.replace(loaded, model=fast_model(loaded.model, quantize.value))  # int8: CPU only
    from core.model.attention import n_layers_of

    n_layers, n_heads = n_layers_of(loaded.cfg, family), loaded.cfg.h
    if not -n_layers <= layer < n_layers:
        side = "encoder" if family == "encoder_self" else "decoder"
        shown = layer + 1 if layer >= 0 else layer
        raise fail(f"--layer {shown}: this model has {n_layers} {side} layers (1..{n_layers}, or -1 for the last)")
    if head is not None and not 0 <= head < n_heads:
        raise fail(f"--head {head + 1}: this model has {n_heads} heads (1..{n_heads})")
    return loaded


def _writer(loaded, json_out: bool, n_best: int, attention: AttentionChoice, align: bool, attribution) -> Writer:
    """The one writer of this run's output format."""
    if not json_out:
        return write_n_best if n_best > 1 else write_plain
    rule = None
    if align:
        from core.align.links import load_rule

        rule = load_rule(loaded.path).check(loaded.cfg.n_decoder_layers, loaded.cfg.h)
    return JsonWriter(attention.value, rule, loaded.model, attributed=attribution is not None)


def _lines(stack: ExitStack, input_file: Path | None, args: list[str] | None, errors: str):
    from core.decode.lines import lines_of

    return lines_of(stack, input_file, args, errors)


def _output(stack: ExitStack, output: Path | None):
    if output is None:
        return sys.stdout
    from core.files import open_output

    return stack.enter_context(open_output(output))


@dataclass(frozen=True)
class Job:
    """What to do with each translated sentence besides writing it."""

    writer: Writer
    attribution: str | None = None  # "ixg" or "ig": attribute each output piece
    ig_steps: int = 32
    trace_file: Path | None = None  # save the sentence's trace here
    show_attention: tuple[int, int | None] | None = None  # (layer, head) of a heatmap after each sentence
    figures: DecodingFigures | None = None  # --attention-figure, --distribution-figure


def run(loaded, lines, options, out, job: Job, *, to_terminal: bool) -> None:
    """Translate `lines`, writing each sentence as soon as it is done; warnings go to stderr."""
    from core.decode.translate import translate_lines

    console = None
    if job.show_attention:  # rich costs import time; only the heatmap needs it
        from rich.console import Console

        console = Console(stderr=not to_terminal, highlight=False)
    warned = 0
    for t in translate_lines(loaded, lines, options):
        for w in t.warnings:
            warned += 1
            if warned <= MAX_WARNINGS:
                print(f"tt: warning: {w}", file=sys.stderr)  # one line each, never wrapped
        attributed = None
        if job.attribution is not None and t.token_ids:
            from core.analysis.attribute import attribute

            attributed = attribute(
                loaded, t.source_tokens, [s.token for s in t.steps], method=job.attribution, ig_steps=job.ig_steps
            )
        if job.trace_file is not None and t.steps is not None:
            from core.analysis.tracefile import save_trace

            save_trace(
                job.trace_file,
                t.source_trace,
                t.steps,
                translation=t.text,
                attribution=attributed,
                model=str(loaded.path),
            )
        job.writer(out, t, attributed)
        out.flush()
        if console is not None and t.steps:
            show_attention(console, t, *job.show_attention)
        if job.figures is not None and t.steps is not None:
            for path in job.figures.write(t.source_trace, t.steps):
                print(f"tt: wrote {path}", file=sys.stderr)
    if warned > MAX_WARNINGS:
        print(f"tt: warning: {warned - MAX_WARNINGS} more warning(s) not shown", file=sys.stderr)
