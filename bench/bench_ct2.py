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
Each engine runs in a process of its own that loads its own libraries and nothing else: bench/ct2_worker.py
imports ctranslate2 and never torch, bench/tt_worker.py torch and tt and never ctranslate2, each checking so
before it times anything (bench/engine_proc.py: the job loop, batches and outputs as JSON lines through its
pipes, timed inside the worker). They are started as scripts, not by `multiprocessing`'s spawn, which
re-imports this file (and torch with it) in every child: torch's OpenMP threads beside CTranslate2's own
made CTranslate2 2–3× slower at batch 1 (2026-11-27, bench/README.md). This process computes every length
limit before the timing starts and runs torch on one thread, so nothing of its own runs beside the engines.
Both engines start with the OpenMP setting every tt command makes (GOMP_SPINCOUNT, tt_cli/__init__.py;
CTranslate2 links the same GNU libgomp): `engine_env`.
The engines take turns a whole pass over a row's batches each, in the opposite order every other
round, and the best of `--rounds` passes counts: engines interleaved batch by batch ran each call
among the previous engine's threads still spinning (OpenMP's wait after a parallel region), which
moved batch-1 rates by up to 35 %. Peak RSS: the engine
process's high-water mark during each call, above its size before it (`PeakRSS`).

tt's rows: `tt fp32 unpacked` (the plain model, the reference for "identical"), `tt fp32` as `tt translate`
loads it where that differs (packed for oneDNN: not on an Intel CPU, core/model/fast.py `packing_pays`), and the
modes `--fast` names (`int8`, `bf16`; `fp32-packed` to compare the packing choice side by side). The CPU is
named in the header.

    nice -n 5 python bench/bench_ct2.py --threads 2 [--sentences N] [--batch1 300] [--fast int8]

`--ct2-best` also times CTranslate2 alone at each of its settings (one thread and --threads, MKL on and off) and
prints each tt engine against the fastest: a comparison at one setting can show a setting of CTranslate2's, not tt.
`--tt-one-thread` gives tt the same choice: each tt engine runs at --threads and again on one thread ("tt int8,
1 thread"), each worker saying the threads it decodes on before anything is timed.

Needs the `bench` extra (pip install -e .[bench]) for ctranslate2.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH))

import ct2_worker  # noqa: E402
from ct2_convert import convert  # noqa: E402

from core.checkpoint import load_model  # noqa: E402
from core.decode import beam, search  # noqa: E402
from core.device import describe_cpu  # noqa: E402
from core.model.fast import packing_pays  # noqa: E402

SHARED = Path(os.environ.get("TT_SHARED_DATA", "/work/shared/data"))
# The environment as the user gave it, before importing tt_cli sets tt's OpenMP default in os.environ.
USER_ENV = dict(os.environ)


def held_out(model_dir: Path) -> tuple[list[str], list[str]]:
    """The model card's Tatoeba test split, (sources, references) in the model's direction (the corpus is
    French⇥English; an en→fr card's sources are its English side); a run without a card (a pilot) gets the
    shipped model's."""
    from core.data.readers import heldout_range, read_corpus

    card_file = model_dir / "card.json"
    card = json.loads((card_file if card_file.exists() else ROOT / "weights" / "card.json").read_text())
    test = card["test_sets"]["tatoeba-test"]
    lo, hi = test["buckets"]
    pairs = heldout_range(read_corpus(SHARED / test["file"]), lo, hi)
    french, english = [p.src for p in pairs], [p.tgt for p in pairs]
    return (english, french) if card.get("languages", ["fr", "en"])[0] == "en" else (french, english)


def decoding_spec(loaded) -> dict:
    """What CTranslate2's worker needs of the model, as data: its pieces in id order and the special ids."""
    cfg = loaded.cfg
    vocab = loaded.tokenizer.pieces(range(cfg.vocab_size))
    return {"vocab": vocab, "eos_id": cfg.eos_id, "pad_id": cfg.pad_id, "bos_id": cfg.bos_id, "alpha": 0.6}


def prove(loaded, translator, spec: dict, batches: list[list[list[int]]], limits_of: Callable) -> str:
    """Teacher-forced log-probs within 1e-4 and identical greedy outputs, or exit."""
    model, cfg, tok = loaded.model, loaded.cfg, loaded.tokenizer
    worst, n = 0.0, 0
    ct2_decode = ct2_worker.decoder(translator, spec)  # the worker's own decoding, on the proof's batches
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
        ct2_greedy = ct2_decode("greedy", batch, limits_of(batch))
        if ct2_greedy != [h.tokens for h in hyps]:
            raise SystemExit("greedy outputs differ between tt and CTranslate2 float32: the conversion is wrong")
    if worst > 1e-4:
        raise SystemExit(f"teacher-forced log-probs differ by up to {worst:.2e} (> 1e-4): the conversion is wrong")
    return f"proof on {n} sentences: greedy outputs identical; teacher-forced log-probs max |tt - CT2| = {worst:.1e}"


def engine_env() -> dict[str, str]:
    """Every engine's environment: the user's, with the OpenMP wait every tt command sets (GOMP_SPINCOUNT,
    tt_cli/__init__.py) unless the user named one. Both engines run on GNU libgomp; with its default wait
    (300,000 spins) CTranslate2 float32 ran 11–24x slower on a shared 2-core machine (bench/README.md), which
    measured its OpenMP threads spinning away each other's core, not its kernels."""
    from tt_cli import with_openmp_default

    return with_openmp_default(USER_ENV)


def limits_for(loaded) -> Callable[[list[list[int]]], int]:
    """The length limit CTranslate2 gets for a batch: tt's largest for its sentences."""

    def limits_of(batch: list[list[int]]) -> int:
        return int(search.output_limits(loaded.model, search.pad_batch(batch, loaded.cfg.pad_id), None, 50).max())

    return limits_of


ONE_THREAD = ", 1 thread"  # an engine named "tt int8, 1 thread" decodes on one thread whatever --threads says


def engine_setting(name: str, threads: int) -> tuple[str, int]:
    """(the mode its worker takes, the threads it decodes on) of an engine's name: "tt int8" → ("int8", threads),
    "tt int8, 1 thread" → ("int8", 1), "CT2 float32" → ("float32", threads)."""
    mode = name.split(" ", 1)[1]
    return (mode.removesuffix(ONE_THREAD), 1) if mode.endswith(ONE_THREAD) else (mode, threads)


def engine_names(packs: bool, fast: str, threads_too: int) -> list[str]:
    """The engines of a run: tt's (the plain fp32 model, fp32 packed where `packs`, the modes `fast` names), each
    again on one thread where `threads_too` is more than one (--tt-one-thread), then CTranslate2's two."""
    modes = [] if fast == "none" else fast.split(",")
    tt = ["tt fp32 unpacked", *(["tt fp32"] if packs else []), *(f"tt {m}" for m in modes)]
    return [*tt, *(name + ONE_THREAD for name in tt if threads_too > 1), "CT2 float32", "CT2 int8"]


class Engines:
    """The engines' worker processes, started once and given the same batches in turn. `threads`: what each
    worker decodes on, as its first line said."""

    def __init__(self, names: list[str], model_dir: Path, ct2_dir: Path, spec_file: Path, threads: int) -> None:
        env = engine_env()  # the same for both engines
        self.procs: dict[str, subprocess.Popen] = {}
        for name in names:
            mode, n = engine_setting(name, threads)
            if name.startswith("CT2 "):
                args = [BENCH / "ct2_worker.py", ct2_dir / mode, mode, n, spec_file]
            else:
                args = [BENCH / "tt_worker.py", model_dir, mode, n]
            cmd = [sys.executable, *map(str, args)]
            self.procs[name] = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        self.ready = {name: self._read(name) for name in names}  # each worker's first line: what it runs on
        self.threads = {name: ready["threads"] for name, ready in self.ready.items()}

    def _read(self, name: str) -> dict:
        line = self.procs[name].stdout.readline()
        if not line:
            raise SystemExit(f"engine {name} exited (its message is above)")
        return json.loads(line)

    def call(self, name: str, method: str, batch: list[list[int]], limit: int) -> tuple[float, int, list]:
        """(seconds inside the engine, its peak RSS above its size before the call, outputs)."""
        proc = self.procs[name]
        proc.stdin.write(json.dumps({"method": method, "batch": batch, "limit": limit}) + "\n")
        proc.stdin.flush()
        reply = self._read(name)
        return reply["seconds"], reply["peak"], reply["out"]

    def close(self) -> None:
        for proc in self.procs.values():
            proc.stdin.close()
        for proc in self.procs.values():
            proc.wait(timeout=30)


def timed(
    engines: Engines, method: str, batches: list, limits: list[int], rounds: int
) -> dict[str, tuple[float, float, list]]:
    """(seconds, peak RSS above idle in bytes, outputs) per engine: its best time over `rounds` passes
    through all the batches, the engines taking turns a pass each, in the opposite order every other round."""
    names = list(engines.procs)
    secs, peak, outs = dict.fromkeys(names, float("inf")), dict.fromkeys(names, 0), {}
    for r in range(rounds):
        for name in names if r % 2 == 0 else names[::-1]:
            total, out = 0.0, []
            for batch, limit in zip(batches, limits):
                s, p, o = engines.call(name, method, batch, limit)
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
        "--fast",
        default="int8",
        help="tt's other modes, comma-separated: int8, int8-fbgemm (every product on fbgemm whatever the CPU), bf16, "
        "fp32-packed (packed for oneDNN whatever the CPU), any of them with -torch-step (one sentence's steps op by op "
        "in torch, not core/model/native's C step), or none",
    )
    parser.add_argument(
        "--tt-one-thread",
        action="store_true",
        help="also run each tt engine on one thread (`tt translate --threads 1`), beside it at --threads: tt at its "
        "best setting as --ct2-best gives CTranslate2 its own",
    )
    parser.add_argument("--rows", default="greedy1,greedy64,beam64")
    parser.add_argument("--rounds", type=int, default=2, help="passes per engine and row; the best counts")
    parser.add_argument(
        "--standalone",
        action="store_true",
        help="after each row, time CTranslate2 alone (bench/ct2_standalone.py) on the row's batches and compare",
    )
    parser.add_argument(
        "--ct2-best",
        action="store_true",
        help="after each row, time CTranslate2 alone at each of its settings (one thread and --threads, with MKL "
        "and without: CT2_USE_MKL) and print each tt engine's rate against the best (bench/README.md: on an Intel "
        "Xeon its two-thread MKL runs were 4x slower than one thread)",
    )
    args = parser.parse_args()
    import ctranslate2
    import sacrebleu

    torch.set_num_threads(1)  # this process only prepares: no OpenMP pool of its own beside the engines
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
    for n in (1, 7, 30):  # the worker ranks beams with its own copy of tt's length penalty
        assert abs(ct2_worker.length_penalty(n, 0.6) - beam.length_penalty(n, 0.6)) < 1e-12
    spec = decoding_spec(loaded)
    checker = ctranslate2.Translator(str(tmp / "float32"), device="cpu", intra_threads=args.threads)
    print(
        prove(
            loaded,
            checker,
            spec,
            [[ids[i] for i in order[s : s + 64]] for s in range(0, min(256, len(order)), 64)],
            limits_of,
        )
    )
    del checker

    # tt's engines: the plain fp32 model (the reference for "identical"), fp32 as `tt translate` runs it where
    # that differs (Linear layers packed for oneDNN: not on an Intel CPU, `packing_pays`), and the other modes.
    packs = packing_pays()
    names = engine_names(packs, args.fast, args.threads if args.tt_one_thread else 1)
    spec_file = tmp / "spec.json"
    spec_file.write_text(json.dumps(spec), encoding="utf-8")
    engines = Engines(names, model_dir, tmp, spec_file, args.threads)
    alone: dict[str, list[str]] = {}
    print(
        f"threads {args.threads}; load average {os.getloadavg()[0]:.2f}; {len(ids)} held-out sentences; "
        f"tt fast mode: {args.fast}; torch {torch.__version__}, ctranslate2 {ctranslate2.__version__}; "
        f"one clean process per engine; best of {args.rounds} passes"
    )
    print(
        f"CPU: {describe_cpu()}; tt translate's fp32: "
        + ("packed for oneDNN (tt fp32)" if packs else "plain, MKL's products (tt fp32 unpacked; Intel CPU)")
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
            limits = [limits_of(b) for b in batches]
            results = timed(engines, method, batches, limits, args.rounds)
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
            if args.standalone or args.ct2_best:
                jobs = write_jobs(tmp, spec, method, batches, limits)
            if args.standalone:
                alone[name] = standalone(tmp, jobs, len(subset), args.threads, args.rounds, results)
            if args.ct2_best:
                alone.setdefault(name, []).extend(
                    best_lines(ct2_best(tmp, jobs, args.threads, args.rounds), results, len(subset))
                )
    finally:
        engines.close()
    for name, lines in alone.items():
        for line in lines:
            print(f"{name}: {line}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


def standalone(tmp: Path, jobs: Path, n: int, threads: int, rounds: int, results: dict) -> list[str]:
    """CTranslate2 timed alone (bench/ct2_standalone.py, a process of its own, while the engines wait on their
    pipes) on the row's `n` sentences (`jobs`, write_jobs), beside the bench's figure for it: the harness must not
    change CTranslate2's rate."""
    lines = []
    for q in ("float32", "int8"):
        alone = run_alone(tmp / q, q, threads, jobs, rounds, engine_env())
        bench_rate = n / results[f"CT2 {q}"][0]
        lines.append(
            f"CT2 {q} standalone {alone['rate']:.1f} sent/s, in the bench {bench_rate:.1f} "
            f"(bench / standalone {bench_rate / alone['rate']:.3f})"
        )
    return lines


def write_jobs(tmp: Path, spec: dict, method: str, batches: list, limits: list[int]) -> Path:
    """A row's batches as bench/ct2_standalone.py reads them: pieces, the length limits, the banned pieces."""
    vocab = spec["vocab"]
    jobs = tmp / "jobs.json"
    jobs.write_text(
        json.dumps(
            {
                "method": method,
                "batches": [[[vocab[i] for i in ids] for ids in batch] for batch in batches],
                "limits": limits,
                "banned": [[vocab[spec["pad_id"]]], [vocab[spec["bos_id"]]]],
            }
        ),
        encoding="utf-8",
    )
    return jobs


def run_alone(
    ct2_dir: Path, compute_type: str, threads: int, jobs: Path, rounds: int, env: dict[str, str], workers: int = 1
) -> dict:
    """bench/ct2_standalone.py's record: CTranslate2 timed in a process of its own, under `env`."""
    script = str(BENCH / "ct2_standalone.py")
    cmd = [sys.executable, script, str(ct2_dir), compute_type, str(threads), str(jobs), str(rounds), str(workers)]
    run = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
    return json.loads(run.stdout)


def ct2_best(tmp: Path, jobs: Path, threads: int, rounds: int) -> dict[str, list[dict]]:
    """CTranslate2 alone at each of its settings, per compute type: one thread and `threads`, and `threads` workers
    of one thread each taking a batch's parts at once (tt's way at `threads`, core/decode/parts.py), with MKL and
    without (CT2_USE_MKL). Each record says the setting its process ran under; the best first."""
    settings = [(t, mkl, 1) for t in sorted({1, threads}) for mkl in ("1", "0")]
    settings += [(1, mkl, threads) for mkl in ("1", "0")] if threads > 1 else []
    best = {}
    for q in ("float32", "int8"):
        runs = [
            run_alone(tmp / q, q, t, jobs, rounds, {**engine_env(), "CT2_USE_MKL": mkl}, workers)
            for t, mkl, workers in settings
        ]
        best[q] = sorted(runs, key=lambda r: -r["rate"])
    return best


def setting(record: dict) -> str:
    """The setting a ct2_standalone.py record ran under, as best_lines prints it."""
    workers = record.get("workers", 1)
    threads = f"{workers} workers × {record['threads']} thread" if workers > 1 else f"{record['threads']} thread(s)"
    return f"{threads}, MKL {'on' if record['mkl'] == '1' else 'off'}"


def best_lines(best: dict[str, list[dict]], results: dict, n: int) -> list[str]:
    """Each engine of the row against CTranslate2's best setting of its kind: tt's int8 modes against CT2 int8,
    every other engine against CT2 float32 (the like-for-like ratios of issue 46)."""
    lines = []
    for q, runs in best.items():
        tried = ", ".join(f"{setting(r)} {r['rate']:.1f}" for r in runs)
        lines.append(f"CT2 {q} alone at each setting, sent/s: {tried}")
    for engine, (secs, _, _) in results.items():
        q = "int8" if "int8" in engine else "float32"
        top = best[q][0]
        lines.append(
            f"{engine} {n / secs:.1f} sent/s / CT2 {q} at its best ({setting(top)}) {top['rate']:.1f} "
            f"= {n / secs / top['rate']:.2f}x"
        )
    return lines


if __name__ == "__main__":
    main()
