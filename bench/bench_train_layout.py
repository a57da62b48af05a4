"""How to spend a small CPU on training: threads or processes, dropout, torch.compile, vocabulary size.

Each cell trains one shape (default: the model issue's 6+2 layers, d_model 256, 16k vocabulary) on the
same synthetic 4096-piece batches (64 × 32 source + 64 × 32 target) with Adam and label smoothing, and
reports pieces per second of wall time. "2 procs × 1 thread" is DDP with gloo: two processes, each its own
batch, gradients all-reduced every step — what `torchrun --nproc-per-node 2 -m tt_cli.main train` does.
The ratio column is against "1 proc × 1 thread, dropout 0.1" measured in the same run. Run it on an idle
machine: the cells take turns, so a busy one slows them all and muddles the two-process rows most.

    python bench/bench_train_layout.py                 # the default cells, 6 timed steps each
    python bench/bench_train_layout.py --steps 10 --vocab 8000 --encoder-layers 3 --decoder-layers 3
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.device import describe_cpu  # noqa: E402
from core.model.config import ModelConfig  # noqa: E402
from core.model.transformer import Transformer  # noqa: E402
from core.train.trainer import label_smoothed_loss  # noqa: E402

BATCH, SRC, TGT = 64, 32, 32  # 4096 pieces a step, the trainer's default --max-tokens


def model_for(args: argparse.Namespace, dropout: float) -> Transformer:
    cfg = ModelConfig(
        vocab_size=args.vocab,
        d_model=args.d_model,
        h=args.d_model // 64,
        n_encoder_layers=args.encoder_layers,
        n_decoder_layers=args.decoder_layers,
        d_ff=4 * args.d_model,
        dropout=dropout,
        attention_dropout=0.0,
    )
    torch.manual_seed(0)
    return Transformer(cfg)


def timed_steps(net: torch.nn.Module, params, args: argparse.Namespace, rank: int = 0) -> float:
    """Seconds per step over args.steps steps, after 2 warm-up steps."""
    g = torch.Generator().manual_seed(rank)
    src = torch.randint(4, args.vocab, (BATCH, SRC), generator=g)
    tgt = torch.randint(4, args.vocab, (BATCH, TGT + 1), generator=g)
    opt = torch.optim.Adam(params, lr=1e-4, betas=(0.9, 0.98), eps=1e-9)

    def step() -> None:
        logits = net(src, tgt[:, :-1])
        loss, n = label_smoothed_loss(logits, tgt[:, 1:], 0, 0.1)
        opt.zero_grad(set_to_none=True)
        (loss / n).backward()
        opt.step()

    for _ in range(2):
        step()
    start = time.perf_counter()
    for _ in range(args.steps):
        step()
    return (time.perf_counter() - start) / args.steps


def one_process(args: argparse.Namespace, threads: int, dropout: float, compiled: bool) -> float:
    torch.set_num_threads(threads)
    model = model_for(args, dropout)
    net = torch.compile(model) if compiled else model
    return BATCH * (SRC + TGT) / timed_steps(net, model.parameters(), args)


def _ddp_worker(rank: int, world: int, port: int, args: argparse.Namespace, dropout: float, out: str) -> None:
    from torch.nn.parallel import DistributedDataParallel

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    torch.distributed.init_process_group("gloo", rank=rank, world_size=world)
    model = model_for(args, dropout)
    seconds = timed_steps(DistributedDataParallel(model), model.parameters(), args, rank)
    if rank == 0:
        Path(out).write_text(str(seconds))
    torch.distributed.destroy_process_group()


def ddp(args: argparse.Namespace, world: int, dropout: float) -> float:
    import torch.multiprocessing as mp

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with tempfile.TemporaryDirectory() as tmp:
        out = str(Path(tmp) / "seconds")
        mp.spawn(_ddp_worker, args=(world, port, args, dropout, out), nprocs=world, join=True)
        seconds = float(Path(out).read_text())
    return world * BATCH * (SRC + TGT) / seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--vocab", type=int, default=16000)
    ap.add_argument("--d-model", type=int, default=256)
    ap.add_argument("--encoder-layers", type=int, default=6)
    ap.add_argument("--decoder-layers", type=int, default=2)
    ap.add_argument("--compile", action="store_true", help="add a torch.compile cell (minutes to compile)")
    args = ap.parse_args()
    cores = os.cpu_count() or 1
    cells = [
        ("1 proc × 1 thread, dropout 0.1", lambda: one_process(args, 1, 0.1, False)),
        ("1 proc × 1 thread, dropout 0", lambda: one_process(args, 1, 0.0, False)),
        (f"1 proc × {cores} threads, dropout 0.1", lambda: one_process(args, cores, 0.1, False)),
        (f"{cores} procs × 1 thread (DDP gloo), dropout 0.1", lambda: ddp(args, cores, 0.1)),
        (f"{cores} procs × 1 thread (DDP gloo), dropout 0", lambda: ddp(args, cores, 0.0)),
    ]
    if args.compile:
        cells.append(("1 proc × 1 thread, dropout 0.1, torch.compile", lambda: one_process(args, 1, 0.1, True)))
    shape = f"{args.encoder_layers}+{args.decoder_layers} layers, d_model {args.d_model}, vocabulary {args.vocab}"
    print(f"Training throughput, {shape}, {BATCH * (SRC + TGT)} pieces a step — {describe_cpu()}")
    print(f"load average before: {os.getloadavg()[0]:.2f}\n")
    print(f"| {'layout':<46} | pieces/s | ratio |\n|{'-' * 48}|----------|-------|")
    reference = None
    for name, run in cells:
        rate = run()
        reference = reference or rate
        print(f"| {name:<46} | {rate:8.0f} | {rate / reference:5.2f} |", flush=True)


if __name__ == "__main__":
    main()
