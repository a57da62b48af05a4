"""`tt serve` under load on loopback: throughput and latency with 1, 4, 16 and 64 concurrent clients,
batching on against the same requests decoded one at a time (batching off).

Two servers run side by side, each a real `tt serve` process with the same model and decoding (beam
4, the default): "batched", with tt serve's defaults (--batch-size 32 --batch-wait 5), and "one at a
time" (--batch-size 1 --batch-wait 0: every request is its own decode call, so however many clients
wait, the model decodes one request after another). For each client count the two are measured back
to back, one-at-a-time first. A client is a thread of this process with its own keep-alive
connection, POSTing one sentence per request to the LibreTranslate endpoint (/translate) as an
editor or a browser extension does; each count sends the same --requests requests (cycling through
the sentences below), and stops early after --max-seconds. Latency is per request, from send to
full reply.

    nice -n 5 python bench/bench_serve.py [--requests 192] [--max-seconds 60] [--model DIR] [--int8]

--int8 adds a third server, batched with `--quantize int8` (the model's int8 copy): its outputs may differ
from fp32's (counted apart).

Sentences: the shipped model card's samples and hard cases, and docs/ood/ood.fr (53 lines, 3 to 30
words). The outputs of the two servers are compared: batching must not change a translation.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tt_cli.serve.client import Client  # noqa: E402

CLIENTS = (1, 4, 16, 64)
MODES = {
    "one at a time": ["--batch-size", "1", "--batch-wait", "0"],
    "batched": [],  # tt serve's defaults: --batch-size 32 --batch-wait 5
}


def cpu() -> str:
    """The CPU's model name (lscpu), its core count, and whether it has AVX-512."""
    try:
        info = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        name = next(line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("Model name"))
    except (OSError, subprocess.CalledProcessError, StopIteration):
        name = "unknown CPU"
    flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    avx512 = "AVX-512" if " avx512f" in flags else "no AVX-512" + (" (AVX2)" if " avx2" in flags else "")
    return f"{name}, {os.cpu_count()} cores, {avx512}"


def sentences() -> list[str]:
    card = json.loads((ROOT / "weights" / "card.json").read_text(encoding="utf-8"))
    lines = [s[0] for s in card.get("samples", [])] + [h[0] for h in card.get("limits", {}).get("hard", [])]
    lines += (ROOT / "docs" / "ood" / "ood.fr").read_text(encoding="utf-8").splitlines()
    return [s for s in lines if s.strip()]


def start(model: str | None, args: list[str]) -> tuple[subprocess.Popen, str]:
    command = [sys.executable, "-m", "tt_cli.main", "serve", "--port", "0", "--max-sentences", "64", *args]
    command += ["--model", model] if model else []
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    event = json.loads(process.stderr.readline() or '{"event": "exited"}')
    if event["event"] != "listening":
        raise SystemExit(f"tt serve did not start: {event}")
    threading.Thread(target=lambda: process.stderr.read(), daemon=True).start()  # drain the access log
    return process, event["url"]


def load(url: str, lines: list[str], clients: int, requests: int, max_seconds: float) -> dict:
    """`requests` requests from `clients` threads; throughput, latency percentiles and the outputs."""
    latencies: list[float] = []
    outputs: dict[int, str] = {}
    failures: list[str] = []
    counter = iter(range(requests))
    lock = threading.Lock()
    deadline = time.monotonic() + max_seconds

    def client() -> None:
        with Client(url, timeout=120) as c:
            while time.monotonic() < deadline:
                with lock:
                    i = next(counter, None)
                if i is None:
                    return
                body = {"q": lines[i % len(lines)], "source": "fr", "target": "en"}
                sent = time.perf_counter()
                reply = c.post("/translate", body)
                took = time.perf_counter() - sent
                with lock:
                    if reply.status == 200:
                        latencies.append(took)
                        outputs[i] = reply.json()["translatedText"]
                    else:
                        failures.append(f"{reply.status} {reply.body[:80]!r}")

    threads = [threading.Thread(target=client) for _ in range(clients)]
    begin = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - begin
    latencies.sort()
    return {
        "done": len(latencies),
        "failed": len(failures),
        "wall": wall,
        "rate": len(latencies) / wall,
        "p50": 1000 * statistics.median(latencies),
        "p99": 1000 * latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))],
        "outputs": outputs,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=192, help="requests per client count and server")
    parser.add_argument("--max-seconds", type=float, default=60.0, help="stop sending after this long (each cell)")
    parser.add_argument("--model", help="model directory (default: the shipped one)")
    parser.add_argument("--int8", action="store_true", help="also a batched server with --quantize int8")
    args = parser.parse_args()
    lines = sentences()
    modes = MODES | ({"batched, int8": ["--quantize", "int8"]} if args.int8 else {})
    servers = {mode: start(args.model, extra) for mode, extra in modes.items()}
    try:
        for _, url in servers.values():  # warm-up: lazy imports, allocator, first decode
            load(url, lines, 4, 16, 30)
        print(f"CPU: {cpu()}; torch threads: torch's default; load average {os.getloadavg()[0]:.2f} at start")
        print(f"{args.requests} requests per row (one sentence each, beam 4), at most {args.max_seconds:g} s per row\n")
        print("| clients | server | requests | req/s | p50 ms | p99 ms | vs one at a time, same clients |")
        print("|---:|---|---:|---:|---:|---:|---:|")
        rates, differ, differ_int8 = {}, 0, 0
        for clients in CLIENTS:
            results = {
                mode: load(url, lines, clients, args.requests, args.max_seconds) for mode, (_, url) in servers.items()
            }
            base = results["one at a time"]
            for mode, r in results.items():
                rates[mode, clients] = r["rate"]
                ratio = "" if mode == "one at a time" else f"{r['rate'] / base['rate']:.2f}x"
                failed = f" ({r['failed']} failed)" if r["failed"] else ""
                print(
                    f"| {clients} | {mode} | {r['done']}{failed} | {r['rate']:.1f} | {r['p50']:.0f} | {r['p99']:.0f} | {ratio} |"
                )
            shared = base["outputs"].keys() & results["batched"]["outputs"].keys()
            differ += sum(base["outputs"][i] != results["batched"]["outputs"][i] for i in shared)
            if "batched, int8" in results:
                int8 = results["batched, int8"]["outputs"]
                differ_int8 += sum(base["outputs"][i] != int8[i] for i in base["outputs"].keys() & int8.keys())
        single = rates["one at a time", 1]
        print(
            f"\nbatched at 16 clients: {rates['batched', 16] / single:.2f}x the one-at-a-time rate of a single client "
            f"({rates['batched', 16]:.1f} vs {single:.1f} req/s); at 64: {rates['batched', 64] / single:.2f}x"
        )
        print(f"outputs that differ between the two fp32 servers: {differ}")
        if args.int8:
            print(
                f"int8 batched at 16 clients: {rates['batched, int8', 16] / rates['batched', 16]:.2f}x fp32 batched; "
                f"outputs that differ from fp32's: {differ_int8}"
            )
        print(f"load average {os.getloadavg()[0]:.2f} at the end")
    finally:
        for process, _ in servers.values():
            process.terminate()
            process.wait(timeout=60)


if __name__ == "__main__":
    main()
