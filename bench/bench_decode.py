"""Decoding speed: the key/value cache against re-running the decoder over the whole prefix.

The reference is the decoding loop of the PyTorch tutorial / Annotated Transformer: every step
feeds the full prefix BOS y1..yt to the decoder again and keeps only the last position. Both are
measured here, in the same run, on the same random-init `small` model (d_model 256, 3+3 layers,
vocabulary 8000) and the same random sources; every output is exactly --out-len pieces (EOS is
banned until then), so the work is fixed and the ratios are fair.

    nice -n 19 python bench/bench_decode.py --sentences 200 --threads 1

Speed-ups are ratios against the reference of the same batch size, measured in the same run; a
busy machine slows both sides, so the ratios hold up better than the sentences/second.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
# --code DIR decodes with another copy of core/ (e.g. `git archive REV core | tar -x -C DIR`), so a
# change is measured before/after by alternating runs of this same script.
if "--code" in sys.argv:
    sys.path.insert(0, sys.argv[sys.argv.index("--code") + 1])

from core.decode.beam import beam_search  # noqa: E402
from core.decode.search import greedy, pad_batch, sample  # noqa: E402
from core.model.config import preset  # noqa: E402
from core.model.transformer import Transformer  # noqa: E402


@torch.inference_mode()
def recompute_greedy(model: Transformer, src: torch.Tensor, out_len: int) -> torch.Tensor:
    """The tutorial's greedy decoding: the whole prefix through the decoder at every step.

    Like the tutorial, only the last position goes through the generator (the output projection),
    so the reference wastes only the decoder layers' work on the prefix, not the vocabulary matmul.
    """
    cfg = model.cfg
    enc = model.encode(src)
    ys = torch.full((src.size(0), 1), cfg.bos_id, dtype=torch.long)  # (B, 1)
    for _ in range(out_len):
        x = model.tgt_pos(model.tgt_embed(ys))  # (B, t, d_model)
        for layer in model.decoder_layers:  # causal: the fused kernel applies the look-ahead mask
            x, _, _ = layer(x, memory=enc.memory, src_mask=enc.src_mask, causal=True)
        logits = model.generator(model.decoder_norm(x[:, -1])).float()  # (B, vocab)
        logits[:, [cfg.pad_id, cfg.bos_id, cfg.eos_id]] = float("-inf")  # the same bans as ours
        ys = torch.cat([ys, logits.argmax(-1, keepdim=True)], dim=1)  # (B, t+1)
    return ys[:, 1:]


def timed(fns: dict[str, Callable], batches: list[torch.Tensor], repeat: int) -> dict[str, tuple[float, float]]:
    """(wall, CPU) seconds per pass through all batches for each decoding, interleaved batch by batch.

    Other work on the machine comes and goes; running every decoding on a batch before moving to
    the next batch exposes them all to the same load. CPU time (this process's) leaves out the
    time spent waiting for a core, so on a busy machine it is the steadier of the two. Each
    decoding keeps its best of `repeat` passes.
    """
    for fn in fns.values():
        fn(batches[0][:2])  # warm-up: first-call allocations
    best = dict.fromkeys(fns, (float("inf"), float("inf")))
    for _ in range(repeat):
        wall, cpu = dict.fromkeys(fns, 0.0), dict.fromkeys(fns, 0.0)
        for src in batches:
            for name, fn in fns.items():
                start, start_cpu = time.perf_counter(), time.process_time()
                fn(src)
                wall[name] += time.perf_counter() - start
                cpu[name] += time.process_time() - start_cpu
        best = {name: (min(best[name][0], wall[name]), min(best[name][1], cpu[name])) for name in fns}
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=200)
    parser.add_argument("--batch1-sentences", type=int, default=50, help="batch-1 runs are slow; fewer sentences")
    parser.add_argument("--out-len", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1, help="1 on a busy machine: 2 threads thrash")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--code", help="directory holding the core/ package to measure (default: this checkout)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = Transformer(preset("small", vocab_size=8000)).eval()
    g = torch.Generator().manual_seed(0)
    # Sources of 10-30 pieces + EOS, sorted by length as a real batcher would group them.
    lengths = sorted(torch.randint(10, 31, (args.sentences,), generator=g).tolist())
    sources = [torch.randint(4, 8000, (n,), generator=g).tolist() + [3] for n in lengths]
    n_out = args.out_len

    def batches(size: int, count: int) -> list[torch.Tensor]:
        return [pad_batch(sources[i : i + size], 0) for i in range(0, count, size)]

    fixed = dict(max_output=n_out, min_len=n_out)
    # Both sides must decode the same pieces, or the comparison means nothing.
    check = pad_batch(sources[:8], 0)
    if recompute_greedy(model, check, n_out).tolist() != [h.tokens for h in greedy(model, check, **fixed)]:
        raise SystemExit("cached and recomputed greedy decoding disagree")
    decoders = {
        "recompute greedy (reference)": lambda s: recompute_greedy(model, s, n_out),
        "cached greedy": lambda s: greedy(model, s, **fixed),
        "cached sampling": lambda s: sample(model, s, seed=0, **fixed),
        "cached beam 4": lambda s: beam_search(model, s, beam_size=4, **fixed),
    }
    reference = {
        "cached greedy": "recompute greedy (reference)",
        "cached sampling": "cached greedy",
        "cached beam 4": "cached greedy",
    }
    import core

    print(f"core from {Path(core.__file__).parent}")
    print(
        f"threads {args.threads}, load average {os.getloadavg()[0]:.2f}, output {n_out} pieces, "
        f"{args.sentences} sentences (batch 1: {args.batch1_sentences}), best of {args.repeat}"
    )
    print("| decoding | batch | sent/s | ms/sent | speed vs | CPU ms/sent | CPU speed vs |")
    print("|---|---:|---:|---:|---|---:|---:|")
    for size in (1, 64):
        count = args.batch1_sentences if size == 1 else args.sentences
        seconds = timed(decoders, batches(size, count), args.repeat)
        for name, (wall, cpu) in seconds.items():
            ref = reference.get(name)
            ratio = cpu_ratio = ""
            if ref is not None:
                ratio = f"{seconds[ref][0] / wall:.2f}x {ref}"
                cpu_ratio = f"{seconds[ref][1] / cpu:.2f}x"
            print(
                f"| {name} | {size} | {count / wall:.1f} | {1000 * wall / count:.2f} | {ratio} "
                f"| {1000 * cpu / count:.2f} | {cpu_ratio} |"
            )
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
