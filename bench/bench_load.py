"""Model loading time: `load_model` on a `small` model dir (fp32 and fp16 on disk) against `import torch`.

Every `tt translate` starts a fresh process, so what a person waits for is a cold start: the
interpreter, `import torch`, tt's own imports, then reading and checking the model dir. Each case
runs in a fresh `python` process, best of --repeat, and the process reports its own phases:

    import torch   the floor: every tt command that computes pays it (the reference row)
    core imports   core.checkpoint + core.model.transformer + sentencepiece/safetensors
    load_model     read model.safetensors, validate, build the Transformer, copy the weights
                   (wall time, and CPU time: on a shared, busy machine the CPU time is the steadier)

The model is weights/ when weights/model.safetensors exists (the shipped model; the target is under
0.5 s for load_model on this CPU); otherwise a random-init `small` model (d_model 256, 3+3 layers,
vocabulary 8000) saved to a temporary dir with runs/shipped/spm.model, or, failing that, a tokenizer
trained on the test fixture. Both dtypes are re-saved from that one model so the rows compare like
with like.

    nice -n 19 python bench/bench_load.py --repeat 5
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# Runs in the child process: it times its own phases, so interpreter start-up is reported apart.
CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
import torch
torch.set_num_threads({threads})
t1 = time.perf_counter()
if {load!r}:
    from core.checkpoint import load_model
    import core.model.transformer, sentencepiece, safetensors
    t2, c2 = time.perf_counter(), time.process_time()
    loaded = load_model({load!r})
    t3, c3 = time.perf_counter(), time.process_time()
else:
    t2 = t3 = t1
    c2 = c3 = 0.0
print(json.dumps({{"torch": t1 - t0, "core": t2 - t1, "load": t3 - t2, "load_cpu": c3 - c2}}))
"""


def run_child(load: str, threads: int) -> dict[str, float]:
    start = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", CHILD.format(load=load, threads=threads)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    phases = json.loads(out.stdout.strip().splitlines()[-1])
    phases["process"] = time.perf_counter() - start
    return phases


def best_of(load: str, threads: int, repeat: int) -> dict[str, float]:
    """Per phase, the best of `repeat` runs: the one least disturbed by other work on the machine."""
    runs = [run_child(load, threads) for _ in range(repeat)]
    return {key: min(r[key] for r in runs) for key in runs[0]}


def source_model():
    """(model, tokenizer, description) — the shipped model if there is one, else a random `small`."""
    import torch

    from core.checkpoint import load_model
    from core.data.tokenizer import Tokenizer
    from core.model.config import preset
    from core.model.transformer import Transformer

    if (ROOT / "weights" / "model.safetensors").exists():
        loaded = load_model(ROOT / "weights")
        return loaded.model, loaded.tokenizer, f"weights/ ({loaded.cfg.d_model}d, vocab {loaded.cfg.vocab_size})"
    spm = ROOT / "runs" / "shipped" / "spm.model"
    if spm.exists():
        tokenizer, origin = Tokenizer.load(spm), "runs/shipped/spm.model"
    else:
        text = (ROOT / "tests" / "fixtures" / "tiny.tsv").read_text(encoding="utf-8").replace("\t", "\n")
        tokenizer, origin = Tokenizer.train(text.splitlines(), vocab_size=120), "fixture tokenizer"
    torch.manual_seed(0)
    model = Transformer(preset("small", vocab_size=tokenizer.vocab_size))
    return model, tokenizer, f"random small (vocab {tokenizer.vocab_size}, {origin})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    import torch

    from core.checkpoint import WEIGHTS_FILE, save_model

    model, tokenizer, description = source_model()
    with tempfile.TemporaryDirectory() as tmp:
        dirs = {}
        for name, dtype in (("fp32", torch.float32), ("fp16", torch.float16)):
            dirs[name] = save_model(model, tokenizer, Path(tmp) / name, dtype=dtype)
        print(
            f"model: {description}, {model.num_parameters() / 1e6:.1f}M parameters; "
            f"threads {args.threads}, best of {args.repeat}, load average {os.getloadavg()[0]:.2f}"
        )
        rows = [("import torch (reference)", best_of("", args.threads, args.repeat), None)]
        for name, path in dirs.items():
            size = (path / WEIGHTS_FILE).stat().st_size / 2**20
            rows.append((f"load {name} ({size:.1f} MiB)", best_of(str(path), args.threads, args.repeat), name))
    ref = rows[0][1]
    print(
        f"{'case':<26} {'process s':>9} {'torch s':>8} {'core s':>7} {'load_model s':>12} {'(cpu s)':>8}"
        "  process vs import torch"
    )
    for label, t, _ in rows:
        print(
            f"{label:<26} {t['process']:>9.3f} {t['torch']:>8.3f} {t['core']:>7.3f} {t['load']:>12.3f} "
            f"{t['load_cpu']:>8.3f}  {t['process'] / ref['process']:.2f}x"
        )
    fp32, fp16 = rows[1][1]["load"], rows[2][1]["load"]
    print(
        f"load_model fp16 / fp32: {fp16 / fp32:.2f}x; target load_model < 0.5 s: "
        f"{'met' if max(fp32, fp16) < 0.5 else 'NOT met'}; load average after: {os.getloadavg()[0]:.2f}"
    )


if __name__ == "__main__":
    main()
