"""Glossary files: read, and every bad line named by file:line."""

from __future__ import annotations

import pytest

from core.errors import DocumentError
from core.text.glossary import read_glossary


def test_reads_pairs_skipping_comments_and_blank_lines(tmp_path):
    path = tmp_path / "terms.tsv"
    path.write_text("# fr\ten\n\nParlement européen\tEuropean Parliament\nchat\tcat\n", encoding="utf-8")
    assert read_glossary(path) == [("Parlement européen", "European Parliament"), ("chat", "cat")]


@pytest.mark.parametrize(
    ("content", "line", "what"),
    [
        ("chat\tcat\nchien\n", 2, "expected 'French<TAB>English'"),
        ("chat\tcat\tfeline\n", 1, "3 tab-separated"),
        ("\tcat\n", 1, "empty French term"),
        ("chat\tcat\nChat\tkitty\n", 2, "already defined on line 1"),
    ],
)
def test_bad_lines_name_file_and_line(tmp_path, content, line, what):
    path = tmp_path / "terms.tsv"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(DocumentError) as exc:
        read_glossary(path)
    assert str(exc.value).startswith(f"{path}:{line}: ") and what in str(exc.value)


def test_bad_utf8_and_missing_file(tmp_path):
    path = tmp_path / "terms.tsv"
    path.write_bytes(b"chat\tcat\nb\xe9b\xe9\tbaby\n")
    with pytest.raises(DocumentError, match=rf"^{path}:2: invalid UTF-8"):
        read_glossary(path)
    with pytest.raises(DocumentError, match="cannot read"):
        read_glossary(tmp_path / "none.tsv")
