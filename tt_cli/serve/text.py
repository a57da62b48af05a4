"""The text pipeline on the server: what `tt translate` runs around the model, for every request.

The pipeline (core/text, entered through core.api.text_chunks) is plain Python that calls its
translate_batch once or more per request — the sentences, the text inside inline elements, second
tries for a sentence that lost a placeholder. It runs in a thread of the server's pool, and each of
those calls hands the batcher a job and waits for its future, in that thread: one hop there and back.
Sentences of concurrent requests are still decoded together, and the model is still called from the
batcher's one thread.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TypeVar

from starlette.concurrency import run_in_threadpool

from core.api import for_text
from core.decode.method import TranslateOptions
from core.text.options import hypotheses_wanted

T = TypeVar("T")


async def run(
    lane, request, work: Callable[[Callable], T], options: TranslateOptions, coverage: bool, own_batch: bool = False
) -> T:
    """work(translate_batch), in a thread; translate_batch decodes through the lane's batcher with `options` (and the
    attention the coverage signal needs when `coverage`; alone, in batches of its own size, when `own_batch`)."""
    if options.n_best == 1:  # the beam's hypotheses for the pipeline to choose from, as tt translate's
        options = replace(options, n_best=hypotheses_wanted(options.method, options.beam))
    # A request that names its batch size is decoded as translate_lines decodes a list (chunks of four
    # batches), so its records are tt translate's to the last digit; any other goes in pieces the queue holds.
    settings = lane.settings
    size = min(4 * options.batch_size, settings.queue_size) if own_batch else settings.job_sentences

    def finish(results: list) -> list:
        return for_text(results, coverage)

    def translate_batch(sentences: list[str]) -> list:
        out = []
        for start in range(0, len(sentences), size):
            out += lane.decode_here(request, sentences[start : start + size], options, coverage, finish, own_batch)
        return out

    return await run_in_threadpool(work, translate_batch)


def hypotheses(translate_batch: Callable[[list[str]], list]) -> Callable[[int], Callable[[list[str]], list]]:
    """translate_batch (decoding n-best) for each k: the k-th hypothesis of each sentence (its last where it
    has fewer), each sentence decoded once over all k."""
    decoded: dict[str, object] = {}

    def kth(k: int) -> Callable[[list[str]], list]:
        def run(sentences: list[str]) -> list:
            new = [s for s in sentences if s not in decoded]
            if new:
                decoded.update(zip(new, translate_batch(new)))
            results = [decoded[s] for s in sentences]
            return [t.n_best[min(k, len(t.n_best) - 1)] if k and t.n_best else t for t in results]

        return run

    return kth
