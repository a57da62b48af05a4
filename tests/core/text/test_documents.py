"""Documents: segments out, the same document back, byte for byte outside the translated text."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.errors import DocumentError
from core.text.documents import (
    break_lines,
    document_format,
    parse_document,
    parse_html,
    parse_lines,
    read_document,
)

SRT = (
    "\ufeff1\r\n00:00:01,000 --> 00:00:02,500\r\nJe suis\r\nétudiant.\r\n\r\n"
    "2\r\n00:00:03,000 --> 00:00:04,000 X1:10\r\n- Tu viens ?\r\n- Oui.\r\n\r\n"
    "3\r\n00:00:05,000 --> 00:00:06,000\r\nIl fait froid.\r\n"
)
MARKDOWN = """# Un titre

Voici un [lien](https://exemple.fr/a_(b)) et du `code`,
sur deux lignes.

> Une citation.

1. Premier élément
   * sous-élément

```python
print("ne pas traduire")
```

    bloc indenté

<div>html</div>

| a | b |
|---|---|
| un | deux |

Titre souligné
==============
"""
TEXT = "Premier paragraphe\nsur deux lignes.\n\n\n  Deuxième.  \n\nTroisième."


def _outside(doc, rendered_translations):
    """The document's text with every translated region cut out, for the source and for a render."""
    rendered = doc.render(rendered_translations)
    pieces, last = [], 0
    for (a, b), _ in zip(doc.regions, doc.segments):
        if a >= 0:
            pieces.append(doc.text[last:a])
            last = b
    pieces.append(doc.text[last:])
    return pieces, rendered


@pytest.mark.parametrize(("text", "fmt"), [(SRT, "srt"), (MARKDOWN, "md"), (TEXT, "text")])
def test_everything_outside_the_segments_is_kept_byte_for_byte(text, fmt):
    doc = parse_document(text, fmt)
    marks = [f"@{i}@" for i in range(len(doc.segments))]
    pieces, rendered = _outside(doc, marks)
    # Every piece of the source outside the regions appears, in order, between the translations.
    pos = 0
    for piece in pieces:
        found = rendered.find(piece, pos)
        assert found >= 0, piece
        pos = found + len(piece)
    stripped = rendered
    for m in marks:
        stripped = stripped.replace(m, "")
    assert stripped == "".join(pieces)


def test_srt_segments_numbering_timestamps_and_dialogue():
    doc = parse_document(SRT, "srt")
    assert doc.segments == ["Je suis étudiant.", "Tu viens ?", "Oui.", "Il fait froid."]
    out = doc.render(["I am a student.", "Are you coming?", "Yes.", "It's cold."])
    assert out == SRT.replace("Je suis\r\nétudiant.", "I am a\r\nstudent.").replace(
        "Tu viens ?", "Are you coming?"
    ).replace("Oui.", "Yes.").replace("Il fait froid.", "It's cold.")


def test_markdown_segments_leave_code_tables_and_html_alone():
    doc = parse_document(MARKDOWN, "md")
    assert doc.segments == [
        "Un titre",
        "Voici un [lien](https://exemple.fr/a_(b)) et du `code`, sur deux lignes.",  # the pipeline reads "lien" here
        "Une citation.",
        "Premier élément",
        "sous-élément",
        "Titre souligné",
    ]
    translations = [
        "A title",
        "Here is a [link](https://exemple.fr/a_(b)) and some `code`, on two lines.",
        "A quote.",
        "First item",
        "sub-item",
        "Underlined title",
    ]
    out = doc.render(translations)
    assert "Here is a [link](https://exemple.fr/a_(b)) and some `code`, on two lines.\n\n> A quote." in out
    assert 'print("ne pas traduire")' in out and "    bloc indenté" in out and "| un | deux |" in out
    assert out.endswith("Underlined title\n==============\n")


def test_a_markdown_link_not_of_plain_words_has_its_text_translated_as_a_segment_of_its_own():
    doc = parse_document("Voir [la page 3](https://exemple.fr/p) et [Envoyer](https://exemple.fr/e).\n", "md")
    assert doc.segments == [
        "Voir [la page 3](https://exemple.fr/p) et [Envoyer](https://exemple.fr/e).",
        "la page 3",
        "Envoyer",
    ]
    out = doc.render(["See [la page 3](https://exemple.fr/p) and [Envoyer](https://exemple.fr/e).", "page 3", "Send"])
    assert out == "See [page 3](https://exemple.fr/p) and [Send](https://exemple.fr/e).\n"


def test_plain_text_keeps_paragraphs():
    doc = parse_document(TEXT, "text")
    assert doc.segments == ["Premier paragraphe sur deux lignes.", "Deuxième.", "Troisième."]
    assert doc.render(["First.", "Second.", "Third."]) == "First.\n\n\n  Second.  \n\nThird."


def test_break_lines_keeps_words_and_count():
    assert break_lines("I am a student.", 2) == ["I am a", "student."]
    assert break_lines("Hi.", 2) == ["Hi."]
    words = "one two three four five six seven"
    assert " ".join(break_lines(words, 3)) == words and len(break_lines(words, 3)) == 3


def test_render_needs_one_translation_per_segment():
    with pytest.raises(ValueError):
        parse_document(TEXT, "text").render(["one"])


def test_bad_srt_names_file_and_line(tmp_path):
    path = tmp_path / "bad.srt"
    path.write_text(
        "1\n00:00:01,000 --> 00:00:02,000\nSalut.\n\n2\n00:00:0x --> 00:00:03,000\nÇa va ?\n", encoding="utf-8"
    )
    with pytest.raises(DocumentError, match=rf"^{path}:5: not a subtitle block"):
        read_document(path)


def test_bad_utf8_names_file_and_line(tmp_path):
    path = tmp_path / "bad.md"
    path.write_bytes("# Titre\n\nDeux \xe9".encode("latin-1"))
    with pytest.raises(DocumentError, match=rf"^{path}:3: invalid UTF-8"):
        read_document(path)


def test_format_from_extension_and_override(tmp_path):
    assert document_format("a.SRT") == "srt" and document_format("a.markdown") == "md"
    assert document_format("a.txt") == "text" and document_format("a") == "text"
    assert document_format("a.srt", "text") == "text"
    path = tmp_path / "notes.srt"
    path.write_text(TEXT, encoding="utf-8")
    assert read_document(path, "text").segments[0] == "Premier paragraphe sur deux lignes."
    with pytest.raises(DocumentError, match="unknown document format 'docx'"):
        document_format("a.srt", "docx")


# ---------------------------------------------------------------------------- lines and HTML (tt serve)
@given(st.text())
def test_lines_put_back_around_their_own_segments_are_the_text(text):
    document = parse_lines(text)
    assert document.render(document.segments) == text
    assert all(s == s.strip() and s and len(s.splitlines()) == 1 for s in document.segments)


def test_html_segments_are_the_text_between_block_tags_with_inline_tags_inside():
    text = (
        '<!DOCTYPE html><p a="1">Un  <b>deux</b>&nbsp;trois &lt;4&gt;</p><!-- Ne pas traduire -->'
        "<style>p {}</style> 42 <br/>\n<ul><li>(<a href='/x'>voir</a>)</li><li><b>x</b> y <b>z</b></li></ul>"
        "<pre>Le code.</pre><i>Il fait froid &amp; gris.</i>"
    )
    document = parse_html(text)
    assert document.segments == ["Un <b>deux</b> trois <4>", "voir", "<b>x</b> y <b>z</b>", "Il fait froid & gris."]
    # Outside the segments, byte for byte; inside, the source's own tags kept and the rest escaped.
    assert document.render(["One <b>two</b> three <4>", "see", "<b>x</b> & <i>z</i>", "Cold & grey."]) == (
        '<!DOCTYPE html><p a="1">One <b>two</b> three &lt;4&gt;</p><!-- Ne pas traduire -->'
        "<style>p {}</style> 42 <br/>\n<ul><li>(<a href='/x'>see</a>)</li><li><b>x</b> &amp; &lt;i&gt;z&lt;/i&gt;</li></ul>"
        "<pre>Le code.</pre><i>Cold &amp; grey.</i>"
    )


def test_html_without_text_has_no_segments():
    for text in ("", " \n", "<br/>\n", "<p> 42 </p><script>var s = 'Bonjour.';</script>"):
        document = parse_html(text)
        assert document.segments == [] and document.render([]) == text
