"""core.text.entities.unescape_new: references the model wrote for plain characters are decoded; those the
source held stay."""

from __future__ import annotations

from core.text.entities import unescape_new


def test_references_the_source_did_not_hold_are_decoded():
    assert unescape_new("Tom & Jerry", "Tom &amp; Jerry") == "Tom & Jerry"
    assert unescape_new("a < b", "a &lt; b &#39;c&#39; &#x41;") == "a < b 'c' A"
    assert unescape_new("R&D", "R&amp;amp;D") == "R&D"  # escaped twice: all the way down


def test_references_the_source_held_stay():
    assert unescape_new("écrivez &amp; pour &", "write &amp; for &amp;") == "write &amp; for &amp;"
    assert unescape_new("&lt;b&gt;", "&lt;b&gt; &amp;") == "&lt;b&gt; &"


def test_text_without_references_and_unknown_names_are_left_alone():
    assert unescape_new("x", "Fish & chips; &notaref; &") == "Fish & chips; &notaref; &"
