"""Options that no test named (scripts/option_coverage.py --missing): each test fails when its option is
ignored or wired to the wrong thing, on the tiny real model."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch
from typer.testing import CliRunner

from tests.conftest import ROOT, write_pair_files
from tt_cli.main import app

runner = CliRunner()
SENTENCE = "Je suis étudiant."


def tt(*args) -> str:
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.stderr or result.output
    return result.stdout


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    return write_pair_files(tmp_path_factory.mktemp("pairs"), 12)


def test_analyze_attribute_layer_picks_the_cross_attention_it_compares(tiny_model_dir, tiny_loaded):
    from core.decode.trace import attention_matrix
    from core.decode.translate import TranslateOptions, translate_lines

    (t,) = translate_lines(tiny_loaded, [SENTENCE], TranslateOptions(method="greedy", with_attention=True))
    shown = {}
    for layer in (0, -1):  # indices; --layer counts from 1 (-1 = the last either way)
        number = layer + 1 if layer >= 0 else layer
        out = json.loads(
            tt("analyze", "attribute", "-m", tiny_model_dir, "--method", "ixg", "--layer", number, "--json", SENTENCE)
        )
        shown[layer] = torch.tensor(out["sentences"][0]["cross_attention"])
        expected = attention_matrix(t.source_trace, t.steps, "cross", layer, None)
        assert torch.allclose(shown[layer], expected, atol=1e-3)
    assert not torch.allclose(shown[0], shown[-1], atol=1e-3)  # the tiny model's two layers differ


def test_analyze_ref_top_caps_the_lists(tiny_model_dir, pairs, tmp_path):
    src, ref = pairs
    # References of other sentences: the model diverges at many pieces, so the lists have more than 3.
    lines = ref.read_text(encoding="utf-8").splitlines()
    (tmp_path / "other.en").write_text("\n".join(lines[1:] + lines[:1]) + "\n", encoding="utf-8")
    ref = tmp_path / "other.en"
    lengths = {}
    for top in (1, 3):
        summary = json.loads(
            tt("analyze", "ref", "-m", tiny_model_dir, "--src", src, "--ref", ref, "--top", top, "--json")
        )["summary"]
        lengths[top] = len(summary["ref_pieces"])
        assert len(summary["swaps"]) <= top
    assert lengths == {1: 1, 3: 3}


def test_eval_batch_size_reaches_the_decoder(tiny_model_dir, pairs, monkeypatch):
    import core.decode.translate as decode

    real, seen = decode.translate_lines, []

    def recording(loaded, lines, options, *args, **kwargs):  # the real decoder, its batch size noted
        seen.append(options.batch_size)
        return real(loaded, lines, options, *args, **kwargs)

    monkeypatch.setattr(decode, "translate_lines", recording)
    src, ref = pairs
    tt("eval", "-m", tiny_model_dir, "--src", src, "--ref", ref, "--greedy", "--batch-size", 3)
    assert seen == [3]


def test_serve_device_is_the_device_it_loads_on(tiny_model_dir):
    # A device no machine has: the server must refuse it before it listens (ignored, it would serve on the CPU).
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tt_cli.main",
            "serve",
            "--model",
            str(tiny_model_dir),
            "--port",
            "0",
            "--device",
            "cuda:99",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode != 0 and "cuda" in done.stderr.lower()
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
