"""A batch's rows dealt into parts searched at once, each part on a thread of its own with one core, where other
processes crowd the cores.

Every product of a step takes torch's threads together: at two threads and 64 rows each product is split in two and
the threads meet after it, ~100 times a step. On a quiet machine that costs little. Beside a busy process it costs
most of the time: a thread the kernel has set aside arrives late to every meeting, and the other waits (greedy and
beam 4 at batch 64 ran at a third to a half of their quiet rate beside one spinning process). Two searches of 32
rows, one a core, meet nowhere: they share nothing but the model's weights, which they only read. So where others
kept the cores busy since the last look (`crowded`), greedy search and beam search deal a batch's rows into
`torch.get_num_threads()` parts (every n-th row to part n, so the parts have alike lengths after a sort by length),
search them at once and put the rows back in order: 1.6× (fp32) to 2.3× (int8) the whole batch's rate beside a busy
process (bench/bench_parts.py; bench/README.md, *A batch in parts*). On a quiet machine the parts ran from 0.82× to
1.15× the whole batch, within the machine's noise, so a quiet machine's batches stay whole. The hypotheses are the
same as one search's where the products give each row the same sums whatever the rows beside it (fp32); int8
quantizes a part's rows together, as it does a batch's, so a few outputs move as they do with another batch size.
Sampling is never split: its draws come from one generator.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import torch

MIN_PART_ROWS = 16  # a part below this many rows is too small to pay for a thread
# Cores others must have kept busy beyond those torch's threads leave free before a batch is split (0.5 of a core
# on average since the last look); a negative value splits always (tests and benches).
CROWDED_CORES = 0.5
LOOK_S = 0.2  # the shortest window worth a verdict: the kernel counts CPU time in hundredths of a second
T = TypeVar("T")

_POOLS: dict[tuple[int, int], ThreadPoolExecutor] = {}
_POOLS_LOCK = threading.Lock()
_IN_PART = threading.local()  # a part's thread: a search inside it is not split again


def parts_for(rows: int) -> int:
    """How many parts a batch of `rows` rows is searched in here: one per thread torch has, none below
    MIN_PART_ROWS rows; 1 (no split) inside a part."""
    if getattr(_IN_PART, "on", False):
        return 1
    return max(1, min(torch.get_num_threads(), rows // MIN_PART_ROWS))


def in_parts(search: Callable[[torch.Tensor], list[T]], src: torch.Tensor, pad_id: int) -> list[T]:
    """search(src) (one result per row of src (B, S), padded with pad_id), computed in `parts_for(B)` parts at
    once."""
    parts = parts_for(src.size(0)) if src.device.type == "cpu" else 1
    if parts < 2 or not crowded(torch.get_num_threads()):
        return search(src)
    pool = _pool(parts, max(1, torch.get_num_threads() // parts))
    inference = torch.is_inference_mode_enabled()

    def run(part: torch.Tensor) -> list[T]:
        with torch.inference_mode(inference):
            return search(part)

    futures = [pool.submit(run, _trimmed(src[k::parts], pad_id)) for k in range(parts)]
    results, failure = [], None
    for future in futures:  # every part ends before this returns, even when one fails
        try:
            results.append(future.result())
        except BaseException as exc:  # noqa: BLE001 (re-raised below, the first one)
            failure = failure or exc
    if failure is not None:
        raise failure
    out: list = [None] * src.size(0)
    for k, found in enumerate(results):
        out[k::parts] = found
    return out


class _Others:
    """How many cores other processes kept busy, on average, over the window since the verdict before: the whole
    machine's busy time (/proc/stat) less this process's own CPU time. 0 at the first look, and where /proc/stat
    cannot be read."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.last: tuple[float, float, float] | None = None
        self.cores = 0.0

    def look(self) -> float:
        busy = _machine_busy_s()
        if busy is None:
            return 0.0
        now = (time.monotonic(), busy, time.process_time())
        with self.lock:
            if self.last is None:
                self.last = now
            elif now[0] - self.last[0] >= LOOK_S:
                others = (now[1] - self.last[1]) - (now[2] - self.last[2])
                self.cores, self.last = max(0.0, others / (now[0] - self.last[0])), now
            return self.cores


def _machine_busy_s() -> float | None:
    """Seconds of CPU time every core of the machine has spent on anything but waiting, since boot."""
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            fields = [int(f) for f in stat.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle and waiting for I/O
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


_OTHERS = _Others()  # the process's one look at the machine: each verdict covers the window since the last


def crowded(threads: int) -> bool:
    """Whether other processes want the cores this search's `threads` threads run on: they kept more than
    CROWDED_CORES busy (on average, since the last look: `_Others`) beyond the cores torch's threads leave free."""
    free = len(os.sched_getaffinity(0)) - threads if hasattr(os, "sched_getaffinity") else 0
    return _OTHERS.look() > max(0, free) + CROWDED_CORES


def _trimmed(src: torch.Tensor, pad_id: int) -> torch.Tensor:
    """A part's rows without the padding columns none of them needs (its longest row sets its width)."""
    used = (src != pad_id).any(0).nonzero()
    return src[:, : int(used.max()) + 1].contiguous() if used.numel() else src.contiguous()


def _pool(parts: int, threads_each: int) -> ThreadPoolExecutor:
    """`parts` threads with `threads_each` of torch's threads each, made once per process and kept."""
    with _POOLS_LOCK:
        pool = _POOLS.get((parts, threads_each))
        if pool is None:
            pool = ThreadPoolExecutor(max_workers=parts, thread_name_prefix="tt-part")
            ready = threading.Barrier(parts)  # holds each start until all have begun: one start per thread
            count = torch.get_num_threads()

            def start() -> None:
                # torch sets a new thread's count from the process's on its first parallel operation (asked
                # here, so it happens now) and torch.set_num_threads then sets it for this thread...
                torch.get_num_threads()
                torch.set_num_threads(threads_each)
                _IN_PART.on = True
                ready.wait()

            for future in [pool.submit(start) for _ in range(parts)]:
                future.result()
            torch.set_num_threads(count)  # ...and the process's count, which threads made later start from
            _POOLS[(parts, threads_each)] = pool
        return pool
