"""A tt model as a CTranslate2 model, built with CTranslate2's Python spec API (bench-only).

tt is the paper's post-norm Transformer with sinusoidal positions and one embedding matrix shared
by source, target and output projection; CTranslate2's TransformerSpec describes exactly that, with
two things set by hand:
- the positional table: tt interleaves sin/cos (PE(pos, 2i) = sin, PE(pos, 2i+1) = cos, §3.5);
  CTranslate2's built-in table puts all the sines first, so tt's own table is given explicitly;
- the vocabulary: the SentencePiece pieces in id order, so piece i is token i on both sides.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch


def _np(t: torch.Tensor) -> np.ndarray:
    return t.detach().float().cpu().numpy().copy()


def _linear(spec, linear: torch.nn.Linear) -> None:
    spec.weight = _np(linear.weight)
    if linear.bias is not None:
        spec.bias = _np(linear.bias)


def _norm(spec, norm: torch.nn.LayerNorm) -> None:
    spec.gamma, spec.beta = _np(norm.weight), _np(norm.bias)


def _self_attention(spec, attn) -> None:
    # CTranslate2 fuses Q, K and V into one (3·d_model × d_model) projection; tt stacks K and V.
    spec.linear[0].weight = _np(torch.cat([attn.w_q.weight, attn.w_kv.weight]))
    spec.linear[0].bias = _np(torch.cat([attn.w_q.bias, attn.w_kv.bias]))
    _linear(spec.linear[1], attn.w_o)


def _cross_attention(spec, attn) -> None:
    _linear(spec.linear[0], attn.w_q)
    _linear(spec.linear[1], attn.w_kv)  # K then V, the order CTranslate2 splits them in
    _linear(spec.linear[2], attn.w_o)


def _ffn(spec, ffn, norm) -> None:
    _linear(spec.linear_0, ffn.w_1)
    _linear(spec.linear_1, ffn.w_2)
    _norm(spec.layer_norm, norm.norm)


def convert(loaded, out_dir: str | Path, quantization: str | None = None) -> Path:
    """Write `loaded` (a core.checkpoint.LoadedModel) as a CTranslate2 model directory."""
    from ctranslate2.specs import common_spec, transformer_spec

    model, cfg = loaded.model, loaded.cfg
    if cfg.norm != "post" or cfg.positional != "sinusoidal" or not cfg.share_embeddings:
        raise SystemExit("the converter covers post-norm, sinusoidal, shared-embedding models (tt's default)")
    spec = transformer_spec.TransformerSpec.from_config(
        (cfg.n_encoder_layers, cfg.n_decoder_layers), cfg.h, pre_norm=False, activation=common_spec.Activation.RELU
    )
    spec.config.layer_norm_epsilon = model.decoder_layers[0].ffn_norm.norm.eps  # torch's 1e-5, not CT2's 1e-6
    table = _np(model.src_pos.table)  # (max_len, d_model), interleaved sin/cos
    embeddings = _np(model.src_embed.table.weight)  # (vocab, d_model), shared
    for stack in (spec.encoder, spec.decoder):
        emb = stack.embeddings[0] if isinstance(stack.embeddings, list) else stack.embeddings
        emb.weight = embeddings
        stack.scale_embeddings = True  # × √d_model (§3.4), as tt's Embeddings
        stack.position_encodings.encodings = table
    for layer_spec, layer in zip(spec.encoder.layer, model.encoder_layers):
        _self_attention(layer_spec.self_attention, layer.self_attn)
        _norm(layer_spec.self_attention.layer_norm, layer.self_attn_norm.norm)
        _ffn(layer_spec.ffn, layer.ffn, layer.ffn_norm)
    for layer_spec, layer in zip(spec.decoder.layer, model.decoder_layers):
        _self_attention(layer_spec.self_attention, layer.self_attn)
        _norm(layer_spec.self_attention.layer_norm, layer.self_attn_norm.norm)
        _cross_attention(layer_spec.attention, layer.cross_attn)
        _norm(layer_spec.attention.layer_norm, layer.cross_attn_norm.norm)
        _ffn(layer_spec.ffn, layer.ffn, layer.ffn_norm)
    spec.decoder.projection.weight = embeddings  # the tied output projection, no bias
    vocabulary = loaded.tokenizer.pieces(range(cfg.vocab_size))
    spec.register_source_vocabulary(vocabulary)
    spec.register_target_vocabulary(vocabulary)
    spec.config.bos_token, spec.config.eos_token, spec.config.unk_token = (
        vocabulary[cfg.bos_id],
        vocabulary[cfg.eos_id],
        vocabulary[cfg.unk_id],
    )
    spec.config.decoder_start_token = vocabulary[cfg.bos_id]
    spec.validate()
    if quantization:
        spec.optimize(quantization=quantization)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    spec.save(str(out_dir))
    return out_dir
