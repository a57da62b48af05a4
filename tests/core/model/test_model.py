"""core.model.transformer: the Transformer's contracts — caching, causality, padding, both norms, the variants."""

from __future__ import annotations

import pytest
import torch

from core.decode.trace import attention_trace
from core.model.attention import HeadMask
from core.model.config import preset
from core.model.transformer import Transformer

TOL = dict(atol=1e-5, rtol=1e-5)
VARIANTS = {
    "post": {},
    "pre": {"norm": "pre"},
    "learned": {"positional": "learned"},
    "unshared": {"share_embeddings": False},
}


def make_model(seed: int = 0, **overrides) -> Transformer:
    torch.manual_seed(seed)
    cfg = preset("tiny", vocab_size=40, max_len=32, **overrides)
    model = Transformer(cfg).eval()
    if cfg.positional == "learned":  # the trained table starts tiny; make positions matter in the tests
        with torch.no_grad():
            model.src_pos.learned.normal_()
            model.tgt_pos.learned.normal_()
    return model


def batch(seed: int = 1, b: int = 2, s: int = 7, t: int = 6) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, 40, (b, s), generator=g)
    tgt = torch.randint(4, 40, (b, t), generator=g)
    tgt[:, 0] = 2  # BOS
    return src, tgt


@pytest.mark.parametrize("variant", VARIANTS)
def test_fused_and_manual_paths_agree_in_the_whole_model(variant):
    model = make_model(**VARIANTS[variant])
    src, tgt = batch()
    src[1, 4:] = 0  # padding in the source, so the masks matter
    fast = model.decode(tgt, model.encode(src)).logits
    enc = model.encode(src, need_weights=True)
    slow = model.decode(tgt, enc, need_weights=True)
    torch.testing.assert_close(slow.logits, fast, **TOL)
    trace = attention_trace(enc, slow)
    assert [w.shape for w in trace.encoder_self] == [(2, 4, 7, 7)] * 2
    assert [w.shape for w in trace.decoder_self] == [(2, 4, 6, 6)] * 2
    assert [w.shape for w in trace.cross] == [(2, 4, 6, 7)] * 2
    for w in trace.cross:  # padded source keys get no attention
        assert w[1, :, :, 4:].eq(0).all()
    for w in trace.decoder_self:  # nothing looks ahead
        assert w.triu(diagonal=1).eq(0).all()


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("chunks", [[1] * 6, [2, 3, 1], [6]], ids=["one-step", "chunks-2-3-1", "all-at-once"])
def test_cached_decoding_matches_full_recomputation(variant, chunks):
    model = make_model(**VARIANTS[variant])
    src, tgt = batch()
    enc = model.encode(src)
    full = model.decode(tgt, enc).logits.log_softmax(-1)
    state = model.start_state(enc)
    pieces, start = [], 0
    for size in chunks:
        out = model.decode(tgt[:, start : start + size], enc, state=state, need_weights=size == 2)
        pieces.append(out.logits.log_softmax(-1))
        start += size
        if size == 2:  # the weights of a chunk span everything cached so far
            assert out.self_attention[0].weights.shape == (2, 4, 2, start)
    assert state.length == 6
    torch.testing.assert_close(torch.cat(pieces, dim=1), full, **TOL)


@pytest.mark.parametrize("chunks", [[1] * 40, [5, 11, 1, 17, 6]], ids=["one-step", "uneven-chunks"])
def test_long_cached_decoding_matches_full_recomputation(chunks):
    """Forty positions, one step or uneven chunks at a time: the cache grows by each chunk and must keep them all."""
    torch.manual_seed(0)
    model = Transformer(preset("tiny", vocab_size=40, max_len=64)).eval()
    src, tgt = batch(t=40)
    enc = model.encode(src)
    full = model.decode(tgt, enc).logits.log_softmax(-1)
    state, pieces, start = model.start_state(enc), [], 0
    for size in chunks:
        pieces.append(model.decode(tgt[:, start : start + size], enc, state=state).logits.log_softmax(-1))
        start += size
    torch.testing.assert_close(torch.cat(pieces, dim=1), full, **TOL)


def test_decoder_state_select_follows_reordered_beams():
    model = make_model()
    src, tgt = batch()
    enc = model.encode(src)
    state = model.start_state(enc)
    model.decode(tgt[:, :3], enc, state=state)
    index = torch.tensor([1, 1, 0])
    state.select(index)
    step = model.decode(tgt[index, 3:4], enc.select(index), state=state).logits[:, 0]
    expected = model.decode(tgt[index, :4], enc.select(index)).logits[:, 3]
    torch.testing.assert_close(step, expected, **TOL)


@pytest.mark.parametrize("variant", VARIANTS)
def test_decoder_is_causal(variant):
    """Changing target token j never changes the output at positions < j."""
    model = make_model(**VARIANTS[variant])
    src, tgt = batch()
    enc = model.encode(src)
    before = model.decode(tgt, enc).logits
    for j in range(1, tgt.size(1)):
        changed = tgt.clone()
        changed[:, j] = (changed[:, j] + 7) % 36 + 4
        after = model.decode(changed, enc).logits
        torch.testing.assert_close(after[:, :j], before[:, :j], **TOL)
        assert not torch.allclose(after[:, j:], before[:, j:], atol=1e-4)  # the test can fail


@pytest.mark.parametrize("variant", VARIANTS)
def test_padding_changes_no_real_position(variant):
    model = make_model(**VARIANTS[variant])
    src, tgt = batch(b=1)
    enc = model.encode(src)
    logits = model.decode(tgt, enc).logits
    padded_src = torch.cat([src, torch.zeros(1, 5, dtype=torch.long)], dim=1)
    padded_tgt = torch.cat([tgt, torch.zeros(1, 4, dtype=torch.long)], dim=1)
    enc_padded = model.encode(padded_src)
    # Encoder: the real positions' memory is unchanged by extra pad tokens.
    torch.testing.assert_close(enc_padded.memory[:, :7], enc.memory, **TOL)
    # Decoder: padding in both source and target leaves every real target position's logits unchanged.
    torch.testing.assert_close(model.decode(padded_tgt, enc_padded).logits[:, :6], logits, **TOL)
    # And a sentence batched with a longer one gives what it gives alone.
    other_src, other_tgt = batch(seed=5, b=1, s=12, t=10)
    both_src = torch.cat([padded_src, other_src], dim=0)
    both_tgt = torch.cat([padded_tgt, other_tgt], dim=0)
    torch.testing.assert_close(model.decode(both_tgt, model.encode(both_src)).logits[:1, :6], logits, **TOL)


def test_base_preset_has_about_65m_parameters():
    """Paper Table 3: the base model has 65M parameters; with a 37,000-piece shared vocabulary and tied
    embeddings this architecture counts 63.1M (the paper's count is rounded and its vocabulary differs)."""
    with torch.device("meta"):  # count without allocating or initialising 250 MB
        model = Transformer(preset("base", vocab_size=37000))
    n = model.num_parameters()
    assert 62_500_000 < n < 63_500_000
    d, v = 512, 37000
    attention = 4 * d * d + 4 * d
    ffn = 2 * d * 2048 + 2048 + d
    expected = v * d + 6 * (attention + ffn + 2 * 2 * d) + 6 * (2 * attention + ffn + 3 * 2 * d)
    assert n == expected


def test_shared_embeddings_are_one_matrix_and_unshared_are_three():
    shared = make_model()
    assert shared.src_embed.table.weight is shared.tgt_embed.table.weight is shared.generator.weight
    unshared = make_model(share_embeddings=False)
    w = {id(unshared.src_embed.table.weight), id(unshared.tgt_embed.table.weight), id(unshared.generator.weight)}
    assert len(w) == 3
    assert unshared.num_parameters() == shared.num_parameters() + 2 * 40 * 32


def test_learned_positions_are_parameters_and_sinusoidal_are_not():
    learned = make_model(positional="learned")
    names = {n for n, _ in learned.named_parameters()}
    assert {"src_pos.learned", "tgt_pos.learned"} <= names
    sinusoidal = make_model()
    assert not any("pos" in n for n, _ in sinusoidal.named_parameters())
    assert "src_pos.table" not in sinusoidal.state_dict()  # a fixed buffer, rebuilt on load


def test_pre_norm_has_final_layer_norms_and_post_norm_does_not():
    assert isinstance(make_model(norm="pre").encoder_norm, torch.nn.LayerNorm)
    assert isinstance(make_model().encoder_norm, torch.nn.Identity)


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_variant_trains_a_step(variant):
    model = make_model(**VARIANTS[variant]).train()
    src, tgt = batch()
    logits = model(src, tgt)
    assert logits.shape == (2, 6, 40)
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, 40), tgt.roll(-1, 1).reshape(-1))
    loss.backward()
    missing = [n for n, p in model.named_parameters() if p.grad is None or not p.grad.abs().sum() > 0]
    assert missing == []


def test_too_long_inputs_are_refused_clearly():
    model = make_model()
    with pytest.raises(ValueError, match="at most 32"):
        model.encode(torch.ones(1, 33, dtype=torch.long))
    enc = model.encode(torch.ones(1, 3, dtype=torch.long))
    state = model.start_state(enc)
    model.decode(torch.ones(1, 30, dtype=torch.long), enc, state=state)
    with pytest.raises(ValueError, match="reaches 33"):
        model.decode(torch.ones(1, 3, dtype=torch.long), enc, state=state)


# ------------------------------------------------------------------------- interventions, layers
MASK = {"encoder_self": (1, 2), "decoder_self": (0, 1), "cross": (1, 3)}  # one head off in each family


def masked(model: Transformer) -> HeadMask:
    mask = HeadMask.ones(model.cfg)
    for family, (layer, head) in MASK.items():
        mask = mask.off(family, layer, head)
    return mask


@pytest.mark.parametrize("variant", VARIANTS)
def test_head_mask_fused_manual_and_cached_agree(variant):
    model = make_model(**VARIANTS[variant])
    src, tgt = batch()
    src[1, 4:] = 0
    mask = masked(model)
    enc = model.encode(src, head_mask=mask)
    fused = model.decode(tgt, enc, head_mask=mask).logits
    slow = model.decode(tgt, model.encode(src, need_weights=True, head_mask=mask), need_weights=True, head_mask=mask)
    torch.testing.assert_close(slow.logits, fused, **TOL)
    state, pieces = model.start_state(enc), []
    for t in range(tgt.size(1)):  # the KV-cached decode, one position a step, same mask every step
        pieces.append(model.decode(tgt[:, t : t + 1], enc, state=state, head_mask=mask).logits)
    torch.testing.assert_close(torch.cat(pieces, dim=1), fused, **TOL)
    plain = model.decode(tgt, model.encode(src)).logits
    assert not torch.allclose(fused, plain, atol=1e-4)  # switching heads off changed the output
    ones = HeadMask.ones(model.cfg)
    torch.testing.assert_close(
        model.decode(tgt, model.encode(src, head_mask=ones), head_mask=ones).logits, plain, rtol=0, atol=0
    )


def test_each_family_of_the_head_mask_reaches_its_heads():
    model = make_model()
    src, tgt = batch()
    for family, (layer, head) in MASK.items():
        mask = HeadMask.ones(model.cfg).off(family, layer, head)
        enc = model.encode(src, need_weights=True, head_mask=mask)
        dec = model.decode(tgt, enc, need_weights=True, head_mask=mask)
        internals = {"encoder_self": enc.attention, "decoder_self": dec.self_attention, "cross": dec.cross_attention}
        for name, per_layer in internals.items():
            for i, a in enumerate(per_layer):
                silent = a.heads.abs().sum((0, 2, 3)).eq(0).tolist()  # (h,): True where a head is all zeros
                assert silent == [name == family and i == layer and j == head for j in range(model.cfg.h)]


@pytest.mark.parametrize("variant", ["post", "pre"])
def test_return_layers_gives_the_residual_stream_after_each_decoder_layer(variant):
    model = make_model(**VARIANTS[variant])
    src, tgt = batch()
    enc = model.encode(src)
    dec = model.decode(tgt, enc, return_layers=True)
    assert [x.shape for x in dec.layers] == [(2, 6, 32)] * model.cfg.n_decoder_layers
    # The last layer's stream, through the final norm and the generator, is the logits.
    torch.testing.assert_close(model.generator(model.decoder_norm(dec.layers[-1])), dec.logits, **TOL)
    # The first layer's stream is what layer 0 makes of the embedded target.
    x = model.tgt_pos(model.tgt_embed(tgt))
    first, _, _ = model.decoder_layers[0](x, memory=enc.memory, src_mask=enc.src_mask, causal=True)
    torch.testing.assert_close(dec.layers[0], first, **TOL)
    assert model.decode(tgt, enc).layers is None
