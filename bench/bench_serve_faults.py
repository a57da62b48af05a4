"""What clients that hang up cost the others: the latency of a one-sentence request to a real `tt serve`
process on loopback, idle, while clients that sent 1,000-sentence requests have hung up, and (the control)
while those clients still wait for their answers.

    nice -n 5 python bench/bench_serve_faults.py [--big 3] [--sentences 1000] [--probes 15] [--model DIR]

The server runs with --max-sentences and --queue-size raised so that the big requests fit. A big request
is docs/everyday/everyday.fr's lines, repeated to --sentences lines, POSTed to /v1/translate; "hung up"
closes its connection 0.5 s after sending. Then --probes one-sentence requests go one after another
(LibreTranslate's /translate, as an editor sends them), each timed from send to full reply. The table
gives their median and 90th percentile, the median against the idle one, and what the server decoded and
skipped meanwhile (/health). Each scenario starts on an idle server (it waits until nothing is pending).
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tt_cli.serve.client import Client  # noqa: E402

PROBE = {"q": "Il fait froid ce matin.", "source": "fr", "target": "en"}


def start(args) -> tuple[subprocess.Popen, str]:
    n = args.big * args.sentences
    command = [sys.executable, "-m", "tt_cli.main", "serve", "--port", "0", "--max-sentences", str(args.sentences)]
    command += ["--queue-size", str(n + 64), "--max-chars", str(60 * n), "--timeout", "600"]
    command += ["--model", args.model] if args.model else []
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    event = json.loads(process.stderr.readline())
    assert event["event"] == "listening", event
    return process, event["url"]


def health(url: str) -> dict:
    with Client(url) as c:
        return c.get("/health").json()["batching"]


def idle(url: str) -> None:
    while health(url)["pending_sentences"]:
        time.sleep(0.05)


def big_request(url: str, lines: list[str]) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    body = json.dumps({"q": lines, "coverage": False}).encode()
    sock = socket.create_connection((host, int(port)))
    head = f"POST /v1/translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    sock.sendall(head.encode() + body)
    return sock


def probe(url: str, n: int) -> list[float]:
    times = []
    with Client(url) as c:
        for _ in range(n):
            start = time.perf_counter()
            reply = c.post("/translate", PROBE)
            times.append(time.perf_counter() - start)
            assert reply.status == 200, reply.body
    return times


def scenario(url: str, lines: list[str], args, hang_up: bool | None) -> dict:
    """hang_up None: no big requests; True: they hang up after 0.5 s; False: they wait (closed at the end)."""
    idle(url)
    before = health(url)
    socks = [] if hang_up is None else [big_request(url, lines) for _ in range(args.big)]
    if socks:
        time.sleep(0.5)
        if hang_up:
            for s in socks:
                s.close()
    times = probe(url, args.probes)
    after = health(url)
    for s in socks:
        s.close()
    return {
        "times": times,
        "decoded": after["sentences"] - before["sentences"],
        "skipped": after["sentences_skipped"] - before["sentences_skipped"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--big", type=int, default=3, help="clients sending a big request")
    parser.add_argument("--sentences", type=int, default=1000, help="sentences in each big request")
    parser.add_argument("--probes", type=int, default=15, help="one-sentence requests timed per scenario")
    parser.add_argument("--model", default=None)
    args = parser.parse_args()
    everyday = (ROOT / "docs" / "everyday" / "everyday.fr").read_text(encoding="utf-8").split("\n")
    lines = [line for line in everyday if line.strip()]
    lines = (lines * (args.sentences // len(lines) + 1))[: args.sentences]
    process, url = start(args)
    try:
        probe(url, 3)  # warm-up
        rows = {
            "idle": scenario(url, lines, args, None),
            f"{args.big} × {args.sentences} sentences, hung up after 0.5 s": scenario(url, lines, args, True),
            f"{args.big} × {args.sentences} sentences, still waiting (control)": scenario(url, lines, args, False),
        }
    finally:
        process.terminate()
        process.wait(timeout=120)
    base = statistics.median(rows["idle"]["times"])
    print(f"{args.probes} one-sentence requests per scenario, one after another; server: tt serve (defaults)\n")
    print("| while | median | p90 | median ÷ idle | decoded meanwhile | skipped |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, row in rows.items():
        times = sorted(row["times"])
        p90 = times[min(len(times) - 1, int(0.9 * len(times)))]
        median = statistics.median(times)
        print(
            f"| {name} | {median * 1000:.0f} ms | {p90 * 1000:.0f} ms | {median / base:.1f}× "
            f"| {row['decoded']} | {row['skipped']} |"
        )


if __name__ == "__main__":
    main()
