"""Logit lens on the tiny real model: the last layer's lens is the model's own prediction."""

from __future__ import annotations

import json

import pytest
import torch
from typer.testing import CliRunner

from core.analysis.lens import layer_agreement, layer_logits, logit_lens
from core.decode.translate import TranslateOptions, translate_lines
from tt_cli.main import app

# Rests on the floats of a model trained or decoded here: .ci/run runs it again under a second CPU ISA.
pytestmark = pytest.mark.isa

PAIRS = [("Je suis étudiant.", "I am a student."), ("Le chat dort.", "The cat is sleeping.")]


def test_last_layer_is_the_model_and_greedy_output_ranks_first(tiny_loaded):
    cfg = tiny_loaded.cfg
    t = next(translate_lines(tiny_loaded, ["Je suis étudiant."], TranslateOptions(method="greedy")))
    out = t.token_ids + [cfg.eos_id]
    steps = logit_lens(tiny_loaded, t.source_tokens, out, top_k=3)
    assert [s.token for s in steps] == out and len(steps[0].layers) == cfg.n_decoder_layers
    for s, lp in zip(steps, t.token_logprobs):
        last = s.layers[-1]
        assert last.rank == 1 and last.top[0].token == s.token  # greedy picked the last layer's top piece
        assert last.prob == pytest.approx(float(torch.tensor(lp).exp()), abs=1e-4)
        assert all(la.rank >= 1 and 0.0 <= la.prob <= 1.0 for la in s.layers)


def test_layer_logits_stack_matches_decode(tiny_loaded):
    model, cfg, tok = tiny_loaded.model, tiny_loaded.cfg, tiny_loaded.tokenizer
    src = torch.tensor([tok.encode("Le chat dort.") + [cfg.eos_id]])
    tgt_in = torch.tensor([[cfg.bos_id] + tok.encode("The cat")])
    with torch.inference_mode():
        lens = layer_logits(model, src, tgt_in)  # (L, 1, T, vocab)
        logits = model.decode(tgt_in, model.encode(src)).logits
    assert lens.shape[0] == cfg.n_decoder_layers
    assert torch.allclose(lens[-1], logits, atol=1e-5)
    assert not torch.allclose(lens[0], logits, atol=1e-2)


def test_agreement_over_pairs(tiny_loaded):
    found = layer_agreement(tiny_loaded, PAIRS, max_tokens=20)
    cfg, tok = tiny_loaded.cfg, tiny_loaded.tokenizer
    assert found.steps == sum(len(tok.encode(r)) + 1 for _, r in PAIRS)
    assert found.final[-1] == 1.0
    # The same shares counted one sentence at a time from the per-step lens: layer l's top piece
    # against the last layer's at the same step, and against the piece the decoder read there.
    final, copied = [0] * cfg.n_decoder_layers, [0] * cfg.n_decoder_layers
    for src, ref in PAIRS:
        out = tok.encode(ref) + [cfg.eos_id]
        for step, read in zip(logit_lens(tiny_loaded, tok.encode(src), out, top_k=1), [cfg.bos_id, *out[:-1]]):
            for layer in step.layers:
                final[layer.layer] += layer.top[0].token == step.layers[-1].top[0].token
                copied[layer.layer] += layer.top[0].token == read
    assert found.final == pytest.approx([n / found.steps for n in final])
    assert found.input == pytest.approx([n / found.steps for n in copied])
    assert found.final[0] < 1.0  # layer 0 disagrees somewhere, so comparing it with itself would show


def test_cli_lens_sentence_file_and_usage(tiny_model_dir, tiny_loaded, tmp_path):
    runner = CliRunner()
    result = runner.invoke(
        app, ["analyze", "lens", "--model", str(tiny_model_dir), "--json", "--top-k", "2", "Je suis étudiant."]
    )
    assert result.exit_code == 0, result.stderr
    obj = json.loads(result.stdout)
    assert obj["translation"] == "I am a student."
    assert obj["steps"][-1]["piece"] == "</s>" and len(obj["steps"][0]["layers"][0]["top"]) == 2
    src, ref = tmp_path / "s.fr", tmp_path / "r.en"
    src.write_text("".join(p[0] + "\n" for p in PAIRS), encoding="utf-8")
    ref.write_text("".join(p[1] + "\n" for p in PAIRS), encoding="utf-8")
    table = runner.invoke(
        app, ["analyze", "lens", "--model", str(tiny_model_dir), "--src", str(src), "--ref", str(ref)]
    )
    assert table.exit_code == 0, table.stderr
    assert "decoder layer 1:" in table.stdout
    as_json = runner.invoke(
        app, ["analyze", "lens", "--model", str(tiny_model_dir), "--src", str(src), "--ref", str(ref), "--json"]
    )
    found = layer_agreement(tiny_loaded, PAIRS)
    obj = json.loads(as_json.stdout)
    assert obj["steps"] == found.steps and obj["sentences"] == len(PAIRS)
    assert obj["final"] == pytest.approx(found.final, abs=1e-4) and obj["input"] == pytest.approx(found.input, abs=1e-4)
    first = f"decoder layer 1: top piece = the final top piece at {100 * found.final[0]:.1f}% of {found.steps} steps"
    assert table.stdout.startswith(first)
    neither = runner.invoke(app, ["analyze", "lens"])
    assert neither.exit_code == 2 and "give a sentence" in neither.stderr
