"""`tt translate` as one job: the command's options in one record, checked once, run by one runner.

    options ──TranslateJob(...)──▶ .validated() (every usage check, the output path checked once)
            ──run(job)──▶ the prompt · torchrun's shares · a warm `tt serve` · core/text here · the model alone

Each runner below is the one for its mode; the command itself only declares its options (as fastapi-cli's
commands and `tt serve` do).
"""

from __future__ import annotations

import sys
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path

from core.decode.method import TranslateOptions
from tt_cli.errors import EXIT_USAGE, fail

# Options that show what the model itself does with a line: they hand it the line as given (no
# splitting, protection or case), so their output is the model's own.
MODEL_VIEW = (
    "--raw, --n-best, --attention, --align, --attribution, --trace, --show-attention, --attention-figure "
    "and --distribution-figure"
)


@dataclass(frozen=True)
class TranslateJob:
    """Everything `tt translate` was asked, as typed (the command's defaults included)."""

    text: list[str] | None = None  # sentences given as arguments (None or ["-"]: stdin)
    input_file: Path | None = None
    output: Path | None = None
    model: Path | None = None
    device: str = "auto"
    quantize: str | None = None
    threads: int = 0
    local: bool = False  # never ask a running `tt serve`
    options: TranslateOptions = field(default_factory=TranslateOptions)  # decoding, --n-best and --batch-size too
    json_out: bool = False
    attention: str = "none"
    align: bool = False
    attribution: str | None = None
    ig_steps: int = 32
    trace_file: Path | None = None
    show_attention: bool = False
    layer: int = -1  # indices (the options count from 1; tt_cli.options.layer_head_indices converts)
    head: int | None = None
    attention_figure: Path | None = None
    distribution_figure: Path | None = None
    family: str = "cross"  # of --attention-figure (and of --layer's check)
    step: int = 0  # of --distribution-figure
    figures: object | None = None  # tt_cli.figures.DecodingFigures, once validated
    settings: dict = field(default_factory=dict)  # core/text's: split, protect, names, accents, glossary
    doc_format: str | None = None  # --format as given
    fmt: str = "text"  # the format of this run, once validated
    flag_below: float | None = None
    errors: str = "strict"
    raw: bool = False
    interactive: bool = False

    @property
    def model_view(self) -> bool:
        return bool(
            self.raw
            or self.options.n_best > 1
            or self.attention != "none"
            or self.align
            or self.attribution
            or self.trace_file
            or self.show_attention
            or self.attention_figure
            or self.distribution_figure
        )

    @property
    def exact(self) -> bool:
        """Asked for what shows the model's own numbers (gradients, a trace, attention drawn): fp32 unless
        --precision says otherwise, whatever the card's default."""
        return bool(
            self.attribution
            or self.trace_file
            or self.show_attention
            or self.attention_figure
            or self.distribution_figure
        )

    def precision_mode(self) -> str | None:
        """The fast_model mode this job runs its model in (None: fp32): --precision, else fp32 where the job is
        `exact`, else the model card's default (tt_cli.options.default_mode)."""
        from core.card import fast_mode
        from tt_cli.options import default_mode

        if self.quantize is not None:
            return fast_mode(self.quantize)
        return None if self.exact else default_mode(self.model, self.device)

    @property
    def from_stdin(self) -> bool:
        return not self.text or self.text == ["-"]

    @property
    def args(self) -> list[str] | None:
        """The sentences given as arguments; None: read --input or stdin."""
        return None if self.from_stdin else list(self.text or [])

    @property
    def few(self) -> bool:
        """A few sentences as arguments (threads are chosen for a short run)."""
        return not self.from_stdin and self.input_file is None

    def validated(self) -> TranslateJob:  # noqa: C901 - one independent usage check per line, in the order the user reads them
        """The job with its format resolved, after every check that needs neither torch nor the model: a
        mistake is one line and exit 1 or 2 before anything loads, and nothing is written."""
        from tt_cli.options import check_sampling

        d = self.options
        if self.interactive:  # the prompt's :sample may use the sampling options later
            return self
        check_sampling(d.method == "sample", temperature=d.temperature, top_k=d.top_k, top_p=d.top_p)
        figures = self._figures()
        from tt_cli.textrun import document_format

        fmt = document_format(self.input_file, self.doc_format)
        if self.model_view and (
            self.settings.get("glossary") is not None or self.flag_below is not None or fmt != "text"
        ):
            raise fail(f"--glossary, --flag-below and --format srt|md cannot be used with {MODEL_VIEW}", EXIT_USAGE)
        if (self.attention != "none" or self.align) and not self.json_out:
            raise fail("--attention and --align need --json", EXIT_USAGE)
        if self.attribution is not None and not (self.json_out or self.trace_file):
            raise fail("--attribution needs --json or --trace", EXIT_USAGE)
        if self.trace_file is not None and len(self.text or []) != 1:
            raise fail("--trace writes one sentence's trace: give exactly one sentence as an argument", EXIT_USAGE)
        if self.input_file is not None and not self.from_stdin:
            raise fail("give sentences as arguments or --input FILE, not both", EXIT_USAGE)
        if self.input_file is None and self.from_stdin and sys.stdin.isatty():
            raise fail(
                'nothing to translate: pass a sentence (tt translate "Je suis étudiant"), --input FILE, '
                "or pipe lines on stdin",
                EXIT_USAGE,
            )
        if self.input_file is not None and not self.input_file.is_file():
            what = "no such file" if not self.input_file.exists() else "not a file"
            raise fail(f"{self.input_file}: {what}")
        if fmt != "text" and self.args is not None:
            raise fail("--format srt|md translates a document: give it with --input FILE or on stdin", EXIT_USAGE)
        from tt_cli import bulk

        if bulk.distributed() and not self.model_view:
            raise fail(
                "under torchrun, tt translate shares out lines with --raw (the text pipeline runs in one process)",
                EXIT_USAGE,
            )
        from core.files import check_output

        for path in (self.output, self.trace_file, self.attention_figure, self.distribution_figure):
            if path is not None:
                check_output(path)  # the one check of an output path, before the model loads
        return replace(self, fmt=fmt, figures=figures)

    def _figures(self):
        """What --attention-figure and --distribution-figure ask for (None without them), checked before any work."""
        if self.attention_figure is None and self.distribution_figure is None:
            return None
        from tt_cli.figures import DecodingFigures, require

        if len(self.text or []) != 1 or self.text == ["-"]:
            raise fail(
                "--attention-figure and --distribution-figure draw one sentence: give exactly one as an argument",
                EXIT_USAGE,
            )
        for option, path in (
            ("--attention-figure", self.attention_figure),
            ("--distribution-figure", self.distribution_figure),
        ):
            if path is not None:
                require(option, path)  # matplotlib there, a format it writes: one line, before the model loads
        return DecodingFigures(
            self.attention_figure, self.distribution_figure, self.family, self.layer, self.head, self.step
        )


def run(job: TranslateJob) -> None:
    """Run a validated job in its mode."""
    if job.interactive:
        return _interactive(job)
    from tt_cli import bulk, remote, textrun  # the standard library only, until one of them is used

    request = remote.Request(
        job.model,
        job.options,
        job.attention,
        job.align,
        job.json_out,
        job.threads,
        job.few,
        job.device,
    )
    here = {
        "--trace": job.trace_file,
        "--attribution": job.attribution,
        "--show-attention": job.show_attention,
        "--precision": job.quantize,
        "--rerank": job.options.rerank > 0,  # the reverse model is loaded here
        "--attention-figure": job.attention_figure,
        "--distribution-figure": job.distribution_figure,
    }
    if bulk.distributed():  # under torchrun: the lines shared out among the processes, one output
        lines = lambda stack: _lines(stack, job)  # noqa: E731
        return bulk.run(request, lines, job.output, refused=here)
    # --layer and --head are checked against the model, which a warm call does not load
    here_only = job.local or any(here.values()) or job.device != "auto" or job.layer != -1 or job.head is not None
    warm = None if here_only else remote.connect(request)
    if warm is not None and job.model_view:
        return remote.run(warm, request, job.args, job.input_file, job.output, job.errors)
    text_job = textrun.TextJob(
        job.input_file, job.args, job.output, job.fmt, job.settings, job.json_out, job.flag_below, job.errors
    )
    if warm is not None:  # the server runs the pipeline: neither torch nor the model here
        from tt_cli import remote_text

        return remote_text.run(warm, request, text_job)
    options = _decoding_options(job)
    from tt_cli.options import set_threads

    set_threads(job.threads, few=job.few)
    if not job.model_view:
        return textrun.run(text_job, lambda: textrun.local(lambda: _load(job), options, job.json_out))
    from tt_cli.model_view import ModelView, run_model_view

    loaded = _load(job)
    view = ModelView.of(loaded, job)
    with ExitStack() as stack:
        out = sys.stdout
        if job.output is not None:
            from core.files import open_output

            out = stack.enter_context(open_output(job.output))
        run_model_view(
            loaded, _lines(stack, job), options, out, view, to_terminal=job.output is None and sys.stdout.isatty()
        )


def _decoding_options(job: TranslateJob) -> TranslateOptions:
    with_attention = bool(
        job.show_attention
        or job.align
        or job.attention != "none"
        or job.trace_file is not None
        or job.attribution
        or job.figures is not None
    )
    return replace(
        job.options,
        with_attention=with_attention,
        **({"n_candidates": 10} if job.distribution_figure is not None else {}),
    ).validate()


def _interactive(job: TranslateJob):
    """`tt translate -I`: the prompt, starting with these decoding options and text settings."""
    from tt_cli.repl import interactive as repl
    from tt_cli.textrun import text_options

    other_input = bool(job.text) or job.input_file is not None or job.output is not None
    return repl(
        job.model,
        job.device,
        # the command's decoding; the prompt translates a line at a time, with neither --n-best nor --batch-size
        replace(job.options, n_best=1, batch_size=TranslateOptions.batch_size),
        json_out=job.json_out,
        threads=job.threads,
        other_input=other_input,
        text=text_options(**job.settings),
        precision=job.quantize,
    )


def _load(job: TranslateJob):
    """The model, quantized when asked, after checking that --layer (of --family) and --head exist in it."""
    from tt_cli.options import load_model_in

    loaded = load_model_in(job.model, job.device, job.precision_mode(), reverse=job.options.rerank > 0)
    from core.model.attention import n_layers_of

    n_layers, n_heads = n_layers_of(loaded.cfg, job.family), loaded.cfg.h
    if not -n_layers <= job.layer < n_layers:
        side = "encoder" if job.family == "encoder_self" else "decoder"
        shown = job.layer + 1 if job.layer >= 0 else job.layer  # as the option counts: from 1
        raise fail(f"--layer {shown}: this model has {n_layers} {side} layers (1..{n_layers}, or -1 for the last)")
    if job.head is not None and not 0 <= job.head < n_heads:
        raise fail(f"--head {job.head + 1}: this model has {n_heads} heads (1..{n_heads})")
    return loaded


def _lines(stack: ExitStack, job: TranslateJob):
    from core.decode.lines import lines_of

    return lines_of(stack, job.input_file, job.args, job.errors)
