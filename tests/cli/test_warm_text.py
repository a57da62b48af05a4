"""Warm text runs: the default `tt translate` — sentences split, spans protected, case kept, glossary,
confidence flags, documents — and its prompt send their lines to a running `tt serve` (a real server
on 127.0.0.1 with the shipped model), which runs the text pipeline, and print byte for byte what
they print when they translate in their own process: stdout, stderr and exit code."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

pytest.importorskip("uvicorn", reason="tt serve needs the serve extra (pip install -e '.[dev]')")

from core.decode.translate import TranslateOptions  # noqa: E402
from tests.cli.test_translate_text import MARKDOWN, SRT  # noqa: E402
from tests.conftest import ROOT  # noqa: E402
from tt_cli import remote, repl  # noqa: E402
from tt_cli.main import app  # noqa: E402
from tt_cli.serve.client import Client  # noqa: E402
from tt_cli.serve.server import Background  # noqa: E402
from tt_cli.serve.settings import ServeSettings  # noqa: E402
from tt_cli.textrun import text_options  # noqa: E402

# The model alone writes "She was born in 198." for the first and drops the second's last sentence:
# a server that ran it alone on each line (--raw) instead of the pipeline fails every test below.
BORN = "Elle est née en 1987."
THREE = "Je suis étudiant. Il fait froid ce matin. Le chat dort."
LINES = [BORN, THREE, "JE SUIS ÉTUDIANT.", "Voir https://exemple.fr 🙂", "Il est arrivé à 14 h 35."]
NAMES = "Hier, j'ai vu Angela Merkel et Zlatan Ibrahimovic à Berlin."  # names kept: a second try with Tom and Mary


def jobs(url: str) -> int:
    """Model calls the server has answered (counted before it answers; a request makes one or more)."""
    with Client(url) as c:
        return c.get("/health").json()["batching"]["requests"]


def tt(monkeypatch, args: list[str], server: str, stdin: str | bytes | None = None):
    monkeypatch.setenv("TT_SERVER", server)  # "" = translate here
    return CliRunner().invoke(app, ["translate", *args], input=stdin)


def same(monkeypatch, url: str, args: list[str], stdin: str | bytes | None = None, served: bool = True):
    """`tt translate ARGS` by the server (or, not `served`, refused before reaching it) and here: the
    same bytes on stdout and stderr, the same exit code."""
    before = jobs(url)
    warm = tt(monkeypatch, args, url, stdin)
    assert (jobs(url) > before) == served, "the warm call did not reach the server" if served else "it did"
    after = jobs(url)
    local = tt(monkeypatch, args, "", stdin)
    assert jobs(url) == after, "TT_SERVER= still went to the server"
    assert (warm.exit_code, warm.stdout_bytes, warm.stderr) == (local.exit_code, local.stdout_bytes, local.stderr)
    return warm


@pytest.mark.parametrize(
    "args",
    [
        LINES,
        ["--json", *LINES],
        ["--no-split", "--no-protect", *LINES[:2]],
        ["--greedy", "--flag-below", "0.9", *LINES],
        ["--beam", "2", "--alpha", "1.0", "--json", *LINES[:2]],
        ["--json", "je suis etudiant"],
        ["--no-accents", "--json", "je suis etudiant"],
        ["--json", NAMES],
        ["--no-names", "--json", NAMES],
    ],
    ids=[
        "plain",
        "json",
        "no-split no-protect",
        "greedy flag-below",
        "beam alpha json",
        "accents",
        "no-accents",
        "names",
        "no-names",
    ],
)
def test_a_warm_text_run_prints_what_the_local_one_prints(monkeypatch, url, args):
    assert same(monkeypatch, url, args).exit_code == 0


def test_the_server_runs_the_pipeline_not_the_model_alone(monkeypatch, url, translator):
    warm = same(monkeypatch, url, [BORN, THREE])
    born, three = warm.stdout.splitlines()
    assert born == "She was born in 1987." and three.count(". ") == 2
    raw = tt(monkeypatch, ["--raw", BORN, THREE], url).stdout.splitlines()
    assert raw == [r.text for r in translator.translate([BORN, THREE])] != [born, three]


def test_stdin_with_blank_lines_control_characters_and_warnings(monkeypatch, url):
    stdin = "\n".join([BORN, "", "   ", "\x07Bonjour.", "Le chat dort. " * 120, THREE]) + "\n"
    warm = same(monkeypatch, url, ["--json"], stdin)
    assert len(warm.stdout.splitlines()) == 6 and "line 4: replaced 1 control character" in warm.stderr


def test_a_file_in_many_chunks_and_its_progress(monkeypatch, url, tmp_path):
    """Batch 2: chunks of 8 lines, each a request of its own; the output file is the same."""
    source = tmp_path / "in.fr"
    source.write_text("\n".join(f"{line} ({i})" for i in range(4) for line in LINES[:4]) + "\n", encoding="utf-8")
    for out in ("warm.en", "local.en"):
        args = ["--batch-size", "2", "--json", "-i", str(source), "-o", str(tmp_path / out)]
        result = tt(monkeypatch, args, url if out == "warm.en" else "")
        assert result.exit_code == 0, result.stderr
    assert (tmp_path / "warm.en").read_bytes() == (tmp_path / "local.en").read_bytes()
    before = jobs(url)
    assert same(monkeypatch, url, ["--batch-size", "2", "-i", str(source)]).stdout.count("\n") == 16
    assert jobs(url) - before >= 2  # two chunks of 8 lines, each a request


def test_a_glossary_goes_as_its_terms(monkeypatch, url, tmp_path):
    glossary = tmp_path / "terms.tsv"
    glossary.write_text("# terms\nétudiant\tlearner\nchat\tfeline\n", encoding="utf-8")
    # The lines with a term are decoded by constrained search beside the batcher; BORN, without one, goes through
    # the batcher, which is how the test sees the call reach the server.
    warm = same(monkeypatch, url, ["--json", "--glossary", str(glossary), "Je suis étudiant.", "Le chat dort.", BORN])
    assert "learner" in warm.stdout.splitlines()[0]
    glossary.unlink()  # the server never reads the file: the terms travel in the request
    missing = same(monkeypatch, url, ["--glossary", str(glossary), BORN], served=False)
    assert missing.exit_code == 1 and str(glossary) in missing.stderr


@pytest.mark.parametrize("fmt", ["srt", "md"])
def test_documents_by_file_and_on_stdin(monkeypatch, url, tmp_path, fmt):
    text = SRT if fmt == "srt" else MARKDOWN
    source = tmp_path / f"doc.{fmt}"
    source.write_bytes(text.encode())
    assert b"1987" in same(monkeypatch, url, ["-i", str(source)]).stdout_bytes or fmt == "md"
    same(monkeypatch, url, ["--json", "--flag-below", "0.95", "-i", str(source)])
    same(monkeypatch, url, ["--format", fmt], stdin=text.encode())
    for out in ("warm", "local"):
        args = ["-i", str(source), "-o", str(tmp_path / f"{out}.{fmt}")]
        assert tt(monkeypatch, args, url if out == "warm" else "").exit_code == 0
    assert (tmp_path / f"warm.{fmt}").read_bytes() == (tmp_path / f"local.{fmt}").read_bytes()


def test_errors_and_refusals_end_as_they_do_here(monkeypatch, url, tmp_path):
    """A bad document, a bad option the server refuses (beam past its ceiling: translated here), an
    option both refuse: the same bytes and exit codes."""
    bad = tmp_path / "bad.srt"
    bad.write_text("1\nnot a timestamp\nBonjour.\n", encoding="utf-8")
    assert same(monkeypatch, url, ["-i", str(bad), "-o", str(tmp_path / "x.en")], served=False).exit_code == 1
    assert not (tmp_path / "x.en").exists()
    monkeypatch.setenv("TT_SERVER", url)
    assert CliRunner().invoke(app, ["translate", "--beam", "20", BORN]).stdout == "She was born in 1987.\n"
    refused = same(monkeypatch, url, ["--beam", "0", BORN], served=False)
    assert (refused.exit_code, refused.stderr) == (1, "tt: error: --beam must be at least 1, got 0\n")


def test_lines_past_the_server_limits_are_translated_here(monkeypatch, translator, tmp_path):
    source = tmp_path / "in.fr"
    source.write_text("\n".join([BORN, "Le chat dort. " * 30, THREE, BORN]) + "\n", encoding="utf-8")
    args = ["--batch-size", "1", "--json", "-i", str(source)]  # chunks of 4 lines: one, past 200 characters
    with Background(translator, ServeSettings(log=io.StringIO(), max_chars=200, max_sentences=3)) as small:
        warm = tt(monkeypatch, args, small)
        assert jobs(small) == 0
    local = tt(monkeypatch, args, "")
    assert (warm.exit_code, warm.stdout, warm.stderr) == (local.exit_code, local.stdout, local.stderr)


# ------------------------------------------------------------------------------ the fast lane, no torch
NO_TORCH = (
    "import atexit, sys; "
    "atexit.register(lambda: print('torch' if 'torch' in sys.modules else 'no torch', file=sys.stderr)); "
    "sys.argv[0] = 'tt'; from tt_cli.launch import main; main()"
)


def test_the_tt_executable_sends_the_default_run_without_torch_or_typer(monkeypatch, url, tmp_path):
    env = {**os.environ, "TT_SERVER": url, "PYTHONPATH": str(ROOT)}
    probe = NO_TORCH.replace("'torch' in sys.modules", "'torch' in sys.modules or 'typer' in sys.modules")
    source = tmp_path / "doc.srt"
    source.write_bytes(SRT.encode())
    for args in ([BORN, THREE], ["--json", "-i", str(source)]):
        done = subprocess.run(
            [sys.executable, "-c", probe, "translate", *args], capture_output=True, text=True, env=env, cwd=ROOT
        )
        assert (done.returncode, done.stderr) == (0, "no torch\n")
        assert done.stdout == tt(monkeypatch, args, "").stdout


# ------------------------------------------------------------------------------ the prompt (tt translate -I)
def prompt(tmp_path, warm, loaded=None, load=None, **text) -> repl.Repl:
    settings = repl.Settings(TranslateOptions(), text=text_options(split=True, protect=True, glossary=None, **text))
    return repl.Repl(loaded, settings, tmp_path / "history", warm, load)


@pytest.fixture(scope="module")
def served():
    """The shipped model in its card's precision, as the prompt runs it, and a server of it."""
    from core.api import Translator
    from core.card import quantize_mode

    translator = Translator(quantize=quantize_mode(None, ROOT / "weights"))
    with Background(translator, ServeSettings(log=io.StringIO())) as url:
        yield translator, url


def test_the_prompt_by_the_server_prints_what_it_prints_here(monkeypatch, capsys, served, tmp_path):
    translator, url = served
    monkeypatch.setenv("TT_SERVER", url)
    loads = []
    warm = prompt(tmp_path, remote.connect_prompt(None, "auto"), load=lambda: loads.append(1) or translator.loaded)
    here = prompt(tmp_path, None, translator.loaded)
    before = jobs(url)
    shown = []
    for session in (warm, here):
        for line in (THREE, ":json on", BORN, "\x07Bonjour.", ":beam 2", LINES[3]):
            session.handle(line)
        shown.append(capsys.readouterr())
    assert shown[0] == shown[1] and "She was born in 1987." in shown[0].out
    assert jobs(url) >= before + 4 and not loads  # four lines served, no model loaded here
    # :attention and :inspect read the last sentence: rebuilt with the model here, the same Translation
    served, local = warm.local_last(), here.local_last()
    assert loads == [1] and (served.source, served.token_ids, served.text) == (
        local.source,
        local.token_ids,
        local.text,
    )
    assert served.source_tokens == local.source_tokens and served.eos_produced == local.eos_produced


def test_the_prompt_passes_over_a_server_of_another_precision(monkeypatch):
    """The prompt runs the card's precision here, as `tt translate` does: a server of the model in the other precision
    would print other numbers, so the prompt translates here beside it, unless --precision asks for that one."""
    from core.api import Translator
    from core.card import default_precision, fast_mode

    other = "fp32" if default_precision(ROOT / "weights") == "int8" else "int8"
    with Background(Translator(quantize=fast_mode(other)), ServeSettings(log=io.StringIO())) as url:
        monkeypatch.setenv("TT_SERVER", url)
        assert remote.connect_prompt(None, "auto") is None
        assert remote.connect(remote.Request(None, TranslateOptions())) is None
        assert remote.connect_prompt(None, "auto", other).url == url


def test_the_prompt_finds_the_server_and_loads_no_model(monkeypatch, served):
    url = served[1]  # a server of the model in its card's precision, as the prompt runs it
    monkeypatch.setenv("TT_SERVER", url)
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True, raising=False)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)
    started = []
    monkeypatch.setattr(repl.Repl, "run", lambda self: started.append(self))
    repl.interactive(None, "auto", TranslateOptions())
    [session] = started
    assert session.warm.url == url and session._loaded is None
