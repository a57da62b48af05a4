"""`tt serve` under load and at its limits, on a real server on 127.0.0.1: concurrent requests share
decode calls (counted in /health), the queue bound answers 503 with Retry-After, the timeout 504,
the size limits 413; `tt serve` itself checks its options, and SIGTERM finishes what is in flight."""

from __future__ import annotations

import io
import json
import shutil
import signal
import subprocess
import sys
import threading
import time

import pytest
from typer.testing import CliRunner

pytest.importorskip("uvicorn", reason="tt serve needs the serve extra (pip install -e '.[dev]')")

from core.api import Translator  # noqa: E402
from tests.conftest import ROOT  # noqa: E402
from tt_cli.main import app  # noqa: E402
from tt_cli.serve import announce  # noqa: E402
from tt_cli.serve.client import Client  # noqa: E402
from tt_cli.serve.server import Background, listen  # noqa: E402
from tt_cli.serve.settings import ServeSettings  # noqa: E402

SENTENCES = [
    "Je suis étudiant.",
    "Il fait froid ce matin.",
    "Où est la gare ?",
    "Le chat dort sur le canapé.",
    "Elle parle trois langues.",
    "Nous allons à la plage demain.",
    "Deux enfants courent dans un parc.",
    "J'aime lire des livres le soir.",
]


@pytest.fixture(scope="module")
def translator():
    return Translator(method="greedy")  # greedy: the counts below do not depend on the search, and it is quick


def serve(translator, **settings):
    return Background(translator, ServeSettings(log=io.StringIO(), **settings))


def batching(url) -> dict:
    with Client(url) as c:
        return c.get("/health").json()["batching"]


def all_at_once(url, bodies: list[dict], path: str = "/v1/translate") -> list:
    """Each body POSTed from its own thread, all released together; the replies in order."""
    replies: list = [None] * len(bodies)
    gate = threading.Barrier(len(bodies))

    def one(i: int) -> None:
        with Client(url) as c:
            gate.wait()
            replies[i] = c.post(path, bodies[i])

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(bodies))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return replies


def texts(replies) -> list[str]:
    return [r.json()["translations"][0]["translation"] for r in replies]


@pytest.mark.parametrize("path", ["/v1/translate", "/translate"])
def test_concurrent_requests_share_decode_calls(translator, path):
    """Each request runs the text pipeline in its own thread; their sentences still meet in one decode."""
    expected = [r.text for r in translator.translate_text(SENTENCES)]
    with serve(translator, batch_wait_s=0.3) as url:
        replies = all_at_once(url, [{"q": [s], "source": "fr", "target": "en"} for s in SENTENCES], path)
        counts = batching(url)
    assert [r.status for r in replies] == [200] * 8
    if path == "/translate":
        assert [r.json()["translatedText"][0] for r in replies] == expected
    else:
        assert texts(replies) == expected
    assert counts["requests"] == 8 and counts["sentences"] == 8
    assert counts["decode_calls"] < 8 and counts["largest_batch"] > 1


def test_batch_size_1_decodes_each_request_on_its_own(translator):
    with serve(translator, batch_size=1, batch_wait_s=0.3) as url:
        replies = all_at_once(url, [{"q": [s]} for s in SENTENCES])
        counts = batching(url)
    assert [r.status for r in replies] == [200] * 8
    assert counts["decode_calls"] == 8 and counts["largest_batch"] == 1


def test_batch_size_caps_the_sentences_of_one_decode_call(translator):
    with serve(translator, batch_size=3, batch_wait_s=0.3) as url:
        all_at_once(url, [{"q": [s]} for s in SENTENCES])
        counts = batching(url)
    assert counts["largest_batch"] <= 3 and counts["decode_calls"] >= 3 and counts["sentences"] == 8


def test_batch_wait_lets_a_later_request_join(translator):
    def two_requests_apart(wait_s: float) -> int:
        with serve(translator, batch_wait_s=wait_s) as url:
            first = threading.Thread(target=lambda: Client(url).post("/v1/translate", {"q": SENTENCES[0]}))
            first.start()
            wait_for(lambda: batching(url)["pending_sentences"] + batching(url)["requests"] > 0)  # accepted
            time.sleep(0.3)
            Client(url).post("/v1/translate", {"q": SENTENCES[1]})
            first.join()
            return batching(url)["decode_calls"]

    assert two_requests_apart(0.0) == 2  # the first went alone, at once
    assert two_requests_apart(2.0) == 1  # the first waited, and the second joined it


def test_requests_with_other_decoding_options_are_not_mixed(translator):
    with serve(translator, batch_wait_s=0.3) as url:
        bodies = [{"q": [SENTENCES[0]], "raw": True}, {"q": [SENTENCES[0]], "raw": True, "beam": 4, "greedy": False}]
        replies = all_at_once(url, bodies)
        counts = batching(url)
    assert counts["decode_calls"] == 2
    greedy, beam = (r.json()["translations"][0] for r in replies)
    assert (
        greedy["score"] == greedy["logprob"] and beam["score"] != beam["logprob"]
    )  # beam scores are length-normalised


def wait_for(predicate, seconds: float = 10.0) -> None:
    end = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < end, "timed out waiting"
        time.sleep(0.01)


def test_a_full_queue_answers_503_with_retry_after_and_keeps_what_it_has(translator):
    with serve(translator, queue_size=4, max_sentences=4, batch_wait_s=1.0) as url:
        done = {}
        first = threading.Thread(
            target=lambda: done.update(reply=Client(url).post("/v1/translate", {"q": SENTENCES[:3]}))
        )
        first.start()
        wait_for(lambda: batching(url)["pending_sentences"] == 3)
        busy = Client(url).post("/v1/translate", {"q": SENTENCES[3:5]})
        assert busy.status == 503 and busy.headers["retry-after"] == "1"
        assert "queue is full" in busy.json()["error"]
        assert Client(url).post("/v1/translate", {"q": SENTENCES[3]}).status == 200  # one more still fits
        first.join()
        assert done["reply"].status == 200 and len(done["reply"].json()["translations"]) == 3
        assert batching(url)["rejected"] == 1


@pytest.mark.parametrize("raw", [False, True], ids=["text pipeline (a thread waits)", "raw (the loop awaits)"])
def test_a_request_past_the_timeout_gets_504_and_is_never_decoded(translator, raw):
    with serve(translator, timeout_s=0.2, batch_wait_s=1.0) as url:
        reply = Client(url).post("/v1/translate", {"q": SENTENCES[0], "raw": raw})
        assert reply.status == 504 and reply.json() == {"error": "not translated within the server's timeout of 0.2 s"}
        wait_for(lambda: batching(url)["pending_sentences"] == 0)
        counts = batching(url)
        assert counts["timed_out"] == 1 and counts["decode_calls"] == 0
        with Client(url) as c:
            assert c.get("/health").json()["status"] == "ok"


def test_max_chars_and_max_sentences_are_the_limits(translator):
    with serve(translator, max_chars=20, max_sentences=2, queue_size=2) as url:
        with Client(url) as c:
            assert c.post("/v1/translate", {"q": "a" * 20}).status == 200
            assert c.post("/v1/translate", {"q": "a" * 21}).status == 413
            assert c.post("/translate", {"q": "Oui.\nNon.", "source": "fr", "target": "en"}).status == 200
            many = c.post("/translate", {"q": "Oui.\nNon.\nBon.", "source": "fr", "target": "en"})
            assert many.status == 400 and many.json() == {"error": "3 sentences exceed the limit of 2 per request"}
            assert c.post("/v1/translate", {"q": ["Oui.", "Non.", "Bon."]}).status == 413  # tt's own status


# ----------------------------------------------------------------------------- the command
@pytest.mark.parametrize(
    "args, message",
    [
        (["--batch-size", "0"], "--batch-size must be at least 1, got 0"),
        (["--timeout", "0"], "--timeout must be positive, got 0"),
        (["--max-sentences", "600"], "--queue-size (512) must hold at least one full request (--max-sentences 600)"),
        (["--port", "70000"], "--port must be 0..65535, got 70000"),
    ],
)
def test_bad_options_are_one_line_and_exit_2(args, message):
    result = CliRunner().invoke(app, ["serve", *args])
    assert result.exit_code == 2
    assert result.stderr == f"tt: error: {message}\n"


def test_a_bad_keys_file_or_a_taken_port_is_one_line_and_exit_1(tmp_path):
    empty = tmp_path / "keys.txt"
    empty.write_text("# nobody\n\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["serve", "--api-keys", str(empty)])
    assert (result.exit_code, result.stderr) == (
        1,
        f"tt: error: --api-keys {empty}: no keys in it (one key per line; # starts a comment)\n",
    )
    taken = listen("127.0.0.1", 0)
    try:
        port = taken.getsockname()[1]
        # The port is bound before the model loads: the port's error, not the missing model's.
        result = CliRunner().invoke(app, ["serve", "--port", str(port), "--model", str(tmp_path / "none")])
        assert result.exit_code == 1
        assert (
            result.stderr.startswith(f"tt: error: cannot listen on 127.0.0.1:{port}: ")
            and result.stderr.count("\n") == 1
        )
    finally:
        taken.close()


def start(*args: str) -> tuple[subprocess.Popen, str]:
    """`tt serve --port 0 ARGS` in a child process, and its URL (from the log's first line)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "tt_cli.main", "serve", "--port", "0", *args],
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    line = process.stderr.readline()
    assert line, f"tt serve exited with {process.wait()}"
    event = json.loads(line)
    assert event["event"] == "listening", line
    return process, event["url"]


@pytest.mark.slow  # a subprocess that imports torch and loads a model
def test_tt_serve_passes_every_option_to_the_server(tmp_path):
    model = tmp_path / "model"
    shutil.copytree(ROOT / "weights", model)
    card = json.loads((model / "card.json").read_text(encoding="utf-8"))
    card["train_config"] |= {"src_lang": "fr", "tgt_lang": "en", "note": "a copy"}
    (model / "card.json").write_text(json.dumps(card), encoding="utf-8")
    keys = tmp_path / "keys"
    keys.write_text("k1\n", encoding="utf-8")
    process, url = start(
        *("--host", "127.0.0.1", "--model", str(model), "--threads", "1", "--beam", "2", "--alpha", "1.0"),
        *("--batch-size", "7", "--batch-wait", "12", "--queue-size", "50", "--max-chars", "300"),
        *("--max-sentences", "9", "--timeout", "33", "--api-keys", str(keys), "--cors", "https://a.example"),
        *("--read-timeout", "4.5"),
        *("--quantize", "int8"),
    )
    try:
        assert url.startswith("http://127.0.0.1:")
        with Client(url, api_key="k1") as c:
            health = c.get("/health").json()
            about = c.get("/v1/model").json()
            served = c.post("/v1/translate", {"q": "Il fait froid ce matin.", "raw": True})
            assert served.status == 200
        assert health["model"] == str(model) and health["threads"] == 1
        assert {k: health["batching"][k] for k in ("batch_size", "batch_wait_ms", "queue_size")} == {
            "batch_size": 7,
            "batch_wait_ms": 12.0,
            "queue_size": 50,
        }
        assert health["limits"] == {"max_chars": 300, "max_sentences": 9, "timeout_s": 33.0, "read_timeout_s": 4.5}
        assert health["api_keys"] is True and health["cors"] == ["https://a.example"]
        assert about["decoding"] == {"method": "beam", "beam": 2, "alpha": 1.0, "quantize": "int8", "rerank": 0.0}
        # The int8 model's translations (log-probabilities of the int8 copy, not of the fp32 model) …
        [record] = served.json()["translations"]
        int8 = Translator(model, quantize="int8", beam=2, alpha=1.0).translate(["Il fait froid ce matin."])[0]
        fp32 = Translator(model, beam=2, alpha=1.0).translate(["Il fait froid ce matin."])[0]
        assert record["token_logprobs"] == pytest.approx([round(x, 4) for x in int8.token_logprobs], abs=2e-4)
        assert record["token_logprobs"] != pytest.approx([round(x, 4) for x in fp32.token_logprobs], abs=2e-4)
        # … which a warm `tt translate` of the fp32 model does not take.
        assert health["model_id"] == announce.model_id(model) + "|int8" and health["quantize"] == "int8"
        assert about["card"]["train_config"]["note"] == "a copy"
        with Client(url) as c:
            assert c.post("/v1/translate", {"q": "Merci."}).status == 401
    finally:
        process.terminate()
        process.wait(timeout=60)


@pytest.mark.slow  # a subprocess that imports torch and loads a model
def test_sigterm_answers_the_request_in_flight_then_exits_0(translator):
    process, url = start("--greedy", "--batch-wait", "1500")
    try:
        done = {}
        request = threading.Thread(
            target=lambda: done.update(
                reply=Client(url).post("/translate", {"q": SENTENCES[0], "source": "fr", "target": "en"})
            )
        )
        request.start()
        wait_for(lambda: batching(url)["pending_sentences"] == 1, seconds=30)
        process.send_signal(signal.SIGTERM)
        request.join(timeout=60)
        assert done["reply"].status == 200
        assert done["reply"].json() == {"translatedText": translator.translate_text([SENTENCES[0]])[0].text}
        assert process.wait(timeout=60) == 0  # a clean stop, as asked
        log = [json.loads(line) for line in process.stderr.read().splitlines()]
        assert log[-1]["event"] == "stopped" and log[-1]["requests"] == 1
        assert [e["path"] for e in log if e["event"] == "request"][-1] == "/translate"
        with pytest.raises(ConnectionRefusedError):
            Client(url).get("/health")
    finally:
        if process.poll() is None:
            process.kill()
