"""Placeholders learned in training: pieces the model is taught to copy, for the spans core/text protects.

    "Appelez le 01 23 45 67 89 ou https://x.fr."  "Call 01 23 45 67 89 or https://x.fr."
        ──with_placeholders──▶  "Appelez le <ph0> ou <ph1>."  "Call <ph0> or <ph1>."

In a share of the training pairs (`tt train --placeholders SHARE`), each span that core/text finds in the
source (the finder translation uses: core.text.protect.spans_to_protect) and that the target holds too, as
written or as core/text writes it back (14 h 35 → 14:35), becomes the same indexed placeholder on both sides,
numbered in source order. Kinds the learned scheme leaves for the model to copy (numbers, names) stay as they
are, so training sees what translation will send. Which pairs depends on a hash of the pair and the seed, never
on file order: every DDP rank, a resumed run and a token cache agree. Validation and test pairs are never
changed. The pieces belong to the vocabulary (core.data.tokenizer.Tokenizer.with_pieces), and a model trained
with them lists them in its card (`placeholder_tokens`), which makes core.api use them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from core.data.augment import draw
from core.data.readers import Pair
from core.text.options import TextOptions, learned_scheme
from core.text.protect import Span, find_spans, spaced, spans_to_protect

# As many as the pipeline's other placeholder sets hold (core.text.options): more spans than this in one
# sentence are rare, and the pipeline leaves the rest to the model as it does with every set.
PLACEHOLDER_TOKENS = tuple(f"<ph{i}>" for i in range(10))
_SCHEME = learned_scheme(PLACEHOLDER_TOKENS)


def _whole(form: str) -> str:
    """A pattern for `form` not inside a longer word (v1.2 not in v1.23); markup may touch a word (ligne<br/>et)."""
    before = r"(?<!\w)" if re.match(r"\w", form) else ""
    after = r"(?!\w)" if re.match(r"\w", form[-1]) else ""
    return before + re.escape(form) + after


Cut = tuple[int, int, str]  # text[start:end] becomes the placeholder


def _in_target(target: str, forms: set[str], spans: list[Span], taken: list[Cut]) -> Cut | None:
    """The first occurrence in `target` of one of `forms` (the longest first) that no placeholder has taken and
    that is not part of a longer span the finder sees there (https://x.fr in https://x.fr/en)."""
    for m in re.finditer("|".join(_whole(f) for f in sorted(forms, key=len, reverse=True)), target):
        a, b = m.span()
        wider = any(s.start < b and a < s.end and (s.start < a or s.end > b) for s in spans)
        if not wider and not any(start < b and a < end for start, end, _ in taken):
            return a, b, ""
    return None


def _replaced(text: str, cuts: list[Cut]) -> str:
    out, last = [], 0
    for start, end, token in sorted(cuts):
        out += [text[last:start], spaced(text, start, end, token)]
        last = end
    return "".join(out) + text[last:]


def placeholder_pair(
    pair: Pair, unknown: Callable[[str], bool] | None = None, languages: tuple[str, str] = ("fr", "en")
) -> Pair:
    """`pair` with each protected source span that its target holds replaced on both sides by <ph0>, <ph1>, …;
    the pair itself when it has none. `unknown`: the vocabulary's test for characters it cannot spell (emoji,
    other scripts are spans too). `languages`: the pair's (source, target), whose writing the spans are read in
    (an English source's $1,299.99 is the French target's 1 299,99 $), as translation reads them."""
    source_cuts: list[Cut] = []
    target_cuts: list[Cut] = []
    target_spans = find_spans(pair.tgt, unknown=unknown, source=languages[1])
    for span in spans_to_protect(pair.src, TextOptions(languages=languages), unknown):
        if len(source_cuts) == len(PLACEHOLDER_TOKENS):
            break
        found = _SCHEME.stands_in(span.kind) and _in_target(
            pair.tgt, {span.original, span.output}, target_spans, target_cuts
        )
        if found:
            token = PLACEHOLDER_TOKENS[len(source_cuts)]
            source_cuts.append((span.start, span.end, token))
            target_cuts.append((found[0], found[1], token))
    if not source_cuts:
        return pair
    return Pair(_replaced(pair.src, source_cuts), _replaced(pair.tgt, target_cuts), pair.origin)


def with_placeholders(
    pairs: Sequence[Pair],
    share: float,
    seed: int,
    unknown: Callable[[str], bool] | None = None,
    languages: tuple[str, str] = ("fr", "en"),
) -> list[Pair]:
    """`pairs` with a `share` of them (drawn by hash) given placeholders (`placeholder_pair`); share 0 changes
    nothing."""
    if share <= 0:
        return list(pairs)
    return [
        placeholder_pair(p, unknown, languages) if draw(p.src + "\t" + p.tgt, "placeholders", seed) < share else p
        for p in pairs
    ]
