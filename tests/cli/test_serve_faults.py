"""`tt serve` under the faults of real clients, on 127.0.0.1: a client that hangs up mid-request (its
sentences stop being decoded; a "disconnect" in the log and in /health, never an error or a 500), one
that sends its head or its body a byte at a time (408 in JSON within the read timeout, and closed), a
request the server cannot parse (400 in JSON), and SIGTERM while requests are decoding and an upload is
under way (what is decoding is answered, the upload is refused at once, and the process exits 0).
bench/bench_serve_faults.py measures what a hung-up client costs the others."""

from __future__ import annotations

import io
import json
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

pytest.importorskip("uvicorn", reason="tt serve needs the serve extra (pip install -e '.[dev]')")

from core.api import Translator  # noqa: E402
from tests.conftest import ROOT  # noqa: E402
from tt_cli.serve.client import Client  # noqa: E402
from tt_cli.serve.server import Background  # noqa: E402
from tt_cli.serve.settings import ServeSettings  # noqa: E402

SENTENCES = ["Je suis étudiant.", "Il fait froid ce matin.", "Le chat dort sur le canapé."] * 40  # 120


@pytest.fixture(scope="module")
def translator():
    return Translator()


def wait_for(condition, seconds: float = 30.0) -> None:
    end = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < end, "timed out waiting"
        time.sleep(0.02)


def batching(url) -> dict:
    with Client(url) as c:
        return c.get("/health").json()["batching"]


def raw_post(url: str, body: bytes, path: str = "/v1/translate") -> socket.socket:
    """A connection with a whole POST sent on it (the caller reads, or hangs up)."""
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)))
    head = f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    sock.sendall(head.encode() + body)
    return sock


def read_all(sock: socket.socket, seconds: float) -> tuple[bytes, float]:
    """Everything the server sends until it closes the connection, and when it closed it."""
    sock.settimeout(seconds)
    data, start = b"", time.monotonic()
    while chunk := sock.recv(65536):
        data += chunk
    return data, time.monotonic() - start


def answer(data: bytes) -> tuple[int, dict, dict]:
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return int(lines[0].split()[1]), headers, json.loads(body)


# ----------------------------------------------------------------------------- hanging up
@pytest.mark.parametrize("raw", [False, True], ids=["text pipeline (a thread waits)", "raw (the loop awaits)"])
def test_a_client_that_hangs_up_stops_costing_decodes_and_is_logged_as_a_disconnect(translator, raw):
    log = io.StringIO()
    with Background(translator, ServeSettings(batch_size=4, log=log)) as url:
        sock = raw_post(url, json.dumps({"q": SENTENCES, "raw": raw}).encode())
        wait_for(lambda: batching(url)["sentences"] >= 4)  # decoding has begun
        sock.close()
        wait_for(lambda: batching(url)["pending_sentences"] == 0)
        counts = batching(url)
        with Client(url) as c:  # the server goes on as before
            assert c.post("/v1/translate", {"q": SENTENCES[:1]}).status == 200
    assert counts["disconnects"] == 1 and counts["sentences"] < len(SENTENCES) / 2
    assert counts["sentences_skipped"] > len(SENTENCES) / 2
    assert counts["sentences"] + counts["sentences_skipped"] >= len(SENTENCES)
    events = [json.loads(line) for line in log.getvalue().splitlines()]
    [gone] = [e for e in events if e["event"] == "disconnect"]
    assert gone["path"] == "/v1/translate" and "status" not in gone
    assert not [e for e in events if e["event"] == "error" or e.get("status") == 500]


def test_the_control_a_client_that_waits_gets_every_sentence_decoded(translator):
    with Background(translator, ServeSettings(batch_size=4, log=io.StringIO())) as url:
        sock = raw_post(url, json.dumps({"q": SENTENCES, "coverage": False}).encode())
        data, _ = read_all(sock, 120)
        status, _, body = answer(data.replace(b"Transfer-Encoding", b"X"))
        counts = batching(url)
    assert status == 200 and len(body["translations"]) == len(SENTENCES)
    assert counts["sentences"] == len(SENTENCES) and counts["disconnects"] == counts["sentences_skipped"] == 0


def test_a_hang_up_during_the_upload_is_a_disconnect_too(translator):
    log = io.StringIO()
    with Background(translator, ServeSettings(log=log)) as url:
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port))) as sock:
            sock.sendall(b'POST /translate HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"q": ')
            time.sleep(0.2)
        wait_for(lambda: "disconnect" in log.getvalue())
    events = [json.loads(line) for line in log.getvalue().splitlines()]
    assert not [e for e in events if e["event"] == "error" or e.get("status") == 500]


# ----------------------------------------------------------------------------- slow clients
def test_a_body_sent_a_byte_at_a_time_gets_408_within_the_read_timeout_and_is_closed(translator):
    with Background(translator, ServeSettings(read_timeout_s=1.0, log=io.StringIO())) as url:
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port))) as sock:
            sock.sendall(b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n")
            sock.sendall(b"Content-Length: 200\r\n\r\n")
            start, data = time.monotonic(), b""
            sock.settimeout(5)
            for byte in b'{"q": "Je suis ' * 10:
                try:
                    sock.sendall(bytes([byte]))
                except OSError:  # the server closed the connection
                    break
                time.sleep(0.25)
                if time.monotonic() - start > 4:
                    break
            data, _ = read_all(sock, 5)
            elapsed = time.monotonic() - start
        status, headers, body = answer(data)
        assert status == 408 and headers["connection"] == "close" and headers["content-type"] == "application/json"
        assert body == {"error": "the request body did not arrive within the server's read timeout of 1 s"}
        assert elapsed < 3  # 1 s, and a byte's wait (0.25 s) to notice the connection is closed
        # The control: the same body sent at once within the timeout is read.
        fast = raw_post(url, b'{"q": "Je suis ' + b"x" * 10 + b'"}')
        assert answer(read_all_until_answer(fast))[0] == 200


def read_all_until_answer(sock: socket.socket) -> bytes:
    sock.settimeout(60)
    data = b""
    while b"\r\n\r\n" not in data or len(data.partition(b"\r\n\r\n")[2]) < _length(data):
        data += sock.recv(65536)
    sock.close()
    return data


def _length(data: bytes) -> int:
    for line in data.partition(b"\r\n\r\n")[0].split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return int(line.split(b":")[1])
    return 1 << 30


def test_a_head_sent_a_byte_at_a_time_gets_408_within_the_read_timeout(translator):
    log = io.StringIO()
    with Background(translator, ServeSettings(read_timeout_s=1.0, log=log)) as url:
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port))) as sock:
            start = time.monotonic()
            sock.sendall(b"POST /translate HTTP/1.1\r\nHo")
            data, _ = read_all(sock, 5)
            elapsed = time.monotonic() - start
        status, headers, body = answer(data)
        assert status == 408 and headers["content-type"] == "application/json" and "request head" in body["error"]
        assert 0.9 < elapsed < 3
        assert [json.loads(line)["event"] for line in log.getvalue().splitlines()].count("timeout") == 1
        with Client(url) as c:  # a kept-alive connection's next request gets the same deadline
            assert c.get("/health").status == 200
            time.sleep(1.3)
            c.close()


def test_a_request_the_server_cannot_parse_gets_400_in_json(translator):
    with Background(translator, ServeSettings(log=io.StringIO())) as url:
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port))) as sock:
            sock.sendall(b"NOT HTTP AT ALL\r\n\r\n")
            status, headers, body = answer(read_all(sock, 5)[0])
    assert status == 400 and headers["content-type"] == "application/json" and "HTTP" in body["error"]


# ----------------------------------------------------------------------------- SIGTERM
@pytest.mark.slow  # a subprocess that imports torch and loads a model
def test_sigterm_answers_what_is_decoding_refuses_uploads_at_once_and_exits_0(translator):
    process = subprocess.Popen(
        [sys.executable, "-m", "tt_cli.main", "serve", "--port", "0", "--batch-size", "4", "--read-timeout", "30"],
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        event = json.loads(process.stderr.readline())
        url = event["url"]
        replies = {}

        def ask(i: int) -> None:
            with Client(url) as c:
                replies[i] = c.post("/translate", {"q": "\n".join(SENTENCES[:12]), "source": "fr", "target": "en"})

        workers = [threading.Thread(target=ask, args=(i,)) for i in range(3)]
        for w in workers:
            w.start()
        host, port = url.removeprefix("http://").split(":")
        upload = socket.create_connection((host, int(port)))
        upload.sendall(b'POST /translate HTTP/1.1\r\nHost: x\r\nContent-Length: 500\r\n\r\n{"q": ')
        wait_for(lambda: batching(url)["sentences"] >= 4)
        start = time.monotonic()
        process.send_signal(signal.SIGTERM)
        status, headers, body = answer(read_all(upload, 30)[0])
        refused_after = time.monotonic() - start
        for w in workers:
            w.join(timeout=120)
        code = process.wait(timeout=120)
        assert status == 503 and "shutting down" in body["error"] and refused_after < 5  # not the 30 s timeout
        assert [replies[i].status for i in range(3)] == [200] * 3
        assert all(r.json()["translatedText"].count("\n") == 11 for r in replies.values())
        assert code == 0
        log = [json.loads(line) for line in process.stderr.read().splitlines()]
        assert log[-1]["event"] == "stopped" and not [e for e in log if e["event"] == "error"]
    finally:
        if process.poll() is None:
            process.kill()
