"""LibreTranslate's clients, which nobody here wrote, against a real `tt serve` on 127.0.0.1, unchanged:
libretranslatepy (translate, languages, detect: forms), deep-translator's LibreTranslator (translate,
translate_batch: every field in the query string of a POST without a body) and npm's libretranslate
(JSON, source "auto" by default), with and without an API key. Their answers are what `tt translate`
prints for the same lines (never a model's fixed wording), and every field a client sends is shown to
matter: a request without it, or with another value, answers otherwise."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import urllib.error

import pytest

pytest.importorskip("uvicorn", reason="tt serve needs the serve extra (pip install -e '.[dev]')")
libretranslatepy = pytest.importorskip("libretranslatepy")
deep_translator = pytest.importorskip("deep_translator")

from tests.conftest import ROOT  # noqa: E402
from tt_cli.serve.client import Client  # noqa: E402
from tt_cli.serve.server import Background  # noqa: E402
from tt_cli.serve.settings import ServeSettings  # noqa: E402

FRENCH = ["Je suis étudiant.", "Il fait froid ce matin.", "Le chat dort sur le canapé."]
ENGLISH = "The weather is lovely this morning, so we are going for a walk."
NPM = ROOT / "tests" / "cli" / "npm"


@pytest.fixture(scope="module")
def keyed(translator):
    with Background(translator, ServeSettings(api_keys=frozenset({"k-123"}), log=io.StringIO())) as url:
        yield url


def printed(translator, lines: list[str]) -> list[str]:
    """What `tt translate` prints for these lines."""
    return [r.text for r in translator.translate_text(lines)]


# ----------------------------------------------------------------------------- libretranslatepy
def test_libretranslatepy_translates_lists_and_detects(url, translator):
    lt = libretranslatepy.LibreTranslateAPI(url)
    assert [lt.translate(s, "fr", "en") for s in FRENCH] == printed(translator, FRENCH)
    assert lt.languages() == [
        {"code": "fr", "name": "French", "targets": ["en"]},
        {"code": "en", "name": "English", "targets": []},
    ]
    french, english = lt.detect(FRENCH[1]), lt.detect(ENGLISH)
    assert [d["language"] for d in french] == ["fr", "en"] and [d["language"] for d in english] == ["en", "fr"]
    assert french[0]["confidence"] > 90 and sum(d["confidence"] for d in french) == pytest.approx(100, abs=0.2)


def test_libretranslatepy_with_a_key_and_without_one(keyed, translator):
    assert (
        libretranslatepy.LibreTranslateAPI(keyed, api_key="k-123").translate(FRENCH[0], "fr", "en")
        == printed(translator, FRENCH[:1])[0]
    )
    assert libretranslatepy.LibreTranslateAPI(keyed, api_key="k-123").detect(FRENCH[0])[0]["language"] == "fr"
    for key, status in ((None, 400), ("wrong", 403)):  # LibreTranslate's codes: 400 missing, 403 wrong
        with pytest.raises(urllib.error.HTTPError) as info:
            libretranslatepy.LibreTranslateAPI(keyed, api_key=key).translate(FRENCH[0], "fr", "en")
        assert info.value.code == status and "key" in json.loads(info.value.read())["error"].lower()


# ----------------------------------------------------------------------------- deep-translator
def test_deep_translator_translates_and_translates_a_batch(url, translator):
    # deep-translator insists on a key even for a server that needs none, and sends it: it is ignored.
    lt = deep_translator.LibreTranslator(source="fr", target="en", api_key="unused", custom_url=url + "/")
    assert lt.translate(FRENCH[0]) == printed(translator, FRENCH[:1])[0]
    assert lt.translate_batch(FRENCH) == printed(translator, FRENCH)


def test_deep_translator_with_a_key(keyed, translator):
    good = deep_translator.LibreTranslator(source="fr", target="en", api_key="k-123", custom_url=keyed + "/")
    assert good.translate_batch(FRENCH[:2]) == printed(translator, FRENCH[:2])
    bad = deep_translator.LibreTranslator(source="fr", target="en", api_key="nope", custom_url=keyed + "/")
    with pytest.raises(deep_translator.exceptions.AuthorizationException):
        bad.translate(FRENCH[0])


def test_deep_translators_query_string_fields_are_read(url, translator):
    """Its request as it sends it: a POST with no body and every field in the query string."""
    with Client(url) as c:
        sent = c.request("POST", "/translate?q=Je%20suis%20%C3%A9tudiant.&source=fr&target=en&format=text")
        assert sent.status == 200 and sent.json() == {"translatedText": printed(translator, FRENCH[:1])[0]}
        other = c.request("POST", "/translate?q=Il%20fait%20froid%20ce%20matin.&source=fr&target=en")
        assert other.json()["translatedText"] == printed(translator, FRENCH[1:2])[0]  # q is read, not a default
        wrong = c.request("POST", "/translate?q=Bonjour&source=fr&target=de")
        assert wrong.status == 400 and "fr→de is not supported" in wrong.json()["error"]  # target is read


# ----------------------------------------------------------------------------- npm's libretranslate
@pytest.fixture(scope="module")
def node_client():
    """npm's libretranslate, installed into tests/cli/npm (node_modules is not in the repository)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node and npm are not installed: npm's libretranslate client cannot run")
    if not (NPM / "node_modules" / "libretranslate").is_dir():
        done = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--no-package-lock"],
            cwd=NPM,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if done.returncode != 0:
            pytest.skip(f"npm install of libretranslate failed: {done.stderr.strip().splitlines()[-1:]}")
    return node


def node_translate(node: str, url: str, **options) -> object:
    """translate({...options, apiurl}) of npm's libretranslate, run by node: its result, as JSON."""
    script = (
        "const { translate } = require('libretranslate');"
        f"translate({json.dumps({**options, 'apiurl': url})})"
        ".then(r => console.log(JSON.stringify(r === undefined ? null : r)))"
        ".catch(e => { console.error(String(e)); process.exit(1); });"
    )
    done = subprocess.run([node, "-e", script], cwd=NPM, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_npm_libretranslate_translates_with_its_default_source_auto(node_client, url, translator):
    # Its default source is "auto": the French is detected and translated, the English comes back as it is.
    assert node_translate(node_client, url, query=FRENCH[1], target="en") == printed(translator, FRENCH[1:2])[0]
    assert node_translate(node_client, url, query=ENGLISH, target="en") == ENGLISH
    assert (
        node_translate(node_client, url, query=FRENCH[0], source="fr", target="en")
        == printed(translator, FRENCH[:1])[0]
    )


def test_npm_libretranslate_with_a_key(node_client, keyed, translator):
    # It sends its key as "apiKey" in the JSON body, which tt takes as LibreTranslate's api_key.
    got = node_translate(node_client, keyed, query=FRENCH[2], source="fr", target="en", apiKey="k-123")
    assert got == printed(translator, FRENCH[2:])[0]
    assert node_translate(node_client, keyed, query=FRENCH[2], source="fr", target="en", apiKey="no") is None
