"""The live numbers of the steps for the topics the notes name without a worked example: pieces, cost,
residuals and the norms, dropout, the whole model, the generation loop, the optimiser and its learning-rate
curve, BLEU. Each reads the loaded model (and its card.json, when it has one); nothing is typed in.
"""

from __future__ import annotations

import dataclasses
import json

import torch

from core.analysis.internals import parameter_breakdown, source_walk
from core.analysis.timing import encoder_layer_macs
from core.decode.search import pad_batch

Lines = list[tuple[str, str]]
SPARK = "▁▂▃▄▅▆▇█"


def _source(loaded, text: str) -> torch.Tensor:
    return torch.tensor([source_walk(loaded, text).ids])  # (1, S)


def pieces(loaded, text: str) -> Lines:
    """The sentence's pieces: ▁ marks a piece that starts a word; rare words split into several pieces."""
    walk = source_walk(loaded, text)
    words: list[list[str]] = []
    for p in walk.pieces:
        if p.startswith("▁") or not words or p in ("</s>",):
            words.append([p])
        else:
            words[-1].append(p)
    split = [" ".join(w) for w in words if len(w) > 1]
    text_back = "".join(p for p in walk.pieces if p != "</s>").replace("▁", " ").strip()
    return [
        ("pieces", " ".join(walk.pieces)),
        ("ids", " ".join(map(str, walk.ids))),
        ("words in more than one piece", " · ".join(split) or "none"),
        ("pieces joined, ▁ → space", text_back),
        ("vocabulary", f"{loaded.cfg.vocab_size:,} pieces (SentencePiece, shared by French and English)"),
    ]


@torch.inference_mode()
def cost(loaded, text: str) -> Lines:
    """This sentence's encoder layer 1, counted: the N² products against the linear ones; the path length."""
    n = _source(loaded, text).size(1)
    cfg = loaded.cfg
    layer_macs = encoder_layer_macs(cfg, n)
    quadratic = 2 * cfg.h * n * n * cfg.d_k  # Q Kᵀ and the weights times V, as counted in the layer
    return [
        ("N (source pieces)", str(n)),
        ("encoder layer 1, multiply-adds (counted)", f"{layer_macs:,}"),
        ("of which Q Kᵀ and weights·V (N² terms)", f"{quadratic:,} ({quadratic / layer_macs:.1%})"),
        ("attention matrix per layer", f"{cfg.h} × {n} × {n} = {cfg.h * n * n:,} weights"),
        ("N² part matches the linear part at", f"N = 2·d_model + d_ff = {2 * cfg.d_model + cfg.d_ff:,}"),
        ("path from the first piece to the last", f"1 attention step here; an RNN takes {n - 1}"),
    ]


@torch.inference_mode()
def residual_norm(loaded, text: str, other: str = "Nous avons visité le musée avec nos enfants.") -> Lines:
    """The residual carries most of the signal; layer norm keeps a sentence's numbers its own, batch norm would not."""
    walk = source_walk(loaded, text)
    lines = []
    for i, layer in enumerate(walk.layers):
        t = layer.attention_norm
        ratio = float(t.sublayer[1:].norm(dim=-1).mean() / t.x[1:].norm(dim=-1).mean())
        lines.append((f"layer {i + 1}: ‖Sublayer(x)‖ / ‖x‖", f"{ratio:.2f}"))
    model, cfg = loaded.model, loaded.cfg
    ids = [walk.ids, source_walk(loaded, other).ids]
    alone = model.encode(torch.tensor([ids[0]])).memory[0]  # (S, d)
    batched = model.encode(pad_batch(ids, cfg.pad_id)).memory[0, : len(ids[0])]
    lines.append(
        ("memory alone vs beside another sentence", f"max difference {float((alone - batched).abs().max()):.1e}")
    )
    # Batch norm of the same layer-1 sums: each feature by the mean and variance over every piece of the batch.
    totals = [walk.layers[0].attention_norm.total, source_walk(loaded, other).layers[0].attention_norm.total]
    own = totals[0]
    both = torch.cat(totals)

    def bn(rows: torch.Tensor) -> torch.Tensor:
        return (own - rows.mean(0)) / rows.var(0, unbiased=False).add(1e-5).sqrt()

    lines.append(("batch norm of the same sums would move by", f"max {float((bn(own) - bn(both)).abs().max()):.2f}"))
    return lines


def _teacher_forced_logprob(model, src: torch.Tensor, out: list[int]) -> float:
    cfg = model.cfg
    tgt = torch.tensor([[cfg.bos_id] + out])
    logits = model.decode(tgt, model.encode(src)).logits[0].log_softmax(-1)  # (T, V)
    return float(logits.gather(-1, torch.tensor(out + [cfg.eos_id])[:, None]).sum())


def dropout(loaded, text: str, p: float = 0.1, draws: int = 3) -> Lines:
    """The model's translation scored with dropout off (inference) and on (training), three draws each."""
    from core.decode.search import greedy
    from core.model.transformer import Transformer

    src = _source(loaded, text)
    with torch.inference_mode():
        out = greedy(loaded.model, src)[0].tokens
        off = [_teacher_forced_logprob(loaded.model, src, out) for _ in range(draws)]
    noisy = Transformer(dataclasses.replace(loaded.cfg, dropout=p)).to(next(loaded.model.parameters()).dtype)
    noisy.load_state_dict(loaded.model.state_dict())
    noisy.train()
    with torch.random.fork_rng(), torch.no_grad():
        torch.manual_seed(0)
        on = [_teacher_forced_logprob(noisy, src, out) for _ in range(draws)]
        x = noisy.src_pos(noisy.src_embed(src))
    trained = _card(loaded).get("model_overrides", {}).get("dropout")
    return [
        ("log p(translation), dropout off", " · ".join(f"{v:.3f}" for v in off)),
        (f"log p(translation), dropout p = {p} on", " · ".join(f"{v:.3f}" for v in on)),
        ("share of layer 1's input set to 0", f"{float((x == 0).float().mean()):.1%} (p = {p:.0%})"),
        ("this model's last run", "dropout " + (f"{trained}" if trained is not None else "as its preset (card)")),
    ]


def whole(loaded, text: str) -> Lines:
    """The live model's tensors from the sentence to the next piece's probabilities, and its parameters."""
    from core.decode.search import greedy

    src = _source(loaded, text)
    cfg = loaded.cfg
    with torch.inference_mode():
        enc = loaded.model.encode(src)
        out = greedy(loaded.model, src)[0].tokens
        dec = loaded.model.decode(torch.tensor([[cfg.bos_id] + out]), enc)
    s, t = src.size(1), len(out) + 1
    b = parameter_breakdown(loaded.model)
    return [
        ("source ids → E·√d_model + PE", f"{s} → {s} × {cfg.d_model}"),
        (f"{cfg.n_encoder_layers} encoder layers → memory", " × ".join(map(str, enc.memory.shape[1:]))),
        ("<s> + output → E·√d_model + PE", f"{t} × {cfg.d_model}"),
        (f"{cfg.n_decoder_layers} decoder layers (cross reads the memory)", f"{t} × {cfg.d_model}"),
        ("linear + softmax → next-piece distributions", " × ".join(map(str, dec.logits.shape[1:]))),
        ("parameters", ", ".join(f"{k} {v:,}" for k, v in b.groups.items()) + f"; total {b.total:,}"),
    ]


@torch.inference_mode()
def generation(loaded, text: str, limit: int = 40) -> Lines:
    """The whole loop, one piece at a time: feed <s> and the pieces so far, read the next-piece distribution,
    take the most probable, stop at </s>. Each step names the three attentions' strongest link."""
    model, cfg, tok = loaded.model, loaded.cfg, loaded.tokenizer
    walk = source_walk(loaded, text)
    src = torch.tensor([walk.ids])
    enc = model.encode(src, need_weights=True)
    self_enc = enc.attention[-1].weights[0].mean(0)  # (S, S): last encoder layer, heads averaged
    lines = [("encoder, once", f"{len(walk.ids)} pieces → memory; e.g. {_strongest(walk.pieces, self_enc, 1)}")]
    out: list[int] = []
    for _ in range(limit):
        dec = model.decode(torch.tensor([[cfg.bos_id] + out]), enc, need_weights=True)
        probs = dec.logits[0, -1].softmax(-1)  # (V,): the next piece's distribution
        top = probs.topk(3)
        chosen = int(top.indices[0])
        shown = ", ".join(f"{tok.pieces([int(i)])[0]} {float(p):.2f}" for p, i in zip(top.values, top.indices))
        so_far = ["<s>"] + tok.pieces(out)
        cross = dec.cross_attention[-1].weights[0].mean(0)[-1]  # (S,) last layer, heads averaged, newest query
        self_w = dec.self_attention[-1].weights[0].mean(0)[-1]  # (T,)
        lines.append(
            (
                f"step {len(out) + 1}, after {so_far[-1]}",
                f"{shown} · reads {walk.pieces[int(cross.argmax())]} · looks back at {so_far[int(self_w.argmax())]}",
            )
        )
        if chosen == cfg.eos_id:
            break
        out.append(chosen)
    return lines + [("output", tok.decode(out))]


def _strongest(pieces: list[str], w: torch.Tensor, row: int) -> str:
    return f"{pieces[row]} → {pieces[int(w[row].argmax())]} ({float(w[row].max()):.2f})"


def _card(loaded) -> dict:
    """The train config of the run that made these weights (the last fine-tune when there was one), or {}."""
    path = loaded.path / "card.json"
    if not path.is_file():
        return {}
    card = json.loads(path.read_text(encoding="utf-8"))
    run = card.get("fine_tune") or card
    return {**run.get("train_config", {}), "train_steps": run.get("train_steps", card.get("train_steps"))}


def lr_curve(d_model: int, warmup: int, scale: float, steps: int, points: int = 24) -> list[tuple[int, float]]:
    from core.train.trainer import noam_lr

    at = sorted({max(1, round(steps * i / (points - 1))) for i in range(points)} | {warmup})
    return [(s, noam_lr(s, d_model, warmup, scale)) for s in at if s <= steps]


def optimizer(loaded, *_sentences: str) -> Lines:
    """Adam as tt trains, and the learning rate of the run that made these weights, read from its card (the
    step's sentences play no part)."""
    from core.train.trainer import ADAM_BETAS, ADAM_EPS

    run = _card(loaded)
    lines = [("Adam (core.train.trainer)", f"β1 {ADAM_BETAS[0]}, β2 {ADAM_BETAS[1]}, ε {ADAM_EPS:g}")]
    if not run.get("warmup") or not run.get("train_steps"):
        return lines + [("learning rate", "no card.json with a train config beside this model")]
    curve = lr_curve(loaded.cfg.d_model, run["warmup"], run.get("lr_scale", 1.0), run["train_steps"])
    top = max(v for _, v in curve)
    spark = "".join(SPARK[min(len(SPARK) - 1, int(v / top * len(SPARK)))] for _, v in curve)
    peak = max(curve, key=lambda sv: sv[1])
    return lines + [
        (
            "this model's run (card.json)",
            f"{run['train_steps']:,} steps, warm-up {run['warmup']}, scale {run['lr_scale']}",
        ),
        ("learning rate, step 1 → last", spark),
        ("peak", f"{peak[1]:.6f} at step {peak[0]:,} (the end of warm-up)"),
        ("first, last", f"{curve[0][1]:.2e}, {curve[-1][1]:.2e}"),
    ]


def bleu(loaded, src: str, ref: str) -> Lines:
    """BLEU of the model's translation of the sentence against its reference."""
    from sacrebleu.metrics import BLEU

    from core.analysis.quality import translate_all

    hyp = translate_all(loaded, [src], beam=4)[0]
    score = BLEU(effective_order=True).sentence_score(hyp, [ref])
    lines = [
        ("translation", hyp),
        ("reference", ref),
        ("1- to 4-gram precisions", ", ".join(f"{p:.1f}" for p in score.precisions) + " %"),
        ("brevity penalty", f"{score.bp:.3f}"),
        ("sentence BLEU", f"{score.score:.1f}"),
    ]
    path = loaded.path / "card.json"
    if path.is_file():
        tests = json.loads(path.read_text(encoding="utf-8")).get("test_sets", {})
        lines += [
            (f"this model on {name} (card)", f"BLEU {t['bleu']} over {t['sentences']:,}") for name, t in tests.items()
        ]
    return lines
