"""Beam search's finished hypotheses reranked with the model of the other direction (`tt translate --rerank`).

A translation y of x is scored by the direct model, log p(y | x), and also by the channel model, the model of the
reverse direction: log p(x | y), how well y explains the source back (the channel term of noisy-channel
reranking, Yee et al. 2019, without its language model). A hypothesis that drops or invents content explains the
source worse, whatever its own fluency. The beam's best RERANK_TOP finished hypotheses are ranked by

    (log p(y | x) + λ · log p(x | y)) / lp(y),    lp(y) = ((5 + |y|) / 6)^α

(|y| the pieces scored, EOS included: beam search's own length penalty, so λ = 0 is beam search's order). λ = 0.15
was chosen on newstest2013 (docs/model.md, *Session 20*): every dev and test set of both
shipped directions gains 0.1–1.0 BLEU.
"""

from __future__ import annotations

from dataclasses import replace

import torch

from core.checkpoint import LoadedModel
from core.decode.search import Hypothesis, pad_batch
from core.errors import ConfigError

# The beam's best this many finished hypotheses are reranked (more when --n-best asks): the channel's cost is a
# whole forward pass per hypothesis, and the 4th and later (beam 4 finishes 4.5 a sentence) added at most 0.1 BLEU on
# the eight dev and test sets, and lost as much elsewhere (docs/model.md, Session 20).
RERANK_TOP = 3
# Rows of the channel model's teacher-forced pass at once: its (rows, T, vocab) log-probabilities stay small.
SCORE_ROWS = 64


def with_reverse(loaded: LoadedModel) -> LoadedModel:
    """`loaded` with the shipped model of the reverse direction beside it (`loaded.reverse`), on its device, as
    the channel model of --rerank. ConfigError where no such model is shipped."""
    if loaded.reverse is not None:
        return loaded
    from core.card import model_languages
    from core.checkpoint import load_model, shipped_models

    source, target = model_languages(loaded.path)
    reverse = shipped_models().get((target, source))
    if reverse is None:
        raise ConfigError(f"--rerank needs a shipped {target}→{source} model (the reverse of {loaded.path})")
    device = next(loaded.model.parameters()).device
    return replace(loaded, reverse=load_model(reverse, device=device, packed=device.type == "cpu"))


@torch.inference_mode()
def channel_logprobs(reverse: LoadedModel, pairs: list[tuple[str, str]]) -> list[float]:
    """log p(source | output) under the reverse model for each (source, output) text pair (EOS included, as in
    training), computed SCORE_ROWS pairs at a time, in order of length (little padding)."""
    tok, cfg = reverse.tokenizer, reverse.cfg
    room = cfg.max_len - 1
    device = next(reverse.model.parameters()).device
    inputs = [tok.encode(output)[:room] + [cfg.eos_id] for _, output in pairs]
    targets = [tok.encode(source)[:room] + [cfg.eos_id] for source, _ in pairs]
    order = sorted(range(len(pairs)), key=lambda i: (len(targets[i]), len(inputs[i])))
    scores = [0.0] * len(pairs)
    for start in range(0, len(order), SCORE_ROWS):
        rows = order[start : start + SCORE_ROWS]
        src = pad_batch([inputs[i] for i in rows], cfg.pad_id, device)  # (K, S)
        tgt_in = pad_batch([[cfg.bos_id] + targets[i][:-1] for i in rows], cfg.pad_id, device)  # (K, T)
        gold = pad_batch([targets[i] for i in rows], cfg.pad_id, device)  # (K, T)
        logprobs = reverse.model(src, tgt_in).float().log_softmax(-1)  # (K, T, vocab)
        picked = logprobs.gather(2, gold.unsqueeze(2)).squeeze(2)  # (K, T)
        sums = picked.masked_fill(gold == cfg.pad_id, 0.0).sum(1)  # (K,): the padding scores nothing
        for i, value in zip(rows, sums.tolist()):
            scores[i] = value
    return scores


def rerank(
    found: list[list[Hypothesis]],
    sources: list[str],
    outputs: list[list[str]],
    reverse: LoadedModel,
    alpha: float,
    weight: float,
) -> list[list[Hypothesis]]:
    """Each source's `found` hypotheses (a beam's finished ones; `outputs` their texts) best first by the score
    above; each keeps its own pieces and log-probabilities, its `score` the one it was ranked by. The channel
    model scores every hypothesis of the batch in one go."""
    pairs = [(source, text) for source, texts in zip(sources, outputs) for text in texts]
    channel = iter(channel_logprobs(reverse, pairs))
    ranked = []
    for hyps in found:
        scored = []
        for h in hyps:
            penalty = ((5 + len(h.token_logprobs)) / 6) ** alpha
            scored.append(Hypothesis(h.tokens, h.token_logprobs, (h.logprob + weight * next(channel)) / penalty))
        ranked.append(sorted(scored, key=lambda h: -h.score))
    return ranked
