"""Cold start: wall time of one `tt translate "Je suis étudiant"` against a bare `import torch`.

A one-sentence translation is mostly start-up: Python, torch, the model file, the tokenizer. torch's
import is the floor nobody can go under, so it is the reference, measured in the same run; the
target is at most +0.6 s over it (lazy imports in tt_cli; nothing computed at import time).

    nice -n 19 python bench/bench_coldstart.py --runs 5 [--model DIR]

Model: --model, else the shipped one (weights/model.safetensors) when present, else a random-init
`small` model (with a SentencePiece model trained on tests/fixtures/tiny.tsv) in a temporary dir.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def random_model_dir(directory: Path) -> Path:
    """A random-init `small` model saved like a real one (its outputs are noise; its size is real)."""
    import torch

    from core.checkpoint import save_model
    from core.data.tokenizer import Tokenizer
    from core.model.config import preset
    from core.model.transformer import Transformer

    torch.manual_seed(0)
    lines = (ROOT / "tests" / "fixtures" / "tiny.tsv").read_text(encoding="utf-8").splitlines()
    tokenizer = Tokenizer.train((part for line in lines for part in line.split("\t")), vocab_size=120)
    model = Transformer(preset("small", vocab_size=tokenizer.vocab_size)).eval()
    return save_model(model, tokenizer, directory)


def pick_model(arg: str | None, tmp: Path) -> tuple[Path, str]:
    if arg:
        return Path(arg), f"--model {arg}"
    shipped = ROOT / "weights"
    if (shipped / "model.safetensors").exists():
        return shipped, "shipped (weights/)"
    return random_model_dir(tmp / "random_small"), "random-init small (no shipped weights yet)"


def time_command(cmd: list[str], runs: int) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds (user + system of the child) of each run. On a shared, busy machine the
    wall time mostly measures waiting for a core; the CPU time is what an idle machine would wait."""
    wall, cpu = [], []
    subprocess.run(cmd, capture_output=True, check=True)  # warm the page cache and .pyc files
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(cmd, capture_output=True, check=True)
        wall.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--model", help="model directory (default: shipped, else random small)")
    args = parser.parse_args()
    tt = str(Path(sys.executable).with_name("tt"))
    with tempfile.TemporaryDirectory() as tmp:
        model_dir, model_name = pick_model(args.model, Path(tmp))
        rows = [
            ("python -c 'import torch' (reference)", [sys.executable, "-c", "import torch"]),
            ("tt --help", [tt, "--help"]),
            (
                'tt translate "Je suis étudiant" (beam 4)',
                [tt, "translate", "--model", str(model_dir), "Je suis étudiant"],
            ),
            (
                'tt translate --greedy "Je suis étudiant"',
                [tt, "translate", "--model", str(model_dir), "--greedy", "Je suis étudiant"],
            ),
        ]
        results = [(name, time_command(cmd, args.runs)) for name, cmd in rows]
    ref_wall, ref_cpu = (statistics.median(x) for x in results[0][1])
    print(f"model: {model_name}; {args.runs} runs each (median), load average {os.getloadavg()[0]:.1f}")
    print(f"{'command':<46} {'wall s':>7} {'vs torch':>9} {'ratio':>6} {'CPU s':>7} {'vs torch':>9} {'ratio':>6}")
    for name, (wall, cpu) in results:
        w, c = statistics.median(wall), statistics.median(cpu)
        print(
            f"{name:<46} {w:7.2f} {w - ref_wall:+9.2f} {w / ref_wall:6.2f} {c:7.2f} {c - ref_cpu:+9.2f} {c / ref_cpu:6.2f}"
        )
    wall, cpu = (statistics.median(x) - ref for x, ref in zip(results[2][1], (ref_wall, ref_cpu)))
    verdict = "met" if max(wall, cpu) <= 0.6 else "NOT met"
    print(
        f"target: tt translate (beam 4) ≤ +0.60 s over import torch → {verdict} (wall {wall:+.2f} s, CPU {cpu:+.2f} s)"
    )


if __name__ == "__main__":
    main()
