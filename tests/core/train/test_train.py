"""The Trainer in-process: schedule, loss, checkpoints, exact resume, graceful stops, averaging."""

from __future__ import annotations

import json
import math
import os
import re
import signal
import socket
import threading

import pytest
import torch

from core.checkpoint import load_model
from core.device import autocast_context, cpu_capabilities, native_bf16, resolve_precision
from core.errors import CheckpointError, ConfigError
from core.train.config import TrainConfig
from core.train.lock import LOCK_FILE, RunLock, lock_run_dir
from core.train.state import average_checkpoints, init_digest, list_checkpoints, read_trainer_info
from core.train.trainer import Trainer, cooldown_factor, label_smoothed_loss, noam_lr
from tests.conftest import TINY_TSV, tiny_train_config

# Rests on the floats of a model trained or decoded here: .ci/run runs it again under a second CPU ISA.
pytestmark = pytest.mark.isa


def tiny_cfg(out, **changes) -> TrainConfig:
    # Dropout on, so resuming must restore the RNG too, not only weights and Adam moments.
    base = dict(warmup=50, max_tokens=256, log_every=1, max_steps=20, seed=3)
    return tiny_train_config(out, **{**base, "model_overrides": {"dropout": 0.1, "max_len": 64}, **changes})


def step_losses(run_dir) -> dict[int, float]:
    out = {}
    for line in (run_dir / "metrics.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record["event"] == "step":
            out[record["step"]] = record["loss"]
    return out


def test_noam_schedule_warms_up_then_decays():
    d, w = 256, 100
    lrs = [noam_lr(s, d, w) for s in range(1, 400)]
    peak = max(range(len(lrs)), key=lrs.__getitem__) + 1
    assert peak == w
    assert noam_lr(50, d, w) == pytest.approx(noam_lr(100, d, w) / 2)  # linear warm-up
    assert noam_lr(400, d, w) == pytest.approx(noam_lr(100, d, w) / 2)  # inverse square root after
    assert noam_lr(100, d, w, scale=2.0) == pytest.approx(2 * d**-0.5 * w**-0.5)


def test_cooldown_is_a_straight_line_to_zero_over_the_last_steps():
    assert [cooldown_factor(s, 10, 4) for s in range(5, 11)] == [1.0, 1.0, 1.0, 0.75, 0.5, 0.25]
    assert cooldown_factor(3, 10, 0) == 1.0 and cooldown_factor(3, 0, 4) == 1.0  # off; no step budget


def step_lrs(run_dir) -> dict[int, float]:
    lines = (json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines())
    return {r["step"]: r["lr"] for r in lines if r["event"] == "step"}


def test_cooldown_brings_the_learning_rate_down_at_the_end_of_the_budget_and_on_resume(tmp_path):
    Trainer(tiny_cfg(tmp_path / "plain", max_steps=20)).run()
    Trainer(tiny_cfg(tmp_path / "cool", max_steps=20, cooldown=8)).run()
    plain, cool = step_lrs(tmp_path / "plain"), step_lrs(tmp_path / "cool")
    assert [cool[s] for s in range(1, 13)] == [plain[s] for s in range(1, 13)]  # untouched before the last 8
    assert cool[13] == pytest.approx(plain[13]) and cool[20] == pytest.approx(plain[20] / 8)
    assert all(cool[s] == pytest.approx(plain[s] * (21 - s) / 8) for s in range(13, 21))
    # A long run ends on a cool-down by resuming it with a larger budget and --cooldown (the model issue's use).
    Trainer(tiny_cfg(tmp_path / "plain", max_steps=30, cooldown=10), resume=True).run()
    resumed, scale = step_lrs(tmp_path / "plain"), tiny_cfg(tmp_path).lr_scale
    assert resumed[21] == pytest.approx(noam_lr(21, 32, 50, scale)) and resumed[30] == pytest.approx(
        noam_lr(30, 32, 50, scale) / 10
    )
    with pytest.raises(ConfigError, match="--cooldown counts back from the step budget"):
        Trainer(tiny_cfg(tmp_path / "t", max_steps=0, max_time=60.0, cooldown=5)).run()
    with pytest.raises(ConfigError, match="--cooldown must be 0 or more"):
        Trainer(tiny_cfg(tmp_path / "n", cooldown=-1)).run()


def test_label_smoothing_matches_the_formula():
    torch.manual_seed(0)
    logits = torch.randn(2, 3, 7)
    target = torch.tensor([[4, 2, 0], [1, 0, 0]])  # 0 = pad
    eps = 0.1
    loss, n = label_smoothed_loss(logits, target, pad_id=0, epsilon=eps)
    logp = logits.log_softmax(-1)
    expected = 0.0
    for b, t in ((0, 0), (0, 1), (1, 0)):
        y = target[b, t]
        # q = (1-ε)·one_hot(y) + ε/V, cross-entropy against it (§5.4).
        expected += -(1 - eps) * logp[b, t, y] - eps / 7 * logp[b, t].sum()
    assert n == 3
    assert float(loss) == pytest.approx(float(expected), rel=1e-5)


def test_training_lowers_the_loss_and_writes_a_loadable_model(tmp_path):
    result = Trainer(tiny_cfg(tmp_path, max_steps=60, valid_every=30, bleu_sample=4, save_every=20, keep_last=2)).run()
    assert result["status"] == "finished" and result["step"] == 60
    losses = step_losses(tmp_path)
    assert losses[60] < losses[1] * 0.7
    assert [p.name for p in list_checkpoints(tmp_path)] == ["step_00000040", "step_00000060"]  # keep_last 2
    loaded = load_model(tmp_path)  # the best model, where `tt translate --model RUN` looks
    assert loaded.cfg.dropout == 0.1 and loaded.cfg.vocab_size == loaded.tokenizer.vocab_size
    events = [json.loads(x)["event"] for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert events[0] == "start" and events[-1] == "end" and events.count("valid") == 2


def test_resume_continues_exactly(tmp_path):
    whole = tmp_path / "whole"
    Trainer(tiny_cfg(whole, max_steps=24)).run()
    part = tmp_path / "part"
    Trainer(tiny_cfg(part, max_steps=11)).run()
    # The resumed run takes its settings from the checkpoint's config, only the budget changes.
    Trainer(tiny_cfg(part, max_steps=24), resume=True).run()
    a, b = step_losses(whole), step_losses(part)
    assert sorted(b) == list(range(1, 25))
    assert [a[s] for s in range(1, 25)] == [b[s] for s in range(1, 25)]  # bit for bit
    wa, wb = load_model(list_checkpoints(whole)[-1]).model, load_model(list_checkpoints(part)[-1]).model
    assert all(torch.equal(x, y) for x, y in zip(wa.state_dict().values(), wb.state_dict().values()))


def test_resume_drops_log_lines_after_the_checkpoint(tmp_path):
    Trainer(tiny_cfg(tmp_path, max_steps=10)).run()
    with open(tmp_path / "metrics.jsonl", "a") as f:  # as if killed after step 12, mid-line
        f.write(json.dumps({"event": "step", "step": 12, "loss": 99.0}) + '\n{"event": "st')
    Trainer(tiny_cfg(tmp_path, max_steps=14), resume=True).run()
    lines = (tmp_path / "metrics.jsonl").read_text().splitlines()
    assert all(json.loads(x).get("loss") != 99.0 for x in lines)
    assert [json.loads(x)["step"] for x in lines if json.loads(x)["event"] == "step"] == list(range(1, 15))


def test_sigterm_saves_and_restores_the_previous_handler(tmp_path):
    seen = []
    previous = signal.signal(signal.SIGTERM, lambda *a: seen.append("old handler"))
    try:

        def preempt(event):
            if event.kind == "step" and event.step == 5:
                os.kill(os.getpid(), signal.SIGTERM)  # a cluster's preemption notice

        result = Trainer(tiny_cfg(tmp_path, max_steps=1000), [preempt]).run()
        assert result["status"] == "terminated" and result["step"] == 5
        assert [p.name for p in list_checkpoints(tmp_path)] == ["step_00000005"]
        os.kill(os.getpid(), signal.SIGTERM)
        assert seen == ["old handler"]  # ours is gone again
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_runs_in_a_worker_thread_without_touching_signals(tmp_path):
    before = signal.getsignal(signal.SIGINT)
    results = []
    trainer = Trainer(
        tiny_cfg(tmp_path, max_steps=1000), [lambda e: e.kind == "step" and e.step == 3 and trainer.request_stop()]
    )
    thread = threading.Thread(target=lambda: results.append(trainer.run()))
    thread.start()
    thread.join(60)
    assert results[0]["status"] == "stopped" and results[0]["step"] == 3
    assert signal.getsignal(signal.SIGINT) is before
    assert list_checkpoints(tmp_path)[-1].name == "step_00000003"


def test_budget_and_run_directory_errors(tmp_path):
    with pytest.raises(ConfigError, match="give a budget"):
        Trainer(tiny_cfg(tmp_path / "a", max_steps=0)).run()
    # ... before the data is read (minutes for a large corpus): a missing file is not what it reports.
    with pytest.raises(ConfigError, match="give a budget"):
        Trainer(tiny_cfg(tmp_path / "a", max_steps=0, data=[str(tmp_path / "missing.tsv")])).run()
    with pytest.raises(CheckpointError, match="nothing to resume"):
        Trainer(tiny_cfg(tmp_path / "b"), resume=True).run()
    Trainer(tiny_cfg(tmp_path / "c", max_steps=2)).run()
    with pytest.raises(ConfigError, match="already holds a training run; use --resume"):
        Trainer(tiny_cfg(tmp_path / "c", max_steps=2)).run()


def test_epochs_budget_counts_passes(tmp_path):
    trainer = Trainer(tiny_cfg(tmp_path, max_steps=0, epochs=2))
    result = trainer.run()
    assert result["step"] == 2 * len(trainer.batches_for_epoch(0))


def test_accumulation_counts_steps_not_batches(tmp_path):
    trainer = Trainer(tiny_cfg(tmp_path, max_steps=4, accumulate=3))
    assert trainer.run()["step"] == 4
    info = json.loads((list_checkpoints(tmp_path)[-1] / "trainer.json").read_text())
    per_epoch = len(trainer.batches_for_epoch(0))
    assert info["epoch"] * per_epoch + info["batch_in_epoch"] == 12  # 4 steps × 3 batches


def test_averaging_is_the_mean_of_the_weights(tmp_path):
    Trainer(tiny_cfg(tmp_path / "run", max_steps=6, save_every=3)).run()
    paths = list_checkpoints(tmp_path / "run")
    assert len(paths) == 2
    average_checkpoints(paths, tmp_path / "avg")
    avg = load_model(tmp_path / "avg").model.state_dict()
    a, b = (load_model(p).model.state_dict() for p in paths)
    for name in avg:
        assert torch.allclose(avg[name], (a[name] + b[name]) / 2, atol=1e-6), name
    assert not torch.equal(a["generator.weight"], b["generator.weight"])  # so the mean means something

    Trainer(tiny_cfg(tmp_path / "other", max_steps=3, model_overrides={"d_model": 16, "max_len": 64})).run()
    with pytest.raises(CheckpointError, match="different model config"):
        average_checkpoints([paths[0], list_checkpoints(tmp_path / "other")[0]], tmp_path / "bad")


def test_a_model_averages_with_its_wider_continuation_as_the_wider_model(tmp_path):
    """A model and its continuation with a wider FFN (--init-from --d-ff) interpolate at the wider shape: the
    narrow model's missing units count as zero, so a weight of 1 on either side gives that model's outputs."""
    Trainer(tiny_cfg(tmp_path / "base", max_steps=20)).run()
    base = load_model(tmp_path / "base")
    wide_d_ff = 2 * base.cfg.d_ff
    Trainer(
        tiny_cfg(
            tmp_path / "wide",
            max_steps=4,
            warmup=1,
            init_from=str(tmp_path / "base"),
            model_overrides={"d_ff": wide_d_ff},
        )
    ).run()
    wide = load_model(tmp_path / "wide")
    src = torch.tensor([[5, 6, 7, base.cfg.eos_id]])
    tgt = torch.tensor([[base.cfg.bos_id, 8, 9]])
    with torch.inference_mode():
        for share, expected in ((1.0, base.model), (0.0, wide.model)):
            average_checkpoints([tmp_path / "base", tmp_path / "wide"], tmp_path / f"mix{share}", [share, 1 - share])
            mixed = load_model(tmp_path / f"mix{share}")
            assert mixed.cfg.d_ff == wide_d_ff
            assert torch.allclose(mixed.model(src, tgt), expected(src, tgt), atol=1e-4)
        half = average_checkpoints([tmp_path / "base", tmp_path / "wide"], tmp_path / "half", [1, 1])
        w1 = load_model(half).model.state_dict()["encoder_layers.0.ffn.w_1.weight"]
        new_rows = wide.model.state_dict()["encoder_layers.0.ffn.w_1.weight"][base.cfg.d_ff :]
        assert torch.allclose(w1[base.cfg.d_ff :], new_rows / 2, atol=1e-6)  # the narrow side adds zeros
        # kept at the narrower shape (a soup at the shipped width): the grown units dropped, the shared ones averaged
        cut = load_model(
            average_checkpoints([tmp_path / "base", tmp_path / "wide"], tmp_path / "cut", d_ff=base.cfg.d_ff)
        )
        assert cut.cfg.d_ff == base.cfg.d_ff
        shared = wide.model.state_dict()["encoder_layers.0.ffn.w_1.weight"][: base.cfg.d_ff]
        expected_w1 = (base.model.state_dict()["encoder_layers.0.ffn.w_1.weight"] + shared) / 2
        assert torch.allclose(cut.model.state_dict()["encoder_layers.0.ffn.w_1.weight"], expected_w1, atol=1e-6)
        with pytest.raises(ConfigError, match="wider than the widest"):
            average_checkpoints([tmp_path / "base"], tmp_path / "wider", d_ff=wide_d_ff * 2)


def test_fp16_on_cpu_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="fp16 needs a CUDA GPU"):
        Trainer(tiny_cfg(tmp_path, precision="fp16", device="cpu")).run()


def run_recording_linear_dtypes(run_dir, precision: str) -> tuple[list[torch.dtype], dict[int, float], torch.Tensor]:
    """Train 3 steps; a forward hook on two Linear layers records the dtype of their outputs.

    Returns those dtypes, the step losses and how far the 3 steps moved the output projection.
    """
    seen: list[torch.dtype] = []
    start = {}

    def record(module, inputs, output):
        seen.append(output.dtype)

    def on_start(event):
        if event.kind == "start":  # the model exists from here on
            trainer.model.encoder_layers[0].ffn.w_1.register_forward_hook(record)
            trainer.model.generator.register_forward_hook(record)
            start["w"] = trainer.model.generator.weight.detach().clone()

    trainer = Trainer(tiny_cfg(run_dir, max_steps=3, precision=precision, device="cpu"), [on_start])
    trainer.run()
    assert trainer.model.generator.weight.dtype == torch.float32  # the master weights stay fp32
    return seen, step_losses(run_dir), trainer.model.generator.weight.detach() - start["w"]


def test_bf16_steps_compute_in_bf16_and_stay_close_to_fp32(tmp_path):
    bf16_dtypes, bf16_losses, bf16_update = run_recording_linear_dtypes(tmp_path / "bf16", "bf16")
    fp32_dtypes, fp32_losses, fp32_update = run_recording_linear_dtypes(tmp_path / "fp32", "fp32")
    # Inside the training step the matmuls ran in bf16 (3 steps × 2 hooked layers); without autocast, fp32.
    assert bf16_dtypes == [torch.bfloat16] * 6
    assert fp32_dtypes == [torch.float32] * 6
    # Same seed, same batches: the losses differ only by bf16 rounding (8 bits of mantissa, ~3
    # significant digits), so they are close to fp32's but not equal (measured: 4e-4 relative).
    assert all(math.isfinite(bf16_losses[s]) and bf16_losses[s] != fp32_losses[s] for s in (1, 2, 3))
    assert all(bf16_losses[s] == pytest.approx(fp32_losses[s], rel=5e-3) for s in (1, 2, 3))
    # The 3 updates of the output projection point the same way as fp32's, and are not identical.
    assert not torch.equal(bf16_update, fp32_update)
    cosine = torch.nn.functional.cosine_similarity(bf16_update.flatten(), fp32_update.flatten(), dim=0)
    assert cosine > 0.98


def test_autocast_context_changes_nothing_until_entered_and_restores_after():
    """Trainer.setup calls it only to validate the precision: that call must not switch bf16 on for good."""
    ctx = autocast_context(torch.device("cpu"), "bf16")
    assert not torch.is_autocast_enabled("cpu")
    with ctx:
        assert torch.is_autocast_enabled("cpu")
        assert torch.get_autocast_dtype("cpu") == torch.bfloat16
    assert not torch.is_autocast_enabled("cpu")


def test_precision_auto_resolves_to_what_the_device_runs_natively():
    cpu = torch.device("cpu")
    assert resolve_precision(cpu, "auto") == ("bf16" if native_bf16(cpu) else "fp32")
    for explicit in ("fp32", "bf16"):
        assert resolve_precision(cpu, explicit) == explicit  # asked for, so kept even if emulated
    with pytest.raises(ConfigError, match="fp16 needs a CUDA GPU"):
        resolve_precision(cpu, "fp16")
    with pytest.raises(ConfigError, match="unknown precision 'fp8'; use auto, fp32, bf16 or fp16"):
        resolve_precision(cpu, "fp8")
    assert resolve_precision(torch.device("mps"), "auto") == "fp32"


def test_the_cpu_capabilities_are_torchs_read_once_and_decide_native_bf16():
    found = cpu_capabilities()
    assert found == dict(torch.cpu.get_capabilities()) and cpu_capabilities() is found  # read once a process
    assert native_bf16(torch.device("cpu")) == bool(found.get("avx512_bf16") or found.get("amx_bf16"))


def test_a_run_records_the_precision_auto_chose(tmp_path):
    Trainer(tiny_cfg(tmp_path, max_steps=2, precision="auto", device="cpu")).run()
    chosen = resolve_precision(torch.device("cpu"), "auto")
    start = json.loads((tmp_path / "metrics.jsonl").read_text().splitlines()[0])
    assert start["event"] == "start" and start["precision"] == chosen
    # The checkpoint keeps the choice, so --resume trains on in the same precision.
    info = json.loads((list_checkpoints(tmp_path)[-1] / "trainer.json").read_text())
    assert info["train_config"]["precision"] == chosen


def test_one_writer_per_run_directory(tmp_path):
    first = lock_run_dir(tmp_path / "run")
    assert (tmp_path / "run" / LOCK_FILE).read_text() == f"pid {os.getpid()} on {socket.gethostname()}\n"
    # flock belongs to an open file, so a second opener is refused even within one process.
    message = f"{tmp_path / 'run'} is in use by another training run (pid {os.getpid()} on {socket.gethostname()})"
    with pytest.raises(ConfigError, match=re.escape(message)):
        RunLock(tmp_path / "run").acquire()
    with pytest.raises(ConfigError, match=re.escape(message)):
        Trainer(tiny_cfg(tmp_path / "run", max_steps=2)).run()
    assert not list_checkpoints(tmp_path / "run")  # refused before writing anything
    first.release()
    assert Trainer(tiny_cfg(tmp_path / "run", max_steps=2)).run()["status"] == "finished"
    RunLock(tmp_path / "run").acquire().release()  # run() let go of it at the end


def test_a_failed_setup_lets_go_of_the_run_directory(tmp_path):
    Trainer(tiny_cfg(tmp_path, max_steps=2)).run()
    with pytest.raises(ConfigError, match="already holds a training run"):
        Trainer(tiny_cfg(tmp_path, max_steps=2)).run()
    RunLock(tmp_path).acquire().release()


def test_init_from_fine_tunes_the_given_model(tmp_path):
    """--init-from starts from the model's weights, architecture and vocabulary, with a fresh optimizer."""
    Trainer(tiny_cfg(tmp_path / "base", max_steps=40)).run()
    base = load_model(tmp_path / "base")
    # The preset and vocabulary size asked for here are ignored: the architecture is the model's.
    tuned_cfg = tiny_cfg(
        tmp_path / "tuned",
        max_steps=1,
        warmup=1,
        lr_scale=1e-9,
        init_from=str(tmp_path / "base"),
        vocab_size=50,
        model_overrides={"dropout": 0.0},
    )
    Trainer(tuned_cfg).run()
    tuned = load_model(tmp_path / "tuned")
    assert (tmp_path / "tuned" / "spm.model").read_bytes() == (tmp_path / "base" / "spm.model").read_bytes()
    assert tuned.cfg.dropout == 0.0 and tuned.cfg.vocab_size == base.cfg.vocab_size
    # One step at a negligible learning rate: the weights are the base's, not a fresh init.
    for (name, a), b in zip(base.model.state_dict().items(), tuned.model.state_dict().values()):
        assert torch.allclose(a, b, atol=1e-6), name
    # The first step's loss is the trained model's, far below a fresh model's.
    assert step_losses(tmp_path / "tuned")[1] < step_losses(tmp_path / "base")[1] * 0.8
    # Resuming a fine-tune takes the checkpoint's weights and keeps going.
    resumed = tiny_cfg(
        tmp_path / "tuned", max_steps=3, init_from=str(tmp_path / "base"), model_overrides={"dropout": 0.0}
    )
    assert Trainer(resumed, resume=True).run()["step"] == 3


def test_init_from_refuses_a_different_architecture_or_vocabulary(tmp_path):
    Trainer(tiny_cfg(tmp_path / "base", max_steps=2)).run()
    with pytest.raises(ConfigError, match="the architecture is the model's own; drop d_model"):
        Trainer(
            tiny_cfg(tmp_path / "a", init_from=str(tmp_path / "base"), model_overrides={"d_model": 24, "max_len": 64})
        ).run()
    other = tmp_path / "other.model"
    Trainer(tiny_cfg(tmp_path / "b", max_steps=1, vocab_size=90)).run()
    other.write_bytes((tmp_path / "b" / "spm.model").read_bytes())
    with pytest.raises(ConfigError, match="differs from .*a fine-tune keeps the model's vocabulary"):
        Trainer(tiny_cfg(tmp_path / "c", init_from=str(tmp_path / "base"), spm_model=str(other))).run()
    with pytest.raises(CheckpointError, match="no such model directory"):
        Trainer(tiny_cfg(tmp_path / "d", init_from=str(tmp_path / "missing"))).run()


def test_init_from_with_a_wider_ffn_grows_the_model_and_keeps_its_outputs(tmp_path):
    """--init-from with a larger --d-ff: the model's FFNs widen (core/model/grow.py), its first loss is the
    trained model's, and the new units train; a narrower --d-ff is refused."""
    Trainer(tiny_cfg(tmp_path / "base", max_steps=40)).run()
    base = load_model(tmp_path / "base")
    wide = 2 * base.cfg.d_ff
    Trainer(
        tiny_cfg(
            tmp_path / "wide", max_steps=3, warmup=1, init_from=str(tmp_path / "base"), model_overrides={"d_ff": wide}
        )
    ).run()
    grown = load_model(tmp_path / "wide")
    assert grown.cfg.d_ff == wide and grown.cfg.d_model == base.cfg.d_model
    # The first step's loss is the trained model's, far below a fresh model's (the new units add nothing yet).
    assert step_losses(tmp_path / "wide")[1] < step_losses(tmp_path / "base")[1] * 0.8
    w2 = grown.model.state_dict()["decoder_layers.0.ffn.w_2.weight"]
    assert w2[:, base.cfg.d_ff :].abs().sum() > 0  # three steps moved the new units off zero
    # Each checkpoint records the digest of the weights it started from (ship_weights --soup-with compares them).
    started = read_trainer_info(list_checkpoints(tmp_path / "wide")[-1])["init_digest"]
    assert started == init_digest(tmp_path / "base") != init_digest(tmp_path / "wide")
    # Resuming takes the grown model from its checkpoint, even with the --init-from model gone since.
    (tmp_path / "base").rename(tmp_path / "gone")
    resumed = tiny_cfg(
        tmp_path / "wide", max_steps=5, warmup=1, init_from=str(tmp_path / "base"), model_overrides={"d_ff": wide}
    )
    assert Trainer(resumed, resume=True).run()["step"] == 5
    assert load_model(list_checkpoints(tmp_path / "wide")[-1]).cfg.d_ff == wide
    assert read_trainer_info(list_checkpoints(tmp_path / "wide")[-1])["init_digest"] == started  # kept, not re-read
    (tmp_path / "gone").rename(tmp_path / "base")  # back, for the refusal below
    with pytest.raises(ConfigError, match="would narrow the model's FFN"):
        Trainer(
            tiny_cfg(
                tmp_path / "narrow", init_from=str(tmp_path / "base"), model_overrides={"d_ff": base.cfg.d_ff // 2}
            )
        ).run()


def test_init_from_with_more_encoder_layers_keeps_the_outputs_and_averages_with_its_start(tmp_path):
    """--init-from with a larger --encoder-layers: new layers on top of the encoder that add nothing at first (the
    first loss is the trained model's), then train; the deeper run interpolates with the model it grew from at
    the deeper shape (a weight of 1 on either side gives that model's outputs); fewer layers are refused."""
    Trainer(tiny_cfg(tmp_path / "base", max_steps=40)).run()
    base = load_model(tmp_path / "base")
    deep = base.cfg.n_encoder_layers + 2
    grow = {"max_steps": 3, "warmup": 1, "init_from": str(tmp_path / "base")}
    Trainer(tiny_cfg(tmp_path / "deep", **grow, model_overrides={"n_encoder_layers": deep})).run()
    grown = load_model(tmp_path / "deep")
    assert grown.cfg.n_encoder_layers == deep and grown.cfg.n_decoder_layers == base.cfg.n_decoder_layers
    assert step_losses(tmp_path / "deep")[1] < step_losses(tmp_path / "base")[1] * 0.8
    top = grown.model.state_dict()[f"encoder_layers.{deep - 1}.ffn.w_2.weight"]
    assert top.abs().sum() > 0  # three steps moved the new layer's W2 off zero
    src = torch.tensor([[5, 6, 7, base.cfg.eos_id]])
    tgt = torch.tensor([[base.cfg.bos_id, 8, 9]])
    with torch.inference_mode():
        for share, expected in ((1.0, base.model), (0.0, grown.model)):
            mix = average_checkpoints(
                [tmp_path / "base", tmp_path / "deep"], tmp_path / f"mix{share}", [share, 1 - share]
            )
            mixed = load_model(mix)
            assert mixed.cfg.n_encoder_layers == deep
            assert torch.allclose(mixed.model(src, tgt), expected(src, tgt), atol=1e-4)
    half = load_model(average_checkpoints([tmp_path / "base", tmp_path / "deep"], tmp_path / "half", [1, 1]))
    assert torch.allclose(half.model.state_dict()[f"encoder_layers.{deep - 1}.ffn.w_2.weight"], top / 2, atol=1e-6)
    with pytest.raises(ConfigError, match="would remove layers"):
        Trainer(
            tiny_cfg(tmp_path / "shallow", init_from=str(tmp_path / "base"), model_overrides={"n_encoder_layers": 1})
        ).run()


def test_a_run_says_its_direction_without_a_card(tmp_path):
    """A run directory, its checkpoints and `tt average`'s output name the direction trained, so that
    `tt translate --model RUN --from en --to fr` is accepted and the text pipeline reads English as the source."""
    from typer.testing import CliRunner

    from core.card import model_languages
    from tt_cli.main import app

    run = tmp_path / "enfr"
    Trainer(tiny_cfg(run, max_steps=2, save_every=1, swap=True, valid_per_mille=0)).run()
    checkpoint = list_checkpoints(run)[-1]
    average = average_checkpoints(list_checkpoints(run), tmp_path / "avg")
    assert [model_languages(d) for d in (run, checkpoint, average)] == [("en", "fr")] * 3
    (run / "model.safetensors").unlink()  # a run written before its weights said so: its checkpoints' settings
    assert model_languages(run) == ("en", "fr")
    forward = tmp_path / "fren"
    Trainer(tiny_cfg(forward, max_steps=1, valid_per_mille=0)).run()
    assert model_languages(forward) == ("fr", "en")
    refused = CliRunner().invoke(app, ["translate", "--model", str(average), "--from", "fr", "--to", "en", "Bonjour."])
    assert refused.exit_code != 0 and "an en→fr model" in refused.stderr
    ok = CliRunner().invoke(app, ["translate", "--model", str(average), "--from", "en", "--to", "fr", "Hello."])
    assert ok.exit_code == 0, ok.stderr


def test_swap_trains_the_other_direction(tmp_path):
    Trainer(tiny_cfg(tmp_path, max_steps=1, swap=True, valid_per_mille=0)).run()
    from core.data.readers import read_tsv
    from core.train.prepare import prepare_data

    data = prepare_data(tiny_cfg(tmp_path, swap=True), tmp_path)
    first = next(iter(read_tsv(TINY_TSV)))
    tok = data.tokenizer
    # The training examples' sources are the TSV's second column.
    sources = {tok.decode(e.src[:-1]) for e in data.train} | {p.src for p in data.valid_pairs}
    assert first.tgt in sources and first.src not in sources
    # The held-out test files are named by their language: test.en holds the (English) sources.
    run = tmp_path / "held"
    run.mkdir()
    prepare_data(tiny_cfg(run, swap=True, test_per_mille=300), run)
    english = (run / "test.en").read_text(encoding="utf-8").splitlines()
    french = (run / "test.fr").read_text(encoding="utf-8").splitlines()
    pairs = {(p.src, p.tgt) for p in read_tsv(TINY_TSV)}  # (French, English)
    assert english and all((fr, en) in pairs for fr, en in zip(french, english))


READY = """
import sys
from core.model import native
from core.train.trainer import Trainer
from tests.conftest import tiny_train_config

seen = {}


def at_start(event):
    if event.kind == "start":
        names = ("core.decode.search", "core.model.step", "core.evaluate", "sacrebleu")
        seen.update({n: n in sys.modules for n in names}, library=native._library.cache_info().currsize > 0)


sample = int(sys.argv[2])
Trainer(tiny_train_config(sys.argv[1], max_steps=1, bleu_sample=sample, valid_every=1), [at_start]).run()
print(sorted(k for k, v in seen.items() if v))
"""


@pytest.mark.parametrize("bleu_sample", [2, 0])
def test_validations_code_is_loaded_before_the_first_step(tmp_path, bleu_sample):
    """A run loads validation's modules and the C step's library before step 1 (one sentence decoded and scored), so
    code changed under a run of hours is never imported halfway through it; without BLEU samples there is nothing to
    load (the check sees the difference)."""
    import subprocess
    import sys

    from tests.conftest import ROOT

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", READY, str(tmp_path / "run"), str(bleu_sample)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    loaded = ["core.decode.search", "core.evaluate", "core.model.step", "library", "sacrebleu"]
    assert done.stdout.strip() == str(loaded if bleu_sample else [])
