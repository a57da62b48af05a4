"""The limits the README and the model card state are what the shipped model does today.

Figures come from scripts/ship_weights.py (card.json → weights/README.md); these tests re-run the
commands they print and compare.
"""

from __future__ import annotations

import importlib.util
import json

import pytest
from typer.testing import CliRunner

from tests.conftest import ROOT
from tt_cli.main import app

CARD = json.loads((ROOT / "weights" / "card.json").read_text(encoding="utf-8"))
LIMITS = CARD["limits"]


def ship_weights():
    spec = importlib.util.spec_from_file_location("ship_weights", ROOT / "scripts" / "ship_weights.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_card_is_what_the_generator_renders_from_card_json():
    # A hand edit of weights/README.md would be lost at the next ship: it must come from card.json.
    assert ship_weights().render_card(CARD) == (ROOT / "weights" / "README.md").read_text(encoding="utf-8")


def test_a_fine_tuned_card_keeps_the_base_record_and_shows_the_fine_tune():
    """A model fine-tuned with --init-from (guided alignment): the card's training section is still the base
    model's, followed by the fine-tune's command, candidates and its control's BLEU."""
    tuned_cfg = {
        **CARD["train_config"],
        "init_from": "weights",
        "align_links": "runs/silver.links",
        "align_layer": -2,
        "align_head": 0,
        "align_weight": 0.3,
        "warmup": 200,
        "lr_scale": 0.1,
        "threads": 1,
    }
    valid = {"average of last 5": {**CARD["valid"]["average of last 5"], "bleu": 61.44}}
    fine_tune = {
        "selected": "average of last 5",
        "valid": valid,
        "train_steps": 1500,
        "train_seconds": 2184,
        "train_config": tuned_cfg,
        "control": {"run": "runs/control", "selected": "best", "bleu": 61.99, "chrf": 73.1},
    }
    card = {**CARD, "fine_tune": fine_tune}
    text = ship_weights().render_card(card)
    assert f"({CARD['train_steps']} steps" in text  # the base model's training, as before
    assert "for 1500 steps" in text and "--align-links runs/silver.links" in text and "--align-weight 0.3" in text
    assert "scores\n61.99 valid BLEU (best) against 61.44 with guided alignment" in text and "+0.55 BLEU" in text
    assert ship_weights().render_fine_tune(CARD) == ""


def test_the_ood_sample_is_aligned_and_ours():
    fr = (ROOT / LIMITS["ood"]["src"]).read_text(encoding="utf-8").splitlines()
    en = (ROOT / LIMITS["ood"]["ref"]).read_text(encoding="utf-8").splitlines()
    assert len(fr) == len(en) == LIMITS["ood"]["sentences"] and 30 <= len(fr) <= 40
    assert all(line.strip() for line in fr + en)


@pytest.mark.slow
def test_the_ood_figure_is_reproduced_by_the_printed_command():
    ood = LIMITS["ood"]
    result = CliRunner().invoke(
        app, ["eval", "--src", str(ROOT / ood["src"]), "--ref", str(ROOT / ood["ref"]), "--json"], env={"TT_MODEL": ""}
    )
    assert result.exit_code == 0, result.stderr
    got = json.loads(result.stdout)
    assert (got["bleu"], got["chrf"]) == (ood["bleu"], ood["chrf"])
    figure = f"**{ood['bleu']:.1f} BLEU, {ood['chrf']:.1f} chrF**"
    assert figure in (ROOT / "README.md").read_text(encoding="utf-8")  # the README quotes the card's figure
    assert figure in (ROOT / "weights" / "README.md").read_text(encoding="utf-8")


@pytest.mark.slow
def test_the_failures_shown_are_the_models_own():
    result = CliRunner().invoke(app, ["translate", "--raw", *(fr for fr, _, _ in LIMITS["hard"])], env={"TT_MODEL": ""})
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == [en for _, en, _ in LIMITS["hard"]]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for fr, en, _ in LIMITS["hard"]:
        assert f"| {fr} | {en} |" in readme  # the README's table shows the same outputs
