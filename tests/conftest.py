"""Shared fixtures: a tiny real model (trained for a few seconds on our own fixture corpus)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
import torch

# The CI gate's hooks (a skip fails the run under CI=true), kept in a module of their own that does not
# import torch, so tests/test_ci_gate.py can load it alone into cheap pytest subprocesses.
from tests.ci_gate import (  # noqa: F401  (pytest finds the hooks by their names in this module)
    IN_CI,
    ROOT,
    SHARED_DATA,
    pytest_collection_modifyitems,
    pytest_collectreport,
    pytest_report_header,
    pytest_runtest_logreport,
    pytest_sessionfinish,
    pytest_terminal_summary,
)

# Tests run on one thread: tiny models are faster that way, and results are reproducible.
torch.set_num_threads(1)

# A `tt serve` the developer left running must not answer the tests' `tt translate` calls, and the
# servers tests start must not announce themselves to the developer's: warm calls only where a test
# asks for one (TT_SERVER=URL), announcements in a directory of this run's own.
os.environ["TT_SERVER"] = ""
os.environ["XDG_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="tt-test-runtime-")

FIXTURES = Path(__file__).resolve().parent / "fixtures"
TINY_TSV = FIXTURES / "tiny.tsv"


def model_files(run_dir: Path, model_dir: Path) -> Path:
    """Copy a run's model (weights and tokenizer) into `model_dir`, on its own so no test sees the run."""
    for name in ("model.safetensors", "spm.model"):
        shutil.copy(run_dir / name, model_dir / name)
    return model_dir


def write_pair_files(directory: Path, n: int) -> tuple[Path, Path]:
    """The first `n` fixture pairs as src.fr / ref.en in `directory` (an --src/--ref set)."""
    lines = [line.split("\t") for line in TINY_TSV.read_text(encoding="utf-8").splitlines()[:n]]
    (directory / "src.fr").write_text("".join(fr + "\n" for fr, _ in lines), encoding="utf-8")
    (directory / "ref.en").write_text("".join(en + "\n" for _, en in lines), encoding="utf-8")
    return directory / "src.fr", directory / "ref.en"


def tiny_train_config(out, **changes):
    """The TrainConfig of the tests' tiny training runs (tiny preset, ~120-piece vocabulary, the
    fixture corpus, seed 1, no validation, no checkpoints); a test changes only what it studies."""
    from core.train.config import TrainConfig

    base = dict(
        data=[str(TINY_TSV)],
        out=str(out),
        preset="tiny",
        vocab_size=120,
        max_tokens=512,
        valid_every=0,
        save_every=0,
        bleu_sample=0,
        seed=1,
        model_overrides={"max_len": 64},
    )
    return TrainConfig(**{**base, **changes})


@pytest.fixture(scope="session")
def tiny_run_dir(tmp_path_factory) -> Path:
    """The training run behind `tiny_model_dir`, shared by every test that needs a run: 300 steps on
    tests/fixtures/tiny.tsv, checkpoints at steps 100, 200 and 300 (saving one changes no weight).

    Deterministic: fixed seed, one thread. It learns the fixture well enough that greedy decoding
    of a training sentence gives sensible English, which is all the CLI and TUI tests need.
    """
    from core.train.trainer import Trainer

    out = tmp_path_factory.mktemp("tiny_run")
    Trainer(tiny_train_config(out, max_steps=300, warmup=100, save_every=100, keep_last=0)).run()
    return out


@pytest.fixture(scope="session")
def tiny_model_dir(tiny_run_dir, tmp_path_factory) -> Path:
    """The model directory of `tiny_run_dir` (its last weights), on its own so no test sees the run."""
    return model_files(tiny_run_dir, tmp_path_factory.mktemp("tiny_model"))


@pytest.fixture(scope="session")
def tiny_loaded(tiny_model_dir):
    from core.checkpoint import load_model

    return load_model(tiny_model_dir)


@pytest.fixture(scope="session")
def tiny_translation(tiny_model_dir):
    """What `tt translate --model TINY [OPTIONS] SENTENCE` prints, run in this process.

    The tiny model's English rests on the floats of its few seconds of training, so on a CPU with
    other kernels (AVX-512, AVX2, none) a borderline sentence comes out otherwise ("The cat is sred.").
    Tests that drive tt in a subprocess compare with this, never with a fixed string."""
    from typer.testing import CliRunner

    from tt_cli.main import app

    done: dict[tuple, str] = {}

    def translate(sentence: str, *options: str) -> str:
        if (sentence, options) not in done:
            result = CliRunner().invoke(app, ["translate", "--model", str(tiny_model_dir), *options, sentence])
            assert result.exit_code == 0 and result.stdout.strip(), result.stderr
            done[sentence, options] = result.stdout.rstrip("\n")
        return done[sentence, options]

    return translate
