"""The encoder walk and the views built on it, held to the model's own forward pass."""

from __future__ import annotations

import math

import pytest
import torch

from core.analysis.internals import (
    add_norm_trace,
    attention_shapes,
    contextual_similarity,
    embed_position,
    encoder_walk,
    ffn_activity,
    find_word,
    parameter_breakdown,
    position_dots,
    position_table,
    shape_strip,
    source_walk,
    unscaled_weights,
)
from core.model.config import preset
from core.model.layers import AddNorm
from core.model.transformer import Transformer

IDS = [5, 9, 17, 4, 22, 3]


def random_model(seed: int = 0, **overrides) -> Transformer:
    torch.manual_seed(seed)
    return Transformer(preset("tiny", vocab_size=40, **overrides)).eval()


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_walk_reproduces_encode(norm):
    model = random_model(norm=norm)
    walk = encoder_walk(model, IDS)
    enc = model.encode(torch.tensor([IDS]), need_weights=True)
    torch.testing.assert_close(walk.memory, enc.memory[0], atol=1e-5, rtol=0)
    for mine, theirs in zip(walk.layers, enc.attention):
        torch.testing.assert_close(mine.attention.weights, theirs.weights, atol=1e-6, rtol=0)
    assert walk.vectors().shape == (model.cfg.n_encoder_layers + 1, len(IDS), model.cfg.d_model)
    torch.testing.assert_close(walk.embeddings, model.src_embed.table.weight[IDS] * math.sqrt(model.cfg.d_model))


def test_walk_without_positions_drops_only_the_positions():
    model = random_model()
    walk = encoder_walk(model, IDS, positions=False)
    assert walk.positions.abs().sum() == 0
    torch.testing.assert_close(walk.layers[0].input, walk.embeddings)
    assert not torch.allclose(walk.memory, encoder_walk(model, IDS).memory)


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_add_norm_trace_matches_the_module(norm):
    torch.manual_seed(0)
    module = AddNorm(8, dropout=0.0, norm=norm)
    with torch.no_grad():
        module.norm.weight.uniform_(0.5, 2.0)
        module.norm.bias.uniform_(-1, 1)
    x, sub = torch.randn(5, 8), torch.randn(5, 8)
    trace = add_norm_trace(module, x, sub)
    torch.testing.assert_close(trace.out, module(x, sub), atol=1e-6, rtol=0)
    torch.testing.assert_close(trace.x_hat.mean(-1), torch.zeros(5), atol=1e-6, rtol=0)
    torch.testing.assert_close(trace.x_hat.var(-1, unbiased=False), torch.ones(5), atol=1e-4, rtol=0)
    torch.testing.assert_close(trace.normed, x + sub if norm == "post" else x)


def test_add_norm_trace_on_the_notes_cat_vector():
    """000: [2, 4, 6, 8] → μ = 5, σ = √5, x̂ = [−1.34, −0.45, 0.45, 1.34]: mean 0 and variance 1, so values
    fall outside [0, 1], which 003 ("squishing them b/w 0 and 1") gets wrong."""
    x = torch.tensor([[2.0, 4.0, 6.0, 8.0]])
    trace = add_norm_trace(AddNorm(4, dropout=0.0), x / 2, x / 2)
    assert trace.mean.item() == 5.0
    assert trace.std.item() == pytest.approx(math.sqrt(5 + 1e-5))
    torch.testing.assert_close(trace.x_hat, torch.tensor([[-1.3416, -0.4472, 0.4472, 1.3416]]), atol=1e-4, rtol=0)
    assert trace.x_hat.min() < 0 and trace.x_hat.max() > 1


def test_ffn_activity_reads_the_layer():
    model = random_model()
    walk = encoder_walk(model, IDS)
    layer = model.encoder_layers[1]
    x = walk.layers[1].attention_norm.out[2]  # what the FFN of layer 1 reads at position 2 (post-norm)
    with torch.no_grad():
        hidden = torch.relu(layer.ffn.w_1(x))
        out = layer.ffn(x)
    act = ffn_activity(walk, 1, 2, top=3)
    assert act.d_ff == model.cfg.d_ff
    assert act.firing == int((hidden > 0).sum()) and 0 < act.firing < act.d_ff
    assert [i for i, _ in act.top] == hidden.topk(3).indices.tolist()
    assert act.output_norm == pytest.approx(float(out.norm()), rel=1e-5)


def test_parameter_breakdown_counts_every_parameter_once():
    model = random_model()
    b = parameter_breakdown(model)
    assert b.total == model.num_parameters()  # the tied generator is counted once
    d, d_ff = model.cfg.d_model, model.cfg.d_ff
    layers = model.cfg.n_encoder_layers + model.cfg.n_decoder_layers
    assert b.groups["feed-forward"] == layers * (2 * d * d_ff + d_ff + d)
    assert b.groups["cross-attention"] == model.cfg.n_decoder_layers * (4 * d * d + 4 * d)
    assert b.encoder_layer["attention"] == 4 * d * d + 4 * d


def test_parameter_breakdown_unshared_embeddings():
    model = random_model(share_embeddings=False)
    b = parameter_breakdown(model)
    assert b.total == model.num_parameters()
    assert b.groups["embeddings"] == 3 * model.cfg.vocab_size * model.cfg.d_model  # source, target, generator


def test_position_dots_depend_on_the_offset_only_for_sinusoids():
    sinus = position_dots(position_table(random_model(), 64))
    assert sinus.max_spread < 1e-5
    assert sinus.dots[0][0] == pytest.approx(32 / 2)  # PE(p)·PE(p) = Σ (sin² + cos²) over d_model / 2 pairs
    learned = position_dots(position_table(random_model(positional="learned"), 64))
    assert learned.max_spread > 1e-3


def test_embed_position_and_shapes():
    model = random_model()
    walk = encoder_walk(model, IDS)
    ep = embed_position(walk, 2)
    torch.testing.assert_close(ep.total, walk.layers[0].input[2])
    torch.testing.assert_close(ep.position_vector, position_table(model, 6)[2])
    strip = dict(shape_strip(walk))
    cfg = model.cfg
    assert strip["Q = x W^Q, split into heads"] == (1, cfg.h, len(IDS), cfg.d_k)
    assert strip["softmax → weights"] == (1, cfg.h, len(IDS), len(IDS))
    assert strip["· W^O"] == (1, len(IDS), cfg.d_model) == tuple(walk.layers[0].attention_norm.sublayer[None].shape)
    with torch.no_grad():
        enc = model.encode(torch.tensor([IDS]))
        dec = model.decode(torch.tensor([[2, 7, 8]]), enc, need_weights=True)
    cross = dict(attention_shapes(dec.cross_attention[0]))
    assert cross["softmax → weights"] == (1, cfg.h, 3, len(IDS))  # h × T × S
    assert cross["concat heads"] == (1, 3, cfg.d_model)


def test_unscaled_weights_leave_out_the_division():
    walk = encoder_walk(random_model(), IDS)
    a = walk.layers[0].attention
    torch.testing.assert_close(unscaled_weights(a), (a.q @ a.k.transpose(-1, -2)).softmax(-1), atol=1e-5, rtol=0)
    assert not torch.allclose(unscaled_weights(a), a.weights)


def test_find_word_through_elisions():
    pieces = ["\u2581L", "'", "an", "im", "al", "\u2581n", "'", "a", "\u2581qu", "'", "il", "</s>"]
    assert find_word(pieces, "animal") == [2, 3, 4]
    assert find_word(pieces, "il") == [10]
    with pytest.raises(ValueError, match="chien"):
        find_word(pieces, "chien")


def test_contextual_similarity_on_the_trained_tiny_model(tiny_loaded):
    same = contextual_similarity(tiny_loaded, "chat", "Le chat dort.", "Le chat dort.")
    assert same.similarity == pytest.approx([1.0] * len(same.levels))
    other = contextual_similarity(tiny_loaded, "chat", "Le chat dort.", "Je suis étudiant et le chat mange.")
    assert other.similarity[0] == pytest.approx(1.0)  # one static vector for the same pieces
    assert min(other.similarity[1:]) < 0.999  # the encoder makes them depend on the sentence
    walk = source_walk(tiny_loaded, "Le chat dort.")
    assert walk.pieces[-1] == "</s>" and len(walk.layers) == tiny_loaded.cfg.n_encoder_layers
