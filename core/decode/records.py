"""Records of decoding that a process without torch reads too (a warm `tt translate` reading a server's
answer builds the same ones)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Alternative:
    """One hypothesis of a sentence's n-best list."""

    text: str
    token_ids: list[int]
    pieces: list[str]
    token_logprobs: list[float]
    score: float
