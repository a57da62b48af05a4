"""`tt data get europarl --from FILE`: a copy the user already downloaded, placed and prepared as a download is."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

from typer.testing import CliRunner

from core.data.readers import read_corpus
from tt_cli.main import app

runner = CliRunner()
FR, EN = ["Reprise de la session", "", "La mise en uvre."], ["Resumption of the session", "(Applause)", "The work."]


def statmt_tgz(path: Path, fr=FR, en=EN) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for lang, lines in (("fr", fr), ("en", en)):
            data = "".join(x + "\n" for x in lines).encode()
            info = tarfile.TarInfo(f"europarl-v7.fr-en.{lang}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_from_places_the_archive_and_prepares_it(tmp_path):
    archive = statmt_tgz(tmp_path / "fr-en.tgz")
    cache = tmp_path / "cache"
    result = runner.invoke(app, ["data", "get", "europarl", "--from", str(archive), "--cache-dir", str(cache)])
    assert result.exit_code == 0, result.stderr
    assert "placed" in result.stderr and "tt train --data" in result.stdout
    directory = cache / "europarl"
    manifest = json.loads((directory / "manifest.json").read_text())
    assert manifest["pairs"] == {"train": 3} and manifest["files"]["fr-en.tgz"]["url"].startswith("file://")
    pairs = list(read_corpus(directory / "train", keep_empty=True))
    assert [(p.src, p.tgt) for p in pairs] == list(zip(FR, EN))
    again = runner.invoke(app, ["data", "get", "europarl", "--cache-dir", str(cache)])  # now a cached corpus
    assert again.exit_code == 0 and "cached" in again.stderr


def test_from_a_wrong_file_is_one_line_and_places_nothing(tmp_path):
    bad = tmp_path / "fr-en.tgz"
    bad.write_bytes(b"not an archive")
    cache = tmp_path / "cache"
    result = runner.invoke(app, ["data", "get", "europarl", "--from", str(bad), "--cache-dir", str(cache)])
    assert result.exit_code == 1 and "not a valid .tgz archive" in result.stderr and "Traceback" not in result.stderr
    assert not (cache / "europarl" / "train.fr").exists()
    (tmp_path / "empty").mkdir()
    missing = runner.invoke(
        app, ["data", "get", "europarl", "--from", str(tmp_path / "empty"), "--cache-dir", str(cache)]
    )
    assert missing.exit_code == 1 and "no fr-en.tgz there" in missing.stderr


def test_sides_that_do_not_align_are_an_error(tmp_path):
    archive = statmt_tgz(tmp_path / "fr-en.tgz", en=EN[:2])
    result = runner.invoke(app, ["data", "get", "europarl", "--from", str(archive), "--cache-dir", str(tmp_path / "c")])
    assert result.exit_code == 1 and "do not align" in result.stderr
