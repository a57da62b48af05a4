"""Speed of `tt align` (core.align.links) on 1,000 sentence pairs, against teacher-forced scoring.

Alignment is one teacher-forced pass per batch with the attention weights returned, then pooling
pieces into words and picking links. The reference is the same teacher-forced pass without weights
(the fused attention path, what scoring a reference translation costs), measured in the same run on
the same pairs; greedy decoding of the same sources shows what alignment does not pay.

    nice -n 19 python bench/bench_align.py --pairs 1000 [--rounds 2] [--model DIR] [--threads 1]

Pairs: the Multi30k 2016 test set from ../shared/data when present, else tests/fixtures/tiny.tsv
repeated. Model: --model, else weights/ when shipped, else a random-init `small` model.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_coldstart import pick_model  # noqa: E402


def sentence_pairs(n: int) -> tuple[list[tuple[str, str]], str]:
    shared = Path(os.environ.get("TT_SHARED_DATA", ROOT.parent / "shared" / "data")) / "multi30k" / "test_2016_flickr"
    if Path(f"{shared}.fr").exists():
        fr = Path(f"{shared}.fr").read_text(encoding="utf-8").splitlines()
        en = Path(f"{shared}.en").read_text(encoding="utf-8").splitlines()
        pairs, name = list(zip(fr, en)), "multi30k test_2016_flickr"
    else:
        fixture = (ROOT / "tests" / "fixtures" / "tiny.tsv").read_text(encoding="utf-8").splitlines()
        pairs, name = [tuple(line.split("\t")[:2]) for line in fixture], "tests/fixtures/tiny.tsv"
    return list(itertools.islice(itertools.cycle(pairs), n)), name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--model", help="model directory (default: shipped, else random small)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()

    import torch

    from core.align.links import align, load_rule, pair_attention
    from core.checkpoint import load_model
    from core.decode.search import greedy, pad_batch

    torch.set_num_threads(args.threads)
    pairs, corpus = sentence_pairs(args.pairs)
    with tempfile.TemporaryDirectory() as tmp:
        model_dir, model_name = pick_model(args.model, Path(tmp))
        loaded = load_model(model_dir)
    model, cfg, tok = loaded.model, loaded.cfg, loaded.tokenizer
    rule = load_rule(loaded.path)
    srcs = [tok.encode(s) + [cfg.eos_id] for s, _ in pairs]
    tgts = [[cfg.bos_id] + tok.encode(t) for _, t in pairs]
    order = sorted(range(len(pairs)), key=lambda k: (len(srcs[k]), len(tgts[k])))
    batches = [order[i : i + args.batch_size] for i in range(0, len(order), args.batch_size)]

    @torch.inference_mode()
    def scoring() -> None:  # what scoring the given target costs: one fused pass per batch
        for batch in batches:
            src = pad_batch([srcs[k] for k in batch], cfg.pad_id, "cpu")
            tgt = pad_batch([tgts[k] for k in batch], cfg.pad_id, "cpu")
            model.decode(tgt, model.encode(src)).logits.log_softmax(-1)

    def alignment() -> None:
        align(pair_attention(loaded, pairs, batch_size=args.batch_size), rule)

    @torch.inference_mode()
    def decoding() -> None:
        for batch in batches:
            greedy(model, pad_batch([srcs[k] for k in batch], cfg.pad_id, "cpu"))

    rows = [
        ("teacher-forced scoring (reference)", scoring),
        (f"tt align ({rule.describe()})", alignment),
        ("greedy decoding", decoding),
    ]
    # Rounds alternate the rows, each keeps its best. CPU seconds of this process, not wall time: on
    # the shared project machine the wall clock mostly measures waiting for a core.
    best: dict[str, float] = {}
    for _ in range(args.rounds):
        for name, fn in rows:
            start = time.process_time()
            fn()
            best[name] = min(best.get(name, float("inf")), time.process_time() - start)
    ref = best[rows[0][0]]
    print(
        f"model: {model_name}; pairs: {len(pairs)} from {corpus}; batch {args.batch_size}; {args.threads} thread(s); "
        f"best of {args.rounds} round(s); load average {os.getloadavg()[0]:.1f}"
    )
    print()
    print("| method | CPU seconds | pairs per CPU second | time vs reference |")
    print("|---|---:|---:|---:|")
    for name, _ in rows:
        print(f"| {name} | {best[name]:.2f} | {len(pairs) / best[name]:.0f} | {best[name] / ref:.2f}× |")


if __name__ == "__main__":
    main()
