"""Packed fp32 Linear layers (core/model/fast.py): the same function as the model, on oneDNN."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from core.analysis.attribute import attribute
from core.checkpoint import LoadedModel
from core.decode.beam import beam_search
from core.decode.search import greedy, pad_batch
from core.model import fast
from core.model.config import preset
from core.model.fast import PackedLinear, packed_model, packing_available
from core.model.transformer import Transformer

pytestmark = pytest.mark.skipif(not packing_available(), reason="this torch has no oneDNN")


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return Transformer(preset("tiny", vocab_size=40, d_model=64, d_ff=128)).eval()


def test_packed_linear_computes_the_linear_layer_for_any_row_count():
    torch.manual_seed(1)
    linear = nn.Linear(64, 96)
    packed = PackedLinear(linear)
    rows = fast.PACK_MIN_MACS // (64 * 96)  # the first row count that goes through oneDNN
    for shape in [(1, 64), (rows - 1, 64), (rows, 64), (3, 7, 64), (2 * rows + 3, 64)]:
        x = torch.randn(*shape)
        assert torch.allclose(packed(x), linear(x), atol=1e-5), shape
    x = torch.randn(rows, 2, 64, requires_grad=True)
    (packed(x) * torch.arange(96.0)).sum().backward()  # through oneDNN and its backward
    want = torch.autograd.grad((linear(x) * torch.arange(96.0)).sum(), x)[0]
    assert torch.allclose(x.grad, want, atol=1e-4)
    assert not packed.weight.requires_grad


@pytest.fixture
def always_packed(monkeypatch):
    """Every product through oneDNN: the tiny test model's products are all below the speed threshold."""
    monkeypatch.setattr(fast, "PACK_MIN_MACS", 1)


def used_onednn(model) -> bool:
    return all(m._packed is not None for m in model.modules() if type(m) is PackedLinear)


def test_packed_model_is_a_copy_with_every_linear_packed(model, always_packed):
    before = {k: v.clone() for k, v in model.state_dict().items()}
    packed = packed_model(model)
    assert packed is not model
    assert not any(type(m) is nn.Linear for m in packed.modules())
    assert sum(type(m) is PackedLinear for m in packed.modules()) == sum(type(m) is nn.Linear for m in model.modules())
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())
    src = torch.randint(4, 40, (16, 11))
    tgt = torch.randint(4, 40, (16, 9))
    with torch.no_grad():
        assert torch.allclose(packed(src, tgt), model(src, tgt), atol=1e-4)
    assert used_onednn(packed)


def test_packed_decoding_and_attribution_match_fp32(model, always_packed):
    torch.manual_seed(2)
    src = pad_batch([torch.randint(4, 40, (n,)).tolist() + [model.cfg.eos_id] for n in range(3, 19)], model.cfg.pad_id)
    packed = packed_model(model)
    assert [h.tokens for h in greedy(packed, src, max_output=12)] == [
        h.tokens for h in greedy(model, src, max_output=12)
    ]
    a = beam_search(model, src, beam_size=3, max_output=12)
    b = beam_search(packed, src, beam_size=3, max_output=12)
    assert [h[0].tokens for h in a] == [h[0].tokens for h in b]
    # Attribution differentiates through the packed layers (input gradients only).
    loaded = LoadedModel(model, None, None, {})
    ids, out = src[5].tolist()[:9], greedy(model, src[5:6], max_output=6)[0].tokens + [model.cfg.eos_id]
    plain = attribute(loaded, ids, out, method="ig", ig_steps=8)
    fast_ = attribute(LoadedModel(packed, None, None, {}), ids, out, method="ig", ig_steps=8)
    assert torch.allclose(plain.source, fast_.source, atol=1e-4) and torch.allclose(
        plain.target, fast_.target, atol=1e-4
    )
    assert used_onednn(packed) and all(m._packed_t is not None for m in packed.modules() if type(m) is PackedLinear)


@pytest.mark.parametrize("out_features, in_features", [(512, 256), (256, 256), (256, 1024), (8000, 256)])
def test_a_one_row_product_is_read_on_every_thread_and_gives_the_same_row(out_features, in_features):
    """Product.one_row: at 2 threads a single row goes through the weight cut into 2 blocks of outputs (one bmm),
    the same outputs as addmm to float rounding, read as dot products over W's rows (a view, no copy) when the
    inputs outnumber the outputs, else on Wᵀ's columns; 1 thread, several rows, or outputs that do not split
    keep one addmm, the one row in the same layout."""
    from core.model.fast import Product

    torch.manual_seed(0)
    weight, bias, x = torch.randn(out_features, in_features), torch.randn(out_features), torch.randn(1, in_features)
    product = Product(weight, bias, packed=False)
    expected = torch.addmm(bias, x, weight.t())
    dot_form = in_features > out_features
    assert (product.one_row_t.data_ptr() == weight.data_ptr()) == dot_form  # W itself, or Wᵀ's copy
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        assert torch.allclose(product(x), expected, atol=1e-4) and set(product._blocks) == {2}
        blocks = product._blocks[2][0]  # (2, in, out/2)
        assert blocks.shape == (2, in_features, out_features // 2)
        assert (blocks.data_ptr() == weight.data_ptr()) == dot_form and blocks.is_contiguous() != dot_form
        assert torch.allclose(product(torch.cat([x, x])), torch.cat([expected, expected]), atol=1e-4)
        odd = Product(torch.randn(257, in_features), None, packed=False)
        assert torch.allclose(odd(x), x @ odd.weight_t, atol=1e-4)
        assert not odd._blocks  # 257 outputs do not split in 2: addmm
        torch.set_num_threads(1)
        fresh = Product(weight, bias, packed=False)
        assert torch.allclose(fresh(x), expected, atol=1e-4) and not fresh._blocks
    finally:
        torch.set_num_threads(before)


@pytest.mark.skipif(not packing_available(), reason="oneDNN not built into this torch")
def test_a_packed_product_of_two_rows_or_more_goes_to_onednn_whatever_its_size():
    """Product on a packed model: one row stays on addmm's layouts (nothing packed), two rows or more go to oneDNN
    even far below PACK_MIN_MACS (a short sentence's encoder), the same outputs as addmm to float rounding."""
    from core.model.fast import Product

    torch.manual_seed(3)
    weight, bias = torch.randn(96, 64), torch.randn(96)
    assert 2 * 64 * 96 < fast.PACK_MIN_MACS
    product = Product(weight, bias, packed=True)
    x = torch.randn(1, 64)
    assert torch.allclose(product(x), torch.addmm(bias, x, weight.t()), atol=1e-4)
    assert product.packed._packed is None
    for rows in (2, 3, 7):
        x = torch.randn(rows, 64)
        assert torch.allclose(product(x), torch.addmm(bias, x, weight.t()), atol=1e-4), rows
    assert product.packed._packed is not None


@pytest.mark.parametrize("vendor,packs", [("AuthenticAMD", True), ("GenuineIntel", False), ("", True)])
def test_load_model_packs_where_it_pays(monkeypatch, vendor, packs):
    """`load_model(packed=True)` packs for oneDNN except on an Intel CPU, whose MKL products are the faster
    ones (`packing_pays`); the vendor is /proc/cpuinfo's, set here to each case."""
    import core.device
    from core.checkpoint import load_model
    from tests.conftest import ROOT

    monkeypatch.setattr(core.device, "cpu_vendor", lambda: vendor)
    assert fast.packing_pays() is packs
    loaded = load_model(ROOT / "weights", packed=True)
    assert any(type(m) is PackedLinear for m in loaded.model.modules()) is packs
    assert not any(type(m) is PackedLinear for m in load_model(ROOT / "weights").model.modules())


def test_cpu_vendor_names_this_machines_vendor():
    import os
    import platform

    import core.device

    vendor = core.device.cpu_vendor()
    if platform.machine() in ("x86_64", "AMD64") and os.path.exists("/proc/cpuinfo"):
        assert vendor in ("GenuineIntel", "AuthenticAMD", "HygonGenuine", "CentaurHauls"), vendor
    elif not os.path.exists("/proc/cpuinfo"):
        assert vendor == ""


def test_describe_cpu_names_the_family_and_model_that_tell_cpus_of_one_name_apart():
    """Cards and learning curves record describe_cpu(): a Zen 3 and a Zen 4 EPYC are both "AMD EPYC", so the line
    carries /proc/cpuinfo's family and model where it has them."""
    import os
    import re

    import core.device

    line = core.device.describe_cpu()
    family, model = core.device._cpuinfo("cpu family"), core.device._cpuinfo("model")
    if family and model:
        assert f"(family {family} model {model})" in line, line
        assert re.fullmatch(r"\d+", family) and re.fullmatch(r"\d+", model), (family, model)
    assert f"{os.cpu_count()} cores" in line
