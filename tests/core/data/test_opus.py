"""`tt data get opus:…`: OPUS's Moses zips, fetched from a real HTTP server on 127.0.0.1.

The archive is built here in OPUS's layout (en-fr.txt.zip holding Europarl.en-fr.en / .fr, README,
LICENSE) and served under the same path as upstream (/OPUS-Europarl/v8/moses/en-fr.txt.zip), so only
the host differs from the real URL.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile

import pytest
from typer.testing import CliRunner

from core.data.corpora import opus_source, source
from core.data.download import DownloadError, fetch
from core.data.readers import read_corpus
from tests.core.data.test_download import server  # noqa: F401 - the 127.0.0.1 Range server fixture
from tt_cli.main import app

UPSTREAM = "https://object.pouta.csc.fi"
PAIRS = [
    ("Reprise de la session", "Resumption of the session"),
    (
        "Je déclare reprise la session du Parlement européen.",
        "I declare resumed the session of the European Parliament.",
    ),
    ("Vous avez souhaité un débat à ce sujet.", "You have requested a debate on this subject."),
] * 400


def opus_zip(corpus: str = "Europarl", pairs=PAIRS, extra_en: str = "") -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("README", f"{corpus}: please cite OPUS (Tiedemann, 2012)\n")
        zf.writestr("LICENSE", "The data may be used freely; cite the source.\n")
        zf.writestr(f"{corpus}.en-fr.en", "".join(en + "\n" for _, en in pairs) + extra_en)
        zf.writestr(f"{corpus}.en-fr.fr", "".join(fr + "\n" for fr, _ in pairs))
        zf.writestr(f"{corpus}.en-fr.ids", "".join(f"a.xml\tb.xml\t{i}\t{i}\n" for i in range(len(pairs))))
    return buffer.getvalue()


def serve(state, corpus: str, version: str, body: bytes) -> str:
    """Put `body` at OPUS's path on the local server (`state`: the server fixture); the base URL to fetch from."""
    src = opus_source(f"{corpus}/{version}")
    path = src.url("en-fr.txt.zip").removeprefix(UPSTREAM)
    state.files[path] = body
    return src.base_url.replace(UPSTREAM, state.base)


def test_urls_follow_opus_documented_scheme():
    assert opus_source("Europarl").url("en-fr.txt.zip") == f"{UPSTREAM}/OPUS-Europarl/v8/moses/en-fr.txt.zip"
    assert source("opus:news-commentary").url("en-fr.txt.zip") == (
        f"{UPSTREAM}/OPUS-News-Commentary/v16/moses/en-fr.txt.zip"  # OPUS's spelling, whatever the case typed
    )
    assert source("opus:TED2020").base_url == f"{UPSTREAM}/OPUS-TED2020/v1/moses/"
    books = source("opus:Books/v1")
    assert books.base_url == f"{UPSTREAM}/OPUS-Books/v1/moses/" and books.dirname == "opus-Books-v1"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("opus:Books", r"opus:Books: not one tt knows the version of; give it as opus:Books/VERSION"),
        ("opus:../etc/v1", r"not an OPUS corpus name"),
        ("opus:/v1", r"not an OPUS corpus name"),
        ("opus:Europarl/v8/x", r"not an OPUS corpus name"),
    ],
)
def test_bad_opus_names_are_refused(spec, message):
    with pytest.raises(DownloadError, match=message):
        source(spec)


def test_get_unpacks_aligned_train_files_and_keeps_readme_and_licence(server, tmp_path):  # noqa: F811
    body = opus_zip()
    base = serve(server, "Europarl", "v8", body)
    result = CliRunner().invoke(app, ["data", "get", "opus:Europarl", "--url", base, "--cache-dir", str(tmp_path)])
    assert result.exit_code == 0, result.stderr
    directory = tmp_path / "opus-Europarl-v8"
    assert result.stdout.splitlines() == [
        f"opus:Europarl/v8: {directory}",
        f"tt train --data {directory / 'train'}",
        "tt eval --testset wmt14 --langpair fr-en",
    ]
    pairs = list(read_corpus(directory / "train"))  # what the printed `tt train --data` line reads
    assert [(p.src, p.tgt) for p in pairs] == PAIRS
    assert "cite OPUS" in (directory / "README.txt").read_text() and (directory / "LICENSE.txt").is_file()
    manifest = json.loads((directory / "manifest.json").read_text())
    assert manifest["files"]["en-fr.txt.zip"]["sha256"] == hashlib.sha256(body).hexdigest()
    assert manifest["pairs"] == {"train": len(PAIRS)} and manifest["corpus"] == "opus:Europarl/v8"
    assert "train 1,200 pairs" in result.stderr
    assert not list(directory.glob("*.part*")) and not list(directory.glob(".*"))  # nothing half-written left


def test_an_interrupted_download_resumes_with_a_range_request(server, tmp_path):  # noqa: F811
    body = opus_zip(corpus="TED2020")
    base = serve(server, "TED2020", "v1", body)
    path = "/OPUS-TED2020/v1/moses/en-fr.txt.zip"
    server.cut_after[path] = len(body) // 2
    src = source("opus:TED2020")
    with pytest.raises(DownloadError, match="run again to resume"):
        fetch(src, tmp_path, base_url=base)
    assert (tmp_path / "opus-TED2020-v1" / "en-fr.txt.zip.part").stat().st_size == len(body) // 2
    got = fetch(src, tmp_path, base_url=base)
    assert [h.get("Range") for p, h in server.requests if p == path] == [None, f"bytes={len(body) // 2}-"]
    assert got.files[0].status == "resumed" and got.pairs == {"train": len(PAIRS)}


def test_the_mirror_layout_uses_the_cache_directory_name(server, tmp_path):  # noqa: F811
    server.files["/opus-Europarl-v8/en-fr.txt.zip"] = opus_zip()
    result = CliRunner().invoke(
        app, ["data", "get", "opus:Europarl", "--cache-dir", str(tmp_path)], env={"TT_DATA_MIRROR": server.base}
    )
    assert result.exit_code == 0, result.stderr
    assert (tmp_path / "opus-Europarl-v8" / "train.fr").is_file()


def test_sides_that_do_not_align_are_an_error(server, tmp_path):  # noqa: F811
    base = serve(server, "Europarl", "v8", opus_zip(extra_en="One more English line.\n"))
    with pytest.raises(DownloadError, match=r"Europarl.en-fr.fr ends at line 1200 but Europarl.en-fr.en goes on"):
        fetch(source("opus:Europarl"), tmp_path, base_url=base)
    assert not (tmp_path / "opus-Europarl-v8" / "train.fr").exists()  # no half-prepared corpus


def test_an_archive_without_the_pair_files_says_what_it_holds(server, tmp_path):  # noqa: F811
    base = serve(server, "Europarl", "v8", opus_zip(corpus="Other"))
    with pytest.raises(DownloadError, match=r"no Europarl.en-fr.fr, Europarl.en-fr.en inside \(found: README, LICENSE"):
        fetch(source("opus:Europarl"), tmp_path, base_url=base)


def test_list_shows_fetchable_and_cached_corpora_with_sizes(server, tmp_path):  # noqa: F811
    base = serve(server, "Books", "v1", opus_zip(corpus="Books"))
    assert (
        CliRunner().invoke(app, ["data", "get", "opus:Books/v1", "--url", base, "--cache-dir", str(tmp_path)]).exit_code
        == 0
    )
    result = CliRunner().invoke(app, ["data", "list", "--cache-dir", str(tmp_path)])
    assert result.exit_code == 0, result.stderr
    rows = {line.split()[0]: line for line in result.stdout.splitlines()[1:] if not line.startswith(" ")}
    assert {"tatoeba", "multi30k", "opus:Europarl/v8", "opus:News-Commentary/v16", "opus:TED2020/v1"} <= set(rows)
    assert rows["opus:Europarl/v8"].split()[1:4] == ["not", "downloaded", "-"]
    size = sum(p.stat().st_size for p in (tmp_path / "opus-Books-v1").iterdir())
    books = rows["opus:Books/v1"].split()
    assert books[1] == "ready" and " ".join(books[2:4]) == f"{size / 1e3:.1f} kB"
    assert "here: train 1,200 pairs" in rows["opus:Books/v1"]
    assert f"tt train --data {tmp_path / 'opus-Books-v1' / 'train'}" in result.stdout
