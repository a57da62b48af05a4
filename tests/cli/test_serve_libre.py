"""LibreTranslate's API beyond /translate's basics, against a real `tt serve` on 127.0.0.1: source "auto"
with detectedLanguage, POST /detect, /frontend/settings, /translate_file and /download_file, the same
fields as JSON, form, multipart or query string, `alternatives` as a numeric string, and no character
reference in an answer that the request did not hold."""

from __future__ import annotations

import json
import urllib.parse
import uuid

import pytest

pytest.importorskip("uvicorn", reason="tt serve needs the serve extra (pip install -e '.[dev]')")

from core.text.documents import parse_html  # noqa: E402
from tt_cli.serve.client import Client  # noqa: E402

FRENCH = "Il fait froid ce matin."
ENGLISH = "The weather is lovely this morning, so we are going for a walk."
AMPERSAND = "Tom & Jerry sont des amis."


@pytest.fixture
def client(url):
    with Client(url) as c:
        yield c


def printed(translator, lines: list[str]) -> list[str]:
    return [r.text for r in translator.translate_text(lines)]


def multipart(fields: dict[str, str], files: dict[str, tuple[str, bytes]] = {}) -> tuple[bytes, dict]:  # noqa: B006
    boundary = uuid.uuid4().hex
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode() for k, v in fields.items()
    ]
    for name, (filename, content) in files.items():
        head = f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; filename="{filename}"\r\n'
        parts.append(head.encode() + b"Content-Type: application/octet-stream\r\n\r\n" + content + b"\r\n")
    body = b"".join(parts) + f"--{boundary}--\r\n".encode()
    return body, {"Content-Type": f"multipart/form-data; boundary={boundary}"}


# ----------------------------------------------------------------------------- detection
def test_source_auto_translates_french_and_hands_english_back_with_detected_language(client, translator):
    one = client.post("/translate", {"q": FRENCH, "source": "auto", "target": "en"}).json()
    assert one["translatedText"] == printed(translator, [FRENCH])[0]
    assert one["detectedLanguage"]["language"] == "fr" and one["detectedLanguage"]["confidence"] > 90
    many = client.post("/translate", {"q": [FRENCH, ENGLISH], "source": "auto", "target": "en"}).json()
    assert many["translatedText"] == [printed(translator, [FRENCH])[0], ENGLISH]  # English: already the target
    assert [d["language"] for d in many["detectedLanguage"]] == ["fr", "en"]
    # The control: named as French, the English sentence goes through the model and comes back changed.
    forced = client.post("/translate", {"q": ENGLISH, "source": "fr", "target": "en"}).json()
    assert "detectedLanguage" not in forced and forced["translatedText"] == printed(translator, [ENGLISH])[0]


def test_detect_ranks_the_servers_languages(client):
    french = client.post("/detect", {"q": FRENCH}).json()
    english = client.request("POST", "/detect?q=" + urllib.parse.quote(ENGLISH)).json()
    assert [d["language"] for d in french] == ["fr", "en"] and [d["language"] for d in english] == ["en", "fr"]
    assert french[0]["confidence"] > 90 and english[0]["confidence"] > 90


def test_frontend_settings_say_what_the_server_allows(client):
    settings = client.get("/frontend/settings").json()
    assert settings["charLimit"] == 5000 and settings["apiKeys"] is False and settings["filesTranslation"] is True
    assert settings["supportedFilesFormat"] == [".txt", ".srt", ".md", ".html", ".htm"]
    assert settings["language"] == {
        "source": {"code": "auto", "name": "Auto Detect"},
        "target": {"code": "en", "name": "English"},
    }


# ----------------------------------------------------------------------------- how fields arrive
def test_the_same_request_as_json_form_multipart_and_query_string(client, translator):
    expected = {"translatedText": printed(translator, [FRENCH])[0]}
    fields = {"q": FRENCH, "source": "fr", "target": "en"}
    form = urllib.parse.urlencode(fields).encode()
    body, headers = multipart(fields)
    replies = [
        client.post("/translate", fields),
        client.request("POST", "/translate", form, {"Content-Type": "application/x-www-form-urlencoded"}),
        client.request("POST", "/translate", body, headers),
        client.request("POST", "/translate?" + urllib.parse.urlencode(fields)),
        client.request(
            "POST",
            "/translate?source=fr&target=en",
            form.split(b"&")[0],
            {"Content-Type": "application/x-www-form-urlencoded"},
        ),
    ]
    assert [(r.status, r.json()) for r in replies] == [(200, expected)] * 5


def test_alternatives_as_a_number_or_a_numeric_string(client):
    as_number = client.post("/translate", {"q": FRENCH, "source": "fr", "target": "en", "alternatives": 2}).json()
    as_text = client.post("/translate", {"q": FRENCH, "source": "fr", "target": "en", "alternatives": "2"}).json()
    assert as_text == as_number and as_number["alternatives"]  # the field is read: without it, none
    assert "alternatives" not in client.post("/translate", {"q": FRENCH, "source": "fr", "target": "en"}).json()


# ----------------------------------------------------------------------------- character references
def test_no_reference_comes_back_that_the_request_did_not_hold(client, translator):
    page = f"<p>{AMPERSAND}</p><p>R&D &lt;3</p>"
    text = client.post("/translate", {"q": AMPERSAND, "source": "fr", "target": "en"}).json()["translatedText"]
    html = client.post("/translate", {"q": page, "source": "fr", "target": "en", "format": "html"})
    assert "&amp;" not in text and text == printed(translator, [AMPERSAND])[0]
    # The control: an HTML page is rendered with its text escaped again, so without the answer's decoding
    # the page's bare "&" would come back as "&amp;".
    doc = parse_html(page)
    assert "&amp;" in doc.render(doc.segments)
    assert "&amp;" not in html.json()["translatedText"] and "&lt;" in html.json()["translatedText"]
    # A page that escapes its own "&" gets it back escaped, once.
    escaped = client.post(
        "/translate", {"q": "<p>Tom &amp; Jerry sont des amis.</p>", "source": "fr", "target": "en", "format": "html"}
    ).json()["translatedText"]
    assert "&amp;" in escaped and "&amp;amp;" not in escaped


# ----------------------------------------------------------------------------- files
@pytest.mark.parametrize(
    "filename, content, kept",
    [
        ("notes.txt", f"{FRENCH}\n\n{AMPERSAND}\n", ["\n\n"]),
        ("subs.srt", f"1\n00:00:01,000 --> 00:00:02,500\n{FRENCH}\n\n", ["00:00:01,000 --> 00:00:02,500"]),
        ("page.md", f"# Titre\n\n{FRENCH}\n\n```\ncode\n```\n", ["# ", "```\ncode\n```"]),
        ("page.html", f"<h1>Bonjour</h1><p>{FRENCH}</p>", ["<h1>", "</p>"]),
    ],
)
def test_translate_file_answers_a_url_to_the_translated_file(client, translator, filename, content, kept):
    body, headers = multipart({"source": "fr", "target": "en"}, {"file": (filename, content.encode())})
    reply = client.request("POST", "/translate_file", body, headers)
    assert reply.status == 200, reply.body
    link = reply.json()["translatedFileUrl"]
    assert link.startswith(client_url(client) + "/download_file/") and link.endswith("." + filename)
    got = client.get(urllib.parse.urlsplit(link).path)
    assert got.status == 200 and filename in got.headers["content-disposition"]
    translated = got.body.decode("utf-8")
    assert printed(translator, [FRENCH])[0] in translated and FRENCH not in translated
    assert all(k in translated for k in kept) and "&amp;" not in translated


def client_url(client) -> str:
    return f"http://{client.host}:{client.port}"


def test_translate_file_refuses_what_it_cannot_translate(client):
    for filename, content, message in [
        ("a.pdf", b"%PDF", "file format not supported"),
        ("a.txt", b"\xff\xfe", "not UTF-8"),
        ("a.txt", ("Bonjour. " * 700).encode(), "characters exceed the limit"),
    ]:
        body, headers = multipart({"source": "fr", "target": "en"}, {"file": (filename, content)})
        reply = client.request("POST", "/translate_file", body, headers)
        assert reply.status == 400 and message in reply.json()["error"]
    assert client.get("/download_file/nothing.txt").status == 404
    assert json.loads(client.get("/download_file/nothing.txt").body)["error"].startswith("no such file")
