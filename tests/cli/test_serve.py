"""`tt serve`'s API, against a real server on 127.0.0.1 with the shipped model: LibreTranslate's
endpoints through libretranslatepy (a client nobody here wrote) and raw HTTP, giving what `tt
translate` gives (the text pipeline: sentences, protected spans, case; HTML markup kept), tt's /v1
endpoints against what `tt translate --json` (and --json --raw) prints, and every bad request
answered in JSON with the server still alive afterwards."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import urllib.error

import pytest
from typer.testing import CliRunner

pytest.importorskip("uvicorn", reason="tt serve needs the serve extra (pip install -e '.[dev]')")
libretranslatepy = pytest.importorskip("libretranslatepy")

from core.api import Translator  # noqa: E402
from tests.conftest import ROOT  # noqa: E402
from tt_cli.main import app  # noqa: E402
from tt_cli.options import default_mode  # noqa: E402
from tt_cli.serve.client import Client  # noqa: E402
from tt_cli.serve.server import Background  # noqa: E402
from tt_cli.serve.settings import ServeSettings  # noqa: E402

SENTENCES = ["Je suis étudiant.", "Il fait froid ce matin.", "Le chat dort sur le canapé."]
# The model alone gets these wrong and the text pipeline right ("She was born in 198."; the third
# sentence dropped): a server that ran the model alone on each line would fail every test using them.
BORN = "Elle est née en 1987."
THREE = "Je suis étudiant. Il fait froid ce matin. Le chat dort."


@pytest.fixture(scope="module")
def translator():
    """The shipped model as `tt serve` runs it: in its card's precision (int8 for fr→en)."""
    from tt_cli.options import default_mode

    return Translator(quantize=default_mode(None, "auto"))


@pytest.fixture(scope="module")
def log():
    return io.StringIO()


@pytest.fixture(scope="module")
def url(translator, log):
    with Background(translator, ServeSettings(log=log, max_chars=2000)) as url:
        yield url


@pytest.fixture
def client(url):
    with Client(url) as c:
        yield c


def texts(translator, lines, **options):
    """What `tt translate` prints for these lines: the text pipeline (core.api.translate_text)."""
    return [r.text for r in translator.translate_text(lines, **options)]


def log_lines(log) -> list[dict]:
    return [json.loads(line) for line in log.getvalue().splitlines()]


# ----------------------------------------------------------------------------- LibreTranslate's API
def test_libretranslatepy_translates_and_lists_the_language_pair(url, translator):
    lt = libretranslatepy.LibreTranslateAPI(url)
    assert lt.translate(SENTENCES[0], "fr", "en") == texts(translator, SENTENCES[:1])[0]
    languages = {lang["code"]: lang for lang in lt.languages()}
    assert languages["fr"] == {"code": "fr", "name": "French", "targets": ["en"]}
    assert languages["en"]["name"] == "English"


def test_libretranslatepy_gets_the_error_of_an_unsupported_pair(url):
    with pytest.raises(urllib.error.HTTPError) as info:
        libretranslatepy.LibreTranslateAPI(url).translate("Hallo", "de", "en")
    assert info.value.code == 400
    assert json.loads(info.value.read()) == {"error": "de→en is not supported: this server translates fr→en"}


def test_q_as_a_list_gives_a_list_in_order(client, translator):
    reply = client.post("/translate", {"q": SENTENCES, "source": "fr", "target": "en"})
    assert reply.status == 200
    assert reply.json() == {"translatedText": texts(translator, SENTENCES)}
    assert reply.headers["content-type"] == "application/json"


def test_translate_runs_the_text_pipeline_not_the_model_alone(client, translator):
    reply = client.post("/translate", {"q": [BORN, THREE, "JE SUIS ÉTUDIANT."], "source": "fr", "target": "en"})
    assert reply.json()["translatedText"] == texts(translator, [BORN, THREE, "JE SUIS ÉTUDIANT."])
    born, three, caps = reply.json()["translatedText"]
    assert born == "She was born in 1987." and three.count(". ") == 2 and caps == "I AM A STUDENT."
    assert [r.text for r in translator.translate([BORN, THREE])] != [born, three]  # what raw would give


def test_a_text_of_several_lines_keeps_its_lines_and_blank_lines(client, translator):
    q = f"  {SENTENCES[0]}\n\n{SENTENCES[1]}\n"
    reply = client.post("/translate", {"q": q, "source": "fr", "target": "en"})
    first, second = texts(translator, SENTENCES[:2])
    assert reply.json() == {"translatedText": f"  {first}\n\n{second}\n"}


def test_format_html_translates_the_text_and_keeps_the_markup(client, translator):
    q = (
        '<p class="x">Le chat dort sur le canapé.</p><script>var s = "Je suis étudiant.";</script><br/> | '
        "<i>Il fait froid &amp; gris.</i>\n<ul><li>Cliquez sur <b>Envoyer</b> pour continuer.</li>"
        f"<li>{BORN}</li></ul>"
    )
    reply = client.post("/translate", {"q": q, "source": "fr", "target": "en", "format": "html"})
    cat, cold, click, born = texts(
        translator,
        ["Le chat dort sur le canapé.", "Il fait froid & gris.", "Cliquez sur <b>Envoyer</b> pour continuer.", BORN],
    )
    assert "<b>" in click and "</b>" in click and born == "She was born in 1987."  # the inline element kept
    assert reply.json() == {
        "translatedText": f'<p class="x">{cat}</p><script>var s = "Je suis étudiant.";</script><br/> | <i>'
        + cold.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        + f"</i>\n<ul><li>{click}</li><li>{born}</li></ul>"
    }
    as_text = client.post("/translate", {"q": q, "source": "fr", "target": "en"}).json()["translatedText"]
    # format text: two lines of tt translate, the script's text translated as any other
    assert as_text.count("\n") == 1 and as_text != reply.json()["translatedText"]


def test_blank_text_or_markup_alone_comes_back_as_it_is_without_a_decode(client):
    calls = client.get("/health").json()["batching"]["decode_calls"]
    blank = client.post("/translate", {"q": [" \n", "<br/>\n"], "source": "fr", "target": "en", "format": "html"})
    assert blank.json() == {"translatedText": [" \n", "<br/>\n"]}
    assert client.get("/health").json()["batching"]["decode_calls"] == calls


def test_alternatives_are_the_runners_up_of_the_beam(client, translator):
    reply = client.post("/translate", {"q": "Il fait froid.", "source": "fr", "target": "en", "alternatives": 2})
    best = translator.translate(["Il fait froid."], n_best=3)[0]
    expected = [a.text for a in best.n_best[1:] if a.text != best.text]
    assert reply.json() == {"translatedText": best.text, "alternatives": expected}
    assert len(expected) >= 1
    listed = client.post("/translate", {"q": ["Il fait froid."], "source": "fr", "target": "en", "alternatives": 2})
    assert listed.json() == {"translatedText": [best.text], "alternatives": [expected]}
    # The runners-up go through the pipeline too: the year is put back in each.
    born = client.post("/translate", {"q": BORN, "source": "fr", "target": "en", "alternatives": 2}).json()
    assert born["translatedText"] == "She was born in 1987." and born["alternatives"]
    assert all("1987" in a for a in born["alternatives"])


def test_json_sent_as_a_form_as_curl_d_does_is_read_as_json(client, translator):
    body = json.dumps({"q": SENTENCES[0], "source": "fr", "target": "en"}).encode()
    reply = client.request("POST", "/translate", body, {"Content-Type": "application/x-www-form-urlencoded"})
    assert reply.json() == {"translatedText": texts(translator, SENTENCES[:1])[0]}


def test_a_form_body_as_libretranslate_clients_send_it(client, translator):
    body = "q=Je+suis+%C3%A9tudiant.&source=fr&target=en&alternatives=1".encode()
    reply = client.request("POST", "/translate", body, {"Content-Type": "application/x-www-form-urlencoded"})
    assert reply.status == 200
    assert reply.json()["translatedText"] == texts(translator, SENTENCES[:1])[0]
    assert isinstance(reply.json()["alternatives"], list)


# ----------------------------------------------------------------------------- tt's own API
def cli_json(*args: str) -> list[dict]:
    result = CliRunner().invoke(app, ["translate", "--json", *args], env={"TT_SERVER": ""})
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


def assert_same(served, printed, path="record"):
    """Equal, floats to within 1e-3 (a batch of other shape may round the 4th decimal differently)."""
    if isinstance(printed, float):
        assert served == pytest.approx(printed, abs=1e-3), path
    elif isinstance(printed, dict):
        assert served.keys() == printed.keys(), path
        for key in printed:
            assert_same(served[key], printed[key], f"{path}.{key}")
    elif isinstance(printed, list):
        assert len(served) == len(printed), path
        for i, (a, b) in enumerate(zip(served, printed)):
            assert_same(a, b, f"{path}[{i}]")
    else:
        assert served == printed, path


@pytest.mark.parametrize(
    "options, flags",
    [
        ({"raw": True}, ["--raw"]),
        ({"raw": True, "greedy": True}, ["--raw", "--greedy"]),
        ({"raw": True, "method": "greedy"}, ["--raw", "--greedy"]),
        ({"beam": 3, "n_best": 2, "alpha": 1.0}, ["--beam", "3", "--n-best", "2", "--alpha", "1.0"]),
        ({"attention": "cross", "align": True}, ["--attention", "cross", "--align"]),
    ],
)
def test_v1_raw_returns_the_records_tt_translate_json_raw_prints(client, options, flags):
    """raw (and n_best, attention, align, as on the command line): the model's own record of each line."""
    reply = client.post("/v1/translate", {"q": SENTENCES[:2], **options})
    assert reply.status == 200
    assert reply.json()["warnings"] == [] and "confidences" not in reply.json()
    assert_same(reply.json()["translations"], cli_json(*flags, *SENTENCES[:2]))


@pytest.mark.parametrize(
    "options, flags",
    [
        ({}, []),
        ({"greedy": True, "split": False}, ["--greedy", "--no-split"]),
        ({"protect": False, "batch_size": 4}, ["--no-protect", "--batch-size", "4"]),
    ],
)
def test_v1_translate_returns_the_records_tt_translate_json_prints(client, options, flags):
    """By default: the text pipeline's record (sentences, protected spans, confidence and coverage)."""
    q = [BORN, "", THREE]
    reply = client.post("/v1/translate", {"q": q, **options})
    assert reply.status == 200
    printed = cli_json(*flags, *q)
    if "batch_size" in options:  # decoded on its own, in the command's batches: the same to the last digit
        assert reply.json()["translations"] == printed
    assert_same(reply.json()["translations"], printed)
    # warned about exactly where the command warns (greedy, unsplit: the model may drop a sentence of THREE)
    assert [w["index"] for w in reply.json()["warnings"]] == [i for i, r in enumerate(printed) if r["warnings"]]
    assert len(reply.json()["confidences"]) == 3
    born = reply.json()["translations"][0]
    assert born["translation"].startswith("She was born in 19") and born["sentences"][0]["model_input"]
    assert reply.json()["confidences"][1] is None  # the blank line
    assert reply.json()["confidences"][0] == pytest.approx(born["confidence"], abs=5e-5)


def test_v1_translate_takes_a_glossary_as_terms_and_a_documents_segments(client, tmp_path):
    glossary = tmp_path / "terms.tsv"
    glossary.write_text("étudiant\tlearner\n", encoding="utf-8")
    reply = client.post("/v1/translate", {"q": [SENTENCES[0]], "terms": [["étudiant", "learner"]]})
    assert_same(reply.json()["translations"], cli_json("--glossary", str(glossary), SENTENCES[0]))
    assert "learner" in reply.json()["translations"][0]["translation"]
    heading = client.post("/v1/translate", {"q": ["Le chat dort"], "follow_stop": True, "coverage": False}).json()
    [record] = heading["translations"]
    assert not record["translation"].endswith(".") and record["coverage"] is None


@pytest.mark.slow  # a subprocess that imports torch and loads a model
def test_v1_warnings_are_numbered_within_the_request(client):
    long = "Le chat dort. " * 120  # past the model's 256 pieces: cut, with a warning
    reply = client.post("/v1/translate", {"q": ["Bonjour.", long], "greedy": True, "raw": True})
    records = reply.json()["translations"]
    assert [r["index"] for r in records] == [0, 1] and records[1]["truncated"] is True
    printed = CliRunner().invoke(app, ["translate", "--greedy", "--raw", long])
    warning = printed.stderr.splitlines()[0].removeprefix("tt: warning: line 1: ")
    assert reply.json()["warnings"] == [{"index": 1, "message": warning}]


def test_v1_model_is_the_card_and_the_defaults(client):
    reply = client.get("/v1/model")
    card = json.loads((ROOT / "weights" / "card.json").read_text(encoding="utf-8"))
    record = {
        "model": str(ROOT / "weights"),
        "source": "fr",
        "target": "en",
        "decoding": {
            "method": "beam",
            "beam": 4,
            "alpha": 0.6,
            "quantize": default_mode(ROOT / "weights", "auto"),  # the card's precision (None: fp32)
            "rerank": 0.0,
        },
        "card": card,
    }
    assert reply.json() == {**record, "directions": [record]}  # a server of one model: one direction


# ----------------------------------------------------------------------------- bad requests
JSON = {"Content-Type": "application/json"}
BAD = [
    ("not JSON", "/translate", b"{q: 1", JSON, 400, "body is not valid JSON"),
    ("invalid UTF-8", "/translate", b'{"q": "\xff"}', JSON, 400, "body is not valid JSON"),
    ("a JSON list", "/translate", b"[1, 2]", JSON, 400, "body must be a JSON object, got a list"),
    ("empty body", "/translate", b"", JSON, 400, "empty body"),
    ("no q", "/translate", {"source": "fr", "target": "en"}, None, 400, "missing q"),
    ("q a number", "/translate", {"q": 3, "source": "fr", "target": "en"}, None, 400, "q must be a string or a list"),
    ("q with a number", "/v1/translate", {"q": ["a", 1]}, None, 400, "q must be a string or a list"),
    ("q empty", "/translate", {"q": "", "source": "fr", "target": "en"}, None, 400, "q is empty"),
    ("q an empty list", "/v1/translate", {"q": []}, None, 400, "q is empty"),
    ("no source", "/translate", {"q": "a", "target": "en"}, None, 400, "missing source"),
    (
        "auto English to French",
        "/translate",
        {"q": "The weather is lovely this morning.", "source": "auto", "target": "fr"},
        None,
        400,
        "en→fr is not supported: this server translates fr→en",
    ),
    ("v1 auto", "/v1/translate", {"q": "a", "source": "auto"}, None, 400, "auto→en is not supported"),
    ("unknown pair", "/translate", {"q": "a", "source": "fr", "target": "de"}, None, 400, "fr→de is not supported"),
    ("v1 unknown pair", "/v1/translate", {"q": "a", "source": "en"}, None, 400, "en→en is not supported"),
    ("source a number", "/translate", {"q": "a", "source": 1, "target": "en"}, None, 400, "source must be a string"),
    (
        "format pdf",
        "/translate",
        {"q": "a", "source": "fr", "target": "en", "format": "pdf"},
        None,
        400,
        "format must be one of text, html",
    ),
    (
        "alternatives text",
        "/translate",
        {"q": "a", "source": "fr", "target": "en", "alternatives": "two"},
        None,
        400,
        "alternatives must be an integer, got 'two'",
    ),
    (
        "alternatives 99",
        "/translate",
        {"q": "a", "source": "fr", "target": "en", "alternatives": 99},
        None,
        400,
        "alternatives must be between 0 and 8",
    ),
    ("beam 0", "/v1/translate", {"q": "a", "beam": 0}, None, 400, "beam must be between 1 and 16"),
    ("beam true", "/v1/translate", {"q": "a", "beam": True}, None, 400, "beam must be an integer, got a boolean"),
    ("alpha NaN", "/v1/translate", b'{"q": "a", "alpha": NaN}', JSON, 400, "alpha must be a finite number"),
    (
        "greedy and sample",
        "/v1/translate",
        {"q": "a", "greedy": True, "sample": True},
        None,
        400,
        "greedy and sample exclude each other",
    ),
    (
        "method and greedy",
        "/v1/translate",
        {"q": "a", "method": "sample", "greedy": True},
        None,
        400,
        "method and greedy/sample: give one of them",
    ),
    ("method bogus", "/v1/translate", {"q": "a", "method": "nucleus"}, None, 400, "method must be one of beam"),
    (
        "n_best past beam",
        "/v1/translate",
        {"q": "a", "beam": 2, "n_best": 3},
        None,
        400,
        "n_best (3) cannot exceed beam (2)",
    ),
    (
        "attention bogus",
        "/v1/translate",
        {"q": "a", "attention": "some"},
        None,
        400,
        "attention must be one of none, cross, all",
    ),
    ("align a string", "/v1/translate", {"q": "a", "align": "yes"}, None, 400, "align must be true or false"),
    ("raw a string", "/v1/translate", {"q": "a", "raw": "yes"}, None, 400, "raw must be true or false"),
    (
        "split with raw",
        "/v1/translate",
        {"q": "a", "raw": True, "split": False, "terms": []},
        None,
        400,
        "split, terms: options of the text pipeline, not of raw",
    ),
    ("terms a string", "/v1/translate", {"q": "a", "terms": "a\tb"}, None, 400, "terms must be a list of"),
    ("terms a triple", "/v1/translate", {"q": "a", "terms": [["a", "b", "c"]]}, None, 400, "terms[0] must be a"),
    ("coverage a number", "/v1/translate", {"q": "a", "coverage": 1}, None, 400, "coverage must be true or false"),
    (
        "too many characters",
        "/translate",
        {"q": "a" * 2001, "source": "fr", "target": "en"},
        None,
        400,  # LibreTranslate's status for a request over a limit
        "2001 characters exceed the limit of 2000",
    ),
    ("v1 too many characters", "/v1/translate", {"q": "a" * 2001}, None, 413, "2001 characters exceed the limit"),
    ("too many sentences", "/v1/translate", {"q": ["a"] * 129}, None, 413, "129 sentences exceed the limit of 128"),
    ("huge body", "/translate", b'{"q": "' + b"a" * 200_000 + b'"}', JSON, 400, "exceeds the limit"),
    ("v1 huge body", "/v1/translate", b'{"q": "' + b"a" * 200_000 + b'"}', JSON, 413, "exceeds the limit"),
    ("xml", "/v1/translate", b"<q>a</q>", {"Content-Type": "text/xml"}, 415, "Content-Type text/xml is not supported"),
    ("xml on LT", "/translate", b"<q>a</q>", {"Content-Type": "text/xml"}, 400, "Content-Type text/xml"),
    (
        "broken multipart",
        "/translate",
        b"--x\r\nnot a part",
        {"Content-Type": "multipart/form-data; boundary=x"},
        400,
        "multipart body cannot be read",
    ),
    (
        "query and body disagree",
        "/translate?source=en",
        {"q": "a", "source": "fr", "target": "en"},
        None,
        400,
        "source is given both in the query string and in the body",
    ),
    ("detect without q", "/detect", {"api_key": "x"}, None, 400, "missing q"),
    ("file without a file", "/translate_file", {"source": "fr", "target": "en"}, None, 400, "missing file"),
    (
        "bad form",
        "/translate",
        b"q=%FF&source=fr",
        {"Content-Type": "application/x-www-form-urlencoded"},
        400,
        "not valid URL-encoded UTF-8",
    ),
    (
        "form twice",
        "/translate",
        b"q=a&source=fr&source=en",
        {"Content-Type": "application/x-www-form-urlencoded"},
        400,
        "source is given 2 times",
    ),
]


@pytest.mark.parametrize("name, path, body, headers, status, message", BAD, ids=[b[0] for b in BAD])
def test_a_bad_request_gets_a_4xx_with_one_json_line_and_the_server_lives_on(
    client, log, name, path, body, headers, status, message
):
    reply = client.request(
        "POST", path, body if isinstance(body, bytes) else json.dumps(body).encode(), headers or JSON
    )
    assert reply.status == status
    assert reply.headers["content-type"] == "application/json"
    error = reply.json()["error"]
    assert message in error and "\n" not in error and "Traceback" not in error
    assert client.get("/health").json()["status"] == "ok"
    assert not [line for line in log_lines(log) if line["event"] == "error"]


def test_unknown_paths_and_methods_get_json_errors(client):
    missing = client.get("/nope")
    assert (missing.status, missing.json()["error"].split(":")[0]) == (404, "no such endpoint")
    wrong = client.get("/translate")
    assert wrong.status == 405 and wrong.json() == {"error": "GET is not allowed on /translate (allowed: POST)"}


# ----------------------------------------------------------------------------- the log
def test_each_request_is_one_json_line_with_its_sentences_and_decode_call(url, log):
    with Client(url) as c:
        c.post("/translate", {"q": ["Bonjour.", "Merci."], "source": "fr", "target": "en"})
        c.post("/translate", {"q": "", "source": "fr", "target": "en"})
    lines = [line for line in log_lines(log) if line["event"] == "request"]
    ok, bad = lines[-2], lines[-1]
    assert ok["method"] == "POST" and ok["path"] == "/translate" and ok["status"] == 200
    assert ok["sentences"] == 2 and isinstance(ok["decode_call"], int) and ok["ms"] > 0 and ok["bytes"] > 0
    assert ok["client"].startswith("127.0.0.1:") and ok["time"].endswith("Z")
    assert bad["status"] == 400 and bad["error"].startswith("q is empty")
    assert log_lines(log)[0]["event"] == "listening" and log_lines(log)[0]["url"] == url


# ----------------------------------------------------------------------------- keys and CORS
def test_api_keys_are_required_on_the_translate_endpoints_only(translator):
    log = io.StringIO()
    with Background(translator, ServeSettings(api_keys=frozenset({"s3cret"}), log=log)) as url:
        with Client(url) as c:
            missing = c.post("/v1/translate", {"q": "Bonjour."})
            assert missing.status == 401 and "API key" in missing.json()["error"]
            assert missing.headers["www-authenticate"] == "Bearer"
            lt = c.post("/translate", {"q": "Bonjour.", "source": "fr", "target": "en"})  # LibreTranslate's 400
            assert lt.status == 400 and "API key" in lt.json()["error"] and "www-authenticate" not in lt.headers
            assert c.post("/v1/translate", {"q": "Bonjour.", "api_key": "nope"}).status == 403
            assert c.get("/health").status == 200 and c.get("/languages").status == 200
            assert c.get("/health").json()["api_keys"] is True
            auth = {"Content-Type": "application/json", "X-API-Key": "s3cret"}
            assert c.request("POST", "/v1/translate", b'{"q": "Merci."}', auth).status == 200
        with Client(url, api_key="s3cret") as c:  # Authorization: Bearer
            assert c.post("/v1/translate", {"q": "Merci."}).status == 200
        lt = libretranslatepy.LibreTranslateAPI(url, api_key="s3cret")  # api_key in the form
        assert lt.translate(SENTENCES[0], "fr", "en") == translator.translate_text(SENTENCES[:1])[0].text
        with pytest.raises(urllib.error.HTTPError) as info:
            libretranslatepy.LibreTranslateAPI(url, api_key="wrong").translate(SENTENCES[0], "fr", "en")
        assert info.value.code == 403
    assert "s3cret" not in log.getvalue() and "wrong" not in log.getvalue()


def test_cors_answers_the_allowed_origin_only_and_exposes_retry_after(translator):
    preflight = {
        "Origin": "https://app.example",
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type",
    }
    with Background(translator, ServeSettings(cors_origins=("https://app.example",), log=io.StringIO())) as url:
        with Client(url) as c:
            ok = c.request("OPTIONS", "/translate", None, preflight)
            assert ok.status == 200 and ok.headers["access-control-allow-origin"] == "https://app.example"
            post = c.request("POST", "/v1/translate", b'{"q": "Merci."}', {**JSON, "Origin": "https://app.example"})
            assert post.status == 200 and post.headers["access-control-allow-origin"] == "https://app.example"
            assert post.headers["access-control-expose-headers"] == "Retry-After"  # a page can read a 429's wait
            other = c.request("OPTIONS", "/translate", None, {**preflight, "Origin": "https://evil.example"})
            assert other.status == 400 and other.json() == {"error": "Disallowed CORS origin"}
    with Background(translator, ServeSettings(log=io.StringIO())) as url:  # by default any page, as LibreTranslate
        with Client(url) as c:
            ok = c.request("OPTIONS", "/translate", None, {**preflight, "Origin": "http://localhost:8080"})
            assert ok.status == 200 and ok.headers["access-control-allow-origin"] == "*"
            post = c.request("POST", "/translate", b'{"q": "Merci.", "source": "fr", "target": "en"}', preflight)
            assert post.headers["access-control-allow-origin"] == "*"
            assert post.headers["access-control-expose-headers"] == "Retry-After"
    with Background(translator, ServeSettings(cors_origins=(), log=io.StringIO())) as url:  # --cors none
        with Client(url) as c:
            plain = c.request("OPTIONS", "/translate", None, preflight)
            assert plain.status == 405 and "access-control-allow-origin" not in plain.headers


def test_the_client_reads_chunked_answers_and_reopens_a_connection_the_server_closed():
    """tt's client speaks HTTP/1.1 itself: here to a standard-library server that answers in chunks
    and then closes the connection without saying so (as a server does to an idle keep-alive)."""
    import http.server
    import threading

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            length = int(self.headers["Content-Length"])
            body = self.rfile.read(length)
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for part in (b'{"got": ', body, b"}"):
                self.wfile.write(f"{len(part):x}\r\n".encode() + part + b"\r\n")
            self.wfile.write(b"0\r\n\r\n")
            self.close_connection = True

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with Client(f"http://127.0.0.1:{server.server_port}") as c:
            assert [c.post("/x", {"n": i}).json() for i in range(3)] == [{"got": {"n": i}} for i in range(3)]
    finally:
        server.shutdown()
        server.server_close()


def test_tt_and_the_client_import_neither_the_web_stack_nor_torch():
    code = (
        "import sys, tt_cli.main, tt_cli.serve.client; "
        "print(sorted(m for m in ('starlette', 'uvicorn', 'torch', 'http.client') if m in sys.modules))"
    )
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert shown.stdout.strip() == "[]"
