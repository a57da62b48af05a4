"""`tt translate` through the real Typer app and the tiny real model: the stream contract and bad input."""

from __future__ import annotations

import json
import math
import os
import pty
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from tests.conftest import ROOT
from tt_cli.main import app

runner = CliRunner()


@pytest.fixture(scope="module")
def tt(tiny_model_dir):
    def invoke(*args: str, input: str | bytes | None = None):
        return runner.invoke(app, ["translate", "--model", str(tiny_model_dir), *args], input=input)

    return invoke


def test_arguments_give_one_line_each(tt):
    result = tt("--greedy", "Je suis étudiant.", "Il est médecin.")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "I am a student.\nHe is a doctor.\n"


def test_default_beam_search(tt):
    result = tt("Je suis étudiant.")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "I am a student.\n"


def test_stdin_one_line_out_per_line_in_with_empty_lines(tt):
    result = tt("--greedy", "--batch-size", "2", input="Je suis étudiant.\n\n   \nIl est médecin.\n\n")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.split("\n") == ["I am a student.", "", "", "He is a doctor.", "", ""]


def test_input_and_output_files(tt, tmp_path):
    src = tmp_path / "in.fr"
    src.write_text("Je suis étudiant.\r\nIl est médecin.\n", encoding="utf-8")
    out = tmp_path / "out" / "en.txt"
    result = tt("--greedy", "--input", str(src), "--output", str(out))
    assert result.exit_code == 1 and "no such directory" in result.stderr  # a missing parent is not created
    assert not out.parent.exists()
    out.parent.mkdir()
    result = tt("--greedy", "--input", str(src), "--output", str(out))
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ""
    assert out.read_text(encoding="utf-8") == "I am a student.\nHe is a doctor.\n"
    assert sorted(p.name for p in out.parent.iterdir()) == ["en.txt"]  # no temporary file left behind


def test_failed_run_leaves_no_output_file(tt, tmp_path):
    src = tmp_path / "in.fr"
    src.write_bytes(b"Je suis \xc3\xa9tudiant.\nab\xffcd\n")
    out = tmp_path / "en.txt"
    result = tt("--greedy", "-i", str(src), "-o", str(out))
    assert result.exit_code == 1
    assert (
        result.stderr.strip()
        == f"tt: error: {src}:2: invalid UTF-8 (byte 0xff at column 3); use --errors replace to translate it anyway"
    )
    assert list(tmp_path.iterdir()) == [src]


def test_invalid_utf8_on_stdin_names_the_line_or_is_replaced(tt):
    bad = b"Je suis \xc3\xa9tudiant.\n\xfe\xff\n"
    result = tt("--greedy", input=bad)
    assert result.exit_code == 1 and "<stdin>:2: invalid UTF-8" in result.stderr
    assert "Traceback" not in result.stderr
    result = tt("--greedy", "--errors", "replace", input=bad)
    assert result.exit_code == 0 and result.stdout.count("\n") == 2


def test_control_characters_and_long_lines_warn_but_translate(tt):
    long_line = " ".join(["Je suis étudiant."] * 40)
    result = tt("--greedy", input=f"Je suis\x00 étudiant.\x1b\u2028\n{long_line}\n😀 中文 שלום\n")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.count("\n") == 3 and len(result.stdout.splitlines()) == 3
    assert "line 1: replaced 3 control character(s)" in result.stderr
    assert "translated the first" not in result.stderr  # split: 40 short sentences, none cut
    result = tt("--greedy", "--no-split", input=f"Je suis étudiant.\n{long_line}\n")
    assert result.exit_code == 0 and len(result.stdout.splitlines()) == 2
    assert "line 2:" in result.stderr and "translated the first" in result.stderr


def test_json_has_sentences_tokens_logprobs_and_confidence(tt):
    result = tt("--greedy", "--json", "Je suis étudiant.", "")
    assert result.exit_code == 0, result.stderr
    first, empty = (json.loads(line) for line in result.stdout.splitlines())
    assert first["source"] == "Je suis étudiant." and first["translation"] == "I am a student."
    [sentence] = first["sentences"]
    assert "".join(sentence["tokens"]).replace("▁", " ").strip() == "I am a student."
    assert len(sentence["token_logprobs"]) == len(sentence["tokens"]) + 1  # EOS's log-probability last
    mean = sum(sentence["token_logprobs"]) / len(sentence["token_logprobs"])
    assert first["confidence"] == pytest.approx(math.exp(mean), abs=1e-3)
    assert "attention" not in first and "alignment" not in first
    assert empty["translation"] == "" and empty["sentences"] == [] and empty["confidence"] is None


def test_json_with_a_model_view_option_is_the_models_own_record(tt):
    result = tt("--json", "--n-best", "2", "Je suis étudiant.")
    assert result.exit_code == 0, result.stderr
    obj = json.loads(result.stdout)
    assert "sentences" not in obj and len(obj["n_best"]) == 2
    assert "".join(obj["tokens"]).replace("▁", " ").strip() == obj["translation"]
    assert obj["score"] == pytest.approx(obj["n_best"][0]["score"], abs=1e-3)


def test_json_attention_matrices_and_alignment(tt, tiny_loaded):
    result = tt("--greedy", "--json", "--attention", "all", "--align", "Il est médecin.")
    assert result.exit_code == 0, result.stderr
    obj = json.loads(result.stdout)
    att, cfg = obj["attention"], tiny_loaded.cfg
    T, S = len(obj["tokens"]) + 1, len(att["source_pieces"])
    assert att["output_pieces"][-1] == "</s>" and len(att["output_pieces"]) == T
    assert len(att["cross"]) == cfg.n_decoder_layers and len(att["cross"][0]) == cfg.h
    for row in att["cross"][-1][0]:
        assert len(row) == S and sum(row) == pytest.approx(1.0, abs=1e-2)
    assert len(att["encoder_self"][0][0]) == S
    assert [len(r) for r in att["decoder_self"][0][0]] == list(range(1, T + 1))  # masked: row t sees t+1
    words = [a["target_word"] for a in obj["alignment"]]
    assert words == ["He", "is", "a", "doctor."]
    # Without alignment.json the rule is the mean of the last layer's heads, argmax per word.
    assert [(a["source"], a["target"]) for a in obj["alignment"]] == by_hand(att, layer=-1, head=None, shift=False)


def by_hand(att: dict, layer: int, head, shift: bool) -> list[tuple[int, int]]:
    """Word links recomputed from the JSON's own cross-attention matrices, in plain Python."""
    from core.align.links import words

    heads = att["cross"][layer]  # (h, T, S) as nested lists
    rows = [
        [
            sum(h[t][s] for h in heads) / len(heads) if head is None else heads[head][t][s]
            for s in range(len(heads[0][0]))
        ]
        for t in range(len(heads[0]))
    ]
    src_words, out_words = words(att["source_pieces"]), words(att["output_pieces"])
    links = []
    for j, pieces in enumerate(out_words):
        use = [p + shift for p in pieces]  # shift: the row whose input is the piece
        mass = [sum(rows[t][s] for t in use for s in sw) / len(use) for sw in src_words]
        links.append((mass.index(max(mass)), j))
    return links


def test_align_follows_the_rule_stored_with_the_model(tiny_model_dir, tmp_path):
    import shutil

    model = tmp_path / "model"
    shutil.copytree(tiny_model_dir, model)
    (model / "alignment.json").write_text(
        json.dumps({"format": "tt.alignment", "version": 1, "rule": {"layer": 0, "head": 1, "shift": True}}),
        encoding="utf-8",
    )
    args = ["translate", "--model", str(model), "--greedy", "--json", "--attention", "cross", "--align"]
    result = runner.invoke(app, [*args, "Je suis étudiant.", "Il est médecin."])
    assert result.exit_code == 0, result.stderr
    for line in result.stdout.splitlines():
        obj = json.loads(line)
        assert [(a["source"], a["target"]) for a in obj["alignment"]] == by_hand(obj["attention"], 0, 1, True)


def test_n_best_plain_output_is_moses_format(tt):
    result = tt("--n-best", "2", "Je suis étudiant.")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 2 and lines[0].startswith("0 ||| I am a student. ||| -")


def test_show_attention_goes_to_stderr_when_stdout_is_not_a_terminal(tt):
    result = tt("--greedy", "--show-attention", "--head", "1", "Je suis étudiant.")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "I am a student.\n"
    assert "cross-attention, layer 2 of 2, head 1" in result.stderr  # layers and heads count from 1
    assert "·am" in result.stderr and "</s>" in result.stderr


@pytest.mark.parametrize(
    "args, code, message",
    [
        (["--attention", "cross", "x"], 2, "--attention and --align need --json"),
        (["--layer", "9", "x"], 1, "--layer 9: this model has 2 decoder layers"),
        (["--head", "5", "x"], 1, "--head 5: this model has 4 heads (1..4)"),
        (["--head", "0", "x"], 1, "--head counts from 1"),
        (["--layer", "0", "x"], 1, "--layer counts from 1"),
        (["--greedy", "--sample", "x"], 1, "exclude each other"),
        (["--input", "/nonexistent/in.fr"], 1, "/nonexistent/in.fr: no such file"),
        (["--input", "f", "x"], 2, "not both"),
    ],
)
def test_bad_options_are_one_line(tt, args, code, message):
    result = tt(*args)
    assert result.exit_code == code
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_missing_and_corrupt_model_directories(tmp_path, tiny_model_dir):
    result = runner.invoke(app, ["translate", "--model", str(tmp_path / "nope"), "x"])
    assert result.exit_code == 1 and result.stderr == f"tt: error: {tmp_path / 'nope'}: no such model directory\n"
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "spm.model").write_bytes((tiny_model_dir / "spm.model").read_bytes())
    (bad / "model.safetensors").write_bytes((tiny_model_dir / "model.safetensors").read_bytes()[:300])
    result = runner.invoke(app, ["translate", "--model", str(bad), "x"])
    assert result.exit_code == 1 and "model.safetensors" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_terminal_stdin_without_arguments_is_a_usage_error(tiny_model_dir):
    # A real pseudo-terminal on stdin: `tt translate` alone must not sit waiting for input.
    leader, follower = pty.openpty()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "tt_cli.main", "translate", "--model", str(tiny_model_dir)],
            stdin=follower,
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "OMP_NUM_THREADS": "1"},
            cwd=ROOT,
        )
    finally:
        os.close(follower)
        os.close(leader)
    assert proc.returncode == 2
    assert proc.stderr.startswith("tt: error: nothing to translate") and proc.stdout == ""


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\n"), max_size=30),
        min_size=1,
        max_size=5,
    )
)
def test_any_unicode_on_stdin_gives_one_line_per_line(tt, lines):
    result = tt("--greedy", "--batch-size", "2", input="\n".join(lines) + "\n")
    assert result.exit_code == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout.count("\n") == len(lines)
    assert len(result.stdout.split("\n")) == len(lines) + 1


def test_align_with_a_full_context_rule_matches_tt_align(tiny_model_dir, tmp_path):
    """A full-context rule re-reads the translation without the look-ahead mask: `tt translate --align`
    (one re-read of the trace's tokens) gives the links `tt align` gives for the same pair (a batched pass)."""
    import shutil

    model = tmp_path / "model"
    shutil.copytree(tiny_model_dir, model)
    rule = {"layer": 1, "head": 2, "shift": False, "full_context": True}
    (model / "alignment.json").write_text(
        json.dumps({"format": "tt.alignment", "version": 1, "rule": rule}), encoding="utf-8"
    )
    sources = ["Je suis étudiant.", "Il est médecin."]
    result = runner.invoke(app, ["translate", "--model", str(model), "--greedy", "--json", "--align", *sources])
    assert result.exit_code == 0, result.stderr
    objs = [json.loads(line) for line in result.stdout.splitlines()]
    (tmp_path / "s.fr").write_text("".join(s + "\n" for s in sources), encoding="utf-8")
    (tmp_path / "t.en").write_text("".join(o["translation"] + "\n" for o in objs), encoding="utf-8")
    aligned = runner.invoke(
        app, ["align", "--model", str(model), "--src", str(tmp_path / "s.fr"), "--tgt", str(tmp_path / "t.en")]
    )
    assert aligned.exit_code == 0, aligned.stderr
    for obj, line in zip(objs, aligned.stdout.splitlines()):
        links = sorted((a["source"], a["target"]) for a in obj["alignment"])
        assert links and links == sorted(tuple(map(int, x.split("-"))) for x in line.split())
    # The causal reading of the same head is another matrix: the rule is really read.
    causal = runner.invoke(
        app,
        [
            "align",
            "--model",
            str(model),
            "--method",
            "plain",
            "--layer",
            "2",  # alignment.json's layer 1, head 2 are indices; options count from 1
            "--head",
            "3",
            "--src",
            str(tmp_path / "s.fr"),
            "--tgt",
            str(tmp_path / "t.en"),
            "--json",
        ],
    )
    full = runner.invoke(
        app,
        ["align", "--model", str(model), "--src", str(tmp_path / "s.fr"), "--tgt", str(tmp_path / "t.en"), "--json"],
    )
    scores = lambda r: [[link["score"] for link in json.loads(line)["links"]] for line in r.stdout.splitlines()]  # noqa: E731
    assert scores(causal) != scores(full)


@pytest.mark.slow
def test_input_file_shows_progress_on_a_terminal_and_none_in_a_log(tiny_model_dir, tmp_path):
    # stderr a pseudo-terminal: a bar counting the lines written (N/N at the end); stderr a file: nothing.
    source = tmp_path / "in.fr"
    source.write_text("Je suis étudiant.\nIl est médecin.\n" * 20, encoding="utf-8")
    command = [sys.executable, "-m", "tt_cli.main", "translate", "--model", str(tiny_model_dir), "--greedy"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "COLUMNS": "100", "TERM": "xterm"}
    leader, follower = pty.openpty()
    try:
        proc = subprocess.run(
            [*command, "--input", str(source), "-o", str(tmp_path / "out.en")],
            stderr=follower,
            stdout=subprocess.DEVNULL,
            timeout=300,
            env=env,
            cwd=ROOT,
        )
        os.close(follower)
        drawn = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal closed: everything was read
                break
            if not chunk:
                break
            drawn += chunk
    finally:
        os.close(leader)
    assert proc.returncode == 0
    assert b"translating" in drawn and b"40/40" in drawn
    assert len((tmp_path / "out.en").read_text(encoding="utf-8").splitlines()) == 40
    logged = subprocess.run(
        [*command, "--input", str(source), "-o", str(tmp_path / "again.en")],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=ROOT,
    )
    assert logged.returncode == 0 and logged.stderr == ""


def test_the_direction_picks_the_shipped_model(tiny_model_dir, monkeypatch):
    """--from/--to (-s/-t) choose the shipped model of that direction, whatever $TT_MODEL says; --model is
    checked against them; a direction nobody shipped is one line and exit 1."""
    monkeypatch.setenv("TT_MODEL", str(tiny_model_dir))
    news = "Le gouvernement a annoncé mardi une hausse des impôts."
    tiny = runner.invoke(app, ["translate", "--raw", news])
    shipped = runner.invoke(app, ["translate", "--raw", "-s", "fr", "-t", "en", news])
    assert shipped.exit_code == 0 and shipped.stdout != tiny.stdout
    assert runner.invoke(app, ["translate", "--raw", "--to", "en", news]).stdout == shipped.stdout
    wrong = runner.invoke(app, ["translate", "--from", "de", "Guten Tag."])
    assert wrong.exit_code == 1 and "no de→? model is shipped (shipped: fr→en" in wrong.stderr
    assert len(wrong.stderr.strip().splitlines()) == 1
