"""`tt train --placeholders`: training pairs with <ph0>…, the vocabulary and model grown for them, the card."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import torch
from typer.testing import CliRunner

from core.checkpoint import load_model, placeholder_tokens
from core.data.placeholders import PLACEHOLDER_TOKENS
from core.train.config import TrainConfig
from core.train.prepare import prepare_data
from core.train.state import average_checkpoints, list_checkpoints, read_trainer_info
from core.train.trainer import Trainer
from tests.conftest import TINY_TSV, tiny_train_config
from tests.core.test_limits import ship_weights
from tt_cli.main import app

# Rests on the floats of a model trained or decoded here: .ci/run runs it again under a second CPU ISA.
pytestmark = pytest.mark.isa

SITES = ("exemple.fr", "tt.org", "site.com", "chat.fr", "ville.fr", "mer.org")


@pytest.fixture
def corpus(tmp_path):
    """The tests' tiny corpus with pairs that hold URLs, e-mail addresses and times on both sides."""
    lines = TINY_TSV.read_text(encoding="utf-8").splitlines()
    for i, site in enumerate(SITES):
        lines += [
            f"Voir https://{site} ce soir.\tSee https://{site} tonight.",
            f"Écris à lea@{site} demain.\tWrite to lea@{site} tomorrow.",
            f"Le train part à 1{i} h 35.\tThe train leaves at 1{i}:35.",
            f"Je suis sur https://{site}.\tI am on https://{site}.",
        ]
    path = tmp_path / "spans.tsv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def run_config(out) -> TrainConfig:
    return TrainConfig(**read_trainer_info(list_checkpoints(out)[-1])["train_config"])


def ids_of(examples, ids) -> int:
    return sum(i in ids for e in examples for i in (*e.src, *e.tgt))


def translated(model, sentence: str) -> dict:
    result = CliRunner().invoke(app, ["translate", "--model", str(model), "--json", sentence])
    assert result.exit_code == 0, result.stderr
    [record] = json.loads(result.stdout)["sentences"]
    return record


def test_tt_train_placeholders_trains_the_model_to_copy_them_and_translate_uses_them(tmp_path, corpus):
    out = tmp_path / "run"
    args = ["train", "--data", str(corpus), "--out", str(out), "--preset", "tiny", "--vocab-size", "120"]
    args += ["--max-tokens", "512", "--max-len", "64", "--warmup", "50", "--max-steps", "300", "--quiet"]
    args += ["--valid-every", "0", "--save-every", "0", "--bleu-sample", "0", "--placeholders", "1"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.stderr
    assert placeholder_tokens(out) == PLACEHOLDER_TOKENS  # the run's model says so in its weights (no card yet)
    prepared = prepare_data(run_config(out), out, reuse_tokenizer=True)
    ids = {prepared.tokenizer.piece_id(t) for t in PLACEHOLDER_TOKENS}
    assert all(len(prepared.tokenizer.encode_pieces(t)) <= 2 for t in PLACEHOLDER_TOKENS)  # "▁" and the piece
    # The training examples hold them (every URL, e-mail and time pair), the validation examples never.
    assert ids_of(prepared.train, ids) >= 2 * 3 * len(SITES) * 0.8
    assert prepared.stats["cleaning"]["placeholders"] > 0
    assert any("https://" in p.src for p in prepared.valid_pairs)  # held-out pairs with spans, left as they are
    assert ids_of(prepared.valid, ids) == 0 and not any("<ph" in p.src + p.tgt for p in prepared.valid_pairs)
    # tt translate sends the model <ph0> for the URL and puts the URL back in its place.
    record = translated(out, "Voir https://abc.fr ce soir.")
    assert record["model_input"] == "Voir <ph0> ce soir."
    assert "<ph0>" in record["model_output"] and "https://abc.fr" in record["translation"]
    assert "<ph" not in record["translation"] and record["lost"] == []


def test_without_placeholders_nothing_changes_and_the_model_lists_none(tmp_path, corpus):
    Trainer(tiny_train_config(tmp_path / "plain", data=[str(corpus)], max_steps=2)).run()
    prepared = prepare_data(run_config(tmp_path / "plain"), tmp_path / "plain", reuse_tokenizer=True)
    assert placeholder_tokens(tmp_path / "plain") == ()
    assert prepared.tokenizer.piece_id("<ph0>") == prepared.tokenizer.sp.unk_id()
    assert prepared.stats["cleaning"]["placeholders"] == 0
    assert translated(tmp_path / "plain", "Voir https://abc.fr ce soir.")["model_input"] != "Voir <ph0> ce soir."


def test_the_share_is_part_of_the_cache_key(tmp_path, corpus):
    cache = tmp_path / "cache"
    first = tiny_train_config(tmp_path / "a", data=[str(corpus)], max_steps=1, placeholders=0.5, cache_dir=str(cache))
    Trainer(first).run()
    spm = str(tmp_path / "a" / "spm.model")
    for name, share in (("b", 0.5), ("c", 1.0)):
        cfg = tiny_train_config(
            tmp_path / name, data=[str(corpus)], max_steps=1, placeholders=share, cache_dir=str(cache), spm_model=spm
        )
        Trainer(cfg).run()
    starts = {
        name: [json.loads(x) for x in (tmp_path / name / "metrics.jsonl").read_text().splitlines()][0] for name in "abc"
    }
    assert [starts[n]["cached"] for n in "abc"] == [False, True, False]  # a new share: a new shard
    assert len(list(cache.iterdir())) == 2


def test_init_from_a_model_without_them_grows_its_vocabulary_and_embeddings(tmp_path, corpus):
    Trainer(tiny_train_config(tmp_path / "base", data=[str(corpus)], max_steps=40, warmup=20)).run()
    base = load_model(tmp_path / "base")
    assert placeholder_tokens(tmp_path / "base") == ()
    tuned_cfg = tiny_train_config(
        tmp_path / "tuned",
        data=[str(corpus)],
        init_from=str(tmp_path / "base"),
        placeholders=0.5,
        max_steps=1,
        warmup=1,
        lr_scale=1e-9,
        save_every=1,
    )
    Trainer(tuned_cfg).run()
    tuned = load_model(tmp_path / "tuned")
    n = base.cfg.vocab_size
    assert tuned.cfg.vocab_size == n + len(PLACEHOLDER_TOKENS)
    assert [tuned.tokenizer.piece_id(t) for t in PLACEHOLDER_TOKENS] == list(range(n, n + 10))
    assert all(tuned.tokenizer.sp.id_to_piece(i) == base.tokenizer.sp.id_to_piece(i) for i in range(n))
    # The old rows are the base model's (one step at a negligible learning rate), the tied matrix stays tied.
    old, new = base.model.state_dict(), tuned.model.state_dict()
    assert torch.allclose(new["src_embed.table.weight"][:n], old["src_embed.table.weight"], atol=1e-6)
    assert tuned.model.generator.weight is tuned.model.src_embed.table.weight
    assert placeholder_tokens(tmp_path / "tuned") == PLACEHOLDER_TOKENS
    assert translated(tmp_path / "tuned", "Voir https://abc.fr ce soir.")["translation"]  # it loads and translates
    # A resumed run takes the grown model from its checkpoint.
    assert Trainer(replace(tuned_cfg, max_steps=2), resume=True).run()["step"] == 2
    assert load_model(list_checkpoints(tmp_path / "tuned")[-1]).cfg.vocab_size == n + 10
    # Averaging and shipping keep what the model learned: the weights' metadata, then the card's key.
    averaged = average_checkpoints(list_checkpoints(tmp_path / "tuned"), tmp_path / "averaged")
    assert placeholder_tokens(averaged) == PLACEHOLDER_TOKENS
    shipped, tokens = ship_weights().save_shipped(averaged, tmp_path / "shipped", "average of last 2")
    assert tokens == PLACEHOLDER_TOKENS and placeholder_tokens(tmp_path / "shipped") == PLACEHOLDER_TOKENS
    assert shipped.cfg.vocab_size == n + 10
