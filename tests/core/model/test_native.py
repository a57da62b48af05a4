"""The one-row decoder step in C (core/model/native) computes FusedStep's function: the same logits up to rounding,
the same caches, every shape (tails of the products' blocks, pre- and post-norm, int8), at one thread and two; it
steps aside where it cannot run (TT_NATIVE=0, no compiler, a cache that outgrew its buffer) and decoding goes on."""

from __future__ import annotations

import threading

import pytest
import torch

from core.checkpoint import load_model
from core.decode.beam import beam_search
from core.decode.search import greedy
from core.model import fast, native
from core.model.config import preset
from core.model.fast import fast_model
from core.model.step import fused_step
from core.model.transformer import Transformer
from tests.ci_gate import IN_CI


@pytest.fixture(autouse=True)
def compiled():
    """Every test here needs the library: under CI=true a missing compiler is a failure, not a skip."""
    if native.library() is None:
        if IN_CI:
            pytest.fail(f"the C step did not build: {native.why_not()}")
        pytest.skip(f"no C step here: {native.why_not()}")


def odd_model(norm: str, seed: int = 0) -> Transformer:
    """Shapes that fill no block of outputs exactly: d_k = 12 (3 heads), d_ff and the vocabulary not multiples of 8
    (d_ff not even of 4: W_2's inputs padded for the int8 products that take four at a time)."""
    torch.manual_seed(seed)
    cfg = preset("tiny", vocab_size=203, d_model=36, h=3, d_ff=90, n_decoder_layers=3, norm=norm)
    return Transformer(cfg).eval()


def step_logits(model: Transformer, src: torch.Tensor, tokens: list[int], native_on: bool, capacity: int = 16):
    """The fused step's logits for `tokens` fed one by one after the source, with the C step on or off; and the
    state after."""
    step = fused_step(model)
    enc = step.encode(src)
    state = step.start_state(enc, capacity=capacity)
    out = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TT_NATIVE", "1" if native_on else "0")
        for t in tokens:
            out.append(step(torch.tensor([[t]]), enc, state))
    return torch.cat(out), state


@pytest.mark.parametrize("norm", ["post", "pre"])
@torch.inference_mode()
def test_c_step_equals_the_torch_step(norm):
    model = odd_model(norm)
    src = torch.tensor([[5, 9, 12, 7, 40, 3]])
    tokens = [2, 17, 33, 150, 8, 202, 64]
    ref, ref_state = step_logits(model, src, tokens, native_on=False)
    got, got_state = step_logits(model, src, tokens, native_on=True)
    assert got_state.native is not None and ref_state.native is None  # each went its own way
    torch.testing.assert_close(got, ref, rtol=1e-4, atol=1e-4)
    for a, b in zip(ref_state.self_attn, got_state.self_attn, strict=True):  # the caches it wrote
        assert a.length == b.length == len(tokens)
        torch.testing.assert_close(b.k, a.k, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(b.v, a.v, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("small", [False, True], ids=["rows quantized", "int8 values in fp32"])
@torch.inference_mode()
def test_int8_c_step_computes_the_torch_steps_int8_products(monkeypatch, small):
    """An int8 model's C step computes what its torch step computes for one row: the row quantized to 7 bits over its
    own range as fbgemm does it (its int32 sums exact), or, where the torch step multiplies few rows in fp32 (core/
    model/fast.py SMALL_ROWS), the int8 weights' own values times the unrounded row."""
    monkeypatch.setattr(fast, "SMALL_IN_FP32", small)
    monkeypatch.setattr(fast, "SMALL_WEIGHT", 1 << 30)  # every product of the model, the generator too
    model = fast_model(odd_model("post"), "int8")
    src = torch.tensor([[5, 9, 12, 7, 40, 3]])
    tokens = [2, 17, 33, 150, 8]
    ref, _ = step_logits(model, src, tokens, native_on=False)
    got, state = step_logits(model, src, tokens, native_on=True)
    assert state.native is not None
    torch.testing.assert_close(got, ref, rtol=1e-4, atol=1e-4)


@torch.inference_mode()
def test_int8_rows_quantized_as_fbgemm_or_the_c_step_declines(monkeypatch):
    """fbgemm's 8-bit rows (core/model/fast.py REDUCE_RANGE off, scripts/int8_ablation.py) are not what the C step
    computes: it steps aside, and the torch step runs."""
    monkeypatch.setattr(fast, "SMALL_IN_FP32", False)
    monkeypatch.setattr(fast, "REDUCE_RANGE", False)
    _, state = step_logits(fast_model(odd_model("post"), "int8"), torch.tensor([[5, 3]]), [2, 17], native_on=True)
    assert state.native is None


@pytest.mark.parametrize("rows", [1, 2, 5, 8])
@torch.inference_mode()
def test_products_equal_torchs(rows, monkeypatch):
    """Each kind of product alone, on 1 to 8 rows, for a weight of 90 inputs (not a multiple of 4) and 203 outputs
    (a block and a tail): fp32 as addmm, int8 times fp32 rows as the int8 values dequantized, int8 on quantized rows
    as core/model/fast.py's int8_rows (fbgemm) — its int32 sums exact, so within rounding of fp32's last bits."""
    torch.manual_seed(rows)
    linear = torch.nn.Linear(90, 203)
    x = torch.randn(rows, 90) * torch.rand(rows, 1) * 4
    w_t = linear.weight.detach().t().contiguous()
    torch.testing.assert_close(native.product(("fp32", w_t, linear.bias), x), torch.addmm(linear.bias, x, w_t))
    monkeypatch.setattr(fast, "SMALL_IN_FP32", False)
    int8 = fast.Int8Product([(fast.Int8Linear(*_quantized(linear)), 1.0)])
    int_repr, scales, bias = int8.int8
    dequantized = int_repr.float() * scales[:, None]
    got = native.product(("int8", int_repr, scales, bias), x)
    torch.testing.assert_close(got, torch.addmm(bias, x, dequantized.t()), rtol=1e-5, atol=1e-5)
    got = native.product(("int8-rows", int_repr, scales, bias), x)
    torch.testing.assert_close(got, fast.int8_rows(x, *int8.packed), rtol=1e-5, atol=1e-5)


def test_fp32_weights_are_laid_tile_by_tile_for_the_c_step():
    """step.c reads an fp32 Wᵀ tile by tile (each tile's (in × TILE) weights in one run of memory, then the rest):
    the layout `Weights` hands it, element by element, and the flag that tells step.c so."""
    lib = native.library()
    tile = lib.tt_tile()
    w_t = torch.arange(3 * (2 * tile + 5), dtype=torch.float32).view(3, 2 * tile + 5)
    laid = native._tile_by_tile(w_t, tile)
    assert laid[tile * 1 + 7] == w_t[1, 7]  # tile 0, input 1, output 7
    assert laid[3 * tile + 2 * tile + 4] == w_t[2, tile + 4]  # tile 1 starts after tile 0's 3 × TILE
    assert laid[6 * tile + 1 * 5 + 3] == w_t[1, 2 * tile + 3]  # the rest: (in, 5)
    assert laid.numel() == w_t.numel()
    weights = native.Weights({}, ("fp32", w_t, None), [], None, (w_t, w_t))
    assert weights.generator.blocked == 1 and weights.generator.out == 2 * tile + 5


def _int8_linear(n_in: int, n_out: int, seed: int = 0) -> tuple[fast.Int8Linear, torch.nn.Linear]:
    torch.manual_seed(seed)
    linear = torch.nn.Linear(n_in, n_out)
    return fast.Int8Linear(*_quantized(linear), small=False), linear


@pytest.mark.parametrize("rows", [9, 17, 64, 130])
@pytest.mark.parametrize("shape", [(90, 203), (2048, 256), (36, 40)], ids=lambda s: f"{s[0]}x{s[1]}")
@torch.inference_mode()
def test_a_batchs_int8_rows_in_c_are_fbgemms(rows, shape):
    """A batch's int8 products through step.c (native.Rows: blocks of rows, weights in panels of outputs, a last
    panel narrower, inputs not a multiple of 4) compute fbgemm's numbers as core/model/fast.py's int8_rows asks for
    them (each row divided by its largest |value|, one range over all): within fp32's last bits."""
    layer, _ = _int8_linear(*shape, seed=rows)
    x = torch.randn(rows, shape[0]) * torch.rand(rows, 1) * 4
    c = fast.c_rows(layer.weight().int_repr(), fast.int8_scales(layer.weight())[0].float(), layer.bias())
    torch.testing.assert_close(c(x), fast.int8_rows(x, *layer.packed), rtol=1e-5, atol=1e-5)


@torch.inference_mode()
def test_rows_over_their_own_ranges_are_each_rows_own_product():
    """`own`: each row quantized over its own range — what fbgemm computes for that row alone."""
    layer, _ = _int8_linear(90, 203)
    x = torch.randn(21, 90) * torch.rand(21, 1) * 4
    c = fast.c_rows(layer.weight().int_repr(), fast.int8_scales(layer.weight())[0].float(), layer.bias())
    alone = torch.cat([fast.int8_rows(row[None], *layer.packed) for row in x])
    torch.testing.assert_close(c(x, own=True), alone, rtol=1e-5, atol=1e-5)
    assert (c(x, own=True) - c(x)).abs().max() > 1e-3  # the two quantizations differ


@torch.inference_mode()
def test_int8_layers_take_the_c_product_unless_tt_native_is_0(monkeypatch):
    """An int8 layer's batch rows go through step.c's product where the library is built and the CPU was measured to
    gain (native.Rows.takes); TT_NATIVE=0 keeps them on fbgemm — the same numbers either way."""
    monkeypatch.setattr(fast, "SMALL_IN_FP32", False)
    x = torch.randn(64, 90)
    layer, _ = _int8_linear(90, 203)
    on = layer(x)
    assert isinstance(layer._c, native.Rows) and layer._c.takes(8)
    calls = []
    monkeypatch.setattr(native.Rows, "__call__", lambda self, x, own=False: calls.append(x.size(0)) or x)
    layer(x[:5])
    assert calls == [5]  # a few rows: C on every CPU
    monkeypatch.setenv("TT_NATIVE", "0")
    layer(x[:5])  # the same layer, now on fbgemm
    off, _ = _int8_linear(90, 203)
    torch.testing.assert_close(on, off(x), rtol=1e-5, atol=1e-5)
    assert off._c is None and calls == [5]


@torch.inference_mode()
def test_shipped_int8_model_batch_translates_the_same_either_way(monkeypatch):
    """The shipped model in int8, a batch of sentences (encoder rows, the steps' rows, rows dropped as sentences
    finish), greedy and beam 4: the same translations with step.c's products and with fbgemm's."""
    loaded = load_model(None)
    tok, cfg = loaded.tokenizer, loaded.cfg
    texts = ["Je suis étudiant.", "Le gouvernement a annoncé hier une réforme du système de santé.", "Où est la gare ?"]
    texts += ["Il pleut depuis trois jours et les routes sont fermées.", "Merci beaucoup !"] * 3
    from core.decode.search import pad_batch

    src = pad_batch([tok.encode(t) + [cfg.eos_id] for t in texts], cfg.pad_id)
    runs = []
    for flag in ("0", "1"):
        monkeypatch.setenv("TT_NATIVE", flag)
        model = fast_model(loaded.model, "int8")
        runs.append(
            ([h.tokens for h in greedy(model, src)], [b[0].tokens for b in beam_search(model, src, beam_size=4)])
        )
    assert runs[0] == runs[1]


def _quantized(linear: torch.nn.Linear) -> tuple:
    """A Linear layer's weight as qint8 with a scale per output row, zero points 0 (what fast_model makes), and bias."""
    scales = linear.weight.detach().abs().amax(1) / 127
    weight = torch.quantize_per_channel(
        linear.weight.detach(), scales.double(), torch.zeros(linear.out_features, dtype=torch.long), 0, torch.qint8
    )
    return weight, linear.bias.detach()


@pytest.mark.parametrize("threads", [1, 2])
@torch.inference_mode()
def test_shipped_model_greedy_is_the_same_either_way(threads, monkeypatch):
    """The shipped model (d_model 256, 8,010 pieces: the generator's last block a tail), split between threads or
    not: the same pieces, log-probabilities within 1e-4."""
    loaded = load_model(None)
    tok = loaded.tokenizer
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        for text in ("Je suis étudiant.", "Le gouvernement a annoncé hier une réforme du système de santé."):
            src = torch.tensor([tok.encode(text) + [loaded.cfg.eos_id]])
            monkeypatch.setenv("TT_NATIVE", "0")
            ref = greedy(loaded.model, src)[0]
            monkeypatch.setenv("TT_NATIVE", "1")
            got = greedy(loaded.model, src)[0]
            assert got.tokens == ref.tokens
            assert max(abs(a - b) for a, b in zip(got.token_logprobs, ref.token_logprobs, strict=True)) < 1e-4
    finally:
        torch.set_num_threads(before)


def beams_both_ways(model: Transformer, src: torch.Tensor, monkeypatch, beam: int = 4) -> tuple[list, list, int]:
    """Every finished hypothesis of a beam search with the C step off and on, and how many steps the C step took
    with a sentence's beams (rows in their slots)."""
    calls = []
    call = native.Bound.__call__
    monkeypatch.setattr(
        native.Bound, "__call__", lambda self, t, o, lg, beams=None: calls.append(beams) or call(self, t, o, lg, beams)
    )
    monkeypatch.setenv("TT_NATIVE", "0")
    ref = beam_search(model, src, beam_size=beam, n_best=None)[0]
    monkeypatch.setenv("TT_NATIVE", "1")
    got = beam_search(model, src, beam_size=beam, n_best=None)[0]
    return ref, got, sum(b is not None for b in calls)


@pytest.mark.parametrize("norm", ["post", "pre"])
@pytest.mark.parametrize("beam", [4, 3])
@torch.inference_mode()
def test_a_sentences_beams_in_c_find_what_torchs_find(norm, beam, monkeypatch):
    """Beam search's steps of one sentence (its beams in their cache slots, each reading its own prefix through the
    ancestry rows, the first step's spare slots zeroed): the same hypotheses, scores within 1e-4."""
    ref, got, beam_steps = beams_both_ways(odd_model(norm), torch.tensor([[5, 9, 12, 7, 40, 3]]), monkeypatch, beam)
    assert beam_steps > 3
    assert [h.tokens for h in got] == [h.tokens for h in ref]
    assert max(abs(a.score - b.score) for a, b in zip(got, ref, strict=True)) < 1e-4


@pytest.mark.parametrize("small", [False, True], ids=["rows quantized", "int8 values in fp32"])
@torch.inference_mode()
def test_int8_beams_in_c_quantize_as_torchs_rows(small, monkeypatch):
    """Several rows of an int8 product as core/model/fast.py's int8_rows gives them to fbgemm (each row divided by
    its largest value, then one range), or multiplied in fp32 where the torch step does that: the shipped model's
    beams find the same translation. (A quantized value that lands by a rounding on the other side of a half can
    still move a score by a few hundredths: the two steps' fp32 roundings are not the same.)"""
    monkeypatch.setattr(fast, "SMALL_IN_FP32", small)
    loaded = load_model(None)
    model = fast_model(loaded.model, "int8")
    src = torch.tensor([loaded.tokenizer.encode("Où est la gare la plus proche ?") + [loaded.cfg.eos_id]])
    ref, got, beam_steps = beams_both_ways(model, src, monkeypatch)
    assert beam_steps > 3
    assert got[0].tokens == ref[0].tokens and abs(got[0].score - ref[0].score) < 0.05


@torch.inference_mode()
def test_a_cache_that_outgrows_its_buffer_is_grown_and_bound_again():
    """Past the buffer's capacity the C step declines (nothing written), torch's step grows the cache, and the next
    step binds the new buffer: the logits all along equal torch's."""
    model = odd_model("post")
    src = torch.tensor([[5, 9, 12, 3]])
    tokens = [2, 17, 33, 150, 8, 9]
    ref, _ = step_logits(model, src, tokens, native_on=False, capacity=16)
    got, state = step_logits(model, src, tokens, native_on=True, capacity=2)
    torch.testing.assert_close(got, ref, rtol=1e-4, atol=1e-4)
    assert state.self_attn[0].capacity > 2 and state.native[1].capacity == state.self_attn[0].capacity


@torch.inference_mode()
def test_two_threads_decode_two_sentences_at_once():
    """Each sentence's binding has its own scratch memory: two threads sharing one model each get their own answer."""
    model = odd_model("post")
    sources = [torch.tensor([[5, 9, 12, 7, 40, 3]]), torch.tensor([[8, 100, 3]])]
    expected = [greedy(model, s, max_output=30)[0].tokens for s in sources]
    results: dict[int, list] = {}

    def run(i: int) -> None:
        results[i] = [greedy(model, sources[i], max_output=30)[0].tokens for _ in range(20)]

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(2):
        assert results[i] == [expected[i]] * 20


@torch.inference_mode()
def test_tt_native_0_sends_steps_through_torch(monkeypatch):
    monkeypatch.setenv("TT_NATIVE", "0")
    assert native.library() is None and native.why_not() == "TT_NATIVE=0"
    _, state = step_logits(odd_model("post"), torch.tensor([[5, 3]]), [2, 17], native_on=False)
    assert state.native is None


def test_no_compiler_means_no_library_and_says_why(monkeypatch, tmp_path):
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    monkeypatch.setenv("TT_CACHE", str(tmp_path / "cache"))
    assert native.library() is None
    assert "no-such-cc" in native.why_not()


def test_compiled_once_into_the_cache_directory(monkeypatch, tmp_path):
    """TT_CACHE names where the library goes; a second process (here: a second ask, the memo cleared) loads it."""
    monkeypatch.setenv("TT_CACHE", str(tmp_path))
    native._library.cache_clear()
    try:
        assert native.library() is not None
        built = list((tmp_path / "native").glob("step-*.so"))
        assert len(built) == 1 and not list((tmp_path / "native").glob(".step-*"))  # no temporary left behind
        stamp = built[0].stat().st_mtime_ns
        native._library.cache_clear()
        assert native.library() is not None and built[0].stat().st_mtime_ns == stamp  # loaded, not compiled again
    finally:
        native._library.cache_clear()


def test_aten_cpu_capability_keeps_the_library_within_it(monkeypatch, tmp_path):
    """ATEN_CPU_CAPABILITY=avx2 (torch's AVX2 kernels on an AVX-512 machine) builds the C step without AVX-512 too:
    another library, which computes the same step."""
    monkeypatch.setenv("TT_CACHE", str(tmp_path))
    native._library.cache_clear()
    try:
        monkeypatch.setenv("ATEN_CPU_CAPABILITY", "avx2")
        assert "-mno-avx512f" in native._isa_flags()
        assert native.library() is not None
        monkeypatch.delenv("ATEN_CPU_CAPABILITY")
        assert native._isa_flags() == [] and native.library() is not None
        assert len(list((tmp_path / "native").glob("step-*.so"))) == 2
    finally:
        native._library.cache_clear()


@pytest.mark.parametrize("threads", [1, 2])
@torch.inference_mode()
def test_greedys_choice_is_torch_max(threads):
    """native.best: torch.max(x, -1)'s index and value — the first of tied largest values, rows that are -inf but
    one, a row with NaN (torch's answer: the first NaN), widths with a tail past the vectors, rows further apart than
    their width (a slice of a wider table), at one thread and two (rows split)."""
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        torch.manual_seed(3)
        for width in (1, 7, 16, 203, 8010):
            x = torch.randn(70, width + 5)[:, :width]  # rows width + 5 apart
            x[1] = 2.0  # every value tied
            x[2] = float("-inf")
            x[2, width // 2] = -1.0
            x[3, width - 1] = float("nan")
            if width > 3:
                x[4, 1] = x[4, 3] = 50.0  # a tie, the first wins
            index, value = native.best(x)
            ref_value, ref_index = x.max(-1)
            assert torch.equal(index, ref_index)
            torch.testing.assert_close(value, ref_value, equal_nan=True)
        assert native.best(x.t()) is None  # columns: not rows step.c reads
    finally:
        torch.set_num_threads(before)


@torch.inference_mode()
def test_a_beams_best_pieces_are_torch_topks():
    """native.row_top: torch.topk(x, w)'s values and columns, best first — widths with a tail past the vectors, w from
    1 to the row's width, rows further apart than their width, a row mostly -inf; equal values: the lower column
    first (torch does not promise an order there); a row with NaN: None (torch's answer is asked instead)."""
    torch.manual_seed(5)
    for width in (1, 9, 16, 203, 8010):
        x = torch.randn(6, width + 3)[:, :width]
        x[2] = float("-inf")
        x[2, width // 2] = 0.5
        for w in sorted({1, min(4, width), min(8, width), width}):
            values, index = native.row_top(x, w)
            ref_values, ref_index = x.topk(w, dim=-1)
            torch.testing.assert_close(values, ref_values)
            unique = (values[:, :, None] == values[:, None, :]).sum(-1) == 1  # torch orders ties its own way
            assert torch.equal(index[unique], ref_index[unique])
            assert torch.equal(x.gather(1, index), values)
    ties = torch.tensor([[1.0, 3.0, 2.0, 3.0, 3.0, 0.0]])
    assert native.row_top(ties, 3)[1].tolist() == [[1, 3, 4]]
    assert native.row_top(ties, 4)[1].tolist() == [[1, 3, 4, 2]]
    ties[0, 5] = float("nan")
    assert native.row_top(ties, 2) is None


def test_a_batchs_attention_rows_are_torchs():
    """native.attend_rows: softmax(q kᵀ + bias) v for one query per row, as core/model/step.py's `_attend` computes it
    with torch — over a cache's rows (positions narrowed from a larger buffer), with source padding (-inf) and
    without, at one thread and two; None where it cannot take the layout (two queries a row)."""
    from core.model.step import _attend

    torch.manual_seed(7)
    for rows, t, d_k in ((1, 1, 64), (256, 37, 64), (12, 5, 32)):
        buffer = torch.randn(2, rows, t + 9, d_k)  # capacity t + 9, t positions filled
        k, v = buffer[0, :, :t], buffer[1, :, :t]
        q = torch.randn(rows, 1, d_k)
        bias = torch.zeros(rows, 1, t)
        bias[::3, :, t // 2 + 1 :] = float("-inf")  # padding past half of every third row's source
        for b in (None, bias):
            scores = torch.bmm(q, k.transpose(1, 2)) if b is None else torch.baddbmm(b, q, k.transpose(1, 2))
            reference = torch.bmm(scores.softmax(-1), v)
            for threads in (1, 2):
                previous = torch.get_num_threads()
                torch.set_num_threads(threads)
                try:
                    torch.testing.assert_close(native.attend_rows(q, k, v, b), reference, atol=1e-5, rtol=1e-5)
                    torch.testing.assert_close(_attend(q, k, v, b), reference, atol=1e-5, rtol=1e-5)
                finally:
                    torch.set_num_threads(previous)
    assert native.attend_rows(torch.randn(4, 2, 8), torch.randn(4, 3, 8), torch.randn(4, 3, 8), None) is None
