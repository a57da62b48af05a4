"""Training throughput: tt's Trainer against a plain torch.nn.Transformer recipe, in one run.

Both train the `small` shape (d_model 256, h 4, 3+3 layers, d_ff 1024, 8k joint vocabulary) on
the very same 4k-token batches, with Adam (0.9, 0.98, 1e-9) and label-smoothed cross-entropy, in
fp32 and under bf16 autocast. The two run in alternating blocks of steps, so a busy machine slows
both alike; the ratios are what to read, not the absolute numbers.

    python bench/bench_train.py                  # tatoeba from ../shared/data if present, else synthetic
    python bench/bench_train.py --steps 40 --device cuda
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.data.readers import collate  # noqa: E402
from core.device import autocast_context
from core.train.config import TrainConfig
from core.train.trainer import Trainer  # noqa: E402

TATOEBA = ROOT.parent / "shared" / "data" / "tatoeba-fra-eng" / "fra-eng.tsv"


def corpus(tmp: Path, pairs: int) -> tuple[Path, str]:
    """A TSV of `pairs` lines: the start of Tatoeba when present, else made-up sentences."""
    out = tmp / "bench.tsv"
    if TATOEBA.exists():
        lines = [line for line in TATOEBA.read_text(encoding="utf-8").splitlines() if line.count("\t") >= 1]
        # The file is sorted by length; a fixed random sample keeps the real spread of lengths.
        sample = random.Random(0).sample(lines, min(pairs, len(lines)))
        out.write_text("".join("\t".join(line.split("\t")[:2]) + "\n" for line in sample), encoding="utf-8")
        return out, f"tatoeba ({TATOEBA})"
    rng = random.Random(0)
    syllables = ["la", "le", "mi", "ro", "tu", "sa", "ne", "po", "ki", "da", "ve", "lo", "ma", "ri", "cu", "zo"]
    words = ["".join(rng.choices(syllables, k=rng.randint(1, 4))) for _ in range(6000)]
    text = []
    for _ in range(pairs):
        n = rng.randint(3, 25)
        fr = " ".join(rng.choices(words, k=n))
        en = " ".join(rng.choices(words, k=max(1, n + rng.randint(-3, 3))))
        text.append(f"{fr.capitalize()}.\t{en.capitalize()}.\n")
    out.write_text("".join(text), encoding="utf-8")
    return out, "synthetic"


class Reference(nn.Module):
    """The textbook recipe: nn.Embedding + sinusoids + nn.Transformer + a tied output layer."""

    def __init__(self, vocab: int, d_model: int = 256, h: int = 4, layers: int = 3, d_ff: int = 1024, dropout: float = 0.1):
        super().__init__()
        self.d_model = d_model
        self.embed = nn.Embedding(vocab, d_model, padding_idx=0)
        pos = torch.arange(512)[:, None] * torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        table = torch.zeros(512, d_model)
        table[:, 0::2], table[:, 1::2] = torch.sin(pos), torch.cos(pos)
        self.register_buffer("pos", table)
        self.drop = nn.Dropout(dropout)
        self.transformer = nn.Transformer(d_model, h, layers, layers, d_ff, dropout, batch_first=True)
        self.out = nn.Linear(d_model, vocab, bias=False)
        self.out.weight = self.embed.weight

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        def emb(x):
            return self.drop(self.embed(x) * self.d_model**0.5 + self.pos[: x.size(1)])  # (B, T, d_model)

        # Boolean like the padding masks (True = masked), so PyTorch need not convert and warn.
        causal = torch.ones(tgt.size(1), tgt.size(1), dtype=torch.bool, device=tgt.device).triu(1)
        y = self.transformer(
            emb(src), emb(tgt), tgt_mask=causal, tgt_is_causal=True,
            src_key_padding_mask=src == 0, tgt_key_padding_mask=tgt == 0, memory_key_padding_mask=src == 0,
        )
        return self.out(y)  # (B, T, vocab)


def reference_step(model, optimizer, batch, device, precision: str) -> int:
    src, tgt_in, tgt_out = (t.to(device) for t in batch)
    with autocast_context(device, precision):
        logits = model(src, tgt_in)
    loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)).float(), tgt_out.reshape(-1), ignore_index=0, label_smoothing=0.1, reduction="sum")
    n = int((tgt_out != 0).sum())
    (loss / n).backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    float(loss.detach())  # the Trainer reads its loss every step too
    return int((src != 0).sum()) + int((tgt_in != 0).sum())


def measure(trainer: Trainer, precision: str, steps: int, block: int, device: torch.device) -> tuple[float, float]:
    """(tt tokens/s, reference tokens/s) over the same batches, in alternating blocks."""
    trainer.cfg.precision = precision
    torch.manual_seed(0)
    ref = Reference(trainer.data.tokenizer.vocab_size).to(device)
    ref_opt = torch.optim.Adam(ref.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9)
    batches = trainer.batches_for_epoch(0)
    pad = trainer.model_cfg.pad_id
    times = {"tt": 0.0, "ref": 0.0}
    tokens = {"tt": 0, "ref": 0}
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    for warm in range(3):  # allocator and kernels warm, on both sides
        trainer.train_step(batches)
        reference_step(ref, ref_opt, collate([trainer.data.train[i] for i in batches[warm]], pad), device, precision)
    done = 0
    while done < steps:
        n = min(block, steps - done)
        first = trainer.batch_in_epoch % len(batches)
        chosen = [batches[(first + k) % len(batches)] for k in range(n)]
        sync()
        t0 = time.perf_counter()
        for _ in range(n):
            numbers, _ = trainer.train_step(batches)
            tokens["tt"] += numbers["tokens"]
        sync()
        t1 = time.perf_counter()
        for b in chosen:
            tokens["ref"] += reference_step(ref, ref_opt, collate([trainer.data.train[i] for i in b], pad), device, precision)
        sync()
        t2 = time.perf_counter()
        times["tt"] += t1 - t0
        times["ref"] += t2 - t1
        done += n
    return tokens["tt"] / times["tt"], tokens["ref"] / times["ref"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=24, help="timed steps per side and precision")
    parser.add_argument("--block", type=int, default=4, help="steps per alternating block")
    parser.add_argument("--pairs", type=int, default=20000)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=0, help="CPU threads (0 = torch's default)")
    parser.add_argument("--precisions", default="fp32,bf16")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    with tempfile.TemporaryDirectory() as tmp:
        data, source = corpus(Path(tmp), args.pairs)
        cfg = TrainConfig(
            data=[str(data)], out=str(Path(tmp) / "run"), preset="small", vocab_size=8000, max_tokens=4096,
            label_smoothing=0.1, warmup=4000, device=args.device, max_steps=1, valid_every=0, save_every=0,
        )
        trainer = Trainer(cfg)
        trainer.setup()
        trainer.model.train()
        print(f"data: {source}, {len(trainer.data.train)} pairs, vocab {trainer.data.tokenizer.vocab_size}; "
              f"device {trainer.device}, {torch.get_num_threads()} threads; {args.steps} timed steps per cell; "
              f"torch {torch.__version__}")
        rows = []
        for precision in args.precisions.split(","):
            rows.append((precision, *measure(trainer, precision, args.steps, args.block, trainer.device)))
    ref_fp32 = next((r for p, _, r in rows if p == "fp32"), None)
    print()
    print("| precision | tt tokens/s | torch.nn.Transformer tokens/s | tt / reference | tt / reference fp32 |")
    print("|---|---:|---:|---:|---:|")
    for precision, tt, ref in rows:
        vs32 = f"{tt / ref_fp32:.2f}×" if ref_fp32 else "-"
        print(f"| {precision} | {tt:,.0f} | {ref:,.0f} | {tt / ref:.2f}× | {vs32} |")


if __name__ == "__main__":
    main()
