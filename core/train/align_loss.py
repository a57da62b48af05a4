"""Guided alignment (Garg et al. 2019, "Jointly Learning to Align and Translate with Transformer
Models", §4.2): a loss that pulls one cross-attention head toward given word links.

For every target piece that has links, the gold distribution spreads evenly over the source pieces
of the source words its word links to; the loss is the cross-entropy between that distribution and
the head's attention row (the row that predicts the piece, as the `plain` alignment rule reads it):

    L_align = -1/|rows with links| · Σ_t Σ_s g_t(s) · log a_t(s)

The links file holds one Pharaoh line ("i-j …", 0-based source word i, target word j; words =
whitespace tokens) per training pair as tt reads them: the --data sources in order, before the
held-out split (scripts/silver_links.py writes such a file). An empty line = no links for that pair.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch

from core.data.readers import Example
from core.errors import ConfigError, DataError
from core.train.prepare import read_pairs

Key = tuple[tuple[int, ...], tuple[int, ...]]  # (source ids, target ids) without EOS / BOS


def parse_links(line: str, n_src: int, n_tgt: int, where: str) -> list[tuple[int, int]]:
    links = []
    for item in line.split():
        i, sep, j = item.partition("-")
        if not sep or not i.isdigit() or not j.isdigit():
            raise DataError(f"{where}: expected Pharaoh links 'i-j', got {item!r}")
        if int(i) >= n_src or int(j) >= n_tgt:
            raise DataError(f"{where}: link {item} is outside the pair ({n_src} source, {n_tgt} target words)")
        links.append((int(i), int(j)))
    return links


class GuidedAlignment:
    """The links of the training pairs at piece level, and the loss for one (layer, head)."""

    def __init__(
        self,
        table: dict[Key, list[tuple[int, int]]],
        layer: int,
        head: int,
        skipped: int = 0,
        full_context: bool = False,
    ) -> None:
        self.table = table  # piece-level links: (target piece position, source piece position)
        self.layer, self.head, self.skipped = layer, head, skipped
        self.full_context = full_context

    @classmethod
    def build(cls, cfg, tokenizer, n_layers: int, h: int) -> GuidedAlignment:
        from core.align.links import word_pieces

        # cfg holds indices; the messages count from 1, as --align-layer and --align-head do
        if not -n_layers <= cfg.align_layer < n_layers:
            shown = cfg.align_layer + 1 if cfg.align_layer >= 0 else cfg.align_layer
            raise ConfigError(f"--align-layer {shown}: the model has {n_layers} decoder layers (1..{n_layers})")
        if not 0 <= cfg.align_head < h:
            raise ConfigError(f"--align-head {cfg.align_head + 1}: the model has {h} heads (1..{h})")
        path = Path(cfg.align_links)
        try:
            lines = path.read_text(encoding="utf-8").split("\n")
        except (OSError, UnicodeDecodeError) as exc:
            raise DataError(f"{path}: cannot read the alignment links ({exc})") from None
        if lines and lines[-1] == "":
            lines.pop()
        pairs = read_pairs(cfg, cfg.data)
        if len(lines) != len(pairs):
            raise DataError(
                f"{path} has {len(lines)} lines but the training data has {len(pairs)} pairs; they must be line-aligned"
            )
        table: dict[Key, list[tuple[int, int]]] = {}
        skipped = 0
        for lineno, (line, pair) in enumerate(zip(lines, pairs), start=1):
            if not line.strip():
                continue
            (s_ids, s_groups), (t_ids, t_groups) = (
                word_pieces(tokenizer, pair.src.split()),
                word_pieces(tokenizer, pair.tgt.split()),
            )
            links = parse_links(line, len(s_groups), len(t_groups), f"{path}:{lineno}")
            if s_ids != tokenizer.encode(pair.src) or t_ids != tokenizer.encode(pair.tgt):
                skipped += 1  # the words' pieces are not the line's (rare normalisation effects): no guidance
                continue
            table[(tuple(s_ids), tuple(t_ids))] = [
                (tp, sp) for i, j in links for tp in t_groups[j] for sp in s_groups[i]
            ]
        return cls(table, cfg.align_layer, cfg.align_head, skipped, cfg.align_full_context)

    def links(self, e: Example) -> list[tuple[int, int]]:
        """(target piece, source piece) links of one example; a joined one (--concat) has its parts' links, moved."""
        if not e.parts:
            return self.table.get((tuple(e.src[:-1]), tuple(e.tgt[1:-1])), [])
        out, s_off, t_off = [], 0, 0
        for part in e.parts:
            out += [(t + t_off, s + s_off) for t, s in self.links(part)]
            s_off, t_off = s_off + len(part.src) - 1, t_off + len(part.tgt) - 2
        return out

    def targets(self, batch: Sequence[Example], shape: tuple[int, int, int]) -> torch.Tensor:
        """(B, T, S) gold distributions; all-zero rows where a piece has no link."""
        g = torch.zeros(shape)
        for b, e in enumerate(batch):
            for t, s in self.links(e):
                if t < shape[1] and s < shape[2]:
                    g[b, t, s] = 1.0
        return g / g.sum(-1, keepdim=True).clamp_min(1.0)

    def forward(self, model, src: torch.Tensor, tgt_in: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Teacher-forced logits (B, T, vocab) and the guided head's cross-attention (B, T, S).

        full_context: the logits come from the usual masked pass, the attention from a second pass over
        the same memory without the look-ahead mask (Garg et al. §4.3): the translation loss keeps
        training the model as it translates, the alignment loss a head that has seen the whole target."""
        enc = model.encode(src)
        if self.full_context:
            logits = model.decode(tgt_in, enc).logits
            dec = model.decode(tgt_in, enc, need_weights=True, full_context=True, skip_generator=True)  # attention only
        else:
            dec = model.decode(tgt_in, enc, need_weights=True)
            logits = dec.logits
        return logits, dec.cross_attention[self.layer].weights[:, self.head]  # (B, h, T, S) -> (B, T, S)

    def loss(self, attention: torch.Tensor, batch: Sequence[Example]) -> tuple[torch.Tensor, int]:
        """(summed cross-entropy over rows with links, number of such rows)."""
        g = self.targets(batch, tuple(attention.shape)).to(attention.device)  # (B, T, S)
        rows = g.sum(-1) > 0  # (B, T)
        ce = -(g * attention.float().clamp_min(1e-9).log()).sum(-1)  # (B, T)
        return ce[rows].sum(), int(rows.sum())
