"""Fetch the public corpora (Tatoeba fr–en, Multi30k) into a local cache, resumably and verified.

Each file is downloaded to NAME.part, resumed with an HTTP Range request after an interruption,
checked against its sha256 and renamed to NAME only when whole, so the cache never holds a
truncated NAME. Upstream files are not pinned: they could not be fetched when this was written,
and manythings.org re-publishes its zip now and then. A source's checksum may therefore be None:
the first download records the sha256 in manifest.json beside the files, and every later run
verifies the cached file against that record (a pinned checksum is verified on every download).

Nothing here prints; `on_progress` receives a Progress per chunk and tt_cli draws the bar.
"""

from __future__ import annotations

import gzip
import hashlib
import http.client
import io
import json
import os
import re
import time
import urllib.error
import urllib.request
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from core import __version__
from core.errors import DataError

MANIFEST = "manifest.json"
CHUNK = 1 << 16
TIMEOUT = 30.0  # seconds without a byte before a download counts as failed
# Some hosts refuse urllib's default "Python-urllib/3.x" agent; say who is asking instead.
USER_AGENT = f"tt/{__version__} (python-urllib)"


class DownloadError(DataError):
    """A corpus that could not be fetched, verified or written; the message names the URL or file."""


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


@dataclass(frozen=True)
class Progress:
    file: str
    done: int  # bytes on disk so far (a resumed download starts above zero)
    total: int | None  # None when the server does not say


@dataclass(frozen=True)
class Downloaded:
    path: Path
    url: str
    sha256: str
    size: int
    status: str  # "downloaded" | "resumed" | "cached"
    resumed_from: int = 0


@dataclass
class Fetched:
    source: Source
    directory: Path
    files: list[Downloaded] = field(default_factory=list)
    pairs: dict[str, int] = field(default_factory=dict)  # data set → sentence pairs


# ------------------------------------------------------------------------------------ one file


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _reason(exc: BaseException) -> str:
    """The human part of a network or disk error ("Connection refused", "timed out")."""
    if isinstance(exc, urllib.error.URLError) and not isinstance(exc, urllib.error.HTTPError):
        if not isinstance(exc.reason, BaseException):
            return str(exc.reason)
        exc = exc.reason
    if isinstance(exc, TimeoutError):
        return "timed out"
    return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__


def _request(url: str, offset: int, validator: str | None, timeout: float) -> http.client.HTTPResponse | None:
    """The open response, or None when the server says the .part is already whole (416 at its size)."""
    headers = {"User-Agent": USER_AGENT}
    if offset:
        headers["Range"] = f"bytes={offset}-"
        if validator:
            # If the file changed since the .part began, the server sends all of it (200), not a mix.
            headers["If-Range"] = validator
    try:
        return urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=timeout)
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and offset:
            total = re.fullmatch(r"bytes \*/(\d+)", exc.headers.get("Content-Range", ""))
            exc.close()
            if total and int(total.group(1)) == offset:
                return None
            raise _Restart from None
        raise DownloadError(f"{url}: the server answered HTTP {exc.code} {exc.reason}") from None
    except ValueError:
        raise DownloadError(f"{url}: not a valid URL") from None
    except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
        raise DownloadError(f"cannot reach {url}: {_reason(exc)}") from None


def _read(response: http.client.HTTPResponse, url: str, done: int) -> bytes:
    try:
        return response.read(CHUNK)
    except (OSError, http.client.HTTPException) as exc:
        why = _reason(exc)
        raise DownloadError(f"download of {url} interrupted after {done} bytes ({why}); run again to resume") from None


class _Restart(Exception):
    """The .part cannot be resumed (the server's range does not fit it): start from byte 0."""


def download_file(
    url: str,
    dest: str | Path,
    *,
    sha256: str | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    timeout: float = TIMEOUT,
) -> Downloaded:
    """Fetch `url` to `dest` through dest.part: resumed if a .part is there, verified, renamed when whole."""
    dest = Path(dest)
    part = dest.with_name(dest.name + ".part")
    meta = dest.with_name(dest.name + ".part.json")  # the server's validator, for If-Range on resume
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DownloadError(f"{dest.parent}: cannot create the cache directory ({_reason(exc)})") from None
    offset = part.stat().st_size if part.is_file() else 0
    for _attempt in range(2):
        try:
            resumed_from, size = _fetch_into(url, part, meta, offset, dest.name, on_progress, timeout)
            break
        except _Restart:
            part.unlink(missing_ok=True)
            offset = resumed_from = 0
    else:  # pragma: no cover - a server that refuses even a plain GET range-wise
        raise DownloadError(f"{url}: the server's byte ranges do not fit the file; delete {part} and retry")
    actual = sha256_file(part)
    if sha256 and actual != sha256.lower():
        part.unlink(missing_ok=True)
        meta.unlink(missing_ok=True)
        raise DownloadError(
            f"{url}: checksum mismatch (sha256 {actual}, expected {sha256}); deleted the download, run again to retry"
        )
    try:
        os.replace(part, dest)
    except OSError as exc:
        raise DownloadError(f"{dest}: cannot write ({_reason(exc)})") from None
    meta.unlink(missing_ok=True)
    status = "resumed" if resumed_from else "downloaded"
    return Downloaded(dest, url, actual, size, status, resumed_from)


def _fetch_into(
    url: str,
    part: Path,
    meta: Path,
    offset: int,
    name: str,
    on_progress: Callable[[Progress], None] | None,
    timeout: float,
) -> tuple[int, int]:
    """Append the rest of `url` to `part` (or write it afresh); (where it started, final size)."""
    validator = None
    if offset and meta.is_file():
        try:
            validator = json.loads(meta.read_text()).get("validator")
        except (OSError, ValueError):
            validator = None  # a sidecar we can't read only costs the If-Range safety net
    response = _request(url, offset, validator, timeout)
    if response is None:
        return offset, offset
    with response:
        total = None
        if response.status == 206:
            match = re.fullmatch(r"bytes (\d+)-\d+/(\d+|\*)", response.headers.get("Content-Range", ""))
            if not match or int(match.group(1)) != offset:
                raise _Restart
            total = int(match.group(2)) if match.group(2) != "*" else None
        else:  # 200: no range asked, or the server ignored it / the file changed (If-Range)
            offset = 0
            length = response.headers.get("Content-Length")
            total = int(length) if length and length.isdigit() else None
            tag = response.headers.get("ETag") or response.headers.get("Last-Modified")
            try:
                meta.write_text(json.dumps({"url": url, "validator": tag}))
            except OSError as exc:
                raise DownloadError(f"{meta}: cannot write ({_reason(exc)})") from None
        done = offset
        if on_progress:
            on_progress(Progress(name, done, total))
        try:  # read errors inside are DownloadErrors already; an OSError here is the disk's
            with open(part, "ab" if offset else "wb") as f:
                while chunk := _read(response, url, done):
                    f.write(chunk)
                    done += len(chunk)
                    if on_progress:
                        on_progress(Progress(name, done, total))
                f.flush()
                os.fsync(f.fileno())
        except OSError as exc:
            raise DownloadError(f"{part}: cannot write ({_reason(exc)})") from None
    if total is not None and done < total:
        # urllib returns b"" when the connection drops early; only the length tells.
        raise DownloadError(
            f"download of {url} interrupted after {done} of {total} bytes (connection closed); run again to resume"
        )
    return offset, done


# ------------------------------------------------------------------------------------- corpora


def _delete_bad(path: Path, what: str) -> DownloadError:
    path.unlink(missing_ok=True)
    return DownloadError(f"{path}: {what}; deleted it (the server may have sent an error page), run again")


def prepare_tatoeba(directory: Path) -> dict[str, int]:
    """fra.txt in the zip is English<TAB>French<TAB>attribution; write fra-eng.tsv French first."""
    from core.checkpoint import atomic_path

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
        raise DownloadError(f"{tsv}: cannot write ({_reason(exc)})") from None
    if not pairs:
        raise DownloadError(f"{archive}: fra.txt holds no English<TAB>French lines")
    return {"fra-eng.tsv": pairs}


def prepare_multi30k(directory: Path) -> dict[str, int]:
    """Unpack each split beside its .gz (`tt eval` reads plain files) and check its sides align."""
    from core.checkpoint import atomic_path

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
                raise DownloadError(f"{plain}: cannot write ({_reason(exc)})") from None
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


def read_manifest(directory: Path) -> dict:
    path = directory / MANIFEST
    if not path.is_file():
        return {"files": {}}
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DownloadError(f"{path}: unreadable manifest ({exc}); delete it to re-record checksums") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict):
        raise DownloadError(f"{path}: not a tt data manifest; delete it to re-record checksums")
    return manifest


def _write_manifest(directory: Path, manifest: dict) -> None:
    from core.checkpoint import atomic_write_bytes

    try:
        atomic_write_bytes(directory / MANIFEST, (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode())
    except OSError as exc:
        raise DownloadError(f"{directory / MANIFEST}: cannot write ({_reason(exc)})") from None


def fetch(
    src: Source,
    cache_dir: str | Path,
    *,
    base_url: str | None = None,
    force: bool = False,
    on_progress: Callable[[Progress], None] | None = None,
    timeout: float = TIMEOUT,
) -> Fetched:
    """Download (or verify in the cache) every file of `src`, then prepare it for `tt train`."""
    directory = Path(cache_dir).expanduser() / src.name
    base = base_url or src.base_url
    manifest = read_manifest(directory)
    manifest["corpus"] = src.name
    result = Fetched(src, directory)
    changed = False
    for remote in src.files:
        dest, url = directory / remote.name, src.url(remote.name, base)
        entry = manifest["files"].get(remote.name, {})
        if dest.is_file() and not force:
            # Verify what is cached against the pin, else against what the first download recorded.
            expected = remote.sha256 or entry.get("sha256")
            actual = sha256_file(dest)
            if expected and actual != expected:
                dest.unlink()
                raise DownloadError(
                    f"{dest}: checksum mismatch (sha256 {actual}, expected {expected}); "
                    "deleted the bad file, run again to download it afresh"
                )
            got = Downloaded(dest, entry.get("url", url), actual, dest.stat().st_size, "cached")
        else:
            if force:  # start afresh; the cached file stays until the new one replaces it whole
                dest.with_name(dest.name + ".part").unlink(missing_ok=True)
            got = download_file(url, dest, sha256=remote.sha256, on_progress=on_progress, timeout=timeout)
            entry = {"fetched": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        result.files.append(got)
        if got.status != "cached" or "sha256" not in entry:
            manifest["files"][remote.name] = {**entry, "url": got.url, "sha256": got.sha256, "bytes": got.size}
            _write_manifest(directory, manifest)  # record each checksum as soon as it is known
            changed = True
    ready = all((directory / out).is_file() for out in src.outputs) and isinstance(manifest.get("pairs"), dict)
    if changed or not ready:
        manifest["pairs"] = src.prepare(directory)
        _write_manifest(directory, manifest)
    result.pairs = dict(manifest["pairs"])
    return result


@dataclass(frozen=True)
class CacheStatus:
    source: Source
    directory: Path
    present: int  # files of the source in the cache, whole
    partial: int  # bytes in .part files waiting to be resumed
    ready: bool  # every file present and prepared: `tt train` can use it


def cache_status(src: Source, cache_dir: str | Path) -> CacheStatus:
    directory = Path(cache_dir).expanduser() / src.name
    present = sum((directory / f.name).is_file() for f in src.files)
    partial = sum(p.stat().st_size for f in src.files if (p := directory / f"{f.name}.part").is_file())
    ready = present == len(src.files) and all((directory / out).is_file() for out in src.outputs)
    return CacheStatus(src, directory, present, partial, ready)
