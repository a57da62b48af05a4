"""The shipped model in weights/: it loads, translates everyday sentences, and `tt eval` reproduces its card."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from tests.conftest import ROOT, SHARED_DATA

WEIGHTS = ROOT / "weights"
CARD = json.loads((WEIGHTS / "card.json").read_text())


@pytest.fixture(scope="module")
def shipped():
    from core.checkpoint import load_model

    return load_model(None)


def test_shipped_files_are_small_safetensors():
    size = (WEIGHTS / "model.safetensors").stat().st_size
    assert size < 60 * 1024 * 1024
    assert (WEIGHTS / "spm.model").exists()
    assert (WEIGHTS / "README.md").read_text().count("CC-BY") >= 1


def test_all_shipped_directions_together_fit_the_size_bar():
    """The model issue's bound is on every shipped direction together (fr→en in weights/, en→fr in weights/en-fr),
    not on one file: a direction grown wider must leave room for the other."""
    models = sorted(WEIGHTS.rglob("model.safetensors"))
    assert {p.parent for p in models} >= {WEIGHTS, EN_FR}
    assert sum(p.stat().st_size for p in models) <= 60 * 1000 * 1000


def test_default_model_is_the_shipped_one(shipped):
    assert shipped.path.resolve() == WEIGHTS.resolve()
    assert shipped.cfg.to_dict() == CARD["model_config"]


@pytest.mark.parametrize(
    ("french", "accepted"),
    [
        ("Je suis étudiant", {"I am a student.", "I'm a student."}),
        ("Je suis étudiant.", {"I am a student.", "I'm a student."}),
        ("Il fait froid.", {"It's cold.", "It is cold."}),
        ("Merci beaucoup.", {"Thank you very much.", "Thanks a lot.", "Thank you so much."}),
        ("Où est la gare ?", {"Where is the station?", "Where's the station?", "Where is the train station?"}),
        ("J'aime le chocolat.", {"I like chocolate.", "I love chocolate."}),
        ("Le chat dort.", {"The cat is sleeping.", "The cat's sleeping.", "The cat sleeps."}),
    ],
)
def test_everyday_sentences(french, accepted):
    from tt_cli.main import app

    result = CliRunner().invoke(app, ["translate", french])
    assert result.exit_code == 0, result.stderr
    assert result.stdout.strip() in accepted


@pytest.mark.data
@pytest.mark.parametrize("name", sorted(CARD["test_sets"]))
def test_eval_reproduces_the_card(name, tmp_path):
    """`tt eval` on each test set gives the BLEU and chrF the model card reports."""
    from core.data.readers import heldout_range, read_corpus, write_aligned

    spec = CARD["test_sets"][name]
    if spec["source"] == "tatoeba-heldout":
        lo, hi = spec["buckets"]
        src, ref = tmp_path / "test.fr", tmp_path / "test.en"
        write_aligned(heldout_range(read_corpus(SHARED_DATA / spec["file"]), lo, hi), src, ref)
    else:
        src, ref = SHARED_DATA / (spec["file"] + ".fr"), SHARED_DATA / (spec["file"] + ".en")
    assert sum(1 for _ in open(src, encoding="utf-8")) == spec["sentences"]
    expected = spec
    if "check" in spec:  # a large set (news: 3,000 long sentences): its first lines, scored when the card was made
        expected = spec["check"]
        src, ref = first_lines(src, ref, expected["sentences"], tmp_path)
    assert_scores(None, src, ref, expected)  # no --model: the default, as users run it


def first_lines(src, ref, n: int, tmp_path) -> tuple:
    """The first n lines of a source and its reference, as files in tmp_path."""
    out = []
    for path in (src, ref):
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)[:n]
        out.append(tmp_path / ("check" + path.suffix))
        out[-1].write_text("".join(lines), encoding="utf-8")
    return tuple(out)


def assert_scores(model, src, ref, expected: dict) -> None:
    """`tt eval [--model MODEL]` gives the BLEU and chrF of `expected`."""
    from tt_cli.main import app

    chosen = ["--model", str(model)] if model else []
    result = CliRunner().invoke(app, ["eval", *chosen, "--src", str(src), "--ref", str(ref), "--json"])
    assert result.exit_code == 0, result.stderr
    scores = json.loads(result.stdout.strip().splitlines()[-1])
    # Same model, same decoding: equal up to float summation order on another CPU.
    assert scores["bleu"] == pytest.approx(expected["bleu"], abs=0.3)
    assert scores["chrf"] == pytest.approx(expected["chrf"], abs=0.3)


def test_the_card_keeps_the_model_it_replaced():
    """The model shipped before this one is not in the tree but in git history: the card's history section
    names the commit whose weights/ holds it and keeps its figures, and the README is rendered from the card."""
    from tests.core.test_limits import ship_weights

    old = CARD["history"][0]
    assert not (WEIGHTS / "next").exists()
    assert set(old["test_sets"]) >= {"tatoeba-test", "multi30k-test2016", "newstest2013"}
    assert old["commit"] and old["test_sets"] != CARD["test_sets"]  # another model's record, not this one's
    readme = (WEIGHTS / "README.md").read_text(encoding="utf-8")
    assert ship_weights().render_card(CARD) == readme
    assert f"`{old['commit']}`" in readme and f"{old['test_sets']['newstest2013']['bleu']:.1f}" in readme


def test_the_readmes_table_is_what_the_shipped_model_writes():
    """README's "What it is good at / where it fails" was written from this model's output: `tt translate` on
    its first column gives its second (all but one row: beam search on another CPU's kernels may tip a close
    choice)."""
    from tt_cli.main import app

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## What it is good at / where it fails") : text.index("## Exit codes")]
    rows = [line.split(" | ") for line in section.splitlines() if line.startswith("| ") and " | " in line]
    rows = [(r[0][2:], r[1]) for r in rows[1:] if not r[0].startswith("|---")]
    assert len(rows) >= 20
    result = CliRunner().invoke(app, ["translate", *(fr for fr, _ in rows)])
    assert result.exit_code == 0, result.stderr
    differ = [(fr, en, got) for (fr, en), got in zip(rows, result.stdout.splitlines()) if got != en]
    assert len(differ) <= 1, differ


EN_FR = WEIGHTS / "en-fr"


def test_english_to_french_is_shipped_beside_it():
    """weights/en-fr: an en→fr model the direction options find; its card is rendered from card.json, and both
    directions together stay within the model issue's 60 MB."""
    from core.checkpoint import model_for, shipped_models
    from tests.core.test_limits import ship_weights

    assert shipped_models() == {("fr", "en"): WEIGHTS, ("en", "fr"): EN_FR}
    assert model_for(None, "en", "fr") == EN_FR and model_for(None, None, "fr") == EN_FR
    card = json.loads((EN_FR / "card.json").read_text(encoding="utf-8"))
    assert card["languages"] == ["en", "fr"]
    assert ship_weights().render_card(card) == (EN_FR / "README.md").read_text(encoding="utf-8")
    size = sum(p.stat().st_size for p in (WEIGHTS / "model.safetensors", EN_FR / "model.safetensors"))
    assert size <= 60e6


@pytest.mark.parametrize(
    ("english", "accepted"),
    [
        ("I am a student.", {"Je suis étudiant.", "Je suis étudiante.", "Je suis un étudiant."}),
        ("Where is the train station?", {"Où est la gare ?", "Où se trouve la gare ?"}),
    ],
)
def test_english_to_french_translates_everyday_sentences(english, accepted):
    from tt_cli.main import app

    result = CliRunner().invoke(app, ["translate", "--from", "en", "--to", "fr", english])
    assert result.exit_code == 0, result.stderr
    assert result.stdout.strip() in accepted
    assert "warning" not in result.stderr  # French output is what an en→fr model should write


@pytest.mark.data
def test_english_to_french_reproduces_its_cards_news_check(tmp_path):
    """`tt eval --from en --to fr` on newstest2013's first lines gives the figure stored in its card."""
    card = json.loads((EN_FR / "card.json").read_text(encoding="utf-8"))
    check = card["test_sets"]["newstest2013"]["check"]
    news = SHARED_DATA / "news/newstest2013"
    src, ref = first_lines(news.with_suffix(".en"), news.with_suffix(".fr"), check["sentences"], tmp_path)
    from tt_cli.main import app

    result = CliRunner().invoke(
        app, ["eval", "--from", "en", "--to", "fr", "--src", str(src), "--ref", str(ref), "--json"]
    )
    assert result.exit_code == 0, result.stderr
    scores = json.loads(result.stdout.strip().splitlines()[-1])
    assert scores["bleu"] == pytest.approx(check["bleu"], abs=0.3)


@pytest.mark.data
def test_ship_weights_into_another_directory_leaves_the_shipped_alignment_alone(tmp_path):
    """`ship_weights --out runs/try` stores the rule in the try directory only: the shipped model of the other
    direction keeps its alignment.json (session 28's try-run rewrote both shipped files)."""
    import shutil

    from tests.core.test_limits import ship_weights

    files = (WEIGHTS / "alignment.json", EN_FR / "alignment.json")
    shipped = {p: p.read_bytes() for p in files}
    written = {p: p.stat().st_mtime_ns for p in files}  # a rewrite with equal bytes is a write all the same
    trial = tmp_path / "try-en-fr"
    shutil.copytree(EN_FR, trial)
    (trial / "alignment.json").unlink()
    try:
        ship_weights().store_alignments(trial, WEIGHTS)
        assert (trial / "alignment.json").exists()
        assert {p: p.stat().st_mtime_ns for p in files} == written
    finally:
        for p, data in shipped.items():
            if p.read_bytes() != data:
                p.write_bytes(data)


def test_promote_ships_a_try_directory_with_the_replaced_model_in_history(tmp_path):
    """`ship_weights --promote DIR` copies a model shipped into DIR (a try-run) into --out and writes the history a
    straight ship writes: the replaced model's record first, then its own history — not DIR's card's history (both
    ships of session 29 needed the entry added by hand)."""
    import shutil

    from tests.core.test_limits import ship_weights

    sw = ship_weights()
    out, trial = tmp_path / "en-fr", tmp_path / "try"
    shutil.copytree(EN_FR, out)
    shutil.copytree(WEIGHTS, trial, ignore=shutil.ignore_patterns("en-fr"))  # another model, its own history
    replaced = json.loads((out / "card.json").read_text(encoding="utf-8"))
    card = sw.promote(trial, out, "abc1234")
    assert (out / "model.safetensors").read_bytes() == (WEIGHTS / "model.safetensors").read_bytes()
    assert (out / "alignment.json").read_bytes() == (WEIGHTS / "alignment.json").read_bytes()
    assert json.loads((out / "card.json").read_text(encoding="utf-8")) == card
    assert card["history"] == [sw.history_entry(replaced, "abc1234"), *replaced.get("history", [])]
    assert card["test_sets"] == CARD["test_sets"] and list(card)[-1] == "alignment"
    readme = (out / "README.md").read_text(encoding="utf-8")
    assert "`abc1234`" in readme and readme == sw.render_readme(out, card)
    assert sw.replaces_shipped(WEIGHTS) and sw.replaces_shipped(EN_FR) and not sw.replaces_shipped(out)
    with pytest.raises(SystemExit, match=r"--promote .*empty: no card.json or model.safetensors \(ship a run into it"):
        sw.promote(tmp_path / "empty", out, "abc1234")
    with pytest.raises(SystemExit, match="is --out itself"):
        sw.promote(out, out, "abc1234")


def test_english_to_french_history_names_its_own_folder():
    """en→fr's card keeps the model it replaced too, and its README says where git holds it: weights/en-fr, not the
    fr→en model's weights/ (the first en→fr history, session 30, named the wrong file)."""
    import subprocess

    card = json.loads((EN_FR / "card.json").read_text(encoding="utf-8"))
    old = card["history"][0]
    readme = (EN_FR / "README.md").read_text(encoding="utf-8")
    assert "`git show COMMIT:weights/en-fr/model.safetensors`" in readme and f"`{old['commit']}`" in readme
    held = subprocess.run(
        ["git", "cat-file", "-e", f"{old['commit']}:weights/en-fr/model.safetensors"], cwd=ROOT, capture_output=True
    )
    assert held.returncode == 0, held.stderr
