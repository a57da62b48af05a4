"""`tt analyze`: analyses that test what the attention pictures suggest, on the live model.

Each command is a thin shell over one module of core/analysis/; `--json` prints one JSON object
on stdout for scripts, otherwise a table (rich) for people.
"""

from __future__ import annotations

import json
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from tt_cli.errors import EXIT_USAGE, fail, guard
from tt_cli.options import (
    AttributionChoice,
    DeviceOpt,
    ModelOpt,
    SourceOpt,
    TargetOpt,
    layer_head_indices,
    model_of_direction,
)
from tt_cli.usage import Typer

app = Typer(
    help="Analyses that test what the pictures claim: reference mode, attention sinks, head ablation, "
    "attribution, logit lens, checkpoint scrubbing.",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)


ThreadsOpt = Annotated[int, typer.Option(help="CPU threads for torch (0 = torch's default).", min=0)]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout instead of tables.")]
SrcOpt = Annotated[Path | None, typer.Option("--src", help="Source sentences (French for fr→en), one per line.")]
RefOpt = Annotated[Path | None, typer.Option("--ref", help="Reference translations, aligned with --src.")]
LimitOpt = Annotated[int, typer.Option(help="Use the first N pairs of the files (0 = all).", min=0)]


def _setup(model: Path | None, device: str, threads: int):
    import torch

    from tt_cli.options import load_model_for

    if threads:
        torch.set_num_threads(threads)
    return load_model_for(model, device)


def _pairs(src: Path | None, ref: Path | None, texts: list[str] | None, limit: int = 0) -> list[tuple[str, str]]:
    """(French, English) pairs from --src/--ref files, or from two arguments SOURCE REFERENCE."""
    texts = texts or []
    if src is not None or ref is not None:
        if src is None or ref is None:
            raise fail("--src and --ref go together", EXIT_USAGE)
        if texts:
            raise fail("give --src/--ref files or SOURCE REFERENCE arguments, not both", EXIT_USAGE)
        from core.data.readers import read_aligned

        pairs = [(p.src, p.tgt) for p in read_aligned(src, ref)]
        pairs = pairs[:limit] if limit else pairs
        if not pairs:
            raise fail(f"{src}: no sentence pairs")
        return pairs
    if len(texts) != 2:
        raise fail(
            'give --src F --ref E, or a sentence and its reference: "Je suis étudiant." "I am a student."', EXIT_USAGE
        )
    return [(texts[0], texts[1])]


def _print_json(obj) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")


def _console():
    from rich.console import Console

    return Console(highlight=False)


# ------------------------------------------------------------------------------------ ref
def ref(
    texts: Annotated[list[str] | None, typer.Argument(help="SOURCE REFERENCE (instead of --src/--ref).")] = None,
    src: SrcOpt = None,
    ref_file: RefOpt = None,
    limit: LimitOpt = 0,
    top: Annotated[int, typer.Option(help="How many pieces/swaps to list.", min=1)] = 10,
    model: ModelOpt = None,
    source: SourceOpt = None,
    target: TargetOpt = None,
    device: DeviceOpt = "cpu",
    threads: ThreadsOpt = 0,
    json_out: JsonOpt = False,
) -> None:
    """Reference mode: per step, the reference piece's rank and probability under teacher forcing,
    the model's own choice and the first divergence of greedy output; over a file, where (step,
    fifth of the sentence) and on what pieces the model most often leaves the reference."""
    from dataclasses import asdict

    from core.analysis.reference import compare_pairs, summarize

    pairs = _pairs(src, ref_file, texts, limit)
    loaded = _setup(model_of_direction(model, source, target), device, threads)
    comparisons = compare_pairs(loaded, pairs)
    summary = summarize(comparisons, top)
    if json_out:

        def sentence(c):
            d = asdict(c)
            d["steps"] = [{k: (round(v, 5) if isinstance(v, float) else v) for k, v in s.items()} for s in d["steps"]]
            d["ref_logprob"] = round(c.ref_logprob, 4)
            return d

        _print_json({"summary": asdict(summary), "sentences": [sentence(c) for c in comparisons]})
        return
    from tt_cli import analysis_views as views

    console = _console()
    if len(comparisons) == 1:
        views.show_comparison(console, comparisons[0])
        return
    s = summary
    console.print(
        f"{s.sentences} pairs · greedy output leaves the reference in {s.diverged} "
        f"({100 * s.diverged / s.sentences:.1f}%) · teacher-forced top-1 agreement {100 * s.top1_agreement:.1f}% · "
        f"mean reference rank {s.mean_ref_rank:.2f} · mean log p(reference) {s.mean_ref_logprob:.2f}"
    )
    console.print("first divergence at step: " + ", ".join(f"{k + 1}: {v}" for k, v in s.by_position.items()))
    console.print("…in the sentence's: " + ", ".join(f"{k}: {v}" for k, v in s.by_relative_position.items()))
    console.print("reference pieces left most often: " + ", ".join(f"{p!r} ×{n}" for p, n in s.ref_pieces))
    console.print("swaps (reference → model): " + ", ".join(f"{r!r}→{m!r} ×{n}" for r, m, n in s.swaps))


app.command("ref", help=ref.__doc__)(guard(ref))


# ------------------------------------------------------------------------------------ heads
class Metric(str, Enum):
    logprob = "logprob"
    bleu = "bleu"


class PruneOrder(str, Enum):
    once = "once"
    greedy = "greedy"


def heads(
    texts: Annotated[list[str] | None, typer.Argument(help="SOURCE REFERENCE (instead of --src/--ref).")] = None,
    src: SrcOpt = None,
    ref_file: RefOpt = None,
    limit: LimitOpt = 0,
    metric: Annotated[
        Metric,
        typer.Option(
            help="logprob: mean log p(reference), teacher-forced (fast); bleu: BLEU of a greedy re-decode (slow)."
        ),
    ] = Metric.logprob,
    prune: Annotated[
        bool,
        typer.Option(
            "--prune",
            help="Also the pruning curve: heads removed one after "
            "another, least damaging first (see --prune-order), and the metric after each.",
        ),
    ] = False,
    prune_order: Annotated[
        PruneOrder,
        typer.Option(
            help="The --prune order. once: by single-head damage, "
            "measured once (one pass). greedy: at each step every remaining "
            "head is tried on top of those off and the least damaging goes "
            "(n + (n−1) + … + 1 evaluations: slow)."
        ),
    ] = PruneOrder.once,
    prune_max: Annotated[
        int, typer.Option(help="Stop the --prune curve after K heads off (0 = all of them).", min=0, metavar="K")
    ] = 0,
    sinks: Annotated[bool, typer.Option("--sinks", help="Only the attention-sink diagnostics (no ablation).")] = False,
    model: ModelOpt = None,
    source: SourceOpt = None,
    target: TargetOpt = None,
    device: DeviceOpt = "cpu",
    threads: ThreadsOpt = 0,
    json_out: JsonOpt = False,
) -> None:
    """Every head (encoder self, decoder self, cross × layer × head): the change of the metric when
    that head alone is switched off (a HeadMask argument of the forward pass), as a table and a
    heatmap; and the share of its attention mass on </s>, punctuation and the first piece, with heads
    that park their attention flagged (≥ 50% of the mass and ≥ 3× the uniform share)."""
    from dataclasses import asdict

    from core.analysis.sinks import head_sinks

    if not prune and (prune_order != PruneOrder.once or prune_max):
        raise fail("--prune-order and --prune-max shape the --prune curve: add --prune", EXIT_USAGE)
    pairs = _pairs(src, ref_file, texts, limit)
    loaded = _setup(model_of_direction(model, source, target), device, threads)
    found = head_sinks(loaded, pairs)
    if sinks:
        if json_out:
            _print_json({"sentences": len(pairs), "sinks": [_rounded({**asdict(s), **s.at.shown()}) for s in found]})
        else:
            from tt_cli import analysis_views as views

            views.show_sinks(_console(), found, len(pairs))
        return
    from core.analysis.ablate import ablate_heads, prune_curve

    ablation = ablate_heads(loaded, pairs, metric=metric.value)
    curve = (
        prune_curve(
            loaded,
            pairs,
            metric=metric.value,
            order=prune_order.value,
            max_removed=prune_max or None,
            ablation=ablation,
        )
        if prune
        else None
    )
    if json_out:
        sink_of = {s.at: s for s in found}
        rows = []
        for e in ablation.effects:
            s = sink_of[e.head]
            rows.append(
                {**e.head.shown(), "value": e.value, "delta": e.delta, "sink_share": s.share, "parks_on": s.parks_on}
            )
        obj = {"metric": ablation.metric, "sentences": ablation.sentences, "intact": ablation.intact, "heads": rows}
        if curve is not None:
            obj["prune_order"] = prune_order.value
            obj["prune"] = [
                {"removed": p.removed, "head": None if p.head is None else str(p.head), "value": p.value} for p in curve
            ]
        _print_json(_rounded(obj))
        return
    from tt_cli import analysis_views as views

    console = _console()
    views.show_ablation(console, ablation, {s.at: s.parks_on for s in found})
    if curve is not None:
        views.show_curve(console, curve, ablation.metric, prune_order.value)


def _rounded(obj, digits: int = 4):
    if isinstance(obj, float):
        return round(obj, digits)
    if isinstance(obj, dict):
        return {k: _rounded(v, digits) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_rounded(v, digits) for v in obj]
    return obj


app.command("heads", help=heads.__doc__)(guard(heads))


# ------------------------------------------------------------------------------------ run
def run(
    text: Annotated[str, typer.Argument(help="The probe sentence (French).")],
    run_dir: Annotated[Path, typer.Option("--run", help="A training run directory (tt train --out).")],
    top_k: Annotated[int, typer.Option(help="Candidates kept per step.", min=1, max=50)] = 5,
    device: DeviceOpt = "cpu",
    threads: ThreadsOpt = 0,
    json_out: JsonOpt = False,
) -> None:
    """Checkpoint scrubber: the probe sentence's greedy translation, its per-step top candidates and
    the last decoder layer's cross-attention (mean over heads) at every saved checkpoint of a run."""
    if not text.strip():
        raise fail("the probe sentence is empty")
    import torch

    from core.analysis.scrub import run_checkpoints, scrub
    from core.device import resolve_device

    if threads:
        torch.set_num_threads(threads)
    points = scrub(run_dir, text, top_k=top_k, device=resolve_device(device), checkpoints=run_checkpoints(run_dir))
    if json_out:
        _print_json(
            {
                "run": str(run_dir),
                "probe": text,
                "checkpoints": [
                    {
                        "step": p.step,
                        "path": str(p.path),
                        "translation": p.translation,
                        "logprob": round(p.logprob, 4),
                        "source_pieces": p.source.pieces,
                        "output_pieces": [s.piece for s in p.steps],
                        "candidates": [[[c.piece, round(c.prob, 4)] for c in s.candidates] for s in p.steps],
                        "cross": [[round(float(x), 4) for x in row] for row in p.cross()],
                    }
                    for p in points
                ],
            }
        )
        return
    from rich.table import Table

    table = Table(title=f"{text!r} through {run_dir}", box=None, header_style="bold")
    for col in ("step", "translation", "log p", "first piece: top candidates"):
        table.add_column(col, justify="right" if col in ("step", "log p") else "left")
    for p in points:
        first = ", ".join(f"{c.piece} {c.prob:.2f}" for c in p.steps[0].candidates[:3]) if p.steps else ""
        table.add_row(str(p.step), p.translation, f"{p.logprob:.2f}", first)
    _console().print(table)


app.command("run", help=run.__doc__)(guard(run))


# ------------------------------------------------------------------------------------ lens
def lens(
    text: Annotated[str | None, typer.Argument(help="A French sentence (its greedy translation is read).")] = None,
    src: SrcOpt = None,
    ref_file: RefOpt = None,
    limit: LimitOpt = 0,
    top_k: Annotated[int, typer.Option(help="Pieces listed per layer and step.", min=1, max=50)] = 5,
    model: ModelOpt = None,
    source: SourceOpt = None,
    target: TargetOpt = None,
    device: DeviceOpt = "cpu",
    threads: ThreadsOpt = 0,
    json_out: JsonOpt = False,
) -> None:
    """Logit lens: each decoder layer's output read through the final projection — per step of the
    greedy translation of TEXT, every layer's top-k next pieces and the rank of the piece output;
    over --src/--ref files, how often each layer's top piece is already the final one."""
    if (text is None) == (src is None):
        raise fail('give a sentence, or --src F --ref E: tt analyze lens "Je suis étudiant."', EXIT_USAGE)
    if src is not None:
        from core.analysis.lens import layer_agreement

        pairs = _pairs(src, ref_file, None, limit)
        found = layer_agreement(_setup(model_of_direction(model, source, target), device, threads), pairs)
        if json_out:
            _print_json(
                {
                    "sentences": len(pairs),
                    "steps": found.steps,
                    "final": [round(x, 4) for x in found.final],
                    "input": [round(x, 4) for x in found.input],
                }
            )
        else:
            for i, (x, y) in enumerate(zip(found.final, found.input)):
                typer.echo(
                    f"decoder layer {i + 1}: top piece = the final top piece at {100 * x:.1f}% of "
                    f"{found.steps} steps, = its own input piece at {100 * y:.1f}%"
                )
        return
    from core.analysis.lens import logit_lens
    from core.decode.translate import TranslateOptions, translate_lines

    loaded = _setup(model_of_direction(model, source, target), device, threads)
    t = next(translate_lines(loaded, [text], TranslateOptions(method="greedy")))
    out_ids = t.token_ids + [loaded.cfg.eos_id]
    steps = logit_lens(loaded, t.source_tokens, out_ids, top_k=top_k)
    if json_out:
        _print_json(
            {
                "source": text,
                "translation": t.text,
                "steps": [
                    {
                        "index": s.index,
                        "piece": s.piece,
                        "layers": [
                            {
                                "layer": la.layer + 1,  # counted from 1, as everywhere tt shows layers
                                "rank": la.rank,
                                "prob": round(la.prob, 4),
                                "top": [[c.piece, round(c.prob, 4)] for c in la.top],
                            }
                            for la in s.layers
                        ],
                    }
                    for s in steps
                ],
            }
        )
        return
    from rich.table import Table

    table = Table(title=f"logit lens: {text!r} → {t.text!r}", box=None, header_style="bold")
    table.add_column("step")
    for i in range(len(steps[0].layers) if steps else 0):
        table.add_column(f"layer {i + 1}: top (rank of output)")
    for s in steps:
        table.add_row(
            f"{s.index + 1} {s.piece}", *(f"{la.top[0].piece} {la.top[0].prob:.2f} ({la.rank})" for la in s.layers)
        )
    _console().print(table)


app.command("lens", help=lens.__doc__)(guard(lens))


# ------------------------------------------------------------------------------------ attribute
def attribute(
    texts: Annotated[
        list[str] | None, typer.Argument(help="French sentences (their greedy translations are explained).")
    ] = None,
    src: SrcOpt = None,
    limit: LimitOpt = 0,
    method: Annotated[
        AttributionChoice, typer.Option(help="ixg = input×gradient, ig = integrated gradients.")
    ] = AttributionChoice.ig,
    ig_steps: Annotated[int, typer.Option(help="Integration steps for ig.", min=1)] = 32,
    layer: Annotated[
        int,
        typer.Option(help="Decoder layer whose cross-attention (mean over heads) is compared, from 1 (-1 = the last)."),
    ] = -1,
    model: ModelOpt = None,
    source: SourceOpt = None,
    target: TargetOpt = None,
    device: DeviceOpt = "cpu",
    threads: ThreadsOpt = 0,
    json_out: JsonOpt = False,
) -> None:
    """Attribution of each output piece of the greedy translation to the source pieces and the output
    prefix (gradients through the model's own forward pass), set beside cross-attention: per step,
    the source piece each one points at, and how often they agree. IG also reports its completeness
    error |Σ attributions − Δ| / max(|Δ|, 1), Δ = f(x) − f(baseline)."""
    from core.analysis.attribute import agreement_with_attention
    from core.analysis.attribute import attribute as attribute_steps
    from core.decode.trace import attention_matrix
    from core.decode.translate import TranslateOptions, read_lines, translate_lines
    from core.files import open_input

    layer = layer_head_indices(layer, None)[0]  # counted from 1 on the command line
    if (src is None) == (not texts):
        raise fail('give sentences or --src F: tt analyze attribute "Je suis étudiant."', EXIT_USAGE)
    if src is not None:
        with open_input(src) as f:
            lines = [line for line in read_lines(f, str(src)) if line.strip()]
        texts = lines[:limit] if limit else lines
    loaded = _setup(model_of_direction(model, source, target), device, threads)
    results, agree, total = [], 0, 0
    for t in translate_lines(loaded, texts, TranslateOptions(method="greedy", with_attention=True)):
        if not t.steps:
            continue
        a = attribute_steps(loaded, t.source_tokens, [s.token for s in t.steps], method=method.value, ig_steps=ig_steps)
        cross = attention_matrix(t.source_trace, t.steps, "cross", layer, None)  # (T, S), mean over heads
        same = agreement_with_attention(a, cross)
        agree, total = agree + sum(same), total + len(same)
        results.append((t, a, cross, same))
    if json_out:
        _print_json(
            {
                "method": method.value,
                "ig_steps": ig_steps if method == AttributionChoice.ig else 0,
                "agreement": round(agree / max(total, 1), 4),
                "steps": total,
                "sentences": [
                    {
                        "source": t.source,
                        "translation": t.text,
                        "source_pieces": t.source_trace.pieces,
                        "output_pieces": [s.piece for s in t.steps],
                        "source_attribution": _rounded(a.source.tolist()),
                        "target_attribution": _rounded(a.target.tolist()),
                        "cross_attention": _rounded(cross.tolist()),
                        "agrees": same,
                        "completeness_error": None if a.delta is None else _rounded(a.completeness_error().tolist()),
                    }
                    for t, a, cross, same in results
                ],
            }
        )
        return
    console = _console()
    for t, a, cross, same in results[:20]:
        console.print(f"{t.source} → {t.text}")
        pieces = t.source_trace.pieces
        for s, row_a, row_c, ok in zip(t.steps, a.source, cross, same):
            console.print(
                f"  {s.piece:>12}  attribution → {pieces[int(row_a.abs().argmax())]:<12} "
                f"attention → {pieces[int(row_c.argmax())]:<12} {'' if ok else '(disagree)'}"
            )
        if a.delta is not None:
            console.print(
                f"  completeness error: max {float(a.completeness_error().max()):.1%} (raise --ig-steps to lower it)"
            )
    console.print(
        f"attribution and attention point at the same source piece at {agree} of {total} steps "
        f"({100 * agree / max(total, 1):.1f}%)"
    )


app.command("attribute", help=attribute.__doc__)(guard(attribute))


# ------------------------------------------------------------------------------------ claims
def claims(
    src: SrcOpt = None,
    ref_file: RefOpt = None,
    limit: LimitOpt = 0,
    timing: Annotated[
        bool,
        typer.Option(
            "--timing/--no-timing",
            help="Also the cost claims, multi-head cost and attention's O(N²): verdicts from counted multiply-adds "
            "and bytes, wall-clock beside them (a few seconds).",
        ),
    ] = True,
    runs: Annotated[
        Path | None,
        typer.Option(
            help="Also label smoothing and warm-up, read from the three runs of scripts/controlled_runs.py in this directory."
        ),
    ] = None,
    model: ModelOpt = None,
    source: SourceOpt = None,
    target: TargetOpt = None,
    device: DeviceOpt = "cpu",
    threads: ThreadsOpt = 0,
    json_out: JsonOpt = False,
) -> None:
    """The course notes' checkable claims run on the model, each with its figure and a verdict
    (holds / does not hold / depends): √d_k and saturation, Var(q·k), heads, attention distance,
    coreference, disambiguation, positions, FFN share, multi-head cost, O(N²); with --src/--ref
    (a held-out set) also quality by sentence length and beam against greedy; with --runs, label smoothing
    and warm-up from three controlled training runs. docs/claims.md."""
    from core.analysis.claims import all_claims
    from core.analysis.training import controlled_claims

    trained = controlled_claims(runs) if runs is not None else []  # a bad directory fails before the model loads
    pairs = _pairs(src, ref_file, None, limit) if src is not None or ref_file is not None else []
    loaded = _setup(model_of_direction(model, source, target), device, threads)
    if not pairs:
        print("tt: quality by length and beam vs greedy need a held-out set: give --src and --ref", file=sys.stderr)
    found = all_claims(loaded, pairs, set_name=src.name if src is not None else "held-out", timing=timing) + trained
    if json_out:
        _print_json({"model": str(loaded.path), "claims": [_rounded(c.to_dict()) for c in found]})
        return
    console = _console()
    colour = {"holds": "green", "does not hold": "red", "depends": "yellow"}
    for c in found:
        console.print(f"[b {colour[c.verdict]}]{c.verdict.upper():14}[/] [b]{c.key}[/]: {c.claim} ({c.source})")
        console.print(f"{'':15}{c.figure}", markup=False, soft_wrap=True)
        console.print(f"{'':15}({c.why})", markup=False, style="dim", soft_wrap=True)


app.command("claims", help=claims.__doc__)(guard(claims))
