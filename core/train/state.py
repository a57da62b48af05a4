"""Checkpoint I/O for training runs, and checkpoint averaging (§6.1).

A run directory looks like this (the layout `tt train --resume` and `tt average` rely on):

    run_dir/
      model.safetensors, spm.model     the best model so far: a model dir `tt translate` loads
      metrics.jsonl                    one JSON object per event (start, step, valid, checkpoint, end)
      checkpoints/step_00001000/       a model dir + trainer.safetensors (optimizer moments, RNG)
                                       + trainer.json (step, epoch, data position, TrainConfig, and
                                         the digest of the --init-from weights a fine-tune started from)

Every checkpoint is written to a hidden temp dir and renamed into place, so a crash leaves either
the whole checkpoint or none; `list_checkpoints` only sees finished ones.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from core.card import LANGUAGES_KEY, model_languages
from core.checkpoint import WEIGHTS_FILE, load_model, placeholder_metadata, placeholder_tokens, read_weights, save_model
from core.data.cache import file_identity
from core.data.tokenizer import Tokenizer
from core.errors import CheckpointError, ConfigError
from core.files import atomic_write_bytes
from core.model.grow import deepen_encoder, narrow_ffn, widen_ffn
from core.model.transformer import Transformer

TRAINER_STATE = "trainer.safetensors"
TRAINER_JSON = "trainer.json"
CHECKPOINTS = "checkpoints"


def checkpoint_name(step: int) -> str:
    return f"step_{step:08d}"


def list_checkpoints(run_dir: str | Path) -> list[Path]:
    """Finished checkpoints of a run, oldest first (the zero-padded step sorts by name)."""
    root = Path(run_dir) / CHECKPOINTS
    if not root.is_dir():
        return []
    return sorted(
        p for p in root.iterdir() if p.is_dir() and p.name.startswith("step_") and (p / TRAINER_JSON).exists()
    )


def init_digest(model_dir: str | Path) -> str:
    """The digest of a model directory's weights (blake2b of the bytes): what a fine-tune started from."""
    return file_identity(Path(model_dir) / WEIGHTS_FILE)["blake2b"]


def read_trainer_info(checkpoint: Path) -> dict[str, Any]:
    path = checkpoint / TRAINER_JSON
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"{path}: cannot read the trainer state ({exc})") from None


def write_checkpoint(
    run_dir: Path,
    step: int,
    model: torch.nn.Module,
    tokenizer: Tokenizer,
    optimizer: torch.optim.Optimizer,
    info: dict[str, Any],
    *,
    cuda_device: torch.device | None = None,
    scaler: Any = None,
    keep_last: int = 0,
    metadata: dict[str, str] | None = None,
) -> Path:
    """Write checkpoints/step_N (model dir, its weights with `metadata`, + optimizer/RNG state + `info`), then
    prune to `keep_last`."""
    from safetensors.torch import save_file

    root = run_dir / CHECKPOINTS
    final = root / checkpoint_name(step)
    tmp = root / f".tmp_{checkpoint_name(step)}"
    shutil.rmtree(tmp, ignore_errors=True)
    save_model(model, tokenizer, tmp, extra_metadata=metadata)
    tensors: dict[str, torch.Tensor] = {"rng.cpu": torch.get_rng_state()}
    if cuda_device is not None:
        tensors["rng.cuda"] = torch.cuda.get_rng_state(cuda_device)
    for index, state in optimizer.state_dict()["state"].items():
        for key, value in state.items():
            tensors[f"optim.{index}.{key}"] = (
                value.detach().cpu().contiguous() if torch.is_tensor(value) else torch.tensor(value)
            )
    if scaler is not None:
        tensors["scaler.scale"] = scaler.get_scale() * torch.ones(())
    save_file(tensors, str(tmp / TRAINER_STATE))
    (tmp / TRAINER_JSON).write_text(json.dumps(info, indent=1), encoding="utf-8")
    if final.exists():
        shutil.rmtree(final)
    os.replace(tmp, final)
    if keep_last > 0:
        for old in list_checkpoints(run_dir)[:-keep_last]:
            shutil.rmtree(old, ignore_errors=True)
    return final


def read_checkpoint(
    path: Path,
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    device: torch.device,
    scaler: Any = None,
) -> dict[str, Any]:
    """Restore weights, optimizer moments and RNG from checkpoint `path`; return its trainer.json."""
    loaded = load_model(path)
    if loaded.cfg != model.cfg:
        changed = [k for k, v in loaded.cfg.to_dict().items() if model.cfg.to_dict()[k] != v]
        raise CheckpointError(
            f"{path}: the checkpoint's model differs from this run's options ({', '.join(changed)}); "
            "drop the model options to resume with the run's own"
        )
    model.load_state_dict(loaded.model.state_dict())
    tensors, _ = read_weights(path / TRAINER_STATE)
    info = read_trainer_info(path)
    opt = optimizer.state_dict()
    state: dict[int, dict[str, torch.Tensor]] = {}
    for name, value in tensors.items():
        if name.startswith("optim."):
            _, index, key = name.split(".", 2)
            # Adam keeps `step` on the CPU (a scalar); the moments live beside the parameters.
            state.setdefault(int(index), {})[key] = value.to(device) if key != "step" else value
    opt["state"] = state
    optimizer.load_state_dict(opt)
    torch.set_rng_state(tensors["rng.cpu"])
    if "rng.cuda" in tensors and device.type == "cuda":
        torch.cuda.set_rng_state(tensors["rng.cuda"], device)
    if scaler is not None and "scaler.scale" in tensors:
        scaler.update(float(tensors["scaler.scale"]))
    return info


def truncate_metrics(path: Path, step: int) -> None:
    """Drop log lines after `step`: a resumed run redoes those steps and logs them again.

    A line cut short by a kill is dropped too, so the log stays one valid JSON object per line.
    """
    if not path.exists():
        return
    kept = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict) and int(record.get("step", 0)) <= step:
            kept.append(line + "\n")
    atomic_write_bytes(path, "".join(kept).encode("utf-8"))


def clean_partial_checkpoints(run_dir: Path) -> None:
    """Remove temp dirs a killed run left half-written."""
    root = run_dir / CHECKPOINTS
    if root.is_dir():
        for p in root.iterdir():
            if p.name.startswith(".tmp_"):
                shutil.rmtree(p, ignore_errors=True)


def average_checkpoints(
    paths: list[Path], out: str | Path, weights: list[float] | None = None, *, d_ff: int | None = None
) -> Path:
    """Average the weights of several checkpoints or models into a model dir (§6.1: the last 5 or 20).

    `weights` (one per path, normalised to sum 1) makes it a weighted mean: with two models, one trained on from
    the other, that is the interpolation between them (WiSE-FT; docs/model.md). Models whose FFNs differ only in
    width are averaged at the widest, the narrower ones widened first with every added unit zero (in W1, b1 and
    W2: a unit one model does not have counts as the zero it adds; core/model/grow.py), and models whose encoders
    differ only in depth at the deepest, the shallower ones deepened as `deepen_encoder` grows them (the layers they
    lack add nothing, so a run grown deeper interpolates with the model it grew from). `d_ff` narrower than the
    widest saves the mean cut to that many units (`narrow_ffn`: the units growth added dropped — a soup of runs
    continued from one model, kept at that model's shape). Keeps one running sum, so memory stays at two models
    whatever the count.
    """
    if not paths:
        raise CheckpointError("no checkpoints to average")
    if weights is not None and (len(weights) != len(paths) or min(weights) < 0 or sum(weights) <= 0):
        raise ConfigError(
            f"{len(paths)} checkpoints take {len(paths)} weights, none negative and not all zero; got {weights}"
        )
    shares = [w / sum(weights) for w in weights] if weights is not None else [1 / len(paths)] * len(paths)
    first = load_model(paths[0])
    configs = [first.cfg] + [checkpoint_config(p) for p in paths[1:]]
    widest, deepest = max(c.d_ff for c in configs), max(c.n_encoder_layers for c in configs)
    cfg = replace(first.cfg, d_ff=widest, n_encoder_layers=deepest)  # the largest model's shape holds the mean
    total: dict[str, torch.Tensor] = {}
    for path, share in zip(paths, shares):
        other = load_model(path) if path is not paths[0] else first
        if replace(other.cfg, d_ff=widest, n_encoder_layers=deepest) != cfg:
            raise CheckpointError(f"{path}: a different model config from {paths[0]}; cannot average them")
        if other.tokenizer.proto != first.tokenizer.proto:
            raise CheckpointError(f"{path}: a different SentencePiece model from {paths[0]}; cannot average them")
        state = widen_ffn(other.model.state_dict(), other.cfg, widest, draw=False)[1]
        for k, v in deepen_encoder(state, replace(other.cfg, d_ff=widest), deepest, draw=False)[1].items():
            if not v.is_floating_point():
                total.setdefault(k, v)
            else:
                total[k] = total[k] + v.double() * share if k in total else v.double() * share
    if d_ff is not None and d_ff != cfg.d_ff:
        if d_ff > cfg.d_ff:
            raise ConfigError(f"d_ff {d_ff} is wider than the widest model averaged ({cfg.d_ff})")
        cfg, total = narrow_ffn(total, cfg, d_ff)
    model = Transformer(cfg)
    model.load_state_dict({k: v.float() if v.is_floating_point() else v for k, v in total.items()})
    # the placeholders the first model learned (the others share its vocabulary, so they are its run's too)
    metadata = {
        "averaged": ",".join(Path(p).name for p in paths),
        LANGUAGES_KEY: "-".join(model_languages(paths[0])),
        **placeholder_metadata(placeholder_tokens(paths[0])),
    }
    if weights is not None:
        metadata["weights"] = ",".join(f"{w:g}" for w in shares)
    return save_model(model, first.tokenizer, out, extra_metadata=metadata)


def checkpoint_config(path: Path):
    """The config of the model in `path`, from its weights file's metadata alone (load_model's errors otherwise)."""
    from core.card import weights_metadata
    from core.checkpoint import WEIGHTS_FILE, config_from_metadata

    file = Path(path) / WEIGHTS_FILE
    try:
        return config_from_metadata(file, weights_metadata(file))
    except Exception:  # noqa: BLE001 - a missing or broken file: load_model says what is wrong
        return load_model(path).cfg
