"""Attention masks as standalone functions. Convention: a bool tensor, True where a query MAY attend.

Every mask broadcasts against attention scores of shape (B, h, T_q, T_k).
"""

from __future__ import annotations

import torch


def padding_mask(tokens: torch.Tensor, pad_id: int) -> torch.Tensor:
    """Hide padded keys. tokens (B, T) -> (B, 1, 1, T): True for real tokens."""
    return (tokens != pad_id)[:, None, None, :]  # (B, 1, 1, T)


def subsequent_mask(size: int, *, offset: int = 0, device: torch.device | str | None = None) -> torch.Tensor:
    """The look-ahead mask: position i may attend to positions j <= i, never to the future.

    `offset` is the number of earlier positions already in a key/value cache, so that `size` new
    queries at positions offset..offset+size-1 see all cached keys plus their own past.
    Returns (1, 1, size, offset + size).
    """
    queries = torch.arange(offset, offset + size, device=device)[:, None]  # (size, 1)
    keys = torch.arange(offset + size, device=device)[None, :]  # (1, offset+size)
    return (keys <= queries)[None, None]  # (1, 1, size, offset+size)


def combine(*masks: torch.Tensor | None) -> torch.Tensor | None:
    """Logical AND of masks (None means 'no mask'); the result broadcasts over all of them."""
    out = None
    for mask in masks:
        if mask is not None:
            out = mask if out is None else out & mask
    return out


def decoder_mask(tgt: torch.Tensor, pad_id: int) -> torch.Tensor:
    """Padding + look-ahead, the mask of the decoder's masked self-attention. (B, T) -> (B, 1, T, T)."""
    return combine(padding_mask(tgt, pad_id), subsequent_mask(tgt.size(1), device=tgt.device))
