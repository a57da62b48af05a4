"""Currency symbols next to a number, spelled out for the model: "12,50 €" → "12,50 euros".

The models learned prices from text that spells them (Europarl and news write "900 euros", "37 dollars")
and from few symbols: weights/next writes "12,50 €" as "12.50 knel" and drops "$" from "12,50 $", the
shipped model makes a name of it. Given the word, both write the English one ("12.50 euros", "15
dollars"), so the symbol is replaced by the French word before the sentence is protected and
translated, and the English word stays in the output. Only a symbol written against a number is
spelled (before it or after it, with or without a space); one inside code, markup, a URL or an e-mail
address is left as it is, and so is a symbol on its own.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

# Symbol → French (singular, plural). £ is "livre sterling": "livres" alone also reads as books.
WORDS = {
    "€": ("euro", "euros"),
    "$": ("dollar", "dollars"),
    "£": ("livre sterling", "livres sterling"),
    "¥": ("yen", "yens"),
}
# Spans of these kinds (core.text.protect) are copied as they are: no symbol in them is spelled.
VERBATIM_KINDS = ("code", "link", "element", "markup", "url", "email")
# Millions and billions written before the symbol (3 M€, 2,5 Md€): the French of news and reports.
SCALES = {"M": "millions", "Md": "milliards", "Mds": "milliards", "G": "milliards"}

_SP = "[ \u00a0\u202f]"
_NUMBER = r"(?:\d{1,3}(?:[ \u00a0\u202f]\d{3})+|\d+)(?:[,.]\d+)*"  # 12 | 12,50 | 3 500 | 1.5
SYMBOLS = frozenset(WORDS)  # a sentence without one has nothing to spell
_CHARS = "".join(WORDS)  # inside a character class: $ is literal
_AFTER = re.compile(rf"(?<![\w{_CHARS}])({_NUMBER}){_SP}?(Mds|Md|M|G)?([{_CHARS}])(?![\w{_CHARS}])")
_BEFORE = re.compile(rf"(?<![\w{_CHARS}])([{_CHARS}]){_SP}?({_NUMBER})(?![\w€£¥]|[,.]\d)")


def _words(number: str, symbol: str, scale: str | None = None) -> str:
    one, many = WORDS[symbol]
    if scale:
        return f"{number} {SCALES[scale]} d'{many}" if many[0] in "aeiouy" else f"{number} {SCALES[scale]} de {many}"
    return f"{number} {one if number == '1' else many}"


def spell_currencies(text: str, keep: Sequence[tuple[int, int]] = ()) -> str:
    """`text` with each currency symbol written against a number replaced by its French word; the
    (start, end) ranges in `keep` (code, markup, URLs) are left untouched."""
    out, last = [], 0
    for a, b in sorted(keep) + [(len(text), len(text))]:
        out.append(_spell(text[last:a]))
        out.append(text[a:b])
        last = max(last, b)
    return "".join(out)


def _spell(text: str) -> str:
    text = _AFTER.sub(lambda m: _words(m.group(1), m.group(3), m.group(2)), text)
    return _BEFORE.sub(lambda m: _words(m.group(2), m.group(1)), text)
