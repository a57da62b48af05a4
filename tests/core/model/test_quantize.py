"""`--quantize int8|bf16`: faster copies of the shipped model whose translations stay within the BLEU bound.

The bound here: greedy BLEU within 1.0 of fp32 on the held-out Tatoeba test split (a broken quantizer costs far
more); whether int8 is close enough to be the default (0.3, beam 4, every set) is the cards' Precision section and
docs/precision.md. The data-free tests check the shipped model on fixed sample sentences and through the real CLI.
"""

from __future__ import annotations

import json
import os

import pytest
import torch
from typer.testing import CliRunner

from core.checkpoint import load_model
from core.decode.translate import TranslateOptions, translate_lines
from core.model.fast import fast_model
from tests.conftest import ROOT
from tt_cli.main import app

SHIPPED = ROOT / "weights"
SAMPLES = [
    "Je suis étudiant.",
    "Il pleut depuis ce matin.",
    "Où se trouve la bibliothèque ?",
    "Mon frère travaille dans un hôpital.",
    "Nous avons mangé du pain avec du fromage.",
    "Est-ce que tu peux fermer la fenêtre ?",
    "Les enfants jouent dans le jardin.",
    "Je ne sais pas nager.",
]
pytestmark = pytest.mark.skipif(not (SHIPPED / "model.safetensors").exists(), reason="no shipped weights")


@pytest.fixture(scope="module")
def shipped():
    return load_model(SHIPPED)


def translate(loaded, lines, mode=None, **options):
    if mode is not None:
        from dataclasses import replace

        loaded = replace(loaded, model=fast_model(loaded.model, mode))
    return [t.text for t in translate_lines(loaded, lines, TranslateOptions(batch_size=64, **options))]


@pytest.mark.parametrize("mode", ["int8", "bf16"])
def test_quantized_copies_leave_the_model_alone_and_translate_the_samples_alike(shipped, mode):
    before = {k: v.clone() for k, v in shipped.model.state_dict().items()}
    fast = fast_model(shipped.model, mode)
    assert fast is not shipped.model
    for k, v in shipped.model.state_dict().items():
        assert torch.equal(v, before[k]), k
    reference = translate(shipped, SAMPLES, method="greedy")
    quantized = translate(shipped, SAMPLES, mode, method="greedy")
    assert sum(a == b for a, b in zip(reference, quantized)) >= len(SAMPLES) - 1, list(zip(reference, quantized))


def test_int8_off_the_cpu_is_refused_before_anything_is_copied():
    """The one check the CLI and the API share (fast_model): a model on another device (here "meta", which
    every machine has) gets the flag's one-line error, bf16 does not."""
    from core.errors import ConfigError
    from core.model.config import preset
    from core.model.transformer import Transformer

    model = Transformer(preset("tiny", vocab_size=40)).to("meta")
    with pytest.raises(
        ConfigError, match=r"^--precision int8 runs on the CPU only \(use --device cpu, or --precision bf16\)$"
    ):
        fast_model(model, "int8")
    assert next(fast_model(model, "bf16").parameters()).dtype == torch.bfloat16


def test_an_unknown_mode_is_refused(shipped):
    with pytest.raises(ValueError, match="int8, bf16"):
        fast_model(shipped.model, "int4")


@pytest.mark.parametrize("mode", ["int8", "bf16"])
def test_the_cli_option(shipped, mode):
    def cli(*options):
        result = CliRunner().invoke(app, ["translate", "--raw", *options, "--greedy", "--json", "Je suis étudiant."])
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    quantized, plain = cli("--quantize", mode), cli("--precision", "fp32")
    assert quantized["translation"] in {"I am a student.", "I'm a student."}  # greedy: either is the model's
    # The log-probabilities are the quantized model's, which differ from fp32's in the 4th place:
    # an ignored --quantize (or one mode wired to the other) fails here.
    from dataclasses import replace

    fast = replace(shipped, model=fast_model(shipped.model, mode))
    options = TranslateOptions(method="greedy")
    expected = next(translate_lines(fast, ["Je suis étudiant."], options)).to_dict()["token_logprobs"]
    assert quantized["token_logprobs"] == pytest.approx(expected, abs=2e-4)
    assert quantized["token_logprobs"] != pytest.approx(plain["token_logprobs"], abs=2e-4)


@pytest.mark.slow
@pytest.mark.data
@pytest.mark.parametrize("mode", ["int8", "bf16"])
def test_bleu_on_the_held_out_split_stays_close_to_fp32(shipped, mode):
    """Greedy Tatoeba test: a faster mode moves BLEU by at most 1.0 (a broken quantizer costs far more). The shipped
    fr->en model's int8 scores 0.57 below its fp32 here with a range per activation row (1.09 with one range per
    call, which this bound then had to allow 1.5 for); the cards hold the beam figures per set (docs/precision.md)."""
    import sacrebleu

    from core.data.readers import heldout_range, read_corpus
    from tests.conftest import SHARED_DATA

    card = json.loads((SHIPPED / "card.json").read_text())["test_sets"]["tatoeba-test"]
    pairs = heldout_range(read_corpus(SHARED_DATA / card["file"]), *card["buckets"])
    sources, refs = [p.src for p in pairs], [[p.tgt for p in pairs]]
    fp32 = sacrebleu.corpus_bleu(translate(shipped, sources, method="greedy"), refs).score
    fast = sacrebleu.corpus_bleu(translate(shipped, sources, mode, method="greedy"), refs).score
    assert abs(fast - fp32) <= 1.0, (mode, fp32, fast)


@torch.inference_mode()
def test_int8_quantizes_each_row_of_a_call_with_its_own_range(monkeypatch):
    """An int8 layer's rows do not share one activation range: a quiet row beside a loud one (a short
    sentence beside one with large activations, in a batch or a server's shared batch) keeps about the error it
    has alone. With one range per call the quiet row's error would grow with the loud row's scale (here ~500×).
    (Every product on fbgemm here: three rows of this small weight would otherwise be multiplied in fp32.)"""
    from core.model import fast
    from core.model.fast import Int8Linear

    monkeypatch.setattr(fast, "SMALL_IN_FP32", False)
    torch.manual_seed(0)
    linear = torch.nn.Linear(256, 512).eval()
    layer = fast_model(torch.nn.Sequential(linear), "int8")[0]
    assert type(layer) is Int8Linear
    rows = [torch.randn(1, 256) * 0.1, torch.randn(1, 256) * 50, torch.randn(1, 256).relu() * 3]
    together = layer(torch.cat(rows))
    for i, x in enumerate(rows):
        error_alone = (layer(x) - linear(x)).abs().max()
        error_together = (together[i : i + 1] - linear(x)).abs().max()
        assert 0 < error_together <= 2 * error_alone, (i, error_together, error_alone)
    # 3-D input (batch, positions, features), as the modules receive it, row by row too
    torch.testing.assert_close(layer(torch.stack([torch.cat(rows)])), together.unsqueeze(0))


@pytest.mark.parametrize("small", [False, True], ids=["fbgemm", "small in fp32"])
@torch.inference_mode()
def test_few_rows_of_a_small_int8_weight_are_multiplied_in_fp32_on_its_int8_values(monkeypatch, small):
    """core/model/fast.py `SMALL_ROWS`: up to 8 rows through a weight of fewer than 2^19 entries give exactly the
    fp32 product of the int8 weight's own values (int8 × its row's scale; the activations unrounded); a ninth row,
    or a large weight, goes to fbgemm's int8 product, whose activations are rounded to 8 bits (not that product).
    With SMALL_IN_FP32 off every call is fbgemm's; the stacked products of the fused step decide as the layers do."""
    from core.model import fast
    from core.model.fast import Int8Linear, Int8Product, int8_rows

    monkeypatch.setattr(fast, "SMALL_IN_FP32", small)
    torch.manual_seed(0)
    small_linear, large_linear = torch.nn.Linear(256, 512).eval(), torch.nn.Linear(256, 2048).eval()
    layers = fast_model(torch.nn.Sequential(small_linear, large_linear), "int8")
    small_layer, large_layer = layers[0], layers[1]
    assert type(small_layer) is Int8Linear and type(large_layer) is Int8Linear
    assert not large_layer.small  # 256 × 2048 = 2^19 entries: fbgemm's at any row count
    assert small_layer.small == small
    for layer in (small_layer, large_layer):
        exact_weight = layer.weight().dequantize()  # (out, in): the int8 values times their row's scale
        for rows in (1, 8, 9):
            x = torch.randn(rows, 256)
            got = layer(x)
            in_fp32 = torch.nn.functional.linear(x, exact_weight, layer.bias())
            by_fbgemm = int8_rows(x, *layer.packed)
            if small and layer is small_layer and rows <= fast.SMALL_ROWS:
                torch.testing.assert_close(got, in_fp32, rtol=1e-5, atol=1e-5)
                assert not torch.allclose(got, by_fbgemm, rtol=1e-5, atol=1e-5)
            else:
                assert torch.equal(got, by_fbgemm), (layer.out_features, rows)
    # The stacked product (W^Q scaled, then W^KV, as the fused step builds it) gives its layers' own outputs.
    w_q, w_kv = fast_model(torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.Linear(256, 512)), "int8")
    stacked = Int8Product([(w_q, 0.125), (w_kv, 1.0)])
    assert (stacked.small is not None) == small and (stacked.weight_t is not None) == small
    for rows in (1, 4, 9):
        x = torch.randn(rows, 256)
        torch.testing.assert_close(stacked(x), torch.cat([w_q(x) * 0.125, w_kv(x)], 1), rtol=1e-5, atol=1e-5)
    # A stack decides as its layers do: six small layers (as six decoder layers' cross W^K W^V, 6 × 512 × 256 entries,
    # past 2^19 together) take the small path; one large layer in a stack keeps it on fbgemm, as that layer is.
    six = fast_model(torch.nn.Sequential(*[torch.nn.Linear(256, 512) for _ in range(6)]), "int8")
    assert (Int8Product([(layer, 1.0) for layer in six]).small is not None) == small
    assert Int8Product([(w_q, 1.0), (large_layer, 1.0)]).small is None


@torch.inference_mode()
def test_many_rows_of_an_int8_weight_multiply_its_values_in_bf16(monkeypatch):
    """core/model/fast.py `MANY_ROWS`: from 32 rows a product goes to oneDNN's bf16 product on the int8 weights times
    their rows' scales (each within a quarter of its int8 step in bf16), the bias added in the product — so each row
    comes out within bf16's rounding of its activations of the exact product of the int8 weights, several times closer
    than fbgemm's 7-bit activations, and a row's numbers do not depend on the rows beside it. 31 rows stay on fbgemm;
    the stacked products of the fused step decide as their layers do. Where oneDNN has no bf16 products (AVX2 only,
    ONEDNN_MAX_CPU_ISA) the path is never taken by default, which is what is checked there."""
    from core.model import fast
    from core.model.fast import Int8Linear, Int8Product, int8_rows

    if not fast.onednn_bf16():
        monkeypatch.setattr(fast, "MANY_ROWS_BF16", None)
        assert not fast.many_rows_bf16()
        assert not fast_model(torch.nn.Sequential(torch.nn.Linear(256, 512)), "int8")[0].many
        return
    monkeypatch.setattr(fast, "SMALL_IN_FP32", False)
    monkeypatch.setattr(fast, "MANY_ROWS_BF16", True)
    torch.manual_seed(0)
    layer = fast_model(torch.nn.Sequential(torch.nn.Linear(256, 512).eval()), "int8")[0]
    assert type(layer) is Int8Linear and layer.many
    exact = layer.weight().dequantize()  # (out, in): the int8 values times their rows' scales
    x = torch.randn(fast.MANY_ROWS, 256)
    x[0] *= 100  # a loud row beside quiet ones
    got, in_fp32 = layer(x), torch.nn.functional.linear(x, exact, layer.bias())
    by_fbgemm = int8_rows(x, *layer.packed)
    error = (got - in_fp32).abs().amax(1)  # (rows,)
    fbgemm_error = (by_fbgemm - in_fp32).abs().amax(1)
    assert (error > 0).all() and (error <= 0.01 * in_fp32.abs().amax(1)).all()
    assert error.mean() < fbgemm_error.mean() / 3, (error.mean(), fbgemm_error.mean())
    torch.testing.assert_close(
        layer(x[1:].repeat(2, 1))[: fast.MANY_ROWS - 1], got[1:], rtol=0, atol=0
    )  # no shared range
    fewer = x[: fast.MANY_ROWS - 1]
    assert torch.equal(layer(fewer), int8_rows(fewer, *layer.packed))  # 31 rows: fbgemm's
    w_q, w_kv = fast_model(torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.Linear(256, 512)), "int8")
    stacked = Int8Product([(w_q, 0.125), (w_kv, 1.0)])
    assert stacked.many is not None
    y = torch.randn(40, 256)
    torch.testing.assert_close(stacked(y), torch.cat([w_q(y) * 0.125, w_kv(y)], 1), rtol=1e-5, atol=1e-5)
    monkeypatch.setattr(fast, "MANY_ROWS_BF16", False)
    assert Int8Product([(w_q, 1.0)]).many is None
    assert not fast_model(torch.nn.Sequential(torch.nn.Linear(256, 512)), "int8")[0].many


def test_many_rows_in_bf16_follow_the_cpu_unless_set(monkeypatch):
    """By default (MANY_ROWS_BF16 None) many rows go to bf16 where the CPU has AMX's bf16 tiles, where it was
    measured faster than fbgemm, and oneDNN may use them; elsewhere (AVX-512 BF16 without AMX, AVX2) fbgemm's until
    measured. ONEDNN_MAX_CPU_ISA=AVX2 withholds oneDNN's bf16 products on an AMX CPU: the path stays off there
    (a process of its own, since oneDNN reads the variable once), where it would fail on the first batch."""
    import subprocess
    import sys

    from core.model import fast

    monkeypatch.setattr(fast, "MANY_ROWS_BF16", None)
    amx = bool(torch.cpu.get_capabilities().get("amx_bf16"))
    assert fast.many_rows_bf16() == (amx and fast.packing_available() and fast.onednn_bf16())
    for forced in (False, True):
        monkeypatch.setattr(fast, "MANY_ROWS_BF16", forced)
        assert fast.many_rows_bf16() is forced
    check = "import torch; from core.model import fast; print(torch.ops.mkldnn._is_mkldnn_bf16_supported(), fast.many_rows_bf16())"
    withheld = subprocess.run(
        [sys.executable, "-c", check],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={**os.environ, "ONEDNN_MAX_CPU_ISA": "AVX2"},
    )
    assert withheld.stdout.split() == ["False", "False"]


def test_few_rows_in_fp32_follow_the_cpu_unless_set(monkeypatch):
    """By default (SMALL_IN_FP32 None) the small path is taken on Intel CPUs only, where it was measured."""
    from core.device import cpu_vendor
    from core.model import fast

    monkeypatch.setattr(fast, "SMALL_IN_FP32", None)
    assert fast.small_in_fp32() == (cpu_vendor() == "GenuineIntel")
    for forced in (False, True):
        monkeypatch.setattr(fast, "SMALL_IN_FP32", forced)
        assert fast.small_in_fp32() is forced


@pytest.mark.filterwarnings("ignore::UserWarning")  # torch.ao announcing its move to torchao
@torch.inference_mode()
def test_int8_weights_are_torch_aos_own(shipped):
    """fast_model quantizes each Linear layer's weight itself (core/model/fast.py int8_weight), not through torch.ao's
    quantize_dynamic (~0.4 s of module conversion and fbgemm packing on every cold int8 command): the same int8
    values and scales as quantize_dynamic with per_channel_dynamic_qconfig, on every layer of the shipped model and
    on rows with a zero row, a one-signed row and a tiny row (the observer widens min and max to hold 0, and keeps
    the scale at least fp32's eps)."""
    from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

    from core.model.fast import Int8Linear, int8_weight

    linear = torch.nn.Linear(64, 6)
    with torch.no_grad():
        linear.weight[0] = 0.0
        linear.weight[1] = linear.weight[1].abs()
        linear.weight[2] = -linear.weight[2].abs()
        linear.weight[3] *= 1e-9
    layers = [linear] + [m for m in shipped.model.modules() if type(m) is torch.nn.Linear]
    for layer in layers:
        ref = quantize_dynamic(torch.nn.Sequential(layer), {torch.nn.Linear: per_channel_dynamic_qconfig})[0].weight()
        got = int8_weight(layer.weight.detach())
        assert torch.equal(got.int_repr(), ref.int_repr())
        assert torch.equal(got.q_per_channel_scales(), ref.q_per_channel_scales())
        assert torch.equal(got.q_per_channel_zero_points(), ref.q_per_channel_zero_points())
    int8 = fast_model(shipped.model, "int8")
    assert sum(isinstance(m, Int8Linear) for m in int8.modules()) == len(layers) - 1
    assert not any(type(m) is torch.nn.Linear for m in int8.modules())
    assert all(m._packed is None for m in int8.modules() if isinstance(m, Int8Linear))  # fbgemm's: on first use
