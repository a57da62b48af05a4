"""Encoded training examples on disk, memory-mapped: a corpus is read, cleaned and encoded once.

A shard is one directory: `src.ids` and `tgt.ids` hold every example's piece ids back to back
(EOS appended to the source, BOS and EOS around the target, as `Example` holds them), `src.off` and
`tgt.off` where each example starts (int64, n + 1 entries), `meta.json` the dtype, count and the
numbers the run logs. Its name carries a hash of everything its contents depend on (tokenizer,
files, cleaning, limits), so a resumed run, another DDP rank or a second run with the same
tokenizer opens it instead of reading the corpus again, and a changed setting never opens a stale one.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from core.data.readers import Example

CACHE_VERSION = 1


def cache_key(parts: dict[str, Any]) -> str:
    """A short stable hash of a JSON-able description of what a shard's contents depend on."""
    text = json.dumps({"version": CACHE_VERSION, **parts}, sort_keys=True, default=str)
    return hashlib.blake2b(text.encode("utf-8"), digest_size=10).hexdigest()


def file_identity(path: Path) -> dict[str, Any]:
    """What identifies a data file: its size and a hash of its bytes (about 0.5 s per GB).

    Not its path or modification time: a corpus copied, re-mounted or restored elsewhere (a shared data
    directory re-created between sessions) is the same data, and re-reading and re-encoding Europarl
    costs half an hour, where hashing its 120 MB of xz costs a fraction of a second.
    """
    digest = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return {"size": path.stat().st_size, "blake2b": digest.hexdigest()}


class TokenShard(Sequence[Example]):
    """One corpus's encoded examples, read lazily from memory-mapped arrays."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.meta = json.loads((directory / "meta.json").read_text(encoding="utf-8"))
        dtype = np.dtype(self.meta["dtype"])
        n = self.meta["examples"]
        self.src_off = np.fromfile(directory / "src.off", dtype=np.int64)
        self.tgt_off = np.fromfile(directory / "tgt.off", dtype=np.int64)
        if len(self.src_off) != n + 1 or len(self.tgt_off) != n + 1:
            raise ValueError(f"{directory}: offsets do not match meta.json")
        self.src_ids = _map(directory / "src.ids", dtype, int(self.src_off[-1]))
        self.tgt_ids = _map(directory / "tgt.ids", dtype, int(self.tgt_off[-1]))

    def __len__(self) -> int:
        return len(self.src_off) - 1

    def __getitem__(self, i: int) -> Example:  # type: ignore[override]
        if not -len(self) <= i < len(self):
            raise IndexError(i)
        i %= len(self)
        src = self.src_ids[self.src_off[i] : self.src_off[i + 1]].tolist()
        tgt = self.tgt_ids[self.tgt_off[i] : self.tgt_off[i + 1]].tolist()
        return Example(src, tgt)

    def src_lens(self) -> np.ndarray:
        return np.diff(self.src_off)

    def tgt_lens(self) -> np.ndarray:
        return np.diff(self.tgt_off)


def _map(path: Path, dtype: np.dtype, count: int) -> np.ndarray:
    if count == 0:  # numpy cannot map an empty file
        return np.zeros(0, dtype=dtype)
    return np.memmap(path, dtype=dtype, mode="r", shape=(count,))


def open_shard(directory: Path) -> TokenShard | None:
    """The shard in `directory`, or None when there is none (or only a half-written one)."""
    if not (directory / "meta.json").is_file():
        return None
    try:
        return TokenShard(directory)
    except (OSError, ValueError, KeyError, json.JSONDecodeError):
        return None


def write_shard(
    directory: Path, src: Sequence[Sequence[int]], tgt: Sequence[Sequence[int]], vocab_size: int, **meta: Any
) -> TokenShard:
    """Write encoded examples as a shard, atomically: built in a temporary directory beside it, then renamed."""
    if len(src) != len(tgt):
        raise ValueError("src and tgt hold different numbers of examples")
    dtype = np.dtype(np.uint16 if vocab_size <= 65536 else np.int32)
    directory.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{directory.name}.", dir=directory.parent))
    try:
        for name, seqs in (("src", src), ("tgt", tgt)):
            lens = np.fromiter((len(s) for s in seqs), dtype=np.int64, count=len(seqs))
            np.concatenate([[0], np.cumsum(lens)]).astype(np.int64).tofile(tmp / f"{name}.off")
            flat = np.fromiter((i for s in seqs for i in s), dtype=dtype, count=int(lens.sum()))
            flat.tofile(tmp / f"{name}.ids")
        info = {"dtype": dtype.name, "examples": len(src), **meta}
        (tmp / "meta.json").write_text(json.dumps(info, indent=1, sort_keys=True), encoding="utf-8")
        for f in tmp.iterdir():
            with open(f, "rb") as fh:
                os.fsync(fh.fileno())
        if directory.exists():  # another process finished the same shard first: its copy is as good
            shutil.rmtree(tmp)
        else:
            os.replace(tmp, directory)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    shard = open_shard(directory)
    if shard is None:
        raise OSError(f"{directory}: the token cache could not be read back")
    return shard


class ConcatExamples(Sequence[Example]):
    """Several example sequences (shards, lists) as one, indexed globally, with their lengths as arrays."""

    def __init__(self, parts: Sequence[Sequence[Example]]):
        self.parts = list(parts)
        self.sizes = [len(p) for p in self.parts]
        self.starts = np.concatenate([[0], np.cumsum(self.sizes)]).astype(np.int64)
        self._src = np.concatenate([_lens(p, "src") for p in self.parts]) if self.parts else np.zeros(0, np.int64)
        self._tgt = np.concatenate([_lens(p, "tgt") for p in self.parts]) if self.parts else np.zeros(0, np.int64)

    def __len__(self) -> int:
        return int(self.starts[-1])

    def __getitem__(self, i: int) -> Example:  # type: ignore[override]
        if not 0 <= i < len(self):
            raise IndexError(i)
        part = int(np.searchsorted(self.starts, i, side="right")) - 1
        return self.parts[part][i - int(self.starts[part])]

    def src_lens(self) -> np.ndarray:
        return self._src

    def tgt_lens(self) -> np.ndarray:
        return self._tgt


def _lens(part: Sequence[Example], side: str) -> np.ndarray:
    if isinstance(part, TokenShard):
        return part.src_lens() if side == "src" else part.tgt_lens()
    return np.fromiter((len(getattr(e, side)) for e in part), dtype=np.int64, count=len(part))
