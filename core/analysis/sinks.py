"""Attention-sink diagnostics: which heads park their attention instead of reading.

A head that has nothing to look for still has to put its softmax mass somewhere (Eq. 1 sums to
1), and trained Transformers learn to park it on a few fixed keys: the end-of-sentence piece,
punctuation, or the first position (Clark et al. 2019 on BERT's [SEP]; Xiao et al. 2023 on
"attention sinks"). For every head of every family we measure the share of its mass on

    eos    the source's `</s>` (encoder self and cross; the decoder never sees `</s>` as a key),
    punct  pieces that are punctuation only (`.`, `,`, `?`, `'`, ...),
    first  the first key (the first source piece; `<s>` for the decoder's masked self-attention),

averaged over a file's sentences (each sentence weighs the same; inside it, each real query).
Each share comes with the share uniform attention over the same visible keys would give, because
"40% on `</s>`" means little in a 3-piece sentence and much in a 20-piece one.

A head *parks* on a category when at least `PARK_SHARE` (half) of its mass goes there and that is
at least `PARK_RATIO` (3) times the uniform share: both, so that the first key of the decoder's
self-attention (the only key at step 0) or `</s>` in a two-piece source do not count by themselves.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from core.analysis.reference import encode_pairs, pair_batches
from core.checkpoint import LoadedModel
from core.model.attention import FAMILIES, Head
from core.model.masks import subsequent_mask

PARK_SHARE = 0.5
PARK_RATIO = 3.0
CATEGORIES = ("eos", "punct", "first")


@dataclass
class HeadSink:
    family: str  # encoder_self, decoder_self or cross
    layer: int
    head: int
    share: dict[str, float]  # category -> mean share of the head's attention mass
    uniform: dict[str, float]  # category -> the share under uniform attention over the visible keys
    parks_on: list[str] = field(default_factory=list)  # categories the head parks on (see the module doc)

    @property
    def at(self) -> Head:
        """Which head this is (its `shown()` numbering is what `tt analyze heads --json` prints)."""
        return Head(self.family, self.layer, self.head)


def is_punctuation(piece: str) -> bool:
    """A piece made only of punctuation (the ▁ word-start mark aside)."""
    text = piece.replace("\u2581", "")
    return bool(text) and all(unicodedata.category(ch).startswith("P") for ch in text)


def parks_on(share: dict[str, float], uniform: dict[str, float]) -> list[str]:
    """The categories a head parks on: at least PARK_SHARE of its mass, and PARK_RATIO × uniform."""
    return [c for c in CATEGORIES if share[c] >= PARK_SHARE and share[c] >= PARK_RATIO * uniform[c]]


def _key_categories(tokens: torch.Tensor, punct_ids: torch.Tensor, eos_id: int) -> dict[str, torch.Tensor]:
    """Per category, a (B, T_k) 0/1 float mask of the keys that belong to it."""
    first = torch.zeros_like(tokens, dtype=torch.float)
    first[:, 0] = 1.0
    return {
        "eos": (tokens == eos_id).float(),
        "punct": torch.isin(tokens, punct_ids).float(),
        "first": first,
    }


def _shares(w: torch.Tensor, visible: torch.Tensor, queries: torch.Tensor, cats: dict[str, torch.Tensor]):
    """Per category: (B, h) mean share of mass per sentence, and (B,) the uniform share.

    w (B, h, T_q, T_k); visible (B, T_q, T_k) bool, keys each query may see; queries (B, T_q) bool.
    """
    q = queries.float()  # (B, T_q)
    n_q = q.sum(-1).clamp(min=1)  # (B,)
    vis = visible.float()  # (B, T_q, T_k)
    out = {}
    for name, keys in cats.items():
        share = (w * keys[:, None, None, :]).sum(-1)  # (B, h, T_q)
        per_head = (share * q[:, None, :]).sum(-1) / n_q[:, None]  # (B, h)
        uniform = (vis * keys[:, None, :]).sum(-1) / vis.sum(-1).clamp(min=1)  # (B, T_q)
        out[name] = (per_head, (uniform * q).sum(-1) / n_q)
    return out


@torch.inference_mode()
def head_sinks(loaded: LoadedModel, pairs: Sequence[tuple[str, str]], *, max_tokens: int = 4000) -> list[HeadSink]:
    """Sink shares of every head (encoder self, decoder self, cross × layer × head), teacher-forced
    on the (source, target) pairs; the target is usually a reference or the model's own output."""
    model, cfg, tok = loaded.model, loaded.cfg, loaded.tokenizer
    device = next(model.parameters()).device
    punct_ids = torch.tensor(
        [i for i in range(cfg.vocab_size) if is_punctuation(tok.pieces([i])[0])], dtype=torch.long, device=device
    )
    sums: dict[tuple[str, int], dict[str, torch.Tensor]] = {}  # (family, layer) -> category -> (h,)
    uniform_sums: dict[tuple[str, int], dict[str, float]] = {}
    n = 0
    for batch in pair_batches(encode_pairs(loaded, pairs), cfg.pad_id, cfg.bos_id, max_tokens, device):
        enc = model.encode(batch.src, need_weights=True)
        dec = model.decode(batch.tgt_in, enc, need_weights=True, skip_generator=True)
        src_real = batch.src != cfg.pad_id  # (B, S)
        tgt_real = batch.tgt_out != cfg.pad_id  # (B, T): BOS..last-but-one real, as tgt_in
        t = batch.tgt_in.size(1)
        causal = subsequent_mask(t, device=device)[0, 0]  # (T, T)
        src_cats = _key_categories(batch.src, punct_ids, cfg.eos_id)
        tgt_cats = _key_categories(batch.tgt_in, punct_ids, cfg.eos_id)
        tgt_cats["eos"] = tgt_cats["eos"] * 0  # BOS + reference[:-1]: never an EOS
        plans = [
            ("encoder_self", enc.attention, src_real[:, None, :].expand(-1, src_real.size(1), -1), src_real, src_cats),
            ("decoder_self", dec.self_attention, tgt_real[:, None, :] & causal, tgt_real, tgt_cats),
            ("cross", dec.cross_attention, src_real[:, None, :].expand(-1, t, -1), tgt_real, src_cats),
        ]
        for family, layers, visible, queries, cats in plans:
            for i, internals in enumerate(layers):
                for name, (per_head, uniform) in _shares(internals.weights.float(), visible, queries, cats).items():
                    acc = sums.setdefault((family, i), {})
                    acc[name] = acc.get(name, 0) + per_head.sum(0)
                    u = uniform_sums.setdefault((family, i), {})
                    u[name] = u.get(name, 0.0) + float(uniform.sum())
        n += batch.src.size(0)
    out = []
    for (family, i), acc in sums.items():
        for head in range(cfg.h):
            share = {c: float(acc[c][head]) / n for c in CATEGORIES}
            uniform = {c: uniform_sums[(family, i)][c] / n for c in CATEGORIES}
            out.append(HeadSink(family, i, head, share, uniform, parks_on(share, uniform)))
    order = {f: k for k, f in enumerate(FAMILIES)}
    return sorted(out, key=lambda s: (order[s.family], s.layer, s.head))
