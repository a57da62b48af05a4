"""A glossary: French terms the translation must render a fixed way, read from a two-column TSV.

    Parlement européen<TAB>European Parliament

Blank lines and lines starting with # are skipped. Terms are forced by placeholder substitution
(core.text.protect): the term becomes a placeholder the model copies, and the English goes in its
place; a term whose placeholder the model dropped is reported, never silently left out.
"""

from __future__ import annotations

from pathlib import Path

from core.errors import DocumentError
from core.text.documents import read_utf8


def parse_glossary(text: str, name: str = "<glossary>") -> list[tuple[str, str]]:
    """(French, English) pairs of a glossary's text; a bad line raises DocumentError naming name:line."""
    terms: list[tuple[str, str]] = []
    seen: dict[str, int] = {}
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        cells = line.split("\t")
        if len(cells) != 2:
            raise DocumentError(
                f"{name}:{lineno}: expected 'French<TAB>English', got {len(cells)} tab-separated field(s)"
            )
        fr, en = cells[0].strip(), cells[1].strip()
        if not fr or not en:
            raise DocumentError(f"{name}:{lineno}: empty {'French' if not fr else 'English'} term")
        key = fr.lower()
        if key in seen:
            raise DocumentError(f"{name}:{lineno}: {fr!r} is already defined on line {seen[key]}")
        seen[key] = lineno
        terms.append((fr, en))
    return terms


def read_glossary(path: str | Path) -> list[tuple[str, str]]:
    """The glossary in the UTF-8 file `path` (see parse_glossary)."""
    return parse_glossary(read_utf8(path, "glossary").removeprefix("\ufeff"), str(path))
