"""The fused path (encoder, cross-attention caches, decoder step) computes what the modules compute, the
searches take it, and it steps aside where the modules must run."""

from __future__ import annotations

import pytest
import torch

from core.decode.beam import beam_search
from core.decode.search import greedy, pad_batch
from core.model import fast, native
from core.model import step as st
from core.model.config import preset
from core.model.fast import fast_model, packed_model
from core.model.step import FusedStep, fused_step
from core.model.transformer import Transformer


def model_of(norm: str = "post", seed: int = 0, **overrides) -> Transformer:
    torch.manual_seed(seed)
    return Transformer(preset("tiny", vocab_size=40, norm=norm, **overrides)).eval()


def src_batch() -> torch.Tensor:
    return pad_batch([[5, 9, 12, 7, 3], [8, 3], [30, 31, 32, 3]], 0)


@pytest.fixture(params=[False, True], ids=["plain", "packed"])
def packed(request, monkeypatch):
    """Both kinds of Linear layers; packed ones send every product through oneDNN (the tiny model's
    products are all below the speed threshold)."""
    if request.param:
        monkeypatch.setattr(fast, "PACK_MIN_MACS", 1)
    return request.param


def model_and_step(norm: str, packed: bool, encoder: int, decoder: int) -> tuple[Transformer, FusedStep]:
    model = model_of(norm, n_encoder_layers=encoder, n_decoder_layers=decoder)
    if packed:
        model = packed_model(model)
    step = fused_step(model)
    assert step is not None
    return model, step


def assert_caches_close(ref: list, got: list, real: torch.Tensor | None = None) -> None:
    """Keys and values (B, h, T, d_k) alike; at positions `real` (B, T) only where given (the memory's padding: every
    key mask hides it)."""
    for a, b in zip(ref, got, strict=True):
        for want, have in ((a.k, b.k), (a.v, b.v)):
            if real is not None:
                want, have = want.transpose(1, 2)[real], have.transpose(1, 2)[real]
            torch.testing.assert_close(have, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("norm", ["post", "pre"])
@torch.inference_mode()
def test_fused_encoder_and_caches_equal_the_modules(norm, packed):
    model, step = model_and_step(norm, packed, encoder=3, decoder=2)
    src = src_batch()  # rows of 5, 2 and 4 pieces: padding in two of them
    ref, got = model.encode(src), step.encode(src)
    real = src != 0  # padded positions' vectors are never read (every key mask hides them)
    torch.testing.assert_close(got.memory[real], ref.memory[real], rtol=1e-5, atol=1e-5)
    assert torch.equal(got.src_mask, ref.src_mask)
    ref_state, got_state = model.start_state(ref, capacity=4), step.start_state(got, capacity=4)
    assert_caches_close(ref_state.cross_attn, got_state.cross_attn, real)
    assert all(c.length == 0 and c.capacity == 4 for c in got_state.self_attn)


@torch.inference_mode()
def test_a_batchs_padding_is_left_out_of_the_encoders_products(packed):
    """In a batch the encoder's products and the memory's keys and values run on the real tokens only (11 of src's 15
    positions); the padding's memory is zeros, and a batch without padding takes every position."""
    model, step = model_and_step("post", packed, encoder=2, decoder=2)
    seen: list[int] = []

    def counted(product):
        def call(x):
            seen.append(x.size(0))
            return product(x)

        return call

    for layer in step.encoder_layers:
        layer.qkv, layer.out, layer.w_1, layer.w_2 = map(counted, (layer.qkv, layer.out, layer.w_1, layer.w_2))
    step.cross_kv = counted(step.cross_kv)
    src = src_batch()
    enc = step.encode(src)
    step.start_state(enc, capacity=4)
    assert seen == [11] * 9
    assert not enc.memory[src == 0].any() and enc.memory[src != 0].abs().sum(-1).min() > 0
    seen.clear()
    step.start_state(step.encode(src[:1]), capacity=4)
    assert seen == [5] * 9


def steps_agree(model: Transformer, step: FusedStep, enc, fused_state):
    """Six steps through the modules and through `step` (from `fused_state`) give the same logits and
    self-attention caches; the fused state afterwards."""
    ref_state = model.start_state(enc, capacity=6)
    assert_caches_close(ref_state.cross_attn, fused_state.cross_attn, enc.src_mask[:, 0, 0])
    tokens = torch.full((enc.memory.size(0), 1), 2)
    for _ in range(6):
        ref = model.decode(tokens, enc, state=ref_state).logits[:, -1]
        torch.testing.assert_close(step(tokens, enc, fused_state), ref, rtol=1e-5, atol=1e-5)
        assert_caches_close(ref_state.self_attn, fused_state.self_attn)
        tokens = ref.argmax(-1, keepdim=True)
    assert fused_state.length == ref_state.length == 6
    return fused_state


@pytest.mark.parametrize("norm", ["post", "pre"])
@pytest.mark.parametrize("rows", ["batch", "one sentence", "one sentence in C"])
@torch.inference_mode()
def test_fused_steps_equal_the_modules_steps(norm, packed, rows, monkeypatch):
    """A batch with padding, one sentence in torch (whose cross-attention runs absorbed into its memory), and one
    sentence through the C step (core/model/native)."""
    if rows == "one sentence in C" and native.library() is None:
        pytest.skip(f"no C step here: {native.why_not()}")
    monkeypatch.setenv("TT_NATIVE", "1" if rows == "one sentence in C" else "0")
    model, step = model_and_step(norm, packed, encoder=2, decoder=3)
    batch = [[5, 9, 12, 7, 3], [8, 4, 6, 11, 3], [30, 31, 32, 33, 3]] if rows == "batch" else [[5, 9, 12, 7, 3]]
    src = pad_batch(batch, 0)
    enc = model.encode(src)
    fused_state = steps_agree(model, step, enc, model.start_state(enc, capacity=6))
    assert (fused_state.absorbed is not None) == (rows == "one sentence")
    assert (fused_state.native is not None) == (rows == "one sentence in C")


def count_fused_calls(monkeypatch) -> list[str]:
    """The names of the FusedStep methods the searches call, in order."""
    calls = []
    for name in ("encode", "start_state", "__call__"):
        method = getattr(FusedStep, name)
        monkeypatch.setattr(
            FusedStep, name, lambda self, *a, _m=method, _n=name, **k: calls.append(_n) or _m(self, *a, **k)
        )
    return calls


def test_searches_run_the_fused_step_and_decode_the_same(monkeypatch):
    model = model_of(seed=3)
    src = src_batch()
    calls = count_fused_calls(monkeypatch)
    fused_greedy = [h.tokens for h in greedy(model, src, max_output=8)]
    assert calls[:2] == ["encode", "start_state"] and "__call__" in calls  # greedy took the fused path
    calls.clear()
    fused_beam = [h[0].tokens for h in beam_search(model, src, beam_size=3, max_output=8)]
    assert calls[:2] == ["encode", "start_state"] and "__call__" in calls  # and so did beam search
    # A hook (what tt inspect reads through) sends the searches through the modules: same outputs.
    calls = []
    handle = model.decoder_layers[0].register_forward_hook(lambda *_: calls.append(1))
    try:
        assert fused_step(model) is None
        assert [h.tokens for h in greedy(model, src, max_output=8)] == fused_greedy
        assert [h[0].tokens for h in beam_search(model, src, beam_size=3, max_output=8)] == fused_beam
    finally:
        handle.remove()
    assert calls  # the modules ran


def test_no_fused_step_in_training_or_for_bf16_layers():
    model = model_of()
    assert fused_step(model.train()) is None
    model.eval()
    assert fused_step(fast_model(model, "bf16")) is None
    assert fused_step(model) is not None
    assert fused_step(fast_model(model, "int8")).kind == "int8"


@pytest.mark.parametrize("many", [False, True], ids=["", "many rows in bf16"])
@pytest.mark.parametrize("small", [False, True], ids=["fbgemm", "small in fp32"])
@pytest.mark.parametrize("rows", ["batch", "one sentence", "one sentence in C"])
@torch.inference_mode()
def test_int8_layers_take_the_fused_step_and_compute_what_their_modules_compute(monkeypatch, rows, small, many):
    """`--quantize int8`: the stacked int8 products (Q scaled, K, V; every layer's cross K, V) and the
    step give the int8 modules' own numbers. With every product on fbgemm one sentence keeps its int8
    cross-attention products; with few rows of small weights in fp32 (core/model/fast.py `SMALL_ROWS`: every
    weight of the tiny model is small) one sentence's cross-attention absorbs W^Q and W^O as fp32's does. With
    many rows in bf16 (`MANY_ROWS`, lowered to 2 here so that the small batch takes it) too — where oneDNN has bf16
    products (elsewhere the path is never taken: tests/core/model/test_quantize.py), else the case runs on fbgemm.
    One sentence through the C step (core/model/native) quantizes its rows as fbgemm does, or multiplies the int8
    values in fp32 where the torch step does.
    The batch has no padding: the fused encoder leaves padding out of its products, and fbgemm's product quantizes
    the rows of a call with one range (after each row's own scale), which the padding's rows would move."""
    if rows == "one sentence in C" and native.library() is None:
        pytest.skip(f"no C step here: {native.why_not()}")
    monkeypatch.setenv("TT_NATIVE", "1" if rows == "one sentence in C" else "0")
    many = many and fast.onednn_bf16()
    monkeypatch.setattr(fast, "SMALL_IN_FP32", small)
    monkeypatch.setattr(fast, "MANY_ROWS_BF16", many)
    monkeypatch.setattr(fast, "MANY_ROWS", 2)
    model = fast_model(model_of(seed=5, n_encoder_layers=2, n_decoder_layers=3), "int8")
    weight = model.generator.weight()  # a scale per output row, zero points 0
    assert weight.qscheme() == torch.per_channel_affine and weight.q_per_channel_scales().unique().numel() > 1
    assert not weight.q_per_channel_zero_points().any()
    step = fused_step(model)
    batch = [[5, 9, 12, 7, 3], [8, 4, 6, 11, 3], [30, 31, 32, 33, 3]] if rows == "batch" else [[5, 9, 12, 7, 3]]
    src = pad_batch(batch, 0)
    ref_enc, got_enc = model.encode(src), step.encode(src)
    real = src != 0
    torch.testing.assert_close(got_enc.memory[real], ref_enc.memory[real], rtol=1e-5, atol=1e-5)
    fused_state = steps_agree(model, step, ref_enc, step.start_state(ref_enc, capacity=6))
    assert (fused_state.absorbed is not None) == (small and rows == "one sentence")
    assert (fused_state.native is not None) == (rows == "one sentence in C")
    # The int8 model is not the fp32 model: a step that read the fp32 weights would fail above.
    fp32 = model_of(seed=5, n_encoder_layers=2, n_decoder_layers=3)
    enc = fp32.encode(src)
    logits = fp32.decode(torch.full((src.size(0), 1), 2), enc, state=fp32.start_state(enc)).logits[:, -1]
    again = model.start_state(ref_enc)
    assert not torch.allclose(step(torch.full((src.size(0), 1), 2), ref_enc, again), logits, rtol=1e-5, atol=1e-5)


def test_the_fused_weights_follow_an_update_in_place():
    model = model_of()
    first = fused_step(model)
    assert fused_step(model) is first  # built once
    with torch.no_grad():
        model.decoder_layers[0].self_attn.w_q.weight.mul_(0.5)  # an optimizer step does this in place
    second = fused_step(model)
    assert second is not first
    src = src_batch()
    with torch.inference_mode():
        enc = model.encode(src)
        a, b = model.start_state(enc), model.start_state(enc)
        tokens = torch.tensor([[2], [2], [2]])
        torch.testing.assert_close(second(tokens, enc, b), model.decode(tokens, enc, state=a).logits[:, -1])


@pytest.mark.parametrize("packed,int8", [(True, False), (False, True)], ids=["packed", "int8"])
def test_the_shipped_model_decodes_the_same_pieces_on_both_paths(monkeypatch, packed, int8):
    """The shipped weights as `tt translate` loads them (packed; `--quantize int8`: unpacked, then int8):
    greedy one sentence at a time, greedy and beam search in a batch give the same pieces on the fused
    path as through the modules."""
    from core.checkpoint import load_model
    from core.decode.source import prepare_source
    from tests.conftest import TINY_TSV

    loaded = load_model(None, packed=packed)
    model, tok = loaded.model, loaded.tokenizer
    if int8:
        model = fast_model(model, "int8")
    french = [line.split("\t")[0] for line in TINY_TSV.read_text(encoding="utf-8").splitlines()]
    ids = [prepare_source(tok, s, model.cfg.max_len).ids for s in french]
    batch = pad_batch(ids, model.cfg.pad_id)

    def decode() -> tuple[list, list, list]:
        one = [greedy(model, pad_batch([s], model.cfg.pad_id))[0].tokens for s in ids[:12]]
        return one, [h.tokens for h in greedy(model, batch)], [h[0].tokens for h in beam_search(model, batch)]

    calls = count_fused_calls(monkeypatch)
    fused = decode()
    assert calls.count("encode") == 14  # every search took the fused path
    calls.clear()
    handle = model.generator.register_forward_hook(lambda *_: None)  # what an analysis does: modules only
    try:
        modules = decode()
    finally:
        handle.remove()
    assert not calls
    # int8 quantizes each row of a product's input with its own range (core/model/fast.py, `int8_rows`), so the
    # two paths' grouping of a step's products does not move a sentence's pieces. (A sentence alone and in a batch
    # can still part at a near tie: one row is quantized by fbgemm from its own min and max, a row of a batch
    # after division by its largest |value|, so roundings differ — 4 of tiny.tsv's 40 sentences with session 29's
    # fr→en model; the ranges themselves: test_int8_gives_each_row_of_a_batch_its_own_range.)
    assert fused == modules


def test_int8_gives_each_row_of_a_batch_its_own_range(monkeypatch):
    """A loud row in a batch does not coarsen the others: each row of the shipped model's int8 product comes out
    within 5 % (of its largest value) of the row alone; with one range for the whole call it is off by 70–97 %.
    (Every product on fbgemm here: four rows of this small weight would otherwise be multiplied in fp32.)"""
    from core.checkpoint import load_model
    from core.model.fast import Int8Linear

    monkeypatch.setattr(fast, "SMALL_IN_FP32", False)
    model = fast_model(load_model(None, packed=False).model, "int8")
    layer = next(m for m in model.modules() if isinstance(m, Int8Linear))
    x = torch.randn(4, layer.in_features, generator=torch.Generator().manual_seed(0))
    x[0] *= 100
    together = layer(x)
    for i in range(4):
        alone = layer(x[i : i + 1])[0]
        assert (together[i] - alone).abs().max() <= 0.05 * alone.abs().max(), i


@pytest.mark.parametrize("kind", ["plain", "packed", "int8"])
@torch.inference_mode()
def test_a_group_of_rows_reads_one_row_of_memory_as_if_each_had_its_copy(kind, monkeypatch):
    """Beam search's beams of a sentence share its memory and cross-attention caches (`group`): the
    step gives what it gives over a copy per beam, and beam search keeps one row per sentence."""
    if kind == "packed":
        monkeypatch.setattr(fast, "PACK_MIN_MACS", 1)
    # One int8 kernel for both: the copies' memory is 45 rows, the shared 15, and from 32 rows an int8 product may
    # go to bf16 (core/model/fast.py `MANY_ROWS`), whose roundings differ from fbgemm's.
    monkeypatch.setattr(fast, "MANY_ROWS_BF16", False)
    model = model_of(seed=7, n_encoder_layers=2, n_decoder_layers=3)
    model = {"plain": model, "packed": packed_model(model), "int8": fast_model(model, "int8")}[kind]
    step = fused_step(model)
    src, group = src_batch(), 3  # 3 sentences with padding, 3 beams each
    enc = step.encode(src)
    rows = torch.arange(src.size(0)).repeat_interleave(group)
    copied = enc.select(rows)
    shared_state, copied_state = step.start_state(enc, capacity=4), step.start_state(copied, capacity=4)
    for cache in shared_state.self_attn:  # the beams fan out: their own self-attention caches
        cache.select(rows)
    tokens = torch.tensor([[2], [5], [9], [2], [7], [7], [11], [2], [30]])  # every beam its own piece
    for _ in range(3):
        got = step(tokens, enc, shared_state, group)
        want = step(tokens, copied, copied_state)
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
        tokens = want.argmax(-1, keepdim=True)
    seen = []
    call = FusedStep.__call__
    monkeypatch.setattr(
        FusedStep,
        "__call__",
        lambda self, tgt, enc, state, group=1: (
            seen.append((tgt.size(0), state.cross_attn[0].k.size(0), state.self_attn[0].k.size(0), group))
            or call(self, tgt, enc, state, group)
        ),
    )
    beam_search(model, src, beam_size=4, max_output=6)
    # BOS per sentence, then 4 beams on 3 rows of memory and of every cache
    assert seen[0] == (3, 3, 3, 1) and seen[1] == (12, 3, 3, 4)


@pytest.mark.parametrize("kind", ["plain", "packed", "int8"])
@torch.inference_mode()
def test_beam_slots_give_each_beam_its_own_prefix_as_a_cache_per_beam_does(kind, monkeypatch):
    """With `BeamSlots` a sentence's beams write their keys and values into its one cache row and read
    their own prefixes through the ancestry mask: the same logits as caches copied per beam and
    reordered, through the fan-out and reorders that cross beams; the first step's spare slots are
    zeroed, so the garbage of a fresh buffer (NaN here) never reaches a logit."""
    if kind == "packed":
        monkeypatch.setattr(fast, "PACK_MIN_MACS", 1)
    model = model_of(seed=3, n_encoder_layers=2, n_decoder_layers=3)
    model = {"plain": model, "packed": packed_model(model), "int8": fast_model(model, "int8")}[kind]
    step = fused_step(model)
    src, beam = src_batch(), 3
    enc = step.encode(src)
    slotted, per_row = step.start_state(enc, capacity=5, beam=beam), step.start_state(enc, capacity=5)
    assert slotted.self_attn[0].capacity == 5 * beam
    for cache in slotted.self_attn:
        cache._pair.fill_(float("nan"))
    bos = torch.full((3, 1), 1)
    torch.testing.assert_close(step(bos, enc, slotted, 1), step(bos, enc, per_row), rtol=1e-5, atol=1e-5)
    fan_out = torch.arange(3).repeat_interleave(beam)
    slotted.beams.follow(fan_out)
    per_row.select(fan_out)
    copied = enc.select(fan_out)
    tokens = torch.tensor([[2], [5], [9], [2], [7], [7], [11], [2], [30]])
    for parents in ([2, 0, 0, 4, 4, 5, 8, 6, 7], [1, 1, 2, 3, 5, 4, 6, 6, 6], [0, 1, 2, 3, 4, 5, 6, 7, 8]):
        got, want = step(tokens, enc, slotted, beam), step(tokens, copied, per_row)
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
        rows = torch.tensor(parents)
        slotted.beams.follow(rows)
        for cache in per_row.self_attn:
            cache.select(rows)
        tokens = want.index_select(0, rows).argmax(-1, keepdim=True)
    assert all(cache.k.size(0) == 3 for cache in slotted.self_attn)  # one row per sentence throughout
    with pytest.raises(ValueError, match="beams' rows"):
        slotted.select(torch.tensor([0, 2]))


@pytest.mark.parametrize("search", ["beam", "greedy", "greedy, one sentence"])
@torch.inference_mode()
def test_a_search_hands_its_cache_memory_to_the_next_and_never_to_two_at_once(monkeypatch, search):
    """Fresh memory costs a page fault every 4 kB written: the next search reuses the last one's buffer
    (`FusedStep.release`), and a search that has not released it never shares it."""
    model = model_of(seed=5, n_encoder_layers=2, n_decoder_layers=2)
    step = fused_step(model)
    buffers = []
    start = FusedStep.start_state

    def recorded(self, enc, capacity=0, beam=0):
        state = start(self, enc, capacity, beam)
        buffers.append(state.spare.data_ptr())
        return state

    monkeypatch.setattr(FusedStep, "start_state", recorded)
    src = src_batch()[:1] if search.endswith("one sentence") else src_batch()

    def run():
        if search == "beam":
            return [[h.tokens for h in hs] for hs in beam_search(model, src, beam_size=4, n_best=4)]
        return [h.tokens for h in greedy(model, src)]

    first, again = run(), run()
    assert buffers[0] == buffers[1] and len(step._spares) == 1
    assert first == again
    enc = step.encode(src)
    one, two = step.start_state(enc, capacity=4, beam=2), step.start_state(enc, capacity=4, beam=2)
    assert one.spare.data_ptr() != two.spare.data_ptr()
    kept = {one.spare.data_ptr(), two.spare.data_ptr()}
    step.release(one)
    step.release(two)  # two searches at once (a batch's parts) leave two buffers, and the next two take them
    again = [step.start_state(enc, capacity=4, beam=2) for _ in range(2)]
    assert {state.spare.data_ptr() for state in again} == kept
    for state in again:
        step.release(state)
    monkeypatch.setattr(st, "SPARE_MAX_BYTES", 1024)  # a buffer over the bound is not kept
    step._spares = []
    run()
    assert step._spares == []


def test_the_beams_best_pieces_are_found_block_by_block_as_by_one_top_k():
    from core.decode.beam import CHUNK, _row_top

    torch.manual_seed(0)
    for vocab, w in [(8000, 8), (16000, 6), (CHUNK * 64 * 8 + 5, 8), (40, 6)]:  # blocks, blocks, ragged, small
        lp = torch.randn(12, vocab).log_softmax(-1)
        lp[:, :2] = float("-inf")  # PAD and BOS banned
        lp[3, 100 % vocab] = lp[3].max() + 1  # a clear winner
        lp[5] = float("-inf")  # a row with nothing allowed
        lp[5, 7] = 0.0
        values, pieces = _row_top(lp, w)
        want = lp.topk(w, dim=-1)
        assert torch.equal(values, want.values)
        assert torch.equal(lp.gather(1, pieces), values)  # each value is its piece's
        assert torch.equal(pieces[[0, 1, 2, 3, 4, 6]], want.indices[[0, 1, 2, 3, 4, 6]])  # no ties there
        assert pieces[3, 0] == 100 % vocab and pieces[5, 0] == 7


def test_a_models_step_lives_beside_it_and_goes_with_it():
    """The step is kept beside the model (not in its __dict__), a copy of the model builds its own, and a model
    no longer referenced is collected with its step (the step holds its model weakly)."""
    import copy
    import gc
    import weakref

    model = model_of(seed=3).eval()
    step = fused_step(model)
    assert step is fused_step(model) and "_fused_step" not in model.__dict__
    clone = copy.deepcopy(model)
    assert fused_step(clone) is not step and fused_step(clone).model is clone
    gone = weakref.ref(model)
    del model, step
    gc.collect()
    assert gone() is None
