"""A model with more encoder than decoder layers (the shape the shipped model moves to: deep encoder,
shallow decoder) through every command that reads layers: translate's JSON attention and trace files,
align, analyze, the inspect TUI, and the CTranslate2 conversion in bench/.

A tiny 3+1-layer model is trained for a few seconds on the fixture corpus; each test checks that the
per-layer output has the model's own layer count on each side, so code that assumed one count for
both (zip of encoder and decoder layers, one `n_layers`) fails here.
"""

from __future__ import annotations

import json
import sys

import pytest
from typer.testing import CliRunner

from tests.conftest import ROOT, TINY_TSV, model_files, tiny_train_config, write_pair_files
from tt_cli.main import app

pytestmark = pytest.mark.slow

ENCODER, DECODER = 3, 1
SENTENCE = "Je suis étudiant."
runner = CliRunner()


@pytest.fixture(scope="module")
def deep_model(tmp_path_factory):
    from core.train.trainer import Trainer

    out = tmp_path_factory.mktemp("deep_run")
    cfg = tiny_train_config(
        out,
        max_steps=200,
        warmup=100,
        seed=3,
        model_overrides={"max_len": 64, "n_encoder_layers": ENCODER, "n_decoder_layers": DECODER},
    )
    Trainer(cfg).run()
    return model_files(out, tmp_path_factory.mktemp("deep_model"))


@pytest.fixture(scope="module")
def pair_files(tmp_path_factory):
    return write_pair_files(tmp_path_factory.mktemp("pairs"), 6)


def tt(*args: str):
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.stderr or result.output
    return result.stdout


def test_translate_json_attention_has_each_sides_layers(deep_model):
    record = json.loads(tt("translate", "--model", deep_model, "--json", "--attention", "all", SENTENCE))
    att = record["attention"]
    assert len(att["encoder_self"]) == ENCODER
    assert len(att["cross"]) == len(att["decoder_self"]) == DECODER


def test_trace_file_records_each_sides_layers(deep_model, tmp_path):
    from core.analysis.tracefile import load_trace

    trace = tmp_path / "t.trace"
    tt("translate", "--model", deep_model, "--trace", trace, "--attribution", "ixg", SENTENCE)
    loaded = load_trace(trace)
    assert len(loaded.source.encoder_self) == ENCODER
    assert loaded.steps and all(len(s.cross) == len(s.decoder_self) == DECODER for s in loaded.steps)


def test_align_and_every_analysis_run(deep_model, pair_files):
    src, ref = pair_files
    links = tt("align", "--model", deep_model, "--src", src, "--tgt", ref)
    assert len(links.splitlines()) == 6
    heads = json.loads(tt("analyze", "heads", "--model", deep_model, "--src", src, "--ref", ref, "--json"))
    layers: dict[str, set[int]] = {}
    for h in heads["heads"]:
        layers.setdefault(h["family"], set()).add(h["layer"])
    # counted from 1, as every command shows layers
    assert layers == {"encoder_self": set(range(1, ENCODER + 1)), "decoder_self": {1}, "cross": {1}}
    lens = json.loads(tt("analyze", "lens", "--model", deep_model, "--src", src, "--ref", ref, "--json"))
    assert len(lens["final"]) == len(lens["input"]) == DECODER
    ref_mode = json.loads(tt("analyze", "ref", "--model", deep_model, "--src", src, "--ref", ref, "--json"))
    assert ref_mode["summary"]["sentences"] == 6
    attribution = json.loads(tt("analyze", "attribute", "--model", deep_model, "--json", SENTENCE))
    assert attribution


def test_inspect_walks_each_familys_own_layers(deep_model):
    from core.checkpoint import load_model
    from tests.tui.test_tui import drive, keys
    from tt_cli.tui.widgets.heatmap import Heatmap

    async def script(app, pilot):
        await keys(pilot, "n", "n")
        seen: dict[str, set[int]] = {}
        for _ in range(3):  # f cycles the attention families; l walks the layers of the one shown
            layers = {app.view.layer}
            for _ in range(4):
                await keys(pilot, "l")
                layers.add(app.view.layer)
            seen[app.view.family] = layers
            await keys(pilot, "f")
        assert seen == {"encoder_self": set(range(ENCODER)), "decoder_self": {0}, "cross": {0}}
        await keys(pilot, "g")  # the grid: one row per layer × head of the family shown
        assert len(app.query_one(Heatmap).data.rows) == app.view.n_layers * app.view.dims.h
        for family, layers in (("decoder_self", DECODER), ("encoder_self", ENCODER)):
            await keys(pilot, "f")  # a self-attention grid: a pattern-kind mark beside every head
            marks = app.query_one(Heatmap).data.row_marks
            assert app.view.family == family and len(marks) == layers * app.view.dims.h and " " not in marks
        await keys(pilot, "f")  # back to cross-attention
        for key in ("y", "i", "b", "m", "r"):  # lens, attribution, beam, masks, run to the end
            await keys(pilot, key)

    drive(load_model(deep_model), script)


@pytest.mark.isa  # CTranslate2's greedy pieces equal tt's: argmax over two engines' floats
def test_ctranslate2_conversion_keeps_both_depths(deep_model, tmp_path):
    import ctranslate2

    sys.path.insert(0, str(ROOT / "bench"))
    from ct2_convert import convert

    from core.api import Translator
    from core.checkpoint import load_model

    loaded = load_model(deep_model)
    converted = convert(loaded, tmp_path / "ct2")
    sentences = [line.split("\t")[0] for line in TINY_TSV.read_text(encoding="utf-8").splitlines()[:8]]
    ours = [r.pieces for r in Translator(deep_model, method="greedy").translate(sentences)]
    pieces = [loaded.tokenizer.sp.encode(s, out_type=str) + ["</s>"] for s in sentences]
    theirs = ctranslate2.Translator(str(converted), device="cpu").translate_batch(
        pieces, beam_size=1, max_decoding_length=64
    )
    assert [r.hypotheses[0] for r in theirs] == ours
