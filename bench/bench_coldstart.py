"""Cold start: wall time of one `tt translate "Je suis étudiant"` loading the model here, and sent
to a running `tt serve` (a warm call), against a bare `import torch`.

A one-sentence translation is mostly start-up: Python, torch, the model file, the tokenizer. torch's
import is the floor a local call cannot go under, so it is the reference, measured in the same run;
the bars: local ≤ import torch + 0.4 s, via a server
≤ 0.3 s. The warm call runs what the installed `tt` runs (tt_cli.launch:main): the server is found
through its announcement (a private $XDG_RUNTIME_DIR for this run), with no option set.

    nice -n 19 python bench/bench_coldstart.py --runs 5 [--model DIR]

Model: --model, else the shipped one (weights/model.safetensors) when present, else a random-init
`small` model (with a SentencePiece model trained on tests/fixtures/tiny.tsv) in a temporary dir.
tt's sources are compiled to bytecode first (what a first run writes). On a shared, busy machine
wall time mostly measures waiting for a core: CPU time (user + system of the child) is printed
beside it, and the load average before and after.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


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


def time_command(cmd: list[str], runs: int, env: dict | None = None) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds (user + system of the child) of each run. On a shared, busy machine the
    wall time mostly measures waiting for a core; the CPU time is what an idle machine would wait."""
    wall, cpu = [], []
    subprocess.run(cmd, capture_output=True, check=True, env=env)  # warm the page cache and .pyc files
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(cmd, capture_output=True, check=True, env=env)
        wall.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return wall, cpu


TT = "import sys; sys.argv[0] = 'tt'; from tt_cli.launch import main; main()"  # the console script's body


def start_server(model_dir: Path, runtime: Path) -> subprocess.Popen:
    """`tt serve` on a free port, announced in `runtime`; returns once it listens."""
    env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime), "PYTHONPATH": str(ROOT)}
    env.pop("TT_SERVER", None)
    command = [sys.executable, "-c", TT, "serve", "--port", "0", "--threads", "1", "--model", str(model_dir)]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    if '"listening"' not in (process.stderr.readline() or ""):
        raise SystemExit("tt serve did not start")
    threading.Thread(target=process.stderr.read, daemon=True).start()  # drain its access log
    return process


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--model", help="model directory (default: shipped, else random small)")
    args = parser.parse_args()
    # tt's bytecode first, as a first run writes it (and pip's install of a wheel), like torch's, which pip
    # compiled: where PYTHONDONTWRITEBYTECODE is set (this project's sandbox) every call would otherwise
    # compile tt's sources again, ~0.05 s that no installed copy pays.
    import compileall

    for package in ("core", "tt_cli", "weights"):
        compileall.compile_dir(ROOT / package, quiet=1)
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        model_dir, model_name = pick_model(args.model, Path(tmp))
        runtime = Path(tmp) / "runtime"
        runtime.mkdir(mode=0o700)
        tt = [sys.executable, "-c", TT, "translate", "--model", str(model_dir)]
        typer_app = [sys.executable, "-m", "tt_cli.main", *tt[3:]]  # what `tt` ran before tt_cli.launch
        env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime), "PYTHONPATH": str(ROOT)}
        env.pop("TT_SERVER", None)
        rows = [
            ("python -c pass (the interpreter)", [sys.executable, "-c", "pass"], env),
            ("python -c 'import torch' (reference)", [sys.executable, "-c", "import torch"], env),
            ('tt translate "Je suis étudiant" (local, cold)', [*tt, "Je suis étudiant"], env),
            ("  --greedy (local, cold)", [*tt, "--greedy", "Je suis étudiant"], env),
            ("  the same through Typer (local, cold)", [*typer_app, "Je suis étudiant"], env),
        ]
        results = [(name, time_command(cmd, args.runs, env)) for name, cmd, env in rows]
        server = start_server(model_dir, runtime)
        try:
            warm = [
                # The server runs the text pipeline (the default run) and the model alone (--raw).
                ('tt translate "Je suis étudiant" (via tt serve)', [*tt, "Je suis étudiant"]),
                ('tt translate --raw "Je suis étudiant" (via tt serve)', [*tt, "--raw", "Je suis étudiant"]),
            ]
            results += [(name, time_command(cmd, args.runs, env)) for name, cmd in warm]
        finally:
            server.terminate()
            server.wait(timeout=60)
    report(results, args.runs, model_name, load_before)


def report(results, runs: int, model_name: str, load_before: float) -> None:
    from bench_serve import cpu

    ref_wall, ref_cpu = (statistics.median(x) for x in results[1][1])
    print(f"CPU: {cpu()}")
    print(
        f"model: {model_name}; {runs} runs each (median); load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after"
    )
    print(f"{'command':<50} {'wall s':>7} {'vs torch':>9} {'ratio':>6} {'CPU s':>7} {'vs torch':>9} {'ratio':>6}")
    for name, (wall, cpu_s) in results:
        w, c = statistics.median(wall), statistics.median(cpu_s)
        print(
            f"{name:<50} {w:7.2f} {w - ref_wall:+9.2f} {w / ref_wall:6.2f} {c:7.2f} {c - ref_cpu:+9.2f} {c / ref_cpu:6.2f}"
        )
    local = [statistics.median(x) - ref for x, ref in zip(results[2][1], (ref_wall, ref_cpu))]
    served = [statistics.median(x) for x in results[5][1]]
    verdict = "met" if local[0] <= 0.4 else "NOT met"
    print(f"bar: local ≤ import torch + 0.40 s → {verdict} (wall {local[0]:+.2f} s, CPU {local[1]:+.2f} s)")
    verdict = "met" if served[0] <= 0.3 else "NOT met"
    print(f"bar: via tt serve ≤ 0.30 s → {verdict} (wall {served[0]:.2f} s, CPU {served[1]:.2f} s of the client)")


if __name__ == "__main__":
    main()
