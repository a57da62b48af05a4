"""The encoder opened up layer by layer: what the notes draw and `Transformer.encode` does not return.

`encode` hands back the memory and, when asked, each layer's attention internals. The notes also
draw the vectors in between: the token embedding × √d_model beside its position vector (§3.4–3.5),
the two Add & Norm steps of every layer (x, Sublayer(x), their sum, μ, σ, x̂, γ, β), the
feed-forward network's hidden units (Eq. 2) and the residual stream after each layer, the
"contextual embedding" of a piece. `encoder_walk` re-runs the model's own modules one sub-layer at
a time (eval mode, so dropout is off) and keeps all of them; the LayerNorm arithmetic is recomputed
from the module's γ, β and ε so that μ, σ and x̂ are visible. A test holds the walk to `encode`.

`positions=False` leaves the position vectors out: the permutation test of the claims reads it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from core.align.links import words
from core.model.attention import AttentionInternals
from core.model.layers import AddNorm, sinusoidal_table
from core.model.transformer import Transformer


@dataclass
class AddNormTrace:
    """One Add & Norm on live activations, per position: post-norm LayerNorm(x + Sublayer(x)).

    Pre-norm normalises the sub-layer's input instead; then `normed` is x and `out` is x + Sublayer.
    """

    x: torch.Tensor  # (S, d_model) the residual stream coming in
    sublayer: torch.Tensor  # (S, d_model) Sublayer(x): attention or feed-forward output
    total: torch.Tensor  # (S, d_model) x + Sublayer(x)
    normed: torch.Tensor  # (S, d_model) what the LayerNorm read
    mean: torch.Tensor  # (S,) μ of each position's vector
    std: torch.Tensor  # (S,) σ = √(Var + ε), the biased variance LayerNorm uses
    x_hat: torch.Tensor  # (S, d_model) (normed − μ) / σ: mean 0, variance 1 (not "between 0 and 1")
    gamma: torch.Tensor  # (d_model,) the learned scale
    beta: torch.Tensor  # (d_model,) the learned shift
    out: torch.Tensor  # (S, d_model) what the layer passes on
    post: bool  # True for the paper's post-norm


def add_norm_trace(add_norm: AddNorm, x: torch.Tensor, sublayer: torch.Tensor) -> AddNormTrace:
    """Add & Norm of `add_norm` on x and Sublayer(x) (each (S, d_model)), every intermediate kept."""
    ln = add_norm.norm
    total = x + sublayer
    normed = x if add_norm.pre else total
    mean = normed.mean(-1)  # (S,)
    var = normed.var(-1, unbiased=False)  # (S,) LayerNorm divides by N, not N − 1
    std = torch.sqrt(var + ln.eps)
    x_hat = (normed - mean[:, None]) / std[:, None]
    scaled = x_hat * ln.weight.detach() + ln.bias.detach()
    out = total if add_norm.pre else scaled
    gamma, beta = ln.weight.detach(), ln.bias.detach()
    return AddNormTrace(x, sublayer, total, normed, mean, std, x_hat, gamma, beta, out, not add_norm.pre)


@dataclass
class EncoderLayerTrace:
    input: torch.Tensor  # (S, d_model)
    attention: AttentionInternals  # batch of one: q (1, h, S, d_k), weights (1, h, S, S), ...
    attention_norm: AddNormTrace
    ffn_hidden: torch.Tensor  # (S, d_ff) max(0, x W1 + b1): the units of Eq. 2
    ffn_norm: AddNormTrace
    output: torch.Tensor  # (S, d_model)


@dataclass
class EncoderWalk:
    ids: list[int]
    pieces: list[str]
    embeddings: torch.Tensor  # (S, d_model) token embedding × √d_model (§3.4)
    positions: torch.Tensor  # (S, d_model) the position vectors added (zeros with positions=False)
    layers: list[EncoderLayerTrace]
    memory: torch.Tensor  # (S, d_model) what the decoder reads (after the final norm under pre-norm)

    def vectors(self) -> torch.Tensor:
        """(n_layers + 1, S, d_model): the static embedding (× √d_model), then each layer's output."""
        return torch.stack([self.embeddings] + [layer.output for layer in self.layers])


@torch.inference_mode()
def encoder_walk(model: Transformer, ids: list[int], pieces: list[str] | None = None, *, positions: bool = True):
    """One source sentence (ids, EOS last) through the encoder, every sub-layer kept (see module doc)."""
    if not ids:
        raise ValueError("an empty source has nothing to encode")
    device = next(model.parameters()).device
    src = torch.tensor([ids], device=device)  # (1, S)
    emb = model.src_embed(src)[0]  # (S, d_model)
    pos = model.src_pos.positions(len(ids)) if positions else torch.zeros_like(emb)  # (S, d_model)
    x = emb + pos
    mask = (src != model.cfg.pad_id)[:, None, None, :]  # (1, 1, 1, S)
    layers = []
    for layer in model.encoder_layers:
        y = layer.self_attn_norm.sublayer_input(x)
        attended, internals = layer.self_attn(y[None], mask=mask, need_weights=True)  # (1, S, d_model)
        an1 = add_norm_trace(layer.self_attn_norm, x, attended[0])
        y = layer.ffn_norm.sublayer_input(an1.out)
        hidden = torch.relu(layer.ffn.w_1(y))  # (S, d_ff)
        an2 = add_norm_trace(layer.ffn_norm, an1.out, layer.ffn.w_2(hidden))
        layers.append(EncoderLayerTrace(x, internals, an1, hidden, an2, an2.out))
        x = an2.out
    return EncoderWalk(list(ids), pieces or [str(i) for i in ids], emb, pos, layers, model.encoder_norm(x))


def source_walk(loaded, text: str, *, positions: bool = True) -> EncoderWalk:
    """`encoder_walk` of a sentence, with tt's one source rule (the same pieces as tt translate)."""
    from core.decode.source import prepare_source

    ids = prepare_source(loaded.tokenizer, text, loaded.cfg.max_len).ids
    if not ids:
        raise ValueError("the sentence is empty")
    return encoder_walk(loaded.model, ids, loaded.tokenizer.pieces(ids), positions=positions)


# ------------------------------------------------------------------------- contextual embeddings
def find_word(pieces: list[str], word: str) -> list[int]:
    """The piece positions that spell `word` (case-insensitive), elisions allowed: "animal" in "L'animal".

    Raises ValueError when the word is not in the sentence."""
    target = word.lower()
    for group in words(pieces):
        for k in range(len(group)):
            if "".join(pieces[i] for i in group[k:]).replace("\u2581", "").lower() == target:
                return group[k:]
        text = "".join(pieces[i] for i in group).replace("\u2581", "").lower()
        if text.replace("\u2019", "'").split("'")[-1] == target:  # the elided word shares a piece with l', qu'
            return group
    raise ValueError(f"{word!r} is not a word of this sentence ({' '.join(pieces)})")


def cosine(a: torch.Tensor, b: torch.Tensor) -> float:
    return float(F.cosine_similarity(a.double(), b.double(), dim=-1))


@dataclass
class WordContext:
    """One word in two sentences: the cosine of its vectors at each level, static first."""

    word: str
    first: str
    second: str
    levels: list[str]  # "embedding", "layer 1", ...
    similarity: list[float]  # per level; the static embedding gives 1.0 for the same pieces


def word_vectors(walk: EncoderWalk, word: str) -> torch.Tensor:
    """(n_layers + 1, d_model): the word's vector at each level, the mean over its pieces."""
    return walk.vectors()[:, find_word(walk.pieces, word)].mean(1)


def contextual_similarity(loaded, word: str, first: str, second: str) -> WordContext:
    """Does `word` keep one vector across the two sentences (static) or separate (contextual)?"""
    a, b = word_vectors(source_walk(loaded, first), word), word_vectors(source_walk(loaded, second), word)
    levels = ["embedding"] + [f"layer {i + 1}" for i in range(a.size(0) - 1)]
    return WordContext(word, first, second, levels, [cosine(a[i], b[i]) for i in range(a.size(0))])


# ----------------------------------------------------------------------------------- feed-forward
@dataclass
class FfnActivity:
    layer: int
    position: int
    piece: str
    d_ff: int
    firing: int  # units with max(0, x W1 + b1) > 0
    top: list[tuple[int, float]]  # the largest units (index, value), largest first
    input_norm: float  # ‖x‖ entering the FFN
    output_norm: float  # ‖FFN(x)‖


def ffn_activity(walk: EncoderWalk, layer: int, position: int, top: int = 5) -> FfnActivity:
    trace = walk.layers[layer]
    hidden = trace.ffn_hidden[position]  # (d_ff,)
    values, index = hidden.topk(min(top, hidden.numel()))
    return FfnActivity(
        layer,
        position,
        walk.pieces[position],
        hidden.numel(),
        int((hidden > 0).sum()),
        [(int(i), float(v)) for i, v in zip(index, values)],
        float(trace.ffn_norm.x[position].norm()),
        float(trace.ffn_norm.sublayer[position].norm()),
    )


@dataclass
class ParameterBreakdown:
    groups: dict[str, int]  # embeddings, positions, encoder self-attention, ..., feed-forward, layer norms
    total: int
    encoder_layer: dict[str, int]  # one encoder layer: attention, feed-forward, layer norms

    def share(self, group: str) -> float:
        return self.groups[group] / self.total


def _group(name: str) -> str:
    if "embed" in name or name.startswith("generator"):
        return "embeddings"  # with shared embeddings the generator is the same matrix, counted once
    if "_pos" in name:
        return "positions"
    if ".ffn." in name:
        return "feed-forward"
    if "norm" in name:
        return "layer norms"
    if name.startswith("encoder_layers") and ".self_attn." in name:
        return "encoder self-attention"
    if ".self_attn." in name:
        return "decoder self-attention"
    return "cross-attention"


def parameter_breakdown(model: Transformer) -> ParameterBreakdown:
    """Parameters by part of the model (named_parameters counts a shared matrix once)."""
    groups = dict.fromkeys(
        [
            "embeddings",
            "positions",
            "encoder self-attention",
            "decoder self-attention",
            "cross-attention",
            "feed-forward",
            "layer norms",
        ],
        0,
    )
    for name, p in model.named_parameters():
        groups[_group(name)] += p.numel()
    layer = model.encoder_layers[0]
    one = {
        "attention": sum(p.numel() for p in layer.self_attn.parameters()),
        "feed-forward": sum(p.numel() for p in layer.ffn.parameters()),
        "layer norms": sum(p.numel() for n, p in layer.named_parameters() if "norm" in n),
    }
    return ParameterBreakdown(groups, sum(groups.values()), one)


# ------------------------------------------------------------------------------ positional encoding
@dataclass
class PositionDots:
    """PE(p)·PE(p + k) for several p at each offset k: equal across p when it depends on k only."""

    offsets: list[int]
    dots: list[list[float]]  # per offset, one value per start position p
    spread: list[float]  # per offset, max − min over p

    @property
    def max_spread(self) -> float:
        return max(self.spread)


def position_table(model: Transformer, length: int) -> torch.Tensor:
    """(length, d_model): the position vectors the source side adds (sinusoidal or learned)."""
    return model.src_pos.positions(length).detach()


def position_dots(table: torch.Tensor, offsets=(0, 1, 2, 5, 10), starts=(0, 3, 10, 25, 50)) -> PositionDots:
    rows = []
    for k in offsets:
        rows.append([float(table[p].double() @ table[p + k].double()) for p in starts if p + k < table.size(0)])
    return PositionDots(list(offsets), rows, [max(r) - min(r) for r in rows])


def pe_by_hand(d_model: int, positions: int = 2) -> torch.Tensor:
    """The notes' small tables (d_model = 4 or 6) from the same function the model uses."""
    return sinusoidal_table(positions, d_model)


@dataclass
class EmbedPosition:
    position: int
    piece: str
    embedding: torch.Tensor  # (d_model,) table row × √d_model
    position_vector: torch.Tensor  # (d_model,)
    total: torch.Tensor  # (d_model,) what the first layer reads (before dropout, off in eval)
    embedding_norm: float
    position_norm: float


def embed_position(walk: EncoderWalk, position: int) -> EmbedPosition:
    e, p = walk.embeddings[position], walk.positions[position]
    return EmbedPosition(position, walk.pieces[position], e, p, e + p, float(e.norm()), float(p.norm()))


# --------------------------------------------------------------------------------- tensor shapes
def attention_shapes(a: AttentionInternals) -> list[tuple[str, tuple[int, ...]]]:
    """The shapes of one attention sub-layer, read off its live tensors: 1×T×d_model → h×T×d_k →
    weights h×T×S → concat → W^O. T queries, S keys (S = T for self-attention)."""
    b, h, t, d_k = a.q.shape
    return [
        ("x", (b, t, h * d_k)),
        ("Q = x W^Q, split into heads", tuple(a.q.shape)),
        ("K, V", tuple(a.k.shape)),
        ("Q Kᵀ / √d_k", tuple(a.scores.shape)),
        ("softmax → weights", tuple(a.weights.shape)),
        ("weights · V", tuple(a.heads.shape)),
        ("concat heads", (b, t, h * d_k)),
        ("· W^O", (b, t, h * d_k)),
    ]


def shape_strip(walk: EncoderWalk, layer: int = 0) -> list[tuple[str, tuple[int, ...]]]:
    """`attention_shapes` of one encoder self-attention of the walk."""
    return attention_shapes(walk.layers[layer].attention)


def unscaled_weights(internals: AttentionInternals) -> torch.Tensor:
    """softmax(Q Kᵀ) without the ÷√d_k, from the scores the model computed (masked keys stay at 0)."""
    d_k = internals.q.size(-1)
    return torch.nan_to_num((internals.scores * math.sqrt(d_k)).softmax(-1), nan=0.0)
