"""Training throughput: tt's Trainer against a plain torch.nn.Transformer recipe, in one run.

Both train the `small` shape (d_model 256, h 4, 3+3 layers, d_ff 1024, 8k joint vocabulary) on
the very same 4k-token batches, with Adam (0.9, 0.98, 1e-9) and label-smoothed cross-entropy, in
fp32 and under bf16 autocast. All four cells (tt and the reference, fp32 and bf16) take turns in
rounds of a few steps on the same batches, so every ratio, the headline "tt bf16 / reference fp32"
included, compares numbers taken at the same time; a busy machine slows all cells alike. Each ratio
comes with a 95 % interval over the rounds, and a target is "met" or "not met" only when the
interval says so, else "not shown". The ratios are what to read, not the absolute numbers.

    python bench/bench_train.py                  # tatoeba from ../shared/data if present, else synthetic
    python bench/bench_train.py --steps 40 --device cuda
"""

from __future__ import annotations

import argparse
import math
import os
import random
import statistics
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

TATOEBA = Path(os.environ.get("TT_SHARED_DATA", ROOT.parent / "shared" / "data")) / "tatoeba-fra-eng" / "fra-eng.tsv"


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

    def __init__(
        self, vocab: int, d_model: int = 256, h: int = 4, layers: int = 3, d_ff: int = 1024, dropout: float = 0.1
    ):
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
            emb(src),
            emb(tgt),
            tgt_mask=causal,
            tgt_is_causal=True,
            src_key_padding_mask=src == 0,
            tgt_key_padding_mask=tgt == 0,
            memory_key_padding_mask=src == 0,
        )
        return self.out(y)  # (B, T, vocab)


def reference_step(model, optimizer, batch, device, precision: str) -> int:
    src, tgt_in, tgt_out = (t.to(device) for t in batch)
    with autocast_context(device, precision):
        logits = model(src, tgt_in)
    loss = F.cross_entropy(
        logits.reshape(-1, logits.size(-1)).float(),
        tgt_out.reshape(-1),
        ignore_index=0,
        label_smoothing=0.1,
        reduction="sum",
    )
    n = int((tgt_out != 0).sum())
    (loss / n).backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    float(loss.detach())  # the Trainer reads its loss every step too
    return int((src != 0).sum()) + int((tgt_in != 0).sum())


# Two-sided 95 % Student t quantiles by degrees of freedom (no scipy); 2.09 (df 20's) beyond, a bit wide.
T95 = [
    12.71,
    4.30,
    3.18,
    2.78,
    2.57,
    2.45,
    2.36,
    2.31,
    2.26,
    2.23,
    2.20,
    2.18,
    2.16,
    2.14,
    2.13,
    2.12,
    2.11,
    2.10,
    2.09,
    2.09,
]


def ratio_interval(num: list[float], den: list[float]) -> tuple[float, float, float]:
    """(ratio, 95 % interval low, high) from per-round tokens/s: the geometric mean of the per-round
    ratios, with Student's t on their logs. Each round's ratio saw the same machine state on both sides."""
    logs = [math.log(a / b) for a, b in zip(num, den)]
    mean = statistics.fmean(logs)
    if len(logs) < 2:
        return math.exp(mean), 0.0, math.inf
    t = T95[min(len(logs) - 1, len(T95)) - 1]
    half = t * statistics.stdev(logs) / math.sqrt(len(logs))
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half)


def measure(trainer: Trainer, precisions: list[str], steps: int, block: int, device: torch.device) -> dict:
    """Per-round tokens/s of every (side, precision) cell, all cells taking turns on the same batches.

    A round takes `block` batches and runs them through each cell in turn (tt fp32, reference fp32,
    tt bf16, ...; the order rotates every round), so every ratio compares numbers taken at the same
    time on the same inputs, whatever else the machine is doing.
    """
    torch.manual_seed(0)
    ref = Reference(trainer.data.tokenizer.vocab_size).to(device)
    ref_opt = torch.optim.Adam(ref.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9)
    batches = trainer.batches_for_epoch(0)
    pad = trainer.model_cfg.pad_id
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    cells = [(side, p) for p in precisions for side in ("tt", "ref")]

    def run_cell(side: str, precision: str, first: int, n: int) -> tuple[int, float]:
        tokens = 0
        sync()
        t0 = time.perf_counter()
        if side == "tt":
            trainer.cfg.precision = precision
            trainer.epoch, trainer.batch_in_epoch = 0, first  # replay the round's batches
            for _ in range(n):
                numbers, _ = trainer.train_step(batches)
                tokens += numbers["tokens"]
        else:
            for b in batches[first : first + n]:
                tokens += reference_step(
                    ref, ref_opt, collate([trainer.data.train[i] for i in b], pad), device, precision
                )
        sync()
        return tokens, time.perf_counter() - t0

    for side, precision in cells:  # allocator, kernels and autocast caches warm, in every cell
        run_cell(side, precision, 0, 2)
    rates: dict[tuple[str, str], list[float]] = {cell: [] for cell in cells}
    rounds = max(1, math.ceil(steps / block))
    for r in range(rounds):
        first = (r * block) % max(1, len(batches) - block + 1)
        for side, precision in cells[r % len(cells) :] + cells[: r % len(cells)]:
            tokens, seconds = run_cell(side, precision, first, min(block, len(batches)))
            rates[(side, precision)].append(tokens / seconds)
    return rates


def verdict(ratio: tuple[float, float, float], target: float) -> str:
    _, low, high = ratio
    if low >= target:
        return f"≥ {target:.1f}×: met"
    if high < target:
        return f"≥ {target:.1f}×: not met"
    return f"≥ {target:.1f}×: not shown (the interval holds {target:.1f}×; run more --steps)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=48, help="timed steps per cell (side × precision)")
    parser.add_argument("--block", type=int, default=4, help="steps per cell in each round")
    parser.add_argument("--pairs", type=int, default=20000)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=0, help="CPU threads (0 = torch's default)")
    parser.add_argument("--precisions", default="fp32,bf16")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    precisions = args.precisions.split(",")

    with tempfile.TemporaryDirectory() as tmp:
        data, source = corpus(Path(tmp), args.pairs)
        cfg = TrainConfig(
            data=[str(data)],
            out=str(Path(tmp) / "run"),
            preset="small",
            vocab_size=8000,
            max_tokens=4096,
            label_smoothing=0.1,
            warmup=4000,
            device=args.device,
            max_steps=1,
            valid_every=0,
            save_every=0,
        )
        trainer = Trainer(cfg)
        trainer.setup()
        trainer.model.train()
        rounds = max(1, math.ceil(args.steps / args.block))
        print(
            f"data: {source}, {len(trainer.data.train)} pairs, vocab {trainer.data.tokenizer.vocab_size}; "
            f"device {trainer.device}, {torch.get_num_threads()} threads; {rounds} rounds of {args.block} steps "
            f"per cell; torch {torch.__version__}; load average {os.getloadavg()[0]:.1f}"
        )
        rates = measure(trainer, precisions, args.steps, args.block, trainer.device)

    def show(ratio: tuple[float, float, float]) -> str:
        return f"{ratio[0]:.2f}× ({ratio[1]:.2f}–{ratio[2]:.2f})"

    print()
    print("Ratios: geometric mean of the per-round ratios, with its 95 % interval.")
    print()
    print("| precision | tt tokens/s | torch.nn.Transformer tokens/s | tt / reference | tt / reference fp32 |")
    print("|---|---:|---:|---:|---:|")
    verdicts = []
    for precision in precisions:
        tt, ref = rates[("tt", precision)], rates[("ref", precision)]
        same = ratio_interval(tt, ref)
        vs32 = ratio_interval(tt, rates[("ref", "fp32")]) if "fp32" in precisions else None
        print(
            f"| {precision} | {statistics.fmean(tt):,.0f} | {statistics.fmean(ref):,.0f} | {show(same)} | "
            f"{show(vs32) if vs32 else '-'} |"
        )
        if precision == "fp32":
            verdicts.append(f"fp32, tt / reference {verdict(same, 1.0)}")
        elif vs32:
            verdicts.append(f"{precision}, tt / reference fp32 {verdict(vs32, 1.4)}")
    print()
    for line in verdicts:
        print(f"- {line}")


if __name__ == "__main__":
    main()
