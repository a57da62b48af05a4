"""tt against CTranslate2 on the same weights, the same sentences and the same batches, in one run.

The tt model (default: the shipped weights/) is converted to CTranslate2 with its Python spec API
(bench/ct2_convert.py). Before anything is timed the conversion is proven: teacher-forced
log-probabilities agree within 1e-4 and greedy outputs are identical. Decoding semantics are aligned:
- EOS is allowed at the first step (CTranslate2's min_decoding_length defaults to 1; 0 here);
- PAD and BOS are banned on both sides (tt's rule; CTranslate2's suppress_sequences);
- the same length limit (tt's `output_limits`; CTranslate2 takes one limit per batch, its largest);
- beam search: CTranslate2 returns its finished hypotheses with raw log-probabilities
  (length_penalty 0, num_hypotheses = beam), re-ranked here with tt's GNMT penalty
  ((5 + |Y|) / 6)^α, |Y| counting EOS. The re-ranking is inside CTranslate2's timed call.

Sentences: the model's held-out Tatoeba test split (buckets from its card.json, or weights/card.json
for a run without a card, rebuilt with core.data.readers.heldout_range), tokenized once; both engines get the same length-sorted
batches of piece ids / pieces (tokenizing and detokenizing are outside the timing for both).
Engines run interleaved batch by batch, so load from other processes hits them alike.

    nice -n 5 python bench/bench_ct2.py --threads 2 [--sentences N] [--batch1 300] [--fast int8]

Needs the `bench` extra (pip install -e .[bench]) for ctranslate2.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from ct2_convert import convert  # noqa: E402

from core.checkpoint import load_model  # noqa: E402
from core.decode import search  # noqa: E402

SHARED = Path(os.environ.get("TT_SHARED_DATA", "/work/shared/data"))


class PeakRSS:
    """The process's resident memory sampled every 2 ms; `peak()` since the last `reset()`."""

    def __init__(self) -> None:
        self._peak = self._base = 0
        self._page = os.sysconf("SC_PAGE_SIZE")
        threading.Thread(target=self._run, daemon=True).start()

    def rss(self) -> int:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * self._page

    def _run(self) -> None:
        while True:
            self._peak = max(self._peak, self.rss())
            time.sleep(0.002)

    def reset(self) -> None:
        self._peak = self._base = self.rss()

    def peak(self) -> int:
        return max(self._peak, self.rss())


def held_out(model_dir: Path) -> tuple[list[str], list[str]]:
    """The model card's Tatoeba test split; a run without a card (a pilot) gets the shipped model's."""
    from core.data.readers import heldout_range, read_corpus

    card_file = model_dir / "card.json"
    card = json.loads((card_file if card_file.exists() else ROOT / "weights" / "card.json").read_text())
    test = card["test_sets"]["tatoeba-test"]
    lo, hi = test["buckets"]
    pairs = heldout_range(read_corpus(SHARED / test["file"]), lo, hi)
    return [p.src for p in pairs], [p.tgt for p in pairs]


def tt_engine(model, method: str) -> Callable[[list[list[int]]], list[list[int]]]:
    def run(batch: list[list[int]]) -> list[list[int]]:
        src = search.pad_batch(batch, model.cfg.pad_id)  # (B, S)
        if method == "greedy":
            return [h.tokens for h in search.greedy(model, src)]
        return [hyps[0].tokens for hyps in search.beam_search(model, src, beam_size=4, alpha=0.6)]

    return run


def ct2_engine(translator, loaded, method: str, limits_of: Callable) -> Callable:
    vocab = loaded.tokenizer.pieces(range(loaded.cfg.vocab_size))
    index = {p: i for i, p in enumerate(vocab)}
    eos = vocab[loaded.cfg.eos_id]
    banned = [[vocab[loaded.cfg.pad_id]], [vocab[loaded.cfg.bos_id]]]
    beam = 1 if method == "greedy" else 4

    def run(batch: list[list[int]]) -> list[list[int]]:
        results = translator.translate_batch(
            [[vocab[i] for i in ids] for ids in batch],
            beam_size=beam,
            num_hypotheses=beam,
            length_penalty=0,
            return_scores=True,
            return_end_token=True,
            min_decoding_length=0,
            max_decoding_length=limits_of(batch),
            suppress_sequences=banned,
        )
        out = []
        for r in results:
            # tt's ranking: raw log p / ((5 + |Y|) / 6)^α, |Y| the scored pieces (EOS included).
            best = max(
                range(len(r.hypotheses)), key=lambda j: r.scores[j] / search.length_penalty(len(r.hypotheses[j]), 0.6)
            )
            out.append([index[p] for p in r.hypotheses[best] if p != eos])
        return out

    return run


def prove(loaded, translator, batches: list[list[list[int]]], limits_of: Callable) -> str:
    """Teacher-forced log-probs within 1e-4 and identical greedy outputs, or exit."""
    model, cfg, tok = loaded.model, loaded.cfg, loaded.tokenizer
    worst, n = 0.0, 0
    for batch in batches:
        hyps = search.greedy(model, search.pad_batch(batch, cfg.pad_id))
        targets = [h.tokens + [cfg.eos_id] for h in hyps]
        with torch.inference_mode():
            tgt_in = search.pad_batch([[cfg.bos_id] + t[:-1] for t in targets], cfg.pad_id)  # (B, T)
            lp = model(search.pad_batch(batch, cfg.pad_id), tgt_in).float().log_softmax(-1)  # (B, T, V)
        scored = translator.score_batch([tok.pieces(s) for s in batch], [tok.pieces(h.tokens) for h in hyps])
        for i, (t, r) in enumerate(zip(targets, scored)):
            ours = lp[i, torch.arange(len(t)), torch.tensor(t)].tolist()
            if len(r.log_probs) != len(ours):
                raise SystemExit(f"score_batch scored {len(r.log_probs)} pieces, tt {len(ours)}")
            worst = max(worst, max(abs(a - b) for a, b in zip(ours, r.log_probs)))
        n += len(batch)
        ct2_greedy = ct2_engine(translator, loaded, "greedy", limits_of)(batch)
        if ct2_greedy != [h.tokens for h in hyps]:
            raise SystemExit("greedy outputs differ between tt and CTranslate2 float32: the conversion is wrong")
    if worst > 1e-4:
        raise SystemExit(f"teacher-forced log-probs differ by up to {worst:.2e} (> 1e-4): the conversion is wrong")
    return f"proof on {n} sentences: greedy outputs identical; teacher-forced log-probs max |tt - CT2| = {worst:.1e}"


def timed(engines: dict[str, Callable], batches: list, rss: PeakRSS) -> dict[str, tuple[float, float, list]]:
    """(seconds, peak RSS above idle in bytes, outputs) per engine; engines alternate batch by batch."""
    secs, peak, outs = dict.fromkeys(engines, 0.0), dict.fromkeys(engines, 0), {k: [] for k in engines}
    for fn in engines.values():
        fn(batches[0][:1])  # warm-up
    for batch in batches:
        for name, fn in engines.items():
            rss.reset()
            base = rss.rss()
            start = time.perf_counter()
            outs[name].extend(fn(batch))
            secs[name] += time.perf_counter() - start
            peak[name] = max(peak[name], rss.peak() - base)
    return {k: (secs[k], peak[k], outs[k]) for k in engines}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=str(ROOT / "weights"))
    parser.add_argument("--sentences", type=int, default=0, help="0 = the whole held-out split")
    parser.add_argument("--batch1", type=int, default=300, help="sentences for the batch-1 row")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--fast", default="int8", help="tt's faster approximate modes, comma-separated: int8, bf16, or none"
    )
    parser.add_argument("--rows", default="greedy1,greedy64,beam64")
    args = parser.parse_args()
    import ctranslate2
    import sacrebleu

    torch.set_num_threads(args.threads)
    model_dir = Path(args.model)
    loaded = load_model(model_dir)
    cfg, tok = loaded.cfg, loaded.tokenizer
    sources, refs = held_out(model_dir)
    if args.sentences:
        sources, refs = sources[: args.sentences], refs[: args.sentences]
    from core.decode.source import prepare_source

    ids = [prepare_source(tok, s, cfg.max_len).ids or [cfg.eos_id] for s in sources]  # tt translate's one rule

    def limits_of(batch: list[list[int]]) -> int:
        return int(search.output_limits(loaded.model, search.pad_batch(batch, cfg.pad_id), None, 50).max())

    tmp = Path(tempfile.mkdtemp(prefix="tt_ct2_"))
    translators = {
        q: ctranslate2.Translator(
            str(convert(loaded, tmp / q, None if q == "float32" else q)),
            device="cpu",
            intra_threads=args.threads,
            inter_threads=1,
            compute_type=q,
        )
        for q in ("float32", "int8")
    }
    rss = PeakRSS()
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))  # length-sorted, as tt's batcher does
    proof = prove(
        loaded, translators["float32"], [[ids[i] for i in order[s : s + 64]] for s in range(0, 256, 64)], limits_of
    )
    print(proof)

    # tt's engines: fp32 as `tt translate` runs it (Linear layers packed for oneDNN), the plain fp32
    # model it computes (the reference for "identical"), and the approximate --quantize modes.
    from core.model.fast import fast_model as make_fast
    from core.model.fast import packed_model

    tt_models = {"tt fp32 unpacked": loaded.model, "tt fp32": packed_model(loaded.model)}
    for mode in [] if args.fast == "none" else args.fast.split(","):
        tt_models[f"tt {mode}"] = make_fast(loaded.model, mode)
    print(
        f"threads {args.threads}; load average {os.getloadavg()[0]:.2f}; {len(ids)} held-out sentences; "
        f"tt fast mode: {args.fast}; torch {torch.__version__}, ctranslate2 {ctranslate2.__version__}"
    )
    print("| decoding | engine | sent/s | vs CT2 float32 | BLEU | peak RSS +MiB | identical to tt fp32 unpacked |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for row in args.rows.split(","):
        method, size = ("greedy", int(row[6:])) if row.startswith("greedy") else ("beam", int(row[4:]))
        subset = order if size > 1 else list(range(min(args.batch1, len(ids))))
        if size > 1:
            batches = [[ids[i] for i in subset[s : s + size]] for s in range(0, len(subset), size)]
        else:
            batches = [[ids[i]] for i in subset]
        engines = {name: tt_engine(m, method) for name, m in tt_models.items()}
        for q, tr in translators.items():
            engines[f"CT2 {q}"] = ct2_engine(tr, loaded, method, limits_of)
        results = timed(engines, batches, rss)
        ref_rate = len(subset) / results["CT2 float32"][0]
        tt_out = results["tt fp32 unpacked"][2]
        refs_row = [refs[i] for i in subset]
        name = f"{'greedy' if method == 'greedy' else 'beam 4, α 0.6'}, batch {size}"
        for engine, (secs, peak, outs) in results.items():
            rate = len(subset) / secs
            bleu = sacrebleu.corpus_bleu([tok.decode(o) for o in outs], [refs_row]).score
            same = sum(a == b for a, b in zip(outs, tt_out))
            print(
                f"| {name} | {engine} | {rate:.1f} | {rate / ref_rate:.2f}x | {bleu:.2f} | {peak / 2**20:.1f} "
                f"| {same}/{len(outs)} |",
                flush=True,
            )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    print(f"load average after: {os.getloadavg()[0]:.2f}; process peak RSS {peak:.0f} MiB")


if __name__ == "__main__":
    main()
