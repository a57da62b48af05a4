"""Warm shell calls: `tt translate --raw` (the model alone on each line) sends its lines to a running `tt serve` (a real server on 127.0.0.1
with the shipped model) and prints exactly what it prints when it translates in its own process —
plain, --json (with attention and alignment), n-best, stdin, files, warnings, errors, exit codes —
without importing torch; and falls back to translating here whenever the server cannot serve."""

from __future__ import annotations

import inspect
import io
import json
import os
import shutil
import signal
import subprocess
import sys
from typing import get_type_hints

import pytest
from typer.testing import CliRunner

pytest.importorskip("uvicorn", reason="tt serve needs the serve extra (pip install -e '.[dev]')")

from core.card import default_precision, fast_mode  # noqa: E402
from tests.conftest import ROOT  # noqa: E402
from tt_cli import launch, remote  # noqa: E402
from tt_cli.commands.translate import translate as translate_command  # noqa: E402
from tt_cli.main import app  # noqa: E402
from tt_cli.options import default_mode  # noqa: E402
from tt_cli.serve import announce  # noqa: E402
from tt_cli.serve.client import Client  # noqa: E402
from tt_cli.serve.server import Background, listen, url_of  # noqa: E402
from tt_cli.serve.settings import ServeSettings  # noqa: E402

SENTENCES = ["Je suis étudiant.", "Il fait froid ce matin.", "Le chat dort sur le canapé."]
LONG = "Le chat dort. " * 120  # past the model's 256 pieces: cut, with a warning on stderr


def decode_calls(url: str) -> int:
    with Client(url) as c:
        return c.get("/health").json()["batching"]["decode_calls"]


def tt(monkeypatch, args: list[str], server: str = "", stdin: str | None = None):
    """`tt ARGS` in this process with TT_SERVER=server ("" = translate here)."""
    monkeypatch.setenv("TT_SERVER", server)
    return CliRunner().invoke(app, args, input=stdin)


def both(monkeypatch, url: str, args: list[str], stdin: str | None = None):
    """(warm, local) results of `tt translate ARGS`; the warm one must have reached the server."""
    before = decode_calls(url)
    warm = tt(monkeypatch, ["translate", "--raw", *args], url, stdin)
    assert decode_calls(url) > before, "the warm call did not reach the server"
    after = decode_calls(url)
    local = tt(monkeypatch, ["translate", "--raw", *args], "", stdin)
    assert decode_calls(url) == after, "TT_SERVER= still went to the server"
    return warm, local


@pytest.mark.parametrize(
    "args",
    [
        SENTENCES,
        ["--json", *SENTENCES],
        ["--json", "--attention", "cross", "--align", SENTENCES[1]],
        ["--n-best", "3", *SENTENCES[:2]],
        ["--json", "--n-best", "2", SENTENCES[0]],
        ["--greedy", *SENTENCES],
        ["--beam", "2", "--alpha", "1.0", "--json", SENTENCES[2]],
    ],
    ids=["plain", "json", "attention+align", "n-best", "json n-best", "greedy", "beam alpha"],
)
def test_a_warm_call_prints_what_the_local_one_prints(monkeypatch, url, args):
    warm, local = both(monkeypatch, url, args)
    assert (warm.exit_code, warm.stdout, warm.stderr) == (local.exit_code, local.stdout, local.stderr)
    assert warm.exit_code == 0 and warm.stdout


def test_stdin_blank_lines_and_warnings_are_the_same_warm(monkeypatch, url):
    stdin = "\n".join([SENTENCES[0], "", "   ", LONG, SENTENCES[1], "\x07Bonjour."]) + "\n"
    warm, local = both(monkeypatch, url, ["--json"], stdin)
    assert warm.exit_code == local.exit_code == 0
    assert warm.stdout == local.stdout and len(warm.stdout.splitlines()) == 6
    assert warm.stderr == local.stderr
    assert "line 4: " in warm.stderr and "line 6: " in warm.stderr  # numbered in the whole input


def test_a_file_in_many_chunks_is_the_same_warm(monkeypatch, url, tmp_path):
    """More lines than one chunk (batch 2 → chunks of 8), so the server gets several requests."""
    lines = [f"{s} ({i})" for i in range(6) for s in SENTENCES]
    source = tmp_path / "in.fr"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    before = decode_calls(url)
    args = ["translate", "--raw", "--batch-size", "2", "--json", "-i", str(source)]
    warm = tt(monkeypatch, [*args, "-o", str(tmp_path / "warm.en")], url)
    assert decode_calls(url) - before == 3  # 18 lines: chunks of 8, 8, 2
    local = tt(monkeypatch, [*args, "-o", str(tmp_path / "local.en")])
    assert warm.exit_code == local.exit_code == 0, warm.stderr
    assert (tmp_path / "warm.en").read_bytes() == (tmp_path / "local.en").read_bytes()


def test_the_server_decodes_in_the_batches_the_command_makes(monkeypatch, url):
    """Batch composition moves the last digits of some --json floats (padding changes the sums; batch 1
    against all 36 lines of docs/ood): the server must batch as the command's --batch-size says, not as it likes."""
    source = ROOT / "docs" / "ood" / "ood.fr"
    warm, local = both(monkeypatch, url, ["--json", "--batch-size", "1", "-i", str(source)])
    assert warm.stdout == local.stdout
    assert (
        local.stdout
        != tt(monkeypatch, ["translate", "--raw", "--json", "--batch-size", "36", "-i", str(source)]).stdout
    )


def test_bad_input_fails_as_locally_and_leaves_no_output(monkeypatch, url, tmp_path):
    source = tmp_path / "in.fr"
    source.write_bytes(b"Bonjour.\nMerci.\nLe \xff chat.\n")
    warm, local = both(monkeypatch, url, ["-i", str(source), "-o", str(tmp_path / "out.en")])
    assert warm.exit_code == local.exit_code == 1
    assert (
        warm.stderr
        == local.stderr
        == (
            f"tt: error: {source}:3: invalid UTF-8 (byte 0xff at column 4); use --errors replace to translate it anyway\n"
        )
    )
    assert not (tmp_path / "out.en").exists()


def test_options_the_server_refuses_are_translated_here(monkeypatch, url):
    """Beam 20 is past the server's ceiling (it answers 400): translated here, the same output."""
    monkeypatch.setenv("TT_SERVER", url)
    warm = CliRunner().invoke(app, ["translate", "--raw", "--beam", "20", SENTENCES[0]])
    local = tt(monkeypatch, ["translate", "--raw", "--local", "--beam", "20", SENTENCES[0]], url)
    assert (
        (warm.exit_code, warm.stdout, warm.stderr)
        == (local.exit_code, local.stdout, local.stderr)
        == (
            0,
            "I am a student.\n",
            "",
        )
    )
    bad = tt(monkeypatch, ["translate", "--raw", "--n-best", "5", SENTENCES[0]], url)
    assert (bad.exit_code, bad.stderr) == (1, "tt: error: --n-best (5) cannot exceed --beam (4)\n")


def test_local_option_and_empty_tt_server_translate_here(monkeypatch, url):
    before = decode_calls(url)
    assert tt(monkeypatch, ["translate", "--raw", "--local", SENTENCES[0]], url).stdout == "I am a student.\n"
    assert tt(monkeypatch, ["translate", "--raw", SENTENCES[0]], "").stdout == "I am a student.\n"
    assert decode_calls(url) == before


def test_a_server_that_is_down_or_serves_another_model_is_passed_over(monkeypatch, url, tmp_path):
    gone = listen("127.0.0.1", 0)
    dead = url_of(gone)
    gone.close()  # nothing listens there now
    result = tt(monkeypatch, ["translate", "--raw", SENTENCES[0]], dead)
    assert result.exit_code == 0 and result.stdout == "I am a student.\n"
    assert result.stderr.startswith(f"tt: warning: $TT_SERVER={dead}: no answer (") and result.stderr.endswith(
        "; translating here\n"
    )
    copy = tmp_path / "model"
    shutil.copytree(ROOT / "weights", copy)
    before = decode_calls(url)
    result = tt(monkeypatch, ["translate", "--raw", "--model", str(copy), SENTENCES[0]], url)
    assert result.stdout == "I am a student.\n" and decode_calls(url) == before
    served = f"({ROOT / 'weights'}, {default_precision(ROOT / 'weights')})"  # the fixture: the card's precision
    assert f"$TT_SERVER={url}: it serves another model {served}; translating here" in result.stderr


def test_a_server_in_another_precision_is_another_model_to_a_warm_call(monkeypatch, tmp_path):
    """The shipped fr→en model runs in its card's precision by default: `tt serve --precision OTHER` serves
    another model, so a plain `tt translate` translates here, whether the server is named ($TT_SERVER, with a
    warning) or only announced; `--precision OTHER` itself translates here too (an explicit precision never goes
    to a server)."""
    from core.api import Translator

    card = default_precision(ROOT / "weights")
    other = "fp32" if card == "int8" else "int8"
    server = Translator(quantize=fast_mode(other))
    with Background(server, ServeSettings(log=io.StringIO())) as elsewhere:
        result = tt(monkeypatch, ["translate", "--raw", SENTENCES[0]], elsewhere)
        assert result.exit_code == 0 and result.stdout == "I am a student.\n" and decode_calls(elsewhere) == 0
        assert f"it serves another model ({ROOT / 'weights'}, {other}); translating here" in result.stderr
        result = tt(monkeypatch, ["translate", "--raw", "--precision", other, SENTENCES[0]], elsewhere)
        assert result.stdout == "I am a student.\n" and decode_calls(elsewhere) == 0
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
        monkeypatch.delenv("TT_SERVER")
        with announce.announced(elsewhere, [server.path], api_keys=False, quantize=fast_mode(other)):
            assert remote.connect(_request()) is None
        # announced in the card's precision, which it does not serve: asked, then refused
        with announce.announced(elsewhere, [server.path], api_keys=False, quantize=fast_mode(card)):
            assert remote.connect(_request()) is None


def test_chunks_past_the_server_limits_are_translated_here(monkeypatch, translator, tmp_path):
    lines = [*SENTENCES, SENTENCES[0], LONG, *SENTENCES]  # batch size 1: chunks of 4 lines, the second too long
    with Background(translator, ServeSettings(log=io.StringIO(), max_chars=200)) as small:
        request = _request(batch_size=1)
        monkeypatch.setenv("TT_SERVER", small)
        got = "".join(
            remote.json_line(t.record) + "\n" for t in remote.translations(remote.connect(request), request, lines)
        )
        assert decode_calls(small) == 1  # the second chunk went to the model here
    assert got == tt(monkeypatch, ["translate", "--raw", "--json", "--batch-size", "1", *lines]).stdout


def _request(**decoding) -> remote.Request:
    from core.decode.method import TranslateOptions

    return remote.Request(None, TranslateOptions(**decoding), json=True)


# ------------------------------------------------------------------------------ no torch, fast lane
NO_TORCH = (
    "import atexit, sys; "
    "atexit.register(lambda: print('torch' if 'torch' in sys.modules else 'no torch', file=sys.stderr)); "
    "sys.argv[0] = 'tt'; from {module} import main; main()"
)


@pytest.mark.parametrize("module", ["tt_cli.launch", "tt_cli.main"])
@pytest.mark.parametrize("args", [["Je suis étudiant."], ["--json", "-"]], ids=["argument", "stdin"])
def test_the_warm_path_does_not_import_torch(url, module, args):
    env = {**os.environ, "TT_SERVER": url, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-c", NO_TORCH.format(module=module), "translate", "--raw", *args]
    done = subprocess.run(command, input="Je suis étudiant.\n", capture_output=True, text=True, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stderr == "no torch\n"
    assert "I am a student." in done.stdout
    env["TT_SERVER"] = ""
    done = subprocess.run(command, input="Je suis étudiant.\n", capture_output=True, text=True, env=env, cwd=ROOT)
    assert done.stderr.endswith("torch\n") and not done.stderr.endswith("no torch\n")  # the test can tell


def test_the_fast_lane_reads_the_options_as_the_command_does():
    parameters = inspect.signature(translate_command).parameters
    hints = get_type_hints(translate_command, include_extras=True)
    for name, (field, kind) in launch.OPTIONS.items():
        info = hints[field].__metadata__[0]
        names = [info.default, *info.param_decls] if isinstance(info.default, str) else [f"--{field.replace('_', '-')}"]
        assert name in names, name
        assert (kind is bool) == (hints[field].__origin__ is bool), name
        assert launch.DEFAULTS[field] == parameters[field].default, field
    from core.decode.method import TranslateOptions

    for name in ("temperature", "top_k", "top_p", "seed"):  # not read by the fast lane: TranslateOptions's defaults
        assert getattr(TranslateOptions(), name) == parameters[name].default
    assert launch.parse(["--beam", "8", "--json", "-o", "x", "Bonjour"]) == (
        {**launch.DEFAULTS, "beam": 8, "json_out": True, "output": "x"},
        ["Bonjour"],
    )
    assert launch.parse(["--beam=8", "Bonjour"])[0]["beam"] == 8
    for other in (["--sample", "x"], ["--beam", "huit", "x"], ["--json=yes"], ["--help"], ["--beam"]):
        assert launch.parse(other) is None  # the full command reads (and reports) these


def test_the_fast_lane_prints_what_the_command_prints(monkeypatch, url, tmp_path):
    env = {**os.environ, "TT_SERVER": url, "PYTHONPATH": str(ROOT)}
    args = ["translate", "--raw", "--json", "--beam", "3", "--n-best", "2", *SENTENCES[:2]]
    fast = subprocess.run([sys.executable, "-m", "tt_cli.launch", *args], capture_output=True, text=True, env=env)
    assert fast.returncode == 0, fast.stderr
    assert fast.stdout == tt(monkeypatch, args).stdout
    bad = tmp_path / "bad.fr"
    bad.write_bytes(b"\xff\n")
    fast = subprocess.run(
        [sys.executable, "-m", "tt_cli.launch", "translate", "--raw", "-i", str(bad)],
        capture_output=True,
        text=True,
        env=env,
    )
    assert (fast.returncode, fast.stderr) == (
        1,
        f"tt: error: {bad}:1: invalid UTF-8 (byte 0xff at column 1); use --errors replace to translate it anyway\n",
    )


def test_a_cold_call_of_a_common_form_skips_the_typer_app(monkeypatch, tmp_path):
    """No server: the fast lane calls the command function itself, so neither pydantic (which Typer's
    option parsing imports) nor the other commands load — and the output and errors are the same."""
    probe = NO_TORCH.replace("torch", "pydantic")
    env = {**os.environ, "TT_SERVER": "", "PYTHONPATH": str(ROOT)}
    args = ["translate", "--greedy", "--json", SENTENCES[0]]
    done = subprocess.run(
        [sys.executable, "-c", probe.format(module="tt_cli.launch"), *args], capture_output=True, text=True, env=env
    )
    assert (done.returncode, done.stderr) == (0, "no pydantic\n")
    assert done.stdout == tt(monkeypatch, args).stdout
    missing = ["translate", "-i", str(tmp_path / "none.fr")]
    done = subprocess.run([sys.executable, "-m", "tt_cli.launch", *missing], capture_output=True, text=True, env=env)
    typer_app = tt(monkeypatch, missing)
    assert (
        (done.returncode, done.stderr)
        == (typer_app.exit_code, typer_app.stderr)
        == (1, f"tt: error: {missing[2]}: no such file\n")
    )


# ------------------------------------------------------------------------------ announcement
def test_an_announced_server_is_found_and_a_stale_one_ignored(monkeypatch, translator, url, tmp_path):
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    monkeypatch.delenv("TT_SERVER")
    assert remote.connect(_request()) is None  # nothing announced
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = tmp_path / "tt" / "server-1-1.json"
    stale.parent.mkdir(mode=0o700)
    stale.write_text(json.dumps({"url": url, "pid": int(dead.stdout), "model_id": announce.model_id(ROOT / "weights")}))
    assert remote.connect(_request()) is None and not stale.exists()  # its process is gone: removed
    with announce.announced(url, [translator.path], api_keys=False, quantize=translator.quantize) as path:
        assert path.parent == tmp_path / "tt" and json.loads(path.read_text())["url"] == url
        assert remote.connect(_request()).url == url
        before = decode_calls(url)
        assert CliRunner().invoke(app, ["translate", "--raw", SENTENCES[0]]).stdout == "I am a student.\n"
        assert decode_calls(url) == before + 1
        os.chmod(tmp_path / "tt", 0o777)  # a directory others may write in is not trusted
        assert remote.connect(_request()) is None
        os.chmod(tmp_path / "tt", 0o700)
    assert not path.exists()


def test_tt_serve_announces_itself_until_sigterm(tmp_path):
    env = {**os.environ, "XDG_RUNTIME_DIR": str(tmp_path)}
    process = subprocess.Popen(
        [sys.executable, "-m", "tt_cli.main", "serve", "--port", "0", "--greedy", "--host", "0.0.0.0"],
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=env,
    )
    try:
        event = json.loads(process.stderr.readline())
        port = event["url"].rsplit(":", 1)[1]
        [path] = (tmp_path / "tt").glob("server-*.json")
        info = json.loads(path.read_text())
        assert info["url"] == f"http://127.0.0.1:{port}" and info["pid"] == process.pid
        # each shipped model in its card's precision (tt_cli.options.default_mode)
        fr_en, en_fr = ROOT / "weights", ROOT / "weights" / "en-fr"
        assert info["model_id"] == announce.served_id(fr_en, default_mode(fr_en, "auto"))
        assert info["model_ids"][1] == announce.served_id(en_fr, default_mode(en_fr, "auto"))
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
        assert not path.exists()
    finally:
        if process.poll() is None:
            process.kill()
