"""What a model directory says of itself without loading it (no torch): its languages, from its card, and
where the default model lives. Read where a command must stay light (the prompt, a warm `tt translate`)."""

from __future__ import annotations

import json
import os
from pathlib import Path

LANGUAGES_KEY = "languages"  # weights-file metadata, "en-fr": what tt train and tt average write


def model_languages(path: Path) -> tuple[str, str]:
    """The (source, target) languages of a model directory: its card's last run's languages; without a card (a
    run directory, a checkpoint, `tt average`'s output) what its weights say, else its run's settings; else tt's
    fr→en."""
    path = Path(path)
    card_file = path / "card.json"
    try:
        card = json.loads(card_file.read_text(encoding="utf-8")) if card_file.is_file() else {}
        config = (card.get("fine_tune") or card).get("train_config", {})
    except (OSError, ValueError, AttributeError):
        config = {}
    if not config:
        src, sep, tgt = str(weights_metadata(path / "model.safetensors").get(LANGUAGES_KEY, "")).partition("-")
        if sep and src and tgt:
            return src, tgt
        config = _run_config(path)
    return config_languages(config)


def config_languages(config: dict) -> tuple[str, str]:
    """(source, target) of a run's training settings (src_lang, tgt_lang, swap), as the model it trains reads."""
    src, tgt = str(config.get("src_lang", "fr")), str(config.get("tgt_lang", "en"))
    return (tgt, src) if config.get("swap") else (src, tgt)


def weights_metadata(weights: Path) -> dict[str, str]:
    """A safetensors file's metadata, from its header read as JSON (no torch: 8 bytes of length, then the header);
    {} when there is none to read."""
    try:
        with open(weights, "rb") as f:
            size = int.from_bytes(f.read(8), "little")
            header = json.loads(f.read(size)) if 0 < size <= 100_000_000 else {}
        metadata = header.get("__metadata__") or {}
    except (OSError, ValueError, AttributeError):
        return {}
    # safetensors holds text values only; a hand-made header's others are not metadata
    return {k: v for k, v in metadata.items() if isinstance(v, str)} if isinstance(metadata, dict) else {}


def _run_config(path: Path) -> dict:
    """The training settings of a checkpoint (its trainer.json) or of a run directory (its newest checkpoint's)."""
    candidates = [path / "trainer.json", *sorted((path / "checkpoints").glob("step_*/trainer.json"), reverse=True)]
    for file in candidates:
        try:
            config = json.loads(file.read_text(encoding="utf-8")).get("train_config")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(config, dict):
            return config
    return {}


def default_model_dir() -> Path:
    """$TT_MODEL if set, else the model shipped in the `weights` package."""
    override = os.environ.get("TT_MODEL")
    if override:
        return Path(override)
    from weights import DIR

    return DIR


PRECISIONS = ("fp32", "int8", "bf16")


def default_precision(path: Path) -> str:
    """The precision `tt translate` and `tt serve` run a model directory in when none is asked: its card's
    `precision.default` — "int8" where int8 kept every test set within the tolerance of fp32 when the model
    shipped (scripts/ship_weights.py, docs/precision.md) — else "fp32" (no card, no record, or a value tt
    does not know)."""
    card_file = Path(path) / "card.json"
    try:
        card = json.loads(card_file.read_text(encoding="utf-8")) if card_file.is_file() else {}
        chosen = card.get("precision", {}).get("default", "fp32")
    except (OSError, ValueError, AttributeError):
        return "fp32"
    return chosen if chosen in PRECISIONS else "fp32"


def fast_mode(precision: str) -> str | None:
    """The `fast_model` mode of a precision ("fp32", "int8", "bf16"): None for fp32 (the model as it is)."""
    return None if precision == "fp32" else precision


def quantize_mode(asked: str | None, path: Path) -> str | None:
    """The `fast_model` mode to run a model directory in: `asked` ("fp32", "int8", "bf16"), or the card's
    default when None; None for fp32 (the model as it is)."""
    return fast_mode(default_precision(path) if asked is None else asked)
