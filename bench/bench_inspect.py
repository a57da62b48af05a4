"""How responsive `tt inspect` is: one Stepper.step and one full UI refresh, on a `small` model.

Reference, measured in the same run: a bare cached greedy step (`model.decode` of one token over
the key/value cache, fused attention, no weights kept): what `tt translate --greedy` pays per piece.
Stepper.step adds the manual attention path (need_weights), the top-k and the copies to the CPU.
The UI rows are measured inside a headless Textual app at 120×40: a refresh redraws every panel
from a new Decoding snapshot (its watchers); a key press `n` is the whole round trip (model thread + redraw).

    python bench/bench_inspect.py --repeat 30 --threads 1

Random-init `small` (d_model 256, h 4, 3+3 layers, vocabulary of the tokenizer); the tokenizer is
--spm, by default the shipped weights/spm.model (8000 pieces); when that is absent, a tiny
SentencePiece model trained on the test fixture (a much smaller vocabulary, said in the output).
The budget is 100 ms per step, UI included.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.checkpoint import LoadedModel  # noqa: E402
from core.data.tokenizer import Tokenizer  # noqa: E402
from core.decode.stepper import Stepper  # noqa: E402
from core.model.config import preset  # noqa: E402
from core.model.transformer import Transformer  # noqa: E402

SENTENCE = "Le chat s'est assis sur le tapis pendant que les enfants regardaient la pluie tomber sur la ville."


def timed(fn, repeat: int) -> tuple[float, float]:
    """Median wall and CPU seconds of `fn()` (a busy machine inflates wall time; CPU time is steadier)."""
    walls, cpus = [], []
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return statistics.median(walls), statistics.median(cpus)


def bench_core(loaded: LoadedModel, repeat: int, position: int) -> dict[str, tuple[float, float]]:
    model = loaded.model
    stepper = Stepper(loaded, SENTENCE)
    for _ in range(position):
        stepper.step(force=stepper.cfg.unk_id + 10)  # a fixed prefix: EOS cannot end it early

    @torch.inference_mode()
    def bare() -> None:  # the reference: one cached step, fused attention, as greedy() does it
        state = model.start_state(stepper.encoded)
        model.decode(torch.tensor([stepper.target_inputs]), stepper.encoded, state=state)  # fill the cache (1, t)
        bare.state = state

    bare()
    state = bare.state
    step_input = torch.tensor([[5]])  # (1, 1)

    @torch.inference_mode()
    def one_bare() -> None:
        model.decode(step_input, stepper.encoded, state=state)
        for cache in state.self_attn:  # keep the prefix length fixed across repeats
            cache.k, cache.v = cache.k[:, :, :-1], cache.v[:, :, :-1]
        state.length -= 1

    def one_step() -> None:
        stepper.step(force=5)
        stepper.back()

    return {"bare": timed(one_bare, repeat), "step": timed(one_step, repeat)}


def bench_ui(loaded: LoadedModel, repeat: int, position: int) -> dict[str, tuple[float, float]]:
    from tt_cli.tui.app import make_app

    results: dict[str, tuple[float, float]] = {}

    async def main() -> None:
        app = make_app(loaded, SENTENCE)
        async with app.run_test(size=(120, 40)) as pilot:

            async def settle() -> None:
                while app.pending:
                    await pilot.pause(0.001)
                await pilot.pause()

            await settle()
            session = app.session  # the model side; touched here only while the model thread is idle

            def prefix():  # a fixed prefix: EOS cannot end it early
                for _ in range(position - 1):
                    session.active.step(force=loaded.cfg.unk_id + 10)
                return session.snapshot()

            app.submit(prefix, app._decoded)
            await settle()

            async def idle() -> None:  # the harness's own cost: wait for a frame with nothing to redraw
                await pilot.pause()

            async def refresh() -> None:
                app.decoding = dataclasses.replace(app.decoding)  # a new snapshot: the watchers redraw every panel
                await pilot.pause()  # let the compositor draw the frame

            async def press_n() -> None:
                await pilot.press("n")
                await settle()
                session.active.back()

            for name, fn in (("idle", idle), ("refresh", refresh), ("press n", press_n)):
                walls, cpus = [], []
                for _ in range(repeat):
                    w, c = time.perf_counter(), time.process_time()
                    await fn()
                    walls.append(time.perf_counter() - w)
                    cpus.append(time.process_time() - c)
                results[name] = (statistics.median(walls), statistics.median(cpus))

    asyncio.run(main())
    return results


def load_tokenizer(spm: Path | None) -> tuple[Tokenizer, str]:
    """--spm if given; else the shipped weights/spm.model; else a tiny model trained on the test fixture."""
    if spm is not None:
        if not spm.is_file():
            sys.exit(f"bench_inspect: --spm {spm}: no such file")
        return Tokenizer.load(spm), str(spm)
    shipped = ROOT / "weights" / "spm.model"
    if shipped.is_file():
        return Tokenizer.load(shipped), "weights/spm.model (shipped)"
    fixture = ROOT / "tests" / "fixtures" / "tiny.tsv"
    if not fixture.is_file():
        sys.exit(f"bench_inspect: neither {shipped} nor {fixture} exists; pass --spm PATH to a SentencePiece model")
    text = fixture.read_text(encoding="utf-8").replace("\t", "\n")
    tokenizer = Tokenizer.train(text.splitlines(), vocab_size=120)
    return tokenizer, f"tiny SentencePiece trained on {fixture.relative_to(ROOT)} (weights/spm.model absent)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--position", type=int, default=20, help="output pieces already decoded")
    parser.add_argument(
        "--spm",
        type=Path,
        default=None,
        help="SentencePiece model (default: weights/spm.model, else a tiny one from the test fixture)",
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    tokenizer, origin = load_tokenizer(args.spm)
    print(f"tokenizer: {origin}, {tokenizer.vocab_size} pieces")
    cfg = preset("small", vocab_size=tokenizer.vocab_size)
    loaded = LoadedModel(Transformer(cfg).eval(), tokenizer, ROOT / "weights", {})
    rows = {**bench_core(loaded, args.repeat, args.position), **bench_ui(loaded, args.repeat, args.position)}
    ref = rows["bare"][0]
    names = {
        "bare": "bare cached greedy step (reference)",
        "step": "Stepper.step (weights, top-k)",
        "idle": "UI idle frame (harness cost, nothing redrawn)",
        "refresh": "UI refresh (all panels redrawn)",
        "press n": "key n → step + redraw",
    }
    print(
        f"small: d_model {cfg.d_model}, {cfg.n_encoder_layers}+{cfg.n_decoder_layers} layers, vocab {cfg.vocab_size}; "
        f"source {len(loaded.tokenizer.encode(SENTENCE)) + 1} pieces, step at position {args.position}; "
        f"threads {args.threads}; median of {args.repeat}"
    )
    print()
    print("| case | wall ms | CPU ms | wall vs reference | under 100 ms |")
    print("|---|---:|---:|---:|:---:|")
    for key, (wall, cpu) in rows.items():
        print(
            f"| {names[key]} | {wall * 1e3:.2f} | {cpu * 1e3:.2f} | {wall / ref:.2f}x | {'yes' if wall < 0.1 else 'no'} |"
        )


if __name__ == "__main__":
    main()
