"""CTranslate2 timed on its own, as a user of CTranslate2 would time it: one process that imports ctranslate2 and
nothing else, one loop of `translate_batch` over the batches, a wall clock around the whole loop. No job protocol,
no pipes, no other engine's process. bench_ct2.py --standalone runs it on the converted model and the exact batches
of each of its rows, and prints its rate beside the bench's CTranslate2 rows (issue 46's bar: within 10 %).
The decoding options are written out here rather than imported from ct2_worker.py, so that one edit cannot move
both sides of the check.

    python bench/ct2_standalone.py CT2_DIR COMPUTE_TYPE THREADS JOBS.json [ROUNDS] [WORKERS]

WORKERS > 1: that many of CTranslate2's workers (`inter_threads`), THREADS each, and each batch handed over with
`max_batch_size` = its size / WORKERS, so its parts run at once — what tt does with a batch's rows at two threads
(core/decode/parts.py), CTranslate2's way.

JOBS.json: {"method": "greedy" | "beam", "batches": [[[pieces]]], "limits": [int], "eos": piece, "banned": [[piece]]}.
Prints one JSON line: {"sentences": n, "seconds": best pass, "rate": sentences per second, "threads": THREADS,
"mkl": CTranslate2's CT2_USE_MKL as this process saw it (null: unset, CTranslate2 decides), "workers": WORKERS}.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path


def main() -> None:
    ct2_dir, compute_type, threads, jobs_file = sys.argv[1:5]
    rounds = int(sys.argv[5]) if len(sys.argv) > 5 else 2
    workers = int(sys.argv[6]) if len(sys.argv) > 6 else 1
    jobs = json.loads(Path(jobs_file).read_text(encoding="utf-8"))
    import ctranslate2

    if "torch" in sys.modules:
        raise SystemExit("ct2_standalone: torch is loaded in this process")
    translator = ctranslate2.Translator(
        ct2_dir, device="cpu", intra_threads=int(threads), inter_threads=workers, compute_type=compute_type
    )
    beam = 1 if jobs["method"] == "greedy" else 4
    options = dict(
        beam_size=beam,
        num_hypotheses=beam,
        length_penalty=0,
        return_scores=True,
        return_end_token=True,
        min_decoding_length=0,
        suppress_sequences=jobs["banned"],
    )
    batches, limits = jobs["batches"], jobs["limits"]
    translator.translate_batch(batches[0][:1], max_decoding_length=limits[0], **options)  # warm-up
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for batch, limit in zip(batches, limits):
            parts = {"max_batch_size": -(-len(batch) // workers)} if workers > 1 else {}
            results = translator.translate_batch(batch, max_decoding_length=limit, **options, **parts)
            for r in results:  # the best hypothesis by GNMT's ((5 + |Y|) / 6)^0.6, as bench_ct2 ranks them
                max(range(len(r.hypotheses)), key=lambda j: r.scores[j] / ((5 + len(r.hypotheses[j])) / 6) ** 0.6)
        best = min(best, time.perf_counter() - start)
    n = sum(len(b) for b in batches)
    setting = {"threads": int(threads), "mkl": os.environ.get("CT2_USE_MKL"), "workers": workers}
    print(json.dumps({"sentences": n, "seconds": best, "rate": n / best, **setting}))


if __name__ == "__main__":
    main()
