"""`tt translate`: French in, English out — one output line per input line, always."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from core.decode.method import TranslateOptions, method_of
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
    QuantizeOpt,
    RerankOpt,
    SourceOpt,
    TargetOpt,
    ThreadsOpt,
    layer_head_indices,
    model_of_direction,
    step_index,
)
from tt_cli.translate_job import MODEL_VIEW


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
    source: SourceOpt = None,
    target: TargetOpt = None,
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
    rerank: RerankOpt = False,
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
        int, typer.Option(help="The output step of --distribution-figure, counted from 1 (-1 = the last).")
    ] = 1,
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
    """Translate French to English (--from en --to fr: English to French, where that model is shipped). Defaults: beam search, beam 4, length penalty α 0.6 (the paper's).

    Input: arguments, --input FILE, or stdin: one line in, one line out, in order; an empty line gives an empty line. A sentence too long for the model is translated in parts cut at clauses (with --raw: truncated, with a warning).

    Exit codes: 0 ok · 1 bad input, model or option · 2 usage · 130 interrupted.
    """
    from core.decode.method import CHANNEL_WEIGHT
    from tt_cli.translate_job import TranslateJob, run

    layer, head = layer_head_indices(layer, head)  # counted from 1 on the command line, 0-based from here
    step = step_index(step)
    job = TranslateJob(
        text=text,
        input_file=input_file,
        output=output,
        model=model_of_direction(model, source, target),
        device=device,
        quantize=quantize.value if quantize else None,
        threads=threads,
        local=local,
        options=TranslateOptions(
            beam=beam,
            alpha=alpha,
            method=method_of(greedy, sample),
            temperature=temperature,
            top_k=top_k,
            top_p=top_p,
            seed=seed,
            n_best=n_best,
            batch_size=batch_size,
            rerank=CHANNEL_WEIGHT if rerank else 0.0,
        ),
        json_out=json_out,
        attention=attention.value,
        align=align,
        attribution=attribution.value if attribution else None,
        ig_steps=ig_steps,
        trace_file=trace_file,
        show_attention=show_attention,
        layer=layer,
        head=head,
        attention_figure=attention_figure,
        distribution_figure=distribution_figure,
        family=family.value,
        step=step,
        settings=dict(split=split, protect=protect, names=names, accents=accents, glossary=glossary),
        doc_format=doc_format.value if doc_format else None,
        flag_below=flag_below,
        errors=errors.value,
        raw=raw,
        interactive=interactive,
    )
    run(job.validated())
