"""Decoding over the key/value cache: batched greedy search."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from core.model import Transformer


@dataclass
class Hypothesis:
    tokens: list[int]  # output piece ids, without BOS/EOS
    token_logprobs: list[float]  # log p of each chosen token (EOS's last, when it was produced)
    score: float  # sum of token log-probabilities (including EOS)


def pad_batch(seqs: list[list[int]], pad_id: int, device: torch.device | str = "cpu") -> torch.Tensor:
    out = torch.full((len(seqs), max(len(s) for s in seqs)), pad_id, dtype=torch.long)
    for i, s in enumerate(seqs):
        out[i, : len(s)] = torch.tensor(s, dtype=torch.long)
    return out.to(device)


@torch.inference_mode()
def greedy(model: Transformer, src: torch.Tensor, *, max_len: int | None = None, extra_len: int = 50) -> list[Hypothesis]:
    """Pick the most probable piece at every step, for a batch of sources (B, S) at once.

    Finished rows are dropped from the batch (and the cache) as they emit EOS, so the work
    shrinks with the batch. max_len defaults to source length + `extra_len` (within the model's).
    """
    cfg = model.cfg
    b = src.size(0)
    src_lens = (src != cfg.pad_id).sum(1)
    limit = (src_lens + extra_len).clamp(max=cfg.max_len - 1) if max_len is None else torch.full_like(src_lens, min(max_len, cfg.max_len - 1))
    enc = model.encode(src)
    state = model.start_state(enc)
    alive = torch.arange(b, device=src.device)  # original row of each live batch row
    tokens: list[list[int]] = [[] for _ in range(b)]
    logps: list[list[float]] = [[] for _ in range(b)]
    step_input = torch.full((b, 1), cfg.bos_id, dtype=torch.long, device=src.device)
    for step in range(int(limit.max())):
        logits = model.decode(step_input, enc, state=state).logits[:, -1]  # (b_alive, vocab)
        logprobs = logits.float().log_softmax(-1)
        best_lp, best = logprobs.max(-1)  # (b_alive,)
        best_list, lp_list, rows = best.tolist(), best_lp.tolist(), alive.tolist()
        keep = []
        for j, row in enumerate(rows):
            logps[row].append(lp_list[j])
            if best_list[j] == cfg.eos_id:
                continue
            tokens[row].append(best_list[j])
            if step + 1 < int(limit[row]):
                keep.append(j)
        if not keep:
            break
        if len(keep) < len(rows):
            index = torch.tensor(keep, device=src.device)
            alive = alive.index_select(0, index)
            enc = enc.select(index)
            state.select(index)
            best = best.index_select(0, index)
        step_input = best[:, None]
    return [Hypothesis(tokens[i], logps[i], sum(logps[i])) for i in range(b)]
