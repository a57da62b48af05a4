"""Gradient attribution on the tiny real model: IG completeness, input×gradient by hand, causality."""

from __future__ import annotations

import json

import pytest
import torch
from typer.testing import CliRunner

from core.analysis.attribute import attribute
from core.errors import ConfigError
from tt_cli.main import app

# Rests on the floats of a model trained or decoded here: .ci/run runs it again under a second CPU ISA.
pytestmark = pytest.mark.isa


@pytest.fixture(scope="module")
def ids(tiny_loaded):
    tok, eos = tiny_loaded.tokenizer, tiny_loaded.cfg.eos_id
    return tok.encode("Le chat dort.") + [eos], tok.encode("The cat is sleeping.") + [eos]


def test_integrated_gradients_are_complete_within_5_percent(tiny_loaded, ids):
    a = attribute(tiny_loaded, *ids, method="ig", ig_steps=32)
    t, s = len(ids[1]), len(ids[0])
    assert a.source.shape == (t, s) and a.target.shape == (t, t) and a.delta.shape == (t,)
    assert float(a.completeness_error().max()) < 0.05


def test_ig_delta_is_the_log_probability_gap_to_the_baseline(tiny_loaded, ids):
    """The probe reads every step's f_t off one row per α: its ends must be f_t(x) and f_t(0)."""
    model, cfg = tiny_loaded.model, tiny_loaded.cfg
    src_ids, out_ids = ids
    src, tgt_in = torch.tensor([src_ids]), torch.tensor([[cfg.bos_id] + out_ids[:-1]])
    with torch.no_grad():
        xs, xt = model.src_embed(src), model.tgt_embed(tgt_in)
        f = [
            model.decode(tgt_in, model.encode(src, src_embeds=k * xs), tgt_embeds=k * xt)
            .logits[0]
            .log_softmax(-1)[torch.arange(len(out_ids)), out_ids]
            for k in (1.0, 0.0)
        ]
    a = attribute(tiny_loaded, src_ids, out_ids, method="ig", ig_steps=4)
    assert torch.allclose(a.delta, f[0] - f[1], atol=1e-5)


def test_bf16_gradient_passes_stay_complete_and_close_to_fp32(tiny_loaded, ids):
    full = attribute(tiny_loaded, *ids, method="ig", ig_steps=32)
    half = attribute(tiny_loaded, *ids, method="ig", ig_steps=32, precision="bf16")
    assert torch.equal(half.delta, full.delta)  # the probe stays fp32
    # bf16 keeps 8 significant bits, and how often a kernel rounds to them is the CPU's choice: the
    # largest error stays under 0.05 with AVX2 kernels and is 0.061 with ATen's default ones; the bound
    # leaves room for other kernels, and the fp32 closeness below still holds the bf16 pass to account.
    assert float(half.completeness_error().max()) < 0.1
    gap = float((half.source - full.source).abs().max())
    assert 0 < gap < 0.1 * float(full.source.abs().max())  # bf16 did run, and stays near fp32


def test_target_attribution_respects_the_look_ahead_mask(tiny_loaded, ids):
    for method in ("ixg", "ig"):
        a = attribute(tiny_loaded, *ids, method=method, ig_steps=8)
        assert torch.equal(a.target.triu(1), torch.zeros_like(a.target))  # step t never sees inputs after t
        assert bool((a.target.diagonal() != 0).all())


def test_input_times_gradient_of_one_step_by_hand(tiny_loaded, ids):
    """Step 2 alone, one row, with autograd on the embeddings: the batched rows must agree."""
    model, cfg = tiny_loaded.model, tiny_loaded.cfg
    src_ids, out_ids = ids
    src = torch.tensor([src_ids])
    tgt_in = torch.tensor([[cfg.bos_id] + out_ids[:-1]])
    xs = model.src_embed(src).detach().requires_grad_(True)
    xt = model.tgt_embed(tgt_in).detach().requires_grad_(True)
    logits = model.decode(tgt_in, model.encode(src, src_embeds=xs), tgt_embeds=xt).logits
    logits[0, 2].log_softmax(-1)[out_ids[2]].backward()
    a = attribute(tiny_loaded, src_ids, out_ids, method="ixg")
    assert torch.allclose(a.source[2], (xs.grad * xs).sum(-1)[0].detach(), atol=1e-5)
    assert torch.allclose(a.target[2], (xt.grad * xt).sum(-1)[0].detach(), atol=1e-5)
    assert a.delta is None


def test_bad_method_or_steps(tiny_loaded, ids):
    with pytest.raises(ConfigError, match="unknown attribution method"):
        attribute(tiny_loaded, *ids, method="saliency")
    with pytest.raises(ConfigError, match="ig-steps"):
        attribute(tiny_loaded, *ids, method="ig", ig_steps=0)


def test_cli_translate_json_attribution(tiny_model_dir):
    result = CliRunner().invoke(
        app,
        [
            "translate",
            "--model",
            str(tiny_model_dir),
            "--greedy",
            "--json",
            "--attribution",
            "ig",
            "--ig-steps",
            "16",
            "Le chat dort.",
        ],
    )
    assert result.exit_code == 0, result.stderr
    att = json.loads(result.stdout)["attribution"]
    assert att["method"] == "ig" and att["ig_steps"] == 16
    assert len(att["source"]) == len(att["output_pieces"]) == len(att["delta"])
    assert [len(row) for row in att["target"]] == list(range(1, len(att["output_pieces"]) + 1))
    assert len(att["source"][0]) == len(att["source_pieces"])


def test_cli_analyze_attribute(tiny_model_dir):
    runner = CliRunner()
    result = runner.invoke(
        app,
        [
            "analyze",
            "attribute",
            "--model",
            str(tiny_model_dir),
            "--method",
            "ixg",
            "--json",
            "Le chat dort.",
            "Je suis étudiant.",
        ],
    )
    assert result.exit_code == 0, result.stderr
    obj = json.loads(result.stdout)
    assert len(obj["sentences"]) == 2 and obj["steps"] == sum(len(s["agrees"]) for s in obj["sentences"])
    assert 0.0 <= obj["agreement"] <= 1.0
    table = runner.invoke(
        app, ["analyze", "attribute", "--model", str(tiny_model_dir), "--ig-steps", "8", "Le chat dort."]
    )
    assert table.exit_code == 0 and "completeness error" in table.stdout
