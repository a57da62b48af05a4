"""Text to encoder input: the one rule every command uses (translate, inspect, align, ...).

    text ──clean_text──▶ strip ──encode──▶ pieces, cut to fit (the head is kept) ──▶ + EOS

So the same sentence gives the same pieces in `tt translate` and `tt inspect`. Core never prints:
what was changed on the way comes back as warnings, and the caller decides how to show them.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field

from core.data.tokenizer import Tokenizer
from core.model.config import EOS_ID


@dataclass(frozen=True)
class Source:
    """One sentence ready for the encoder."""

    text: str  # the text as given
    ids: list[int]  # the encoder's input, EOS last; [] when the text is empty or only whitespace
    truncated: bool = False  # pieces past the model's positions were dropped
    warnings: list[str] = field(default_factory=list)  # what was changed, one line each


def clean_text(text: str) -> tuple[str, int]:
    """`text` with control characters (NUL included) and lone surrogates replaced by spaces.

    They carry no meaning to translate, and line breaks inside a "line" would break the
    one-line-out-per-line-in contract. Returns the cleaned text and how many were replaced.
    """
    out, replaced = [], 0
    for ch in text:
        cat = unicodedata.category(ch)
        if cat in ("Cc", "Cs") and ch != "\t" or ch in "\u2028\u2029":
            out.append(" ")
            replaced += 1
        else:
            out.append(" " if ch == "\t" else ch)
    return "".join(out), replaced


def prepare_source(tokenizer: Tokenizer, text: str, max_len: int) -> Source:
    """The encoder input for `text` under a model with `max_len` positions (ModelConfig.max_len).

    Control characters become spaces, the ends are stripped, the pieces are cut to max_len - 1 —
    keeping the head, as training's length filter does — and EOS goes last, as in training.
    """
    cleaned, replaced = clean_text(text)
    warnings = [f"replaced {replaced} control character(s) with spaces"] if replaced else []
    cleaned = cleaned.strip()
    if not cleaned:
        return Source(text, [], False, warnings)
    ids = tokenizer.encode(cleaned)
    room = max_len - 1  # one position is EOS's
    truncated = len(ids) > room
    if truncated:
        warnings.append(f"{len(ids)} pieces, longer than the model's {room}; translated the first {room}")
        ids = ids[:room]
    return Source(text, ids + [EOS_ID], truncated, warnings)
