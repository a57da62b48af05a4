"""One server, both shipped directions: a real server on 127.0.0.1 with the fr→en and en→fr models routes each
request by its source and target (LibreTranslate's API, tt's own, source auto), says what it serves, refuses a
pair it does not, and answers a warm `tt translate` of either direction; `tt serve` serves both unless told one."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

pytest.importorskip("uvicorn", reason="tt serve needs the serve extra (pip install -e '.[dev]')")

from core.checkpoint import shipped_models  # noqa: E402
from tests.conftest import ROOT  # noqa: E402
from tt_cli import remote  # noqa: E402
from tt_cli.main import app  # noqa: E402
from tt_cli.options import default_mode  # noqa: E402
from tt_cli.serve import announce  # noqa: E402
from tt_cli.serve.client import Client  # noqa: E402
from tt_cli.serve.server import Background  # noqa: E402
from tt_cli.serve.settings import ServeSettings  # noqa: E402

FRENCH, ENGLISH = "Je suis étudiant.", "I am a student."
SHIPPED = shipped_models()
FR_EN, EN_FR = SHIPPED[("fr", "en")], SHIPPED[("en", "fr")]
# the fast_model mode `tt serve` runs each shipped model in: its card's default precision (None: fp32)
MODE = {path: default_mode(path, "auto") for path in (FR_EN, EN_FR)}


@pytest.fixture(scope="module")
def url():
    """Both shipped directions as `tt serve` runs them: each in its card's precision (MODE)."""
    from core.api import Translator

    translators = [Translator(path, quantize=MODE[path]) for path in (FR_EN, EN_FR)]
    with Background(translators, ServeSettings(log=io.StringIO())) as url:
        yield url


def local(monkeypatch, args: list[str]) -> str:
    """What `tt translate ARGS` prints when it translates in its own process."""
    monkeypatch.setenv("TT_SERVER", "")
    result = CliRunner().invoke(app, ["translate", *args])
    assert result.exit_code == 0, result.stderr
    return result.stdout.removesuffix("\n")


def post(url: str, path: str, body: dict):
    with Client(url) as c:
        return c.post(path, body)


def decode_calls(url: str) -> dict[str, int]:
    """Each direction's decode calls, "fr→en": N."""
    with Client(url) as c:
        directions = c.get("/health").json()["directions"]
    return {f"{d['source']}→{d['target']}": d["batching"]["decode_calls"] for d in directions}


def test_languages_health_and_model_list_both_directions(url):
    with Client(url) as c:
        languages = c.get("/languages").json()
        health = c.get("/health").json()
        model = c.get("/v1/model").json()
    assert languages == [
        {"code": "fr", "name": "French", "targets": ["en"]},
        {"code": "en", "name": "English", "targets": ["fr"]},
    ]
    # The default direction (fr→en) in the fields a one-model server has, every direction in the list.
    assert (health["source"], health["target"], health["model"]) == ("fr", "en", str(FR_EN))
    assert health["model_id"] == announce.served_id(FR_EN, MODE[FR_EN])
    served = [(d["source"], d["target"], d["model"], d["model_id"], d["precision"]) for d in health["directions"]]
    assert served == [
        (*pair, str(path), announce.served_id(path, MODE[path]), MODE[path] or "fp32")
        for pair, path in ((("fr", "en"), FR_EN), (("en", "fr"), EN_FR))
    ]
    assert (model["source"], model["target"]) == ("fr", "en")
    assert [(d["source"], d["target"], d["model"]) for d in model["directions"]] == [
        ("fr", "en", str(FR_EN)),
        ("en", "fr", str(EN_FR)),
    ]
    assert model["directions"][1]["card"] == json.loads((EN_FR / "card.json").read_text(encoding="utf-8"))


def test_each_direction_translates_as_tt_translate(monkeypatch, url):
    fr_en = post(url, "/translate", {"q": FRENCH, "source": "fr", "target": "en"})
    en_fr = post(url, "/translate", {"q": ENGLISH, "source": "en", "target": "fr"})
    assert fr_en.status == en_fr.status == 200
    assert fr_en.json()["translatedText"] == local(monkeypatch, [FRENCH]) == ENGLISH
    assert en_fr.json()["translatedText"] == local(monkeypatch, ["--from", "en", ENGLISH]) == FRENCH


def test_v1_takes_the_direction_a_language_names(url):
    """source alone picks the one direction that reads it; neither: the default, fr→en."""
    cases = [({"source": "en"}, FRENCH), ({"target": "fr"}, FRENCH), ({}, ENGLISH), ({"source": "fr"}, ENGLISH)]
    for fields, expected in cases:
        q = ENGLISH if expected == FRENCH else FRENCH
        reply = post(url, "/v1/translate", {"q": [q], **fields})
        assert reply.status == 200 and reply.json()["translations"][0]["translation"] == expected, fields


def test_source_auto_routes_each_text_into_the_target(url):
    q = [ENGLISH, FRENCH]
    into_french = post(url, "/translate", {"q": q, "source": "auto", "target": "fr"}).json()
    into_english = post(url, "/translate", {"q": q, "source": "auto", "target": "en"}).json()
    assert into_french["translatedText"] == [FRENCH, FRENCH]  # English translated, French as it is
    assert into_english["translatedText"] == [ENGLISH, ENGLISH]
    assert [d["language"] for d in into_french["detectedLanguage"]] == ["en", "fr"]
    with Client(url) as c:
        detected = c.post("/detect", {"q": ENGLISH}).json()
    assert [d["language"] for d in detected] == ["en", "fr"]


def test_an_unserved_pair_is_a_400_naming_the_pairs_served(url):
    for path, body in [
        ("/translate", {"q": "Hallo.", "source": "de", "target": "en"}),
        ("/translate", {"q": FRENCH, "source": "fr", "target": "de"}),
        ("/v1/translate", {"q": ["Hallo."], "source": "de"}),
    ]:
        reply = post(url, path, body)
        assert reply.status == 400, body
        assert "is not supported: this server translates fr→en, en→fr" in reply.json()["error"]


def test_names_in_an_all_caps_line_are_kept_as_tt_translate_keeps_them(monkeypatch, url):
    """The server's text options come from the model (core.api.with_model_placeholders), as the command's do:
    without them the line comes back as "A HOT WAS HOT BY."."""
    caps = "UN ÉTÉ CHAUD À PARIS."
    expected = local(monkeypatch, [caps])
    assert "PARIS" in expected
    assert post(url, "/translate", {"q": caps, "source": "fr", "target": "en"}).json()["translatedText"] == expected
    assert post(url, "/v1/translate", {"q": [caps]}).json()["translations"][0]["translation"] == expected


def test_a_warm_tt_translate_of_either_direction_is_answered_by_the_server(monkeypatch, url, tmp_path):
    for args, pair in [([FRENCH], "fr→en"), (["--from", "en", ENGLISH], "en→fr")]:
        expected = local(monkeypatch, args)
        before = decode_calls(url)
        monkeypatch.setenv("TT_SERVER", url)
        warm = CliRunner().invoke(app, ["translate", *args])
        after = decode_calls(url)
        assert warm.exit_code == 0 and warm.stdout == expected + "\n" and not warm.stderr, warm.stderr
        assert after[pair] > before[pair] and sum(after.values()) - sum(before.values()) == after[pair] - before[pair]
    # Announced (not named): a command of either model finds the server.
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    monkeypatch.delenv("TT_SERVER")
    from core.decode.method import TranslateOptions

    served = [MODE[path] for path in (FR_EN, EN_FR)]  # as the fixture serves them
    with announce.announced(url, [FR_EN, EN_FR], api_keys=False, quantize=served):
        for model, direction in [(FR_EN, ("fr", "en")), (EN_FR, ("en", "fr"))]:
            warm = remote.connect(remote.Request(model, TranslateOptions()))
            assert warm is not None and (warm.direction["source"], warm.direction["target"]) == direction


def test_served_models_are_every_shipped_direction_unless_one_is_named(monkeypatch):
    from tt_cli.commands.serve import served_models

    monkeypatch.delenv("TT_MODEL", raising=False)
    assert served_models(None) == [FR_EN, EN_FR]
    assert served_models(EN_FR) == [EN_FR]
    monkeypatch.setenv("TT_MODEL", str(EN_FR))  # the user's default model: that one alone
    assert served_models(None) == [None]


@pytest.mark.parametrize(
    ("options", "languages", "refused"),
    [
        ([], [("fr", ["en"]), ("en", ["fr"])], None),
        (["--from", "en"], [("en", ["fr"]), ("fr", [])], ("fr", "en")),
    ],
    ids=["both", "from en"],
)
def test_tt_serve_serves_both_directions_unless_one_is_named(options, languages, refused, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "TT_MODEL"} | {"XDG_RUNTIME_DIR": str(tmp_path)}
    process = subprocess.Popen(
        [sys.executable, "-m", "tt_cli.main", "serve", "--port", "0", *options],
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=env,
    )
    try:
        event = json.loads(process.stderr.readline())
        with Client(event["url"]) as c:
            assert [(d["code"], d["targets"]) for d in c.get("/languages").json()] == languages
            if refused is not None:
                body = {"q": FRENCH, "source": refused[0], "target": refused[1]}
                reply = c.post("/translate", body)
                assert reply.status == 400 and "this server translates en→fr" in reply.json()["error"]
        [path] = (tmp_path / "tt").glob("server-*.json")
        served = [EN_FR] if refused else [FR_EN, EN_FR]
        expected = [announce.served_id(m, MODE[m]) for m in served]  # each direction in its card's precision
        assert json.loads(path.read_text())["model_ids"] == expected
    finally:
        process.terminate()
        process.wait(timeout=60)
