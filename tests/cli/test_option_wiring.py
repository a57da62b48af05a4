"""Options several commands share, each shown to reach what it names: --device (an unknown device is
refused by name, so the value got to the device resolver), --threads (torch's thread count after the
command), --limit (the number of sentences analysed); and single options the sweep of
scripts/option_coverage.py found without a test (eval --alpha and --errors, analyze heads --metric)."""

from __future__ import annotations

import json

import pytest
import torch
from typer.testing import CliRunner

from tests.conftest import TINY_TSV
from tt_cli.main import app

runner = CliRunner()
PAIRS = [("Je suis étudiant.", "I am a student."), ("Il est médecin.", "He is a doctor.")]


@pytest.fixture
def files(tmp_path):
    (tmp_path / "s.fr").write_text("".join(s + "\n" for s, _ in PAIRS), encoding="utf-8")
    (tmp_path / "r.en").write_text("".join(r + "\n" for _, r in PAIRS), encoding="utf-8")
    return tmp_path


def command_lines(model, d) -> dict[str, list[str]]:
    """A quick, valid command line for each command that loads a model."""
    m = ["--model", str(model)]
    src_ref = ["--src", str(d / "s.fr"), "--ref", str(d / "r.en")]
    return {
        "translate": ["translate", *m, "--greedy", "Je suis étudiant."],
        "eval": ["eval", *m, "--greedy", *src_ref],
        "align": ["align", *m, "--src", str(d / "s.fr"), "--tgt", str(d / "r.en")],
        "analyze ref": ["analyze", "ref", *m, *src_ref],
        "analyze heads": ["analyze", "heads", *m, *src_ref],
        "analyze lens": ["analyze", "lens", *m, *src_ref],
        "analyze attribute": ["analyze", "attribute", *m, "Je suis étudiant."],
    }


COMMANDS = ["translate", "eval", "align", "analyze ref", "analyze heads", "analyze lens", "analyze attribute"]


@pytest.mark.parametrize("name", COMMANDS)
def test_device_reaches_the_device_resolver(name, tiny_model_dir, files):
    result = runner.invoke(app, [*command_lines(tiny_model_dir, files)[name], "--device", "abacus"])
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr == "tt: error: unknown device 'abacus'; use auto, cpu, cuda, cuda:N or mps\n"


def test_train_device_reaches_the_device_resolver(tmp_path):
    args = ["train", "--data", str(TINY_TSV), "--out", str(tmp_path / "r"), "--preset", "tiny", "--vocab-size", "120"]
    result = runner.invoke(app, [*args, "--max-steps", "1", "--device", "abacus"])
    assert result.exit_code == 1 and "unknown device 'abacus'" in result.stderr


@pytest.fixture
def restore_threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


@pytest.mark.parametrize("name", COMMANDS)
def test_threads_sets_torchs_thread_count(name, tiny_model_dir, files, restore_threads):
    torch.set_num_threads(1)
    result = runner.invoke(app, [*command_lines(tiny_model_dir, files)[name], "--threads", "3"])
    assert result.exit_code == 0, result.stderr
    assert torch.get_num_threads() == 3


@pytest.mark.parametrize(("name", "key"), [("analyze ref", "summary"), ("analyze heads", None), ("analyze lens", None)])
def test_limit_keeps_the_first_sentences(name, key, tiny_model_dir, files):
    result = runner.invoke(app, [*command_lines(tiny_model_dir, files)[name], "--json", "--limit", "1"])
    assert result.exit_code == 0, result.stderr
    obj = json.loads(result.stdout)
    assert (obj[key] if key else obj)["sentences"] == 1


def test_attribute_limit_and_src(tiny_model_dir, files):
    args = ["analyze", "attribute", "--model", str(tiny_model_dir), "--src", str(files / "s.fr"), "--json"]
    both = json.loads(runner.invoke(app, args).stdout)
    one = json.loads(runner.invoke(app, [*args, "--limit", "1"]).stdout)
    assert [s["source"] for s in both["sentences"]] == [s for s, _ in PAIRS]
    assert [s["source"] for s in one["sentences"]] == [PAIRS[0][0]]


def test_eval_alpha_and_errors(tiny_model_dir, files):
    args = ["eval", "--model", str(tiny_model_dir), "--json", "--ref", str(files / "r.en")]
    alpha = runner.invoke(app, [*args, "--src", str(files / "s.fr"), "--alpha", "0.9"])
    assert alpha.exit_code == 0, alpha.stderr
    assert json.loads(alpha.stdout)["decoding"] == {"method": "beam", "beam": 4, "alpha": 0.9}
    (files / "bad.fr").write_bytes("Je suis étudiant.\n".encode() + b"Il est m\xe9decin.\n")
    strict = runner.invoke(app, [*args, "--src", str(files / "bad.fr")])
    assert strict.exit_code == 1 and f"{files / 'bad.fr'}:2" in strict.stderr
    replaced = runner.invoke(app, [*args, "--src", str(files / "bad.fr"), "--errors", "replace"])
    assert replaced.exit_code == 0, replaced.stderr
    assert json.loads(replaced.stdout)["sentences"] == 2


def test_heads_metric_bleu_scores_by_bleu(tiny_model_dir, files):
    args = command_lines(tiny_model_dir, files)["analyze heads"]
    result = runner.invoke(app, [*args, "--json", "--metric", "bleu"])
    assert result.exit_code == 0, result.stderr
    obj = json.loads(result.stdout)
    assert obj["metric"] == "bleu" and 0 <= obj["intact"] <= 100  # BLEU, not a (negative) log-probability
