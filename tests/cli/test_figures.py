"""`tt translate --attention-figure/--distribution-figure`: one command, one figure file, the sentence's
pieces on its axes; the map and the bars are those of the family, layer, head and step asked for."""

from __future__ import annotations

import html
import importlib.util
import re

import pytest
import torch
from typer.testing import CliRunner

from core.decode.trace import BOS_PIECE, attention_matrix
from core.decode.translate import TranslateOptions, translate_lines
from core.model.attention import n_layers_of
from tt_cli.main import app

runner = CliRunner()
SENTENCE = "Je suis étudiant."
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def traced(tiny_loaded):
    """What the figures are drawn from: the sentence translated as --attention-figure translates it."""
    options = TranslateOptions(with_attention=True, n_candidates=10)
    (t,) = translate_lines(tiny_loaded, [SENTENCE], options)
    return t


@pytest.fixture
def figures(monkeypatch):
    """The matplotlib Figures the command saves, in order (each still written to its file)."""
    import tt_cli.figures

    made = []
    save = tt_cli.figures.save
    monkeypatch.setattr(tt_cli.figures, "save", lambda fig, path, option="": made.append(fig) or save(fig, path))
    return made


def translate(tiny_model_dir, *args):
    result = runner.invoke(app, ["translate", "--model", str(tiny_model_dir), *map(str, args), SENTENCE])
    assert result.exit_code == 0, result.stderr
    return result


def labels(ticks) -> list[str]:
    return [t.get_text() for t in ticks]


def test_a_png_of_the_attention_map_with_the_pieces_on_its_axes(tiny_model_dir, traced, figures, tmp_path):
    png = tmp_path / "attention.png"
    result = translate(tiny_model_dir, "--attention-figure", png)
    assert result.stdout == traced.text + "\n" and f"tt: wrote {png}" in result.stderr
    assert png.read_bytes()[:8] == PNG_MAGIC
    (figure,) = figures
    ax = figure.axes[0]
    assert labels(ax.get_xticklabels()) == traced.source_trace.pieces  # the source, </s> included
    assert labels(ax.get_yticklabels()) == [s.piece for s in traced.steps]  # the output, as the model wrote it
    expected = attention_matrix(traced.source_trace, traced.steps, "cross", -1, None)  # the default: mean, last layer
    torch.testing.assert_close(torch.tensor(ax.images[0].get_array()), expected)


def test_an_svg_keeps_the_pieces_as_text(tiny_model_dir, traced, tmp_path):
    svg = tmp_path / "attention.svg"
    translate(tiny_model_dir, "--attention-figure", svg)
    texts = [html.unescape(t) for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg.read_text(encoding="utf-8"))]
    for piece in {*traced.source_trace.pieces, *(s.piece for s in traced.steps)}:
        assert piece in texts, piece


def test_family_layer_and_head_choose_the_map(tiny_model_dir, tiny_loaded, traced, figures, tmp_path):
    cfg = tiny_loaded.cfg
    choices = [("cross", 0, 1), ("decoder_self", cfg.n_decoder_layers - 1, 0), ("encoder_self", 0, None)]
    for family, layer, head in choices:
        number = layer + 1  # options count layers and heads from 1
        args = ["--family", family, "--layer", number] + (["--head", head + 1] if head is not None else [])
        translate(tiny_model_dir, "--attention-figure", tmp_path / f"{family}.png", *args)
        ax = figures[-1].axes[0]
        expected = attention_matrix(traced.source_trace, traced.steps, family, layer, head)
        torch.testing.assert_close(torch.tensor(ax.images[0].get_array()), expected)
        which = "mean of the heads" if head is None else f"head {head + 1}"
        assert ax.get_title().endswith(f"layer {number} of {n_layers_of(cfg, family)}, {which}")
    decoder_inputs = labels(figures[1].axes[0].get_xticklabels())
    assert decoder_inputs == [BOS_PIECE] + [s.piece for s in traced.steps[:-1]]
    assert labels(figures[2].axes[0].get_yticklabels()) == traced.source_trace.pieces
    assert not torch.equal(  # the three maps differ: an option ignored would draw the same one twice
        torch.tensor(figures[0].axes[0].images[0].get_array()),
        attention_matrix(traced.source_trace, traced.steps, "cross", -1, None),
    )


def test_distribution_figure_draws_the_steps_candidates(tiny_model_dir, traced, figures, tmp_path):
    for step, number in ((0, 1), (1, 2), (-1, -1)):  # --step counts from 1, as tt inspect shows steps
        png = tmp_path / f"step{number}.png"
        translate(tiny_model_dir, "--distribution-figure", png, "--step", number)
        assert png.read_bytes()[:8] == PNG_MAGIC
        ax = figures[-1].axes[0]
        shown = traced.steps[step]
        assert labels(ax.get_yticklabels()) == [c.piece for c in shown.candidates] and len(shown.candidates) == 10
        assert [bar.get_width() for bar in ax.patches] == pytest.approx([c.prob for c in shown.candidates])
        assert ax.get_title() == f"step {shown.index + 1}: next-piece distribution (chose {shown.piece})"
        assert step < 0 or ax.get_title().startswith(f"step {number}:")


def test_mistakes_are_one_line_before_the_model_loads(tiny_model_dir, tmp_path, monkeypatch):
    model = ["translate", "--model", str(tiny_model_dir)]
    for args, code, says in (
        (["--attention-figure", str(tmp_path / "a.jpg"), SENTENCE], 1, "give a file name ending in .png, .svg or .pdf"),
        (["--attention-figure", str(tmp_path / "a.png"), "Un.", "Deux."], 2, "give exactly one as an argument"),
        (
            ["--distribution-figure", str(tmp_path / "d.png"), "--step", "99", SENTENCE],
            1,
            "--step 99: the translation has",
        ),
        (["--distribution-figure", str(tmp_path / "d.png"), "--step", "0", SENTENCE], 1, "--step counts from 1"),
        (
            ["--attention-figure", str(tmp_path / "a.png"), "--family", "encoder_self", "--layer", "9", SENTENCE],
            1,
            "encoder layers",
        ),
    ):
        result = runner.invoke(app, [*model, *args])
        assert result.exit_code == code and says in result.stderr, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else find_spec(name, *a)
    )
    result = runner.invoke(app, [*model, "--attention-figure", str(tmp_path / "a.png"), SENTENCE])
    assert result.exit_code == 1 and result.stdout == ""
    assert (
        result.stderr
        == "tt: error: --attention-figure needs matplotlib: pip install 'tt[figures]' (or pip install matplotlib)\n"
    )
    assert not (tmp_path / "a.png").exists()
