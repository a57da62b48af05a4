"""The corpora `tt data get` knows: where each lives upstream and how it becomes training files.

core/download.py fetches the files; each Source's `prepare` turns them into what `tt train` and
`tt eval` read (Tatoeba's zip into a French-first TSV, Multi30k's .gz files into plain text).
"""

from __future__ import annotations

import gzip
import io
import os
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from core.errors import DownloadError


def error_reason(exc: BaseException) -> str:
    """The human part of a network or disk error ("Connection refused", "timed out")."""
    import urllib.error

    if isinstance(exc, urllib.error.URLError) and not isinstance(exc, urllib.error.HTTPError):
        if not isinstance(exc.reason, BaseException):
            return str(exc.reason)
        exc = exc.reason
    if isinstance(exc, TimeoutError):
        return "timed out"
    return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__


@dataclass(frozen=True)
class RemoteFile:
    name: str  # the file name in the cache, and the last part of its URL
    sha256: str | None = None  # None: recorded in manifest.json on first download, verified after


@dataclass(frozen=True)
class Source:
    name: str
    description: str
    base_url: str  # each file is fetched from base_url + name
    files: tuple[RemoteFile, ...]
    prepare: Callable[[Path], dict[str, int]]  # corpus dir → sentence pairs per data set
    outputs: tuple[str, ...] = ()  # files prepare() writes; the corpus is ready when all exist
    train: str = ""  # `tt train --data`, relative to the corpus directory
    valid: str | None = None  # `tt train --valid`, when the corpus has an official dev set
    test: str | None = None  # prefix P of the test set (P.fr + P.en), for `tt eval`

    def train_args(self, directory: Path) -> list[str]:
        """The `tt train` options that use this corpus, once it sits in `directory`."""
        args = ["--data", str(directory / self.train)]
        return args + ["--valid", str(directory / self.valid)] if self.valid else args

    def eval_args(self, directory: Path) -> list[str]:
        """The `tt eval` options that score a model on this corpus's test set."""
        return ["--src", f"{directory / self.test}.fr", "--ref", f"{directory / self.test}.en"] if self.test else []

    def url(self, name: str, base_url: str | None = None) -> str:
        base = base_url or self.base_url
        if len(self.files) == 1 and base.endswith("/" + name):
            return base  # --url gave the file itself
        return base.rstrip("/") + "/" + name


def _delete_bad(path: Path, what: str) -> DownloadError:
    path.unlink(missing_ok=True)
    return DownloadError(f"{path}: {what}; deleted it (the server may have sent an error page), run again")


def prepare_tatoeba(directory: Path) -> dict[str, int]:
    """fra.txt in the zip is English<TAB>French<TAB>attribution; write fra-eng.tsv French first."""
    from core.files import atomic_path

    archive, tsv = directory / "fra-eng.zip", directory / "fra-eng.tsv"
    pairs = lineno = 0
    try:
        with zipfile.ZipFile(archive) as zf:
            if "fra.txt" not in zf.namelist():
                raise DownloadError(f"{archive}: no fra.txt inside (found: {', '.join(zf.namelist()) or 'nothing'})")
            with atomic_path(tsv) as tmp, open(tmp, "w", encoding="utf-8") as out, zf.open("fra.txt") as raw:
                for lineno, line in enumerate(io.TextIOWrapper(raw, encoding="utf-8", newline=""), start=1):
                    cols = line.rstrip("\r\n").split("\t")
                    if len(cols) >= 2 and cols[0].strip() and cols[1].strip():
                        out.write(f"{cols[1].strip()}\t{cols[0].strip()}\n")
                        pairs += 1
            if "_about.txt" in zf.namelist():
                # The licence (CC-BY 2.0 FR) asks for attribution: keep the notice beside the data.
                with atomic_path(directory / "ABOUT.txt") as tmp:
                    tmp.write_bytes(zf.read("_about.txt"))
    except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
        raise _delete_bad(archive, f"not a valid zip archive ({exc})") from None
    except UnicodeDecodeError as exc:
        raise DownloadError(f"{archive}: fra.txt:{lineno + 1}: invalid UTF-8 ({exc.reason})") from None
    except OSError as exc:
        raise DownloadError(f"{tsv}: cannot write ({error_reason(exc)})") from None
    if not pairs:
        raise DownloadError(f"{archive}: fra.txt holds no English<TAB>French lines")
    return {"fra-eng.tsv": pairs}


def prepare_multi30k(directory: Path) -> dict[str, int]:
    """Unpack each split beside its .gz (`tt eval` reads plain files) and check its sides align."""
    from core.files import atomic_path

    pairs = {}
    for split in ("train", "val", "test_2016_flickr"):
        lines = {}
        for lang in ("fr", "en"):
            packed, plain = directory / f"{split}.{lang}.gz", directory / f"{split}.{lang}"
            try:
                with gzip.open(packed, "rb") as src, atomic_path(plain) as tmp, open(tmp, "wb") as out:
                    lines[lang] = 0
                    for line in src:
                        out.write(line)
                        lines[lang] += 1
            except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
                raise _delete_bad(packed, f"not a valid gzip file ({exc})") from None
            except OSError as exc:
                raise DownloadError(f"{plain}: cannot write ({error_reason(exc)})") from None
        if lines["fr"] != lines["en"]:
            raise DownloadError(
                f"{directory / split}.fr.gz: {lines['fr']} lines but {split}.en.gz has {lines['en']}; they do not align"
            )
        pairs[split] = lines["fr"]
    return pairs


TATOEBA = Source(
    name="tatoeba",
    description="Tatoeba French–English sentence pairs, packaged by manythings.org/anki (CC-BY 2.0 FR)",
    base_url="http://www.manythings.org/anki/",
    files=(RemoteFile("fra-eng.zip"),),
    prepare=prepare_tatoeba,
    outputs=("fra-eng.tsv",),
    train="fra-eng.tsv",
)
MULTI30K = Source(
    name="multi30k",
    description="Multi30k task 1 image captions, French–English: train 29k, val 1k, test 2016 flickr 1k",
    base_url="https://github.com/multi30k/dataset/raw/master/data/task1/raw/",
    files=tuple(
        RemoteFile(f"{split}.{lang}.gz") for split in ("train", "val", "test_2016_flickr") for lang in ("fr", "en")
    ),
    prepare=prepare_multi30k,
    outputs=tuple(f"{split}.{lang}" for split in ("train", "val", "test_2016_flickr") for lang in ("fr", "en")),
    train="train",  # prefix: train.fr + train.en
    valid="val",
    test="test_2016_flickr",
)
SOURCES = {s.name: s for s in (TATOEBA, MULTI30K)}


def default_cache_dir() -> Path:
    """$TT_CACHE, else $XDG_CACHE_HOME/tt/data, else ~/.cache/tt/data."""
    if os.environ.get("TT_CACHE"):
        return Path(os.environ["TT_CACHE"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "tt" / "data"


def source(name: str) -> Source:
    name = name.lower()
    if name not in SOURCES:
        raise DownloadError(f"unknown corpus {name!r}; known: {', '.join(SOURCES)}")
    return SOURCES[name]


def base_url_for(src: Source, url: str | None = None, mirror: str | None = None) -> str:
    """--url wins, then a mirror (TT_DATA_MIRROR) laid out as MIRROR/<corpus>/<file>, then upstream."""
    base = url or (mirror.rstrip("/") + "/" + src.name + "/" if mirror else src.base_url)
    if not base.startswith(("http://", "https://")):
        raise DownloadError(f"{base}: not an http:// or https:// URL")
    return base


