"""`tt translate`: French in, English out — one output line per input line, always."""

from __future__ import annotations

import json
import sys
from contextlib import ExitStack
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from tt_cli.errors import fail
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
    ThreadsOpt,
    set_threads,
)

EXIT_USAGE = 2
MAX_WARNINGS = 20  # after this many, only a count at the end (a huge file must not flood stderr)


class AttentionChoice(str, Enum):
    none = "none"
    cross = "cross"
    all = "all"


class QuantizeChoice(str, Enum):
    int8 = "int8"
    bf16 = "bf16"


def _json_line(obj: dict) -> str:
    # U+2028/U+2029/U+0085 are legal unescaped in JSON but split lines for many readers: escape them.
    text = json.dumps(obj, ensure_ascii=False)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029").replace("\x85", "\\u0085")


def _safe(text: str) -> str:
    """Text that can be written as UTF-8 (a shell argument may carry lone surrogates)."""
    return text.encode("utf-8", "replace").decode("utf-8")


def _round(matrix, digits: int = 4) -> list:
    return [[round(float(x), digits) for x in row] for row in matrix]


def to_json(t, attention: str, align, model=None) -> dict:
    """The --json object of one Translation (see `tt translate --help`); align: False, True or an AlignRule.

    A full-context rule re-reads the translation with `model` (core.analysis.align.full_context_cross)."""
    from core.analysis.trace import attention_matrix

    obj = t.to_dict()
    obj["source"] = _safe(t.source)
    steps = t.steps or []
    source = t.source_trace
    src_pieces = source.pieces if source else []
    out_pieces = [s.piece for s in steps]
    if attention != "none":
        att: dict = {"source_pieces": src_pieces, "output_pieces": out_pieces}
        n_layers = len(steps[0].cross) if steps else 0
        n_heads = steps[0].cross[0].size(0) if steps else 0

        def per_head(family: str, layer: int) -> list:
            return [attention_matrix(source, steps, family, layer, hd) for hd in range(n_heads)]

        # Per layer, per head: rows = output pieces (EOS step included), columns = source pieces.
        att["cross"] = [[_round(m) for m in per_head("cross", i)] for i in range(n_layers)]
        if attention == "all" and source:
            att["encoder_self"] = [  # (h, S, S) per layer
                [_round(attention_matrix(source, steps, "encoder_self", i, hd)) for hd in range(w.size(0))]
                for i, w in enumerate(source.encoder_self)
            ]
            # Row t of the decoder self-attention covers positions 0..t (BOS first); later ones are masked.
            att["decoder_self"] = [
                [[row[: t + 1] for t, row in enumerate(_round(m))] for m in per_head("decoder_self", i)]
                for i in range(n_layers)
            ]
        obj["attention"] = att
    if align:
        from core.analysis.align import DEFAULT_RULE, align_steps, full_context_cross, word_text, words

        rule = DEFAULT_RULE if align is True else align
        full = (
            full_context_cross(model, source.tokens, [s.token for s in steps]) if rule.full_context and steps else None
        )
        pairs = align_steps(src_pieces, steps, rule, full)
        src_words, out_words = words(src_pieces), words(out_pieces)
        obj["alignment"] = [
            {
                "source": s,
                "target": j,
                "source_word": word_text(src_pieces, src_words[s]),
                "target_word": word_text(out_pieces, out_words[j]),
            }
            for s, j in pairs
        ]
    return obj


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
        typer.Option("--json", help="One JSON object per line: source, translation, tokens, token_logprobs, score."),
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
    layer: Annotated[int, typer.Option(help="Decoder layer for --show-attention (-1 = last).")] = -1,
    head: Annotated[Optional[int], typer.Option(help="Head for --show-attention (default: mean over heads).")] = None,
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
    quantize: Annotated[
        Optional[QuantizeChoice],
        typer.Option(
            help="Faster approximate inference: int8 (dynamic int8 Linear layers, CPU) or bf16 weights. "
            "BLEU within 0.3 of fp32 on the held-out set (bench/README.md)."
        ),
    ] = None,
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
) -> None:
    """Translate French to English. Defaults: beam search, beam 4, length penalty α 0.6 (the paper's).

    Input: arguments, --input FILE, or stdin: one line in, one line out, in order; an empty line gives an empty line. Lines longer than the model's max length are truncated, with a warning on stderr.

    Exit codes: 0 ok · 1 bad input, model or option · 2 usage · 130 interrupted.
    """
    if interactive and quantize is not None:
        raise fail("--quantize is not available with -I yet", EXIT_USAGE)
    if interactive:
        from core.decode.translate import TranslateOptions
        from tt_cli.repl import interactive as repl

        options = TranslateOptions(
            beam=beam,
            alpha=alpha,
            greedy=greedy,
            sample=sample,
            temperature=temperature,
            top_k=top_k,
            top_p=top_p,
            seed=seed,
        )
        return repl(
            model,
            device,
            options,
            json_out=json_out,
            threads=threads,
            other_input=bool(text) or input_file is not None or output is not None,
        )
    # Usage checks first: they need neither torch nor the model, so a mistake is reported at once.
    if (attention != AttentionChoice.none or align) and not json_out:
        raise fail("--attention and --align need --json", EXIT_USAGE)
    if attribution is not None and not (json_out or trace_file):
        raise fail("--attribution needs --json or --trace", EXIT_USAGE)
    if trace_file is not None and len(text or []) != 1:
        raise fail("--trace writes one sentence's trace: give exactly one sentence as an argument", EXIT_USAGE)

    args = [t for t in (text or [])]
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

    from core.decode.translate import TranslateOptions

    options = TranslateOptions(
        beam=beam,
        alpha=alpha,
        n_best=n_best,
        greedy=greedy,
        sample=sample,
        temperature=temperature,
        top_k=top_k,
        top_p=top_p,
        seed=seed,
        batch_size=batch_size,
        with_attention=show_attention
        or align
        or attention != AttentionChoice.none
        or trace_file is not None
        or attribution is not None,
    ).validate()

    from core.checkpoint import load_model
    from core.decode.translate import read_lines, translate_lines
    from core.device import resolve_device
    from core.files import check_output, open_output

    for path in (p for p in (output, trace_file) if p is not None):
        check_output(path)  # a bad output path fails before the model loads
    set_threads(threads, few=not from_stdin and input_file is None)
    loaded = load_model(model, device=resolve_device(device), packed=quantize is None)
    if quantize is not None:
        import dataclasses

        from core.model.fast import fast_model

        if quantize == QuantizeChoice.int8 and resolve_device(device).type != "cpu":
            raise fail("--quantize int8 runs on the CPU only (use --device cpu, or --quantize bf16)")
        loaded = dataclasses.replace(loaded, model=fast_model(loaded.model, quantize.value))
    n_layers, n_heads = loaded.cfg.n_decoder_layers, loaded.cfg.h
    if not -n_layers <= layer < n_layers:
        raise fail(f"--layer {layer}: this model has {n_layers} decoder layers (0..{n_layers - 1}, or -1 for the last)")
    if head is not None and not 0 <= head < n_heads:
        raise fail(f"--head {head}: this model has {n_heads} heads (0..{n_heads - 1})")

    align_rule = None
    if align:
        from core.analysis.align import load_rule

        align_rule = load_rule(loaded.path).check(n_layers, n_heads)
    with ExitStack() as stack:
        if input_file is not None:
            lines = read_lines(stack.enter_context(open(input_file, "rb")), str(input_file), errors.value)
        elif from_stdin:
            lines = read_lines(sys.stdin.buffer, "<stdin>", errors.value)
        else:
            lines = iter(args)
        out = sys.stdout if output is None else stack.enter_context(open_output(output))
        view = None
        if show_attention:  # rich costs import time; only the heatmap needs it
            from rich.console import Console

            view = Console(stderr=not (output is None and sys.stdout.isatty()), highlight=False)
        warned = 0
        for t in translate_lines(loaded, lines, options):
            for w in t.warnings:
                warned += 1
                if warned <= MAX_WARNINGS:
                    print(f"tt: warning: {w}", file=sys.stderr)  # one line each, never wrapped
            attributed = None
            if attribution is not None and t.tokens:
                from core.analysis.attribute import attribute

                attributed = attribute(
                    loaded, t.source_tokens, [s.token for s in t.steps], method=attribution.value, ig_steps=ig_steps
                )
            if trace_file is not None and t.steps is not None:
                from core.analysis.tracefile import save_trace

                save_trace(
                    trace_file,
                    t.source_trace,
                    t.steps,
                    translation=t.text,
                    attribution=attributed,
                    model=str(loaded.path),
                )
            if json_out:
                obj = to_json(t, attention.value, align_rule or False, loaded.model)
                if attribution is not None:
                    obj["attribution"] = _attribution_json(t, attributed)
                out.write(_json_line(obj) + "\n")
            elif t.alternatives:
                out.writelines(f"{t.index} ||| {a.text} ||| {a.score:.4f}\n" for a in t.alternatives)
            else:
                out.write(t.text + "\n")
            out.flush()
            if show_attention and t.steps:
                _show(view, t, layer, head)
        if warned > MAX_WARNINGS:
            print(f"tt: warning: {warned - MAX_WARNINGS} more warning(s) not shown", file=sys.stderr)


def _attribution_json(t, a) -> dict:
    """Per output piece (EOS step included): its attribution to each source piece and to each
    decoder input (BOS first); for ig also f(x) − f(baseline), which the attributions sum to."""
    obj = {
        "method": a.method if a else None,
        "source_pieces": t.source_trace.pieces if t.source_trace else [],
        "output_pieces": [s.piece for s in t.steps or []],
    }
    if a is not None:
        obj["source"] = _round(a.source)
        obj["target"] = [row[: i + 1] for i, row in enumerate(_round(a.target))]  # step t sees inputs 0..t
        if a.delta is not None:
            obj["ig_steps"], obj["delta"] = a.ig_steps, [round(float(x), 4) for x in a.delta]
    return obj


def _show(console, t, layer: int, head: int | None) -> None:
    from core.analysis.trace import attention_matrix
    from tt_cli.render import heatmap, legend

    matrix = attention_matrix(t.source_trace, t.steps, "cross", layer, head).tolist()  # (T_out, S)
    which = "mean over heads" if head is None else f"head {head}"
    n_layers = len(t.steps[0].cross)
    title = f"cross-attention, layer {'last' if layer % n_layers == n_layers - 1 else layer % n_layers}, {which}"
    console.print(heatmap(matrix, t.source_trace.pieces, [s.piece for s in t.steps], title=title))
    console.print(legend())
