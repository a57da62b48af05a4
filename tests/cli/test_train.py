"""`tt train` and `tt average` from the outside: options, errors, and real processes killed mid-run."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from core.checkpoint import load_model
from core.device import resolve_precision
from core.train.state import list_checkpoints
from tests.conftest import TINY_TSV
from tt_cli.main import app

runner = CliRunner()


def tiny_args(out: Path, *extra: str, data: Path = TINY_TSV) -> list[str]:
    return [
        "train",
        "--data",
        str(data),
        "--out",
        str(out),
        "--preset",
        "tiny",
        "--vocab-size",
        "120",
        "--max-tokens",
        "256",
        "--warmup",
        "50",
        "--valid-every",
        "0",
        "--threads",
        "1",
        "--log-every",
        "1",
        *extra,
    ]


def step_losses(run_dir: Path) -> dict[int, float]:
    records = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return {r["step"]: r["loss"] for r in records if r["event"] == "step"}


def no_traceback(result) -> None:
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout


# -- errors ----------------------------------------------------------------------------------------
def test_no_data_says_how_to_get_some(tmp_path):
    result = runner.invoke(app, ["train", "--out", str(tmp_path / "r")])
    assert result.exit_code == 1
    assert result.stderr.startswith("tt: error: no training data: pass --data FILE.tsv")
    assert "tt data get tatoeba" in result.stderr and result.stderr.count("\n") == 1
    no_traceback(result)


def test_malformed_line_names_file_and_line(tmp_path):
    bad = tmp_path / "bad.tsv"
    bad.write_text(TINY_TSV.read_text(encoding="utf-8") + "une ligne sans tabulation\n", encoding="utf-8")
    result = runner.invoke(app, tiny_args(tmp_path / "r", "--max-steps", "2", "--data", str(bad)))
    assert result.exit_code == 1
    assert f"{bad}:41: expected source<TAB>target, found no tab" in result.stderr
    no_traceback(result)
    skipped = runner.invoke(app, tiny_args(tmp_path / "r2", "--max-steps", "2", "--data", str(bad), "--skip-bad-lines"))
    assert skipped.exit_code == 0, skipped.stderr
    assert "1 malformed" in skipped.stderr and f"{bad}:41" in skipped.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (["--max-steps", "2", "--precision", "fp16", "--device", "cpu"], "fp16 needs a CUDA GPU"),
        (["--max-time", "ten minutes"], "--max-time 'ten minutes': give seconds or a duration"),
        (["--max-steps", "2", "--d-model", "30", "--heads", "4"], "d_model (30) must be divisible by h (4)"),
        (["--max-steps", "2", "--preset", "huge"], "unknown preset 'huge'"),
        (["--max-steps", "2", "--device", "tpu"], "unknown device 'tpu'; use auto, cpu, cuda, cuda:N or mps"),
        (["--max-steps", "2", "--threads", "-1"], "--threads must be 0 (auto) or positive, got -1"),
    ],
)
def test_bad_options_are_one_line(tmp_path, args, message):
    result = runner.invoke(app, tiny_args(tmp_path / "r", *args))
    assert result.exit_code == 1 and message in result.stderr, result.stderr
    no_traceback(result)


def test_resume_without_a_run(tmp_path):
    result = runner.invoke(app, ["train", "--out", str(tmp_path / "none"), "--resume"])
    assert result.exit_code == 1 and "nothing to resume" in result.stderr


# -- a real run ------------------------------------------------------------------------------------
def test_train_model_options_then_translate_and_average(tmp_path):
    out = tmp_path / "run"
    model_opts = [
        "--d-model",
        "16",
        "--heads",
        "2",
        "--encoder-layers",
        "1",
        "--decoder-layers",
        "2",
        "--d-ff",
        "24",
        "--dropout",
        "0.05",
        "--attention-dropout",
        "0.1",
        "--max-len",
        "40",
        "--positional",
        "learned",
        "--norm",
        "pre",
        "--no-share-embeddings",
    ]
    result = runner.invoke(
        app, tiny_args(out, "--max-steps", "6", "--save-every", "2", "--keep-last", "3", "--quiet", *model_opts)
    )
    assert result.exit_code == 0, result.stderr
    assert result.stdout == f"{out}\n"  # the result: where the model is
    assert result.stderr == ""  # --quiet
    cfg = load_model(out).cfg
    assert (cfg.d_model, cfg.h, cfg.n_encoder_layers, cfg.n_decoder_layers, cfg.d_ff) == (16, 2, 1, 2, 24)
    assert (cfg.dropout, cfg.attention_dropout, cfg.max_len, cfg.positional, cfg.norm, cfg.share_embeddings) == (
        0.05,
        0.1,
        40,
        "learned",
        "pre",
        False,
    )

    translated = runner.invoke(app, ["translate", "--model", str(out)], input="Je suis étudiant.\n")
    assert translated.exit_code == 0, translated.stderr
    assert len(translated.stdout.splitlines()) == 1

    # --resume keeps the run's own model options without repeating them; only the budget changes.
    more = runner.invoke(app, ["train", "--out", str(out), "--resume", "--max-steps", "8", "--quiet"])
    assert more.exit_code == 0, more.stderr
    assert list_checkpoints(out)[-1].name == "step_00000008"
    changed = runner.invoke(app, ["train", "--out", str(out), "--resume", "--max-steps", "9", "--d-model", "32"])
    assert changed.exit_code == 1 and "differs from this run's options (d_model)" in changed.stderr

    averaged = runner.invoke(app, ["average", "--run", str(out), "--last", "3", "--out", str(tmp_path / "avg")])
    assert averaged.exit_code == 0, averaged.stderr
    assert averaged.stdout == f"{tmp_path / 'avg'}\n"
    assert "averaged 3 checkpoints (step_00000004 … step_00000008)" in averaged.stderr
    assert load_model(tmp_path / "avg").metadata["averaged"] == "step_00000004,step_00000006,step_00000008"
    too_many = runner.invoke(app, ["average", "--run", str(out), "--last", "7"])
    assert too_many.exit_code == 1 and "--last 7 asks for more checkpoints than the run kept (3)" in too_many.stderr
    nothing = runner.invoke(app, ["average", "--run", str(tmp_path / "nope")])
    assert nothing.exit_code == 1 and "no such run directory" in nothing.stderr
    # --weight: a weighted mean of the checkpoints given, in their order (normalised).
    first, last = list_checkpoints(out)[0], list_checkpoints(out)[-1]
    pair = ["average", "-c", str(first), "-c", str(last), "--out", str(tmp_path / "w")]
    weighted = runner.invoke(app, [*pair, "--weight", "1", "--weight", "3"])
    assert weighted.exit_code == 0, weighted.stderr
    assert "weights 1 3" in weighted.stderr and load_model(tmp_path / "w").metadata["weights"] == "0.25,0.75"
    a, b = (load_model(p).model.state_dict()["generator.weight"] for p in (first, last))
    got = load_model(tmp_path / "w").model.state_dict()["generator.weight"]
    assert torch.allclose(got, 0.25 * a + 0.75 * b, atol=1e-6) and not torch.allclose(got, (a + b) / 2, atol=1e-4)
    one_weight = runner.invoke(app, [*pair, "--weight", "1"])
    assert one_weight.exit_code == 1 and "2 checkpoints take 2 weights" in one_weight.stderr
    onto_a_file = runner.invoke(app, ["average", "--run", str(out), "--last", "3", "--out", str(out / "spm.model")])
    assert onto_a_file.exit_code == 1 and onto_a_file.stderr.endswith(
        "spm.model: not a directory (a file of that name exists)\n"
    )


def test_progress_lines_on_a_non_terminal(tmp_path):
    result = runner.invoke(
        app, tiny_args(tmp_path / "r", "--max-steps", "4", "--valid-every", "2", "--bleu-sample", "4")
    )
    assert result.exit_code == 0, result.stderr
    err = result.stderr
    begin = json.loads((tmp_path / "r" / "metrics.jsonl").read_text().splitlines()[0])
    assert begin["precision"] == resolve_precision(torch.device(begin["device"]), "auto")  # the default
    assert err.startswith(f"training: {begin['params']:,} parameters on {begin['device']} in {begin['precision']}; ")
    assert "training: " in err and "step 4/4  loss " in err and " tok/s  ETA " in err
    assert "valid @ 2: loss " in err and "BLEU " in err and "translate with: tt translate --model" in err


def test_prefix_gzip_data_with_explicit_valid_and_dedup(tmp_path):
    import gzip

    pairs = [line.split("\t") for line in TINY_TSV.read_text(encoding="utf-8").splitlines()]
    for lang, col in (("fr", 0), ("en", 1)):
        with gzip.open(tmp_path / f"c.{lang}.gz", "wt", encoding="utf-8") as f:
            f.write("".join(p[col] + "\n" for p in pairs + pairs[:5]))  # five repeated pairs
        (tmp_path / f"v.{lang}").write_text("".join(p[col] + "\n" for p in pairs[:3]), encoding="utf-8")
    out = tmp_path / "run"
    result = runner.invoke(
        app, tiny_args(out, "--max-steps", "2", "--dedup", "--valid", str(tmp_path / "v"), data=tmp_path / "c")
    )
    assert result.exit_code == 0, result.stderr
    start = json.loads((out / "metrics.jsonl").read_text().splitlines()[0])
    # --valid's 3 pairs, and the corpus's own held-out share (4 pairs), kept out of training and reported apart.
    counts = (start["pairs_read"], start["skipped_duplicate"], start["train_pairs"], start["valid_pairs"])
    assert counts == (45, 5, 36, 7)
    assert "5 duplicate" in result.stderr
    # Without cleaning (how runs started before it behave) --valid alone validates and nothing is held out.
    legacy = runner.invoke(
        app,
        tiny_args(
            tmp_path / "legacy", "--max-steps", "1", "--no-clean", "--valid", str(tmp_path / "v"), data=tmp_path / "c"
        ),
    )
    assert legacy.exit_code == 0, legacy.stderr
    first = json.loads((tmp_path / "legacy" / "metrics.jsonl").read_text().splitlines()[0])
    assert (first["train_pairs"], first["valid_pairs"]) == (40, 3)

    ckpt = list_checkpoints(out)[-1]
    averaged = runner.invoke(
        app, ["average", "--checkpoint", str(ckpt), "--checkpoint", str(ckpt), "--out", str(tmp_path / "a")]
    )
    assert averaged.exit_code == 0, averaged.stderr
    assert load_model(tmp_path / "a").metadata["averaged"] == f"{ckpt.name},{ckpt.name}"
    no_out = runner.invoke(app, ["average", "--checkpoint", str(ckpt)])
    assert no_out.exit_code == 1 and "--out DIR is needed with --checkpoint" in no_out.stderr


# -- real processes, really killed ----------------------------------------------------------------------
def start(args: list[str], cwd: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    # A child inherits an ignored SIGINT (pytest started with `&` from a script); tt train would
    # then rightly keep ignoring it. Give the child the default, as a terminal would.
    return subprocess.Popen(
        [sys.executable, "-m", "tt_cli.main", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # noqa: PLW1509


def wait_for(predicate, proc: subprocess.Popen, timeout: float = 120.0) -> None:
    deadline = time.time() + timeout
    while not predicate():
        if proc.poll() is not None:
            raise AssertionError(f"tt train ended early ({proc.returncode}): {proc.stderr.read()}")
        if time.time() > deadline:
            proc.kill()
            raise AssertionError("tt train never got there")
        time.sleep(0.02)


@pytest.mark.slow  # a subprocess that imports torch and loads a model
def test_sigkill_then_resume_matches_an_uninterrupted_run(tmp_path, tiny_model_dir):
    # A shared tokenizer, so both runs see the very same pieces.
    common = [
        "--spm-model",
        str(tiny_model_dir / "spm.model"),
        "--dropout",
        "0.1",
        "--save-every",
        "10",
        "--keep-last",
        "0",
    ]
    reference = runner.invoke(app, tiny_args(tmp_path / "whole", "--max-steps", "120", "--quiet", *common))
    assert reference.exit_code == 0, reference.stderr

    killed = tmp_path / "killed"
    proc = start(tiny_args(killed, "--max-steps", "120", "--quiet", *common), tmp_path)
    wait_for(lambda: (killed / "checkpoints" / "step_00000020" / "trainer.json").exists(), proc)
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    assert proc.returncode == -signal.SIGKILL
    at = int(list_checkpoints(killed)[-1].name.split("_")[1])
    assert 20 <= at < 120

    resumed = start(["train", "--out", str(killed), "--resume", "--quiet"], tmp_path)
    _, stderr = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, stderr
    a, b = step_losses(tmp_path / "whole"), step_losses(killed)
    assert sorted(b) == list(range(1, 121))
    assert [a[s] for s in range(1, 121)] == [b[s] for s in range(1, 121)]


@pytest.mark.slow  # a subprocess that imports torch and loads a model
@pytest.mark.parametrize("sig, code, word", [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")])
def test_signal_saves_a_checkpoint_before_exiting(tmp_path, sig, code, word):
    out = tmp_path / "run"
    proc = start(
        tiny_args(out, "--max-steps", "100000", "--save-every", "0", "--spm-model", str(_spm(tmp_path))), tmp_path
    )
    wait_for(
        lambda: (out / "metrics.jsonl").exists() and len((out / "metrics.jsonl").read_text().splitlines()) > 5, proc
    )
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == code, stderr
    assert stdout == ""  # no result: the run did not finish
    last_step = max(step_losses(out))
    assert f"tt: {word} at step {last_step}; checkpoint saved. Continue with: tt train --out {out} --resume" in stderr
    assert "Traceback" not in stderr
    assert list_checkpoints(out)[-1].name == f"step_{last_step:08d}"
    load_model(out)  # the weights at the top level are a model translate can load


def _spm(tmp_path: Path) -> Path:
    """A tokenizer trained once here, so the signal tests skip SentencePiece training."""
    from core.data.readers import read_tsv
    from core.data.tokenizer import Tokenizer

    path = tmp_path / "spm.model"
    Tokenizer.train((s for p in read_tsv(TINY_TSV) for s in (p.src, p.tgt)), 120).save(path)
    return path


@pytest.mark.slow  # a subprocess that imports torch and loads a model
def test_one_run_directory_one_writer(tmp_path):
    out, spm = tmp_path / "run", _spm(tmp_path)
    first = start(tiny_args(out, "--max-steps", "100000", "--save-every", "5", "--spm-model", str(spm)), tmp_path)
    try:
        wait_for(lambda: len(list_checkpoints(out)) >= 1, first)
        # Started while the first trains: refused at once, before writing anything.
        second = start(tiny_args(out, "--max-steps", "3", "--spm-model", str(spm)), tmp_path)
        stdout, stderr = second.communicate(timeout=120)
        assert second.returncode == 1 and stdout == ""
        assert stderr == (
            f"tt: error: {out} is in use by another training run (pid {first.pid} on {socket.gethostname()}); "
            "wait for it to end, or choose another --out\n"
        )
        resume = start(["train", "--out", str(out), "--resume"], tmp_path)
        assert resume.communicate(timeout=120)[1].startswith(
            f"tt: error: {out} is in use by another training run (pid {first.pid}"
        )
        assert first.poll() is None  # the first run never noticed
    finally:
        first.kill()
        first.communicate()
    # The kernel dropped the lock with the process: no stale lock stands in the way of --resume.
    at = int(list_checkpoints(out)[-1].name.split("_")[1])
    resumed = start(["train", "--out", str(out), "--resume", "--max-steps", str(at + 2), "--quiet"], tmp_path)
    stdout, stderr = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, stderr
    assert stdout == f"{out}\n" and list_checkpoints(out)[-1].name == f"step_{at + 2:08d}"


def test_resume_reads_a_run_saved_when_the_length_filter_was_called_max_len(tmp_path, tiny_model_dir):
    # TrainConfig.max_len (the training length filter) is now max_pieces, apart from the model's max_len.
    out = tmp_path / "run"
    spm = ["--spm-model", str(tiny_model_dir / "spm.model"), "--save-every", "5"]
    first = runner.invoke(app, tiny_args(out, "--max-steps", "5", "--max-pieces", "77", "--quiet", *spm))
    assert first.exit_code == 0, first.stderr
    info_path = list_checkpoints(out)[-1] / "trainer.json"
    info = json.loads(info_path.read_text())
    info["train_config"]["max_len"] = info["train_config"].pop("max_pieces")  # as older runs wrote it
    info_path.write_text(json.dumps(info))
    resumed = runner.invoke(app, ["train", "--out", str(out), "--resume", "--max-steps", "10", "--quiet"])
    assert resumed.exit_code == 0, resumed.stderr
    assert json.loads((list_checkpoints(out)[-1] / "trainer.json").read_text())["train_config"]["max_pieces"] == 77


def test_a_smaller_vocabulary_is_reported_and_resuming_a_finished_run_says_so(tmp_path):
    out = tmp_path / "r"
    args = tiny_args(out, "--max-steps", "2")
    args[args.index("--vocab-size") + 1] = "5000"  # far more than 40 short sentence pairs hold
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.stderr
    learned = load_model(out).tokenizer.vocab_size
    assert learned < 5000
    assert f"tt: note: the vocabulary has {learned} pieces, fewer than --vocab-size 5000" in first.stderr
    again = runner.invoke(app, ["train", "--out", str(out), "--resume"])
    assert again.exit_code == 0, again.stderr
    assert "tt: the run is already at --max-steps 2: nothing to train" in again.stderr
    assert again.stdout == f"{out}\n"
    longer = runner.invoke(app, ["train", "--out", str(out), "--resume", "--max-steps", "3"])
    assert longer.exit_code == 0 and "already at" not in longer.stderr
    assert list_checkpoints(out)[-1].name == "step_00000003"
