"""Shared fixtures: a tiny real model (trained for a few seconds on our own fixture corpus)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import torch

# Tests run on one thread: tiny models are faster that way, and results are reproducible.
torch.set_num_threads(1)

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
SHARED_DATA = Path(os.environ.get("TT_SHARED_DATA", ROOT.parent / "shared" / "data"))
TINY_TSV = FIXTURES / "tiny.tsv"


# CI sets CI=true (GitHub Actions, GitLab and most others do; .ci/run does too). There a skip is a
# failure: a green run must mean every test ran, including the data-marked ones (the shipped
# model's quality figures among them). Without CI=true, tests that need the data skip, with the reason shown.
IN_CI = os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}

if IN_CI:
    from hypothesis import settings

    # The same examples on every CI run, and no example database carried over from an earlier one,
    # so a CI failure reproduces with the same command.
    settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
    settings.load_profile("ci")


def pytest_report_header(config):
    data = f"{SHARED_DATA} ({'present' if SHARED_DATA.is_dir() else 'absent: data-marked tests skip'})"
    ci = "CI=true: a skip fails the run; Hypothesis derandomized" if IN_CI else "not CI: skips are allowed"
    return [f"tt shared data: {data}", f"tt: {ci}"]


def pytest_collection_modifyitems(config, items):
    if SHARED_DATA.is_dir():
        return
    needs_data = [item for item in items if item.get_closest_marker("data")]  # a marker, not the tests/core/data folder
    if needs_data and IN_CI:
        raise pytest.UsageError(
            f"CI=true but {SHARED_DATA} is absent; {len(needs_data)} test(s) need it. "
            "Put the shared data beside the repository or point TT_SHARED_DATA at it."
        )
    skip = pytest.mark.skip(reason=f"{SHARED_DATA} is absent (set TT_SHARED_DATA)")
    for item in needs_data:
        item.add_marker(skip)


_skipped: list[str] = []


def pytest_runtest_logreport(report):
    # An expected failure (xfail) is reported as skipped too; it is not a skip.
    if report.skipped and not hasattr(report, "wasxfail"):
        _skipped.append(report.nodeid)


def pytest_sessionfinish(session, exitstatus):
    if IN_CI and _skipped and exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if IN_CI and _skipped:
        terminalreporter.section("skips fail the run in CI", sep="=", red=True, bold=True)
        for nodeid in _skipped:
            terminalreporter.line(f"SKIPPED (counted as a failure): {nodeid}")


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    """A model directory (tiny preset, ~120-piece vocabulary) trained on tests/fixtures/tiny.tsv.

    Deterministic: fixed seed, one thread. It learns the fixture well enough that greedy decoding
    of a training sentence gives sensible English, which is all the CLI and TUI tests need.
    """
    from core.train.config import TrainConfig
    from core.train.trainer import Trainer

    out = tmp_path_factory.mktemp("tiny_run")
    cfg = TrainConfig(
        data=[str(TINY_TSV)],
        out=str(out),
        preset="tiny",
        vocab_size=120,
        max_steps=300,
        warmup=100,
        lr_scale=1.0,
        max_tokens=512,
        valid_every=0,
        save_every=0,
        bleu_sample=0,
        seed=1,
        model_overrides={"max_len": 64},
    )
    Trainer(cfg).run()
    model_dir = tmp_path_factory.mktemp("tiny_model")
    for name in ("model.safetensors", "spm.model"):
        shutil.copy(out / name, model_dir / name)
    return model_dir


@pytest.fixture(scope="session")
def tiny_loaded(tiny_model_dir):
    from core.checkpoint import load_model

    return load_model(tiny_model_dir)
