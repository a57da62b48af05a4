"""`tt translate` with a model view (--raw, --n-best, --attention, --align, --attribution, --trace,
--show-attention): the model alone on each line as given, each sentence written as soon as it is done
by the one writer of the run's output format, its trace saved or its attention drawn when asked."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from tt_cli.output import JsonWriter, Warnings, Writer, show_attention, where, write_n_best, write_plain


@dataclass(frozen=True)
class ModelView:
    """What to do with each translated sentence besides writing it."""

    writer: Writer
    attribution: str | None = None  # "ixg" or "ig": attribute each output piece
    ig_steps: int = 32
    trace_file: Path | None = None  # save the sentence's trace here
    show_attention: tuple[int, int | None] | None = None  # (layer, head) of a heatmap after each sentence
    figures: object | None = None  # tt_cli.figures.DecodingFigures: --attention-figure, --distribution-figure

    @classmethod
    def of(cls, loaded, job) -> ModelView:
        """What a validated TranslateJob (tt_cli.translate_job) asks of each sentence."""
        return cls(
            writer=_writer(loaded, job.json_out, job.options.n_best, job.attention, job.align, job.attribution),
            attribution=job.attribution,
            ig_steps=job.ig_steps,
            trace_file=job.trace_file,
            show_attention=(job.layer, job.head) if job.show_attention else None,
            figures=job.figures,
        )


def run_model_view(loaded, lines, options, out, job: ModelView, *, to_terminal: bool) -> None:
    """Translate `lines`, writing each sentence as soon as it is done; warnings go to stderr."""
    from core.decode.translate import translate_lines

    console = None
    if job.show_attention:  # rich costs import time; only the heatmap needs it
        from rich.console import Console

        console = Console(stderr=not to_terminal, highlight=False)
    warn = Warnings()
    for t in translate_lines(loaded, lines, options):
        warn(where(t.index, t.warnings))
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
    warn.close()


def _writer(loaded, json_out: bool, n_best: int, attention: str, align: bool, attribution) -> Writer:
    """The one writer of this run's output format."""
    if not json_out:
        return write_n_best if n_best > 1 else write_plain
    rule = None
    if align:
        from core.align.links import load_rule

        rule = load_rule(loaded.path).check(loaded.cfg.n_decoder_layers, loaded.cfg.h)
    return JsonWriter(attention, rule, loaded.model, attributed=attribution is not None)
