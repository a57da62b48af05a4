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


NEXT = WEIGHTS / "next"


@pytest.mark.data
def test_the_model_in_training_loads_and_reproduces_its_card(tmp_path):
    """weights/next (the model issue's model between sessions, not shipped): the shipped model's shape and
    vocabulary, never the default, and `tt eval` gives its card's newstest2013 check figure."""
    from core.checkpoint import load_model

    card = json.loads((NEXT / "card.json").read_text())
    loaded = load_model(NEXT)
    assert (
        loaded.cfg.to_dict() == card["model_config"]
        and loaded.cfg.to_dict()["d_model"] == CARD["model_config"]["d_model"]
    )
    assert (NEXT / "spm.model").read_bytes() == (WEIGHTS / "spm.model").read_bytes()
    assert load_model(None).path.resolve() == WEIGHTS.resolve()
    check = card["test_sets"]["newstest2013"]["check"]
    news = SHARED_DATA / "news/newstest2013"
    assert_scores(
        NEXT, *first_lines(news.with_suffix(".fr"), news.with_suffix(".en"), check["sentences"], tmp_path), check
    )


def test_the_model_in_trainings_readme_is_rendered_from_its_card():
    """weights/next/README.md comes from its card.json and the shipped card (a hand edit would be lost at the next
    session's `ship_weights.py --out weights/next`), and the shipped model's news figures it quotes belong to the
    weights in weights/ today."""
    import hashlib

    from tests.core.test_limits import ship_weights

    card = json.loads((NEXT / "card.json").read_text())
    sw = ship_weights()
    assert sw.render_readme(NEXT, card) == (NEXT / "README.md").read_text(encoding="utf-8")
    assert sw.render_readme(WEIGHTS, CARD) == sw.render_card(CARD)
    digest = hashlib.sha256((WEIGHTS / "model.safetensors").read_bytes()).hexdigest()
    assert card["shipped_news"]["model_sha256"] == digest
    assert set(card["shipped_news"]["sets"]) == set(sw.NEWS_SETS)
