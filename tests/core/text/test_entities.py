"""HTML character references: decoded in training data, never shown in a translation unless the source had them."""

from __future__ import annotations

from collections import Counter

import pytest

from core.data.clean import CleanRules, clean_pairs
from core.data.readers import Pair
from core.text.entities import decode_entities, keep_source_entities


@pytest.mark.parametrize(
    ("text", "decoded"),
    [
        ("stone &amp; tile", "stone & tile"),
        ("&quot;Lounge &amp; Grill&quot;", '"Lounge & Grill"'),
        ("it&#39;s &#x2019;", "it's ’"),
        ("twice &amp;amp; over", "twice & over"),
        ("R&D, AT&T, &copy and a lone &", "R&D, AT&T, &copy and a lone &"),  # no `;`: not a reference
        ("&notaref; &madeup;", "&notaref; &madeup;"),  # names HTML does not define stay as written
    ],
)
def test_decode_entities(text, decoded):
    assert decode_entities(text) == decoded


def test_a_translation_keeps_only_the_references_its_source_had():
    assert keep_source_entities("Tom & Jerry", "Tom &amp; Jerry") == "Tom & Jerry"
    assert keep_source_entities("<b>a &amp; b</b>", "a &amp; b &quot;c&quot;") == 'a &amp; b "c"'
    assert keep_source_entities("Marks & Spencer", "Marks &ampco.") == "Marks &co."
    assert keep_source_entities("x", "no ampersand") == "no ampersand"


def test_cleaning_decodes_references_before_the_other_rules():
    pairs = [
        Pair("Des pierres et des carreaux.", "Working with stone &amp; tile.", "a:1"),
        Pair("Des pierres et des carreaux.", "Working with stone & tile.", "a:2"),  # the same pair once decoded
    ]
    counts: Counter[str] = Counter()
    kept = list(clean_pairs(pairs, CleanRules(), counts))
    assert [p.tgt for p in kept] == ["Working with stone & tile."]
    assert counts["entities_decoded"] == 1 and counts["duplicate"] == 1
    raw = list(clean_pairs(pairs, CleanRules(decode_entities=False), Counter()))
    assert [p.tgt for p in raw] == ["Working with stone &amp; tile.", "Working with stone & tile."]
