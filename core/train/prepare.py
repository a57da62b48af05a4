"""From --data arguments to encoded training and validation examples: read, dedup, split off the
held-out sets, train (or load) the joint SentencePiece model, encode and filter by length.

Deterministic for a given configuration, which is what lets every DDP rank, and a resumed run,
rebuild exactly the same examples without storing them.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.data.readers import (
    Example,
    Pair,
    ReadStats,
    join_examples,
    length_ok,
    read_corpus,
    split_heldout,
    write_aligned,
)
from core.data.tokenizer import Tokenizer
from core.errors import DataError
from core.files import atomic_write_bytes, make_dir

if TYPE_CHECKING:
    from core.train.config import TrainConfig


def read_pairs(cfg: TrainConfig, specs: list[str], stats: ReadStats | None = None) -> list[Pair]:
    """The pairs of these --data (or --valid) arguments, in order, read as the run reads them:
    its languages, strictness and direction. The guided-alignment links are line-aligned with this."""
    return [
        p
        for spec in specs
        for p in read_corpus(
            spec, src_lang=cfg.src_lang, tgt_lang=cfg.tgt_lang, strict=cfg.strict, stats=stats, swap=cfg.swap
        )
    ]


@dataclass
class Prepared:
    tokenizer: Tokenizer
    train: list[Example]
    valid: list[Example]
    valid_pairs: list[Pair]
    stats: dict[str, Any]  # counts, and `problems`: the first few skipped lines


def prepare_data(cfg: TrainConfig, run_dir: Path, is_main: bool = True, reuse_tokenizer: bool = True) -> Prepared:
    """Read, split, (train the tokenizer), encode and filter. Deterministic for a given config.

    reuse_tokenizer: take run_dir/spm.model when it exists (a resumed run, or a DDP rank waiting
    for rank 0's). A fresh run passes False, so a left-over file from an aborted start never wins
    over this run's --vocab-size.
    """
    stats = ReadStats()
    pairs = read_pairs(cfg, cfg.data, stats)
    if not pairs:
        raise DataError("the training data holds no sentence pairs")
    if cfg.dedup:
        seen, unique = set(), []
        for p in pairs:
            if (p.src, p.tgt) not in seen:
                seen.add((p.src, p.tgt))
                unique.append(p)
        stats.skipped_duplicate = len(pairs) - len(unique)
        pairs = unique
    if cfg.valid:
        valid_pairs = read_pairs(cfg, cfg.valid)
    else:
        pairs, valid_pairs, test_pairs = split_heldout(pairs, cfg.valid_per_mille, cfg.test_per_mille)
        if not valid_pairs:  # a tiny corpus: hold out a few pairs all the same
            pairs, valid_pairs = pairs[: -max(1, len(pairs) // 10)], pairs[-max(1, len(pairs) // 10) :]
        if test_pairs and is_main:
            # Named by language: with --swap the source side is the --tgt-lang text.
            src_lang, tgt_lang = (cfg.tgt_lang, cfg.src_lang) if cfg.swap else (cfg.src_lang, cfg.tgt_lang)
            write_aligned(test_pairs, run_dir / f"test.{src_lang}", run_dir / f"test.{tgt_lang}")

    spm_path = run_dir / "spm.model"
    if cfg.spm_model:
        tokenizer = Tokenizer.load(cfg.spm_model)
    elif reuse_tokenizer and spm_path.exists():  # the run's own tokenizer
        tokenizer = Tokenizer.load(spm_path)
    else:
        tokenizer = Tokenizer.train((s for p in pairs for s in (p.src, p.tgt)), cfg.vocab_size)
    if is_main and (not spm_path.exists() or spm_path.read_bytes() != tokenizer.proto):
        make_dir(run_dir)
        atomic_write_bytes(spm_path, tokenizer.proto)

    def encode(ps: list[Pair], filtered: bool) -> list[Example]:
        srcs = tokenizer.encode_batch([p.src for p in ps])
        tgts = tokenizer.encode_batch([p.tgt for p in ps])
        out = []
        for s, t in zip(srcs, tgts):
            if filtered and not length_ok(len(s) + 1, len(t) + 1, cfg.max_pieces, cfg.max_ratio):
                stats.skipped_filtered += 1
                continue
            out.append(
                Example(
                    s[: cfg.max_pieces] + [tokenizer.sp.eos_id()],
                    [tokenizer.sp.bos_id()] + t[: cfg.max_pieces] + [tokenizer.sp.eos_id()],
                )
            )
        return out

    train = encode(pairs, True)
    valid = encode(valid_pairs, False)
    if not train:
        raise DataError(
            f"no training pairs left after the length filters (--max-pieces {cfg.max_pieces}, --max-ratio {cfg.max_ratio})"
        )
    joined = join_for_length(train, cfg.concat, cfg.concat_max, cfg.max_pieces, cfg.seed) if cfg.concat else []
    counts = {
        "pairs_read": stats.read,
        "train_pairs": len(train),
        "joined_examples": len(joined),
        "valid_pairs": len(valid),
        "skipped_malformed": stats.skipped_malformed,
        "skipped_filtered": stats.skipped_filtered,
        "skipped_duplicate": stats.skipped_duplicate,
        "problems": stats.problems,
    }
    return Prepared(tokenizer, train + joined, valid, valid_pairs, counts)


def join_for_length(train: list[Example], fraction: float, most: int, max_pieces: int, seed: int) -> list[Example]:
    """round(fraction · len(train)) extra examples, each 2..`most` random training pairs side by side.

    Short-sentence corpora (Tatoeba: 6 words on average) leave a model unsure of itself on long
    input; its attention, and the alignments read from it, degrade with length (docs/alignment.md).
    Joined pairs show it long sequences of known text (Nguyen et al. 2021, "Data Augmentation by
    Concatenation for Low-Resource Translation"). Seeded: every rank and a resumed run rebuild them.
    A draw longer than max_pieces on either side is drawn again with fewer pairs.
    """
    if fraction < 0:
        raise DataError(f"--concat {fraction}: give how many joined examples to add per training pair (≥ 0)")
    if most < 2:
        raise DataError(f"--concat-max {most}: a joined example holds at least 2 pairs")
    rng = random.Random(f"concat-{seed}")
    out: list[Example] = []
    for _ in range(round(fraction * len(train))):
        k = rng.randint(2, most)
        while k >= 2:
            parts = [train[rng.randrange(len(train))] for _ in range(k)]
            e = join_examples(parts)
            if len(e.src) - 1 <= max_pieces and len(e.tgt) - 2 <= max_pieces:
                out.append(e)
                break
            k -= 1
    return out
