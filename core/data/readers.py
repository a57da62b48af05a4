"""Parallel data: readers (TSV or line-aligned files; plain, .gz, .xz or .bz2), filters, token-budget batches."""

from __future__ import annotations

import bz2
import gzip
import hashlib
import io
import lzma
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch

from core.errors import DataError
from core.files import atomic_write_bytes


@dataclass(frozen=True)
class Pair:
    src: str
    tgt: str
    origin: str  # "file:line", for messages


@dataclass
class ReadStats:
    read: int = 0
    skipped_malformed: int = 0
    skipped_filtered: int = 0
    skipped_duplicate: int = 0
    problems: list[str] = field(default_factory=list)  # the first few skipped lines, for the log


# Compressed forms a reader opens by the file's suffix; corpora (Europarl, OPUS) ship in all three.
COMPRESSED = {".gz": gzip.open, ".xz": lzma.open, ".bz2": bz2.open}


def _open_text(path: Path) -> io.TextIOBase:
    try:
        raw = COMPRESSED.get(path.suffix, open)(path, "rb")
    except FileNotFoundError:
        raise DataError(f"{path}: no such file") from None
    except OSError as exc:
        raise DataError(f"{path}: cannot open ({exc.strerror})") from None
    return raw


def _lines(path: Path) -> Iterator[tuple[int, str | None]]:
    """(line number, text) of a UTF-8 file, plain or compressed; text is None where the bytes are not UTF-8."""
    with _open_text(path) as f:
        lineno = 0
        try:
            for lineno, raw in enumerate(f, start=1):
                try:
                    yield lineno, raw.decode("utf-8").rstrip("\r\n")
                except UnicodeDecodeError:
                    yield lineno, None
        except (OSError, EOFError, lzma.LZMAError) as exc:  # gzip's and bz2's errors are OSErrors
            raise DataError(f"{path}:{lineno + 1}: cannot read ({exc})") from None


def _bad_line(problem: str, strict: bool, stats: ReadStats) -> None:
    """Strict: the problem is an error. Otherwise count it and keep the first few for the log."""
    if strict:
        raise DataError(problem + " (use --skip-bad-lines to skip such lines)")
    stats.skipped_malformed += 1
    if len(stats.problems) < 5:
        stats.problems.append(problem)


def read_tsv(
    path: str | Path, *, strict: bool = True, stats: ReadStats | None = None, keep_empty: bool = False
) -> Iterator[Pair]:
    """source<TAB>target per line. Extra columns (e.g. attribution) after the second are ignored.

    keep_empty: yield a pair with an empty side as it is (the cleaning rules count and drop it)."""
    path = Path(path)
    stats = stats if stats is not None else ReadStats()
    for lineno, line in _lines(path):
        cols = line.split("\t") if line is not None else []
        problem = None
        if line is None:
            problem = f"{path}:{lineno}: not valid UTF-8"
        elif len(cols) < 2:
            problem = f"{path}:{lineno}: expected source<TAB>target, found no tab"
        elif not keep_empty and (not cols[0].strip() or not cols[1].strip()):
            problem = f"{path}:{lineno}: empty {'source' if not cols[0].strip() else 'target'} side"
        if problem:
            _bad_line(problem, strict, stats)
            continue
        stats.read += 1
        yield Pair(cols[0].strip(), cols[1].strip(), f"{path}:{lineno}")


def read_aligned(
    src_path: str | Path,
    tgt_path: str | Path,
    *,
    strict: bool = True,
    stats: ReadStats | None = None,
    keep_empty: bool = False,
) -> Iterator[Pair]:
    """Two files aligned by line (train.fr + train.en). keep_empty: as `read_tsv`."""
    src_path, tgt_path = Path(src_path), Path(tgt_path)
    stats = stats if stats is not None else ReadStats()
    src_lines, tgt_lines = _lines(src_path), _lines(tgt_path)
    while True:
        s = next(src_lines, None)
        t = next(tgt_lines, None)
        if s is None and t is None:
            return
        if s is None or t is None:
            longer, n = (tgt_path, t[0]) if s is None else (src_path, s[0])
            raise DataError(
                f"{longer}:{n}: files are not aligned: {src_path} and {tgt_path} have different line counts"
            )
        lineno = s[0]
        problem = None
        for side_path, text in ((src_path, s[1]), (tgt_path, t[1])):
            if problem is None and text is None:
                problem = f"{side_path}:{lineno}: not valid UTF-8"
            elif problem is None and not keep_empty and not text.strip():
                problem = f"{side_path}:{lineno}: empty line"
        if problem:
            _bad_line(problem, strict, stats)
            continue
        stats.read += 1
        yield Pair(s[1].strip(), t[1].strip(), f"{src_path}:{lineno}")


def resolve(spec: str | Path, src_lang: str = "fr", tgt_lang: str = "en") -> tuple[Path, ...]:
    """A --data argument: a TSV file, or a prefix P with P.fr + P.en (plain or compressed) beside it."""
    path = Path(spec)
    if path.is_file():
        return (path,)
    for suffix in ("", *COMPRESSED):
        src, tgt = Path(f"{spec}.{src_lang}{suffix}"), Path(f"{spec}.{tgt_lang}{suffix}")
        if src.is_file() and tgt.is_file():
            return (src, tgt)
    raise DataError(
        f"{spec}: no such data; give a TSV file (source<TAB>target) or a prefix P with P.{src_lang} and P.{tgt_lang}"
    )


# ISO 639-2/3 codes whose first two letters are not the ISO 639-1 code (Tatoeba names its files fra-eng.tsv).
ISO3_TO_ISO1 = {
    "fre": "fr",
    "ger": "de",
    "deu": "de",
    "spa": "es",
    "por": "pt",
    "dut": "nl",
    "nld": "nl",
    "zho": "zh",
    "chi": "zh",
    "cmn": "zh",
    "jpn": "ja",
    "cze": "cs",
    "ces": "cs",
    "rum": "ro",
    "ron": "ro",
    "swe": "sv",
    "gre": "el",
    "ell": "el",
    "ukr": "uk",
    "heb": "he",
    "pol": "pl",
    "tur": "tr",
    "ara": "ar",
    "kor": "ko",
}


def iso1(code: str) -> str:
    """ "fra", "fre" or "fr" → "fr": the two-letter code a language option or a file name means."""
    code = code.lower()
    return ISO3_TO_ISO1.get(code, code[:2])


def tsv_languages(path: Path) -> tuple[str, str] | None:
    """(first column's language, second's) from a TSV's name, "fra-eng.tsv" → ("fr", "en"); None if it names none."""
    stem = path.name.lower()
    for suffix in COMPRESSED:
        stem = stem.removesuffix(suffix)
    stem = stem.removesuffix(".tsv")
    first, sep, second = stem.partition("-")
    if not sep or not all(code.isalpha() and len(code) in (2, 3) for code in (first, second)):
        return None
    return iso1(first), iso1(second)


def read_corpus(
    spec: str | Path,
    *,
    src_lang: str = "fr",
    tgt_lang: str = "en",
    strict: bool = True,
    stats: ReadStats | None = None,
    swap: bool = False,
    keep_empty: bool = False,
) -> Iterator[Pair]:
    """The pairs of a --data argument, source in src_lang; swap=True reads them the other way round.

    Prefix data picks its files by language. A TSV is source<TAB>target, unless its name says its
    languages the other way round ("fra-eng.tsv" read with src_lang="en", tgt_lang="fr"), so that
    one --src-lang/--tgt-lang turns every --data source around together."""
    files = resolve(spec, src_lang, tgt_lang)
    if len(files) == 1 and tsv_languages(files[0]) == (iso1(tgt_lang), iso1(src_lang)):
        swap = not swap  # a TSV named the other way round
    pairs = (
        read_tsv(files[0], strict=strict, stats=stats, keep_empty=keep_empty)
        if len(files) == 1
        else read_aligned(*files, strict=strict, stats=stats, keep_empty=keep_empty)
    )
    return (Pair(p.tgt, p.src, p.origin) for p in pairs) if swap else pairs


@dataclass(frozen=True)
class Example:
    src: list[int]  # piece ids, EOS appended
    tgt: list[int]  # piece ids, BOS first and EOS last
    parts: tuple[Example, ...] = ()  # the examples a joined one was made of (--concat), in order


def join_examples(parts: Sequence[Example]) -> Example:
    """One example of several pairs, side by side: their pieces in order, one BOS and one EOS.

    SentencePiece never lets a piece cross a space, so this is what the joined text encodes to."""
    src = [i for p in parts for i in p.src[:-1]] + parts[-1].src[-1:]
    tgt = parts[0].tgt[:1] + [i for p in parts for i in p.tgt[1:-1]] + parts[-1].tgt[-1:]
    return Example(src, tgt, tuple(parts))


def length_ok(src_len: int, tgt_len: int, max_len: int, max_ratio: float) -> bool:
    if src_len > max_len or tgt_len > max_len:
        return False
    return max(src_len, tgt_len) <= max_ratio * max(1, min(src_len, tgt_len))


def heldout_bucket(src: str) -> int:
    """A stable bucket in [0, 1000) from the source sentence's hash.

    Held-out splits are bucket ranges, so they depend only on the sentence, never on file order,
    and every copy of a held-out source leaves training with it.
    """
    return int.from_bytes(hashlib.blake2b(src.encode("utf-8"), digest_size=8).digest(), "big") % 1000


def split_heldout(
    pairs: Iterable[Pair], valid_per_mille: int, test_per_mille: int = 0
) -> tuple[list[Pair], list[Pair], list[Pair]]:
    """(train, valid, test): valid = buckets [0, v), test = buckets [v, v + t) of `heldout_bucket`."""
    train, valid, test = [], [], []
    for p in pairs:
        b = heldout_bucket(p.src)
        (valid if b < valid_per_mille else test if b < valid_per_mille + test_per_mille else train).append(p)
    return train, valid, test


def heldout_range(pairs: Iterable[Pair], lo: int, hi: int) -> list[Pair]:
    """The pairs whose `heldout_bucket` is in [lo, hi): a held-out split rebuilt from the data alone."""
    return [p for p in pairs if lo <= heldout_bucket(p.src) < hi]


def write_aligned(pairs: Sequence[Pair], src_path: str | Path, tgt_path: str | Path) -> None:
    """Write pairs as two line-aligned UTF-8 files (what `read_aligned` and `tt eval` read), atomically."""
    atomic_write_bytes(src_path, "".join(p.src + "\n" for p in pairs).encode("utf-8"))
    atomic_write_bytes(tgt_path, "".join(p.tgt + "\n" for p in pairs).encode("utf-8"))


def token_batches(
    src_lens: Sequence[int], tgt_lens: Sequence[int], max_tokens: int, *, seed: int, epoch: int, shuffle: bool = True
) -> list[list[int]]:
    """Group example indices into batches of about `max_tokens` (source + target, with padding).

    Examples are sorted by length (ties broken at random per epoch) so a batch pads little; the
    batch order is then shuffled. The same (seed, epoch) always gives the same batches, which is
    what makes resuming mid-epoch exact.
    """
    import numpy as np

    n = len(src_lens)
    g = torch.Generator().manual_seed(seed * 1_000_003 + epoch)
    noise = torch.rand(n, generator=g, dtype=torch.float32).numpy() if shuffle else np.zeros(n, dtype=np.float32)
    src_lens, tgt_lens = np.asarray(src_lens, dtype=np.int64), np.asarray(tgt_lens, dtype=np.int64)
    # By (source length, target length, noise); lexsort is stable, as sorted() was, for equal keys.
    order = np.lexsort((noise, tgt_lens, src_lens)).tolist()
    src_lens, tgt_lens = src_lens.tolist(), tgt_lens.tolist()
    batches, current, max_s, max_t = [], [], 0, 0
    for i in order:
        s, t = max(max_s, src_lens[i]), max(max_t, tgt_lens[i])
        if current and (len(current) + 1) * (s + t) > max_tokens:
            batches.append(current)
            current, s, t = [], src_lens[i], tgt_lens[i]
        current.append(i)
        max_s, max_t = s, t
    if current:
        batches.append(current)
    if shuffle:
        perm = torch.randperm(len(batches), generator=g).tolist()
        batches = [batches[i] for i in perm]
    return batches


def collate(examples: Sequence[Example], pad_id: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """-> src (B, S), tgt_in (B, T) = BOS y1..yn, tgt_out (B, T) = y1..yn EOS; right-padded."""
    b = len(examples)
    s = max(len(e.src) for e in examples)
    t = max(len(e.tgt) for e in examples) - 1
    src = torch.full((b, s), pad_id, dtype=torch.long)
    tgt = torch.full((b, t + 1), pad_id, dtype=torch.long)
    for i, e in enumerate(examples):
        src[i, : len(e.src)] = torch.tensor(e.src)
        tgt[i, : len(e.tgt)] = torch.tensor(e.tgt)
    return src, tgt[:, :-1], tgt[:, 1:]
