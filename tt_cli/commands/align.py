"""`tt align`: word alignments of given sentence pairs from the model's cross-attention (Pharaoh `i-j`)."""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from tt_cli.errors import EXIT_USAGE, fail
from tt_cli.options import (
    BatchOpt,
    DeviceOpt,
    ModelOpt,
    SourceOpt,
    TargetOpt,
    ThreadsOpt,
    load_model_for,
    model_of_direction,
    set_threads,
)
from tt_cli.output import json_line


class Method(str, Enum):
    auto = "auto"
    plain = "plain"
    shift = "shift"
    full = "full"
    diagonal = "diagonal"


class Symmetrization(str, Enum):  # core.align.aer.SYMMETRIZATIONS
    grow_diag_final = "grow-diag-final"
    grow_diag_final_and = "grow-diag-final-and"
    grow_diag = "grow-diag"
    intersection = "intersection"
    union = "union"


class GoldOrder(str, Enum):
    tgt_src = "tgt-src"
    src_tgt = "src-tgt"


def read_pairs(src: Path | None, tgt: Path | None) -> tuple[list[tuple[str, str]], tuple[str, str]]:
    """Sentence pairs from two line-aligned files, or from TSV lines on stdin; and the names for errors."""
    from core.decode.translate import read_lines
    from core.errors import DataError

    if src is not None and tgt is not None:
        sides = []
        for path in (src, tgt):
            if not path.is_file():
                raise DataError(f"{path}: no such file" if not path.exists() else f"{path}: not a file")
            with open(path, "rb") as f:
                sides.append(list(read_lines(f, str(path))))
        if len(sides[0]) != len(sides[1]):
            raise DataError(f"{tgt} has {len(sides[1])} lines but {src} has {len(sides[0])}; they must be line-aligned")
        return list(zip(*sides)), (str(src), str(tgt))
    pairs = []
    for lineno, line in enumerate(read_lines(sys.stdin.buffer, "<stdin>"), start=1):
        if not line.strip():
            pairs.append(("", ""))
            continue
        fields = line.split("\t")
        if len(fields) != 2:
            raise DataError(f"<stdin>:{lineno}: expected 'source<TAB>target', got {len(fields)} tab-separated field(s)")
        pairs.append((fields[0], fields[1]))
    return pairs, ("<stdin>", "<stdin>")


def _rule(stored, method: Method, layer: int | None, head: int | None, threshold: float | None, both_ways: bool | None):
    """The rule a command line asks for: auto = the stored one, with any of --layer/--head/--threshold/--both-ways on top."""
    from core.align.links import AlignRule

    if method == Method.auto:
        return AlignRule(
            stored.layer if layer is None else layer,
            stored.head if head is None and layer is None else head,
            stored.shift,
            stored.threshold if threshold is None else threshold,
            stored.bidirectional if both_ways is None else both_ways,
            stored.full_context,
        )
    return AlignRule(
        -1 if layer is None else layer,
        head,
        method == Method.shift,
        threshold or 0.0,
        bool(both_ways),
        method == Method.full,
    )


def align(
    src: Annotated[
        Optional[Path], typer.Option("--src", help="Source sentences (French for fr→en), one per line.")
    ] = None,
    tgt: Annotated[
        Optional[Path], typer.Option("--tgt", help="Target sentences (English for fr→en), line-aligned with --src.")
    ] = None,
    model: ModelOpt = None,
    source: SourceOpt = None,
    target: TargetOpt = None,
    method: Annotated[
        Method,
        typer.Option(
            help="auto = the rule stored with the model (alignment.json), else the mean of the last layer's "
            "heads; plain = the step predicting each target word; shift = the step reading it (Chen et al. 2020); "
            "full = the step predicting it, re-read with the whole target visible (a head trained with "
            "tt train --align-full-context); diagonal = the baseline that ignores the model."
        ),
    ] = Method.auto,
    layer: Annotated[
        Optional[int],
        typer.Option(help="Decoder layer whose cross-attention is read, counted from 1 (-1 = the last)."),
    ] = None,
    head: Annotated[
        Optional[int], typer.Option(help="One head, counted from 1 (default: the mean of the layer's heads).")
    ] = None,
    threshold: Annotated[
        Optional[float],
        typer.Option(help="Link every word pair scoring at least this (0 = each target word's best source word)."),
    ] = None,
    both_ways: Annotated[
        Optional[bool],
        typer.Option(
            "--both-ways/--one-way",
            help="Also link each source word to its best target word (grow-diag-final of both argmaxes).",
        ),
    ] = None,
    reverse_model: Annotated[
        Optional[Path],
        typer.Option(
            "--reverse-model",
            help="A target→source model (English→French); both directions are symmetrized. Default: the shipped "
            "model of the other direction where the model's alignment.json says combining them scored better.",
        ),
    ] = None,
    one_model: Annotated[
        bool,
        typer.Option("--one-model", help="Align with the model alone, even where its alignment.json combines two."),
    ] = False,
    symmetrize: Annotated[
        Optional[Symmetrization],
        typer.Option(
            help="How to combine the two directions: default the one stored in alignment.json, else grow-diag-final."
        ),
    ] = None,
    gold: Annotated[
        Optional[Path],
        typer.Option(
            help="Gold links (HLT-NAACL 2003 format: SENTENCE POS POS S|P, 1-based): print AER, precision and recall on stderr."
        ),
    ] = None,
    gold_order: Annotated[
        GoldOrder,
        typer.Option(
            help="Column order of --gold: tgt-src = target position first (the workshop's English–French files)."
        ),
    ] = GoldOrder.tgt_src,
    find_heads: Annotated[
        bool,
        typer.Option(
            "--find-heads",
            help="Rank every layer/head/rule by AER on --gold, print the ranking, store the best with the model; "
            "with --reverse-model, also rank the ways of combining both directions and store the best if it "
            "scores a lower AER than the rule alone.",
        ),
    ] = False,
    save: Annotated[
        bool,
        typer.Option(
            help="With --find-heads: write the best rule to MODEL/alignment.json (never the shipped model's)."
        ),
    ] = True,
    save_to: Annotated[
        Optional[Path],
        typer.Option(
            help="With --find-heads: write the best rule to DIR/alignment.json instead (the shipped model too)."
        ),
    ] = None,
    json_out: Annotated[
        bool, typer.Option("--json", help="One JSON object per pair: each link with its words and score.")
    ] = False,
    device: DeviceOpt = "auto",
    batch_size: BatchOpt = 32,
    threads: ThreadsOpt = 0,
) -> None:
    """Align words of given sentence pairs: one Pharaoh line per pair ("i-j", 0-based, i = source word,
    j = target word; words are the whitespace-separated tokens). The target is teacher-forced, one pass per batch.

    Input: --src FILE --tgt FILE, or 'source<TAB>target' lines on stdin. An empty pair gives an empty line.
    With --gold, stdout keeps the links and the score goes to stderr as one line.

    Exit codes: 0 ok · 1 bad input, model or option · 2 usage · 130 interrupted.
    """
    if (src is None) != (tgt is None):
        raise fail("give both --src and --tgt, or TSV lines on stdin", EXIT_USAGE)
    if src is None and sys.stdin.isatty():
        raise fail(
            "nothing to align: give --src FILE --tgt FILE, or pipe 'source<TAB>target' lines on stdin", EXIT_USAGE
        )
    _check_usage(find_heads, gold, save_to, method, json_out, symmetrize, one_model, reverse_model)

    from core.align import aer
    from core.align.links import DEFAULT_RULE, RULE_FILE, read_alignment
    from core.files import check_output
    from core.model.attention import head_index, layer_index

    if save_to is not None:
        check_output(save_to / RULE_FILE)  # before the ranking, not after it
    pairs, names = read_pairs(src, tgt)
    lengths = [(len(s.split()), len(t.split())) for s, t in pairs]
    gold_pairs = aer.read_gold(gold, lengths, target_first=gold_order == GoldOrder.tgt_src) if gold else None
    set_threads(threads, few=False)
    if method == Method.diagonal:
        results = [[(i, j, 1.0) for i, j in sorted(aer.diagonal_links(n_s, n_t))] for n_s, n_t in lengths]
        words = [(s.split(), t.split()) for s, t in pairs]
    else:
        loaded = load_model_for(model_of_direction(model, source, target), device)
        reverse = None if reverse_model is None else load_model_for(reverse_model, device)
        if find_heads:
            return _find_heads(
                loaded, reverse, pairs, names, gold_pairs, gold, save=save, save_to=save_to, batch_size=batch_size
            )
        cfg = loaded.cfg
        layer = None if layer is None else layer_index(layer, cfg.n_decoder_layers, "--layer")
        head = None if head is None else head_index(head, cfg.h, "--head")
        stored = read_alignment(loaded.path)
        rule = _rule(stored.rule if stored else DEFAULT_RULE, method, layer, head, threshold, both_ways)
        rule = rule.check(cfg.n_decoder_layers, cfg.h)
        combine = (stored.symmetrize if stored else None) or {}
        as_stored = method == Method.auto and layer is None and head is None and threshold is None and both_ways is None
        if reverse is None and combine and not one_model and as_stored:
            reverse = _shipped_reverse(combine, device)
        how = symmetrize.value if symmetrize else combine.get("method", Symmetrization.grow_diag_final.value)
        results, words = _links(loaded, rule, reverse, pairs, names, how, batch_size)
    (_write_json if json_out else _write_pharaoh)(results, words)
    if gold_pairs is not None:
        score = aer.score_links([{(i, j) for i, j, _ in links} for links in results], gold_pairs)
        print(f"tt: {score.summary()}", file=sys.stderr)


def _check_usage(find_heads, gold, save_to, method, json_out, symmetrize, one_model, reverse_model) -> None:
    """Options that do not go together: one line each, exit 2."""
    if save_to is not None and not find_heads:
        raise fail("--save-to stores what --find-heads finds: give --find-heads --gold FILE", EXIT_USAGE)
    if find_heads and gold is None:
        raise fail("--find-heads needs --gold", EXIT_USAGE)
    if find_heads and (method != Method.auto or json_out or symmetrize or one_model):
        raise fail(
            "--find-heads ranks the rules itself; it takes no --method, --symmetrize, --one-model or --json", EXIT_USAGE
        )
    if method == Method.diagonal and reverse_model is not None:
        raise fail("--method diagonal uses no model; --reverse-model does not apply", EXIT_USAGE)
    if one_model and reverse_model is not None:
        raise fail("--one-model aligns with the model alone; drop --reverse-model", EXIT_USAGE)


def _shipped_reverse(combine: dict, device: str):
    """The shipped model of the direction alignment.json combines with, or None where it is not installed."""
    from core.checkpoint import shipped_models

    path = shipped_models().get(tuple(combine["reverse"]))
    return None if path is None else load_model_for(path, device)


def _links(loaded, rule, reverse, pairs, names, symmetrize: str, batch_size: int):
    """Each pair's links (i, j, score) under `rule`, symmetrized with the `reverse` model's when given;
    and each pair's words."""
    from core.align.links import align as align_links
    from core.align.links import load_rule, pair_attention

    attentions = pair_attention(loaded, pairs, batch_size=batch_size, names=names, full_context=rule.full_context)
    back = back_rule = None
    if reverse is not None:
        back_rule = load_rule(reverse.path).check(reverse.cfg.n_decoder_layers, reverse.cfg.h)
        back = pair_attention(
            reverse,
            [(t, s) for s, t in pairs],
            batch_size=batch_size,
            names=names[::-1],
            full_context=back_rule.full_context,
        )
    results = align_links(attentions, rule, back, back_rule or rule, symmetrize)
    return results, [(a.source_words, a.target_words) for a in attentions]


def _find_heads(
    loaded, reverse, pairs, names, gold_pairs, gold: Path, *, save: bool, save_to: Path | None, batch_size: int
) -> None:
    """Rank every rule by AER against the gold links (and, with a `reverse` model, every way of combining
    both directions); with `save`, store the best beside the model (an installed model only when `save_to`
    names it), or in `save_to`."""
    from core.align.links import pair_attention, rank_rules, save_rule
    from core.checkpoint import is_installed_model

    # The head finder also measures the unmasked pass: a guided head may have been trained on it.
    attentions = pair_attention(loaded, pairs, batch_size=batch_size, names=names, full_context=True)
    ranking = rank_rules(attentions, gold_pairs)
    n_layers = loaded.cfg.n_decoder_layers
    for rank, (rule, score) in enumerate(ranking, start=1):
        print(f"{rank:3d}  {rule.describe(n_layers):52s}  {_score_columns(score)}")
    combine = None if reverse is None else _rank_combinations(reverse, attentions, ranking, pairs, names, gold_pairs)
    if save_to is None and save and is_installed_model(loaded.path):
        print(f"tt: not stored: {loaded.path} is an installed model; --save-to DIR stores it", file=sys.stderr)
    elif save_to is not None or save:
        about = {"gold": f"{gold.parent.name}/{gold.name}", "pairs": len(pairs), "aer": round(ranking[0][1].aer, 4)}
        path = save_rule(save_to or loaded.path, ranking, about, combine)
        print(f"tt: stored the best rule ({ranking[0][0].describe(n_layers)}) in {path}", file=sys.stderr)
        if combine:
            print(
                f"tt: and both directions combined by {combine['method']} (AER {100 * combine['aer']:.1f})",
                file=sys.stderr,
            )


def _score_columns(score) -> str:
    return f"AER {100 * score.aer:5.1f}  precision {100 * score.precision:5.1f}  recall {100 * score.recall:5.1f}"


def _rank_combinations(reverse, attentions, ranking, pairs, names, gold_pairs) -> dict | None:
    """Print every way of combining the best rule's links with the reverse model's (its stored rule); the best,
    as alignment.json stores it, when it scores a lower AER than the rule alone, else None."""
    from core.align.links import load_rule, pair_attention, rank_symmetrizations
    from core.card import model_languages

    back_rule = load_rule(reverse.path).check(reverse.cfg.n_decoder_layers, reverse.cfg.h)
    back = pair_attention(reverse, [(t, s) for s, t in pairs], names=names[::-1], full_context=back_rule.full_context)
    rule, alone = ranking[0]
    ranked = rank_symmetrizations(attentions, rule, back, back_rule, gold_pairs)
    print(f"\nwith {reverse.path} ({back_rule.describe(reverse.cfg.n_decoder_layers)}):")
    for method, score in ranked:
        print(f"     {method:52s}  {_score_columns(score)}")
    method, best = ranked[0]
    if best.aer >= alone.aer:
        print(f"tt: combining does not beat the rule alone (AER {100 * alone.aer:.1f}); not stored", file=sys.stderr)
        return None
    scores = {k: round(getattr(best, k), 4) for k in ("aer", "precision", "recall")}
    return {"method": method, "reverse": list(model_languages(reverse.path)), **scores}


def _write_pharaoh(results, words) -> None:
    from core.align.aer import pharaoh

    for links in results:
        print(pharaoh((i, j) for i, j, _ in links))


def _write_json(results, words) -> None:
    for k, links in enumerate(results):
        sw, tw = words[k]
        obj = {
            "index": k,
            "links": [
                {"source": i, "target": j, "score": round(float(s), 4), "source_word": sw[i], "target_word": tw[j]}
                for i, j, s in links
            ],
        }
        print(json_line(obj))
