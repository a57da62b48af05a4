"""The notes' quality claims on a held-out set: BLEU by sentence length, beam search against greedy."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from core.analysis.verdict import DEPENDS, FAILS, HOLDS, Claim


@torch.inference_mode()
def translate_all(loaded, sources: Sequence[str], *, beam: int, batch_size: int = 32) -> list[str]:
    """Translations of `sources`: greedy (beam = 1) or beam search with the paper's α = 0.6."""
    from core.decode.beam import beam_search
    from core.decode.search import greedy, pad_batch
    from core.decode.source import prepare_source

    model, tok, cfg = loaded.model, loaded.tokenizer, loaded.cfg
    device = next(model.parameters()).device
    ids = [prepare_source(tok, s, cfg.max_len).ids or [cfg.eos_id] for s in sources]
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    out = [""] * len(ids)
    for start in range(0, len(order), batch_size):
        rows = order[start : start + batch_size]
        src = pad_batch([ids[i] for i in rows], cfg.pad_id, device)  # (B, S)
        hyps = greedy(model, src) if beam == 1 else [h[0] for h in beam_search(model, src, beam_size=beam)]
        for i, hyp in zip(rows, hyps):
            out[i] = tok.decode(hyp.tokens)
    return out


LENGTH_BUCKETS = ((1, 5), (6, 10), (11, 15), (16, 25), (26, 1000))  # source words, inclusive


def bleu_by_length(pairs: Sequence[tuple[str, str]], hypotheses: Sequence[str], buckets=LENGTH_BUCKETS) -> list[dict]:
    from core.evaluate import corpus_scores

    rows = []
    for lo, hi in buckets:
        idx = [i for i, (s, _) in enumerate(pairs) if lo <= len(s.split()) <= hi]
        if idx:
            bleu = corpus_scores([hypotheses[i] for i in idx], [[pairs[i][1] for i in idx]]).bleu
            rows.append({"words": f"{lo}-{hi}" if hi < 1000 else f"{lo}+", "sentences": len(idx), "bleu": bleu})
    return rows


def quality_by_length(pairs: Sequence[tuple[str, str]], beam_out: Sequence[str], name: str) -> Claim:
    rows = bleu_by_length(pairs, beam_out)
    big = [r for r in rows if r["sentences"] >= 20] or rows
    falls = len(big) >= 2 and big[-1]["bleu"] < big[0]["bleu"]
    monotone = all(a["bleu"] >= b["bleu"] for a, b in zip(big, big[1:]))
    verdict = HOLDS if falls and monotone else DEPENDS if falls else FAILS
    return Claim(
        "quality_by_length",
        "translation quality falls as sentences get longer",
        "000 (Sentence length ↑ → score ↓)",
        f"{name}, BLEU by source words: "
        + ", ".join(f"{r['words']}: {r['bleu']:.1f} (n={r['sentences']})" for r in rows),
        verdict,
        "buckets of at least 20 sentences compared, shortest against longest" + ("" if monotone else "; not monotone"),
        {"set": name, "buckets": rows},
    )


def beam_beats_greedy(
    pairs: Sequence[tuple[str, str]], beam_out: Sequence[str], greedy_out: Sequence[str], name: str
) -> Claim:
    from core.evaluate import corpus_scores

    refs = [[r for _, r in pairs]]
    b, g = corpus_scores(list(beam_out), refs).bleu, corpus_scores(list(greedy_out), refs).bleu
    changed = sum(x != y for x, y in zip(beam_out, greedy_out))
    verdict = HOLDS if b > g else FAILS
    return Claim(
        "beam_beats_greedy",
        "beam search finds better translations than greedy decoding",
        "001 (Decoding)",
        f"{name}: beam 4 (α 0.6) {b:.1f} BLEU, greedy {g:.1f}; {changed}/{len(pairs)} outputs differ",
        verdict,
        "corpus BLEU (sacreBLEU) on the same sentences",
        {"set": name, "beam": b, "greedy": g, "changed": changed, "sentences": len(pairs)},
    )
