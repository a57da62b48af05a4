"""A protected span the model dropped, put back where the alignment says it belongs.

    model input  "Le fichier Boston est dans Chicago."      (config.yaml, /etc/tt/)
    model output "The file is in."                           Chicago dropped
    links        The←Le file←fichier is←est in←dans
    placed       "The file Boston is in Chicago."  ──restore──▶  "The file config.yaml is in /etc/tt/."

The placeholder goes after the output word aligned to the source word before it (else before the one
aligned to the word after it, else at the same share of the sentence), so keeping a span does not
depend on the model copying a word it may not know. A number the model wrote its own way (1987 → 198)
is replaced where the alignment puts it rather than written twice.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from core.text.spans import Span


def _source_word(model_input: str, span: Span) -> tuple[int, int] | None:
    """(first, last) word index of the span's placeholder (or copied text) in the model's input."""
    token = span.placeholder
    at = re.search(rf"(?<![\w]){re.escape(token)}(?![\w])", model_input)
    if at is None:
        return None
    first = len(model_input[: at.start()].split())
    return first, first + len(token.split()) - 1


def place_lost(output: str, model_input: str, lost: Sequence[Span], links: Sequence[tuple[int, int]]) -> str:
    """`output` with each lost span's placeholder (or copied text) put where `links` ((source word, output
    word) pairs) say its neighbours went."""
    words = output.split(" ") if output.strip() else []
    n_source = max(len(model_input.split()), 1)
    for span in lost:
        where = _source_word(model_input, span)
        if where is None:
            continue
        first, last = where
        own = sorted({t for s, t in links if first <= s <= last and t < len(words)})
        if span.copied and own and any(ch.isdigit() for ch in words[own[0]]):  # its own garbled copy
            word = words[own[0]]
            body = word.rstrip(".,;:!?…")
            words[own[0]] = span.placeholder + word[len(body) :]
            continue
        before = sorted({t for s, t in links if s == first - 1 and t < len(words)})
        after = sorted({t for s, t in links if s == last + 1 and t < len(words)})
        if first == 0:
            at = 0
        elif before:
            at = before[-1] + 1
        elif after:
            at = after[0]
        else:
            at = round(first * len(words) / n_source)
        at = min(at, len(words))
        if at == len(words) and words:  # at the end: before the final stop
            final = words[-1]
            body = final.rstrip(".!?…:;")
            if body != final:
                words[-1] = body
                words.append(span.placeholder + final[len(body) :])
                continue
        words.insert(at, span.placeholder)
    return " ".join(words)
