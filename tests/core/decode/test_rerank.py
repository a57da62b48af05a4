"""`--rerank` (core/decode/rerank.py): the beam's finished hypotheses reranked with the shipped model of the other
direction, log p(y | x) + λ · log p(x | y) over beam search's length penalty — on the real shipped models."""

from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner

from core.checkpoint import load_model
from core.decode import search
from core.decode.beam import beam_search
from core.decode.method import CHANNEL_WEIGHT, TranslateOptions
from core.decode.rerank import channel_logprobs, rerank, with_reverse
from core.decode.translate import translate_lines
from core.errors import ConfigError
from tests.conftest import ROOT
from tt_cli.main import app

# A sentence written for this test. Beam search alone drops "passant sa tête" ("A man walking by the door of a
# store, …"); the reverse model, asked to give the source back from each hypothesis, prefers one that keeps the head
# (session 48's fr→en: "A man getting his head by the door of a store, …"). Its twin "par une porte, regardant dans la
# pièce" was repaired until session 45's fr→en; session 48's drops the head there with and without reranking. (The
# models before session 22 repeated words instead —
# "A woman holding a food food in a kitchen." — which these no longer do; the goat "passant sa tête à travers un
# grillage" was repaired until session 24's fr→en model, the brown horse "passant sa tête par une fenêtre" until
# session 27's, the cow "par-dessus une clôture" until session 29's first and the woman "par une porte" / "par une
# fenêtre" until its second, whose beam search keeps those heads by itself.)
REPAIRED = [
    "Un homme passant sa tête par la porte d'un magasin, souriant à la caméra.",
]


@pytest.fixture(scope="module")
def fr_en():
    return with_reverse(load_model(ROOT / "weights", packed=True))


def test_the_reverse_model_is_the_other_shipped_direction(fr_en):
    assert fr_en.reverse.path == ROOT / "weights" / "en-fr"
    assert with_reverse(fr_en) is fr_en  # loaded once


def test_channel_scores_in_a_batch_equal_each_alone(fr_en):
    """Padding and the length sort change nothing: each pair's log p(source | output) as if scored alone."""
    pairs = [
        ("Le chat dort sur le canapé.", "The cat is sleeping on the couch."),
        ("Je suis étudiant.", "I am a student."),
        ("Le chat dort sur le canapé.", "The cat is sleeping."),
        ("Il fait froid ce matin, mais il fera beau cet après-midi.", "It's cold this morning."),
    ]
    together = channel_logprobs(fr_en.reverse, pairs)
    alone = [channel_logprobs(fr_en.reverse, [pair])[0] for pair in pairs]
    assert together == pytest.approx(alone, abs=1e-4)
    # an output that drops half the source explains it worse than one that keeps it all
    assert together[0] > together[2] + 5


def test_rerank_orders_by_the_combined_score_and_zero_weight_is_beam_order(fr_en):
    tok, cfg = fr_en.tokenizer, fr_en.cfg
    ids = tok.encode(REPAIRED[0]) + [cfg.eos_id]
    [found] = beam_search(fr_en.model, search.pad_batch([ids], cfg.pad_id), beam_size=4, alpha=0.6, n_best=None)
    texts = [tok.decode(h.tokens) for h in found]
    [plain] = rerank([found], [REPAIRED[0]], [texts], fr_en.reverse, 0.6, 0.0)
    assert [h.tokens for h in plain] == [h.tokens for h in found]  # λ 0: beam search's own order
    [ranked] = rerank([found], [REPAIRED[0]], [texts], fr_en.reverse, 0.6, CHANNEL_WEIGHT)
    back = dict(zip(texts, channel_logprobs(fr_en.reverse, [(REPAIRED[0], t) for t in texts])))
    for h in ranked:
        text = tok.decode(h.tokens)
        expected = (h.logprob + CHANNEL_WEIGHT * back[text]) / ((5 + len(h.token_logprobs)) / 6) ** 0.6
        assert h.score == pytest.approx(expected)
    assert [h.score for h in ranked] == sorted((h.score for h in ranked), reverse=True)
    assert ranked[0].tokens != found[0].tokens  # here the channel changes the choice


def test_translate_lines_with_rerank_restores_what_beam_search_drops(fr_en):
    plain = [t.text for t in translate_lines(fr_en, REPAIRED, TranslateOptions())]
    reranked = [t.text for t in translate_lines(fr_en, REPAIRED, TranslateOptions(rerank=CHANNEL_WEIGHT))]
    assert not any("head" in text for text in plain) and all("head" in text for text in reranked)
    n_best = next(translate_lines(fr_en, REPAIRED[:1], TranslateOptions(rerank=CHANNEL_WEIGHT, n_best=3))).n_best
    assert len(n_best) == 3 and n_best[0].text == reranked[0]
    assert [a.score for a in n_best] == sorted((a.score for a in n_best), reverse=True)


def test_rerank_needs_the_reverse_model_and_beam_search(tmp_path):
    loaded = load_model(ROOT / "weights")
    with pytest.raises(ConfigError, match="--rerank needs the reverse direction's model"):
        next(translate_lines(loaded, ["Je suis étudiant."], TranslateOptions(rerank=CHANNEL_WEIGHT)))
    with pytest.raises(ConfigError, match="--rerank needs beam search"):
        TranslateOptions(rerank=CHANNEL_WEIGHT, method="greedy").validate()
    german = tmp_path / "de-en"
    shutil.copytree(ROOT / "weights", german, ignore=shutil.ignore_patterns("en-fr", "__*"))
    card = json.loads((german / "card.json").read_text(encoding="utf-8"))
    card["train_config"] = {**card["train_config"], "src_lang": "de", "tgt_lang": "en", "swap": False}
    card.pop("fine_tune", None)
    (german / "card.json").write_text(json.dumps(card), encoding="utf-8")
    with pytest.raises(ConfigError, match="--rerank needs a shipped en→de model"):
        with_reverse(load_model(german))


def test_the_cli_options():
    """`tt translate --rerank` and `tt eval --rerank`: on, they change the output; a wrong mix is one line."""

    def translate(*args):
        result = CliRunner().invoke(app, ["translate", "--raw", "--precision", "fp32", *args, *REPAIRED])
        assert result.exit_code == 0, result.stderr
        return result.stdout.splitlines()

    fr_en = with_reverse(load_model(ROOT / "weights", packed=True))
    expected = [t.text for t in translate_lines(fr_en, REPAIRED, TranslateOptions(rerank=CHANNEL_WEIGHT))]
    assert translate("--rerank") == expected != translate()
    wrong = CliRunner().invoke(app, ["translate", "--rerank", "--greedy", "Je suis étudiant."])
    assert (wrong.exit_code, wrong.stderr) == (1, "tt: error: --rerank needs beam search (not --greedy or --sample)\n")


def test_eval_rerank(tmp_path):
    src, ref = tmp_path / "src.fr", tmp_path / "ref.en"
    src.write_text("\n".join(REPAIRED) + "\n", encoding="utf-8")
    ref.write_text("A man putting his head through the door of a shop, smiling at the camera.\n", encoding="utf-8")
    runs = {}
    for name, args in [("plain", []), ("rerank", ["--rerank"])]:
        out = tmp_path / f"{name}.en"
        result = CliRunner().invoke(
            app, ["eval", "--src", str(src), "--ref", str(ref), "--json", "-o", str(out), *args]
        )
        assert result.exit_code == 0, result.stderr
        runs[name] = (json.loads(result.stdout), out.read_text(encoding="utf-8"))
    assert runs["rerank"][0]["decoding"]["rerank"] == CHANNEL_WEIGHT and "rerank" not in runs["plain"][0]["decoding"]
    # scored by chrF, not BLEU: on one sentence BLEU can turn on a comma (session 43's fr→en on another: plain "A man
    # walking by a door, looking into the room." 51.2 BLEU / 54.8 chrF, reranked "A man passing his head out of a door
    # looking into the room." 44.1 / 65.5), where chrF's character n-grams credit the phrase the rerank keeps
    assert runs["rerank"][1] != runs["plain"][1] and runs["rerank"][0]["chrf"] > runs["plain"][0]["chrf"] + 5


def test_the_python_api_loads_the_reverse_model_when_asked(fr_en):
    from core import Translator

    expected = [t.text for t in translate_lines(fr_en, REPAIRED, TranslateOptions(rerank=CHANNEL_WEIGHT))]
    api = Translator()
    assert api.loaded.reverse is None  # not loaded until a call asks for it
    assert [r.text for r in api.translate(REPAIRED, rerank=CHANNEL_WEIGHT)] == expected
    assert api.loaded.reverse.path == ROOT / "weights" / "en-fr"
    assert [r.text for r in Translator(rerank=CHANNEL_WEIGHT).translate(REPAIRED)] == expected


def test_tt_serve_reranks_when_asked_or_by_default(fr_en, tmp_path):
    """POST /v1/translate {"rerank": true} on a real server reranks as --rerank does; `tt serve --rerank` makes it
    the server's default (its /v1/model says so), and {"rerank": false} turns it off for one request."""
    import io
    import os
    import subprocess
    import sys

    pytest.importorskip("uvicorn", reason="tt serve needs the serve extra (pip install -e '.[dev]')")
    from core import Translator
    from tt_cli.serve.client import Client
    from tt_cli.serve.server import Background
    from tt_cli.serve.settings import ServeSettings

    expected = [t.text for t in translate_lines(fr_en, REPAIRED, TranslateOptions(rerank=CHANNEL_WEIGHT))]
    plain = [t.text for t in translate_lines(fr_en, REPAIRED, TranslateOptions())]

    def texts(client, **fields):
        reply = client.post("/v1/translate", {"q": REPAIRED, "raw": True, **fields})
        assert reply.status == 200, reply.json()
        return [r["translation"] for r in reply.json()["translations"]]

    with Background(Translator(), ServeSettings(log=io.StringIO())) as url, Client(url) as client:
        assert texts(client, rerank=True) == expected and texts(client) == plain
    env = {**os.environ, "XDG_RUNTIME_DIR": str(tmp_path)}
    command = ["serve", "--port", "0", "--from", "fr", "--precision", "fp32", "--rerank"]
    process = subprocess.Popen(
        [sys.executable, "-m", "tt_cli.main", *command], stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        url = json.loads(process.stderr.readline())["url"]
        with Client(url) as client:
            assert client.get("/v1/model").json()["decoding"]["rerank"] == CHANNEL_WEIGHT
            assert texts(client) == expected and texts(client, rerank=False) == plain
    finally:
        process.terminate()
        process.wait(timeout=60)
