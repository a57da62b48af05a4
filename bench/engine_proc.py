"""The engine side of bench_ct2.py's processes, on the standard library only: a job loop over stdin/stdout
and the process's peak resident memory. Each worker (ct2_worker.py, tt_worker.py) is started as a script of
its own, so it loads its engine's libraries and nothing else (no `multiprocessing` spawn, which re-imports the
parent's main module and with it torch).

Protocol, one JSON object per line: the worker writes {"ready": true, "threads": N} once its engine is loaded
(N: the threads it decodes on, as the worker set them); then for each
job {"method": "greedy" | "beam", "batch": [[piece ids]], "limit": the length limit} it answers
{"seconds": time inside the engine, "peak": peak RSS above the size before the call (bytes), "out": [[ids]]}.
End of input ends it.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Callable

Run = Callable[[str, list[list[int]], int], list[list[int]]]


class PeakRSS:
    """This process's peak resident memory during a call, above its size before it: the kernel's high-water
    mark (VmHWM), reset before each call (/proc/self/clear_refs, Linux ≥ 4.0). No sampling thread."""

    @staticmethod
    def _status(field: str) -> int:
        with open("/proc/self/status") as f:
            return int(re.search(rf"^{field}:\s+(\d+) kB", f.read(), re.M).group(1)) * 1024

    def reset(self) -> int:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        self._base = self._status("VmRSS")
        return self._base

    def peak(self) -> int:
        return self._status("VmHWM") - self._base


def refuse_if_loaded(worker: str, forbidden: str) -> None:
    """Exit before timing anything when the other engine's library is in this process."""
    if forbidden in sys.modules:
        raise SystemExit(f"{worker}: {forbidden} is loaded in this process: its threads would run beside the engine")


def serve(run: Run, threads: int, **about) -> None:
    """The job loop: a warm-up call per method (untimed), then each job timed inside the engine. `about`: what else
    the engine says of itself in its first line (tt: which decoder step one sentence takes)."""
    out = sys.stdout
    sys.stdout = sys.stderr  # nothing else may write on the protocol's stream
    out.write(json.dumps({"ready": True, "threads": threads, **about}) + "\n")
    out.flush()
    warm, rss = set(), PeakRSS()
    for line in sys.stdin:
        job = json.loads(line)
        method, batch, limit = job["method"], job["batch"], job["limit"]
        if method not in warm:
            run(method, batch[:1], limit)
            warm.add(method)
        rss.reset()
        start = time.perf_counter()
        result = run(method, batch, limit)
        seconds = time.perf_counter() - start
        out.write(json.dumps({"seconds": seconds, "peak": rss.peak(), "out": result}) + "\n")
        out.flush()
