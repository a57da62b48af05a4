"""The limits the README and the model card state are what the shipped model does today.

Figures come from scripts/ship_weights.py (card.json → weights/README.md); these tests re-run the
commands they print and compare.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import ROOT
from tt_cli.main import app

CARD = json.loads((ROOT / "weights" / "card.json").read_text(encoding="utf-8"))
LIMITS = CARD["limits"]
# A card of a model trained from scratch on Tatoeba + Multi30k (the shipped model's first run), for the renderer's
# other branches: no continued runs, no history, no news sets.
SCRATCH = {
    **{k: v for k, v in CARD.items() if k not in ("base", "fine_tune", "earlier_fine_tunes", "history", "precision")},
    **CARD["base"],
    "test_sets": {k: v for k, v in CARD["test_sets"].items() if k in ("tatoeba-test", "multi30k-test2016")},
}


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
    card = {**SCRATCH, "fine_tune": fine_tune}
    text = ship_weights().render_card(card)
    assert f"({CARD['train_steps']} steps" in text  # the base model's training, as before
    assert "for 1500 steps" in text and "--align-links runs/silver.links" in text and "--align-weight 0.3" in text
    assert "scores\n61.99 valid BLEU (best) against 61.44 with guided alignment" in text and "+0.55 BLEU" in text
    # train_config keeps indices (-2, 0); the card counts from 1, as `tt train --align-head` now does
    assert "(the penultimate decoder layer, head 1, weight λ 0.3)" in text
    assert "--align-layer -2 --align-head 1 --align-weight 0.3" in text


def test_the_cards_alignment_rule_counts_from_one_as_tt_inspect_does():
    from core.align.links import load_rule

    rule, n_layers = load_rule(ROOT / "weights"), CARD["model_config"]["n_decoder_layers"]
    assert CARD["alignment"]["rule"] == rule.describe(n_layers)
    assert CARD["alignment"]["rule"].startswith(f"layer {rule.layer % n_layers + 1}, ")  # index 2 is "layer 3"
    assert ship_weights().render_fine_tune(SCRATCH) == ""


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
    """Each row: the French, the model alone (`--raw`), its kind, and (cards since the text pipeline's
    column) what `tt translate` prints."""
    sources = [row[0] for row in LIMITS["hard"]]
    runs = {1: ["--raw"]} | ({3: []} if all(len(row) == 4 for row in LIMITS["hard"]) else {})
    for column, flags in runs.items():  # in fp32, the exact model, as scripts/ship_weights.py measures them
        args = ["translate", "--local", "--precision", "fp32", *flags, *sources]
        result = CliRunner().invoke(app, args, env={"TT_MODEL": ""})
        assert result.exit_code == 0, result.stderr
        assert result.stdout.splitlines() == [row[column] for row in LIMITS["hard"]]


def test_a_card_trained_further_on_europarl_and_news_says_so():
    """A model continued on the corpus-scale mix (scripts/model_continue.sh): the card cites the new data,
    prints the continued run's command from its config, gives the peers' published figures for context,
    says how CI checks the large sets, and its limits text follows what it was trained on."""
    base = CARD.get("base") or CARD
    tc = {
        **base["train_config"],
        "init_from": "weights/next",
        "out": "runs/c2",
        "data": ["../shared/data/europarl/europarl-v7", "../shared/data/tatoeba-fra-eng/fra-eng.tsv"],
        "data_weights": [1.0, 1.5],
        "mix_temperature": 2.0,
        "valid": ["../shared/data/news/newstest2013"],
        "noise_case": 0.03,
        "noise_accents": 0.03,
        "model_overrides": {"dropout": 0.0, "attention_dropout": 0.0},  # where TrainConfig keeps them
        "warmup": 1500,
        "lr_scale": 0.5,
    }
    fine_tune = {
        "selected": "best",
        "valid": {"best": {"bleu": 20.5, "chrf": 50.1}},
        "valid_set": "newstest2013 (first 1000 lines)",
        "train_steps": 4200,
        "train_seconds": 6600,
        "train_config": tc,
    }
    news = {"source": "files", "file": "news/newstest2013", "sentences": 3000, "bleu": 19.25, "chrf": 48.0}
    news |= {"bleu_signature": "s", "chrf_signature": "c", "check": {"sentences": 200, "bleu": 18.0, "chrf": 47.0}}
    card = {**SCRATCH, "fine_tune": fine_tune, "test_sets": {**SCRATCH["test_sets"], "newstest2013": news}}
    text = ship_weights().render_card(card)
    assert "Koehn 2005" in text and "FLORES-101" in text and "newstest2014" in text
    assert (
        "train --init-from weights/next --threads 1" in text and "--out runs/c2\n" in text and "--run runs/c2 " in text
    )
    assert "for 4200 steps" in text and "--data-weight 1 --data-weight 1.5 --mix-temperature 2" in text
    assert "--noise-case 0.03" in text and "--valid ../shared/data/news/newstest2013" in text and "--dropout 0 " in text
    assert "| newstest2013 | 3000 | 19.2 | 48.0 |" in text and "(newstest2013: 19.2 BLEU)" in text
    assert "first 200 lines" in text and "Candidates scored on newstest2013 (first 1000 lines)" in text
    plain = ship_weights().render_card(SCRATCH)
    assert "Koehn" not in plain and "first 200 lines" not in plain and "It fails on long formal or news text" in plain


def continued_config(out: str, init: str, d_ff: int | None = None) -> dict:
    """The train_config of a run of scripts/model_continue.sh, as a card records it."""
    return {
        **(CARD.get("base") or CARD)["train_config"],
        "init_from": init,
        "out": out,
        "data": ["../shared/data/europarl/europarl-v7"],
        "data_weights": [1.0],
        "mix_temperature": 2.0,
        "valid": ["../shared/data/news/newstest2013"],
        "noise_case": 0.05,
        "noise_accents": 0.05,
        "model_overrides": {"dropout": 0.0, "attention_dropout": 0.0, "d_ff": d_ff},
    }


def test_a_card_continued_twice_keeps_both_runs_earliest_first():
    """A model continued from weights/next (itself continued from the shipped model): the card shows the earlier
    run's section, then the new one's, each with its own command, steps and candidates."""

    def run(out: str, init: str, steps: int, bleu: float, d_ff: int | None = None) -> dict:
        tc = continued_config(out, init, d_ff)
        return {
            "selected": "best",
            "valid": {"best": {"bleu": bleu, "chrf": 50.0}},
            "valid_set": "newstest2013 (first 1000 lines)",
            "train_steps": steps,
            "train_seconds": 6000,
            "train_config": tc,
        }

    card = {
        **CARD,
        "earlier_fine_tunes": [run("runs/c1", "weights", 4541, 19.6)],
        "fine_tune": run("runs/c2", "weights/next", 3900, 22.3, d_ff=2048),
    }
    text = ship_weights().render_card(card)
    first, second = text.index("Europarl and news: runs/c1"), text.index("Europarl and news: runs/c2")
    assert first < second
    assert "--init-from weights --threads 1" in text[first:second] and "for 4541 steps" in text[first:second]
    assert "--d-ff" not in text[first:second] and "--attention-dropout 0 --d-ff 2048 " in text[second:]
    assert "--init-from weights/next --threads 1" in text[second:] and "for 3900 steps" in text[second:]
    assert "| best | 19.6 | 50.0 |" in text[first:second] and "| best | 22.3 | 50.0 |" in text[second:]
    assert "Koehn 2005" in text


def test_a_resumed_run_shipped_again_replaces_its_own_record():
    """weights/next from runs/c2, then runs/c2 resumed and shipped again: the new card lists c1 before it, once."""
    c1 = {"train_config": continued_config("runs/c1", "weights")}
    c2 = {"train_config": continued_config("runs/c2", "weights/next", 2048)}
    card = {**CARD, "earlier_fine_tunes": [c1], "fine_tune": c2}
    assert ship_weights().runs_before(card, c2["train_config"]) == [c1]
    assert ship_weights().runs_before(card, continued_config("runs/c3", "weights/next")) == [c1, c2]


def test_a_model_ships_unless_a_set_is_worse_by_more_than_half_a_point():
    sw = ship_weights()
    shipped = {"test_sets": {"tatoeba-test": {"bleu": 62.7}, "newstest2013": {"bleu": 6.7}}}

    def card(**bleu: float) -> dict:
        return {"test_sets": {name.replace("_", "-"): {"bleu": b} for name, b in bleu.items()}}

    assert sw.regressions(card(tatoeba_test=62.2, newstest2013=21.0), shipped) == []
    assert sw.regressions(card(tatoeba_test=62.1, newstest2013=21.0), shipped) == ["tatoeba-test 62.7 → 62.1"]
    assert sw.regressions(card(flores101_dev=1.0), shipped) == []  # a set the shipped card lacks: nothing to lose


def test_keeping_tatoeba_chooses_the_best_dev_candidate_within_the_bound():
    sw = ship_weights()
    valid = {"best": {"bleu": 20.0}, "average of last 5": {"bleu": 21.0}, "mix": {"bleu": 19.0}}
    kept = {"best": {"bleu": 59.0}, "average of last 5": {"bleu": 58.0}, "mix": {"bleu": 60.5}}
    assert sw.choose_keeping(valid, kept, 58.5) == "best"  # the average scores more on dev but keeps too little
    assert sw.choose_keeping(valid, kept, 57.0) == "average of last 5"
    assert sw.choose_keeping(valid, kept, 61.0) == "mix"  # none keeps enough: the one that keeps the most
    # kept scores the shipped model too (ship_weights does); it keeps the most, but it is no candidate
    assert sw.choose_keeping(valid, {**kept, "shipped": {"bleu": 62.0}}, 61.5) == "mix"


def test_mixes_only_leaves_the_runs_own_checkpoints_out_of_the_pick():
    """--mixes-only: the rule picks among the mixes with the shipped model, even where a run's own checkpoint scores
    more on the dev slice (sessions 29-31: that pick did not generalize); the Tatoeba bound still applies inside."""
    sw = ship_weights()
    valid = {"best": {"bleu": 22.0}, "average of last 5": {"bleu": 21.0}}
    valid |= {sw.mix_name("best", 0.5): {"bleu": 20.5}, sw.mix_name("best", 0.7): {"bleu": 20.8}}
    mixes = [sw.mix_name("best", 0.5), sw.mix_name("best", 0.7)]
    assert sw.rule_pool(valid, mixes, False) is valid
    pool = sw.rule_pool(valid, mixes, True)
    assert (
        max(pool, key=lambda n: pool[n]["bleu"])
        == sw.mix_name("best", 0.7)
        != max(valid, key=lambda n: valid[n]["bleu"])
    )
    kept = {name: {"bleu": 60.0} for name in valid} | {sw.mix_name("best", 0.7): {"bleu": 58.0}}
    assert sw.choose_keeping(pool, kept, 59.0) == sw.mix_name("best", 0.5)


def test_a_run_started_from_another_run_is_refused_before_scoring(tmp_path):
    """A run continued from an unshipped run (`--init-from runs/A`, no card.json there) cannot get a card that says
    what it was trained from: refused up front, where a start with a card (a shipped model, or --out itself) passes."""
    sw = ship_weights()
    other = tmp_path / "runA"
    other.mkdir()
    (other / "model.safetensors").write_bytes((ROOT / "weights" / "model.safetensors").read_bytes())
    info = {"train_config": {"init_from": str(other)}}
    assert sw.start_refusal(Path("runs/B"), info) == (
        f"ship_weights: --run runs/B started from {other}, which has no card.json (a run, not a shipped model); "
        "ship that run first, or continue a shipped model"
    )
    (other / "card.json").write_text("{}", encoding="utf-8")
    assert sw.start_refusal(Path("runs/B"), info) is None  # a card there: shipped, or --out whose card it replaces
    for start in ("weights", "weights/en-fr", None):
        assert sw.start_refusal(Path("runs/B"), {"train_config": {"init_from": start}}) is None


def test_mixes_only_without_interpolate_is_a_one_line_error():
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "ship_weights.py"), "--mixes-only", "--out", "/nonexistent"],
        capture_output=True,
        text=True,
    )
    assert run.returncode != 0 and run.stderr.strip() == (
        "ship_weights: --mixes-only needs --interpolate (the shares of the mixes to choose among)"
    )


def test_an_interpolated_candidate_is_scored_and_the_card_shows_the_rule(tmp_path):
    """interpolate() writes a·candidate + (1 − a)·shipped and scores it with `tt eval` (here the shipped model with
    itself, so it scores what the shipped model does); the card's candidates table then carries the Tatoeba column."""
    sw = ship_weights()
    src, ref = tmp_path / "dev.fr", tmp_path / "dev.en"
    src.write_text("Je suis étudiant.\nIl fait froid.\n", encoding="utf-8")
    ref.write_text("I am a student.\nIt is cold.\n", encoding="utf-8")
    candidates, valid = {"best": ROOT / "weights"}, {"best": sw.eval_json(ROOT / "weights", src, ref)}
    sw.interpolate(candidates, valid, "best", [0.7], tmp_path, src, ref, ROOT / "weights")
    name = "best ×0.7 + shipped ×0.3"
    assert candidates[name].is_dir() and valid[name]["bleu"] == valid["best"]["bleu"]
    tc = continued_config("runs/c2", "weights/next")
    fine_tune = {
        "selected": name,
        "valid": {"best": {"bleu": 24.0, "chrf": 50.0}, name: {"bleu": 23.0, "chrf": 49.0}},
        "tatoeba_valid": {"best": {"bleu": 57.0}, name: {"bleu": 59.5}, "shipped": {"bleu": 60.7}},
        "keep_tatoeba": 2.0,
        "interpolate": "0.7",
        "train_steps": 100,
        "train_seconds": 600,
        "train_config": tc,
    }
    text = sw.render_card({**CARD, "fine_tune": fine_tune})
    assert "--news --interpolate 0.7 --keep-tatoeba 2\n" in text
    assert f"| {name} | 23.0 | 49.0 | 59.5 |" in text and "| the shipped model | | | 60.7 |" in text
    assert f"Kept: **{name}** — the best dev BLEU among the candidates whose Tatoeba valid BLEU is at most 2" in text


def test_an_en_fr_candidate_is_interpolated_with_the_shipped_en_fr_model(tmp_path):
    """--interpolate with --out weights/en-fr mixes toward the shipped en→fr model, not the fr→en one in weights/:
    the shipped en→fr model mixed with itself scores what it scores alone."""
    sw = ship_weights()
    src, ref = tmp_path / "dev.en", tmp_path / "dev.fr"
    src.write_text("I am a student.\nIt is cold this morning.\n", encoding="utf-8")
    ref.write_text("Je suis étudiant.\nIl fait froid ce matin.\n", encoding="utf-8")
    en_fr = ROOT / "weights" / "en-fr"
    candidates, valid = {"best": en_fr}, {"best": sw.eval_json(en_fr, src, ref)}
    sw.interpolate(candidates, valid, "best", [0.5], tmp_path, src, ref, en_fr)
    assert valid["best"]["bleu"] > 20 and valid["best ×0.5 + shipped ×0.5"]["bleu"] == valid["best"]["bleu"]


def test_a_card_with_the_pipeline_column_shows_both_translations():
    hard = [["Elle est née en 1987.", "She was born in 198.", "a number", "She was born in 1987."]]
    card = {**CARD, "limits": {**LIMITS, "hard": hard}}
    text = ship_weights().render_limits(card)
    assert "| French | the model alone | `tt translate` | kind |" in text
    assert "| Elle est née en 1987. | She was born in 198. | She was born in 1987. | a number |" in text
    assert "the model alone is `tt translate --raw`" in text
    before = {**SCRATCH, "limits": {**LIMITS, "hard": [row[:3] for row in LIMITS["hard"]]}}  # measured before it
    assert "| French | tt translate | kind |" in ship_weights().render_limits(before)


def test_the_precision_section_follows_the_figures():
    """The verdict follows the figures (issue 46's rule) and names the record's default, the one `tt translate` and
    `tt serve` then take (core.card.default_precision; docs/precision.md)."""
    sw = ship_weights()
    text = sw.render_precision(CARD)
    worst = min(r["int8"] - r["fp32"] for r in CARD["precision"]["sets"].values())
    assert ("more than the 0.3 allowed" in text) == (worst < -CARD["precision"]["tolerance"])
    assert f"**{CARD['precision']['default']}**" in text
    close = {name: {**r, "int8": r["fp32"] - 0.1} for name, r in CARD["precision"]["sets"].items()}
    text = sw.render_precision({**CARD, "precision": {**CARD["precision"], "sets": close, "default": "int8"}})
    assert (
        "int8 keeps every set within 0.3 BLEU here, so `tt translate` and `tt serve` run this model in **int8**" in text
    )
    far = {name: {**r, "int8": r["fp32"] - 0.4} for name, r in CARD["precision"]["sets"].items()}
    text = sw.render_precision({**CARD, "precision": {**CARD["precision"], "sets": far, "default": "fp32"}})
    assert "more than the 0.3 allowed, so the default stays **fp32**" in text
    assert sw.render_precision(SCRATCH) == ""


def test_the_precision_section_says_how_its_activations_were_quantized():
    """Cards measured before int8 took a range per activation row say "per call"; the record says which."""
    sw = ship_weights()
    before = {k: v for k, v in CARD["precision"].items() if k != "activations"}  # a record from before the field
    assert "activations quantized per call)" in sw.render_precision({**CARD, "precision": before})
    per_row = {**CARD, "precision": {**CARD["precision"], "activations": "per input row"}}
    assert "activations quantized per input row)" in sw.render_precision(per_row)


def test_the_precision_record_scores_each_set_in_int8(tmp_path):
    """ship_weights --int8: each test set scored again by the real model through `tt eval --quantize int8`,
    beside its fp32 score, with the default the rule gives."""
    sw = ship_weights()
    src, ref = tmp_path / "s.fr", tmp_path / "s.en"
    src.write_text("Je suis étudiant.\nIl fait beau aujourd'hui.\nOù est la gare ?\n", encoding="utf-8")
    ref.write_text("I am a student.\nThe weather is nice today.\nWhere is the station?\n", encoding="utf-8")
    model = ROOT / "weights"
    fp32 = sw.eval_json(model, src, ref)
    assert fp32["quantize"] is None
    record = sw.measure_precision(model, {"three": ({}, fp32, (src, ref))})
    row = record["sets"]["three"]
    assert row["fp32"] == fp32["bleu"] and row["fp32_seconds"] == fp32["seconds"]
    assert 0 <= row["int8"] <= 100 and row["int8_seconds"] > 0
    close = all(r["int8"] - r["fp32"] >= -sw.PRECISION_TOLERANCE for r in record["sets"].values())
    assert record["default"] == ("int8" if close else "fp32") and record["tolerance"] == sw.PRECISION_TOLERANCE
    assert "threads" in record["machine"]


def unsouped(record: dict) -> dict:
    """A shipped card's run record without a soup's keys: the record of a run shipped alone."""
    return {k: v for k, v in record.items() if k not in ("soup_with", "soup_d_ff")}


def test_a_continued_runs_section_says_what_ran():
    """Each continued run's section in a card: turned round only where the run's direction differs from the model
    it started from, the corpora it read, and the command with the run's own stopping rule and process count."""
    sw = ship_weights()
    en_fr = json.loads((ROOT / "weights" / "en-fr" / "card.json").read_text(encoding="utf-8"))
    run = unsouped(en_fr["fine_tune"])  # without a soup's paragraph and flags (their own test below)
    assert run["train_config"]["src_lang"] == "en" and run["train_config"].get("max_steps")
    same = sw.render_continued(run, ("en", "fr"))
    assert "turned round" not in same and "turned round" in sw.render_continued(run, ("fr", "en"))
    assert f"--max-steps {run['train_config']['max_steps']}" in same and "--max-time" not in same
    assert "back-translated news" in same and "--out weights/en-fr --src-lang en --tgt-lang fr" in same
    assert same.count("\ntt train ") == 1 and "torchrun" not in same
    timed = {**run, "processes": 2, "train_config": {**run["train_config"], "max_steps": 0}}
    two = sw.render_continued(timed, ("en", "fr"))
    assert "torchrun --standalone --nproc-per-node 2" in two and f"--max-time {run['train_seconds']}" in two
    # --int8 as the record says the ship ran it (the card's Precision section then measured int8)
    assert ("--int8" in same) is bool(run.get("int8")) and " --int8\n" in sw.render_continued({**run, "int8": True})
    assert " --int8" not in sw.render_continued({**run, "int8": False})
    mixed = sw.render_continued({**run, "mixes_only": True, "select": False})
    assert " --mixes-only" in mixed and "(`--mixes-only`" in mixed
    assert "--mixes-only" not in sw.render_continued({**run, "mixes_only": False})
    # the growth the run started with (core/model/grow.py) is part of its command
    assert "--encoder-layers" not in same and "--d-ff" not in same
    overrides = {**run["train_config"].get("model_overrides", {}), "n_encoder_layers": 5, "d_ff": 3072}
    grown = {**run["train_config"], "model_overrides": overrides}
    deeper = sw.render_continued({**run, "train_config": grown})
    assert " --d-ff 3072 --encoder-layers 5" in deeper


def test_precision_only_rescores_the_cards_own_sets(tmp_path, monkeypatch):
    """ship_weights --precision-only: the card's test sets (a Tatoeba held-out split and plain files) are found
    from the card alone and scored by the real model, each with its own files."""
    sw = ship_weights()
    data = tmp_path / "data"
    (data / "tatoeba-fra-eng").mkdir(parents=True)
    (data / "tatoeba-fra-eng" / "fra-eng.tsv").write_text(
        "Où est la gare ?\tWhere is the station?\nJe suis étudiant.\tI am a student.\n", encoding="utf-8"
    )
    (data / "few").mkdir()
    (data / "few" / "set.fr").write_text("Le chat dort sur le canapé.\n", encoding="utf-8")
    (data / "few" / "set.en").write_text("The cat is sleeping on the couch.\n", encoding="utf-8")
    monkeypatch.setattr(sw, "SHARED", data)
    card = {
        "test_sets": {
            "tatoeba-test": {"source": "tatoeba-heldout", "file": "tatoeba-fra-eng/fra-eng.tsv", "buckets": [0, 1000]},
            "few": {"source": "files", "file": "few/set"},
        }
    }
    results = sw.card_results(ROOT / "weights", card, tmp_path)
    assert list(results) == ["tatoeba-test", "few"]
    assert results["tatoeba-test"][1]["sentences"] == 2 and results["few"][1]["sentences"] == 1
    assert results["few"][2] == (data / "few" / "set.fr", data / "few" / "set.en")
    assert results["few"][1]["bleu"] > 50  # the shipped model translates it: the files were read, in this direction


def test_a_named_candidate_is_checked_before_scoring_and_the_card_says_it_was_named_and_how_it_was_run():
    """--select ships the candidate it names (its base is the one mixed toward the shipped model); a name that is
    no candidate stops the script before anything is scored, and the card's Kept line says the pick was named."""
    sw = ship_weights()
    mix = "average of last 5 ×0.5 + shipped ×0.5"
    assert sw.select(mix, 5, [0.5]) == "average of last 5"
    assert sw.select("best", 5, []) == "best"
    with pytest.raises(SystemExit, match="is not a candidate; the candidates: 'best', 'average of last 5'"):
        sw.select(mix, 5, [])  # no --interpolate: no mixes
    with pytest.raises(SystemExit, match="--select 'average of last 4'"):
        sw.select("average of last 4", 5, [0.5])
    fine_tune = {
        "selected": mix,
        "select": True,
        "valid": {
            "best": {"bleu": 30.0, "chrf": 50.0},
            "average of last 5": {"bleu": 30.2, "chrf": 50.1},
            mix: {"bleu": 29.9, "chrf": 50.0},
        },
        "interpolate": "0.5",
        "valid_set": "newstest2013 (first 500 lines)",
        "train_steps": 100,
        "train_seconds": 600,
        "train_config": continued_config("runs/c2", "weights/next"),
    }
    text = sw.render_card({**CARD, "fine_tune": fine_tune})
    assert f"/newstest2013 --dev-lines 500 --news --interpolate 0.5 --select '{mix}'\n" in text  # as it was run
    assert f"Kept: **{mix}** — named with `--select` rather than the best dev BLEU (average of last 5: 30.2)" in text
    chosen = sw.render_card({**CARD, "fine_tune": {**fine_tune, "selected": "average of last 5"}})
    assert "Kept: **average of last 5** — named with `--select`; it is also the best dev BLEU" in chosen
    unnamed = sw.render_card({**CARD, "fine_tune": {k: v for k, v in fine_tune.items() if k != "select"}})
    assert "--select" not in unnamed and f"Kept: **{mix}**.\n" in unnamed


def test_a_soup_averages_runs_continued_from_one_model_at_its_width(tmp_path):
    """--soup-with: the soup of --run's average of last N and another run's own, scored by the real model (here the
    shipped model's weights as both runs' checkpoints, so the soup is the shipped model and scores what it does),
    kept at the shipped FFN width; runs continued from other models are refused before anything is scored."""
    sw = ship_weights()
    src, ref = tmp_path / "dev.fr", tmp_path / "dev.en"
    src.write_text("Je suis étudiant.\nIl fait froid.\n", encoding="utf-8")
    ref.write_text("I am a student.\nIt is cold.\n", encoding="utf-8")
    run = tmp_path / "other"
    step = run / "checkpoints" / "step_00000100"
    step.mkdir(parents=True)
    for name in ("model.safetensors", "spm.model"):
        (step / name).write_bytes((ROOT / "weights" / name).read_bytes())
    (step / "trainer.json").write_text(json.dumps({"step": 100, "elapsed": 60.0, "train_config": {}}), "utf-8")
    average = sw.base_names(5)[1]
    candidates, valid = {average: ROOT / "weights"}, {average: sw.eval_json(ROOT / "weights", src, ref)}
    d_ff = CARD["model_config"]["d_ff"]
    name = sw.soup(candidates, valid, {run: sw.list_checkpoints(run)}, 5, d_ff, tmp_path, src, ref)
    assert name == sw.soup_name(5, 1) == "soup of 2 runs' averages of last 5"
    assert valid[name]["bleu"] == valid[average]["bleu"] and sw.checkpoint_config(candidates[name]).d_ff == d_ff
    assert sw.select(sw.mix_name(name, 0.5), 5, [0.5], 1) == name  # --select can name the soup's mix
    mine = {"train_config": {"init_from": "weights", "src_lang": "fr", "tgt_lang": "en"}, "init_digest": "ab"}
    assert sw.soup_refusal(Path("runs/a"), mine, {Path("runs/b"): dict(mine)}) is None
    other = {**mine, "train_config": {**mine["train_config"], "init_from": "weights/next"}}
    refused = sw.soup_refusal(Path("runs/a"), mine, {Path("runs/b"): other})
    assert refused == (
        "ship_weights: --soup-with runs/b: --init-from weights/next where --run runs/a has weights; "
        "a soup averages runs continued from one model"
    )
    # the same path, other bytes then (a model shipped into it between the runs); unrecorded: by path only
    assert sw.soup_refusal(Path("runs/a"), mine, {Path("runs/b"): {**mine, "init_digest": "cd"}}) == (
        "ship_weights: --soup-with runs/b: started from other weights in weights than --run runs/a "
        "(another model was there then); a soup averages runs continued from one model"
    )
    unrecorded = {k: v for k, v in mine.items() if k != "init_digest"}
    assert sw.soup_refusal(Path("runs/a"), mine, {Path("runs/b"): unrecorded}) is None


def test_a_souped_runs_section_names_the_other_runs_and_their_hours():
    """The card of a soup: the ship command carries --soup-with, a paragraph lists each other run (steps, hours,
    FFN width) and says where grown units were cut; the card's training hours count them."""
    sw = ship_weights()
    run = unsouped(CARD["fine_tune"])  # as a run of the shipped width, not souped (the shipped card may be either)
    overrides = {k: v for k, v in run["train_config"].get("model_overrides", {}).items() if k != "d_ff"}
    run["train_config"] = {**run["train_config"], "model_overrides": overrides}
    other = {"run": "runs/fren16", "train_steps": 2000, "train_seconds": 3600, "d_ff": 3072}
    souped = {**run, "soup_with": [other], "soup_d_ff": 2048}
    text = sw.render_continued(souped)
    assert " --soup-with runs/fren16\n" in text and "`runs/fren16` (2000 steps, 1.0 h, FFN 3072)" in text
    assert "model soup (Wortsman et al. 2022" in text and "units wider runs grew beyond 2048 are left out" in text
    narrow = sw.render_continued({**souped, "soup_with": [{**other, "d_ff": 2048}]})
    assert "left out" not in narrow and "keeps the shipped model's shape (FFN 2048)." in narrow
    assert "--soup-with" not in sw.render_continued(run) and "model soup" not in sw.render_continued(run)
    card = {**CARD, "fine_tune": souped}
    assert sw.training_hours(card) == pytest.approx(sw.training_hours({**CARD, "fine_tune": run}) + 1.0)
