"""Character references (`&amp;`, `&lt;`, `&#39;`) in a translation that its source did not have.

A model that learned from web text writes them for plain characters ("Tom & Jerry" → "Tom &amp;
Jerry"), and a reader gets them back literally. A reference the source itself holds (a text about HTML,
a page's own escapes) is the writer's, and stays.
"""

from __future__ import annotations

import html
import re
from html.entities import html5

REFERENCE = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")


def unescape_new(source: str, text: str) -> str:
    """`text` with every character reference that does not occur in `source` decoded (a doubled one,
    `&amp;amp;`, all the way down)."""
    kept = set(REFERENCE.findall(source))

    def decoded(m: re.Match) -> str:
        ref = m.group()
        if ref in kept:
            return ref
        # A name only as a whole: html.unescape would read "&notaref;" as "&not" + "aref;".
        return html.unescape(ref) if ref.startswith("&#") else html5.get(ref[1:], ref)

    for _ in range(4):  # each pass undoes one level of escaping; four is beyond any real text
        again = REFERENCE.sub(decoded, text)
        if again == text:
            break
        text = again
    return text
