"""CTranslate2 alone in a process, for bench_ct2.py: imports ctranslate2 and the standard library, never
torch (checked before anything is timed). The vocabulary and the special ids come as data from the parent.

    python bench/ct2_worker.py CT2_DIR COMPUTE_TYPE THREADS SPEC.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from engine_proc import refuse_if_loaded, serve  # noqa: E402


def length_penalty(length: int, alpha: float) -> float:
    """GNMT's ((5 + |Y|) / 6)^α, tt's beam ranking (core.decode.beam.length_penalty; bench_ct2 checks they agree)."""
    return ((5 + length) / 6) ** alpha


def decoder(translator, spec: dict):
    """CTranslate2 decoding with tt's semantics: piece ids in, piece ids out (EOS dropped), EOS allowed at the first
    step, PAD and BOS banned, the caller's length limit, beam hypotheses re-ranked with tt's length penalty."""
    vocab, alpha = spec["vocab"], spec["alpha"]
    index = {p: i for i, p in enumerate(vocab)}
    eos = vocab[spec["eos_id"]]
    banned = [[vocab[spec["pad_id"]]], [vocab[spec["bos_id"]]]]  # tt never writes PAD or BOS

    def run(method: str, batch: list[list[int]], limit: int) -> list[list[int]]:
        beam = 1 if method == "greedy" else 4
        results = translator.translate_batch(
            [[vocab[i] for i in ids] for ids in batch],
            beam_size=beam,
            num_hypotheses=beam,
            length_penalty=0,
            return_scores=True,
            return_end_token=True,
            min_decoding_length=0,
            max_decoding_length=limit,
            suppress_sequences=banned,
        )
        out = []
        for r in results:
            # tt's ranking: raw log p / ((5 + |Y|) / 6)^α, |Y| the scored pieces (EOS included).
            best = max(
                range(len(r.hypotheses)), key=lambda j: r.scores[j] / length_penalty(len(r.hypotheses[j]), alpha)
            )
            out.append([index[p] for p in r.hypotheses[best] if p != eos])
        return out

    return run


def main() -> None:
    ct2_dir, compute_type, threads, spec_file = sys.argv[1:5]
    spec = json.loads(Path(spec_file).read_text(encoding="utf-8"))
    import ctranslate2

    translator = ctranslate2.Translator(
        ct2_dir, device="cpu", intra_threads=int(threads), inter_threads=1, compute_type=compute_type
    )
    run = decoder(translator, spec)
    refuse_if_loaded("ct2_worker", "torch")
    serve(run, int(threads))  # intra_threads, as the translator was built


if __name__ == "__main__":
    main()
