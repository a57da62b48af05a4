"""Fetch the public corpora (Tatoeba fr–en, Multi30k, OPUS) into a local cache, resumably and verified.

Each file is downloaded to NAME.part, resumed with an HTTP Range request after an interruption,
checked against its sha256 and renamed to NAME only when whole, so the cache never holds a
truncated NAME. Upstream files are not pinned: they could not be fetched when this was written,
and manythings.org re-publishes its zip now and then. A source's checksum may therefore be None:
the first download records the sha256 in manifest.json beside the files, and every later run
verifies the cached file against that record (a pinned checksum is verified on every download).

Nothing here prints; `on_progress` receives a Progress per chunk and tt_cli draws the bar.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import re
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from core.data.corpora import Source, error_reason
from core.errors import DownloadError
from core.version import __version__

MANIFEST = "manifest.json"
CHUNK = 1 << 16
TIMEOUT = 30.0  # seconds without a byte before a download counts as failed
# Some hosts refuse urllib's default "Python-urllib/3.x" agent; say who is asking instead.
USER_AGENT = f"tt/{__version__} (python-urllib)"


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
    status: str  # "downloaded" | "resumed" | "cached" | "placed" (--from: a copy the user had)
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
        raise DownloadError(f"cannot reach {url}: {error_reason(exc)}") from None


def _read(response: http.client.HTTPResponse, url: str, done: int) -> bytes:
    try:
        return response.read(CHUNK)
    except (OSError, http.client.HTTPException) as exc:
        why = error_reason(exc)
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
        raise DownloadError(f"{dest.parent}: cannot create the cache directory ({error_reason(exc)})") from None
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
        raise DownloadError(f"{dest}: cannot write ({error_reason(exc)})") from None
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
                raise DownloadError(f"{meta}: cannot write ({error_reason(exc)})") from None
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
            raise DownloadError(f"{part}: cannot write ({error_reason(exc)})") from None
    if total is not None and done < total:
        # urllib returns b"" when the connection drops early; only the length tells.
        raise DownloadError(
            f"download of {url} interrupted after {done} of {total} bytes (connection closed); run again to resume"
        )
    return offset, done


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
    from core.files import atomic_write_bytes

    try:
        atomic_write_bytes(directory / MANIFEST, (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode())
    except OSError as exc:
        raise DownloadError(f"{directory / MANIFEST}: cannot write ({error_reason(exc)})") from None


def fetch(
    src: Source,
    cache_dir: str | Path,
    *,
    base_url: str | None = None,
    force: bool = False,
    on_progress: Callable[[Progress], None] | None = None,
    timeout: float = TIMEOUT,
    local: Path | None = None,
) -> Fetched:
    """Download (or verify in the cache) every file of `src`, then prepare it for `tt train`.

    local: a copy the user already has — the file itself (a one-file corpus) or a directory holding the
    files by their names — placed in the cache as a download would be (checksummed, whole or not at all)."""
    directory = Path(cache_dir).expanduser() / src.dirname
    base = base_url or src.base_url
    manifest = read_manifest(directory)
    manifest["corpus"] = src.name
    result = Fetched(src, directory)
    changed = False
    for remote in src.files:
        dest, url = directory / remote.name, src.url(remote.name, base)
        entry = manifest["files"].get(remote.name, {})
        if local is not None:
            got = place_file(_local_copy(local, remote.name, len(src.files)), dest, remote.sha256)
            entry = {"fetched": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        elif dest.is_file() and not force:
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


def _local_copy(local: Path, name: str, files: int) -> Path:
    path = local / name if local.is_dir() else local
    if not path.is_file() or (files > 1 and not local.is_dir()):
        raise DownloadError(f"{local}: no {name} there (--from takes the file, or a directory that holds it)")
    return path


def place_file(source: Path, dest: Path, sha256: str | None = None) -> Downloaded:
    """Copy a file the user already has into the cache through a temporary file, checked against the pin."""
    import shutil

    from core.files import atomic_path, make_dir

    actual = sha256_file(source)
    if sha256 and actual != sha256:
        raise DownloadError(f"{source}: not the expected file (sha256 {actual}, expected {sha256})")
    make_dir(dest.parent)
    try:
        with atomic_path(dest) as tmp:
            shutil.copyfile(source, tmp)
    except OSError as exc:
        raise DownloadError(f"cannot copy {source} to {dest}: {error_reason(exc)}") from None
    return Downloaded(dest, source.resolve().as_uri(), actual, dest.stat().st_size, "placed")


@dataclass(frozen=True)
class CacheStatus:
    source: Source
    directory: Path
    present: int  # files of the source in the cache, whole
    partial: int  # bytes in .part files waiting to be resumed
    ready: bool  # every file present and prepared: `tt train` can use it
    size: int = 0  # bytes on disk in the corpus directory (downloads and prepared files)
    pairs: dict[str, int] = field(default_factory=dict)  # from the manifest, once prepared


def cache_status(src: Source, cache_dir: str | Path) -> CacheStatus:
    directory = Path(cache_dir).expanduser() / src.dirname
    present = sum((directory / f.name).is_file() for f in src.files)
    partial = sum(p.stat().st_size for f in src.files if (p := directory / f"{f.name}.part").is_file())
    ready = present == len(src.files) and all((directory / out).is_file() for out in src.outputs)
    size = sum(p.stat().st_size for p in directory.iterdir() if p.is_file()) if directory.is_dir() else 0
    pairs = {}
    if ready:
        try:
            pairs = dict(read_manifest(directory).get("pairs") or {})
        except DownloadError:
            pairs = {}  # `tt data get` says what is wrong with it; a listing should still list
    return CacheStatus(src, directory, present, partial, ready, size, pairs)


def cached_sources(cache_dir: str | Path) -> list[Source]:
    """OPUS corpora in the cache (their manifest names them), so a listing shows every version fetched."""
    from core.data.corpora import source

    root = Path(cache_dir).expanduser()
    found = []
    for directory in sorted(root.glob("opus-*")) if root.is_dir() else []:
        try:
            found.append(source(str(read_manifest(directory).get("corpus", ""))))
        except DownloadError:
            continue  # not a corpus tt wrote
    return found
