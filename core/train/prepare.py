"""From --data arguments to encoded training and validation examples.

corpora → read (plain, .gz, .xz, .bz2) → clean (each rule counted) → held-out split by sentence hash
→ joint SentencePiece model (trained on a sample balanced as the mixing draws) → encode, length
filters and augmentation → a memory-mapped shard per corpus (core/data/cache.py). A resumed run, a
second DDP rank or another run with the same tokenizer opens the shards instead of reading the text.

Deterministic for a given configuration, which is what lets every DDP rank, and a resumed run,
rebuild exactly the same examples.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from core.card import config_languages
from core.data.augment import augmented
from core.data.cache import ConcatExamples, TokenShard, cache_key, file_identity, open_shard, write_shard
from core.data.clean import RULES, CleanRules, clean_pairs, drop_duplicates
from core.data.mix import is_identity, mix_counts
from core.data.placeholders import PLACEHOLDER_TOKENS, with_placeholders
from core.data.readers import (
    Example,
    Pair,
    ReadStats,
    heldout_bucket,
    join_examples,
    length_ok,
    read_corpus,
    resolve,
    split_heldout,
    write_aligned,
)
from core.data.tokenizer import Tokenizer
from core.errors import DataError
from core.files import atomic_write_bytes, make_dir
from core.text.protect import unknown_characters
from core.train.config import TrainConfig


@dataclass(frozen=True)
class Corpus:
    """One --data argument: a file or prefix, or NAME=SPEC,SPEC… for several files trained as one corpus."""

    name: str
    specs: tuple[str, ...]


def parse_corpora(data: Sequence[str]) -> list[Corpus]:
    corpora = []
    for arg in data:
        name, sep, rest = arg.partition("=")
        if sep and name and "/" not in name and not Path(arg).exists():
            corpora.append(Corpus(name, tuple(s for s in rest.split(",") if s)))
        else:
            path = Path(arg)
            stem = path.name
            for suffix in (".gz", ".xz", ".bz2", ".tsv"):
                stem = stem.removesuffix(suffix)
            corpora.append(Corpus(f"{path.parent.name}/{stem}" if path.parent.name else stem, (arg,)))
    names = [c.name for c in corpora]
    if len(set(names)) != len(names):
        raise DataError(f"two --data corpora share a name ({', '.join(names)}); name them with NAME=PATH")
    return corpora


def read_pairs(cfg: TrainConfig, specs: Sequence[str], stats: ReadStats | None = None) -> list[Pair]:
    """The pairs of these --data (or --valid) arguments, in order, read as the run reads them:
    its languages, strictness and direction. The guided-alignment links are line-aligned with this."""
    return list(iter_pairs(cfg, specs, stats))


def iter_pairs(
    cfg: TrainConfig, specs: Sequence[str], stats: ReadStats | None = None, keep_empty: bool = False
) -> Iterator[Pair]:
    """`read_pairs` one at a time (a corpus of millions is cleaned as it is read)."""
    for spec in specs:
        yield from read_corpus(
            spec,
            src_lang=cfg.src_lang,
            tgt_lang=cfg.tgt_lang,
            strict=cfg.strict,
            stats=stats,
            swap=cfg.swap,
            keep_empty=keep_empty,
        )


@dataclass
class ValidSet:
    name: str
    examples: list[Example]
    pairs: list[Pair]


@dataclass
class Prepared:
    tokenizer: Tokenizer
    train: Sequence[Example]  # every corpus's examples, then the joined ones (--concat), as one sequence
    valid: list[Example]  # all validation sets together
    valid_pairs: list[Pair]
    stats: dict[str, Any]  # counts, and `problems`: the first few skipped lines
    valid_sets: list[ValidSet] = field(default_factory=list)
    corpus_sizes: list[int] = field(default_factory=list)  # training examples per part of `train`
    mix_counts: list[int] | None = None  # examples per part drawn each epoch; None = each once, in place


@dataclass
class _Split:
    """One corpus read, cleaned and split."""

    corpus: Corpus
    train: list[Pair]
    valid: list[Pair]
    test: list[Pair]
    counts: dict[str, int]


def prepare_data(cfg: TrainConfig, run_dir: Path, is_main: bool = True, reuse_tokenizer: bool = True) -> Prepared:
    """Read, clean, split, (train the tokenizer), encode and filter — or open the run's cached shards.

    reuse_tokenizer: take run_dir/spm.model when it exists (a resumed run, or a DDP rank waiting
    for rank 0's). A fresh run passes False, so a left-over file from an aborted start never wins
    over this run's --vocab-size.
    """
    corpora = parse_corpora(cfg.data)
    spm_path = run_dir / "spm.model"
    tokenizer = None
    if cfg.spm_model:
        tokenizer = Tokenizer.load(cfg.spm_model)
    elif reuse_tokenizer and spm_path.exists():  # the run's own tokenizer
        tokenizer = Tokenizer.load(spm_path)
    if tokenizer is not None and cfg.placeholders:  # a vocabulary made without them (a shipped model's) grows
        tokenizer = tokenizer.with_pieces(PLACEHOLDER_TOKENS)
    cache_dir = Path(cfg.cache_dir) if cfg.cache_dir else run_dir / "cache"
    # A shard's name hashes the corpus files' bytes: computed once per tokenizer, not again on a cache miss.
    names = [_shard_name(cfg, c, tokenizer) for c in corpora] if tokenizer else []
    shards = [open_shard(cache_dir / name) for name in names]
    stats: dict[str, Any] = {}
    if not shards or any(s is None for s in shards):
        stats["problems"] = []
        splits = [_read_split(cfg, c, stats) for c in corpora]
        if tokenizer is None:
            tokenizer = _train_tokenizer(cfg, splits)
            names = [_shard_name(cfg, c, tokenizer) for c in corpora]
        shards = [_encode_shard(cfg, tokenizer, s, cache_dir / name) for s, name in zip(splits, names)]
        if is_main:
            _write_test_sets(cfg, run_dir, splits)
    if is_main and (not spm_path.exists() or spm_path.read_bytes() != tokenizer.proto):
        make_dir(run_dir)
        atomic_write_bytes(spm_path, tokenizer.proto)
    return _assemble(cfg, tokenizer, [s for s in shards if s is not None], stats)


def _shard_name(cfg: TrainConfig, corpus: Corpus, tokenizer: Tokenizer) -> str:
    files = [file_identity(f) for spec in corpus.specs for f in resolve(spec, cfg.src_lang, cfg.tgt_lang)]
    parts = {
        "files": files,
        "tokenizer": cache_key({"proto": tokenizer.proto.hex()}),
        "clean": asdict(_rules(cfg)) if cfg.clean else None,
        **{
            k: getattr(cfg, k)
            for k in (
                "src_lang",
                "tgt_lang",
                "swap",
                "strict",
                "max_pieces",
                "max_ratio",
                "valid_per_mille",
                "test_per_mille",
                "valid_max",
                "noise_case",
                "noise_accents",
                "dedup",
            )
        },
    }
    if cfg.placeholders:  # only then: the caches of runs without placeholders keep their names
        parts["placeholders"] = cfg.placeholders
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in corpus.name)
    return f"{safe}-{cache_key(parts)}"


def _rules(cfg: TrainConfig) -> CleanRules:
    return CleanRules(dedup=cfg.dedup)


def _read_split(cfg: TrainConfig, corpus: Corpus, stats: dict[str, Any]) -> _Split:
    read = ReadStats()
    counts: Counter[str] = Counter()
    pairs = iter_pairs(cfg, corpus.specs, read, keep_empty=cfg.clean)
    if cfg.clean:
        pairs = clean_pairs(pairs, _rules(cfg), counts, cfg.src_lang, cfg.tgt_lang)
    elif cfg.dedup:
        pairs = drop_duplicates(pairs, counts)
    # Without cleaning (runs started before it existed) an explicit --valid meant no held-out split.
    held_out = (cfg.valid_per_mille, cfg.test_per_mille) if _holds_out(cfg) else (0, 0)
    train, valid, test = split_heldout(pairs, *held_out)
    if not train and not valid and not test:
        raise DataError(f"{corpus.name}: the training data holds no sentence pairs")
    if _holds_out(cfg) and not valid and len(train) > 1:  # a tiny corpus: hold out a few pairs all the same
        cut = max(1, len(train) // 10)
        train, valid = train[:-cut], train[-cut:]
    stats["problems"] += read.problems[: 5 - len(stats["problems"])]
    counts.update(pairs_read=read.read, skipped_malformed=read.skipped_malformed)
    return _Split(corpus, train, _valid_sample(valid, cfg.valid_max), test, dict(counts))


def _holds_out(cfg: TrainConfig) -> bool:
    return cfg.clean or not cfg.valid


def _valid_sample(valid: list[Pair], most: int) -> list[Pair]:
    """At most `most` held-out pairs for validation (0 = all), chosen by hash so the choice is stable."""
    if not most or len(valid) <= most:
        return valid
    ranked = sorted(range(len(valid)), key=lambda i: (heldout_bucket("v" + valid[i].src), i))
    return [valid[i] for i in sorted(ranked[:most])]


def _train_tokenizer(cfg: TrainConfig, splits: list[_Split]) -> Tokenizer:
    """A joint SentencePiece model trained on a sample that draws from each corpus as the mixing does,
    so the vocabulary of a small corpus is not crowded out by a large one's."""
    sizes = [len(s.train) for s in splits]
    counts = mix_counts(sizes, cfg.data_weights or None, cfg.mix_temperature) if sum(sizes) else sizes
    budget = cfg.spm_sample // 2  # pairs; each gives two sentences
    scale = min(1.0, budget / max(sum(counts), 1))
    rng = random.Random(f"spm-{cfg.seed}")
    sentences: list[str] = []
    for split, count in zip(splits, counts):
        k = round(count * scale)
        for _ in range(k // max(len(split.train), 1)):
            sentences += [s for p in split.train for s in (p.src, p.tgt)]
        rest = rng.sample(split.train, k % len(split.train)) if split.train else []
        sentences += [s for p in rest for s in (p.src, p.tgt)]
    if not sentences:
        raise DataError("the training data holds no sentence pairs")
    return Tokenizer.train(
        sentences,
        cfg.vocab_size,
        max_sentences=max(len(sentences), 101),
        byte_fallback=cfg.byte_fallback,
        user_symbols=PLACEHOLDER_TOKENS if cfg.placeholders else (),
    )


def _encode_shard(cfg: TrainConfig, tokenizer: Tokenizer, split: _Split, directory: Path) -> TokenShard:
    bos, eos = tokenizer.sp.bos_id(), tokenizer.sp.eos_id()
    # Placeholders replace their pairs; the case and accent copies are of the pairs as written (<PH0> is no piece).
    languages = (cfg.src_lang, cfg.tgt_lang)
    placed = with_placeholders(split.train, cfg.placeholders, cfg.seed, unknown_characters(tokenizer), languages)
    pairs = placed + augmented(split.train, cfg.noise_case, cfg.noise_accents, cfg.seed)
    src_ids, tgt_ids = [], []
    too_long = ratio = 0
    for start in range(0, len(pairs), 100_000):  # in slices: the id lists of 2 M pairs at once would not be small
        chunk = pairs[start : start + 100_000]
        for s, t in zip(tokenizer.encode_batch([p.src for p in chunk]), tokenizer.encode_batch([p.tgt for p in chunk])):
            if not length_ok(len(s) + 1, len(t) + 1, cfg.max_pieces, cfg.max_ratio):
                too_long += max(len(s), len(t)) + 1 > cfg.max_pieces
                ratio += max(len(s), len(t)) + 1 <= cfg.max_pieces
                continue
            src_ids.append(s + [eos])
            tgt_ids.append([bos] + t + [eos])
    valid = [{"src": p.src, "tgt": p.tgt, "origin": p.origin} for p in split.valid]
    counts = {
        **split.counts,
        "augmented": len(pairs) - len(split.train),
        "placeholders": sum(a is not b for a, b in zip(placed, split.train)),
        "too_many_pieces": too_long,
        "piece_ratio": ratio,
        "train_pairs": len(src_ids),
        "valid_pairs": len(split.valid),
        "test_pairs": len(split.test),
    }
    return write_shard(
        directory, src_ids, tgt_ids, tokenizer.vocab_size, corpus=split.corpus.name, counts=counts, valid=valid
    )


def _write_test_sets(cfg: TrainConfig, run_dir: Path, splits: list[_Split]) -> None:
    # Named by language: with --swap the source side is the --tgt-lang text.
    src_lang, tgt_lang = config_languages(vars(cfg))
    for split in splits:
        if split.test:
            make_dir(run_dir)
            stem = "test" if len(splits) == 1 else "test." + split.corpus.name.replace("/", "_")
            write_aligned(split.test, run_dir / f"{stem}.{src_lang}", run_dir / f"{stem}.{tgt_lang}")


def _encode_valid(cfg: TrainConfig, tokenizer: Tokenizer, pairs: list[Pair]) -> list[Example]:
    bos, eos = tokenizer.sp.bos_id(), tokenizer.sp.eos_id()
    srcs = tokenizer.encode_batch([p.src for p in pairs])
    tgts = tokenizer.encode_batch([p.tgt for p in pairs])
    return [Example(s[: cfg.max_pieces] + [eos], [bos] + t[: cfg.max_pieces] + [eos]) for s, t in zip(srcs, tgts)]


def _assemble(cfg: TrainConfig, tokenizer: Tokenizer, shards: list[TokenShard], stats: dict[str, Any]) -> Prepared:
    """The run's view of its shards: training examples as one sequence, the validation sets, the counts."""
    # The --valid sets first (they choose the best model), then each corpus's held-out pairs.
    valid_sets = [ValidSet(spec, [], read_pairs(cfg, [spec])) for spec in cfg.valid]
    valid_sets += [
        ValidSet(s.meta["corpus"], [], [Pair(v["src"], v["tgt"], v["origin"]) for v in s.meta["valid"]]) for s in shards
    ]
    valid_sets = [v for v in valid_sets if v.pairs]
    for v in valid_sets:
        v.examples = _encode_valid(cfg, tokenizer, v.pairs)
    totals: Counter[str] = Counter()
    for s in shards:
        totals.update({k: v for k, v in s.meta["counts"].items()})
    if not totals["train_pairs"]:
        raise DataError(
            f"no training pairs left after the length filters (--max-pieces {cfg.max_pieces}, --max-ratio {cfg.max_ratio})"
        )
    parts: list[Sequence[Example]] = list(shards)
    joined: list[Example] = []
    if cfg.concat:
        joined = join_for_length(ConcatExamples(shards), cfg.concat, cfg.concat_max, cfg.max_pieces, cfg.seed)
        parts.append(joined)
    sizes = [len(p) for p in parts]
    weights = list(cfg.data_weights) + [1.0] * (len(parts) - len(cfg.data_weights)) if cfg.data_weights else None
    counts = (
        None if is_identity(sizes, weights, cfg.mix_temperature) else mix_counts(sizes, weights, cfg.mix_temperature)
    )
    valid = [e for v in valid_sets for e in v.examples]
    stats = {
        "pairs_read": totals["pairs_read"],
        "train_pairs": totals["train_pairs"],
        "joined_examples": len(joined),
        "valid_pairs": len(valid),
        "skipped_malformed": totals["skipped_malformed"],
        "skipped_filtered": totals["too_many_pieces"] + totals["piece_ratio"],
        "skipped_duplicate": totals["duplicate"],
        "cleaning": {
            k: totals[k]
            for k in (
                *RULES,
                "oe_restored",
                "entities_decoded",
                "too_many_pieces",
                "piece_ratio",
                "augmented",
                "placeholders",
            )
        },
        "corpora": {
            s.meta["corpus"]: {"train": len(s), "per_epoch": counts[i] if counts else len(s)}
            for i, s in enumerate(shards)
        },
        "problems": stats.get("problems", []),
        "cached": "problems" not in stats,
    }
    return Prepared(
        tokenizer,
        ConcatExamples(parts),
        valid,
        [p for v in valid_sets for p in v.pairs],
        stats,
        valid_sets,
        sizes,
        counts,
    )


def join_for_length(train: Sequence[Example], fraction: float, most: int, max_pieces: int, seed: int) -> list[Example]:
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


def describe(prepared: Prepared) -> str:
    """The data's counts as one JSON line (for logs)."""
    return json.dumps({k: v for k, v in prepared.stats.items() if k != "problems"}, sort_keys=True)
