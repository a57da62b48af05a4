"""Dynamic batching: requests that arrive together are decoded together, by one worker thread.

A decode of 16 sentences costs far less than 16 decodes of one (the matrices get wider, the number
of steps does not grow), so the worker gathers what is waiting before each decode call:

    request ──submit──▶ queue ──worker: the first job waits up to batch_wait for company (or a full
    batch), then every waiting job with the same decoding options joins it──▶ Translator.translate
    ──each job's `finish` (still in the worker: it may use the model)──▶ the request's future

The model is called from this one thread only: one decode at a time, never two threads inside it.
A job that waited its batch_wait while the worker was busy goes at once, so under load the batches
fill up by themselves. The queue is bounded in sentences: `submit` refuses (QueueFull) what would not
fit, and the server answers 503 instead of letting latency grow without limit.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tt_cli.serve.settings import ServeSettings


class QueueFull(Exception):
    """The queue holds as many sentences as it may (or the server is shutting down)."""


@dataclass(eq=False)
class Job:
    sentences: list[str]
    decoding: dict  # keywords for Translator.translate (the request's decoding options)
    trace: bool  # attention wanted (the --json record's attention or alignment)
    finish: Callable[[list, int], Any]  # (the job's Results, decode call number) → the answer; runs in the worker
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future
    arrived: float = field(default_factory=time.monotonic)
    cancelled: bool = False  # the request gave up (timeout): skip it if it has not started

    @property
    def key(self) -> tuple:
        """Jobs with equal keys may share a decode call. A seeded sample, or a job that names its own
        batch size, stays alone: its output must not depend on who else was decoded with it."""
        key = (self.trace, tuple(sorted(self.decoding.items())))
        return key + (id(self),) if self.alone else key

    @property
    def alone(self) -> bool:
        return self.decoding.get("seed") is not None or "batch_size" in self.decoding


@dataclass
class Stats:
    decode_calls: int = 0  # calls to Translator.translate
    requests: int = 0  # jobs answered by those calls
    sentences: int = 0
    largest_batch: int = 0  # most sentences in one call
    rejected: int = 0  # refused: queue full
    timed_out: int = 0


class Batcher:
    def __init__(self, translator, settings: ServeSettings) -> None:
        self.translator = translator
        self.settings = settings
        self.stats = Stats()
        self._queue: deque[Job] = deque()
        self._pending = 0  # sentences accepted and not yet answered (queued or being decoded)
        self._closing = False
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._work, name="tt-serve-decode", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        """Answer everything queued, then stop the worker."""
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        if self._thread.is_alive():
            self._thread.join()

    def snapshot(self) -> dict:
        with self._cond:
            return {
                **self.stats.__dict__,
                "pending_sentences": self._pending,
                "queue_size": self.settings.queue_size,
                "batch_size": self.settings.batch_size,
                "batch_wait_ms": self.settings.batch_wait_s * 1000,
            }

    async def submit(self, sentences: list[str], decoding: dict, trace: bool, finish: Callable[[list, int], Any]):
        """The answer `finish` makes of these sentences' Results. Raises QueueFull at once when they do not
        fit, TimeoutError after settings.timeout_s."""
        loop = asyncio.get_running_loop()
        job = Job(list(sentences), decoding, trace, finish, loop, loop.create_future())
        with self._cond:
            if self._closing or self._pending + len(job.sentences) > self.settings.queue_size:
                self.stats.rejected += 1
                raise QueueFull
            self._pending += len(job.sentences)
            self._queue.append(job)
            self._cond.notify_all()
        try:
            return await asyncio.wait_for(job.future, self.settings.timeout_s)
        except asyncio.TimeoutError:
            with self._cond:
                job.cancelled = True
                self.stats.timed_out += 1
            raise TimeoutError from None

    # ------------------------------------------------------------------------------ the worker thread
    def _work(self) -> None:
        while True:
            batch = self._next_batch()
            if batch is None:
                return
            if batch:
                self._decode(batch)

    def _next_batch(self) -> list[Job] | None:
        """The jobs of the next decode call ([] when all that waited had given up); None: closed and drained."""
        size, wait = self.settings.batch_size, self.settings.batch_wait_s
        with self._cond:
            while not self._queue and not self._closing:
                self._cond.wait()
            if not self._queue:
                return None
            first = self._queue[0]
            while not self._closing and not first.alone and self._waiting(first.key) < size:
                left = first.arrived + wait - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
            batch, taken, rest = [], 0, deque()
            for job in self._queue:
                if job.cancelled:
                    self._pending -= len(job.sentences)
                elif job.key == first.key and (not batch or taken + len(job.sentences) <= size):
                    batch.append(job)
                    taken += len(job.sentences)
                else:
                    rest.append(job)
            self._queue = rest
            return batch

    def _waiting(self, key: tuple) -> int:
        return sum(len(j.sentences) for j in self._queue if j.key == key and not j.cancelled)

    def _decode(self, batch: list[Job]) -> None:
        first = batch[0]
        sentences = [s for job in batch for s in job.sentences]
        with self._cond:
            self.stats.decode_calls += 1
            call = self.stats.decode_calls
        try:
            results = self.translator.translate(
                sentences, trace=first.trace, **{"batch_size": self.settings.batch_size, **first.decoding}
            )
            error = None
        except Exception as exc:  # noqa: BLE001 - handed to each request, which answers with it
            results, error = [], exc
        settled, start = [], 0
        for job in batch:
            mine = results[start : start + len(job.sentences)]
            start += len(job.sentences)
            if error is not None:
                settled.append((job, None, error))
                continue
            try:
                settled.append((job, job.finish(mine, call), None))
            except Exception as exc:  # noqa: BLE001 - as above: the request answers with it
                settled.append((job, None, exc))
        with self._cond:  # counted before anyone is answered, so a client that reads /health next sees it
            self._pending -= len(sentences)
            self.stats.requests += len(batch)
            self.stats.sentences += len(sentences)
            self.stats.largest_batch = max(self.stats.largest_batch, len(sentences))
        for job, answer, failed in settled:
            try:
                job.loop.call_soon_threadsafe(_settle, job.future, answer, failed)
            except RuntimeError:  # the event loop is gone (the server stopped without waiting): nobody to tell
                pass


def _settle(future: asyncio.Future, answer: Any, error: BaseException | None) -> None:
    if future.done():  # the request timed out and stopped waiting
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(answer)
