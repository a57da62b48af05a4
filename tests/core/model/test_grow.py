"""Function-preserving growth (core/model/grow.py): the shipped model with wider FFNs computes what it did."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import torch

from core.checkpoint import load_model
from core.model.grow import deepen_encoder, grow_vocab, narrow_ffn, widen_ffn
from core.model.transformer import Transformer


def test_a_wider_ffn_gives_the_same_logits_and_keeps_the_old_weights():
    loaded = load_model(None)
    cfg, state = loaded.cfg, loaded.model.state_dict()
    wide_cfg, wide_state = widen_ffn(state, cfg, 2 * cfg.d_ff, seed=3)
    assert wide_cfg.d_ff == 2 * cfg.d_ff and wide_cfg.d_model == cfg.d_model
    wide = Transformer(wide_cfg).eval()
    wide.load_state_dict(wide_state)
    src = torch.tensor([loaded.tokenizer.encode("Le gouvernement a annoncé une hausse des impôts.") + [cfg.eos_id]])
    tgt = torch.tensor([[cfg.bos_id] + loaded.tokenizer.encode("The government announced a tax rise.")])
    with torch.inference_mode():
        before = loaded.model.eval()(src, tgt)
        after = wide(src, tgt)
    assert torch.allclose(before, after, atol=1e-4), (before - after).abs().max()
    # The old units are untouched, the new ones answer (W1 rows drawn) but contribute nothing (W2 columns zero).
    name = "encoder_layers.0.ffn"
    assert torch.equal(wide_state[f"{name}.w_1.weight"][: cfg.d_ff], state[f"{name}.w_1.weight"])
    assert wide_state[f"{name}.w_1.weight"][cfg.d_ff :].std() > 0
    assert not wide_state[f"{name}.w_2.weight"][:, cfg.d_ff :].any()
    # The same seed draws the same new units; another draws others.
    again = widen_ffn(state, cfg, 2 * cfg.d_ff, seed=3)[1]
    other = widen_ffn(state, cfg, 2 * cfg.d_ff, seed=4)[1]
    assert torch.equal(again[f"{name}.w_1.weight"], wide_state[f"{name}.w_1.weight"])
    assert not torch.equal(other[f"{name}.w_1.weight"], wide_state[f"{name}.w_1.weight"])


def test_a_deeper_encoder_gives_the_same_logits_and_keeps_the_old_layers():
    """New encoder layers on top: the old top's final norm moves to the new top, the new sublayers add nothing,
    so the shipped model's logits come out again; the old layers below the top are untouched."""
    loaded = load_model(None)
    cfg, state = loaded.cfg, loaded.model.state_dict()
    src = torch.tensor([loaded.tokenizer.encode("Le gouvernement a annoncé une hausse des impôts.") + [cfg.eos_id]])
    tgt = torch.tensor([[cfg.bos_id] + loaded.tokenizer.encode("The government announced a tax rise.")])
    with torch.inference_mode():
        before = loaded.model.eval()(src, tgt)
    n, top = cfg.n_encoder_layers, f"encoder_layers.{cfg.n_encoder_layers - 1}"
    for draw in (True, False):
        deep_cfg, deep_state = deepen_encoder(state, cfg, n + 2, seed=3, draw=draw)
        assert deep_cfg.n_encoder_layers == n + 2 and deep_cfg.n_decoder_layers == cfg.n_decoder_layers
        deep = Transformer(deep_cfg).eval()
        deep.load_state_dict(deep_state)
        with torch.inference_mode():
            after = deep(src, tgt)
        assert torch.allclose(before, after, atol=1e-3), (before - after).abs().max()
        assert all(torch.equal(deep_state[k], v) for k, v in state.items() if not k.startswith(f"{top}.ffn_norm"))
        new = f"encoder_layers.{n + 1}"
        assert torch.equal(deep_state[f"{new}.ffn_norm.norm.weight"], state[f"{top}.ffn_norm.norm.weight"])
        assert (deep_state[f"{top}.ffn_norm.norm.weight"] == 1).all() and not deep_state[
            f"{top}.ffn_norm.norm.bias"
        ].any()
        assert not deep_state[f"{new}.ffn.w_2.weight"].any() and not deep_state[f"{new}.self_attn.w_o.weight"].any()
        assert (deep_state[f"{new}.ffn.w_1.weight"].std() > 0) == draw  # drawn as a fresh layer's, or absent
    with pytest.raises(ValueError, match="would remove layers"):
        deepen_encoder(state, cfg, n - 1)
    same_cfg, same = deepen_encoder(state, cfg, n)
    assert same_cfg == cfg and all(torch.equal(same[k], state[k]) for k in state)


def test_the_ffn_never_narrows_and_equal_width_changes_nothing():
    loaded = load_model(None)
    cfg, state = loaded.cfg, loaded.model.state_dict()
    with pytest.raises(ValueError, match="would narrow"):
        widen_ffn(state, cfg, cfg.d_ff - 1)
    same_cfg, same = widen_ffn(state, cfg, cfg.d_ff)
    assert same_cfg == cfg and all(torch.equal(same[k], state[k]) for k in state)


def test_narrowing_drops_the_units_widening_added():
    """narrow_ffn is widen_ffn's inverse: the shipped model widened, then cut back, is the shipped model to the bit;
    cut below its width it keeps the first units as they are; it never widens."""
    loaded = load_model(None)
    cfg, state = loaded.cfg, loaded.model.state_dict()
    back_cfg, back = narrow_ffn(
        widen_ffn(state, cfg, cfg.d_ff + 512, seed=1)[1], replace(cfg, d_ff=cfg.d_ff + 512), cfg.d_ff
    )
    assert back_cfg == cfg and all(torch.equal(back[k], state[k]) for k in state)
    half_cfg, half = narrow_ffn(state, cfg, cfg.d_ff // 2)
    name = "decoder_layers.1.ffn"
    assert half_cfg.d_ff == cfg.d_ff // 2 and half[f"{name}.w_2.weight"].shape == (cfg.d_model, cfg.d_ff // 2)
    assert torch.equal(half[f"{name}.w_1.weight"], state[f"{name}.w_1.weight"][: cfg.d_ff // 2])
    assert torch.equal(half[f"{name}.w_1.bias"], state[f"{name}.w_1.bias"][: cfg.d_ff // 2])
    assert torch.equal(half[f"{name}.w_2.bias"], state[f"{name}.w_2.bias"])  # (d_model,): not a unit's
    Transformer(half_cfg).load_state_dict(half)  # a model of that shape takes it
    with pytest.raises(ValueError, match="would widen"):
        narrow_ffn(state, cfg, cfg.d_ff + 1)


def test_a_larger_vocabulary_keeps_every_old_row_and_the_old_pieces_logits():
    """The shipped en→fr model given the placeholder pieces (core.data.tokenizer.Tokenizer.with_pieces): new rows
    in the one tied matrix, the old ones untouched, and the scores of the old pieces exactly what they were."""
    from core.data.placeholders import PLACEHOLDER_TOKENS

    loaded = load_model(Path(__file__).resolve().parents[3] / "weights" / "en-fr")
    cfg, state = loaded.cfg, loaded.model.state_dict()
    assert loaded.tokenizer.with_pieces(PLACEHOLDER_TOKENS) is loaded.tokenizer  # it learned them already
    tokenizer = loaded.tokenizer.with_pieces(tuple(f"<new{i}>" for i in range(10)))
    big_cfg, big_state = grow_vocab(state, cfg, tokenizer.vocab_size, seed=1)
    assert big_cfg.vocab_size == cfg.vocab_size + 10 == tokenizer.vocab_size
    table = big_state["src_embed.table.weight"]
    assert torch.equal(table[: cfg.vocab_size], state["src_embed.table.weight"])
    new = table[cfg.vocab_size :]
    assert torch.allclose(new.mean(0), state["src_embed.table.weight"].mean(0), atol=0.05)
    assert torch.cdist(new, new).masked_fill(torch.eye(10, dtype=torch.bool), 1.0).min() > 0  # each its own
    big = Transformer(big_cfg).eval()
    big.load_state_dict(big_state)
    assert big.generator.weight is big.src_embed.table.weight is big.tgt_embed.table.weight  # still tied
    src = torch.tensor([tokenizer.encode("See <ph0> tonight.") + [cfg.eos_id]])
    old_src = torch.tensor([loaded.tokenizer.encode("See you tonight.") + [cfg.eos_id]])
    tgt = torch.tensor([[cfg.bos_id] + tokenizer.encode("À ce soir.")])
    with torch.inference_mode():
        before, after = loaded.model.eval()(old_src, tgt), big(old_src, tgt)[..., : cfg.vocab_size]
        assert torch.allclose(before, after, atol=1e-4), (before - after).abs().max()
        assert big(src, tgt).isfinite().all()
    assert grow_vocab(state, cfg, cfg.vocab_size)[0] == cfg
    with pytest.raises(ValueError, match="fewer than the model's"):
        grow_vocab(state, cfg, cfg.vocab_size - 1)
