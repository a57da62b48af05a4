"""Dynamic batching: requests that arrive together are decoded together, by one worker thread.

A decode of 16 sentences costs far less than 16 decodes of one (the matrices get wider, the number
of steps does not grow), so the worker gathers what is waiting before each decode call:

    request ──submit──▶ queue ──worker: the oldest job waits up to batch_wait for company (or a full
    batch), then up to batch_size sentences of the waiting jobs with the same decoding options, those
    with the fewest sentences left first──▶ Translator.translate ──a job whose sentences are all
    decoded: its `finish` (still in the worker: it may use the model)──▶ the job's future

The future is a concurrent.futures.Future, tied to no event loop: the text pipeline's thread blocks on it
(`wait`), a handler in the event loop awaits it (`answer`), and the worker, a timeout or a hang-up settle
it from whatever thread they run in.

The model is called from this one thread only: one decode at a time, never two threads inside it.
A job that waited its batch_wait while the worker was busy goes at once, so under load the batches
fill up by themselves. A long request is decoded batch_size sentences at a time, and a short one that
arrives meanwhile goes into the next decode call instead of waiting for the long one to end. The queue
is bounded in sentences: `submit` refuses (QueueFull) what would not fit, and the server answers 503
instead of letting latency grow without limit.

No work for nobody: a job whose client has gone (presence.Presence) or that timed out leaves the queue
at once, and a decode call that holds only such jobs stops at its next step (core.errors.Stopped).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass, field
from typing import Any

from core.decode.method import TranslateOptions
from core.errors import Stopped
from tt_cli.serve.presence import Always, ClientGone
from tt_cli.serve.settings import ServeSettings


class QueueFull(Exception):
    """The queue holds as many sentences as it may (or the server is shutting down)."""


@dataclass(eq=False)
class Job:
    sentences: list[str]
    options: TranslateOptions  # the request's decoding (the server's, with the request's fields on top)
    trace: bool  # attention wanted (the --json record's attention or alignment)
    finish: Callable[[list, int], Any]  # (the job's Results, decode call number) → the answer; runs in the worker
    future: Future = field(default_factory=Future)  # settled with the answer, or the error the request answers with
    presence: Any = field(default_factory=Always)  # .gone: the client hung up
    own_batch: bool = False  # the request named its batch size: decoded alone, as tt translate --batch-size decodes
    arrived: float = field(default_factory=time.monotonic)
    taken: int = 0  # sentences handed to decode calls so far
    results: list = field(default_factory=list)  # their Results, in order
    in_flight: bool = False  # some of its sentences are being decoded
    abandoned: str | None = None  # "timeout" or "gone": nobody waits for the answer

    @property
    def key(self) -> tuple:
        """Jobs with equal keys may share a decode call. A seeded sample, or a job that names its own
        batch size, stays alone: its output must not depend on who else was decoded with it."""
        key = (self.trace, self.options)
        return key + (id(self),) if self.alone else key

    @property
    def alone(self) -> bool:
        return self.options.seed is not None or self.own_batch

    @property
    def gone(self) -> bool:
        return self.abandoned is not None or self.presence.gone

    @property
    def left(self) -> int:
        return len(self.sentences) - self.taken


@dataclass
class Stats:
    decode_calls: int = 0  # calls to Translator.translate
    requests: int = 0  # jobs answered by those calls
    sentences: int = 0  # sentences decoded
    largest_batch: int = 0  # most sentences in one call
    rejected: int = 0  # refused: queue full
    timed_out: int = 0
    disconnects: int = 0  # jobs whose client hung up before their answer was ready
    sentences_skipped: int = 0  # sentences of those (and of timed-out jobs) never decoded
    decodes_stopped: int = 0  # decode calls stopped part-way: every job in them had gone


class Batcher:
    def __init__(self, translator, settings: ServeSettings) -> None:
        self.translator = translator
        self.settings = settings
        self.stats = Stats()
        self._queue: list[Job] = []
        self._pending = 0  # sentences accepted and not yet decoded or dropped
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

    def submit(
        self,
        sentences: list[str],
        options: TranslateOptions,
        trace: bool,
        finish: Callable[[list, int], Any],
        presence=None,
        own_batch: bool = False,
    ) -> Job:
        """The job of these sentences, queued: its future settles with the answer `finish` makes of their
        Results, or with ClientGone when `presence` says the client left. Raises QueueFull at once when they
        do not fit. Any thread may call it."""
        job = Job(list(sentences), options, trace, finish, presence=presence or Always(), own_batch=own_batch)
        with self._cond:
            if self._closing or self._pending + len(job.sentences) > self.settings.queue_size:
                self.stats.rejected += 1
                raise QueueFull
            self._pending += len(job.sentences)
            self._queue.append(job)
            self._cond.notify_all()
        job.presence.on_gone(lambda: self._abandon(job, "gone"))
        return job

    def wait(self, job: Job) -> Any:
        """The job's answer, blocking this thread (one of the text pipeline's); TimeoutError after
        settings.timeout_s."""
        try:
            return job.future.result(self.settings.timeout_s)
        except TimeoutError:
            self._abandon(job, "timeout")
            raise

    async def answer(self, job: Job) -> Any:
        """The job's answer, awaited in the event loop; TimeoutError after settings.timeout_s."""
        try:
            return await asyncio.wait_for(asyncio.wrap_future(job.future), self.settings.timeout_s)
        except TimeoutError:
            self._abandon(job, "timeout")
            raise

    def _abandon(self, job: Job, why: str) -> None:
        """Nobody waits for `job` any more: out of the queue now, unless the worker holds some of it (then the
        worker drops it when its decode call ends, or stops that call if it holds nothing else)."""
        with self._cond:
            if job.abandoned is not None:
                return
            job.abandoned = why
            self._cond.notify_all()  # a worker waiting for this job's company need wait no more
            if job.in_flight or job not in self._queue:
                return
            self._drop(job)
        _settle(job.future, None, ClientGone())

    def _drop(self, job: Job) -> None:
        """Take a job nobody waits for out of the queue and count it (the lock held)."""
        self._queue.remove(job)
        self._pending -= job.left
        self.stats.sentences_skipped += job.left
        if job.abandoned == "timeout":
            self.stats.timed_out += 1
        else:
            self.stats.disconnects += 1

    # ------------------------------------------------------------------------------ the worker thread
    def _work(self) -> None:
        while True:
            pieces = self._next_batch()
            if pieces is None:
                return
            if pieces:
                self._decode(pieces)

    def _next_batch(self) -> list[tuple[Job, int, int]] | None:
        """The next decode call: (job, first sentence, end) pieces; [] when all that waited had gone;
        None: closed and drained."""
        size, wait = self.settings.batch_size, self.settings.batch_wait_s
        with self._cond:
            while not self._queue and not self._closing:
                self._cond.wait()
            if not self._queue:
                return None
            first = self._queue[0]
            while not self._closing and not first.alone and not first.gone and self._waiting(first.key) < size:
                left = first.arrived + wait - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
            gone = [job for job in self._queue if job.gone]
            for job in gone:
                self._drop(job)
            same = sorted(
                (job for job in self._queue if job.key == first.key),
                key=lambda job: job.left,  # the fewest left first: a short request is not held behind a long one
            )
            pieces, room = [], len(first.sentences) if first.alone else size
            for job in same:
                if room <= 0:
                    break
                n = min(job.left, room)
                pieces.append((job, job.taken, job.taken + n))
                job.taken += n
                job.in_flight = True
                room -= n
        for job in gone:
            _settle(job.future, None, ClientGone())
        return pieces

    def _waiting(self, key: tuple) -> int:
        return sum(job.left for job in self._queue if job.key == key and not job.gone)

    def _decode(self, pieces: list[tuple[Job, int, int]]) -> None:
        first = pieces[0][0]
        jobs = [job for job, _, _ in pieces]
        sentences = [s for job, a, b in pieces for s in job.sentences[a:b]]
        with self._cond:
            self.stats.decode_calls += 1
            call = self.stats.decode_calls
        error: BaseException | None = None
        try:
            results = self.translator.translate(
                sentences, trace=first.trace, stop=lambda: all(job.gone for job in jobs), options=first.options
            )
        except Stopped:
            results = []
        except Exception as exc:  # noqa: BLE001 - handed to each request, which answers with it
            results, error = [], exc
        stopped = len(results) < len(sentences) and error is None
        settled, start = [], 0
        with self._cond:
            self.stats.decodes_stopped += stopped
            self.stats.sentences += len(results)
            self.stats.largest_batch = max(self.stats.largest_batch, len(sentences))
            for job, a, b in pieces:
                job.in_flight = False
                self._pending -= b - a
                job.results += results[start : start + b - a]
                start += b - a
                if error is not None or job.gone or job.taken == len(job.sentences):
                    self._queue.remove(job)
                if job.gone:
                    job.abandoned = job.abandoned or "gone"
                    self.stats.sentences_skipped += (b - a) * stopped + job.left
                    self._pending -= job.left
                    self.stats.timed_out += job.abandoned == "timeout"
                    self.stats.disconnects += job.abandoned == "gone"
                    settled.append((job, None, ClientGone()))
                elif error is not None:
                    self._pending -= job.left
                    settled.append((job, None, error))
                elif job.taken == len(job.sentences):
                    self.stats.requests += 1
                    settled.append((job, None, None))
        answered = []
        for job, _, failed in settled:
            if failed is None:
                try:  # outside the lock: finish may run the model again (alignment)
                    answered.append((job, job.finish(job.results, call), None))
                except Exception as exc:  # noqa: BLE001 - as above: the request answers with it
                    answered.append((job, None, exc))
            else:
                answered.append((job, None, failed))
        for job, answer, failed in answered:
            _settle(job.future, answer, failed)


def _settle(future: Future, answer: Any, error: BaseException | None) -> None:
    try:
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(answer)
    except InvalidStateError:  # settled already: the request timed out, or its handler stopped waiting
        pass
