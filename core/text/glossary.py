"""A glossary: French terms the translation must render a fixed way, read from a two-column TSV.

    Parlement européen<TAB>European Parliament

Blank lines and lines starting with # are skipped. With the model at hand (tt translate, the API) a term
is forced by lexically constrained beam search (core.decode.constrained): the French stays in the sentence
and the English must appear in the output, where the model finds it most probable, in the plural where it
writes one. Without it (a translator that takes only sentences) a term is a placeholder the model copies,
the English put in its place. A term that cannot be placed is reported, never silently left out.
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


def plural(phrase: str) -> str:
    """The English plural of a term's last word (a glossary gives the singular): bill → bills, city → cities."""
    if phrase.endswith(("s", "x", "z", "ch", "sh")):
        return phrase + "es"
    if phrase.endswith("y") and phrase[-2:-1] not in ("a", "e", "i", "o", "u"):
        return phrase[:-1] + "ies"
    return phrase + "s"
