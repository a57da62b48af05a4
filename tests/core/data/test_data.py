"""Readers, held-out split, token-budget batches and the data preparation the Trainer runs."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest

from core.data.readers import (
    Example,
    Pair,
    ReadStats,
    collate,
    heldout_bucket,
    heldout_range,
    read_aligned,
    read_corpus,
    read_tsv,
    resolve,
    split_heldout,
    token_batches,
    write_aligned,
)
from core.errors import DataError
from core.train.config import TrainConfig
from core.train.prepare import prepare_data
from tests.conftest import SHARED_DATA, TINY_TSV


def write(path, text: str | bytes, gz: bool = False):
    data = text.encode("utf-8") if isinstance(text, str) else text
    if gz:
        with gzip.open(path, "wb") as f:
            f.write(data)
    else:
        path.write_bytes(data)
    return path


def test_tsv_reads_pairs_and_ignores_extra_columns(tmp_path):
    f = write(tmp_path / "a.tsv", "Bonjour.\tHello.\tCC-BY 2.0 (France)\r\nMerci !\tThanks!\n")
    pairs = list(read_tsv(f))
    assert [(p.src, p.tgt) for p in pairs] == [("Bonjour.", "Hello."), ("Merci !", "Thanks!")]
    assert pairs[1].origin == f"{f}:2"


@pytest.mark.parametrize(
    "bad, message",
    [("no tab here\n", "found no tab"), ("\tHello.\n", "empty source"), ("Bonjour.\t  \n", "empty target")],
)
def test_tsv_strict_names_file_and_line(tmp_path, bad, message):
    f = write(tmp_path / "a.tsv", "Oui.\tYes.\n" + bad)
    with pytest.raises(DataError, match=rf"a\.tsv:2: .*{message}.*--skip-bad-lines"):
        list(read_tsv(f))


def test_tsv_skip_counts_bad_lines(tmp_path):
    f = write(tmp_path / "a.tsv", b"Oui.\tYes.\nno tab\n\xff\xfe\tbad bytes\nNon.\tNo.\n")
    stats = ReadStats()
    pairs = list(read_tsv(f, strict=False, stats=stats))
    assert [p.src for p in pairs] == ["Oui.", "Non."]
    assert (stats.read, stats.skipped_malformed) == (2, 2)
    assert stats.problems[1] == f"{f}:3: not valid UTF-8"


def test_invalid_utf8_is_an_error_with_its_line_when_strict(tmp_path):
    f = write(tmp_path / "a.tsv", b"Oui.\tYes.\nNon.\t\xe9t\xe9\n")
    with pytest.raises(DataError, match=r"a\.tsv:2: not valid UTF-8"):
        list(read_tsv(f))


def test_gzip_and_prefix_forms(tmp_path):
    write(tmp_path / "c.fr.gz", "Un chat.\nDeux chiens.\n", gz=True)
    write(tmp_path / "c.en.gz", "A cat.\nTwo dogs.\n", gz=True)
    write(tmp_path / "t.tsv.gz", "Un chat.\tA cat.\n", gz=True)
    assert resolve(tmp_path / "c") == (tmp_path / "c.fr.gz", tmp_path / "c.en.gz")
    assert [p.tgt for p in read_corpus(tmp_path / "c")] == ["A cat.", "Two dogs."]
    assert [p.tgt for p in read_corpus(tmp_path / "t.tsv.gz")] == ["A cat."]
    # Languages swap with the suffixes.
    assert [p.src for p in read_corpus(tmp_path / "c", src_lang="en", tgt_lang="fr")] == ["A cat.", "Two dogs."]
    # --swap reads any form target→source, a TSV included; the origin still names the file and line.
    swapped = list(read_corpus(tmp_path / "t.tsv.gz", swap=True))
    assert [(p.src, p.tgt) for p in swapped] == [("A cat.", "Un chat.")] and swapped[0].origin.endswith("t.tsv.gz:1")
    assert [p.tgt for p in read_corpus(tmp_path / "c", swap=True)] == ["Un chat.", "Deux chiens."]


def test_a_tsv_named_by_its_languages_turns_with_src_lang(tmp_path):
    """`--src-lang en --tgt-lang fr` turns Tatoeba's fra-eng.tsv around with the prefix data beside it."""
    from core.data.readers import tsv_languages

    write(tmp_path / "fra-eng.tsv", "Un chat.\tA cat.\n")
    write(tmp_path / "c.fr", "Deux chiens.\n")
    write(tmp_path / "c.en", "Two dogs.\n")
    write(tmp_path / "pairs.tsv", "Un chat.\tA cat.\n")
    assert tsv_languages(tmp_path / "fra-eng.tsv") == ("fr", "en") and tsv_languages(Path("deu-eng.tsv.gz")) == (
        "de",
        "en",
    )
    assert tsv_languages(tmp_path / "pairs.tsv") is None and tsv_languages(Path("my-corpus.tsv")) is None
    both = [str(tmp_path / "fra-eng.tsv"), str(tmp_path / "c")]
    assert [p.src for spec in both for p in read_corpus(spec)] == ["Un chat.", "Deux chiens."]
    assert [p.src for spec in both for p in read_corpus(spec, src_lang="en", tgt_lang="fr")] == ["A cat.", "Two dogs."]
    assert [p.src for spec in both for p in read_corpus(spec, src_lang="en", tgt_lang="fr", swap=True)] == [
        "Un chat.",
        "Deux chiens.",
    ]
    assert [p.src for p in read_corpus(tmp_path / "fra-eng.tsv", src_lang="eng", tgt_lang="fra")] == ["A cat."]
    # A TSV that names no languages is source<TAB>target, whatever the languages asked for.
    assert [p.src for p in read_corpus(tmp_path / "pairs.tsv", src_lang="en", tgt_lang="fr")] == ["Un chat."]


def test_missing_data_says_which_forms_work(tmp_path):
    with pytest.raises(DataError, match=r"nope: no such data; give a TSV file .* P\.fr and P\.en"):
        resolve(tmp_path / "nope")


def test_aligned_files_of_different_length(tmp_path):
    write(tmp_path / "x.fr", "a\nb\nc\n")
    write(tmp_path / "x.en", "a\nb\n")
    with pytest.raises(DataError, match=r"x\.fr:3: files are not aligned"):
        list(read_aligned(tmp_path / "x.fr", tmp_path / "x.en"))


def test_aligned_empty_line_strict_and_skipped(tmp_path):
    write(tmp_path / "x.fr", "un\n\ntrois\n")
    write(tmp_path / "x.en", "one\ntwo\nthree\n")
    with pytest.raises(DataError, match=r"x\.fr:2: empty line"):
        list(read_aligned(tmp_path / "x.fr", tmp_path / "x.en"))
    stats = ReadStats()
    assert [p.tgt for p in read_aligned(tmp_path / "x.fr", tmp_path / "x.en", strict=False, stats=stats)] == [
        "one",
        "three",
    ]
    assert stats.skipped_malformed == 1


def test_heldout_split_depends_on_the_sentence_not_the_order():
    pairs = [p for p in read_tsv(TINY_TSV)]
    train, valid, test = split_heldout(pairs, 300, 200)
    assert len(train) + len(valid) + len(test) == len(pairs)
    train2, valid2, test2 = split_heldout(list(reversed(pairs)), 300, 200)
    assert {p.src for p in valid} == {p.src for p in valid2} and {p.src for p in test} == {p.src for p in test2}
    assert all(heldout_bucket(p.src) < 300 for p in valid)
    assert valid and test  # 40 pairs: each share non-empty (with these seeds-free hashes it is)


def test_token_batches_respect_the_budget_and_cover_everything():
    import random

    rng = random.Random(0)
    src = [rng.randint(1, 40) for _ in range(500)]
    tgt = [rng.randint(2, 40) for _ in range(500)]
    batches = token_batches(src, tgt, 400, seed=3, epoch=0)
    assert sorted(i for b in batches for i in b) == list(range(500))
    for b in batches:
        padded = len(b) * (max(src[i] for i in b) + max(tgt[i] for i in b))
        assert padded <= 400 or len(b) == 1
    assert batches == token_batches(src, tgt, 400, seed=3, epoch=0)  # what exact resume relies on
    assert batches != token_batches(src, tgt, 400, seed=3, epoch=1)


def test_collate_shifts_the_target():
    src, tgt_in, tgt_out = collate([Example([5, 6, 3], [2, 7, 8, 3]), Example([9, 3], [2, 7, 3])], pad_id=0)
    assert src.tolist() == [[5, 6, 3], [9, 3, 0]]
    # The shorter row feeds its EOS at the last position; its output there is pad, so no loss.
    assert tgt_in.tolist() == [[2, 7, 8], [2, 7, 3]]
    assert tgt_out.tolist() == [[7, 8, 3], [7, 3, 0]]


def test_prepare_dedups_filters_and_saves_the_tokenizer(tmp_path):
    text = TINY_TSV.read_text(encoding="utf-8")
    long = "Bonjour " * 40 + "\tHello.\n"  # ratio far above 3
    data = write(tmp_path / "d.tsv", text + text + long)
    cfg = TrainConfig(data=[str(data)], out=str(tmp_path / "run"), vocab_size=120, dedup=True, valid_per_mille=100)
    prepared = prepare_data(cfg, tmp_path / "run")
    s = prepared.stats
    assert s["pairs_read"] == 81 and s["skipped_duplicate"] == 40 and s["skipped_filtered"] == 1
    assert s["train_pairs"] + s["valid_pairs"] == 40
    assert (tmp_path / "run" / "spm.model").read_bytes() == prepared.tokenizer.proto
    ex = prepared.train[0]
    assert ex.src[-1] == 3 and ex.tgt[0] == 2 and ex.tgt[-1] == 3  # EOS; BOS … EOS


@pytest.mark.data
def test_reads_the_shared_corpora():
    stats = ReadStats()
    first = next(iter(read_corpus(SHARED_DATA / "tatoeba-fra-eng" / "fra-eng.tsv", stats=stats)))
    assert first.src and first.tgt
    m30k = read_corpus(SHARED_DATA / "multi30k" / "val")
    assert sum(1 for _ in m30k) > 500


def test_heldout_range_and_write_aligned_round_trip(tmp_path):
    """heldout_range rebuilds split_heldout's test share from the data alone; write_aligned/read_aligned keep it."""
    pairs = [Pair(f"phrase {i}", f"sentence {i}", f"x:{i}") for i in range(3000)]
    _, _, test = split_heldout(pairs, 10, 15)
    assert heldout_range(pairs, 10, 25) == test and test
    write_aligned(test, tmp_path / "t.fr", tmp_path / "t.en")
    back = list(read_aligned(tmp_path / "t.fr", tmp_path / "t.en"))
    assert [(p.src, p.tgt) for p in back] == [(p.src, p.tgt) for p in test]


def test_tt_train_writes_exactly_the_test_split_and_never_trains_on_it(tmp_path):
    """`tt train --valid-per-mille 300 --test-per-mille 200` on the fixture: test.fr/test.en hold, in
    corpus order, exactly the pairs whose source hashes (BLAKE2b, 8 bytes, big-endian, mod 1000) into
    [300, 500), and the training set the trainer builds holds none of them.

    The hash is written out here, not imported: held-out buckets must never change between versions,
    or a model's test sentences would leak into a later run's training data.
    """
    from typer.testing import CliRunner

    from tt_cli.main import app

    def bucket(src: str) -> int:
        return int.from_bytes(hashlib.blake2b(src.encode("utf-8"), digest_size=8).digest(), "big") % 1000

    pairs = [tuple(line.split("\t")) for line in TINY_TSV.read_text(encoding="utf-8").splitlines()]
    valid = [p for p in pairs if bucket(p[0]) < 300]
    test = [p for p in pairs if 300 <= bucket(p[0]) < 500]
    train = [p for p in pairs if bucket(p[0]) >= 500]
    assert valid and test and train

    run = tmp_path / "run"
    args = [
        "train",
        "--data",
        str(TINY_TSV),
        "--out",
        str(run),
        "--preset",
        "tiny",
        "--vocab-size",
        "120",
        "--max-steps",
        "1",
        "--valid-every",
        "0",
        "--threads",
        "1",
        "--valid-per-mille",
        "300",
        "--test-per-mille",
        "200",
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.stderr
    written = list(
        zip((run / "test.fr").read_text("utf-8").splitlines(), (run / "test.en").read_text("utf-8").splitlines())
    )
    assert written == test
    start = json.loads((run / "metrics.jsonl").read_text().splitlines()[0])
    assert (start["train_pairs"], start["valid_pairs"]) == (len(train), len(valid))

    # What the trainer trained on (prepare_data is its first step), with the run's own tokenizer.
    cfg = TrainConfig(data=[str(TINY_TSV)], out=str(run), vocab_size=120, valid_per_mille=300, test_per_mille=200)
    prepared = prepare_data(cfg, run, is_main=False)
    trained = {prepared.tokenizer.decode(ex.src[:-1]) for ex in prepared.train}
    assert trained == {src for src, _ in train}
    assert not trained & {src for src, _ in test}


def test_concat_joins_pairs_for_length(tmp_path):
    """--concat adds seeded examples of 2..concat-max training pairs side by side: their pieces, one BOS,
    one EOS, exactly what the joined text encodes to; within --max-pieces; the same on every rebuild."""
    from core.data.readers import join_examples
    from core.train.config import TrainConfig
    from core.train.prepare import prepare_data
    from tests.conftest import TINY_TSV

    cfg = TrainConfig(
        data=[str(TINY_TSV)], out=str(tmp_path), preset="tiny", vocab_size=120, concat=0.5, concat_max=3, max_pieces=40
    )
    data = prepare_data(cfg, tmp_path)
    plain = [e for e in data.train if not e.parts]
    joined = [e for e in data.train if e.parts]
    assert data.stats["joined_examples"] == len(joined) == round(0.5 * len(plain))
    tok = data.tokenizer
    for e in joined:
        assert 2 <= len(e.parts) <= 3 and all(p in plain for p in e.parts)
        assert len(e.src) - 1 <= 40 and len(e.tgt) - 2 <= 40
        src_text = " ".join(tok.decode(p.src[:-1]) for p in e.parts)
        tgt_text = " ".join(tok.decode(p.tgt[1:-1]) for p in e.parts)
        assert e.src[:-1] == tok.encode(src_text) and e.tgt[1:-1] == tok.encode(tgt_text)
        assert e.src[-1] == tok.sp.eos_id() and (e.tgt[0], e.tgt[-1]) == (tok.sp.bos_id(), tok.sp.eos_id())
    assert join_examples(joined[0].parts) == joined[0]
    again = prepare_data(cfg, tmp_path)
    assert [(e.src, e.tgt) for e in again.train] == [(e.src, e.tgt) for e in data.train]
    with pytest.raises(DataError, match="--concat -1"):
        prepare_data(
            TrainConfig(data=[str(TINY_TSV)], out=str(tmp_path), preset="tiny", vocab_size=120, concat=-1), tmp_path
        )
    with pytest.raises(DataError, match="--concat-max 1"):
        prepare_data(
            TrainConfig(
                data=[str(TINY_TSV)], out=str(tmp_path), preset="tiny", vocab_size=120, concat=0.5, concat_max=1
            ),
            tmp_path,
        )
