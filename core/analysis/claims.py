"""The notes' checkable claims, run on a live model: each with its figure and a verdict.

Every function returns a `Claim`: what the notes say (and where), the figure measured, a verdict —
"holds", "does not hold" or "depends" — and one line saying why. The thresholds are named constants
beside each claim so a reader can disagree with them in one place. This module holds the claims
read off the model's weights and activations; the timed ones are in core.analysis.timing, the
held-out quality ones in core.analysis.quality. `all_claims` runs the set; `tt analyze claims` and
scripts/claims.py print it.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

import torch

from core.analysis.internals import (
    contextual_similarity,
    encoder_walk,
    find_word,
    parameter_breakdown,
    position_dots,
    position_table,
    source_walk,
)
from core.analysis.patterns import Patterns, head_patterns
from core.analysis.quality import beam_beats_greedy, bleu_by_length, quality_by_length, translate_all
from core.analysis.timing import attention_quadratic, cpu_name, multihead_cost
from core.analysis.verdict import DEPENDS, FAILS, HOLDS, VERDICTS, Claim, slope
from core.model.attention import Head, layer_head

__all__ = [
    "DEPENDS",
    "FAILS",
    "HOLDS",
    "VERDICTS",
    "Claim",
    "all_claims",
    "attention_distance",
    "attention_quadratic",
    "beam_beats_greedy",
    "bleu_by_length",
    "cpu_name",
    "disambiguates",
    "ffn_share",
    "heads_differ",
    "il_attends_animal",
    "multihead_cost",
    "permutation_error",
    "positions_matter",
    "quality_by_length",
    "random_dot_variance",
    "real_head_variance",
    "slope",
    "sqrt_dk_saturation",
    "translate_all",
    "variance_grows",
]

SATURATION_GAP = 0.2  # unscaled minus scaled saturated-row share for "√d_k prevents saturation"
VARIANCE_SLOPE = (0.9, 1.1)  # log Var(q·k) against log d_k: linear growth means a slope near 1
HEADS_DIFFER = 0.25  # mean total-variation distance between the heads of a layer
PERMUTATION_TOL = 1e-4  # max |f(πx) − π f(x)| that still counts as equivariant (float error)

# The notes' sentences, and sense pairs for the disambiguation claim: (word, same sense, same sense, other sense).
ANIMAL = "L'animal n'a pas traversé la rue parce qu'il était fatigué."
SENSES = (
    ("livre", "J'ai lu un livre hier soir.", "Il a acheté un livre de poche.", "Le prix est d'une livre sterling."),
    ("vol", "Notre vol part à midi.", "Le vol pour Paris est annulé.", "Le vol de la voiture a été signalé."),
    ("avocat", "Mon avocat parle au juge.", "Son avocat a gagné le procès.", "J'ai mangé un avocat bien mûr."),
)
PROBES = (
    "Je suis étudiant.",
    "Il fait froid ce matin.",
    "Le chat dort sur le canapé.",
    "Nous avons visité le musée avec nos enfants.",
    ANIMAL,
    "L'accord sur la zone économique européenne a été signé en août 1992.",
)


def _pairs(sources: Sequence[str], references: Sequence[str] | None) -> list[tuple[str, str]]:
    # Self-attention patterns of the decoder need a target; without references the source stands in
    # (the encoder figures do not read it).
    return list(zip(sources, references if references is not None else sources))


# ------------------------------------------------------------------------------- √d_k and variance
def sqrt_dk_saturation(patterns: Patterns) -> Claim:
    enc = [p for p in patterns.heads if p.family == "encoder_self"]
    scaled = statistics.fmean(p.saturated_scaled for p in enc)
    unscaled = statistics.fmean(p.saturated_unscaled for p in enc)
    verdict = HOLDS if unscaled - scaled >= SATURATION_GAP else DEPENDS if unscaled > scaled else FAILS
    return Claim(
        "sqrt_dk_saturation",
        "dividing by √d_k keeps the softmax out of its saturated regions",
        "000, 001 (Scaled Dot-Product Attention)",
        f"encoder rows with a weight ≥ 0.99: {scaled:.1%} as trained, {unscaled:.1%} without ÷√d_k",
        verdict,
        f"the same scores without the division saturate {unscaled - scaled:+.1%} more rows",
        {
            "saturated_scaled": scaled,
            "saturated_unscaled": unscaled,
            "per_head": {str(Head(p.family, p.layer, p.head)): [p.saturated_scaled, p.saturated_unscaled] for p in enc},
        },
    )


def random_dot_variance(
    dims: Sequence[int] = (4, 16, 64, 256, 1024), n: int = 20000, seed: int = 0
) -> dict[int, float]:
    """Var(q·k) of q, k with independent N(0, 1) components, per dimension."""
    g = torch.Generator().manual_seed(seed)
    out = {}
    for d in dims:
        q, k = torch.randn(n, d, generator=g, dtype=torch.float64), torch.randn(n, d, generator=g, dtype=torch.float64)
        out[d] = float((q * k).sum(-1).var())
    return out


@torch.inference_mode()
def real_head_variance(loaded, sources: Sequence[str]) -> list[dict]:
    """Per encoder head: Var(q·k) of its raw scores, and d_k · Var(q_i) · Var(k_i), the independent-units prediction."""
    out = {}
    for text in sources:
        walk = source_walk(loaded, text)
        for i, layer in enumerate(walk.layers):
            a = layer.attention
            for h in range(a.q.size(1)):
                q, k = a.q[0, h].double(), a.k[0, h].double()  # (S, d_k)
                acc = out.setdefault((i, h), {"dots": [], "q": [], "k": []})
                acc["dots"].append((q @ k.T).flatten())
                acc["q"].append(q.flatten())
                acc["k"].append(k.flatten())
    d_k = loaded.cfg.d_k
    rows = []
    for (i, h), acc in sorted(out.items()):
        dots, q, k = torch.cat(acc["dots"]), torch.cat(acc["q"]), torch.cat(acc["k"])
        rows.append(
            {
                **Head("encoder_self", i, h).shown(),  # layer and head counted from 1, as tt shows them
                "var_dot": float(dots.var()),
                "predicted": d_k * float(q.var()) * float(k.var()),
                "var_scaled": float(dots.var()) / d_k,
            }
        )
    return rows


def variance_grows(loaded, sources: Sequence[str] = PROBES) -> Claim:
    rand = random_dot_variance()
    s = slope(list(rand), list(rand.values()))
    heads = real_head_variance(loaded, sources)
    ratios = [r["var_dot"] / r["predicted"] for r in heads]
    lo, hi = VARIANCE_SLOPE
    verdict = HOLDS if lo <= s <= hi else FAILS
    return Claim(
        "variance_grows",
        "Var(q·k) grows linearly with d_k, and ÷√d_k brings it back to Var(x)",
        "001 (Why scale by √d_k)",
        f"random unit-variance vectors: Var(q·k) ∝ d_k^{s:.2f} ({', '.join(f'{d}: {v:.0f}' for d, v in rand.items())}); "
        f"real heads (d_k = {loaded.cfg.d_k}): Var(q·k) / (d_k·Var q·Var k) from {min(ratios):.2f} to {max(ratios):.2f}",
        verdict,
        "holds for independent components; learned q and k are correlated, so real heads sit off the prediction",
        {"random": {str(d): v for d, v in rand.items()}, "slope": s, "heads": heads},
    )


# ----------------------------------------------------------------------------------------- heads
def heads_differ(patterns: Patterns) -> Claim:
    diffs = {f"{p.family} {layer_head(p.layer)}": p.head_difference for p in patterns.layers}
    low = min(diffs.values()) if diffs else 0.0
    high = max(diffs.values()) if diffs else 0.0
    verdict = HOLDS if low >= HEADS_DIFFER else DEPENDS if high >= HEADS_DIFFER else FAILS
    kinds = sorted({p.kind for p in patterns.heads})
    return Claim(
        "heads_differ",
        "the heads of a layer learn different things",
        "001 (Multi-head attention)",
        f"mean total-variation distance between heads of a layer: {low:.2f} to {high:.2f}; kinds seen: {', '.join(kinds)}",
        verdict,
        f"a distance of {HEADS_DIFFER} means a quarter of the mass sits on different keys",
        {"per_layer": diffs, "kinds": {str(Head(p.family, p.layer, p.head)): p.kind for p in patterns.heads}},
    )


def attention_distance(patterns: Patterns) -> Claim:
    enc = [p for p in patterns.heads if p.family == "encoder_self"]
    farther = [p for p in enc if p.distance >= p.uniform_distance]
    verdict = HOLDS if len(farther) * 2 > len(enc) else DEPENDS if farther else FAILS
    mean = statistics.fmean(p.distance for p in enc)
    uniform = statistics.fmean(p.uniform_distance for p in enc)
    return Claim(
        "attention_distance",
        "self-attention relates every word to every other, however far apart",
        "001 (Why Transformers: long-range dependencies)",
        f"encoder mean attention distance {mean:.2f} pieces vs {uniform:.2f} for uniform; "
        f"{len(farther)}/{len(enc)} heads reach at least as far as uniform",
        verdict,
        "every word can attend anywhere, but most learned heads look closer than uniform attention would",
        {str(Head(p.family, p.layer, p.head)): [p.distance, p.uniform_distance] for p in enc},
    )


@torch.inference_mode()
def il_attends_animal(
    loaded, sentence: str = ANIMAL, pronoun: str = "il", antecedent: str = "animal", other: str = "rue"
) -> Claim:
    walk = source_walk(loaded, sentence)
    q, a, o = find_word(walk.pieces, pronoun), find_word(walk.pieces, antecedent), find_word(walk.pieces, other)
    table = {}
    for i, layer in enumerate(walk.layers):
        w = layer.attention.weights[0][:, q].mean(1)  # (h, S): the pronoun's pieces' rows, averaged
        for h in range(w.size(0)):
            table[str(Head("encoder_self", i, h))] = [float(w[h, a].sum()), float(w[h, o].sum())]
    best = max(table, key=lambda k: table[k][0])
    winners = [k for k, (x, y) in table.items() if x > y]
    uniform = len(a) / len(walk.ids)
    on_it, on_other = table[best]
    # favouring the antecedent without beating an even share is weak evidence (the lesson's rule, core/learn/steps.py)
    verdict = (HOLDS if on_it > uniform else DEPENDS) if on_it > on_other else FAILS
    if verdict == HOLDS and len(winners) * 2 <= len(table):
        verdict = DEPENDS
    return Claim(
        "il_attends_animal",
        f'"{pronoun}" attends to "{antecedent}" (coreference)',
        "001 (The animal didn't cross the street…)",
        f"best head {best}: {table[best][0]:.2f} on {antecedent!r} vs {table[best][1]:.2f} on {other!r} "
        f"(uniform {uniform:.2f}); {len(winners)}/{len(table)} heads favour {antecedent!r}",
        verdict,
        (
            "depends: one head may link them while most do not, or favours the antecedent below an even share"
            if verdict == DEPENDS
            else "read off the encoder heads"
        ),
        {"heads": table, "best": best, "uniform": uniform},  # keys: "encoder_self L1H2", counted from 1
    )


def disambiguates(loaded, senses=SENSES) -> Claim:
    rows, ok = {}, 0
    for word, same1, same2, other in senses:
        same = contextual_similarity(loaded, word, same1, same2).similarity
        diff = contextual_similarity(loaded, word, same1, other).similarity
        rows[word] = {"same_sense": same, "other_sense": diff}
        ok += diff[-1] < same[-1]
    verdict = HOLDS if ok == len(senses) else DEPENDS if ok else FAILS
    static = min(min(r["same_sense"][0], r["other_sense"][0]) for r in rows.values())
    figure = "; ".join(
        f"{w}: same sense {r['same_sense'][-1]:.2f}, other sense {r['other_sense'][-1]:.2f}" for w, r in rows.items()
    )
    return Claim(
        "disambiguates",
        "self-attention turns one static vector into context-dependent ones (bank / river / money)",
        "000, 001 (Contextual embeddings)",
        f"cosine of the word's vectors at the last encoder layer (static embeddings: {static:.2f}): {figure}",
        verdict,
        f"{ok}/{len(senses)} words sit closer to the same sense than to the other",
        rows,
    )


# ---------------------------------------------------------------------------------------- positions
@torch.inference_mode()
def permutation_error(model, ids: list[int], *, positions: bool, seed: int = 0) -> float:
    """max |encoder(π x) − π encoder(x)| for a random permutation π of the source pieces."""
    g = torch.Generator().manual_seed(seed)
    perm = torch.randperm(len(ids), generator=g)
    while len(ids) > 1 and bool((perm == torch.arange(len(ids))).all()):
        perm = torch.randperm(len(ids), generator=g)
    plain = encoder_walk(model, ids, positions=positions).memory
    shuffled = encoder_walk(model, [ids[i] for i in perm.tolist()], positions=positions).memory
    return float((shuffled - plain[perm]).abs().max())


def positions_matter(loaded, sentence: str = PROBES[3]) -> Claim:
    walk = source_walk(loaded, sentence)
    without = permutation_error(loaded.model, walk.ids, positions=False)
    with_pe = permutation_error(loaded.model, walk.ids, positions=True)
    dots = position_dots(position_table(loaded.model, min(loaded.cfg.max_len, 64)))
    verdict = HOLDS if without <= PERMUTATION_TOL < with_pe else FAILS
    return Claim(
        "positions_matter",
        "without positional encoding self-attention cannot tell word orders apart",
        "000, 001 (Positional encoding)",
        f"encoder without positions: shuffled input gives the shuffled output (max error {without:.1e}); "
        f"with positions: {with_pe:.2f}; PE(p)·PE(p+k) varies with p by at most {dots.max_spread:.1e}",
        verdict,
        "without positions the encoder is permutation-equivariant: word order is invisible to it",
        {"error_without": without, "error_with": with_pe, "pe_dot_spread": dots.spread, "offsets": dots.offsets},
    )


# ---------------------------------------------------------------------------------------- parameters
def ffn_share(model) -> Claim:
    b = parameter_breakdown(model)
    whole = b.share("feed-forward")
    layers = b.total - b.groups["embeddings"] - b.groups["positions"]
    no_emb = b.groups["feed-forward"] / layers
    enc = b.encoder_layer["feed-forward"] / sum(b.encoder_layer.values())
    verdict = HOLDS if min(whole, no_emb) >= 0.6 else DEPENDS if enc >= 0.6 else FAILS
    return Claim(
        "ffn_share",
        "the feed-forward networks hold two thirds of the parameters",
        "001 (FFN as key-value memories)",
        f"FFN share: {enc:.1%} of an encoder layer, {no_emb:.1%} of all layers, {whole:.1%} of the model with embeddings",
        verdict,
        "two thirds is one encoder layer (d_ff = 4·d_model); decoder layers have two attentions and embeddings add more",
        {"groups": b.groups, "total": b.total, "encoder_layer": b.encoder_layer},
    )


# ------------------------------------------------------------------------------------------ all
def all_claims(
    loaded,
    pairs: Sequence[tuple[str, str]] = (),
    *,
    set_name: str = "held-out",
    probes: Sequence[str] = PROBES,
    timing: bool = True,
) -> list[Claim]:
    """Every claim. `pairs` (source, reference) feed the quality claims (skipped when empty) and the head
    patterns (with `probes` when empty)."""
    pattern_pairs = list(pairs)[:300] or _pairs(probes, None)
    patterns = head_patterns(loaded, pattern_pairs)
    claims = [
        sqrt_dk_saturation(patterns),
        variance_grows(loaded, probes),
        heads_differ(patterns),
        attention_distance(patterns),
        il_attends_animal(loaded),
        disambiguates(loaded),
        positions_matter(loaded),
        ffn_share(loaded.model),
    ]
    if timing:
        claims += [multihead_cost(loaded.cfg.d_model, loaded.cfg.h), attention_quadratic(loaded.model)]
    if pairs:
        sources = [s for s, _ in pairs]
        beam_out = translate_all(loaded, sources, beam=4)
        greedy_out = translate_all(loaded, sources, beam=1)
        claims += [
            quality_by_length(pairs, beam_out, set_name),
            beam_beats_greedy(pairs, beam_out, greedy_out, set_name),
        ]
    return claims
