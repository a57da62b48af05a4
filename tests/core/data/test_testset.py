"""`tt eval --testset`: source and references through sacreBLEU's own dataset code, offline.

The test fills a $SACREBLEU directory the way sacreBLEU leaves it after a download of wmt14 (the
tarball, and its SGML files extracted under raw/), with a few sentences written here — not WMT's.
sacreBLEU then finds the tarball, skips the download, and turns the SGML into plain text itself.
sacreBLEU reads $SACREBLEU when it is imported, so `tt eval` runs in a child process.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from tests.conftest import ROOT, TINY_TSV
from tests.core.data.test_download import server  # noqa: F401 - the 127.0.0.1 Range server fixture

PAIRS = [line.split("\t") for line in TINY_TSV.read_text(encoding="utf-8").splitlines()][:12]


def sgm(lang: str, kind: str, lines: list[str]) -> str:
    """WMT's 'fake SGML': one <seg> per line inside <doc> blocks (the newstest files look like this)."""
    docs = [lines[:7], lines[7:]]
    out = [f'<{kind}set setid="newstest2014" srclang="any" trglang="{lang}">']
    n = 0
    for d, doc in enumerate(docs):
        out.append(f'<doc sysid="ref" docid="doc{d}" genre="news" origlang="fr">')
        for line in doc:
            n += 1
            out.append(f'<seg id="{n}">{line}</seg>')
        out.append("</doc>")
    out.append(f"</{kind}set>")
    return "\n".join(out) + "\n"


@pytest.fixture
def sacrebleu_dir(tmp_path) -> Path:
    home = tmp_path / "sacrebleu"
    files = {
        "test/newstest2014-fren-src.fr.sgm": sgm("fr", "src", [fr for fr, _ in PAIRS]),
        "test/newstest2014-fren-ref.en.sgm": sgm("en", "ref", [en for _, en in PAIRS]),
    }
    raw = home / "wmt14" / "raw"
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
            (raw / name).parent.mkdir(parents=True, exist_ok=True)
            (raw / name).write_text(text, encoding="utf-8")
    (raw / "wmt14.test-filtered.tgz").write_bytes(buffer.getvalue())  # where sacreBLEU keeps its download
    return home


def tt(*args: str, sacrebleu: Path, **env: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "SACREBLEU": str(sacrebleu), "PYTHONPATH": str(ROOT), **env}
    return subprocess.run(
        [sys.executable, "-m", "tt_cli.main", *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=600
    )


def test_eval_testset_reads_the_cached_wmt14(tiny_model_dir, sacrebleu_dir, tmp_path):
    out = tmp_path / "hyp.en"
    result = tt(
        "eval",
        "--testset",
        "wmt14",
        "--langpair",
        "fr-en",
        "--model",
        str(tiny_model_dir),
        "--greedy",
        "--json",
        "--output",
        str(out),
        sacrebleu=sacrebleu_dir,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert (report["testset"], report["langpair"], report["sentences"]) == ("wmt14", "fr-en", len(PAIRS))
    assert report["bleu"] > 50  # the tiny model learned these very pairs
    # sacreBLEU itself turned the SGML into the plain text tt read: one line per <seg>, in order.
    plain = sacrebleu_dir / "wmt14" / "wmt14.fr-en.src"
    assert plain.read_text(encoding="utf-8").splitlines() == [fr for fr, _ in PAIRS]
    assert len(out.read_text(encoding="utf-8").splitlines()) == len(PAIRS)


def test_the_same_score_as_with_src_and_ref(tiny_model_dir, sacrebleu_dir, tmp_path):
    (tmp_path / "src.fr").write_text("".join(fr + "\n" for fr, _ in PAIRS), encoding="utf-8")
    (tmp_path / "ref.en").write_text("".join(en + "\n" for _, en in PAIRS), encoding="utf-8")
    by_files = tt(
        "eval",
        "--src",
        str(tmp_path / "src.fr"),
        "--ref",
        str(tmp_path / "ref.en"),
        "--greedy",
        "--json",
        sacrebleu=sacrebleu_dir,
        TT_MODEL=str(tiny_model_dir),
    )  # TT_MODEL picks the model, no --model
    by_set = tt("eval", "-t", "wmt14", "--greedy", "--json", sacrebleu=sacrebleu_dir, TT_MODEL=str(tiny_model_dir))
    assert by_files.returncode == 0 and by_set.returncode == 0, by_files.stderr + by_set.stderr
    a, b = json.loads(by_files.stdout), json.loads(by_set.stdout)
    assert (a["bleu"], a["chrf"], a["model"]) == (b["bleu"], b["chrf"], b["model"]) and a["model"] == str(
        tiny_model_dir
    )


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--testset", "wmt99"], 1, "--testset wmt99: sacreBLEU knows no such test set (fr-en ones like it: wmt"),
        (["--testset", "wmt14", "--langpair", "fr-xx"], 1, "--testset wmt14 has no fr-xx; it has "),
        (["--testset", "wmt14", "--src", "a.fr"], 2, "give --testset or --src/--ref, not both"),
        ([], 2, "give --src FILE and --ref FILE, or --testset NAME"),
    ],
)
def test_testset_errors_are_one_line(tiny_model_dir, sacrebleu_dir, args, code, message):
    result = tt("eval", "--model", str(tiny_model_dir), *args, sacrebleu=sacrebleu_dir)
    assert result.returncode == code
    assert result.stderr.strip().startswith("tt: error: " + message), result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""


def test_an_empty_cache_offline_says_what_to_do(tiny_model_dir, tmp_path):
    # No network here, and a proxy that refuses makes sure of it: sacreBLEU's fetch must fail cleanly.
    result = tt(
        "eval",
        "--model",
        str(tiny_model_dir),
        "--testset",
        "wmt14",
        sacrebleu=tmp_path / "empty",
        https_proxy="http://127.0.0.1:9",
        HTTPS_PROXY="http://127.0.0.1:9",
    )
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(f"tt: error: --testset wmt14: sacreBLEU could not fetch it into {tmp_path / 'empty'}")
    assert "Traceback" not in result.stderr


# ------------------------------------------------------------------------ the README walkthrough


def walkthrough() -> list[list[str]]:
    """The `tt` commands of the README's "From pip install to Europarl and newstest2014" block."""
    import re
    import shlex

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("### From `pip install` to Europarl and newstest2014", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.DOTALL).group(1).replace("\\\n", " ")
    commands = []
    for line in block.splitlines():
        for part in line.split("&&"):
            words = shlex.split(part, comments=True)
            if words[:1] == ["tt"]:
                commands.append(words[1:])
    return commands


def test_the_readme_walkthrough_runs_offline(server, sacrebleu_dir, tmp_path):  # noqa: F811
    """Each README command as written, with only what this machine needs added after it: the local
    server for OPUS, the temporary cache, and a tiny model and a few steps instead of a day of training."""
    from tests.core.data.test_opus import opus_zip, serve

    cache = tmp_path / "cache"
    base = serve(server, "Europarl", "v8", opus_zip(pairs=PAIRS * 20))
    commands = walkthrough()
    assert [c[:2] for c in commands] == [["data", "get"], ["train", "--data"], ["eval", "--model"], ["translate", "-I"]]
    get, train, evaluate, _interactive = commands
    done = tt(*get, "--url", base, "--cache-dir", str(cache), sacrebleu=sacrebleu_dir)
    assert done.returncode == 0, done.stderr
    assert f"tt train --data {cache / 'opus-Europarl-v8' / 'train'}" in done.stdout  # "prints the next line"
    train = [str(cache) + a.removeprefix("~/.cache/tt/data") if a.startswith("~/.cache/tt/data") else a for a in train]
    run = tmp_path / "work"
    run.mkdir()
    small = [
        "--preset",
        "tiny",
        "--vocab-size",
        "120",
        "--precision",
        "fp32",
        "--max-steps",
        "30",
        "--valid-every",
        "0",
        "--save-every",
        "0",
        "--bleu-sample",
        "0",
    ]  # later options win: the README's line, made small
    trained = subprocess.run(
        [sys.executable, "-m", "tt_cli.main", *train, *small],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=run,
        timeout=600,
    )
    assert trained.returncode == 0, trained.stderr
    assert (run / "runs" / "europarl" / "model.safetensors").is_file()
    scored = subprocess.run(
        [sys.executable, "-m", "tt_cli.main", *evaluate],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "SACREBLEU": str(sacrebleu_dir)},
        cwd=run,
        timeout=600,
    )
    assert scored.returncode == 0, scored.stderr
    assert scored.stdout.startswith("BLEU ") and f"{len(PAIRS)} sentences in" in scored.stdout
    assert "wmt14 fr-en" in scored.stdout
