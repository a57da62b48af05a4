"""Attention-sink diagnostics on the tiny real model, checked against one-sentence traces."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from core.analysis.sinks import CATEGORIES, head_sinks, is_punctuation, parks_on
from core.decode.trace import trace_steps
from tt_cli.main import app

PAIRS = [
    ("Je suis étudiant.", "I am a student."),
    ("Le chat dort.", "The cat is sleeping."),
    ("Il fait froid.", "It is cold."),
]


def test_punctuation_pieces():
    assert is_punctuation(".") and is_punctuation("▁?") and is_punctuation("'")
    assert not is_punctuation("▁") and not is_punctuation("▁a.") and not is_punctuation("</s>")


def test_parking_needs_half_the_mass_and_three_times_uniform():
    assert parks_on({"eos": 0.6, "punct": 0.0, "first": 0.0}, {"eos": 0.1, "punct": 0.1, "first": 0.1}) == ["eos"]
    assert parks_on({"eos": 0.6, "punct": 0.0, "first": 0.0}, {"eos": 0.25, "punct": 0.1, "first": 0.1}) == []
    assert parks_on({"eos": 0.45, "punct": 0.0, "first": 0.0}, {"eos": 0.01, "punct": 0.1, "first": 0.1}) == []


@pytest.fixture(scope="module")
def sinks(tiny_loaded):
    return head_sinks(tiny_loaded, PAIRS, max_tokens=20)  # a small budget: several padded batches


def test_every_head_once_with_shares_in_range(tiny_loaded, sinks):
    cfg = tiny_loaded.cfg
    n_heads = (cfg.n_encoder_layers + 2 * cfg.n_decoder_layers) * cfg.h
    assert len({(s.family, s.layer, s.head) for s in sinks}) == len(sinks) == n_heads
    for s in sinks:
        assert all(0.0 <= s.share[c] <= 1.0 + 1e-6 for c in CATEGORIES)
        if s.family == "decoder_self":
            assert s.share["eos"] == 0.0 and s.uniform["eos"] == 0.0


def test_shares_match_the_per_sentence_trace(tiny_loaded, sinks):
    """Recompute two shares from `trace_steps` (one sentence at a time, no padding)."""
    tok, eos = tiny_loaded.tokenizer, tiny_loaded.cfg.eos_id
    enc_eos, cross_first, uniform = [], [], []
    for src, ref in PAIRS:
        source, steps = trace_steps(tiny_loaded, tok.encode(src) + [eos], tok.encode(ref) + [eos])
        w = source.encoder_self[1][0]  # layer 1, head 0: (S, S)
        enc_eos.append(float(w[:, -1].mean()))  # </s> is the last source piece
        cross_first.append(sum(float(s.cross[0][2, 0]) for s in steps) / len(steps))  # layer 0, head 2
        uniform.append(1 / len(source.tokens))
    by_key = {(s.family, s.layer, s.head): s for s in sinks}
    assert by_key[("encoder_self", 1, 0)].share["eos"] == pytest.approx(sum(enc_eos) / 3, abs=1e-4)
    assert by_key[("cross", 0, 2)].share["first"] == pytest.approx(sum(cross_first) / 3, abs=1e-4)
    assert by_key[("cross", 0, 2)].uniform["eos"] == pytest.approx(sum(uniform) / 3, abs=1e-6)


def test_cli_heads_sinks_json_and_table(tiny_model_dir, tiny_loaded, tmp_path):
    cfg = tiny_loaded.cfg
    src, ref = tmp_path / "s.fr", tmp_path / "r.en"
    src.write_text("".join(p[0] + "\n" for p in PAIRS), encoding="utf-8")
    ref.write_text("".join(p[1] + "\n" for p in PAIRS), encoding="utf-8")
    args = ["analyze", "heads", "--sinks", "--model", str(tiny_model_dir), "--src", str(src), "--ref", str(ref)]
    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.stderr
    obj = json.loads(result.stdout)
    assert obj["sentences"] == 3
    assert len(obj["sinks"]) == (cfg.n_encoder_layers + 2 * cfg.n_decoder_layers) * cfg.h
    assert set(obj["sinks"][0]["share"]) == {"eos", "punct", "first"}
    table = CliRunner().invoke(app, args)
    assert table.exit_code == 0 and "heads park their attention" in table.stdout
