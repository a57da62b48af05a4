"""`tt train`'s corpus-scale options, each with a run that shows it took effect."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import TINY_TSV
from tt_cli.main import app

runner = CliRunner()
LINES = TINY_TSV.read_text(encoding="utf-8").splitlines()


def train(out: Path, *extra: str, data: list[Path] | None = None, budget: tuple[str, ...] = ("--max-steps", "1")):
    args = ["train", "--out", str(out), "--preset", "tiny", "--vocab-size", "120", "--max-tokens", "256"]
    args += ["--warmup", "50", "--valid-every", "0", "--threads", "1", *budget, *extra]
    for d in data or [TINY_TSV]:
        args += ["--data", str(d)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.stderr
    return json.loads((out / "metrics.jsonl").read_text().splitlines()[0]), result


@pytest.fixture
def two_corpora(tmp_path) -> list[Path]:
    big, small = tmp_path / "big.tsv", tmp_path / "small.tsv"
    big.write_text("\n".join(LINES[:32]) + "\n", encoding="utf-8")
    small.write_text("\n".join(LINES[32:]) + "\n", encoding="utf-8")
    return [big, small]


def per_epoch(start: dict) -> list[int]:
    return [c["per_epoch"] for c in start["corpora"].values()]


def test_data_weight_and_mix_temperature_change_what_an_epoch_draws(tmp_path, two_corpora):
    plain, _ = train(tmp_path / "plain", data=two_corpora)
    sizes = [c["train"] for c in plain["corpora"].values()]
    assert per_epoch(plain) == sizes and sizes[0] > 2 * sizes[1]
    weighted, _ = train(tmp_path / "w", "--data-weight", "1", "--data-weight", "3", data=two_corpora)
    assert per_epoch(weighted)[1] > sizes[1] and sum(per_epoch(weighted)) == sum(sizes)
    hot, out = train(tmp_path / "t", "--mix-temperature", "50", data=two_corpora)
    assert abs(per_epoch(hot)[0] - per_epoch(hot)[1]) <= 2  # nearly equal shares
    assert "drawn per epoch" in out.stderr


def test_no_clean_keeps_what_the_rules_drop(tmp_path):
    data = tmp_path / "d.tsv"
    copy = "Rapport Van den Berg sur la pêche (A5-0464/2001)"
    data.write_text(TINY_TSV.read_text(encoding="utf-8") + f"{copy}\t{copy}\nOui.\t\n", encoding="utf-8")
    cleaned, out = train(tmp_path / "c", data=[data])
    assert cleaned["cleaning"]["same_text"] == 1 and cleaned["cleaning"]["empty"] == 1
    assert "cleaning: empty 1, same text 1" in out.stderr
    kept, _ = train(tmp_path / "k", "--no-clean", "--skip-bad-lines", data=[data])
    assert not any(kept["cleaning"].values()) and kept["train_pairs"] + kept["valid_pairs"] == 41
    assert kept["skipped_malformed"] == 1  # without cleaning, an empty side is a bad line as before


def test_no_dedup_keeps_repeated_pairs(tmp_path):
    data = tmp_path / "d.tsv"
    data.write_text(TINY_TSV.read_text(encoding="utf-8") * 2, encoding="utf-8")
    deduped, _ = train(tmp_path / "a", data=[data])
    kept, _ = train(tmp_path / "b", "--no-dedup", data=[data])
    assert deduped["skipped_duplicate"] == 40 and kept["skipped_duplicate"] == 0
    assert kept["train_pairs"] + kept["valid_pairs"] == 80


def test_cache_dir_and_a_resume_that_reads_no_corpus(tmp_path):
    cache = tmp_path / "cache"
    first, _ = train(tmp_path / "r", "--cache-dir", str(cache))
    assert first["cached"] is False and len(list(cache.iterdir())) == 1
    assert not (tmp_path / "r" / "cache").exists()
    result = runner.invoke(app, ["train", "--out", str(tmp_path / "r"), "--resume", "--max-steps", "2"])
    assert result.exit_code == 0, result.stderr
    resumed = [json.loads(x) for x in (tmp_path / "r" / "metrics.jsonl").read_text().splitlines()]
    assert [r["cached"] for r in resumed if r["event"] == "start"] == [False, True]
    assert "were not read again" in result.stderr


def test_noise_options_add_copies(tmp_path):
    plain, _ = train(tmp_path / "p")
    noisy, _ = train(tmp_path / "n", "--noise-case", "0.5", "--noise-accents", "0.5")
    assert plain["cleaning"]["augmented"] == 0 and noisy["cleaning"]["augmented"] > 20
    assert noisy["train_pairs"] > plain["train_pairs"] + 20


def test_valid_max_caps_each_corpus_validation_set(tmp_path):
    full, _ = train(tmp_path / "f", "--valid-per-mille", "500")
    capped, _ = train(tmp_path / "c", "--valid-per-mille", "500", "--valid-max", "3")
    assert full["valid_pairs"] > 3 and capped["valid_pairs"] == 3
    assert capped["train_pairs"] == full["train_pairs"]  # the rest of the held-out share stays out of training


def test_spm_sample_is_what_the_tokenizer_learns_from(tmp_path):
    train(tmp_path / "a")
    train(tmp_path / "b", "--spm-sample", "20")
    assert (tmp_path / "a" / "spm.model").read_bytes() != (tmp_path / "b" / "spm.model").read_bytes()


def test_max_cpu_time_is_a_budget(tmp_path):
    start, result = train(tmp_path / "t", budget=("--max-cpu-time", "1s"))
    ends = [json.loads(x) for x in (tmp_path / "t" / "metrics.jsonl").read_text().splitlines()]
    end = [r for r in ends if r["event"] == "end"][0]
    assert end["status"] == "max_time" and 0 < end["step"]
    bad = runner.invoke(app, ["train", "--data", str(TINY_TSV), "--out", str(tmp_path / "x"), "--max-cpu-time", "soon"])
    assert bad.exit_code == 1 and "--max-cpu-time 'soon'" in bad.stderr


def test_byte_fallback_keeps_a_character_the_vocabulary_never_saw(tmp_path):
    """--byte-fallback: the trained vocabulary writes ☃ (in no training sentence) as its three UTF-8 bytes and
    decodes it back; without it ☃ is <unk>. With a vocabulary of its own (--spm-model, --init-from) it is refused."""
    from core.data.tokenizer import UNK_ID, Tokenizer

    def vocabulary(name: str, *extra: str) -> Tokenizer:
        args = [*extra, "--vocab-size", "400"]  # after train()'s 120: the 256 byte pieces need room
        train(tmp_path / name, *args)
        return Tokenizer.load(tmp_path / name / "spm.model")

    snow = "Il neige ☃."
    with_bytes, without = vocabulary("bytes", "--byte-fallback"), vocabulary("plain")
    assert UNK_ID not in with_bytes.encode(snow) and with_bytes.decode(with_bytes.encode(snow)) == snow
    assert "<0xE2>" in with_bytes.pieces(with_bytes.encode("☃"))
    assert UNK_ID in without.encode(snow)
    refused = runner.invoke(
        app,
        [
            "train",
            "--out",
            str(tmp_path / "r"),
            "--data",
            str(TINY_TSV),
            "--byte-fallback",
            "--spm-model",
            str(tmp_path / "plain" / "spm.model"),
        ],
    )
    assert refused.exit_code == 2
    assert (
        refused.stderr
        == "tt: error: --byte-fallback shapes the vocabulary tt train trains; --spm-model brings its own\n"
    )
