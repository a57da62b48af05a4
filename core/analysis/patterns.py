"""What each self-attention head does, measured over sentences: its pattern kind, reach and saturation.

For every head of the encoder's self-attention and the decoder's masked self-attention (teacher-forced
on references), averaged over real queries:

    previous / next / diagonal   the mass on key i−1, i+1, i (the query itself)
    same word                    on other pieces of the query's own word ("▁trav" "ers" "é")
    long range                   on keys at least LONG_RANGE pieces away
    parked                       on `</s>`, punctuation or the first piece (core.analysis.sinks)

each beside the share uniform attention over the same visible keys would give. A head is labelled
with the kind holding the most mass among those that pass the sinks' rule (at least PARK_SHARE of
the mass and PARK_RATIO × uniform), else "mixed". Also: the mean attention distance Σ w·|i − j|
against uniform's, the share of saturated rows (max weight ≥ SATURATED) with and without the
÷√d_k, and how different the heads of one layer are (mean total-variation distance of their rows).

`sentence_kinds` labels the heads of one decoded sentence from the weights its trace already holds
(a live decoding's steps or a saved trace): no model, so a replay shows the kinds too. Cross-attention
gets no kind: its keys are another sentence's pieces, so "the key before" or "the same word" relate
nothing, and its parking is what core.analysis.sinks measures.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from core.analysis.internals import unscaled_weights
from core.analysis.reference import encode_pairs, pair_batches
from core.analysis.sinks import PARK_RATIO, PARK_SHARE, is_punctuation
from core.decode.trace import BOS_PIECE, SourceTrace, StepTrace
from core.model.attention import Head
from core.model.config import BOS_ID, EOS_ID
from core.model.masks import subsequent_mask

KINDS = ("previous", "next", "diagonal", "same word", "long range", "parked")
MIXED = "mixed"  # the label of a head no kind passes for
# One character per kind, for views that mark heads in a grid (tt inspect's g, the lesson's text):
# arrows for where the key sits from the query, ≈ for a piece of its own word, ◇ for a parking head.
KIND_MARKS = {
    "previous": "←",
    "next": "→",
    "diagonal": "↘",
    "same word": "≈",
    "long range": "↔",
    "parked": "◇",
    MIXED: "·",
}
KIND_LEGEND = " ".join(f"{mark}{kind}" for kind, mark in KIND_MARKS.items())  # "←previous →next …"
LONG_RANGE = 4  # pieces apart
SATURATED = 0.99  # a row whose largest weight reaches this has a softmax with next to no gradient left
PATTERN_FAMILIES = ("encoder_self", "decoder_self")


@dataclass(frozen=True)
class HeadKind:
    """One head's kind on one sentence, and the shares it was read from."""

    kind: str  # one of KINDS, or MIXED
    shares: dict[str, float]  # kind -> the head's share of its mass on keys of that kind
    uniform: dict[str, float]  # kind -> the share under uniform attention over the visible keys


@dataclass
class HeadPattern:
    family: str
    layer: int
    head: int
    shares: dict[str, float]  # kind -> mean share of the head's mass
    uniform: dict[str, float]  # kind -> the share under uniform attention
    kind: str  # one of KINDS, or MIXED
    distance: float  # mean Σ_j w_ij |i − j|
    uniform_distance: float  # the same under uniform attention over the visible keys
    saturated_scaled: float  # share of rows with max weight ≥ SATURATED, softmax(QKᵀ/√d_k) as trained
    saturated_unscaled: float  # the same rows under softmax(QKᵀ), the division left out


@dataclass
class LayerPatterns:
    family: str
    layer: int
    head_difference: float  # mean over head pairs of the mean total-variation distance of their rows


@dataclass
class Patterns:
    heads: list[HeadPattern]
    layers: list[LayerPatterns]
    sentences: int
    queries: dict[str, int] = field(default_factory=dict)  # family -> real queries counted

    def head(self, family: str, layer: int, head: int) -> HeadPattern:
        return next(p for p in self.heads if (p.family, p.layer, p.head) == (family, layer, head))


def label(shares: dict[str, float], uniform: dict[str, float]) -> str:
    passing = [k for k in KINDS if shares[k] >= PARK_SHARE and shares[k] >= PARK_RATIO * uniform[k]]
    return max(passing, key=lambda k: shares[k]) if passing else MIXED


def word_ids(pieces: list[str]) -> list[int]:
    """A word number per piece: a new word at each ▁ piece; special pieces are words of their own."""
    out, n = [], -1
    for p in pieces:
        if p.startswith("\u2581") or p.startswith("<") or n < 0:
            n += 1
        out.append(n)
    return out


def _key_masks(tokens: torch.Tensor, pieces: list[list[str]]) -> dict:
    """Per kind, a (B, T_q, T_k) float mask of the keys of that kind for each query.

    tokens (B, T) padded; pieces: each row's real pieces (punctuation is read off them, as a trace
    without its tokenizer can)."""
    b, t = tokens.shape
    i = torch.arange(t)[:, None]
    j = torch.arange(t)[None, :]
    wid = torch.full((b, t), -1, dtype=torch.long)
    parked = tokens == EOS_ID  # (B, T)
    for r, ps in enumerate(pieces):
        wid[r, : len(ps)] = torch.tensor(word_ids(ps), dtype=torch.long)
        parked[r, : len(ps)] |= torch.tensor([is_punctuation(p) for p in ps], dtype=torch.bool)
    parked[:, 0] = True
    return {
        "previous": (j == i - 1).float().expand(b, t, t),
        "next": (j == i + 1).float().expand(b, t, t),
        "diagonal": (j == i).float().expand(b, t, t),
        "same word": ((wid[:, :, None] == wid[:, None, :]) & (j != i)).float(),
        "long range": ((i - j).abs() >= LONG_RANGE).float().expand(b, t, t),
        "parked": parked[:, None, :].float().expand(b, t, t),
    }


class _Sums:
    def __init__(self, h: int) -> None:
        self.shares = {k: torch.zeros(h, dtype=torch.float64) for k in KINDS}
        self.uniform = dict.fromkeys(KINDS, 0.0)
        self.distance = torch.zeros(h, dtype=torch.float64)
        self.uniform_distance = 0.0
        self.saturated = torch.zeros(h, dtype=torch.float64)
        self.saturated_unscaled = torch.zeros(h, dtype=torch.float64)
        self.rows = 0  # queries with at least two visible keys (saturation is only asked of those)
        self.tv = 0.0
        self.queries = 0

    def shares_of(self, head: int) -> tuple[dict[str, float], dict[str, float]]:
        """(the head's mean share per kind, uniform attention's) over the queries counted."""
        n = max(self.queries, 1)
        return {k: float(self.shares[k][head]) / n for k in KINDS}, {k: self.uniform[k] / n for k in KINDS}


@torch.inference_mode()
def head_patterns(loaded, pairs: Sequence[tuple[str, str]], *, max_tokens: int = 4000) -> Patterns:
    """Pattern shares, reach, saturation and head differences over (source, reference) pairs."""
    model, cfg, tok = loaded.model, loaded.cfg, loaded.tokenizer
    device = next(model.parameters()).device
    ids = encode_pairs(loaded, pairs)
    sums: dict[tuple[str, int], _Sums] = {}
    for batch in pair_batches(ids, cfg.pad_id, cfg.bos_id, max_tokens, device):
        enc = model.encode(batch.src, need_weights=True)
        dec = model.decode(batch.tgt_in, enc, need_weights=True, skip_generator=True)
        src, tgt = batch.src.cpu(), batch.tgt_in.cpu()
        src_real, tgt_real = src != cfg.pad_id, batch.tgt_out.cpu() != cfg.pad_id  # (B, S), (B, T)
        t = tgt.size(1)
        plans = [
            ("encoder_self", enc.attention, src, src_real, src_real[:, None, :].expand(-1, src.size(1), -1)),
            ("decoder_self", dec.self_attention, tgt, tgt_real, tgt_real[:, None, :] & subsequent_mask(t)[0, 0]),
        ]
        for family, layers, tokens, real, visible in plans:
            pieces = [tok.pieces(row[m].tolist()) for row, m in zip(tokens, real)]
            masks = _key_masks(tokens, pieces)
            for i, internals in enumerate(layers):
                _accumulate(sums.setdefault((family, i), _Sums(cfg.h)), internals, real, visible, masks)
    heads, layers = [], []
    for (family, i), s in sums.items():
        n = max(s.queries, 1)
        for h in range(cfg.h):
            shares, uniform = s.shares_of(h)
            heads.append(
                HeadPattern(
                    family,
                    i,
                    h,
                    shares,
                    uniform,
                    label(shares, uniform),
                    float(s.distance[h]) / n,
                    s.uniform_distance / n,
                    float(s.saturated[h]) / max(s.rows, 1),
                    float(s.saturated_unscaled[h]) / max(s.rows, 1),
                )
            )
        layers.append(LayerPatterns(family, i, s.tv / n))
    order = {f: k for k, f in enumerate(PATTERN_FAMILIES)}
    heads.sort(key=lambda p: (order[p.family], p.layer, p.head))
    layers.sort(key=lambda p: (order[p.family], p.layer))
    queries = {f: sums[(f, 0)].queries for f in PATTERN_FAMILIES if (f, 0) in sums}
    return Patterns(heads, layers, len(pairs), queries)


def _accumulate_kinds(s: _Sums, w: torch.Tensor, real: torch.Tensor, visible: torch.Tensor, masks: dict) -> None:
    """Add the kind shares and distances of weights w (B, h, T_q, T_k) over the real queries (B, T_q)."""
    q = real.float()  # (B, T_q) real queries
    vis = visible.float()  # (B, T_q, T_k)
    n_vis = vis.sum(-1).clamp(min=1)  # (B, T_q)
    for k in KINDS:
        s.shares[k] += ((w * masks[k][:, None]).sum(-1) * q[:, None]).sum((0, 2)).double()
        s.uniform[k] += float((((vis * masks[k]).sum(-1) / n_vis) * q).sum())
    t_q, t_k = w.shape[-2:]
    dist = (torch.arange(t_q)[:, None] - torch.arange(t_k)[None, :]).abs().float()  # (T_q, T_k)
    s.distance += ((w * dist).sum(-1) * q[:, None]).sum((0, 2)).double()
    s.uniform_distance += float((((vis * dist).sum(-1) / n_vis) * q).sum())
    s.queries += int(q.sum())


def _accumulate(s: _Sums, internals, real: torch.Tensor, visible: torch.Tensor, masks: dict) -> None:
    w = internals.weights.float().cpu()  # (B, h, T_q, T_k)
    _accumulate_kinds(s, w, real, visible, masks)
    q = real.float()  # (B, T_q)
    n_vis = visible.float().sum(-1)  # (B, T_q)
    t_q = w.size(-2)
    rows = q * (n_vis > 1).float()  # (B, T_q): one visible key is a sure thing, not saturation
    s.saturated += ((w.amax(-1) >= SATURATED).float() * rows[:, None]).sum((0, 2)).double()
    raw = unscaled_weights(internals).float().cpu()
    s.saturated_unscaled += ((raw.amax(-1) >= SATURATED).float() * rows[:, None]).sum((0, 2)).double()
    s.rows += int(rows.sum())
    h = w.size(1)
    if h > 1:
        tv = torch.zeros(w.shape[0], t_q)
        pairs = 0
        for a in range(h):
            for b in range(a + 1, h):
                tv += 0.5 * (w[:, a] - w[:, b]).abs().sum(-1)  # (B, T_q)
                pairs += 1
        s.tv += float((tv / pairs * q).sum())


def sentence_kinds(source: SourceTrace, steps: Sequence[StepTrace]) -> dict[Head, HeadKind]:
    """The kind of every self-attention head on one decoded sentence, from the weights it holds.

    Encoder self-attention from `source.encoder_self` (per layer (h, S, S)); the decoder's masked
    self-attention from the steps' rows (step t: per layer (h, t + 1) over BOS, y_0 … y_{t-1}),
    which stacked are the teacher-forced (h, T, T). The same shares and rule as `head_patterns`,
    over this one sentence's queries. A family whose weights the trace lacks gets no kinds.
    """
    plans = []
    if source.encoder_self:
        s = len(source.tokens)
        encoder = [w[None].float() for w in source.encoder_self]  # per layer (1, h, S, S)
        plans.append(("encoder_self", encoder, source.tokens, source.pieces, torch.ones(1, s, s, dtype=torch.bool)))
    if steps and steps[0].decoder_self:
        inputs = [BOS_ID, *(st.token for st in steps[:-1])]  # what the decoder was fed
        pieces = [BOS_PIECE, *(st.piece for st in steps[:-1])]
        plans.append(("decoder_self", _stacked_rows(steps), inputs, pieces, subsequent_mask(len(steps))[0]))
    kinds: dict[Head, HeadKind] = {}
    for family, layers, tokens, pieces, visible in plans:
        ids = torch.tensor([tokens])  # (1, T)
        real = torch.ones_like(ids, dtype=torch.bool)  # one sentence: every query is real
        masks = _key_masks(ids, [list(pieces)])
        for layer, w in enumerate(layers):
            sums = _Sums(w.size(1))
            _accumulate_kinds(sums, w, real, visible, masks)
            for h in range(w.size(1)):
                shares, uniform = sums.shares_of(h)
                kinds[Head(family, layer, h)] = HeadKind(label(shares, uniform), shares, uniform)
    return kinds


def _stacked_rows(steps: Sequence[StepTrace]) -> list[torch.Tensor]:
    """The steps' masked self-attention rows as one (1, h, T, T) per layer, 0 above the diagonal."""
    t = len(steps)
    layers = []
    for layer, first in enumerate(steps[0].decoder_self):
        w = torch.zeros(1, first.size(0), t, t)  # (1, h, T, T)
        for i, st in enumerate(steps):
            w[0, :, i, : i + 1] = st.decoder_self[layer]  # (h, i + 1)
        layers.append(w)
    return layers
