"""`tt data get`: real HTTP downloads from a server on 127.0.0.1 that honours Range and If-Range.

No mocks and no internet: the server below is http.server in a thread, serving small corpora built
here (a zip with fra.txt like manythings.org's, gzip files like Multi30k's).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import random
import re
import socket
import threading
import zipfile
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from typer.testing import CliRunner

from core.data import corpora
from core.data.corpora import MULTI30K, TATOEBA
from core.data.download import DownloadError, download_file, fetch
from core.data.readers import read_corpus
from tt_cli.main import app

BLOB = random.Random(0).randbytes(150_000)  # a few chunks' worth

FRA_TXT = "".join(
    f"{en}\t{fr}\tCC-BY 2.0 (France) Attribution: tatoeba.org #{i} (CK) & #{i + 1} (x)\n"
    for i, (en, fr) in enumerate(
        [("Go.", "Va !"), ("Run!", "Cours !"), ("I see.", "Je comprends."), ("Thank you.", "Merci !")] * 5
    )
)


def tatoeba_zip() -> bytes:
    """The same bytes on every call: a member named by a bare string would carry the current time,
    so two builds a second apart would differ (and the cache tests compare them)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, text in (
            ("fra.txt", FRA_TXT),
            ("_about.txt", "Attribution: www.manythings.org/anki and tatoeba.org\n"),
        ):
            zf.writestr(zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0)), text, zipfile.ZIP_DEFLATED)
    return buffer.getvalue()


def multi30k_files() -> dict[str, bytes]:
    sizes = {"train": 12, "val": 3, "test_2016_flickr": 2}
    text = {"fr": "Un chien court dans l'herbe n° {}.\n", "en": "A dog runs in the grass no. {}.\n"}
    return {
        f"{split}.{lang}.gz": gzip.compress("".join(text[lang].format(i) for i in range(n)).encode(), mtime=0)
        for split, n in sizes.items()
        for lang in ("fr", "en")
    }


@dataclass
class ServerState:
    files: dict[str, bytes] = field(default_factory=dict)  # URL path → body
    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    cut_after: dict[str, int] = field(default_factory=dict)  # path → drop the connection after N bytes (once)
    ignore_range: bool = False  # act like a server without Range support


class RangeHandler(BaseHTTPRequestHandler):
    """GET with `Range: bytes=N-` (206) and `If-Range: <etag>` (200 when the file changed)."""

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        state: ServerState = self.server.state  # type: ignore[attr-defined]
        state.requests.append((self.path, dict(self.headers)))
        body = state.files.get(self.path)
        if body is None:
            self.send_error(404, "Not Found")
            return
        etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
        match = re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range", ""))
        if_range = self.headers.get("If-Range")
        start = int(match.group(1)) if match and not state.ignore_range and if_range in (None, etag) else None
        if start is not None and start >= len(body):
            self.send_response(416)
            self.send_header("Content-Range", f"bytes */{len(body)}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        payload = body[start or 0 :]
        self.send_response(206 if start is not None else 200)
        if start is not None:
            self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("ETag", etag)
        self.end_headers()
        cut = state.cut_after.pop(self.path, None)
        self.wfile.write(payload[:cut] if cut is not None else payload)

    def log_message(self, *args) -> None:  # keep pytest's output clean
        pass


@pytest.fixture
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), RangeHandler)
    httpd.state = ServerState()  # type: ignore[attr-defined]
    # A short poll keeps shutdown (each test's teardown) from waiting the default half second.
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    httpd.state.base = f"http://127.0.0.1:{httpd.server_address[1]}"  # type: ignore[attr-defined]
    yield httpd.state  # type: ignore[attr-defined]
    httpd.shutdown()
    httpd.server_close()


def ranges(state: ServerState, path: str) -> list[str | None]:
    return [headers.get("Range") for p, headers in state.requests if p == path]


# ---------------------------------------------------------------------------------- one file


def test_full_download_reports_progress_and_leaves_no_part(server, tmp_path):
    server.files["/blob.bin"] = BLOB
    seen = []
    got = download_file(f"{server.base}/blob.bin", tmp_path / "blob.bin", on_progress=seen.append)
    assert (tmp_path / "blob.bin").read_bytes() == BLOB
    assert got.status == "downloaded" and got.sha256 == hashlib.sha256(BLOB).hexdigest()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["blob.bin"]  # no .part, no sidecar
    assert seen[0].done == 0 and seen[-1].done == seen[-1].total == len(BLOB)
    assert [p.done for p in seen] == sorted(p.done for p in seen)
    assert ranges(server, "/blob.bin") == [None]


def test_resumes_a_partial_download_with_a_range_request(server, tmp_path):
    server.files["/blob.bin"] = BLOB
    (tmp_path / "blob.bin.part").write_bytes(BLOB[:40_000])
    seen = []
    got = download_file(f"{server.base}/blob.bin", tmp_path / "blob.bin", on_progress=seen.append)
    assert ranges(server, "/blob.bin") == ["bytes=40000-"]
    assert (tmp_path / "blob.bin").read_bytes() == BLOB
    assert (got.status, got.resumed_from, seen[0].done) == ("resumed", 40_000, 40_000)
    assert not (tmp_path / "blob.bin.part").exists()


def test_an_interrupted_download_keeps_its_part_and_the_next_run_resumes(server, tmp_path):
    server.files["/blob.bin"] = BLOB
    server.cut_after["/blob.bin"] = 70_000
    url = f"{server.base}/blob.bin"
    with pytest.raises(DownloadError, match=r"interrupted after 70000 of 150000 bytes.*run again to resume"):
        download_file(url, tmp_path / "blob.bin")
    assert (tmp_path / "blob.bin.part").read_bytes() == BLOB[:70_000]
    assert not (tmp_path / "blob.bin").exists()  # never a truncated final file
    got = download_file(url, tmp_path / "blob.bin")
    assert ranges(server, "/blob.bin") == [None, "bytes=70000-"]
    assert got.status == "resumed" and (tmp_path / "blob.bin").read_bytes() == BLOB


def test_a_file_changed_upstream_is_fetched_whole_not_spliced(server, tmp_path):
    server.files["/blob.bin"] = BLOB
    server.cut_after["/blob.bin"] = 70_000
    with pytest.raises(DownloadError):
        download_file(f"{server.base}/blob.bin", tmp_path / "blob.bin")
    changed = BLOB[::-1]
    server.files["/blob.bin"] = changed
    got = download_file(f"{server.base}/blob.bin", tmp_path / "blob.bin")
    resume_request = server.requests[-1][1]
    assert resume_request["Range"] == "bytes=70000-" and resume_request["If-Range"].startswith('"')
    assert (tmp_path / "blob.bin").read_bytes() == changed and got.status == "downloaded"


def test_a_server_that_ignores_range_gives_a_whole_file_not_a_doubled_one(server, tmp_path):
    server.files["/blob.bin"] = BLOB
    server.ignore_range = True
    (tmp_path / "blob.bin.part").write_bytes(BLOB[:1000])
    download_file(f"{server.base}/blob.bin", tmp_path / "blob.bin")
    assert (tmp_path / "blob.bin").read_bytes() == BLOB


def test_a_part_that_is_already_whole_is_finished_without_refetching(server, tmp_path):
    server.files["/blob.bin"] = BLOB
    (tmp_path / "blob.bin.part").write_bytes(BLOB)
    got = download_file(f"{server.base}/blob.bin", tmp_path / "blob.bin")  # server answers 416
    assert (tmp_path / "blob.bin").read_bytes() == BLOB and got.size == len(BLOB)


def test_a_part_longer_than_the_file_is_dropped_and_fetched_afresh(server, tmp_path):
    server.files["/blob.bin"] = BLOB[:5000]
    (tmp_path / "blob.bin.part").write_bytes(BLOB)  # a leftover of some other, longer file
    got = download_file(f"{server.base}/blob.bin", tmp_path / "blob.bin")  # 416, then a plain GET
    assert ranges(server, "/blob.bin") == ["bytes=150000-", None]
    assert (tmp_path / "blob.bin").read_bytes() == BLOB[:5000] and got.status == "downloaded"


def test_checksum_mismatch_deletes_the_download(server, tmp_path):
    server.files["/blob.bin"] = BLOB
    with pytest.raises(DownloadError, match=r"checksum mismatch \(sha256 [0-9a-f]{64}, expected 0{64}\); deleted"):
        download_file(f"{server.base}/blob.bin", tmp_path / "blob.bin", sha256="0" * 64)
    assert list(tmp_path.iterdir()) == []


def test_http_404_names_the_url_and_status(server, tmp_path):
    url = f"{server.base}/missing.zip"
    with pytest.raises(DownloadError) as err:
        download_file(url, tmp_path / "missing.zip")
    assert str(err.value) == f"{url}: the server answered HTTP 404 Not Found"


def test_connection_refused_names_the_url(tmp_path):
    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens there now
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/fra-eng.zip"
    with pytest.raises(DownloadError, match=rf"^cannot reach {re.escape(url)}: .*refused"):
        download_file(url, tmp_path / "fra-eng.zip", timeout=5)


def test_an_unwritable_cache_is_a_disk_error(server, tmp_path):
    server.files["/blob.bin"] = BLOB
    (tmp_path / "file").write_text("not a directory")
    with pytest.raises(DownloadError, match=r"file/cache: cannot create the cache directory \(Not a directory\)"):
        download_file(f"{server.base}/blob.bin", tmp_path / "file" / "cache" / "blob.bin")


# ---------------------------------------------------------------------------------- corpora


def test_tatoeba_becomes_a_french_first_tsv_and_its_checksum_is_recorded_then_verified(server, tmp_path):
    archive = tatoeba_zip()
    server.files["/tatoeba/fra-eng.zip"] = archive
    got = fetch(TATOEBA, tmp_path, base_url=f"{server.base}/tatoeba/")
    corpus = tmp_path / "tatoeba"
    pairs = list(read_corpus(corpus / "fra-eng.tsv"))
    assert (pairs[0].src, pairs[0].tgt) == ("Va !", "Go.") and len(pairs) == 20 == got.pairs["fra-eng.tsv"]
    assert "manythings" in (corpus / "ABOUT.txt").read_text()
    manifest = json.loads((corpus / "manifest.json").read_text())
    assert manifest["files"]["fra-eng.zip"]["sha256"] == hashlib.sha256(archive).hexdigest()

    again = fetch(TATOEBA, tmp_path, base_url=f"{server.base}/tatoeba/")
    assert again.files[0].status == "cached" and len(server.requests) == 1  # verified, not refetched

    (corpus / "fra-eng.zip").write_bytes(archive[:-1] + b"!")  # corrupted on disk
    with pytest.raises(DownloadError, match=r"fra-eng.zip: checksum mismatch .*deleted the bad file"):
        fetch(TATOEBA, tmp_path, base_url=f"{server.base}/tatoeba/")
    assert not (corpus / "fra-eng.zip").exists()
    assert fetch(TATOEBA, tmp_path, base_url=f"{server.base}/tatoeba/").files[0].status == "downloaded"


def test_force_keeps_the_cached_file_when_the_new_download_fails(server, tmp_path):
    server.files["/tatoeba/fra-eng.zip"] = tatoeba_zip()
    fetch(TATOEBA, tmp_path, base_url=f"{server.base}/tatoeba/")
    with pytest.raises(DownloadError, match="HTTP 404"):
        fetch(TATOEBA, tmp_path, base_url=f"{server.base}/gone/", force=True)
    assert (tmp_path / "tatoeba" / "fra-eng.zip").read_bytes() == tatoeba_zip()


def test_url_may_be_a_base_or_a_one_file_corpus_file():
    assert TATOEBA.url("fra-eng.zip", "http://m/x") == "http://m/x/fra-eng.zip"
    assert TATOEBA.url("fra-eng.zip", "http://m/y/fra-eng.zip") == "http://m/y/fra-eng.zip"
    assert MULTI30K.url("val.en.gz", "http://m/train.fr.gz/") == "http://m/train.fr.gz/val.en.gz"


def test_an_error_page_instead_of_a_zip_is_deleted(server, tmp_path):
    server.files["/tatoeba/fra-eng.zip"] = b"<html>Please enable cookies</html>"
    with pytest.raises(DownloadError, match=r"fra-eng.zip: not a valid zip archive \(.*\); deleted it"):
        fetch(TATOEBA, tmp_path, base_url=f"{server.base}/tatoeba/")
    assert not (tmp_path / "tatoeba" / "fra-eng.zip").exists()


def test_multi30k_files_are_readable_as_train_and_valid_prefixes(server, tmp_path):
    for name, body in multi30k_files().items():
        server.files[f"/multi30k/{name}"] = body
    got = fetch(MULTI30K, tmp_path, base_url=f"{server.base}/multi30k")
    assert got.pairs == {"train": 12, "val": 3, "test_2016_flickr": 2}
    args = MULTI30K.train_args(got.directory)
    train = list(read_corpus(args[args.index("--data") + 1]))
    valid = list(read_corpus(args[args.index("--valid") + 1]))
    assert (len(train), len(valid)) == (12, 3)
    assert train[0].src.startswith("Un chien") and train[0].tgt.startswith("A dog")
    # `tt eval` reads plain files: the test split is unpacked beside its .gz.
    src, ref = (got.directory / f"test_2016_flickr.{lang}" for lang in ("fr", "en"))
    assert MULTI30K.eval_args(got.directory) == ["--src", str(src), "--ref", str(ref)]
    assert src.read_text().splitlines()[1] == "Un chien court dans l'herbe n° 1."


def test_a_broken_gzip_is_deleted(server, tmp_path):
    for name, body in multi30k_files().items():
        server.files[f"/multi30k/{name}"] = body
    server.files["/multi30k/val.en.gz"] = server.files["/multi30k/val.en.gz"][:-12]  # lost its tail
    with pytest.raises(DownloadError, match=r"val.en.gz: not a valid gzip file \(.*\); deleted it"):
        fetch(MULTI30K, tmp_path, base_url=f"{server.base}/multi30k")
    assert not (tmp_path / "multi30k" / "val.en.gz").exists()
    assert (tmp_path / "multi30k" / "val.fr.gz").exists()


def test_multi30k_sides_that_do_not_align_are_an_error(server, tmp_path):
    files = multi30k_files()
    files["val.en.gz"] = gzip.compress(b"one line only\n")
    for name, body in files.items():
        server.files[f"/multi30k/{name}"] = body
    with pytest.raises(DownloadError, match=r"val.fr.gz: 3 lines but val.en.gz has 1; they do not align"):
        fetch(MULTI30K, tmp_path, base_url=f"{server.base}/multi30k")


# -------------------------------------------------------------------------------------- CLI


def test_cli_get_via_mirror_prints_a_train_line_that_reads(server, tmp_path):
    server.files["/tatoeba/fra-eng.zip"] = tatoeba_zip()
    runner = CliRunner()
    cache = tmp_path / "cache"
    args = ["data", "get", "tatoeba", "--cache-dir", str(cache)]
    result = runner.invoke(app, args, env={"TT_DATA_MIRROR": server.base})
    assert result.exit_code == 0, result.stderr
    line = result.stdout.splitlines()[1]
    assert line == f"tt train --data {cache / 'tatoeba' / 'fra-eng.tsv'}"
    assert len(list(read_corpus(line.split("--data ")[1]))) == 20
    assert "downloaded" in result.stderr and "fra-eng.tsv 20 pairs" in result.stderr

    listed = runner.invoke(app, ["data", "list"], env={"TT_CACHE": str(cache)})
    assert listed.exit_code == 0
    rows = {line.split()[0]: line for line in listed.stdout.splitlines()[1:] if not line.startswith(" ")}
    assert rows["tatoeba"].split()[1] == "ready" and rows["multi30k"].split()[1:3] == ["not", "downloaded"]


def test_cli_list_shows_a_partial_download(tmp_path):
    (tmp_path / "multi30k").mkdir()
    (tmp_path / "multi30k" / "train.fr.gz.part").write_bytes(b"x" * 1234)
    result = CliRunner().invoke(app, ["data", "list", "--cache-dir", str(tmp_path)])
    assert result.exit_code == 0
    row = next(line for line in result.stdout.splitlines() if line.startswith("multi30k "))
    assert " ".join(row.split()[1:10]) == "partial (0/6 files, 1,234 bytes to resume) 1.2 kB"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["data", "get", "tatoeba", "--url", "{base}/nowhere/"],
            "tt: error: {base}/nowhere/fra-eng.zip: the server answered HTTP 404 Not Found",
        ),
        (
            ["data", "get", "wmt14"],
            "tt: error: unknown corpus 'wmt14'; known: tatoeba, multi30k, europarl, or opus:NAME (e.g. opus:Europarl); "
            "test sets such as WMT's come through tt eval --testset",
        ),
        (["data", "get", "tatoeba", "--url", "ftp://x/"], "tt: error: ftp://x/: not an http:// or https:// URL"),
    ],
)
def test_cli_errors_are_one_line(server, tmp_path, args, message):
    args = [a.format(base=server.base) for a in args] + ["--cache-dir", str(tmp_path)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines()[-1] == message.format(base=server.base)
    assert "Traceback" not in result.stderr and result.stdout == ""


def test_default_cache_follows_tt_cache_then_xdg(monkeypatch, tmp_path):
    monkeypatch.delenv("TT_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert corpora.default_cache_dir() == tmp_path / "tt" / "data"
    monkeypatch.setenv("TT_CACHE", str(tmp_path / "corpora"))
    assert corpora.default_cache_dir() == tmp_path / "corpora"


def test_data_get_mirror_and_force_through_the_command(server, tmp_path, monkeypatch):
    """`tt data get --mirror M` fetches M/<corpus directory>/<file> (ignored, it would go upstream and fail
    here); `--force` fetches again what the cache holds (ignored, the second run would only verify)."""
    monkeypatch.delenv("TT_DATA_MIRROR", raising=False)
    server.files[f"/m/{TATOEBA.dirname}/fra-eng.zip"] = tatoeba_zip()
    args = ["data", "get", "tatoeba", "--mirror", f"{server.base}/m", "--cache-dir", str(tmp_path)]
    for extra, fetched in (([], 1), ([], 1), (["--force"], 2)):
        result = CliRunner().invoke(app, [*args, *extra])
        assert result.exit_code == 0, result.output
        assert [p for p, _ in server.requests] == [f"/m/{TATOEBA.dirname}/fra-eng.zip"] * fetched
