"""How `tt` writes a translated sentence: one small writer per format, chosen once by the command.

The plain line, the Moses n-best lines and the `--json` object all read the one record core returns
(`core.decode.translate.Translation`); `tt translate`, `tt align` and the REPL share these writers.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TextIO

if TYPE_CHECKING:
    from core.align.links import AlignRule
    from core.analysis.attribute import Attribution
    from core.decode.translate import Translation


MAX_WARNINGS = 20  # after this many, only a count at the end (a huge file must not flood stderr)


class Warnings:
    """Warnings on stderr as they come, one line each; past MAX_WARNINGS only a count, at `close`."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, warnings: list[str]) -> None:
        for w in warnings:
            self.count += 1
            if self.count <= MAX_WARNINGS:
                print(f"tt: warning: {w}", file=sys.stderr)  # one line each, never wrapped

    def close(self) -> None:
        if self.count > MAX_WARNINGS:
            print(f"tt: warning: {self.count - MAX_WARNINGS} more warning(s) not shown", file=sys.stderr)


def where(index: int, warnings, what: str = "line") -> list[str]:
    """Warnings about the `index`-th (0-based) line of the input, each saying which one it is about."""
    return [f"{what} {index + 1}: {w}" for w in warnings]


def json_line(obj: dict) -> str:
    """One JSON object on one line."""
    # U+2028/U+2029/U+0085 are legal unescaped in JSON but split lines for many readers: escape them.
    text = json.dumps(obj, ensure_ascii=False)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029").replace("\x85", "\\u0085")


def _safe(text: str) -> str:
    """Text that can be written as UTF-8 (a shell argument may carry lone surrogates)."""
    return text.encode("utf-8", "replace").decode("utf-8")


def _round(matrix, digits: int = 4) -> list:
    return [[round(float(x), digits) for x in row] for row in matrix]


def _attention_json(t: Translation, everything: bool) -> dict:
    """Per layer, per head: rows = output pieces (EOS step included), columns = source pieces;
    with `everything` also the encoder's and the decoder's self-attention."""
    from core.decode.trace import attention_matrix

    steps, source = t.steps or [], t.source_trace
    att: dict = {"source_pieces": source.pieces if source else [], "output_pieces": [s.piece for s in steps]}
    n_layers = len(steps[0].cross) if steps else 0
    n_heads = steps[0].cross[0].size(0) if steps else 0

    def per_head(family: str, layer: int) -> list:
        return [attention_matrix(source, steps, family, layer, hd) for hd in range(n_heads)]

    att["cross"] = [[_round(m) for m in per_head("cross", i)] for i in range(n_layers)]
    if everything and source:
        att["encoder_self"] = [  # (h, S, S) per layer
            [_round(attention_matrix(source, steps, "encoder_self", i, hd)) for hd in range(w.size(0))]
            for i, w in enumerate(source.encoder_self)
        ]
        # Row t of the decoder self-attention covers positions 0..t (BOS first); later ones are masked.
        att["decoder_self"] = [
            [[row[: t + 1] for t, row in enumerate(_round(m))] for m in per_head("decoder_self", i)]
            for i in range(n_layers)
        ]
    return att


def _alignment_json(t: Translation, rule: AlignRule, model) -> list[dict]:
    """Each output word's link to a source word under `rule`; a full-context rule re-reads the
    translation with `model` (core.align.links.full_context_cross)."""
    from core.align.links import align_steps, full_context_cross, word_text, words

    steps, source = t.steps or [], t.source_trace
    src_pieces = source.pieces if source else []
    out_pieces = [s.piece for s in steps]
    full = full_context_cross(model, source.tokens, [s.token for s in steps]) if rule.full_context and steps else None
    src_words, out_words = words(src_pieces), words(out_pieces)
    return [
        {
            "source": s,
            "target": j,
            "source_word": word_text(src_pieces, src_words[s]),
            "target_word": word_text(out_pieces, out_words[j]),
        }
        for s, j in align_steps(src_pieces, steps, rule, full)
    ]


def attribution_json(t: Translation, a: Attribution | None) -> dict:
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


def translation_json(
    t: Translation,
    attention: str = "none",
    align: AlignRule | None = None,
    model=None,
    attribution: Attribution | None = None,
    attributed: bool = False,
) -> dict:
    """The --json object of one sentence (see `tt translate --help`): attention "none", "cross" or "all";
    `align` the rule to link words by; `attributed` adds the attribution key (null when nothing was attributed)."""
    obj = t.to_dict()
    obj["source"] = _safe(t.source)
    if attention != "none":
        obj["attention"] = _attention_json(t, attention == "all")
    if align is not None:
        obj["alignment"] = _alignment_json(t, align, model)
    if attributed:
        obj["attribution"] = attribution_json(t, attribution)
    return obj


def show_attention(console, t: Translation, layer: int, head: int | None) -> None:
    """A cross-attention heatmap of one translation and its legend on `console` (a rich Console)."""
    from core.decode.trace import attention_matrix
    from core.model.attention import layer_number
    from tt_cli.render import heatmap, legend

    matrix = attention_matrix(t.source_trace, t.steps, "cross", layer, head).tolist()  # (T_out, S)
    which = "mean over heads" if head is None else f"head {head + 1}"
    n_layers = len(t.steps[0].cross)
    title = f"cross-attention, layer {layer_number(layer, n_layers)} of {n_layers}, {which}"
    colour = console.color_system is not None  # else the cells show their weights
    pieces = [s.piece for s in t.steps]
    table = heatmap(matrix, t.source_trace.pieces, pieces, title=title, show_values=not colour, width=console.width)
    console.print(table)
    console.print(legend(colour))


class Writer(Protocol):
    """Writes one translated sentence (and anything attached to it) to `out`."""

    def __call__(self, out: TextIO, t: Translation, attribution: Attribution | None = None) -> None: ...


def write_plain(out: TextIO, t: Translation, attribution: Attribution | None = None) -> None:
    out.write(t.text + "\n")


def write_n_best(out: TextIO, t: Translation, attribution: Attribution | None = None) -> None:
    """Moses n-best lines, `i ||| text ||| score`; a sentence without alternatives (empty) stays one line."""
    if t.n_best:
        out.writelines(f"{t.index} ||| {a.text} ||| {a.score:.4f}\n" for a in t.n_best)
    else:
        out.write(t.text + "\n")


@dataclass(frozen=True)
class JsonWriter:
    """One --json object per line; what it adds beyond `Translation.to_dict` is fixed when it is made."""

    attention: str = "none"
    align: AlignRule | None = None
    model: object = None  # for a full-context alignment rule
    attributed: bool = False

    def __call__(self, out: TextIO, t: Translation, attribution: Attribution | None = None) -> None:
        obj = translation_json(t, self.attention, self.align, self.model, attribution, self.attributed)
        out.write(json_line(obj) + "\n")
