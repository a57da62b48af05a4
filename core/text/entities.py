"""HTML character references (`&amp;`, `&quot;`, `&#39;`, `&#x2019;`) in plain text.

Some corpora carry them escaped (Multi30k's English writes `stone &amp; tile`), so a model trained on them
writes `&amp;` for `&`. Training data is decoded by the cleaning rules (core/data/clean.py), and a
translation never shows a reference its source did not contain (`keep_source_entities`).
Only complete references with their `;` count: `R&D`, `AT&T` and `&copy` stay as written.
"""

from __future__ import annotations

import html
import html.entities
import re

ENTITY = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")


def _decoded(m: re.Match[str]) -> str:
    ref = m.group()
    # A name HTML does not define stays as written: html.unescape would read `&notaref;` as `&not` + `aref;`.
    if ref[1] != "#" and ref[1:] not in html.entities.html5:
        return ref
    return html.unescape(ref)


def decode_entities(text: str) -> str:
    """Text with every complete character reference decoded, twice-escaped ones (`&amp;amp;`) included."""
    for _ in range(3):  # &amp;amp;amp; at most; a loop bound rather than a fixed point on hostile input
        if "&" not in text:
            return text
        decoded = ENTITY.sub(_decoded, text)
        if decoded == text:
            return text
        text = decoded
    return text


# A model that learned `&amp;` also writes it cut short (`Marks &ampco.`): the five XML references without their `;`.
CUT_SHORT = re.compile(r"&(amp|quot|apos|lt|gt)(?!;)")
XML = {"amp": "&", "quot": '"', "apos": "'", "lt": "<", "gt": ">"}


def keep_source_entities(source: str, output: str) -> str:
    """The output with every character reference decoded that the source does not itself contain (and the
    five XML ones cut short of their `;`, which no source gives a reason to write)."""
    if "&" not in output:
        return output
    present = set(ENTITY.findall(source))
    output = ENTITY.sub(lambda m: m.group() if m.group() in present else decode_entities(m.group()), output)
    return CUT_SHORT.sub(lambda m: m.group() if m.group() in source else XML[m.group(1)], output)
