"""scripts/int8_ablation.py (docs/precision.md, session 25): the int8 variants it scores are the models they say —
the right layers back in fp32, weights rounded per row, the 8-bit activation path taken — on the shipped model."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest
import torch
from torch import nn

from core.checkpoint import load_model
from core.model import fast
from tests.conftest import ROOT

SCRIPT = ROOT / "scripts" / "int8_ablation.py"
pytestmark = pytest.mark.skipif(not (ROOT / "weights" / "model.safetensors").exists(), reason="no shipped weights")


@pytest.fixture(scope="module")
def ablation():
    spec = importlib.util.spec_from_file_location("int8_ablation", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def shipped():
    return load_model(ROOT / "weights", device="cpu", packed=False).model


def kinds(model: nn.Module) -> dict[str, str]:
    return {name: type(m).__name__ for name, m in model.named_modules() if type(m) in (nn.Linear, fast.Int8Linear)}


@pytest.mark.parametrize(
    ("variant", "back"),
    [
        ("int8", lambda n: False),
        ("gen", lambda n: n == "generator"),
        ("w2", lambda n: n.endswith(".ffn.w_2")),
        ("dec", lambda n: n.startswith("decoder_layers.")),
        ("attn", lambda n: ".self_attn." in n or ".cross_attn." in n),
    ],
)
def test_each_group_puts_back_exactly_its_layers(ablation, shipped, variant, back):
    model, in_fp32 = ablation.variant_model(shipped, variant)
    layers = kinds(model)
    assert len(layers) == sum(type(m) is nn.Linear for m in shipped.modules())
    assert {n for n, k in layers.items() if k == "Linear"} == {n for n in layers if back(n)}
    assert in_fp32 == sum(map(back, layers))
    for name, kind in layers.items():  # the fp32 ones are the model's own weights
        if kind == "Linear":
            assert torch.equal(model.get_submodule(name).weight, shipped.get_submodule(name).weight)


def test_weights_only_rounds_each_row_to_255_levels_and_leaves_the_model_alone(ablation, shipped):
    before = shipped.generator.weight.clone()
    rounded, _ = ablation.variant_model(shipped, "weights-only")
    assert torch.equal(shipped.generator.weight, before)
    w, r = shipped.encoder_layers[0].ffn.w_1.weight, rounded.encoder_layers[0].ffn.w_1.weight
    step = w.abs().amax(1, keepdim=True) / 127
    assert not torch.equal(w, r) and bool(((w - r).abs() <= step / 2 + 1e-7).all())
    assert all(len(torch.unique(row)) <= 255 for row in r[:8])
    int8 = fast.fast_model(shipped, "int8").encoder_layers[0].ffn.w_1.weight().dequantize()
    assert torch.equal(r, int8)  # the very weights --precision int8 runs on


@pytest.mark.filterwarnings("ignore:torch.quantize_per_tensor")  # torch.ao announcing its move to torchao
def test_the_8bit_variant_runs_fbgemm_over_the_full_range(monkeypatch):
    """Against the product on the int8 weights themselves (their rounding is common to both), 8-bit activations
    round about half as far as the reduced 7-bit range. The weights span ±60, not ±127, so that no pair of 8-bit
    products can saturate fbgemm's 16-bit sums on a CPU without AVX-512 VNNI (2 · 255 · 60 < 32,767). Every product
    on fbgemm (three rows of this small weight would otherwise be multiplied in fp32, core/model/fast.py SMALL_ROWS)."""
    monkeypatch.setattr(fast, "SMALL_IN_FP32", False)
    torch.manual_seed(0)
    layer = nn.Linear(64, 32)
    scale = layer.weight.detach().abs().amax(1) / 60
    weight = torch.quantize_per_channel(
        layer.weight.detach(), scale.double(), torch.zeros(32, dtype=torch.long), 0, torch.qint8
    )
    int8 = fast.Int8Linear(weight, layer.bias.detach())
    x = torch.randn(3, 64) * 3
    exact = x @ weight.dequantize().T + layer.bias.detach()
    seven = int8(x)
    monkeypatch.setattr(fast, "REDUCE_RANGE", False)  # what the script sets for its 8bit variant
    eight = int8(x)
    assert (eight - exact).abs().mean() < 0.7 * (seven - exact).abs().mean()


def test_the_script_scores_each_variant_it_is_given(tmp_path):
    src, ref = tmp_path / "s.fr", tmp_path / "s.en"
    src.write_text("Je suis étudiant.\nIl fait froid ce matin.\n", encoding="utf-8")
    ref.write_text("I am a student.\nIt is cold this morning.\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "weights", str(src), str(ref), "fp32", "gen"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(r["variant"], r["fp32_layers"]) for r in rows] == [("fp32", 40), ("gen", 1)]
    assert rows[0]["bleu"] > 50
    bad = subprocess.run(
        [sys.executable, str(SCRIPT), "weights", str(src), str(ref), "int4"], capture_output=True, text=True
    )
    assert bad.returncode == 2 and "invalid choice: 'int4'" in bad.stderr
