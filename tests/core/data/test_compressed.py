"""Readers take .gz, .xz and .bz2 alike: a file, a prefix P (P.fr.xz + P.en.xz), and a clear error when broken."""

import bz2
import gzip
import lzma

import pytest

from core.data.readers import read_corpus, resolve, tsv_languages
from core.errors import DataError

OPEN = {".gz": gzip.open, ".xz": lzma.open, ".bz2": bz2.open}
FR, EN = ["Bonjour.", "Le chat dort."], ["Hello.", "The cat is sleeping."]


@pytest.mark.parametrize("suffix", OPEN)
def test_prefix_data_in_each_compressed_form(tmp_path, suffix):
    for lang, lines in (("fr", FR), ("en", EN)):
        with OPEN[suffix](tmp_path / f"ep.{lang}{suffix}", "wt", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
    assert resolve(tmp_path / "ep") == (tmp_path / f"ep.fr{suffix}", tmp_path / f"ep.en{suffix}")
    assert [(p.src, p.tgt) for p in read_corpus(tmp_path / "ep")] == list(zip(FR, EN))


@pytest.mark.parametrize("suffix", OPEN)
def test_a_compressed_tsv_named_by_its_languages(tmp_path, suffix):
    path = tmp_path / f"eng-fra.tsv{suffix}"
    with OPEN[suffix](path, "wt", encoding="utf-8") as f:
        f.write("".join(f"{e}\t{fr}\n" for fr, e in zip(FR, EN)))
    assert tsv_languages(path) == ("en", "fr")
    assert [(p.src, p.tgt) for p in read_corpus(path)] == list(zip(FR, EN))  # turned round to French first


@pytest.mark.parametrize("suffix", OPEN)
def test_a_broken_compressed_file_is_one_line_naming_it(tmp_path, suffix):
    path = tmp_path / f"bad.tsv{suffix}"
    path.write_bytes(b"this is not compressed at all\n" * 3)
    with pytest.raises(DataError, match=rf"bad\.tsv\{suffix}:1: cannot read"):
        list(read_corpus(path))


def test_keep_empty_passes_one_sided_pairs_to_the_cleaning(tmp_path):
    (tmp_path / "c.fr").write_text("Bonjour.\n\nOui.\n", encoding="utf-8")
    (tmp_path / "c.en").write_text("Hello.\nA heading\n\n", encoding="utf-8")
    with pytest.raises(DataError, match="empty line"):
        list(read_corpus(tmp_path / "c"))
    assert [(p.src, p.tgt) for p in read_corpus(tmp_path / "c", keep_empty=True)] == [
        ("Bonjour.", "Hello."),
        ("", "A heading"),
        ("Oui.", ""),
    ]
