"""The building blocks around attention: embeddings, positions, feed-forward, Add & Norm (§3.3–3.5)."""

from __future__ import annotations

import math

import torch
from torch import nn


def sinusoidal_table(max_len: int, d_model: int) -> torch.Tensor:
    """PE(pos, 2i) = sin(pos / 10000^(2i/d_model)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d_model)).

    Returns (max_len, d_model). Works for odd d_model too (the last cos column is dropped).
    """
    position = torch.arange(max_len, dtype=torch.float64)[:, None]  # (max_len, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (ceil(d_model/2),)
    angle = position / torch.pow(10000.0, two_i / d_model)  # (max_len, ceil(d_model/2))
    table = torch.zeros(max_len, d_model, dtype=torch.float64)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle[:, : d_model // 2])
    return table.float()


class Embeddings(nn.Module):
    """Token embeddings multiplied by √d_model (§3.4), so they are not drowned by the positions."""

    def __init__(self, vocab_size: int, d_model: int, pad_id: int) -> None:
        super().__init__()
        self.table = nn.Embedding(vocab_size, d_model, padding_idx=pad_id)
        self.scale = math.sqrt(d_model)
        nn.init.normal_(self.table.weight, mean=0.0, std=d_model**-0.5)
        with torch.no_grad():
            self.table.weight[pad_id].zero_()

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.table(tokens) * self.scale  # (B, T, d_model)


class PositionalEncoding(nn.Module):
    """Adds position vectors to the embeddings, then dropout (§3.5, §5.4).

    Sinusoidal (a fixed buffer, not saved in checkpoints) or learned (a trained table).
    """

    def __init__(self, d_model: int, max_len: int, dropout: float, kind: str = "sinusoidal") -> None:
        super().__init__()
        self.kind = kind
        if kind == "learned":
            self.learned = nn.Parameter(torch.randn(max_len, d_model) * 0.02)
        else:
            self.register_buffer("table", sinusoidal_table(max_len, d_model), persistent=False)
        self.dropout = nn.Dropout(dropout)
        self.max_len = max_len

    def positions(self, length: int, offset: int = 0) -> torch.Tensor:
        table = self.learned if self.kind == "learned" else self.table
        return table[offset : offset + length]  # (T, d_model)

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        return self.dropout(x + self.positions(x.size(1), offset))


class FeedForward(nn.Module):
    """FFN(x) = max(0, x W1 + b1) W2 + b2, applied to each position separately (Eq. 2)."""

    def __init__(self, d_model: int, d_ff: int, dropout: float) -> None:
        super().__init__()
        self.w_1 = nn.Linear(d_model, d_ff)
        self.w_2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w_2(self.dropout(torch.relu(self.w_1(x))))


class AddNorm(nn.Module):
    """The residual connection around a sub-layer, with its LayerNorm.

    post (the paper): LayerNorm(x + Dropout(Sublayer(x)));
    pre (common since): x + Dropout(Sublayer(LayerNorm(x))), with a final LayerNorm on the stack.
    """

    def __init__(self, d_model: int, dropout: float, norm: str = "post") -> None:
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)
        self.pre = norm == "pre"

    def sublayer_input(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x) if self.pre else x

    def forward(self, x: torch.Tensor, sublayer_output: torch.Tensor) -> torch.Tensor:
        y = x + self.dropout(sublayer_output)
        return y if self.pre else self.norm(y)
