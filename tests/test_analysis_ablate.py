"""Head ablation on the tiny real model: the batched evaluation against one-mask-at-a-time passes."""

from __future__ import annotations

import json

import pytest
import torch
from typer.testing import CliRunner

from core.analysis.ablate import (
    Head,
    ablate_heads,
    all_heads,
    head_mask,
    prune_curve,
    reference_logprob,
)
from core.analysis.reference import compare_pairs
from tt_cli.main import app

PAIRS = [("Je suis étudiant.", "I am a student."), ("Le chat dort.", "The cat is sleeping."),
         ("Il fait froid.", "It is cold."), ("La voiture est rouge.", "The car is red.")]


def _one_pass(loaded, mask) -> float:
    """Mean log p(reference) under `mask`, one sentence at a time, no batching, no repetition."""
    model, tok, cfg = loaded.model, loaded.tokenizer, loaded.cfg
    total = 0.0
    with torch.inference_mode():
        for src, ref in PAIRS:
            s = torch.tensor([tok.encode(src) + [cfg.eos_id]])
            r = tok.encode(ref) + [cfg.eos_id]
            logits = model.decode(torch.tensor([[cfg.bos_id] + r[:-1]]), model.encode(s, head_mask=mask),
                                  head_mask=mask).logits[0]
            total += float(logits.log_softmax(-1)[torch.arange(len(r)), r].sum())
    return total / len(PAIRS)


def test_intact_value_is_the_reference_logprob(tiny_loaded):
    [value] = reference_logprob(tiny_loaded, PAIRS, [head_mask(tiny_loaded.cfg, [])])
    expected = sum(c.ref_logprob for c in compare_pairs(tiny_loaded, PAIRS)) / len(PAIRS)
    assert value == pytest.approx(expected, abs=1e-4)


def test_batched_ablations_equal_single_passes(tiny_loaded):
    cfg = tiny_loaded.cfg
    heads = [Head("encoder_self", 0, 1), Head("decoder_self", 1, 0), Head("cross", 0, 2), Head("cross", 1, 3)]
    masks = [head_mask(cfg, [])] + [head_mask(cfg, [h]) for h in heads] + [head_mask(cfg, heads)]
    # A tiny row budget forces several decoder passes and several encoder groups per batch.
    batched = reference_logprob(tiny_loaded, PAIRS, masks, max_tokens=30, max_rows_tokens=40)
    single = [_one_pass(tiny_loaded, m) for m in masks]
    assert batched == pytest.approx(single, abs=1e-4)
    assert len({round(v, 4) for v in batched}) == len(masks)  # every head changes something


def test_ablate_all_heads_and_prune_curve(tiny_loaded):
    cfg = tiny_loaded.cfg
    ablation = ablate_heads(tiny_loaded, PAIRS)
    assert [e.head for e in ablation.effects] == all_heads(cfg)
    assert len(ablation.effects) == (cfg.n_encoder_layers + 2 * cfg.n_decoder_layers) * cfg.h
    for e in ablation.effects:
        assert e.delta == pytest.approx(e.value - ablation.intact)
    curve = prune_curve(tiny_loaded, PAIRS, ablation=ablation)
    assert [p.removed for p in curve] == list(range(len(ablation.effects) + 1))
    least = max(ablation.effects, key=lambda e: e.delta)
    assert curve[1].head == least.head and curve[1].value == pytest.approx(least.value, abs=1e-4)
    assert curve[-1].value < ablation.intact - 1.0  # no head left: the references become improbable


def test_bleu_metric_of_the_intact_model_is_its_greedy_bleu(tiny_loaded):
    from core.decode.translate import TranslateOptions, translate_lines
    from core.evaluate import corpus_scores

    ablation = ablate_heads(tiny_loaded, PAIRS, metric="bleu", heads=[Head("cross", 1, 0)])
    hyps = [t.text for t in translate_lines(tiny_loaded, [p[0] for p in PAIRS], TranslateOptions(greedy=True))]
    assert ablation.intact == corpus_scores(hyps, [[p[1] for p in PAIRS]]).bleu


def test_cli_heads_json_table_and_prune(tiny_model_dir, tmp_path):
    src, ref = tmp_path / "s.fr", tmp_path / "r.en"
    src.write_text("".join(p[0] + "\n" for p in PAIRS), encoding="utf-8")
    ref.write_text("".join(p[1] + "\n" for p in PAIRS), encoding="utf-8")
    args = ["analyze", "heads", "--model", str(tiny_model_dir), "--src", str(src), "--ref", str(ref)]
    result = CliRunner().invoke(app, [*args, "--json", "--prune"])
    assert result.exit_code == 0, result.stderr
    obj = json.loads(result.stdout)
    assert obj["metric"] == "logprob" and obj["sentences"] == 4
    assert {"family", "layer", "head", "delta", "sink_share", "parks_on"} <= set(obj["heads"][0])
    assert len(obj["prune"]) == len(obj["heads"]) + 1
    table = CliRunner().invoke(app, args)
    assert table.exit_code == 0, table.stderr
    assert "most needed:" in table.stdout and "cross L0" in table.stdout


def test_restarting_from_a_changed_layer_equals_full_passes_on_top_of_a_base(tiny_loaded):
    # masks[0] is the base the others restart from: here it already has a head off, and the others
    # differ from it at every depth (encoder, decoder layer 0 and 1, none at all).
    cfg = tiny_loaded.cfg
    base = [Head("cross", 1, 1)]
    extra = [[], [Head("encoder_self", 1, 2)], [Head("decoder_self", 0, 3)], [Head("cross", 1, 0)]]
    masks = [head_mask(cfg, base)] + [head_mask(cfg, [*base, *e]) for e in extra] + [head_mask(cfg, [])]
    restarted = reference_logprob(tiny_loaded, PAIRS, masks, max_tokens=30, max_rows_tokens=40)
    assert restarted == pytest.approx([_one_pass(tiny_loaded, m) for m in masks], abs=1e-4)
