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
Each engine runs in its own process (spawned, given the batches through a pipe, timed inside it): in
one process holding both, tt decoded 20–25 % slower once a CTranslate2 translator had run there
(torch's OpenMP threads then slept between operations, as `OMP_WAIT_POLICY=PASSIVE` makes them do
in a process of tt alone), while CTranslate2's speed did not depend on it (bench/README.md,
2026-11-26); users run one engine per process. tt's engines start with the OpenMP setting every tt
command makes (GOMP_SPINCOUNT, tt_cli/__init__.py), CTranslate2's with the environment as it was.
The engines take turns a whole pass over a row's batches each, in the opposite order every other
round, and the best of `--rounds` passes counts: engines interleaved batch by batch ran each call
among the previous engine's threads still spinning (OpenMP's wait after a parallel region), which
moved batch-1 rates by up to 35 %. Peak RSS: the engine
process's high-water mark during each call, above its size before it (`PeakRSS`).

    nice -n 5 python bench/bench_ct2.py --threads 2 [--sentences N] [--batch1 300] [--fast int8]

Needs the `bench` extra (pip install -e .[bench]) for ctranslate2.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
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


def limits_for(loaded) -> Callable[[list[list[int]]], int]:
    """The length limit CTranslate2 gets for a batch: tt's largest for its sentences."""

    def limits_of(batch: list[list[int]]) -> int:
        return int(search.output_limits(loaded.model, search.pad_batch(batch, loaded.cfg.pad_id), None, 50).max())

    return limits_of


def _engine_process(conn, name: str, model_dir: str, ct2_dir: str, threads: int) -> None:
    """One engine in a process of its own: (method, batch) in, (seconds, peak RSS, outputs) out, until None.
    CTranslate2's length limit for a batch (tt's, computed with torch) is worked out before its timer starts."""
    torch.set_num_threads(threads)
    loaded = load_model(Path(model_dir))
    limits_of, limit = limits_for(loaded), [0]  # limit[0]: the length limit of the call at hand
    if name.startswith("CT2 "):
        import ctranslate2

        q = name[4:]
        translator = ctranslate2.Translator(
            str(Path(ct2_dir) / q), device="cpu", intra_threads=threads, inter_threads=1, compute_type=q
        )
        engines = {m: ct2_engine(translator, loaded, m, lambda batch: limit[0]) for m in ("greedy", "beam")}
    else:
        from core.model.fast import fast_model, packed_model

        mode = name[3:]
        if mode == "fp32 unpacked":
            model = loaded.model
        elif mode == "fp32":
            model = packed_model(loaded.model, inplace=True)  # as `tt translate` runs it
        else:
            model = fast_model(loaded.model, mode)
        engines = {m: tt_engine(model, m) for m in ("greedy", "beam")}
    conn.send("ready")
    warm, rss = set(), PeakRSS()
    while (job := conn.recv()) is not None:
        method, batch = job
        if method not in warm:  # a warm-up call, untimed
            limit[0] = limits_of(batch[:1])
            engines[method](batch[:1])
            warm.add(method)
        limit[0] = limits_of(batch)
        rss.reset()
        start = time.perf_counter()
        out = engines[method](batch)
        conn.send((time.perf_counter() - start, rss.peak(), out))


class Engines:
    """The engines' processes, started once and given the same batches in turn."""

    def __init__(self, names: list[str], model_dir: Path, ct2_dir: Path, threads: int) -> None:
        import multiprocessing as mp

        ctx = mp.get_context("spawn")  # a fresh interpreter: none of this process's libraries or threads
        # tt's engines get the OpenMP setting every tt command makes before torch loads (tt_cli/__init__.py);
        # CTranslate2's the environment as it was.
        theirs_env = dict(os.environ)
        from tt_cli import with_openmp_default

        ours_env = with_openmp_default(theirs_env)
        self.procs = {}
        try:
            for name in names:
                os.environ.clear()
                os.environ.update(ours_env if name.startswith("tt ") else theirs_env)
                ours, theirs = ctx.Pipe()
                proc = ctx.Process(target=_engine_process, args=(theirs, name, str(model_dir), str(ct2_dir), threads))
                proc.start()
                self.procs[name] = (proc, ours)
        finally:
            os.environ.clear()
            os.environ.update(theirs_env)
        for name, (_, conn) in self.procs.items():
            try:
                conn.recv()
            except EOFError:
                raise SystemExit(f"engine {name} did not start (its traceback is above)") from None

    def call(self, name: str, method: str, batch: list[list[int]]) -> tuple[float, int, list]:
        """(seconds inside the engine, its peak RSS above its size before the call, outputs)."""
        _, conn = self.procs[name]
        conn.send((method, batch))
        try:
            return conn.recv()
        except EOFError:
            raise SystemExit(f"engine {name} exited (its traceback is above)") from None

    def close(self) -> None:
        for _, conn in self.procs.values():
            conn.send(None)
        for proc, _ in self.procs.values():
            proc.join(timeout=30)


def timed(engines: Engines, method: str, batches: list, rounds: int) -> dict[str, tuple[float, float, list]]:
    """(seconds, peak RSS above idle in bytes, outputs) per engine: its best time over `rounds` passes
    through all the batches, the engines taking turns a pass each, in the opposite order every other round."""
    names = list(engines.procs)
    secs, peak, outs = dict.fromkeys(names, float("inf")), dict.fromkeys(names, 0), {}
    for r in range(rounds):
        for name in names if r % 2 == 0 else names[::-1]:
            total, out = 0.0, []
            for batch in batches:
                s, p, o = engines.call(name, method, batch)
                total += s
                peak[name] = max(peak[name], p)
                out.extend(o)
            secs[name] = min(secs[name], total)
            outs.setdefault(name, out)
    return {k: (secs[k], peak[k], outs[k]) for k in names}


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
    parser.add_argument("--rounds", type=int, default=2, help="passes per engine and row; the best counts")
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

    limits_of = limits_for(loaded)
    tmp = Path(tempfile.mkdtemp(prefix="tt_ct2_"))
    for q in ("float32", "int8"):
        convert(loaded, tmp / q, None if q == "float32" else q)
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))  # length-sorted, as tt's batcher does
    checker = ctranslate2.Translator(str(tmp / "float32"), device="cpu", intra_threads=args.threads)
    print(
        prove(
            loaded,
            checker,
            [[ids[i] for i in order[s : s + 64]] for s in range(0, min(256, len(order)), 64)],
            limits_of,
        )
    )
    del checker

    # tt's engines: fp32 as `tt translate` runs it (Linear layers packed for oneDNN), the plain fp32
    # model it computes (the reference for "identical"), and the approximate --quantize modes.
    fast = [] if args.fast == "none" else args.fast.split(",")
    names = ["tt fp32 unpacked", "tt fp32", *(f"tt {m}" for m in fast), "CT2 float32", "CT2 int8"]
    engines = Engines(names, model_dir, tmp, args.threads)
    print(
        f"threads {args.threads}; load average {os.getloadavg()[0]:.2f}; {len(ids)} held-out sentences; "
        f"tt fast mode: {args.fast}; torch {torch.__version__}, ctranslate2 {ctranslate2.__version__}; "
        f"one process per engine; best of {args.rounds} passes"
    )
    print("| decoding | engine | sent/s | vs CT2 float32 | BLEU | peak RSS +MiB | identical to tt fp32 unpacked |")
    print("|---|---|---:|---:|---:|---:|---:|")
    try:
        for row in args.rows.split(","):
            method, size = ("greedy", int(row[6:])) if row.startswith("greedy") else ("beam", int(row[4:]))
            subset = order if size > 1 else list(range(min(args.batch1, len(ids))))
            if size > 1:
                batches = [[ids[i] for i in subset[s : s + size]] for s in range(0, len(subset), size)]
            else:
                batches = [[ids[i]] for i in subset]
            results = timed(engines, method, batches, args.rounds)
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
    finally:
        engines.close()
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
